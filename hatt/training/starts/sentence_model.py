"""Pretraining the HAN's sentence encoder on the training split and unlabeled text.

``TrainConfig.lm_sentence_epochs = N > 0`` (the HAN, with ``lm_epochs``): after
the word encoder is pretrained as a language model (:mod:`hatt.training.starts.language_model`),
the level above it trains for ``N`` epochs on whole documents to **predict the
words of the neighbouring sentences**: the forward half of the sentence encoder's
state at sentence ``t`` scores every word of sentence ``t + 1``, the backward half
every word of sentence ``t - 1``, each word a target of the language model's
sampled softmax against the model's own embedding rows (tied output table) and a
bias per word. It is the document-level counterpart of the word-level biLM, with a
bag of words as the target (FastSent's, Hill et al. 2016, there from one sentence's
vector); nothing it reads has seen the words it predicts: each sentence vector is
its own words', a forward state has read sentences ``<= t`` only, a backward one
``>= t`` only.

- **What trains**: the word attention (which builds the sentence vectors) and the
  sentence encoder, with a projection per direction (``units -> embedding_dim``),
  dropped afterwards. The embedding and the word encoder, pretrained as a language
  model the stage before, stay as they are (so an epoch costs the word encoder's
  forward pass only).
- **Text**: the documents of the training split and of the unlabeled ones with at
  least two sentences, read through the classifier's own graph (its packed layout
  too), ``batch_size`` documents a batch; the validation split's documents give a
  held-out loss each epoch (never trained on).
- **Resumable** as the language model is: the weights and the optimizer's state are
  written after every epoch to ``sentence_model.npz`` with what they depend on (the
  texts, the settings, the language model's epochs), so a stopped run resumes after
  its last finished epoch. ``language_model.json`` gains ``"sentence"`` (what was read,
  each epoch's losses and seconds), and its ``"layers"`` the two layers trained here,
  which ``init_frozen_epochs`` and ``discriminative_decay`` then treat as pretrained.

    >>> info = pretrain_encoders(han, config, train_ids, unlabeled_ids, run_dir=run_dir)
    >>> info["sentence"]["epochs"][-1]["validation_loss"]
"""

import hashlib
import json
import time
from pathlib import Path

import keras
import numpy as np
from keras import ops

from hatt import run_dir as run_files
from hatt.data.pipeline import pack_sentences
from hatt.training.settings.limits import packed, sentence_groups
from hatt.training.starts import language_model as lm_lib

CHECKPOINT = run_files.SENTENCE_MODEL_CHECKPOINT
LAYERS = ("word_attention", "sentence_encoder")  # what this stage trains
FROZEN = ("word_embedding", "word_encoder")  # pretrained the stage before: kept
MIN_SENTENCES = 2  # a document of one sentence has no neighbour to predict


# === The documents ======================================================================


def documents_of(ids):
    """The documents with at least two non-empty sentences, each a list of int32 arrays.

    Args:
        ids: nested ids ``tf.RaggedTensor [N, (S), (W)]`` (0 = padding).
    """
    documents = ids.row_splits.numpy()  # document d: sentences documents[d] .. [d + 1]
    sentences = ids.values.row_splits.numpy()  # sentence s: words sentences[s] .. [s + 1]
    words = ids.values.values.numpy()
    out = []
    for first, end in zip(documents[:-1], documents[1:], strict=True):
        doc = [words[sentences[s] : sentences[s + 1]] for s in range(first, end)]
        doc = [sentence[sentence > 0].astype(np.int32) for sentence in doc]
        doc = [sentence for sentence in doc if len(sentence)]
        if len(doc) >= MIN_SENTENCES:
            out.append(doc)
    return out


def document_batches(documents, batch_size, seed, epoch=None):
    """Dense ``[B, S, W]`` int32 batches of ``documents``, of similar sentence counts,
    in the order of :func:`hatt.training.starts.language_model.batch_groups`."""
    counts = [len(d) for d in documents]
    out = []
    for group in lm_lib.batch_groups(counts, batch_size, seed, epoch):
        most = max(len(documents[i]) for i in group)
        width = max(len(s) for i in group for s in documents[i])
        batch = np.zeros((len(group), most, width), np.int32)
        for row, i in enumerate(group):
            for slot, sentence in enumerate(documents[i]):
                batch[row, slot, : len(sentence)] = sentence
        out.append(batch)
    return out


def _as_dataset(batch_list, groups):
    """The dense batches as a ``tf.data.Dataset`` of ``(model inputs, dense ids)``: the
    inputs packed as the classifier reads them when ``groups`` (its sentence groups)."""
    import tensorflow as tf

    dataset = tf.data.Dataset.from_generator(
        lambda: iter(batch_list), output_signature=tf.TensorSpec((None, None, None), tf.int32)
    )

    def inputs(dense):
        if not groups:
            return ((dense, dense),)
        ragged = tf.RaggedTensor.from_tensor(dense, padding=0, ragged_rank=2)
        return ((pack_sentences(ragged, groups), dense),)

    dataset = dataset.map(inputs)
    return dataset.apply(tf.data.experimental.assert_cardinality(len(batch_list)))


# === The model ==========================================================================


class NeighbourSentenceModel(lm_lib.TiedOutput, keras.Model):
    """The HAN's sentence level trained to predict its neighbouring sentences' words.

    The forward half of the sentence encoder's state at sentence ``t`` predicts each
    word of sentence ``t + 1``, the backward half each word of sentence ``t - 1``;
    each half goes through a ``Dense`` to the embedding's width and is scored against
    the embedding rows (tied output table) and a per-word bias by
    :func:`hatt.training.starts.language_model.sampled_softmax_loss`. ``encoder`` is a model
    over the classifier's own layers: training this model trains them in place.

    Args:
        encoder: a ``keras.Model`` from the classifier's text input to
            ``[sentence encoder states [B, S, 2u], sentence mask [B, S]]``.
        embedding: the classifier's word ``Embedding`` (the output table).
        log_q: ``[V]`` float32, the negatives' log-probabilities.
        negatives: positive int, words drawn per batch.
        seed: int, the negatives' draws.

    Call arguments:
        inputs: ``(model inputs, ids)``: what ``encoder`` reads, and the same
            documents as dense ``[B, S, W]`` int ids (0 = padding).
        training: Python bool.

    Returns:
        ``[2]`` float: the summed loss of the scored words and their number.
    """

    def __init__(self, encoder, embedding, log_q, negatives=256, seed=1337, **kwargs):
        super().__init__(**kwargs)
        self.encoder, self.embedding = encoder, embedding
        self.add_tied_output(embedding, log_q, negatives, seed, "sentence")

    def call(self, inputs, training=False):
        model_inputs, ids = inputs
        states, present = self.encoder(model_inputs, training=training)
        ids = ops.cast(ids, "int32")
        present = ops.cast(present, states.dtype)
        half = ops.shape(states)[-1] // 2
        drawn = self.draw()
        parts = (
            # the forward state at sentence t predicts the words of sentence t + 1
            (self.forward_projection(states[:, :-1, :half]), ids[:, 1:], present[:, :-1]),
            # the backward state at sentence t predicts the words of sentence t - 1
            (self.backward_projection(states[:, 1:, half:]), ids[:, :-1], present[:, 1:]),
        )
        total = count = 0.0
        width = ops.shape(ids)[-1]
        dim = self.embedding.output_dim
        for predicted, targets, reads in parts:
            # one row a sentence pair: the state's vector beside each word of the neighbour
            predicted = ops.reshape(
                ops.broadcast_to(predicted[:, :, None, :], (*ops.shape(targets), dim)),
                (-1, width, dim),
            )
            # a word is scored when its state reads a sentence and it is a known word
            scored = ops.cast(ops.greater(targets, lm_lib.OOV), predicted.dtype)
            weights = reads[:, :, None] * scored
            loss, n = self.score(
                predicted,
                ops.reshape(targets, (-1, width)),
                ops.reshape(weights, (-1, width)),
                drawn,
            )
            total, count = total + loss, count + n
        return ops.stack([total, count])


# === Pretraining, resumable =============================================================


def sentence_encoder_of(model):
    """A model over ``model``'s own layers: its text input to ``[sentence encoder states,
    sentence mask]`` (dense or packed, as the classifier reads documents)."""
    return keras.Model(
        model.input,
        [model.get_layer("sentence_encoder").output, model.get_layer("sentence_mask").output],
        name="sentence_level",
    )


def _key(config, documents, vocabulary_size):
    """What the stage depends on: the language model's key (texts and settings), its
    epochs, and the stage's own settings."""
    sentences = [s for doc in documents for s in doc]
    digest = hashlib.sha256(lm_lib.checkpoint_key(config, [sentences], vocabulary_size).encode())
    settings = {"lm_epochs": config.lm_epochs, "batch_size": config.batch_size}
    digest.update(json.dumps(settings, sort_keys=True).encode())
    digest.update(np.asarray([len(d) for d in documents], np.int64).tobytes())
    return digest.hexdigest()


def pretrain(model, config, documents, held_out, *, run_dir, verbose="auto"):
    """Train ``model``'s word attention and sentence encoder on ``documents`` (lists of
    sentences, :func:`documents_of`) for ``config.lm_sentence_epochs``; resumable.

    Returns:
        What was read and each epoch's record (``language_model.json``'s ``"sentence"``).
    """
    start_time = time.perf_counter()
    embedding = model.get_layer("word_embedding")
    sentences = [s for doc in documents for s in doc]
    lm = NeighbourSentenceModel(
        sentence_encoder_of(model),
        embedding,
        lm_lib.unigram_log_probabilities(sentences, embedding.input_dim),
        negatives=config.lm_negatives,
        seed=config.seed,
        name="sentence_model",
    )
    lm.compile(optimizer=keras.optimizers.Adam(config.learning_rate))
    groups = sentence_groups(config) if packed(config) else None
    (first,) = document_batches(documents[:1], 1, config.seed)
    lm(next(iter(_as_dataset([first], groups)))[0])  # build
    lm.optimizer.build(lm.trainable_variables)
    Path(run_dir).mkdir(parents=True, exist_ok=True)
    checkpoint = Path(run_dir) / CHECKPOINT
    key = _key(config, documents, embedding.input_dim)
    records = lm_lib.restore_checkpoint(lm, checkpoint, key, config.lm_sentence_epochs)
    info = {
        "objective": "the neighbouring sentences' words, sampled softmax",
        "layers": list(LAYERS),
        "documents": len(documents),
        "sentences": len(sentences),
        "validation_documents": len(held_out),
        "resumed_after_epoch": len(records),
    }
    print(
        f"Pretraining the sentence encoder: {len(documents):,} documents, "
        f"{len(sentences):,} sentences, {config.lm_sentence_epochs} epoch(s)"
        + (f"; resuming after epoch {len(records)}" if records else "")
    )
    validation = document_batches(held_out, config.batch_size, config.seed)
    for epoch in range(len(records), config.lm_sentence_epochs):
        start = time.perf_counter()
        print(f"Sentence encoder epoch {epoch + 1}/{config.lm_sentence_epochs}")
        train = document_batches(documents, config.batch_size, config.seed, epoch)
        history = lm.fit(_as_dataset(train, groups), epochs=1, shuffle=False, verbose=verbose)
        record = {"epoch": epoch + 1, "loss": round(float(history.history["loss"][-1]), 4)}
        if validation:
            value = lm.evaluate(_as_dataset(validation, groups), verbose=0)
            record["validation_loss"] = round(float(np.ravel(value)[0]), 4)
        record["seconds"] = round(time.perf_counter() - start, 1)
        records.append(record)
        lm_lib.save_checkpoint(lm, checkpoint, key, records)
    info["epochs"] = records
    info["seconds"] = round(time.perf_counter() - start_time, 1)
    return info


def pretrain_encoders(
    model, config, train_ids, unlabeled_ids=None, validation_ids=None, *, run_dir, verbose="auto"
):
    """The word encoder as a language model (:func:`hatt.training.starts.language_model.pretrain`),
    then, with ``config.lm_sentence_epochs``, the HAN's sentence level (:func:`pretrain`)
    with the word embedding and encoder kept as the first stage left them.

    Returns:
        ``language_model.json``'s dict; with the second stage, its ``"sentence"`` record
        and ``"layers"`` extended by the layers it trained.
    """
    info = lm_lib.pretrain(
        model, config, train_ids, unlabeled_ids, validation_ids, run_dir=run_dir, verbose=verbose
    )
    if not config.lm_sentence_epochs:
        return info
    documents = [
        doc for ids in (train_ids, unlabeled_ids) if ids is not None for doc in documents_of(ids)
    ]
    held_out = [] if validation_ids is None else documents_of(validation_ids)
    kept = [model.get_layer(name) for name in FROZEN if model.get_layer(name).trainable]
    for layer in kept:
        layer.trainable = False
    try:
        info["sentence"] = pretrain(
            model, config, documents, held_out, run_dir=run_dir, verbose=verbose
        )
    finally:
        for layer in kept:
            layer.trainable = True
    info["layers"] += [name for name in LAYERS if name not in info["layers"]]
    (Path(run_dir) / run_files.LANGUAGE_MODEL).write_text(json.dumps(info, indent=2) + "\n")
    return info
