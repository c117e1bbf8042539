"""Language-model pretraining of the word encoder on the training split and unlabeled text.

``TrainConfig.lm_epochs = N > 0``: before the classifier trains, its word embedding
and its first bidirectional word encoder (the BiGRU's ``encoder_0``, the HAN's
``word_encoder``) are trained for ``N`` epochs as a **bidirectional language
model** (ELMo's biLM; the pretraining step of ULMFiT and of Miyato et al. 2017,
whose IMDB figures above 93 % all start from one): the forward direction's state
at word ``t`` predicts word ``t + 1``, the backward direction's predicts word
``t - 1``. The classifier then starts from those weights.

- **Text**: the training split's documents and the unlabeled ones
  (``--unlabeled``; every text equal to a validation or test text already
  dropped), tokenized by the run's own vectorizer; the validation split's
  documents give a held-out LM loss each epoch (never trained on). Rows are
  what the encoder reads: a HAN sentence, a BiGRU review cut into windows of
  ``lm_window`` words.
- **Output**: a projection of each direction's state (``units -> embedding_dim``)
  scored against the model's own embedding rows (tied output embedding) plus a
  bias per word; a sampled softmax over ``lm_negatives`` words drawn each batch
  from the unigram distribution to the power 0.75, with the log-Q correction
  and accidental hits removed (Jean et al. 2015), so an epoch costs about what
  a pass of the encoder costs whatever the vocabulary. Targets that are the OOV
  id are not scored. The projections and the bias are dropped afterwards.
- Only the **first** recurrent layer: above it, a forward state would read the
  backward states of the layer below, which have seen the word it predicts.
- The embedding trains with the LM only when the run trains it
  (``word_vectors_trainable``); started from word2vec, it is the output table too.

The LM's weights and its optimizer's state are written after every epoch to
``language_model.npz`` in the run directory with what they depend on (the
texts' token counts, the model's and the LM's settings, the seed), and
``language_model.json`` says what was read and each epoch's losses and seconds:
a run stopped during pretraining resumes after its last finished epoch, and a
rerun of the same run reads the finished pretraining instead of repeating it.

    >>> info = pretrain(model, config, train_ids, unlabeled_ids, run_dir=run_dir)
    >>> info["epochs"][-1]["validation_loss"]
"""

import hashlib
import json
import time
from pathlib import Path

import keras
import numpy as np
from keras import ops

from hatt import models
from hatt import run_dir as run_files
from hatt.data.text import ragged_boolean_mask
from hatt.models.wiring import EncoderMask
from hatt.training.settings.semi import MIN_WORDS, check_word_pretrained
from hatt.training.starts import word_vectors

UNIGRAM_POWER = 0.75  # the negatives' distribution, as word2vec's
OOV = 1


# === Which layers =======================================================================


def encoder_layers(model, family):
    """``(embedding, encoder)``: the layers the language model trains.

    Raises:
        ValueError: ``family`` has no recurrent word encoder (the CNNs, the
            Transformer), or the model lacks the layers.
    """
    check_word_pretrained(family)
    embedding = word_vectors.embedding_layer(model)
    return embedding, model.get_layer(models.family_spec(family).word_encoder)


# === The text ===========================================================================


def windows_of(ids, window):
    """The rows the language model reads: ``[N, (T)]`` int32 ids without padding.

    Nested ids (the HAN's ``[N, (S), (W)]``) give one row a sentence, flat ids
    one row a document; a row longer than ``window`` is cut into windows of
    ``window`` words (the last one shorter); rows of fewer than two words are
    dropped. The OOV id stays (the encoder reads it) but is never a target.

    Returns:
        A list of int32 NumPy arrays.
    """
    rows = ids
    while rows.ragged_rank > 1:
        rows = rows.values
    rows = ragged_boolean_mask(rows, rows > 0)
    values = rows.flat_values.numpy().astype(np.int32)
    starts = rows.row_splits.numpy()
    out = []
    for begin, end in zip(starts[:-1], starts[1:], strict=True):
        for cut in range(begin, end, window):
            piece = values[cut : min(cut + window, end)]
            if len(piece) >= MIN_WORDS:
                out.append(piece)
    return out


def batch_groups(lengths, batch_size, seed, epoch=None):
    """Which rows make each batch: a list of index arrays, rows of similar ``lengths``.

    With ``epoch`` the order is shuffled by ``(seed, epoch)`` (rows shuffled,
    sorted by length in pools of 50 batches, the batches shuffled again), so an
    epoch is the same whether or not the run was resumed; without, the order
    is the given one.
    """
    lengths = np.asarray(lengths, np.int64)
    order = np.arange(len(lengths))
    rng = None if epoch is None else np.random.default_rng([seed, epoch])
    if rng is not None:
        rng.shuffle(order)
        pool = 50 * batch_size
        for start in range(0, len(order), pool):
            chunk = order[start : start + pool]
            order[start : start + pool] = chunk[np.argsort(lengths[chunk], kind="stable")]
    groups = [order[i : i + batch_size] for i in range(0, len(order), batch_size)]
    if rng is not None:
        rng.shuffle(groups)
    return groups


def batches(windows, batch_size, seed, epoch=None):
    """Padded ``[B, L]`` int32 batches of ``windows``, each of similar lengths, in the
    order of :func:`batch_groups`."""
    lengths = np.fromiter((len(w) for w in windows), np.int64, len(windows))
    out = []
    for group in batch_groups(lengths, batch_size, seed, epoch):
        width = max(len(windows[i]) for i in group)
        batch = np.zeros((len(group), width), np.int32)
        for row, i in enumerate(group):
            batch[row, : len(windows[i])] = windows[i]
        out.append(batch)
    return out


def word_counts(windows, vocabulary_size):
    """How often each id occurs in ``windows``, int64 ``[vocabulary_size]``."""
    if not windows:
        return np.zeros(vocabulary_size, np.int64)
    return np.bincount(np.concatenate(windows), minlength=vocabulary_size)[:vocabulary_size]


def unigram_log_probabilities(windows, vocabulary_size):
    """Log of the negatives' distribution: counts ** 0.75 over the words (padding and
    OOV never drawn), float32 ``[vocabulary_size]`` (``-inf`` where never drawn)."""
    counts = word_counts(windows, vocabulary_size).astype(np.float64)
    counts[: OOV + 1] = 0.0
    weights = counts**UNIGRAM_POWER
    if weights.sum() == 0:
        weights[OOV + 1 :] = 1.0
    with np.errstate(divide="ignore"):
        return np.log(weights / weights.sum()).astype(np.float32)


# === The model ==========================================================================


def sampled_softmax_loss(predicted, targets, weights, table, bias, log_q, negatives):
    """Sampled softmax loss of ``targets`` given ``predicted`` output vectors.

    Args:
        predicted: ``[B, T, D]`` output vectors.
        targets: ``[B, T]`` int word ids to predict.
        weights: ``[B, T]`` float, 1 where the target is scored.
        table: ``[V, D]`` output embedding; ``bias``: ``[V]``.
        log_q: ``[V]`` log-probability of drawing each word as a negative.
        negatives: ``[K]`` int ids drawn from ``exp(log_q)`` (with replacement).

    Returns:
        ``(loss_sum, count)``: the sum of the scored targets' losses and their number.
    """
    k = ops.cast(ops.shape(negatives)[0], predicted.dtype)
    # log of each word's expected count among the K (finite: padding and OOV are never
    # drawn, and a target of theirs is not scored)
    correction = ops.log(k) + ops.where(ops.isfinite(log_q), log_q, ops.zeros_like(log_q))
    true_logit = ops.sum(predicted * ops.take(table, targets, axis=0), axis=-1)
    true_logit = true_logit + ops.take(bias, targets) - ops.take(correction, targets)
    negative_logits = ops.einsum("btd,kd->btk", predicted, ops.take(table, negatives, axis=0))
    negative_logits = negative_logits + ops.take(bias - correction, negatives)[None, None, :]
    hit = ops.equal(targets[:, :, None], ops.cast(negatives, targets.dtype)[None, None, :])
    negative_logits = ops.where(hit, ops.full_like(negative_logits, -1e9), negative_logits)
    logits = ops.concatenate([true_logit[:, :, None], negative_logits], axis=-1)
    losses = ops.logsumexp(logits, axis=-1) - true_logit
    losses = ops.where(ops.greater(weights, 0), losses * weights, ops.zeros_like(losses))
    return ops.sum(losses), ops.sum(weights)


class TiedOutput:
    """Mixin for a ``keras.Model``: the output side of a tied sampled softmax.

    The model holds its word ``Embedding`` as ``embedding`` (the output table).
    :meth:`add_tied_output` gives it ``forward_projection`` and
    ``backward_projection`` (a direction's state to the embedding's width),
    ``output_bias`` (a bias per word), ``log_q`` (the negatives' log-probabilities,
    fixed) and ``seed_generator``; :meth:`draw` draws a batch's negatives,
    :meth:`score` sums a direction's loss (:func:`sampled_softmax_loss` against the
    embedding rows), and the loss is the scored targets' mean. The word-level language
    model and the HAN's sentence stage both score this way.
    """

    def add_tied_output(self, embedding, log_q, negatives, seed, prefix):
        self.negatives = int(negatives)
        dim = embedding.output_dim
        self.forward_projection = keras.layers.Dense(dim, name=f"{prefix}_forward_projection")
        self.backward_projection = keras.layers.Dense(dim, name=f"{prefix}_backward_projection")
        self.output_bias = self.add_weight(
            shape=(embedding.input_dim,), initializer="zeros", name=f"{prefix}_output_bias"
        )
        self.log_q = self.add_weight(
            shape=(embedding.input_dim,),
            initializer=keras.initializers.Constant(np.asarray(log_q, np.float32)),
            trainable=False,
            name=f"{prefix}_log_q",
        )
        self.seed_generator = keras.random.SeedGenerator(seed)

    def draw(self):
        """This batch's ``[negatives]`` word ids, drawn from ``exp(log_q)``."""
        return keras.random.categorical(
            self.log_q[None, :], self.negatives, seed=self.seed_generator
        )[0]

    def score(self, predicted, targets, weights, drawn):
        """``(loss_sum, count)`` of ``targets`` ``[B, T]`` given ``predicted`` ``[B, T, D]``."""
        table = self.embedding.embeddings  # the model's own word embedding (tied)
        return sampled_softmax_loss(
            predicted, targets, weights, table, self.output_bias, self.log_q, drawn
        )

    def compute_loss(self, x=None, y=None, y_pred=None, sample_weight=None, training=True):
        return y_pred[0] / ops.maximum(y_pred[1], 1.0)


class BidirectionalLanguageModel(TiedOutput, keras.Model):
    """A bidirectional language model over a classifier's embedding and word encoder.

    The forward half of ``encoder``'s output at word ``t`` predicts word ``t + 1``,
    the backward half word ``t - 1``; each half goes through a ``Dense`` to the
    embedding's width and is scored against the embedding rows (tied output
    table) and a per-word bias by :func:`sampled_softmax_loss`. ``embedding``
    and ``encoder`` are the classifier's own layers: training this model trains
    them in place.

    Args:
        embedding: the classifier's word ``Embedding``.
        encoder: its first ``Bidirectional`` recurrent layer.
        log_q: ``[V]`` float32, the negatives' log-probabilities
            (:func:`unigram_log_probabilities`).
        negatives: positive int, words drawn per batch.
        dropout: float in ``[0, 1)``, on the embeddings and the encoder's states.
        seed: int, the negatives' draws.

    Call arguments:
        inputs: ``[B, L]`` int word ids, right-padded with 0.
        training: Python bool.

    Returns:
        ``[2]`` float: the summed loss of the scored targets and their number
        (:meth:`compute_loss` divides them).
    """

    def __init__(self, embedding, encoder, log_q, negatives=256, dropout=0.0, seed=1337, **kw):
        super().__init__(**kw)
        self.embedding, self.encoder = embedding, encoder
        self.add_tied_output(embedding, log_q, negatives, seed, "lm")
        self.input_dropout = keras.layers.Dropout(dropout, name="lm_input_dropout")
        self.state_dropout = keras.layers.Dropout(dropout, name="lm_state_dropout")
        self.encoder_mask = EncoderMask(name="lm_encoder_mask")

    def call(self, inputs, training=False):
        ids = ops.cast(inputs, "int32")
        present = ops.greater(ids, 0)
        states = self.encoder(
            self.input_dropout(self.embedding(ids), training=training),
            mask=self.encoder_mask(present),
            training=training,
        )
        states = self.state_dropout(states, training=training)
        half = ops.shape(states)[-1] // 2
        scored = ops.logical_and(present, ops.greater(ids, OOV))
        scored = ops.cast(scored, states.dtype)
        present = ops.cast(present, states.dtype)
        drawn = self.draw()
        parts = (
            # forward state at t (a word) predicts the word at t + 1
            (
                self.forward_projection(states[:, :-1, :half]),
                ids[:, 1:],
                present[:, :-1] * scored[:, 1:],
            ),
            # backward state at t predicts the word at t - 1
            (
                self.backward_projection(states[:, 1:, half:]),
                ids[:, :-1],
                present[:, 1:] * scored[:, :-1],
            ),
        )
        total = count = 0.0
        for predicted, targets, weights in parts:
            loss, n = self.score(predicted, targets, weights, drawn)
            total, count = total + loss, count + n
        return ops.stack([total, count])


# === Pretraining, resumable =============================================================


def checkpoint_key(config, parts, vocabulary_size):
    """What the pretraining depends on: another corpus or setting never reuses a checkpoint."""
    digest = hashlib.sha256()
    settings = {
        "model": config.model,
        "model_kwargs": config.model_kwargs,
        "seed": config.seed,
        "vocabulary_size": vocabulary_size,
        "word_vectors": config.word_vectors,
        "word_vectors_trainable": config.word_vectors_trainable,
        "init": config.init,  # the weights it starts from
        "learning_rate": config.learning_rate,
        **{k: getattr(config, k) for k in ("lm_negatives", "lm_window", "lm_batch_size")},
    }
    digest.update(json.dumps(settings, sort_keys=True, default=str).encode())
    for windows in parts:
        counts = word_counts(windows, vocabulary_size)
        digest.update(np.asarray([len(windows)], np.int64).tobytes() + counts.tobytes())
    return digest.hexdigest()


def _variables(lm):
    return list(lm.variables) + list(lm.optimizer.variables)


def restore_checkpoint(lm, path, key, epochs):
    """The finished epochs' records from ``path`` (and its weights into ``lm``); ``[]``
    when there is none for ``key`` or it went past ``epochs``."""
    if not path.is_file():
        return []
    try:
        with np.load(path, allow_pickle=False) as saved:
            if str(saved["key"]) != key:
                return []
            arrays = [saved[f"v{i}"] for i in range(int(saved["count"]))]
            records = json.loads(str(saved["records"]))
    except (OSError, ValueError, KeyError):
        return []  # unreadable (a crash while writing is excluded by the atomic write)
    variables = _variables(lm)
    if (
        len(records) > epochs
        or len(arrays) != len(variables)
        or any(tuple(a.shape) != tuple(v.shape) for a, v in zip(arrays, variables, strict=True))
    ):
        return []
    for array, variable in zip(arrays, variables, strict=True):
        variable.assign(array)
    return records


def save_checkpoint(lm, path, key, records):
    """Write ``lm``'s weights and optimizer state, ``key`` and the finished epochs'
    ``records`` to ``path`` (through a partial file: never half written)."""
    partial = run_files.partial(path)
    arrays = {f"v{i}": keras.ops.convert_to_numpy(v) for i, v in enumerate(_variables(lm))}
    np.savez(
        partial,
        key=np.asarray(key),
        count=np.asarray(len(arrays)),
        records=np.asarray(json.dumps(records)),
        **arrays,
    )
    partial.replace(path)  # never a half-written checkpoint


def _as_dataset(batch_list):
    """The padded batches as a ``tf.data.Dataset`` of known length (one epoch)."""
    import tensorflow as tf

    dataset = tf.data.Dataset.from_generator(
        lambda: iter(batch_list),
        output_signature=tf.TensorSpec((None, None), tf.int32),
    )
    return dataset.apply(tf.data.experimental.assert_cardinality(len(batch_list)))


def pretrain(
    model, config, train_ids, unlabeled_ids=None, validation_ids=None, *, run_dir, verbose="auto"
):
    """Train ``model``'s embedding and first word encoder as a bidirectional language model.

    Args:
        model: the built classifier (an ``rnn`` or ``han``), changed in place.
        config: the run's :class:`hatt.training.TrainConfig` (``lm_*`` settings).
        train_ids: the training split's ids (``tf.RaggedTensor``, flat or nested).
        unlabeled_ids: the unlabeled documents' ids by the same vectorizer, or ``None``.
        validation_ids: the validation split's ids for a held-out loss, or ``None``.
        run_dir: where the checkpoint and ``language_model.json`` go.
        verbose: Keras ``fit`` verbosity.

    Returns:
        The dict written to ``language_model.json``: rows and words read, each
        epoch's training and validation loss and seconds, the epoch resumed after.
    """
    start_time = time.perf_counter()
    embedding, encoder = encoder_layers(model, config.model)
    vocabulary_size = embedding.input_dim
    parts = [windows_of(train_ids, config.lm_window)]
    if unlabeled_ids is not None:
        parts.append(windows_of(unlabeled_ids, config.lm_window))
    windows = [w for part in parts for w in part]
    held_out = [] if validation_ids is None else windows_of(validation_ids, config.lm_window)
    lm = BidirectionalLanguageModel(
        embedding,
        encoder,
        unigram_log_probabilities(windows, vocabulary_size),
        negatives=config.lm_negatives,
        dropout=_dropout_of(model),
        seed=config.seed,
        name="language_model",
    )
    lm.compile(optimizer=keras.optimizers.Adam(config.learning_rate))
    lm(np.ones((1, MIN_WORDS), np.int32))  # build
    lm.optimizer.build(lm.trainable_variables)
    run_dir = Path(run_dir)
    run_dir.mkdir(parents=True, exist_ok=True)
    checkpoint = run_dir / run_files.LANGUAGE_MODEL_CHECKPOINT
    key = checkpoint_key(config, parts, vocabulary_size)
    records = restore_checkpoint(lm, checkpoint, key, config.lm_epochs)
    resumed_after = len(records)
    info = {
        "objective": "bidirectional language model, sampled softmax",
        "layers": [embedding.name if embedding.trainable else None, encoder.name],
        "rows": len(windows),
        "words": int(sum(len(w) for w in windows)),
        "unlabeled_rows": len(parts[1]) if len(parts) > 1 else 0,
        "validation_rows": len(held_out),
        "window": config.lm_window,
        "negatives": config.lm_negatives,
        "batch_size": config.lm_batch_size,
        "resumed_after_epoch": resumed_after,
    }
    info["layers"] = [name for name in info["layers"] if name]
    if resumed_after:
        print(f"Language model: resuming after epoch {resumed_after} of {config.lm_epochs}")
    else:
        print(
            f"Pretraining the word encoder as a language model: {info['rows']:,} rows, "
            f"{info['words']:,} words, {config.lm_epochs} epoch(s)"
        )
    validation = batches(held_out, config.lm_batch_size, config.seed)  # the same every epoch
    for epoch in range(resumed_after, config.lm_epochs):
        records.append(_train_epoch(lm, windows, validation, config, epoch, verbose))
        save_checkpoint(lm, checkpoint, key, records)
    info["epochs"] = records
    info["seconds"] = round(time.perf_counter() - start_time, 1)
    (run_dir / run_files.LANGUAGE_MODEL).write_text(json.dumps(info, indent=2) + "\n")
    return info


def _train_epoch(lm, windows, validation, config, epoch, verbose):
    """One epoch over ``windows`` (the order of ``(seed, epoch)``); its record: the
    training loss, the loss on the ``validation`` batches (when there are any) and the
    seconds."""
    start = time.perf_counter()
    train = batches(windows, config.lm_batch_size, config.seed, epoch)
    print(f"Language model epoch {epoch + 1}/{config.lm_epochs}")
    history = lm.fit(_as_dataset(train), epochs=1, shuffle=False, verbose=verbose)
    record = {"epoch": epoch + 1, "loss": round(float(history.history["loss"][-1]), 4)}
    if validation:
        value = lm.evaluate(_as_dataset(validation), verbose=0)
        record["validation_loss"] = round(float(np.ravel(value)[0]), 4)
    record["seconds"] = round(time.perf_counter() - start, 1)
    return record


def _dropout_of(model):
    """The classifier's embedding dropout rate (0 when it has none)."""
    try:
        return float(model.get_layer("embedding_dropout").rate)
    except ValueError:
        return 0.0
