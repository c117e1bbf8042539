"""hatt.models.family_spec: every family declares one, and it says what the built model is."""

import dataclasses
import inspect

import keras
import numpy as np
import pytest

import hatt
from hatt import presets
from hatt.layers import PositionEmbedding
from hatt.models import cnn, han, rnn, spec, transformer
from hatt.training.run import loop
from hatt.training.settings import config as config_lib
from hatt.training.settings import semi
from hatt.training.starts import language_model, word_vectors

from ._model_test import batch_for, build_small, pad_more, to_numpy

FAMILIES = hatt.models.FAMILIES
MODULES = {"cnn": cnn, "rnn": rnn, "transformer": transformer, "han": han}


@pytest.fixture(scope="module")
def built():
    """A small model of each family, with the spec's default arguments."""
    return {family: build_small(family) for family in FAMILIES}


def test_every_family_declares_its_spec_in_its_module():
    assert tuple(MODULES) == FAMILIES
    for family, module in MODULES.items():
        found = hatt.models.family_spec(family)
        assert isinstance(found, hatt.models.FamilySpec)
        assert found is module.SPEC
        assert found.name == family
        assert found.builder is getattr(hatt.models, f"build_{family}")
        assert found.layout in spec.LAYOUTS


@pytest.mark.parametrize("name", ["bert", "CNN", "", None, ["cnn"]])
def test_an_unknown_family_raises_a_clear_value_error(name):
    with pytest.raises(ValueError, match=r"Expected name to be one of .*Received: name="):
        hatt.models.family_spec(name)


def test_a_spec_is_frozen_and_checks_its_layout():
    found = hatt.models.family_spec("rnn")
    with pytest.raises(dataclasses.FrozenInstanceError):
        found.layout = spec.NESTED
    with pytest.raises(ValueError, match=r"Received: layout='ragged'"):
        dataclasses.replace(found, layout="ragged")
    with pytest.raises(ValueError, match=r"Expected layout='nested' with sentence_attention"):
        dataclasses.replace(found, sentence_attention=True)


@pytest.mark.parametrize("family", FAMILIES)
def test_the_layout_is_the_rank_of_the_model_input(family, built):
    found = hatt.models.family_spec(family)
    model = built[family]
    assert len(model.inputs[0].shape) == (3 if found.nested else 2)
    assert found.nested == (found.layout == spec.NESTED)
    probability = to_numpy(model(batch_for(family), training=False))
    assert probability.shape == (len(batch_for(family)), 1)


@pytest.mark.parametrize("family", FAMILIES)
def test_word_vector_families_have_an_embedding_that_vectors_can_fill(family, built):
    found = hatt.models.family_spec(family)
    model = built[family]
    if not found.takes_word_vectors:
        with pytest.raises(ValueError, match="start from word vectors"):
            word_vectors.embedding_layer(model)
        return
    embedding = word_vectors.embedding_layer(model)
    assert isinstance(embedding, keras.layers.Embedding)
    table = np.full(embedding.embeddings.shape, 0.25, dtype="float32")
    embedding.embeddings.assign(table)  # vectors of the embedding's shape fit in place
    np.testing.assert_allclose(to_numpy(embedding.embeddings), table)


def test_the_one_hot_cnn_is_the_variant_without_word_vectors():
    model = build_small("cnn", words="one_hot", kernel_sizes=(3,))
    with pytest.raises(ValueError, match="one-hot CNN"):
        word_vectors.embedding_layer(model)


@pytest.mark.parametrize("family", FAMILIES)
def test_attention_pooled_families_expose_their_attention(family, built):
    found = hatt.models.family_spec(family)
    model = built[family]
    assert hatt.models.score_kind(model) == ("attention" if found.word_attention else "saliency")
    views = hatt.models.attention_model(model)(batch_for(family))
    assert "word_attention" in views
    assert ("sentence_attention" in views) == found.sentence_attention
    if found.sentence_attention:
        assert tuple(views["sentence_attention"].shape) == batch_for(family).shape[:2]


@pytest.mark.parametrize("family", FAMILIES)
def test_the_word_encoder_is_the_first_recurrent_layer_the_lm_pretrains(family, built):
    found = hatt.models.family_spec(family)
    model = built[family]
    recurrent = [layer for layer in model.layers if isinstance(layer, keras.layers.Bidirectional)]
    if found.word_encoder is None:
        assert not recurrent
        with pytest.raises(ValueError, match="recurrent word encoder"):
            language_model.encoder_layers(model, family)
        assert family not in semi.WORD_PRETRAINED
        return
    assert recurrent[0].name == found.word_encoder
    embedding, encoder = language_model.encoder_layers(model, family)
    assert encoder is model.get_layer(found.word_encoder)
    assert embedding is word_vectors.embedding_layer(model)
    assert family in semi.WORD_PRETRAINED


@pytest.mark.parametrize("family", FAMILIES)
def test_the_sentence_encoder_reads_sentence_vectors(family, built):
    found = hatt.models.family_spec(family)
    model = built[family]
    if found.sentence_encoder is None:
        assert family not in semi.SENTENCE_PRETRAINED
        return
    assert found.nested and found.word_encoder is not None  # the stage after the LM
    encoder = model.get_layer(found.sentence_encoder)
    assert isinstance(encoder, keras.layers.Bidirectional)
    assert encoder is not model.get_layer(found.word_encoder)
    assert family in semi.SENTENCE_PRETRAINED


@pytest.mark.parametrize("family", FAMILIES)
def test_positional_families_take_the_run_window_as_their_position_table(family, built):
    found = hatt.models.family_spec(family)
    positions = [layer for layer in built[family].layers if isinstance(layer, PositionEmbedding)]
    assert bool(positions) == found.positional
    assert ("sequence_length" in hatt.models.builder_arguments(family)) == found.positional
    config = config_lib.TrainConfig(model=family, sequence_length=77)
    arguments = loop.model_arguments(config, vocabulary_size=30)
    assert arguments.get("sequence_length") == (77 if found.positional else None)


@pytest.mark.parametrize("family", FAMILIES)
def test_xla_predict_families_are_flat_and_padding_changes_no_output(family, built):
    found = hatt.models.family_spec(family)
    if not found.xla_predict:
        return
    assert not found.nested  # the compiled path pads [B, T] ids to a fixed window
    model = built[family]
    ids = batch_for(family)
    np.testing.assert_allclose(
        to_numpy(model(pad_more(family, ids), training=False)),
        to_numpy(model(ids, training=False)),
        atol=1e-6,
    )


@pytest.mark.parametrize("family", FAMILIES)
def test_the_preset_is_shipped_and_is_for_the_family(family):
    found = hatt.models.family_spec(family)
    assert found.preset in presets.PRESETS
    assert config_lib.load_preset(found.preset)["model"] == family
    assert config_lib.assemble_config(family).preset == found.preset


def test_the_flat_families_and_the_default_come_from_the_specs():
    flat = tuple(f for f in FAMILIES if hatt.models.family_spec(f).layout == spec.FLAT)
    assert config_lib.FLAT_FAMILIES == flat
    assert hatt.models.DEFAULT_FAMILY in FAMILIES
    assert config_lib.TrainConfig().model == hatt.models.DEFAULT_FAMILY
    default = inspect.signature(hatt.TextClassifier).parameters["family"].default
    assert default == hatt.models.DEFAULT_FAMILY
