"""Tests for hatt.layers.SRU against a step-by-step NumPy loop (TensorFlow and torch backends)."""

import keras
import numpy as np
import pytest

from hatt.layers import SRU

from ._layer_test import gradients, to_numpy


def sigmoid(x):
    return 1 / (1 + np.exp(-x))


def numpy_sru(layer, x, mask=None, backwards=False):
    """Step-by-step SRU of Lei et al. 2017 in float64 from the layer's weights."""
    w = to_numpy(layer.kernel).astype("float64")
    v = to_numpy(layer.recurrent_kernel).astype("float64")
    b = to_numpy(layer.bias).astype("float64")
    n = layer.units
    batch, steps, _ = x.shape
    mask = np.ones((batch, steps), bool) if mask is None else mask
    order = range(steps - 1, -1, -1) if backwards else range(steps)
    out = np.zeros((batch, steps, n))
    last = np.zeros((batch, n))
    for i in range(batch):
        c = np.zeros(n)
        for k, t in enumerate(order):
            if not mask[i, t]:
                continue
            p = x[i, t].astype("float64") @ w
            skip = x[i, t] if w.shape[1] == 3 * n else p[3 * n :]
            f = sigmoid(p[n : 2 * n] + v[0] * c + b[0])
            r = sigmoid(p[2 * n : 3 * n] + v[1] * c + b[1])
            c = f * c + (1 - f) * p[:n]
            out[i, k] = r * c + (1 - r) * skip
            last[i] = out[i, k]
    return out, last


def data(seed=0, batch=3, steps=5, dim=4):
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(batch, steps, dim)).astype("float32")
    mask = rng.random((batch, steps)) > 0.3
    mask[0] = False
    mask[1] = True
    mask[2, -1] = False
    return x, mask


@pytest.mark.parametrize("units", [4, 6])  # identity skip, projected skip
def test_matches_numpy_loop_with_mask(units):
    x, mask = data()
    x[~mask] = np.nan  # padded values must not leak
    layer = SRU(units)
    got = to_numpy(layer(x, mask=mask))
    want, _ = numpy_sru(layer, np.nan_to_num(x), mask)
    np.testing.assert_allclose(got, want, atol=1e-5)
    assert np.all(got[~mask] == 0)


def test_last_output_and_backwards():
    x, mask = data(seed=1)
    layer = SRU(3, return_sequences=False)
    got = to_numpy(layer(x, mask=mask))
    _, last = numpy_sru(layer, x, mask)
    np.testing.assert_allclose(got, last, atol=1e-5)
    back = SRU.from_config({**layer.get_config(), "go_backwards": True})
    back.build(x.shape)
    back.set_weights(layer.get_weights())
    _, last_back = numpy_sru(back, x, mask, backwards=True)
    np.testing.assert_allclose(to_numpy(back(x, mask=mask)), last_back, atol=1e-5)


def test_one_step_input():
    x = np.ones((2, 1, 4), "float32")
    layer = SRU(4)
    got = to_numpy(layer(x))
    want, _ = numpy_sru(layer, x)
    np.testing.assert_allclose(got, want, atol=1e-5)


def test_bidirectional_with_embedding_mask():
    tokens = np.array([[3, 5, 2, 0, 0], [1, 2, 3, 4, 5]], "int32")
    embed = keras.layers.Embedding(10, 4, mask_zero=True)
    bi = keras.layers.Bidirectional(SRU(3))
    out = to_numpy(bi(embed(tokens)))
    assert out.shape == (2, 5, 6)
    x = to_numpy(embed(tokens))
    mask = tokens > 0
    fwd, _ = numpy_sru(bi.forward_layer, x, mask)
    bwd, _ = numpy_sru(bi.backward_layer, x, mask, backwards=True)
    np.testing.assert_allclose(out[..., :3], fwd, atol=1e-5)
    np.testing.assert_allclose(out[..., 3:], bwd[:, ::-1], atol=1e-5)


def test_config_round_trip_and_gradients():
    layer = SRU(5, return_sequences=False, name="sru")
    clone = keras.saving.deserialize_keras_object(keras.saving.serialize_keras_object(layer))
    assert isinstance(clone, SRU) and clone.get_config() == layer.get_config()
    x, mask = data(seed=2)
    layer(x, mask=mask)

    def loss(inp):
        return keras.ops.sum(layer(inp, mask=mask))

    grads = gradients(loss, x, layer.trainable_variables)
    assert all(np.all(np.isfinite(g)) for g in grads)
    assert np.all(grads[0][~mask] == 0)
    assert np.any(grads[1] != 0)


def test_bad_units():
    with pytest.raises(ValueError, match=r"units=0"):
        SRU(0)


def test_graph_with_unknown_time_axis_inside_bidirectional():
    """model.fit on batches of different lengths: the scanned time axis is unknown when traced.

    keras' TensorFlow scan failed there on several scanned tensors
    (`'NoneType' object has no attribute 'assert_is_compatible_with'`).
    """
    tokens = keras.Input(shape=(None,), dtype="int32")
    x = keras.layers.Embedding(12, 4, mask_zero=True)(tokens)
    x = keras.layers.Bidirectional(SRU(3, return_sequences=False))(x)
    model = keras.Model(tokens, keras.layers.Dense(1)(x))
    model.compile("adam", "mse", jit_compile=False)
    rng = np.random.default_rng(0)
    for length in (5, 7):  # a new length: traced again, or run with an unknown axis
        ids = rng.integers(1, 12, size=(4, length)).astype("int32")
        ids[0, 2:] = 0
        assert np.isfinite(model.train_on_batch(ids, np.ones((4, 1)))).all()
        assert np.isfinite(to_numpy(model.predict_on_batch(ids))).all()
    if keras.backend.backend() == "tensorflow":
        import tensorflow as tf

        spec = tf.TensorSpec((None, None, 4), "float32")
        mask_spec = tf.TensorSpec((None, None), "bool")
        bi = keras.layers.Bidirectional(SRU(3))
        traced = tf.function(lambda x, m: bi(x, mask=m), input_signature=[spec, mask_spec])
        x, mask = data(seed=3, dim=4)
        eager = to_numpy(bi(x, mask=mask))
        np.testing.assert_allclose(to_numpy(traced(x, mask)), eager, atol=1e-6)


def test_nan_at_masked_steps_reaches_no_gradient():
    x, mask = data(seed=4)
    x[~mask] = np.nan
    for units in (4, 6):  # identity skip, projected skip
        layer = SRU(units)
        layer(x, mask=mask)

        def loss(inp, layer=layer):
            return keras.ops.sum(layer(inp, mask=mask))

        grads = gradients(loss, x, layer.trainable_variables)
        assert all(np.all(np.isfinite(g)) for g in grads)
        assert np.all(grads[0][~mask] == 0)


def test_gradients_match_finite_differences_of_the_numpy_loop():
    """Through the chunked scan (11 steps: a chunk and a padded one), masks and both skips."""
    rng = np.random.default_rng(5)
    x = rng.normal(size=(2, 11, 3))
    mask = np.ones((2, 11), bool)
    mask[0, 3] = False
    mask[1, 7:] = False
    weights = rng.normal(size=(2, 11, 3))
    for units, backwards in ((3, False), (3, True), (2, False)):  # identity, projected skip
        layer = SRU(units, go_backwards=backwards, dtype="float64")
        layer(x, mask=mask)
        w = weights[..., :units]

        def loss(inp, layer=layer, w=w):
            return keras.ops.sum(keras.ops.multiply(layer(inp, mask=mask), w))

        got = gradients(loss, x, layer.trainable_variables)[0]

        def reference(inp, layer=layer, w=w, backwards=backwards):
            return np.sum(numpy_sru(layer, inp, mask, backwards=backwards)[0] * w)

        want = np.zeros_like(x)
        for index in np.ndindex(x.shape):
            step = np.zeros_like(x)
            step[index] = 1e-6
            want[index] = (reference(x + step) - reference(x - step)) / 2e-6
        np.testing.assert_allclose(got, want, atol=1e-6)
