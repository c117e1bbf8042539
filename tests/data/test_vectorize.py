import json

import keras
import numpy as np
import pytest
import tensorflow as tf

from hatt.data import OOV_ID, PAD_ID, Vectorizer
from tests._fresh_process import run_json_script

TRAIN = ["the film was good. the film was long!", "a bad film", "good good acting"]


@pytest.fixture
def flat():
    return Vectorizer(max_tokens=100, min_count=1).adapt(TRAIN)


def test_vocabulary_is_counted_on_the_given_texts_most_frequent_first(flat):
    vocab = flat.get_vocabulary()
    assert vocab[:2] == ["", "[UNK]"]
    # film x3, good x3, the x2, was x2, then singletons alphabetically
    assert vocab[2:6] == ["film", "good", "the", "was"]
    assert vocab[6:] == sorted(vocab[6:])
    assert flat.vocabulary_size == len(vocab)


def test_ids_for_known_words_oov_and_padding(flat):
    vocab = flat.get_vocabulary()
    ids = flat(["Good film", "the unseen-word film was good"]).numpy()
    assert ids.dtype == np.int32
    assert ids.shape == (2, 6)  # padded to the longest review of the batch only
    assert ids[0].tolist() == [vocab.index("good"), vocab.index("film"), 0, 0, 0, 0]
    assert ids[1, 1] == OOV_ID and ids[1, 2] == OOV_ID  # "unseen", "word"
    assert PAD_ID == 0 and OOV_ID == 1


def test_min_count_and_max_tokens():
    v = Vectorizer(max_tokens=100, min_count=2).adapt(TRAIN)
    assert v.get_vocabulary(include_special_tokens=False) == ["film", "good", "the", "was"]
    capped = Vectorizer(max_tokens=4, min_count=1).adapt(TRAIN)
    assert capped.get_vocabulary() == ["", "[UNK]", "film", "good"]


def test_a_vocabulary_of_no_word_is_refused():
    # issue 63: min_count=10**6 trained on padding and out-of-vocabulary ids alone
    with pytest.raises(ValueError, match=r"min_count=1000000, where the most frequent .* occurs"):
        Vectorizer(min_count=10**6).adapt(TRAIN)
    with pytest.raises(ValueError, match="found no word"):
        Vectorizer(min_count=1).adapt(["...", "!!", ""])


def test_empty_reviews_give_one_padding_step():
    v = Vectorizer(max_tokens=10, min_count=1).adapt(["a b"])
    assert v(["", "   "]).numpy().tolist() == [[0], [0]]
    nested = Vectorizer(output_mode="nested", min_count=1, vocabulary=["a"])
    assert nested([""]).numpy().shape == (1, 1, 1)


@pytest.mark.parametrize(
    "truncation,expected",
    [("head", "w1 w2 w3 w4"), ("tail", "w4 w5 w6 w7"), ("head_tail", "w1 w2 w6 w7")],
)
def test_flat_truncation_policy(truncation, expected):
    v = Vectorizer(min_count=1, sequence_length=4, truncation=truncation, vocabulary=["x"])
    tokens = v.tokens(["w1 w2 w3. w4 w5 w6 w7", "short"]).to_list()
    assert [t.decode() for t in tokens[0]] == expected.split()
    assert tokens[1] == [b"short"]


def test_nested_wraps_long_sentences_and_truncates_sentences():
    v = Vectorizer(
        output_mode="nested",
        min_count=1,
        max_sentences=3,
        max_words=3,
        truncation="head",
        vocabulary=["x"],
    )
    tokens = v.tokens(["a b c d e f g. h i. j k l m"]).to_list()
    assert tokens == [[[b"a", b"b", b"c"], [b"d", b"e", b"f"], [b"g"]]]
    ids = v(["a b c d e f g. h i. j k l m", "one"]).numpy()
    assert ids.shape == (2, 3, 3)
    assert (ids[1, 1:] == 0).all() and ids[1, 0].tolist() == [1, 0, 0]
    fixed = Vectorizer(
        output_mode="nested", pad_to_max=True, max_sentences=4, max_words=5, vocabulary=["x"]
    )
    assert fixed(["x"]).numpy().shape == (1, 4, 5)


def _reference_tokens(documents, output_mode, limit, max_words, truncation):
    """Vectorizer.tokens in plain Python: ``documents`` as lists of sentences of words."""

    def keep(items):
        if len(items) <= limit:
            return items
        head = {"head": limit, "tail": 0, "head_tail": limit // 2}[truncation]
        return items[:head] + items[len(items) - (limit - head) :]

    if output_mode == "flat":
        return [keep([w for sentence in doc for w in sentence]) for doc in documents]
    wrapped = [
        [s[i : i + max_words] for s in doc for i in range(0, len(s), max_words)]
        for doc in documents
    ]
    return [keep(doc) for doc in wrapped]


@pytest.mark.parametrize("output_mode", ["flat", "nested"])
@pytest.mark.parametrize("truncation", ["head", "tail", "head_tail"])
def test_truncation_and_wrapping_match_a_python_reference(output_mode, truncation):
    """Random batches (empty reviews first, last and between; sentences longer than
    max_words; reviews shorter and longer than the limit) against the reference."""
    rng = np.random.default_rng(7)
    for limit, max_words in ((1, 1), (3, 2), (5, 4), (7, 3)):
        documents = []
        for _ in range(12):
            sentences = int(rng.integers(0, 5))
            documents.append(
                [
                    [f"w{int(rng.integers(100))}" for _ in range(int(rng.integers(1, 9)))]
                    for _ in range(sentences)
                ]
            )
        documents[0] = documents[-1] = []
        texts = [". ".join(" ".join(s) for s in doc) for doc in documents]
        v = Vectorizer(
            output_mode=output_mode,
            sequence_length=limit,
            max_sentences=limit,
            max_words=max_words,
            truncation=truncation,
            vocabulary=["x"],
        )
        got = tf.nest.map_structure(bytes.decode, v.tokens(texts).to_list())
        want = _reference_tokens(documents, output_mode, limit, max_words, truncation)
        assert got == want, (limit, max_words)


def test_50k_word_review_is_cut_to_the_maximum():
    v = Vectorizer(min_count=1, sequence_length=400, vocabulary=["word"])
    assert v([" ".join(["word"] * 50_000)]).numpy().shape == (1, 400)


def test_json_round_trip_keeps_the_vocabulary(flat, tmp_path):
    flat.save(tmp_path / "v.json")
    loaded = Vectorizer.load(tmp_path / "v.json")
    assert loaded.get_vocabulary() == flat.get_vocabulary()
    texts = ["good film, the acting", ""]
    np.testing.assert_array_equal(loaded(texts), flat(texts))
    (tmp_path / "broken.json").write_text("{not json")
    with pytest.raises(ValueError, match="Could not read a Vectorizer"):
        Vectorizer.load(tmp_path / "broken.json")


def _without(mapping, key):
    return {k: v for k, v in mapping.items() if k != key}


DAMAGES = {
    "truncated": lambda saved: json.dumps(saved)[:40],
    "not an object": lambda saved: json.dumps([saved]),
    "no class_name": lambda saved: json.dumps(_without(saved, "class_name")),
    "another class": lambda saved: json.dumps(
        {**saved, "class_name": "Dense", "registered_name": "Dense", "module": "keras.layers"}
    ),
    "no config": lambda saved: json.dumps(_without(saved, "config")),
    "no vocabulary": lambda saved: json.dumps(
        {**saved, "config": _without(saved["config"], "vocabulary")}
    ),
    "vocabulary null": lambda saved: json.dumps(
        {**saved, "config": {**saved["config"], "vocabulary": None}}
    ),
    "vocabulary a string": lambda saved: json.dumps(
        {**saved, "config": {**saved["config"], "vocabulary": "the film"}}
    ),
    "bad setting": lambda saved: json.dumps(
        {**saved, "config": {**saved["config"], "max_tokens": -1}}
    ),
}


@pytest.mark.parametrize("damage", list(DAMAGES))
def test_a_damaged_file_is_one_could_not_read_error_naming_it(flat, tmp_path, damage):
    """Not a parse TypeError, a dict, or an unadapted Vectorizer asking for adapt()."""
    flat.save(tmp_path / "vectorizer.json")
    saved = json.loads((tmp_path / "vectorizer.json").read_text())
    (tmp_path / "vectorizer.json").write_text(DAMAGES[damage](saved))
    with pytest.raises(ValueError, match="Could not read a Vectorizer from .*vectorizer.json"):
        Vectorizer.load(tmp_path / "vectorizer.json")


def test_keras_file_round_trip_in_a_fresh_process(flat, tmp_path):
    inputs = keras.Input(shape=(), dtype="string")
    model = keras.Model(inputs, flat(inputs))
    path = tmp_path / "vectorizer.keras"
    model.save(path)
    texts = ["good film, the acting!", "", "unknown words only"]
    expected = model(tf.constant(texts)).numpy().tolist()
    script = (
        "import json, sys, keras, tensorflow as tf, hatt\n"
        f"m = keras.saving.load_model({str(path)!r})\n"
        f"print(json.dumps(m(tf.constant({texts!r})).numpy().tolist()))\n"
    )
    assert run_json_script(script) == expected


def test_unadapted_and_bad_arguments():
    with pytest.raises(ValueError, match="no vocabulary"):
        Vectorizer()(["a"])
    with pytest.raises(ValueError, match="output_mode"):
        Vectorizer(output_mode="tree")
    with pytest.raises(ValueError, match="truncation"):
        Vectorizer(truncation="middle")
    with pytest.raises(ValueError, match="max_tokens"):
        Vectorizer(max_tokens=0)
    with pytest.raises(ValueError, match="single string"):
        Vectorizer(vocabulary=["a"])("a")
    with pytest.raises(ValueError, match="padding or OOV"):
        Vectorizer(vocabulary=["a", "[UNK]"])
