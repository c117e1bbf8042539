"""hatt prepare → TFRecord shards + vocabulary + manifest; hatt train --prepared."""

import json

import numpy as np
import pytest

import hatt
from hatt import cli
from hatt.data import prepared
from tests._planted import write_planted_imdb

SETTINGS = ["--set", "min_count=1", "--set", "validation_size=40"]
MODEL_ARGS = ["--set", "model_kwargs.embedding_dim=16", "--set", "model_kwargs.filters=8"]


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    return write_planted_imdb(tmp_path_factory.mktemp("planted"), n_train=240, n_test=60)


@pytest.fixture(scope="module")
def imdb(corpus):
    return hatt.data.load_imdb(str(corpus), validation_size=40, progress=False)


def _prepare(corpus, out, model):
    argv = ["prepare", "--data", str(corpus), "--out", str(out), "--model", model]
    assert cli.main([*argv, "--shard-size", "50", *SETTINGS, "--quiet"]) == 0
    return json.loads((out / "prepared.json").read_text())


@pytest.fixture(scope="module")
def flat_dir(corpus, tmp_path_factory):
    out = tmp_path_factory.mktemp("prepared") / "cnn"
    _prepare(corpus, out, "cnn")
    return out


def test_prepare_writes_shards_vocabulary_and_manifest(flat_dir, imdb):
    manifest = json.loads((flat_dir / "prepared.json").read_text())
    assert manifest["layout"] == "flat" and manifest["model"] == "cnn"
    for name, size in (("train", 200), ("validation", 40), ("test", 60)):
        split = manifest["splits"][name]
        assert split["reviews"] == size == len(getattr(imdb, name))
        assert len(split["shards"]) == -(-size // 50)
        assert sum(s["reviews"] for s in split["shards"]) == size
        assert sum(split["length_histogram"].values()) == size
    # the vocabulary is the one fitted on the raw training split
    raw = hatt.data.Vectorizer(max_tokens=30000, min_count=1).adapt(imdb.train.texts)
    stored = prepared.load_vectorizer(flat_dir)
    assert stored.get_vocabulary() == raw.get_vocabulary()
    assert manifest["vocabulary_size"] == raw.vocabulary_size
    labels, ids = prepared.split_labels_and_ids(flat_dir, "test")
    np.testing.assert_array_equal(labels, imdb.test.labels)
    assert ids == imdb.test.ids


@pytest.mark.parametrize("model", ["cnn", "han"])
def test_shards_give_the_same_batches_as_the_raw_text(corpus, imdb, flat_dir, tmp_path, model):
    out = flat_dir if model == "cnn" else tmp_path / "han"
    if model == "han":
        _prepare(corpus, out, "han")
    vectorizer = prepared.load_vectorizer(out)
    packed = hatt.data.pipeline.default_sentence_groups(50) if model == "han" else None
    from_disk = prepared.prepared_dataset(out, "test", batch_size=8, bucketing=False, packed=packed)
    from_text = hatt.data.make_dataset(
        imdb.test.texts,
        imdb.test.labels,
        vectorizer=vectorizer,
        batch_size=8,
        bucketing=False,
        packed=model == "han",
    )
    assert int(from_disk.cardinality()) == int(from_text.cardinality()) == 8
    for (x1, y1), (x2, y2) in zip(from_disk, from_text, strict=True):
        np.testing.assert_array_equal(y1.numpy(), y2.numpy())
        if isinstance(x1, dict):
            assert x1.keys() == x2.keys()
            for key in x1:
                np.testing.assert_array_equal(x1[key].numpy(), x2[key].numpy())
        else:
            np.testing.assert_array_equal(x1.numpy(), x2.numpy())


def test_shuffled_epochs_hold_every_review_once_and_their_known_cardinality(flat_dir):
    manifest = prepared.read_manifest(flat_dir)
    dataset = prepared.prepared_dataset(
        flat_dir, "train", batch_size=16, shuffle=True, seed=3, epochs=2, shuffle_buffer=64
    )
    batches = list(dataset)
    assert len(batches) == int(dataset.cardinality())
    per_epoch = len(batches) // 2
    first = np.concatenate([y.numpy() for _, y in batches[:per_epoch]])
    second = np.concatenate([y.numpy() for _, y in batches[per_epoch:]])
    assert len(first) == len(second) == manifest["splits"]["train"]["reviews"]
    assert first.sum() == second.sum() == manifest["splits"]["train"]["positive"]
    assert not np.array_equal(first, second)  # another order each epoch
    again = prepared.prepared_dataset(
        flat_dir,
        "train",
        batch_size=16,
        shuffle=True,
        seed=3,
        epochs=2,
        initial_epoch=1,
        shuffle_buffer=64,
    )
    # epoch 1 alone (a resumed run) is the second epoch of the two-epoch dataset
    resumed = list(again)
    assert len(resumed) == per_epoch
    for (x1, y1), (x2, y2) in zip(resumed, batches[per_epoch:], strict=True):
        np.testing.assert_array_equal(x1.numpy(), x2.numpy())
        np.testing.assert_array_equal(y1.numpy(), y2.numpy())


@pytest.mark.slow
def test_training_from_shards_matches_training_from_text(corpus, flat_dir, tmp_path):
    common = ["--epochs", "4", "--set", "batch_size=16", "--set", "learning_rate=0.02"]
    common += ["--set", "patience=4", *MODEL_ARGS, "--export-dir", ""]
    from_text = tmp_path / "text"
    from_shards = tmp_path / "shards"
    text_argv = ["train", "cnn", "--preset", "none", "--data", str(corpus), *SETTINGS, *common]
    assert cli.main([*text_argv, "--run-dir", str(from_text)]) == 0
    shards_argv = ["train", "cnn", "--preset", "none", "--prepared", str(flat_dir), *common]
    assert cli.main([*shards_argv, "--run-dir", str(from_shards)]) == 0
    text = json.loads((from_text / "metrics.json").read_text())
    shards = json.loads((from_shards / "metrics.json").read_text())
    config = json.loads((from_shards / "config.json").read_text())
    assert config["prepared"] == str(flat_dir) and config["min_count"] == 1  # from the manifest
    vocabularies = [
        hatt.data.Vectorizer.load(run / "vectorizer.json").get_vocabulary()
        for run in (from_text, from_shards)
    ]
    assert vocabularies[0] == vocabularies[1]
    assert shards["test_size"] == text["test_size"] == 60
    assert shards["test_accuracy"] >= 0.9
    assert shards["test_accuracy"] == pytest.approx(text["test_accuracy"], abs=0.1)
    saved = np.load(from_shards / "test_probabilities.npz")
    np.testing.assert_array_equal(
        saved["labels"], np.load(from_text / "test_probabilities.npz")["labels"]
    )


def test_prepared_errors_are_clear(corpus, flat_dir, tmp_path, capsys):
    # a flat corpus for the HAN
    argv = ["train", "han", "--preset", "none", "--prepared", str(flat_dir)]
    assert cli.main([*argv, "--run-dir", str(tmp_path / "r")]) == 2
    assert "needs the nested layout" in capsys.readouterr().err
    assert not (tmp_path / "r").exists()  # nothing written for a refused run
    # no corpus there
    argv = ["train", "cnn", "--preset", "none", "--prepared", str(tmp_path / "none")]
    assert cli.main(argv) == 2
    assert "run `hatt prepare" in capsys.readouterr().err
    # the preset's channel is fit from counts a prepared corpus does not hold in memory
    argv = ["train", "cnn", "--prepared", str(flat_dir), "--run-dir", str(tmp_path / "p")]
    assert cli.main(argv) == 2
    assert "does not hold in memory" in capsys.readouterr().err
    assert not (tmp_path / "p").exists()
    # word2vec reads the training split's tokens: refused the same way, nothing written
    argv = ["train", "rnn", "--preset", "none", "--prepared", str(flat_dir)]
    argv += ["--set", "word_vectors=word2vec", "--run-dir", str(tmp_path / "w")]
    assert cli.main(argv) == 2
    assert "word_vectors='word2vec' reads the training split" in capsys.readouterr().err
    assert not (tmp_path / "w").exists()
    # preparing over an existing corpus
    argv = ["prepare", "--data", str(corpus), "--out", str(flat_dir), "--quiet", *SETTINGS]
    assert cli.main(argv) == 2
    assert "already holds a prepared corpus" in capsys.readouterr().err
    # a missing shard
    broken = tmp_path / "broken"
    broken.mkdir()
    manifest = json.loads((flat_dir / "prepared.json").read_text())
    (broken / "prepared.json").write_text(json.dumps(manifest))
    with pytest.raises(prepared.PreparedDataError, match="incomplete.*missing"):
        prepared.read_manifest(broken)


def test_the_manifest_holds_class_names_and_counts(flat_dir, imdb):
    manifest = prepared.read_manifest(flat_dir)
    assert manifest["class_names"] == ["negative", "positive"]
    assert prepared.manifest_class_names(manifest) == ("negative", "positive")
    for name in prepared.SPLITS:
        counts = np.bincount(getattr(imdb, name).labels, minlength=2).tolist()
        assert manifest["splits"][name]["class_counts"] == counts
        assert manifest["splits"][name]["positive"] == counts[1]  # kept for binary corpora
    # a manifest written before class names: IMDB's binary classes, counts from "positive"
    old = {**manifest, "splits": {n: dict(s) for n, s in manifest["splits"].items()}}
    del old["class_names"]
    for split in old["splits"].values():
        del split["class_counts"]
    assert prepared.manifest_class_names(old) == ("negative", "positive")
    for name in prepared.SPLITS:
        np.testing.assert_array_equal(
            prepared.manifest_class_counts(old, name),
            prepared.manifest_class_counts(manifest, name),
        )


def test_a_multiclass_corpus_is_prepared_with_its_classes(tmp_path):
    from tests._planted import planted_classes

    classes = ("1", "2", "3", "10")
    texts, names = planted_classes(80, 0, classes)
    lines = ["text,label"] + [f"{t},{c}" for t, c in zip(texts, names, strict=True)]
    (tmp_path / "stars.csv").write_text("\n".join(lines) + "\n")
    corpus = hatt.data.load_corpus(tmp_path / "stars.csv", validation_size=8, progress=False)
    vectorizer = hatt.data.Vectorizer(max_tokens=100, min_count=1)
    manifest = prepared.prepare(corpus, vectorizer, tmp_path / "out", shard_size=20, progress=False)
    assert manifest["class_names"] == ["1", "2", "3", "10"]
    assert prepared.manifest_class_names(prepared.read_manifest(tmp_path / "out")) == classes
    for name in prepared.SPLITS:
        info = manifest["splits"][name]
        assert info["class_counts"] == corpus.class_counts(name).tolist()
        assert "positive" not in info
        labels, ids = prepared.split_labels_and_ids(tmp_path / "out", name)
        np.testing.assert_array_equal(labels, getattr(corpus, name).labels)
        assert ids == getattr(corpus, name).ids
