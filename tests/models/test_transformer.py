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
        {"hidden_dim": 8, "num_heads": 2},
        {"conv_kernel_size": 3},
        {"conv_kernel_size": 2, "hidden_dim": 8, "num_heads": 2},
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


def test_hidden_dim_projects_the_word_vectors_before_the_positions():
    model = build_small("transformer", embedding_dim=12, hidden_dim=8, num_heads=2, dropout=0.0)
    ids = batch_for("transformer")
    table = to_numpy(model.get_layer("embedding").embeddings)
    kernel = to_numpy(model.get_layer("embedding_projection").kernel)
    positions = to_numpy(model.get_layer("position_embedding").embeddings)
    assert table.shape[1] == 12 and kernel.shape == (12, 8)
    probe = keras.Model(model.inputs, model.get_layer("add_positions").output)
    got = to_numpy(probe(ids, training=False))
    want = table[ids] @ kernel + positions[None, : ids.shape[1]]
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)
    last = model.get_layer("transformer_block_0")
    assert last.output.shape[-1] == 8
    # same width: no projection layer at all
    plain = build_small("transformer", embedding_dim=8, hidden_dim=8, num_heads=2)
    assert "embedding_projection" not in [layer.name for layer in plain.layers]


def test_local_conv_adds_n_gram_features_that_stop_at_the_review_end():
    model = build_small("transformer", conv_kernel_size=3, dropout=0.0)
    ids = batch_for("transformer")
    table = to_numpy(model.get_layer("embedding").embeddings)
    conv = model.get_layer("local_conv")
    kernel, bias = (to_numpy(w) for w in conv.weights)  # [3, d, d], [d]
    positions = to_numpy(model.get_layer("position_embedding").embeddings)
    probe = keras.Model(model.inputs, model.get_layer("add_positions").output)
    got = to_numpy(probe(ids, training=False))
    x = table[ids] * (ids != 0)[..., None]  # padding zeroed before the convolution
    padded = np.pad(x, ((0, 0), (1, 1), (0, 0)))
    local = sum(padded[:, k : k + ids.shape[1]] @ kernel[k] for k in range(3)) + bias
    want = table[ids] + np.maximum(local, 0.0) + positions[None, : ids.shape[1]]
    keep = ids != 0  # padded steps are masked downstream
    np.testing.assert_allclose(got[keep], want[keep], rtol=1e-5, atol=1e-5)


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
        ({"embedding_dim": 12, "hidden_dim": 10, "num_heads": 4}, "hidden_dim=10, num_heads=4"),
        ({"hidden_dim": 0}, "hidden_dim=0"),
        ({"conv_kernel_size": 0}, "conv_kernel_size=0"),
        ({"pooling": ["mean"]}, "no name twice"),
        ({"pooling": ["attention", "last"]}, "pooling='last'"),
    ],
)
def test_bad_arguments(kwargs, message):
    kwargs = {"vocabulary_size": 30, **kwargs}
    with pytest.raises(ValueError, match=message):
        hatt.models.build_transformer(**kwargs)
