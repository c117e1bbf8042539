"""NB-weighted logistic regression (NBSVM with a logistic loss, Wang & Manning 2012), generic.

THE home of the Naive Bayes log-count ratios, the NB-LR fit on a sparse
feature matrix (one-vs-rest above two classes) and the logit figures (accuracy,
per-review log loss). The n-gram channel (:mod:`hatt.training.channel.ngram`), its mix
(:mod:`hatt.training.channel.mix`) and the NB-LR baseline (``experiments/baselines.py``)
all call these; none of them copies one.
"""

import functools
import time

import numpy as np


def log_count_ratios(counts, labels, alpha=1.0, min_df=1, dtype=np.float32):
    """NB log-count ratios ``r = log((p / |p|₁) / (q / |q|₁))`` of binarized counts.

    ``p = alpha + Σ_pos 1[f > 0]`` and ``q = alpha + Σ_neg 1[f > 0]``
    (Wang & Manning 2012); features in fewer than ``min_df`` reviews (none, by
    default) get ``0``.

    Args:
        counts: ``[reviews, features]`` counts, a SciPy sparse matrix or an array.
        labels: 0/1 labels, one per review.
        alpha: additive smoothing, > 0.
        min_df: features in fewer training reviews get ``0``.
        dtype: of the result (the channel's weights are float32).
    """
    import scipy.sparse as sp

    if isinstance(alpha, bool) or not isinstance(alpha, int | float) or not alpha > 0:
        raise ValueError(f"Expected alpha to be a positive number. Received: alpha={alpha!r}")
    labels = np.asarray(labels)
    present = sp.csr_matrix(counts, dtype=np.float32 if dtype == np.float32 else np.float64)
    present.data = (present.data != 0).astype(present.dtype)
    positive = np.asarray(present[labels == 1].sum(axis=0), np.float64).ravel()
    negative = np.asarray(present[labels == 0].sum(axis=0), np.float64).ravel()
    seen = positive + negative >= max(1, min_df)
    p, q = positive + alpha, negative + alpha
    ratios = np.log(p / p.sum()) - np.log(q / q.sum())
    return np.where(seen, ratios, 0.0).astype(dtype)


def one_vs_rest_log_count_ratios(
    counts, labels, num_classes, alpha=1.0, min_df=1, dtype=np.float32
):
    """Per class ``k``, the NB log-count ratios of ``k`` against the rest.

    Column ``k`` is :func:`log_count_ratios` of ``labels == k``.

    Args:
        counts: ``[reviews, features]`` counts, a SciPy sparse matrix or an array.
        labels: int labels in ``0 .. num_classes - 1``, one per review.
        num_classes: Int >= 2.
        alpha, min_df, dtype: as in :func:`log_count_ratios`.

    Returns:
        ``[features, num_classes]`` array.
    """
    labels = check_labels(labels, num_classes)
    columns = [
        log_count_ratios(counts, (labels == k).astype(int), alpha, min_df, dtype)
        for k in range(num_classes)
    ]
    return np.stack(columns, axis=1)


def check_labels(labels, num_classes, name="labels"):
    """``labels`` as an int array, checked to lie in ``0 .. num_classes - 1``."""
    labels = np.asarray(labels)
    if labels.size and (
        not np.all(np.equal(np.mod(labels, 1), 0))
        or labels.min() < 0
        or labels.max() >= num_classes
    ):
        found = sorted(set(np.unique(labels).tolist()))
        raise ValueError(
            f"Expected {name} to be ints in 0..{num_classes - 1} ({num_classes} classes). "
            f"Received: {name} with the values {found[:20]}"
        )
    return labels.astype(np.int64)


def classes_of(labels, num_classes=None):
    """``num_classes``, or, when ``None``, ``max(2, largest label + 1)``."""
    if num_classes is not None:
        if isinstance(num_classes, bool) or not isinstance(num_classes, int) or num_classes < 2:
            raise ValueError(
                f"Expected num_classes to be an int >= 2. Received: num_classes={num_classes!r}"
            )
        return num_classes
    labels = np.asarray(labels)
    return max(2, int(labels.max()) + 1) if labels.size else 2


def layer_features(counts, binary=False, reduction="sum", idf=None):
    """The values ``NgramLogit`` multiplies its weights by, as a CSR matrix.

    ``binary`` keeps one count per review; ``idf`` (a float array, one a
    feature) multiplies each feature's count by its IDF; ``reduction`` divides a
    row by its (kept) feature count (``"mean"``), that count's square root
    (``"sqrt"``) or the row's L2 norm (``"l2"``; a row without a valued feature
    stays 0).
    """
    import scipy.sparse as sp

    values = counts.copy()
    if binary:
        values.data[:] = 1.0
    n = np.asarray(values.sum(axis=1)).ravel()  # the feature count, before the IDF
    if idf is not None:
        values = values @ sp.diags(np.asarray(idf, np.float32))
    if reduction == "l2":
        norm = np.sqrt(np.asarray(values.multiply(values).sum(axis=1)).ravel())
        scale = np.divide(1.0, norm, out=np.zeros_like(norm), where=norm > 0)
    elif reduction != "sum":
        n = np.maximum(n, 1.0)
        scale = 1.0 / (n if reduction == "mean" else np.sqrt(n))
    if reduction != "sum":
        values = sp.diags(scale.astype(np.float32)) @ values
    return values.tocsr()


def document_idf(counts, min_df=1):
    """Smoothed inverse document frequencies of the features of ``counts``, float32.

    scikit-learn's ``TfidfTransformer(smooth_idf=True)``: ``ln((1 + n) / (1 + df)) + 1``
    for the ``n`` rows of ``counts`` (reviews) and each feature's document frequency
    ``df``; a feature in fewer than ``min_df`` rows (at least: in none) gets ``0``
    (outside the vocabulary, as ``TfidfVectorizer(min_df=...)`` leaves it), so it
    counts for nothing, in a row's L2 norm either.

    Args:
        counts: ``scipy.sparse`` matrix ``[reviews, features]`` (:func:`ngram_counts`).
        min_df: Positive int.

    Returns:
        float32 NumPy array ``[features]``.
    """
    n = counts.shape[0]
    df = np.diff(counts.tocsc().indptr)  # rows with each column (counts are > 0)
    idf = np.log((1.0 + n) / (1.0 + df)) + 1.0
    return np.where(df >= max(min_df, 1), idf, 0.0).astype(np.float32)


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
    num_classes=None,
    idf=None,
    class_weight=None,
):
    """NB-weighted logistic regression on the channel's features.

    Args:
        counts, labels: training counts (:func:`ngram_counts`) and labels
            (0/1, or ``0 .. num_classes - 1``).
        binary, reduction, idf: the layer's settings and IDF (see
            :func:`layer_features`).
        alpha: as in :func:`log_count_ratios`, or a grid of them, searched
            with ``C``'s (every pair; ties → the first ``alpha`` listed).
        min_df: as in :func:`log_count_ratios`.
        C: inverse L2 strength, or a grid of them: with ``validation``, the
            value with the best validation accuracy (ties → the first listed:
            list the most regularized first) is kept. Defaults to `0.1`.
        validation: optional ``(counts, labels)`` of the validation split.
        seed: the solver's random state.
        num_classes: Int >= 2; ``None`` (the default) reads it from the
            labels (``max(2, largest + 1)``). Above 2, one-vs-rest (see the
            module's docstring).
        class_weight: optional ``{class: weight}`` (as
            :func:`hatt.training.settings.scale.class_weight_map`): each review's
            loss weighs its class's weight (every one-vs-rest fit too), and a grid
            is chosen on the validation accuracy weighted alike (with balanced
            weights, on a validation split of the training split's proportions, the
            mean of the classes' recalls). The NB ratios stay unweighted: each
            class's counts are normalized by their own total.

    Returns:
        ``(weights, intercept, info)``: float32 channel weights ``coef ⊙ r``
        (``[features]``; ``[features, num_classes]`` above two classes), the
        intercept (a float; a float array ``[num_classes]``), and a dict with
        the chosen ``C``, ``alpha`` and the train / validation accuracies of
        the channel alone (with a grid, ``selection``: every point's).
    """
    labels = np.asarray(labels)
    num_classes = classes_of(labels, num_classes)
    best, selection = None, []
    features = functools.partial(layer_features, binary=binary, reduction=reduction, idf=idf)
    for a in _grid("alpha", alpha, validation):
        weights, intercept, info, points = _fit_nb_logistic_at(
            counts, labels, num_classes, features, a, min_df, C, validation, seed, class_weight
        )
        selection += [{"alpha": a, **point} for point in points]
        key = selection_score(info)
        if best is None or key > best[0]:  # ties: the first alpha listed
            best = (key, weights, intercept, info)
    _, weights, intercept, info = best
    if len(selection) > 1:
        info["selection"] = selection
    return weights, intercept, info


def fit_logistic_channel(
    counts,
    labels,
    *,
    binary,
    reduction,
    idf=None,
    C=1.0,
    min_df=1,
    validation=None,
    seed=0,
    num_classes=None,
    class_weight=None,
):
    """A logistic regression on the channel's features, without NB ratios (``init="lr"``).

    Two classes: the L2 logistic regression of :func:`fit_logistic_grid`
    (``liblinear``). Above two: one multinomial (softmax) regression, all classes
    at once (``lbfgs``), as scikit-learn's TF-IDF + LR baseline fits them; with
    ``idf`` and ``reduction="l2"`` the features are that baseline's over hashed
    n-grams.

    Args:
        counts, labels, binary, reduction, idf, validation, seed, num_classes,
            class_weight: as in :func:`fit_nb_logistic`.
        C: inverse L2 strength, or a grid chosen on validation accuracy
            (ties → the first listed).
        min_df: features in fewer training reviews keep the weight 0.

    Returns:
        ``(weights, intercept, info)`` as :func:`fit_nb_logistic`.
    """
    labels = np.asarray(labels)
    num_classes = classes_of(labels, num_classes)
    labels = _every_class(labels, num_classes, "lr")
    used = columns_in_use(counts, min_df)
    features = functools.partial(layer_features, binary=binary, reduction=reduction, idf=idf)
    train_x, validation = _on_columns(features, used, counts, validation, num_classes)

    weights = sample_weights(labels, class_weight)

    def fit(c):
        model = _logistic(c, seed, multinomial=num_classes > 2)
        model.fit(train_x, labels, sample_weight=weights)
        return model, model.predict

    model, entry, selection = _grid_search(
        C, fit, train_x, labels, validation, class_weight=class_weight
    )
    weights = np.zeros(counts.shape[1] if num_classes == 2 else (counts.shape[1], num_classes))
    weights = weights.astype(np.float32)
    if num_classes == 2:
        weights[used] = model.coef_.ravel()
        intercept = float(model.intercept_[0])
    else:
        weights[used] = model.coef_.T
        intercept = np.asarray(model.intercept_, np.float64)
    info = {"init": "lr", "idf": idf is not None, "min_df": min_df, **entry}
    if class_weight is not None:
        info["class_weight"] = _described(class_weight)
    if num_classes > 2:
        info["scheme"] = "multinomial"
    if len(selection) > 1:
        info["selection"] = selection
    return weights, intercept, info


def columns_in_use(counts, min_df=1):
    """The features that occur in ``counts`` (training reviews), as column indices.

    The logistic regressions are fit on these columns only: a feature absent from
    every training review has no gradient, so L2 keeps its weight at 0 and the fit
    is the same, while the solver's vectors shrink from every hashed bucket (a
    million and more) to the features seen (a few tens of thousands on a small
    corpus). The NB ratios are computed on every column first: their norms count
    the smoothing of the unseen features too. ``min_df``: only features in at least
    that many rows (``init="lr"``: the others keep the weight 0).
    """
    return np.flatnonzero(np.diff(counts.tocsc().indptr) >= max(min_df, 1))


def _grid(name, value, validation):
    """``value`` as a list of positive floats; several need ``validation`` to choose."""
    grid = [float(v) for v in (value if isinstance(value, list | tuple) else [value])]
    if not grid or any(not v > 0 for v in grid):
        raise ValueError(
            f"Expected {name} to be a positive float or a list of them. Received: {name}={value!r}"
        )
    if len(grid) > 1 and validation is None:
        raise ValueError(
            f"A grid of {name} needs a validation split to choose from. Received: {name}={value!r}"
        )
    return grid


def _fit_nb_logistic_at(
    counts, labels, num_classes, features, alpha, min_df, C, validation, seed, class_weight=None
):
    """:func:`fit_nb_logistic` at one ``alpha`` (``C`` a value or a grid): its weights,
    intercept and description, and every ``C``'s grid entry (``features``: counts to
    the layer's values)."""
    import scipy.sparse as sp

    if num_classes > 2:
        return _fit_nb_logistic_one_vs_rest(
            counts, labels, num_classes, features, alpha, min_df, C, validation, seed, class_weight
        )
    check_labels(labels, 2)
    if len(np.unique(labels)) < 2:
        raise ValueError(
            "ngram.init='nblr' needs both labels in the training split. "
            f"Received labels: {sorted(set(labels.tolist()))}"
        )
    ratios = log_count_ratios(counts, labels, alpha=alpha, min_df=min_df)
    used = columns_in_use(counts)
    scale = sp.diags(ratios[used])
    train_x = features(counts)[:, used] @ scale
    if validation is not None:
        x = features(validation[0])[:, used] @ scale
        validation = (x, validation[1])
    model, entry, selection = fit_logistic_grid(
        train_x, labels, C, validation, seed=seed, class_weight=class_weight
    )
    weights = np.zeros(ratios.shape, np.float32)
    weights[used] = model.coef_.ravel() * ratios[used]
    info = {"init": "nblr", "alpha": alpha, "min_df": min_df, **entry}
    if class_weight is not None:
        info["class_weight"] = _described(class_weight)
    return weights, float(model.intercept_[0]), info, selection


def _fit_nb_logistic_one_vs_rest(
    counts, labels, num_classes, features, alpha, min_df, C, validation, seed, class_weight=None
):
    """:func:`_fit_nb_logistic_at` above two classes: one NB-LR a class against the rest."""
    labels = _every_class(labels, num_classes, "nblr")
    ratios = one_vs_rest_log_count_ratios(counts, labels, num_classes, alpha, min_df)
    used = columns_in_use(counts)
    train_x, validation = _on_columns(features, used, counts, validation, num_classes)
    review_weights = sample_weights(labels, class_weight)

    def fit(c):
        fitted = _one_vs_rest_at(train_x, labels, ratios[used], c, seed, review_weights)
        return fitted, lambda x: predicted_classes(x @ fitted[0] + fitted[1])

    (kept, intercept), entry, selection = _grid_search(
        C, fit, train_x, labels, validation, class_weight=class_weight
    )
    weights = np.zeros(ratios.shape, np.float32)
    weights[used] = kept
    info = {"init": "nblr", "scheme": "one-vs-rest", "alpha": alpha, "min_df": min_df, **entry}
    if class_weight is not None:
        info["class_weight"] = _described(class_weight)
    return weights, intercept, info, selection


def _one_vs_rest_at(features, labels, ratios, c, seed, review_weights=None):
    """Columns ``coef_k ⊙ r_k`` and intercepts of the ``k``-against-the-rest NB-LRs at ``C=c``
    (``review_weights``: each review's weight in every fit, or ``None``)."""
    import scipy.sparse as sp

    weights = np.zeros(ratios.shape, np.float32)
    intercept = np.zeros(ratios.shape[1], np.float64)
    for k in range(ratios.shape[1]):
        model = _logistic(c, seed).fit(
            features @ sp.diags(ratios[:, k]),
            (labels == k).astype(int),
            sample_weight=review_weights,
        )
        weights[:, k] = model.coef_.ravel() * ratios[:, k]
        intercept[k] = model.intercept_[0]
    return weights, intercept


def _on_columns(features, used, counts, validation, num_classes):
    """The training features on the ``used`` columns, and the validation split's
    ``(features, checked labels)`` on them (or ``None``)."""
    if validation is not None:
        validation = (
            features(validation[0])[:, used],
            check_labels(validation[1], num_classes, "validation labels"),
        )
    return features(counts)[:, used], validation


def _every_class(labels, num_classes, init):
    """``labels`` checked (:func:`check_labels`), with a training review of every class."""
    labels = check_labels(labels, num_classes)
    missing = sorted(set(range(num_classes)) - set(labels.tolist()))
    if missing:
        raise ValueError(
            f"ngram.init={init!r} needs every class in the training split. "
            f"Received no training review of the classes {missing} (of {num_classes})."
        )
    return labels


def _logistic(c, seed, multinomial=False):
    """THE L2 logistic regression of the channel's fits (binary: ``liblinear``; the
    multinomial of ``init="lr"`` above two classes: ``lbfgs``)."""
    from sklearn.linear_model import LogisticRegression

    solver = "lbfgs" if multinomial else "liblinear"
    return LogisticRegression(C=c, solver=solver, random_state=seed, max_iter=1000)


def fit_logistic_grid(
    train_x, train_y, C, validation=None, *, seed=0, on_fit=None, class_weight=None
):
    """Logistic regressions over a grid of ``C``; the one with the best validation accuracy.

    Args:
        train_x, train_y: training features and labels.
        C: inverse L2 strength, or a list of them. Several need ``validation``;
            ties go to the first (list the most regularized first).
        validation: optional ``(x, y)`` that chooses among the grid.
        seed: the solver's random state (``liblinear``).
        on_fit: optional callable, given each grid point's entry as it is fit.
        class_weight: optional ``{class: weight}``: each review's loss weighs its
            class's weight, and the grid is chosen on the validation accuracy
            weighted alike (:func:`weighted_accuracy`).

    Returns:
        ``(model, entry, selection)``: the chosen fitted
        ``sklearn.linear_model.LogisticRegression``, its entry (``C``,
        ``train_accuracy``, ``validation_accuracy`` with a validation split,
        ``seconds``), and every grid point's entry.
    """

    weights = sample_weights(train_y, class_weight)

    def fit(c):
        model = _logistic(c, seed).fit(train_x, train_y, sample_weight=weights)
        return model, model.predict

    return _grid_search(C, fit, train_x, train_y, validation, on_fit, class_weight)


def sample_weights(labels, class_weight):
    """Each review's weight, its class's in ``class_weight`` (``None``: ``None``, all 1)."""
    if class_weight is None:
        return None
    table = np.ones(max(int(np.max(labels, initial=0)), max(class_weight)) + 1)
    for k, weight in class_weight.items():
        table[int(k)] = weight
    return table[np.asarray(labels, np.int64)]


def weighted_accuracy(predicted, labels, class_weight=None):
    """Accuracy with each review weighing its class's weight (``None``: the plain accuracy;
    balanced weights of a split of these labels' proportions: the mean of the classes'
    recalls)."""
    hits = (np.asarray(predicted) == np.asarray(labels)).astype(np.float64)
    weights = sample_weights(labels, class_weight)
    return float(hits.mean() if weights is None else np.sum(hits * weights) / np.sum(weights))


def _described(class_weight):
    """``class_weight`` for a run's record (JSON keys are strings)."""
    return {str(k): round(float(w), 6) for k, w in class_weight.items()}


def selection_score(entry):
    """What a grid is chosen by: an entry's validation accuracy, weighted where the fit
    is (``validation_weighted_accuracy``, else ``validation_accuracy``)."""
    return entry.get("validation_weighted_accuracy", entry.get("validation_accuracy", 0.0))


def _grid_search(C, fit, train_x, train_y, validation=None, on_fit=None, class_weight=None):
    """``fit(c) -> (fitted, predict)`` over the grid ``C``; the best on validation accuracy
    (weighted by ``class_weight`` when given: :func:`weighted_accuracy`).

    Returns ``(fitted, entry, selection)`` as :func:`fit_logistic_grid` does.
    """
    grid = _grid("C", C, validation)
    train_y = np.asarray(train_y)
    best, selection = None, []
    for c in grid:
        start = time.perf_counter()
        fitted, predict = fit(c)
        entry = {"C": c, "train_accuracy": float((predict(train_x) == train_y).mean())}
        if validation is not None:
            predicted = predict(validation[0])
            entry["validation_accuracy"] = weighted_accuracy(predicted, validation[1])
            if class_weight is not None:
                entry["validation_weighted_accuracy"] = weighted_accuracy(
                    predicted, validation[1], class_weight
                )
        entry["seconds"] = round(time.perf_counter() - start, 2)
        selection.append(entry)
        if on_fit is not None:
            on_fit(entry)
        key = selection_score(entry)
        if best is None or key > best[0]:
            best = (key, fitted, entry)
    _, fitted, entry = best
    return fitted, entry, selection


def predicted_classes(logits):
    """Predicted labels: ``logit > 0`` for one logit a review, else the argmax."""
    logits = np.asarray(logits)
    return (logits > 0).astype(int) if logits.ndim == 1 else logits.argmax(axis=-1)


def logit_accuracy(logits, labels):
    """Accuracy of logits: ``[N]`` (one a review, ``> 0`` is class 1) or ``[N, C]``."""
    return float((predicted_classes(logits) == np.asarray(labels)).mean())


def logit_losses(logits, labels):
    """Each review's cross-entropy under the logits (one a review: sigmoid; else softmax)."""
    from scipy.special import log_softmax

    logits, labels = np.asarray(logits, np.float64), np.asarray(labels)
    if logits.ndim == 1:  # -log sigmoid(±z), stably
        return np.logaddexp(0.0, -np.where(labels == 1, logits, -logits))
    return -log_softmax(logits, axis=-1)[np.arange(len(labels)), labels]


def logit_log_loss(logits, labels):
    """Mean cross-entropy of the labels under the logits (:func:`logit_losses`)."""
    return float(np.mean(logit_losses(logits, labels)))
