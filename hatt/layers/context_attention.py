"""Attention pooling with a trainable context vector (Yang et al. 2016)."""

import keras
from keras import ops

from hatt.layers._masking import masked_softmax, to_bool_mask

SCORES = ("dot", "scaled_dot", "general", "additive")


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
        **kwargs,
    ):
        super().__init__(**kwargs)
        if units is not None and not _is_positive_int(units):
            raise ValueError(
                f"Expected units to be a positive int or None. Received: units={units!r}"
            )
        if score not in SCORES:
            raise ValueError(f"Expected score to be one of {SCORES}. Received: score={score!r}")
        if not _is_positive_int(heads):
            raise ValueError(f"Expected heads to be a positive int. Received: heads={heads!r}")
        if not isinstance(penalty, (int, float)) or isinstance(penalty, bool) or penalty < 0:
            raise ValueError(
                f"Expected penalty to be a non-negative float. Received: penalty={penalty!r}"
            )
        if not isinstance(dropout, (int, float)) or isinstance(dropout, bool):
            raise ValueError(
                f"Expected dropout to be a float in [0, 1). Received: dropout={dropout!r}"
            )
        if not 0 <= dropout < 1:
            raise ValueError(
                f"Expected dropout to be a float in [0, 1). Received: dropout={dropout!r}"
            )
        self.units = units
        self.score = score
        self.heads = heads
        self.penalty = float(penalty)
        self.use_bias = use_bias
        self.dropout = float(dropout)
        self.kernel_initializer = keras.initializers.get(kernel_initializer)
        self.bias_initializer = keras.initializers.get(bias_initializer)
        self.context_initializer = keras.initializers.get(context_initializer)
        self.score_initializer = keras.initializers.get(score_initializer)
        self.kernel_regularizer = keras.regularizers.get(kernel_regularizer)
        self.bias_regularizer = keras.regularizers.get(bias_regularizer)
        self.context_regularizer = keras.regularizers.get(context_regularizer)
        self.score_regularizer = keras.regularizers.get(score_regularizer)
        self.kernel_constraint = keras.constraints.get(kernel_constraint)
        self.bias_constraint = keras.constraints.get(bias_constraint)
        self.context_constraint = keras.constraints.get(context_constraint)
        self.score_constraint = keras.constraints.get(score_constraint)
        self.seed = seed
        self.skip_masked = bool(skip_masked)
        self.seed_generator = keras.random.SeedGenerator(seed) if self.dropout > 0 else None
        self.supports_masking = True

    def build(self, input_shape):
        if len(input_shape) != 3:
            raise ValueError(
                "Expected inputs to ContextAttention to have rank 3 "
                f"([batch, T, d]). Received: input_shape={tuple(input_shape)}"
            )
        feature_dim = input_shape[-1]
        if feature_dim is None:
            raise ValueError(
                "Expected the last axis (d) of the inputs to ContextAttention to be "
                f"defined. Received: input_shape={tuple(input_shape)}"
            )
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
        weights = masked_softmax(scores, None if mask is None else mask[:, None, :])

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
                "kernel_initializer": keras.initializers.serialize(self.kernel_initializer),
                "bias_initializer": keras.initializers.serialize(self.bias_initializer),
                "context_initializer": keras.initializers.serialize(self.context_initializer),
                "score_initializer": keras.initializers.serialize(self.score_initializer),
                "kernel_regularizer": keras.regularizers.serialize(self.kernel_regularizer),
                "bias_regularizer": keras.regularizers.serialize(self.bias_regularizer),
                "context_regularizer": keras.regularizers.serialize(self.context_regularizer),
                "score_regularizer": keras.regularizers.serialize(self.score_regularizer),
                "kernel_constraint": keras.constraints.serialize(self.kernel_constraint),
                "bias_constraint": keras.constraints.serialize(self.bias_constraint),
                "context_constraint": keras.constraints.serialize(self.context_constraint),
                "score_constraint": keras.constraints.serialize(self.score_constraint),
                "seed": self.seed,
                "skip_masked": self.skip_masked,
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


def _is_positive_int(value):
    return isinstance(value, int) and not isinstance(value, bool) and value > 0
