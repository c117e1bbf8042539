"""Tests for hatt.layers.RegionSum (run under the TensorFlow and torch backends)."""

import keras
import numpy as np
import pytest

from hatt.layers import RegionSum

from ._layer_test import run_layer_test, to_numpy


def one_hot_convolution(ids, table, widths, filters, bias=None):
    """NumPy reference: Conv1D(padding="same") over one-hot words, kernel rows from `table`.

    Width w's kernel at region position j is `table[:, (start + j) · filters : …]`;
    "same" pads (w - 1) // 2 steps on the left, the rest on the right; id 0 is padding
    (a zero one-hot vector).
    """
    batch, steps = ids.shape
    out, start = [], 0
    for w in widths:
        left = (w - 1) // 2
        y = np.zeros((batch, steps, filters), "float64")
        for b in range(batch):
            for t in range(steps):
                for j in range(w):
                    s = t + j - left
                    if 0 <= s < steps and ids[b, s] != 0:
                        y[b, t] += table[
                            ids[b, s], (start + j) * filters : (start + j + 1) * filters
                        ]
        out.append(y)
        start += w
    y = np.concatenate(out, axis=-1)
    return y if bias is None else y + bias


@pytest.mark.parametrize("widths", [[1], [2], [3], [1, 4], [2, 3, 5]])
def test_equals_a_convolution_over_one_hot_words(widths):
    rng = np.random.default_rng(sum(widths))
    filters, vocabulary = 4, 12
    table = rng.standard_normal((vocabulary, sum(widths) * filters)).astype("float32")
    ids = np.array([[3, 5, 7, 1, 0, 0], [2, 2, 9, 4, 6, 8], [0, 0, 0, 0, 0, 0]])
    layer = RegionSum(widths)
    outputs = to_numpy(layer(table[ids], mask=ids != 0))
    bias = to_numpy(layer.bias)
    want = one_hot_convolution(ids, table, widths, filters, bias)
    np.testing.assert_allclose(outputs, want, atol=1e-5)
    # and Keras' own Conv1D over one-hot vectors agrees (same alignment for even widths)
    start = 0
    one_hot = np.eye(vocabulary, dtype="float32")[ids] * (ids != 0)[..., None]
    for k, w in enumerate(widths):
        conv = keras.layers.Conv1D(filters, w, padding="same", use_bias=False)
        conv.build((None, None, vocabulary))
        rows = [table[:, (start + j) * filters : (start + j + 1) * filters] for j in range(w)]
        conv.kernel.assign(np.stack(rows))
        got = outputs[..., k * filters : (k + 1) * filters]
        np.testing.assert_allclose(got, to_numpy(conv(one_hot)), atol=1e-5)
        start += w


def test_padding_further_changes_nothing_and_activation_applies():
    rng = np.random.default_rng(0)
    table = rng.standard_normal((10, 3 * 2)).astype("float32")
    ids = np.array([[4, 5, 6]])
    longer = np.array([[4, 5, 6, 0, 0, 0, 0]])
    layer = RegionSum([3], activation="relu")
    short = to_numpy(layer(table[ids], mask=ids != 0))
    padded = to_numpy(layer(table[longer], mask=longer != 0))
    np.testing.assert_allclose(padded[:, :3], short, atol=1e-6)
    assert (short >= 0).all()
    np.testing.assert_allclose(
        short, np.maximum(one_hot_convolution(ids, table, [3], 2), 0), atol=1e-5
    )


def test_layer_basics_and_config():
    run_layer_test(RegionSum, {"widths": [2, 3], "activation": "relu"}, (2, 7, 15), (2, 7, 6))
    run_layer_test(RegionSum, {"widths": [3], "use_bias": False}, (2, 5, 9), (2, 5, 3))
    assert RegionSum(3).widths == [3]


@pytest.mark.parametrize(
    "kwargs, inputs, message",
    [
        ({"widths": []}, None, r"widths=\[\]"),
        ({"widths": [3, 0]}, None, r"widths=\[3, 0\]"),
        ({"widths": [2.5]}, None, r"widths=\[2.5\]"),
        ({"widths": [2, 3]}, (1, 4, 7), "multiple of sum\\(widths\\) = 5"),
    ],
)
def test_bad_arguments(kwargs, inputs, message):
    with pytest.raises(ValueError, match=message):
        layer = RegionSum(**kwargs)
        layer(np.zeros(inputs, "float32"))


def reload_cases():
    """`(name, model, inputs)` for tests/layers/test_reload.py (one fresh process for all)."""
    ids = keras.Input((None,), dtype="int32")
    lookups = keras.layers.Embedding(20, 3 * 4)(ids)
    model = keras.Model(ids, RegionSum([1, 2], activation="relu")(lookups))
    return [("region_sum", model, np.array([[3, 4, 5, 0]], "int32"))]
