"""The uniform-attention copy (hatt.inspect.uniform): exactly 1/n on real steps, 0 on padding."""

import keras
import numpy as np
import pytest
import tensorflow as tf

import hatt
from hatt import export
from hatt.inspect.uniform import attention_layers, uniform_attention, uniform_attention_check
from hatt.layers import ContextAttention
from hatt.layers.context_attention import SCORES
from tests.conftest import planted

IDS = np.array([[3, 4, 5, 6, 0, 0], [7, 0, 0, 0, 0, 0], [2, 9, 3, 0, 0, 0], [0] * 6], np.int32)


def _expected_uniform(mask):
    """1/n over each row's n real steps, 0 elsewhere (an empty row: all 0)."""
    mask = np.asarray(mask, np.float64)
    counts = mask.sum(axis=-1, keepdims=True)
    return np.divide(mask, counts, out=np.zeros_like(mask), where=counts > 0)


def _pooling_model(score, heads):
    keras.utils.set_random_seed(1)
    tokens = keras.Input(shape=(None,), dtype="int32")
    x = keras.layers.Embedding(12, 6, mask_zero=True, name="embedding")(tokens)
    pooled, weights = ContextAttention(units=5, score=score, heads=heads, name="word_attention")(
        x, return_attention_scores=True
    )
    return keras.Model(tokens, {"pooled": pooled, "weights": weights})


@pytest.mark.parametrize("heads", [1, 3])
@pytest.mark.parametrize("score", SCORES)
def test_copy_attends_uniformly_and_leaves_the_original_alone(score, heads):
    model = _pooling_model(score, heads)
    before = [w.copy() for w in model.get_weights()]
    learned = model(IDS)
    copy = uniform_attention(model)
    out = {k: np.asarray(v) for k, v in copy(IDS).items()}
    expected = _expected_uniform(IDS != 0)
    weights = out["weights"] if heads == 1 else out["weights"].transpose(1, 0, 2)
    for head in [weights] if heads == 1 else weights:
        np.testing.assert_allclose(head, expected, rtol=1e-6, atol=0)
        assert np.all(head[IDS == 0] == 0.0)
    # the pooled vector is the mean of the real steps' embeddings (each head alike)
    embedded = np.asarray(copy.get_layer("embedding")(IDS)) * (IDS != 0)[..., None]
    mean = np.einsum("bt,btd->bd", expected, embedded)
    np.testing.assert_allclose(out["pooled"], np.tile(mean, heads), rtol=1e-5, atol=1e-6)
    # the original: weights unchanged, and its attention is not uniform
    for a, b in zip(before, model.get_weights(), strict=True):
        np.testing.assert_array_equal(a, b)
    original = np.asarray(model(IDS)["weights"])
    np.testing.assert_array_equal(original, np.asarray(learned["weights"]))
    assert np.abs(original - (expected if heads == 1 else expected[:, None, :])).max() > 1e-3


FAMILY_KWARGS = {
    "rnn": {"embedding_dim": 6, "units": 4, "attention_score": "additive"},
    "transformer": {
        "embedding_dim": 8,
        "num_layers": 1,
        "num_heads": 2,
        "intermediate_dim": 8,
        "sequence_length": 16,
        "attention_score": "general",
    },  # fmt: skip
    "cnn": {"embedding_dim": 6, "filters": 4, "kernel_sizes": (2,), "pooling": "attention"},
}


@pytest.mark.parametrize("family", sorted(FAMILY_KWARGS))
def test_flat_families_attend_uniformly(family):
    keras.utils.set_random_seed(2)
    model = hatt.models.build(family, vocabulary_size=12, **FAMILY_KWARGS[family])
    copy = uniform_attention(model)
    word = np.asarray(hatt.models.attention_model(copy)(IDS)["word_attention"])
    np.testing.assert_allclose(word, _expected_uniform(IDS != 0), rtol=1e-6, atol=0)
    learned = np.asarray(hatt.models.attention_model(model)(IDS)["word_attention"])
    assert np.abs(learned - word).max() > 1e-4


@pytest.mark.parametrize("packed", [False, True])
def test_han_attends_uniformly_at_both_levels(packed):
    keras.utils.set_random_seed(3)
    model = hatt.models.build(
        "han", vocabulary_size=12, embedding_dim=6, word_units=4, sentence_units=4,
        attention_score="scaled_dot", packed_groups=2 if packed else None, ngram={"buckets": 16},
    )  # fmt: skip
    copy = uniform_attention(model)  # a packed HAN is copied as its dense twin
    assert not hatt.models.is_packed(copy) and len(attention_layers(copy)) == 2
    nested = tf.ragged.constant([[[3, 4, 5], [6]], [[7, 8]], [[2], [9, 3, 4, 5], [6, 6]]])
    ids = nested.to_tensor()
    views = hatt.models.attention_model(copy)(ids)
    word, sentence = np.asarray(views["word_attention"]), np.asarray(views["sentence_attention"])
    ids = ids.numpy()
    np.testing.assert_allclose(word, _expected_uniform(ids != 0), rtol=1e-6, atol=0)
    np.testing.assert_allclose(sentence, _expected_uniform((ids != 0).any(-1)), rtol=1e-6, atol=0)
    learned = hatt.models.attention_model(hatt.models.dense_twin(model))(ids)
    assert np.abs(np.asarray(learned["sentence_attention"]) - sentence).max() > 1e-4


def test_a_model_without_attention_is_refused():
    model = hatt.models.build("cnn", vocabulary_size=12, embedding_dim=4, filters=2)
    with pytest.raises(ValueError, match="ContextAttention"):
        uniform_attention(model)


def test_check_measures_both_models_on_the_same_reviews(tiny):
    split = planted(24, 5)
    predictor = export.load(tiny["rnn"].run_dir)
    result = uniform_attention_check(predictor, split.texts, split.labels, progress=False)
    predicted = np.argmax(predictor.predict(split.texts)["probabilities"], axis=-1)
    assert result["reviews"] == 24 and result["attention_layers"] == ["word_attention"]
    assert result["learned_accuracy"] == pytest.approx(np.mean(predicted == split.labels))
    assert result["difference"] == pytest.approx(
        result["learned_accuracy"] - result["uniform_accuracy"]
    )
    assert 0.0 <= result["uniform_accuracy"] <= 1.0 and 0.0 <= result["agreement"] <= 1.0
    with pytest.raises(ValueError, match="labels"):
        uniform_attention_check(predictor, split.texts, split.labels[:3], progress=False)
