"""Tests for hatt.layers.PositionEmbedding (run under the TensorFlow and torch backends)."""

import keras
import numpy as np
import pytest

from hatt.layers import PositionEmbedding

from ._layer_test import run_layer_test, to_numpy


@pytest.mark.parametrize("mode", ["learned", "sinusoidal"])
def test_layer_basics(mode):
    run_layer_test(PositionEmbedding, {"sequence_length": 10, "mode": mode}, (3, 7, 6), (3, 7, 6))


def test_learned_returns_the_first_rows_of_the_table_for_every_example():
    layer = PositionEmbedding(10)
    outputs = to_numpy(layer(np.zeros((2, 4, 3), "float32")))
    table = to_numpy(layer.embeddings)
    assert table.shape == (10, 3)
    np.testing.assert_allclose(outputs[0], table[:4])
    np.testing.assert_allclose(outputs[1], table[:4])


def test_sinusoidal_matches_vaswani_and_has_no_weights():
    layer = PositionEmbedding(mode="sinusoidal")
    outputs = to_numpy(layer(np.zeros((2, 50, 7), "float32")))
    assert not layer.weights
    pos = np.arange(50)[:, None]
    i = np.arange(7)
    angles = pos / np.power(10000.0, (i // 2 * 2) / 7)
    want = np.where(i % 2 == 0, np.sin(angles), np.cos(angles))
    np.testing.assert_allclose(outputs[1], want, atol=1e-5)


def test_sinusoidal_works_beyond_sequence_length_learned_raises():
    assert tuple(PositionEmbedding(4, mode="sinusoidal")(np.zeros((1, 9, 2))).shape) == (1, 9, 2)
    with pytest.raises(
        ValueError, match="at most sequence_length=4 steps. Received: inputs with 9"
    ):
        PositionEmbedding(4)(np.zeros((1, 9, 2), "float32"))


def test_mask_passes_through():
    tokens = keras.Input((None,), dtype="int32")
    x = keras.layers.Embedding(10, 4, mask_zero=True)(tokens)
    positions = PositionEmbedding(mode="sinusoidal")(x)
    assert positions._keras_mask is not None
    assert keras.layers.Add()([x, positions])._keras_mask is not None


@pytest.mark.parametrize(
    "kwargs, message",
    [
        (
            {"sequence_length": 8, "mode": "rotary"},
            "Expected mode to be one of .*Received: mode='rotary'",
        ),
        ({}, "Received: sequence_length=None"),
        (
            {"sequence_length": 0},
            "Expected sequence_length to be a positive int. Received: sequence_length=0",
        ),
        ({"sequence_length": 8, "max_wavelength": -1}, "Received: max_wavelength=-1"),
    ],
)
def test_invalid_arguments(kwargs, message):
    with pytest.raises(ValueError, match=message):
        PositionEmbedding(**kwargs)


def reload_cases():
    """`(name, model, inputs)` for tests/layers/test_reload.py (one fresh process for all)."""
    ids = np.random.default_rng(0).integers(1, 12, size=(2, 5)).astype("int32")
    models = []
    for mode in ("learned", "sinusoidal"):
        tokens = keras.Input((5,), dtype="int32")
        x = keras.layers.Embedding(12, 6)(tokens)
        x = keras.layers.Add()([x, PositionEmbedding(8, mode=mode, name="positions")(x)])
        models.append((f"positions_{mode}", keras.Model(tokens, x), ids))
    return models
