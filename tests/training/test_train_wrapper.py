"""hatt.training.train decides to wrap: the plain run alone, or self-training around it
(a teacher, its pseudo labels, then the plain run as the student), tested with a fake
``fit`` in place of the loop: which runs train, with which settings, documents and
directories, and what a second call reuses."""

import json

import numpy as np
import pytest

from hatt import run_dir as run_files
from hatt import training
from hatt.data import Imdb
from hatt.data.unlabeled import IN_MEMORY_UNLABELED as IN_MEMORY
from hatt.training import self_training
from hatt.training.run import loop, resume
from tests.conftest import planted

SETTINGS = {"model": "cnn", "ngram": None, "word_vectors": None}


@pytest.fixture(scope="module")
def corpus():
    return Imdb(planted(40, 0), planted(20, 1), planted(20, 2), "planted")


class FakeFit:
    """Stands in for ``loop.train``: records each run and writes what a run leaves that
    the wrapper reads (a teacher's settings, metrics and validation probabilities)."""

    def __init__(self, corpus):
        self.corpus, self.calls = corpus, []

    def __call__(self, config, run_dir, *, texts=None, unlabeled=None, **kwargs):
        self.calls.append((config, run_dir, texts, unlabeled, kwargs))
        run_dir.mkdir(parents=True, exist_ok=True)
        labels = np.asarray(self.corpus.validation.labels)
        metrics = {"test_accuracy": 0.75, "train_size": len(texts.train), "fake": True}
        if run_dir.name == run_files.TEACHER:
            confident = np.where(labels == 1, 0.99, 0.01)  # right, and sure of it
            np.savez(run_dir / "validation_probabilities.npz", probabilities=confident)
            (run_dir / "config.json").write_text(json.dumps(config.to_dict()))
            (run_dir / "metrics.json").write_text(json.dumps(metrics))
        return metrics


def _labels(teacher_dir, documents):  # the teacher's probabilities: sure of two in three
    positive = np.array([0.99, 0.01, 0.6])[np.arange(len(documents)) % 3]
    return np.stack([1 - positive, positive], axis=1)


def test_a_run_without_pseudo_labels_is_the_plain_run(monkeypatch, tmp_path, corpus):
    fake = FakeFit(corpus)
    monkeypatch.setattr(loop, "train", fake)
    config = training.TrainConfig(**SETTINGS)
    assert training.train(config, tmp_path, texts=corpus, verbose=0)["fake"]
    ((seen, run_dir, texts, _, kwargs),) = fake.calls
    assert seen is config and run_dir == tmp_path and texts is corpus and kwargs == {"verbose": 0}


def test_pseudo_labels_wrap_the_plain_run_in_a_teacher_and_a_student(monkeypatch, tmp_path, corpus):
    fake = FakeFit(corpus)
    monkeypatch.setattr(loop, "train", fake)
    monkeypatch.setattr(self_training, "_label_unlabeled", _labels)
    unlabeled = planted(10, 3).texts
    config = training.TrainConfig(**SETTINGS, pseudo_labels=True, unlabeled=IN_MEMORY)
    metrics = training.train(config, tmp_path, texts=corpus, unlabeled=unlabeled, command="c")

    (teacher, t_dir, t_texts, t_unlabeled, t_kwargs), (student, s_dir, s_texts, *_) = fake.calls
    assert t_dir == tmp_path / "teacher" and s_dir == tmp_path
    assert not teacher.pseudo_labels and teacher.unlabeled is None and t_unlabeled is None
    assert t_texts is corpus and t_kwargs == {"command": "c"}
    assert student is config  # the student: the plain run of the settings asked
    assert s_texts.validation is corpus.validation and s_texts.test is corpus.test
    summary = json.loads((tmp_path / "pseudo_labels.json").read_text())
    assert summary["threshold"] == 0.5 and summary["unlabeled_documents"] == 10
    assert len(s_texts.train) == 40 + summary["kept"] and summary["kept"] > 0
    assert metrics["self_training"] == summary
    assert json.loads((tmp_path / "metrics.json").read_text())["self_training"] == summary

    # the student's results gone (as if it crashed): the teacher and its labels are reused
    (tmp_path / "metrics.json").unlink()
    monkeypatch.setattr(self_training, "_label_unlabeled", pytest.fail)  # the cache is read
    fake.calls.clear()
    training.train(config, tmp_path, texts=corpus, unlabeled=unlabeled, command="c")
    assert [run_dir for _, run_dir, *_ in fake.calls] == [tmp_path]
    with pytest.raises(resume.RunError, match="finished run"):  # before the teacher
        training.train(config, tmp_path, texts=corpus, unlabeled=unlabeled)


def test_pseudo_labels_without_unlabeled_documents_train_nothing(monkeypatch, tmp_path, corpus):
    fake = FakeFit(corpus)
    monkeypatch.setattr(loop, "train", fake)
    config = training.TrainConfig(**SETTINGS, pseudo_labels=True)
    with pytest.raises(ValueError, match="Expected unlabeled documents"):
        training.train(config, tmp_path, texts=corpus)
    assert fake.calls == []
