"""Simple Recurrent Unit (Lei et al. 2017), written with ``keras.ops`` only."""

import keras
from keras import ops

from hatt.layers._checks import check_positive_int


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
    `keras.ops.scan` over `c_t` alone (`r_t` needs only `c_{t-1}`, so `r_t`
    and `h_t` are computed for all steps at once after it); it runs under
    every backend, in eager and in graph mode with an unknown time axis.

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

    CHUNK = 8  # steps a loop iteration runs

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
        check_positive_int("units", units)
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
        keep = _keep_mask(inputs, mask)  # [batch, T, 1] bool
        if self.go_backwards:  # everything below runs in the order of processing
            inputs, keep = ops.flip(inputs, axis=1), ops.flip(keep, axis=1)
        # Masked steps are zeroed before the product, so NaN there reaches no gradient,
        # and their projections are 0.
        inputs = ops.where(keep, inputs, ops.zeros_like(inputs))
        projected = ops.matmul(inputs, self.kernel)  # all steps at once
        n = self.units
        candidate = projected[..., :n]
        forget = projected[..., n : 2 * n] + self.bias[0]
        reset = projected[..., 2 * n : 3 * n] + self.bias[1]
        # skip: the inputs themselves (d == units) or their fourth projection
        skip = inputs if self.kernel.shape[1] == 3 * n else projected[..., 3 * n :]
        kept = ops.cast(keep, projected.dtype)
        initial = _initial_state(initial_state, ops.zeros_like(candidate[:, 0]))
        states = self._states(initial, forget, candidate, kept)  # c_1 .. c_T
        # r_t needs c_{t-1} only: computed for all steps at once, outside the loop
        previous = ops.concatenate([initial[:, None], states[:, :-1]], axis=1)
        reset = ops.sigmoid(reset + self.recurrent_kernel[1] * previous)
        outputs = (skip + reset * (states - skip)) * kept  # zeros at masked steps
        if self.return_sequences:
            return outputs
        # last kept output: h of the last unmasked step (zeros if none)
        return _last_kept(outputs, keep[..., 0])

    def _states(self, initial, forget, candidate, kept):
        """`c_t` of every step, `[batch, T, units]`: the only sequential part.

        With `1 - f_t = sigmoid(-(f~_t + b_f) - v_f c_{t-1})`, a step is
        `c_t = c_{t-1} + keep_t (1 - f_t) (x~_t - c_{t-1})`: ten element-wise
        ops, and a masked step (`keep_t = 0`) carries the state through. The
        scan runs over chunks of `CHUNK` steps (the time axis padded with
        masked steps), each chunk's steps written out in its body: a loop
        iteration costs far more than the element-wise work on a CPU. It
        scans one tensor, not a tuple: keras' TensorFlow scan fails in a graph
        whose time axis is unknown (variable-length batches) when given
        several (keras 3.15: `None.assert_is_compatible_with`).
        """
        n, chunk = self.units, self.CHUNK
        steps = ops.moveaxis(ops.concatenate([-forget, candidate, kept], axis=-1), 1, 0)
        length, batch = ops.shape(steps)[0], ops.shape(steps)[1]
        steps = ops.pad(steps, ((0, -length % chunk), (0, 0), (0, 0)))  # kept = 0 there
        chunks = ops.reshape(steps, (-1, chunk, batch, 2 * n + 1))
        minus_v_f = -self.recurrent_kernel[0]

        def run_chunk(carry, x):
            # keras' scan wants the outputs shaped as the carry: both are the chunk's c_t
            state, states = carry[-1], []
            for x_t in ops.unstack(x, num=chunk, axis=0):
                one_minus_f = ops.sigmoid(x_t[:, :n] + minus_v_f * state)
                state = state + x_t[:, 2 * n :] * one_minus_f * (x_t[:, n : 2 * n] - state)
                states.append(state)
            states = ops.stack(states)
            return states, states

        start = ops.repeat(initial[None], chunk, axis=0)
        _, states = ops.scan(run_chunk, start, chunks)
        states = ops.reshape(states, (-1, batch, n))[:length]
        return ops.moveaxis(states, 0, 1)

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


def _keep_mask(inputs, mask):
    """The `[batch, T, 1]` bool mask of the kept steps (all when `mask` is `None`)."""
    if mask is None:
        return ops.ones_like(inputs[..., :1], dtype="bool")
    return ops.cast(mask, "bool")[..., None]


def _initial_state(initial_state, zeros):
    """`c_0`: `zeros`, or the state `Bidirectional` passes (a one-element list)."""
    if initial_state is None:
        return zeros
    if isinstance(initial_state, (list, tuple)):
        (initial_state,) = initial_state
    return ops.convert_to_tensor(initial_state, dtype=zeros.dtype)


def _last_kept(outputs, keep):
    """`outputs[b, t_b]` at the last kept step `t_b` of each row; zeros if none."""
    keep = ops.cast(keep, "int32")
    positions = ops.cumsum(ops.ones_like(keep), axis=1) * keep  # t+1 where kept
    last = ops.max(positions, axis=1)  # 0 when nothing kept
    index = ops.maximum(last - 1, 0)[:, None, None]
    picked = ops.take_along_axis(outputs, index, axis=1)[:, 0]
    return ops.where((last > 0)[:, None], picked, ops.zeros_like(picked))
