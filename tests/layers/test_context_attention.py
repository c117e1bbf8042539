"""Tests for hatt.layers.ContextAttention (run under the TensorFlow and torch backends)."""

import keras
import numpy as np
import pytest

from hatt.layers import ContextAttention

from ._layer_test import gradients, run_layer_test, to_numpy

SCORES = ["dot", "scaled_dot", "general", "additive"]


def random_mask(rng, batch, steps):
    """A random 0/1 mask with one fully masked row and one full row."""
    mask = rng.random((batch, steps)) > 0.4
    mask[0] = False
    mask[1] = True
    return mask


def weights_by_name(layer):
    return {w.name: to_numpy(w).astype("float64") for w in layer.weights}


def numpy_reference(layer, x, mask):
    """Outputs `[batch, heads*d]` and weights `[batch, heads, T]` in float64 from the layer's weights."""
    w = weights_by_name(layer)
    x = x.astype("float64")
    u = np.tanh(x @ w["kernel"] + (w["bias"] if layer.use_bias else 0.0))  # [B, T, units]
    context = w["context"]  # [units, heads]
    units, heads = context.shape
    scores = np.zeros((x.shape[0], x.shape[1], heads))
    for h in range(heads):
        if layer.score == "dot":
            scores[..., h] = u @ context[:, h]
        elif layer.score == "scaled_dot":
            scores[..., h] = u @ context[:, h] / np.sqrt(units)
        elif layer.score == "general":
            scores[..., h] = u @ w["score_kernel"] @ context[:, h]
        else:  # additive: v^T tanh(W_1 u_t + W_2 u)
            hidden = np.tanh(u @ w["score_kernel"] + context[:, h] @ w["score_context_kernel"])
            scores[..., h] = hidden @ w["score_vector"][:, h]
    scores = scores.transpose(0, 2, 1)  # [B, heads, T]
    keep = np.broadcast_to(mask[:, None, :], scores.shape)
    alpha = np.zeros_like(scores)
    for idx in np.ndindex(scores.shape[:2]):
        if keep[idx].any():
            e = np.exp(scores[idx][keep[idx]] - scores[idx][keep[idx]].max())
            alpha[idx][keep[idx]] = e / e.sum()
    outputs = (alpha @ x).reshape(x.shape[0], -1)
    return outputs, alpha


# --- construction, calls, config -------------------------------------------------------------


@pytest.mark.parametrize("score", SCORES)
@pytest.mark.parametrize("heads", [1, 3])
def test_layer_basics(score, heads):
    steps = 7
    expected = [(4, heads * 5), (4, steps) if heads == 1 else (4, heads, steps)]
    run_layer_test(
        ContextAttention,
        {"score": score, "heads": heads, "units": 6, "name": "attention"},
        input_shape=(4, steps, 5),
        expected_output_shape=expected,
        call_kwargs={"return_attention_scores": True},
        mask=random_mask(np.random.default_rng(1), 4, steps),
    )
    run_layer_test(
        ContextAttention, {"score": score, "heads": heads}, (4, steps, 5), (4, heads * 5)
    )


def test_compute_mask_is_none_and_weights_are_named():
    layer = ContextAttention(score="additive", heads=2)
    layer.build((None, None, 4))
    assert layer.compute_mask(None, np.ones((2, 3), bool)) is None
    names = sorted(w.name for w in layer.weights)
    assert names == [
        "bias",
        "context",
        "kernel",
        "score_context_kernel",
        "score_kernel",
        "score_vector",
    ]
    assert tuple(layer.context.shape) == (4, 2)


# --- against a NumPy reference -------------------------------------------------------------


@pytest.mark.parametrize("score", SCORES)
@pytest.mark.parametrize("heads", [1, 3])
@pytest.mark.parametrize("use_bias", [True, False])
def test_matches_numpy_reference(score, heads, use_bias):
    rng = np.random.default_rng(2)
    x = rng.standard_normal((6, 9, 4)).astype("float32")
    mask = random_mask(rng, 6, 9)
    layer = ContextAttention(
        units=5,
        score=score,
        heads=heads,
        use_bias=use_bias,
        bias_initializer="random_normal",
        context_initializer="random_normal",
    )
    outputs, weights = layer(x, mask=mask, return_attention_scores=True)
    want_outputs, want_weights = numpy_reference(layer, x, mask)
    if heads == 1:
        want_weights = want_weights[:, 0]
    np.testing.assert_allclose(to_numpy(outputs), want_outputs, atol=1e-5, rtol=0)
    np.testing.assert_allclose(to_numpy(weights), want_weights, atol=1e-5, rtol=0)


# --- properties of the weights -------------------------------------------------------------


@pytest.mark.parametrize("score", SCORES)
def test_weights_sum_to_one_zero_on_mask_and_output_is_weighted_sum(score):
    rng = np.random.default_rng(3)
    x = rng.standard_normal((8, 11, 6)).astype("float32")
    mask = random_mask(rng, 8, 11)
    outputs, weights = ContextAttention(score=score)(x, mask=mask, return_attention_scores=True)
    outputs, weights = to_numpy(outputs), to_numpy(weights)
    rows = mask.any(axis=1)
    np.testing.assert_allclose(weights[rows].sum(axis=1), 1.0, atol=1e-6)
    assert (weights[~mask] == 0).all()
    assert (weights >= 0).all()
    np.testing.assert_allclose(outputs, np.einsum("bt,btd->bd", weights, x), atol=1e-5)


@pytest.mark.parametrize("heads", [1, 2])
def test_fully_masked_rows_give_zeros(heads):
    x = np.random.default_rng(4).standard_normal((3, 5, 4)).astype("float32")
    mask = np.array([[0, 0, 0, 0, 0], [1, 1, 0, 0, 0], [0, 0, 0, 0, 0]])
    outputs, weights = ContextAttention(heads=heads)(x, mask=mask, return_attention_scores=True)
    outputs, weights = to_numpy(outputs), to_numpy(weights)
    assert np.isfinite(outputs).all() and np.isfinite(weights).all()
    assert (outputs[[0, 2]] == 0).all()
    assert (weights[[0, 2]] == 0).all()
    assert (weights[1][..., 2:] == 0).all()


def test_fully_masked_rows_train_without_nan():
    inputs = keras.Input((None,), dtype="int32")
    x = keras.layers.Embedding(20, 8, mask_zero=True)(inputs)
    x = ContextAttention(score="additive")(x)
    model = keras.Model(inputs, keras.layers.Dense(1)(x))
    model.compile(optimizer=keras.optimizers.SGD(0.1), loss="mse")
    ids = np.array([[0, 0, 0, 0], [3, 4, 0, 0], [0, 0, 0, 0], [5, 6, 7, 8]])
    history = model.fit(ids, np.ones((4, 1)), epochs=2, verbose=0)
    assert np.isfinite(history.history["loss"]).all()
    assert all(np.isfinite(to_numpy(w)).all() for w in model.weights)


@pytest.mark.parametrize("score", SCORES)
def test_large_inputs_stay_finite(score):
    rng = np.random.default_rng(5)
    x = (1e4 * rng.standard_normal((4, 8, 6))).astype("float32")
    mask = random_mask(rng, 4, 8)
    layer = ContextAttention(score=score, context_initializer="random_normal")
    outputs, weights = layer(x, mask=mask, return_attention_scores=True)
    outputs, weights = to_numpy(outputs), to_numpy(weights)
    assert np.isfinite(outputs).all() and np.isfinite(weights).all()
    np.testing.assert_allclose(weights[mask.any(axis=1)].sum(axis=1), 1.0, atol=1e-5)


def poison_masked_steps(x, mask):
    """`x` with NaN, +inf and -inf (in turn) at its masked steps."""
    dirty = x.copy()
    for i, (b, t) in enumerate(zip(*np.nonzero(~mask), strict=True)):
        dirty[b, t] = (np.nan, np.inf, -np.inf)[i % 3]
    return dirty


@pytest.mark.parametrize("score", SCORES)
@pytest.mark.parametrize("heads", [1, 2])
def test_nan_and_inf_at_masked_steps_reach_neither_outputs_nor_gradients(score, heads):
    # 0 x NaN in the pooling matmul made the whole row NaN, and x^T @ 0 in the
    # projection's backward pass made every kernel gradient NaN.
    rng = np.random.default_rng(12)
    x = rng.standard_normal((5, 6, 4)).astype("float32")
    mask = random_mask(rng, 5, 6)
    mask[2:, 1] = False
    dirty = poison_masked_steps(x, mask)
    layer = ContextAttention(
        units=5,
        score=score,
        heads=heads,
        bias_initializer="random_normal",
        context_initializer="random_normal",
    )
    outputs, weights = layer(dirty, mask=mask, return_attention_scores=True)
    want_outputs, want_weights = numpy_reference(layer, x, mask)
    np.testing.assert_allclose(to_numpy(outputs), want_outputs, atol=1e-5, rtol=0)
    np.testing.assert_allclose(
        to_numpy(weights), want_weights[:, 0] if heads == 1 else want_weights, atol=1e-5
    )

    # A loss on the rows with kept steps: the same gradients as for clean inputs.
    coefficients = rng.standard_normal((5, heads * 4)).astype("float32")
    coefficients[0] = 0.0

    def loss(inputs):
        return keras.ops.sum(keras.ops.multiply(layer(inputs, mask=mask), coefficients))

    dirty_grads = gradients(loss, dirty, layer.trainable_weights)
    clean_grads = gradients(loss, x, layer.trainable_weights)
    for dirty_grad, clean_grad in zip(dirty_grads, clean_grads, strict=True):
        assert np.isfinite(dirty_grad).all()
        np.testing.assert_allclose(dirty_grad, clean_grad, atol=1e-5, rtol=1e-5)
    assert (dirty_grads[0][~mask] == 0).all()


@pytest.mark.parametrize("heads", [1, 3])
@pytest.mark.parametrize("with_mask", [False, True], ids=["no_mask", "mask"])
def test_empty_batch_gives_empty_outputs(heads, with_mask):
    mask = np.zeros((0, 5), bool) if with_mask else None
    layer = ContextAttention(heads=heads, penalty=0.1, dropout=0.5, seed=0)
    for training in (False, True):
        outputs, weights = layer(
            np.zeros((0, 5, 4), "float32"),
            mask=mask,
            training=training,
            return_attention_scores=True,
        )
        assert tuple(outputs.shape) == (0, heads * 4)
        assert tuple(weights.shape) == ((0, 5) if heads == 1 else (0, heads, 5))


@pytest.mark.parametrize("heads", [1, 3])
@pytest.mark.parametrize("with_mask", [False, True], ids=["no_mask", "mask"])
def test_zero_length_inputs_give_zero_outputs(heads, with_mask):
    mask = np.zeros((3, 0), bool) if with_mask else None
    layer = ContextAttention(heads=heads, penalty=0.1)
    outputs, weights = layer(np.ones((3, 0, 4), "float32"), mask=mask, return_attention_scores=True)
    np.testing.assert_array_equal(to_numpy(outputs), np.zeros((3, heads * 4)))
    assert tuple(weights.shape) == ((3, 0) if heads == 1 else (3, heads, 0))
    if heads > 1:
        # No step at all: A is empty, so ||A A^T - I||^2 = heads for every row.
        np.testing.assert_allclose(to_numpy(layer.losses[-1]), 0.1 * heads, rtol=1e-6)


def test_model_accepts_an_empty_batch():
    tokens = keras.Input((None,), dtype="int32")
    x = keras.layers.Embedding(12, 4, mask_zero=True)(tokens)
    pooled, weights = ContextAttention(heads=2, name="attention")(x, return_attention_scores=True)
    model = keras.Model(tokens, [keras.layers.Dense(3, name="head")(pooled), weights])
    empty = np.zeros((0, 7), "int32")
    # (`model.predict` on 0 rows fails inside Keras for any model: its loop never
    # runs a batch. One batch of 0 rows, as called here, is what a server sees.)
    for logits, attention in (model(empty), model.predict_on_batch(empty)):
        assert tuple(logits.shape) == (0, 3)
        assert tuple(attention.shape) == (0, 2, 7)


@pytest.mark.parametrize("score", SCORES)
def test_permuting_steps_permutes_weights(score):
    rng = np.random.default_rng(6)
    x = rng.standard_normal((5, 10, 4)).astype("float32")
    mask = random_mask(rng, 5, 10)
    perm = rng.permutation(10)
    layer = ContextAttention(score=score, heads=2)
    outputs, weights = layer(x, mask=mask, return_attention_scores=True)
    p_outputs, p_weights = layer(x[:, perm], mask=mask[:, perm], return_attention_scores=True)
    np.testing.assert_allclose(to_numpy(p_weights), to_numpy(weights)[..., perm], atol=1e-6)
    np.testing.assert_allclose(to_numpy(p_outputs), to_numpy(outputs), atol=1e-5)


@pytest.mark.parametrize(
    "mask",
    [
        np.array([[1, 1, 0], [1, 0, 0]], dtype=bool),
        np.array([[1, 1, 0], [1, 0, 0]], dtype="int32"),
        np.array([[1.0, 1.0, 0.0], [1.0, 0.0, 0.0]], dtype="float32"),
    ],
    ids=["bool", "int", "float"],
)
def test_mask_dtypes(mask):
    x = np.random.default_rng(7).standard_normal((2, 3, 4)).astype("float32")
    _, weights = ContextAttention()(x, mask=mask, return_attention_scores=True)
    weights = to_numpy(weights)
    assert (weights[mask == 0] == 0).all()
    np.testing.assert_allclose(weights.sum(axis=1), 1.0, atol=1e-6)


def test_propagated_embedding_mask_is_honoured():
    inputs = keras.Input((None,), dtype="int32")
    x = keras.layers.Embedding(10, 4, mask_zero=True)(inputs)
    pooled, weights = ContextAttention(name="attention")(x, return_attention_scores=True)
    model = keras.Model(inputs, [pooled, weights])
    ids = np.array([[1, 2, 3, 0, 0], [4, 0, 0, 0, 0], [0, 0, 0, 0, 0]])
    _, weights = model(ids)
    weights = to_numpy(weights)
    assert (weights[ids == 0] == 0).all()
    np.testing.assert_allclose(weights[:2].sum(axis=1), 1.0, atol=1e-6)


# --- heads and the redundancy penalty -------------------------------------------------------


def test_penalty_on_a_hand_computed_case():
    # With a zero projection every unmasked step scores 0, so each head spreads
    # its weight uniformly over the unmasked steps:
    #   row 0, 2 steps: A = [[.5, .5], [.5, .5]]  -> A A^T - I = [[-.5, .5], [.5, -.5]], ||.||^2 = 1
    #   row 1, 1 step:  A = [[1, 0], [1, 0]]      -> A A^T - I = [[0, 1], [1, 0]],       ||.||^2 = 2
    #   row 2, none:    A = 0                     -> A A^T - I = -I,                     ||.||^2 = 2
    # penalty * batch mean = 0.5 * (1 + 2 + 2) / 3
    layer = ContextAttention(heads=2, penalty=0.5, kernel_initializer="zeros")
    x = np.ones((3, 2, 4), "float32")
    mask = np.array([[1, 1], [1, 0], [0, 0]], bool)
    _, weights = layer(x, mask=mask, return_attention_scores=True)
    np.testing.assert_allclose(to_numpy(weights)[0], [[0.5, 0.5], [0.5, 0.5]], atol=1e-7)
    assert len(layer.losses) == 1
    np.testing.assert_allclose(to_numpy(layer.losses[0]), 0.5 * 5 / 3, rtol=1e-6)
    unpenalized = ContextAttention(heads=2, penalty=0.0)
    unpenalized(x, mask=mask)
    assert not unpenalized.losses


def test_penalty_enters_the_training_loss():
    inputs = keras.Input((2, 4))
    x = ContextAttention(heads=2, penalty=0.5, kernel_initializer="zeros", name="attention")(inputs)
    model = keras.Model(inputs, keras.layers.Dense(1, kernel_initializer="zeros")(x))
    model.compile(optimizer=keras.optimizers.SGD(0.0), loss="mse")
    # No mask: both heads are uniform over 2 steps -> ||A A^T - I||^2 = 1 for every row.
    loss = model.evaluate(np.ones((4, 2, 4), "float32"), np.zeros((4, 1)), verbose=0)
    np.testing.assert_allclose(loss, 0.5, rtol=1e-6)
    history = model.fit(np.ones((4, 2, 4), "float32"), np.zeros((4, 1)), epochs=1, verbose=0)
    np.testing.assert_allclose(history.history["loss"][0], 0.5, rtol=1e-6)


# --- dropout, precision -------------------------------------------------------------------


def test_dropout_only_in_training():
    rng = np.random.default_rng(8)
    x = rng.standard_normal((4, 12, 4)).astype("float32")
    layer = ContextAttention(dropout=0.5, seed=1)
    layer_out = layer(x, training=False)
    want, _ = numpy_reference(layer, x, np.ones(x.shape[:2], bool))
    np.testing.assert_allclose(to_numpy(layer_out), want, atol=1e-5)
    train_out, weights = layer(x, training=True, return_attention_scores=True)
    assert not np.allclose(to_numpy(train_out), to_numpy(layer_out))
    np.testing.assert_allclose(to_numpy(weights).sum(axis=1), 1.0, atol=1e-6)


@pytest.mark.parametrize("policy", ["mixed_float16", "mixed_bfloat16"])
@pytest.mark.parametrize("score", SCORES)
def test_mixed_precision(policy, score):
    rng = np.random.default_rng(9)
    x = rng.standard_normal((4, 6, 8)).astype("float32")
    mask = random_mask(rng, 4, 6)
    layer = ContextAttention(score=score, heads=2, dtype=policy)
    outputs, weights = layer(x, mask=mask, return_attention_scores=True)
    assert keras.backend.standardize_dtype(outputs.dtype) == policy.split("_")[1]
    outputs, weights = to_numpy(outputs).astype("float32"), to_numpy(weights).astype("float32")
    assert np.isfinite(outputs).all() and np.isfinite(weights).all()
    assert (outputs[0] == 0).all() and (weights[0] == 0).all()
    assert (weights.transpose(0, 2, 1)[~mask] == 0).all()
    np.testing.assert_allclose(weights[1:].sum(axis=-1), 1.0, atol=2e-2)
    want_outputs, _ = numpy_reference(layer, x, mask)
    np.testing.assert_allclose(outputs, want_outputs, atol=5e-2)


# --- errors -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "kwargs, message",
    [
        (
            {"score": "foo"},
            r"Expected score to be one of \('dot', 'scaled_dot', 'general', 'additive'\). Received: score='foo'",
        ),
        ({"heads": 0}, "Expected heads to be a positive int. Received: heads=0"),
        ({"heads": 1.5}, "Received: heads=1.5"),
        ({"units": -3}, "Received: units=-3"),
        ({"dropout": 1.0}, r"Expected dropout to be a float in \[0, 1\). Received: dropout=1.0"),
        ({"penalty": -1.0}, "Received: penalty=-1.0"),
    ],
)
def test_invalid_arguments(kwargs, message):
    with pytest.raises(ValueError, match=message):
        ContextAttention(**kwargs)


def test_invalid_input_rank_and_mask_shape():
    with pytest.raises(ValueError, match=r"rank 3 .*Received: input_shape=\(2, 4\)"):
        ContextAttention()(np.ones((2, 4), "float32"))
    with pytest.raises(ValueError, match=r"Expected mask to have shape \[batch, T\]"):
        ContextAttention()(np.ones((2, 3, 4), "float32"), mask=np.ones((2, 3, 4), bool))


# --- end to end ---------------------------------------------------------------------------


def planted_word_data(rng, n, steps=12, vocab=40, planted=2):
    """Random documents (ids 3..vocab-1, right-padded with 0); label 1 iff `planted` occurs."""
    lengths = rng.integers(4, steps + 1, size=n)
    ids = np.zeros((n, steps), "int32")
    labels = rng.integers(0, 2, size=n)
    positions = np.full(n, -1)
    for i in range(n):
        ids[i, : lengths[i]] = rng.integers(3, vocab, size=lengths[i])
        if labels[i]:
            positions[i] = rng.integers(0, lengths[i])
            ids[i, positions[i]] = planted
    return ids, labels.astype("float32"), positions


@pytest.mark.slow
def test_bigru_model_attends_to_the_planted_word():
    keras.utils.set_random_seed(0)
    rng = np.random.default_rng(10)
    ids, labels, positions = planted_word_data(rng, 768)

    tokens = keras.Input((None,), dtype="int32", name="tokens")
    x = keras.layers.Embedding(40, 16, mask_zero=True, name="embedding")(tokens)
    x = keras.layers.Bidirectional(keras.layers.GRU(16, return_sequences=True), name="encoder")(x)
    pooled, weights = ContextAttention(name="attention")(x, return_attention_scores=True)
    prediction = keras.layers.Dense(1, activation="sigmoid", name="head")(pooled)
    model = keras.Model(tokens, prediction)
    explainer = keras.Model(tokens, weights)
    model.compile(
        optimizer=keras.optimizers.Adam(0.01), loss="binary_crossentropy", metrics=["accuracy"]
    )
    model.fit(ids[:640], labels[:640], batch_size=32, epochs=8, verbose=0)

    _, accuracy = model.evaluate(ids[640:], labels[640:], verbose=0)
    assert accuracy > 0.9
    test_weights = to_numpy(explainer(ids[640:]))
    positive = labels[640:] == 1
    hits = test_weights[positive].argmax(axis=1) == positions[640:][positive]
    assert hits.mean() > 0.9
    assert (test_weights[ids[640:] == 0] == 0).all()


# --- saving -------------------------------------------------------------------------------


def reload_cases():
    """`(name, model, inputs)` for tests/layers/test_reload.py (one fresh process for all)."""
    rng = np.random.default_rng(11)
    ids = rng.integers(0, 12, size=(4, 7)).astype("int32")
    ids[0] = 0
    models = []
    for score, heads in [(s, 1) for s in SCORES] + [("additive", 3)]:
        tokens = keras.Input((None,), dtype="int32")
        x = keras.layers.Embedding(12, 6, mask_zero=True)(tokens)
        pooled, weights = ContextAttention(
            score=score, heads=heads, units=5, penalty=0.1 if heads > 1 else 0.0, name="attention"
        )(x, return_attention_scores=True)
        model = keras.Model(tokens, [keras.layers.Dense(2, name="head")(pooled), weights])
        models.append((f"{score}_{heads}", model, ids))
    return models
