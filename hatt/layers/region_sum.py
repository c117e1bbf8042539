"""A convolution over one-hot words, computed from per-word lookups (Johnson & Zhang 2015)."""

import keras
from keras import ops

from hatt.layers._masking import to_bool_mask


@keras.saving.register_keras_serializable(package="hatt")
class RegionSum(keras.layers.Layer):
    """Sum each word's region slices into the region's feature vector.

    A `Conv1D` of width `w` over one-hot word vectors (Johnson & Zhang
    2015's seq-CNN) multiplies a `[w, V, filters]` kernel by the `w` one-hot
    words of each region: it adds up `w` rows of the kernel, one per position
    in the region. Computed as a convolution it costs `w · V · filters`
    multiply-adds a word; computed from lookups it costs `w · filters`
    additions. This layer is the second half: given, for each word, its `w`
    kernel rows side by side (a `keras.layers.Embedding` with
    `output_dim = w · filters`), it returns

        outputs[t] = bias + Σ_j inputs[t + j - (w - 1) // 2, j]

    (the `j`-th slice of the word `j - (w - 1) // 2` steps away), which is
    `Conv1D(filters, w, padding="same")` over one-hot words, with the same
    alignment. Several widths run side by side: the input holds each width's
    slices in turn and the outputs are concatenated.

    Masking: masked steps contribute nothing (zero their lookups with the
    mask), so the result at a review's end does not depend on how far the
    batch is padded; the output at masked steps is the bias (mask it when
    pooling). The output carries no Keras mask.

    Args:
        widths: Non-empty list of positive ints, the region widths.
        activation: Activation after the sum. Defaults to `None`.
        use_bias: Bool, whether to add a bias per output feature. Defaults
            to `True`.
        **kwargs: Base layer keyword arguments, such as `name`.

    Call arguments:
        inputs: Float tensor `[batch, T, sum(widths) · filters]`: per word,
            the region slices of the first width, then of the next.
        mask: Optional `[batch, T]` tensor, bool or 0/1: masked steps'
            slices are treated as zeros.

    Returns:
        Float tensor `[batch, T, len(widths) · filters]`.

    Example:

    >>> ids = keras.ops.convert_to_tensor([[5, 9, 2, 0]])
    >>> lookups = keras.layers.Embedding(100, 3 * 64)(ids)  # width 3, 64 filters
    >>> hatt.layers.RegionSum([3], activation="relu")(lookups).shape
    (1, 4, 64)

    References:
        - [Johnson & Zhang, 2015. Effective Use of Word Order for Text
          Categorization with Convolutional Neural Networks](https://aclanthology.org/N15-1011/)
    """

    def __init__(self, widths, activation=None, use_bias=True, **kwargs):
        super().__init__(**kwargs)
        widths = [widths] if isinstance(widths, int) else list(widths)
        if not widths or any(
            not isinstance(w, int) or isinstance(w, bool) or w < 1 for w in widths
        ):
            raise ValueError(
                f"Expected widths to be a non-empty list of positive ints. Received: widths={widths!r}"
            )
        self.widths = widths
        self.activation = keras.activations.get(activation)
        self.use_bias = bool(use_bias)
        self.supports_masking = True

    def _filters(self, channels):
        total = sum(self.widths)
        if channels is None or channels % total:
            raise ValueError(
                f"Expected the inputs' last axis to be a multiple of sum(widths) = {total} "
                f"(each width's slices, `filters` wide). Received: {channels}"
            )
        return channels // total

    def build(self, input_shape):
        self.filters = self._filters(input_shape[-1])
        if self.use_bias:
            self.bias = self.add_weight(
                shape=(len(self.widths) * self.filters,), initializer="zeros", name="bias"
            )

    def call(self, inputs, mask=None):
        if mask is not None:
            keep = ops.cast(to_bool_mask(mask), inputs.dtype)[:, :, None]
            inputs = inputs * keep
        steps = ops.shape(inputs)[1]
        outputs, start = [], 0
        for width in self.widths:
            left = (width - 1) // 2
            # padded[u] = inputs[u - left]: slice j of the word at t + j - left is padded[t + j]
            padded = ops.pad(inputs, [[0, 0], [left, width - 1 - left], [0, 0]])
            total = None
            for j in range(width):
                lo = (start + j) * self.filters
                part = padded[:, j : j + steps, lo : lo + self.filters]
                total = part if total is None else total + part
            outputs.append(total)
            start += width
        outputs = outputs[0] if len(outputs) == 1 else ops.concatenate(outputs, axis=-1)
        if self.use_bias:
            outputs = outputs + self.bias
        return self.activation(outputs) if self.activation is not None else outputs

    def compute_mask(self, inputs, mask=None):
        return None

    def compute_output_shape(self, input_shape):
        return (*input_shape[:-1], len(self.widths) * self._filters(input_shape[-1]))

    def get_config(self):
        config = super().get_config()
        config.update(
            {
                "widths": list(self.widths),
                "activation": keras.activations.serialize(self.activation)
                if self.activation is not None
                else None,
                "use_bias": self.use_bias,
            }
        )
        return config
