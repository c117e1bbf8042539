"""Every method's scores on the same words: the tokens a model read, placed in the full review.

A model reads a window of each review (its head and / or tail, or its first
sentences); :func:`align` finds where the tokens it saw sit in the whole
review's tokens, so that the renderers show the full text with the unseen
parts marked as omitted.
"""

import dataclasses

import numpy as np
import tensorflow as tf

from hatt import models
from hatt.data import text as text_lib


def _as_str(token):
    return token.decode("utf-8", errors="replace") if isinstance(token, bytes) else str(token)


def token_array(tokens):
    """Tokens as an object array of str ("" on padding), whatever they came as."""
    tokens = np.asarray(tokens, dtype=object)
    return np.array([_as_str(t) for t in tokens.reshape(-1)], dtype=object).reshape(tokens.shape)


def _seen_positions(seen, full, preferred_heads=None):
    """Positions in `full` of the tokens in `seen` (the head and tail `full` kept), or None.

    When several head / tail splits fit (a repetitive review), the one in
    `preferred_heads` (candidate head lengths, e.g. the HAN's sentence
    boundaries) closest to the middle of `seen` is taken, as the default
    `"head_tail"` truncation keeps about half of each end.
    """
    n, length = len(full), len(seen)
    if seen == full:
        return list(range(n))
    if length > n:
        return None
    prefix = 0
    while prefix < length and seen[prefix] == full[prefix]:
        prefix += 1
    suffix = 0
    while suffix < length and seen[length - 1 - suffix] == full[n - 1 - suffix]:
        suffix += 1
    low, high = max(length - suffix, 0), prefix  # every head length in [low, high] fits
    if low > high:
        return None
    candidates = [h for h in (preferred_heads or []) if low <= h <= high] or [
        min(max(length // 2, low), high)
    ]
    head = min(candidates, key=lambda h: abs(h - length // 2))
    return list(range(head)) + list(range(n - (length - head), n))


@dataclasses.dataclass
class _Aligned:
    """One review's tokens placed in its text, with every score array cut to them."""

    sentences: list  # lists of str
    words: dict  # name → values shaped like sentences
    sentence: dict  # name → one value per sentence (HAN arrays only)
    omitted: int
    gap_before: int | None


def align(text, family, tokens, words, sentence):
    """THE alignment: the model's tokens of one review, and every score with them.

    Args:
        text: The raw review.
        family: The model family (`"han"`: `[S, W]` tokens).
        tokens: `[T]` or `[S, W]` str tokens, `""` on padding.
        words: `{name: array shaped like tokens}`, one per score.
        sentence: `{name: [S] array}` (HAN sentence scores).
    """
    full_sentences = [
        [_as_str(t) for t in s] for s in text_lib.tokenize(tf.constant([text])).to_list()[0]
    ]
    full = [t for s in full_sentences for t in s]
    words = {name: np.asarray(values, dtype=np.float64) for name, values in words.items()}
    if models.family_spec(family).nested:
        return _align_nested(full, tokens, words, sentence)
    return _align_flat(full_sentences, full, tokens, words)


def _align_nested(full, tokens, words, sentence):
    """HAN: the model's own sentences (those with tokens), and where its truncation cut."""
    kept = [
        (s, [i for i in range(tokens.shape[1]) if tokens[s, i] != ""]) for s in range(len(tokens))
    ]
    kept = [(s, real) for s, real in kept if real]
    sentences = [[tokens[s, i] for i in real] for s, real in kept]
    values = {k: [[float(v[s, i]) for i in real] for s, real in kept] for k, v in words.items()}
    per_sentence = {k: [float(v[s]) for s, _ in kept] for k, v in sentence.items()}
    seen = [t for s in sentences for t in s]
    starts = np.cumsum([0] + [len(s) for s in sentences])
    positions = _seen_positions(seen, full, preferred_heads=[int(x) for x in starts])
    gap_before = None
    if positions is not None and len(seen) < len(full):
        for i in range(1, len(positions)):
            if positions[i] != positions[i - 1] + 1:
                gap_before = int(np.searchsorted(starts, i))
                break
        if gap_before is None:  # only the head or only the tail was kept
            gap_before = 0 if positions and positions[0] > 0 else len(sentences)
    omitted = max(len(full) - len(seen), 0)
    return _Aligned(sentences, values, per_sentence, omitted, gap_before)


def _align_flat(full_sentences, full, tokens, words):
    """Flat models: the tokens grouped by the review's sentences, for display."""
    real = [i for i in range(len(tokens)) if tokens[i] != ""]
    seen = [tokens[i] for i in real]
    positions = _seen_positions(seen, full)
    omitted = max(len(full) - len(seen), 0)
    groups, gap_before = _display_groups(positions, full_sentences, omitted, len(seen))
    sentences = [[seen[j] for j in group] for group in groups]
    values = {k: [[float(v[real[j]]) for j in group] for group in groups] for k, v in words.items()}
    return _Aligned(sentences, values, {}, omitted, gap_before)


def _display_groups(positions, full_sentences, omitted, count):
    """Indices of the seen tokens, one group per displayed sentence, and the gap's place."""
    if positions is None:  # tokens we cannot place in the review: one segment
        return ([list(range(count))] if count else []), None
    sentence_of = [i for i, s in enumerate(full_sentences) for _ in s]
    groups, gap_before, previous = [], None, None
    for j, position in enumerate(positions):
        jump = previous is not None and position != previous + 1
        if jump:
            gap_before = len(groups)
        if previous is None or jump or sentence_of[position] != sentence_of[previous]:
            groups.append([])
        groups[-1].append(j)
        previous = position
    if gap_before is None and omitted:
        gap_before = 0 if positions and positions[0] > 0 else len(groups)
    return groups, gap_before
