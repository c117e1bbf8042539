"""A tokenized corpus on disk: TFRecord shards, its vocabulary and a manifest.

``hatt prepare`` (:func:`prepare`) tokenizes the three splits once with a
vocabulary fitted on the training split and writes::

    DIR/prepared.json                      the manifest (written last)
    DIR/vectorizer.json                    the vocabulary and its settings
    DIR/train-00000-of-00005.tfrecord ...  one tf.train.Example per review
    DIR/validation-....tfrecord, DIR/test-....tfrecord

Each example holds ``ids`` (``int64`` list: the review's word ids, sentences
concatenated in nested layout), ``sentence_lengths`` (nested layout only),
``label`` and ``id`` (the review's origin, e.g. ``"train/pos/123_9"``).

``hatt train --prepared DIR`` (:func:`prepared_dataset`) reads the shards
with interleaved readers, a bounded shuffle buffer and length bucketing, so
memory does not grow with the corpus. Bucket boundaries and the exact number
of batches come from the length histogram in the manifest: no pass over the
data is needed before training.
"""

import collections
import json
import os
from pathlib import Path

import numpy as np
import tensorflow as tf

from hatt._version import __version__
from hatt.data import pipeline
from hatt.data.corpus import BINARY_CLASSES, SPLITS, count_classes
from hatt.data.readers.files import read_json_object
from hatt.data.vectorize import Vectorizer
from hatt.lock import hold
from hatt.progress import Progress

FORMAT = "hatt.prepared/1"
MANIFEST = "prepared.json"
VECTORIZER = "vectorizer.json"


class PreparedDataError(ValueError):
    """A prepared folder is missing, incomplete or does not fit the run."""


# === Writing ========================================================================


def _example(ids, sentence_lengths, label, review_id):
    feature = {
        "ids": tf.train.Feature(int64_list=tf.train.Int64List(value=ids)),
        "label": tf.train.Feature(int64_list=tf.train.Int64List(value=[int(label)])),
        "id": tf.train.Feature(bytes_list=tf.train.BytesList(value=[review_id.encode("utf-8")])),
    }
    if sentence_lengths is not None:
        feature["sentence_lengths"] = tf.train.Feature(
            int64_list=tf.train.Int64List(value=sentence_lengths)
        )
    return tf.train.Example(features=tf.train.Features(feature=feature)).SerializeToString()


def _serialize_chunk(ids, labels, review_ids):
    """Ragged ids of a chunk of reviews → serialized examples and bucketing lengths."""
    out, lengths = [], []
    row_splits = ids.row_splits.numpy()
    if ids.ragged_rank == 1:
        values = ids.values.numpy()
        for i in range(len(row_splits) - 1):
            start, stop = row_splits[i], row_splits[i + 1]
            out.append(_example(values[start:stop], None, labels[i], review_ids[i]))
            lengths.append(int(stop - start))
    else:
        words = ids.flat_values.numpy()
        word_splits = ids.values.row_splits.numpy()
        for i in range(len(row_splits) - 1):
            first, last = row_splits[i], row_splits[i + 1]
            sentence_lengths = np.diff(word_splits[first : last + 1])
            out.append(
                _example(
                    words[word_splits[first] : word_splits[last]],
                    sentence_lengths,
                    labels[i],
                    review_ids[i],
                )
            )
            lengths.append(int(last - first))
    return out, lengths


def _split_summary(split, class_names):
    """A split's size and documents per class (``positive`` too, for a binary corpus)."""
    counts = count_classes(split.labels, len(class_names))
    summary = {"reviews": len(split), "class_counts": counts.tolist()}
    if len(class_names) == 2:
        summary["positive"] = int(counts[1])
    return summary


def _write_split(
    out_dir, name, split, class_names, vectorizer, shard_size, bar, done, chunk_size=1024
):
    n = len(split)
    num_shards = max(1, -(-n // shard_size))
    ids_of = split.ids or [f"{name}/{i}" for i in range(n)]
    histogram = collections.Counter()
    shards = []
    for shard in range(num_shards):
        filename = f"{name}-{shard:05d}-of-{num_shards:05d}.tfrecord"
        temporary = Path(out_dir) / f".{filename}.tmp"
        start, stop = shard * shard_size, min(n, (shard + 1) * shard_size)
        with tf.io.TFRecordWriter(str(temporary)) as writer:
            for chunk in range(start, stop, chunk_size):
                end = min(stop, chunk + chunk_size)
                texts = tf.constant(split.texts[chunk:end], dtype=tf.string)
                records, lengths = _serialize_chunk(
                    vectorizer.ragged_ids(texts), split.labels[chunk:end], ids_of[chunk:end]
                )
                for record in records:
                    writer.write(record)
                histogram.update(lengths)
                done += end - chunk
                bar.update(done)
        os.replace(temporary, Path(out_dir) / filename)
        shards.append({"file": filename, "reviews": stop - start})
    summary = {
        **_split_summary(split, class_names),
        "shards": shards,
        # bucketing length (tokens, or sentences when nested) -> number of reviews
        "length_histogram": {str(k): v for k, v in sorted(histogram.items())},
    }
    return summary, done


def prepare(
    imdb, vectorizer, out_dir, *, model=None, shard_size=5000, settings=None, progress=True
):
    """Tokenize ``imdb``'s three splits into TFRecord shards under ``out_dir``.

    Args:
        imdb: a :class:`hatt.data.TextCorpus` (train, validation, test; its
            ``class_names`` are recorded, IMDB's binary ones when it has none).
        vectorizer: a :class:`hatt.data.Vectorizer`; adapted on ``imdb.train``
            here when it has no vocabulary yet.
        out_dir: the output folder (created; it must not hold another
            prepared corpus's shards, nor be written by another live process:
            :class:`hatt.lock.DirectoryInUse`).
        model: the model family the layout is meant for (recorded).
        shard_size: reviews per shard.
        settings: extra settings to record (the data settings of
            :class:`hatt.training.TrainConfig`).
        progress: progress bars.

    Returns:
        The manifest (also written to ``out_dir/prepared.json``).
    """
    if not isinstance(shard_size, int) or isinstance(shard_size, bool) or shard_size < 1:
        raise ValueError(f"Expected shard_size to be a positive int. Received: {shard_size!r}")
    out_dir = Path(out_dir)
    with hold(out_dir, what="folder"):  # one writer a folder (hatt.lock)
        if any(out_dir.glob("*.tfrecord")) or (out_dir / MANIFEST).exists():
            raise PreparedDataError(
                f"The folder {str(out_dir)!r} already holds a prepared corpus. Choose an empty --out."
            )
        if not vectorizer.is_adapted:
            print(f"Fitting the vocabulary on {len(imdb.train)} training reviews")
            vectorizer.adapt(imdb.train.texts, progress=progress)
        vectorizer.save(out_dir / VECTORIZER)
        total = sum(len(getattr(imdb, name)) for name in SPLITS)
        print(f"Writing {total} tokenized reviews to {out_dir} ({shard_size} per shard)")
        bar = Progress(total, enabled=progress)
        class_names = list(getattr(imdb, "class_names", BINARY_CLASSES))
        splits, done = {}, 0
        for name in SPLITS:
            splits[name], done = _write_split(
                out_dir, name, getattr(imdb, name), class_names, vectorizer, shard_size, bar, done
            )
        manifest = {
            "format": FORMAT,
            "layout": vectorizer.output_mode,
            "model": model,
            "vocabulary_size": vectorizer.vocabulary_size,
            "vectorizer": VECTORIZER,
            "source": imdb.source,
            "class_names": class_names,
            "settings": dict(settings or {}),
            "splits": splits,
            "hatt_version": __version__,
        }
        temporary = out_dir / f".{MANIFEST}.tmp"
        temporary.write_text(json.dumps(manifest, indent=2) + "\n")
        os.replace(temporary, out_dir / MANIFEST)
        return manifest


# === Reading ========================================================================


def read_manifest(prepared_dir):
    """The manifest of a prepared folder (clear error when absent or broken)."""
    path = Path(prepared_dir) / MANIFEST
    try:
        manifest = read_json_object(path)
    except FileNotFoundError as error:
        raise PreparedDataError(
            f"No prepared corpus in {str(prepared_dir)!r} (no {MANIFEST}): run "
            f"`hatt prepare --data PATH --out {prepared_dir}` first."
        ) from error
    except (OSError, ValueError) as error:
        raise PreparedDataError(f"Could not read {str(path)!r}: {error}") from error
    if manifest.get("format") != FORMAT:
        raise PreparedDataError(
            f"Expected {str(path)!r} to be a {FORMAT} manifest. "
            f"Received: format={manifest.get('format')!r}"
        )
    for name in SPLITS:
        for shard in manifest["splits"][name]["shards"]:
            if not (Path(prepared_dir) / shard["file"]).exists():
                raise PreparedDataError(
                    f"The prepared corpus in {str(prepared_dir)!r} is incomplete: "
                    f"{shard['file']} is missing."
                )
    return manifest


def manifest_class_names(manifest):
    """The class names of a prepared corpus (manifests older than them: IMDB's binary ones)."""
    return tuple(manifest.get("class_names") or BINARY_CLASSES)


def manifest_class_counts(manifest, split):
    """Documents per class of ``split``, from the manifest (older ones: from ``positive``)."""
    info = manifest["splits"][split]
    if "class_counts" in info:
        return np.asarray(info["class_counts"], dtype=np.int64)
    return np.array([info["reviews"] - info["positive"], info["positive"]], dtype=np.int64)


def load_vectorizer(prepared_dir):
    return Vectorizer.load(Path(prepared_dir) / VECTORIZER)


def split_lengths(manifest, split):
    """The bucketing length of every review of ``split``, from the histogram (sorted)."""
    histogram = manifest["splits"][split]["length_histogram"]
    return np.repeat(
        np.array([int(k) for k in histogram], np.int64), [int(v) for v in histogram.values()]
    )


def _parser(nested):
    ids = (
        tf.io.RaggedFeature(
            tf.int64,
            value_key="ids",
            partitions=[tf.io.RaggedFeature.RowLengths("sentence_lengths")],
            row_splits_dtype=tf.int64,
        )
        if nested
        else tf.io.VarLenFeature(tf.int64)
    )
    spec = {"ids": ids, "label": tf.io.FixedLenFeature([], tf.int64)}

    def parse(record):
        example = tf.io.parse_single_example(record, spec)
        x = example["ids"]
        x = tf.cast(x, tf.int32) if nested else tf.cast(tf.sparse.to_dense(x), tf.int32)
        return x, tf.cast(example["label"], tf.float32)

    return parse


def _records(prepared_dir, files, *, parallel=True):
    paths = tf.data.Dataset.from_tensor_slices([str(Path(prepared_dir) / f) for f in files])
    if not parallel:  # the files one after the other, in order
        return paths.interleave(tf.data.TFRecordDataset, cycle_length=1)
    return paths.interleave(
        tf.data.TFRecordDataset,
        cycle_length=min(4, len(files)),
        num_parallel_calls=tf.data.AUTOTUNE,
        deterministic=True,
    )


def prepared_dataset(
    prepared_dir,
    split,
    *,
    batch_size=32,
    shuffle=False,
    seed=1337,
    shuffle_buffer=10000,
    bucketing=True,
    num_buckets=16,
    packed=None,
    epochs=None,
    initial_epoch=0,
    manifest=None,
    min_batch_size=1,
):
    """Batches of ``(ids, labels)`` of one split read from a prepared folder.

    The same batches as :func:`hatt.data.make_dataset` gives for the
    in-memory corpus (bucketed by length, padded per batch, optionally
    packed), read from disk: shard files are read by up to four interleaved
    readers and, for training, shuffled in a buffer of ``shuffle_buffer``
    reviews (the shard order and the buffer are seeded by ``(seed, epoch)``).

    Args:
        prepared_dir: the folder written by :func:`prepare`.
        split: ``"train"``, ``"validation"`` or ``"test"``.
        batch_size: reviews per batch.
        shuffle: shuffle (training); else the split's order (one reader).
        seed: seed of the shuffle.
        shuffle_buffer: reviews held by the shuffle buffer.
        bucketing: batch reviews of similar length together.
        num_buckets: number of length buckets.
        packed: the sentence groups of the packed layout (nested only), or
            ``None`` for dense batches.
        epochs: with ``shuffle``, the epochs ``initial_epoch..epochs-1`` in
            one dataset, as in :func:`hatt.data.make_dataset`.
        initial_epoch: first epoch built when ``epochs`` is given.
        manifest: the manifest if already read.
        min_batch_size: drop partial batches of fewer reviews (see
            :func:`hatt.data.pipeline.batch_by_length`).

    Returns:
        A ``tf.data.Dataset`` with its exact cardinality set.
    """
    if split not in SPLITS:
        raise ValueError(f"Expected split to be one of {SPLITS}. Received: split={split!r}")
    manifest = manifest or read_manifest(prepared_dir)
    nested = manifest["layout"] == "nested"
    if packed and not nested:
        raise PreparedDataError(
            f"The packed layout needs a nested corpus; {str(prepared_dir)!r} is flat."
        )
    files = [shard["file"] for shard in manifest["splits"][split]["shards"]]
    lengths = split_lengths(manifest, split)
    boundaries = pipeline.bucket_boundaries(lengths, num_buckets) if bucketing else []
    per_epoch = pipeline.count_batches(lengths, boundaries, batch_size, min_batch_size)
    parse = _parser(nested)

    def one_pass(epoch):
        order = files
        if epoch is not None:
            order = list(np.random.default_rng(pipeline.epoch_seed(seed, epoch)).permutation(files))
        elements = _records(prepared_dir, order, parallel=epoch is not None).map(
            parse, num_parallel_calls=tf.data.AUTOTUNE, deterministic=True
        )
        if epoch is not None:
            elements = elements.shuffle(
                shuffle_buffer,
                seed=pipeline.epoch_seed(seed, epoch),
                reshuffle_each_iteration=False,
            )
        return pipeline.batch_by_length(elements, boundaries, batch_size, min_batch_size)

    if shuffle:
        last = initial_epoch + 1 if epochs is None else epochs
        parts = [one_pass(epoch) for epoch in range(initial_epoch, last)]
        dataset = parts[0] if parts else one_pass(None).take(0)
        for part in parts[1:]:
            dataset = dataset.concatenate(part)
        total = per_epoch * len(parts)
    else:
        dataset, total = one_pass(None), per_epoch
    dataset = dataset.apply(tf.data.experimental.assert_cardinality(total))
    return pipeline.finish_batches(dataset, packed=packed, labels=True)


def split_labels_and_ids(prepared_dir, split, manifest=None):
    """Labels (``int8``) and review ids of ``split`` in its order (reads only those fields)."""
    manifest = manifest or read_manifest(prepared_dir)
    files = [shard["file"] for shard in manifest["splits"][split]["shards"]]
    spec = {
        "label": tf.io.FixedLenFeature([], tf.int64),
        "id": tf.io.FixedLenFeature([], tf.string),
    }
    labels, ids = [], []
    records = _records(prepared_dir, files, parallel=False).batch(4096)
    for batch in records.map(lambda r: tf.io.parse_example(r, spec)):
        labels.append(batch["label"].numpy().astype(np.int8))
        ids.extend(x.decode("utf-8") for x in batch["id"].numpy())
    return (np.concatenate(labels) if labels else np.zeros([0], np.int8)), ids
