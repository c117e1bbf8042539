"""Issue 12 end to end: the user's own table with three classes, through `hatt train`.

A CSV written here (other column names than the defaults, quoted multi-line
fields, an extra column) trains a flat and a nested family through the command
line to >= 0.9 held-out accuracy; the export then runs in a fresh process that
cannot import hatt or Keras and returns each review's `label` (a class name) and
`probabilities` (summing to 1) from both signatures.

What the number of classes changes is the head (composed once around every
backbone) and, in training and export, the layout (flat or nested): the CNN
(flat, the n-gram channel fit apart and mixed) and the HAN (nested, the channel
trained with the deep part) cover both. The head of C > 2 classes is checked for
every family in tests/models/test_families.py
(test_many_classes_give_a_softmax_over_num_classes) and, with the channel, in
tests/models/test_head.py (test_multiclass_channel_adds_one_logit_a_class).
"""

import csv
import json

import numpy as np
import pytest

from hatt import cli
from tests._fresh_process import run_json_script

FAMILIES = ("cnn", "han")  # flat and nested: see above
CLASSES = ("comedy", "horror", "western")  # sorted: the class order hatt gives them
CUES = {"comedy": "hilarious", "horror": "terrifying", "western": "saddle"}
# Small models; the CNN and the HAN carry the n-gram channel, one fit apart and mixed
# on validation (the presets' recipe), one trained with the deep part.
SETTINGS = {
    "cnn": [
        "model_kwargs.embedding_dim=8",
        "model_kwargs.filters=8",
        'ngram={"buckets": 256, "order": 2, "init": "nblr", "fit": "separate", "C": [0.1, 1.0]}',
    ],
    "han": [
        "model_kwargs.embedding_dim=8",
        "model_kwargs.word_units=8",
        "model_kwargs.sentence_units=8",
        'ngram={"buckets": 256, "order": 2, "init": "nb"}',
    ],
}
COMMON = [
    "min_count=1",
    "batch_size=16",
    "sequence_length=40",
    "max_sentences=6",
    "max_words=12",
    "learning_rate=0.01",
    "patience=3",
    "model_kwargs.dropout=0.0",
]

# Runs with `keras` and `hatt` unimportable: the export alone, as a server would.
# One process for every family's export: `{family: path}` -> `{family: report}`.
SERVE_SCRIPT = r"""
import json, sys
for name in ("keras", "hatt", "tf_keras"):
    sys.modules[name] = None
import tensorflow as tf

paths, texts = json.loads(sys.argv[1]), json.loads(sys.argv[2])
reports = {}
for family, path in paths.items():
    loaded = tf.saved_model.load(path)
    report = reports[family] = {}
    for name in ("serving_default", "predict"):
        out = loaded.signatures[name](text=tf.constant(texts))
        report[name] = {
            "keys": sorted(out),
            "label": [b.decode("utf-8") for b in out["label"].numpy()],
            "probabilities": out["probabilities"].numpy().tolist(),
        }
print(json.dumps(reports))
"""


def planted_review(rng, label):
    """Filler words, the class's cue word once, cut into 1-3 sentences."""
    words = [f"w{rng.integers(30)}" for _ in range(rng.integers(6, 20))]
    words.insert(int(rng.integers(len(words) + 1)), CUES[label])
    cuts = sorted(rng.choice(np.arange(1, len(words)), rng.integers(0, 3), replace=False))
    sentences = [" ".join(part) for part in np.split(np.array(words), cuts)]
    return ". ".join(s.capitalize() for s in sentences) + "."


def write_table(path, n, seed):
    """A CSV with columns id, review, genre: quotes, commas and newlines inside fields."""
    rng = np.random.default_rng(seed)
    rows = []
    for i in range(n):
        label = CLASSES[i % len(CLASSES)]
        text = planted_review(rng, label)
        if i % 5 == 0:  # a quoted multi-line field with a comma and quotes in it
            text = text.replace(". ", '.\n"Well," he said, ', 1)
        rows.append({"id": i, "review": text, "genre": label})
    with open(path, "w", newline="", encoding="utf-8") as f:
        writer = csv.DictWriter(f, fieldnames=["id", "review", "genre"])
        writer.writeheader()
        writer.writerows(rows)
    return rows


@pytest.fixture(scope="module")
def table(tmp_path_factory):
    root = tmp_path_factory.mktemp("table")
    # 40 a class to train on (after validation's share): each review is fitted, tokenized
    # and read by eager string ops, and the cue word is learnt in the first epoch
    write_table(root / "train.csv", 135, seed=0)
    test_rows = write_table(root / "test.csv", 45, seed=1)
    return root, test_rows


def train_and_export(family, root, run_dir, export_dir):
    """`hatt train FAMILY` on the table, exported to `export_dir/FAMILY`."""
    argv = [
        "train",
        family,
        "--preset",
        "none",
        "--data",
        str(root / "train.csv"),
        "--test",
        str(root / "test.csv"),
        "--text-column",
        "review",
        "--label-column",
        "genre",
        "--epochs",
        "6",  # early stopping (patience 3) ended the runs at epoch 4 of 12
        "--run-dir",
        str(run_dir),
        "--export-dir",
        str(export_dir),
    ]
    for setting in COMMON + SETTINGS[family]:
        argv += ["--set", setting]
    assert cli.main(argv) == 0, family


@pytest.fixture(scope="module")
def trained(table, tmp_path_factory):
    """Each family trained and exported through the command line, then every export
    served in ONE fresh process that cannot import hatt or Keras (a server's view):
    `{family: (run_dir, export_dir, report)}`."""
    root, test_rows = table
    folder = tmp_path_factory.mktemp("multiclass")
    for family in FAMILIES:
        train_and_export(family, root, folder / family / "run", folder / family / "saved")
    texts = [row["review"] for row in test_rows]
    paths = {f: str(folder / f / "saved" / f / "1") for f in FAMILIES}
    reports = run_json_script(SERVE_SCRIPT, json.dumps(paths), json.dumps(texts))
    return {f: (folder / f / "run", folder / f / "saved", reports[f]) for f in FAMILIES}


@pytest.mark.slow
@pytest.mark.parametrize("family", FAMILIES)
def test_every_family_trains_on_a_three_class_table_and_exports(family, table, trained):
    _, test_rows = table
    run_dir, export_dir, report = trained[family]
    metrics = json.loads((run_dir / "metrics.json").read_text())
    assert metrics["num_classes"] == 3 and metrics["class_names"] == list(CLASSES)
    assert metrics["test_size"] == len(test_rows)
    assert metrics["test_accuracy"] >= 0.9, metrics["test_accuracy"]
    assert metrics["test"]["confusion_matrix"]["classes"] == list(CLASSES)
    assert np.sum(metrics["test"]["confusion_matrix"]["matrix"]) == len(test_rows)
    assert 0.85 <= metrics["test_macro_f1"] <= 1.0
    facts = json.loads((export_dir / family / "export.json").read_text())
    assert facts["class_names"] == list(CLASSES) and facts["num_classes"] == 3

    texts = [row["review"] for row in test_rows]
    assert report["predict"]["keys"] == ["label", "probabilities"]  # no "probability" above 2
    for name in ("serving_default", "predict"):
        probabilities = np.array(report[name]["probabilities"])
        assert probabilities.shape == (len(texts), 3)
        np.testing.assert_allclose(probabilities.sum(-1), 1.0, atol=1e-5)
        labels = report[name]["label"]
        assert labels == [CLASSES[k] for k in probabilities.argmax(-1)]
        accuracy = np.mean([p == row["genre"] for p, row in zip(labels, test_rows, strict=True)])
        assert accuracy == pytest.approx(metrics["test_accuracy"], abs=1e-6)  # Keras: float32
    np.testing.assert_allclose(
        report["predict"]["probabilities"], report["serving_default"]["probabilities"], atol=1e-6
    )
