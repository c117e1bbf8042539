import copy
import os

import numpy as np
import pytest

from hatt.data import DataNotFoundError, corpus, load_imdb
from hatt.data import imdb as imdb_lib


@pytest.fixture(autouse=True)
def _isolated_cache(request, tmp_path, monkeypatch):
    # The real IMDB keeps the session's cache (CI sets one): its archive is extracted once
    # a run, not once a test.
    if request.node.get_closest_marker("imdb") and os.environ.get("HATT_CACHE"):
        return
    monkeypatch.setenv("HATT_CACHE", str(tmp_path / "cache"))


def test_tiny_folder_splits_labels_and_text(tiny_imdb):
    data = load_imdb(tiny_imdb, validation_size=4, progress=False)
    assert (len(data.train), len(data.validation), len(data.test)) == (8, 4, 4)
    # stratified: both classes in every split, in equal numbers here
    for split in (data.train, data.validation, data.test):
        assert split.labels.dtype == np.int64
        assert split.labels.sum() * 2 == len(split)
    assert "Lovely film." in data.test.texts
    assert data.test.ids[data.test.texts.index("Lovely film.")] == "test/pos/0_9"
    # label follows the folder
    texts = data.train.texts + data.validation.texts
    labels = np.concatenate([data.train.labels, data.validation.labels])
    assert labels[texts.index("Awful. Just awful.")] == 0
    assert labels[texts.index("A gem.")] == 1


def test_parent_folder_of_aclimdb_is_accepted(tiny_imdb):
    data = load_imdb(tiny_imdb.parent, validation_size=2, progress=False)
    assert len(data.train) + len(data.validation) == 12


def test_tarball_is_extracted_once_into_the_cache(tiny_imdb_tarball, tmp_path):
    first = load_imdb(tiny_imdb_tarball, validation_size=4, progress=False)
    extracted = list((tmp_path / "cache").iterdir())
    assert len(extracted) == 1 and (extracted[0] / ".complete").exists()
    marker_time = (extracted[0] / ".complete").stat().st_mtime_ns
    second = load_imdb(str(tiny_imdb_tarball), validation_size=4, progress=False)
    assert (extracted[0] / ".complete").stat().st_mtime_ns == marker_time
    assert first.train.texts == second.train.texts


def test_environment_variable_is_the_second_source(tiny_imdb, monkeypatch):
    monkeypatch.setenv("HATT_IMDB", str(tiny_imdb))
    data = load_imdb(validation_size=2, progress=False)
    assert len(data.test) == 4


def test_missing_path_names_all_three_ways(tmp_path):
    with pytest.raises(DataNotFoundError) as info:
        load_imdb(tmp_path / "nowhere", progress=False)
    message = str(info.value)
    assert "nowhere" in message
    assert "--data" in message and "HATT_IMDB" in message and "imdb_reviews" in message


def test_no_source_and_no_network_gives_the_same_clear_error(monkeypatch):
    monkeypatch.delenv("HATT_IMDB", raising=False)

    def offline(*_):
        raise ConnectionError("no network")

    monkeypatch.setattr(imdb_lib, "_load_tfds", offline)
    with pytest.raises(DataNotFoundError, match="HATT_IMDB") as info:
        load_imdb(progress=False)
    assert "ConnectionError" in str(info.value)


def test_folder_without_aclimdb_layout_and_corrupt_tarball(tmp_path):
    (tmp_path / "empty").mkdir()
    with pytest.raises(DataNotFoundError, match="not an aclImdb folder"):
        load_imdb(tmp_path / "empty", progress=False)
    bad = tmp_path / "bad.tar.gz"
    bad.write_bytes(b"this is not a tarball")
    with pytest.raises(DataNotFoundError, match="not a readable"):
        load_imdb(bad, progress=False)


def test_invalid_utf8_is_replaced_not_fatal(tiny_imdb):
    (tiny_imdb / "test" / "pos" / "5_9.txt").write_bytes(b"Caf\xe9 \xff great film")
    data = load_imdb(tiny_imdb, validation_size=2, progress=False)
    assert "Caf\ufffd \ufffd great film" in data.test.texts


def test_limit_keeps_a_stratified_subset_of_every_split(tiny_imdb):
    data = load_imdb(tiny_imdb, validation_size=4, limit=2, progress=False)
    for split in (data.train, data.validation, data.test):
        assert len(split) == 2 and split.labels.tolist().count(1) == 1


def test_block_validation_split_takes_runs_of_consecutive_ids():
    # 2 classes x 1000 reviews, ids 0..999 per class, stored in shuffled order
    rng = np.random.default_rng(0)
    order = rng.permutation(2000)
    labels = (order >= 1000).astype(np.int64)
    ids = [
        f"train/{'pos' if y else 'neg'}/{n % 1000}_7" for n, y in zip(order, labels, strict=True)
    ]
    chosen = corpus.block_indices(ids, labels, 250, seed=3, block_size=50)
    assert len(chosen) == len(set(chosen)) == 250
    assert labels[chosen].sum() == 125  # stratified
    for label in (0, 1):
        numbers = np.sort(
            [int(ids[i].split("/")[-1].split("_")[0]) for i in chosen if labels[i] == label]
        )
        # 125 ids in 3 blocks of 50 (the last cut short) starting at multiples of 50
        runs = np.split(numbers, np.flatnonzero(np.diff(numbers) != 1) + 1)
        assert len(runs) <= 3 and all(r[0] % 50 == 0 for r in runs)
    again = corpus.block_indices(ids, labels, 250, seed=3, block_size=50)
    other = corpus.block_indices(ids, labels, 250, seed=4, block_size=50)
    assert again.tolist() == chosen.tolist() and other.tolist() != chosen.tolist()
    # ids without a numeric review id (tensorflow-datasets): no blocks
    assert corpus.block_indices([f"train/{i}" for i in range(2000)], labels, 250, 3) is None


def test_random_validation_split_is_still_available(tiny_imdb):
    blocks = load_imdb(tiny_imdb, validation_size=4, progress=False)
    single = load_imdb(tiny_imdb, validation_size=4, validation_split="random", progress=False)
    for data in (blocks, single):
        assert len(data.validation) == 4 and data.validation.labels.sum() == 2


@pytest.mark.parametrize(
    "kwargs,name",
    [
        ({"limit": 1}, "limit"),
        ({"validation_size": -1}, "validation_size"),
        ({"validation_split": "movies"}, "validation_split"),
    ],
)
def test_bad_arguments(tiny_imdb, kwargs, name):
    with pytest.raises(ValueError, match=name):
        load_imdb(tiny_imdb, progress=False, **kwargs)


@pytest.mark.imdb
def test_real_imdb_splits(imdb_path, monkeypatch):
    # load_imdb is read_imdb, then assemble: keep what its read returned (and the read's
    # log) to carve other splits from the same reviews without reading 50,000 files again
    reads = []

    def read_and_keep(*args, log, **kwargs):
        raw = read_imdb(*args, log=log, **kwargs)
        reads.append((raw, copy.deepcopy(log)))
        return raw

    read_imdb = imdb_lib.read_imdb
    monkeypatch.setattr(imdb_lib, "read_imdb", read_and_keep)
    data = load_imdb(imdb_path, progress=False)
    ((raw, log),) = reads
    assert (len(data.train), len(data.validation), len(data.test)) == (22500, 2500, 25000)
    for split in (data.train, data.validation, data.test):
        assert split.labels.sum() * 2 == len(split)  # balanced
    assert not set(data.train.ids) & set(data.validation.ids)  # disjoint
    assert len(set(data.train.ids) | set(data.validation.ids)) == 25000
    assert all(i.startswith("test/") for i in data.test.ids)
    # blocks of consecutive ids: 1250 per class in at most 13 blocks of 100
    for label in ("neg", "pos"):
        numbers = np.sort(
            [int(i.split("/")[-1].split("_")[0]) for i in data.validation.ids if f"/{label}/" in i]
        )
        runs = np.split(numbers, np.flatnonzero(np.diff(numbers) != 1) + 1)
        assert len(numbers) == 1250 and len(runs) <= 13

    # the same seed gives the same split, another seed another one
    def split(seed):
        carving = corpus.Carving(seed=seed)
        return corpus.assemble(
            raw, log=copy.deepcopy(log), carving=carving, corpus_class=imdb_lib.Imdb
        )

    assert split(1337).validation.ids == data.validation.ids
    other = split(7)
    assert set(other.validation.ids) != set(data.validation.ids)
    assert len(other.validation) == 2500 and other.validation.labels.sum() == 1250


def test_tensorflow_datasets_path_converts_splits(monkeypatch):
    """The tfds source (used with a network) yields the same Split objects."""
    import tensorflow as tf
    import tensorflow_datasets as tfds

    monkeypatch.delenv("HATT_IMDB", raising=False)
    calls = []

    def fake_load(name, as_supervised, download=True):
        calls.append((name, as_supervised, download))
        texts = [b"Good film.", b"Bad \xff film.", b"Great!", b"Awful."]
        labels = [1, 0, 1, 0]
        return {
            s: tf.data.Dataset.from_tensor_slices(([s.encode() + b" " + t for t in texts], labels))
            for s in ("train", "test")
        }

    monkeypatch.setattr(tfds, "load", fake_load)
    data = load_imdb(validation_size=2, progress=False)
    assert calls == [("imdb_reviews", True, False)]
    assert data.source == "tensorflow_datasets:imdb_reviews"
    assert len(data.train) == 2 and len(data.validation) == 2 and len(data.test) == 4
    assert "test Bad \ufffd film." in data.test.texts and data.test.ids[0] == "test/0"
    assert sorted(data.validation.labels.tolist()) == [0, 1]


def test_a_binary_file_in_a_class_folder_is_skipped_and_reported(tmp_path, capsys):
    """An image dropped into train/pos is not a review; bad bytes in a review are repaired."""
    from tests._planted import write_planted_imdb

    root = write_planted_imdb(tmp_path, n_train=40, n_test=20)
    png = b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR" + bytes(range(256)) * 4
    (root / "train" / "pos" / "999_9.txt").write_bytes(png)
    (root / "test" / "neg" / "998_1.txt").write_bytes(b"Dreadful film \xff\xfe at the end.")
    imdb = load_imdb(root, validation_size=4, seed=0)
    err = capsys.readouterr().err
    assert "Skipped 1 file(s) that are not UTF-8 text" in err and "999_9.txt" in err
    assert "Replaced invalid UTF-8 bytes with U+FFFD in 1 document(s)" in err and "998_1" in err
    assert imdb.report["skipped"] == {"not text": 1} and imdb.report["invalid_utf8"] == 1
    ids = imdb.train.ids + imdb.validation.ids
    assert not any(i.endswith("999_9") for i in ids)
    assert len(imdb.train) + len(imdb.validation) == 40
    repaired = imdb.test.texts[imdb.test.ids.index("test/neg/998_1")]
    assert repaired == "Dreadful film \ufffd\ufffd at the end."
