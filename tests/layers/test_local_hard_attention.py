"""Tests for the normalizer, local and hard attention options of ContextAttention and TransformerBlock."""

import keras
import numpy as np
import pytest

from hatt.layers import ContextAttention, TransformerBlock

from ._layer_test import gradients, to_numpy
from .test_normalizers import np_entmax15, np_masked, np_softmax, np_sparsemax

REFERENCES = {"softmax": np_softmax, "sparsemax": np_sparsemax, "entmax15": np_entmax15}


def data(seed=0, batch=4, steps=6, dim=5):
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(batch, steps, dim)).astype("float32")
    mask = rng.random((batch, steps)) > 0.3
    mask[0] = False
    mask[1] = True
    return x, mask


def np_scores(layer, x):
    w = {v.name: to_numpy(v).astype("float64") for v in layer.weights}
    u = np.tanh(x.astype("float64") @ w["kernel"] + w["bias"])
    return (u @ w["context"])[..., 0], w  # dot score, one head


def round_trip(layer):
    clone = keras.saving.deserialize_keras_object(keras.saving.serialize_keras_object(layer))
    assert type(clone) is type(layer)
    assert clone.get_config() == layer.get_config()
    return clone


@pytest.mark.parametrize("normalizer", ["sparsemax", "entmax15"])
def test_context_attention_normalizer(normalizer):
    x, mask = data()
    layer = ContextAttention(normalizer=normalizer)
    out, weights = layer(x, mask=mask, return_attention_scores=True)
    scores, _ = np_scores(layer, x * mask[..., None])
    want = np_masked(REFERENCES[normalizer], scores, mask)
    np.testing.assert_allclose(to_numpy(weights), want, atol=2e-5)
    np.testing.assert_allclose(
        to_numpy(out), np.einsum("bt,btd->bd", want, x * mask[..., None]), atol=2e-5
    )
    assert round_trip(layer).normalizer == normalizer


@pytest.mark.parametrize("normalizer", ["softmax", "sparsemax", "entmax15"])
def test_a_temperature_divides_the_scores_before_the_normalizer(normalizer):
    x, mask = data(seed=2, steps=12)
    x = 3.0 * x  # scores spread enough for a temperature to matter
    warm = ContextAttention(normalizer=normalizer)
    warm(x, mask=mask)
    cold = ContextAttention(normalizer=normalizer, temperature=0.1)
    cold(x, mask=mask)
    cold.set_weights(warm.get_weights())
    scores, _ = np_scores(cold, x * mask[..., None])
    _, weights = cold(x, mask=mask, return_attention_scores=True)
    want = np_masked(REFERENCES[normalizer], scores / 0.1, mask)
    np.testing.assert_allclose(to_numpy(weights), want, atol=2e-5)
    _, warm_weights = warm(x, mask=mask, return_attention_scores=True)
    if normalizer != "softmax":  # a colder sparse normalizer keeps fewer words
        assert (to_numpy(weights)[mask] == 0).sum() > (to_numpy(warm_weights)[mask] == 0).sum()
    assert np.all(to_numpy(weights)[~mask] == 0)
    assert round_trip(cold).temperature == 0.1


def np_local_p(layer, x, mask):
    scores, w = np_scores(layer, x * mask[..., None])
    base = np_masked(np_softmax, scores, mask)
    length = mask.sum(1, keepdims=True)
    mean = (x * mask[..., None]).sum(1) / np.maximum(length, 1)
    centre = length * (
        1 / (1 + np.exp(-(np.tanh(mean @ w["position_kernel"]) @ w["position_vector"])))
    )
    positions = np.cumsum(mask, 1) - mask
    sigma = layer.window / 2
    gauss = np.exp(-((positions - centre) ** 2) / (2 * sigma**2))
    product = base * gauss
    return product / np.maximum(product.sum(1, keepdims=True), 1e-30)


@pytest.mark.parametrize("window", [1, 2.5, 100])  # 100: wider than the document
def test_local_p_matches_gaussian_window(window):
    x, mask = data(seed=1)
    layer = ContextAttention(local_p=True, window=window)
    _, weights = layer(x, mask=mask, return_attention_scores=True)
    weights = to_numpy(weights)
    np.testing.assert_allclose(weights, np_local_p(layer, x, mask), atol=2e-5)
    assert np.all(weights[~mask] == 0) and np.all(weights[0] == 0)
    np.testing.assert_allclose(weights[1:].sum(1), 1, atol=1e-5)
    assert round_trip(layer).window == window


def test_local_p_one_token_and_gradients():
    x = np.ones((2, 1, 3), "float32")
    layer = ContextAttention(local_p=True, window=2, normalizer="entmax15")
    _, weights = layer(x, return_attention_scores=True)
    np.testing.assert_allclose(to_numpy(weights), 1.0, atol=1e-6)
    xs, mask = data(seed=2, dim=3)

    def loss(inp):
        return keras.ops.sum(keras.ops.square(layer(inp, mask=mask)))

    grads = gradients(loss, xs, layer.trainable_variables)
    assert all(np.all(np.isfinite(g)) for g in grads)


@pytest.mark.parametrize("k", [1, 2, 10])
def test_hard_inference_top_k(k):
    x, mask = data(seed=3)
    layer = ContextAttention(hard="gumbel", hard_k=k)
    _, weights = layer(x, mask=mask, return_attention_scores=True, training=False)
    weights = to_numpy(weights)
    scores, _ = np_scores(layer, x * mask[..., None])
    for row in range(len(x)):
        kept = np.flatnonzero(mask[row])
        want = np.zeros(x.shape[1])
        if len(kept):
            top = kept[np.argsort(-scores[row, kept])[:k]]
            want[top] = 1 / len(top)
        np.testing.assert_allclose(weights[row], want, atol=1e-6)


def test_hard_training_gumbel_straight_through():
    x, mask = data(seed=4)
    layer = ContextAttention(hard="gumbel", temperature=0.5, seed=3)
    _, weights = layer(x, mask=mask, return_attention_scores=True, training=True)
    weights = to_numpy(weights)
    assert np.all(weights[0] == 0) and np.all(weights[~mask] == 0)
    for row in range(1, len(x)):  # one-hot on an unmasked step
        assert np.isclose(weights[row].sum(), 1, atol=1e-5)
        assert np.sum(weights[row] > 0.5) == 1 and np.all((weights[row] > 0.5) <= mask[row])

    def loss(inp):
        return keras.ops.sum(keras.ops.square(layer(inp, mask=mask, training=True)))

    grads = gradients(loss, x, layer.trainable_variables)
    assert all(np.all(np.isfinite(g)) for g in grads)
    names = [v.name for v in layer.trainable_variables]
    assert np.any(grads[names.index("context") + 1] != 0)
    assert round_trip(layer).temperature == 0.5


@pytest.mark.parametrize(
    "kwargs, name",
    [
        ({"hard": "gumbel", "temperature": 0.0}, "temperature=0.0"),
        ({"hard": "gumbel", "temperature": -1}, "temperature=-1"),
        ({"hard": "gumbel", "hard_k": 0}, "hard_k=0"),
        ({"hard": "topk"}, "hard='topk'"),
        ({"local_p": True, "window": -2}, "window=-2"),
        ({"local_p": True}, "window=None"),
        ({"normalizer": "relu"}, "normalizer='relu'"),
        ({"hard": "gumbel", "normalizer": "sparsemax"}, "normalizer='sparsemax'"),
    ],
)
def test_context_attention_bad_arguments(kwargs, name):
    with pytest.raises(ValueError, match=name.replace("(", r"\(")):
        ContextAttention(**kwargs)


@pytest.mark.parametrize(
    "kwargs, name", [({"window": -1}, "window=-1"), ({"normalizer": "x"}, "normalizer='x'")]
)
def test_transformer_block_bad_arguments(kwargs, name):
    with pytest.raises(ValueError, match=name):
        TransformerBlock(num_heads=1, intermediate_dim=4, **kwargs)


def np_block_weights(block, x, allowed, normalizer):
    mha = block.attention
    q = np.einsum("btd,dnh->btnh", x, to_numpy(mha.query_dense.kernel)) + to_numpy(
        mha.query_dense.bias
    )
    k = np.einsum("btd,dnh->btnh", x, to_numpy(mha.key_dense.kernel)) + to_numpy(mha.key_dense.bias)
    logits = np.einsum("bsnh,btnh->bnts", k, q) / np.sqrt(q.shape[-1])
    return np_masked(
        REFERENCES[normalizer],
        logits.astype("float64"),
        np.broadcast_to(allowed[:, None], logits.shape),
    )


@pytest.mark.parametrize("normalizer", ["softmax", "sparsemax", "entmax15"])
@pytest.mark.parametrize("window", [None, 0, 1, 50])
def test_transformer_block_window_and_normalizer(normalizer, window):
    x, mask = data(seed=5, dim=4)
    mask[0, :2] = True  # keep rows non-empty for the softmax reference
    block = TransformerBlock(num_heads=2, intermediate_dim=8, normalizer=normalizer, window=window)
    out, scores = block(x, mask=mask, return_attention_scores=True)
    allowed = mask[:, :, None] & mask[:, None, :]
    if window is not None:
        t = np.arange(x.shape[1])
        allowed = allowed & (np.abs(t[:, None] - t[None, :]) <= window)
    want = np_block_weights(block, x * mask[..., None], allowed, normalizer)
    scores = to_numpy(scores)
    real = mask[:, None, :, None] & np.ones_like(scores, bool)  # rows of real queries
    np.testing.assert_allclose(scores[real], want[real], atol=2e-5)
    assert np.all(scores[real & ~allowed[:, None]] == 0)
    plain = block(x, mask=mask)  # same output without asking for scores
    # padded queries' outputs are meaningless (fused kernel vs explicit weights)
    np.testing.assert_allclose(to_numpy(plain)[mask], to_numpy(out)[mask], atol=1e-5)
    assert round_trip(block).get_config()["window"] == window
