"""Per-review explanations: the tokens a model saw, their weights, its prediction.

:func:`explain` runs a model on raw reviews and returns one
:class:`Explanation` per review, the common input of the renderers
(:mod:`hatt.inspect.html`, :mod:`hatt.inspect.png`,
:mod:`hatt.inspect.terminal`).

The model can be an exported model (`hatt.export.load(path)`), a path, or an
in-memory `keras.Model` with its `hatt.data.Vectorizer`. For the in-memory
case :class:`KerasExplainer` computes what the exported endpoint returns:
the attention weights of `hatt.models.attention_model` for the RNN,
Transformer and HAN, and gradient × input saliency for the CNN (its max
pooling has no attention of its own).
"""

import contextlib
import dataclasses
import json
import warnings
from pathlib import Path

import keras
import numpy as np
import tensorflow as tf

from hatt.data import pipeline as pipeline_lib
from hatt.data import text as text_lib
from hatt.data.vectorize import PAD_ID, at_least_one
from hatt.layers import ContextAttention
from hatt.models.registry import FAMILIES, attention_model

SCORE_KINDS = ("attention", "saliency")


@dataclasses.dataclass
class Explanation:
    """What a model made of one review.

    Attributes:
        text: The raw review.
        family: `"cnn"`, `"rnn"`, `"transformer"` or `"han"`.
        score_kind: `"attention"` (the model's attention weights) or
            `"saliency"` (gradient × input, for the CNN).
        probability: The model's probability of the positive class.
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
        label: The true label (1 = positive) when known, else `None`.
        omitted_words: Words of the review the model did not see (cut by the
            vectorizer's truncation).
        gap_before: Index into `sentences` where those words were (the
            vectorizer keeps the head and the tail of a long review), or
            `None`.
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

    @property
    def prediction(self):
        """The predicted class: 1 (positive) when `probability >= 0.5`, else 0."""
        return int(self.probability >= 0.5)

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
        """A JSON-ready dict of the fields plus `prediction`."""
        values = dataclasses.asdict(self)
        values["prediction"] = self.prediction
        return values


# --- the in-memory backend -------------------------------------------------------------


@contextlib.contextmanager
def _quiet_one_step_softmax():
    """Silence Keras' warning about a softmax over an axis of size 1.

    A sentence (or a packed group's padding row) of one word gives the
    attention a one-step axis; its single weight of 1 (0 when masked) is
    right, not the mistake the warning guesses at.
    """
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message="You are using a softmax over axis")
        yield


def _family_of(model):
    if isinstance(model.input, dict) or len(model.inputs[0].shape) == 3:
        return "han"
    if model.name in FAMILIES:
        return model.name
    names = {layer.name for layer in model.layers}
    if any(n.startswith("conv_") for n in names):
        return "cnn"
    if any(n.startswith("transformer_block") for n in names):
        return "transformer"
    return "rnn"


class KerasExplainer:
    """A trained `keras.Model` + its `Vectorizer`, called like an exported model.

    Calling it on raw texts returns the dict of numpy arrays that the
    exported endpoint returns (`hatt.export.load(path)(texts)`):
    `"probability"` `[N]`, `"tokens"` (str, `""` on padding) and
    `"word_attention"` (`[N, T]`, or `[N, S, W]` for the HAN) and, for the
    HAN, `"sentence_attention"` `[N, S]`. The id-level methods
    (:meth:`ragged_ids`, :meth:`probability`, :meth:`scores`) serve the
    deletion test, which edits ids and runs the model again.

    For the CNN with max pooling the word scores are gradient × input saliency:
    `|Σ_d ∂z/∂e_td · e_td|` for the token embeddings `e` and the predicted
    class's logit `z`, divided by its sum over the review's tokens (0 on
    padding). The other families give their attention weights
    (`hatt.models.attention_model`).

    Args:
        model: A model built by `hatt.models.build` (or reloaded), dense or
            packed HAN.
        vectorizer: The adapted `hatt.data.Vectorizer` the model was trained
            with.
        family: The model family, or `None` to infer it from the model.
        batch_size: Reviews run through the model at a time.
    """

    def __init__(self, model, vectorizer, family=None, batch_size=32):
        if family is None:
            family = _family_of(model)
        if family not in FAMILIES:
            raise ValueError(
                f"Expected family to be one of {FAMILIES}. Received: family={family!r}"
            )
        self.model = model
        self.vectorizer = vectorizer
        self.family = family
        # Attention where the words are pooled by a ContextAttention (also a CNN with
        # pooling="attention"); gradient x input saliency for max pooling.
        pooling = model.get_layer("word_attention")
        self.score_kind = "attention" if isinstance(pooling, ContextAttention) else "saliency"
        self.batch_size = int(batch_size)
        self.packed = isinstance(model.input, dict)
        self.nested = family == "han"
        if self.nested != (vectorizer.output_mode == "nested"):
            raise ValueError(
                f"The {family} model needs a vectorizer with output_mode="
                f"{'nested' if self.nested else 'flat'!r}. "
                f"Received: output_mode={vectorizer.output_mode!r}"
            )
        if self.packed:
            groups = sum(k.startswith("words_") for k in model.input)
            widths = pipeline_lib.default_sentence_groups(vectorizer.max_words)
            if len(widths) != groups:  # any non-decreasing widths ending at max_words work
                top = vectorizer.max_words
                widths = tuple(max(1, round(top * (k + 1) / groups)) for k in range(groups))
            self.sentence_groups = widths
        if self.score_kind == "attention":
            self._views = attention_model(model)
        else:
            head = model.get_layer("probability")
            self._features = keras.Model(model.input, head.input)
            self._head = head
            self._embedding = model.get_layer("embedding")

    # --- ids -------------------------------------------------------------------------

    def ragged_ids(self, texts):
        """Raw texts → ragged ids, as the vectorizer makes them."""
        return self.vectorizer.ragged_ids(tf.constant(list(texts), dtype=tf.string))

    def _inputs(self, ragged):
        if self.packed:
            return pipeline_lib.pack_sentences(ragged, self.sentence_groups)
        return at_least_one(tf.cast(ragged.to_tensor(default_value=PAD_ID), tf.int32))

    def probability(self, ragged):
        """Probability of the positive class `[N]` for ragged ids."""
        out = []
        for start in range(0, int(ragged.nrows()), self.batch_size):
            batch = self._inputs(ragged[start : start + self.batch_size])
            with _quiet_one_step_softmax():
                probability = self.model.predict_on_batch(batch)
            out.append(np.asarray(probability).reshape(-1))
        return np.concatenate(out) if out else np.zeros([0], np.float32)

    def _saliency(self, inputs):
        variable = self._embedding.embeddings
        with tf.GradientTape() as tape:
            features = self._features(inputs, training=False)
            if isinstance(self._head, keras.layers.Dense):
                logit = tf.matmul(features, self._head.kernel) + self._head.bias
            else:  # the n-gram channel: a sigmoid Activation over the summed logits
                logit = features
            logit = tf.reshape(logit, [-1])
            # The predicted class's logit: z for positive, -z for negative predictions.
            target = tf.reduce_sum(tf.where(logit >= 0, logit, -logit))
        gradient = tape.gradient(target, variable)
        ids = tf.cast(inputs, tf.int32)
        if not isinstance(gradient, tf.IndexedSlices):
            raise ValueError("Expected the embedding gradient as per-token IndexedSlices.")
        # The embedding is one gather over the ids, so its gradient holds one row
        # per position (in the ids' order): the gradient w.r.t. that token's embedding.
        per_token = tf.reshape(gradient.values, [*ids.shape, -1])
        embedded = tf.gather(tf.convert_to_tensor(variable), ids)
        scores = tf.abs(tf.reduce_sum(per_token * embedded, -1))
        scores = tf.where(ids != PAD_ID, scores, 0.0).numpy()
        total = scores.sum(-1, keepdims=True)
        scores = np.divide(scores, total, out=np.zeros_like(scores), where=total > 0)
        probability = tf.sigmoid(logit).numpy()
        return probability, scores

    def scores(self, ragged):
        """Probability and word scores for ragged ids, one batch at a time.

        Returns:
            A list with one `(probability [B], word [B, T] or [B, S, W],
            sentence [B, S] or None)` tuple per batch of `batch_size`.
        """
        out = []
        for start in range(0, int(ragged.nrows()), self.batch_size):
            part = ragged[start : start + self.batch_size]
            inputs = self._inputs(part)
            if self.score_kind == "saliency":
                probability, word = self._saliency(inputs)
                out.append((probability, word, None))
                continue
            with _quiet_one_step_softmax():
                views = self._views.predict_on_batch(inputs)
            word = np.asarray(views["word_attention"])
            if self.nested:  # packed: W is the widest group's; align to the dense layout
                dense = at_least_one(part.to_tensor(default_value=PAD_ID))
                word = _fit(word, tuple(dense.shape[1:]))
            sentence = views.get("sentence_attention")
            sentence = None if sentence is None else np.asarray(sentence)
            out.append((np.asarray(views["probability"]).reshape(-1), word, sentence))
        return out

    # --- texts, like an exported model ----------------------------------------------------

    def __call__(self, texts):
        """Raw texts → the exported endpoint's dict of numpy arrays."""
        texts = _check_texts(texts)
        tokens = self.vectorizer.tokens(tf.constant(texts, dtype=tf.string))
        ragged = self.vectorizer.lookup_ids(tokens)
        batches = self.scores(ragged)
        probability = np.concatenate([b[0] for b in batches])
        # The batches differ in shape: pad all to the largest.
        shape = tuple(np.max([b[1].shape[1:] for b in batches], axis=0))
        token_array = at_least_one(tokens.to_tensor(default_value=""), "").numpy()
        token_array = _fit(token_array, shape, fill=b"")
        result = {
            "probability": probability.astype(np.float32),
            "tokens": np.char.decode(token_array.astype(bytes), "utf-8").astype(object),
            "word_attention": np.concatenate([_fit(b[1], shape) for b in batches]),
        }
        if self.nested:
            result["sentence_attention"] = np.concatenate([_fit(b[2], shape[:1]) for b in batches])
        return result


def _fit(array, shape, fill=0):
    """Crop or pad `array`'s trailing axes to `shape` (the first axis stays)."""
    array = np.asarray(array)
    slices = (slice(None), *(slice(0, n) for n in shape))
    array = array[slices]
    pad = [(0, 0)] + [(0, n - m) for n, m in zip(shape, array.shape[1:], strict=True)]
    return np.pad(array, pad, constant_values=fill)


# --- loading -----------------------------------------------------------------------------


def load_run(path, batch_size=32):
    """A :class:`KerasExplainer` for a run directory or a `.keras` file.

    A run directory (`hatt train`) holds `model.keras`, `vectorizer.json` and
    `config.json`; a `.keras` file needs `vectorizer.json` next to it.
    """
    path = Path(path)
    model_path = path / "model.keras" if path.is_dir() else path
    folder = model_path.parent
    if not model_path.is_file():
        raise ValueError(f"Expected a run directory or a .keras file. Received: path={str(path)!r}")
    vectorizer_path = folder / "vectorizer.json"
    if not vectorizer_path.is_file():
        raise ValueError(
            f"Expected vectorizer.json next to {str(model_path)!r} (as hatt train writes it)."
        )
    from hatt.data.vectorize import Vectorizer

    vectorizer = Vectorizer.load(vectorizer_path)
    try:
        model = keras.saving.load_model(model_path)
    except Exception as error:  # corrupted or foreign files
        raise ValueError(
            f"Could not load a Keras model from {str(model_path)!r}: {error}"
        ) from error
    family = None
    config = folder / "config.json"
    if config.is_file():
        try:
            family = json.loads(config.read_text()).get("model")
        except (OSError, ValueError):
            family = None
    return KerasExplainer(model, vectorizer, family=family, batch_size=batch_size)


def load(path):
    """An explainable model from `path`: `hatt.export.load` when it is available
    (SavedModel folder, `saved_models/NAME`, `.keras` file, run directory),
    else a run directory or `.keras` file with `vectorizer.json` next to it."""
    path = Path(path)
    if not path.exists():
        raise ValueError(f"Expected an existing model path. Received: path={str(path)!r}")
    try:
        from hatt import export
    except ImportError:
        export = None
    if export is not None and hasattr(export, "load"):
        return export.load(path)
    return load_run(path)


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


def explanations_from_result(result, texts, family, score_kind, labels=None):
    """Turn an exported model's result dict into :class:`Explanation` objects.

    Args:
        result: Dict with `"probability"` `[N]`, `"tokens"` and
            `"word_attention"` (`[N, T]` or `[N, S, W]`) and, for the HAN,
            `"sentence_attention"` `[N, S]`.
        texts: The `N` raw reviews.
        family: The model family.
        score_kind: `"attention"` or `"saliency"`.
        labels: Optional `N` true labels (0/1).

    Returns:
        A list of `N` explanations.
    """
    if score_kind not in SCORE_KINDS:
        raise ValueError(
            f"Expected score_kind to be one of {SCORE_KINDS}. Received: score_kind={score_kind!r}"
        )
    tokens = np.asarray(result["tokens"], dtype=object)
    word = np.asarray(result["word_attention"])
    probability = np.asarray(result["probability"]).reshape(-1)
    sentence = result.get("sentence_attention")
    if family == "han" and sentence is None:
        raise ValueError("Expected a HAN result to hold 'sentence_attention'.")
    out = []
    for i, text in enumerate(texts):
        out.append(
            _explanation(
                text,
                family,
                score_kind,
                probability[i],
                tokens[i],
                word[i],
                None if sentence is None else np.asarray(sentence)[i],
                None if labels is None else int(labels[i]),
            )  # fmt: skip
        )
    return out


def explain(model, texts, labels=None, vectorizer=None, batch_size=32):
    """Run `model` on raw reviews and explain each prediction.

    Args:
        model: What to explain: an object from `hatt.export.load` (or a
            :class:`KerasExplainer`), a path (SavedModel folder,
            `saved_models/NAME`, `.keras` file or run directory), or an
            in-memory `keras.Model` together with `vectorizer`.
        texts: List of raw reviews (str). Empty or word-less reviews give an
            explanation with no tokens and the model's probability for an
            empty review.
        labels: Optional list of true labels (1 = positive), one per text.
        vectorizer: The `hatt.data.Vectorizer` of an in-memory `keras.Model`.
        batch_size: Reviews per model call (in-memory models).

    Returns:
        A list of :class:`Explanation`, one per text.

    Example:

    >>> explained = hatt.inspect.explain("runs/han-20260101-000000", ["A fine film."])
    >>> explained[0].probability, explained[0].sentences, explained[0].word_weights
    """
    texts = _check_texts(texts)
    if labels is not None:
        labels = list(labels)
        if len(labels) != len(texts):
            raise ValueError(
                f"Expected one label per text ({len(texts)}). Received: {len(labels)} labels"
            )
        for label in labels:
            if label not in (0, 1):
                raise ValueError(f"Expected labels of 0 or 1. Received: label={label!r}")
    if isinstance(model, str | Path):
        model = load(model)
    elif isinstance(model, keras.Model):
        if vectorizer is None:
            raise ValueError(
                "Expected vectorizer= (a hatt.data.Vectorizer) with an in-memory keras.Model."
            )
        model = KerasExplainer(model, vectorizer, batch_size=batch_size)
    for attribute in ("family", "score_kind"):
        if not hasattr(model, attribute) or not callable(model):
            raise ValueError(
                "Expected model to be a path, a keras.Model with vectorizer=, or a loaded "
                f"hatt model (callable, with .family and .score_kind). Received: {model!r}"
            )
    out = []
    for start in range(0, len(texts), max(batch_size, 1)):
        chunk = texts[start : start + batch_size]
        result = model(chunk)
        out.extend(
            explanations_from_result(
                result,
                chunk,
                model.family,
                model.score_kind,
                None if labels is None else labels[start : start + batch_size],
            )  # fmt: skip
        )
    return out


def balanced_sample(labels, n, seed=1337):
    """Indices of a seeded sample of `n` items, half of each label (0 / 1), shuffled.

    aclImdb lists all negative reviews of a split before the positive ones, so
    the first `n` reviews are never a fair sample.

    Args:
        labels: 1-D array of 0/1 labels.
        n: Sample size (`n // 2` positives, the rest negatives), at most what
            the labels hold.
        seed: Seed of the draw.

    Returns:
        A 1-D int array of `n` distinct indices.
    """
    labels = np.asarray(labels)
    positives, negatives = np.flatnonzero(labels == 1), np.flatnonzero(labels == 0)
    half = n // 2
    if not isinstance(n, int | np.integer) or n < 1:
        raise ValueError(f"Expected n to be a positive int. Received: n={n!r}")
    if half > len(positives) or n - half > len(negatives):
        raise ValueError(
            f"Expected n <= {2 * min(len(positives), len(negatives))} for a balanced sample "
            f"of {len(positives)} positive and {len(negatives)} negative items. Received: n={n}"
        )
    rng = np.random.default_rng(seed)
    chosen = np.concatenate(
        [rng.choice(positives, half, replace=False), rng.choice(negatives, n - half, replace=False)]
    )
    rng.shuffle(chosen)
    return chosen
