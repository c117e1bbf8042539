"""THE head with the n-gram channel for more than two classes: softmax(deep + channel)."""

import keras
import numpy as np
import pytest
import tensorflow as tf

import hatt
from hatt.data import pack_sentences
from hatt.models import head

from ._model_test import (
    batch_for,
    build_small,
    check_padding_invariance,
    nested_task,
    to_numpy,
)

CHANNEL = {"buckets": 64, "order": 3, "reduction": "sqrt", "binary": True}


def softmax(z):
    z = np.exp(z - z.max(-1, keepdims=True))
    return z / z.sum(-1, keepdims=True)


def with_channel_weights(model):
    wide = model.get_layer("ngram_logit")
    weights = np.random.default_rng(0).standard_normal(wide.embeddings.shape)
    wide.embeddings.assign(weights.astype("float32"))
    return wide


@pytest.mark.parametrize("family", list(hatt.models.FAMILIES))
def test_multiclass_channel_adds_one_logit_a_class(family, tmp_path):
    """probabilities = softmax(deep logits + NgramLogit(ids)), one column a class."""
    model = build_small(family, num_classes=3, ngram=CHANNEL)
    wide = with_channel_weights(model)
    assert wide.units == 3 and tuple(wide.embeddings.shape) == (wide.num_features, 3)
    ids = batch_for(family)
    probabilities = to_numpy(model(ids))
    deep = to_numpy(keras.Model(model.inputs, model.get_layer("logit").output)(ids))
    channel = to_numpy(wide(ids))
    assert channel.shape == (4, 3) and np.abs(channel).max() > 0.1  # the channel matters
    np.testing.assert_allclose(probabilities, softmax(deep + channel), atol=1e-5)
    np.testing.assert_allclose(probabilities.sum(-1), 1.0, atol=1e-5)
    check_padding_invariance(family, model, ids)
    # the head is read back as it was built
    assert head.num_classes_of(model) == 3
    assert head.ngram_channel_of(model) == head.NgramChannel(**CHANNEL)
    logits = to_numpy(keras.Model(model.inputs, head.logits_tensor(model))(ids))
    np.testing.assert_allclose(logits, deep + channel, atol=1e-5)
    path = tmp_path / "three.keras"
    model.save(path)
    np.testing.assert_allclose(
        to_numpy(keras.saving.load_model(path)(ids)), probabilities, atol=1e-6
    )


def test_two_classes_keep_one_channel_logit():
    model = build_small("cnn", ngram=CHANNEL)
    wide = model.get_layer("ngram_logit")
    assert wide.units == 1 and tuple(wide.embeddings.shape) == (wide.num_features,)
    assert model.get_layer("total_logit").output.shape == (None, 1)


def test_explanation_view_gives_the_multiclass_logits():
    model = build_small("cnn", num_classes=4, ngram=CHANNEL)
    with_channel_weights(model)
    view = hatt.models.explanation_view(model)
    ids = keras.ops.convert_to_tensor(batch_for("cnn"))
    out = {k: to_numpy(v) for k, v in view.attention(ids).items()}
    assert out["logits"].shape == (4, 4)
    np.testing.assert_allclose(softmax(out["logits"]), out["probability"], atol=1e-6)
    np.testing.assert_allclose(
        to_numpy(view.logits([ids, view.embed(ids)])), out["logits"], atol=1e-5
    )


def test_packed_han_with_a_multiclass_channel_has_a_dense_twin():
    packed = build_small("han", num_classes=3, packed_groups=2, ngram=CHANNEL)
    with_channel_weights(packed)
    twin = hatt.models.dense_twin(packed)
    assert twin.get_layer("ngram_logit").units == 3
    ids, _ = nested_task(12, max_sentences=4, max_words=6, seed=3)
    reviews = [[[int(w) for w in s if w] for s in review if s.any()] for review in ids]
    ragged = tf.ragged.constant(reviews, dtype=tf.int32, ragged_rank=2)
    inputs = {k: np.asarray(v) for k, v in pack_sentences(ragged, (3, 6)).items()}
    np.testing.assert_allclose(to_numpy(packed(inputs)), to_numpy(twin(ids)), atol=1e-5)


def test_the_dense_twin_keeps_a_sparse_attention_and_its_temperature():
    """The export's (dense) HAN must attend as the trained (packed) one: a twin with
    softmax over sparsemax-trained scores would explain another model."""
    packed = build_small(
        "han", packed_groups=2, attention_normalizer="sparsemax", attention_temperature=0.05
    )
    twin = hatt.models.dense_twin(packed)
    for name in ("word_attention", "sentence_attention"):
        assert twin.get_layer(name).normalizer == "sparsemax"
        assert twin.get_layer(name).temperature == 0.05
    ids, _ = nested_task(12, max_sentences=4, max_words=6, seed=3)
    reviews = [[[int(w) for w in s if w] for s in review if s.any()] for review in ids]
    ragged = tf.ragged.constant(reviews, dtype=tf.int32, ragged_rank=2)
    inputs = {k: np.asarray(v) for k, v in pack_sentences(ragged, (3, 6)).items()}
    np.testing.assert_allclose(to_numpy(packed(inputs)), to_numpy(twin(ids)), atol=1e-5)
    weights = to_numpy(hatt.models.attention_model(twin)(ids)["word_attention"])
    real = ids != 0
    assert (weights[real] == 0).any()  # a cold sparsemax: exact zeros among real words


def test_explanation_view_parts_sum_to_the_multiclass_logits():
    model = build_small("han", num_classes=3, ngram=CHANNEL)
    wide = with_channel_weights(model)
    view = hatt.models.explanation_view(model)
    ids = keras.ops.convert_to_tensor(batch_for("han"))
    embedded = view.embed(ids)
    parts = {k: to_numpy(v) for k, v in view.parts([ids, embedded]).items()}
    assert parts["deep_logits"].shape == parts["ngram_logits"].shape == (len(ids), 3)
    np.testing.assert_allclose(parts["ngram_logits"], to_numpy(wide(ids)), atol=1e-6)
    total = parts["deep_logits"] + parts["ngram_logits"]
    np.testing.assert_allclose(softmax(total), parts["probability"], atol=1e-6)
    assert tuple(view.logit_bias.shape) == (3,)
