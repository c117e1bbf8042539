"""The n-gram channel's fit: THE home of its counts, NB ratios and logistic regression.

The channel (``hatt.layers.NgramLogit``, added by ``hatt.models.build(...,
ngram=...)``) is set from the tokenized training split only; its settings are
the ``ngram`` section of :class:`hatt.training.TrainConfig`
(:class:`hatt.training.settings.config.NgramSettings`). Two starts:

- ``"nb"``: the Naive Bayes log-count ratios ``r`` of the channel's features
  (Wang & Manning 2012), the weights of a multinomial NB over binarized counts.
- ``"nblr"``: an NB-weighted logistic regression (NBSVM with a logistic loss,
  the ``nb_lr`` baseline) fit by scikit-learn on exactly the features the
  layer computes (its ``binary`` and ``reduction``). The channel's weights
  become ``coef ⊙ r`` and the intercept goes to the deep part's ``"logit"``
  bias, so before any gradient step the model predicts what the linear model
  does; training then adds the deep part. A grid of ``C`` (and ``alpha``) is
  chosen by stratified k-fold cross-validation on the training split below
  ``CV_DOCUMENTS`` reviews (``ngram.folds``; :func:`cross_validate_grid`), as a
  user tunes a scikit-learn baseline, and on the validation split above.
- ``"lr"``: a logistic regression on the layer's features without NB ratios,
  one softmax regression above two classes. With the layer's ``idf`` and
  ``reduction="l2"`` it is the TF-IDF + LR baseline over the channel's hashed
  n-grams; the IDF is set from the split the channel is fit on (the training
  split; with ``ngram.refit``, training and validation), before the fit.

The counts are a SciPy CSR matrix ``[reviews, features]`` built in chunks with
the layer's own :func:`hatt.layers.ngram_logit.ngram_feature_ids`, so a hashed
bigram gets the same bucket here as in the model.

With ``fit="joint"`` the start is assigned before training
(:func:`init_ngram_channel`) and the channel trains with the deep part; with
``fit="separate"`` the deep part trains alone and
:func:`hatt.training.channel.mix.mix_ngram_channel` sets the channel afterwards and
weighs the two logits on the validation split.
The generic NB-LR code (ratios, the logistic fit, logit figures) is
:mod:`hatt.training.channel.nblr`, which ``experiments/baselines.py`` uses too.

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

from hatt.training.channel.nblr import (
    check_labels,
    document_idf,
    fit_logistic_channel,
    fit_nb_logistic,
    layer_features,
    log_count_ratios,
    logit_accuracy,
    one_vs_rest_log_count_ratios,
    selection_score,
)
from hatt.training.settings import scale


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


def channel_accuracy(counts, labels, weights, binary, reduction, intercept=0.0, idf=None):
    """Accuracy of the channel alone: its logit plus ``intercept`` > 0, or the argmax of its
    logits (``weights`` ``[features, classes]``, ``intercept`` ``[classes]``)."""
    logits = layer_features(counts, binary, reduction, idf) @ weights + intercept
    return logit_accuracy(logits, labels)


def layer_idf(layer):
    """The IDF an ``NgramLogit`` values its features by (a float32 array), or ``None``."""
    if not getattr(layer, "idf", False):
        return None
    import keras

    return keras.ops.convert_to_numpy(layer.idf_weights)


def channel_features(layer, counts):
    """:func:`layer_features` with ``layer``'s settings and IDF: the values it weighs."""
    return layer_features(counts, layer.binary, layer.reduction, layer_idf(layer))


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


def channel_class_weight(config, labels, num_classes):
    """The channel's ``{class: weight}`` (or ``None``): the run's ``class_weight`` on these
    training labels (``"auto"`` resolved by their counts, as a run resolves it;
    :func:`hatt.training.settings.scale.class_weight_map`)."""
    labels = check_labels(labels, num_classes)
    counts = np.bincount(labels, minlength=num_classes)
    return scale.class_weight_map(scale.resolve_class_weight(config.class_weight, counts), counts)


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
            measures the channel alone, and chooses ``C`` (and ``alpha``) from a
            grid where ``ngram.folds`` resolves to 0 (else the training split's
            folds choose: :func:`cross_validate_grid`).

    The run's ``class_weight`` reaches the logistic fits (:func:`channel_class_weight`:
    each review's loss weighs its class's weight, and a grid is chosen on the validation
    accuracy weighted alike); the ``"nb"`` ratios stay unweighted.

    Returns:
        ``(weights, intercept, info)``: the channel's weights (shaped as the
        layer's), the intercept of its logit (``0`` for ``"nb"``; above two
        classes an array, one a class), and a dict describing the start
        (``init``, the channel-alone accuracies, for ``"nblr"`` and ``"lr"``
        the chosen ``C``; chosen by folds, ``cv_accuracy`` and the
        ``cross_validation`` record). A layer with ``idf`` gets the IDF of ``counts``
        first (:func:`hatt.training.channel.nblr.document_idf`): the weights are fit on
        the features it makes.
    """
    settings = config.ngram
    start = time.perf_counter()
    num_classes = num_classes_of_layer(layer)
    intercept = 0.0 if num_classes == 2 else np.zeros(num_classes)
    idf = document_idf(counts, settings.min_df) if getattr(layer, "idf", False) else None
    if idf is not None:
        layer.set_idf(idf)
    if settings.init == "nb":
        weights = _nb_ratios(counts, labels, num_classes, settings.alpha, settings.min_df)
        info = {"init": "nb", "alpha": settings.alpha, "min_df": settings.min_df}
        if num_classes > 2:
            info["scheme"] = "one-vs-rest"
    else:
        weights, intercept, info = _logistic_channel(layer, config, counts, labels, validation, idf)
    weights = weights * settings.init_scale
    intercept *= settings.init_scale
    info["scale"] = settings.init_scale
    for name, split in (("train", (counts, labels)), ("validation", validation)):
        if split is not None:
            info[f"channel_{name}_accuracy"] = channel_accuracy(
                *split, weights, layer.binary, layer.reduction, intercept, idf
            )
    info["seconds"] = round(time.perf_counter() - start, 2)
    return weights, intercept, info


def _logistic_channel(layer, config, counts, labels, validation, idf):
    """:func:`fit_ngram_channel`'s ``"nblr"`` and ``"lr"`` starts: the grid chosen (by the
    training split's folds, or by the validation split), then the kept fit."""
    settings = config.ngram
    num_classes = num_classes_of_layer(layer)
    # what the two logistic starts share: the layer's features, the grid, the validation split
    fit = dict(
        binary=layer.binary,
        reduction=layer.reduction,
        idf=idf,
        alpha=settings.alpha,
        C=settings.C,
        min_df=settings.min_df,
        validation=validation,
        seed=config.seed,
        num_classes=num_classes,
        class_weight=channel_class_weight(config, labels, num_classes),
    )
    folds = settings.folds_for(labels) if len(settings.grid_points()) > 1 else 0
    tuning = None
    if folds:
        (fit["alpha"], fit["C"]), tuning = cross_validate_grid(settings, counts, labels, folds, fit)
    weights, intercept, info = _logistic_start(settings.init, counts, labels, **fit)
    if tuning is not None:
        info["cross_validation"] = tuning
        info["cv_accuracy"] = tuning["chosen"]["cv_accuracy"]
    return weights, intercept, info


def _logistic_start(init, counts, labels, *, alpha, **fit):
    """The logistic start of ``init`` (``"nblr"``: NB-weighted, at ``alpha``; ``"lr"``)."""
    if init == "lr":
        return fit_logistic_channel(counts, labels, **fit)
    return fit_nb_logistic(counts, labels, alpha=alpha, **fit)


def cross_validate_grid(settings, counts, labels, folds, fit):
    """The grid point of a logistic start chosen by stratified k-fold cross-validation.

    Each fold's fit is the start's own (:func:`hatt.training.channel.nblr.fit_nb_logistic`
    or :func:`~hatt.training.channel.nblr.fit_logistic_channel`) on the other folds, its
    grid scored on the held-out fold as it would be on a validation split (the accuracy,
    weighted by ``fit["class_weight"]``: :func:`hatt.training.channel.nblr.selection_score`).
    A layer with ``idf`` takes each fold's IDF from the fold's own training reviews, so
    the held-out reviews stay unseen, as in a scikit-learn pipeline.

    Args:
        settings: the run's :class:`hatt.training.settings.config.NgramSettings`
            (``init``, the grids of ``alpha`` and ``C``, ``min_df``).
        counts, labels: the training split's counts and labels.
        folds: Int >= 2 (:meth:`~hatt.training.settings.config.NgramSettings.folds_for`).
        fit: the keyword arguments of the whole split's fit (``idf``, ``seed`` (which
            also shuffles the folds), ``class_weight``, the layer's features, ...).

    Returns:
        ``((alpha, C), record)``: the point with the best mean held-out score (ties:
        the first of :meth:`~hatt.training.settings.config.NgramSettings.grid_points`,
        the most regularized first), and ``{"folds", "points", "chosen"}``, every
        point's ``alpha``, ``C``, ``cv_accuracy`` (the mean) and ``fold_accuracies``.
    """
    from sklearn.model_selection import StratifiedKFold

    labels = np.asarray(labels)
    scores = {point: [] for point in settings.grid_points()}
    split = StratifiedKFold(folds, shuffle=True, random_state=fit["seed"])
    for number, (kept, held) in enumerate(split.split(np.zeros(len(labels)), labels), 1):
        fold = dict(fit, validation=(counts[held], labels[held]))
        if fit["idf"] is not None:
            fold["idf"] = document_idf(counts[kept], settings.min_df)
        _, _, info = _logistic_start(settings.init, counts[kept], labels[kept], **fold)
        for entry in info["selection"]:
            scores[(entry.get("alpha", settings.alpha), entry["C"])].append(selection_score(entry))
        print(f"  cross-validation fold {number}/{folds} fit ({len(scores)} grid points)")
    points = [
        {"alpha": alpha, "C": c, "cv_accuracy": float(np.mean(s)), "fold_accuracies": s}
        for (alpha, c), s in scores.items()
    ]
    chosen = max(points, key=lambda point: point["cv_accuracy"])  # ties: the first
    return (chosen["alpha"], chosen["C"]), {"folds": folds, "points": points, "chosen": chosen}


def refit_ngram_channel(layer, config, info, train, validation):
    """``ngram.refit``: the channel fit again on the training and validation splits together.

    Args:
        layer, config: as in :func:`fit_ngram_channel`.
        info: the training-split fit's description (its chosen ``alpha`` and ``C``).
        train, validation: ``(counts, labels)`` of the two splits.

    Returns:
        ``(weights, intercept, info)`` as :func:`fit_ngram_channel`, at the
        training-split fit's ``alpha`` and ``C`` (no grid: nothing is left to
        choose them on);
        ``info`` adds ``train_size``.
    """
    import scipy.sparse as sp

    counts = sp.vstack([train[0], validation[0]]).tocsr()
    labels = np.concatenate([np.asarray(train[1]), np.asarray(validation[1])])
    chosen = {key: info[key] for key in ("alpha", "C") if key in info}
    settings = dataclasses.replace(config.ngram, **chosen)
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
            corpus has no ids in memory: :meth:`hatt.training.settings.config.NgramSettings.needs_counts`
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
