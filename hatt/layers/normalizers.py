"""Masked attention normalizers: softmax, sparsemax and entmax-1.5 (``keras.ops`` only).

All three map logits `z` (over the last axis) to weights on the simplex and
share one masking contract: masked positions get exactly 0, a row whose
positions are all masked gets all-zero weights (never NaN), and the gradients
are finite everywhere, masked or padded values included.

- `softmax`: `p_i = exp(z_i) / sum_j exp(z_j)` (reuses `masked_softmax`).
- `sparsemax` (Martins & Astudillo 2016): `p = max(z - tau, 0)`, the
  Euclidean projection onto the simplex. Closed form: sort `z` descending,
  `k* = max{k : 1 + k z_(k) > sum_{j<=k} z_(j)}`,
  `tau = (sum_{j<=k*} z_(j) - 1) / k*`.
- `entmax15` (Peters et al. 2019, alpha = 1.5): with the usual
  `(alpha - 1) z = z / 2` scaling, `p_i = max(0, (z_i - tau) / 2)^2` with the
  threshold `tau` chosen so that `sum_i max(0, (z_i - tau) / 2)^2 = 1`. It is
  found exactly by the sort-based algorithm of Peters et al.: with
  `y = z / 2` sorted descending, for every `k`
  `mean_k = (1/k) sum_{j<=k} y_(j)`, `ms_k = (1/k) sum_{j<=k} y_(j)^2`,
  `t_k = mean_k - sqrt(max(0, (1 - k (ms_k - mean_k^2)) / k))`; the support
  size is `k* = #{k : t_k <= y_(k)}` and `tau = 2 t_{k*}`.

References:
    - [Martins & Astudillo, 2016. From Softmax to Sparsemax](
      https://arxiv.org/abs/1602.02068)
    - [Peters, Niculae & Martins, 2019. Sparse Sequence-to-Sequence Models](
      https://arxiv.org/abs/1905.05702)
"""

from keras import backend, ops

from hatt.layers._masking import masked_softmax

NORMALIZERS = ("softmax", "sparsemax", "entmax15")


def check_normalizer(normalizer):
    """Raise a `ValueError` naming `normalizer` unless it is one of `NORMALIZERS`."""
    if normalizer not in NORMALIZERS:
        raise ValueError(
            f"Expected normalizer to be one of {NORMALIZERS}. Received: normalizer={normalizer!r}"
        )
    return normalizer


def normalize(scores, mask=None, normalizer="softmax"):
    """Normalize `scores` over the last axis with the named normalizer.

    Args:
        scores: Float tensor of logits.
        mask: Optional bool tensor broadcastable to `scores`; `True` keeps a
            position.
        normalizer: One of `"softmax"`, `"sparsemax"`, `"entmax15"`.

    Returns:
        Weights shaped and typed like `scores`, summing to 1 over the unmasked
        positions of each row that has one, exactly 0 elsewhere.
    """
    check_normalizer(normalizer)
    if normalizer == "softmax":
        return masked_softmax(scores, mask)
    if normalizer == "sparsemax":
        return sparsemax(scores, mask)
    return entmax15(scores, mask)


def sparsemax(scores, mask=None):
    """Masked sparsemax over the last axis (closed form by sort + cumsum).

    Args:
        scores: Float tensor of logits.
        mask: Optional bool tensor broadcastable to `scores`.

    Returns:
        Weights shaped and typed like `scores`.
    """
    return _sort_based(scores, mask, _sparsemax_threshold, lambda y, tau: ops.relu(y - tau))


def entmax15(scores, mask=None):
    """Masked entmax-1.5 over the last axis (exact sort-based threshold).

    Between softmax and `sparsemax`: low scores get exactly 0, the others
    weights that fall off more gently than sparsemax's. The arguments and the
    result are `sparsemax`'s.
    """
    return _sort_based(
        scores / 2, mask, _entmax15_threshold, lambda y, tau: ops.square(ops.relu(y - tau))
    )


def _sort_based(scores, mask, threshold, weights_from):
    """Shared masking and sorting of the sort-based normalizers."""
    dtype = scores.dtype
    if scores.shape[-1] == 0:
        return ops.zeros_like(scores)
    values = ops.cast(scores, "float32")
    if mask is None:
        mask = ops.ones_like(values, dtype="bool")
    mask = ops.broadcast_to(mask, ops.shape(values))
    values = _fill_masked(values, mask)
    sorted_values = -ops.sort(-values, axis=-1)
    ranks = ops.cumsum(ops.ones_like(sorted_values), axis=-1)  # 1..n
    valid = ops.sum(ops.cast(mask, "float32"), axis=-1, keepdims=True)
    candidates = threshold(sorted_values, ranks)  # [..., n]: tau if the support were k
    in_support = ops.logical_and(candidates[1], ranks <= valid)
    size = ops.maximum(ops.sum(ops.cast(in_support, "int32"), axis=-1, keepdims=True), 1)
    tau = ops.take_along_axis(candidates[0], size - 1, axis=-1)
    weights = weights_from(values, tau)
    weights = ops.where(mask, weights, ops.zeros_like(weights))
    if backend.standardize_dtype(dtype) != "float32":
        weights = ops.cast(weights, dtype)
    return weights


def _fill_masked(values, mask):
    """Shift the unmasked values to max 0 and put masked ones 1 below their minimum.

    Every value stays finite (a NaN or huge value at a masked position never
    enters the sort, the sums or the gradients), and masked positions sort
    after every unmasked one.
    """
    values = ops.where(mask, values, ops.zeros_like(values))
    lowest = ops.min(values, axis=-1, keepdims=True)
    shift = ops.max(ops.where(mask, values, lowest), axis=-1, keepdims=True)
    values = values - ops.stop_gradient(shift)
    filler = ops.stop_gradient(ops.min(values, axis=-1, keepdims=True) - 1.0)
    return ops.where(mask, values, filler)


def _sparsemax_threshold(sorted_values, ranks):
    """Candidate thresholds `(cumsum_k - 1) / k` and the support test per `k`."""
    cumulative = ops.cumsum(sorted_values, axis=-1)
    return (cumulative - 1.0) / ranks, 1.0 + ranks * sorted_values > cumulative


def _entmax15_threshold(sorted_values, ranks):
    """Candidate thresholds `t_k` of Peters et al. and the test `t_k <= y_(k)`."""
    mean = ops.cumsum(sorted_values, axis=-1) / ranks
    mean_square = ops.cumsum(ops.square(sorted_values), axis=-1) / ranks
    delta = (1.0 - ranks * (mean_square - ops.square(mean))) / ranks
    # sqrt'(0) is inf and inf x 0 is NaN: take the root of 1 where delta <= 0.
    positive = delta > 0
    root = ops.where(positive, ops.sqrt(ops.where(positive, delta, ops.ones_like(delta))), 0.0)
    candidates = mean - root
    return candidates, candidates <= sorted_values
