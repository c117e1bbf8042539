"""`cell="sru"` in the rnn and HAN encoders (issue 35, item 5): bidirectional SRUs that
respect the masks, train in graph mode, reload in a fresh process and export."""

import json
from types import SimpleNamespace

import keras
import numpy as np
import pytest

import hatt
from hatt import training
from hatt.data import pack_sentences
from hatt.layers import SRU
from hatt.models.rnn import CELLS, cell_of
from tests._fresh_process import run_json_script

from ._model_test import (
    batch_for,
    build_small,
    check_attention,
    check_forward,
    check_padding_invariance,
    to_numpy,
)

ENCODERS = {"rnn": ("encoder_0",), "han": ("word_encoder", "sentence_encoder")}


@pytest.mark.parametrize("family", ["rnn", "han"])
def test_encoders_are_bidirectional_srus_that_respect_the_masks(family):
    model = build_small(family, cell="sru")
    for name in ENCODERS[family]:
        encoder = model.get_layer(name)
        assert isinstance(encoder, keras.layers.Bidirectional)
        assert type(encoder.forward_layer) is SRU and type(encoder.backward_layer) is SRU
        assert encoder.backward_layer.go_backwards and not encoder.forward_layer.go_backwards
        assert cell_of(encoder) == "sru"
    ids = batch_for(family)  # padding, an empty review, a one-token review
    check_forward(model, ids)
    check_padding_invariance(family, model, ids)
    check_attention(family, model, ids)
    # graph mode (model.predict traces a tf.function under TensorFlow; the HAN's word
    # encoder then runs length groups of unknown width) on more padding agrees with eager
    eager = to_numpy(model(ids, training=False))
    wider = np.pad(ids, [(0, 0)] * (ids.ndim - 1) + [(0, 3)])
    np.testing.assert_allclose(model.predict(wider, verbose=0), eager, atol=1e-5)


@pytest.mark.parametrize("family", ["rnn", "han"])
def test_nan_in_the_padding_embedding_changes_nothing(family):
    """Id 0's vector reaches no kept step: NaN there leaves every review's output as it was."""
    model = build_small(family, cell="sru")
    ids = batch_for(family)
    ids = ids[ids.reshape(len(ids), -1).any(axis=1)]  # an empty review runs one padding step
    before = to_numpy(model(ids, training=False))
    embedding = model.get_layer("word_embedding" if family == "han" else "embedding")
    table = to_numpy(embedding.embeddings).copy()
    table[0] = np.nan
    embedding.embeddings.assign(table)
    np.testing.assert_allclose(to_numpy(model(ids, training=False)), before, atol=1e-6)


def test_the_backward_direction_reads_the_review_backwards():
    """The backward SRU's state at a review's first word has seen the whole review."""
    model = build_small("rnn", cell="sru")
    encoder = keras.Model(model.inputs, model.get_layer("encoder_0").output)
    ids = np.array([[5, 7, 3, 9, 0, 0]], "int32")
    changed = ids.copy()
    changed[0, 3] = 11  # the last word
    states, states_changed = (to_numpy(encoder(x, training=False))[0] for x in (ids, changed))
    units = model.get_layer("encoder_0").forward_layer.units
    # forward half: steps before the last word are unchanged; backward half: all change
    np.testing.assert_allclose(states_changed[:3, :units], states[:3, :units], atol=1e-6)
    assert np.all(np.abs(states_changed[:4, units:] - states[:4, units:]).max(axis=1) > 1e-6)
    assert np.all(states[4:] == 0)  # padding steps output zeros


@pytest.mark.parametrize("family", ["rnn", "han"])
def test_config_round_trip(family):
    model = build_small(family, cell="sru")
    clone = keras.Model.from_config(model.get_config())
    for name in ENCODERS[family]:
        assert clone.get_layer(name).get_config() == model.get_layer(name).get_config()
        assert cell_of(clone.get_layer(name)) == "sru"
    clone.set_weights(model.get_weights())
    ids = batch_for(family)
    np.testing.assert_allclose(
        to_numpy(clone(ids, training=False)), to_numpy(model(ids, training=False)), atol=1e-6
    )


def test_an_unknown_cell_names_the_choices():
    assert CELLS == ("gru", "lstm", "sru")
    for family in ("rnn", "han"):
        with pytest.raises(ValueError, match=r"\('gru', 'lstm', 'sru'\).*cell='qrnn'"):
            hatt.models.build(family, vocabulary_size=10, cell="qrnn")


RUN_FAMILIES = ["rnn", "han"]


# One fresh process for every run. First the SavedModels, served while neither hatt nor keras
# can be imported (`{saved model: texts}`); then `import hatt` alone and Keras' loader for each
# `model.keras` (`{model.keras: inputs.npz}`, the packed HAN's inputs a dict):
# `{"served": {saved model: probabilities}, "reloaded": {model.keras: outputs}}`.
FRESH_SCRIPT = r"""
import json, sys
BLOCKED = ("keras", "hatt", "tf_keras")
for name in BLOCKED:
    sys.modules[name] = None
import numpy as np
import tensorflow as tf

served = {}
for path, texts in json.loads(sys.argv[1]).items():
    serve = tf.saved_model.load(path).signatures["serving_default"]
    served[path] = serve(text=tf.constant(texts))["probabilities"].numpy().tolist()
assert not [n for n in sys.modules if n.split(".")[0] in BLOCKED and sys.modules[n] is not None]
for name in BLOCKED:
    del sys.modules[name]
import hatt, keras

reloaded = {}
for path, inputs_path in json.loads(sys.argv[2]).items():
    model = keras.saving.load_model(path)
    arrays = dict(np.load(inputs_path))
    inputs = arrays["ids"] if set(arrays) == {"ids"} else arrays
    reloaded[path] = np.asarray(model(inputs, training=False)).tolist()  # one packed batch
print(json.dumps({"served": served, "reloaded": reloaded}))
"""


def _model_inputs(run, texts):
    """The run's model inputs for `texts`, as training fed them (the HAN packed)."""
    vectorizer = hatt.data.Vectorizer.load(run.run_dir / "vectorizer.json")
    if run.config.model == "han":
        groups = training.sentence_groups(run.config)
        return pack_sentences(vectorizer.ragged_ids(texts), groups)
    return {"ids": vectorizer(texts)}


def _predictions(run, texts):
    """The run's `model.keras` and its probabilities for `texts`."""
    model = keras.saving.load_model(run.run_dir / "model.keras")
    inputs = {k: to_numpy(v) for k, v in _model_inputs(run, texts).items()}
    return model, inputs, to_numpy(model(inputs.get("ids", inputs), training=False))


@pytest.fixture(scope="module")
def fresh(recurrent_runs, tmp_path_factory):
    """Every run's export served, and its `model.keras` reloaded, in one fresh process
    (FRESH_SCRIPT): `{family: facts}`, with the test texts, the in-process model, its inputs
    and probabilities, and the fresh ones."""
    folder = tmp_path_factory.mktemp("sru_fresh")
    facts = {}
    for family in RUN_FAMILIES:
        run = recurrent_runs[family]
        texts = list(run.corpus.test.texts[:8])
        model, inputs, want = _predictions(run, texts)
        np.savez(folder / f"{family}-inputs.npz", **inputs)
        exported = hatt.export.export(run.run_dir, folder / f"{family}-saved")
        facts[family] = SimpleNamespace(
            run=run, texts=texts, model=model, want=want, saved_model=str(exported.saved_model)
        )
    reloads = {str(f.run.run_dir / "model.keras"): str(folder / f"{k}-inputs.npz")
               for k, f in facts.items()}  # fmt: skip
    served = {f.saved_model: f.texts for f in facts.values()}
    fresh = run_json_script(FRESH_SCRIPT, json.dumps(served), json.dumps(reloads))
    reloaded, served = fresh["reloaded"], fresh["served"]
    for f in facts.values():
        f.reloaded = np.asarray(reloaded[str(f.run.run_dir / "model.keras")])
        f.served = np.asarray(served[f.saved_model])
    return facts


@pytest.mark.slow
@pytest.mark.parametrize("family", RUN_FAMILIES)
def test_trains_in_graph_mode_and_reloads_in_a_fresh_process(family, fresh):
    facts = fresh[family]
    assert np.isfinite(facts.run.metrics["test_loss"])
    model = facts.model
    assert hatt.models.is_packed(model) == (family == "han")  # the HAN as hatt train trains it
    encoder = model.get_layer(ENCODERS[family][0])
    assert cell_of(encoder) == "sru"
    assert np.any(to_numpy(encoder.forward_layer.bias) != 0)  # it trained
    np.testing.assert_allclose(facts.reloaded, facts.want, atol=1e-5)


@pytest.mark.slow
@pytest.mark.parametrize("family", RUN_FAMILIES)
def test_exports_to_a_raw_text_saved_model(family, fresh):
    facts = fresh[family]
    np.testing.assert_allclose(facts.served[:, -1], facts.want[:, -1], atol=1e-5)


def test_the_packed_hans_dense_twin_keeps_the_sru():
    """Export and `hatt.export.load` view a packed HAN through its dense twin."""
    packed = build_small("han", cell="sru", packed_groups=2)
    twin = hatt.models.dense_twin(packed)
    assert cell_of(twin.get_layer("word_encoder")) == "sru"
    ids = batch_for("han")
    check_padding_invariance("han", twin, ids)
