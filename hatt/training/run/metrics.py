"""Classification metrics of a split, any number of classes: THE home of these figures.

:func:`classification_metrics` turns labels and predicted probabilities into a
JSON-ready dict (accuracy, macro-F1, per-class precision / recall / F1, the
confusion matrix with class names, and for ordered numeric labels such as
star ratings the mean absolute error); :func:`format_metrics` renders that
dict as markdown tables for the console and for files. NumPy only.
"""

import numbers

import numpy as np

# Rows of a probability matrix may sum to 1 within this (float16 / float32 softmax outputs).
SUM_TOLERANCE = 1e-3


def classification_metrics(labels, probabilities, class_names):
    """Accuracy, macro-F1, per-class figures and the confusion matrix of one split.

    The prediction is the most probable class (for a binary ``[N]`` input:
    class 1 when its probability is above 0.5, which is the argmax of
    ``[1 - p, p]``; ties go to the first class). Per class, precision is
    ``tp / predicted`` and recall ``tp / support``; a class never predicted
    gets precision 0 and a class absent from ``labels`` recall 0, so nothing
    is NaN (scikit-learn's ``zero_division=0``). ``macro_f1`` is the mean of
    the F1 of every class in ``class_names``.

    When every class name is a number (ordered labels such as star ratings),
    two mean absolute errors in the units of those numbers are added (for
    IMDB's ratings: predicting "7" for a "4" is 3 stars off):

    - ``mae``: of the argmax prediction above;
    - ``mae_median``: of the prediction that minimises the expected absolute
      error under the predicted distribution, i.e. its median over the
      numeric values (the smallest value whose cumulative probability
      reaches half; the numeric order is used, whatever the order of
      ``class_names``).

    Args:
        labels: ``[N]`` int class indices into ``class_names``.
        probabilities: ``[N, C]`` class probabilities (rows summing to 1), or
            ``[N]`` for two classes: the probability of class 1.
        class_names: the ``C >= 2`` class names, in index order (shown as
            ``str``).

    Returns:
        A JSON-ready dict: ``examples``, ``accuracy``, ``macro_f1``,
        ``per_class`` (``{name: {"precision", "recall", "f1", "support"}}``),
        ``confusion_matrix`` (``{"classes", "rows": "true", "columns":
        "predicted", "matrix"}``: ``matrix[i][j]`` counts examples of class
        ``i`` predicted as ``j``; above :data:`DENSE_CONFUSION_CLASSES`
        classes ``{"num_classes", "rows", "columns", "sparse": {"true",
        "predicted", "count"}}``, its non-zero cells, and ``top_confusions``,
        the most frequent wrong pairs: :func:`dense_confusion` reads both),
        and with numeric class names ``mae`` and ``mae_median``.

    Raises:
        ValueError: no examples, fewer than two or repeated class names,
            shapes that do not match, labels that are not class indices, or
            probabilities outside ``[0, 1]`` / rows that do not sum to 1; the
            message names the argument.

    Example:

    >>> from hatt.training.run.metrics import classification_metrics
    >>> m = classification_metrics([0, 2, 1], [[.8, .1, .1], [.1, .2, .7], [.5, .3, .2]],
    ...                            ["1", "2", "3"])
    >>> round(m["accuracy"], 4), round(m["mae"], 4)
    (0.6667, 0.3333)
    """
    names = _check_class_names(class_names)
    probabilities = _check_probabilities(probabilities, len(names))
    labels = _check_labels(labels, len(names), len(probabilities))
    predicted = np.argmax(probabilities, axis=1)
    cells = _confusion_cells(labels, predicted, len(names))
    per_class = _per_class(cells, len(names))
    metrics = {
        "examples": len(labels),
        "accuracy": float(np.mean(labels == predicted)),
        "macro_f1": float(np.mean([row["f1"] for row in per_class])),
        "per_class": dict(zip(names, per_class, strict=True)),
        "confusion_matrix": _confusion_json(cells, names),
    }
    if len(names) > DENSE_CONFUSION_CLASSES:
        metrics["top_confusions"] = _top_confusions(cells, names)
    values = numeric_values(names)
    if values is not None:
        metrics["mae"] = float(np.mean(np.abs(values[predicted] - values[labels])))
        median = median_prediction(probabilities, values)
        metrics["mae_median"] = float(np.mean(np.abs(median - values[labels])))
    return metrics


# The headline figures, written flat as ``test_accuracy``, ``test_macro_f1``, ... into
# results files (metrics.json, experiments/results/*.json) for the results tables.
FLAT_KEYS = ("accuracy", "macro_f1", "mae", "mae_median")


def flat_metrics(metrics, prefix):
    """The headline figures of ``metrics`` as ``{"PREFIX_accuracy": ..., ...}``.

    Args:
        metrics: dict from :func:`classification_metrics`.
        prefix: the split's name, e.g. ``"test"``.

    Returns:
        dict of ``PREFIX_KEY`` for each of :data:`FLAT_KEYS` that ``metrics``
        holds (``mae`` and ``mae_median`` only for numeric class names).

    Example:

    >>> from hatt.training.run.metrics import classification_metrics, flat_metrics
    >>> sorted(flat_metrics(classification_metrics([0], [0.2], ["neg", "pos"]), "test"))
    ['test_accuracy', 'test_macro_f1']
    """
    return {f"{prefix}_{key}": metrics[key] for key in FLAT_KEYS if key in metrics}


# === The steps ===


def _check_class_names(class_names):
    if isinstance(class_names, str) or not hasattr(class_names, "__len__"):
        raise ValueError(
            "Expected class_names to be a list of at least two names. "
            f"Received: class_names={class_names!r}"
        )
    names = [str(name) for name in class_names]
    if len(names) < 2 or len(set(names)) != len(names):
        raise ValueError(
            "Expected class_names to be at least two distinct names. "
            f"Received: class_names={list(class_names)!r}"
        )
    return names


def _check_probabilities(probabilities, num_classes):
    """``[N, C]`` float64 probabilities (a binary ``[N]`` becomes ``[1 - p, p]``)."""
    try:
        array = np.asarray(probabilities, dtype=np.float64)
    except (TypeError, ValueError):
        array = None
    shape = None if array is None else array.shape
    expected = f"[N] (two classes) or [N, {num_classes}]"
    if array is None or array.ndim not in (1, 2) or (array.ndim == 1 and num_classes != 2):
        raise ValueError(
            f"Expected probabilities to be numbers of shape {expected}. "
            f"Received: probabilities of shape {shape}"
        )
    if array.ndim == 2 and array.shape[1] != num_classes:
        raise ValueError(
            f"Expected probabilities to have {num_classes} columns, one per class name. "
            f"Received: probabilities of shape {shape}"
        )
    if len(array) == 0:
        raise ValueError("Expected at least one example. Received: probabilities of shape (0,)")
    if not np.all(np.isfinite(array)) or array.min() < 0 or array.max() > 1:
        bad = array[~(np.isfinite(array) & (array >= 0) & (array <= 1))]
        raise ValueError(
            "Expected probabilities to lie in [0, 1]. "
            f"Received: probabilities with values such as {bad.ravel()[:3].tolist()}"
        )
    if array.ndim == 1:
        return np.stack([1.0 - array, array], axis=1)
    sums = array.sum(axis=1)
    wrong = np.flatnonzero(np.abs(sums - 1.0) > SUM_TOLERANCE)
    if len(wrong):
        raise ValueError(
            "Expected each row of probabilities to sum to 1. "
            f"Received: row {wrong[0]} sums to {sums[wrong[0]]:.6g}"
        )
    return array


def _check_labels(labels, num_classes, count):
    array = np.asarray(labels)
    if array.ndim != 1 or len(array) != count:
        raise ValueError(
            f"Expected labels to be {count} class indices, one per row of probabilities. "
            f"Received: labels of shape {array.shape}"
        )
    integral = array.dtype.kind in "iub" or (
        array.dtype.kind == "f" and np.all(np.isfinite(array)) and np.all(array == np.round(array))
    )
    if not integral or array.min() < 0 or array.max() >= num_classes:
        bad = array if not integral else array[(array < 0) | (array >= num_classes)]
        raise ValueError(
            f"Expected labels to be class indices in [0, {num_classes - 1}]. "
            f"Received: labels with values such as {bad.ravel()[:3].tolist()}"
        )
    return array.astype(np.int64)


# Above this many classes the confusion matrix is stored sparse (its non-zero cells) and the
# summary shows the most frequent confusions: a dense 10,000 x 10,000 matrix is 10^8 cells.
DENSE_CONFUSION_CLASSES = 50
TOP_CONFUSIONS = 20


def _confusion_cells(labels, predicted, num_classes):
    """The confusion matrix's non-zero cells: ``(true [K], predicted [K], count [K])``."""
    pairs, counts = np.unique(
        np.asarray(labels, np.int64) * num_classes + predicted, return_counts=True
    )
    return pairs // num_classes, pairs % num_classes, counts


def dense_confusion(confusion):
    """The ``[C, C]`` matrix of a ``confusion_matrix`` dict, dense or sparse."""
    if "matrix" in confusion:
        return np.asarray(confusion["matrix"], np.int64)
    size = confusion["num_classes"]
    matrix = np.zeros((size, size), np.int64)
    sparse = confusion["sparse"]
    matrix[sparse["true"], sparse["predicted"]] = sparse["count"]
    return matrix


def _confusion_json(cells, names):
    true, predicted, counts = cells
    if len(names) <= DENSE_CONFUSION_CLASSES:
        matrix = np.zeros((len(names), len(names)), np.int64)
        matrix[true, predicted] = counts
        return {"classes": names, "rows": "true", "columns": "predicted", "matrix": matrix.tolist()}
    return {  # the class names are metrics.json's class_names (and per_class's keys)
        "num_classes": len(names),
        "rows": "true",
        "columns": "predicted",
        "sparse": {
            "true": true.tolist(),
            "predicted": predicted.tolist(),
            "count": counts.tolist(),
        },
    }


def _top_confusions(cells, names, top=TOP_CONFUSIONS):
    """The most frequent ``(true, predicted)`` pairs of different classes."""
    true, predicted, counts = cells
    wrong = np.flatnonzero(true != predicted)
    order = wrong[np.argsort(-counts[wrong], kind="stable")][:top]
    return [
        {"true": names[true[i]], "predicted": names[predicted[i]], "count": int(counts[i])}
        for i in order
    ]


def _per_class(cells, num_classes):
    """Precision, recall, F1 and support of each class from the confusion cells (no NaN)."""
    true, predicted, counts = cells
    support = np.bincount(true, weights=counts, minlength=num_classes)
    predictions = np.bincount(predicted, weights=counts, minlength=num_classes)
    hits = np.bincount(
        true[true == predicted], weights=counts[true == predicted], minlength=num_classes
    )
    precision = np.divide(hits, predictions, out=np.zeros(num_classes), where=predictions > 0)
    recall = np.divide(hits, support, out=np.zeros(num_classes), where=support > 0)
    total = precision + recall
    f1 = np.divide(2 * precision * recall, total, out=np.zeros(num_classes), where=total > 0)
    return [
        {"precision": float(p), "recall": float(r), "f1": float(f), "support": int(s)}
        for p, r, f, s in zip(precision, recall, f1, support, strict=True)
    ]


def numeric_values(class_names):
    """The class names as float64 numbers, or ``None`` when any is not a number."""
    values = []
    for name in class_names:
        if isinstance(name, numbers.Real) and not isinstance(name, bool):
            value = float(name)
        else:
            try:
                value = float(str(name).strip())
            except ValueError:
                return None
        if not np.isfinite(value):
            return None
        values.append(value)
    return np.asarray(values, dtype=np.float64)


def median_prediction(probabilities, values):
    """Per row, the median of the distribution ``probabilities`` over ``values``.

    The smallest value (in numeric order) whose cumulative probability reaches
    half of the row's total: it minimises the expected absolute error.

    Args:
        probabilities: ``[N, C]`` non-negative weights.
        values: ``[C]`` numbers, in the columns' order (any order).

    Returns:
        ``[N]`` float64 values.
    """
    probabilities = np.asarray(probabilities, dtype=np.float64)
    values = np.asarray(values, dtype=np.float64)
    order = np.argsort(values, kind="stable")
    cumulative = np.cumsum(probabilities[:, order], axis=1)
    half = cumulative[:, -1:] / 2
    # A tiny slack so that a row summing to exactly one half in floating point counts.
    first = np.argmax(cumulative >= half - 1e-12, axis=1)
    return values[order][first]


# === Rendering ===


def format_metrics(metrics):
    """A metrics dict of :func:`classification_metrics` as markdown.

    A summary line, a table of per-class precision / recall / F1 / support,
    and the confusion matrix (rows: true class, columns: predicted).

    Args:
        metrics: dict from :func:`classification_metrics` (as read back from
            ``metrics.json`` too).

    Returns:
        str, markdown without a trailing newline.

    Example:

    >>> from hatt.training.run.metrics import classification_metrics, format_metrics
    >>> text = format_metrics(classification_metrics([0, 1], [0.2, 0.9], ["neg", "pos"]))
    >>> text.splitlines()[0]
    'accuracy 100.00 % · macro-F1 1.0000 · 2 examples'
    """
    summary = f"accuracy {100 * metrics['accuracy']:.2f} % · macro-F1 {metrics['macro_f1']:.4f}"
    if "mae" in metrics:
        summary += f" · MAE {metrics['mae']:.3f}"
        if "mae_median" in metrics:
            summary += f" (median prediction {metrics['mae_median']:.3f})"
    summary += f" · {metrics.get('examples', _total(metrics)):,} examples"
    lines = [
        summary,
        "",
        "| class | precision | recall | F1 | support |",
        "|---|---|---|---|---|",
    ]
    rows = list(metrics["per_class"].items())
    if len(rows) > DENSE_CONFUSION_CLASSES:  # many classes: the largest ones, and a count
        rows = sorted(rows, key=lambda item: -item[1]["support"])
    for name, row in rows[:DENSE_CONFUSION_CLASSES]:
        lines.append(
            f"| {_cell(name)} | {row['precision']:.4f} | {row['recall']:.4f} "
            f"| {row['f1']:.4f} | {row['support']:,} |"
        )
    if len(rows) > DENSE_CONFUSION_CLASSES:
        lines.append(
            f"| … {len(rows) - DENSE_CONFUSION_CLASSES:,} smaller classes (per_class in "
            "metrics.json) | | | | |"
        )
    confusion = metrics["confusion_matrix"]
    if "matrix" not in confusion:  # many classes: the most frequent confusions instead
        lines += [
            "",
            "Most frequent confusions:",
            "",
            "| true | predicted | count |",
            "|---|---|---|",
        ]
        for pair in metrics.get("top_confusions", []):
            true, predicted = _cell(pair["true"]), _cell(pair["predicted"])
            lines.append(f"| {true} | {predicted} | {pair['count']:,} |")
        return "\n".join(lines)
    classes = [_cell(name) for name in confusion["classes"]]
    lines += [
        "",
        "Confusion matrix (rows: true class, columns: predicted class):",
        "",
        "| true \\ predicted | " + " | ".join(classes) + " |",
        "|---" * (len(classes) + 1) + "|",
    ]
    for name, row in zip(classes, confusion["matrix"], strict=True):
        lines.append(f"| {name} | " + " | ".join(f"{count:,}" for count in row) + " |")
    return "\n".join(lines)


def _total(metrics):
    return sum(row["support"] for row in metrics["per_class"].values())


def _cell(text):
    """A class name fit for a markdown table cell."""
    return str(text).replace("\\", "\\\\").replace("|", "\\|").replace("\n", " ")
