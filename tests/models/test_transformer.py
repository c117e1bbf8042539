"""hatt.models.build_transformer: Transformer blocks with attention pooling."""

import keras
import numpy as np
import pytest

import hatt

from ._model_test import (
    batch_for,
    build_small,
    check_attention,
    check_forward,
    check_padding_invariance,
    to_numpy,
)


@pytest.mark.parametrize(
    "kwargs",
    [
        {"position_embedding": "sinusoidal", "num_layers": 2},
        {"norm_first": True, "attention_score": "scaled_dot"},
        {"pooling": ["attention", "max", "mean"]},
    ],
)
def test_variants(kwargs):
    model = build_small("transformer", **kwargs)
    ids = batch_for("transformer")
    check_forward(model, ids)
    check_padding_invariance("transformer", model, ids)
    check_attention("transformer", model, ids)


def test_concat_pooling_joins_attention_max_and_mean_of_the_last_block():
    model = build_small("transformer", pooling=["attention", "mean", "max"], dropout=0.0)
    ids = batch_for("transformer")
    last = [layer for layer in model.layers if layer.name.startswith("transformer_block_")][-1]
    probe = keras.Model(
        model.inputs,
        [
            model.get_layer("pooled").output,
            last.output,
            model.get_layer("word_attention").output[0],
        ],
    )
    joined, x, attended = (to_numpy(t) for t in probe(ids, training=False))
    d = x.shape[-1]
    assert joined.shape[-1] == 3 * d
    # NumPy reference: attention, then the mean and the max over the real tokens only
    keep = ids != 0
    mean = (x * keep[..., None]).sum(1) / np.maximum(keep.sum(1), 1)[:, None]
    top = np.where(keep[..., None], x, -np.inf).max(1)
    top = np.where(keep.any(1)[:, None], top, 0.0)
    np.testing.assert_allclose(joined[:, :d], attended, atol=1e-6)
    np.testing.assert_allclose(joined[:, d : 2 * d], mean, atol=1e-5)
    np.testing.assert_allclose(joined[:, 2 * d :], top, atol=1e-5)


def test_blocks_are_named():
    model = build_small("transformer", num_layers=3)
    for i in range(3):
        assert isinstance(model.get_layer(f"transformer_block_{i}"), hatt.layers.TransformerBlock)


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"num_heads": 0}, "num_heads=0"),
        ({"embedding_dim": 10, "num_heads": 4}, "embedding_dim=10, num_heads=4"),
        ({"intermediate_dim": "64"}, "intermediate_dim='64'"),
        ({"sequence_length": 0}, "sequence_length=0"),
        ({"position_embedding": "rotary"}, "position_embedding='rotary'"),
        ({"norm_first": "yes"}, "norm_first='yes'"),
        ({"num_layers": 0}, "num_layers=0"),
        ({"pooling": ["mean"]}, "no name twice"),
        ({"pooling": ["attention", "last"]}, "pooling='last'"),
    ],
)
def test_bad_arguments(kwargs, message):
    kwargs = {"vocabulary_size": 30, **kwargs}
    with pytest.raises(ValueError, match=message):
        hatt.models.build_transformer(**kwargs)
