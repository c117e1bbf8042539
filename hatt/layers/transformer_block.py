"""A Transformer encoder block on `keras.layers.MultiHeadAttention`."""

import keras
from keras import ops

from hatt.layers._checks import check_optional_positive_int, check_positive_int, check_rate
from hatt.layers._masking import input_width, to_bool_mask
from hatt.layers.normalizers import check_normalizer, normalize

ACTIVATIONS = ("relu", "gelu")


@keras.saving.register_keras_serializable(package="hatt")
class TransformerBlock(keras.layers.Layer):
    """Transformer encoder block: self-attention and a feed-forward network.

    Self-attention (`keras.layers.MultiHeadAttention`) and a two-layer
    feed-forward network, each wrapped in dropout, a residual connection and
    layer normalization. By default the normalization follows each residual
    sum (post-norm, Vaswani et al.); `norm_first=True` normalizes the input
    of each sublayer instead (pre-norm, Xiong et al. 2020).

    Masking: the padding mask (propagated by Keras or passed as `mask=`,
    shaped `[batch, T]`, bool or 0/1) becomes the attention mask
    `mask[:, :, None] & mask[:, None, :]`: padded keys get exactly zero
    weight. A padded query's row is fully masked; its attention weights are
    all zero when they are returned (and, inside the fused kernels used
    otherwise, finite), so its output is finite but meaningless. Padded
    steps are set to zero (with `where`) before the block reads them, so a
    NaN or inf there reaches neither the real steps' outputs nor the
    gradients. The mask is passed through to the output.

    Args:
        num_heads: Positive int, number of attention heads.
        intermediate_dim: Positive int, width of the feed-forward network.
        dropout: Float in `[0, 1)`, dropout on the attention weights and on
            each sublayer's output. Defaults to `0.0`.
        norm_first: Bool, pre-norm when `True`. Defaults to `False`.
        key_dim: Positive int, size of each head's queries and keys.
            Defaults to `None`: `hidden_dim // num_heads`, which requires the
            input's feature size `hidden_dim` to be divisible by `num_heads`.
        activation: `"relu"` or `"gelu"`, the feed-forward activation.
            Defaults to `"relu"`.
        layer_norm_epsilon: Positive float, epsilon of the layer
            normalizations. Defaults to `1e-5`.
        kernel_initializer: Initializer of the dense kernels.
        bias_initializer: Initializer of the dense biases.
        normalizer: One of `"softmax"`, `"sparsemax"`, `"entmax15"` (see
            `hatt.layers.normalizers`), the map from attention logits to
            weights. With a sparse normalizer the weights are always
            computed explicitly (no fused kernel) and fully masked query rows
            get exactly zero weights. Defaults to `"softmax"`.
        window: Int `m >= 0` or `None`, local attention ("local-m"): query
            `i` attends only to keys `j` with `|i - j| <= m` (positions are
            the raw time indices), intersected with the padding mask.
            `window >= T` is the same as no window. Defaults to `None`
            (global attention).
        **kwargs: Base layer keyword arguments, such as `name` and `dtype`.

    Call arguments:
        inputs: Float tensor of shape `[batch, T, hidden_dim]`.
        mask: Optional `[batch, T]` padding mask; `True` keeps a step.
            Defaults to the mask Keras propagates.
        training: Python bool; dropout is applied only when `True`.
        return_attention_scores: Bool; when `True` the attention weights are
            returned too. Defaults to `False`.

    Returns:
        `output` of shape `[batch, T, hidden_dim]`, or `(output, scores)`
        with `scores` of shape `[batch, num_heads, T, T]` when
        `return_attention_scores=True`.

    Example:

    >>> tokens = keras.Input(shape=(None,), dtype="int32")
    >>> x = keras.layers.Embedding(1000, 32, mask_zero=True)(tokens)
    >>> x, scores = hatt.layers.TransformerBlock(
    ...     num_heads=4, intermediate_dim=64, name="encoder_0")(
    ...     x, return_attention_scores=True)
    >>> x.shape, scores.shape
    ((None, None, 32), (None, 4, None, None))

    References:
        - [Vaswani et al., 2017. Attention Is All You Need](
          https://arxiv.org/abs/1706.03762)
        - [Xiong et al., 2020. On Layer Normalization in the Transformer
          Architecture](https://arxiv.org/abs/2002.04745)
    """

    def __init__(
        self,
        num_heads,
        intermediate_dim,
        dropout=0.0,
        norm_first=False,
        key_dim=None,
        activation="relu",
        layer_norm_epsilon=1e-5,
        kernel_initializer="glorot_uniform",
        bias_initializer="zeros",
        normalizer="softmax",
        window=None,
        **kwargs,
    ):
        super().__init__(**kwargs)
        check_positive_int("num_heads", num_heads)
        check_positive_int("intermediate_dim", intermediate_dim)
        check_optional_positive_int("key_dim", key_dim)
        check_rate("dropout", dropout)
        if activation not in ACTIVATIONS:
            raise ValueError(
                f"Expected activation to be one of {ACTIVATIONS}. Received: activation={activation!r}"
            )
        if not isinstance(layer_norm_epsilon, (int, float)) or layer_norm_epsilon <= 0:
            raise ValueError(
                "Expected layer_norm_epsilon to be a positive float. "
                f"Received: layer_norm_epsilon={layer_norm_epsilon!r}"
            )
        check_normalizer(normalizer)
        if window is not None and (
            not isinstance(window, int) or isinstance(window, bool) or window < 0
        ):
            raise ValueError(
                f"Expected window to be an int >= 0 or None. Received: window={window!r}"
            )
        self.normalizer = normalizer
        self.window = window
        self.num_heads = num_heads
        self.intermediate_dim = intermediate_dim
        self.dropout = float(dropout)
        self.norm_first = norm_first
        self.key_dim = key_dim
        self.activation = activation
        self.layer_norm_epsilon = layer_norm_epsilon
        self.kernel_initializer = keras.initializers.get(kernel_initializer)
        self.bias_initializer = keras.initializers.get(bias_initializer)
        self.supports_masking = True

    def build(self, input_shape):
        hidden_dim = input_width("TransformerBlock", input_shape, axis="hidden_dim")
        key_dim = self.key_dim
        if key_dim is None:
            if hidden_dim % self.num_heads:
                raise ValueError(
                    "Expected the inputs' hidden_dim to be divisible by num_heads when "
                    f"key_dim is not given. Received: hidden_dim={hidden_dim}, "
                    f"num_heads={self.num_heads}"
                )
            key_dim = hidden_dim // self.num_heads

        def dense_kwargs():
            return {
                "kernel_initializer": keras.initializers.get(
                    keras.initializers.serialize(self.kernel_initializer)
                ),
                "bias_initializer": keras.initializers.get(
                    keras.initializers.serialize(self.bias_initializer)
                ),
                "dtype": self.dtype_policy,
            }

        def norm(name):
            return keras.layers.LayerNormalization(
                epsilon=self.layer_norm_epsilon, dtype=self.dtype_policy, name=name
            )

        # === Self-attention sublayer ===
        attention_class = keras.layers.MultiHeadAttention
        extra = {}
        if self.normalizer != "softmax":
            attention_class, extra = _NormalizedAttention, {"normalizer": self.normalizer}
        self.attention = attention_class(
            **extra,
            num_heads=self.num_heads,
            key_dim=key_dim,
            dropout=self.dropout,
            name="self_attention",
            **dense_kwargs(),
        )
        self.attention.build(input_shape, input_shape)
        self.attention_norm = norm("self_attention_layer_norm")
        self.attention_norm.build(input_shape)
        self.attention_dropout = keras.layers.Dropout(
            self.dropout, dtype=self.dtype_policy, name="self_attention_dropout"
        )

        # === Feed-forward sublayer ===
        self.intermediate_dense = keras.layers.Dense(
            self.intermediate_dim,
            activation=self.activation,
            name="feedforward_intermediate_dense",
            **dense_kwargs(),
        )
        self.intermediate_dense.build(input_shape)
        self.output_dense = keras.layers.Dense(
            hidden_dim, name="feedforward_output_dense", **dense_kwargs()
        )
        self.output_dense.build((*input_shape[:-1], self.intermediate_dim))
        self.feedforward_norm = norm("feedforward_layer_norm")
        self.feedforward_norm.build(input_shape)
        self.feedforward_dropout = keras.layers.Dropout(
            self.dropout, dtype=self.dtype_policy, name="feedforward_dropout"
        )

    def call(self, inputs, mask=None, training=None, return_attention_scores=False):
        mask = to_bool_mask(mask)
        attention_mask = None
        if mask is not None:
            if len(mask.shape) != 2:
                raise ValueError(
                    "Expected mask to have shape [batch, T]. "
                    f"Received: mask.shape={tuple(mask.shape)}"
                )
            attention_mask = ops.logical_and(mask[:, :, None], mask[:, None, :])
            # A padded key's value enters every query's weighted sum with weight 0,
            # and 0 x NaN is NaN: zero padded steps with `where` before anything
            # reads them, so a NaN or inf there reaches no output and no gradient.
            inputs = ops.where(mask[:, :, None], inputs, ops.zeros_like(inputs))
        if self.window is not None:
            band = _band(inputs, self.window)
            attention_mask = band if attention_mask is None else attention_mask & band

        residual = inputs
        x = self.attention_norm(inputs) if self.norm_first else inputs
        attended = self.attention(
            x,
            x,
            attention_mask=attention_mask,
            training=training,
            return_attention_scores=return_attention_scores,
        )
        if return_attention_scores:
            attended, scores = attended
        x = residual + self.attention_dropout(attended, training=training)
        if not self.norm_first:
            x = self.attention_norm(x)

        residual = x
        if self.norm_first:
            x = self.feedforward_norm(x)
        x = self.output_dense(self.intermediate_dense(x))
        x = residual + self.feedforward_dropout(x, training=training)
        if not self.norm_first:
            x = self.feedforward_norm(x)
        if return_attention_scores:
            return x, scores
        return x

    def compute_mask(self, inputs, mask=None):
        return mask

    def compute_output_shape(self, input_shape):
        return tuple(input_shape)

    def compute_output_spec(self, inputs, mask=None, training=None, return_attention_scores=False):
        output = keras.KerasTensor(inputs.shape, dtype=self.compute_dtype)
        if not return_attention_scores:
            return output
        batch, steps = inputs.shape[0], inputs.shape[1]
        scores = keras.KerasTensor((batch, self.num_heads, steps, steps), dtype=self.compute_dtype)
        return output, scores

    def get_config(self):
        config = super().get_config()
        config.update(
            {
                "num_heads": self.num_heads,
                "intermediate_dim": self.intermediate_dim,
                "dropout": self.dropout,
                "norm_first": self.norm_first,
                "key_dim": self.key_dim,
                "activation": self.activation,
                "layer_norm_epsilon": self.layer_norm_epsilon,
                "kernel_initializer": keras.initializers.serialize(self.kernel_initializer),
                "bias_initializer": keras.initializers.serialize(self.bias_initializer),
                "normalizer": self.normalizer,
                "window": self.window,
            }
        )
        return config


def _band(inputs, window):
    """`[batch, T, T]` bool: `|i - j| <= window` (broadcast over the batch)."""
    positions = ops.cumsum(ops.ones_like(inputs[:, :, 0], dtype="int32"), axis=1)
    distance = ops.abs(positions[:, :, None] - positions[:, None, :])
    return distance <= window


class _NormalizedAttention(keras.layers.MultiHeadAttention):
    """`MultiHeadAttention` whose weights come from `hatt.layers.normalizers.normalize`."""

    def __init__(self, normalizer, **kwargs):
        super().__init__(**kwargs)
        self.normalizer = normalizer

    def _compute_attention(
        self,
        query,
        key,
        value,
        attention_mask=None,
        training=None,
        return_attention_scores=False,
        use_causal_mask=False,
    ):
        # Always the explicit path: the fused kernels only know softmax.
        return super()._compute_attention(
            query,
            key,
            value,
            attention_mask=attention_mask,
            training=training,
            return_attention_scores=True,
            use_causal_mask=use_causal_mask,
        )

    def _masked_softmax(self, attention_scores, attention_mask=None):
        if attention_mask is not None:
            while len(attention_mask.shape) < len(attention_scores.shape):
                attention_mask = ops.expand_dims(attention_mask, axis=-3)
            attention_mask = ops.cast(attention_mask, "bool")
        return normalize(attention_scores, attention_mask, self.normalizer)

    def get_config(self):
        return {**super().get_config(), "normalizer": self.normalizer}
