"""Properties of hatt.data.text on arbitrary input: Unicode, invalid UTF-8, NUL, huge words.

Whatever a user or a scraper hands in, `tokenize` returns a well-formed
`[batch, (sentences), (words)]` ragged tensor (never raises), every sentence
holds a word, every word is a non-empty, valid UTF-8 string without
whitespace, control characters or replacement characters, and each review is
tokenized independently of the others in its batch (also inside a
`tf.function`, as in an exported SavedModel). TensorFlow only.
"""

import unicodedata

import numpy as np
import pytest
import tensorflow as tf
from hypothesis import example, given
from hypothesis import strategies as st

from hatt.data.text import clean, split_sentences, tokenize

# Pieces that the tokenizer's rules treat specially, to be glued together at random.
PIECES = [
    "a",
    "Z",
    "É",
    "ß",
    "İ",
    "7",
    "don't",
    "'",
    "’",
    "ʼ",
    '"',
    ".",
    "!",
    "?",
    "…",
    "。",
    "！",
    ")",
    "-",
    " ",
    "  ",
    "\n",
    "\r\n",
    "\t",
    "\x00",
    "\x1e",
    "\x7f",
    "\u2028",
    "\ufffd",
    "\ufeff",
    "\u200b",
    "\u200d",
    "\u0301",
    "😀",
    "👍🏽",
    "🏽",
    "❤️",
    "👨\u200d👩\u200d👧",
    "©",
    "<br />",
    "<BR>",
    "<b>",
    "<",
    ">",
    "&amp;",
    "&quot;",
    "&#39;",
    "&nbsp;",
    "\ud800",
    "\udfff",
    "\ud83d",
    "これは",
    "Очень",
]

# Arbitrary code points, surrogates (Cs) and unassigned ones (Cn) included.
any_text = st.text(st.characters(exclude_categories=()), max_size=40)
glued_text = st.lists(st.sampled_from(PIECES), max_size=25).map("".join)
long_words = st.tuples(
    st.sampled_from(["w", "é", "😀", "7", "'"]), st.integers(1_000, 60_000), glued_text
).map(lambda t: t[0] * t[1] + t[2])
texts = st.one_of(any_text, glued_text, long_words)
batches = st.lists(texts, max_size=4)
raw_bytes = st.lists(
    st.one_of(
        st.binary(max_size=20),
        glued_text.map(lambda s: s.encode("utf-8", "surrogatepass")),
        st.sampled_from([b"\xff", b"\xc0\xaf", b"\xed\xa0\x80", b"\xf4\x90\x80\x80", b"\x00"]),
    ),
    max_size=6,
).map(b"".join)


def check_splits(splits, inner_rows):
    splits = splits.numpy()
    assert splits[0] == 0
    assert (np.diff(splits) >= 0).all()
    assert splits[-1] == inner_rows


def check_tokens(tokens, batch):
    """`tokens` is a well-formed `[batch, (sentences), (words)]` tensor of clean words."""
    assert isinstance(tokens, tf.RaggedTensor)
    assert tokens.dtype == tf.string
    assert tokens.ragged_rank == 2 and tokens.shape.rank == 3
    assert int(tokens.nrows()) == batch
    sentences = tokens.values
    words = sentences.values
    check_splits(tokens.row_splits, int(sentences.nrows()))
    check_splits(sentences.row_splits, int(tf.size(words)))
    assert int(tf.reduce_sum(tokens.row_lengths())) == int(sentences.nrows())
    assert int(tf.reduce_sum(sentences.row_lengths())) == int(tf.size(words))
    # Documented: every sentence holds at least one word.
    assert (sentences.row_lengths().numpy() > 0).all()
    for word in words.numpy():
        assert word, "empty-string token"
        text = word.decode("utf-8")  # strict: every token is valid UTF-8
        assert not any(c.isspace() for c in text), text
        assert "\ufffd" not in text
        bad = {unicodedata.category(c) for c in text} & {"Cc", "Cs", "Zs", "Zl", "Zp"}
        assert not bad, (text, bad)
        assert not text.startswith("'") and not text.endswith("'"), text
        # A word holds a letter, a digit or a symbol: never only joiners, marks or
        # modifiers. ("Cn": TensorFlow's ICU may know code points, such as recent CJK
        # ideographs, that this Python's Unicode database does not.)
        categories = [unicodedata.category(c) for c in text]
        assert any(c[0] in "LN" or c in ("So", "Cn") for c in categories), ascii(text)


def as_lists(tokens):
    return tokens.to_list()


@tf.function(input_signature=[tf.TensorSpec([None], tf.string)])
def tokenize_in_graph(texts):
    return tokenize(texts)


@given(batches)
@example(["a\ud800b"])  # a lone surrogate in a Python str: TensorFlow refused to encode it
@example(["\ud83d\ude00 ok"])  # a surrogate pair held as two code points
@example(["x\x00y z. next"])  # NUL: tf.strings.lower truncated the review at it
@example(["😀\u200d"])  # a joiner after the last symbol became a token of its own
@example(["\u0301 a \u200d \U0001f3fd b"])  # lone mark, joiner and skin tone
@example([])
@example(["\U00031350"])  # a CJK ideograph newer than Python 3.11's Unicode database
def test_tokenize_any_python_strings(texts):
    tokens = tokenize(texts)
    check_tokens(tokens, len(texts))
    # Each review on its own gives its own row: rows never leak into each other.
    assert as_lists(tokens) == [as_lists(tokenize([t]))[0] for t in texts]
    # The same text as (possibly invalid) UTF-8 bytes, eagerly and in a graph.
    encoded = tf.constant([t.encode("utf-8", "surrogatepass") for t in texts], tf.string)
    assert as_lists(tokenize(encoded)) == as_lists(tokens)
    assert as_lists(tokenize_in_graph(encoded)) == as_lists(tokens)
    # Nothing in a review cuts it short: a word after it survives (NUL used to).
    for text in texts:
        assert as_lists(tokenize([text + "\nzzsentinel"]))[0][-1][-1] == b"zzsentinel"
    # Python's errors="replace" puts "?" where the surrogates were: punctuation.
    replaced = [t.encode("utf-8", "replace").decode("utf-8") for t in texts]
    check_tokens(tokenize(replaced), len(texts))


@given(st.lists(raw_bytes, max_size=4))
@example([b"bad \xff\xfe bytes caf\xe9."])
@example([b"\xff\x00q"])  # invalid byte then NUL: the text after NUL was lost
@example([b"a\xed\xa0\x80b"])  # a surrogate encoded as UTF-8 (CESU-style): invalid
def test_tokenize_any_bytes(texts):
    tensor = tf.constant(texts, tf.string) if texts else tf.constant([], tf.string)
    tokens = tokenize(tensor)
    check_tokens(tokens, len(texts))
    assert as_lists(tokenize_in_graph(tensor)) == as_lists(tokens)
    for text in texts:
        assert as_lists(tokenize([text + b"\nzzsentinel"]))[0][-1][-1] == b"zzsentinel"


@given(batches)
@example(["x\x00y"])
def test_clean_gives_valid_lowercase_utf8_of_the_same_length(texts):
    encoded = [t.encode("utf-8", "surrogatepass") for t in texts]
    cleaned = clean(tf.constant(encoded, tf.string) if texts else tf.constant([], tf.string))
    assert cleaned.shape == (len(texts),)
    for text, raw in zip(cleaned.numpy(), texts, strict=True):
        text = text.decode("utf-8")  # strict
        assert "\ufffd" not in text and "\x00" not in text
        assert not any(unicodedata.category(c) == "Cs" for c in text)
        if raw.isascii() and "<" not in raw and "&" not in raw:
            assert text == raw.lower().replace("\x00", " ")


@given(batches)
@example(["w\ud800. x"])
def test_split_sentences_gives_one_row_per_review(texts):
    sentences = split_sentences(clean(texts))
    assert isinstance(sentences, tf.RaggedTensor)
    assert sentences.ragged_rank == 1 and sentences.dtype == tf.string
    assert int(sentences.nrows()) == len(texts)
    check_splits(sentences.row_splits, int(tf.size(sentences.values)))
    assert all(b"\x1e" not in s for s in sentences.values.numpy())


def test_a_single_string_is_still_rejected_with_a_clear_message():
    with pytest.raises(ValueError, match=r"not a single string\. Received: texts='a\\ud800b'"):
        tokenize("a\ud800b")
