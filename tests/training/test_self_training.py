"""Self-training (issue 36, item 2: pseudo labels from the teacher, the confidence threshold
chosen on validation): the threshold and balancing math, and a tiny end-to-end run with its
teacher, its cached pseudo labels and the test documents kept out."""

import dataclasses
import json
import shutil
from pathlib import Path

import numpy as np
import pytest

import hatt
from hatt import run_dir as run_files
from hatt import training
from hatt.data import Imdb
from hatt.data.unlabeled import IN_MEMORY_UNLABELED
from hatt.training import self_training
from hatt.training.run import loop, resume
from tests.conftest import planted
from tests.training.test_train_wrapper import FakeFit
from tests.training.test_train_wrapper import _labels as fake_labels

TINY = {
    "max_tokens": 200,
    "min_count": 1,
    "sequence_length": 20,
    "batch_size": 16,
    "learning_rate": 0.02,
    "epochs": 1,  # a teacher and a student of one epoch: what they decide is tested
    "patience": 1,
    "embedding_dim": 8,
    "filters": 4,
    "ngram": None,
    "word_vectors": None,
}


def test_threshold_is_the_lowest_with_the_target_precision():
    # confidences 0.55 (wrong), 0.65 (right), 0.75 (wrong), 0.9, 0.95, 0.99 (right)
    positive = np.array([0.55, 0.65, 0.25, 0.9, 0.05, 0.99])
    probabilities = np.stack([1 - positive, positive], axis=1)
    labels = np.array([0, 1, 1, 1, 0, 1])
    threshold, table = self_training.choose_threshold(
        probabilities, labels, thresholds=(0.5, 0.6, 0.7, 0.8, 0.9), target=0.95
    )
    rows = {row["threshold"]: row for row in table}
    assert rows[0.5]["coverage"] == 1.0 and rows[0.5]["precision"] == pytest.approx(4 / 6)
    assert rows[0.6]["precision"] == pytest.approx(4 / 5)
    assert rows[0.7]["precision"] == pytest.approx(3 / 4)  # 0.75 is wrong
    assert rows[0.8]["precision"] == 1.0 and rows[0.8]["coverage"] == pytest.approx(0.5)
    assert threshold == 0.8


def test_threshold_none_reached_is_the_highest_and_empty_rows_have_no_precision():
    probabilities = np.array([[0.6, 0.4], [0.3, 0.7]])
    threshold, table = self_training.choose_threshold(probabilities, [1, 0], (0.5, 0.9), 0.95)
    assert threshold == 0.9
    assert table[1] == {"threshold": 0.9, "coverage": 0.0, "precision": None}


def test_selection_is_confident_balanced_to_the_class_shares_and_most_confident_first():
    positive = np.array([0.99, 0.97, 0.95, 0.93, 0.6, 0.02, 0.3, 0.08])
    probabilities = np.stack([1 - positive, positive], axis=1)
    indices, labels, confidence = self_training.select(probabilities, 0.9, [0.5, 0.5])
    # confident: class 1 -> 0, 1, 2, 3; class 0 -> 5 (0.98), 7 (0.92); balanced: 2 each
    assert indices.tolist() == [5, 7, 0, 1]
    assert labels.tolist() == [0, 0, 1, 1]
    np.testing.assert_allclose(confidence, [0.98, 0.92, 0.99, 0.97])
    # a limit keeps the shares: 3 in all, 1 and 1 (floor(1.5))
    indices, labels, _ = self_training.select(probabilities, 0.9, [0.5, 0.5], limit=3)
    assert indices.tolist() == [5, 0]
    # shares 1:3: class 1's 4 confident allow 4 / 0.75 = 5.33 documents in all (class 0's
    # 2 would allow 8): quotas floor(5.33 * 0.25) = 1 and floor(5.33 * 0.75) = 4
    indices, labels, _ = self_training.select(probabilities, 0.9, [0.25, 0.75])
    assert np.bincount(labels).tolist() == [1, 4]
    assert indices.tolist() == [5, 0, 1, 2, 3]
    # nothing confident: nothing kept, no error
    indices, labels, _ = self_training.select(probabilities, 0.999, [0.5, 0.5])
    assert len(indices) == 0 and len(labels) == 0


@pytest.fixture(scope="module")
def corpus():
    return Imdb(planted(80, 0), planted(30, 1), planted(30, 2), "planted")


@pytest.fixture(scope="module")
def unlabeled(corpus):
    """60 new documents, a test document's copy and an empty one (both kept out)."""
    return [*planted(60, 3).texts, corpus.test.texts[0], ""]


@pytest.fixture(scope="module")
def taught(corpus, unlabeled, tmp_path_factory):
    """One finished self-training run (threshold chosen on validation), trained once for
    the module; each test works on a copy (``taught(folder)``)."""
    run_dir = tmp_path_factory.mktemp("taught") / "self"
    hatt.TextClassifier("cnn", preset=None, pseudo_labels=True, **TINY).fit(
        corpus, run_dir=run_dir, verbose=0, unlabeled=unlabeled
    )
    return lambda folder: Path(shutil.copytree(run_dir, folder))


@pytest.fixture
def students(monkeypatch):
    """The student's run faked (the teacher's is the loop's): what the wrapper decides
    (which teacher, which pseudo labels, which documents the student gets) needs no
    student trained; the module's ``taught`` run trains a real one. The fake returns
    the metrics the wrapper completes: ``train_size``, the documents it was given."""
    real, seen = loop.train, []

    def fit(config, run_dir, *, texts=None, **kwargs):
        if run_dir.name == run_files.TEACHER:
            return real(config, run_dir, texts=texts, **kwargs)
        seen.append(config)
        return {"train_size": len(texts.train), "student": "faked"}

    monkeypatch.setattr(loop, "train", fit)
    return seen


def train(corpus, unlabeled, run_dir, restart=False, **settings):
    """``hatt.TextClassifier("cnn", preset=None, **TINY, **settings).fit(corpus, run_dir=...,
    unlabeled=unlabeled)``'s own call of ``hatt.training.train`` (fit goes on to read
    the student's history, which a faked student has not written)."""
    config = hatt.TextClassifier("cnn", preset=None, **{**TINY, **settings}).config
    config = dataclasses.replace(config, unlabeled=IN_MEMORY_UNLABELED)
    return training.train(
        config, run_dir, texts=corpus, unlabeled=unlabeled, restart=restart, verbose=0
    )


def test_fit_trains_a_teacher_then_a_student_on_the_confident_documents(
    corpus, unlabeled, taught, tmp_path, monkeypatch
):
    run_dir = taught(tmp_path / "self")
    teacher = json.loads((run_dir / "teacher" / "metrics.json").read_text())
    assert teacher["train_size"] == 80
    teacher_config = json.loads((run_dir / "teacher" / "config.json").read_text())
    assert teacher_config["pseudo_labels"] is False and teacher_config["unlabeled"] is None
    summary = json.loads((run_dir / "pseudo_labels.json").read_text())
    assert summary["unlabeled_documents"] == 60  # the test copy and the empty text are out
    assert 0 <= summary["kept"] <= summary["confident"] <= 60
    assert summary["threshold"] in self_training.THRESHOLDS
    assert len(summary["thresholds"]) == len(self_training.THRESHOLDS)
    assert summary["teacher"]["test_accuracy"] == teacher["test_accuracy"]

    metrics = json.loads((run_dir / "metrics.json").read_text())
    assert metrics["train_size"] == 80 + summary["kept"]
    assert metrics["self_training"]["kept"] == summary["kept"]
    assert 0.0 <= metrics["test_accuracy"] <= 1.0
    with np.load(run_dir / "pseudo_labels.npz") as saved:
        assert len(saved["indices"]) == summary["kept"]
        assert set(saved["indices"].tolist()) <= set(range(60))
    # the student's model answers like any run's
    probabilities = hatt.load(run_dir).predict(["a test"])
    assert np.isfinite(probabilities).all()

    # a finished run is refused before the teacher is looked at; --restart trains both
    # again (the runs faked as tests/training/test_train_wrapper.py fakes them: the
    # taught run above is the real teacher and student; what --restart decides is here)
    with pytest.raises(resume.RunError, match="finished run"):
        hatt.TextClassifier("cnn", preset=None, pseudo_labels=True, **TINY).fit(
            corpus, run_dir=run_dir, verbose=0, unlabeled=unlabeled
        )
    stamp = (run_dir / "teacher" / "metrics.json").stat().st_mtime_ns
    fake = FakeFit(corpus)
    monkeypatch.setattr(loop, "train", fake)
    monkeypatch.setattr(self_training, "_label_unlabeled", fake_labels)
    train(corpus, unlabeled, run_dir, restart=True, pseudo_labels=True, pseudo_label_threshold=0.5)
    assert (run_dir / "teacher" / "metrics.json").stat().st_mtime_ns != stamp
    assert [folder.name for _, folder, *_ in fake.calls] == ["teacher", "self"]  # both again
    summary = json.loads((run_dir / "pseudo_labels.json").read_text())
    assert summary["threshold"] == 0.5 and summary["chosen"] == "given"
    assert summary["confident"] == 60 and summary["kept"] > 0  # every document is >= 0.5
    assert json.loads((run_dir / "metrics.json").read_text())["train_size"] == 80 + summary["kept"]


def test_pseudo_labels_without_unlabeled_documents_fail_before_any_data(corpus, tmp_path):
    clf = hatt.TextClassifier(
        "cnn", preset=None, pseudo_labels=True, **TINY
    )  # unlabeled come at fit
    with pytest.raises(ValueError, match="Expected unlabeled documents"):
        clf.fit(corpus, run_dir=tmp_path / "none", verbose=0)
    assert not (tmp_path / "none").exists()


def test_an_interrupted_student_reuses_the_teacher_and_its_labels(
    corpus, unlabeled, taught, students, tmp_path
):
    """The student's runs are faked (``students``): no teacher trains here."""
    run_dir = taught(tmp_path / "resumed")
    settings = {"pseudo_labels": True}
    # as if the student had crashed: its results gone, the teacher's and the labels kept.
    # Run again with another limit (which the teacher's settings do not hold), it reuses
    # the teacher and its probabilities
    (run_dir / "metrics.json").unlink()
    teacher_stamp = (run_dir / "teacher" / "metrics.json").stat().st_mtime_ns
    labels_stamp = (run_dir / "teacher_probabilities.npz").stat().st_mtime_ns
    train(corpus, unlabeled, run_dir, restart=False, **settings, pseudo_label_limit=3)
    assert (run_dir / "teacher" / "metrics.json").stat().st_mtime_ns == teacher_stamp
    assert (run_dir / "teacher_probabilities.npz").stat().st_mtime_ns == labels_stamp
    summary = json.loads((run_dir / "pseudo_labels.json").read_text())
    assert summary["kept"] <= 3 and summary["limit"] == 3
    metrics = json.loads((run_dir / "metrics.json").read_text())
    assert metrics["train_size"] == 80 + summary["kept"]
    assert metrics["self_training"]["kept"] == summary["kept"]
    (run_dir / "metrics.json").unlink()

    # a finished run copied in as teacher/ teaches a new run without training again
    # (docs/training.md: how a model trained before becomes the teacher)
    fresh = tmp_path / "fresh"
    shutil.copytree(run_dir / "teacher", fresh / "teacher")
    stamp = (fresh / "teacher" / "metrics.json").stat().st_mtime_ns
    train(corpus, unlabeled, fresh, **settings)
    assert (fresh / "teacher" / "metrics.json").stat().st_mtime_ns == stamp
    teacher = json.loads((fresh / "teacher" / "metrics.json").read_text())
    taught_by = json.loads((fresh / "metrics.json").read_text())["self_training"]["teacher"]
    assert taught_by["test_accuracy"] == teacher["test_accuracy"]

    assert len(students) == 2  # a student each time, and no teacher trained
    with pytest.raises(resume.RunError, match="teacher .* other settings .*filters"):
        hatt.TextClassifier("cnn", preset=None, **{**TINY, **settings, "filters": 6}).fit(
            corpus, run_dir=run_dir, verbose=0, unlabeled=unlabeled
        )
