"""`hatt predict` end to end on a tiny exported model, and when a Predictor traces its functions."""

import io
import json
import sys

import numpy as np
import pytest

from hatt import cli, export
from tests.export._loaded import saved_model
from tests.inspect._backwards import RECORDED_WARNING, write_backwards_run


def _lines(out):
    return [json.loads(line) for line in out.strip().splitlines()]


def test_predict_texts_and_file_print_json_lines(exported, tmp_path, capsys):
    model = str(exported["cnn"].path)
    predictor = export.load(model)
    texts = ["Superb w1 w2. W3 w4!", "Dreadful w5.", "", "🎬"]
    assert cli.main(["predict", model, *texts]) == 0
    rows = _lines(capsys.readouterr().out)
    expected = predictor.predict_proba(texts)
    assert [r["text_id"] for r in rows] == [0, 1, 2, 3]
    np.testing.assert_allclose([r["probability"] for r in rows], expected, atol=1e-6)
    for row, text in zip(rows, texts, strict=True):
        keys = {"text_id", "label", "label_probability", "probabilities", "probability"}
        keys |= {"no_text"} if not text.strip() else set()  # "" is answered and flagged
        assert set(row) == {*keys, "probability_of"} and row["probability_of"] == "positive"
        assert row["label"] == ("positive" if row["probability"] >= 0.5 else "negative")
        assert row["probabilities"]["positive"] == row["probability"]
        assert row["probabilities"]["negative"] == pytest.approx(1 - row["probability"], abs=1e-6)
        assert row["label_probability"] == row["probabilities"][row["label"]]

    # one review per line; blank lines skipped (text_id = line number); bad UTF-8 repaired
    reviews = tmp_path / "reviews.txt"
    reviews.write_bytes(
        b"Superb w1 w2. W3 w4!\r\n\n   \nDreadful w5.\n\xff\xfe broken \xc3 bytes superb\n"
    )
    assert cli.main(["predict", model, "--file", str(reviews), "--batch-size", "2"]) == 0
    rows = _lines(capsys.readouterr().out)
    assert [r["text_id"] for r in rows] == [0, 3, 4]
    repaired = ["Superb w1 w2. W3 w4!", "Dreadful w5.", "\ufffd\ufffd broken \ufffd bytes superb"]
    np.testing.assert_allclose(
        [r["probability"] for r in rows], predictor.predict_proba(repaired), atol=1e-6
    )
    assert np.all(np.isfinite([r["probability"] for r in rows]))


@pytest.mark.parametrize(
    "argv,message",
    [
        (["MODEL"], "either as TEXT arguments or with --file"),
        (["MODEL", "a review", "--file", "F"], "either as TEXT arguments or with --file"),
        (["MODEL", "--file", "MISSING"], "No such file: --file"),
        (["MODEL", "a", "--batch-size", "0"], "Expected --batch-size from 1 to 1,048,576"),
        (["MODEL", "a", "--batch-size", str(10**23)], "Expected --batch-size from 1 to"),
        (["MODEL", "a", "--threshold", "1.5"], "Expected --threshold in [0, 1]"),
        (["NO_MODEL", "a review"], "No model at"),
    ],
)
def test_predict_errors_are_one_clear_line(exported, tmp_path, capsys, argv, message):
    (tmp_path / "F").write_text("a review\n")
    values = {
        "MODEL": str(exported["cnn"].path),
        "F": str(tmp_path / "F"),
        "MISSING": str(tmp_path / "missing.txt"),
        "NO_MODEL": str(tmp_path / "nothing"),
    }
    assert cli.main(["predict", *[values.get(a, a) for a in argv]]) == 2
    err = capsys.readouterr().err
    assert message in err and "Traceback" not in err


def test_predict_reads_stdin_with_file_dash(exported, monkeypatch, capsys):
    reviews = "Superb w1 w2.\nDreadful w5 w6!\n" * 30
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(reviews.encode())))
    model = exported["cnn"].keras_file  # the end-to-end .keras file this time
    assert cli.main(["predict", str(model), "--file", "-", "--batch-size", "32"]) == 0
    rows = _lines(capsys.readouterr().out)
    assert [r["text_id"] for r in rows] == list(range(60))
    expected = saved_model(exported["cnn"].path).predict_proba(reviews.splitlines())
    np.testing.assert_allclose([r["probability"] for r in rows], expected, atol=1e-5)


def test_predict_warns_once_and_leaves_the_explanation_warnings_to_inspect(
    exported, tiny, tiny_corpus, tmp_path, capsys
):
    run = write_backwards_run(tiny["cnn"].run_dir, tiny_corpus, tmp_path / "run")
    saved = export.export(run, tmp_path / "saved_models" / "cnn").path
    texts = [f"Superb w{i}." for i in range(5)]
    for model in (run, saved):  # the run directory and its export alone
        assert cli.main(["predict", str(model), *texts, "--batch-size", "2"]) == 0
        captured = capsys.readouterr()
        assert len(_lines(captured.out)) == 5  # stdout stays JSON lines
        lines = captured.err.splitlines()
        # issue 63: the deep part's negative weight and its place below the channel concern
        # explanations only; the run's recorded warning stays
        assert len(lines) == 1 and lines[0].startswith("hatt predict: warning: ")
        assert lines[0].endswith(RECORDED_WARNING)
        cli.print_model_warnings("inspect", export.load(model))
        lines = capsys.readouterr().err.splitlines()
        assert "negative weight" in lines[0] and "below the n-gram channel alone" in lines[1]
        assert len(lines) == 3 and lines[2].endswith(RECORDED_WARNING)
    assert cli.main(["predict", str(exported["cnn"].path), *texts]) == 0
    assert capsys.readouterr().err == ""  # a model with nothing to warn about


@pytest.mark.parametrize("kind", ["csv", "jsonl"])
def test_predict_reads_a_tables_text_column_with_line_breaks(exported, tmp_path, capsys, kind):
    """Issue 34, item 3: reviews with line breaks stay one review; text_id is the line the
    record starts on; an empty text is skipped and counted."""
    import csv

    reviews = ["A wonderful film.\nI loved it.", "", "Dull.\n\nAvoid it."]
    path = tmp_path / f"reviews.{kind}"
    if kind == "csv":
        with open(path, "w", newline="") as f:
            writer = csv.writer(f)
            writer.writerow(["id", "review"])
            writer.writerows([[k, r] for k, r in enumerate(reviews)])
        ids = ["line2", "line5"]  # a header, a 2-line record, an empty one, then line 5
    else:
        path.write_text("".join(json.dumps({"review": r}) + "\n" for r in reviews))
        ids = ["line1", "line3"]
    model = str(exported["cnn"].path)
    argv = ["predict", model, "--file", str(path), "--text-column", "review"]
    assert cli.main(argv) == 0
    captured = capsys.readouterr()
    rows = _lines(captured.out)
    assert [r["text_id"] for r in rows] == ids
    expected = saved_model(exported["cnn"].path).predict([reviews[0], reviews[2]])["probabilities"]
    np.testing.assert_allclose(
        [list(r["probabilities"].values()) for r in rows], expected, atol=1e-5
    )
    assert "Skipped 1 document(s) with an empty text" in captured.err


def test_predict_format_flags_are_checked(exported, tmp_path, capsys):
    text = tmp_path / "reviews.txt"
    text.write_text("A fine film.\n")
    model = str(exported["cnn"].path)
    assert cli.main(["predict", model, "--file", str(text), "--text-column", "review"]) == 2
    assert "--text-column with a table" in capsys.readouterr().err
    assert cli.main(["predict", model, "Fine.", "--format", "csv"]) == 2
    assert "--file" in capsys.readouterr().err
    assert cli.main(["predict", model, "--file", str(text), "--format", "csv"]) == 2
    assert "text_column" in capsys.readouterr().err  # a header without the text column


def test_an_in_memory_predictor_traces_a_function_once_it_has_batches_to_pay_for_it(
    tiny, tiny_corpus
):
    """Counted by function: one review explained after a large predict runs eagerly
    (tracing a HAN's explanation costs many times one eager explanation)."""
    model = tiny["cnn"]
    predictor = export.Predictor.from_text_model(export.TextModel(model.model, model.vectorizer))
    texts = list(tiny_corpus.test.texts)
    batches = export.Predictor.GRAPH_FROM_BATCHES
    predictor.predict(texts[: 2 * batches], batch_size=2)  # enough batches: traced
    eager = predictor.explain(texts[:1])
    assert set(predictor._graphs) == {"predict"}
    predictor.explain(texts[: 2 * batches], batch_size=2)  # now explain pays for its trace
    assert set(predictor._graphs) == {"predict", "explain"}
    traced = predictor.explain(texts[:1])
    for key, value in eager.items():
        if value.dtype.kind == "f":
            np.testing.assert_allclose(traced[key], value, atol=1e-5)
        else:
            np.testing.assert_array_equal(traced[key], value)
    # a server's predictor (hatt serve) runs every function as a graph from its first call
    served = export.Predictor.from_text_model(export.TextModel(model.model, model.vectorizer))
    served.use_graphs().explain(texts[:1])
    assert set(served._graphs) == {"explain"}


def test_an_empty_review_is_answered_flagged_and_said(exported, capsys):
    # issue 63/64, second pass: `hatt predict MODEL ""` answered a class without a word
    assert cli.main(["predict", str(exported["cnn"].path), "", "a fine film", "  "]) == 0
    captured = capsys.readouterr()
    rows = [json.loads(line) for line in captured.out.splitlines()]
    assert [row.get("no_text", False) for row in rows] == [True, False, True]
    assert "2 review(s) hold no text (0, 2)" in captured.err


def test_a_full_disk_met_by_tensorflow_is_one_line(exported, capsys, monkeypatch):
    # issue 63, second pass: TensorFlow's ResourceExhaustedError (TensorBoard's writer on
    # a resumed run) ended in a traceback
    import tensorflow as tf

    from hatt import export

    def full(path):
        raise tf.errors.ResourceExhaustedError(None, None, "events.out; No space left on device")

    monkeypatch.setattr(export, "load", full)
    assert cli.main(["predict", str(exported["cnn"].path), "a"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("hatt predict: error: The disk is full (") and "resumes" in err
