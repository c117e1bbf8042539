"""Corpus statistics: split sizes, documents per class and length distributions (``hatt data``)."""

import numpy as np

from hatt.data.corpus import BINARY_CLASSES, SPLITS, count_classes
from hatt.data.text import tokenize
from hatt.progress import printable

STATISTICS = ("mean", "median", "p90", "p99", "max")
LENGTHS = ("words_per_review", "sentences_per_review", "words_per_sentence")
IMBALANCE = 5.0  # warn when the largest class has more than this many times the smallest's
_NAME_WIDTH = 24  # class names are cut to this many characters in the table


def _distribution(values):
    values = np.asarray(values)
    if values.size == 0:
        return {"mean": 0.0, "median": 0.0, "p90": 0.0, "p99": 0.0, "max": 0}
    return {
        "mean": round(float(values.mean()), 1),
        "median": round(float(np.median(values)), 1),
        "p90": round(float(np.percentile(values, 90)), 1),
        "p99": round(float(np.percentile(values, 99)), 1),
        "max": int(values.max()),
    }


def _lengths(texts, chunk_size=4096):
    """Words per review, sentences per review and words per sentence of ``texts``."""
    words, sentences, per_sentence = [], [], []
    for start in range(0, len(texts), chunk_size):
        tokens = tokenize(texts[start : start + chunk_size])
        words.extend(tokens.merge_dims(1, 2).row_lengths().numpy().tolist())
        sentences.extend(tokens.row_lengths().numpy().tolist())
        per_sentence.extend(tokens.row_lengths(axis=2).flat_values.numpy().tolist())
    return dict(zip(LENGTHS, (words, sentences, per_sentence), strict=True))


def imbalance_warning(class_names, counts, class_weight=None):
    """A warning when the largest class has more than ``IMBALANCE`` times the smallest's.

    Args:
        class_names: the classes' names.
        counts: documents per class.
        class_weight: the run's resolved weighting, ``"balanced"``, ``"sqrt"`` or ``"none"``
            (`hatt train`); ``None`` when no run is concerned (`hatt data`).

    Returns:
        the warning's text, or ``None`` when the classes are balanced enough.
    """
    counts = np.asarray(counts)
    largest, smallest = int(np.argmax(counts)), int(np.argmin(counts))
    if counts[largest] <= IMBALANCE * counts[smallest]:
        return None
    if not counts[smallest]:
        return f"the class {class_names[smallest]!r} has no documents"
    if class_weight == "balanced":
        fix = "this run weighs the classes by 1 / frequency (--class-weight balanced)"
    elif class_weight == "sqrt":
        fix = (
            "this run weighs the classes by 1 / sqrt(frequency) (--class-weight sqrt); "
            "--class-weight balanced weighs them by 1 / frequency"
        )
    elif class_weight == "none":
        fix = "this run weighs every class 1; --class-weight balanced weighs them by 1 / frequency"
    else:
        fix = (
            "hatt train weighs the classes by 1 / frequency (--class-weight balanced) when the "
            "largest has over 1.5x the smallest's documents (the default, --class-weight auto)"
        )
    return (
        f"the largest class ({class_names[largest]!r}: {counts[largest]} documents) has "
        f"{counts[largest] / counts[smallest]:.1f}x as many as the smallest "
        f"({class_names[smallest]!r}: {counts[smallest]}); accuracy alone flatters a model "
        f"that favours the large classes: read its macro-F1; {fix}"
    )


def statistics(corpus):
    """Split sizes, documents per class and length statistics (words, sentences).

    Args:
        corpus: a :class:`hatt.data.TextCorpus` (or :class:`hatt.data.Imdb`).

    Returns:
        ``{"source", "class_names", "splits": {split: {"reviews", "classes":
        {name: count}, "words_per_review", "sentences_per_review",
        "words_per_sentence"}}, "warnings", "report"}``, each length a dict of
        ``mean``, ``median``, ``p90``, ``p99``, ``max``. A binary corpus's
        splits also hold ``"positive"`` (label 1) and ``"negative"`` (label 0).
        ``warnings`` holds the class-imbalance warning (over all splits).
    """
    class_names = tuple(getattr(corpus, "class_names", BINARY_CLASSES))
    stats = {"source": corpus.source, "class_names": list(class_names), "splits": {}}
    total = np.zeros(len(class_names), dtype=np.int64)
    for name in SPLITS:
        split = getattr(corpus, name)
        counts = count_classes(split.labels, len(class_names))
        total += counts
        stats["splits"][name] = {
            "reviews": len(split),
            "classes": dict(zip(class_names, counts.tolist(), strict=True)),
        }
        if len(class_names) == 2:
            stats["splits"][name].update(positive=int(counts[1]), negative=int(counts[0]))
        lengths = _lengths(split.texts)
        stats["splits"][name].update({k: _distribution(v) for k, v in lengths.items()})
    warning = imbalance_warning(class_names, total)
    stats["warnings"] = [warning] if warning else []
    stats["report"] = dict(getattr(corpus, "report", None) or {})
    return stats


def _table(header, rows, align=None):
    """Rows of cells as lines, each column as wide as its widest cell and two spaces apart,
    so that a number that outgrows its column widens it instead of running into its
    neighbour (issue 63). ``align``: ``"l"`` or ``"r"`` a column (default: the first
    left, the others right)."""
    table = [header, *rows]
    align = align or "l" + "r" * (len(header) - 1)
    widths = [max(len(row[k]) for row in table) for k in range(len(header))]
    return [
        "  ".join(
            cell.ljust(width) if side == "l" else cell.rjust(width)
            for cell, width, side in zip(row, widths, align, strict=True)
        ).rstrip()
        for row in table
    ]


def _shown_name(name):
    """A class name as the table shows it: controls escaped, cut to ``_NAME_WIDTH``."""
    shown = printable(name)
    return shown if len(shown) <= _NAME_WIDTH else shown[: _NAME_WIDTH - 1] + "…"


def _class_table(stats):
    splits = list(stats["splits"])
    rows = [
        [_shown_name(name), *(str(stats["splits"][s]["classes"][name]) for s in splits)]
        for name in stats["class_names"]
    ]
    rows.append(["all", *(str(stats["splits"][s]["reviews"]) for s in splits)])
    return _table(["class", *splits], rows)


def _length_table(stats):
    rows = []
    for name, split in stats["splits"].items():
        for row, key in enumerate(LENGTHS):
            first = [name, str(split["reviews"])] if row == 0 else ["", ""]
            rows.append([*first, key, *(str(split[key][k]) for k in STATISTICS)])
    return _table(["split", "reviews", "", *STATISTICS], rows, align="lrl" + "r" * len(STATISTICS))


def _report_lines(report):
    """What reading skipped or repaired, counted. Its warnings are not repeated: the reader
    printed them on standard error as it read (issue 64: ``hatt data`` said them twice)."""
    skipped = report.get("skipped") or {}
    lines = [f"Skipped while reading: {n} ({reason})" for reason, n in skipped.items()]
    if report.get("invalid_utf8"):
        lines.append(f"Invalid UTF-8 replaced in {report['invalid_utf8']} document(s)")
    return lines


def format_statistics(stats, brief=False):
    """The statistics of :func:`statistics` as text: classes per split, then lengths.

    Class names are shown escaped (:func:`hatt.progress.printable`). What reading
    skipped is counted; the reading's warnings are not repeated (the reader printed
    them on standard error, and ``stats["report"]["warnings"]`` holds them).

    Args:
        stats: the dict of :func:`statistics`.
        brief: one line (the classes, the source and each split's size) and the
            warnings, without the tables (``hatt data --quiet``).
    """
    names = stats.get("class_names", list(BINARY_CLASSES))
    title = printable(f"{len(names)} classes from {stats['source']}")
    warnings = [f"Warning: {w}" for w in stats.get("warnings", [])]
    if brief:
        sizes = ", ".join(f"{split['reviews']} {name}" for name, split in stats["splits"].items())
        return "\n".join([f"{title}: {sizes} documents", *warnings])
    lines = [title, ""]
    lines += _class_table({**stats, "class_names": names}) + [""] + _length_table(stats)
    lines += _report_lines(stats.get("report") or {})
    return "\n".join(lines + warnings)
