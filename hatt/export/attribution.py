"""Signed word attributions: gradient × input, integrated gradients, the n-gram channel's share.

The math behind :meth:`hatt.export.TextModel.explain` (THE text → explanations
path; ``hatt.inspect``, the server and the SavedModel's ``explain`` signature
all read its output). Each function works on the tensors of a classifier's
:class:`hatt.models.ExplanationView`; none of them knows about text.

Methods (:data:`METHODS`, in this order everywhere):

- ``"attention"``: the model's own attention weights (unsigned; only for
  models whose words are pooled by ``ContextAttention``);
- ``"gradient_x_input"``: per token ``Σ_d ∂z_c/∂e_td · e_td`` (signed, raw),
  ``e`` the word embedding's output, ``z_c`` the explained class's logit;
- ``"integrated_gradients"``: per token ``e_td · ∫_0^1 ∂z_c/∂e_td(α e) dα``
  summed over ``d`` (Sundararajan et al. 2017), from the zero embedding (the
  ids, hence the masks and the n-gram channel, unchanged) to ``e``; by
  completeness the tokens' scores sum to ``z_c(e) - z_c(0)`` up to the
  quadrature error (:func:`integrated_gradients` reports both);
- ``"ngram"``: the n-gram channel's exact share of ``z_c`` per token
  (:meth:`hatt.layers.NgramLogit.token_contributions`).

Two classes (one sigmoid logit ``z``): ``z_1 = z`` and ``z_0 = -z``, so a
positive score always argues for the explained class (:func:`class_values`).

References:
    - [Sundararajan et al., 2017. Axiomatic Attribution for Deep
      Networks](https://arxiv.org/abs/1703.01365)
"""

import numpy as np
import tensorflow as tf
from keras import ops

from hatt import names

METHODS = names.METHODS
SIGNED_METHODS = names.SIGNED_METHODS  # their scores argue for (+) or against (-) the class

# Gauss-Legendre nodes on [0, 1]. The completeness error of integrated gradients stays
# under 5 % at this many on every one of 256 IMDB test reviews explained by the trained
# CNN (ReLU and max pooling: the roughest of the families along the path; median 0.1 %,
# p95 0.8 %, max 4.3 %; at 32 steps the p99 was 5.8 %). The trained HAN is smooth: 1e-5.
DEFAULT_STEPS = 64
# At most this many embedding values a pass (4 MB): the points of the path run in chunks
# of as many copies of the batch as fit, so memory stays bounded whatever `steps` is.
# (16 reviews of 781 tokens, the trained CNN: 2**20 took 5.7 s, 2**22 6.9 s, 2**24 7.6 s.)
CHUNK_ELEMENTS = 2**20


# The quadrature's nodes come from an eigenvalue problem of size steps x steps (NumPy's
# leggauss): 100,000 steps asked for 74.5 GiB before any review ran (issue 33, item 11).
# Past 1,024 nodes nothing is gained: the completeness error is 1e-5 at 64 on the HAN.
MAX_STEPS = 1024


def check_steps(steps):
    """``steps`` as an int (``None``: :data:`DEFAULT_STEPS`); ``ValueError`` unless in
    ``[1, MAX_STEPS]``."""
    if steps is None:
        return DEFAULT_STEPS
    if isinstance(steps, bool) or not isinstance(steps, int | np.integer) or steps < 1:
        raise ValueError(f"Expected steps to be a positive int. Received: steps={steps!r}")
    if steps > MAX_STEPS:
        raise ValueError(
            f"Expected steps <= {MAX_STEPS} (the quadrature's nodes need steps x steps "
            f"memory; {DEFAULT_STEPS} already keep the completeness error small). "
            f"Received: steps={steps!r}"
        )
    return int(steps)


def quadrature(steps):
    """Nodes ``α`` and weights of the ``steps``-point Gauss-Legendre rule on ``[0, 1]``.

    Exact for polynomials of degree ``2 * steps - 1``; the weights sum to 1.

    Returns:
        ``(alphas, weights)``: float32 NumPy arrays ``[steps]``.
    """
    nodes, weights = np.polynomial.legendre.leggauss(check_steps(steps))
    return ((nodes + 1) / 2).astype("float32"), (weights / 2).astype("float32")


def predicted_class(probabilities):
    """The explained class of each row: the argmax of ``probabilities`` ``[batch, C]`` (int32)."""
    return ops.cast(ops.argmax(probabilities, axis=-1), "int32")


def class_values(values, target):
    """Class ``target``'s values: ``[batch, ..., units]`` → ``[batch, ...]``.

    With one unit (two classes, a sigmoid logit ``z``) class 1 gets ``z`` and
    class 0 gets ``-z``; with more, the ``target``-th unit.

    Args:
        values: float ``[batch, ..., units]`` (logits, or per-token shares of
            them).
        target: int ``[batch]``, each row's class.
    """
    target = ops.cast(target, "int32")
    extra = len(values.shape) - 2
    if values.shape[-1] == 1:
        sign = ops.cast(2 * target - 1, values.dtype)
        return values[..., 0] * ops.reshape(sign, (-1,) + (1,) * extra)
    chosen = ops.one_hot(target, values.shape[-1], dtype=values.dtype)
    return ops.sum(values * ops.reshape(chosen, (-1,) + (1,) * extra + (values.shape[-1],)), -1)


def attributions(function, inputs, embedded, steps=None):
    """Gradient × input and integrated gradients of ``f``, in one walk along the path.

    ``f`` is evaluated, with its gradient, at the Gauss-Legendre nodes
    ``α_k`` of :func:`quadrature` and at ``α = 1`` and ``α = 0`` of the
    straight path ``α e`` from the zero embedding (the baseline) to ``e``:

    - ``gradient_x_input``: ``Σ_d ∂f/∂e_td(e) · e_td``;
    - ``integrated_gradients``: ``e_td · Σ_k w_k ∂f/∂e_td(α_k e)``, summed
      over ``d``; by completeness the tokens' scores sum to
      ``delta = f(e) - f(0)`` up to the quadrature error.

    The points run in chunks: a pass evaluates ``function`` on several
    scaled copies of the batch at once (as many as :data:`CHUNK_ELEMENTS`
    allows), so the cost grows with ``steps`` and the memory does not. One
    traced pass serves every point (a ``tf.while_loop``), so a traced
    caller (the SavedModel) holds one copy of the model's gradient.

    Args:
        function: ``(inputs, embedded)`` → float ``[batch]``, each row's
            logit to explain (rows must not depend on each other); called
            with ``inputs`` and ``embedded`` tiled along their first axis
            (``k`` copies, one after the other).
        inputs: tuple of tensors whose first axis is the batch (the ids, the
            target classes), passed along unchanged.
        embedded: float ``[rows, T, e]``, the embedding output (the HAN's
            is folded, ``rows = batch * S``, so its copies line up with
            tiled ids).
        steps: Positive int, the quadrature's nodes. Defaults to
            :data:`DEFAULT_STEPS`.

    Returns:
        A dict: ``gradient_x_input`` and ``integrated_gradients`` float
        ``[rows, T]``; ``value`` ``f(e)`` and ``delta`` ``f(e) - f(0)``,
        float ``[batch]``.
    """
    steps = check_steps(steps)
    alphas, weights = quadrature(steps)
    alphas = np.concatenate([alphas, [1.0, 0.0]]).astype("float32")  # the nodes, e, baseline
    # What each sum weighs the points by: gradients for IG and at e; values at e and at 0.
    gradient_weights = np.zeros((2, steps + 2), "float32")
    gradient_weights[0, :steps], gradient_weights[1, steps] = weights, 1.0
    value_weights = np.zeros((2, steps + 2), "float32")
    value_weights[0, steps], value_weights[1, steps + 1] = 1.0, 1.0
    embedded = tf.convert_to_tensor(embedded)
    inputs = tuple(tf.convert_to_tensor(x) for x in inputs)
    gradients, values = _path_sums(
        function, inputs, embedded, alphas, gradient_weights, value_weights
    )
    return {
        "gradient_x_input": ops.sum(gradients[1] * embedded, axis=-1),
        "integrated_gradients": ops.sum(gradients[0] * embedded, axis=-1),
        "value": values[0],
        "delta": values[0] - values[1],
    }


def _path_sums(function, inputs, embedded, alphas, gradient_weights, value_weights):
    """Weighted sums over the points ``α_k e`` of ``∂f/∂e`` and of ``f``.

    Returns ``[G, rows, T, e]`` and ``[V, batch]`` (one sum per row of the
    weights). A while loop evaluates ``copies`` points a pass; the last pass
    may hold fewer (the rest weigh 0).
    """
    points, sums = len(alphas), (len(gradient_weights), len(value_weights))
    alphas = tf.constant(alphas)
    gradient_weights = tf.constant(gradient_weights)
    value_weights = tf.constant(value_weights)
    copies = _copies_per_pass(embedded, points)
    passes = (points + copies - 1) // copies
    batch = tf.shape(inputs[0])[0]

    def one_pass(i, gradients, values):
        index = i * copies + tf.range(copies)
        valid = tf.cast(index < points, tf.float32)
        index = tf.minimum(index, points - 1)
        alpha = tf.gather(alphas, index)
        scaled = tf.reshape(
            alpha[:, None, None, None] * embedded[None],
            tf.concat([[-1], tf.shape(embedded)[1:]], 0),
        )
        tiled = tuple(_tile(x, copies) for x in inputs)
        with tf.GradientTape() as tape:
            tape.watch(scaled)
            value = function(tiled, scaled)
        gradient = tape.gradient(value, scaled)
        gradient = tf.reshape(gradient, tf.concat([[copies], tf.shape(embedded)], 0))
        value = tf.reshape(value, [copies, batch])
        g = tf.gather(gradient_weights, index, axis=1) * valid  # [G, copies]
        v = tf.gather(value_weights, index, axis=1) * valid
        return i + 1, gradients + tf.tensordot(g, gradient, axes=1), values + v @ value

    gradients = tf.zeros(tf.concat([[sums[0]], tf.shape(embedded)], 0))
    values = tf.zeros([sums[1], batch])
    _, gradients, values = tf.while_loop(
        lambda i, *_: i < passes, one_pass, (tf.constant(0), gradients, values)
    )
    return gradients, values


def _copies_per_pass(embedded, points):
    """How many scaled copies of ``embedded`` one pass evaluates (int32 scalar tensor)."""
    size = tf.maximum(tf.size(embedded), 1)
    most = tf.clip_by_value(CHUNK_ELEMENTS // size, 1, points)
    passes = (points + most - 1) // most
    return (points + passes - 1) // passes  # the same passes, as even as they go


def _tile(x, copies):
    """``copies`` copies of ``x`` one after the other along the first axis."""
    multiples = tf.concat([[copies], tf.ones([tf.rank(x) - 1], tf.int32)], 0)
    return tf.tile(x, multiples)


def completeness_error(attributions, delta):
    """``|Σ attributions - delta| / max(|delta|, 1e-6)`` per row.

    Args:
        attributions: float ``[batch, ...]`` (any trailing axes are summed).
        delta: float ``[batch]``, ``f(e) - f(0)``.
    """
    axes = tuple(range(1, len(attributions.shape)))
    total = ops.sum(attributions, axis=axes) if axes else attributions
    return ops.abs(total - delta) / ops.maximum(ops.abs(delta), 1e-6)


def decompose(deep_logits, ngram_logits, bias, target):
    """The explained class's logit and its parts: deep part, channel, bias.

    Args:
        deep_logits: float ``[batch, units]``, the Dense ``"logit"`` layer's
            output (its bias included).
        ngram_logits: float ``[batch, units]`` (the channel's), or ``None``.
        bias: float ``[units]``, the Dense ``"logit"`` layer's bias, or
            ``None``.
        target: int ``[batch]``.

    Returns:
        A dict of float ``[batch]``: ``logit`` (``z_c``), ``logit_deep``
        (the deep part without its bias), ``logit_ngram`` (0 without a
        channel), ``logit_bias``; the three parts sum to ``logit``.
    """
    deep = class_values(deep_logits, target)
    total = deep
    ngram = ops.zeros_like(deep)
    if ngram_logits is not None:
        ngram = class_values(ngram_logits, target)
        total = class_values(deep_logits + ngram_logits, target)  # as the Add layer sums
    if bias is None:
        bias = ops.zeros_like(deep)
    else:
        bias = class_values(ops.zeros_like(deep_logits) + ops.cast(bias, deep_logits.dtype), target)
    return {"logit": total, "logit_deep": deep - bias, "logit_ngram": ngram, "logit_bias": bias}


def total(integrated_gradients, ngram=None):
    """Each token's contribution to the whole logit: the deep part's IG plus the channel's share.

    Works on tensors and NumPy arrays alike (plain arithmetic).

    Args:
        integrated_gradients: float ``[batch, ...]``, the deep part's
            integrated gradients of ``z_c`` (with its mix weight folded in).
        ngram: float, shaped alike, the channel's exact share of ``z_c``, or
            ``None`` for a model without the channel.

    Returns:
        Shaped like ``integrated_gradients``; by completeness its sum over a
        review is ``z_c - baseline`` (:func:`baseline`) up to the quadrature
        error.
    """
    return integrated_gradients if ngram is None else integrated_gradients + ngram


def baseline(logit, logit_ngram, ig_delta):
    """``z_c`` with no word evidence: ``logit - logit_ngram - ig_delta`` (the deep part at 0).

    ``logit - logit_ngram`` is the deep part ``z_deep(e)`` (its bias
    included) and ``ig_delta`` is ``z_deep(e) - z_deep(0)``, so this is
    ``z_deep(0)``: the head's bias plus what the deep part gives a review
    whose embeddings are all zero. The :func:`total` scores of a review sum
    to ``logit - baseline`` up to integrated gradients' quadrature error.
    """
    return logit - logit_ngram - ig_delta


def with_total(result):
    """``result`` (an ``explain`` dict of NumPy arrays) with the ``total`` view added.

    For explanations written before ``total`` existed: when ``result`` holds
    ``integrated_gradients`` but not ``total``, adds ``total`` (and for the
    HAN ``sentence_total``, the sums of each sentence's words) from the
    parts, and ``logit_baseline`` from the logit's decomposition when it is
    there. Anything else is returned as is (a new dict when changed).
    """
    if "total" in result or "integrated_gradients" not in result:
        return result
    out = dict(result)
    out["total"] = total(result["integrated_gradients"], result.get("ngram"))
    if "sentence_integrated_gradients" in result:
        out["sentence_total"] = total(
            result["sentence_integrated_gradients"], result.get("sentence_ngram")
        )
    if {"logit", "logit_ngram", "ig_delta"} <= set(result) and "logit_baseline" not in result:
        out["logit_baseline"] = baseline(result["logit"], result["logit_ngram"], result["ig_delta"])
    return out


def with_total_method(methods):
    """``methods`` with ``"total"`` when they have ``"integrated_gradients"``, in ``METHODS`` order."""
    methods = tuple(methods)
    if "integrated_gradients" in methods and "total" not in methods:
        methods = (*methods, "total")
    return tuple(sorted(methods, key=lambda m: METHODS.index(m) if m in METHODS else len(METHODS)))
