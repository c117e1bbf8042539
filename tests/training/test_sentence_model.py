"""Pretraining the HAN's sentence encoder (issue 36, item 2: ``lm_sentence_epochs``): the
neighbouring sentences' loss against NumPy, the documents it reads, that it learns what
only the sentence level can, that only its layers train, that it resumes exactly, its
settings' checks, and a run that uses it end to end with gradual unfreezing and
discriminative rates (tests/training/test_language_model.py's HAN run)."""

import json
import shutil
import types

import keras
import numpy as np
import pytest
import tensorflow as tf
from keras import ops

from hatt import models
from hatt.data import pack_sentences
from hatt.training import TrainConfig
from hatt.training.run.datasets import sentence_groups
from hatt.training.starts import language_model as lm_lib
from hatt.training.starts import sentence_model as sm
from tests.training.test_language_model import _reference_loss, copy_checkpoints_aside

VOCABULARY = 14  # ids 2..13 are words; 0 padding, 1 OOV
TOPICS = (range(2, 6), range(6, 10), range(10, 14))  # a sentence's words are of one topic


def _config(**values):
    settings = {
        "model": "han",
        "seed": 3,
        "learning_rate": 0.02,
        "lm_epochs": 1,
        "lm_sentence_epochs": 2,
        "lm_negatives": 6,
        "batch_size": 8,
        "max_words": 8,
        "max_sentences": 6,
        "sentence_groups": [8],  # one packed group: one word recurrence to trace, not two
        "model_kwargs": {"embedding_dim": 8, "word_units": 6, "sentence_units": 6},
    }
    return TrainConfig(**{**settings, **values})


def _han(config):
    keras.utils.set_random_seed(config.seed)
    groups = len(sentence_groups(config)) if config.packed else None
    return models.build(
        "han", vocabulary_size=VOCABULARY, packed_groups=groups, **config.model_kwargs
    )


def _chains(n, seed):
    """Documents whose sentences cycle through the topics A -> B -> C -> A: a sentence's
    topic fixes its neighbours', which only the sentence level can learn."""
    rng = np.random.default_rng(seed)
    docs = []
    for _ in range(n):
        topic, doc = rng.integers(3), []
        for _ in range(rng.integers(2, 7)):
            words = TOPICS[topic % 3]
            doc.append([int(rng.choice(words)) for _ in range(rng.integers(2, 8))])
            topic += 1
        docs.append(doc)
    return tf.ragged.constant(docs, dtype=tf.int32, ragged_rank=2)


# === The documents ======================================================================


def test_documents_keep_their_sentences_without_padding_and_need_two():
    ids = tf.ragged.constant(
        [[[2, 3, 0], [4]], [[5, 6]], [[0, 0], [7, 8], [9]], [[0], [3]]],
        dtype=tf.int32,
        ragged_rank=2,
    )
    docs = sm.documents_of(ids)
    assert [[s.tolist() for s in d] for d in docs] == [[[2, 3], [4]], [[7, 8], [9]]]
    batches = sm.document_batches(docs * 3, 4, seed=1, epoch=0)
    assert sum(len(b) for b in batches) == 6 and all(b.dtype == np.int32 for b in batches)
    again = sm.document_batches(docs * 3, 4, seed=1, epoch=0)
    assert all(np.array_equal(a, b) for a, b in zip(batches, again, strict=True))
    (whole,) = sm.document_batches(docs, 4, seed=1)  # no epoch: the given order
    np.testing.assert_array_equal(whole, [[[2, 3], [4, 0]], [[7, 8], [9, 0]]])


# === The loss ===========================================================================


class FixedStates(keras.Model):
    """A stand-in sentence level: given states, and a sentence present where it has a word.
    (A class name starting with "_" would give Keras an invalid scope name.)"""

    def __init__(self, states):
        super().__init__(name="fixed_states")
        self.states = np.asarray(states, np.float32)

    def call(self, inputs, training=False):
        return ops.convert_to_tensor(self.states), ops.any(ops.greater(inputs, 0), axis=-1)


def test_the_loss_scores_each_word_of_each_neighbour_against_numpy():
    rng = np.random.default_rng(0)
    ids = np.array(
        [[[2, 3, 1], [4, 5, 6], [7, 0, 0]], [[8, 9, 0], [10, 0, 0], [0, 0, 0]]], np.int32
    )  # 1 (OOV) is read but never scored; the second document has two sentences
    states = rng.normal(size=(2, 3, 4)).astype("float32")
    embedding = keras.layers.Embedding(VOCABULARY, 5)
    embedding.build()
    log_q = lm_lib.unigram_log_probabilities([np.arange(2, VOCABULARY)], VOCABULARY)
    model = sm.NeighbourSentenceModel(FixedStates(states), embedding, log_q, negatives=7, seed=5)
    model.output_bias.assign(rng.normal(size=VOCABULARY).astype("float32"))
    total, count = ops.convert_to_numpy(model((ids, ids)))
    drawn = keras.random.categorical(log_q[None, :], 7, seed=keras.random.SeedGenerator(5))[0]
    table, bias = embedding.get_weights()[0], model.output_bias.numpy()
    want_total = want_count = 0.0
    for projection, half, step in (
        (model.forward_projection, slice(0, 2), 1),
        (model.backward_projection, slice(2, 4), -1),
    ):
        kernel, offset = projection.get_weights()
        for b, t in np.ndindex(2, 3):
            neighbour = t + step
            if not 0 <= neighbour < 3 or not ids[b, t].any():
                continue
            predicted = states[b, t, half] @ kernel + offset
            targets = ids[b, neighbour]
            weights = (targets > 1).astype(np.float64)
            loss, n = _reference_loss(
                np.tile(predicted, (1, len(targets), 1)),
                targets[None],
                weights[None],
                table,
                bias,
                log_q,
                ops.convert_to_numpy(drawn),
            )
            want_total, want_count = want_total + loss, want_count + n
    assert count == want_count == 2 * 4 + 2 * 2  # 4 scored pairs' words a direction
    np.testing.assert_allclose(total, want_total, rtol=1e-5)


# === Pretraining ========================================================================

EPOCHS, STOPPED_AFTER = 4, 3  # the learning run's epochs; a stopped copy after epoch 3
# the learning run's documents: training, unlabeled and validation topic chains
TRAIN, UNLABELED, VALIDATION = _chains(120, 0), _chains(40, 2), _chains(40, 1)


def _topic_vectors(model):
    """What a language model leaves for the stage to read (a stand-in for the first
    stage): each topic's words near one another, the word encoder as built."""
    layer = model.get_layer("word_embedding")
    rows = np.zeros_like(layer.get_weights()[0])
    rng = np.random.default_rng(0)
    for topic, words in enumerate(TOPICS):
        for word in words:
            rows[word, 2 * topic] = 1.0
            rows[word] += 0.1 * rng.normal(size=rows.shape[1])
    layer.set_weights([rows])


def _after_a_language_model(patch, left=None):
    """Stub the first stage (:func:`_topic_vectors`); ``left``: what it left, by layer."""

    def language_model(model, *args, **kwargs):
        _topic_vectors(model)
        if left is not None:
            left.update({name: model.get_layer(name).get_weights() for name in sm.FROZEN})
        return {"layers": ["word_embedding"]}

    patch.setattr(lm_lib, "pretrain", language_model)


@pytest.fixture(scope="module")
def learned(tmp_path_factory):
    """THE stage's run, as ``hatt train`` runs it (packed, :func:`sm.pretrain_encoders`
    after the language model, stubbed) for EPOCHS epochs, with its checkpoint as epochs 1
    and STOPPED_AFTER wrote it copied aside: what a stage stopped there left."""
    folder = tmp_path_factory.mktemp("chains")
    config = _config(lm_sentence_epochs=EPOCHS)
    model = _han(config)
    run = types.SimpleNamespace(config=config, model=model, run_dir=folder / "run", left={})
    run.before = {layer.name: layer.get_weights() for layer in model.layers}
    run.stopped = {epochs: folder / f"stopped_after_{epochs}" for epochs in (1, STOPPED_AFTER)}
    with pytest.MonkeyPatch.context() as patch:
        _after_a_language_model(patch, run.left)
        copy_checkpoints_aside(patch, run.stopped, sm.CHECKPOINT)
        run.info = sm.pretrain_encoders(
            model, config, TRAIN, UNLABELED, VALIDATION, run_dir=run.run_dir
        )
    return run


def test_it_learns_the_topic_chain_and_trains_only_the_sentence_level(learned):
    losses = [e["validation_loss"] for e in learned.info["sentence"]["epochs"]]
    assert len(losses) == EPOCHS and all(np.isfinite(losses))
    assert losses[-1] < 0.75 * losses[0], losses  # the next sentence's topic is learnable
    for name in sm.LAYERS:
        after = learned.model.get_layer(name).get_weights()
        assert any(not np.allclose(a, b) for a, b in zip(learned.before[name], after, strict=True))
    assert (learned.run_dir / sm.CHECKPOINT).is_file()


def test_the_embedding_and_word_encoder_stay_as_the_language_model_left_them(learned):
    for name in sm.FROZEN:
        after = learned.model.get_layer(name).get_weights()
        for a, b in zip(learned.left[name], after, strict=True):
            np.testing.assert_array_equal(a, b)
        assert learned.model.get_layer(name).trainable  # trainable again for the classifier
    info = learned.info
    assert info["layers"] == ["word_embedding", "word_attention", "sentence_encoder"]
    assert info["sentence"]["documents"] == 120 + 40  # the training and unlabeled ones
    assert info["sentence"]["validation_documents"] == 40
    saved = json.loads((learned.run_dir / "language_model.json").read_text())
    assert saved["sentence"]["epochs"] == info["sentence"]["epochs"]


def test_the_dense_layout_gives_the_packed_layout_s_loss():
    """The stage reads documents as the classifier does, packed or dense: the same weights
    on the same documents give the same loss either way (so what the packed run learns,
    the dense one does)."""
    batch = sm.document_batches(sm.documents_of(_chains(8, 3)), 8, seed=0)[0]
    ragged = tf.RaggedTensor.from_tensor(batch, padding=0, ragged_rank=2)
    losses = []
    for packed in (True, False):
        config = _config(packed=packed)
        model = _han(config)  # the same seed: the same weights
        log_q = lm_lib.unigram_log_probabilities([np.arange(2, VOCABULARY)], VOCABULARY)
        lm = sm.NeighbourSentenceModel(
            sm.sentence_encoder_of(model), model.get_layer("word_embedding"), log_q, seed=5
        )
        inputs = pack_sentences(ragged, sentence_groups(config)) if packed else batch
        losses.append(ops.convert_to_numpy(lm((inputs, batch))))
    assert losses[0][1] > 0
    np.testing.assert_allclose(losses[1], losses[0], rtol=1e-5)


def test_a_stopped_stage_resumes_after_its_last_epoch_as_if_never_stopped(
    learned, tmp_path, monkeypatch
):
    """The stage stopped after epoch STOPPED_AFTER is the learning run's checkpoint as
    that epoch wrote it (copied aside): resumed, it trains the epochs left and ends where
    the straight run did."""
    shutil.copytree(learned.stopped[STOPPED_AFTER], tmp_path / "stopped")
    _after_a_language_model(monkeypatch)
    resumed = _han(learned.config)
    info = sm.pretrain_encoders(
        resumed, learned.config, TRAIN, UNLABELED, VALIDATION, run_dir=tmp_path / "stopped"
    )["sentence"]
    assert info["resumed_after_epoch"] == STOPPED_AFTER and len(info["epochs"]) == EPOCHS
    straight = learned.info["sentence"]["epochs"]
    assert info["epochs"][:STOPPED_AFTER] == straight[:STOPPED_AFTER]
    for a, b in zip(learned.model.get_weights(), resumed.get_weights(), strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)


def test_another_corpus_never_reads_the_checkpoint(learned, tmp_path, monkeypatch):
    """One epoch asked, one in the checkpoint (the learning run's after epoch 1): the same
    corpus would resume after it (as the test above resumes), another (one document less)
    never reads it. The stage's fit is stubbed: what is read is decided before training."""
    config = _config(lm_sentence_epochs=1)
    fits = []

    def no_training(lm, *args, **kwargs):
        fits.append(lm)
        return types.SimpleNamespace(history={"loss": [1.0]})

    _after_a_language_model(monkeypatch)
    monkeypatch.setattr(sm.NeighbourSentenceModel, "fit", no_training)
    shutil.copytree(learned.stopped[1], tmp_path / "other")
    info = sm.pretrain_encoders(
        _han(config), config, TRAIN[:-1], UNLABELED, None, run_dir=tmp_path / "other"
    )
    assert info["sentence"]["resumed_after_epoch"] == 0 and len(fits) == 1


# === Settings ===========================================================================


@pytest.mark.parametrize(
    ("values", "match"),
    [
        ({"model": "rnn", "model_kwargs": {}}, "model='han' with lm_sentence_epochs"),
        ({"lm_epochs": 0}, "lm_epochs > 0 with lm_sentence_epochs"),
        ({"lm_sentence_epochs": -1}, "lm_sentence_epochs"),
        ({"lm_sentence_epochs": True}, "lm_sentence_epochs"),
    ],
)
def test_bad_sentence_settings_are_clear_errors(values, match):
    with pytest.raises(ValueError, match=match):
        _config(**values)
