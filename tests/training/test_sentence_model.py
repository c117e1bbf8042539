"""Pretraining the HAN's sentence encoder (issue 36, item 2: ``lm_sentence_epochs``): the
neighbouring sentences' loss against NumPy, the documents it reads, that it learns what
only the sentence level can, that only its layers train, that it resumes exactly, its
settings' checks, and a run that uses it end to end with gradual unfreezing and
discriminative rates (tests/training/test_language_model.py's HAN run)."""

import json
import shutil

import keras
import numpy as np
import pytest
import tensorflow as tf
from keras import ops

from hatt import models
from hatt.training import TrainConfig
from hatt.training.run.datasets import sentence_groups
from hatt.training.starts import language_model as lm_lib
from hatt.training.starts import sentence_model as sm
from tests.training.test_language_model import _reference_loss

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


@pytest.mark.parametrize("packed", [True, False], ids=["packed", "dense"])
def test_it_learns_the_topic_chain_and_trains_only_the_sentence_level(packed, tmp_path):
    config = _config(packed=packed, lm_sentence_epochs=4)
    model = _han(config)
    before = {layer.name: layer.get_weights() for layer in model.layers}
    info = sm.pretrain(
        model,
        config,
        sm.documents_of(_chains(160, 0)),
        sm.documents_of(_chains(40, 1)),
        run_dir=tmp_path,
    )
    losses = [e["validation_loss"] for e in info["epochs"]]
    assert len(losses) == 4 and all(np.isfinite(losses))
    assert losses[-1] < 0.75 * losses[0], losses  # the next sentence's topic is learnable
    for name in ("word_attention", "sentence_encoder"):
        after = model.get_layer(name).get_weights()
        assert any(not np.allclose(a, b) for a, b in zip(before[name], after, strict=True))
    assert (tmp_path / sm.CHECKPOINT).is_file()


def test_the_embedding_and_word_encoder_stay_as_the_language_model_left_them(tmp_path, monkeypatch):
    config = _config(lm_sentence_epochs=1)
    model = _han(config)
    monkeypatch.setattr(lm_lib, "pretrain", lambda *a, **k: {"layers": ["word_embedding"]})
    before = {layer.name: layer.get_weights() for layer in model.layers}
    info = sm.pretrain_encoders(model, config, _chains(40, 0), _chains(40, 1), run_dir=tmp_path)
    for name in sm.FROZEN:
        for a, b in zip(before[name], model.get_layer(name).get_weights(), strict=True):
            np.testing.assert_array_equal(a, b)
        assert model.get_layer(name).trainable  # trainable again for the classifier
    assert info["layers"] == ["word_embedding", "word_attention", "sentence_encoder"]
    assert info["sentence"]["documents"] == 80
    saved = json.loads((tmp_path / "language_model.json").read_text())
    assert saved["sentence"]["epochs"] == info["sentence"]["epochs"]


def test_a_stopped_stage_resumes_after_its_last_epoch_as_if_never_stopped(tmp_path, monkeypatch):
    """The run stopped after epoch 1 is the straight run's checkpoint as epoch 1 wrote it
    (copied aside), so the stage trains 2 + 1 + 1 epochs, not 2 + 1 + 1 + 2."""
    docs, held_out = sm.documents_of(_chains(24, 0)), sm.documents_of(_chains(8, 1))
    stopped, other_corpus = tmp_path / "stopped", tmp_path / "other"
    save = lm_lib.save_checkpoint

    def save_and_stop_a_copy_after_epoch_one(lm, path, key, records):
        save(lm, path, key, records)
        if len(records) == 1:
            for folder in (stopped, other_corpus):
                folder.mkdir()
                shutil.copyfile(path, folder / sm.CHECKPOINT)

    monkeypatch.setattr(lm_lib, "save_checkpoint", save_and_stop_a_copy_after_epoch_one)
    straight = _han(_config())
    sm.pretrain(straight, _config(), docs, held_out, run_dir=tmp_path / "straight")
    monkeypatch.undo()
    resumed = _han(_config())
    info = sm.pretrain(resumed, _config(), docs, held_out, run_dir=stopped)
    assert info["resumed_after_epoch"] == 1 and len(info["epochs"]) == 2
    for a, b in zip(straight.get_weights(), resumed.get_weights(), strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)
    # One epoch asked, one in the checkpoint: the same corpus would resume after it.
    config = _config(lm_sentence_epochs=1)
    other = sm.pretrain(_han(config), config, docs[:-1], [], run_dir=other_corpus)
    assert other["resumed_after_epoch"] == 0  # another corpus never reads that checkpoint


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
