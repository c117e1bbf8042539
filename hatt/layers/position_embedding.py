"""Learned or sinusoidal position embeddings."""

import keras
from keras import ops

from hatt.layers._masking import input_width

MODES = ("learned", "sinusoidal")


@keras.saving.register_keras_serializable(package="hatt")
class PositionEmbedding(keras.layers.Layer):
    """Position embeddings for a sequence of vectors, learned or sinusoidal.

    The layer returns the position embeddings broadcast to the shape of its
    input, `[batch, T, d]`, and leaves adding them to the caller (the
    keras-hub convention): `x = tokens + PositionEmbedding(...)(tokens)`.

    - `mode="learned"`: a trainable `[sequence_length, d]` table whose first
      `T` rows are used; inputs longer than `sequence_length` raise a
      `ValueError` where the length is known when the layer is built or
      called.
    - `mode="sinusoidal"`: the fixed encoding of Vaswani et al.,
      `PE[p, 2i] = sin(p / max_wavelength^(2i/d))`,
      `PE[p, 2i+1] = cos(p / max_wavelength^(2i/d))`. It has no weights and
      works for any length; `sequence_length` may be `None`.

    Masking: the input's mask (if any) is passed through unchanged; the
    embeddings themselves do not depend on it. In a functional model the
    `+` operator drops Keras masks; `keras.layers.Add()([tokens, positions])`
    keeps the (shared) mask for the layers that follow.

    Args:
        sequence_length: Positive int, the longest sequence the learned table
            covers. Optional (`None`) in `"sinusoidal"` mode.
        mode: `"learned"` or `"sinusoidal"`. Defaults to `"learned"`.
        initializer: Initializer of the learned table. Defaults to
            `"glorot_uniform"`.
        max_wavelength: Positive number, the longest wavelength of the
            sinusoidal encoding. Defaults to `10000`.
        **kwargs: Base layer keyword arguments, such as `name` and `dtype`.

    Call arguments:
        inputs: Tensor of shape `[batch, T, d]` (e.g. token embeddings).
        mask: Optional `[batch, T]` mask; passed through.

    Returns:
        The position embeddings, of shape `[batch, T, d]`.

    Example:

    >>> tokens = keras.Input(shape=(128,), dtype="int32")
    >>> x = keras.layers.Embedding(1000, 32)(tokens)
    >>> x = x + hatt.layers.PositionEmbedding(128, name="positions")(x)
    >>> x.shape
    (None, 128, 32)

    References:
        - [Vaswani et al., 2017. Attention Is All You Need](
          https://arxiv.org/abs/1706.03762)
        - [Devlin et al., 2019. BERT](https://arxiv.org/abs/1810.04805)
          (learned positions)
    """

    def __init__(
        self,
        sequence_length=None,
        mode="learned",
        initializer="glorot_uniform",
        max_wavelength=10000,
        **kwargs,
    ):
        super().__init__(**kwargs)
        if mode not in MODES:
            raise ValueError(f"Expected mode to be one of {MODES}. Received: mode={mode!r}")
        if sequence_length is None:
            if mode == "learned":
                raise ValueError(
                    "Expected sequence_length to be a positive int in mode='learned'. "
                    f"Received: sequence_length={sequence_length!r}"
                )
        elif not (
            isinstance(sequence_length, int)
            and not isinstance(sequence_length, bool)
            and sequence_length > 0
        ):
            raise ValueError(
                "Expected sequence_length to be a positive int. "
                f"Received: sequence_length={sequence_length!r}"
            )
        if not isinstance(max_wavelength, (int, float)) or max_wavelength <= 0:
            raise ValueError(
                "Expected max_wavelength to be a positive number. "
                f"Received: max_wavelength={max_wavelength!r}"
            )
        self.sequence_length = sequence_length
        self.mode = mode
        self.initializer = keras.initializers.get(initializer)
        self.max_wavelength = max_wavelength
        self.supports_masking = True

    def build(self, input_shape):
        width = input_width("PositionEmbedding", input_shape)
        self._check_length(input_shape[1])
        if self.mode == "learned":
            self.embeddings = self.add_weight(
                name="embeddings",
                shape=(self.sequence_length, width),
                initializer=self.initializer,
            )

    def _check_length(self, length):
        if self.mode == "learned" and isinstance(length, int) and length > self.sequence_length:
            raise ValueError(
                f"Expected inputs of at most sequence_length={self.sequence_length} "
                f"steps. Received: inputs with {length} steps"
            )

    def call(self, inputs, mask=None):
        shape = ops.shape(inputs)
        length, dim = shape[1], shape[2]
        self._check_length(length)
        if self.mode == "learned":
            positions = ops.slice(self.embeddings, (0, 0), (length, dim))
        else:
            positions = self._sinusoid(length, dim)
        return ops.broadcast_to(ops.cast(positions, self.compute_dtype), shape)

    def _sinusoid(self, length, dim):
        positions = ops.cast(ops.arange(length), "float32")[:, None]  # [T, 1]
        features = ops.arange(dim)  # [d]
        pair = ops.cast(features // 2 * 2, "float32")  # 2i for both 2i and 2i+1
        inverse_freq = ops.power(
            ops.cast(self.max_wavelength, "float32"), -pair / ops.cast(dim, "float32")
        )
        angles = positions * inverse_freq  # [T, d]
        return ops.where(features % 2 == 0, ops.sin(angles), ops.cos(angles))

    def compute_mask(self, inputs, mask=None):
        return mask

    def compute_output_shape(self, input_shape):
        return tuple(input_shape)

    def get_config(self):
        config = super().get_config()
        config.update(
            {
                "sequence_length": self.sequence_length,
                "mode": self.mode,
                "initializer": keras.initializers.serialize(self.initializer),
                "max_wavelength": self.max_wavelength,
            }
        )
        return config
