"""One review's explanation (:class:`Explanation`), the common input of the renderers.

:func:`hatt.inspect.explain` makes them; :mod:`hatt.inspect.html`,
:mod:`hatt.inspect.png` and :mod:`hatt.inspect.terminal` draw them.

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

`attention` (the model's attention layers' settings) says which attention
made the weights: softmax, or a sparse normalizer (sparsemax, entmax-1.5)
or hard attention, whose weights are often exactly 0. `attention_line()`
says so with the share of exact zeros; `zero_reasons()` tells the renderers
which words to leave unshaded (weight exactly 0), so that a zero never looks
like a small weight.
"""

import dataclasses
from html import escape as html_escape

import numpy as np

from hatt.export.attribution import METHODS
from hatt.export.predictor import probability_of
from hatt.inspect import html as renderer

# Re-exported: the names of hatt.inspect.methods, where they live.
from hatt.inspect.methods import (  # noqa: E402, F401
    ALL,
    DEFAULT_VIEWS,
    METHOD_LABELS,
    is_signed,
    method_label,
)


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
        attention: The model's attention, `{layer name: {"normalizer",
            "local_p", "window", "hard", "hard_k"}}` (the options of its
            `hatt.layers.ContextAttention` layers: `"word_attention"` and,
            for the HAN, `"sentence_attention"`; see
            `hatt.export.facts.attention_facts`); `{}` for a model without
            attention, `None` when not known (an export that did not record
            it).

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
    attention: dict | None = None

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
    def probability_of(self):
        """The class `probability` is of: the second of two, else the predicted one."""
        return probability_of(self.class_names) or self.predicted_label

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

    def attention_zeros(self):
        """The attention weights that are exactly 0, counted over the tokens the model saw.

        Returns:
            `{"words": [zeros, tokens]}` and, for the HAN, `"sentences":
            [zeros, sentences]` (HAN word weights are within their
            sentence), or `None` when the word scores are not attention
            (`score_kind="saliency"`).
        """
        if self.score_kind != "attention":
            return None
        zeros = {"words": _zero_count(self.word_weights)}
        if self.sentence_weights is not None:
            zeros["sentences"] = _zero_count([self.sentence_weights])
        return zeros

    def attention_line(self):
        """Which attention the model uses and how many of its weights are exactly 0.

        Example: `"attention: sparsemax over words and sentences (32 % of
        word weights and 40 % of sentence weights exactly 0)"`, `"attention:
        softmax over words (0 % of weights exactly 0)"`. `None` when the
        word scores are not attention (the CNN's saliency), and when the
        model's attention is not known (`attention=None`: an older export)
        and no weight is exactly 0.
        """
        zeros = self.attention_zeros()
        if zeros is None:
            return None
        if self.attention is None and not any(count for count, _ in zeros.values()):
            return None  # not recorded, and nothing to point out
        levels = [level for level in _LEVELS if level in zeros]
        described = {}
        for level in levels:
            described.setdefault(self._attention_kind(level), []).append(level)
        kinds = ", ".join(f"{kind} over {' and '.join(on)}" for kind, on in described.items())
        if len(levels) == 1:
            shares = f"{_percent(*zeros['words'])} of weights"
        else:
            shares = " and ".join(
                f"{_percent(*zeros[level])} of {level[:-1]} weights" for level in levels
            )
        return f"attention: {kinds} ({shares} exactly 0)"

    def _attention_options(self, level):
        """The settings of the attention layer over `level` (`"words"` or `"sentences"`)."""
        return (self.attention or {}).get(_LEVELS[level])

    def _attention_kind(self, level):
        """`"sparsemax"`, `"hard attention (gumbel; top-1 at inference)"`, ... for one level."""
        options = self._attention_options(level)
        if options is None:
            return "normalizer not recorded"
        if options.get("hard"):
            kind = (
                f"hard attention ({options['hard']}; top-{options.get('hard_k', 1)} at inference)"
            )
        else:
            normalizer = options.get("normalizer", "softmax")
            kind = NORMALIZER_NAMES.get(normalizer, str(normalizer))
            if options.get("temperature", 1.0) != 1.0:
                kind += f" (temperature {options['temperature']:g})"
        if options.get("local_p"):
            kind += f" in a local-p window (D = {options.get('window')})"
        return kind

    def _zero_cause(self, level):
        """Why the attention over `level` gives exact zeros: `" (sparse attention)"`, ..."""
        options = self._attention_options(level) or {}
        if options.get("hard"):
            return " (hard attention)"
        if options.get("normalizer") in SPARSE_NORMALIZERS:
            return " (sparse attention)"
        return ""

    def zero_reasons(self, method=None):
        """Why each word's weight in the review is exactly 0, shaped like `sentences`.

        For an unsigned method (attention, saliency): `"weight 0 (sparse
        attention)"` for a word whose own weight is exactly 0 (`"(hard
        attention)"`, or no cause for softmax), `"sentence weight 0 (sparse
        attention)"` for a HAN word in a sentence of weight exactly 0, else
        `None`. Signed methods: all `None` (0 is their neutral, not an
        absence). The renderers leave the words with a reason unshaded,
        and shade every other word at least faintly.
        """
        method = self.check_method(method)
        rows = self.scores[method]
        if is_signed(method):
            return [[None for _ in row] for row in rows]
        cause = self._zero_cause("words") if method == "attention" else ""
        sentences = self.sentence_scores[method] if self.sentence_weights is not None else None
        reasons = []
        for s, row in enumerate(rows):
            empty = sentences is not None and sentences[s] == 0
            sentence_reason = f"sentence weight 0{self._zero_cause('sentences')}"
            reasons.append(
                [f"weight 0{cause}" if w == 0 else sentence_reason if empty else None for w in row]
            )
        return reasons

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
        """A JSON-ready dict of the fields plus `prediction`, `predicted_label` and
        `probability_of` (the class `probability` is of)."""
        values = dataclasses.asdict(self)
        values["class_names"] = list(self.class_names)
        values["methods"] = list(self.methods)
        values["warnings"] = list(self.warnings)
        values["prediction"] = self.prediction
        values["predicted_label"] = self.predicted_label
        values["probability_of"] = self.probability_of
        values["attention_line"] = self.attention_line()
        values["attention_zeros"] = self.attention_zeros()
        return values

    def _repr_html_(self):
        """Jupyter's view: the page `hatt inspect --html` writes for this review.

        Drawn by `hatt.inspect.html.to_html` (the one renderer), inside an
        `<iframe srcdoc>` so that the page's styles and method switch stay out of
        the notebook's.
        """
        lines = sum(max(1, len(" ".join(s)) // 90 + 1) for s in self.sentences)
        height = min(260 + 34 * lines, 900)
        page = renderer.to_html([self], title="hatt: what the model looked at")
        return (
            f'<iframe srcdoc="{html_escape(page, quote=True)}" title="hatt explanation" '
            f'style="width: 100%; height: {height}px; border: none; resize: vertical;"></iframe>'
        )


SPARSE_NORMALIZERS = ("sparsemax", "entmax15")  # the normalizers that give exact zeros
NORMALIZER_NAMES = {"softmax": "softmax", "sparsemax": "sparsemax", "entmax15": "entmax-1.5"}
# Each level of attention and the layer that makes it (hatt.models' layer names).
_LEVELS = {"words": "word_attention", "sentences": "sentence_attention"}


def _zero_count(rows):
    """`[values exactly 0, values]` over rows of floats."""
    values = [v for row in rows for v in row]
    return [sum(1 for v in values if v == 0), len(values)]


def _percent(zeros, total):
    """`zeros / total` as a whole percentage; `"< 1 %"` / `"> 99 %"` rather than a false 0 or
    100, and `"0 %"` without values."""
    if not total:
        return "0 %"
    share = 100 * zeros / total
    if 0 < share < 0.5:
        return "< 1 %"
    if 99.5 <= share < 100:
        return "> 99 %"
    return f"{share:.0f} %"


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


NOTEBOOK_ROWS = 20  # explanations a notebook cell draws (write_html for more)


class Explanations(list):
    """A list of :class:`hatt.inspect.Explanation` that Jupyter draws, each as ``hatt inspect``.

    Write a page of them with ``hatt.inspect.write_html(explanations, "out.html")``.
    """

    def _repr_html_(self):
        shown = [e._repr_html_() for e in self[:NOTEBOOK_ROWS]]
        if len(self) > NOTEBOOK_ROWS:
            shown.append(
                f"<p>{len(self) - NOTEBOOK_ROWS} more explanation(s) not drawn here: "
                "hatt.inspect.write_html(explanations, 'out.html') writes them all.</p>"
            )
        return "\n".join(shown) or "<p>No explanations.</p>"
