"""Per-review explanations: the tokens a model saw, every method's scores, its prediction.

:func:`explain` runs a model on raw reviews and returns one
:class:`Explanation` per review, the common input of the renderers
(:mod:`hatt.inspect.html`, :mod:`hatt.inspect.png`,
:mod:`hatt.inspect.terminal`).

There is one path from text to explanations: :func:`hatt.export.as_predictor`
turns what it is given (a path for :func:`hatt.export.load`, a loaded
:class:`hatt.export.Predictor`, or an in-memory `keras.Model` with its
`hatt.data.Vectorizer`, wrapped in :class:`hatt.export.TextModel`) into a
Predictor, and its `explain` output (the exported `explain` signature's dict:
tokens, every method's scores, the logit decomposition) becomes explanations
here, every method aligned to the same tokens by one function
(:func:`_align`). The scores are therefore those of the exported model,
computed once, in :class:`hatt.export.TextModel`.

The methods (`METHODS`): `"attention"` (unsigned, the model's own weights,
the same for every class), and four signed ones that explain the logit of
the explained class (the predicted one): `"total"` (each word's contribution
to the whole logit: the deep part's integrated gradients plus the n-gram
channel's exact share; the default view), `"gradient_x_input"` and
`"integrated_gradients"` (the deep part's alone) and `"ngram"` (the n-gram
channel's alone). A positive score argues for the explained class, a
negative one against it.

`warnings` (on every explanation, from `hatt.export.Predictor.warnings`) say
when a model's parts should not be read alone: a deep part with a negative
weight in the mix, or one that scores below the channel alone.
"""

import dataclasses

import numpy as np
import tensorflow as tf

from hatt import export
from hatt.attribution import METHODS, SIGNED_METHODS
from hatt.data import text as text_lib
from hatt.inspect._progress import Progress

SCORE_KINDS = ("attention", "saliency")
ALL = "all"  # the renderers' "every method, side by side"
METHOD_LABELS = {
    "attention": "attention",
    "total": "total",
    "gradient_x_input": "gradient × input",
    "integrated_gradients": "integrated gradients",
    "ngram": "n-gram channel",
    "saliency": "saliency",
}
# The parts of the explained class's logit (and, when the result has it, the logit with no
# word evidence, from which the total view's words sum to the logit).
DECOMPOSITION = ("deep", "ngram", "bias", "logit", "baseline")
_DECOMPOSITION_KEYS = {
    "deep": "logit_deep",
    "ngram": "logit_ngram",
    "bias": "logit_bias",
    "logit": "logit",
    "baseline": "logit_baseline",
}
# The view shown unless asked, the first the explanation has.
DEFAULT_VIEWS = ("total", "attention", "gradient_x_input")


def is_signed(method):
    """Whether `method`'s scores are signed (towards / against the explained class)."""
    return method in SIGNED_METHODS


def method_label(method):
    """A method's name for people (`"integrated_gradients"` → `"integrated gradients"`)."""
    return METHOD_LABELS.get(method, str(method))


@dataclasses.dataclass
class Explanation:
    """What a model made of one review.

    Attributes:
        text: The raw review.
        family: `"cnn"`, `"rnn"`, `"transformer"` or `"han"`.
        score_kind: What `word_weights` hold, as the model's
            `serving_default` gives them: `"attention"` (the model's
            attention weights) or `"saliency"` (normalised |gradient ×
            input|, for the CNN without attention).
        probability: Two classes: the model's probability of class 1 (the
            positive class). More: the probability of the predicted class.
        sentences: The tokens the model saw, as a list of sentences (lists
            of str). For the HAN these are the model's own sentences (long
            ones wrapped at the vectorizer's `max_words`); for flat models
            the tokens are grouped by the review's sentences for display
            only (the model sees one sequence).
        word_weights: One float per token, shaped like `sentences`. For flat
            models they sum to 1 over the review; for the HAN to 1 within
            each sentence. Exactly the model's weights, not rescaled (what
            `hatt serve` and the deletion test read).
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
        scores: `{method: per-word scores shaped like sentences}`, raw (not
            rescaled): `"attention"` as `word_weights`; the signed methods
            in logit units of the explained class. An explanation built
            without methods (an export older than the `explain` signature,
            or by hand) gets `{score_kind: word_weights}`.
        sentence_scores: `{method: one float per sentence}`: for attention
            the HAN's sentence attention (flat models: the sentence's share
            of the word weights); for a signed method the sum of the
            sentence's word scores.
        decomposition: The explained class's logit in parts, `{"deep",
            "ngram", "bias", "logit"}` (deep + ngram + bias = logit; `ngram`
            is 0 without an n-gram channel) and `"baseline"` (the logit with
            no word evidence: the `"total"` scores sum to logit − baseline),
            or `None`.
        explained_class: The class the signed scores explain (the predicted
            one, an index into `class_names`), or `None`.
        completeness_error: Integrated gradients' `|Σ attributions − (f(x) −
            f(baseline))| / |f(x) − f(baseline)|` for this review, or
            `None`.
        methods: The explanation methods the model has (`METHODS` order).
        warnings: Why the model's parts should not be read alone (str each;
            `hatt.export.model_warnings`), empty for most models.

    Attention weights are the same whatever the class; the signed scores
    explain the explained class's logit (see `hatt.export.TextModel`).
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
    scores: dict = dataclasses.field(default_factory=dict)
    sentence_scores: dict = dataclasses.field(default_factory=dict)
    decomposition: dict | None = None
    explained_class: int | None = None
    completeness_error: float | None = None
    methods: tuple = ()
    warnings: tuple = ()

    def __post_init__(self):
        self.class_names = tuple(self.class_names)
        self.methods = tuple(self.methods)
        self.warnings = tuple(self.warnings)
        if self.probabilities is None:  # two classes: from the probability of class 1
            self.probabilities = [1.0 - float(self.probability), float(self.probability)]
        if not self.scores:  # no methods: the serving_default scores are the one view
            self.scores = {self.score_kind: [list(w) for w in self.word_weights]}
            self.sentence_scores = {self.score_kind: self.sentence_shares()}

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

    @property
    def explained_label(self):
        """The name of the class the signed scores explain (the predicted one)."""
        index = self.prediction if self.explained_class is None else self.explained_class
        return self.class_names[index]

    @property
    def views(self):
        """The scores this explanation can show: the keys of `scores`, in `METHODS` order."""
        return tuple(sorted(self.scores, key=lambda m: METHODS.index(m) if m in METHODS else -1))

    def default_method(self):
        """The view shown unless asked: the total when the model has it (every model with
        integrated gradients), else attention, else gradient × input."""
        for method in DEFAULT_VIEWS:
            if method in self.scores:
                return method
        return self.views[0]

    def check_method(self, method):
        """`method` (or the default view for `None`) when this explanation has its scores."""
        if method is None:
            return self.default_method()
        if method not in self.scores:
            raise ValueError(
                f"Expected method to be one of this model's methods {self.views}. "
                f"Received: method={method!r}"
            )
        return method

    def methods_to_show(self, method=None):
        """The views a renderer draws for `method`: every one for `"all"`, else one
        (`None`: the default)."""
        return list(self.views) if method == ALL else [self.check_method(method)]

    def headline(self, method=None):
        """One line for the renderers: family, what the scores are, prediction, truth.

        Example: `"han · attention · predicted positive (p = 0.973) · true
        positive (correct)"`; a signed method says whose logit it explains:
        `"cnn · integrated gradients (logit of positive) · ..."`; `"all"`:
        `"... · every method · ..."`. Attention is the same for every class.
        """
        method = method if method == ALL else self.check_method(method)
        if method == ALL:
            scores = "every method"
        elif is_signed(method):
            scores = f"{method_label(method)} (logit of {self.explained_label})"
        elif method == "saliency":
            scores = "saliency of the predicted class"
        else:
            scores = method_label(method)
        line = (
            f"{self.family} · {scores} · predicted {self.predicted_label} "
            f"(p = {self.predicted_probability:.3f})"
        )
        if self.label is not None:
            mark = "correct" if self.label == self.prediction else "wrong"
            line += f" · true {self.label_name()} ({mark})"
        return line

    def method_note(self, method=None):
        """What a method's colours mean for this review (one sentence for a legend)."""
        method = self.check_method(method)
        if is_signed(method):
            note = (
                f"{method_label(method)}: each word's contribution to the logit of "
                f"{self.explained_label!r} (towards it: blue, against it: red)"
            )
            if method == "total":
                note += self._total_note()
            if method == "ngram":
                note += "; each n-gram's weight shared equally among its words"
            if method == "integrated_gradients" and self.completeness_error is not None:
                note += f"; completeness error {100 * self.completeness_error:.2f} %"
            return note
        if method == "attention":
            return "attention: the model's own weights, the same for every class"
        return f"{method_label(method)}: the model's word scores"

    def _total_note(self):
        """The total view's sources and sum, for `method_note`."""
        parts = "the deep part's integrated gradients"
        if "ngram" in self.methods:
            parts += " + the n-gram channel's share"
        note = f"; each word's {parts}"
        error = self.total_completeness_error()
        if error is not None:
            d = self.decomposition
            note += (
                f"; the words sum to logit − baseline = {d['logit'] - d['baseline']:.3f} "
                f"(completeness error {100 * error:.2f} %)"
            )
        return note

    def total_completeness_error(self):
        """`|Σ total − (logit − baseline)| / max(|logit − baseline|, 1e-6)`, or `None`."""
        d = self.decomposition
        if "total" not in self.scores or d is None or "baseline" not in d:
            return None
        moved = d["logit"] - d["baseline"]
        summed = sum(v for row in self.scores["total"] for v in row)
        return abs(summed - moved) / max(abs(moved), 1e-6)

    def decomposition_line(self):
        """The explained class's logit in parts, as one line, or `None` without them.

        Example: `"logit of 'positive' 2.310 = deep part 0.520 + n-gram channel
        1.900 + bias -0.110"` (the n-gram term only for a model with the
        channel).
        """
        if self.decomposition is None:
            return None
        d = self.decomposition
        parts = [f"deep part {d['deep']:.3f}"]
        if "ngram" in self.methods:
            parts.append(f"n-gram channel {d['ngram']:.3f}")
        parts.append(f"bias {d['bias']:.3f}")
        return f"logit of {self.explained_label!r} {d['logit']:.3f} = " + " + ".join(parts)

    def total_line(self):
        """The same logit as the words' total and the baseline, or `None` without them.

        Example: `"= words (total) 2.250 + baseline 0.060 (no word evidence)"`
        (the words' sum is the logit's up to integrated gradients'
        completeness error).
        """
        d = self.decomposition
        if "total" not in self.scores or d is None or "baseline" not in d:
            return None
        summed = sum(v for row in self.scores["total"] for v in row)
        return f"= words (total) {summed:.3f} + baseline {d['baseline']:.3f} (no word evidence)"

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
        return _relative(_shading(self.word_weights, self.sentence_weights))

    def display_scores(self, method=None):
        """Colour intensity of each word for `method`, relative to this review.

        Unsigned scores (attention): in `[0, 1]`, as `display_weights` (HAN:
        `sqrt(sentence) × word`). Signed scores: `score / max |score|` over
        the review, in `[-1, 1]` (positive: towards the explained class).
        """
        method = self.check_method(method)
        words = self.scores[method]
        if is_signed(method) or self.sentence_weights is None:
            return _relative(words)
        return _relative(_shading(words, self.sentence_scores[method]))

    def sentence_display(self, method=None):
        """One intensity per sentence for `method`: `value / max |value|` over the review."""
        method = self.check_method(method)
        return _relative([self.sentence_scores[method]])[0]

    def to_dict(self):
        """A JSON-ready dict of the fields plus `prediction` and `predicted_label`."""
        values = dataclasses.asdict(self)
        values["class_names"] = list(self.class_names)
        values["methods"] = list(self.methods)
        values["warnings"] = list(self.warnings)
        values["prediction"] = self.prediction
        values["predicted_label"] = self.predicted_label
        return values


def _shading(words, sentence):
    """HAN words as in Yang et al. (2016): `sqrt(sentence weight) × word weight`."""
    if sentence is None:
        return [list(w) for w in words]
    return [
        [float(np.sqrt(max(s, 0.0))) * w for w in row]
        for row, s in zip(words, sentence, strict=True)
    ]


def _relative(rows):
    """Rows of values divided by their largest magnitude (all zeros when it is 0)."""
    top = max((abs(v) for row in rows for v in row), default=0.0)
    if not top > 0:
        return [[0.0 for _ in row] for row in rows]
    return [[v / top for v in row] for row in rows]


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


def check_methods(methods, available):
    """The methods to keep, in `METHODS` order: all of `available` for `None` or `"all"`.

    Args:
        methods: `None`, `"all"`, one method name or a list of them.
        available: The model's methods.

    Raises:
        ValueError: naming the model's methods, for a name it does not have.
    """
    if methods is None or methods == ALL:
        return tuple(available)
    chosen = [methods] if isinstance(methods, str) else list(methods)
    if not chosen or any(m not in available for m in chosen):
        raise ValueError(
            f"Expected methods to be among this model's methods {tuple(available)} (or 'all'). "
            f"Received: methods={methods!r}"
        )
    return tuple(m for m in available if m in chosen)


def _check_steps(steps):
    if steps is not None and (isinstance(steps, bool) or not isinstance(steps, int) or steps < 1):
        raise ValueError(
            f"Expected steps to be a positive int (integrated gradients' steps) or None. "
            f"Received: steps={steps!r}"
        )
    return steps


# --- result dict → explanations ------------------------------------------------------------


def _as_str(token):
    return token.decode("utf-8", errors="replace") if isinstance(token, bytes) else str(token)


def _token_array(tokens):
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


def _align(text, family, tokens, words, sentence):
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
    if family == "han":
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


def _probabilities(result, class_names):
    """`[N, C]` probabilities and the one number an explanation keeps per review."""
    if "probabilities" in result:
        probabilities = np.asarray(result["probabilities"], dtype=np.float64)
    else:  # a two-class result with the probability of class 1 only
        positive = np.asarray(result["probability"], dtype=np.float64).reshape(-1)
        probabilities = np.stack([1.0 - positive, positive], axis=-1)
    if len(class_names) == 2:
        return probabilities, probabilities[:, 1]
    return probabilities, probabilities[np.arange(len(probabilities)), probabilities.argmax(-1)]


def _word_weights(result, score_kind, tokens):
    """What `serving_default` gives as `word_attention`, from either signature's dict.

    The explain signature has no `word_attention`: attention models' is
    their `attention`; the saliency of the others is |gradient × input|
    normalised over the real tokens (`hatt.export.normalise`, as
    `serving_default` computes it).
    """
    if "word_attention" in result:
        return np.asarray(result["word_attention"])
    key = "attention" if score_kind == "attention" else "gradient_x_input"
    if key not in result:
        raise ValueError(
            f"Expected the result to hold 'word_attention' or {key!r} (score_kind={score_kind!r}). "
            f"Received: keys={sorted(result)}"
        )
    if key == "attention":
        return np.asarray(result["attention"])
    return np.asarray(export.normalise(np.abs(np.asarray(result[key])), tokens != ""))


def _score_arrays(result, family, score_kind, tokens, methods):
    """`{name: [N, ...] word scores}` and `{name: [N, S] sentence scores}` to align."""
    words = {"word_weights": _word_weights(result, score_kind, tokens)}
    words.update({method: np.asarray(result[method]) for method in methods})
    sentence = {}
    if family == "han":
        if "sentence_attention" not in result:
            raise ValueError("Expected a HAN result to hold 'sentence_attention'.")
        sentence["sentence_weights"] = np.asarray(result["sentence_attention"])
    return words, sentence


def _review_facts(result, methods, i):
    """The decomposition, explained class and completeness error of review `i`, when given."""
    facts = {}
    if "logit" in result:
        facts["decomposition"] = {
            part: float(np.asarray(result[key])[i])
            for part, key in _DECOMPOSITION_KEYS.items()
            if key in result
        }
    if "target" in result:
        facts["explained_class"] = int(np.asarray(result["target"])[i])
    if "integrated_gradients" in methods and "ig_completeness_error" in result:
        facts["completeness_error"] = float(np.asarray(result["ig_completeness_error"])[i])
    return facts


def _method_scores(aligned, methods):
    """`scores` and `sentence_scores` of one review: attention's own sentence weights
    (HAN), else the sum of each sentence's word scores."""
    scores = {method: aligned.words[method] for method in methods}
    sentence_scores = {}
    for method in methods:
        if method == "attention" and "sentence_weights" in aligned.sentence:
            sentence_scores[method] = list(aligned.sentence["sentence_weights"])
        else:
            sentence_scores[method] = [float(sum(row)) for row in scores[method]]
    return scores, sentence_scores


def explanations_from_result(
    result,
    texts,
    family,
    score_kind,
    labels=None,
    class_names=("negative", "positive"),
    methods=None,
    warnings=(),
):
    """Turn an exported model's result dict into :class:`Explanation` objects.

    Args:
        result: The dict of the `explain` signature (`hatt.export.Predictor.
            explain`: `"probabilities"`, `"tokens"`, each method's scores,
            `"target"`, the logit decomposition, `"ig_completeness_error"`),
            or of `serving_default` (`"probabilities"` `[N, C]` or, for two
            classes, `"probability"` `[N]`; `"tokens"`, `"word_attention"`
            `[N, T]` or `[N, S, W]` and, for the HAN, `"sentence_attention"`
            `[N, S]`), which gives one view: `score_kind`.
        texts: The `N` raw reviews.
        family: The model family.
        score_kind: `"attention"` or `"saliency"` (what `word_weights` hold).
        labels: Optional `N` true labels (indices into `class_names`).
        class_names: The model's classes (`result["probabilities"]` order).
        methods: The methods to keep: `None` (or `"all"`) for every method
            the result holds, else a list of them.
        warnings: The model's warnings (`hatt.export.Predictor.warnings`),
            given to every explanation.

    Returns:
        A list of `N` explanations, every method's scores aligned to the
        same tokens.
    """
    if score_kind not in SCORE_KINDS:
        raise ValueError(
            f"Expected score_kind to be one of {SCORE_KINDS}. Received: score_kind={score_kind!r}"
        )
    tokens = _token_array(result["tokens"])
    probabilities, probability = _probabilities(result, class_names)
    available = tuple(m for m in METHODS if m in result)
    methods = check_methods(methods, available)
    words, sentence = _score_arrays(result, family, score_kind, tokens, methods)
    out = []
    for i, text in enumerate(texts):
        aligned = _align(
            text,
            family,
            tokens[i],
            {name: values[i] for name, values in words.items()},
            {name: values[i] for name, values in sentence.items()},
        )
        scores, sentence_scores = _method_scores(aligned, methods)
        out.append(
            Explanation(
                text,
                family,
                score_kind,
                float(probability[i]),
                aligned.sentences,
                aligned.words["word_weights"],
                aligned.sentence.get("sentence_weights"),
                None if labels is None else int(labels[i]),
                aligned.omitted,
                aligned.gap_before,
                tuple(class_names),
                [float(p) for p in probabilities[i]],
                scores=scores,
                sentence_scores=sentence_scores,
                methods=available,
                warnings=warnings,
                **_review_facts(result, methods, i),
            )
        )
    return out


def _runner(predictor, methods, steps):
    """The one call per batch: the `explain` signature, or `serving_default` for an old export.

    Checks `methods` and `steps` before anything runs.
    """
    steps = _check_steps(steps)
    # Exports written before the explain signature have no methods: their
    # serving_default scores (word_weights) are the one view.
    available = tuple(getattr(predictor, "methods", None) or ())
    if not available:
        if methods not in (None, ALL) or steps is not None:
            raise ValueError(
                "Expected a model with an explain signature for methods= or steps= (this one has "
                f"only its {predictor.score_kind} scores; export it again). "
                f"Received: methods={methods!r}, steps={steps!r}"
            )
        return predictor, None
    methods = check_methods(methods, available)
    if steps is None:
        return predictor.explain, methods
    if predictor.kind != "keras":  # the signature's steps were fixed at export
        raise ValueError(
            "Expected steps=None for a SavedModel: its explain signature runs integrated "
            f"gradients at its export's steps ({predictor.metadata.get('explain_steps', '?')}). "
            "Load the run directory or saved_models/NAME/model.keras to choose them. "
            f"Received: steps={steps!r}"
        )
    text_model = predictor.text_model
    return (lambda chunk: text_model.explain(chunk, steps=steps)), methods


def explain(
    model,
    texts,
    labels=None,
    vectorizer=None,
    batch_size=32,
    progress=True,
    methods=None,
    steps=None,
):
    """Run `model` on raw reviews and explain each prediction with every method.

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
        methods: The methods to keep (`None`: all the model has,
            `predictor.methods`); a name the model does not have raises a
            `ValueError` listing its methods.
        steps: Integrated gradients' steps (`None`: the model's: a
            SavedModel's export steps, else `hatt.attribution.DEFAULT_STEPS`).
            Other steps need a Keras model (a run directory, a `.keras`
            file, a model in memory): a SavedModel's are fixed.

    Returns:
        A list of :class:`Explanation`, one per text.

    Example:

    >>> explained = hatt.inspect.explain("runs/han-20260101-000000", ["A fine film."])
    >>> e = explained[0]
    >>> e.sentences, e.scores["integrated_gradients"], e.decomposition
    """
    texts = _check_texts(texts)
    batch_size = export.check_batch_size(batch_size)
    predictor = export.as_predictor(model, vectorizer)
    labels = _check_labels(labels, len(texts), predictor.num_classes)
    run, methods = _runner(predictor, methods, steps)
    warnings = tuple(getattr(predictor, "warnings", ()))
    bar = Progress(len(texts), enabled=progress and len(texts) > batch_size)
    out = []
    for start in range(0, len(texts), batch_size):
        chunk = texts[start : start + batch_size]
        out.extend(
            explanations_from_result(
                run(chunk),
                chunk,
                predictor.family,
                predictor.score_kind,
                None if labels is None else labels[start : start + batch_size],
                predictor.class_names,
                methods,
                warnings,
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
