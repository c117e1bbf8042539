"""hatt.inspect.explain on tiny trained models of all four families."""

import keras
import numpy as np
import pytest
import tensorflow as tf

import hatt
from hatt.inspect import explain
from hatt.inspect.explain import KerasExplainer, balanced_sample, explanations_from_result
from tests.inspect.conftest import TINY_KWARGS

REVIEWS = [
    "The plot was superb. The actor was good!<br />Watch it.",
    "A dreadful film... it was dreadful",
]


@pytest.mark.parametrize("family", ["rnn", "transformer", "han"])
def test_attention_weights_are_the_models_own(tiny_models, family):
    model, vectorizer = tiny_models[family]
    explained = explain(model, REVIEWS, vectorizer=vectorizer)
    views = hatt.models.attention_model(model)(vectorizer(REVIEWS))
    words = keras.ops.convert_to_numpy(views["word_attention"])
    probability = keras.ops.convert_to_numpy(views["probability"]).reshape(-1)
    tokens = vectorizer.tokens(tf.constant(REVIEWS)).to_list()
    for i, e in enumerate(explained):
        assert e.family == family and e.score_kind == "attention"
        assert e.probability == pytest.approx(float(probability[i]), abs=1e-6)
        if family == "han":
            expected_sentences = [[t.decode() for t in s] for s in tokens[i]]
            assert e.sentences == expected_sentences
            sentence = keras.ops.convert_to_numpy(views["sentence_attention"])[i]
            np.testing.assert_allclose(e.sentence_weights, sentence[: len(e.sentences)], atol=1e-6)
            for s, weights in enumerate(e.word_weights):
                np.testing.assert_allclose(weights, words[i, s, : len(weights)], atol=1e-6)
                assert sum(weights) == pytest.approx(1.0, abs=1e-5)
            assert sum(e.sentence_weights) == pytest.approx(1.0, abs=1e-5)
            shares = e.document_weights()
            assert sum(map(sum, shares)) == pytest.approx(1.0, abs=1e-5)
        else:
            assert e.tokens == [t.decode() for t in tokens[i]]
            np.testing.assert_allclose(e.weights, words[i, : len(e.tokens)], atol=1e-6)
            assert sum(e.weights) == pytest.approx(1.0, abs=1e-5)
            assert e.sentence_weights is None
        # flat models are split into the review's sentences for display only
        assert len(e.sentences) == len(tokens[i]) or family != "han"
    # "The plot ... superb." / "The actor was good!" / "Watch it." are three sentences
    assert len(explained[0].sentences) == 3


def test_packed_han_gives_the_dense_models_explanation(tiny_models):
    model, vectorizer = tiny_models["han"]
    packed = hatt.models.build(
        "han", vocabulary_size=vectorizer.vocabulary_size, packed_groups=3, **TINY_KWARGS["han"]
    )
    packed.set_weights(model.get_weights())
    dense = explain(model, REVIEWS, vectorizer=vectorizer)
    from_packed = explain(packed, REVIEWS, vectorizer=vectorizer)
    for a, b in zip(dense, from_packed, strict=True):
        assert a.sentences == b.sentences
        assert a.probability == pytest.approx(b.probability, abs=1e-5)
        np.testing.assert_allclose(a.weights, b.weights, atol=1e-5)
        np.testing.assert_allclose(a.sentence_weights, b.sentence_weights, atol=1e-5)


def test_cnn_saliency_is_gradient_times_input(tiny_models):
    model, vectorizer = tiny_models["cnn"]
    explained = explain(model, REVIEWS, vectorizer=vectorizer)
    ids = vectorizer(REVIEWS)
    # Reference: the CNN's layers re-wired so that the embeddings can be watched.
    embedding = model.get_layer("embedding")
    widths = [layer for layer in model.layers if layer.name.startswith("conv_")]
    head = model.get_layer("logit")
    embedded = tf.convert_to_tensor(embedding(ids))
    with tf.GradientTape() as tape:
        tape.watch(embedded)
        mask = model.get_layer("padding_mask")(ids)
        x = model.get_layer("zero_padding")(embedded, mask=mask)
        x = model.get_layer("concatenate")([conv(x) for conv in widths])
        pooled, _ = model.get_layer("word_attention")(x, mask=mask, return_attention_scores=True)
        logit = tf.reshape(tf.matmul(pooled, head.kernel) + head.bias, [-1])
        target = tf.reduce_sum(tf.abs(logit))  # the predicted class's logit
    gradient = tape.gradient(target, embedded).numpy()
    contribution = np.abs((gradient * embedded.numpy()).sum(-1))
    for i, e in enumerate(explained):
        assert e.score_kind == "saliency" and e.family == "cnn"
        n = len(e.tokens)
        expected = contribution[i, :n] / contribution[i, :n].sum()
        np.testing.assert_allclose(e.weights, expected, rtol=1e-4, atol=1e-6)
        assert e.probability == pytest.approx(float(tf.sigmoid(logit[i])), abs=1e-6)
    # the planted word carries the largest saliency
    top = explained[1].tokens[int(np.argmax(explained[1].weights))]
    assert top == "dreadful"


@pytest.mark.parametrize("family", ["cnn", "han"])
def test_empty_and_emoji_reviews_give_a_defined_result(tiny_models, family):
    model, vectorizer = tiny_models[family]
    explained = explain(model, ["", "   ", "!!!", "😀👍🏽"], vectorizer=vectorizer)
    for e in explained[:3]:
        assert e.sentences == [] and e.word_weights == [] and e.tokens == []
        assert 0.0 <= e.probability <= 1.0 and np.isfinite(e.probability)
        assert e.display_weights() == []
    emoji = explained[3]
    assert emoji.tokens == ["😀", "👍🏽"]
    assert sum(emoji.weights) == pytest.approx(1.0, abs=1e-5)
    assert all(np.isfinite(emoji.weights))


def test_truncated_reviews_say_what_the_model_did_not_see(tiny_models):
    model, vectorizer = tiny_models["rnn"]
    short = hatt.data.Vectorizer(
        max_tokens=100, min_count=1, sequence_length=6, vocabulary=vectorizer.get_vocabulary(False)
    )
    text = "One two three. Four five six seven. Eight nine ten eleven twelve."
    (e,) = explain(model, [text], vectorizer=short)
    # head_tail keeps the first 3 and the last 3 words
    assert e.sentences == [["one", "two", "three"], ["ten", "eleven", "twelve"]]
    assert e.omitted_words == 6 and e.gap_before == 1
    # a repetitive review fits any split: the gap goes in the middle, as head_tail cuts
    (e,) = explain(model, ["The plot was it. " * 10], vectorizer=short)
    assert e.sentences == [["the", "plot", "was"], ["plot", "was", "it"]]
    assert e.omitted_words == 34 and e.gap_before == 1


def test_truncated_han_reviews_mark_the_dropped_sentences(tiny_models):
    model, vectorizer = tiny_models["han"]
    short = hatt.data.Vectorizer(
        max_tokens=100, min_count=1, output_mode="nested", max_sentences=2,
        vocabulary=vectorizer.get_vocabulary(False),
    )  # fmt: skip
    (e,) = explain(model, ["One two. Three four five. Six. Seven eight."], vectorizer=short)
    assert e.sentences == [["one", "two"], ["seven", "eight"]]
    assert e.omitted_words == 4 and e.gap_before == 1
    (e,) = explain(model, ["The plot was it. " * 6], vectorizer=short)
    assert e.omitted_words == 16 and e.gap_before == 1


def test_an_export_shaped_result_becomes_explanations():
    texts = ["Good. Very bad film", "ok"]
    result = {  # the exported endpoint's dict: bytes or str tokens, "" on padding
        "probability": np.array([0.2, 0.9], np.float32),
        "tokens": np.array(
            [
                [[b"good", b"", b""], [b"very", b"bad", b"film"]],
                [[b"ok", b"", b""], [b"", b"", b""]],
            ]
        ),
        "word_attention": np.array(
            [[[1.0, 0, 0], [0.2, 0.7, 0.1]], [[1.0, 0, 0], [0, 0, 0]]], np.float32
        ),
        "sentence_attention": np.array([[0.25, 0.75], [1.0, 0.0]], np.float32),
    }
    first, second = explanations_from_result(result, texts, "han", "attention", labels=[0, 1])
    assert first.sentences == [["good"], ["very", "bad", "film"]]
    assert first.word_weights[1] == pytest.approx([0.2, 0.7, 0.1])
    assert first.sentence_weights == pytest.approx([0.25, 0.75])
    assert first.prediction == 0 and first.label == 0
    assert first.document_weights()[1] == pytest.approx([0.15, 0.525, 0.075])
    # HAN display scale: sqrt(p_sentence) * p_word, relative to the review's maximum
    raw = [np.sqrt(0.25) * 1.0, np.sqrt(0.75) * 0.7]
    assert first.display_weights()[0][0] == pytest.approx(raw[0] / max(raw))
    assert first.display_weights()[1][1] == pytest.approx(1.0)
    assert second.sentences == [["ok"]] and second.sentence_weights == [1.0]
    assert second.to_dict()["prediction"] == 1


def test_bad_inputs_are_named(tiny_models, tmp_path):
    model, vectorizer = tiny_models["rnn"]
    with pytest.raises(ValueError, match="not a single string"):
        explain(model, "a review", vectorizer=vectorizer)
    with pytest.raises(ValueError, match="vectorizer="):
        explain(model, ["a review"])
    with pytest.raises(ValueError, match="one label per text"):
        explain(model, ["a", "b"], labels=[1], vectorizer=vectorizer)
    with pytest.raises(ValueError, match="labels of 0 or 1"):
        explain(model, ["a"], labels=[3], vectorizer=vectorizer)
    with pytest.raises(ValueError, match="texts\\[1\\]"):
        explain(model, ["a", 5], vectorizer=vectorizer)
    with pytest.raises(ValueError, match="existing model path"):
        explain(tmp_path / "missing", ["a"])
    with pytest.raises(ValueError, match="output_mode"):
        KerasExplainer(model, hatt.data.Vectorizer(output_mode="nested", vocabulary=["a"]))
    corrupted = tmp_path / "run"
    corrupted.mkdir()
    (corrupted / "model.keras").write_bytes(b"not a zip file")
    vectorizer.save(corrupted / "vectorizer.json")
    with pytest.raises(ValueError, match="model"):
        explain(corrupted, ["a"])


def test_balanced_sample_is_seeded_and_balanced():
    labels = np.array([0] * 50 + [1] * 50)  # aclImdb order: one class first
    chosen = balanced_sample(labels, 10, seed=3)
    assert len(set(chosen)) == 10 and labels[chosen].sum() == 5
    np.testing.assert_array_equal(chosen, balanced_sample(labels, 10, seed=3))
    assert not np.array_equal(chosen, balanced_sample(labels, 10, seed=4))
    with pytest.raises(ValueError, match="n <= 100"):
        balanced_sample(labels, 101)


def test_a_cnn_with_attention_pooling_shows_its_attention(tiny_models):
    _, vectorizer = tiny_models["rnn"]
    model = hatt.models.build(
        "cnn",
        vocabulary_size=vectorizer.vocabulary_size,
        embedding_dim=8,
        filters=4,
        pooling="attention",
    )
    (e,) = explain(model, REVIEWS[:1], vectorizer=vectorizer)
    assert (e.family, e.score_kind) == ("cnn", "attention")
    views = hatt.models.attention_model(model)(vectorizer(REVIEWS[:1]))
    expected = keras.ops.convert_to_numpy(views["word_attention"])[0, : len(e.tokens)]
    np.testing.assert_allclose(e.weights, expected, atol=1e-6)


def test_cnn_with_the_ngram_channel_has_the_exports_saliency(tiny_models):
    """With the n-gram channel the head is a sigmoid over summed logits (no Dense kernel)."""
    _, vectorizer = tiny_models["cnn"]
    keras.utils.set_random_seed(3)
    model = hatt.models.build(
        "cnn",
        vocabulary_size=vectorizer.vocabulary_size,
        embedding_dim=8,
        filters=4,
        ngram={"buckets": 64},
    )
    wide = model.get_layer("ngram_logit")
    wide.embeddings.assign(np.linspace(-1, 1, wide.num_features).astype("float32"))
    explained = explain(model, REVIEWS, vectorizer=vectorizer)
    served = hatt.export.TextModel(model, vectorizer)(REVIEWS)
    for i, e in enumerate(explained):
        assert e.score_kind == "saliency"
        n = len(e.tokens)
        served_weights = keras.ops.convert_to_numpy(served["word_attention"])[i, :n]
        np.testing.assert_allclose(e.weights, served_weights, rtol=1e-4, atol=1e-6)
        assert e.probability == pytest.approx(float(served["probability"][i]), abs=1e-6)
