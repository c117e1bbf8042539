"""Where `hatt train` exports: a name of its own for the user's data, --name, a clash
refused before the first epoch, and what a new version replaced (issue 64, item 8); the
training documents' fingerprints a run keeps and `hatt evaluate` reads (item 9)."""

import contextlib
import csv
import io
import json

import numpy as np
import pytest

from hatt import cli, export
from hatt import run_dir as run_files
from hatt.data.text import fingerprints
from hatt.export.layout import VERSION_METADATA, default_model_name, export_folder
from hatt.training.run.datasets import Corpus
from hatt.training.run.loop import write_training_fingerprints
from tests.conftest import planted

# The tiny CNN of tests/test_classifier.py's CLI run, without the n-gram channel.
TINY = ["--preset", "none", "--epochs", "1", "--set", "max_tokens=100", "--set", "min_count=1"]
TINY += ["--set", "sequence_length=20", "--set", "batch_size=16"]
TINY += ["--set", "model_kwargs.filters=8", "--set", "model_kwargs.embedding_dim=8"]
CLASSES = ("unhappy", "happy")


@pytest.mark.parametrize(
    ("data", "labels", "expected"),
    [
        (None, None, "cnn"),  # IMDB keeps the family's name
        ("tfds:imdb_reviews", None, "cnn"),
        (None, "rating", "imdb-rating-cnn"),  # IMDB's other task
        ("aclImdb_v1.tar.gz", None, "cnn"),
        ("my.csv", None, "my-cnn"),
        ("My Tickets (2024).TSV.gz", None, "my-tickets-2024-cnn"),
        ("reviews.v2.jsonl", None, "reviews-v2-cnn"),
        ("tfds:ag_news_subset", None, "ag_news_subset-cnn"),
        ("...csv", None, "data-cnn"),
    ],
)
def test_a_model_of_the_users_data_gets_the_corpuss_name(data, labels, expected):
    assert default_model_name("cnn", data, labels) == expected


def test_a_folder_gives_its_name_and_imdbs_folder_none(tmp_path):
    (tmp_path / "tickets" / "billing").mkdir(parents=True)
    assert default_model_name("han", f"{tmp_path}/tickets/") == "tickets-han"
    for split in ("train", "test"):
        for label in ("neg", "pos"):
            (tmp_path / "aclImdb" / split / label).mkdir(parents=True)
    assert default_model_name("han", str(tmp_path / "aclImdb")) == "han"


def test_the_export_folder_is_decided_in_one_place():
    assert str(export_folder("cnn", data="my.csv")) == "saved_models/my-cnn"
    assert str(export_folder("cnn", data="my.csv", name="mine")) == "saved_models/mine"
    # an explicit --export-dir keeps DIR/FAMILY (scripts know that layout), or DIR/NAME
    assert str(export_folder("cnn", data="my.csv", export_dir="out")) == "out/cnn"
    assert str(export_folder("cnn", name="mine", export_dir="out")) == "out/mine"
    assert export_folder("cnn", data="my.csv", export_dir="") is None
    with pytest.raises(ValueError, match=r"Expected --name to be a folder name.*'\.\./x'"):
        export_folder("cnn", name="../x")
    with pytest.raises(ValueError, match=r"not both\. Received: --name 'mine' --export-dir ''"):
        export_folder("cnn", name="mine", export_dir="")


def _served_version(out, class_names, version=1):
    """``out/VERSION`` as an export leaves it, as far as the version guard reads it."""
    folder = out / str(version)
    (folder / "assets.extra").mkdir(parents=True)
    (folder / "saved_model.pb").write_bytes(b"")
    (folder / VERSION_METADATA).write_text(json.dumps({"class_names": list(class_names)}))


def test_the_check_before_the_first_epoch_reads_the_runs_classes(tmp_path):
    out, run_dir = tmp_path / "saved_models" / "cnn", tmp_path / "run"
    _served_version(out, ("negative", "positive"))
    check = export.SameTaskCheck(out, run_dir, fix="Use --name NAME.")
    check.on_train_begin()  # no classes.json yet: nothing to compare
    (run_dir / run_files.TEACHER).mkdir(parents=True)  # self-training: the teacher first
    teacher_classes = run_dir / run_files.TEACHER / run_files.CLASSES
    teacher_classes.write_text(json.dumps({"class_names": list(CLASSES)}))
    with pytest.raises(export.OtherTaskError, match=r"\(unhappy, happy\)\. .*Use --name NAME\."):
        check.on_train_begin()
    same = export.SameTaskCheck(out, run_dir)
    (run_dir / run_files.CLASSES).write_text(json.dumps({"class_names": ["negative", "positive"]}))
    same.on_train_begin()
    assert same.checked


def _write_csv(path, split):
    with open(path, "w", newline="") as f:
        writer = csv.writer(f)
        writer.writerow(["text", "label"])
        writer.writerows((t, CLASSES[y]) for t, y in zip(split.texts, split.labels, strict=True))
    return path


@pytest.fixture
def tiny_csv(tmp_path, monkeypatch):
    """``my.csv`` (two classes, unhappy / happy) in a working folder of its own."""
    monkeypatch.chdir(tmp_path)
    return _write_csv(tmp_path / "my.csv", planted(96, 0))


def test_a_clash_fails_before_the_first_epoch_and_names_the_fix(tiny_csv, capsys):
    # `make train`'s IMDB model is where an own-data model would go without a name of its own
    _served_version(tiny_csv.parent / "saved_models" / "my-cnn", ("negative", "positive"))
    run_dir = tiny_csv.parent / "runs" / "mine"
    argv = ["train", "cnn", "--data", "my.csv", "--run-dir", str(run_dir), *TINY]
    assert cli.main(argv) == 2
    err = capsys.readouterr().err
    assert err.startswith("hatt train: error: 'saved_models/my-cnn' already serves another task")
    assert "Nothing was trained" in err and "--name NAME" in err
    assert not run_dir.exists()  # stopped before its first epoch: nothing kept


@pytest.fixture(scope="module")
def named(tmp_path_factory):
    """`hatt train cnn --data my.csv --name mine`, once: ``(folder, printed, metrics)``."""
    folder = tmp_path_factory.mktemp("named")
    _write_csv(folder / "my.csv", planted(96, 0))
    argv = ["train", "cnn", "--data", str(folder / "my.csv"), "--classes", ",".join(CLASSES)]
    argv += ["--run-dir", str(folder / "run"), "--name", "mine", *TINY]
    with pytest.MonkeyPatch.context() as patch:
        patch.chdir(folder)
        printed = io.StringIO()
        with contextlib.redirect_stdout(printed):
            assert cli.main(argv) == 0
    metrics = json.loads((folder / "run" / run_files.METRICS).read_text())
    return folder, printed.getvalue(), metrics


def test_name_exports_a_model_of_its_own_and_says_which_version(named):
    folder, printed, _ = named
    assert "exported to           saved_models/mine: version 1 (a new model)" in printed
    assert export.load(folder / "saved_models" / "mine").class_names == CLASSES


def test_the_run_keeps_its_training_documents_fingerprints_and_the_export_copies_them(named):
    # issue 64, item 9: train and validation documents, sorted, unique; never the test split
    folder, _, metrics = named
    kept = np.load(folder / "run" / run_files.TRAINING_FINGERPRINTS)
    assert kept.dtype == np.int64 and np.all(np.diff(kept) > 0)
    assert len(kept) == metrics["train_size"] + metrics["validation_size"]
    every = fingerprints(list(planted(96, 0).texts))
    assert np.isin(kept, every).all() and len(np.unique(every)) == 96
    copied = folder / "saved_models" / "mine" / "1" / export.VERSION_FINGERPRINTS
    assert copied.read_bytes() == (folder / "run" / run_files.TRAINING_FINGERPRINTS).read_bytes()
    for source in ("run", "saved_models/mine", "saved_models/mine/model.keras", "run/model.keras"):
        loaded = export.load(folder / source)
        np.testing.assert_array_equal(export.training_fingerprints(loaded.source), kept)


def test_evaluate_counts_the_training_documents_and_scores_the_others_alone(named, capsys):
    folder, _, metrics = named
    out = folder / "figures.json"
    argv = ["evaluate", str(folder / "saved_models" / "mine"), "--data", str(folder / "my.csv")]
    assert cli.main([*argv, "--output", str(out)]) == 0
    captured = capsys.readouterr()
    seen = metrics["train_size"] + metrics["validation_size"]
    assert (
        f"hatt evaluate: warning: {seen} of the 96 documents are this model's training "
        "documents: their figures say little about new documents\n"
    ) in captured.err
    figures = json.loads(out.read_text())
    assert figures["training_documents"] == seen and figures["examples"] == 96
    # NumPy reference: the documents not among the fingerprints, predicted by the model
    split = planted(96, 0)
    trained = np.isin(
        fingerprints(list(split.texts)), np.load(folder / "run" / run_files.TRAINING_FINGERPRINTS)
    )
    probability = export.load(folder / "saved_models" / "mine").predict_proba(split.texts)
    predicted = np.where(np.asarray(probability) >= 0.5, 1, 0)  # CLASSES[1] is "happy"
    truth = split.labels  # --classes unhappy,happy: the planted label is the index
    held_out = ~trained
    assert figures["held_out"]["examples"] == held_out.sum() == metrics["test_size"]
    assert figures["held_out"]["accuracy"] == pytest.approx(
        np.mean(predicted[held_out] == truth[held_out])
    )
    assert figures["accuracy"] == pytest.approx(np.mean(predicted == truth))
    assert f"On the {held_out.sum()} documents it did not train on alone:" in captured.out


def test_the_version_line_says_what_a_new_version_replaced():
    def result(**kwargs):
        return export.ExportResult(
            path="saved_models/han", version=2, saved_model="saved_models/han/2",
            keras_file="saved_models/han/model.keras", family="han", score_kind="attention",
            seconds=1.0, **kwargs,
        )  # fmt: skip

    assert result(replaced=1).version_line() == (
        "saved_models/han: version 2 (replaces version 1's model.keras; version 1 stays servable)"
    )
    assert result().version_line() == "saved_models/han: version 2 (a new model)"
    assert "model.keras stays version 3's" in result(newer=3).version_line()


def test_a_prepared_corpus_keeps_no_fingerprints(tmp_path):
    # its shards hold no text: nothing is written, and evaluate says it cannot tell
    shards = Corpus(None, None, {}, "prepared", class_names=CLASSES)
    assert shards.training_fingerprints() is None
    write_training_fingerprints(tmp_path, None)
    assert not list(tmp_path.iterdir())
    assert export.training_fingerprints(tmp_path) is None
