"""Is the attention telling the truth? The deletion test (ERASER comprehensiveness).

For each review, delete the top-k % of its tokens ranked by the model's own
word scores (attention; gradient × input saliency for the CNN) and, as the
baseline, k % of its tokens drawn at random; run the model again and measure
how much the probability of the class it predicted on the full review drops
(DeYoung et al., 2020). Scores that point at what the prediction rests on
drop it far more than random deletions.

Deletion works on the model's own ids: each review is tokenized and looked
up once, tokens are removed (the sequence gets shorter, as ERASER specifies;
replacing them by the out-of-vocabulary id would not remove evidence, since
`[UNK]` is a trained token that stands for rare words), and the model runs on
the edited ids. For the HAN a
word's rank is its share of the document, word attention × sentence
attention; a sentence whose words are all deleted disappears, as it would
from a review that never had them.

The model is reached through the one path from text to explanations
(:func:`hatt.export.as_predictor`): the scores that rank the tokens are the
ones :func:`hatt.inspect.explain` shows, and the edited ids run through the
same :class:`hatt.export.TextModel`. A SavedModel takes raw text only, so it
cannot be given edited ids: pass the `.keras` file or the run directory.
"""

import numpy as np
import tensorflow as tf

from hatt import export
from hatt.inspect._progress import Progress

DEFAULT_KS = (5, 10, 20)
NEGLIGIBLE = 1e-3  # a probability change too small to count (saturated predictions)


def deletion_count(k, n):
    """Tokens to delete for `k` % of `n` tokens: rounded half up, at least 1, at most `n`."""
    return int(min(n, max(1, np.floor(k * n / 100 + 0.5)))) if n else 0


def _review_arrays(ragged, nested):
    """Per review: flat ids (numpy) and, for nested ids, its sentence lengths."""
    reviews = []
    if nested:
        for review in ragged:
            sentences = [np.asarray(s, np.int32) for s in review.numpy()]
            lengths = [len(s) for s in sentences]
            flat = np.concatenate(sentences) if sentences else np.zeros([0], np.int32)
            reviews.append((flat, lengths))
    else:
        for review in ragged:
            reviews.append((review.numpy().astype(np.int32), None))
    return reviews


def _ranking(word, sentence, lengths, i, n):
    """Row `i`'s word scores over its `n` real tokens, flat, in token order."""
    if lengths is None:
        return np.asarray(word[i, :n], np.float64)
    parts = [word[i, s, :length] * sentence[i, s] for s, length in enumerate(lengths)]
    return np.concatenate(parts).astype(np.float64) if parts else np.zeros([0])


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
    keep[positions] = False
    if lengths is None:
        return flat[keep], None
    bounds = np.cumsum([0, *lengths])
    new_lengths = [int(keep[a:b].sum()) for a, b in zip(bounds[:-1], bounds[1:], strict=True)]
    return flat[keep], new_lengths


def deletion_test(
    model,
    texts,
    ks=DEFAULT_KS,
    random_draws=5,
    seed=0,
    progress=True,
    chunk_size=64,
    vectorizer=None,
    batch_size=64,
):
    """Delete each review's top-scored tokens versus random ones; measure the drop.

    Args:
        model: A Keras-backed model for :func:`hatt.export.as_predictor`: a
            run directory or `.keras` path, a `hatt.export.Predictor` from
            one, a `hatt.export.TextModel`, or an in-memory `keras.Model`
            with `vectorizer`. (A SavedModel raises a clear error: its
            signature takes raw text, not edited ids.)
        texts: List of raw reviews.
        ks: Percentages of each review's tokens to delete (of the tokens
            the model sees, at least one).
        random_draws: Random deletions per review and `k` (averaged).
        seed: Seed of the random deletions.
        progress: Show a progress bar (on stderr).
        chunk_size: Reviews whose variants are built and run together.
        vectorizer: The `hatt.data.Vectorizer` of an in-memory `keras.Model`.
        batch_size: Reviews (or edited variants) per model call.

    Returns:
        A dict: `"reviews"` (count), `"ks"`, `"random_draws"`, `"seed"`,
        `"family"`, `"score_kind"`, `"mean_tokens"`, and `"by_k"` mapping
        each `k` (as str) to `"ranked_drop"` and `"random_drop"` (the mean
        drop of the predicted class's probability over the reviews),
        `"ratio"` (ranked / random; `None` when the random drop is not
        positive), `"ranked_flip_rate"` and `"random_flip_rate"` (share of
        deletions that change the predicted class), `"ranked_drop_sem"` and
        `"random_drop_sem"` (standard errors of the means),
        `"ranked_below_random"` (share of reviews whose ranked drop is below
        their mean random drop) and `"both_negligible"` (share of reviews
        where both drops are below `NEGLIGIBLE` in size).

    Example:

    >>> predictor = hatt.export.load("runs/han-...")
    >>> hatt.inspect.deletion_test(predictor, test_texts[:100])["by_k"]["10"]
    """
    ks = tuple(int(k) for k in ks)
    for k in ks:
        if not 0 < k <= 100:
            raise ValueError(f"Expected every k in (0, 100]. Received: ks={ks!r}")
    if not isinstance(random_draws, int) or random_draws < 1:
        raise ValueError(f"Expected random_draws >= 1. Received: random_draws={random_draws!r}")
    predictor = export.as_predictor(model, vectorizer)
    predictor.text_model  # noqa: B018  (a SavedModel fails here, before any work)
    texts = list(texts)
    rng = np.random.default_rng(seed)
    drops = {(k, kind): [] for k in ks for kind in ("ranked", "random")}
    flips = {(k, kind): [] for k in ks for kind in ("ranked", "random")}
    token_counts = []
    bar = Progress(len(texts), enabled=progress)
    for start in range(0, len(texts), chunk_size):
        ragged = predictor.ragged_ids(texts[start : start + chunk_size])
        scores = predictor.outputs_from_ids(ragged, batch_size)
        reviews = _review_arrays(ragged, nested=ragged.ragged_rank == 2)
        token_counts.extend(len(flat) for flat, _ in reviews)
        variants, edited = _variants(reviews, scores, ks, random_draws, rng)
        after = predictor.probabilities_from_ids(
            _rebuild(edited, ragged.ragged_rank == 2), batch_size
        )
        _collect(variants, scores["probabilities"], after, drops, flips)
        bar.update(min(start + chunk_size, len(texts)))
    return {
        "family": predictor.family,
        "score_kind": predictor.score_kind,
        "reviews": len(texts),
        "mean_tokens": float(np.mean(token_counts)) if token_counts else 0.0,
        "ks": list(ks),
        "random_draws": random_draws,
        "seed": seed,
        "by_k": {str(k): _summary(k, drops, flips) for k in ks},
    }


def _variants(reviews, scores, ks, random_draws, rng):
    """Every review's edited copies: top-k % ranked, then `random_draws` random, per k.

    Returns `(variants, edited)`: `(review index, k, "ranked" | "random")`
    per copy, and the copies as `(flat ids, sentence lengths)`.
    """
    word, sentence = scores["word_attention"], scores.get("sentence_attention")
    variants, edited = [], []
    for i, (flat, lengths) in enumerate(reviews):
        n = len(flat)
        order = np.argsort(-_ranking(word, sentence, lengths, i, n), kind="stable")
        for k in ks:
            count = deletion_count(k, n)
            edited.append(_delete(flat, lengths, order[:count]))
            variants.append((i, k, "ranked"))
            for _ in range(random_draws):
                positions = rng.choice(n, size=count, replace=False) if n else []
                edited.append(_delete(flat, lengths, positions))
                variants.append((i, k, "random"))
    return variants, edited


def _collect(variants, base, after, drops, flips):
    """Per review and (k, kind): the mean drop of the predicted class's probability.

    ``base`` ``[N, C]`` and ``after`` ``[variants, C]`` are class probabilities;
    a deletion flips the prediction when another class becomes the argmax.
    """
    predicted = np.argmax(base, axis=-1)
    per_review = {}
    for (i, k, kind), p in zip(variants, after, strict=True):
        c = predicted[i]
        flip = int(np.argmax(p)) != c
        per_review.setdefault((i, k, kind), []).append((base[i, c] - p[c], flip))
    for (_, k, kind), values in per_review.items():
        drops[k, kind].append(float(np.mean([d for d, _ in values])))
        flips[k, kind].append(float(np.mean([f for _, f in values])))


def _summary(k, drops, flips):
    r, b = np.asarray(drops[k, "ranked"]), np.asarray(drops[k, "random"])
    ranked_mean = float(r.mean()) if r.size else 0.0
    random_mean = float(b.mean()) if b.size else 0.0
    return {
        "ranked_drop": ranked_mean,
        "random_drop": random_mean,
        "ratio": ranked_mean / random_mean if random_mean > 0 else None,
        "ranked_drop_sem": float(r.std(ddof=1) / np.sqrt(r.size)) if r.size > 1 else 0.0,
        "random_drop_sem": float(b.std(ddof=1) / np.sqrt(b.size)) if b.size > 1 else 0.0,
        # reviews where the ranked deletion did worse than the random ones, and
        # reviews where neither moved the probability (saturated predictions)
        "ranked_below_random": float(np.mean(r < b)) if r.size else 0.0,
        "both_negligible": float(np.mean((np.abs(r) < NEGLIGIBLE) & (np.abs(b) < NEGLIGIBLE)))
        if r.size
        else 0.0,
        "ranked_flip_rate": float(np.mean(flips[k, "ranked"])) if r.size else 0.0,
        "random_flip_rate": float(np.mean(flips[k, "random"])) if b.size else 0.0,
    }
