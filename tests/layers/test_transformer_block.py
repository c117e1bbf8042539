"""Tests for hatt.layers.TransformerBlock (run under the TensorFlow and torch backends)."""

import keras
import numpy as np
import pytest

from hatt.layers import TransformerBlock

from ._layer_test import gradients, run_layer_test, to_numpy

MASK = np.array(
    [[1, 1, 1, 0, 0, 0], [1, 1, 1, 1, 1, 1], [0, 0, 0, 0, 0, 0], [1, 0, 0, 0, 0, 0]], bool
)


@pytest.mark.parametrize("norm_first", [False, True])
def test_layer_basics(norm_first):
    kwargs = {"num_heads": 2, "intermediate_dim": 16, "norm_first": norm_first, "dropout": 0.1}
    run_layer_test(
        TransformerBlock,
        kwargs,
        input_shape=(4, 6, 8),
        expected_output_shape=[(4, 6, 8), (4, 2, 6, 6)],
        call_kwargs={"return_attention_scores": True},
        mask=MASK,
    )
    run_layer_test(TransformerBlock, kwargs, (4, 6, 8), (4, 6, 8), mask=MASK)


@pytest.mark.parametrize("norm_first", [False, True])
def test_scores_rows_sum_to_one_and_padded_keys_get_zero(norm_first):
    x = np.random.default_rng(0).standard_normal((4, 6, 8)).astype("float32")
    block = TransformerBlock(num_heads=2, intermediate_dim=16, norm_first=norm_first)
    outputs, scores = block(x, mask=MASK, return_attention_scores=True)
    scores = to_numpy(scores)
    assert scores.shape == (4, 2, 6, 6)
    assert np.isfinite(to_numpy(outputs)).all()
    # Padded keys: zero weight from every query, in every head.
    assert (scores.transpose(0, 1, 3, 2)[np.broadcast_to(~MASK[:, None, :], (4, 2, 6))] == 0).all()
    # Rows of real queries sum to 1; padded query rows are all zero.
    rows = np.broadcast_to(MASK[:, None, :], (4, 2, 6))
    np.testing.assert_allclose(scores.sum(axis=-1)[rows], 1.0, atol=1e-6)
    assert (scores[~rows] == 0).all()
    # Without scores (fused attention path) the real positions give the same output.
    fused = to_numpy(block(x, mask=MASK))
    assert np.isfinite(fused).all()
    np.testing.assert_allclose(fused[MASK], to_numpy(outputs)[MASK], atol=1e-5)


def test_padding_does_not_change_real_positions():
    rng = np.random.default_rng(1)
    x = rng.standard_normal((1, 4, 8)).astype("float32")
    padded = np.concatenate([x, 100 * rng.standard_normal((1, 3, 8)).astype("float32")], axis=1)
    block = TransformerBlock(num_heads=4, intermediate_dim=16)
    short = to_numpy(block(x))
    long = to_numpy(block(padded, mask=np.array([[1, 1, 1, 1, 0, 0, 0]], bool)))
    np.testing.assert_allclose(long[:, :4], short, atol=1e-5)


@pytest.mark.parametrize("norm_first", [False, True])
@pytest.mark.parametrize("return_attention_scores", [False, True], ids=["fused", "scores"])
def test_nan_and_inf_at_padded_steps_reach_neither_outputs_nor_gradients(
    norm_first, return_attention_scores
):
    # A padded key's value entered every query's weighted sum with weight 0:
    # 0 x NaN made the whole review NaN, and so every kernel gradient.
    rng = np.random.default_rng(3)
    x = rng.standard_normal((4, 6, 8)).astype("float32")
    dirty = x.copy()
    dirty[~MASK] = np.nan
    dirty[3, 4] = np.inf
    block = TransformerBlock(num_heads=2, intermediate_dim=16, norm_first=norm_first)

    def call(inputs):
        outputs = block(inputs, mask=MASK, return_attention_scores=return_attention_scores)
        return outputs[0] if return_attention_scores else outputs

    outputs = to_numpy(call(dirty))
    assert np.isfinite(outputs).all()
    np.testing.assert_allclose(outputs[MASK], to_numpy(call(x))[MASK], atol=1e-5)

    coefficients = keras.ops.convert_to_tensor(
        rng.standard_normal((4, 6, 8)).astype("float32") * MASK[:, :, None]
    )

    def loss(inputs):
        return keras.ops.sum(keras.ops.multiply(call(inputs), coefficients))

    dirty_grads = gradients(loss, dirty, block.trainable_weights)
    clean_grads = gradients(loss, x, block.trainable_weights)
    for dirty_grad, clean_grad in zip(dirty_grads, clean_grads, strict=True):
        assert np.isfinite(dirty_grad).all()
        np.testing.assert_allclose(dirty_grad, clean_grad, atol=1e-5, rtol=1e-4)
    assert (dirty_grads[0][~MASK] == 0).all()


@pytest.mark.parametrize("shape", [(0, 6, 8), (3, 0, 8)], ids=["empty_batch", "zero_length"])
@pytest.mark.parametrize("with_mask", [False, True], ids=["no_mask", "mask"])
def test_empty_inputs_give_empty_outputs(shape, with_mask):
    mask = np.ones(shape[:2], bool) if with_mask else None
    block = TransformerBlock(num_heads=2, intermediate_dim=16, dropout=0.1)
    for training in (False, True):
        outputs, scores = block(
            np.zeros(shape, "float32"), mask=mask, training=training, return_attention_scores=True
        )
        assert tuple(outputs.shape) == shape
        assert tuple(scores.shape) == (shape[0], 2, shape[1], shape[1])
        assert tuple(block(np.zeros(shape, "float32"), mask=mask).shape) == shape


def test_mask_propagates_from_embedding_and_through_the_block():
    tokens = keras.Input((None,), dtype="int32")
    x = keras.layers.Embedding(10, 8, mask_zero=True)(tokens)
    x, scores = TransformerBlock(2, 16, name="encoder_0")(x, return_attention_scores=True)
    assert x._keras_mask is not None
    model = keras.Model(tokens, scores)
    ids = np.array([[1, 2, 0, 0], [3, 4, 5, 6]])
    scores = to_numpy(model(ids))
    assert (scores[0, :, :, 2:] == 0).all()
    assert scores.shape == (2, 2, 4, 4)


def test_sublayers_are_named_and_key_dim_defaults():
    block = TransformerBlock(num_heads=4, intermediate_dim=16, activation="gelu")
    block.build((None, None, 8))
    assert block.attention.name == "self_attention"
    assert block.attention._key_dim == 2
    names = {block.attention_norm.name, block.feedforward_norm.name, block.output_dense.name}
    assert names == {
        "self_attention_layer_norm",
        "feedforward_layer_norm",
        "feedforward_output_dense",
    }
    explicit = TransformerBlock(num_heads=3, intermediate_dim=16, key_dim=5)
    assert tuple(explicit(np.ones((2, 3, 8), "float32")).shape) == (2, 3, 8)


@pytest.mark.parametrize(
    "kwargs, message",
    [
        (
            {"num_heads": 0, "intermediate_dim": 8},
            "Expected num_heads to be a positive int. Received: num_heads=0",
        ),
        ({"num_heads": 2, "intermediate_dim": -1}, "Received: intermediate_dim=-1"),
        ({"num_heads": 2, "intermediate_dim": 8, "dropout": 1.5}, r"Received: dropout=1.5"),
        (
            {"num_heads": 2, "intermediate_dim": 8, "activation": "tanh"},
            "Received: activation='tanh'",
        ),
        ({"num_heads": 2, "intermediate_dim": 8, "key_dim": 0}, "Received: key_dim=0"),
    ],
)
def test_invalid_arguments(kwargs, message):
    with pytest.raises(ValueError, match=message):
        TransformerBlock(**kwargs)


def test_invalid_shapes():
    with pytest.raises(ValueError, match="divisible by num_heads"):
        TransformerBlock(num_heads=3, intermediate_dim=8)(np.ones((2, 3, 8), "float32"))
    with pytest.raises(ValueError, match="rank 3"):
        TransformerBlock(num_heads=2, intermediate_dim=8)(np.ones((2, 8), "float32"))


def reload_cases():
    """`(name, model, inputs)` for tests/layers/test_reload.py (one fresh process for all)."""
    ids = np.random.default_rng(2).integers(0, 12, size=(3, 6)).astype("int32")
    ids[0, 3:] = 0
    models = []
    for norm_first in (False, True):
        tokens = keras.Input((None,), dtype="int32")
        x = keras.layers.Embedding(12, 8, mask_zero=True)(tokens)
        x, scores = TransformerBlock(2, 16, norm_first=norm_first, dropout=0.1, name="encoder_0")(
            x, return_attention_scores=True
        )
        model = keras.Model(tokens, [x, scores])
        models.append((f"transformer_{norm_first}", model, ids))
    return models
