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
"""

import keras
import numpy as np
import tensorflow as tf

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
    explainer, texts, ks=DEFAULT_KS, random_draws=5, seed=0, progress=True, chunk_size=64
):
    """Delete each review's top-scored tokens versus random ones; measure the drop.

    Args:
        explainer: A `hatt.inspect.KerasExplainer` (model + vectorizer).
        texts: List of raw reviews.
        ks: Percentages of each review's tokens to delete (of the tokens
            the model sees, at least one).
        random_draws: Random deletions per review and `k` (averaged).
        seed: Seed of the random deletions.
        progress: Show a progress bar.
        chunk_size: Reviews whose variants are built and run together.

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

    >>> explainer = hatt.inspect.explain.load_run("runs/han-...")
    >>> hatt.inspect.deletion_test(explainer, test_texts[:100])["by_k"]["10"]
    """
    ks = tuple(int(k) for k in ks)
    for k in ks:
        if not 0 < k <= 100:
            raise ValueError(f"Expected every k in (0, 100]. Received: ks={ks!r}")
    if not isinstance(random_draws, int) or random_draws < 1:
        raise ValueError(f"Expected random_draws >= 1. Received: random_draws={random_draws!r}")
    texts = list(texts)
    nested = explainer.nested
    rng = np.random.default_rng(seed)
    ranked = {k: [] for k in ks}
    random = {k: [] for k in ks}
    ranked_flips = {k: [] for k in ks}
    random_flips = {k: [] for k in ks}
    token_counts = []
    bar = keras.utils.Progbar(len(texts), unit_name="review") if progress else None
    for start in range(0, len(texts), chunk_size):
        chunk = texts[start : start + chunk_size]
        ragged = explainer.ragged_ids(chunk)
        reviews = _review_arrays(ragged, nested)
        scored = explainer.scores(ragged)
        base = np.concatenate([b[0] for b in scored])
        variants = []  # (review index in chunk, k, "ranked" | "random")
        edited = []
        row = 0
        for probability, word, sentence in scored:
            for j in range(len(probability)):
                flat, lengths = reviews[row]
                n = len(flat)
                token_counts.append(n)
                order = np.argsort(-_ranking(word, sentence, lengths, j, n), kind="stable")
                for k in ks:
                    count = deletion_count(k, n)
                    edited.append(_delete(flat, lengths, order[:count]))
                    variants.append((row, k, "ranked"))
                    for _ in range(random_draws):
                        positions = rng.choice(n, size=count, replace=False) if n else []
                        edited.append(_delete(flat, lengths, positions))
                        variants.append((row, k, "random"))
                row += 1
        after = explainer.probability(_rebuild(edited, nested))
        predicted = base >= 0.5
        drops = {}
        for (i, k, kind), p in zip(variants, after, strict=True):
            before_c = base[i] if predicted[i] else 1 - base[i]
            after_c = p if predicted[i] else 1 - p
            flip = (p >= 0.5) != predicted[i]
            drops.setdefault((i, k, kind), []).append((before_c - after_c, flip))
        for (_, k, kind), values in drops.items():
            drop = float(np.mean([d for d, _ in values]))
            flip = float(np.mean([f for _, f in values]))
            if kind == "ranked":
                ranked[k].append(drop)
                ranked_flips[k].append(flip)
            else:
                random[k].append(drop)
                random_flips[k].append(flip)
        if bar is not None:
            bar.update(min(start + chunk_size, len(texts)))
    by_k = {}
    for k in ks:
        r, b = np.asarray(ranked[k]), np.asarray(random[k])
        ranked_mean = float(r.mean()) if r.size else 0.0
        random_mean = float(b.mean()) if b.size else 0.0
        by_k[str(k)] = {
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
            "ranked_flip_rate": float(np.mean(ranked_flips[k])) if r.size else 0.0,
            "random_flip_rate": float(np.mean(random_flips[k])) if b.size else 0.0,
        }
    return {
        "family": explainer.family,
        "score_kind": explainer.score_kind,
        "reviews": len(texts),
        "mean_tokens": float(np.mean(token_counts)) if token_counts else 0.0,
        "ks": list(ks),
        "random_draws": random_draws,
        "seed": seed,
        "by_k": by_k,
    }
