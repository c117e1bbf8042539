"""The documentation says what the code does: presets printed in the docs match their JSON."""

import json
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PRESETS = ROOT / "hatt" / "presets"
TRAINING_DOC = ROOT / "docs" / "training.md"


def _preset(name):
    return json.loads((PRESETS / f"{name}.json").read_text())


def _window(preset):
    if "max_sentences" in preset:
        return f"{preset['max_sentences']} x {preset['max_words']} words"
    return f"{preset['sequence_length']} tokens"


def _kwargs(kwargs):
    return ", ".join(f"{k} {json.dumps(v)}" for k, v in kwargs.items())


def presets_table():
    """The table docs/training.md shows, generated from hatt/presets/*.json."""
    rows = [
        "| preset | model | model_kwargs | window | word vectors | optimizer, learning rate "
        "| epochs | n-gram channel |",
        "|---|---|---|---|---|---|---:|---|",
    ]
    for path in sorted(PRESETS.glob("*.json")):
        p = json.loads(path.read_text())
        vectors = p.get("word_vectors") or "—"
        if vectors != "—" and not p.get("word_vectors_trainable", True):
            vectors += " (frozen)"
        ngram = p.get("ngram") or {}
        channel = (
            f"{ngram['buckets']:,} buckets, order {ngram['order']}, fit {ngram['fit']}, "
            f"refit {json.dumps(ngram.get('refit', False))}"
            if ngram
            else "none"
        )
        rows.append(
            f"| {path.stem} | {p['model']} | {_kwargs(p['model_kwargs'])} | {_window(p)} "
            f"| {vectors} | {p['optimizer']}, {p['learning_rate']:g} | {p['epochs']} | {channel} |"
        )
    return "\n".join(rows)


def _json_blocks_after(marker, text):
    found = re.search(re.escape(marker) + r"\s*```json\n(.*?)```", text, re.S)
    assert found, f"docs/training.md has no ```json block after {marker!r}"
    return json.loads(found.group(1))


def test_the_cnn_preset_printed_in_the_training_doc_is_its_json():
    text = TRAINING_DOC.read_text()
    assert _json_blocks_after("<!-- preset: cnn -->", text) == _preset("cnn"), (
        "docs/training.md prints a CNN preset that is not hatt/presets/cnn.json; paste:\n"
        + json.dumps(_preset("cnn"), indent=2)
    )


def test_the_presets_table_of_the_training_doc_is_generated_from_the_json():
    expected = presets_table()
    assert expected in TRAINING_DOC.read_text(), (
        "docs/training.md's presets table differs from hatt/presets/*.json; paste:\n" + expected
    )
