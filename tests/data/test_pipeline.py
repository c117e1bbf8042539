import numpy as np
import pytest
import tensorflow as tf

from hatt.data import Vectorizer, encode, make_dataset, padding_share
from hatt.data.pipeline import bucket_boundaries, pack_sentences, unpack_sentences


def corpus(n=200, seed=0):
    rng = np.random.default_rng(seed)
    texts, labels = [], []
    for i in range(n):
        sentences = [
            " ".join(f"w{rng.integers(50)}" for _ in range(rng.integers(1, 12)))
            for _ in range(rng.integers(1, 8))
        ]
        texts.append(". ".join(sentences) + ".")
        labels.append(i % 2)
    texts[3] = ""  # an empty review in the mix
    return texts, np.array(labels)


@pytest.fixture(scope="module")
def data():
    texts, labels = corpus()
    flat = Vectorizer(min_count=1, sequence_length=40).adapt(texts)
    nested = Vectorizer(
        min_count=1,
        output_mode="nested",
        max_sentences=6,
        max_words=8,
        vocabulary=flat.get_vocabulary(False),
    )
    return texts, labels, flat, nested


def real_lengths(batch, nested):
    x = batch.numpy()
    if nested:
        return (x != 0).any(axis=2).sum(axis=1), (x != 0).sum(axis=2).max(axis=1)
    return (x != 0).sum(axis=1), None


@pytest.mark.parametrize("mode", ["flat", "nested"])
def test_shapes_dtypes_and_padding_only_up_to_the_longest_review(data, mode):
    texts, labels, flat, nested = data
    vectorizer = nested if mode == "nested" else flat
    ds = make_dataset(texts, labels, vectorizer=vectorizer, batch_size=16, shuffle=True)
    seen = 0
    for x, y in ds:
        assert x.dtype == tf.int32 and y.dtype == tf.float32
        assert x.shape.rank == (3 if mode == "nested" else 2)
        assert x.shape[0] == y.shape[0] <= 16
        docs, words = real_lengths(x, mode == "nested")
        # the batch is exactly as long as its longest review (at least 1)
        assert x.shape[1] == max(1, docs.max())
        if mode == "nested":
            assert x.shape[2] == max(1, words.max()) and x.shape[2] <= 8 and x.shape[1] <= 6
        seen += x.shape[0]
    assert seen == len(texts)


def test_every_review_arrives_once_with_its_label(data):
    texts, labels, flat, _ = data
    ids = encode(texts, flat)
    want = sorted((tuple(r), float(y)) for r, y in zip(ids.to_list(), labels, strict=True))
    ds = make_dataset(None, labels, vectorizer=flat, ids=ids, batch_size=8, shuffle=True)
    got = sorted(
        (tuple(int(t) for t in row if t != 0), float(label))
        for x, y in ds
        for row, label in zip(x.numpy(), y.numpy(), strict=True)
    )
    assert got == want


def test_seeded_shuffle_is_reproducible_and_changes_per_epoch(data):
    texts, labels, flat, _ = data

    def epoch_orders(seed):
        ds = make_dataset(texts, labels, vectorizer=flat, batch_size=8, shuffle=True, seed=seed)
        return [[tuple(x.numpy()[0]) for x, _ in ds] for _ in range(2)]

    a, b = epoch_orders(1), epoch_orders(1)
    assert a == b
    assert a[0] != a[1]
    assert epoch_orders(2)[0] != a[0]


def test_bucketing_pads_less_than_plain_batching(data):
    texts, labels, flat, nested = data
    for vectorizer in (flat, nested):
        ids = encode(texts, vectorizer)
        plain = make_dataset(None, labels, vectorizer=vectorizer, ids=ids, bucketing=False)
        bucketed = make_dataset(None, labels, vectorizer=vectorizer, ids=ids, num_buckets=8)
        assert padding_share(bucketed) < padding_share(plain)


def test_without_bucketing_order_is_kept_and_labels_optional(data):
    texts, _, flat, _ = data
    ds = make_dataset(texts[:10], vectorizer=flat, batch_size=4, bucketing=False)
    rows = [row for x in ds for row in x.numpy().tolist()]
    expected = flat(texts[:10]).numpy().tolist()
    assert [[t for t in r if t] for r in rows] == [[t for t in r if t] for r in expected]


def test_bucket_boundaries_follow_quantiles():
    assert bucket_boundaries(np.arange(100), 4) == [25, 50, 75]
    assert bucket_boundaries([5] * 10, 4) == [6]
    assert bucket_boundaries([], 4) == []


def test_more_buckets_than_documents_are_one_bucket_a_document():
    # issue 63: num_buckets=10**9 asked NumPy for 10^9 quantiles (24 GB) and was killed
    lengths = np.random.default_rng(0).integers(1, 500, 120)
    assert bucket_boundaries(lengths, 10**9) == bucket_boundaries(lengths, 120)
    assert bucket_boundaries([7], 10**9) == []


def test_bad_arguments(data):
    texts, labels, flat, _ = data
    with pytest.raises(ValueError, match="batch_size"):
        make_dataset(texts, labels, vectorizer=flat, batch_size=0)
    with pytest.raises(ValueError, match="one label per text"):
        make_dataset(texts, labels[:5], vectorizer=flat)


def pad_words(x, width):
    return np.pad(x, [(0, 0), (0, 0), (0, width - x.shape[2])])


def test_packed_layout_round_trips_to_the_dense_batch(data):
    texts, labels, _, nested = data
    groups = (2, 4, 8)
    ds = make_dataset(
        texts, labels, vectorizer=nested, batch_size=16, packed=True, sentence_groups=groups
    )
    dense = make_dataset(texts, labels, vectorizer=nested, batch_size=16)
    batches = 0
    for (packed, y), (x, y_dense) in zip(ds, dense, strict=True):
        assert sorted(packed) == ["sentence_index", "words_0", "words_1", "words_2"]
        for k, width in enumerate(groups):
            words = packed[f"words_{k}"]
            assert words.dtype == tf.int32 and words.shape[0] >= 1
            assert 1 <= words.shape[1] <= width
            real = (words.numpy() != 0).sum(axis=1)
            # every real row belongs to its group: longer than the previous width
            assert (real[real > 0] > (groups[k - 1] if k else 0)).all()
        unpacked = unpack_sentences(packed).numpy()
        expected = x.numpy()
        assert unpacked.shape[:2] == expected.shape[:2]
        np.testing.assert_array_equal(pad_words(unpacked, 8), pad_words(expected, 8))
        np.testing.assert_array_equal(y, y_dense)
        # each real sentence row is referenced exactly once
        index = packed["sentence_index"].numpy()
        referenced = index[index > 0]
        assert len(referenced) == len(set(referenced.tolist()))
        batches += 1
    assert batches > 1


def test_packed_layout_pads_less_than_dense_nested(data):
    texts, labels, _, nested = data
    ids = encode(texts, nested)
    dense = make_dataset(None, labels, vectorizer=nested, ids=ids)
    packed = make_dataset(None, labels, vectorizer=nested, ids=ids, packed=True)
    assert padding_share(packed) < padding_share(dense)


def test_pack_sentences_on_empty_reviews():
    ids = tf.ragged.constant([[], [[3, 4, 5]], []], dtype=tf.int32, ragged_rank=2)
    packed = pack_sentences(ids, (2, 4))
    assert packed["sentence_index"].numpy().tolist() == [[0], [2], [0]]
    assert packed["words_0"].numpy().tolist() == [[0]]  # empty group: one padding row
    assert packed["words_1"].numpy().tolist() == [[3, 4, 5]]
    assert unpack_sentences(packed).numpy().tolist() == [[[0, 0, 0]], [[3, 4, 5]], [[0, 0, 0]]]


def test_packed_arguments_are_checked(data):
    texts, labels, flat, nested = data
    with pytest.raises(ValueError, match="nested"):
        make_dataset(texts, labels, vectorizer=flat, packed=True)
    with pytest.raises(ValueError, match="sentence_groups"):
        make_dataset(texts, labels, vectorizer=nested, packed=True, sentence_groups=(4, 2, 8))
    with pytest.raises(ValueError, match="sentence_groups"):
        make_dataset(texts, labels, vectorizer=nested, packed=True, sentence_groups=(2, 4))


@pytest.mark.parametrize("bucketing", [True, False])
def test_cardinality_is_known_and_exact(data, bucketing):
    texts, labels, flat, _ = data
    ds = make_dataset(texts, labels, vectorizer=flat, batch_size=16, bucketing=bucketing)
    assert int(ds.cardinality()) == sum(1 for _ in ds)
