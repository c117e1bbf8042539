"""Private helpers shared by the layers: masks (``keras.ops`` only) and the input check."""

from keras import backend, ops


def large_negative(dtype):
    """Return a large negative logit that is finite in `dtype`.

    `-1e9` overflows float16 (its largest finite value is 65504), so float16
    gets `-3e4`, the value `keras.layers.Softmax` uses; bfloat16 and the
    wider floats share float32's exponent range and get `-1e9`.
    """
    if backend.standardize_dtype(dtype) == "float16":
        return -3e4
    return -1e9


def to_bool_mask(mask):
    """Return `mask` as a bool tensor: bool passes, numbers are `> 0.5`."""
    if mask is None:
        return None
    mask = ops.convert_to_tensor(mask)
    if backend.standardize_dtype(mask.dtype) == "bool":
        return mask
    return ops.greater(ops.cast(mask, "float32"), 0.5)


def masked_softmax(scores, mask=None, axis=-1):
    """Softmax over `axis` that gives masked positions exactly zero weight.

    Masked logits are replaced by a dtype-aware large negative value, the
    logits are shifted by their maximum, and after the softmax the masked
    positions are set to 0 again. A row whose positions are all masked thus
    gets all-zero weights (never NaN, never a uniform spread over padding).
    Empty in, empty out: a zero-sized `scores` gives zero-sized weights.

    Args:
        scores: float tensor of logits.
        mask: optional bool tensor broadcastable to `scores`; `True` keeps a
            position.
        axis: the axis to normalize over.

    Returns:
        A tensor shaped and typed like `scores`.
    """
    if mask is not None:
        scores = ops.where(mask, scores, ops.cast(large_negative(scores.dtype), scores.dtype))
    # The max-shift makes exp() safe whatever the magnitude of the logits;
    # it does not change the result, so no gradient needs to flow through it.
    # `initial=-inf` (the identity of max) lets an empty batch or a zero-length
    # axis through: without it keras.ops.max raises on an empty tensor.
    shift = ops.max(scores, axis=axis, keepdims=True, initial=float("-inf"))
    scores = scores - ops.stop_gradient(ops.cast(shift, scores.dtype))
    # exp / sum rather than ops.softmax: the latter warns on every call whose axis
    # has size 1 (a one-word sentence, a one-sentence review), where 1 is right.
    exponentials = ops.exp(scores)
    weights = exponentials / ops.sum(exponentials, axis=axis, keepdims=True)
    if mask is not None:
        weights = ops.where(mask, weights, ops.zeros_like(weights))
    return weights


def input_width(layer, input_shape, axis="d"):
    """Return the last axis of `[batch, T, axis]` inputs, as `build` receives their shape.

    Raises a `ValueError` naming `layer` (its class name) when the rank is not 3 or the
    last axis is undefined (the weights are shaped by it).
    """
    if len(input_shape) != 3:
        raise ValueError(
            f"Expected inputs to {layer} to have rank 3 "
            f"([batch, T, {axis}]). Received: input_shape={tuple(input_shape)}"
        )
    if input_shape[-1] is None:
        raise ValueError(
            f"Expected the last axis ({axis}) of the inputs to {layer} to be "
            f"defined. Received: input_shape={tuple(input_shape)}"
        )
    return input_shape[-1]
