"""Small weightless layers the model builders wire together (`keras.ops` only).

They are registered under the "hatt" package so that the functional models
that use them reload from `.keras` after `import hatt`. They exist because a
functional graph needs a layer for every step: computing padding masks from
ids, folding `[batch, S, W]` into `[batch * S, W]` and back (`keras.ops.reshape`
drops Keras masks, so masks are computed from the ids and passed explicitly),
and masked max- and mean-over-time pooling.
"""

import contextlib
import threading

import keras
from keras import ops

from hatt.layers import ContextAttention
from hatt.layers._masking import large_negative, to_bool_mask
from hatt.models import _checks


@keras.saving.register_keras_serializable(package="hatt")
class PaddingMask(keras.layers.Layer):
    """Bool mask of the non-padding ids (`id != 0`).

    With `reduce_last=True` the last axis is reduced with "any": for
    `[batch, S, W]` ids this gives the `[batch, S]` mask of the sentences that
    hold at least one word.

    Args:
        reduce_last: Bool, whether to reduce the last axis with "any".
            Defaults to `False`.
        **kwargs: Base layer keyword arguments, such as `name`.

    Call arguments:
        inputs: Integer ids of any rank; 0 is padding.

    Returns:
        A bool tensor shaped like `inputs` (without its last axis when
        `reduce_last=True`).
    """

    def __init__(self, reduce_last=False, **kwargs):
        super().__init__(**kwargs)
        self.reduce_last = reduce_last

    def call(self, inputs):
        mask = ops.not_equal(inputs, 0)
        if self.reduce_last:
            mask = ops.any(mask, axis=-1)
        return mask

    def compute_output_spec(self, inputs):
        shape = inputs.shape[:-1] if self.reduce_last else inputs.shape
        return keras.KerasTensor(shape, dtype="bool")

    def get_config(self):
        config = super().get_config()
        config.update({"reduce_last": self.reduce_last})
        return config


@keras.saving.register_keras_serializable(package="hatt")
class EncoderMask(keras.layers.Layer):
    """Right-padded mask for an RNN: every step up to the last kept one, and step 0.

    cuDNN's RNN kernels accept only right-padded masks and reject rows with no
    kept step (tensorflow#43103; Keras then fails an assertion instead of
    falling back). This layer turns a padding mask into one they accept: a
    step is kept when it is at or before the row's last kept step, and step 0
    is always kept, so an empty review or sentence runs one step over
    padding. The attention that pools the RNN's output must use the true
    padding mask, which gives those steps zero weight, so the result does not
    depend on them. The same mask is used on every device, so CPU and GPU
    compute the same function.

    Call arguments:
        inputs: Mask of shape `[batch, T]`, bool or 0/1.

    Returns:
        A bool tensor of shape `[batch, T]`.
    """

    def call(self, inputs):
        mask = ops.cast(to_bool_mask(inputs), "int32")
        # A step is kept when a kept step lies at or after it (a reverse cumulative sum:
        # no max, so an empty batch or a zero-length row needs no special case), and
        # step 0 always is.
        later = ops.flip(ops.cumsum(ops.flip(mask, axis=1), axis=1), axis=1)
        first = ops.equal(ops.arange(ops.shape(mask)[1], dtype="int32")[None, :], 0)
        return ops.logical_or(ops.greater(later, 0), first)

    def compute_output_spec(self, inputs):
        return keras.KerasTensor(inputs.shape, dtype="bool")


_PLAIN = threading.local()  # plain_recurrences' switch, per thread (a trace runs in one)


@contextlib.contextmanager
def plain_recurrences():
    """Inside, every `LengthGroupedBidirectional` runs (and traces) as the plain layer.

    For the explanations' gradients: grouped, their graph holds a forward and
    a backward recurrence per group, which made a tiny HAN's SavedModel 2.5
    times slower to write (53 against 21 s), its first explanation after
    loading 20 against 7.6 s, and a traced explanation no faster (an
    explanation's batch is one review's copies). The outputs are the same.

    Example:

    >>> with plain_recurrences():
    ...     outputs = model(ids)  # the word encoder as one batch
    """
    before = getattr(_PLAIN, "on", False)
    _PLAIN.on = True
    try:
        yield
    finally:
        _PLAIN.on = before


@keras.saving.register_keras_serializable(package="hatt")
class LengthGroupedBidirectional(keras.layers.Bidirectional):
    """`Bidirectional` that, at inference, runs its RNNs over rows grouped by length.

    The HAN's word encoder sees `[batch * S, W]` rows, most of them padding
    (on IMDB about 15 % of the cells hold a word). At inference (`training`
    not `True`) with a mask, the rows are sorted by length (the last kept
    step + 1), cut into `groups` runs of equal size (at least `min_rows`
    rows each), and each run is encoded as one batch trimmed to its longest
    row; the outputs are padded back and put back in the rows' order. Every
    row goes through the same two RNNs under its own mask, and `Bidirectional`
    returns zeros at masked steps, so the output equals the plain layer's
    (to float rounding) while the work follows the real lengths. In
    training, and inside `plain_recurrences()` (the explanations), it is the
    plain `Bidirectional` (one batch; cuDNN on a GPU).
    The weights are the plain layer's, in the same order.

    Args:
        layer: The RNN layer (`return_sequences=True`), as for
            `keras.layers.Bidirectional`.
        groups: Positive int, the number of length groups. Defaults to `8`.
        min_rows: Positive int, the fewest rows a group holds (a small
            batch runs as fewer groups, one review's sentences as one).
            Defaults to `32`.
        **kwargs: `keras.layers.Bidirectional` keyword arguments
            (`merge_mode`, `backward_layer`, `name`, ...).

    Call arguments:
        sequences: Float tensor `[batch, T, d]`.
        mask: Optional tensor `[batch, T]` (bool or 0/1).
        training: Python bool; grouping happens only when it is not `True`.
        initial_state: As for `keras.layers.Bidirectional` (then no
            grouping).

    Returns:
        As `keras.layers.Bidirectional`: `[batch, T, 2 * units]` for the
        default `merge_mode="concat"`.
    """

    def __init__(self, layer, groups=8, min_rows=32, **kwargs):
        _checks.check_positive_int("groups", groups)
        _checks.check_positive_int("min_rows", min_rows)
        super().__init__(layer, **kwargs)
        self.groups = groups
        self.min_rows = min_rows

    def call(self, sequences, initial_state=None, mask=None, training=None):
        plain = (
            training
            or getattr(_PLAIN, "on", False)
            or mask is None
            or initial_state is not None
            or self.return_state
            or not self.return_sequences
        )
        if plain:
            return super().call(
                sequences, initial_state=initial_state, mask=mask, training=training
            )
        mask = to_bool_mask(mask)
        order, lengths = _rows_by_length(mask)
        rows = ops.shape(sequences)[0]
        size = ops.maximum(-(-rows // self.groups), self.min_rows)  # rows a group
        outputs = []
        for group in range(self.groups):
            start = ops.minimum(group * size, rows)
            count = ops.minimum(start + size, rows) - start
            members = ops.slice(order, [start], [count])
            # the group's longest row (1 for an empty group)
            width = ops.max(ops.slice(lengths, [start], [count]), initial=1)
            outputs.append(self._encode_rows(sequences, mask, members, width, training))
        grouped = ops.concatenate(outputs, axis=0)  # the rows in `order`
        return ops.take(grouped, ops.argsort(order), axis=0)

    def _encode_rows(self, sequences, mask, members, width, training):
        """The plain layer's output for the rows `members`, run `width` steps, padded back."""
        count = ops.shape(members)[0]
        x = ops.take(sequences, members, axis=0)[:, :width]
        m = ops.take(mask, members, axis=0)[:, :width]
        # An empty group runs one one-step row (an RNN refuses a batch of none), dropped after.
        missing = 1 - ops.minimum(count, 1)
        x = ops.pad(x, ((0, missing), (0, 0), (0, 0)))
        m = ops.pad(m, ((0, missing), (0, 0)), constant_values=True)
        y = super().call(x, mask=m, training=training)[:count]
        return ops.pad(y, ((0, 0), (0, ops.shape(sequences)[1] - width), (0, 0)))

    def get_config(self):
        config = super().get_config()
        config.update({"groups": self.groups, "min_rows": self.min_rows})
        return config


def _rows_by_length(mask):
    """Row order by length, ascending, and the lengths (last kept step + 1) in that order."""
    steps = ops.arange(1, ops.shape(mask)[1] + 1, dtype="int32")[None, :]
    lengths = ops.max(ops.where(mask, steps, 0), axis=1, initial=0)
    order = ops.argsort(lengths)
    return order, ops.take(lengths, order)


@keras.saving.register_keras_serializable(package="hatt")
class FoldSentences(keras.layers.Layer):
    """Fold the first two axes together: `[batch, S, ...]` → `[batch * S, ...]`.

    Used to run the HAN's word encoder over all sentences of a batch at once
    (no Python loop, no `TimeDistributed`). The output carries no mask.

    Call arguments:
        inputs: Tensor of rank 3 or more.

    Returns:
        The same values, shaped `[batch * S, ...]`.
    """

    def call(self, inputs):
        shape = ops.shape(inputs)
        return ops.reshape(inputs, (-1, *shape[2:]))

    def compute_mask(self, inputs, mask=None):
        return None

    def compute_output_spec(self, inputs):
        batch, sentences = inputs.shape[0], inputs.shape[1]
        folded = None if batch is None or sentences is None else batch * sentences
        return keras.KerasTensor((folded, *inputs.shape[2:]), dtype=inputs.dtype)


@keras.saving.register_keras_serializable(package="hatt")
class UnfoldSentences(keras.layers.Layer):
    """Undo `FoldSentences`: `[batch * S, ...]` → `[batch, S, ...]`.

    `batch` and `S` are read from a reference tensor (the `[batch, S, W]`
    ids). The output carries no mask: pass the sentence mask explicitly to
    the layers that follow.

    Call arguments:
        inputs: List `[folded, reference]`: `folded` of shape
            `[batch * S, ...]`, `reference` of shape `[batch, S, ...]`.

    Returns:
        `folded` reshaped to `[batch, S, ...]`.
    """

    def call(self, inputs):
        folded, reference = inputs
        batch_and_sentences = ops.shape(reference)[:2]
        return ops.reshape(folded, (*batch_and_sentences, *ops.shape(folded)[1:]))

    def compute_mask(self, inputs, mask=None):
        return None

    def compute_output_spec(self, inputs):
        folded, reference = inputs
        return keras.KerasTensor((*reference.shape[:2], *folded.shape[1:]), dtype=folded.dtype)


@keras.saving.register_keras_serializable(package="hatt")
class ApplyMask(keras.layers.Layer):
    """Zero the masked steps of a `[batch, T, d]` tensor.

    Convolutions ignore Keras masks; zeroing the padded embeddings makes a
    `padding="same"` convolution see the same zeros at the end of a review
    whether the batch is padded further or not.

    Call arguments:
        inputs: Float tensor of shape `[batch, T, d]`.
        mask: Tensor of shape `[batch, T]`, bool or 0/1.

    Returns:
        `inputs` with masked steps set to 0; the output carries no mask.
    """

    def call(self, inputs, mask=None):
        if mask is None:
            return inputs
        mask = to_bool_mask(mask)
        return ops.where(mask[:, :, None], inputs, ops.zeros_like(inputs))

    def compute_mask(self, inputs, mask=None):
        return None

    def compute_output_shape(self, input_shape):
        return tuple(input_shape)


@keras.saving.register_keras_serializable(package="hatt")
class MaxOverTime(keras.layers.Layer):
    """Max-over-time pooling that ignores masked steps (Collobert et al.; Kim 2014).

    Masked steps are pushed to a dtype-aware large negative value before the
    maximum; a row with no kept step gives a zero vector.

    With `return_attention_scores=True` the layer also returns, for every
    step, the share of feature channels whose maximum lies at that step: a
    `[batch, T]` distribution that sums to 1 over the kept steps (0 on
    padding, all zeros for an empty row). It is the max-pooling analogue of
    attention weights: how much of the pooled vector each step supplied.

    Call arguments:
        inputs: Float tensor of shape `[batch, T, d]`.
        mask: Optional tensor of shape `[batch, T]`, bool or 0/1.
        return_attention_scores: Bool. Defaults to `False`.

    Returns:
        `output` of shape `[batch, d]`, or `(output, weights)` with `weights`
        of shape `[batch, T]`.
    """

    def call(self, inputs, mask=None, return_attention_scores=False):
        mask = to_bool_mask(mask)
        if mask is None:
            mask = ops.ones(ops.shape(inputs)[:2], dtype="bool")
        keep = mask[:, :, None]
        low = ops.cast(large_negative(inputs.dtype), inputs.dtype)
        masked = ops.where(keep, inputs, low)
        has_step = ops.any(mask, axis=1, keepdims=True)  # [batch, 1]
        # One extra step at `low` after the last: an empty batch or a zero-length input
        # then still has a maximum and an argmax to take (empty in, empty or zeros out);
        # rows without a kept step give zeros, and the extra step is never a winner's.
        extra = ops.zeros_like(ops.sum(masked, axis=1, keepdims=True)) + low  # [batch, 1, d]
        extended = ops.concatenate([masked, extra], axis=1)
        # The maximum read at the argmax: keras.ops.max refuses an empty batch.
        winner = ops.argmax(extended, axis=1)  # [batch, d]
        maximum = ops.take_along_axis(extended, winner[:, None, :], axis=1)[:, 0, :]
        outputs = ops.where(has_step, maximum, ops.zeros_like(maximum))
        if not return_attention_scores:
            return outputs
        steps = ops.shape(inputs)[1]
        winners = ops.one_hot(winner, steps + 1, axis=1, dtype=inputs.dtype)
        winners = winners[:, :steps]
        weights = ops.mean(winners, axis=2)  # [batch, T]
        weights = ops.where(ops.logical_and(mask, has_step), weights, ops.zeros_like(weights))
        return outputs, weights

    def compute_mask(self, inputs, mask=None):
        return None

    def compute_output_spec(self, inputs, mask=None, return_attention_scores=False):
        output = keras.KerasTensor((inputs.shape[0], inputs.shape[2]), dtype=self.compute_dtype)
        if not return_attention_scores:
            return output
        weights = keras.KerasTensor(inputs.shape[:2], dtype=self.compute_dtype)
        return output, weights


@keras.saving.register_keras_serializable(package="hatt")
class MeanOverTime(keras.layers.Layer):
    """Mean over the kept steps (the mean part of ULMFiT's concat pooling).

    A row with no kept step gives a zero vector (never a division by zero).

    Call arguments:
        inputs: Float tensor of shape `[batch, T, d]`.
        mask: Optional tensor of shape `[batch, T]`, bool or 0/1.

    Returns:
        Tensor of shape `[batch, d]`.
    """

    def call(self, inputs, mask=None):
        mask = to_bool_mask(mask)
        if mask is None:
            mask = ops.ones(ops.shape(inputs)[:2], dtype="bool")
        keep = ops.cast(mask, inputs.dtype)[:, :, None]
        total = ops.sum(inputs * keep, axis=1)
        count = ops.sum(keep, axis=1)
        return total / ops.maximum(count, ops.ones_like(count))

    def compute_mask(self, inputs, mask=None):
        return None

    def compute_output_shape(self, input_shape):
        return (input_shape[0], input_shape[2])


@keras.saving.register_keras_serializable(package="hatt")
class GatherSentences(keras.layers.Layer):
    """Place packed sentence rows into their review slots: `[batch, S, ...]`.

    The packed nested layout (`hatt.data.pack_sentences`) holds a batch's
    sentences in groups of similar length; `sentence_index[b, s]` is `0` for
    an empty slot and `i + 1` for row `i` of the groups concatenated in
    order. This layer concatenates the groups' per-sentence tensors along
    the first axis (padding their second axis, if any, to the widest group),
    prepends a zero row for the empty slots, and gathers.

    Call arguments:
        inputs: List `[sentence_index, rows_0, rows_1, ...]`:
            `sentence_index` int `[batch, S]`, `rows_k` of shape
            `[N_k, ...]` (all of the same rank).

    Returns:
        A tensor of shape `[batch, S, ...]`; zero where `sentence_index` is 0.
        It carries no mask.
    """

    def call(self, inputs):
        index, *groups = inputs
        if len(groups[0].shape) == 2:  # e.g. word weights [N_k, W_k]: pad to the widest W
            width = ops.max(ops.stack([ops.shape(g)[1] for g in groups]))
            groups = [ops.pad(g, ((0, 0), (0, width - ops.shape(g)[1]))) for g in groups]
        rows = ops.concatenate(groups, axis=0)
        rows = ops.concatenate([ops.zeros_like(rows[:1]), rows], axis=0)
        return ops.take(rows, ops.cast(index, "int32"), axis=0)

    def compute_mask(self, inputs, mask=None):
        return None

    def compute_output_spec(self, inputs):
        index, *groups = inputs
        rest = groups[0].shape[1:]
        if len(rest) == 1:
            widths = {g.shape[1] for g in groups}
            rest = (widths.pop() if len(widths) == 1 else None,)
        return keras.KerasTensor((*index.shape[:2], *rest), dtype=groups[0].dtype)


CONCAT_POOLINGS = ("attention", "max", "mean")


class ConcatPooling:
    """Attention pooling, optionally concatenated with masked max and mean over time.

    Not a layer: a recipe the builders call once per use, so that the
    attention keeps its name (`"word_attention"`, what `hatt inspect` reads)
    and the weightless max and mean layers are shared across calls (the
    HAN's word level runs once per sentence group). With `pooling=
    ("attention",)` it is the attention alone and adds no layer.

    Args:
        pooling: Distinct names from `"attention"`, `"max"`, `"mean"`, with
            `"attention"` among them; a string is one name. The pooled
            vectors are concatenated in this order.
        attention: The `ContextAttention` layer.
        prefix: Prefix of the added layers' names (`"max_pool"`,
            `"mean_pool"`, `"pooled"`).

    Call arguments:
        states: Float tensor `[batch, T, d]`.
        mask: Bool tensor `[batch, T]`.

    Returns:
        `[batch, d * len(pooling)]`.
    """

    def __init__(self, pooling, attention, prefix=""):
        self.pooling = check_concat_pooling(pooling)
        self.attention = attention
        others = {"max": MaxOverTime, "mean": MeanOverTime}
        self.others = {
            part: others[part](name=f"{prefix}{part}_pool")
            for part in self.pooling
            if part != "attention"
        }
        self.concatenate = (
            keras.layers.Concatenate(name=f"{prefix}pooled") if len(self.pooling) > 1 else None
        )

    def __call__(self, states, mask):
        pooled = {"attention": self.attention(states, mask=mask, return_attention_scores=True)[0]}
        pooled.update({part: layer(states, mask=mask) for part, layer in self.others.items()})
        if self.concatenate is None:
            return pooled["attention"]
        return self.concatenate([pooled[part] for part in self.pooling])


def check_concat_pooling(pooling):
    """`pooling` as a tuple of distinct known names holding `"attention"`, or `ValueError`."""
    parts = (pooling,) if isinstance(pooling, str) else tuple(pooling)
    if "attention" not in parts or len(set(parts)) != len(parts):
        raise ValueError(
            f"Expected pooling to hold 'attention' and no name twice. Received: pooling={parts!r}"
        )
    for part in parts:
        _checks.check_choice("pooling", part, CONCAT_POOLINGS)
    return parts


def pooling_attention(name, arguments, **kwargs):
    """The families' pooling `ContextAttention`, named `name`, from a builder's `arguments`.

    `arguments`: the builder's arguments by name; their `attention_units`,
    `attention_score`, `attention_normalizer`, `attention_temperature` and
    `attention_options` (the local-p / hard dict, or `None`) set the layer,
    each at the layer's default where the builder does not take it. `kwargs`
    go to the layer as well.
    """
    return ContextAttention(
        units=arguments["attention_units"],
        score=arguments["attention_score"],
        normalizer=arguments.get("attention_normalizer", "softmax"),
        temperature=arguments.get("attention_temperature", 1.0),
        name=name,
        **(arguments.get("attention_options") or {}),
        **kwargs,
    )
