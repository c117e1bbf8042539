"""Attention pooling with a trainable context vector (Yang et al. 2016)."""

import keras
from keras import ops

from hatt.layers._checks import (
    check_choice,
    check_optional_positive_int,
    check_positive_int,
    check_rate,
    is_finite_number,
)
from hatt.layers._masking import input_width, masked_softmax, to_bool_mask
from hatt.layers.normalizers import check_normalizer, normalize

SCORES = ("dot", "scaled_dot", "general", "additive")
HARD = (None, "gumbel")
# Each weight's initializer, regularizer and constraint: the argument's name and
# the Keras module that reads (``get``) and writes (``serialize``) it.
_WEIGHT_SETTINGS = {
    f"{weight}_{setting}": module
    for setting, module in (
        ("initializer", keras.initializers),
        ("regularizer", keras.regularizers),
        ("constraint", keras.constraints),
    )
    for weight in ("kernel", "bias", "context", "score")
}


@keras.saving.register_keras_serializable(package="hatt")
class ContextAttention(keras.layers.Layer):
    """Attention pooling over time with a trainable context vector.

    Each step `h_t` of a sequence is projected, `u_t = tanh(W h_t + b)`, and
    scored against a learned context vector `u`; the scores are normalized
    with a softmax over the unmasked steps and the output is the weighted sum
    of the inputs, `output = sum_t alpha_t h_t` (Yang et al. 2016).

    `score` picks the alignment function `e_t = score(u_t, u)`:

    - `"dot"`: `u_t . u` (Yang et al.'s formulation),
    - `"scaled_dot"`: `u_t . u / sqrt(units)` (Vaswani et al.),
    - `"general"`: `u_t^T W_a u` (Luong et al.),
    - `"additive"`: `v^T tanh(W_1 u_t + W_2 u)` (Bahdanau et al.; Luong's
      "concat").

    With `heads > 1` the layer learns `heads` context vectors (Lin et al.
    2017); each head pools the sequence on its own and the outputs are
    concatenated. `penalty > 0` then adds
    `penalty * mean_batch(||A A^T - I||_F^2)` through `add_loss`, where `A`
    is the `[heads, T]` weight matrix of one example, so that the heads
    attend to different steps.

    Masking: the mask Keras propagates (from `Embedding(mask_zero=True)`,
    RNNs, ...) or one passed as `mask=` is honoured; it must be shaped
    `[batch, T]` and may be bool or 0/1 numbers. Masked steps get exactly
    zero weight, and their values never reach the output or the gradients:
    they are set to zero (with `where`) before anything else, so a NaN or
    inf at a padded step is harmless. A fully masked row gets all-zero
    weights and a zero output vector (never NaN). The scores are shifted by their maximum and masked
    logits are pushed down by a value that is finite in the compute dtype,
    so the layer works under `float16`/`bfloat16` mixed precision. The
    output carries no mask.

    Args:
        units: Positive int, size of the projection `u_t`. Defaults to
            `None`, meaning the input's feature size `d`.
        score: One of `"dot"`, `"scaled_dot"`, `"general"`, `"additive"`.
            Defaults to `"dot"`.
        heads: Positive int, number of context vectors. Defaults to `1`.
        penalty: Non-negative float, coefficient of the redundancy penalty
            of Lin et al. (only used when `heads > 1`). Defaults to `0.0`.
        use_bias: Bool, whether the projection has a bias `b`. Defaults to
            `True`.
        dropout: Float in `[0, 1)`, dropout rate on the attention weights,
            applied in training only. Defaults to `0.0`.
        kernel_initializer: Initializer of the projection `W`.
        bias_initializer: Initializer of the bias `b`.
        context_initializer: Initializer of the context vector(s) `u`.
        score_initializer: Initializer of the alignment weights (`W_a` for
            `"general"`; `W_1`, `W_2`, `v` for `"additive"`).
        kernel_regularizer: Regularizer of `W`.
        bias_regularizer: Regularizer of `b`.
        context_regularizer: Regularizer of `u`.
        score_regularizer: Regularizer of the alignment weights.
        kernel_constraint: Constraint of `W`.
        bias_constraint: Constraint of `b`.
        context_constraint: Constraint of `u`.
        score_constraint: Constraint of the alignment weights.
        seed: Optional int, seed of the attention dropout.
        skip_masked: Bool. If `True`, at inference (`training` not `True`)
            with a mask, only the unmasked steps are projected, scored and
            summed (gathered from the flattened `[batch * T, d]` inputs):
            the same weights and outputs, to float rounding, for the work of
            the real steps, which pays when most steps are padding (the
            HAN's words). The gathered shapes depend on the mask, so it
            suits TensorFlow graphs and eager code, not a JAX `jit`.
            Defaults to `False`.
        normalizer: One of `"softmax"`, `"sparsemax"`, `"entmax15"` (see
            `hatt.layers.normalizers`): the map from scores to weights.
            Sparse normalizers give exactly zero weight to low-scoring steps.
            Defaults to `"softmax"`.
        local_p: Bool, predictive local attention (Luong et al. 2015,
            "local-p", as a soft window on the pooled sequence). Per row and
            head the layer predicts a centre
            `p = L * sigmoid(v_p^T tanh(W_p h_mean))`, where `h_mean` is the
            mean of the unmasked steps, `L` the number of unmasked steps,
            `W_p` `[d, units]` and `v_p` `[units, heads]` new weights. Step
            `t` has position `s_t` = the number of unmasked steps before it
            (so pre- and post-padding agree), and the weights become
            `a_t = w_t g_t / sum_j w_j g_j` with
            `g_t = exp(-(s_t - p)^2 / (2 sigma^2))`, `sigma = window / 2`
            and `w` the normalizer's weights (masked steps stay 0, a row
            whose product underflows to 0 gets zeros, never NaN). Defaults to
            `False`.
        window: Positive number `D`, the half-width of the local-p window
            (`sigma = D / 2`). Required when `local_p=True`. Defaults to
            `None`.
        hard: `None` or `"gumbel"`: hard attention. In training the weights
            are Gumbel-softmax straight-through samples (forward: the one-hot
            of `argmax_t (e_t + g_t)` with Gumbel noise `g_t`, over the
            unmasked steps; backward: the gradient of
            `softmax((e + g) / temperature)`). At inference they are
            deterministic: `1/k` on the `k = hard_k` highest-scoring
            unmasked steps (all unmasked steps when a row has fewer; tied
            scores at the k-th place share the weight). Uses the scores
            directly, so it needs `normalizer="softmax"` and
            `local_p=False`. Defaults to `None`.
        temperature: Positive float `tau`: the scores are divided by it
            before the normalizer (`normalizer(e / tau)`), and it is the
            Gumbel-softmax temperature with `hard="gumbel"`. Below 1 it
            sharpens the weights; with `"sparsemax"` or `"entmax15"`, whose
            support depends on the scores' scale, it gives more exact zeros.
            Defaults to `1.0`.
        hard_k: Positive int, the `k` of the inference top-k. Defaults to
            `1`.
        **kwargs: Base layer keyword arguments, such as `name` and `dtype`.

    Call arguments:
        inputs: Float tensor of shape `[batch, T, d]`.
        mask: Optional tensor of shape `[batch, T]` (bool or 0/1); `True`
            keeps a step. Defaults to the mask Keras propagates.
        training: Python bool; dropout is applied only when `True`.
        return_attention_scores: Bool; when `True` the attention weights are
            returned too. Defaults to `False`.

    Returns:
        `output` of shape `[batch, heads * d]`, or the tuple
        `(output, weights)` when `return_attention_scores=True`. `weights`
        are shaped `[batch, T]` when `heads == 1` and `[batch, heads, T]`
        otherwise; they are taken before dropout, so they sum to 1 over the
        unmasked steps of every row that has one. Empty in, empty out: an
        empty batch `[0, T, d]` gives `[0, heads * d]` outputs, and
        zero-length inputs `[batch, 0, d]` give zero outputs and weights
        with a time axis of size 0.

    Example:

    >>> tokens = keras.Input(shape=(None,), dtype="int32")
    >>> x = keras.layers.Embedding(1000, 32, mask_zero=True)(tokens)
    >>> x = keras.layers.Bidirectional(
    ...     keras.layers.GRU(16, return_sequences=True))(x)
    >>> pooled, weights = hatt.layers.ContextAttention(
    ...     name="word_attention")(x, return_attention_scores=True)
    >>> pooled.shape, weights.shape
    ((None, 32), (None, None))

    References:
        - [Yang et al., 2016. Hierarchical Attention Networks for Document
          Classification](https://aclanthology.org/N16-1174/)
        - [Luong et al., 2015. Effective Approaches to Attention-based Neural
          Machine Translation](https://arxiv.org/abs/1508.04025)
        - [Vaswani et al., 2017. Attention Is All You Need](
          https://arxiv.org/abs/1706.03762)
        - [Lin et al., 2017. A Structured Self-attentive Sentence Embedding](
          https://arxiv.org/abs/1703.03130)
        - [Chaudhari et al., 2021. An Attentive Survey of Attention Models](
          https://arxiv.org/abs/1904.02874)
    """

    def __init__(
        self,
        units=None,
        score="dot",
        heads=1,
        penalty=0.0,
        use_bias=True,
        dropout=0.0,
        kernel_initializer="glorot_uniform",
        bias_initializer="zeros",
        context_initializer="glorot_uniform",
        score_initializer="glorot_uniform",
        kernel_regularizer=None,
        bias_regularizer=None,
        context_regularizer=None,
        score_regularizer=None,
        kernel_constraint=None,
        bias_constraint=None,
        context_constraint=None,
        score_constraint=None,
        seed=None,
        skip_masked=False,
        normalizer="softmax",
        local_p=False,
        window=None,
        hard=None,
        temperature=1.0,
        hard_k=1,
        **kwargs,
    ):
        given = locals()
        super().__init__(**kwargs)
        check_optional_positive_int("units", units)
        check_choice("score", score, SCORES)
        check_positive_int("heads", heads)
        if not isinstance(penalty, (int, float)) or isinstance(penalty, bool) or penalty < 0:
            raise ValueError(
                f"Expected penalty to be a non-negative float. Received: penalty={penalty!r}"
            )
        check_rate("dropout", dropout)
        _check_options(normalizer, local_p, window, hard, temperature, hard_k)
        self.normalizer = normalizer
        self.local_p = bool(local_p)
        self.window = window
        self.hard = hard
        self.temperature = float(temperature)
        self.hard_k = hard_k
        self.noise_generator = keras.random.SeedGenerator(seed) if hard else None
        self.units = units
        self.score = score
        self.heads = heads
        self.penalty = float(penalty)
        self.use_bias = use_bias
        self.dropout = float(dropout)
        for name, kind in _WEIGHT_SETTINGS.items():
            setattr(self, name, kind.get(given[name]))
        self.seed = seed
        self.skip_masked = bool(skip_masked)
        self.seed_generator = keras.random.SeedGenerator(seed) if self.dropout > 0 else None
        self.supports_masking = True

    def build(self, input_shape):
        feature_dim = input_width("ContextAttention", input_shape)
        units = self.units if self.units is not None else feature_dim
        self._feature_dim = feature_dim
        self._units = units

        def weight(name, shape, kind):
            return self.add_weight(
                name=name,
                shape=shape,
                initializer=getattr(self, f"{kind}_initializer"),
                regularizer=getattr(self, f"{kind}_regularizer"),
                constraint=getattr(self, f"{kind}_constraint"),
            )

        self.kernel = weight("kernel", (feature_dim, units), "kernel")
        self.bias = weight("bias", (units,), "bias") if self.use_bias else None
        # `[units, heads]`: one column per head, so heads=1 is the general case.
        self.context = weight("context", (units, self.heads), "context")
        if self.score == "general":
            self.score_kernel = weight("score_kernel", (units, units), "score")
        elif self.score == "additive":
            self.score_kernel = weight("score_kernel", (units, units), "score")
            self.score_context_kernel = weight("score_context_kernel", (units, units), "score")
            self.score_vector = weight("score_vector", (units, self.heads), "score")
        if self.local_p:
            self.position_kernel = weight("position_kernel", (feature_dim, units), "score")
            self.position_vector = weight("position_vector", (units, self.heads), "score")

    def _project(self, inputs):
        """`tanh(W h_t + b)` of every step."""
        projected = ops.matmul(inputs, self.kernel)
        if self.use_bias:
            projected = projected + self.bias
        return ops.tanh(projected)

    def _scores(self, projected):
        """Alignment scores `[batch, T, heads]` of the projected steps."""
        if self.score in ("dot", "scaled_dot"):
            scores = ops.matmul(projected, self.context)
            if self.score == "scaled_dot":
                scores = scores / ops.sqrt(ops.cast(self._units, scores.dtype))
            return scores
        if self.score == "general":
            # u_t^T W_a u = u_t . (W_a u): one `[units, heads]` product per call.
            return ops.matmul(projected, ops.matmul(self.score_kernel, self.context))
        # additive: v^T tanh(W_1 u_t + W_2 u); W_2 u is one column per head.
        keys = ops.matmul(projected, self.score_kernel)  # [batch, T, units]
        queries = ops.matmul(ops.transpose(self.score_context_kernel), self.context)
        hidden = ops.tanh(keys[..., None] + queries)  # [batch, T, units, heads]
        return ops.sum(hidden * self.score_vector, axis=-2)

    def call(self, inputs, mask=None, training=None, return_attention_scores=False):
        mask = to_bool_mask(mask)
        if mask is not None and len(mask.shape) != 2:
            raise ValueError(
                f"Expected mask to have shape [batch, T]. Received: mask.shape={tuple(mask.shape)}"
            )
        kept = None
        if mask is not None and self.skip_masked and not training:
            kept = _Kept(inputs, mask)
        elif mask is not None:
            # `where`, not `inputs * mask`: 0 x NaN is NaN. A NaN or inf at a padded
            # step would otherwise reach the pooled row (weight 0 x value) and, through
            # the projection's backward pass, every kernel gradient.
            inputs = ops.where(mask[:, :, None], inputs, ops.zeros_like(inputs))
        if kept is None:
            scores = self._scores(self._project(inputs))
        else:  # the kept steps' scores in place, 0 elsewhere (the softmax masks them)
            scores = kept.scatter(self._scores(self._project(kept.steps[None]))[0])
        scores = ops.transpose(scores, (0, 2, 1))  # [batch, heads, T]
        weights = self._weights(scores, inputs, mask, training)

        if self.penalty > 0 and self.heads > 1:
            self.add_loss(self._redundancy_penalty(weights))

        pooled_weights = weights
        if training and self.dropout > 0:
            pooled_weights = keras.random.dropout(
                weights, rate=self.dropout, seed=self.seed_generator
            )
        if kept is None:
            outputs = ops.matmul(pooled_weights, inputs)  # [batch, heads, d]
        else:
            outputs = kept.pool(pooled_weights)
        outputs = ops.reshape(outputs, (-1, self.heads * self._feature_dim))
        if not return_attention_scores:
            return outputs
        if self.heads == 1:
            weights = ops.squeeze(weights, axis=1)
        return outputs, weights

    def _weights(self, scores, inputs, mask, training):
        """Attention weights `[batch, heads, T]` from the scores, per the options."""
        head_mask = None if mask is None else mask[:, None, :]
        if self.hard == "gumbel":
            if training:
                return self._gumbel_straight_through(scores, head_mask)
            return _top_k_uniform(scores, head_mask, self.hard_k)
        if self.temperature != 1.0:
            scores = scores / self.temperature
        if self.normalizer == "softmax":
            weights = masked_softmax(scores, head_mask)
        else:
            weights = normalize(scores, head_mask, self.normalizer)
        if self.local_p:
            weights = self._local_p_window(weights, inputs, mask)
        return weights

    def _gumbel_straight_through(self, scores, mask):
        """Forward: one-hot argmax of `scores + Gumbel`; backward: its tempered softmax."""
        uniform = keras.random.uniform(
            ops.shape(scores), minval=1e-6, maxval=1.0 - 1e-6, seed=self.noise_generator
        )
        noisy = scores + ops.cast(-ops.log(-ops.log(uniform)), scores.dtype)
        soft = masked_softmax(noisy / self.temperature, mask)
        hard = _top_k_uniform(noisy, mask, 1)
        return hard + soft - ops.stop_gradient(soft)

    def _local_p_window(self, weights, inputs, mask):
        """Multiply the Gaussian local-p window into `weights` and renormalize."""
        if mask is None:
            mask = ops.ones(ops.shape(inputs)[:2], dtype="bool")
        kept = ops.cast(mask, inputs.dtype)  # [batch, T]
        length = ops.sum(kept, axis=1)[:, None]  # [batch, 1]
        zeroed = ops.where(mask[:, :, None], inputs, ops.zeros_like(inputs))
        mean = ops.sum(zeroed, axis=1) / ops.maximum(length, 1.0)  # [batch, d]
        hidden = ops.tanh(ops.matmul(mean, self.position_kernel))
        centre = length * ops.sigmoid(ops.matmul(hidden, self.position_vector))  # [b, heads]
        positions = ops.cumsum(kept, axis=1) - kept  # unmasked steps before t
        sigma = self.window / 2.0
        window = ops.exp(-ops.square(positions[:, None, :] - centre[:, :, None]) / (2 * sigma**2))
        weighted = weights * ops.cast(window, weights.dtype)
        total = ops.sum(weighted, axis=-1, keepdims=True)
        half = keras.backend.standardize_dtype(weights.dtype) == "float16"
        tiny = ops.cast(1e-7 if half else 1e-30, weights.dtype)
        return weighted / ops.maximum(total, tiny)

    def _redundancy_penalty(self, weights):
        """`penalty * mean over the batch of ||A A^T - I||_F^2` (Lin et al.)."""
        weights = ops.cast(weights, "float32")
        gram = ops.matmul(weights, ops.transpose(weights, (0, 2, 1)))
        residual = gram - ops.eye(self.heads, dtype="float32")
        return self.penalty * ops.mean(ops.sum(ops.square(residual), axis=(1, 2)))

    def compute_mask(self, inputs, mask=None):
        return None

    def compute_output_shape(self, input_shape):
        feature_dim = input_shape[-1]
        return (input_shape[0], None if feature_dim is None else self.heads * feature_dim)

    def compute_output_spec(self, inputs, mask=None, training=None, return_attention_scores=False):
        output = keras.KerasTensor(
            self.compute_output_shape(inputs.shape), dtype=self.compute_dtype
        )
        if not return_attention_scores:
            return output
        batch, steps = inputs.shape[0], inputs.shape[1]
        shape = (batch, steps) if self.heads == 1 else (batch, self.heads, steps)
        return output, keras.KerasTensor(shape, dtype=self.compute_dtype)

    def get_config(self):
        config = super().get_config()
        config.update(
            {
                "units": self.units,
                "score": self.score,
                "heads": self.heads,
                "penalty": self.penalty,
                "use_bias": self.use_bias,
                "dropout": self.dropout,
                **{
                    name: kind.serialize(getattr(self, name))
                    for name, kind in _WEIGHT_SETTINGS.items()
                },
                "seed": self.seed,
                "skip_masked": self.skip_masked,
                "normalizer": self.normalizer,
                "local_p": self.local_p,
                "window": self.window,
                "hard": self.hard,
                "temperature": self.temperature,
                "hard_k": self.hard_k,
            }
        )
        return config


class _Kept:
    """The unmasked steps of `[batch, T, d]` inputs, gathered flat, and the way back.

    Attributes:
        steps: `[K, d]`, the unmasked steps in row-major order.
    """

    def __init__(self, inputs, mask):
        self.batch, self.length = ops.shape(inputs)[0], ops.shape(inputs)[1]
        self.index = ops.nonzero(ops.reshape(mask, (-1,)))[0]  # flat positions, [K]
        flat = ops.reshape(inputs, (-1, ops.shape(inputs)[2]))
        self.steps = ops.take(flat, self.index, axis=0)

    def scatter(self, values):
        """`[K, h]` values of the kept steps → `[batch, T, h]`, zero at the others."""
        heads = ops.shape(values)[1]
        flat = ops.scatter(self.index[:, None], values, (self.batch * self.length, heads))
        return ops.reshape(flat, (self.batch, self.length, heads))

    def pool(self, weights):
        """`sum_t weights[b, h, t] * h_t` over the kept steps: `[batch, heads, d]`."""
        flat = ops.reshape(ops.transpose(weights, (0, 2, 1)), (-1, ops.shape(weights)[1]))
        kept = ops.take(flat, self.index, axis=0)  # [K, heads]
        products = kept[:, :, None] * self.steps[:, None, :]  # [K, heads, d]
        rows = self.index // self.length
        return ops.segment_sum(products, rows, num_segments=self.batch)


def _top_k_uniform(scores, mask, k):
    """`1/k` on the `k` highest unmasked scores of each row (fewer if fewer kept), 0 elsewhere."""
    if mask is None:
        mask = ops.ones_like(scores, dtype="bool")
    mask = ops.broadcast_to(mask, ops.shape(scores))
    if scores.shape[-1] == 0:
        return ops.zeros_like(scores)
    lowest = ops.min(ops.where(mask, scores, ops.zeros_like(scores)), axis=-1, keepdims=True)
    filled = ops.stop_gradient(ops.where(mask, scores, lowest - 1.0))
    ranked = -ops.sort(-filled, axis=-1)
    valid = ops.sum(ops.cast(mask, "int32"), axis=-1, keepdims=True)
    place = ops.maximum(ops.minimum(valid, k), 1) - 1
    threshold = ops.take_along_axis(ranked, place, axis=-1)
    chosen = ops.cast(ops.logical_and(mask, filled >= threshold), scores.dtype)
    return chosen / ops.maximum(ops.sum(chosen, axis=-1, keepdims=True), 1.0)


def check_attention_arguments(
    normalizer="softmax", local_p=False, window=None, hard=None, temperature=1.0, hard_k=1
):
    """Raise `ValueError` unless `ContextAttention` accepts these options (for builders
    that take them before the layer exists)."""
    _check_options(normalizer, local_p, window, hard, temperature, hard_k)


def _check_options(normalizer, local_p, window, hard, temperature, hard_k):
    """Validate the normalizer, local-p and hard-attention arguments."""
    check_normalizer(normalizer)
    if hard not in HARD:
        raise ValueError(f"Expected hard to be one of {HARD}. Received: hard={hard!r}")
    if not is_finite_number(temperature) or not temperature > 0:
        raise ValueError(
            f"Expected temperature to be a finite float > 0. Received: temperature={temperature!r}"
        )
    if not isinstance(hard_k, int) or isinstance(hard_k, bool) or hard_k < 1:
        raise ValueError(f"Expected hard_k to be an int >= 1. Received: hard_k={hard_k!r}")
    if window is not None and (not _is_number(window) or not window > 0):
        raise ValueError(f"Expected window to be a number > 0. Received: window={window!r}")
    if local_p and window is None:
        raise ValueError(
            f"Expected window (the local-p half-width D) when local_p=True. Received: window={window!r}"
        )
    if hard and (normalizer != "softmax" or local_p):
        raise ValueError(
            "hard attention uses the scores directly: it needs normalizer='softmax' and "
            f"local_p=False. Received: hard={hard!r}, normalizer={normalizer!r}, local_p={local_p!r}"
        )


def _is_number(value):
    return isinstance(value, (int, float)) and not isinstance(value, bool)
