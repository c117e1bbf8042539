"""hatt evaluate (issue 34, item 3): a trained model scored on a labelled file or folder with
the readers of hatt train and the figures of metrics.json."""

import csv
import json

import numpy as np
import pytest

from hatt import cli, export
from hatt.data import read_documents
from tests.conftest import planted

NAMES = np.array(["negative", "positive"])  # the tiny exports' classes


def _table(path, split, label_names=NAMES):
    with open(path, "w", newline="") as f:
        writer = csv.writer(f)
        writer.writerow(["review", "sentiment"])
        writer.writerows(zip(split.texts, label_names[split.labels], strict=True))
    return path


def _folder(root, splits):
    for name, split in splits.items():
        for k, (text, label) in enumerate(zip(split.texts, NAMES[split.labels], strict=True)):
            folder = root / name / label
            folder.mkdir(parents=True, exist_ok=True)
            (folder / f"{k}.txt").write_text(text)
    return root


def test_evaluate_a_table_gives_the_figures_of_the_models_own_predictions(
    exported, tmp_path, capsys
):
    split = planted(60, 7)
    table = _table(tmp_path / "reviews.csv", split)
    out = tmp_path / "figures.json"
    model = str(exported["cnn"].path)
    argv = ["evaluate", model, "--data", str(table), "--text-column", "review"]
    argv += ["--label-column", "sentiment", "--output", str(out)]
    assert cli.main(argv) == 0
    printed, err = capsys.readouterr()
    # a model trained outside the loop keeps no fingerprints: it says it cannot tell
    assert "it cannot tell whether any of these documents is one of them" in err
    figures = json.loads(out.read_text())
    assert figures["training_documents"] is None and figures["held_out"] is None
    probabilities = export.load(model).predict_proba(split.texts)
    predicted = (np.asarray(probabilities).reshape(len(split), -1)[:, -1] >= 0.5).astype(int)
    accuracy = float(np.mean(predicted == split.labels))
    assert figures["accuracy"] == pytest.approx(accuracy) and figures["examples"] == 60
    assert figures["class_names"] == list(NAMES) and figures["split"] == "auto"
    confusion = np.asarray(figures["confusion_matrix"]["matrix"])
    assert confusion.sum() == 60 and np.trace(confusion) == round(accuracy * 60)
    assert f"accuracy {100 * accuracy:.2f} %" in printed and "| negative |" in printed


def test_a_folder_with_its_own_test_split_is_scored_on_it(exported, tmp_path, capsys):
    root = _folder(tmp_path / "corpus", {"train": planted(20, 1), "test": planted(30, 2)})
    model = str(exported["cnn"].path)
    out = tmp_path / "test.json"
    assert cli.main(["evaluate", model, "--data", str(root), "--output", str(out)]) == 0
    assert json.loads(out.read_text())["examples"] == 30
    assert (
        cli.main(["evaluate", model, "--data", str(root), "--split", "all", "--output", str(out)])
        == 0
    )
    assert json.loads(out.read_text())["examples"] == 50


@pytest.mark.parametrize(
    "extra,labels,message",
    [
        ([], np.array(["negative", "neutral"]), "neutral"),
        (["--classes", "a,b"], NAMES, "--classes"),
        (["--split", "test"], NAMES, "no test split"),
    ],
)
def test_labels_the_model_does_not_know_are_named(
    exported, tmp_path, capsys, extra, labels, message
):
    table = _table(tmp_path / "r.csv", planted(20, 3), labels)
    argv = ["evaluate", str(exported["cnn"].path), "--data", str(table)]
    argv += ["--text-column", "review", "--label-column", "sentiment", *extra]
    assert cli.main(argv) == 2
    error = capsys.readouterr().err
    assert "hatt evaluate: error:" in error and message in error


def test_read_documents_keeps_every_row_and_its_label_name(tmp_path):
    table = _table(tmp_path / "r.csv", planted(12, 4))
    documents, report = read_documents(
        table, text_column="review", label_column="sentiment", progress=False
    )
    assert len(documents) == 12 and set(documents.labels) <= set(NAMES)
    assert report["skipped"] == {}
    with pytest.raises(ValueError, match="split"):
        read_documents(table, split="validation")
