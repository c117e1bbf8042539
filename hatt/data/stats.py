"""Corpus statistics: split sizes, classes and length distributions (``hatt data``)."""

import numpy as np

from hatt.data.text import tokenize

STATISTICS = ("mean", "median", "p90", "p99", "max")
LENGTHS = ("words_per_review", "sentences_per_review", "words_per_sentence")


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


def statistics(imdb):
    """Split sizes and length statistics (words, sentences, words per sentence).

    Args:
        imdb: a :class:`hatt.data.Imdb`.

    Returns:
        ``{"source", "splits": {split: {"reviews", "positive", "negative",
        "words_per_review", "sentences_per_review", "words_per_sentence"}}}``,
        each length a dict of ``mean``, ``median``, ``p90``, ``p99``, ``max``.
    """
    stats = {"source": imdb.source, "splits": {}}
    for name in ("train", "validation", "test"):
        split = getattr(imdb, name)
        lengths = _lengths(split.texts)
        stats["splits"][name] = {
            "reviews": len(split),
            "positive": int(split.labels.sum()),
            "negative": int(len(split) - split.labels.sum()),
            **{key: _distribution(values) for key, values in lengths.items()},
        }
    return stats


def format_statistics(stats):
    """The statistics of :func:`statistics` as a text table."""
    lines = [f"IMDB from {stats['source']}"]
    header = f"{'split':<11}{'reviews':>8}{'pos':>7}{'neg':>7}  {'':<20}"
    lines.append(header + "".join(f"{k:>9}" for k in STATISTICS))
    for name, split in stats["splits"].items():
        for row, key in enumerate(LENGTHS):
            prefix = (
                f"{name:<11}{split['reviews']:>8}{split['positive']:>7}{split['negative']:>7}"
                if row == 0
                else " " * 33
            )
            values = "".join(f"{split[key][k]:>9}" for k in STATISTICS)
            lines.append(f"{prefix}  {key:<20}{values}")
    return "\n".join(lines)
