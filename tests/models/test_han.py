"""hatt.models.build_han: words → sentences → document, with attention at both levels."""

import keras
import numpy as np
import pytest

import hatt
from hatt.data import pack_sentences
from hatt.models.wiring import FoldSentences, UnfoldSentences

from ._model_test import (
    build_small,
    check_attention,
    check_forward,
    check_padding_invariance,
    nested_batch,
    nested_task,
    to_numpy,
)


def test_fold_and_unfold_round_trip():
    x = np.arange(2 * 3 * 4 * 5, dtype="float32").reshape(2, 3, 4, 5)
    folded = FoldSentences()(x)
    assert tuple(folded.shape) == (6, 4, 5)
    np.testing.assert_array_equal(to_numpy(UnfoldSentences()([folded, x])), x)


def test_no_time_distributed_and_one_word_encoder():
    model = build_small("han")
    kinds = {type(layer).__name__ for layer in model.layers}
    assert "TimeDistributed" not in kinds
    # The word encoder sees [batch * S, W, embedding_dim]: one row per sentence.
    assert model.get_layer("word_encoder").output.shape == (None, None, 32)


def test_empty_sentence_in_the_middle_gets_no_weight():
    model = build_small("han")
    ids = nested_batch()
    views = check_attention("han", model, ids)
    assert views["sentence_attention"][3, 1] == 0
    assert (views["word_attention"][3, 1] == 0).all()


@pytest.mark.parametrize(
    "kwargs",
    [{"cell": "lstm"}, {"attention_units": 8}, {"word_pooling": ["attention", "max", "mean"]}],
)
def test_variants(kwargs):
    model = build_small("han", **kwargs)
    ids = nested_batch()
    check_forward(model, ids)
    check_padding_invariance("han", model, ids)
    check_attention("han", model, ids)


def test_sentence_order_matters_but_padding_does_not():
    """Extra padded sentences at the end change nothing; moving a sentence changes the output."""
    model = build_small("han")
    ids = nested_batch()[:1]
    swapped = ids[:, [1, 0, 2]]
    assert not np.allclose(to_numpy(model(ids)), to_numpy(model(swapped)), atol=1e-7)
    check_padding_invariance("han", model, ids)


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"word_units": 0}, "word_units=0"),
        ({"sentence_units": None}, "sentence_units=None"),
        ({"cell": "GRU"}, "cell='GRU'"),
        ({"attention_score": None}, "attention_score=None"),
        ({"dropout": "0.1"}, "dropout='0.1'"),
        ({"word_pooling": "max"}, "no name twice"),
        ({"word_pooling": ["attention", "sum"]}, "pooling='sum'"),
    ],
)
def test_bad_arguments(kwargs, message):
    kwargs = {"vocabulary_size": 30, **kwargs}
    with pytest.raises(ValueError, match=message):
        hatt.models.build_han(**kwargs)


def _packed(ids, sentence_groups):
    """`hatt.data.pack_sentences` of dense ids whose trailing empty sentences are dropped."""
    import tensorflow as tf

    reviews = []
    for review in ids:
        sentences = [[int(w) for w in sentence if w] for sentence in review]
        while sentences and not sentences[-1]:
            sentences.pop()
        reviews.append(sentences)
    ragged = tf.ragged.constant(reviews, dtype=tf.int32, ragged_rank=2)
    return {k: np.asarray(v) for k, v in pack_sentences(ragged, sentence_groups).items()}


@pytest.mark.parametrize(
    "extra",
    [{}, {"ngram": {"buckets": 32}}, {"word_pooling": ["attention", "max", "mean"]}],
)
def test_packed_layout_computes_the_dense_model(tmp_path, extra):
    """Same weights, packed input: same probability and attention as the dense model."""
    dense = build_small("han", **extra)
    packed = build_small("han", packed_groups=2, **extra)
    if "ngram" in extra:  # give the n-gram channel weights that matter
        for model in (dense, packed):
            wide = model.get_layer("ngram_logit")
            wide.embeddings.assign(np.linspace(-1, 1, wide.num_features).astype("float32"))
    packed.set_weights(dense.get_weights())
    ids, _ = nested_task(16, max_sentences=4, max_words=6, seed=5)
    # Add the edge cases: an empty review and an empty sentence between two others.
    edge = np.pad(nested_batch(), ((0, 0), (0, 1), (0, 2)))
    ids = np.concatenate([ids, edge], axis=0)
    inputs = _packed(ids, (3, 6))
    dense_views = check_attention("han", dense, ids)
    packed_views = {k: to_numpy(v) for k, v in hatt.models.attention_model(packed)(inputs).items()}
    assert set(packed_views) == set(dense_views)
    for key, value in dense_views.items():
        np.testing.assert_allclose(packed_views[key], value, atol=1e-5, err_msg=key)

    path = tmp_path / "packed.keras"
    packed.save(path)
    loaded = keras.saving.load_model(path)
    reloaded = hatt.models.attention_model(loaded)(inputs)
    for key, value in packed_views.items():
        np.testing.assert_allclose(to_numpy(reloaded[key]), value, atol=1e-6, err_msg=key)


def test_word_concat_pooling_sentence_vectors():
    """Each sentence vector is [word attention; max; mean] of its real words' states."""
    model = build_small("han", word_pooling=["attention", "max", "mean"], dropout=0.0)
    ids = nested_batch()
    folded = ids.reshape(-1, ids.shape[-1])
    probe = keras.Model(
        model.inputs,
        [
            model.get_layer("word_pooled").output,
            model.get_layer("word_encoder").output,
            model.get_layer("word_attention").output[0],
        ],
    )
    joined, states, attended = (to_numpy(t) for t in probe(ids, training=False))
    d = states.shape[-1]
    assert joined.shape == (folded.shape[0], 3 * d)
    keep = folded != 0
    top = np.where(keep[..., None], states, -np.inf).max(1)
    top = np.where(keep.any(1)[:, None], top, 0.0)  # an empty sentence pools to zeros
    mean = (states * keep[..., None]).sum(1) / np.maximum(keep.sum(1), 1)[:, None]
    np.testing.assert_allclose(joined[:, :d], attended, atol=1e-6)
    np.testing.assert_allclose(joined[:, d : 2 * d], top, atol=1e-5)
    np.testing.assert_allclose(joined[:, 2 * d :], mean, atol=1e-5)
