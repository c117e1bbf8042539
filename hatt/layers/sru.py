"""Simple Recurrent Unit (Lei et al. 2017), written with ``keras.ops`` only."""

import keras
from keras import ops


@keras.saving.register_keras_serializable(package="hatt")
class SRU(keras.layers.Layer):
    """Simple Recurrent Unit: every matrix product outside the recurrence.

    For inputs `x_t` the three projections of all steps are computed at once,
    `[x~_t, f~_t, r~_t] = x_t W` (`W` is `[d, 3 units]`), and only
    element-wise work remains in the loop (Lei et al. 2017):

        f_t = sigmoid(f~_t + v_f * c_{t-1} + b_f)
        r_t = sigmoid(r~_t + v_r * c_{t-1} + b_r)
        c_t = f_t * c_{t-1} + (1 - f_t) * x~_t
        h_t = r_t * c_t + (1 - r_t) * skip(x_t)

    where `skip(x_t) = x_t` when `d == units` and `x_t W_s` (a fourth
    projection, also computed for all steps at once) otherwise. The loop is
    `keras.ops.scan`, so it runs under every backend.

    Masking: a masked step carries the state through (`c_t = c_{t-1}`) and
    outputs zeros; its inputs (even NaN) reach neither the state nor the
    gradients. The output sequence carries the input mask. Works inside
    `keras.layers.Bidirectional` (`go_backwards` reverses the time axis, and
    the backward copy is rebuilt from `get_config`).

    Args:
        units: Positive int, size of the state and of the outputs.
        return_sequences: Bool; `True` returns every step's `h_t`, `False`
            only the last unmasked one. Defaults to `True`.
        go_backwards: Bool; process the sequence backwards (the outputs are
            then in reverse time order, as Keras RNNs do). Defaults to
            `False`.
        kernel_initializer: Initializer of `W` (and `W_s`).
        recurrent_initializer: Initializer of `v_f`, `v_r`.
        bias_initializer: Initializer of `b_f`, `b_r`.
        **kwargs: Base layer keyword arguments, such as `name` and `dtype`.

    Call arguments:
        inputs: Float tensor of shape `[batch, T, d]`.
        mask: Optional `[batch, T]` tensor (bool or 0/1); `True` keeps a step.
            Defaults to the mask Keras propagates.
        initial_state: Optional `[batch, units]` initial `c_0`; zeros when
            `None` (accepted so that `Bidirectional` can call the layer).

    Returns:
        `[batch, T, units]` when `return_sequences`, else `[batch, units]`.

    Example:

    >>> tokens = keras.Input(shape=(None,), dtype="int32")
    >>> x = keras.layers.Embedding(1000, 32, mask_zero=True)(tokens)
    >>> x = keras.layers.Bidirectional(hatt.layers.SRU(16))(x)
    >>> x.shape
    (None, None, 32)

    References:
        - [Lei et al., 2017. Simple Recurrent Units for Highly Parallelizable
          Recurrence](https://arxiv.org/abs/1709.02755)
    """

    def __init__(
        self,
        units,
        return_sequences=True,
        go_backwards=False,
        kernel_initializer="glorot_uniform",
        recurrent_initializer="glorot_uniform",
        bias_initializer="zeros",
        **kwargs,
    ):
        kwargs.pop("return_state", None)
        kwargs.pop("stateful", None)
        super().__init__(**kwargs)
        if not isinstance(units, int) or isinstance(units, bool) or units <= 0:
            raise ValueError(f"Expected units to be a positive int. Received: units={units!r}")
        self.units = units
        self.return_sequences = bool(return_sequences)
        self.go_backwards = bool(go_backwards)
        self.return_state = False
        self.stateful = False
        self.kernel_initializer = keras.initializers.get(kernel_initializer)
        self.recurrent_initializer = keras.initializers.get(recurrent_initializer)
        self.bias_initializer = keras.initializers.get(bias_initializer)
        self.supports_masking = True

    def build(self, input_shape):
        if len(input_shape) != 3 or input_shape[-1] is None:
            raise ValueError(
                "Expected inputs to SRU to have shape [batch, T, d] with d defined. "
                f"Received: input_shape={tuple(input_shape)}"
            )
        feature_dim = input_shape[-1]
        projections = 3 if feature_dim == self.units else 4
        self.kernel = self.add_weight(
            name="kernel",
            shape=(feature_dim, projections * self.units),
            initializer=self.kernel_initializer,
        )
        self.recurrent_kernel = self.add_weight(
            name="recurrent_kernel", shape=(2, self.units), initializer=self.recurrent_initializer
        )
        self.bias = self.add_weight(
            name="bias", shape=(2, self.units), initializer=self.bias_initializer
        )

    def call(self, inputs, mask=None, training=None, initial_state=None):
        projected = ops.matmul(inputs, self.kernel)  # all steps at once
        candidate, forget, reset = (
            projected[..., : self.units],
            projected[..., self.units : 2 * self.units],
            projected[..., 2 * self.units : 3 * self.units],
        )
        skip = (
            inputs if self.kernel.shape[1] == 3 * self.units else projected[..., 3 * self.units :]
        )
        keep = ops.ones_like(inputs[..., :1], dtype="bool") if mask is None else mask[..., None]
        if mask is not None:
            keep = ops.cast(keep, "bool")
        steps = [ops.moveaxis(t, 1, 0) for t in (candidate, forget, reset, skip)]
        keep = ops.moveaxis(keep, 1, 0)
        if self.go_backwards:
            steps = [ops.flip(t, axis=0) for t in steps]
            keep = ops.flip(keep, axis=0)
        steps = [ops.where(keep, t, ops.zeros_like(t)) for t in steps]
        v_f, v_r = self.recurrent_kernel[0], self.recurrent_kernel[1]
        b_f, b_r = self.bias[0], self.bias[1]

        def step(state, xs):
            x_c, x_f, x_r, x_s, kept = xs
            f = ops.sigmoid(x_f + v_f * state + b_f)
            r = ops.sigmoid(x_r + v_r * state + b_r)
            new = f * state + (1.0 - f) * x_c
            new = ops.where(kept, new, state)
            out = r * new + (1.0 - r) * x_s
            return new, ops.where(kept, out, ops.zeros_like(out))

        initial = ops.zeros_like(steps[0][0]) if initial_state is None else initial_state
        last, outputs = ops.scan(step, initial, (*steps, keep))
        outputs = ops.moveaxis(outputs, 0, 1)
        if self.return_sequences:
            return outputs
        # last kept output: h of the last unmasked step (zeros if none)
        return _last_kept(outputs, ops.moveaxis(keep, 0, 1)[..., 0])

    def compute_mask(self, inputs, mask=None):
        return mask if self.return_sequences else None

    def compute_output_shape(self, input_shape):
        if self.return_sequences:
            return (input_shape[0], input_shape[1], self.units)
        return (input_shape[0], self.units)

    def get_config(self):
        config = super().get_config()
        config.update(
            {
                "units": self.units,
                "return_sequences": self.return_sequences,
                "go_backwards": self.go_backwards,
                "kernel_initializer": keras.initializers.serialize(self.kernel_initializer),
                "recurrent_initializer": keras.initializers.serialize(self.recurrent_initializer),
                "bias_initializer": keras.initializers.serialize(self.bias_initializer),
            }
        )
        return config


def _last_kept(outputs, keep):
    """`outputs[b, t_b]` at the last kept step `t_b` of each row; zeros if none."""
    keep = ops.cast(keep, "int32")
    positions = ops.cumsum(ops.ones_like(keep), axis=1) * keep  # t+1 where kept
    last = ops.max(positions, axis=1)  # 0 when nothing kept
    index = ops.maximum(last - 1, 0)[:, None, None]
    picked = ops.take_along_axis(outputs, index, axis=1)[:, 0]
    return ops.where((last > 0)[:, None], picked, ops.zeros_like(picked))
