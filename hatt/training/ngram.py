"""The n-gram channel's fit: THE home of its counts, NB ratios and logistic regression.

The channel (``hatt.layers.NgramLogit``, added by ``hatt.models.build(...,
ngram=...)``) is set from the tokenized training split only; its settings are
the ``ngram`` section of :class:`hatt.training.TrainConfig`
(:class:`hatt.training.config.NgramSettings`). Two starts:

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

With ``fit="joint"`` the start is assigned before training
(:func:`init_ngram_channel`) and the channel trains with the deep part; with
``fit="separate"`` the deep part trains alone and
:func:`hatt.training.mix.mix_ngram_channel` sets the channel afterwards and
weighs the two logits on the validation split.
``experiments/baselines.py`` (the NB-LR baseline) uses :func:`log_count_ratios`
and :func:`fit_logistic_grid` from here.

**More than two classes** (labels ``0 .. C-1``; the channel has one logit a
class, ``NgramLogit(units=C)``): one-vs-rest. Class ``k``'s column is fit as
the binary channel is, on "``k`` against the rest": its NB ratios ``r_k``
(:func:`one_vs_rest_log_count_ratios`, i.e. :func:`log_count_ratios` of
``labels == k``) for ``"nb"``, and for ``"nblr"`` an L2 logistic regression
on ``features ⊙ r_k`` whose ``coef_k ⊙ r_k`` is the column and whose
intercept goes to the deep logit's bias ``k``. One ``C`` serves every class,
chosen on the validation accuracy of the argmax over the ``C`` channel
logits. One-vs-rest rather than a multinomial fit because each class keeps
the NB scaling that makes NBSVM work (the ratios are two-class quantities),
and each fit is the binary one that the IMDB figures were tuned on. Two
classes take exactly the code path (and the numbers) they took before.
"""

import dataclasses
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
    num_classes=None,
):
    """NB-weighted logistic regression on the channel's features.

    Args:
        counts, labels: training counts (:func:`ngram_counts`) and labels
            (0/1, or ``0 .. num_classes - 1``).
        binary, reduction: the layer's settings (see :func:`layer_features`).
        alpha, min_df: as in :func:`log_count_ratios`.
        C: inverse L2 strength, or a grid of them: with ``validation``, the
            value with the best validation accuracy (ties → the smallest,
            i.e. the most regularized) is kept. Defaults to `0.1`.
        validation: optional ``(counts, labels)`` of the validation split.
        seed: the solver's random state.
        num_classes: Int >= 2; ``None`` (the default) reads it from the
            labels (``max(2, largest + 1)``). Above 2, one-vs-rest (see the
            module's docstring).

    Returns:
        ``(weights, intercept, info)``: float32 channel weights ``coef ⊙ r``
        (``[features]``; ``[features, num_classes]`` above two classes), the
        intercept (a float; a float array ``[num_classes]``), and a dict with
        the chosen ``C``, ``alpha`` and the train / validation accuracies of
        the channel alone.
    """
    import scipy.sparse as sp

    labels = np.asarray(labels)
    num_classes = classes_of(labels, num_classes)
    if num_classes > 2:
        return _fit_nb_logistic_one_vs_rest(
            counts, labels, num_classes, binary, reduction, alpha, min_df, C, validation, seed
        )
    check_labels(labels, 2)
    if len(np.unique(labels)) < 2:
        raise ValueError(
            "ngram.init='nblr' needs both labels in the training split. "
            f"Received labels: {sorted(set(labels.tolist()))}"
        )
    ratios = log_count_ratios(counts, labels, alpha=alpha, min_df=min_df)
    scale = sp.diags(ratios)
    train_x = layer_features(counts, binary, reduction) @ scale
    if validation is not None:
        validation = (layer_features(validation[0], binary, reduction) @ scale, validation[1])
    model, entry, selection = fit_logistic_grid(train_x, labels, C, validation, seed=seed)
    weights = (model.coef_.ravel() * ratios).astype(np.float32)
    info = {"init": "nblr", "alpha": alpha, "min_df": min_df, **entry}
    if len(selection) > 1:
        info["selection"] = selection
    return weights, float(model.intercept_[0]), info


def _fit_nb_logistic_one_vs_rest(
    counts, labels, num_classes, binary, reduction, alpha, min_df, C, validation, seed
):
    """:func:`fit_nb_logistic` above two classes: one NB-LR a class against the rest."""
    labels = check_labels(labels, num_classes)
    missing = sorted(set(range(num_classes)) - set(labels.tolist()))
    if missing:
        raise ValueError(
            "ngram.init='nblr' needs every class in the training split. "
            f"Received no training review of the classes {missing} (of {num_classes})."
        )
    ratios = one_vs_rest_log_count_ratios(counts, labels, num_classes, alpha, min_df)
    train_x = layer_features(counts, binary, reduction)
    if validation is not None:
        validation = (
            layer_features(validation[0], binary, reduction),
            check_labels(validation[1], num_classes, "validation labels"),
        )

    def fit(c):
        fitted = _one_vs_rest_at(train_x, labels, ratios, c, seed)
        return fitted, lambda x: _predicted(x @ fitted[0] + fitted[1])

    (weights, intercept), entry, selection = _grid_search(C, fit, train_x, labels, validation)
    info = {"init": "nblr", "scheme": "one-vs-rest", "alpha": alpha, "min_df": min_df, **entry}
    if len(selection) > 1:
        info["selection"] = selection
    return weights, intercept, info


def _one_vs_rest_at(features, labels, ratios, c, seed):
    """Columns ``coef_k ⊙ r_k`` and intercepts of the ``k``-against-the-rest NB-LRs at ``C=c``."""
    import scipy.sparse as sp

    weights = np.zeros(ratios.shape, np.float32)
    intercept = np.zeros(ratios.shape[1], np.float64)
    for k in range(ratios.shape[1]):
        model = _logistic(c, seed).fit(features @ sp.diags(ratios[:, k]), (labels == k).astype(int))
        weights[:, k] = model.coef_.ravel() * ratios[:, k]
        intercept[k] = model.intercept_[0]
    return weights, intercept


def _logistic(c, seed):
    """THE L2 logistic regression of the channel's fits (binary; ``liblinear``)."""
    from sklearn.linear_model import LogisticRegression

    return LogisticRegression(C=c, solver="liblinear", random_state=seed, max_iter=1000)


def fit_logistic_grid(train_x, train_y, C, validation=None, *, seed=0, on_fit=None):
    """Logistic regressions over a grid of ``C``; the one with the best validation accuracy.

    Args:
        train_x, train_y: training features and labels.
        C: inverse L2 strength, or a list of them. Several need ``validation``;
            ties go to the first (list the most regularized first).
        validation: optional ``(x, y)`` that chooses among the grid.
        seed: the solver's random state (``liblinear``).
        on_fit: optional callable, given each grid point's entry as it is fit.

    Returns:
        ``(model, entry, selection)``: the chosen fitted
        ``sklearn.linear_model.LogisticRegression``, its entry (``C``,
        ``train_accuracy``, ``validation_accuracy`` with a validation split,
        ``seconds``), and every grid point's entry.
    """

    def fit(c):
        model = _logistic(c, seed).fit(train_x, train_y)
        return model, model.predict

    return _grid_search(C, fit, train_x, train_y, validation, on_fit)


def _grid_search(C, fit, train_x, train_y, validation=None, on_fit=None):
    """``fit(c) -> (fitted, predict)`` over the grid ``C``; the best on validation accuracy.

    Returns ``(fitted, entry, selection)`` as :func:`fit_logistic_grid` does.
    """
    grid = [float(c) for c in (C if isinstance(C, list | tuple) else [C])]
    if not grid or any(not c > 0 for c in grid):
        raise ValueError(f"Expected C to be a positive float or a list of them. Received: C={C!r}")
    if len(grid) > 1 and validation is None:
        raise ValueError(f"A grid of C needs a validation split to choose from. Received: C={C!r}")
    train_y = np.asarray(train_y)
    best, selection = None, []
    for c in grid:
        start = time.perf_counter()
        fitted, predict = fit(c)
        entry = {"C": c, "train_accuracy": float((predict(train_x) == train_y).mean())}
        if validation is not None:
            predicted = predict(validation[0])
            entry["validation_accuracy"] = float((predicted == np.asarray(validation[1])).mean())
        entry["seconds"] = round(time.perf_counter() - start, 2)
        selection.append(entry)
        if on_fit is not None:
            on_fit(entry)
        key = entry.get("validation_accuracy", 0.0)
        if best is None or key > best[0]:
            best = (key, fitted, entry)
    _, fitted, entry = best
    return fitted, entry, selection


def _predicted(logits):
    """Predicted labels: ``logit > 0`` for one logit a review, else the argmax."""
    logits = np.asarray(logits)
    return (logits > 0).astype(int) if logits.ndim == 1 else logits.argmax(axis=-1)


def logit_accuracy(logits, labels):
    """Accuracy of logits: ``[N]`` (one a review, ``> 0`` is class 1) or ``[N, C]``."""
    return float((_predicted(logits) == np.asarray(labels)).mean())


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


def channel_accuracy(counts, labels, weights, binary, reduction, intercept=0.0):
    """Accuracy of the channel alone: its logit plus ``intercept`` > 0, or the argmax of its
    logits (``weights`` ``[features, classes]``, ``intercept`` ``[classes]``)."""
    logits = layer_features(counts, binary, reduction) @ weights + intercept
    return logit_accuracy(logits, labels)


# === The channel in a model ===


def nb_log_ratios(
    ids,
    labels,
    vocabulary_size,
    buckets,
    ngram=2,
    alpha=1.0,
    min_df=1,
    chunk_size=1024,
    *,
    num_classes=2,
):
    """Naive Bayes log-count ratios of the n-gram channel's features (NBSVM).

    With binarized feature counts per review, ``p = alpha + Σ_pos f`` and
    ``q = alpha + Σ_neg f``, the ratio is ``r = log((p / |p|₁) / (q / |q|₁))``
    (Wang & Manning 2012). Features no training review has get ``0``.

    Args:
        ids: ``tf.RaggedTensor`` of encoded reviews (flat or nested), as from
            ``hatt.data.encode``.
        labels: 0/1 labels (``0 .. num_classes - 1``), one per review.
        vocabulary_size, buckets, ngram: as in ``hatt.layers.NgramLogit``.
        alpha: additive smoothing.
        min_df: features in fewer training reviews get ``0``.
        num_classes: Int >= 2; above 2, one column a class, of that class
            against the rest (:func:`one_vs_rest_log_count_ratios`).

    Returns:
        float32 NumPy array ``[vocabulary_size + buckets]``
        (``[vocabulary_size + buckets, num_classes]`` above two classes).
    """
    counts = ngram_counts(ids, vocabulary_size, buckets, ngram, chunk_size)
    return _nb_ratios(counts, labels, num_classes, alpha, min_df)


def _nb_ratios(counts, labels, num_classes, alpha, min_df):
    """The ``"nb"`` start: :func:`log_count_ratios`, one-vs-rest above two classes."""
    if num_classes == 2:
        return log_count_ratios(counts, labels, alpha=alpha, min_df=min_df)
    return one_vs_rest_log_count_ratios(counts, labels, num_classes, alpha, min_df)


def num_classes_of_layer(layer):
    """The classes an ``NgramLogit`` serves: 2 for one logit, else its ``units``."""
    units = getattr(layer, "units", 1)
    return 2 if units == 1 else units


def fit_ngram_channel(layer, config, counts, labels, validation=None):
    """The n-gram channel's weights per ``config.ngram.init``, from training counts.

    Args:
        layer: the model's ``NgramLogit`` (its ``binary``, ``reduction`` and
            ``units``: one logit for two classes, one a class above).
        config: a :class:`hatt.training.TrainConfig`; its ``ngram`` section
            (``init``, ``alpha``, ``C``, ``min_df``, ``init_scale``) and ``seed``.
        counts, labels: the training split's counts (:func:`ngram_counts`) and
            labels.
        validation: optional ``(counts, labels)`` of the validation split, which
            chooses ``C`` from a grid and measures the channel alone.

    Returns:
        ``(weights, intercept, info)``: the channel's weights (shaped as the
        layer's), the intercept of its logit (``0`` for ``"nb"``; above two
        classes an array, one a class), and a dict describing the start
        (``init``, the channel-alone accuracies, for ``"nblr"`` the chosen ``C``).
    """
    settings = config.ngram
    start = time.perf_counter()
    num_classes = num_classes_of_layer(layer)
    intercept = 0.0 if num_classes == 2 else np.zeros(num_classes)
    if settings.init == "nb":
        weights = _nb_ratios(counts, labels, num_classes, settings.alpha, settings.min_df)
        info = {"init": "nb", "alpha": settings.alpha, "min_df": settings.min_df}
        if num_classes > 2:
            info["scheme"] = "one-vs-rest"
    else:
        weights, intercept, info = fit_nb_logistic(
            counts,
            labels,
            binary=layer.binary,
            reduction=layer.reduction,
            alpha=settings.alpha,
            min_df=settings.min_df,
            C=settings.C,
            validation=validation,
            seed=config.seed,
            num_classes=num_classes,
        )
    weights = weights * settings.init_scale
    intercept *= settings.init_scale
    info["scale"] = settings.init_scale
    for name, split in (("train", (counts, labels)), ("validation", validation)):
        if split is not None:
            info[f"channel_{name}_accuracy"] = channel_accuracy(
                *split, weights, layer.binary, layer.reduction, intercept
            )
    info["seconds"] = round(time.perf_counter() - start, 2)
    return weights, intercept, info


def refit_ngram_channel(layer, config, info, train, validation):
    """``ngram.refit``: the channel fit again on the training and validation splits together.

    Args:
        layer, config: as in :func:`fit_ngram_channel`.
        info: the training-split fit's description (its chosen ``C``).
        train, validation: ``(counts, labels)`` of the two splits.

    Returns:
        ``(weights, intercept, info)`` as :func:`fit_ngram_channel`, at the
        training-split fit's ``C`` (no grid: nothing is left to choose it on);
        ``info`` adds ``train_size``.
    """
    import scipy.sparse as sp

    counts = sp.vstack([train[0], validation[0]]).tocsr()
    labels = np.concatenate([np.asarray(train[1]), np.asarray(validation[1])])
    settings = dataclasses.replace(config.ngram, C=info.get("C", config.ngram.C))
    refit_config = dataclasses.replace(config, ngram=settings)
    print(
        f"Fitting the n-gram channel again on the training and validation splits ({len(labels):,})"
    )
    weights, intercept, refit = fit_ngram_channel(layer, refit_config, counts, labels)
    refit["train_size"] = len(labels)
    return weights, intercept, refit


def channel_counts(layer, ids):
    return ngram_counts(ids, layer.vocabulary_size, layer.buckets, layer.ngram)


def init_ngram_channel(model, config, ids, labels, validation=None):
    """Set the n-gram channel's weights per ``config.ngram.init`` (no-op without one).

    With ``fit="separate"`` nothing is set here: the deep part trains with
    the channel at zero, and :func:`mix_ngram_channel` sets it afterwards.

    Args:
        model: a model built with an n-gram channel (else nothing happens).
        config: a :class:`hatt.training.TrainConfig`.
        ids, labels: the encoded training split and its labels (a prepared
            corpus has no ids in memory: :meth:`hatt.training.config.NgramSettings.needs_counts`
            is checked before any data is read).
        validation: optional ``(ids, labels)`` of the validation split (see
            :func:`fit_ngram_channel`).

    Returns:
        The start's description (:func:`fit_ngram_channel`), or ``None`` when
        there is no channel or it is set after training.
    """
    try:
        layer = model.get_layer("ngram_logit")
    except ValueError:
        return None
    settings = config.ngram
    if settings.init == "zeros":
        return {"init": "zeros"}
    if settings.fit == "separate":  # the deep part trains alone first
        return None
    print(f"Starting the n-gram channel ({settings.init}) from the training split")
    if validation is not None:
        validation = (channel_counts(layer, validation[0]), validation[1])
    weights, intercept, info = fit_ngram_channel(
        layer, config, channel_counts(layer, ids), labels, validation
    )
    layer.embeddings.assign(weights)
    _shift_bias(model.get_layer("logit"), intercept)
    info["trainable"] = settings.trainable
    accuracy = info.get("channel_validation_accuracy")
    if accuracy is not None:
        print(f"The n-gram channel alone: validation accuracy {accuracy:.4f}")
    return info


def _shift_bias(dense, intercept):
    """Add the channel's intercept (a float, or one a class) to the deep logits' bias."""
    if np.ndim(intercept) == 0:
        if intercept:
            dense.bias.assign(dense.bias + intercept)
    elif np.any(intercept):
        dense.bias.assign(dense.bias + np.asarray(intercept, np.float32))
