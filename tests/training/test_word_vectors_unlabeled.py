"""word2vec on the training split plus unlabeled text, and its cache in the run directory."""

import keras
import numpy as np
import pytest
import tensorflow as tf

from hatt import models, training
from hatt.training.starts import word_vectors

WORDS = ["", "[UNK]", "good", "great", "bad", "awful", "film"]
TRAIN = tf.ragged.constant([[2, 6, 3], [4, 6, 1]] * 20)
UNLABELED = tf.ragged.constant([[5, 6, 4], [3, 6, 2]] * 20)  # "awful" only occurs here


def _start(dim=8):
    model = models.build("rnn", vocabulary_size=len(WORDS), embedding_dim=dim, units=2)
    layer = model.get_layer("embedding")
    return model, layer, keras.ops.convert_to_numpy(layer.embeddings).copy()


def test_unlabeled_text_changes_the_vectors():
    config = training.TrainConfig(model="rnn", word_vectors="word2vec", word_vectors_epochs=2)
    model, layer, start = _start()
    alone = word_vectors.init_word_vectors(model, config, TRAIN, WORDS)
    rows_alone = keras.ops.convert_to_numpy(layer.embeddings).copy()
    np.testing.assert_array_equal(rows_alone[5], start[5])  # unseen: keeps its start
    model, layer, start = _start()
    both = word_vectors.init_word_vectors(model, config, TRAIN, WORDS, unlabeled_ids=UNLABELED)
    rows_both = keras.ops.convert_to_numpy(layer.embeddings)
    assert not np.allclose(rows_both[5], start[5])  # learned from the unlabeled text
    assert not np.allclose(rows_both[2], rows_alone[2])  # more contexts, other vectors
    assert both["words_with_vectors"] == alone["words_with_vectors"] + 1
    assert (both["unlabeled_documents"], both["unlabeled_tokens"]) == (40, 120)
    assert alone["unlabeled_documents"] == 0


def test_the_cache_is_reused_and_refused_for_other_inputs(tmp_path, monkeypatch, capsys):
    cache = tmp_path / word_vectors.CACHE_FILE
    kwargs = dict(seed=1, epochs=1, cache_path=cache)
    vectors, found, info = word_vectors.cached_word2vec(
        TRAIN, len(WORDS), 4, unlabeled_ids=UNLABELED, **kwargs
    )
    assert cache.is_file() and info["cached"] is False
    said = capsys.readouterr().out
    assert "Training word2vec (4 dimensions) on the training split and 40 unlabeled" in said

    def refuse(*args, **kwargs):
        raise AssertionError("word2vec retrained although the cache matches")

    monkeypatch.setattr(word_vectors, "train_word2vec", refuse)
    again, found_again, info = word_vectors.cached_word2vec(
        TRAIN, len(WORDS), 4, unlabeled_ids=UNLABELED, **kwargs
    )
    assert info["cached"] is True
    said = capsys.readouterr().out  # says it read them, not that it trains
    assert f"Word vectors: read from {cache}" in said and "Training" not in said
    np.testing.assert_array_equal(again, vectors)
    np.testing.assert_array_equal(found_again, found)
    with pytest.raises(AssertionError, match="retrained"):  # other text: the cache is stale
        word_vectors.cached_word2vec(TRAIN, len(WORDS), 4, **kwargs)


def test_unlabeled_text_needs_word2vec(tmp_path):
    path = tmp_path / "v.txt"
    path.write_text("good 1 2 3 4 5 6 7 8\n", encoding="utf-8")
    config = training.TrainConfig(model="rnn", word_vectors=str(path))
    model, _, _ = _start()
    with pytest.raises(ValueError, match="word_vectors='word2vec'"):
        word_vectors.init_word_vectors(model, config, TRAIN, WORDS, unlabeled_ids=UNLABELED)
