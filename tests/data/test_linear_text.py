"""Text → ids stays linear in the text's length and bounded by the model's window (issue 31)."""

import numpy as np
import pytest
import tensorflow as tf

from hatt.data import text as text_lib
from hatt.data.vectorize import BYTES_PER_WORD, Vectorizer

NORMAL = ["A fine film. I liked it!", "Dull.<br />Dull, dull, dull.", "", "no punctuation at all"]


@pytest.mark.parametrize(
    "data, mask",
    [
        (
            [[["a", "b"], ["c"]], [], [["d", "e", "f"]]],
            [[[True, False], [False]], [], [[True, True, False]]],
        ),
        ([[["a", "b"], ["c"]], [], [["d", "e", "f"]]], [[True, False], [], [False]]),
        ([["a", "b", "c"], [], ["d"]], [[False, True, True], [], [True]]),
    ],
)
def test_ragged_boolean_mask_matches_tensorflow(data, mask):
    data = tf.ragged.constant(data)
    mask = tf.cast(tf.ragged.constant(mask), tf.bool)
    expected = tf.ragged.boolean_mask(data, mask)
    got = text_lib.ragged_boolean_mask(data, mask)
    assert got.to_list() == expected.to_list()
    assert got.shape.rank == expected.shape.rank


def test_window_keeps_short_texts_and_cuts_long_ones():
    out = text_lib.window(["abcdefghij", "abc", "", "héllo wörld"], 3, 2).numpy().tolist()
    assert out == [b"abc\nij", b"abc", b"", "h\xc3\xa9\nld".encode("latin-1")]
    assert text_lib.window(["abcdefghij"], 4).numpy().tolist() == [b"abcd"]


def test_a_cut_inside_a_character_becomes_a_space_not_an_error():
    tokens = text_lib.tokenize(text_lib.window(["ééééé word"], 3, 0)).to_list()
    assert tokens == [[[b"\xc3\xa9"]]]


@pytest.mark.parametrize("mode", ["flat", "nested"])
@pytest.mark.parametrize(
    "big",
    [
        "word " * 200_000,  # 1 MB without punctuation: one sentence
        "word\n" * 100_000,  # 100,000 line breaks
        "x" * 2_000_000,  # one 2 MB word
        "😀" * 100_000 + "e\u0301" * 100_000,  # emoji and combining marks
    ],
    ids=["one-sentence", "line-breaks", "one-word", "emoji-marks"],
)
def test_a_huge_review_among_normal_ones_reads_only_its_window(mode, big):
    vectorizer = Vectorizer(
        max_tokens=50,
        min_count=1,
        output_mode=mode,
        sequence_length=20,
        max_sentences=4,
        max_words=5,
    )
    vectorizer.adapt(NORMAL + ["word"])
    alone = vectorizer(NORMAL).numpy()
    together = vectorizer([big, *NORMAL]).numpy()
    # The normal reviews read exactly as without their huge neighbour (up to padding).
    np.testing.assert_array_equal(together[1:][tuple(slice(0, n) for n in alone.shape)], alone)
    assert together[1:].sum() == alone.sum()  # and padding (id 0) beyond
    assert all(
        n <= limit for n, limit in zip(together.shape[1:], vectorizer.max_shape(), strict=True)
    )
    head, tail = vectorizer.window_bytes()
    # The window is what bounds the work: the huge review tokenizes like its cut.
    cut = text_lib.window([big], head, tail)
    assert int(tf.strings.length(cut)[0]) <= head + tail + 1
    np.testing.assert_array_equal(vectorizer([big]).numpy(), vectorizer(cut).numpy())


@pytest.mark.parametrize(
    "settings, words",
    [
        ({"output_mode": "flat", "sequence_length": 800}, (400, 400)),
        ({"output_mode": "flat", "sequence_length": 401, "truncation": "head"}, (401, 0)),
        ({"output_mode": "flat", "sequence_length": 7, "truncation": "tail"}, (0, 7)),
        ({"output_mode": "nested", "max_sentences": 30, "max_words": 50}, (750, 750)),
    ],
)
def test_window_bytes_hold_the_words_the_model_reads(settings, words):
    vectorizer = Vectorizer(**settings)
    assert vectorizer.window_words() == words
    assert vectorizer.window_bytes() == tuple((w + 1) * BYTES_PER_WORD if w else 0 for w in words)


def test_reviews_shorter_than_the_window_read_as_without_it(monkeypatch):
    """Today's ids (no cut) for reviews of every shape, pinned against the windowed path."""
    texts = [
        "Great film!<br />I don't regret it... 10/10 " * 30,
        "Words " * 900 + "The end. Really the end!",
        "Ünïcödé 😀👍🏽 text. " * 50,
    ]
    for settings in ({"sequence_length": 100}, {"output_mode": "nested", "max_sentences": 6}):
        vectorizer = Vectorizer(max_tokens=200, min_count=1, **settings).adapt(texts)
        windowed = vectorizer(texts).numpy()
        with monkeypatch.context() as patch:
            patch.setattr(text_lib, "window", lambda texts, head, tail=0: texts)
            patch.setattr(text_lib, "ragged_boolean_mask", tf.ragged.boolean_mask)
            unbounded = vectorizer(texts).numpy()
        np.testing.assert_array_equal(windowed, unbounded)
