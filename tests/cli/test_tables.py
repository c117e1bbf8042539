"""What `hatt data` and `hatt evaluate` print (issue 63: columns, class names; issue 64: --quiet)."""

import numpy as np

import hatt
from hatt import cli
from hatt.data.stats import format_statistics
from hatt.training.run.metrics import classification_metrics

CSV = "text,label\n" + "".join(
    f"{'a fine film' if i % 2 else 'a dull film'} number {i}.,{'pos' if i % 2 else 'neg'}\n"
    for i in range(40)
)


def _stats(reviews=1234567890, words=12345678901):
    lengths = {k: words for k in ("mean", "median", "p90", "p99", "max")}
    split = {
        "reviews": reviews,
        "classes": {"neg": reviews, "pos\rX": 0},
        **dict.fromkeys(
            ("words_per_review", "sentences_per_review", "words_per_sentence"), lengths
        ),
    }
    return {
        "source": "big.csv",
        "class_names": ["neg", "pos\rX"],
        "splits": {"train": split, "validation": split, "test": split},
        "warnings": [],
        "report": {"warnings": ["said while reading"], "skipped": {"empty text": 2}},
    }


def test_a_number_wider_than_its_column_widens_it():
    lines = format_statistics(_stats()).split("\n")
    row = next(line for line in lines if line.startswith("train "))
    # every figure stands apart: a split's name, its size, the length, five statistics
    assert row.split() == ["train", "1234567890", "words_per_review", *["12345678901"] * 5]
    neg = next(line for line in lines if line.startswith("neg"))
    assert neg.split() == ["neg", *["1234567890"] * 3]


def test_class_names_are_escaped_on_their_own_row_and_reading_warnings_not_repeated():
    text = format_statistics(_stats(reviews=5, words=3))
    assert "\r" not in text and "pos\\rX" in text
    assert len([line for line in text.split("\n") if line.startswith("pos")]) == 1
    assert "Skipped while reading: 2 (empty text)" in text
    assert "said while reading" not in text  # the reader printed it on stderr already


def test_data_says_a_duplicate_warning_once_and_quiet_prints_one_line(tmp_path, capsys):
    table = tmp_path / "dup.csv"
    rows = CSV.splitlines()
    table.write_text("\n".join(rows + rows[1:9]) + "\n")  # 8 documents twice
    assert cli.main(["data", "--data", str(table), "--validation-size", "4"]) == 0
    captured = capsys.readouterr()
    assert (captured.out + captured.err).count("also occur in the training") == 1
    assert "words_per_sentence" in captured.out
    assert cli.main(["data", "--data", str(table), "--validation-size", "4", "--quiet"]) == 0
    captured = capsys.readouterr()
    assert captured.out.startswith(f"2 classes from {table}: ")
    assert captured.out.count("\n") == 1 and "train" in captured.out
    assert (captured.out + captured.err).count("also occur in the training") == 1
    assert "Reading documents" not in captured.out + captured.err


def test_evaluate_keeps_a_class_name_with_a_carriage_return_on_its_row(
    tmp_path, capsys, monkeypatch
):
    names = ["neg", "pos\rtive"]
    table = tmp_path / "labelled.csv"
    table.write_text(CSV)

    class Classifier:
        class_names = names

        def evaluate(self, texts, labels, batch_size):
            labels = [names.index(label) for label in labels]
            scores = np.eye(2)[labels] * 0.8 + 0.1
            return classification_metrics(labels, scores, names)

    documents = hatt.data.corpus.Split(["a", "b"], np.array(names, dtype=object), ["0", "1"])
    monkeypatch.setattr(hatt.data, "read_documents", lambda **kw: (documents, {}))
    monkeypatch.setattr(hatt.export, "load", lambda path: type("P", (), {"warnings": ()})())
    monkeypatch.setattr(hatt.TextClassifier, "from_predictor", lambda predictor: Classifier())
    assert cli.main(["evaluate", "model", "--data", str(table)]) == 0
    out = capsys.readouterr().out
    assert "\r" not in out
    rows = [line for line in out.split("\n") if "pos\\rtive" in line]
    assert rows and all(line.startswith("|") for line in rows[:1])  # the whole row, escaped
    assert not any(line.startswith("tive") for line in out.split("\n"))
