"""Corpus statistics: split sizes, documents per class and length distributions (``hatt data``)."""

import numpy as np

from hatt.data.corpus import BINARY_CLASSES, SPLITS, count_classes
from hatt.data.text import tokenize

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


def _class_table(stats):
    names = stats["class_names"]
    width = max(5, *(min(len(n), _NAME_WIDTH) for n in names))
    splits = list(stats["splits"])
    lines = [f"{'class':<{width}}" + "".join(f"{s:>12}" for s in splits)]
    for name in names:
        shown = name if len(name) <= _NAME_WIDTH else name[: _NAME_WIDTH - 1] + "…"
        counts = "".join(f"{stats['splits'][s]['classes'][name]:>12}" for s in splits)
        lines.append(f"{shown:<{width}}{counts}")
    totals = "".join(f"{stats['splits'][s]['reviews']:>12}" for s in splits)
    lines.append(f"{'all':<{width}}{totals}")
    return lines


def _length_table(stats):
    lines = [f"{'split':<11}{'reviews':>8}  {'':<20}" + "".join(f"{k:>9}" for k in STATISTICS)]
    for name, split in stats["splits"].items():
        for row, key in enumerate(LENGTHS):
            prefix = f"{name:<11}{split['reviews']:>8}" if row == 0 else " " * 19
            values = "".join(f"{split[key][k]:>9}" for k in STATISTICS)
            lines.append(f"{prefix}  {key:<20}{values}")
    return lines


def _report_lines(report):
    skipped = report.get("skipped") or {}
    lines = [f"Skipped while reading: {n} ({reason})" for reason, n in skipped.items()]
    if report.get("invalid_utf8"):
        lines.append(f"Invalid UTF-8 replaced in {report['invalid_utf8']} document(s)")
    return lines + [f"Warning: {w}" for w in report.get("warnings") or []]


def format_statistics(stats):
    """The statistics of :func:`statistics` as text: classes per split, then lengths."""
    names = stats.get("class_names", list(BINARY_CLASSES))
    lines = [f"{len(names)} classes from {stats['source']}", ""]
    lines += _class_table({**stats, "class_names": names}) + [""] + _length_table(stats)
    lines += _report_lines(stats.get("report") or {})
    lines += [f"Warning: {w}" for w in stats.get("warnings", [])]
    return "\n".join(lines)
