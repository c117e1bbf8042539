"""hatt.training.starts.word_vectors: an embedding started from word2vec or a vectors file."""

import json

import keras
import numpy as np
import pytest
import tensorflow as tf

from hatt import models, training
from hatt.training.starts import word_vectors
from tests import _starts_runs as starts_runs

WORDS = ["", "[UNK]", "good", "great", "bad", "awful", "film"]


def write(path, text):
    path.write_text(text, encoding="utf-8")
    return path


def test_read_vectors_matches_words_skips_the_header_and_counts_bad_lines(tmp_path):
    path = write(
        tmp_path / "vectors.txt",
        "5 3\n"  # word2vec header
        "good 1 2 3\n"
        "unknownword 9 9 9\n"  # not in the vocabulary: skipped
        "bad 4 5 x\n"  # not numbers: counted, not fatal
        "film 0.5 nan 1\n"  # not finite: counted, the row stays unfound
        "great -1 -2 -3\n",
    )
    vectors, found, info = word_vectors.read_vectors(path, WORDS, 3)
    np.testing.assert_array_equal(found, [False, False, True, True, False, False, False])
    np.testing.assert_array_equal(vectors[2], [1, 2, 3])
    np.testing.assert_array_equal(vectors[3], [-1, -2, -3])
    assert not vectors[4].any() and not vectors[6].any()
    assert info == {"lines": 5, "bad_lines": 2}


def test_read_vectors_refuses_another_width_and_a_file_without_matches(tmp_path):
    wide = write(tmp_path / "wide.txt", "good 1 2 3 4\n")
    with pytest.raises(ValueError, match="vectors of 3 numbers.*Received: 4 on line 1"):
        word_vectors.read_vectors(wide, WORDS, 3)
    unrelated = write(tmp_path / "other.txt", "cheval 1 2 3\n\xff\xfe 1 2 3\n")
    with pytest.raises(ValueError, match="No word of the vocabulary has a vector"):
        word_vectors.read_vectors(unrelated, WORDS, 3)


def test_sentences_of_flat_and_nested_ids_drop_padding_and_oov():
    flat = tf.ragged.constant([[2, 1, 3, 0], [], [4]])
    assert word_vectors.sentences_of(flat) == [[2, 3], [], [4]]
    nested = tf.ragged.constant([[[2, 3], [1, 4]], [[5]]])
    assert word_vectors.sentences_of(nested) == [[2, 3], [4], [5]]
    counts = word_vectors.token_counts(tf.ragged.constant([[2, 3, 0, 1], [], [3]]), 5)
    np.testing.assert_array_equal(counts, [0, 0, 1, 2, 0])
    nested_counts = word_vectors.token_counts(nested, 6)
    np.testing.assert_array_equal(nested_counts, [0, 0, 1, 1, 1, 1])


def test_word2vec_puts_words_of_the_same_contexts_together():
    """ "good"/"great" share contexts, "bad"/"awful" share others: similar vectors."""
    rng = np.random.default_rng(0)
    good, great, bad, awful = 2, 3, 4, 5
    sentences = []
    for _ in range(1000):  # two disjoint sets of 100 context words
        positive = list(rng.integers(10, 110, size=4))
        negative = list(rng.integers(110, 210, size=4))
        sentences.append([*positive[:2], int(rng.choice([good, great])), *positive[2:]])
        sentences.append([*negative[:2], int(rng.choice([bad, awful])), *negative[2:]])
    vectors, found = word_vectors.train_word2vec(sentences, 220, 16, seed=3, epochs=10)
    assert found[2:6].all() and not found[:2].any() and not found[[6, 7, 8, 9, 215]].any()

    def cosine(a, b):
        return vectors[a] @ vectors[b] / np.linalg.norm(vectors[a]) / np.linalg.norm(vectors[b])

    assert cosine(good, great) > cosine(good, bad) + 0.5
    assert cosine(bad, awful) > cosine(great, awful) + 0.5
    again, _ = word_vectors.train_word2vec(sentences, 220, 16, seed=3, epochs=10)
    np.testing.assert_array_equal(again, vectors)  # one worker: a seed gives the same vectors


def test_init_sets_found_rows_scaled_to_the_start_and_keeps_the_rest(tmp_path):
    model = models.build("rnn", vocabulary_size=len(WORDS), embedding_dim=3, units=2)
    start = keras.ops.convert_to_numpy(model.get_layer("embedding").embeddings).copy()
    path = write(tmp_path / "v.txt", "good 1 2 3\ngreat -1 -2 -3\n[UNK] 7 7 7\n")
    config = training.TrainConfig(model="rnn", word_vectors=str(path))
    ids = tf.ragged.constant([[2, 2, 3, 6, 1]])
    info = word_vectors.init_word_vectors(model, config, ids, WORDS)
    rows = keras.ops.convert_to_numpy(model.get_layer("embedding").embeddings)
    scale = np.std(start) / np.std([1, 2, 3, -1, -2, -3])
    np.testing.assert_allclose(rows[2], np.array([1, 2, 3]) * scale, rtol=1e-5)
    np.testing.assert_allclose(rows[3], np.array([-1, -2, -3]) * scale, rtol=1e-5)
    # padding, OOV (even with a vector in the file) and words without one keep their start
    np.testing.assert_array_equal(rows[[0, 1, 4, 5, 6]], start[[0, 1, 4, 5, 6]])
    assert info["words"] == 5 and info["words_with_vectors"] == 2
    assert info["vocabulary_coverage"] == 0.4
    assert info["token_coverage"] == 0.75  # 3 of the 4 in-vocabulary tokens
    unscaled = training.TrainConfig(model="rnn", word_vectors=str(path), word_vectors_scale="none")
    word_vectors.init_word_vectors(model, unscaled, ids, WORDS)
    rows = keras.ops.convert_to_numpy(model.get_layer("embedding").embeddings)
    np.testing.assert_array_equal(rows[2], [1, 2, 3])


def test_the_han_embedding_is_found_and_the_one_hot_cnn_refused():
    han = models.build("han", vocabulary_size=20, embedding_dim=4, word_units=2, sentence_units=2)
    assert word_vectors.embedding_layer(han).name == "word_embedding"
    one_hot = models.build("cnn", vocabulary_size=20, words="one_hot", kernel_sizes=[3], filters=2)
    with pytest.raises(ValueError, match="one-hot CNN"):
        word_vectors.embedding_layer(one_hot)


def test_bad_settings_fail_before_any_data(tmp_path):
    with pytest.raises(ValueError, match="word_vectors_scale"):
        training.TrainConfig(model="rnn", word_vectors="word2vec", word_vectors_scale="big")
    with pytest.raises(ValueError, match="word_vectors_epochs"):
        training.TrainConfig(model="rnn", word_vectors="word2vec", word_vectors_epochs=0)
    cases = [
        ({"model": "rnn", "word_vectors": str(tmp_path / "missing.txt")}, "no such file"),
        (
            {"model": "cnn", "word_vectors": "word2vec", "model_kwargs": {"words": "one_hot"}},
            "one-hot CNN",
        ),
    ]
    for values, message in cases:
        config = training.TrainConfig(**values)
        with pytest.raises(ValueError, match=message):
            training.train(config, tmp_path / "run", texts=None, verbose=0)
        assert not (tmp_path / "run").exists()


@pytest.mark.slow
def test_a_run_started_from_word2vec_learns_and_records_the_vectors(tmp_path_factory):
    """The shared fit (tests/_starts_runs.py: word2vec over the training split and the
    unlabeled documents, which the vocabulary reads too)."""
    run = starts_runs.word2vec_run(tmp_path_factory)
    metrics = run["metrics"]
    assert metrics["test_accuracy"] >= 0.9
    recorded = json.loads((run["run_dir"] / "word_vectors.json").read_text())
    assert metrics["word_vectors"] == recorded and recorded["source"] == "word2vec"
    # every training word has a vector; the planted cue words are among them
    assert recorded["words_with_vectors"] == recorded["words"]
    assert recorded["token_coverage"] == 1.0


@pytest.mark.slow
def test_frozen_vectors_stay_as_word2vec_gave_them(tmp_path_factory):
    """The shared ``hatt train`` run (tests/_starts_runs.py) with
    word_vectors_trainable=false and word_vectors_scale=none: after training, each row
    with a vector is the vector word2vec gave (its cache, word_vectors.npz); how a vectors
    file's rows land is test_init_sets_found_rows_scaled_to_the_start_and_keeps_the_rest."""
    run_dir = starts_runs.cli_run(tmp_path_factory)["run_dir"]
    model = keras.saving.load_model(run_dir / "model.keras")
    assert not model.get_layer("embedding").trainable
    rows = keras.ops.convert_to_numpy(model.get_layer("embedding").embeddings)
    with np.load(run_dir / word_vectors.CACHE_FILE) as cached:
        vectors, found = cached["vectors"], cached["found"]
    assert found.sum() > 10 and len(found) == len(rows)
    np.testing.assert_allclose(rows[found], vectors[found], rtol=1e-6)
