"""hatt.models.build_rnn: bidirectional GRU/LSTM with attention pooling."""

import keras
import numpy as np
import pytest

import hatt
from hatt.models.wiring import EncoderMask

from ._model_test import (
    batch_for,
    build_small,
    check_attention,
    check_forward,
    check_padding_invariance,
    to_numpy,
)


@pytest.mark.parametrize("cell", ["gru", "lstm"])
def test_two_layers(cell):
    model = build_small("rnn", cell=cell, num_layers=2, attention_score="general")
    ids = batch_for("rnn")
    check_forward(model, ids)
    check_padding_invariance("rnn", model, ids)
    check_attention("rnn", model, ids)


def test_concat_pooling_joins_attention_max_and_mean():
    model = build_small("rnn", pooling=["attention", "max", "mean"])
    ids = batch_for("rnn")
    check_forward(model, ids)
    check_padding_invariance("rnn", model, ids)
    check_attention("rnn", model, ids)
    pooled = model.get_layer("pooled").output
    assert pooled.shape[-1] == 3 * 2 * model.get_layer("encoder_0").forward_layer.units
    # the attention part of the document vector is the attention's own pooling
    backbone = keras.Model(model.inputs, [pooled, model.get_layer("word_attention").output[0]])
    joined, attended = (to_numpy(t) for t in backbone(ids, training=False))
    np.testing.assert_allclose(joined[:, : attended.shape[1]], attended, atol=1e-6)


def test_word_dropout_drops_whole_words_in_training_only():
    model = build_small("rnn", word_dropout=0.5, dropout=0.0)
    layer = model.get_layer("word_dropout")
    vectors = np.ones((4, 200, 6), "float32")
    dropped = to_numpy(layer(vectors, training=True))
    kept = dropped[:, :, 0] != 0
    # a word's vector is zeroed or kept (scaled by 1 / (1 - rate)) as a whole
    np.testing.assert_array_equal(dropped, np.where(kept[:, :, None], 2.0, 0.0) * vectors)
    assert 0.4 < kept.mean() < 0.6
    np.testing.assert_array_equal(to_numpy(layer(vectors, training=False)), vectors)
    ids = batch_for("rnn")
    check_forward(model, ids)
    check_padding_invariance("rnn", model, ids)
    # without it the layer is not in the graph at all
    assert "word_dropout" not in [layer.name for layer in build_small("rnn").layers]


def test_encoder_mask_is_right_padded_and_keeps_step_zero():
    mask = np.array(
        [[1, 1, 0, 0], [0, 0, 0, 0], [1, 0, 1, 0], [1, 1, 1, 1]],
        dtype=bool,
    )
    expected = np.array(
        [[1, 1, 0, 0], [1, 0, 0, 0], [1, 1, 1, 0], [1, 1, 1, 1]],
        dtype=bool,
    )
    np.testing.assert_array_equal(to_numpy(EncoderMask()(mask)), expected)


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"vocabulary_size": None}, "vocabulary_size=None"),
        ({"units": 0}, "units=0"),
        ({"num_layers": 0}, "num_layers=0"),
        ({"num_layers": True}, "num_layers=True"),
        ({"cell": "rnn"}, "cell='rnn'"),
        ({"dropout": -0.1}, "dropout=-0.1"),
        ({"word_dropout": 1.0}, "word_dropout=1.0"),
        ({"pooling": ["max"]}, r"pooling=\('max',\)"),
        ({"pooling": ["attention", "attention"]}, "no name twice"),
        ({"pooling": ["attention", "last"]}, "pooling='last'"),
    ],
)
def test_bad_arguments(kwargs, message):
    kwargs = {"vocabulary_size": 30, **kwargs}
    with pytest.raises(ValueError, match=message):
        hatt.models.build_rnn(**kwargs)
