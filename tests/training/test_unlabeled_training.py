"""Training with unlabeled documents (issue 36, items 1 and 5): `hatt train --unlabeled`,
``TextClassifier.fit(unlabeled=)``, the vocabulary and word2vec learning from them, and
validation / test texts never reaching training."""

import json

import pytest

import hatt
from hatt.data import Imdb
from hatt.training import TrainConfig, assemble_config
from tests import _starts_runs as starts_runs
from tests._starts_runs import ONLY_UNLABELED
from tests.conftest import planted

TINY_RNN = {
    "max_tokens": 200,
    "min_count": 1,
    "sequence_length": 20,
    "batch_size": 16,
    "learning_rate": 0.02,
    "epochs": 1,
    "patience": 1,
    "embedding_dim": 8,
    "units": 4,
    "ngram": None,
    "word_vectors": "word2vec",
    "word_vectors_epochs": 1,
}


@pytest.fixture(scope="module")
def corpus():
    return Imdb(planted(80, 0), planted(20, 1), planted(20, 2), "planted")


def test_fit_learns_the_vocabulary_and_vectors_from_unlabeled_text(tmp_path_factory):
    """The shared fit with unlabeled documents and unlabeled_vocabulary=true
    (tests/_starts_runs.py; tests/training/test_word_vectors.py checks its learning)."""
    run_dir = starts_runs.word2vec_run(tmp_path_factory)["run_dir"]
    report = json.loads((run_dir / "unlabeled.json").read_text())
    assert report["source"] == "(in memory)"
    assert (report["read"], report["empty"], report["excluded"], report["kept"]) == (32, 1, 1, 30)
    info = json.loads((run_dir / "word_vectors.json").read_text())
    assert info["unlabeled_documents"] == 30
    vocabulary = hatt.data.Vectorizer.load(run_dir / "vectorizer.json").get_vocabulary()
    assert ONLY_UNLABELED in vocabulary
    assert (run_dir / "word_vectors.npz").is_file()
    config = json.loads((run_dir / "config.json").read_text())
    assert config["unlabeled"] == "(in memory)"


def test_hatt_train_reads_a_folder_of_unlabeled_documents(tmp_path_factory):
    """The shared ``hatt train --unlabeled FOLDER`` run (tests/_starts_runs.py), with the
    defaults: word2vec learns from them, the vocabulary does not."""
    run = starts_runs.cli_run(tmp_path_factory)
    assert run["code"] == 0, run["printed"][-2000:]
    assert "Unlabeled: 30 documents kept of 32 read from" in run["printed"]
    assert "1 equal to a validation/test text and removed" in run["printed"]
    report = json.loads((run["run_dir"] / "unlabeled.json").read_text())
    assert report["source"] == str(run["unsup"]) and report["excluded"] == 1
    vocabulary = hatt.data.Vectorizer.load(run["run_dir"] / "vectorizer.json").get_vocabulary()
    assert ONLY_UNLABELED not in vocabulary
    info = json.loads((run["run_dir"] / "word_vectors.json").read_text())
    assert info["unlabeled_documents"] == 30


@pytest.mark.parametrize(
    "values,message",
    [
        (
            {"unlabeled": "u.txt"},
            "Expected a corpus read as text .not prepared=. and a step that learns",
        ),
        ({"unlabeled_text_column": "body"}, "with unlabeled_text_column"),
        ({"unlabeled": " ", "word_vectors": "word2vec"}, "Expected unlabeled to be a path"),
    ],
)
def test_bad_unlabeled_settings_are_refused_before_anything_runs(values, message):
    with pytest.raises(ValueError, match=message):
        hatt.training.TrainConfig(model="cnn", **values)


def test_a_missing_unlabeled_path_and_bad_documents_are_clear_errors(corpus, tmp_path):
    clf = hatt.TextClassifier("rnn", preset=None, **TINY_RNN)
    with pytest.raises(ValueError, match="no such file or folder"):
        clf.fit(corpus, run_dir=tmp_path / "a", verbose=0, unlabeled=tmp_path / "nowhere")
    with pytest.raises(ValueError, match="Expected unlabeled documents to be strings"):
        clf.fit(corpus, run_dir=tmp_path / "b", verbose=0, unlabeled=["fine", 3])
    with pytest.raises(ValueError, match="non-empty list of documents"):
        clf.fit(corpus, run_dir=tmp_path / "c", verbose=0, unlabeled=[])
    with pytest.raises(ValueError, match="all 2 documents of unlabeled='\\(in memory\\)'"):
        clf.fit(corpus, run_dir=tmp_path / "d", verbose=0, unlabeled=list(corpus.test.texts[:2]))


def test_the_cli_flag_reaches_the_config(tmp_path):
    config = assemble_config("rnn", unlabeled=str(tmp_path), unlabeled_text_column=None)
    assert config.unlabeled == str(tmp_path) and config.word_vectors == "word2vec"


def test_imdb_s_unlabeled_split_is_found_beside_the_labeled_data(tmp_path, monkeypatch):
    from hatt.data.unlabeled import UNSUP_ARCHIVE, find_imdb_unsup

    imdb = tmp_path / "aclImdb"
    (imdb / "train" / "pos").mkdir(parents=True)
    with pytest.raises(ValueError, match="Expected IMDB's unlabeled reviews beside"):
        find_imdb_unsup(str(imdb))
    (tmp_path / UNSUP_ARCHIVE).write_bytes(b"")
    assert find_imdb_unsup(str(imdb)) == tmp_path / UNSUP_ARCHIVE
    (imdb / "train" / "unsup").mkdir()
    assert find_imdb_unsup(str(imdb)) == imdb / "train" / "unsup"
    monkeypatch.setenv("HATT_IMDB", str(imdb))
    assert find_imdb_unsup(None) == imdb / "train" / "unsup"
    with pytest.raises(ValueError, match="as a local folder or .tar.gz"):
        find_imdb_unsup("tfds:imdb_reviews")


@pytest.mark.parametrize(
    "values, message",
    [
        (
            {"pseudo_label_threshold": 0.9, "unlabeled": "u.txt", "word_vectors": "word2vec"},
            "Expected pseudo_labels=true",
        ),
        (
            {"pseudo_labels": True, "unlabeled": "u.txt", "pseudo_label_threshold": 1.0},
            "a probability in",
        ),
        ({"adversarial": "fgsm"}, "Expected adversarial to be one of"),
        ({"adversarial": "at", "adversarial_epsilon": 0}, "adversarial_epsilon"),
        ({"init_frozen_epochs": 1}, "Expected init"),
        (
            {"init": "m.keras", "init_frozen_epochs": 10, "epochs": 10},
            "init_frozen_epochs < epochs",
        ),
        ({"init": "m.keras", "init_frozen_epochs": -1}, "integer >= 0"),
    ],
)
def test_semi_supervised_settings_are_checked(values, message):
    with pytest.raises(ValueError, match=message):
        TrainConfig(model="rnn", **values)


def test_pseudo_labels_and_vat_use_unlabeled_documents_without_word2vec():
    assert TrainConfig(model="rnn", unlabeled="u.txt", pseudo_labels=True).pseudo_labels
    # VAT takes its term on them, unless told to take it on the labeled batches
    assert TrainConfig(model="rnn", unlabeled="u.txt", adversarial="vat").unlabeled
    with pytest.raises(ValueError, match="a step that learns from"):
        TrainConfig(model="rnn", unlabeled="u.txt", adversarial="vat", adversarial_unlabeled=False)
