"""--init MODEL (issue 36, item 6): a new model starts from a trained one's weights."""

import json

import numpy as np
import pytest

import hatt
from hatt.data import Imdb
from hatt.training import transfer
from tests.conftest import planted

TINY = {
    "max_tokens": 120,
    "min_count": 1,
    "sequence_length": 20,
    "batch_size": 16,
    "learning_rate": 0.02,
    "epochs": 1,
    "patience": 1,
    "embedding_dim": 8,
    "units": 4,
    "word_vectors": None,
}


@pytest.fixture(scope="module")
def trained(tmp_path_factory):
    run_dir = tmp_path_factory.mktemp("source") / "run"
    corpus = Imdb(planted(80, 0), planted(20, 1), planted(20, 2), "planted")
    hatt.TextClassifier("rnn", **TINY).fit(corpus, run_dir=run_dir, verbose=0)
    return run_dir


def _new_model(texts, num_classes):
    vectorizer = hatt.data.Vectorizer(max_tokens=150, min_count=1, sequence_length=20)
    vectorizer.adapt(texts)
    model = hatt.models.build(
        "rnn",
        vocabulary_size=vectorizer.vocabulary_size,
        num_classes=num_classes,
        embedding_dim=8,
        units=4,
        ngram={"buckets": 32},
    )
    return model, vectorizer


def test_layers_words_and_a_same_task_head_are_copied(trained):
    source = transfer.load_source(trained, "rnn")
    texts = planted(60, 5).texts + ["a zyzzogeton appears only here"]
    model, vectorizer = _new_model(texts, 2)
    start = model.get_layer("embedding").get_weights()[0].copy()
    channel = model.get_layer("ngram_logit").get_weights()[0].copy()
    info = transfer.init_from_model(model, vectorizer, source.class_names, source)

    old = source.text_model.classifier
    for name in ("encoder_0", "word_attention", "logit"):
        assert name in info["copied"]
        for mine, theirs in zip(
            model.get_layer(name).get_weights(), old.get_layer(name).get_weights(), strict=True
        ):
            np.testing.assert_array_equal(mine, theirs)
    assert info["head"] == "copied"
    rows = model.get_layer("embedding").get_weights()[0]
    trained_rows = old.get_layer("embedding").get_weights()[0]
    known = {w: i for i, w in enumerate(source.text_model.vectorizer.get_vocabulary())}
    shared = 0
    for i, word in enumerate(vectorizer.get_vocabulary()):
        if i >= 2 and known.get(word, 0) >= 2:
            np.testing.assert_array_equal(rows[i], trained_rows[known[word]])
            shared += 1
        else:  # padding, OOV and words the trained model never saw keep their start
            np.testing.assert_array_equal(rows[i], start[i])
    assert info["embedding_words"] == shared > 0
    assert "zyzzogeton" in vectorizer.get_vocabulary()
    np.testing.assert_array_equal(model.get_layer("ngram_logit").get_weights()[0], channel)


def test_another_task_keeps_its_fresh_head(trained):
    source = transfer.load_source(trained, "rnn")
    model, vectorizer = _new_model(planted(60, 5).texts, 3)
    info = transfer.init_from_model(model, vectorizer, ("a", "b", "c"), source)
    assert "logit" not in info["copied"] and "encoder_0" in info["copied"]
    assert info["head"].startswith("other classes")


def test_fit_with_init_writes_init_json_and_trains(trained, tmp_path):
    texts = planted(90, 7)
    names = np.array(["bad", "good"])[texts.labels]
    clf = hatt.TextClassifier("rnn", init=str(trained), **TINY)
    clf.fit(texts.texts, names, run_dir=tmp_path / "run", verbose=0)
    info = json.loads((tmp_path / "run" / "init.json").read_text())
    assert info["source"].startswith(str(trained)) and info["embedding_words"] > 0
    assert info["head"].startswith("other classes")  # bad/good are not negative/positive
    probabilities = clf.predict(["A fine film."])
    assert np.isfinite(probabilities).all()


def test_a_bad_init_fails_before_any_data_is_read(trained, tmp_path, monkeypatch):
    from hatt.training import corpus as corpus_lib

    def no_data(*args, **kwargs):
        raise AssertionError("the corpus was read before --init was checked")

    monkeypatch.setattr(corpus_lib.Corpus, "open", no_data)
    texts = planted(40, 3)
    with pytest.raises(ValueError, match="Expected init to name a trained hatt model"):
        hatt.TextClassifier("rnn", init=str(tmp_path / "nowhere"), **TINY).fit(
            texts.texts, texts.labels, run_dir=tmp_path / "a", verbose=0
        )
    with pytest.raises(ValueError, match="Expected init to be a han model"):
        hatt.TextClassifier("han", init=str(trained), word_vectors=None).fit(
            texts.texts, texts.labels, run_dir=tmp_path / "b", verbose=0
        )
