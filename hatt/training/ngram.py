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
``fit="separate"`` the deep part trains alone and :func:`mix_ngram_channel`
sets the channel afterwards and weighs the two logits on the validation split.
``experiments/baselines.py`` (the NB-LR baseline) uses :func:`log_count_ratios`
and :func:`fit_logistic_grid` from here.
"""

import time

import keras
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

    labels = np.asarray(labels)
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
    from sklearn.linear_model import LogisticRegression

    grid = [float(c) for c in (C if isinstance(C, list | tuple) else [C])]
    if not grid or any(not c > 0 for c in grid):
        raise ValueError(f"Expected C to be a positive float or a list of them. Received: C={C!r}")
    if len(grid) > 1 and validation is None:
        raise ValueError(f"A grid of C needs a validation split to choose from. Received: C={C!r}")
    train_y = np.asarray(train_y)
    best, selection = None, []
    for c in grid:
        start = time.perf_counter()
        model = LogisticRegression(C=c, solver="liblinear", random_state=seed, max_iter=1000)
        model.fit(train_x, train_y)
        entry = {"C": c, "train_accuracy": float((model.predict(train_x) == train_y).mean())}
        if validation is not None:
            predicted = model.predict(validation[0])
            entry["validation_accuracy"] = float((predicted == np.asarray(validation[1])).mean())
        entry["seconds"] = round(time.perf_counter() - start, 2)
        selection.append(entry)
        if on_fit is not None:
            on_fit(entry)
        key = entry.get("validation_accuracy", 0.0)
        if best is None or key > best[0]:
            best = (key, model, entry)
    _, model, entry = best
    return model, entry, selection


def channel_accuracy(counts, labels, weights, binary, reduction, intercept=0.0):
    """Accuracy of the channel alone (its logit plus ``intercept`` > 0)."""
    logits = layer_features(counts, binary, reduction) @ weights + intercept
    return float(((logits > 0).astype(int) == np.asarray(labels)).mean())


# === The channel in a model ===


def nb_log_ratios(
    ids, labels, vocabulary_size, buckets, ngram=2, alpha=1.0, min_df=1, chunk_size=1024
):
    """Naive Bayes log-count ratios of the n-gram channel's features (NBSVM).

    With binarized feature counts per review, ``p = alpha + Σ_pos f`` and
    ``q = alpha + Σ_neg f``, the ratio is ``r = log((p / |p|₁) / (q / |q|₁))``
    (Wang & Manning 2012). Features no training review has get ``0``.

    Args:
        ids: ``tf.RaggedTensor`` of encoded reviews (flat or nested), as from
            ``hatt.data.encode``.
        labels: 0/1 labels, one per review.
        vocabulary_size, buckets, ngram: as in ``hatt.layers.NgramLogit``.
        alpha: additive smoothing.
        min_df: features in fewer training reviews get ``0``.

    Returns:
        float32 NumPy array ``[vocabulary_size + buckets]``.
    """
    counts = ngram_counts(ids, vocabulary_size, buckets, ngram, chunk_size)
    return log_count_ratios(counts, labels, alpha=alpha, min_df=min_df)


def fit_ngram_channel(layer, config, counts, labels, validation=None):
    """The n-gram channel's weights per ``config.ngram.init``, from training counts.

    Args:
        layer: the model's ``NgramLogit`` (its ``binary`` and ``reduction``).
        config: a :class:`hatt.training.TrainConfig`; its ``ngram`` section
            (``init``, ``alpha``, ``C``, ``min_df``, ``init_scale``) and ``seed``.
        counts, labels: the training split's counts (:func:`ngram_counts`) and
            labels.
        validation: optional ``(counts, labels)`` of the validation split, which
            chooses ``C`` from a grid and measures the channel alone.

    Returns:
        ``(weights, intercept, info)``: the channel's weights, the intercept of
        its logit (``0`` for ``"nb"``), and a dict describing the start (``init``,
        the channel-alone accuracies, for ``"nblr"`` the chosen ``C``).
    """
    settings = config.ngram
    start = time.perf_counter()
    intercept = 0.0
    if settings.init == "nb":
        weights = log_count_ratios(counts, labels, alpha=settings.alpha, min_df=settings.min_df)
        info = {"init": "nb", "alpha": settings.alpha, "min_df": settings.min_df}
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


def _channel_counts(layer, ids):
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
        validation = (_channel_counts(layer, validation[0]), validation[1])
    weights, intercept, info = fit_ngram_channel(
        layer, config, _channel_counts(layer, ids), labels, validation
    )
    layer.embeddings.assign(weights)
    if intercept:
        bias = model.get_layer("logit").bias
        bias.assign(bias + intercept)
    info["trainable"] = settings.trainable
    accuracy = info.get("channel_validation_accuracy")
    if accuracy is not None:
        print(f"The n-gram channel alone: validation accuracy {accuracy:.4f}")
    return info


def mix_ngram_channel(model, config, ids, labels, validation, test=None, deep_logits=None):
    """``ngram.fit="separate"``: set the channel, then weigh it against the deep part.

    The deep part has been trained with the channel at zero. The channel's
    weights are now fit as ``ngram.init`` says (training split only), and a
    logistic regression on the validation split over the two logits gives
    ``a``, ``b`` and ``c`` of ``a·deep + b·channel + c`` (``channel`` without
    its own intercept, which ``c`` replaces), written into the model (the
    ``"logit"`` kernel and bias are scaled by ``a`` and shifted by ``c``, the
    channel's weights scaled by ``b``): the model's layers and its saved form
    stay as they are. Three numbers are fit on validation, so the validation
    accuracy afterwards is slightly optimistic; nothing is fit on the test
    split (its accuracies of the parts are only reported).

    Args:
        model: the trained model (channel named ``"ngram_logit"``, deep logit
            named ``"logit"``).
        config: its :class:`hatt.training.TrainConfig`.
        ids, labels: the encoded training split and its labels.
        validation: ``(ids, labels)`` of the validation split.
        test: optional ``(ids, labels)`` of the test split, to report the parts'
            accuracies there (nothing is fit on it).
        deep_logits: callable ``split_name -> float array`` of the deep part's
            logits in the split's order.

    Returns:
        ``(info, logits)``: a dict with the channel's start (as
        :func:`fit_ngram_channel`), the mix, and the accuracy of the deep
        part, the channel and both on validation (and test); and per split
        ``{"deep_logits", "channel_logits"}`` (the parts before the mix, the
        channel with its own intercept), float arrays in the split's order.
    """
    from sklearn.linear_model import LogisticRegression

    layer, dense = model.get_layer("ngram_logit"), model.get_layer("logit")
    splits = {"validation": validation, **({"test": test} if test is not None else {})}
    counts = {name: (_channel_counts(layer, i), np.asarray(y)) for name, (i, y) in splits.items()}
    print(f"Fitting the n-gram channel ({config.ngram.init}) on the training split")
    weights, intercept, info = fit_ngram_channel(
        layer, config, _channel_counts(layer, ids), labels, counts["validation"]
    )
    parts = {}  # split → (deep logit, channel logit without its intercept, labels)
    for name, (split_counts, y) in counts.items():
        features = layer_features(split_counts, layer.binary, layer.reduction)
        deep = np.asarray(deep_logits(name), np.float64).reshape(-1)
        parts[name] = (deep, np.asarray(features @ weights, np.float64), y)
    deep, channel, y = parts["validation"]
    mixer = LogisticRegression(C=1e4, max_iter=1000).fit(np.stack([deep, channel], 1), y)
    a, b = (float(w) for w in mixer.coef_[0])
    c = float(mixer.intercept_[0])
    kernel, bias = (keras.ops.convert_to_numpy(v) for v in (dense.kernel, dense.bias))
    dense.kernel.assign(kernel * a)
    dense.bias.assign(bias * a + c)
    layer.embeddings.assign(weights * b)
    info["fit"] = "separate"
    info["trainable"] = False  # the channel never trained with the deep part
    info["channel_intercept"] = intercept
    info["mix"] = {"deep": a, "channel": b, "bias": c}
    for name, (deep, channel, y) in parts.items():
        info[f"deep_{name}_accuracy"] = float(((deep > 0) == y).mean())
        info[f"channel_{name}_accuracy"] = float(((channel + intercept > 0) == y).mean())
        info[f"mixed_{name}_accuracy"] = float(((a * deep + b * channel + c > 0) == y).mean())
    print(
        f"Mixed on validation: {a:.3f}·deep + {b:.3f}·channel + {c:.3f}; validation accuracy "
        f"deep {info['deep_validation_accuracy']:.4f}, channel "
        f"{info['channel_validation_accuracy']:.4f}, both {info['mixed_validation_accuracy']:.4f}"
    )
    # The parts' logits (deep without its mix, channel with its own intercept), saved
    # beside the probabilities so ensembles can weigh the parts themselves.
    logits = {
        name: {"deep_logits": deep, "channel_logits": channel + intercept}
        for name, (deep, channel, _) in parts.items()
    }
    return info, logits
