"""Words → integer ids, flat ``[batch, T]`` or nested ``[batch, S, W]``.

The vocabulary is fitted on the training split only, counted with TensorFlow
ops and held by Keras' own ``keras.layers.StringLookup`` (id 0 = padding,
id 1 = out-of-vocabulary). :class:`Vectorizer` is a registered Keras layer,
so a model that starts with it saves its vocabulary inside the ``.keras``
file, and it runs unchanged inside ``tf.data`` and in an exported SavedModel.
"""

import functools
import json

import keras
import numpy as np
import tensorflow as tf

from hatt.data import text as text_lib
from hatt.progress import Progress

PAD_ID = 0
OOV_ID = 1
PAD_TOKEN = ""
OOV_TOKEN = "[UNK]"
OUTPUT_MODES = ("flat", "nested")
TRUNCATIONS = ("head", "tail", "head_tail")
# Raw bytes read a word the model can see (Vectorizer.window_bytes): a generous bound.
BYTES_PER_WORD = 64


def _keep_mask(lengths, limit, truncation):
    """Ragged bool mask ``[batch, (n)]`` keeping ``limit`` of each row's ``n`` items.

    Compared on the flat values, each item beside its row's length: comparing the
    ragged positions with a ``[batch, 1]`` tensor goes through ragged broadcasting,
    whose tracing alone took 0.3-0.7 s, in every graph that tokenizes (each
    export endpoint, each dataset pipeline); the flat form traces in 0.05 s.
    """
    positions = tf.ragged.range(lengths)
    flat = positions.flat_values
    row_length = tf.repeat(lengths, lengths)  # each item's row length, beside it
    if truncation == "head":
        keep = flat < limit
    elif truncation == "tail":
        keep = flat >= row_length - limit
    else:
        head = limit // 2
        keep = (flat < head) | (flat >= row_length - (limit - head))
    return positions.with_flat_values(keep)


def _wrap_sentences(tokens, max_words):
    """Split every sentence longer than ``max_words`` into consecutive pieces.

    ``[batch, (s), (w)]`` → ``[batch, (s'), (w')]`` with every ``w' <= max_words``;
    the words and their order are unchanged.
    """
    words = tokens.values  # [(all sentences), (w)]
    lengths = words.row_lengths()
    pieces = (lengths + max_words - 1) // max_words
    # On flat values, as _keep_mask: ragged broadcasting and a ragged sum traced slowly.
    piece_index = tf.ragged.range(pieces).flat_values
    piece_lengths = tf.minimum(
        tf.constant(max_words, lengths.dtype), tf.repeat(lengths, pieces) - piece_index * max_words
    )
    doc_pieces = tf.math.unsorted_segment_sum(pieces, tokens.value_rowids(), tokens.nrows())
    return tf.RaggedTensor.from_nested_row_lengths(
        words.flat_values, [doc_pieces, piece_lengths], validate=False
    )


def text_batch(inputs):
    """A batch of reviews (list / tuple / array of str, or a tensor) → 1-D ``tf.string``.

    Raises:
        ValueError: ``inputs`` is a single string rather than a batch.
    """
    if isinstance(inputs, str | bytes):
        raise ValueError(
            "Expected a batch of reviews (list of str or 1-D tf.string tensor), not a single "
            f"string. Received: inputs={inputs[:60]!r}. Wrap it in a list."
        )
    if isinstance(inputs, list | tuple | np.ndarray):
        return tf.constant(list(inputs), dtype=tf.string, shape=[len(inputs)])
    return inputs


@keras.saving.register_keras_serializable(package="hatt")
class Vectorizer(keras.layers.Layer):
    """Raw review text → padded integer ids, with a vocabulary from training data.

    Tokenizes with :func:`hatt.data.tokenize` (TensorFlow string ops), then
    truncates and looks words up in a ``keras.layers.StringLookup``: id 0 is
    padding, id 1 is out-of-vocabulary, ids 2.. are words from the most to the
    least frequent in the data given to :meth:`adapt`.

    Truncation policy:

    - ``output_mode="flat"``: a review's words (sentences joined) are cut to
      ``sequence_length``. ``truncation="head_tail"`` (default) keeps the first
      half and the last half (reviews often end with the verdict), ``"head"``
      the beginning, ``"tail"`` the end.
    - ``output_mode="nested"``: a sentence longer than ``max_words`` is
      wrapped into consecutive pieces of at most ``max_words`` words (nothing
      is dropped, as long reviews without punctuation are common), then the
      review's sentences are cut to ``max_sentences`` by the same
      ``truncation`` rule.

    Calling the layer pads to the longest review of the batch (not to the
    maximum), so short batches stay small; ``pad_to_max=True`` pads to the
    fixed maximum shape instead.

    Args:
        max_tokens: vocabulary size cap, counting the padding and OOV ids.
        min_count: words seen fewer times than this in the adapted data are
            out-of-vocabulary.
        output_mode: ``"flat"`` (``[batch, T]``) or ``"nested"``
            (``[batch, S, W]``).
        sequence_length: maximum ``T`` in flat mode.
        max_sentences: maximum ``S`` in nested mode.
        max_words: maximum ``W`` in nested mode.
        truncation: ``"head_tail"``, ``"head"`` or ``"tail"``.
        pad_to_max: pad every batch to the maximum shape instead of to the
            batch's longest review.
        vocabulary: list of words (without the padding and OOV tokens), or
            ``None`` until :meth:`adapt` is called.

    Call arguments:
        inputs: 1-D ``tf.string`` tensor (or list of str) of raw reviews.

    Returns:
        ``int32`` ids, ``[batch, T]`` or ``[batch, S, W]``, 0 on padding.

    Example:

    >>> v = hatt.data.Vectorizer(max_tokens=100, min_count=1)
    >>> v.adapt(["a good film.", "a bad film!"])
    >>> v(["A good, good film. Unseen words"]).numpy()
    array([[2, 5, 5, 3, 1, 1]], dtype=int32)
    """

    def __init__(
        self,
        max_tokens=30000,
        min_count=2,
        output_mode="flat",
        sequence_length=400,
        max_sentences=30,
        max_words=50,
        truncation="head_tail",
        pad_to_max=False,
        vocabulary=None,
        **kwargs,
    ):
        kwargs.setdefault("dtype", "string")
        super().__init__(**kwargs)
        for name, value, low in (
            ("max_tokens", max_tokens, 3),
            ("min_count", min_count, 1),
            ("sequence_length", sequence_length, 1),
            ("max_sentences", max_sentences, 1),
            ("max_words", max_words, 1),
        ):
            if not isinstance(value, int | np.integer) or isinstance(value, bool) or value < low:
                raise ValueError(
                    f"Expected {name} to be an int >= {low}. Received: {name}={value!r}"
                )
        if output_mode not in OUTPUT_MODES:
            raise ValueError(
                f"Expected output_mode to be one of {OUTPUT_MODES}. "
                f"Received: output_mode={output_mode!r}"
            )
        if truncation not in TRUNCATIONS:
            raise ValueError(
                f"Expected truncation to be one of {TRUNCATIONS}. "
                f"Received: truncation={truncation!r}"
            )
        self.max_tokens = int(max_tokens)
        self.min_count = int(min_count)
        self.output_mode = output_mode
        self.sequence_length = int(sequence_length)
        self.max_sentences = int(max_sentences)
        self.max_words = int(max_words)
        self.truncation = truncation
        self.pad_to_max = bool(pad_to_max)
        self.lookup = keras.layers.StringLookup(
            mask_token=PAD_TOKEN, oov_token=OOV_TOKEN, num_oov_indices=1, name="lookup"
        )
        self._vocabulary = None
        if vocabulary is not None:
            self.set_vocabulary(vocabulary)
        self.built = True

    # --- vocabulary -----------------------------------------------------------------

    def set_vocabulary(self, vocabulary):
        """Use ``vocabulary`` (words, most frequent first; no pad / OOV tokens)."""
        vocabulary = [w.decode("utf-8") if isinstance(w, bytes) else str(w) for w in vocabulary]
        bad = [w for w in vocabulary if w in (PAD_TOKEN, OOV_TOKEN)]
        if bad:
            raise ValueError(
                f"Expected vocabulary without the padding or OOV tokens. Received: {bad[:3]}"
            )
        if len(set(vocabulary)) != len(vocabulary):
            raise ValueError("Expected vocabulary to hold each word once. Received duplicates.")
        vocabulary = vocabulary[: self.max_tokens - 2]
        if vocabulary:  # StringLookup rejects an empty list; lookup_ids handles that case
            self.lookup.set_vocabulary(vocabulary)
        self._vocabulary = vocabulary

    @property
    def is_adapted(self):
        return self._vocabulary is not None

    def get_vocabulary(self, include_special_tokens=True):
        """The vocabulary; with the special tokens, index ``i`` is the word of id ``i``."""
        self._check_adapted()
        words = list(self._vocabulary)
        return [PAD_TOKEN, OOV_TOKEN, *words] if include_special_tokens else words

    @property
    def vocabulary_size(self):
        """Number of ids, padding and OOV included (the ``Embedding`` input dim)."""
        self._check_adapted()
        return len(self._vocabulary) + 2

    def adapt(self, texts, batch_size=2048, progress=False):
        """Fit the vocabulary on ``texts`` (the training split only).

        Words are counted with TensorFlow ops; those seen at least
        ``min_count`` times are kept, the most frequent first (ties in
        alphabetical order, so the result is deterministic), up to
        ``max_tokens - 2`` words.

        Args:
            texts: list of str, 1-D ``tf.string`` tensor, or a
                ``tf.data.Dataset`` of strings (batched or not).
            batch_size: reviews tokenized at a time.
            progress: show a progress bar.
        """
        if isinstance(texts, tf.data.Dataset):
            dataset = texts
            if dataset.element_spec.shape.rank == 0:
                dataset = dataset.batch(batch_size)
            total = None
        else:
            if isinstance(texts, str | bytes):
                raise ValueError(
                    "Expected texts to be a list of strings, not a single string. "
                    f"Received: texts={texts[:60]!r}"
                )
            texts = list(texts.numpy()) if isinstance(texts, tf.Tensor) else list(texts)
            total = len(texts)
            dataset = tf.data.Dataset.from_tensor_slices(
                tf.constant(texts, dtype=tf.string) if texts else tf.zeros([0], tf.string)
            ).batch(batch_size)
        counts = {}
        bar = Progress(total, enabled=progress)
        seen = 0
        for batch in dataset.map(_word_counts(), num_parallel_calls=tf.data.AUTOTUNE):
            words, numbers = batch
            for word, n in zip(words.numpy(), numbers.numpy(), strict=True):
                counts[word] = counts.get(word, 0) + int(n)
            seen += batch_size
            bar.update(min(seen, total) if total else seen)
        kept = [(w, n) for w, n in counts.items() if n >= self.min_count]
        _check_kept(kept, counts, self.min_count)
        kept.sort(key=lambda item: (-item[1], item[0]))
        self.set_vocabulary([w.decode("utf-8") for w, _ in kept[: self.max_tokens - 2]])
        return self

    def _check_adapted(self):
        if self._vocabulary is None:
            raise ValueError(
                "This Vectorizer has no vocabulary yet: call adapt(train_texts) or pass "
                "vocabulary=[...]."
            )

    # --- text → tokens → ids ---------------------------------------------------------

    def tokens(self, texts):
        """Tokenized and truncated reviews as a ``tf.RaggedTensor`` of strings.

        ``[batch, (T)]`` in flat mode, ``[batch, (S), (W)]`` in nested mode.
        """
        tokens = text_lib.tokenize(text_lib.window(texts, *self.window_bytes()))
        if self.output_mode == "flat":
            tokens = text_lib.flatten(tokens)
            keep = _keep_mask(tokens.row_lengths(), self.sequence_length, self.truncation)
        else:
            tokens = _wrap_sentences(tokens, self.max_words)
            keep = _keep_mask(tokens.row_lengths(), self.max_sentences, self.truncation)
        return text_lib.ragged_boolean_mask(tokens, keep)

    def window_words(self):
        """``(head, tail)``: the most words the model reads from a review's start and end.

        Flat: the ``sequence_length`` words split by ``truncation``. Nested:
        ``max_sentences`` sentence pieces of at most ``max_words`` words,
        split the same way.
        """
        if self.output_mode == "flat":
            limit, unit = self.sequence_length, 1
        else:
            limit, unit = self.max_sentences, self.max_words
        head = {"head": limit, "tail": 0, "head_tail": limit // 2}[self.truncation]
        return head * unit, (limit - head) * unit

    def window_bytes(self):
        """``(head, tail)`` bytes of raw text that surely hold :meth:`window_words`.

        ``BYTES_PER_WORD`` bytes a word (IMDB's reviews average 6 bytes a
        word, HTML included; at the presets' windows none of its 50,000
        reviews reads differently with this cut; a tail window can shift
        where a sentence longer than ``max_words`` wraps), plus one word for
        the piece cut in two. Tokenizing
        only these bytes bounds time and memory by what the model reads.
        """
        return tuple((words + 1) * BYTES_PER_WORD if words else 0 for words in self.window_words())

    def lookup_ids(self, tokens):
        """Ragged string tokens → ragged ``int32`` ids of the same shape."""
        self._check_adapted()
        if not self._vocabulary:  # empty vocabulary: every word is OOV
            ids = tf.fill(tf.shape(tokens.flat_values), tf.constant(OOV_ID, tf.int32))
        else:
            ids = tf.cast(self.lookup(tokens.flat_values), tf.int32)
        return tokens.with_flat_values(ids)

    def ragged_ids(self, texts):
        """Raw texts → ragged ``int32`` ids (``[batch, (T)]`` or ``[batch, (S), (W)]``)."""
        return self.lookup_ids(self.tokens(texts))

    def max_shape(self):
        """The largest shape of one review's ids: ``(T,)`` or ``(S, W)``."""
        if self.output_mode == "flat":
            return (self.sequence_length,)
        return (self.max_sentences, self.max_words)

    def densify(self, ragged, pad_value=PAD_ID):
        """Pad ragged ids (or tokens) to the batch's longest review, or to the maximum.

        Every axis is at least 1 long, so a batch of empty reviews gives one
        padding step (a fully masked row) rather than a zero-length axis.
        """
        if self.pad_to_max:
            return ragged.to_tensor(default_value=pad_value, shape=[None, *self.max_shape()])
        return at_least_one(ragged.to_tensor(default_value=pad_value), pad_value)

    def __call__(self, inputs, *args, **kwargs):
        return super().__call__(text_batch(inputs), *args, **kwargs)

    def call(self, inputs):
        return self.densify(self.ragged_ids(inputs))

    def compute_output_spec(self, inputs):
        batch = inputs.shape[0] if inputs.shape else None
        dims = self.max_shape() if self.pad_to_max else (None,) * len(self.max_shape())
        return keras.KerasTensor((batch, *dims), dtype="int32")

    # --- serialization -----------------------------------------------------------------

    def get_config(self):
        config = super().get_config()
        config.update(
            {
                "max_tokens": self.max_tokens,
                "min_count": self.min_count,
                "output_mode": self.output_mode,
                "sequence_length": self.sequence_length,
                "max_sentences": self.max_sentences,
                "max_words": self.max_words,
                "truncation": self.truncation,
                "pad_to_max": self.pad_to_max,
                "vocabulary": None if self._vocabulary is None else list(self._vocabulary),
            }
        )
        return config

    def save(self, path):
        """Write the settings and vocabulary to a JSON file."""
        with open(path, "w", encoding="utf-8") as f:
            json.dump(keras.saving.serialize_keras_object(self), f, ensure_ascii=False)

    @classmethod
    def load(cls, path):
        """Read a :class:`Vectorizer` written by :meth:`save`.

        Raises:
            ValueError: ``Could not read a Vectorizer from PATH: REASON`` for a
                missing, truncated or damaged file (not JSON, no top-level
                ``class_name`` or ``config``, another class, no
                ``config.vocabulary`` list of words, a setting out of range).
        """
        try:
            with open(path, encoding="utf-8") as f:
                saved = json.load(f)
            _check_saved(saved)
            vectorizer = keras.saving.deserialize_keras_object(saved)
            if not isinstance(vectorizer, cls):
                raise ValueError(f"it holds a {type(vectorizer).__name__}, not a Vectorizer")
        except (OSError, ValueError, TypeError, KeyError) as error:
            raise ValueError(f"Could not read a Vectorizer from {str(path)!r}: {error}") from error
        return vectorizer


def _check_saved(saved):
    """What :meth:`Vectorizer.save` writes: ``{"class_name": "Vectorizer", "config": {...}}``."""
    if not isinstance(saved, dict):
        raise ValueError(f"expected a JSON object, found a {type(saved).__name__}")
    if saved.get("class_name") != "Vectorizer":
        raise ValueError(
            f"expected class_name 'Vectorizer' at the top level, found {saved.get('class_name')!r}"
        )
    config = saved.get("config")
    if not isinstance(config, dict):
        raise ValueError("expected a 'config' object at the top level")
    vocabulary = config.get("vocabulary")
    if not isinstance(vocabulary, list) or not all(isinstance(w, str) for w in vocabulary):
        raise ValueError(
            "expected config.vocabulary to be a list of words (the file of an adapted "
            f"Vectorizer), found {type(vocabulary).__name__}"
        )


def at_least_one(dense, pad_value=PAD_ID):
    """Pad every axis but the first of ``dense`` to a length of at least 1."""
    shape = tf.shape(dense)
    rank = dense.shape.rank
    paddings = [[0, 0]] + [[0, tf.maximum(0, 1 - shape[i])] for i in range(1, rank)]
    return tf.pad(dense, paddings, constant_values=pad_value)


def _check_kept(kept, counts, min_count):
    """A vocabulary of no word would train on padding and out-of-vocabulary ids alone."""
    if kept:
        return
    if not counts:
        raise ValueError(
            "Expected the training texts to hold words. Received: texts in which the "
            "tokenizer found no word (only punctuation, markup or whitespace?)"
        )
    most = max(counts.values())
    raise ValueError(
        f"Expected min_count to keep some words of the training texts. Received: "
        f"min_count={min_count}, where the most frequent of their {len(counts)} words occurs "
        f"{most} time(s): lower min_count (2 by default)."
    )


@functools.cache
def _word_counts():
    """A batch of texts → its words and their counts: the tokenizer traced once a process.

    ``dataset.map`` traces the function it is given every time; the tokenizer's
    graph took 2.7 s of a tiny run's 9 s to trace, on every ``adapt``. Called
    inside the map, this ``tf.function`` is traced on its first use only.
    """

    @tf.function(input_signature=[tf.TensorSpec([None], tf.string)])
    def word_counts(texts):
        unique, _, counts = tf.unique_with_counts(text_lib.tokenize(texts).flat_values)
        return unique, counts

    return word_counts
