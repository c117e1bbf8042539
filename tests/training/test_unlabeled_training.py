"""Training with unlabeled documents (issue 36, items 1 and 5): `hatt train --unlabeled`,
``TextClassifier.fit(unlabeled=)``, the vocabulary and word2vec learning from them, and
validation / test texts never reaching training."""

import json
import subprocess
import sys

import pytest

import hatt
from hatt.data import Imdb
from hatt.training import TrainConfig, assemble_config
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
ONLY_UNLABELED = "zyzzogeton"  # a word no labeled document holds


@pytest.fixture(scope="module")
def corpus():
    return Imdb(planted(80, 0), planted(20, 1), planted(20, 2), "planted")


def _unlabeled(corpus):
    """Unlabeled documents: new ones with an unseen word, and one copy of a test text."""
    new = [f"The {ONLY_UNLABELED} scene was a {ONLY_UNLABELED} delight {i}." for i in range(30)]
    return [*new, corpus.test.texts[3].upper(), "   "]


def test_fit_learns_the_vocabulary_and_vectors_from_unlabeled_text(corpus, tmp_path):
    clf = hatt.TextClassifier("rnn", unlabeled_vocabulary=True, **TINY_RNN)
    clf.fit(corpus, run_dir=tmp_path / "with", verbose=0, unlabeled=_unlabeled(corpus))
    report = json.loads((tmp_path / "with" / "unlabeled.json").read_text())
    assert report["source"] == "(in memory)"
    assert (report["read"], report["empty"], report["excluded"], report["kept"]) == (32, 1, 1, 30)
    info = json.loads((tmp_path / "with" / "word_vectors.json").read_text())
    assert info["unlabeled_documents"] == 30
    vocabulary = hatt.data.Vectorizer.load(tmp_path / "with" / "vectorizer.json").get_vocabulary()
    assert ONLY_UNLABELED in vocabulary
    assert (tmp_path / "with" / "word_vectors.npz").is_file()
    config = json.loads((tmp_path / "with" / "config.json").read_text())
    assert config["unlabeled"] == "(in memory)"

    # the default: word2vec learns from them, the vocabulary does not
    alone = tmp_path / "alone"
    hatt.TextClassifier("rnn", **TINY_RNN).fit(
        corpus, run_dir=alone, verbose=0, unlabeled=_unlabeled(corpus)
    )
    vocabulary = hatt.data.Vectorizer.load(alone / "vectorizer.json").get_vocabulary()
    assert ONLY_UNLABELED not in vocabulary
    assert json.loads((alone / "word_vectors.json").read_text())["unlabeled_documents"] == 30


def test_hatt_train_reads_a_folder_of_unlabeled_documents(corpus, tmp_path):
    data = tmp_path / "data"
    for split, name in ((corpus.train, "train"), (corpus.test, "test")):
        for i, (text, label) in enumerate(zip(split.texts, split.labels, strict=True)):
            folder = data / name / ("pos" if label else "neg")
            folder.mkdir(parents=True, exist_ok=True)
            (folder / f"{i}.txt").write_text(text)
    unsup = tmp_path / "unsup"
    unsup.mkdir()
    for i, text in enumerate(_unlabeled(corpus)):
        (unsup / f"{i}.txt").write_text(text)
    settings = ["--set", f"model_kwargs={json.dumps({'embedding_dim': 8, 'units': 4})}"]
    for key, value in TINY_RNN.items():
        if key not in ("embedding_dim", "units"):
            settings += ["--set", f"{key}={json.dumps(value)}"]
    command = [
        sys.executable, "-m", "hatt.cli", "train", "rnn", "--data", str(data),
        "--unlabeled", str(unsup), "--run-dir", str(tmp_path / "run"), "--export-dir", "",
        "--preset", "none", *settings,
    ]  # fmt: skip
    done = subprocess.run(command, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    assert "Unlabeled: 30 documents kept of 32 read from" in done.stdout
    assert "1 equal to a validation/test text and removed" in done.stdout
    report = json.loads((tmp_path / "run" / "unlabeled.json").read_text())
    assert report["source"] == str(unsup) and report["excluded"] == 1


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
    clf = hatt.TextClassifier("rnn", **TINY_RNN)
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
