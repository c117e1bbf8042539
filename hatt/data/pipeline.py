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

import numpy as np
import tensorflow as tf

from hatt.data.vectorize import PAD_ID, at_least_one
from hatt.progress import Progress


def encode(texts, vectorizer, *, chunk_size=2048, progress=False):
    """Tokenize and look up ``texts`` in chunks; return ragged ``int32`` ids."""
    texts = list(texts)
    bar = Progress(len(texts), enabled=progress)
    parts = []
    for start in range(0, len(texts), chunk_size):
        chunk = tf.constant(texts[start : start + chunk_size], dtype=tf.string)
        parts.append(vectorizer.ragged_ids(chunk))
        bar.update(min(start + chunk_size, len(texts)))
    if not parts:
        return vectorizer.ragged_ids(tf.zeros([0], tf.string))
    return tf.concat(parts, axis=0)


def document_lengths(ids):
    """Bucketing length of each encoded review: tokens (flat) or sentences (nested)."""
    return ids.row_lengths().numpy()


def bucket_boundaries(lengths, num_buckets):
    """Boundaries at quantiles of ``lengths`` so that buckets hold similar counts.

    Never more buckets than documents: a larger ``num_buckets`` gives the boundaries of
    one bucket a document (issue 63: ``num_buckets=10**9`` asked NumPy for 10^9
    quantiles, 24 GB, where at most ``len(lengths)`` can differ).
    """
    lengths = np.asarray(lengths)
    num_buckets = min(num_buckets, len(lengths))
    if len(lengths) == 0 or num_buckets <= 1:
        return []
    quantiles = np.quantile(lengths, np.linspace(0, 1, num_buckets + 1)[1:-1])
    return sorted({int(q) + 1 for q in quantiles if int(q) + 1 > 1})


def default_sentence_groups(max_words):
    """Word-axis widths of the packed layout's sentence groups, ending at ``max_words``."""
    widths = [w for w in (4, 8, 12, 16, 20, 25, 30, 40, 50, 64, 80, 100) if w < max_words]
    return (*widths, int(max_words))


def pack_sentences(ids, sentence_groups):
    """Pack a batch of nested ids into sentence groups of similar length.

    In a dense ``[batch, S, W]`` batch most cells are padding, because the
    sentences of one review differ in length (on IMDB, more than half of the
    cells stay padding however reviews are batched). The packed layout keeps
    the HAN's per-sentence word encoding but pads far less: every real
    sentence of the batch goes to the first group whose width fits it, and
    each group is one dense ``[N_k, W_k]`` tensor padded only to its own
    longest sentence. An index maps the review's sentence slots back to rows.

    Args:
        ids: ``tf.RaggedTensor`` ``[batch, (S), (W)]`` of int ids.
        sentence_groups: increasing word-axis widths; the last one must be at
            least the longest sentence (``Vectorizer.max_words``).

    Returns:
        A dict with ``"sentence_index"`` ``int32 [batch, S]`` (0 = no
        sentence, ``i + 1`` = row ``i`` of the groups concatenated in order)
        and ``"words_k"`` ``int32 [N_k, W_k]`` for each group ``k``. Every
        group has at least one row (an all-padding row when no sentence of
        the batch falls in it), so shapes are never empty.
    """
    sentences = ids.values  # [(N), (W)]: every real sentence of the batch
    lengths = tf.cast(sentences.row_lengths(), tf.int32)
    widths = tf.constant(list(sentence_groups), tf.int32)
    group = tf.searchsorted(widths, lengths, side="left")  # first width >= length
    group = tf.minimum(group, len(sentence_groups) - 1)
    total = tf.shape(lengths)[0]
    row_of = tf.zeros([total], tf.int32)
    packed = {}
    offset = tf.constant(0, tf.int32)
    for k in range(len(sentence_groups)):
        members = tf.cast(tf.reshape(tf.where(tf.equal(group, k)), [-1]), tf.int32)
        count = tf.shape(members)[0]
        words = tf.gather(sentences, members).to_tensor(default_value=PAD_ID)
        words = tf.cast(words, tf.int32)
        # at least one row and one column, so a group is never an empty tensor
        words = tf.pad(
            words,
            [[0, tf.maximum(0, 1 - count)], [0, tf.maximum(0, 1 - tf.shape(words)[1])]],
            constant_values=PAD_ID,
        )
        packed[f"words_{k}"] = words
        row_of = tf.tensor_scatter_nd_update(
            row_of, members[:, None], offset + tf.range(count, dtype=tf.int32)
        )
        offset = offset + tf.shape(words)[0]
    index = tf.RaggedTensor.from_row_splits(row_of + 1, ids.row_splits, validate=False)
    packed["sentence_index"] = at_least_one(index.to_tensor(default_value=0), 0)
    return packed


def unpack_sentences(packed):
    """Inverse of :func:`pack_sentences`: dense ``[batch, S, W_max]`` ids."""
    groups = sorted(k for k in packed if k.startswith("words_"))
    width = max(int(tf.shape(packed[k])[1]) for k in groups)
    rows = tf.concat(
        [tf.pad(packed[k], [[0, 0], [0, width - tf.shape(packed[k])[1]]]) for k in groups], 0
    )
    rows = tf.concat([tf.zeros([1, width], rows.dtype), rows], 0)  # row 0: no sentence
    return tf.gather(rows, packed["sentence_index"])


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
    packed=False,
    sentence_groups=None,
    ids=None,
    progress=False,
    epochs=None,
    initial_epoch=0,
    min_batch_size=1,
    repeat=False,
):
    """Batches of ids (and labels) for ``fit`` / ``evaluate`` / ``predict``.

    Args:
        texts: raw reviews (list of str); ignored when ``ids`` is given.
        labels: optional int labels (1 = positive), yielded as ``float32``.
        vectorizer: an adapted :class:`hatt.data.Vectorizer`.
        batch_size: reviews per batch.
        shuffle: shuffle every epoch (training), seeded by ``seed``.
        seed: seed of the shuffle.
        bucketing: batch reviews of similar length together (tokens for
            flat, sentences for nested). Without bucketing, batches keep the
            input order (use that for ``predict``); they are still padded only
            to their longest review.
        num_buckets: number of length buckets (quantiles of the corpus).
        packed: nested only: yield the packed layout of
            :func:`pack_sentences` (a dict) instead of dense ``[batch, S, W]``.
        sentence_groups: widths of the packed layout's sentence groups
            (default: :func:`default_sentence_groups` of ``max_words``).
        ids: ragged ids from :func:`encode`, to reuse an encoded corpus.
        progress: progress bar over tokenization.
        epochs: with ``shuffle``, build the batches of ``epochs -
            initial_epoch`` epochs in one dataset, epoch ``e`` shuffled by
            ``(seed, e)`` only (:func:`epoch_seed`), so the order of an epoch
            does not depend on how many epochs this process has already run;
            pass ``steps_per_epoch`` (the cardinality divided by the number of
            epochs) to ``fit``. ``None``: one epoch, reshuffled each iteration.
        initial_epoch: the first epoch built when ``epochs`` is given.
        min_batch_size: drop batches of fewer reviews (a bucket's last,
            partial batch), e.g. the number of replicas a batch is split
            across, so that no replica gets an empty batch.
        repeat: an endless stream (without ``epochs``): pass after pass over the
            reviews, each shuffled anew when ``shuffle`` (the same sequence of orders
            for the same ``seed``), batched across the passes.

    Returns:
        A ``tf.data.Dataset`` of ``x`` or ``(x, labels)``: ``x`` is ``int32``
        ``[batch, T]`` (flat), ``[batch, S, W]`` (nested) or the dict of
        :func:`pack_sentences` (nested, ``packed=True``), with 0 on padding
        and every axis at least 1 long.
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
    if packed and not nested:
        raise ValueError(
            "Expected a nested vectorizer (output_mode='nested') with packed=True. "
            f"Received: output_mode={vectorizer.output_mode!r}"
        )
    groups = None
    if packed:
        groups = tuple(sentence_groups or default_sentence_groups(vectorizer.max_words))
        if list(groups) != sorted(set(groups)) or groups[-1] < vectorizer.max_words:
            raise ValueError(
                "Expected sentence_groups to be increasing widths ending at >= max_words "
                f"({vectorizer.max_words}). Received: sentence_groups={groups}"
            )

    elements = tf.data.Dataset.from_tensor_slices(ids if labels is None else (ids, labels))
    lengths = document_lengths(ids)
    boundaries = bucket_boundaries(lengths, num_buckets) if bucketing else []
    per_epoch = count_batches(lengths, boundaries, batch_size, min_batch_size)
    if repeat:
        _check_stream(per_epoch, epochs, n, batch_size)
    if shuffle and epochs is not None:
        # One dataset for epochs initial_epoch..epochs-1, epoch e shuffled by
        # (seed, e) alone: a run resumed at epoch e sees the orders an
        # uninterrupted run would have seen (fit with steps_per_epoch).
        parts = [
            batch_by_length(
                elements.shuffle(
                    max(n, 1), seed=epoch_seed(seed, epoch), reshuffle_each_iteration=False
                ),
                boundaries,
                batch_size,
                min_batch_size,
            )
            for epoch in range(initial_epoch, epochs)
        ]
        dataset = parts[0] if parts else elements.take(0).ragged_batch(batch_size)
        for part in parts[1:]:
            dataset = dataset.concatenate(part)
        total = per_epoch * max(0, epochs - initial_epoch)
    else:
        if shuffle:
            elements = elements.shuffle(max(n, 1), seed=seed, reshuffle_each_iteration=True)
        if repeat:
            elements = elements.repeat()
        dataset = batch_by_length(elements, boundaries, batch_size, min_batch_size)
        total = per_epoch
    if not repeat:
        # The number of batches is known (a partial batch per bucket at most): telling
        # tf.data gives Keras' progress bar its total from the first epoch on.
        dataset = dataset.apply(tf.data.experimental.assert_cardinality(total))
    return finish_batches(dataset, packed=groups if packed else None, labels=labels is not None)


def _check_stream(per_epoch, epochs, n, batch_size):
    """An endless stream needs batches to yield (else it would wait forever) and no ``epochs``."""
    if epochs is not None:
        raise ValueError(f"Expected repeat=True without epochs. Received: epochs={epochs!r}")
    if per_epoch < 1:
        raise ValueError(
            "Expected documents enough for one batch with repeat=True. "
            f"Received: {n} documents (batch_size={batch_size})"
        )


def epoch_seed(seed, epoch):
    """The shuffle seed of epoch ``epoch`` (0-based) of a run seeded with ``seed``."""
    return (int(seed) * 1_000_003 + 7919 * (int(epoch) + 1)) % (2**31 - 1)


def batch_by_length(elements, boundaries, batch_size, min_batch_size=1):
    """Ragged batches of ``elements`` (ids or (ids, label)), bucketed at ``boundaries``.

    Reviews whose length (tokens, or sentences when nested) falls in the same
    bucket are batched together; each bucket ends with at most one partial
    batch (dropped when it holds fewer than ``min_batch_size`` reviews). No
    boundaries: batches in input order.
    """
    if not boundaries:
        batches = elements.ragged_batch(batch_size)
    else:
        limits = tf.constant(list(boundaries), tf.int64)

        def bucket_of(*element):
            length = tf.cast(_nrows(element[0]), tf.int64)
            return tf.searchsorted(limits, length[None], side="right", out_type=tf.int64)[0]

        batches = elements.group_by_window(
            key_func=bucket_of,
            reduce_func=lambda _, window: window.ragged_batch(batch_size),
            window_size=batch_size,
        )
    if min_batch_size > 1:
        batches = batches.filter(lambda x, *_: _nrows(x) >= min_batch_size)
    return batches


def finish_batches(dataset, *, packed=None, labels=True):
    """Ragged batches → dense (or packed, with ``packed=sentence_groups``), prefetched."""
    if packed:
        finish = lambda x: pack_sentences(x, packed)  # noqa: E731
    else:
        finish = lambda x: at_least_one(x.to_tensor(default_value=PAD_ID))  # noqa: E731
    dataset = dataset.map(
        finish if not labels else (lambda x, y: (finish(x), y)),
        num_parallel_calls=tf.data.AUTOTUNE,
        deterministic=True,
    )
    return dataset.prefetch(tf.data.AUTOTUNE)


def count_batches(lengths, boundaries, batch_size, min_batch_size=1):
    """Number of batches that bucketing ``lengths`` at ``boundaries`` yields.

    A bucket's last, partial batch counts when it holds at least
    ``min_batch_size`` reviews (see :func:`batch_by_length`).
    """
    buckets = np.searchsorted(np.asarray(boundaries), np.asarray(lengths), side="right")
    counts = np.bincount(buckets, minlength=len(boundaries) + 1)
    return int(
        sum(int(c) // batch_size + (int(c) % batch_size >= max(1, min_batch_size)) for c in counts)
    )


def _nrows(x):
    return tf.shape(x, out_type=tf.int64)[0] if isinstance(x, tf.Tensor) else x.nrows()


def padding_share(dataset):
    """Share of padding ids in all batches of ``dataset`` (ids or (ids, labels)).

    For the packed layout it counts the word groups (the tensors a word
    encoder runs over), not the sentence index.
    """
    padding = total = 0
    for batch in dataset:
        x = batch[0] if isinstance(batch, tuple) else batch
        arrays = [v for k, v in x.items() if k.startswith("words_")] if isinstance(x, dict) else [x]
        for array in arrays:
            array = array.numpy()
            padding += int((array == PAD_ID).sum())
            total += array.size
    return padding / total if total else 0.0
