"""Language-model pretraining of the word encoder (issue 36: ``lm_epochs``): the sampled
softmax against NumPy, the rows it reads, that it learns, that it resumes exactly, its
settings' checks, and a run that pretrains on unlabeled text end to end."""

import json
import shutil
import types

import keras
import numpy as np
import pytest
import tensorflow as tf

import hatt
from hatt import models
from hatt.data import Imdb
from hatt.training import TrainConfig
from hatt.training.starts import language_model as lm_lib
from tests.conftest import planted

VOCABULARY = 14  # ids 2..13 are words; 0 padding, 1 OOV


def _config(**values):
    settings = {
        "model": "rnn",
        "seed": 3,
        "learning_rate": 0.02,
        "lm_epochs": 2,
        "lm_window": 12,
        "lm_negatives": 6,
        "lm_batch_size": 8,
        "model_kwargs": {"embedding_dim": 8, "units": 6, "dropout": 0.0},
    }
    return TrainConfig(**{**settings, **values})


def _cycles(n, seed):
    """Documents that are runs of the cycle 2, 3, ..., 13, 2, ...: each word fixes the next
    and the previous one, so a language model can learn them."""
    rng = np.random.default_rng(seed)
    docs = []
    for _ in range(n):
        start, length = rng.integers(2, VOCABULARY), rng.integers(5, 30)
        docs.append([2 + (start - 2 + t) % (VOCABULARY - 2) for t in range(length)])
    return tf.ragged.constant(docs, dtype=tf.int32)


def _rnn(config):
    keras.utils.set_random_seed(config.seed)
    return models.build("rnn", vocabulary_size=VOCABULARY, **config.model_kwargs)


# === The loss ===========================================================================


def _reference_loss(predicted, targets, weights, table, bias, log_q, negatives):
    k = len(negatives)
    log_q = np.where(np.isfinite(log_q), log_q, 0.0)
    total = 0.0
    for b, t in np.ndindex(targets.shape):
        if weights[b, t] == 0:
            continue
        target = targets[b, t]
        logits = [predicted[b, t] @ table[target] + bias[target] - np.log(k) - log_q[target]]
        for n in negatives:
            if n != target:  # an accidental hit is not a negative
                logits.append(predicted[b, t] @ table[n] + bias[n] - np.log(k) - log_q[n])
        logits = np.array(logits)
        top = logits.max()
        total += weights[b, t] * (top + np.log(np.exp(logits - top).sum()) - logits[0])
    return total, weights.sum()


def test_the_sampled_softmax_matches_numpy_and_ignores_unscored_padding():
    rng = np.random.default_rng(0)
    predicted = rng.normal(size=(2, 3, 4)).astype(np.float32)
    targets = np.array([[5, 2, 0], [3, 3, 7]], np.int32)  # 0: padding, not scored
    weights = np.array([[1, 1, 0], [1, 1, 1]], np.float32)
    table = rng.normal(size=(8, 4)).astype(np.float32)
    bias = rng.normal(size=8).astype(np.float32)
    with np.errstate(divide="ignore"):  # padding and OOV: never drawn, log 0
        log_q = np.log(np.array([0, 0, 1, 2, 3, 1, 1, 2]) / 10).astype(np.float32)
    negatives = np.array([3, 6, 6, 2], np.int32)  # 3 and 2 are targets too: accidental hits
    loss, count = lm_lib.sampled_softmax_loss(
        predicted, targets, weights, table, bias, log_q, negatives
    )
    expected, expected_count = _reference_loss(
        predicted, targets, weights, table, bias, log_q, negatives
    )
    assert np.isfinite(float(loss))
    np.testing.assert_allclose(float(loss), expected, rtol=1e-5)
    assert float(count) == expected_count == 5


# === The rows ===========================================================================


def test_rows_are_sentences_or_windows_without_padding_and_short_rows_dropped():
    nested = tf.ragged.constant([[[4, 5, 1], [6]], [[7, 8, 9, 2]]], dtype=tf.int32)
    rows = lm_lib.windows_of(nested, window=3)
    assert [r.tolist() for r in rows] == [[4, 5, 1], [7, 8, 9]]  # [6] and the cut [2] dropped
    flat = tf.ragged.constant([[2, 3, 4, 5, 6, 7, 8], [9]], dtype=tf.int32)
    assert [r.tolist() for r in lm_lib.windows_of(flat, window=3)] == [
        [2, 3, 4],
        [5, 6, 7],
    ]
    padded = tf.RaggedTensor.from_tensor(tf.constant([[3, 4, 0, 0], [0, 0, 0, 0]]))
    assert [r.tolist() for r in lm_lib.windows_of(padded, window=5)] == [[3, 4]]


def test_batches_hold_every_row_once_padded_and_are_fixed_by_seed_and_epoch():
    lengths = np.random.default_rng(0).integers(2, 6, size=40)  # many rows of each length
    rows = [np.arange(2 + i, 2 + i + n, dtype=np.int32) for i, n in enumerate(lengths)]
    one = lm_lib.batches(rows, 3, seed=1, epoch=0)
    assert sum(len(b) for b in one) == len(rows)
    seen = sorted(tuple(r[r > 0]) for b in one for r in b)
    assert seen == sorted(tuple(r) for r in rows)
    for batch in one:  # right-padded to the batch's longest row
        assert batch.shape[1] == max(int((r > 0).sum()) for r in batch)
    again = lm_lib.batches(rows, 3, seed=1, epoch=0)
    assert all(np.array_equal(a, b) for a, b in zip(one, again, strict=True))
    other = lm_lib.batches(rows, 3, seed=1, epoch=1)
    assert any(
        a.shape != b.shape or not np.array_equal(a, b) for a, b in zip(one, other, strict=True)
    )
    assert lm_lib.unigram_log_probabilities(rows, 100)[:2].tolist() == [-np.inf, -np.inf]


# === Pretraining ========================================================================


EPOCHS, STOPPED_AFTER = 4, 3  # the learning run's epochs; a stopped copy after epoch 3
# the learning run's rows: training, unlabeled and validation cycles
TRAIN, UNLABELED, VALIDATION = _cycles(120, 0), _cycles(120, 1), _cycles(30, 2)


def copy_checkpoints_aside(patch, stopped, name=None):
    """Patch ``save_checkpoint`` so that the checkpoint written after ``n`` epochs, for each
    ``n`` in ``stopped`` (``{n: folder}``), is also copied to ``folder/name`` (default: its
    own file name): what a pretraining stopped after ``n`` epochs left behind."""
    save = lm_lib.save_checkpoint

    def save_and_copy_aside(lm, path, key, records):
        save(lm, path, key, records)
        if len(records) in stopped:
            stopped[len(records)].mkdir()
            shutil.copyfile(path, stopped[len(records)] / (name or path.name))

    patch.setattr(lm_lib, "save_checkpoint", save_and_copy_aside)


@pytest.fixture(scope="module")
def learned(tmp_path_factory):
    """THE pretraining run (EPOCHS epochs), with its checkpoint as epochs 1 and
    STOPPED_AFTER wrote it copied aside: what a pretraining stopped there left."""
    folder = tmp_path_factory.mktemp("cycles")
    config = _config(lm_epochs=EPOCHS)
    model = _rnn(config)
    run = types.SimpleNamespace(config=config, model=model, run_dir=folder / "run")
    run.before = [w.copy() for w in model.get_layer("encoder_0").get_weights()]
    run.stopped = {epochs: folder / f"stopped_after_{epochs}" for epochs in (1, STOPPED_AFTER)}
    with pytest.MonkeyPatch.context() as patch:
        copy_checkpoints_aside(patch, run.stopped)
        run.info = lm_lib.pretrain(model, config, TRAIN, UNLABELED, VALIDATION, run_dir=run.run_dir)
    return run


def test_the_language_model_learns_the_planted_order_and_trains_the_encoder(learned):
    info = learned.info
    losses = [e["validation_loss"] for e in info["epochs"]]
    assert len(losses) == EPOCHS and all(np.isfinite(losses))
    assert losses[-1] < 0.6 * losses[0], losses  # the next word is learnable
    assert info["unlabeled_rows"] > 0 and info["layers"] == ["embedding", "encoder_0"]
    after = learned.model.get_layer("encoder_0").get_weights()
    assert any(not np.allclose(a, b) for a, b in zip(learned.before, after, strict=True))
    saved = json.loads((learned.run_dir / "language_model.json").read_text())
    assert saved["epochs"] == info["epochs"]


def test_a_stopped_pretraining_resumes_after_its_last_epoch_as_if_never_stopped(learned, tmp_path):
    """The pretraining stopped after epoch STOPPED_AFTER is the learning run's checkpoint
    as that epoch wrote it (copied aside): resumed, it trains the epochs left and ends
    where the straight run did."""
    shutil.copytree(learned.stopped[STOPPED_AFTER], tmp_path / "stopped")
    resumed = _rnn(learned.config)
    info = lm_lib.pretrain(
        resumed, learned.config, TRAIN, UNLABELED, VALIDATION, run_dir=tmp_path / "stopped"
    )
    assert info["resumed_after_epoch"] == STOPPED_AFTER and len(info["epochs"]) == EPOCHS
    assert info["epochs"][:STOPPED_AFTER] == learned.info["epochs"][:STOPPED_AFTER]
    for a, b in zip(learned.model.get_weights(), resumed.get_weights(), strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)


def test_another_corpus_never_reads_the_checkpoint(learned, tmp_path, monkeypatch):
    """One epoch asked, one in the checkpoint (the learning run's after epoch 1): the same
    corpus resumes after it, another (one document less) never reads it. The language
    model's fit is stubbed: what is read is decided before training."""
    config = _config(lm_epochs=1)
    fits = []

    def no_training(lm, *args, **kwargs):
        fits.append(lm)
        return types.SimpleNamespace(history={"loss": [1.0]})

    monkeypatch.setattr(lm_lib.BidirectionalLanguageModel, "fit", no_training)
    for name, train, resumed_after, trained in (("same", TRAIN, 1, 0), ("other", TRAIN[:-1], 0, 1)):
        shutil.copytree(learned.stopped[1], tmp_path / name)
        fits.clear()
        info = lm_lib.pretrain(_rnn(config), config, train, UNLABELED, run_dir=tmp_path / name)
        assert info["resumed_after_epoch"] == resumed_after and len(fits) == trained, name


def test_a_frozen_embedding_stays_as_it_was(tmp_path):
    config = _config(lm_epochs=1, word_vectors="word2vec", word_vectors_trainable=False)
    model = _rnn(config)
    model.get_layer("embedding").trainable = False  # as the run freezes it
    before = model.get_layer("embedding").get_weights()[0].copy()
    info = lm_lib.pretrain(model, config, _cycles(30, 0), run_dir=tmp_path)
    assert info["layers"] == ["encoder_0"]
    np.testing.assert_array_equal(model.get_layer("embedding").get_weights()[0], before)


# === Settings ===========================================================================


@pytest.mark.parametrize(
    ("values", "match"),
    [
        ({"model": "cnn", "model_kwargs": {}}, "recurrent word encoder"),
        ({"model": "transformer", "model_kwargs": {}}, "rnn or han"),
        ({"lm_epochs": -1}, "lm_epochs"),
        ({"lm_epochs": True}, "lm_epochs"),
        ({"lm_window": 1}, "lm_window"),
        ({"lm_negatives": 0}, "lm_negatives"),
        ({"strategy": "mirrored"}, "one device"),
        ({"prepared": "shards"}, "prepared"),
    ],
)
def test_bad_language_model_settings_are_clear_errors(values, match):
    with pytest.raises(ValueError, match=match):
        _config(**values)


def test_unlabeled_text_with_only_the_language_model_is_a_valid_run():
    config = _config(unlabeled="unsup.txt")
    assert "language_model" in hatt.training.settings.semi.uses_unlabeled(config)
    with pytest.raises(ValueError, match="lm_epochs > 0"):
        _config(unlabeled="unsup.txt", lm_epochs=0)


# === End to end =========================================================================


def _planted_corpus():
    return Imdb(planted(60, 0), planted(20, 1), planted(20, 2), "planted")


def _tiny(family, **values):
    """A tiny ``family`` classifier that pretrains its encoder for one LM epoch."""
    shared = {"max_tokens": 200, "min_count": 1, "embedding_dim": 8, "ngram": None}
    lm = {"lm_epochs": 1, "lm_batch_size": 16, "lm_negatives": 8, "batch_size": 16}
    return hatt.TextClassifier(family, preset=None, **shared, **lm, **values)


PRETRAINED = ["word_embedding", "word_encoder", "word_attention", "sentence_encoder"]


class _PretrainedWeights(keras.callbacks.Callback):
    """The pretrained layers' weights as training begins and after each epoch."""

    def __init__(self):
        super().__init__()
        self.seen = []

    def on_train_begin(self, logs=None):
        self.seen.append(
            {
                name: [w.copy() for w in self.model.get_layer(name).get_weights()]
                for name in PRETRAINED
            }
        )

    def on_epoch_end(self, epoch, logs=None):
        self.on_train_begin()


def _same(a, b):
    return all(np.array_equal(x, y) for x, y in zip(a, b, strict=True))


@pytest.mark.slow
def test_a_han_pretrained_on_unlabeled_text_trains_saves_and_reloads(tmp_path):
    """Both stages (the word encoder, then the sentence encoder: lm_sentence_epochs), the
    four pretrained layers frozen for the first epoch (init_frozen_epochs), then trained
    at discriminative rates. (The language model's hook is the same for the rnn: its
    flat rows are pretrained on their own above.)"""
    corpus = _planted_corpus()
    unlabeled = [f"The plot was a delight. The acting was dull, scene {i}." for i in range(40)]
    clf = _tiny(
        "han",
        max_sentences=4,
        max_words=12,
        sentence_groups=[12],  # one packed group: one word recurrence to trace, not three
        word_units=4,
        sentence_units=4,
        epochs=2,
        patience=2,
        lm_sentence_epochs=1,
        init_frozen_epochs=1,
        discriminative_decay=2.0,
    )
    run_dir = tmp_path / "run"
    watch = _PretrainedWeights()
    clf.fit(corpus, run_dir=run_dir, callbacks=[watch], verbose=0, unlabeled=unlabeled)
    info = json.loads((run_dir / "language_model.json").read_text())
    assert info["layers"] == info["frozen_layers"] == PRETRAINED and info["frozen_epochs"] == 1
    start, first, second = watch.seen
    for name in PRETRAINED:  # frozen through the first epoch
        assert _same(start[name], first[name]), name
    for name in ("word_encoder", "sentence_encoder"):  # then they train
        assert not _same(first[name], second[name]), name
    assert info["layer_rates"] == {
        "sentence_encoder": 0.5,
        "word_attention": 0.25,
        "word_encoder": 0.125,
        "word_embedding": 0.0625,
    }
    assert info["unlabeled_rows"] >= 80  # two sentences a document
    assert info["sentence"]["documents"] >= 40 and len(info["sentence"]["epochs"]) == 1
    metrics = json.loads((run_dir / "metrics.json").read_text())
    assert metrics["language_model"]["sentence"] == info["sentence"]
    assert (run_dir / "language_model.npz").is_file()
    assert (run_dir / "sentence_model.npz").is_file()
    assert json.loads((run_dir / "unlabeled.json").read_text())["kept"] == 40
    # saved and reloaded, it predicts as the run did (its test split's probabilities,
    # from the trained model: no second text model to trace)
    clf.save(tmp_path / "han.keras")
    reloaded = hatt.load(tmp_path / "han.keras").predict(corpus.test.texts)[:, 1]
    trained = np.load(run_dir / "test_probabilities.npz")["probabilities"]
    np.testing.assert_allclose(reloaded, trained, atol=1e-6)
