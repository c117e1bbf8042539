"""hatt.export's files: version numbering (re-exports, killed and concurrent exports), the
metadata and warnings an export carries, older exports, damaged files and the loader's
errors, and the exports it refuses (the serving contract: test_export.py)."""

import concurrent.futures
import contextlib
import io
import json
import os
import shutil
import subprocess
import sys
import time

import numpy as np
import pytest
import tensorflow as tf

import hatt
from hatt import cli, export
from hatt.data import Vectorizer
from tests.conftest import EPOCHS, FAMILIES
from tests.export._loaded import saved_model
from tests.export.test_export import METHODS
from tests.inspect._backwards import RECORD, RECORDED_WARNING, write_backwards_run


def _older_export(saved_model, folder, signatures, dropped_keys=()):
    """``saved_model`` as an older hatt wrote it: only ``signatures``, less ``dropped_keys``.

    The session's export re-saved (its signatures wrapped as they are, not traced again
    from the Keras model: a HAN's ``explain`` takes tens of seconds to trace)."""
    loaded = tf.saved_model.load(str(saved_model))
    spec = tf.TensorSpec([None], tf.string, name="text")
    functions = {}
    for name in signatures:

        @tf.function(input_signature=[spec], autograph=False)
        def function(text, _signature=loaded.signatures[name]):
            return {k: v for k, v in _signature(text=text).items() if k not in dropped_keys}

        functions[name] = function
    module = tf.Module()
    module.loaded = loaded  # its variables and tables, saved again
    tf.saved_model.save(module, str(folder), signatures=functions)


def test_an_export_without_the_explain_signature_asks_for_a_reexport(exported, tmp_path):
    """A SavedModel written before `explain` existed: prediction works, explain says what to do."""
    _older_export(exported["rnn"].saved_model, tmp_path / "1", ("serving_default", "predict"))
    old = export.load(tmp_path / "1")
    assert old.methods == ()
    assert old.predict(["superb"])["probabilities"].shape == (1, 2)
    with pytest.raises(export.ExportError, match=r"no `explain` signature.*hatt export RUN_DIR"):
        old.explain(["superb"])


def test_an_export_without_the_total_view_gets_it_from_its_parts(exported, tiny, tmp_path):
    """A SavedModel written before `total` existed: the Predictor adds it, as the new one has it."""
    new_keys = ("total", "sentence_total", "logit_baseline")
    _older_export(
        exported["han"].saved_model, tmp_path / "1", ("serving_default", "explain"), new_keys
    )
    old_methods = [m for m in METHODS["han"] if m != "total"]
    (tmp_path / "1" / "assets.extra").mkdir()
    (tmp_path / "1" / export.VERSION_METADATA).write_text(
        json.dumps({"family": "han", "score_kind": "attention", "methods": old_methods})
    )
    old = export.load(tmp_path / "1")
    assert old.methods == tuple(METHODS["han"])
    texts = ["A superb cast. The plot was dreadful!", "", "superb"]
    got, expected = old.explain(texts), saved_model(exported["han"].path).explain(texts)
    assert set(got) == set(expected)
    for key in new_keys:
        np.testing.assert_allclose(got[key], expected[key], atol=1e-5, err_msg=key)
    (explained,) = hatt.inspect.explain(old, texts[:1], progress=False)
    assert explained.default_method() == "total" and explained.total_line() is not None


def test_export_metadata_names_family_and_score_kind(exported, tiny):
    for family in FAMILIES:
        result = exported[family]
        facts = json.loads((result.path / export.EXPORT_FILE).read_text())
        inside = json.loads((result.saved_model / export.VERSION_METADATA).read_text())
        kind = "saliency" if family == "cnn" else "attention"
        for record in (facts, inside):
            assert (record["family"], record["score_kind"], record["version"]) == (family, kind, 1)
            assert record["explain_steps"] == hatt.export.attribution.DEFAULT_STEPS
            assert record["methods"] == METHODS[family]
        assert facts["source_run"] == str(tiny[family].run_dir.resolve())
        assert facts["metrics"] == {"epochs": EPOCHS}  # from the run's metrics.json
        assert facts["versions"] == [1]
        # nothing to warn about: the tiny runs record no mix and no warning
        assert facts["warnings"] == inside["warnings"] == [] and "ngram" not in facts
        assert saved_model(result.path).warnings == [] == export.load(tiny[family].run_dir).warnings
        assert Vectorizer.load(result.path / "vectorizer.json").get_vocabulary() == (
            tiny[family].vectorizer.get_vocabulary()
        )


def test_an_export_carries_the_runs_mix_and_warnings(tiny, tiny_corpus, tmp_path):
    """A run whose mix weighs the deep part negatively: the export alone knows it."""
    run = write_backwards_run(tiny["cnn"].run_dir, tiny_corpus, tmp_path / "run")
    result = export.export(run, tmp_path / "saved_models" / "cnn")
    facts = json.loads((result.path / export.EXPORT_FILE).read_text())
    inside = json.loads((result.saved_model / export.VERSION_METADATA).read_text())
    assert facts["ngram"] == inside["ngram"] == RECORD
    warnings = facts["warnings"]
    assert inside["warnings"] == warnings and len(warnings) == 3
    assert "negative weight" in warnings[0] and "-0.050·deep + 2.300·channel" in warnings[0]
    assert (
        "below the n-gram channel alone" in warnings[1] and "0.8125 against 0.8750" in warnings[1]
    )
    assert warnings[2] == RECORDED_WARNING
    for form in (result.path, result.keras_file, run):  # SavedModel, its .keras, the run
        assert export.load(form).warnings == warnings, form
    shutil.rmtree(run)  # the export alone
    assert export.load(result.path).warnings == warnings


def test_model_warnings_read_the_mix_of_two_and_more_classes():
    fine = {"mix": {"deep": 0.7, "channel": 1.2, "bias": 0.1}, "deep_validation_accuracy": 0.9,
            "channel_validation_accuracy": 0.89}  # fmt: skip
    assert export.model_warnings(fine) == [] == export.model_warnings(None)
    assert export.model_warnings({}, ["kept", "kept", 3]) == ["kept"]  # once; str only
    three = {"mix": {"deep": [[0.5, 0.1, 0.0], [0.2, -0.3, 0.1], [0.0, 0.1, 0.4]],
                     "channel": np.eye(3).tolist(), "bias": [0, 0, 0]}}  # fmt: skip
    (warning,) = export.model_warnings(three, class_names=["bad", "mixed", "good"])
    assert "negative weight" in warning and "for the class(es) mixed" in warning
    below = {**fine, "deep_validation_accuracy": 0.8}
    (warning,) = export.model_warnings(below)
    assert "0.8000 against 0.8900" in warning


def test_a_hand_edited_family_that_the_weights_are_not_is_refused(tiny, tmp_path, capsys):
    """Issue 33, item 7: config.json's family must be the model's, or nothing is exported."""
    run_dir = tmp_path / "run"
    shutil.copytree(tiny["cnn"].run_dir, run_dir)
    config = json.loads((run_dir / "config.json").read_text())
    (run_dir / "config.json").write_text(json.dumps({**config, "model": "han"}))
    out = tmp_path / "out"
    assert cli.main(["export", str(run_dir), "--out", str(out)]) != 0
    message = capsys.readouterr().err
    assert "says model='han'" in message and "holds a 'cnn' model" in message
    assert not out.exists() or not any(out.iterdir())


def test_a_model_of_other_classes_never_becomes_a_new_version(
    exported, tiny, tmp_path, capsys, monkeypatch
):
    """Issue 34, item 1: another task is refused before anything is written; --name gives it
    a folder of its own."""
    other = tmp_path / "other-run"
    shutil.copytree(tiny["cnn"].run_dir, other)
    (other / "classes.json").write_text(json.dumps({"class_names": ["ham", "spam"]}))
    monkeypatch.chdir(tmp_path)
    out = tmp_path / "saved_models" / "cnn"
    shutil.copytree(exported["cnn"].path, out)  # the session's export of the same run
    before = {p.name: p.stat().st_mtime_ns for p in out.iterdir()}
    capsys.readouterr()
    assert cli.main(["export", str(other)]) != 0
    message = capsys.readouterr().err
    assert "already serves another task" in message and "(ham, spam)" in message
    assert "--name" in message
    assert {p.name: p.stat().st_mtime_ns for p in out.iterdir()} == before
    assert export.load(out).class_names == tiny_class_names(tiny)
    assert cli.main(["export", str(other), "--name", "spam-cnn"]) == 0
    assert export.load(tmp_path / "saved_models" / "spam-cnn").class_names == ("ham", "spam")
    assert cli.main(["export", str(other), "--name", "../x"]) != 0
    assert "--name" in capsys.readouterr().err


def tiny_class_names(tiny):
    return export.load(tiny["cnn"].run_dir).class_names


def test_loader_errors_name_the_path(exported, tiny, tmp_path):
    with pytest.raises(export.ExportError, match="No model at .*missing"):
        export.load(tmp_path / "missing")
    (tmp_path / "empty").mkdir()
    with pytest.raises(export.ExportError, match="empty.* holds no hatt model"):
        export.load(tmp_path / "empty")
    (tmp_path / "notes.txt").write_text("hello")
    with pytest.raises(export.ExportError, match="Expected a .keras file"):
        export.load(tmp_path / "notes.txt")

    # a SavedModel whose graph file is cut short
    broken = tmp_path / "broken"
    shutil.copytree(exported["rnn"].saved_model, broken)
    pb = broken / "saved_model.pb"
    pb.write_bytes(pb.read_bytes()[: pb.stat().st_size // 3])
    with pytest.raises(export.ExportError, match="Could not load the SavedModel .*broken"):
        export.load(broken)

    # a SavedModel whose variables are garbled
    garbled = tmp_path / "garbled"
    shutil.copytree(exported["rnn"].saved_model, garbled)
    for data in (garbled / "variables").glob("variables.data-*"):
        data.write_bytes(b"\x00garbage" * 3)
    with pytest.raises(export.ExportError, match="Could not load the SavedModel .*garbled"):
        export.load(garbled)

    # a truncated .keras file
    cut = tmp_path / "cut.keras"
    cut.write_bytes(exported["rnn"].keras_file.read_bytes()[:500])
    with pytest.raises(export.ExportError, match="cut.keras. is not a complete .keras file"):
        export.load(cut)

    # an id model without its vocabulary
    lonely = tmp_path / "lonely"
    lonely.mkdir()
    (lonely / "model.keras").write_bytes((tiny["rnn"].run_dir / "model.keras").read_bytes())
    with pytest.raises(export.ExportError, match="no vectorizer.json beside it"):
        export.load(lonely / "model.keras")
    with pytest.raises(export.ExportError, match="No run directory"):
        export.export(tmp_path / "no-run")


def _copy_run(run_dir, folder):
    shutil.copytree(run_dir, folder)
    return folder


DAMAGED_VECTORIZERS = {
    "truncated": lambda text: text[: len(text) // 2],
    "no class_name": lambda text: json.dumps(
        {k: v for k, v in json.loads(text).items() if k != "class_name"}
    ),
    "no vocabulary": lambda text: json.dumps(
        {**json.loads(text), "config": {**json.loads(text)["config"], "vocabulary": None}}
    ),
}


@pytest.mark.parametrize("damage", list(DAMAGED_VECTORIZERS))
def test_a_damaged_vectorizer_json_is_one_could_not_read_error(tiny, tmp_path, capsys, damage):
    run = _copy_run(tiny["rnn"].run_dir, tmp_path / "run")
    vectorizer_file = run / "vectorizer.json"
    vectorizer_file.write_text(DAMAGED_VECTORIZERS[damage](vectorizer_file.read_text()))
    message = "Could not read a Vectorizer from .*run/vectorizer.json"
    with pytest.raises(export.ExportError, match=message):
        export.load(run)  # hatt predict and hatt.inspect load through here
    if damage != "no class_name":
        return
    with pytest.raises(export.ExportError, match=message):
        export.load(run / "model.keras")
    with pytest.raises(export.ExportError, match=message):
        export.export(run, tmp_path / "out")
    with pytest.raises(export.ExportError, match=message):
        hatt.inspect.explain(run, ["a review"])
    for argv in (["predict", str(run), "a review"], ["inspect", str(run), "--text", "a review"]):
        assert cli.main(argv) == 2
        err = capsys.readouterr().err
        assert "Could not read a Vectorizer from" in err and "Traceback" not in err


def _dead_pid():
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()
    return child.pid


@pytest.fixture(scope="module")
def reexported(exported, tiny, tmp_path_factory):
    """The session's RNN export as killed and crashed exports left it, then ``hatt export``
    of its run again: one export checked by the two tests below. ``(out, before, printed,
    running)``: ``before`` the version ``export.load`` picked before the export."""
    out = tmp_path_factory.mktemp("reexport") / "rnn"
    shutil.copytree(exported["rnn"].path, out)  # the session's export: version 1
    # killed after its version folder was in place, before export.json named it
    shutil.copytree(out / "1", out / "2")
    inside = json.loads((out / "2" / export.VERSION_METADATA).read_text())
    (out / "2" / export.VERSION_METADATA).write_text(json.dumps({**inside, "version": 2}))
    assert json.loads((out / export.EXPORT_FILE).read_text())["version"] == 1  # stale
    (out / "3").mkdir()  # an incomplete version: its number is taken, but never loaded
    (out / ".tmp-4-99").mkdir()  # a recent leftover of an older hatt: not yet stale
    # killed while writing: a half SavedModel, a 0-byte .keras; an old leftover of an
    # older hatt; and the temporaries of an export still running (this process)
    dead = _dead_pid()
    (out / f".tmp-export-{dead}-a1b2c3" / "saved_model" / "variables").mkdir(parents=True)
    (out / f".tmp-export-{dead}-d4e5f6.keras").write_bytes(b"")
    (out / ".tmp-7-4242").mkdir()
    old = time.time() - 2 * 24 * 3600  # two days
    os.utime(out / ".tmp-7-4242", (old, old))
    running = out / f".tmp-export-{os.getpid()}-running"
    running.mkdir()

    latest = export.load(out)  # the highest complete version, whatever export.json says
    before = (latest.version, latest.family)
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        assert cli.main(["export", str(tiny["rnn"].run_dir), "--out", str(out)]) == 0
    return out, before, printed.getvalue(), running


def test_reexport_takes_the_next_free_version(reexported):
    out, before, printed, _ = reexported
    assert before == (2, "rnn")  # not the incomplete 3
    assert "(version 4)" in printed  # 3 is taken
    # issue 64, item 8: what the new version replaced, in words
    line = f"{out}: version 4 (replaces version 2's model.keras; version 2 stays servable)"
    assert f"  version      {line}\n" in printed
    assert export.load(out).version == 4
    assert json.loads((out / export.EXPORT_FILE).read_text())["versions"] == [1, 2, 4]


def test_a_killed_export_is_cleaned_up_and_export_json_follows_the_versions(reexported):
    out, _, _, running = reexported
    left = sorted(p.name for p in out.iterdir() if p.name.startswith(".tmp-"))
    assert left == sorted([".tmp-4-99", running.name])  # the running and the recent ones
    facts = json.loads((out / export.EXPORT_FILE).read_text())
    assert (facts["version"], facts["versions"]) == (4, [1, 2, 4])
    inside = json.loads((out / "4" / export.VERSION_METADATA).read_text())
    assert (inside["version"], inside["family"]) == (4, "rnn")


def test_two_exports_at_once_take_two_versions(tiny, tmp_path):
    out = tmp_path / "rnn"
    with concurrent.futures.ThreadPoolExecutor(2) as pool:
        results = list(pool.map(lambda _: export.export(tiny["rnn"].run_dir, out), range(2)))
    assert sorted(r.version for r in results) == [1, 2]
    assert not [p.name for p in out.iterdir() if p.name.startswith(".tmp-")]
    facts = json.loads((out / export.EXPORT_FILE).read_text())
    assert (facts["version"], facts["versions"]) == (2, [1, 2])
    for version in (1, 2):
        inside = json.loads((out / str(version) / export.VERSION_METADATA).read_text())
        assert inside["version"] == version
    assert export.load(out).version == 2
    assert export.load(out / "model.keras").family == "rnn"


def test_a_saved_model_serves_text_but_not_edited_ids(exported):
    predictor = saved_model(exported["rnn"].path)
    with pytest.raises(export.ExportError, match="SavedModel: its signature takes raw text"):
        predictor.ragged_ids(["a review"])
    with pytest.raises(export.ExportError, match="model.keras or the run directory"):
        hatt.inspect.deletion_test(predictor, ["a review"], progress=False)
