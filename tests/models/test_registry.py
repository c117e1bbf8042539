"""hatt.models.build, attention_model, registration and fresh-process `.keras` reload."""

import keras
import numpy as np
import pytest

import hatt
from hatt.models import wiring

from ._model_test import (
    assert_reload_in_fresh_process,
    batch_for,
    build_small,
    check_attention,
    nested_task,
    to_numpy,
)

HELPERS = [
    "ApplyMask",
    "EncoderMask",
    "FoldSentences",
    "GatherSentences",
    "MaxOverTime",
    "MeanOverTime",
    "PaddingMask",
    "UnfoldSentences",
]


def test_build_knows_the_four_families():
    assert hatt.models.FAMILIES == ("cnn", "rnn", "transformer", "han")
    for family in hatt.models.FAMILIES:
        model = hatt.models.build(family, vocabulary_size=30)
        assert isinstance(model, keras.Model)
        assert model.name == family


def test_build_rejects_an_unknown_family():
    with pytest.raises(ValueError, match=r"Received: name='bert'"):
        hatt.models.build("bert", vocabulary_size=30)


def test_build_passes_keyword_arguments_through():
    model = hatt.models.build("rnn", vocabulary_size=30, units=8, num_layers=2, cell="lstm")
    for name in ("encoder_0", "encoder_1"):
        encoder = model.get_layer(name)
        assert isinstance(encoder.forward_layer, keras.layers.LSTM)
        assert encoder.forward_layer.units == 8
    with pytest.raises(TypeError):
        hatt.models.build("rnn", vocabulary_size=30, hidden=8)


@pytest.mark.parametrize("name", HELPERS)
def test_helper_layers_are_registered(name):
    cls = getattr(wiring, name)
    assert keras.saving.get_registered_name(cls) == f"hatt>{name}"
    assert keras.saving.get_registered_object(f"hatt>{name}") is cls


def test_all_lists_the_public_names():
    public = {n for n in dir(hatt.models) if not n.startswith("_")}
    modules = {"cnn", "rnn", "transformer", "han", "registry", "spec", "wiring"}
    public -= {"head"} - set(hatt.models.__all__)
    assert set(hatt.models.__all__) == public - modules


def test_attention_model_shares_the_weights():
    model = build_small("rnn")
    views = hatt.models.attention_model(model)
    assert {id(v) for v in views.weights} == {id(v) for v in model.weights}
    ids = batch_for("rnn")
    before = to_numpy(views(ids)["probability"])
    model.get_layer("logit").kernel.assign(
        np.ones(model.get_layer("logit").kernel.shape, dtype="float32")
    )
    assert not np.allclose(to_numpy(views(ids)["probability"]), before)


def test_attention_model_rejects_a_model_without_scores():
    ids = keras.Input(shape=(None,), dtype="int32")
    x = keras.layers.Embedding(10, 4, mask_zero=True)(ids)
    x = hatt.layers.ContextAttention(name="word_attention")(x)
    model = keras.Model(ids, keras.layers.Dense(1, name="probability")(x))
    with pytest.raises(ValueError, match="return_attention_scores=True"):
        hatt.models.attention_model(model)


def test_attention_model_on_a_foreign_model_gives_the_probability_only():
    ids = keras.Input(shape=(None,), dtype="int32")
    x = keras.layers.GlobalAveragePooling1D()(keras.layers.Embedding(10, 4)(ids))
    model = keras.Model(ids, keras.layers.Dense(1)(x))
    assert list(hatt.models.attention_model(model).output) == ["probability"]


def test_attention_model_works_after_reload_in_process(tmp_path):
    model = build_small("han")
    path = tmp_path / "han.keras"
    model.save(path)
    loaded = keras.saving.load_model(path)
    ids, _ = nested_task(8, seed=3)
    check_attention("han", loaded, ids)
    np.testing.assert_allclose(to_numpy(loaded(ids)), to_numpy(model(ids)), atol=1e-6)


@pytest.fixture(scope="module")
def small():
    """``{name: model}``: the small model of each family and a CNN with attention pooling,
    built once for the tests that only read them (none changes a weight)."""
    models = {family: build_small(family) for family in hatt.models.FAMILIES}
    return {**models, "cnn_attention": build_small("cnn", pooling="attention")}


@pytest.mark.slow
def test_reload_in_a_fresh_process(small, tmp_path):
    models = [(name, model, batch_for(name.split("_")[0])) for name, model in small.items()]
    assert_reload_in_fresh_process(tmp_path, models)


@pytest.mark.parametrize("family", hatt.models.FAMILIES)
def test_family_of_reads_the_family_off_a_built_and_a_renamed_model(small, family):
    model = small[family]
    assert hatt.models.family_of(model) == family
    renamed = keras.Model(model.inputs, model.outputs, name="mine")
    assert hatt.models.family_of(renamed) == family


def test_score_kind_is_attention_only_for_context_attention_pooling(small):
    assert hatt.models.score_kind(small["cnn"]) == "saliency"
    assert hatt.models.score_kind(small["cnn_attention"]) == "attention"
    for family in ("rnn", "transformer", "han"):
        assert hatt.models.score_kind(small[family]) == "attention"


@pytest.mark.parametrize("channel", [None, {"buckets": 16, "order": 3, "binary": True}])
def test_explanation_view_shares_weights_and_gives_the_head_logits(channel):
    model = build_small("cnn", ngram=channel)
    if channel:
        wide = model.get_layer("ngram_logit")
        wide.embeddings.assign(np.linspace(-1, 1, wide.num_features).astype("float32"))
    view = hatt.models.explanation_view(model)
    assert (view.family, view.score_kind) == ("cnn", "saliency")
    ids = keras.ops.convert_to_tensor(batch_for("cnn"))
    out = {k: to_numpy(v) for k, v in view.attention(ids).items()}
    np.testing.assert_allclose(1 / (1 + np.exp(-out["logits"])), out["probability"], atol=1e-6)
    embedded = view.embed(ids)
    np.testing.assert_allclose(to_numpy(view.logits([ids, embedded])), out["logits"], atol=1e-6)
    assert {id(v) for v in view.attention.weights} <= {id(v) for v in model.weights}


def test_logits_of_a_model_without_the_hatt_head_is_a_clear_error():
    ids = keras.Input(shape=(None,), dtype="int32")
    x = keras.layers.GlobalAveragePooling1D()(keras.layers.Embedding(10, 4)(ids))
    model = keras.Model(ids, keras.layers.Dense(1, activation="sigmoid", name="probability")(x))
    with pytest.raises(ValueError, match="Activation named 'probability'"):
        hatt.models.head.logits_tensor(model)


def test_explanation_view_leaves_the_model_viewable_and_savable(tmp_path):
    """Building the views twice, then saving, works (Keras re-points inputs when cloning)."""
    model = build_small("han", ngram={"buckets": 16})
    first = hatt.models.explanation_view(model)
    second = hatt.models.explanation_view(model)
    ids = keras.ops.convert_to_tensor(batch_for("han"))
    np.testing.assert_allclose(
        to_numpy(first.attention(ids)["logits"]), to_numpy(second.attention(ids)["logits"])
    )
    model.save(tmp_path / "han.keras")
    reloaded = keras.saving.load_model(tmp_path / "han.keras")
    np.testing.assert_allclose(to_numpy(reloaded(ids)), to_numpy(model(ids)), atol=1e-6)


@pytest.mark.parametrize("family", hatt.models.FAMILIES)
@pytest.mark.parametrize("channel", [None, {"buckets": 16, "order": 2}])
def test_explanation_view_splits_the_logits_into_deep_part_and_channel(family, channel):
    model = build_small(family, ngram=channel)
    wide = model.get_layer("ngram_logit") if channel else None
    if channel:
        wide.embeddings.assign(np.linspace(-1, 1, wide.num_features).astype("float32"))
    logit = model.get_layer("logit")
    logit.bias.assign(np.array([0.25], "float32"))
    view = hatt.models.explanation_view(model)
    assert view.channel is wide and view.logit_bias is logit.bias
    ids = keras.ops.convert_to_tensor(batch_for(family))
    embedded = view.embed(ids)
    parts = {k: to_numpy(v) for k, v in view.parts([ids, embedded]).items()}
    expected = {"probability", "word_attention", "deep_logits"}
    expected |= {"sentence_attention"} if family == "han" else set()
    assert set(parts) == expected | ({"ngram_logits"} if channel else set())
    logits = to_numpy(view.logits([ids, embedded]))
    np.testing.assert_allclose(
        parts["deep_logits"] + parts.get("ngram_logits", 0), logits, atol=1e-6
    )
    np.testing.assert_allclose(
        to_numpy(view.deep([ids, embedded])), parts["deep_logits"], atol=1e-6
    )
    # the deep part alone: the Dense "logit" layer over the document vector, its bias included
    document = to_numpy(keras.Model(model.inputs, logit.input)(ids))
    kernel, bias = (to_numpy(w) for w in logit.weights)
    np.testing.assert_allclose(parts["deep_logits"], document @ kernel + bias, atol=1e-5)
    if channel:
        np.testing.assert_allclose(parts["ngram_logits"], to_numpy(wide(ids)), atol=1e-6)
    # zero embeddings reach the deep part only: the channel still reads the ids
    zeros = keras.ops.zeros_like(embedded)
    moved = {k: to_numpy(v) for k, v in view.parts([ids, zeros]).items()}
    if channel:
        np.testing.assert_allclose(moved["ngram_logits"], parts["ngram_logits"], atol=1e-6)
