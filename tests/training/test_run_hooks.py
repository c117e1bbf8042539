"""Methods through one hook (hatt.training.run.record.RunHook): the loop calls every
registered method at each point, in the registry's order, with a fake method standing
in for a real one; the registry holds the methods of today, each a RunHook."""

import types

import numpy as np
import pytest
import tensorflow as tf

from hatt.training import TrainConfig
from hatt.training.run import adversarial, hooks, loop, record

TINY = {"model_kwargs": {"embedding_dim": 4, "filters": 2}, "ngram": None, "word_vectors": None}


class Recorder(record.RunHook):
    """A fake method: records each call, in a log shared with the others."""

    def __init__(self, name, log):
        self.name, self.log = name, log

    def check(self, config, model):
        self.log.append((self.name, "check", model.name))

    def configure(self, config, model):
        self.log.append((self.name, "configure", model.compiled))

    def compiled(self, config, model):
        self.log.append((self.name, "compiled", model.compiled))

    def train_dataset(self, run, corpus, dataset, steps):
        self.log.append((self.name, "train_dataset", steps))
        return dataset.map(lambda x: x * 10)

    def before_fit(self, run, model, corpus):
        self.log.append((self.name, "before_fit", model))


@pytest.fixture
def log(monkeypatch):
    calls = []
    monkeypatch.setattr(loop, "METHODS", (Recorder("a", calls), Recorder("b", calls)))
    return calls


def test_the_registry_holds_each_method_once_as_a_hook():
    kinds = [type(method) for method in hooks.METHODS]
    assert kinds == [
        hooks.WordVectorsHook,
        hooks.StartFromModelHook,
        hooks.LanguageModelHook,
        adversarial.AdversarialHook,
    ]
    assert all(isinstance(method, record.RunHook) for method in hooks.METHODS)
    assert loop.METHODS is hooks.METHODS


def test_a_plain_hook_does_nothing(tmp_path):
    hook, dataset = record.RunHook(), tf.data.Dataset.range(2)
    assert hook.train_dataset(None, None, dataset, 1) is dataset
    assert hook.check(None, None) is None and hook.before_fit(None, None, None) is None


def test_the_model_steps_call_each_method_before_and_after_compile(log):
    config = TrainConfig(model="cnn", **TINY)
    loop.check_buildable(config)
    assert [(name, point) for name, point, _ in log] == [("a", "check"), ("b", "check")]
    log.clear()
    model = loop.create_model(config, types.SimpleNamespace(vocabulary_size=30), 4)
    assert log == [
        ("a", "configure", False),
        ("b", "configure", False),
        ("a", "compiled", True),
        ("b", "compiled", True),
    ]
    assert model.compiled


def test_a_method_refusing_the_settings_stops_the_run_before_any_data(monkeypatch):
    class Refuse(record.RunHook):
        def check(self, config, model):
            raise ValueError(f"Expected no fake method. Received: model={config.model!r}")

    monkeypatch.setattr(loop, "METHODS", (Refuse(),))
    with pytest.raises(ValueError, match="Expected no fake method"):
        loop.check_buildable(TrainConfig(model="cnn", **TINY))


def test_each_method_changes_the_training_dataset_only(tmp_path, log):
    def datasets(epochs, initial_epoch, replicas):
        assert (epochs, initial_epoch, replicas) == (3, 0, 1)
        return {split: tf.data.Dataset.range(2) for split in ("train", "validation", "test")}

    run = record.Run(TrainConfig(model="cnn", epochs=3), tmp_path, tf.distribute.get_strategy())
    out = loop.run_datasets(run, types.SimpleNamespace(datasets=datasets), steps=7)
    assert log == [("a", "train_dataset", 7), ("b", "train_dataset", 7)]
    assert list(out["train"].as_numpy_iterator()) == [0, 100]  # both, in order
    assert list(out["validation"].as_numpy_iterator()) == [0, 1]


def test_methods_start_a_new_run_in_order_and_a_resumed_one_not(tmp_path, log):
    strategy = tf.distribute.get_strategy()
    model = object()
    run = record.Run(TrainConfig(model="cnn"), tmp_path, strategy)
    loop.start_methods(run, model, corpus=None)
    assert log == [("a", "before_fit", model), ("b", "before_fit", model)]
    log.clear()
    resumed = record.Run(TrainConfig(model="cnn"), tmp_path, strategy, {"epoch": 1})
    loop.start_methods(resumed, model, corpus=None)
    assert log == []  # the backup holds the trained weights


def test_the_adversarial_hook_is_off_unless_asked(tmp_path):
    hook = adversarial.AdversarialHook()
    model = loop.create_model(
        TrainConfig(model="cnn", **TINY), types.SimpleNamespace(vocabulary_size=30), 4
    )
    assert "train_step" not in vars(model)  # the plain step
    hook.compiled(TrainConfig(model="cnn", adversarial="at", **TINY), model)
    assert "train_step" in vars(model)  # AT's step
    run = record.Run(
        TrainConfig(model="cnn", adversarial="at"), tmp_path, tf.distribute.get_strategy()
    )
    dataset = tf.data.Dataset.from_tensor_slices(np.arange(3))
    assert hook.train_dataset(run, types.SimpleNamespace(unlabeled=None), dataset, 1) is dataset
