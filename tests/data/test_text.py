import numpy as np
import pytest
import tensorflow as tf

from hatt.data import tokenize
from hatt.data.text import clean


def as_lists(texts):
    ragged = tokenize(texts)
    return [[[w.decode("utf-8") for w in s] for s in doc] for doc in ragged.to_list()]


CASES = [
    (
        "Great film!<br />I don't regret it... 10/10",
        [["great", "film"], ["i", "don't", "regret", "it"], ["10", "10"]],
    ),
    ("", []),
    ("   \n\t  ", []),
    ("!!!...???", []),
    ("no punctuation at all here", [["no", "punctuation", "at", "all", "here"]]),
    ("Wow!!! Really?! Yes.", [["wow"], ["really"], ["yes"]]),
    ("It was OK.Not great", [["it", "was", "ok", "not", "great"]]),  # no space: one sentence
    ("Rated 7.5/10, e.g. fine", [["rated", "7", "5", "10", "e", "g"], ["fine"]]),
    (
        "\"Quoted,\" she said. 'It's fine.' Next",
        [["quoted", "she", "said"], ["it's", "fine"], ["next"]],
    ),
    ("Well-made $5 film – it’s ok", [["well", "made", "5", "film", "it's", "ok"]]),
    ("line one\nline two\r\n\r\nthree", [["line", "one"], ["line", "two"], ["three"]]),
    ("<i>Italic</i> and <b>bold</b><BR>End", [["italic", "and", "bold"], ["end"]]),
    ("Tom &amp; Jerry &quot;rock&quot;", [["tom", "jerry", "rock"]]),
    ("I ❤️ this 😀😀 film👍🏽", [["i", "❤️", "this", "😀", "😀", "film", "👍🏽"]]),
    ("😀", [["😀"]]),
    ("これは 映画 です。 Очень ХОРОШО!", [["これは", "映画", "です"], ["очень", "хорошо"]]),
    ("Café naïve ÉLAN", [["café", "naïve", "élan"]]),
]


@pytest.mark.parametrize("text,expected", CASES)
def test_tokenize_hand_written_cases(text, expected):
    assert as_lists([text]) == [expected]


def test_batch_mixing_bad_inputs_keeps_rows_aligned():
    texts = ["", "One. Two!", "   ", "😀", "x" * 10]
    ragged = tokenize(texts)
    assert ragged.shape.rank == 3
    assert ragged.nrows().numpy() == 5
    assert ragged.row_lengths().numpy().tolist() == [0, 2, 0, 1, 1]
    assert ragged.dtype == tf.string


def test_tensor_input_and_invalid_utf8_bytes():
    texts = tf.constant([b"bad \xff\xfe bytes caf\xe9.", "fine"])
    assert as_lists(texts) == [[["bad", "bytes", "caf"]], [["fine"]]]
    # The replacement character that Python's errors="replace" produces is dropped too.
    assert as_lists(["a \ufffd b"]) == [[["a", "b"]]]


def test_long_review_is_one_linear_pass_without_truncation():
    words = 50_000
    ragged = tokenize([" ".join(["word"] * words) + ". end"])
    assert ragged.row_lengths(axis=2).to_list() == [[words, 1]]


def test_runs_inside_tf_function_with_unknown_batch():
    fn = tf.function(tokenize, input_signature=[tf.TensorSpec([None], tf.string)])
    out = fn(tf.constant(["A b. C", ""]))
    assert out.to_list() == [[[b"a", b"b"], [b"c"]], []]


def test_clean_lowercases_and_replaces_breaks():
    assert clean(["A<br />B<br/>C"]).numpy().tolist() == [b"a\nb\nc"]


@pytest.mark.parametrize("bad", ["a single string", b"bytes", [["nested"]]])
def test_bad_argument_types_raise_value_error(bad):
    with pytest.raises(ValueError, match="texts"):
        tokenize(bad)


def test_lone_surrogates_nul_and_stray_joiners():
    # A str with a lone surrogate (JSON "\ud800") could not be converted at all;
    # NUL cut the review short (tf.strings.lower stops at it); a joiner after
    # the last emoji, or alone, was a token of its own.
    texts = ["caf\ud800e ok", "x\x00y z", "\U0001f600\u200d fine \u200d \U0001f3fd \u0301"]
    expected = [[["caf", "e", "ok"]], [["x", "y", "z"]], [["\U0001f600", "fine"]]]
    assert as_lists(texts) == expected
    assert as_lists(np.array(texts)) == expected
    assert as_lists(np.array(texts, dtype=object)) == expected
    assert as_lists(tf.constant([t.encode("utf-8", "surrogatepass") for t in texts])) == expected
