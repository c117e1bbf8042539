"""hatt.models.build_cnn: Kim (2014) CNN with max or attention pooling."""

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


def test_attention_pooling():
    model = build_small("cnn", pooling="attention", attention_score="additive")
    assert isinstance(model.get_layer("word_attention"), hatt.layers.ContextAttention)
    ids = batch_for("cnn")
    check_forward(model, ids)
    check_padding_invariance("cnn", model, ids)
    check_attention("cnn", model, ids)


@pytest.mark.parametrize("pooling", ["max", "attention"])
def test_reviews_shorter_than_the_widest_kernel(pooling):
    model = build_small("cnn", kernel_sizes=[3, 7], pooling=pooling)
    ids = np.array([[4, 0], [0, 0]], dtype="int32")
    check_forward(model, ids)
    check_forward(model, np.array([[4]], dtype="int32"))
    check_padding_invariance("cnn", model, ids)


def test_max_pooling_ignores_padding():
    """Max-over-time equals the max over the real steps of the conv features."""
    model = build_small("cnn", kernel_sizes=[3])
    ids = np.array([[5, 6, 0, 0, 0]], dtype="int32")
    features = hatt.models.wiring.ApplyMask()(model.get_layer("embedding")(ids), mask=ids != 0)
    conv = to_numpy(model.get_layer("conv_3")(features))
    pooled = to_numpy(model.get_layer("word_attention")(conv, mask=ids != 0))
    np.testing.assert_allclose(pooled, conv[:, :2].max(axis=1), atol=1e-6)


def test_max_pooling_word_attention_is_the_share_of_winning_channels():
    model = build_small("cnn", filters=8, kernel_sizes=[3])
    ids = batch_for("cnn")
    views = check_attention("cnn", model, ids)
    weights = views["word_attention"]
    # Shares of 8 channels: multiples of 1/8.
    np.testing.assert_allclose(weights * 8, np.round(weights * 8), atol=1e-5)


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"vocabulary_size": 0}, "vocabulary_size=0"),
        ({"embedding_dim": -3}, "embedding_dim=-3"),
        ({"kernel_sizes": []}, r"kernel_sizes=\[\]"),
        ({"kernel_sizes": (3, 0)}, r"kernel_sizes=\(3, 0\)"),
        ({"kernel_sizes": (3, 3)}, r"kernel_sizes=\(3, 3\)"),
        ({"filters": 2.5}, "filters=2.5"),
        ({"pooling": "mean"}, "pooling='mean'"),
        ({"attention_units": 0}, "attention_units=0"),
        ({"attention_score": "cosine"}, "attention_score='cosine'"),
        ({"dropout": 1.0}, "dropout=1.0"),
    ],
)
def test_bad_arguments(kwargs, message):
    kwargs = {"vocabulary_size": 30, **kwargs}
    with pytest.raises(ValueError, match=message):
        hatt.models.build_cnn(**kwargs)


def test_one_hot_words_are_a_convolution_over_one_hot_vectors():
    """words="one_hot": the regions' features equal Conv1D over one-hot ids (Johnson & Zhang)."""
    model = build_small("cnn", words="one_hot", kernel_sizes=[2, 3], filters=4)
    assert "conv_3" not in [layer.name for layer in model.layers]
    table = to_numpy(model.get_layer("embedding").embeddings)
    assert table.shape[1] == (2 + 3) * 4  # embedding_dim is unused
    ids = batch_for("cnn")
    check_forward(model, ids)
    check_padding_invariance("cnn", model, ids)
    check_attention("cnn", model, ids)
    regions = model.get_layer("regions")
    lookups = model.get_layer("embedding")(ids)
    got = to_numpy(regions(lookups, mask=ids != 0))
    one_hot = np.eye(table.shape[0], dtype="float32")[ids] * (ids != 0)[..., None]
    start, want = 0, []
    for k, w in enumerate([2, 3]):
        kernel = np.stack([table[:, (start + j) * 4 : (start + j + 1) * 4] for j in range(w)])
        left = (w - 1) // 2
        padded = np.pad(one_hot, [(0, 0), (left, w - 1 - left), (0, 0)])
        steps = ids.shape[1]
        conv = sum(padded[:, j : j + steps] @ kernel[j] for j in range(w))
        want.append(np.maximum(conv + to_numpy(regions.bias)[k * 4 : (k + 1) * 4], 0))
        start += w
    np.testing.assert_allclose(got, np.concatenate(want, -1), atol=1e-5)
    with pytest.raises(ValueError, match="words='glove'"):
        hatt.models.build_cnn(vocabulary_size=30, words="glove")
