"""hatt.training.run.datasets and the checks train() runs before it writes anything."""

from pathlib import Path

import numpy as np
import pytest

import hatt
from hatt import cli, training
from hatt.data import Imdb
from hatt.training.run import datasets as corpus_lib
from tests._planted import planted_split


def write_one_class_imdb(root, n=12):
    """An aclImdb folder whose neg/ folders are empty (every review positive)."""
    root = Path(root) / "aclImdb"
    for split in ("train", "test"):
        (root / split / "neg").mkdir(parents=True)
        (root / split / "pos").mkdir(parents=True)
        for i in range(n):
            (root / split / "pos" / f"{i}_9.txt").write_text(f"A superb film number {i}.")
    return root


@pytest.fixture(scope="module")
def planted():
    return Imdb(planted_split(48, 0), planted_split(16, 1), planted_split(16, 2), "planted")


def small_config(**values):
    return training.TrainConfig(
        model="cnn", model_kwargs={"embedding_dim": 8, "filters": 4}, min_count=1, **values
    )


def test_corpus_from_text_gives_what_the_run_reads(planted):
    config = small_config(batch_size=8)
    corpus = training.Corpus.open(config, planted)
    assert corpus.sizes == {"train": 48, "validation": 16, "test": 16}
    assert corpus.in_memory and corpus.num_classes == 2
    np.testing.assert_array_equal(corpus.labels("test"), planted.test.labels)
    assert corpus.class_counts("train").tolist() == [24, 24]
    datasets = corpus.datasets()
    assert set(datasets) == {"train", "validation", "test"}
    assert corpus.steps_per_epoch() == int(datasets["train"].cardinality())
    predicted = list(corpus.prediction_dataset("test"))
    assert sum(int(batch.shape[0]) for batch in predicted) == 16
    # the same ids and batches as create_datasets, the function the tests of export use
    vectorizer = training.create_vectorizer(config).adapt(planted.train.texts)
    assert vectorizer.get_vocabulary() == corpus.vectorizer.get_vocabulary()
    ids, _ = training.create_datasets(config, planted, vectorizer)["test"]
    assert ids.to_list() == corpus.ids["test"].to_list()


def test_a_split_without_every_class_is_refused_with_the_counts():
    counts = {"train": [0, 20], "validation": [0, 4], "test": [0, 8]}
    with pytest.raises(ValueError, match=r"fewer than two classes.*train negative 0, positive 20"):
        corpus_lib.check_classes(counts, ("negative", "positive"))
    counts = {"train": [10, 10], "validation": [4, 0], "test": [4, 4]}
    with pytest.raises(ValueError, match=r"in \['validation'\].*validation negative 4, positive 0"):
        corpus_lib.check_classes(counts, ("negative", "positive"))
    corpus_lib.check_classes({"train": [1, 1], "validation": [1, 1], "test": [1, 1]}, ("a", "b"))


def test_a_one_class_corpus_is_refused_before_training(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("HATT_CACHE", str(tmp_path / "cache"))
    root = write_one_class_imdb(tmp_path / "corpus")
    run_dir = tmp_path / "run"
    argv = ["train", "cnn", "--preset", "none", "--data", str(root), "--run-dir", str(run_dir)]
    assert cli.main([*argv, "--set", "validation_size=4", "--export-dir", ""]) == 2
    err = capsys.readouterr().err
    # refused by the loader (hatt.data.load_corpus), before any split is carved
    assert "fewer than two classes" in err and "'negative' 0, 'positive' 12" in err
    assert "Traceback" not in err
    assert not run_dir.exists()


@pytest.mark.parametrize(
    "extra",
    [
        ["--set", "model_kwargs.filterz=3"],
        ["--set", "model_kwargs.filters=-3"],  # caught by building the model once
        ["--set", "learning_rate=1e-3x"],
        ["--limit", "0"],
    ],
)
def test_bad_settings_fail_before_any_data_is_read(tmp_path, capsys, monkeypatch, extra):
    calls = []
    monkeypatch.setattr(hatt.data, "load_imdb", lambda *a, **k: calls.append(a))
    run_dir = tmp_path / "run"
    argv = ["train", "cnn", "--run-dir", str(run_dir), "--export-dir", "", *extra]
    assert cli.main(argv) == 2
    err = capsys.readouterr().err
    assert err.startswith("hatt train: error: ") and err.count("\n") == 1
    assert not calls and not run_dir.exists()


def test_unknown_model_kwargs_message(tmp_path, capsys):
    argv = ["train", "cnn", "--set", "model_kwargs.filterz=3", "--run-dir", str(tmp_path / "r")]
    assert cli.main(argv) == 2
    assert (
        "Unknown model_kwargs for cnn: 'filterz' (did you mean 'filters'?). Known: ["
        in capsys.readouterr().err
    )


@pytest.mark.parametrize("kind", ["file", "under_a_file"])
def test_an_unwritable_run_dir_is_one_line_and_exit_2(tmp_path, capsys, monkeypatch, kind):
    calls = []
    monkeypatch.setattr(hatt.data, "load_imdb", lambda *a, **k: calls.append(a))
    blocker = tmp_path / "taken"
    blocker.write_text("not a folder")
    run_dir = blocker if kind == "file" else blocker / "run"
    argv = ["train", "cnn", "--preset", "none", "--run-dir", str(run_dir), "--export-dir", ""]
    assert cli.main(argv) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and str(run_dir) in err and "is a file" in err
    assert "Traceback" not in err and not calls


def test_the_summary_says_what_was_evaluated():
    metrics = {
        "model": "cnn",
        "test_accuracy": 0.9,
        "test_loss": 0.3,
        "validation_accuracy": 0.9,
        "best_epoch": 1,
        "epochs": 1,
        "train_seconds": 6.0,
        "examples_per_second": 10.0,
        "parameters": 10,
        "seed": 1,
        "test_size": 2000,
    }
    assert "(full test split, 2000 reviews;" in training.summary({**metrics, "limit": None}, "r")
    limited = training.summary({**metrics, "limit": 2000}, "r")
    assert "test split limited to 2000 reviews by --limit" in limited
    assert "full test split" not in limited


def test_a_run_dir_on_a_read_only_file_system_is_called_so(tmp_path, monkeypatch):
    # issue 63, second pass: a read-only mount was reported as "permission denied"
    import os
    import types

    from hatt.training.run import resume

    monkeypatch.setattr(os, "access", lambda path, mode: False)
    monkeypatch.setattr(os, "statvfs", lambda path: types.SimpleNamespace(f_flag=os.ST_RDONLY))
    with pytest.raises(resume.RunError, match=r"is on a read-only file system"):
        resume.check_writable(tmp_path / "run")
    monkeypatch.setattr(os, "statvfs", lambda path: types.SimpleNamespace(f_flag=0))
    with pytest.raises(resume.RunError, match=r"permission denied on"):
        resume.check_writable(tmp_path / "run")
