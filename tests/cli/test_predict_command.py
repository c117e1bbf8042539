"""`hatt predict`: options anywhere, --id-column, and the warnings it prints (issues 63, 64)."""

import json

import pytest

from hatt import cli, export
from tests.serve.conftest import fake_run

FEW = [f"The class 'c{i}' has 2 training document(s) (fewer than 10): ..." for i in range(2000)]
NGRAM = {"deep_validation_accuracy": 0.6, "channel_validation_accuracy": 0.9}


@pytest.fixture
def model(monkeypatch):
    """`hatt predict`'s loader gives a fake two-class model with recorded warnings."""
    predictor = export.Predictor(
        fake_run,
        family="cnn",
        score_kind="saliency",
        source="fake",
        kind="saved_model",
        metadata={"ngram": NGRAM, "warnings": FEW},
    )
    monkeypatch.setattr(export, "load", lambda path: predictor)
    return predictor


def _lines(out):
    return [json.loads(line) for line in out.splitlines()]


@pytest.mark.parametrize(
    "argv",
    [
        ["predict", "--threshold", "0.3", "MODEL", "a b", "c"],
        ["predict", "MODEL", "--threshold", "0.3", "a b", "c"],
        ["predict", "MODEL", "a b", "--threshold", "0.3", "c"],
        ["predict", "MODEL", "a b", "c", "--threshold", "0.3"],
    ],
)
def test_options_may_come_before_between_or_after_the_reviews(model, capsys, argv):
    assert cli.main(argv) == 0
    rows = _lines(capsys.readouterr().out)
    assert [(r["text_id"], r["label"]) for r in rows] == [(0, "positive"), (1, "positive")]


def test_an_unknown_option_is_an_error_in_the_subcommands_usage(model, capsys):
    with pytest.raises(SystemExit) as caught:
        cli.main(["predict", "MODEL", "a b", "--top", "2"])
    assert caught.value.code == 2
    err = capsys.readouterr().err
    assert "usage: hatt predict" in err and "unrecognized arguments: --top 2" in err


def test_id_column_carries_the_users_ids_through(model, tmp_path, capsys):
    table = tmp_path / "feedback.csv"
    table.write_text('ticket,text\nA-17,a fine film\n0042,"two\nlines"\n,empty id\n')
    assert cli.main(["predict", "MODEL", "--file", str(table), "--id-column", "ticket"]) == 0
    assert [r["text_id"] for r in _lines(capsys.readouterr().out)] == ["A-17", "0042", ""]
    lines = tmp_path / "feedback.jsonl"
    lines.write_text('{"id": 7, "text": "a"}\n{"id": "x", "text": "b"}\n')
    assert cli.main(["predict", "MODEL", "--file", str(lines), "--id-column", "id"]) == 0
    assert [r["text_id"] for r in _lines(capsys.readouterr().out)] == ["7", "x"]
    assert cli.main(["predict", "MODEL", "--file", str(table)]) == 0  # default: the lines
    assert [r["text_id"] for r in _lines(capsys.readouterr().out)] == ["line2", "line3", "line5"]


@pytest.mark.parametrize(
    "argv, words",
    [
        (["--file", "{table}", "--id-column", "id"], "Received columns: ['ticket', 'text']"),
        (["a review", "--id-column", "ticket"], "--id-column read a --file F table"),
        (["--file", "{lines}", "--id-column", "ticket"], "Expected --id-column with a table"),
    ],
)
def test_a_wrong_id_column_is_named(model, tmp_path, capsys, argv, words):
    table, lines = tmp_path / "feedback.csv", tmp_path / "reviews.txt"
    table.write_text("ticket,text\nA-17,a fine film\n")
    lines.write_text("a fine film\n")
    argv = [a.format(table=table, lines=lines) for a in argv]
    assert cli.main(["predict", "MODEL", *argv]) == 2
    err = capsys.readouterr().err
    assert words in err and err.count("\n") == 1


def test_predict_prints_a_few_warnings_a_count_and_none_about_explanations(model, capsys):
    assert cli.main(["predict", "MODEL", "a b"]) == 0
    err = capsys.readouterr().err.splitlines()
    assert len(err) == 4  # 3 warnings, then the count
    assert "the channel carries this model" not in "\n".join(err)  # explanations only
    assert err[-1].startswith("hatt predict: warning: ... and 1,997 more warnings")


def test_inspect_says_the_explanation_warning(model, capsys):
    cli.print_model_warnings("inspect", model)
    err = capsys.readouterr().err.splitlines()
    assert "the channel carries this model" in err[0]
    assert len(err) == 4 and "... and 1,998 more warnings" in err[-1]


def test_probability_names_its_class_beside_a_label_of_the_other(monkeypatch, capsys):
    # issue 64, item 5: ("unhappy", "happy"); p(happy) = 0.75 under a 0.8 threshold
    predictor = export.Predictor(
        fake_run, family="cnn", score_kind="saliency", source="fake", kind="saved_model",
        class_names=("unhappy", "happy"),
    )  # fmt: skip
    monkeypatch.setattr(export, "load", lambda path: predictor)
    assert cli.main(["predict", "MODEL", "--threshold", "0.8", "meh"]) == 0
    (row,) = _lines(capsys.readouterr().out)
    assert row["label"] == "unhappy" and row["label_probability"] == 0.25
    assert row["probability"] == 0.75 and row["probability_of"] == "happy"
