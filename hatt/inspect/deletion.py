"""Do the scores point at what the prediction rests on? ERASER's deletion test, per method.

For each review and each explanation method (:data:`hatt.export.attribution.METHODS`
the model has) plus random, rank the review's tokens, take the top k % and
run the model again twice (DeYoung et al., 2020):

- **comprehensiveness**: ``p_c(x) - p_c(x without the top k %)``: how much
  the probability of the explained class ``c`` (the one predicted on the
  full review) drops when the top tokens are removed. Higher is more
  faithful.
- **sufficiency**: ``p_c(x) - p_c(only the top k %)``, the kept tokens in
  their order: how much is lost when nothing else is left. Lower is more
  faithful.

Each is reported at every ``k`` and as its AOPC, the mean over the ``k``'s
(the "bins"; ERASER's paper uses ``{1, 5, 10, 20, 50}`` %, hatt's default
is ``{5, 10, 20}`` %). Random is averaged over several draws per review and
``k``: the comprehensiveness ratio of a method to random says how much
better than chance its top tokens are.

Ranking: signed methods (``gradient_x_input``, ``integrated_gradients``,
``ngram``) rank by the signed score, most supportive of the explained class
first (a word that argues against it is not "important" for it); attention
is unsigned and ranks by its weight, for the HAN by word × sentence
attention (the word's share of the document). Ties keep token order.

Deletion works on the model's own ids: each review is tokenized and looked
up once, tokens are removed (the sequence gets shorter, as ERASER specifies;
replacing them by the out-of-vocabulary id would not remove evidence, since
`[UNK]` is a trained token that stands for rare words), and the model runs on
the edited ids. For the HAN a sentence whose words are all removed
disappears, as it would from a review that never had them.

The model is reached through the one path from text to explanations
(:func:`hatt.export.as_predictor`): the scores are those of
:meth:`hatt.export.TextModel.explain_from_ids`, the ones `hatt inspect`
shows, and the edited ids run through the same
:class:`hatt.export.TextModel`. A SavedModel takes raw text only, so it
cannot be given edited ids: pass the `.keras` file or the run directory.
"""

import numpy as np
import tensorflow as tf

from hatt import export
from hatt.export.attribution import SIGNED_METHODS
from hatt.progress import Progress

DEFAULT_KS = (5, 10, 20)
NEGLIGIBLE = 1e-3  # a probability change too small to count (saturated predictions)
RANDOM = "random"  # the baseline: k % of the tokens drawn at random
METRICS = ("comprehensiveness", "sufficiency")


def deletion_count(k, n):
    """Tokens in the top `k` % of `n` tokens: rounded half up, at least 1, at most `n`."""
    return int(min(n, max(1, np.floor(k * n / 100 + 0.5)))) if n else 0


# === Reviews as flat ids ===============================================================


def _review_arrays(ragged):
    """Per review: flat ids (numpy) and, for nested ids, its sentence lengths."""
    reviews = []
    if ragged.ragged_rank == 2:
        for review in ragged:
            sentences = [np.asarray(s, np.int32) for s in review.numpy()]
            lengths = [len(s) for s in sentences]
            flat = np.concatenate(sentences) if sentences else np.zeros([0], np.int32)
            reviews.append((flat, lengths))
    else:
        for review in ragged:
            reviews.append((review.numpy().astype(np.int32), None))
    return reviews


def _rebuild(variants, nested):
    """Ragged ids from `(flat ids, sentence lengths)` variants."""
    values = np.concatenate([v[0] for v in variants]) if variants else np.zeros([0], np.int32)
    if not nested:
        lengths = [len(v[0]) for v in variants]
        return tf.RaggedTensor.from_row_lengths(values, lengths)
    sentence_counts, word_counts = [], []
    for _, lengths in variants:
        kept = [length for length in lengths if length > 0]
        sentence_counts.append(len(kept))
        word_counts.extend(kept)
    return tf.RaggedTensor.from_nested_row_lengths(values, [sentence_counts, word_counts])


def _delete(flat, lengths, positions):
    """Remove `positions` from a review; nested reviews keep their sentence structure."""
    keep = np.ones(len(flat), bool)
    keep[np.asarray(positions, np.int64)] = False
    if lengths is None:
        return flat[keep], None
    bounds = np.cumsum([0, *lengths])
    new_lengths = [int(keep[a:b].sum()) for a, b in zip(bounds[:-1], bounds[1:], strict=True)]
    return flat[keep], new_lengths


def _length_order(ragged):
    """Review indices, shortest first (the HAN's: by its words over all sentences).

    A batch is padded to its longest review, so batching reviews in their
    own order pays for a 800-token review's padding in every batch it joins
    (explaining a recurrent model by Integrated Gradients, that was most of
    the time).
    """
    lengths = ragged.row_lengths()
    if ragged.ragged_rank == 2:
        lengths = tf.reduce_sum(ragged.row_lengths(axis=2), axis=1)
    return np.argsort(np.asarray(lengths), kind="stable")


def _length_batches(ragged, size):
    """`(indices, ragged rows)` batches of at most `size` reviews of similar length."""
    order = _length_order(ragged)
    for start in range(0, len(order), size):
        chosen = order[start : start + size]
        yield chosen, tf.gather(ragged, chosen)


def _probabilities_by_length(predictor, ragged, batch_size):
    """:meth:`Predictor.probabilities_from_ids` with reviews batched by length, in order."""
    order = _length_order(ragged)
    probabilities = predictor.probabilities_from_ids(tf.gather(ragged, order), batch_size)
    out = np.empty_like(probabilities)
    out[order] = probabilities
    return out


# === Scores: one flat array per review and method ======================================


def method_scores(predictor, ragged, methods, steps=None, batch_size=64):
    """Every review's ranking scores per method, flat over its real tokens, in token order.

    Reads :meth:`hatt.export.TextModel.explain_from_ids`, `batch_size`
    reviews at a time. A signed method's score is its word score; attention
    is the word weight, for the HAN word × sentence attention.

    Args:
        predictor: A :class:`hatt.export.Predictor` over a Keras model.
        ragged: Ragged ids, `[N, (T)]` or `[N, (S), (W)]`.
        methods: Names of methods the model has (`predictor.methods`).
        steps: Integrated Gradients steps (`None`: the default).
        batch_size: Reviews per explain call.

    Returns:
        A dict: `"target"` `[N]` int (the explained class: the one
        predicted on the full review), `"ig_completeness_error"` `[N]`
        float (NaN where the explanation has none), and `"scores"`:
        `{method: list of N float arrays}`, review `i`'s as long as its
        tokens.
    """
    size = export.check_batch_size(batch_size)
    reviews = _review_arrays(ragged)
    n = len(reviews)
    target, error = np.zeros([n], np.int64), np.full([n], np.nan)
    scores = {m: [None] * n for m in methods}
    for chosen, rows in _length_batches(ragged, size):  # padding costs: similar lengths
        part = predictor.text_model.explain_from_ids(rows, steps=steps)
        part = {key: np.asarray(value) for key, value in part.items()}
        target[chosen] = part["target"]
        if "ig_completeness_error" in part:
            error[chosen] = part["ig_completeness_error"]
        for method in methods:
            for j, i in enumerate(chosen):
                scores[method][i] = _flat(part, method, j, reviews[i])
    return {"target": target, "ig_completeness_error": error, "scores": scores}


def _flat(part, method, j, review):
    """Row `j`'s scores of `method` over its real tokens (HAN attention: word × sentence)."""
    flat, lengths = review
    word = part[method][j]
    if lengths is None:
        return np.asarray(word[: len(flat)], np.float64)
    sentence = (
        part["sentence_attention"][j] if method not in SIGNED_METHODS else np.ones(len(lengths))
    )
    pieces = [word[s, :length] * sentence[s] for s, length in enumerate(lengths)]
    return np.concatenate(pieces).astype(np.float64) if pieces else np.zeros([0])


# === The test ==========================================================================


def deletion_test(
    model,
    texts,
    methods=None,
    ks=DEFAULT_KS,
    random_draws=5,
    seed=0,
    steps=None,
    progress=True,
    chunk_size=64,
    vectorizer=None,
    batch_size=64,
):
    """ERASER comprehensiveness and sufficiency of each method's top-k % tokens, and random's.

    Args:
        model: A Keras-backed model for :func:`hatt.export.as_predictor`: a
            run directory or `.keras` path, a `hatt.export.Predictor` from
            one, a `hatt.export.TextModel`, or an in-memory `keras.Model`
            with `vectorizer`. (A SavedModel raises a clear error: its
            signature takes raw text, not edited ids.)
        texts: List of raw reviews.
        methods: Methods to rank by (names of `hatt.export.attribution.METHODS`
            the model has); `None`: all of `predictor.methods`. Random is
            always measured.
        ks: Percentages of each review's tokens in its top (of the tokens
            the model sees, at least one); also the AOPC's bins.
        random_draws: Random top-k sets per review and `k` (averaged).
        seed: Seed of the random draws.
        steps: Integrated Gradients steps (`None`: the default).
        progress: Show a progress bar (on stderr).
        chunk_size: Reviews whose variants are built and run together.
        vectorizer: The `hatt.data.Vectorizer` of an in-memory `keras.Model`.
        batch_size: Reviews (or edited variants) per model call.

    Returns:
        A dict: `"family"`, `"score_kind"`, `"methods"` (those ranked),
        `"reviews"`, `"mean_tokens"`, `"ks"`, `"aopc_bins"` (= `ks`),
        `"random_draws"`, `"seed"`, `"steps"`, `"ig_completeness_error"`
        (`{"median", "p95", "max", "reviews"}` over the reviews, or `None`
        without `"integrated_gradients"`) and `"by_method"`: for each
        method and `"random"`, `"aopc_comprehensiveness"`,
        `"aopc_sufficiency"` and `"by_k"` mapping each `k` (as str) to the
        means over the reviews of `"comprehensiveness"` and
        `"sufficiency"`, their standard errors (`"..._sem"`), and the share
        of edits that change the predicted class
        (`"comprehensiveness_flip_rate"`, `"sufficiency_flip_rate"`); a
        method's also `"ratio"` (its comprehensiveness / random's; `None`
        when random's is not positive), `"below_random"` (share of reviews
        whose comprehensiveness is below their random one) and
        `"both_negligible"` (share where both are below `NEGLIGIBLE` in
        size: saturated predictions).

    Example:

    >>> predictor = hatt.export.load("runs/han-...")
    >>> result = hatt.inspect.deletion_test(predictor, test_texts[:100])
    >>> result["by_method"]["integrated_gradients"]["by_k"]["10"]["comprehensiveness"]
    """
    ks = _check_ks(ks)
    if isinstance(random_draws, bool) or not isinstance(random_draws, int) or random_draws < 1:
        raise ValueError(f"Expected random_draws >= 1. Received: random_draws={random_draws!r}")
    if isinstance(chunk_size, bool) or not isinstance(chunk_size, int) or chunk_size < 1:
        raise ValueError(f"Expected chunk_size >= 1. Received: chunk_size={chunk_size!r}")
    predictor = export.as_predictor(model, vectorizer)
    predictor.text_model  # noqa: B018  (a SavedModel fails here, before any work)
    methods = _check_methods(methods, predictor)
    texts = list(texts)
    rng = np.random.default_rng(seed)
    values, errors, token_counts = {}, [], []
    bar = Progress(len(texts), enabled=progress, stream="stderr")
    for start in range(0, len(texts), chunk_size):
        ragged = predictor.ragged_ids(texts[start : start + chunk_size])
        reviews = _review_arrays(ragged)
        scored = method_scores(predictor, ragged, methods, steps, batch_size)
        keys, edited = _edits(reviews, scored["scores"], ks, random_draws, rng)
        base = _probabilities_by_length(predictor, ragged, batch_size)
        after = _probabilities_by_length(
            predictor, _rebuild(edited, ragged.ragged_rank == 2), batch_size
        )
        _collect(keys, base, scored["target"], after, values)
        errors.extend(scored["ig_completeness_error"])
        token_counts.extend(len(flat) for flat, _ in reviews)
        bar.update(min(start + chunk_size, len(texts)))
    by_method = {m: _summary(m, ks, values) for m in (*methods, RANDOM)}
    return {
        "family": predictor.family,
        "score_kind": predictor.score_kind,
        "methods": list(methods),
        "reviews": len(texts),
        "mean_tokens": float(np.mean(token_counts)) if token_counts else 0.0,
        "ks": list(ks),
        "aopc_bins": list(ks),
        "random_draws": random_draws,
        "seed": seed,
        "steps": steps,
        "ig_completeness_error": _error_summary(errors)
        if "integrated_gradients" in methods
        else None,
        "by_method": by_method,
    }


def _check_ks(ks):
    try:
        checked = tuple(int(k) for k in ks)
    except (TypeError, ValueError):
        checked = ()
    if not checked or any(not 0 < k <= 100 for k in checked) or len(set(checked)) < len(checked):
        raise ValueError(f"Expected ks to be distinct percentages in (0, 100]. Received: ks={ks!r}")
    return checked


def _check_methods(methods, predictor):
    """`methods` (default: all the model has), each one the model has, RANDOM left out."""
    available = tuple(predictor.methods)
    if methods is None:
        return available
    if isinstance(methods, str):
        methods = [methods]
    methods = [m for m in methods if m != RANDOM]
    missing = [m for m in methods if m not in available]
    if missing or len(set(methods)) < len(methods):
        raise ValueError(
            f"Expected methods to be distinct names among this {predictor.family} model's "
            f"methods {available} (random is always measured). Received: methods={methods!r}"
        )
    return tuple(methods)


def _edits(reviews, scores, ks, random_draws, rng):
    """Every review's edited copies: per k, per method (then random draws), two edits.

    The top-k % tokens removed (comprehensiveness), then only they kept
    (sufficiency). Returns `(keys, edited)`: `(review index, method, k,
    metric)` per copy, and the copies as `(flat ids, sentence lengths)`.
    """
    keys, edited = [], []
    for i, (flat, lengths) in enumerate(reviews):
        n = len(flat)
        # Most important first: attention by weight, signed methods most supportive first.
        orders = {m: np.argsort(-scores[m][i], kind="stable") for m in scores}
        for k in ks:
            count = deletion_count(k, n)
            tops = [(m, order[:count]) for m, order in orders.items()]
            tops += [
                (RANDOM, rng.choice(n, size=count, replace=False)) for _ in range(random_draws)
            ]
            for method, top in tops:
                rest = np.setdiff1d(np.arange(n), top)
                edited += [_delete(flat, lengths, top), _delete(flat, lengths, rest)]
                keys += [(i, method, k, metric) for metric in METRICS]
    return keys, edited


def _collect(keys, base, target, after, values):
    """Per review and `(method, k, metric)`: the mean drop of `p_c` and the share of flips.

    ``base`` ``[N, C]`` and ``after`` ``[edits, C]`` are class probabilities;
    ``c = target[i]`` is the class predicted on review ``i``; an edit flips
    the prediction when another class becomes the argmax. Appends to
    ``values[method, k, metric]`` one ``(drop, flip rate)`` per review, in
    review order.
    """
    per_review = {}
    for (i, method, k, metric), p in zip(keys, after, strict=True):
        c = target[i]
        flip = int(np.argmax(p)) != c
        per_review.setdefault((i, method, k, metric), []).append((base[i, c] - p[c], flip))
    for (_, method, k, metric), pairs in per_review.items():
        drops, flips = zip(*pairs, strict=True)
        values.setdefault((method, k, metric), []).append(
            (float(np.mean(drops)), float(np.mean(flips)))
        )


def _summary(method, ks, values):
    """A method's figures at every k, and their AOPC (the mean over the ks)."""
    by_k = {}
    for k in ks:
        row = {}
        for metric in METRICS:
            drops, flips = _columns(values, method, k, metric)
            row[metric] = _mean(drops)
            row[f"{metric}_sem"] = (
                float(drops.std(ddof=1) / np.sqrt(drops.size)) if drops.size > 1 else 0.0
            )
            row[f"{metric}_flip_rate"] = _mean(flips)
        if method != RANDOM:
            row.update(_against_random(values, method, k))
        by_k[str(k)] = row
    return {
        **{
            f"aopc_{metric}": float(np.mean([by_k[str(k)][metric] for k in ks]))
            for metric in METRICS
        },
        "by_k": by_k,
    }


def _against_random(values, method, k):
    """Comprehensiveness of a method against random's, overall and review by review."""
    ranked, _ = _columns(values, method, k, "comprehensiveness")
    chance, _ = _columns(values, RANDOM, k, "comprehensiveness")
    chance_mean = _mean(chance)
    return {
        "ratio": _mean(ranked) / chance_mean if chance_mean > 0 else None,
        "below_random": _mean(ranked < chance),
        "both_negligible": _mean((np.abs(ranked) < NEGLIGIBLE) & (np.abs(chance) < NEGLIGIBLE)),
    }


def _columns(values, method, k, metric):
    pairs = values.get((method, k, metric), [])
    drops = np.asarray([d for d, _ in pairs], np.float64)
    flips = np.asarray([f for _, f in pairs], np.float64)
    return drops, flips


def _mean(array):
    array = np.asarray(array, np.float64)
    return float(array.mean()) if array.size else 0.0


def _error_summary(errors):
    """Median, 95th percentile and maximum of the IG completeness errors (finite ones)."""
    errors = np.asarray(errors, np.float64)
    errors = errors[np.isfinite(errors)]
    if not errors.size:
        return {"median": None, "p95": None, "max": None, "reviews": 0}
    return {
        "median": float(np.median(errors)),
        "p95": float(np.percentile(errors, 95)),
        "max": float(errors.max()),
        "reviews": int(errors.size),
    }
