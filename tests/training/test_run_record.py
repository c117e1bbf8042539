"""The typed run record (hatt.training.run.record.Run): every field declared with its
default, the fields derived from the resume state, nothing set on the fly, the unlabeled
documents encoded once a run; and the loop reads it without ``getattr``."""

import dataclasses
import inspect
import json
import types

import pytest
import tensorflow as tf

from hatt import run_dir as run_files
from hatt.training import TrainConfig
from hatt.training.channel import crossfit
from hatt.training.run import loop, record

STEP_FIELDS = (
    "verbose",
    "callbacks",
    "init_source",
    "class_weight",
    "epoch_logits",
    "backup",
    "channel_info",
    "unlabeled_ids",
)


def _run(tmp_path, state=None, **fields):
    config = TrainConfig(model="cnn", epochs=5)
    return record.Run(config, tmp_path, tf.distribute.get_strategy(), state, **fields)


def test_every_field_is_declared_with_a_default(tmp_path):
    names = [field.name for field in dataclasses.fields(record.Run)]
    assert names[:4] == ["config", "run_dir", "strategy", "state"]
    assert set(STEP_FIELDS) | {"replicas", "initial_epoch", "fit_epochs"} <= set(names)
    run = _run(tmp_path)
    assert run.state is None and run.verbose == "auto" and run.callbacks == []
    assert all(getattr(run, name) is None for name in STEP_FIELDS[2:])
    assert run.replicas == 1 and run.initial_epoch == 0 and run.fit_epochs == 5
    assert _run(tmp_path).callbacks is not run.callbacks  # one list a run


def test_an_undeclared_attribute_is_refused(tmp_path):
    run = _run(tmp_path)
    run.backup = object()  # a declared field: set by its step
    with pytest.raises(AttributeError):
        run.epoch_logit = None  # a typo is an error, not a new attribute


def test_the_resume_state_gives_the_first_epoch_and_the_epochs_to_fit(tmp_path):
    resumed = _run(tmp_path, {"epoch": 2})
    assert resumed.initial_epoch == 2 and resumed.fit_epochs == 5
    finished = _run(tmp_path, {"epoch": 3, "training_done": True})
    assert finished.initial_epoch == 3 and finished.fit_epochs == 3  # evaluates only


def test_write_json_and_local(tmp_path):
    run = _run(tmp_path)
    run.write_json("x.json", {"a": 1})
    assert json.loads((tmp_path / "x.json").read_text()) == {"a": 1}
    assert list(run.local(tf.data.Dataset.range(3)).as_numpy_iterator()) == [0, 1, 2]


def test_unlabeled_documents_are_encoded_once_a_run(tmp_path, monkeypatch):
    calls = []
    monkeypatch.setattr(
        record.word_vectors,
        "encode_unlabeled",
        lambda texts, vectorizer: calls.append(texts) or ["ids", *texts],
    )
    run = _run(tmp_path)
    assert run.encoded_unlabeled(types.SimpleNamespace(unlabeled=None)) is None
    assert not (tmp_path / run_files.UNLABELED).exists()
    unlabeled = types.SimpleNamespace(texts=["a", "b"], report={"read": 2})
    corpus = types.SimpleNamespace(unlabeled=unlabeled, vectorizer=None)
    first = run.encoded_unlabeled(corpus)
    assert first == ["ids", "a", "b"] and run.encoded_unlabeled(corpus) is first
    assert calls == [["a", "b"]]
    assert json.loads((tmp_path / run_files.UNLABELED).read_text()) == {"read": 2}


def test_check_run_returns_the_record_with_its_fields(tmp_path):
    config = TrainConfig(model="cnn", epochs=2, ngram=None)
    run = loop.check_run(config, tmp_path / "run", tf.distribute.get_strategy(), verbose=0)
    assert isinstance(run, record.Run) and run.verbose == 0 and run.fit_epochs == 2
    assert not (tmp_path / "run").exists()  # nothing written by the checks


def test_crossfit_reads_the_record_of_a_run_without_its_logits(tmp_path):
    assert crossfit.recorded(_run(tmp_path)) is None  # no recorder, no backup yet


def test_the_loop_sets_nothing_on_the_fly_and_knows_no_method_by_name():
    source = inspect.getsource(loop)
    assert "getattr(run" not in source and "_Run" not in source
    for name in ("self_training", "pseudo_label", "is_student", "STUDENT"):
        assert name not in source, name
    modules = {value.__name__ for value in vars(loop).values() if inspect.ismodule(value)}
    for method in ("self_training", "adversarial", "word_vectors", "sentence_model"):
        assert not any(name.endswith(method) for name in modules), method


def test_predict_is_model_predict_through_one_graph_whatever_the_batch_shapes(tmp_path):
    """Batches of different shapes (as a padded, length-bucketed split gives) through one
    trace a model; the outputs are ``model.predict``'s, in the dataset's order."""
    import keras
    import numpy as np

    keras.utils.set_random_seed(0)
    inputs = keras.Input((None,), dtype="int32")
    pooled = keras.layers.GlobalAveragePooling1D()(keras.layers.Embedding(20, 4)(inputs))
    model = keras.Model(inputs, keras.layers.Dense(1)(pooled))
    rows = [np.arange(1, 1 + length) % 20 for length in (3, 5, 2, 7, 4)]
    dataset = tf.data.Dataset.from_generator(
        lambda: iter(rows), output_signature=tf.TensorSpec([None], tf.int32)
    ).padded_batch(2)  # [2, 5], [2, 7], [1, 4]
    run = _run(tmp_path)
    traces = []
    original = model.call
    model.call = lambda *args, **kwargs: traces.append(1) or original(*args, **kwargs)
    predicted = run.predict(model, dataset)
    assert len(traces) == 1  # three batch shapes, one trace
    run.predict(model, dataset)  # the second split: the same graph
    assert len(traces) == 1 and len(run.predict_functions) == 1
    np.testing.assert_allclose(predicted, model.predict(dataset, verbose=0), atol=1e-6)
