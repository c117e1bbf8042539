"""Per-review explanations: the tokens a model saw, their weights, its prediction.

:func:`explain` runs a model on raw reviews and returns one
:class:`Explanation` per review, the common input of the renderers
(:mod:`hatt.inspect.html`, :mod:`hatt.inspect.png`,
:mod:`hatt.inspect.terminal`).

There is one path from text to explanations: :func:`hatt.export.as_predictor`
turns what it is given (a path for :func:`hatt.export.load`, a loaded
:class:`hatt.export.Predictor`, or an in-memory `keras.Model` with its
`hatt.data.Vectorizer`, wrapped in :class:`hatt.export.TextModel`) into a
Predictor, and its output (the exported signature's dict: tokens, attention
or gradient × input saliency) becomes explanations here. The scores are
therefore those of the exported model, computed once, in
:class:`hatt.export.TextModel`.
"""

import dataclasses

import numpy as np
import tensorflow as tf

from hatt import export
from hatt.data import text as text_lib
from hatt.inspect._progress import Progress

SCORE_KINDS = ("attention", "saliency")


@dataclasses.dataclass
class Explanation:
    """What a model made of one review.

    Attributes:
        text: The raw review.
        family: `"cnn"`, `"rnn"`, `"transformer"` or `"han"`.
        score_kind: `"attention"` (the model's attention weights) or
            `"saliency"` (gradient × input, for the CNN).
        probability: Two classes: the model's probability of class 1 (the
            positive class). More: the probability of the predicted class.
        sentences: The tokens the model saw, as a list of sentences (lists
            of str). For the HAN these are the model's own sentences (long
            ones wrapped at the vectorizer's `max_words`); for flat models
            the tokens are grouped by the review's sentences for display
            only (the model sees one sequence).
        word_weights: One float per token, shaped like `sentences`. For flat
            models they sum to 1 over the review; for the HAN to 1 within
            each sentence. Exactly the model's weights, not rescaled.
        sentence_weights: The HAN's sentence attention (one float per
            sentence, sums to 1), or `None` for flat models.
        label: The true label (an index into `class_names`) when known,
            else `None`.
        omitted_words: Words of the review the model did not see (cut by the
            vectorizer's truncation).
        gap_before: Index into `sentences` where those words were (the
            vectorizer keeps the head and the tail of a long review), or
            `None`.
        class_names: The model's classes, in the order of `probabilities`.
        probabilities: The model's probability of each class (`None`: two
            classes, from `probability`).

    Attention weights are the same whatever the class; saliency explains
    the predicted class's logit (see `hatt.export.TextModel`).
    """

    text: str
    family: str
    score_kind: str
    probability: float
    sentences: list
    word_weights: list
    sentence_weights: list | None = None
    label: int | None = None
    omitted_words: int = 0
    gap_before: int | None = None
    class_names: tuple = ("negative", "positive")
    probabilities: list | None = None

    def __post_init__(self):
        self.class_names = tuple(self.class_names)
        if self.probabilities is None:  # two classes: from the probability of class 1
            self.probabilities = [1.0 - float(self.probability), float(self.probability)]

    @property
    def prediction(self):
        """The predicted class's index (two classes: 1 when `probability >= 0.5`)."""
        if len(self.class_names) == 2:
            return int(self.probabilities[1] >= 0.5)
        return int(np.argmax(self.probabilities))

    @property
    def predicted_label(self):
        """The predicted class's name."""
        return self.class_names[self.prediction]

    @property
    def predicted_probability(self):
        """The predicted class's probability."""
        return float(self.probabilities[self.prediction])

    def label_name(self):
        """The true class's name, or `None` when the label is unknown."""
        return None if self.label is None else self.class_names[self.label]

    def headline(self):
        """One line for the renderers: family, what the scores are, prediction, truth.

        Example: `"han · attention · predicted positive (p = 0.973) · true
        positive (correct)"`. Saliency is of the predicted class's logit;
        attention is the same for every class.
        """
        scores = "saliency of the predicted class" if self.score_kind == "saliency" else "attention"
        line = (
            f"{self.family} · {scores} · predicted {self.predicted_label} "
            f"(p = {self.predicted_probability:.3f})"
        )
        if self.label is not None:
            mark = "correct" if self.label == self.prediction else "wrong"
            line += f" · true {self.label_name()} ({mark})"
        return line

    @property
    def tokens(self):
        """All tokens the model saw, in order (flat list of str)."""
        return [t for sentence in self.sentences for t in sentence]

    @property
    def weights(self):
        """All word weights, in token order (flat list of float)."""
        return [w for sentence in self.word_weights for w in sentence]

    def sentence_shares(self):
        """One number per sentence: the HAN's sentence attention, or, for flat
        models, the sum of the sentence's word weights (its share of the review)."""
        if self.sentence_weights is not None:
            return list(self.sentence_weights)
        return [float(sum(w)) for w in self.word_weights]

    def document_weights(self):
        """Each word's share of the whole review, shaped like `sentences`.

        Flat models: the word weights. HAN: word weight × sentence weight
        (sums to 1 over the review), the ranking the deletion test uses.
        """
        if self.sentence_weights is None:
            return [list(w) for w in self.word_weights]
        return [
            [w * s for w in words]
            for words, s in zip(self.word_weights, self.sentence_weights, strict=True)
        ]

    def display_weights(self):
        """Colour intensity of each word in `[0, 1]`, relative to this review.

        Flat models: `w / max(w)`. HAN, as in Yang et al. (2016):
        `sqrt(p_sentence) * p_word`, divided by its maximum over the review,
        so words of unimportant sentences fade. All zeros for a review
        without tokens.
        """
        if self.sentence_weights is None:
            raw = [list(w) for w in self.word_weights]
        else:
            raw = [
                [float(np.sqrt(s)) * w for w in words]
                for words, s in zip(self.word_weights, self.sentence_weights, strict=True)
            ]
        top = max((w for row in raw for w in row), default=0.0)
        if top <= 0:
            return [[0.0 for _ in row] for row in raw]
        return [[w / top for w in row] for row in raw]

    def to_dict(self):
        """A JSON-ready dict of the fields plus `prediction` and `predicted_label`."""
        values = dataclasses.asdict(self)
        values["class_names"] = list(self.class_names)
        values["prediction"] = self.prediction
        values["predicted_label"] = self.predicted_label
        return values


def _check_texts(texts):
    if isinstance(texts, str | bytes):
        raise ValueError(
            "Expected texts to be a list of strings, not a single string. "
            f"Received: texts={texts[:60]!r}. Wrap it in a list."
        )
    texts = list(texts)
    for i, text in enumerate(texts):
        if isinstance(text, bytes):
            texts[i] = text.decode("utf-8", errors="replace")
        elif not isinstance(text, str):
            raise ValueError(f"Expected texts to hold strings. Received: texts[{i}]={text!r}")
    return texts


# --- result dict → explanations ------------------------------------------------------------


def _as_str(token):
    return token.decode("utf-8", errors="replace") if isinstance(token, bytes) else str(token)


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


def _explanation(text, family, score_kind, probability, tokens, word, sentence, label):
    full_sentences = [
        [_as_str(t) for t in s] for s in text_lib.tokenize(tf.constant([text])).to_list()[0]
    ]
    full = [t for s in full_sentences for t in s]
    tokens = np.asarray(tokens, dtype=object)
    word = np.asarray(word, dtype=np.float64)
    if family == "han":
        sentences, weights, sentence_weights = [], [], []
        for s in range(tokens.shape[0]):
            real = [i for i in range(tokens.shape[1]) if _as_str(tokens[s, i]) != ""]
            if not real:
                continue
            sentences.append([_as_str(tokens[s, i]) for i in real])
            weights.append([float(word[s, i]) for i in real])
            sentence_weights.append(float(sentence[s]))
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
        return Explanation(
            text, family, score_kind, float(probability), sentences, weights,
            sentence_weights, label, omitted, gap_before,
        )  # fmt: skip
    real = [i for i in range(tokens.shape[0]) if _as_str(tokens[i]) != ""]
    seen = [_as_str(tokens[i]) for i in real]
    seen_weights = [float(word[i]) for i in real]
    positions = _seen_positions(seen, full)
    omitted = max(len(full) - len(seen), 0)
    if positions is None:  # tokens we cannot place in the review: one segment
        sentences = [seen] if seen else []
        return Explanation(
            text, family, score_kind, float(probability), sentences,
            [seen_weights] if seen else [], None, label, omitted, None,
        )  # fmt: skip
    sentence_of = [i for i, s in enumerate(full_sentences) for _ in s]
    sentences, weights, gap_before = [], [], None
    previous = None
    for token, weight, position in zip(seen, seen_weights, positions, strict=True):
        jump = previous is not None and position != previous + 1
        if jump:
            gap_before = len(sentences)
        if previous is None or jump or sentence_of[position] != sentence_of[previous]:
            sentences.append([])
            weights.append([])
        sentences[-1].append(token)
        weights[-1].append(weight)
        previous = position
    if gap_before is None and omitted:
        gap_before = 0 if positions and positions[0] > 0 else len(sentences)
    return Explanation(
        text, family, score_kind, float(probability), sentences, weights, None, label,
        omitted, gap_before,
    )  # fmt: skip


def explanations_from_result(
    result, texts, family, score_kind, labels=None, class_names=("negative", "positive")
):
    """Turn an exported model's result dict into :class:`Explanation` objects.

    Args:
        result: Dict with `"probabilities"` `[N, C]` (or, for two classes,
            `"probability"` `[N]` of class 1), `"tokens"` and
            `"word_attention"` (`[N, T]` or `[N, S, W]`) and, for the HAN,
            `"sentence_attention"` `[N, S]`.
        texts: The `N` raw reviews.
        family: The model family.
        score_kind: `"attention"` or `"saliency"`.
        labels: Optional `N` true labels (indices into `class_names`).
        class_names: The model's classes (`result["probabilities"]` order).

    Returns:
        A list of `N` explanations.
    """
    if score_kind not in SCORE_KINDS:
        raise ValueError(
            f"Expected score_kind to be one of {SCORE_KINDS}. Received: score_kind={score_kind!r}"
        )
    tokens = np.asarray(result["tokens"], dtype=object)
    word = np.asarray(result["word_attention"])
    if "probabilities" in result:
        probabilities = np.asarray(result["probabilities"], dtype=np.float64)
    else:  # a two-class result with the probability of class 1 only
        positive = np.asarray(result["probability"], dtype=np.float64).reshape(-1)
        probabilities = np.stack([1.0 - positive, positive], axis=-1)
    if len(class_names) == 2:
        probability = probabilities[:, 1]
    else:
        probability = probabilities[np.arange(len(probabilities)), probabilities.argmax(-1)]
    sentence = result.get("sentence_attention")
    if family == "han" and sentence is None:
        raise ValueError("Expected a HAN result to hold 'sentence_attention'.")
    out = []
    for i, text in enumerate(texts):
        explanation = _explanation(
                text,
                family,
                score_kind,
                probability[i],
                tokens[i],
                word[i],
                None if sentence is None else np.asarray(sentence)[i],
                None if labels is None else int(labels[i]),
            )  # fmt: skip
        explanation.class_names = tuple(class_names)
        explanation.probabilities = [float(p) for p in probabilities[i]]
        out.append(explanation)
    return out


def explain(model, texts, labels=None, vectorizer=None, batch_size=32, progress=True):
    """Run `model` on raw reviews and explain each prediction.

    Args:
        model: What to explain: a path (SavedModel folder,
            `saved_models/NAME`, `.keras` file or run directory, loaded by
            `hatt.export.load`), a loaded `hatt.export.Predictor`, a
            `hatt.export.TextModel`, or an in-memory `keras.Model` together
            with `vectorizer` (see `hatt.export.as_predictor`).
        texts: List of raw reviews (str). Empty or word-less reviews give an
            explanation with no tokens and the model's probability for an
            empty review.
        labels: Optional list of true labels, one per text: indices into
            the model's `class_names` (IMDB: 1 = positive).
        vectorizer: The `hatt.data.Vectorizer` of an in-memory `keras.Model`.
        batch_size: Reviews per model call.
        progress: Show a progress bar (on stderr) when there is more than
            one batch.

    Returns:
        A list of :class:`Explanation`, one per text.

    Example:

    >>> explained = hatt.inspect.explain("runs/han-20260101-000000", ["A fine film."])
    >>> explained[0].probability, explained[0].sentences, explained[0].word_weights
    """
    texts = _check_texts(texts)
    batch_size = export.check_batch_size(batch_size)
    predictor = export.as_predictor(model, vectorizer)
    labels = _check_labels(labels, len(texts), predictor.num_classes)
    bar = Progress(len(texts), enabled=progress and len(texts) > batch_size)
    out = []
    for start in range(0, len(texts), batch_size):
        chunk = texts[start : start + batch_size]
        out.extend(
            explanations_from_result(
                predictor(chunk),
                chunk,
                predictor.family,
                predictor.score_kind,
                None if labels is None else labels[start : start + batch_size],
                predictor.class_names,
            )
        )
        bar.update(start + len(chunk))
    return out


def _check_labels(labels, count, num_classes=2):
    if labels is None:
        return None
    labels = list(labels)
    if len(labels) != count:
        raise ValueError(f"Expected one label per text ({count}). Received: {len(labels)} labels")
    for label in labels:
        if isinstance(label, bool) or label not in range(num_classes):
            raise ValueError(
                f"Expected labels to be class indices in [0, {num_classes}). "
                f"Received: label={label!r}"
            )
    return labels


def balanced_sample(labels, n, seed=1337):
    """Indices of a seeded sample of `n` items, as many of each class as can be, shuffled.

    aclImdb lists all negative reviews of a split before the positive ones, so
    the first `n` reviews are never a fair sample. The classes present share
    `n` equally (the `n mod classes` lowest labels get one more).

    Args:
        labels: 1-D array of int labels.
        n: Sample size, at most what an equal share of each class allows.
        seed: Seed of the draw.

    Returns:
        A 1-D int array of `n` distinct indices.
    """
    labels = np.asarray(labels)
    if isinstance(n, bool) or not isinstance(n, int | np.integer) or n < 1:
        raise ValueError(f"Expected n to be a positive int. Received: n={n!r}")
    # Drawn from the highest label down, the lowest labels taking the remainder:
    # for two classes the very draw of earlier versions (positives first).
    classes = np.unique(labels)[::-1]
    k = len(classes)
    members = [np.flatnonzero(labels == c) for c in classes]
    shares = [n // k + (i >= k - n % k) for i in range(k)]
    if any(share > len(m) for share, m in zip(shares, members, strict=True)):
        sizes = ", ".join(f"{c}: {len(m)}" for c, m in zip(classes, members, strict=True))
        raise ValueError(
            f"Expected n <= {len(classes) * min(len(m) for m in members)} for a balanced sample "
            f"of {len(classes)} classes ({sizes}). Received: n={n}"
        )
    rng = np.random.default_rng(seed)
    chosen = np.concatenate(
        [rng.choice(m, share, replace=False) for m, share in zip(members, shares, strict=True)]
    )
    rng.shuffle(chosen)
    return chosen
