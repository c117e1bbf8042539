"""Starting weights for the n-gram channel (``hatt.layers.NgramLogit``).

Two starts, both computed from the tokenized training split only:

- ``"nb"``: the Naive Bayes log-count ratios ``r`` of the channel's features
  (Wang & Manning 2012), the weights of a multinomial NB over binarized counts.
- ``"nblr"``: an NB-weighted logistic regression (NBSVM with a logistic loss,
  the ``nb_lr`` baseline) fit by scikit-learn on exactly the features the
  layer computes (its ``binary`` and ``reduction``). The channel's weights
  become ``coef ⊙ r`` and the intercept goes to the deep part's ``"logit"``
  bias, so before any gradient step the model predicts what the linear model
  does; training then adds the deep part. ``C`` is chosen on the validation
  split when a grid is given.

The counts are a SciPy CSR matrix ``[reviews, features]`` built in chunks with
the layer's own :func:`hatt.layers.ngram_logit.ngram_feature_ids`, so a hashed
bigram gets the same bucket here as in the model.
"""

import time

import numpy as np


def ngram_counts(ids, vocabulary_size, buckets, ngram=2, chunk_size=1024):
    """Occurrences of each channel feature in each review.

    Args:
        ids: ``tf.RaggedTensor`` of encoded reviews, flat ``[N, (T)]`` or
            nested ``[N, (S), (W)]`` (n-grams stay inside a sentence; counts
            are per review), as from ``hatt.data.encode``.
        vocabulary_size, buckets, ngram: as in ``hatt.layers.NgramLogit``.
        chunk_size: reviews densified at a time.

    Returns:
        ``scipy.sparse.csr_matrix`` ``[N, vocabulary_size + buckets]``
        (``vocabulary_size`` columns when ``ngram == 1``), float32 counts.
    """
    import scipy.sparse as sp

    from hatt.layers.ngram_logit import ngram_feature_ids

    size = vocabulary_size + (buckets if ngram > 1 else 0)
    total = int(ids.shape[0])
    rows, cols = [], []
    for start in range(0, total, chunk_size):
        dense = ids[start : start + chunk_size].to_tensor()
        features, mask = ngram_feature_ids(dense, vocabulary_size, buckets, ngram)
        features = np.asarray(features).reshape(len(dense), -1)
        mask = np.asarray(mask).reshape(len(dense), -1)
        index = np.broadcast_to(np.arange(start, start + len(dense))[:, None], features.shape)
        rows.append(index[mask].astype(np.int32))
        cols.append(features[mask].astype(np.int32))
    rows = np.concatenate(rows) if rows else np.zeros(0, np.int32)
    cols = np.concatenate(cols) if cols else np.zeros(0, np.int32)
    counts = sp.csr_matrix(
        (np.ones(len(rows), np.float32), (rows, cols)), shape=(total, size), dtype=np.float32
    )
    counts.sum_duplicates()
    return counts


def log_count_ratios(counts, labels, alpha=1.0, min_df=1):
    """NB log-count ratios ``r = log((p / |p|₁) / (q / |q|₁))`` of binarized counts.

    ``p = alpha + Σ_pos 1[f > 0]`` and ``q = alpha + Σ_neg 1[f > 0]``;
    features in fewer than ``min_df`` reviews (none, by default) get ``0``.
    """
    labels = np.asarray(labels)
    present = counts.copy()
    present.data[:] = 1.0
    positive = np.asarray(present[labels == 1].sum(axis=0), np.float64).ravel()
    negative = np.asarray(present[labels == 0].sum(axis=0), np.float64).ravel()
    seen = positive + negative >= max(1, min_df)
    p, q = positive + alpha, negative + alpha
    ratios = np.log(p / p.sum()) - np.log(q / q.sum())
    return np.where(seen, ratios, 0.0).astype(np.float32)


def layer_features(counts, binary=False, reduction="sum"):
    """The values ``NgramLogit`` multiplies its weights by, as a CSR matrix.

    ``binary`` keeps one count per review; ``reduction`` divides a row by its
    (kept) feature count (``"mean"``) or its square root (``"sqrt"``).
    """
    import scipy.sparse as sp

    values = counts.copy()
    if binary:
        values.data[:] = 1.0
    if reduction != "sum":
        n = np.maximum(np.asarray(values.sum(axis=1)).ravel(), 1.0)
        scale = 1.0 / (n if reduction == "mean" else np.sqrt(n))
        values = sp.diags(scale.astype(np.float32)) @ values
    return values.tocsr()


def fit_nb_logistic(
    counts,
    labels,
    *,
    binary,
    reduction,
    alpha=1.0,
    min_df=1,
    C=0.1,
    validation=None,
    seed=0,
):
    """NB-weighted logistic regression on the channel's features.

    Args:
        counts, labels: training counts (:func:`ngram_counts`) and 0/1 labels.
        binary, reduction: the layer's settings (see :func:`layer_features`).
        alpha, min_df: as in :func:`log_count_ratios`.
        C: inverse L2 strength, or a grid of them: with ``validation``, the
            value with the best validation accuracy (ties → the smallest,
            i.e. the most regularized) is kept. Defaults to `0.1`.
        validation: optional ``(counts, labels)`` of the validation split.
        seed: the solver's random state.

    Returns:
        ``(weights, intercept, info)``: float32 channel weights ``coef ⊙ r``,
        the float intercept, and a dict with the chosen ``C``, ``alpha`` and
        the train / validation accuracies of the channel alone.
    """
    import scipy.sparse as sp
    from sklearn.linear_model import LogisticRegression

    grid = [float(c) for c in (C if isinstance(C, list | tuple) else [C])]
    if not grid or any(not c > 0 for c in grid):
        raise ValueError(f"Expected C to be a positive float or a list of them. Received: C={C!r}")
    if len(grid) > 1 and validation is None:
        raise ValueError(f"A grid of C needs a validation split to choose from. Received: C={C!r}")
    labels = np.asarray(labels)
    if len(np.unique(labels)) < 2:
        raise ValueError(
            "ngram_init='nblr' needs both labels in the training split. "
            f"Received labels: {sorted(set(labels.tolist()))}"
        )
    ratios = log_count_ratios(counts, labels, alpha=alpha, min_df=min_df)
    scale = sp.diags(ratios)
    train_x = layer_features(counts, binary, reduction) @ scale
    if validation is not None:
        validation_x = layer_features(validation[0], binary, reduction) @ scale
        validation_y = np.asarray(validation[1])
    best, selection = None, []
    for c in grid:
        start = time.perf_counter()
        model = LogisticRegression(C=c, solver="liblinear", random_state=seed, max_iter=1000)
        model.fit(train_x, labels)
        entry = {"C": c, "train_accuracy": float((model.predict(train_x) == labels).mean())}
        if validation is not None:
            entry["validation_accuracy"] = float(
                (model.predict(validation_x) == validation_y).mean()
            )
        entry["seconds"] = round(time.perf_counter() - start, 2)
        selection.append(entry)
        key = entry.get("validation_accuracy", 0.0)
        if best is None or key > best[0]:
            best = (key, model, entry)
    _, model, entry = best
    weights = (model.coef_.ravel() * ratios).astype(np.float32)
    info = {"init": "nblr", "alpha": alpha, "min_df": min_df, **entry}
    if len(selection) > 1:
        info["selection"] = selection
    return weights, float(model.intercept_[0]), info


def channel_accuracy(counts, labels, weights, binary, reduction, intercept=0.0):
    """Accuracy of the channel alone (its logit plus ``intercept`` > 0)."""
    logits = layer_features(counts, binary, reduction) @ weights + intercept
    return float(((logits > 0).astype(int) == np.asarray(labels)).mean())
