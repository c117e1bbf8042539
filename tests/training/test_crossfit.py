"""Cross-fitted validation logits (hatt.training.channel.crossfit) and their record in a run."""

import json

import numpy as np
import pytest
from sklearn.model_selection import StratifiedKFold

from hatt import training
from hatt.data import Imdb
from hatt.training.channel import crossfit
from hatt.training.channel.nblr import logit_accuracy, logit_losses
from hatt.training.run import resume
from tests._planted import planted_split


def _noise(epochs, reviews, seed, classes=2):
    rng = np.random.default_rng(seed)
    shape = (reviews,) if classes == 2 else (reviews, classes)
    y = rng.permutation(np.arange(reviews) % classes)
    return [rng.normal(size=shape) for _ in range(epochs)], y


@pytest.mark.parametrize("monitor", ["val_loss", "val_accuracy"])
@pytest.mark.parametrize("classes", [2, 3])
def test_each_fold_gets_the_epoch_the_other_folds_choose(monitor, classes):
    by_epoch, y = _noise(6, 60, seed=classes, classes=classes)
    logits, chosen = crossfit.crossfit_logits(by_epoch, y, monitor, folds=5, seed=3)
    assert logits.shape == by_epoch[0].shape and len(chosen) == 5
    splits = StratifiedKFold(5, shuffle=True, random_state=3).split(np.zeros(len(y)), y)
    for (train, held), epoch in zip(splits, chosen, strict=True):
        if monitor == "val_loss":
            scores = [-logit_losses(e[train], y[train]).mean() for e in by_epoch]
        else:
            scores = [logit_accuracy(e[train], y[train]) for e in by_epoch]
        best = max(scores)
        assert epoch == 1 + scores.index(best)  # the first best, as EarlyStopping
        np.testing.assert_array_equal(logits[held], by_epoch[epoch - 1][held])


def test_cross_fitting_removes_the_flattery_of_the_chosen_epoch():
    """Epochs of pure noise: the one chosen on all reviews looks better than chance on
    them; the cross-fitted logits do not (means over 20 draws)."""
    chosen_accuracy, crossfit_accuracy = [], []
    for seed in range(20):
        by_epoch, y = _noise(20, 100, seed)
        scores = [logit_accuracy(e, y) for e in by_epoch]
        chosen_accuracy.append(max(scores))
        logits, _ = crossfit.crossfit_logits(by_epoch, y, "val_accuracy")
        crossfit_accuracy.append(logit_accuracy(logits, y))
    assert np.mean(chosen_accuracy) > 0.57
    assert abs(np.mean(crossfit_accuracy) - 0.5) < 0.03


def test_too_few_reviews_of_a_class_give_no_cross_fitted_logits():
    y = np.array([0, 0, 0, 1])
    assert crossfit.crossfit_logits([np.zeros(4)], y, "val_loss") == (None, [])
    assert crossfit.crossfit_logits([np.zeros(3)], np.zeros(3, int), "val_loss") == (None, [])


def test_epoch_logits_are_kept_across_a_new_callback_and_a_bad_file_is_empty(tmp_path):
    path = tmp_path / "logits.npz"
    values = iter([np.ones((4, 1)), 2 * np.ones((4, 1)), 3 * np.ones((4, 1))])
    recorder = crossfit.EpochLogits(path, lambda: next(values))
    recorder.on_epoch_end(0)
    recorder.on_epoch_end(1)
    again = crossfit.EpochLogits(path, lambda: next(values))  # a resumed run
    assert sorted(again.by_epoch) == ["epoch_1", "epoch_2"]
    again.on_epoch_end(1)  # epoch 2 trained again: overwritten
    stacked = crossfit.epochs_run(crossfit.read(path), 2)
    assert [float(e.mean()) for e in stacked] == [1.0, 3.0]
    assert crossfit.epochs_run(crossfit.read(path), 3) is None  # epoch 3 missing
    path.write_bytes(b"not an npz")
    assert crossfit.read(path) == {} and crossfit.read(tmp_path / "missing.npz") == {}


@pytest.fixture(scope="module")
def planted():
    return Imdb(planted_split(160, 0), planted_split(40, 1), planted_split(40, 2), "planted")


def _config(**overrides):
    values = {
        "model": "cnn",
        "model_kwargs": {"embedding_dim": 8, "filters": 4},
        "ngram": {"buckets": 64, "fit": "separate"},
        "epochs": 3,
        "batch_size": 16,
        "min_count": 1,
        "learning_rate": 1e-2,
        "patience": 3,
    }
    return training.TrainConfig(**{**values, **overrides})


def _recorded(run_dir):
    return crossfit.read(run_dir / "validation_logits_by_epoch.npz")


def test_a_run_records_every_epoch_and_saves_the_cross_fitted_logits(tmp_path, planted):
    metrics = training.train(_config(), tmp_path, texts=planted, verbose=0)
    recorded = _recorded(tmp_path)
    assert sorted(recorded) == ["epoch_1", "epoch_2", "epoch_3"]
    saved = np.load(tmp_path / "validation_probabilities.npz")
    # the restored best epoch's recorded logits are the model's deep logits
    best = recorded[f"epoch_{metrics['best_epoch']}"].reshape(-1)
    np.testing.assert_allclose(best, saved["deep_logits"], rtol=1e-5, atol=1e-5)
    info = json.loads((tmp_path / "ngram_channel.json").read_text())["crossfit"]
    assert info["available"] and info["monitor"] == "val_accuracy"
    assert len(info["epochs_chosen"]) == 5 and set(info["epochs_chosen"]) <= {1, 2, 3}
    by_epoch = [recorded[f"epoch_{e}"].reshape(-1) for e in (1, 2, 3)]
    expected, _ = crossfit.crossfit_logits(by_epoch, saved["labels"], "val_accuracy")
    np.testing.assert_allclose(saved["crossfit_deep_logits"], expected, rtol=1e-6)


class _Crash(Exception):
    pass


def test_an_interrupted_run_keeps_the_epochs_before_it(tmp_path, planted, monkeypatch):
    save = resume.RunBackup.on_epoch_end

    def crash_after_two(self, epoch, logs=None):
        save(self, epoch, logs)
        if epoch + 1 == 2:
            raise _Crash

    with monkeypatch.context() as patch:
        patch.setattr(resume.RunBackup, "on_epoch_end", crash_after_two)
        with pytest.raises(_Crash):
            training.train(_config(), tmp_path, texts=planted, verbose=0)
    before = _recorded(tmp_path)
    assert sorted(before) == ["epoch_1", "epoch_2"]
    metrics = training.train(_config(), tmp_path, texts=planted, verbose=0)
    assert metrics["resumed_from_epoch"] == 2
    after = _recorded(tmp_path)
    assert sorted(after) == ["epoch_1", "epoch_2", "epoch_3"]
    for key in before:
        np.testing.assert_array_equal(after[key], before[key])
    info = json.loads((tmp_path / "ngram_channel.json").read_text())["crossfit"]
    assert info["available"]


def test_a_large_validation_split_is_not_recorded(tmp_path, planted, monkeypatch):
    monkeypatch.setattr(crossfit, "MAX_REVIEWS", len(planted.validation) - 1)
    training.train(_config(epochs=1), tmp_path, texts=planted, verbose=0)
    assert not (tmp_path / "validation_logits_by_epoch.npz").exists()
    info = json.loads((tmp_path / "ngram_channel.json").read_text())
    assert info["crossfit"] == {"available": False}
    assert "crossfit_deep_logits" not in np.load(tmp_path / "validation_probabilities.npz")
