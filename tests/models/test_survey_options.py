"""The survey's sparse attentions as options of the families (issue 35, item 2): built,
trained, saved and reloaded; masked steps get exactly zero weight."""

import json
from types import SimpleNamespace

import keras
import numpy as np
import pytest

import hatt
from hatt import training
from tests import _recurrent_runs

from ._model_test import to_numpy


def _ids(model, batch=4):
    shape = [d or 6 for d in model.inputs[0].shape[1:]]
    rng = np.random.default_rng(0)
    ids = rng.integers(1, 50, size=(batch, *shape)).astype("int32")
    ids[:, ..., -2:] = 0  # padding
    return ids


KWARGS = {
    "rnn": {"units": 8},
    "han": {"word_units": 8, "sentence_units": 8},
    "transformer": {"num_heads": 2, "intermediate_dim": 8, "attention_window": 2},
}
ATTENTIONS = {  # the layers that normalize attention, per family
    "rnn": ["word_attention"],
    "han": ["word_attention", "sentence_attention"],
    "transformer": ["transformer_block_0", "transformer_block_1", "word_attention"],
}


@pytest.mark.parametrize("family", ["rnn", "han", "transformer"])
@pytest.mark.parametrize("normalizer", ["sparsemax", "entmax15"])
def test_a_sparse_normalizer_gives_exact_zeros_and_masked_steps_none(family, normalizer, tmp_path):
    model = hatt.models.build(
        family,
        vocabulary_size=60,
        embedding_dim=8,
        attention_normalizer=normalizer,
        **KWARGS[family],
    )
    view = hatt.models.attention_model(model)
    ids = _ids(model)
    outputs = view(ids, training=False)  # eager: a traced predict adds nothing checked here
    probability = to_numpy(outputs["probability"])  # the model's own output, same weights
    weights = to_numpy(outputs["word_attention"])
    mask = ids != 0
    assert np.all(weights[~mask] == 0)
    sums = weights.sum(axis=-1)
    np.testing.assert_allclose(sums[mask.any(axis=-1)], 1.0, atol=1e-5)
    path = tmp_path / "m.keras"
    model.save(path)
    reloaded = keras.saving.load_model(path)
    np.testing.assert_allclose(to_numpy(reloaded(ids, training=False)), probability, atol=1e-6)
    for name in ATTENTIONS[family]:
        assert reloaded.get_layer(name).get_config()["normalizer"] == normalizer
    if family == "transformer":
        assert reloaded.get_layer("transformer_block_0").get_config()["window"] == 2


@pytest.mark.parametrize("family", ["rnn", "han", "transformer"])
def test_the_attention_temperature_reaches_every_pooling_attention(family):
    model = hatt.models.build(
        family,
        vocabulary_size=60,
        embedding_dim=8,
        attention_normalizer="sparsemax",
        attention_temperature=0.25,
        **KWARGS[family],
    )
    pooling = [n for n in ATTENTIONS[family] if n.endswith("_attention")]
    for name in pooling:
        assert model.get_layer(name).temperature == 0.25
    with pytest.raises(ValueError, match="attention_temperature to be a finite number > 0"):
        hatt.models.build(family, vocabulary_size=60, attention_temperature=0, **KWARGS[family])


@pytest.mark.parametrize("family", ["rnn", "han", "transformer"])
@pytest.mark.parametrize(
    "options", [{"local_p": True, "window": 3}, {"hard": "gumbel", "hard_k": 2}]
)
def test_local_p_and_hard_attention_reach_the_pooling_and_survive_a_reload(
    family, options, tmp_path
):
    model = hatt.models.build(
        family, vocabulary_size=60, embedding_dim=8, attention_options=options, **KWARGS[family]
    )
    pooling = [n for n in ATTENTIONS[family] if n.endswith("_attention")]
    for name in pooling:
        config = model.get_layer(name).get_config()
        assert {k: config[k] for k in options} == options
    ids = _ids(model)
    weights = to_numpy(hatt.models.attention_model(model)(ids, training=False)["word_attention"])
    mask = ids != 0
    assert np.all(weights[~mask] == 0) and np.isfinite(weights).all()
    if "hard" in options:  # inference: 1/k on the k best words of each row (k = 2)
        rows = weights.reshape(-1, weights.shape[-1])[mask.reshape(-1, mask.shape[-1]).sum(-1) >= 2]
        np.testing.assert_allclose(np.sort(rows, axis=-1)[:, -2:], 0.5, atol=1e-6)
    model.save(tmp_path / "m.keras")
    reloaded = keras.saving.load_model(tmp_path / "m.keras")
    for name in pooling:
        assert reloaded.get_layer(name).get_config() == model.get_layer(name).get_config()


def test_the_packed_han_s_twin_keeps_the_local_and_hard_options():
    packed = hatt.models.build(
        "han",
        vocabulary_size=60,
        embedding_dim=8,
        packed_groups=2,
        attention_options={"hard": "gumbel", "hard_k": 3},
        **KWARGS["han"],
    )
    twin = hatt.models.dense_twin(packed)
    for name in ("word_attention", "sentence_attention"):
        assert (twin.get_layer(name).hard, twin.get_layer(name).hard_k) == ("gumbel", 3)


@pytest.mark.parametrize(
    "kwargs,message",
    [
        ({"attention_options": {"windw": 3}}, "attention_options to be a dict of"),
        ({"attention_options": {"local_p": True}}, "attention_options: Expected window"),
        (
            {"attention_normalizer": "sparsemax", "attention_options": {"hard": "gumbel"}},
            "attention_options: hard attention uses the scores directly",
        ),
        ({"attention_normalizer": "softermax"}, "attention_normalizer to be one of"),
        ({"attention_window": -1}, "attention_window to be an int >= 0 or None"),
        ({"attention_window": "3"}, "attention_window to be an int >= 0 or None"),
    ],
)
def test_bad_transformer_attention_options_are_refused(kwargs, message):
    with pytest.raises(ValueError, match=message):
        hatt.models.build("transformer", vocabulary_size=60, embedding_dim=8, **kwargs)


def _trained_like_hatt_train(family, model_kwargs, run_dir):
    """What `hatt train FAMILY --set model_kwargs...` builds, through the loop's own functions
    (its config, vectorizer and compiled model) rather than the whole loop, one eager step on
    the runs' training split (a flat family: 48 reviews), the test loss, and the run
    directory's model.keras, vectorizer.json and config.json."""
    config, texts = _recurrent_runs.cli_config(family, model_kwargs), _recurrent_runs.corpus()
    vectorizer = training.create_vectorizer(config).adapt(texts.train.texts)
    model = training.create_model(config, vectorizer, steps_per_epoch=1)
    model.run_eagerly = True  # the step's math; a traced train step for one step costs more

    def split(name):
        return vectorizer(getattr(texts, name).texts), getattr(texts, name).labels.astype("float32")

    train_ids, train_labels = split("train")
    model.fit(train_ids, train_labels, batch_size=len(train_labels), epochs=1, verbose=0)
    test_loss = model.evaluate(*split("test"), verbose=0)[0]
    run_dir.mkdir(parents=True)
    model.save(run_dir / "model.keras")
    vectorizer.save(run_dir / "vectorizer.json")
    (run_dir / "config.json").write_text(json.dumps(config.to_dict()))
    return SimpleNamespace(metrics={"test_loss": test_loss}, run_dir=run_dir)


@pytest.mark.parametrize("family", ["rnn", "han", "transformer"])
def test_a_sparse_attention_trains_through_the_cli_settings(family, recurrent_runs, tmp_path):
    """`--set model_kwargs.attention_normalizer=sparsemax` reaches the model and its export."""
    if family == "transformer":  # no recurrent cell to share a `hatt train` run with
        kwargs = {"attention_normalizer": "sparsemax", "embedding_dim": 8, "attention_window": 3}
        run = _trained_like_hatt_train(family, kwargs, tmp_path / "run")
    else:
        run = recurrent_runs[family]
    assert np.isfinite(run.metrics["test_loss"])
    model = hatt.export.load(run.run_dir)
    out = model(["A fine film. I liked it."])
    assert np.isfinite(out["probabilities"]).all()
    trained = keras.saving.load_model(run.run_dir / "model.keras")
    for name in ATTENTIONS[family]:
        assert trained.get_layer(name).get_config()["normalizer"] == "sparsemax"


def test_an_unknown_cell_or_normalizer_is_named():
    with pytest.raises(ValueError, match="cell"):
        hatt.models.build("rnn", vocabulary_size=10, cell="qrnn")
    with pytest.raises(ValueError, match="attention_normalizer"):
        hatt.models.build("han", vocabulary_size=10, attention_normalizer="relu")
