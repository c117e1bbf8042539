"""HAN inference skips padding: LengthGroupedBidirectional and ContextAttention(skip_masked).

Both must give what the plain layers give (the HAN's outputs of before), padding
must keep exactly zero attention weight, and .keras files of before must load.
"""

import keras
import numpy as np
import pytest
import tensorflow as tf

import hatt
from hatt.layers import ContextAttention
from hatt.models.rnn import CELL_CLASSES, CELLS
from hatt.models.wiring import EncoderMask, LengthGroupedBidirectional

from ._model_test import build_small, check_attention, nested_batch, nested_task, to_numpy


def _pair(cell="gru", **kwargs):
    """A plain and a grouped Bidirectional with the same weights (built on 4 features)."""
    keras.utils.set_random_seed(0)
    rnn = CELL_CLASSES[cell](5, return_sequences=True)
    plain = keras.layers.Bidirectional(rnn)
    grouped = LengthGroupedBidirectional(rnn, **kwargs)
    plain.build((None, None, 4))
    grouped.build((None, None, 4))
    grouped.set_weights(plain.get_weights())
    return plain, grouped


def _rows(n=23, steps=9, seed=0, right_padded=True):
    """Inputs `[n, steps, 4]` and a mask of random lengths (empty rows and full rows too)."""
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(n, steps, 4)).astype("float32")
    lengths = rng.integers(0, steps + 1, size=n)
    lengths[:2] = (0, steps)
    mask = np.arange(steps)[None, :] < lengths[:, None]
    if not right_padded:  # holes inside the rows too
        mask &= rng.random((n, steps)) > 0.2
    return x, mask


@pytest.mark.parametrize("cell", CELLS)
@pytest.mark.parametrize("kwargs", [{"groups": 3, "min_rows": 1}, {"groups": 8, "min_rows": 4}, {}])
def test_grouped_equals_plain(cell, kwargs):
    plain, grouped = _pair(cell, **kwargs)
    x, mask = _rows()
    mask = EncoderMask()(mask)  # what the HAN feeds it
    expected = to_numpy(plain(x, mask=mask))
    np.testing.assert_allclose(to_numpy(grouped(x, mask=mask)), expected, atol=1e-6)


@pytest.mark.parametrize("cell", CELLS)
def test_grouped_equals_plain_in_a_graph(cell):
    """Traced, the same ops as eagerly (test_grouped_equals_plain), on groups of every kind:
    23 rows in groups of 12 rows at least leave a full group, a partial one and an empty
    one (tracing costs about a Bidirectional RNN a group: 3 groups rather than 8)."""
    plain, grouped = _pair(cell, groups=3, min_rows=12)
    x, mask = _rows()
    mask = EncoderMask()(mask)  # what the HAN feeds it
    expected = to_numpy(plain(x, mask=mask))
    traced = tf.function(lambda a, m: grouped(a, mask=m, training=False))
    np.testing.assert_allclose(traced(x, mask).numpy(), expected, atol=1e-6)


def test_grouped_equals_plain_with_holes_in_the_mask():
    plain, grouped = _pair(groups=4, min_rows=2)
    x, mask = _rows(right_padded=False, seed=3)
    np.testing.assert_allclose(
        to_numpy(grouped(x, mask=mask)), to_numpy(plain(x, mask=mask)), atol=1e-6
    )


@pytest.mark.parametrize("n", [0, 1, 2, 7])
def test_fewer_rows_than_groups(n):
    """Empty groups (and an empty batch) give the plain layer's output, shaped alike."""
    plain, grouped = _pair(groups=8, min_rows=1)
    x, mask = _rows(n=max(n, 2))
    x, mask = x[:n], mask[:n]
    out = to_numpy(grouped(x, mask=mask))
    assert out.shape == (n, 9, 10)
    np.testing.assert_allclose(out, to_numpy(plain(x, mask=mask)), atol=1e-6)


def test_gradients_equal_plain():
    """Explanations differentiate through the word encoder at inference."""
    plain, grouped = _pair(groups=3, min_rows=1)
    x, mask = _rows(seed=1)
    x = tf.constant(x)
    grads = []
    for layer in (plain, grouped):
        with tf.GradientTape() as tape:
            tape.watch(x)
            total = tf.reduce_sum(layer(x, mask=mask, training=False) ** 2)
        grads.append(tf.convert_to_tensor(tape.gradient(total, x)).numpy())
    np.testing.assert_allclose(grads[1], grads[0], atol=1e-5)


def test_config_round_trip_and_bad_arguments():
    _, grouped = _pair(groups=5, min_rows=3)
    clone = keras.saving.deserialize_keras_object(keras.saving.serialize_keras_object(grouped))
    assert isinstance(clone, LengthGroupedBidirectional)
    assert (clone.groups, clone.min_rows) == (5, 3)
    with pytest.raises(ValueError, match="groups"):
        LengthGroupedBidirectional(keras.layers.GRU(2, return_sequences=True), groups=0)
    with pytest.raises(ValueError, match="min_rows"):
        LengthGroupedBidirectional(keras.layers.GRU(2, return_sequences=True), min_rows=1.5)


@pytest.mark.parametrize(
    "kwargs", [{}, {"score": "additive"}, {"heads": 3}, {"score": "general", "units": 4}]
)
def test_skip_masked_attention_equals_dense(kwargs):
    """Same weights and outputs; NaN at padding stays out; empty rows and batches."""
    rng = np.random.default_rng(0)
    x = rng.normal(size=(6, 7, 5)).astype("float32")
    mask = rng.random((6, 7)) > 0.5
    mask[0], mask[1] = False, True  # a row without a kept step, a full row
    x[~mask] = np.nan
    dense, skipping = ContextAttention(**kwargs), ContextAttention(skip_masked=True, **kwargs)
    dense(x, mask=mask), skipping(x, mask=mask)
    skipping.set_weights(dense.get_weights())
    expected, weights = (to_numpy(v) for v in dense(x, mask=mask, return_attention_scores=True))
    traced = tf.function(
        lambda a, m: skipping(a, mask=m, return_attention_scores=True), reduce_retracing=True
    )
    for got, got_weights in (skipping(x, mask=mask, return_attention_scores=True), traced(x, mask)):
        np.testing.assert_allclose(to_numpy(got), expected, atol=1e-6)
        np.testing.assert_allclose(to_numpy(got_weights), weights, atol=1e-6)
        per_step = to_numpy(got_weights)
        if per_step.ndim == 3:  # heads: [batch, heads, T] → [batch, T, heads]
            per_step = per_step.transpose(0, 2, 1)
        assert (per_step[~mask] == 0).all()  # exactly zero weight on padding
    assert tuple(traced(x[:0], mask[:0])[0].shape) == (0, 5 * kwargs.get("heads", 1))


def test_skip_masked_gradients_and_training_path():
    """Gradients (the explanations') agree; in training the layer runs densely."""
    rng = np.random.default_rng(1)
    x = tf.constant(rng.normal(size=(4, 6, 5)).astype("float32"))
    mask = rng.random((4, 6)) > 0.4
    dense, skipping = ContextAttention(), ContextAttention(skip_masked=True)
    dense(x, mask=mask), skipping(x, mask=mask)
    skipping.set_weights(dense.get_weights())
    grads = []
    for layer in (dense, skipping):
        with tf.GradientTape() as tape:
            tape.watch(x)
            total = tf.reduce_sum(layer(x, mask=mask) ** 2)
        grads.append(tf.convert_to_tensor(tape.gradient(total, x)).numpy())
    np.testing.assert_allclose(grads[1], grads[0], atol=1e-6)
    np.testing.assert_allclose(
        to_numpy(skipping(x, mask=mask, training=True)),
        to_numpy(dense(x, mask=mask, training=True)),
        atol=1e-6,
    )
    config = keras.saving.serialize_keras_object(skipping)
    assert keras.saving.deserialize_keras_object(config).skip_masked is True
    assert ContextAttention.from_config(dense.get_config()).skip_masked is False


def _with_plain_word_encoder(model):
    """`model` as main built it before: a plain `Bidirectional` word encoder, and a word
    attention that scores every step."""

    def clone(layer):
        config = layer.get_config()
        if layer.name == "word_encoder":
            config.pop("groups"), config.pop("min_rows")
            return keras.layers.Bidirectional.from_config(config)
        if layer.name == "word_attention":
            config["skip_masked"] = False
        return layer.__class__.from_config(config)

    plain = keras.models.clone_model(model, clone_function=clone)
    plain.set_weights(model.get_weights())
    return plain


def test_dense_han_skips_padding_and_packed_han_does_not():
    dense = build_small("han")
    assert isinstance(dense.get_layer("word_encoder"), LengthGroupedBidirectional)
    assert dense.get_layer("word_attention").skip_masked
    assert not dense.get_layer("sentence_attention").skip_masked
    packed = build_small("han", packed_groups=2)
    assert type(packed.get_layer("word_encoder")) is keras.layers.Bidirectional
    assert not packed.get_layer("word_attention").skip_masked


def test_han_gives_what_the_plain_word_encoder_gave(tmp_path):
    """Many sentences (several groups): probabilities and attention as before; a model
    saved with the plain word encoder (a .keras file of today) loads and agrees."""
    model = build_small("han", ngram={"buckets": 32})
    ids, _ = nested_task(40, max_sentences=4, max_words=6, seed=2)  # 160 rows: 5 groups
    edge = np.pad(nested_batch(), ((0, 0), (0, 1), (0, 2)))
    ids = np.concatenate([ids, edge], axis=0)
    plain = _with_plain_word_encoder(model)
    assert type(plain.get_layer("word_encoder")) is keras.layers.Bidirectional
    assert not plain.get_layer("word_attention").skip_masked
    views = check_attention("han", model, ids)  # zero weight on padding, sums to 1
    plain_views = hatt.models.attention_model(plain)(ids)
    for key, value in views.items():
        np.testing.assert_allclose(to_numpy(plain_views[key]), value, atol=1e-6, err_msg=key)

    path = tmp_path / "plain.keras"
    plain.save(path)
    loaded = keras.saving.load_model(path)
    assert type(loaded.get_layer("word_encoder")) is keras.layers.Bidirectional
    np.testing.assert_allclose(
        to_numpy(loaded(ids, training=False)), views["probability"], atol=1e-6
    )
    twin = hatt.models.dense_twin(loaded)  # a dense model is its own twin
    assert twin is loaded
