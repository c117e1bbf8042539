"""Review text → sentences → words, with TensorFlow string ops only.

Everything here is a pure function of ``tf.string`` tensors, so the very same
code runs in ``tf.data`` during training and inside an exported SavedModel at
serving time (no train/serve skew).

Rules (applied in this order):

1. Bytes that are not valid UTF-8 (and U+FFFD replacement characters) become
   spaces (never an error); so do NUL characters. A Python ``str`` may hold
   lone surrogates (``"\\ud800"`` from JSON, ``os.fsdecode``): they are
   encoded with ``surrogatepass`` and so become spaces as well.
2. HTML: ``<br>``, ``<br/>``, ``<br />`` become line breaks; any other tag
   ``<...>`` becomes a space. The common entities ``&amp; &quot; &#39; &lt;
   &gt; &nbsp;`` are decoded.
3. Lower-casing (Unicode-aware), curly apostrophes ``’ ‘`` become ``'``.
4. Sentences end at a run of ``.``, ``!``, ``?`` (and ``…``) followed by
   whitespace (optionally after closing quotes or brackets), at line breaks,
   and at the full-width terminators ``。！？`` (no space needed after them). ``7.5/10`` or ``e.g.x`` therefore stay inside one sentence, and a
   text with no punctuation is one sentence.
5. Words are runs of letters, digits and combining marks, with inner
   apostrophes kept (``don't``, ``o'clock`` stay whole; quotes around a word
   are dropped). Every symbol such as an emoji (Unicode category ``So``, with
   its modifiers and zero-width-joiner sequence) is a token of its own. **Punctuation is dropped** (it only
   delimits sentences and words): ``well-made`` → ``well``, ``made``;
   ``$5`` → ``5``. A run without any letter, digit or symbol (a stray
   zero-width joiner, skin-tone modifier or combining mark) is not a word.
6. Sentences without any word are dropped, so an empty, whitespace-only or
   punctuation-only review has zero sentences.

Time and memory are linear in the text's length, whatever its shape (no
punctuation, one 1 MB sentence, 100,000 line breaks): no step pads a batch to
its longest sentence (:func:`ragged_boolean_mask` filters the ragged values
directly, where ``tf.ragged.boolean_mask`` densifies ``[batch, sentences,
words]``). No length limit is applied here; :func:`window` cuts a text to the
bytes a model can read, and truncation to the model's exact window is the
vectorizer's job.
"""

import numpy as np
import tensorflow as tf

_SENTENCE_BREAK = "\x1e"  # ASCII record separator: never left in cleaned text

# Characters that make up a word: letters, numbers, combining marks, and "'".
_WORD_CHARS = r"\p{L}\p{N}\p{M}'"
# A symbol (emoji, ♥, ©) with its variation selectors, skin-tone modifiers and
# zero-width-joiner sequences (👍🏽, ❤️, 👨‍👩‍👧) is one token.
_SKIN_TONE = r"\x{1F3FB}-\x{1F3FF}"
_SYMBOL = r"\p{So}[\p{M}" + _SKIN_TONE + r"]*(?:\x{200d}\p{So}[\p{M}" + _SKIN_TONE + r"]*)*"
_SYMBOL_CHARS = r"\p{So}\x{200d}" + _SKIN_TONE
# What makes a run of word and symbol characters a word.
_WORD = r"(?s).*[\p{L}\p{N}\p{So}].*"


def _as_string_tensor(texts):
    if isinstance(texts, str | bytes):
        raise ValueError(
            "Expected texts to be a batch of strings (a list or a 1-D tf.string tensor), "
            f"not a single string. Received: texts={texts[:60]!r}. Wrap it in a list."
        )
    # TensorFlow cannot encode a str holding a lone surrogate (it raises "Error
    # converting unicode string"); surrogatepass gives its invalid UTF-8 bytes,
    # which `clean` turns into spaces like any other invalid byte.
    if isinstance(texts, list | tuple):
        texts = [_encode(t) for t in texts]
    elif isinstance(texts, np.ndarray) and texts.dtype.kind in "UO":
        texts = np.array([_encode(t) for t in texts.ravel()], dtype=object).reshape(texts.shape)
    texts = tf.convert_to_tensor(texts, dtype=tf.string)
    if texts.shape.rank is not None and texts.shape.rank != 1:
        raise ValueError(
            f"Expected texts to be a 1-D batch of strings. Received: texts with shape {texts.shape}"
        )
    return texts


def _encode(text):
    return text.encode("utf-8", "surrogatepass") if isinstance(text, str) else text


def clean(texts):
    """Normalise raw review text (UTF-8 repair, HTML, case, apostrophes).

    Args:
        texts: 1-D ``tf.string`` tensor (or list of str) of raw reviews.

    Returns:
        1-D ``tf.string`` tensor of the same length. Line breaks (``\\n``)
        stand where the HTML had ``<br />``.
    """
    x = _as_string_tensor(texts)
    x = tf.strings.unicode_transcode(
        x, input_encoding="UTF-8", output_encoding="UTF-8", errors="replace"
    )
    # U+FFFD (from undecodable bytes) carries no meaning: make it a separator.
    # So is NUL, at which tf.strings.lower would cut the review short.
    x = tf.strings.regex_replace(x, r"[\x{FFFD}\x00]", " ")
    x = tf.strings.regex_replace(x, r"(?i)<\s*br\s*/?\s*>", "\n")
    x = tf.strings.regex_replace(x, r"<[^<>]{0,200}>", " ")
    for entity, char in (
        ("&quot;", '"'),
        ("&#39;", "'"),
        ("&lt;", "<"),
        ("&gt;", ">"),
        ("&nbsp;", " "),
        ("&amp;", "&"),
    ):
        x = tf.strings.regex_replace(x, entity, char, replace_global=True)
    x = tf.strings.lower(x, encoding="utf-8")
    x = tf.strings.regex_replace(x, "[\u2019\u2018\u02bc]", "'")
    return x


def split_sentences(texts):
    """Split cleaned texts into sentences.

    Args:
        texts: 1-D ``tf.string`` tensor, usually the output of :func:`clean`.

    Returns:
        ``tf.RaggedTensor`` of strings, ``[batch, (sentences)]``. Sentences
        may still be empty or hold only punctuation; :func:`tokenize` drops
        those after word splitting.
    """
    x = _as_string_tensor(texts)
    x = tf.strings.regex_replace(x, _SENTENCE_BREAK, " ")
    # End of sentence: a run of . ! ? … (possibly with closing quotes or
    # brackets) followed by whitespace; or any line break.
    x = tf.strings.regex_replace(x, r"[.!?\x{2026}]+[\"')\]]*(\s|$)", "\\0" + _SENTENCE_BREAK)
    # Full-width terminators (。！？) end a sentence even without a space after them.
    x = tf.strings.regex_replace(x, r"[\x{3002}\x{FF01}\x{FF1F}]+", "\\0" + _SENTENCE_BREAK)
    x = tf.strings.regex_replace(x, r"[\r\n]+", _SENTENCE_BREAK)
    return tf.strings.split(x, sep=_SENTENCE_BREAK)


def split_words(sentences):
    """Split sentences into words (see the module docstring for the rules).

    Args:
        sentences: ``tf.string`` tensor or ``tf.RaggedTensor`` of any rank.

    Returns:
        ``tf.RaggedTensor`` with one more ragged dimension of words.
    """
    x = sentences
    # Every symbol (emoji, ©, ♥ ...) stands alone as a token.
    x = tf.strings.regex_replace(x, "(" + _SYMBOL + ")", " \\1 ")
    # Anything that is neither a word character nor a symbol is a separator.
    x = tf.strings.regex_replace(x, "[^" + _WORD_CHARS + _SYMBOL_CHARS + "]+", " ")
    # Apostrophes only survive inside words: 'quoted' -> quoted, don't -> don't.
    x = tf.strings.regex_replace(x, "(^| )'+|'+( |$)", " ")
    x = tf.strings.regex_replace(x, "(^| )'+|'+( |$)", " ")
    words = tf.strings.split(x)
    return ragged_boolean_mask(words, _is_word(x, words))


# A sentence that may hold a run that is no word: a mark, joiner or skin tone, or a
# run of apostrophes alone (any other run holds a letter, number or symbol).
_MAY_HOLD_NON_WORDS = r"(?s).*(?:[\p{M}\x{200d}" + _SKIN_TONE + r"]|(?:^| )'+(?: |$)).*"


def _is_word(sentences, words):
    """Whether each of ``words`` (split from ``sentences``) matches ``_WORD``.

    A stray joiner, skin tone or combining mark is kept by :func:`split_words`
    but is no word alone. The per-word regex runs only on the words of the
    sentences that may hold such a run (one regex pass per sentence instead of
    one per word on ordinary text); every other word holds a letter, number or
    symbol.
    """
    inner = words
    while isinstance(inner.values, tf.RaggedTensor):
        inner = inner.values
    flat_sentences = (
        sentences.flat_values
        if isinstance(sentences, tf.RaggedTensor)
        else tf.reshape(sentences, [-1])
    )
    odd = tf.gather(
        tf.strings.regex_full_match(flat_sentences, _MAY_HOLD_NON_WORDS), inner.value_rowids()
    )
    candidates = tf.where(odd)
    checked = tf.strings.regex_full_match(tf.gather_nd(inner.values, candidates), _WORD)
    is_word = tf.tensor_scatter_nd_update(tf.ones_like(odd), candidates, checked)
    return words.with_flat_values(is_word)


def ragged_boolean_mask(data, mask):
    """``tf.ragged.boolean_mask`` in time and memory linear in the number of values.

    TensorFlow's own op pads ``data`` to a dense tensor on the way (one long
    sentence among short ones costs batch x longest x words); this one
    gathers the kept rows of the flat partition and recounts the lengths.

    Args:
        data: ``tf.RaggedTensor`` ``[batch, (d1), ..., (dk), ...]``.
        mask: boolean ``tf.RaggedTensor`` with the same partition as the first
            ``mask.shape.rank`` dimensions of ``data`` (rank >= 2).

    Returns:
        ``data`` without the items whose ``mask`` is false, as a
        ``tf.RaggedTensor`` of the same rank (the outer rows are kept, maybe
        empty).
    """
    depth = mask.shape.rank
    items = data.merge_dims(0, depth - 1) if depth > 1 else data
    kept = tf.gather(items, tf.reshape(tf.where(mask.flat_values), [-1]))
    inner = mask
    while isinstance(inner.values, tf.RaggedTensor):
        inner = inner.values
    counts = tf.math.unsorted_segment_sum(
        tf.cast(mask.flat_values, tf.int64), inner.value_rowids(), inner.nrows()
    )
    lengths = [*mask.nested_row_lengths()[:-1], counts]
    return tf.RaggedTensor.from_nested_row_lengths(kept, lengths, validate=False)


def window(texts, head_bytes, tail_bytes=0):
    """Cut raw texts to their first ``head_bytes`` and last ``tail_bytes`` bytes.

    A text no longer than ``head_bytes + tail_bytes`` is unchanged; a longer
    one becomes ``head + "\\n" + tail`` (the line break keeps the two ends
    out of one sentence). A cut inside a UTF-8 character leaves invalid bytes,
    which :func:`clean` turns into spaces. Models read a bounded number of
    words, so cutting first bounds all the work that follows by what the
    model reads, whatever the text's length (a 20 MB line costs what its
    first window costs).

    Args:
        texts: 1-D ``tf.string`` tensor (or list of str).
        head_bytes: non-negative int, bytes kept from the start.
        tail_bytes: non-negative int, bytes kept from the end.

    Returns:
        1-D ``tf.string`` tensor of the same length.
    """
    x = _as_string_tensor(texts)
    length = tf.strings.length(x, unit="BYTE")
    head = tf.strings.substr(x, 0, head_bytes, unit="BYTE")
    start = tf.maximum(length - tail_bytes, 0)
    tail = tf.strings.substr(x, start, tf.fill(tf.shape(x), tail_bytes), unit="BYTE")
    cut = tf.strings.join([head, tail], separator="\n") if tail_bytes else head
    return tf.where(length > head_bytes + tail_bytes, cut, x)


def fingerprints(texts):
    """One int64 a text, equal for texts that :func:`clean` makes equal up to white space.

    What the duplicate checks compare (a test document that also occurs in the
    training data): the same words, case, HTML and spacing aside. Linear in the
    texts' length.

    Args:
        texts: 1-D ``tf.string`` tensor (or list of str).

    Returns:
        NumPy int64 array, one hash a text (62-bit: collisions are negligible).
    """
    x = clean(texts)
    x = tf.strings.strip(tf.strings.regex_replace(x, r"\s+", " "))
    return tf.strings.to_hash_bucket_fast(x, 2**62).numpy()


def tokenize(texts):
    """Tokenize a batch of raw reviews into sentences of words.

    Built only from TensorFlow string ops: the same function runs eagerly, in
    ``tf.data`` and inside an exported SavedModel.

    Args:
        texts: a list of Python strings, or a 1-D ``tf.string`` tensor.

    Returns:
        ``tf.RaggedTensor`` of strings shaped ``[batch, (sentences), (words)]``.
        Every sentence holds at least one word; a review without any word
        (``""``, ``"   "``, ``"!!!"``) has zero sentences.

    Example:

    >>> hatt.data.tokenize(["Great film!<br />I don't regret it... 10/10"]).to_list()
    [[[b'great', b'film'], [b'i', b"don't", b'regret', b'it'], [b'10', b'10']]]
    """
    words = split_words(split_sentences(clean(texts)))
    keep = words.row_lengths(axis=2) > 0
    return ragged_boolean_mask(words, keep)


def flatten(tokens):
    """``[batch, (sentences), (words)]`` → ``[batch, (words)]``."""
    return tokens.merge_dims(1, 2)
