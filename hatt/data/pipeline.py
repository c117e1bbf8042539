"""tf.data pipelines: tokenize once, bucket by length, pad per batch, prefetch.

:func:`make_dataset` turns raw texts (and labels) into batches of ids for
``model.fit`` / ``model.evaluate``:

1. The corpus is tokenized and looked up **once**, in chunks with a progress
   bar, and kept in memory as ragged ids (the cache of the tokenized corpus);
   epochs never re-tokenize.
2. Training datasets are shuffled with a seed (a new order every epoch, the
   same sequence of orders for the same seed).
3. Reviews of similar length go into the same batch
   (``tf.data.Dataset.bucket_by_sequence_length``, bucket boundaries at
   quantiles of the corpus' own lengths) and every batch is padded only to
   its own longest review: flat ``[batch, T_batch]``; nested
   ``[batch, S_batch, W_batch]`` (bucketed by number of sentences, padded in
   both sentences and words).
4. Batches are prefetched.
"""

import keras
import numpy as np
import tensorflow as tf

from hatt.data.vectorize import PAD_ID, at_least_one


def encode(texts, vectorizer, *, chunk_size=2048, progress=False):
    """Tokenize and look up ``texts`` in chunks; return ragged ``int32`` ids."""
    texts = list(texts)
    bar = keras.utils.Progbar(len(texts), unit_name="review") if progress else None
    parts = []
    for start in range(0, len(texts), chunk_size):
        chunk = tf.constant(texts[start : start + chunk_size], dtype=tf.string)
        parts.append(vectorizer.ragged_ids(chunk))
        if bar is not None:
            bar.update(min(start + chunk_size, len(texts)))
    if not parts:
        return vectorizer.ragged_ids(tf.zeros([0], tf.string))
    return tf.concat(parts, axis=0)


def document_lengths(ids):
    """Bucketing length of each encoded review: tokens (flat) or sentences (nested)."""
    return ids.row_lengths().numpy()


def bucket_boundaries(lengths, num_buckets):
    """Boundaries at quantiles of ``lengths`` so that buckets hold similar counts."""
    lengths = np.asarray(lengths)
    if len(lengths) == 0 or num_buckets <= 1:
        return []
    quantiles = np.quantile(lengths, np.linspace(0, 1, num_buckets + 1)[1:-1])
    return sorted({int(q) + 1 for q in quantiles if int(q) + 1 > 1})


def make_dataset(
    texts,
    labels=None,
    *,
    vectorizer,
    batch_size=32,
    shuffle=False,
    seed=1337,
    bucketing=True,
    num_buckets=16,
    ids=None,
    progress=False,
):
    """Batches of ids (and labels) for ``fit`` / ``evaluate`` / ``predict``.

    Args:
        texts: raw reviews (list of str); ignored when ``ids`` is given.
        labels: optional int labels (1 = positive), yielded as ``float32``.
        vectorizer: an adapted :class:`hatt.data.Vectorizer`.
        batch_size: reviews per batch.
        shuffle: shuffle every epoch (training), seeded by ``seed``.
        seed: seed of the shuffle.
        bucketing: batch reviews of similar length together. Without
            bucketing, batches keep the input order (use that for
            ``predict``); they are still padded only to their longest review.
        num_buckets: number of length buckets (quantiles of the corpus).
        ids: ragged ids from :func:`encode`, to reuse an encoded corpus.
        progress: progress bar over tokenization.

    Returns:
        A ``tf.data.Dataset`` of ``ids`` or ``(ids, labels)``, ids ``int32``
        ``[batch, T]`` or ``[batch, S, W]`` with 0 on padding.
    """
    if not isinstance(batch_size, int | np.integer) or batch_size < 1:
        raise ValueError(f"Expected batch_size to be a positive int. Received: {batch_size!r}")
    if ids is None:
        ids = encode(texts, vectorizer, progress=progress)
    n = int(ids.nrows())
    if labels is not None:
        labels = np.asarray(labels, dtype=np.float32)
        if labels.shape != (n,):
            raise ValueError(
                f"Expected one label per text ({n}). Received: labels with shape {labels.shape}"
            )
    nested = ids.ragged_rank == 2
    lengths = document_lengths(ids)

    dataset = tf.data.Dataset.from_tensor_slices(ids if labels is None else (ids, labels))
    if shuffle:
        dataset = dataset.shuffle(max(n, 1), seed=seed, reshuffle_each_iteration=True)
    # padded_batch needs dense elements: [(t)] -> [t], [(s), (w)] -> [s, w].
    dataset = dataset.map(
        (lambda x: _dense(x)) if labels is None else (lambda x, y: (_dense(x), y)),
        num_parallel_calls=tf.data.AUTOTUNE,
        deterministic=True,
    )

    element_shape = [None, None] if nested else [None]
    shapes = element_shape if labels is None else (element_shape, [])
    pad_values = PAD_ID if labels is None else (PAD_ID, 0.0)
    boundaries = bucket_boundaries(lengths, num_buckets) if bucketing else []
    if boundaries:

        def length_of(*element):
            return tf.cast(tf.shape(element[0])[0], tf.int32)

        dataset = dataset.bucket_by_sequence_length(
            length_of,
            bucket_boundaries=boundaries,
            bucket_batch_sizes=[batch_size] * (len(boundaries) + 1),
            padded_shapes=shapes,
            padding_values=pad_values,
        )
    else:
        dataset = dataset.padded_batch(batch_size, padded_shapes=shapes, padding_values=pad_values)
    # A batch of empty reviews still gets one (padding) step per axis.
    dataset = dataset.map(
        (lambda x: at_least_one(x)) if labels is None else (lambda x, y: (at_least_one(x), y)),
        num_parallel_calls=tf.data.AUTOTUNE,
        deterministic=True,
    )
    return dataset.prefetch(tf.data.AUTOTUNE)


def _dense(x):
    return x.to_tensor() if isinstance(x, tf.RaggedTensor) else x


def padding_share(dataset):
    """Share of padding ids in all batches of ``dataset`` (ids or (ids, labels))."""
    padding = total = 0
    for batch in dataset:
        x = batch[0] if isinstance(batch, tuple) else batch
        x = x.numpy()
        padding += int((x == PAD_ID).sum())
        total += x.size
    return padding / total if total else 0.0
