"""hatt.inspect.explain on tiny trained models of all four families (tests/conftest.py)."""

import keras
import numpy as np
import pytest
import tensorflow as tf

import hatt
from hatt import export
from hatt.inspect import balanced_sample, explain, explanations_from_result

REVIEWS = [
    "The plot was superb. The actor was good!<br />Watch it.",
    "A dreadful film... it was dreadful",
]


@pytest.mark.parametrize("family", ["rnn", "transformer", "han"])
def test_attention_weights_are_the_models_own(tiny, family):
    model, vectorizer = tiny[family].model, tiny[family].vectorizer
    explained = explain(model, REVIEWS, vectorizer=vectorizer)
    # the HAN was trained packed: its own attention, unpacked to [batch, S, W]
    views = hatt.models.attention_model(model)(tiny[family].inputs(REVIEWS))
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
            np.testing.assert_allclose(e.sentence_weights, sentence[: len(e.sentences)], atol=1e-5)
            for s, weights in enumerate(e.word_weights):
                np.testing.assert_allclose(weights, words[i, s, : len(weights)], atol=1e-5)
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


def test_cnn_saliency_points_at_the_planted_word(tiny):
    explained = explain(tiny["cnn"].model, REVIEWS, vectorizer=tiny["cnn"].vectorizer)
    assert [e.score_kind for e in explained] == ["saliency", "saliency"]
    for e in explained:
        assert sum(e.weights) == pytest.approx(1.0, abs=1e-5)
    top = explained[1].tokens[int(np.argmax(explained[1].weights))]
    assert top == "dreadful"


@pytest.mark.parametrize("family", ["cnn", "han"])
def test_a_keras_file_a_saved_model_and_the_model_in_memory_explain_alike(tiny, exported, family):
    """One path: the same scores from every place a model can be loaded from."""
    texts = [*REVIEWS, "", "Superb."]
    model, vectorizer = tiny[family].model, tiny[family].vectorizer
    in_memory = explain(model, texts, vectorizer=vectorizer)
    text_model = export.TextModel(model, vectorizer)
    forms = {
        "TextModel": text_model,
        "Predictor": export.Predictor.from_text_model(text_model),
        "run directory": tiny[family].run_dir,
        "id model .keras": tiny[family].run_dir / "model.keras",
        "end-to-end .keras": exported[family].keras_file,
        "SavedModel": exported[family].saved_model,
        "saved_models/NAME": str(exported[family].path),
        "loaded SavedModel": export.load(exported[family].path),
    }
    for form, source in forms.items():
        for a, b in zip(in_memory, explain(source, texts, batch_size=3), strict=True):
            assert (a.family, a.score_kind, a.sentences) == (b.family, b.score_kind, b.sentences)
            assert a.probability == pytest.approx(b.probability, abs=1e-5), form
            np.testing.assert_allclose(a.weights, b.weights, atol=1e-5, err_msg=form)
            if family == "han":
                np.testing.assert_allclose(a.sentence_weights, b.sentence_weights, atol=1e-5)
    # and they are TextModel's outputs, review by review
    served = text_model(texts)
    for i, e in enumerate(in_memory):
        assert e.probability == pytest.approx(float(served["probability"][i]), abs=1e-6)


@pytest.mark.parametrize("family", ["cnn", "han"])
def test_empty_and_emoji_reviews_give_a_defined_result(tiny, family):
    model, vectorizer = tiny[family].model, tiny[family].vectorizer
    explained = explain(model, ["", "   ", "!!!", "😀👍🏽"], vectorizer=vectorizer)
    for e in explained[:3]:
        assert e.sentences == [] and e.word_weights == [] and e.tokens == []
        assert 0.0 <= e.probability <= 1.0 and np.isfinite(e.probability)
        assert e.display_weights() == []
    emoji = explained[3]
    assert emoji.tokens == ["😀", "👍🏽"]
    assert sum(emoji.weights) == pytest.approx(1.0, abs=1e-5)
    assert all(np.isfinite(emoji.weights))


def test_truncated_reviews_say_what_the_model_did_not_see(tiny):
    model, vectorizer = tiny["rnn"].model, tiny["rnn"].vectorizer
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


def test_truncated_han_reviews_mark_the_dropped_sentences(tiny):
    model, vectorizer = tiny["han"].model, tiny["han"].vectorizer
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


def test_bad_inputs_are_named(tiny, tmp_path):
    model, vectorizer = tiny["rnn"].model, tiny["rnn"].vectorizer
    with pytest.raises(ValueError, match="not a single string"):
        explain(model, "a review", vectorizer=vectorizer)
    with pytest.raises(ValueError, match="vectorizer="):
        explain(model, ["a review"])
    with pytest.raises(ValueError, match="one label per text"):
        explain(model, ["a", "b"], labels=[1], vectorizer=vectorizer)
    with pytest.raises(ValueError, match="class indices in \\[0, 2\\)"):
        explain(model, ["a"], labels=[3], vectorizer=vectorizer)
    with pytest.raises(ValueError, match="texts\\[1\\]"):
        explain(model, ["a", 5], vectorizer=vectorizer)
    with pytest.raises(ValueError, match="batch_size"):
        explain(model, ["a"], vectorizer=vectorizer, batch_size=0)
    with pytest.raises(ValueError, match="No model at .*missing"):
        explain(tmp_path / "missing", ["a"])
    with pytest.raises(ValueError, match="Expected model to be a path"):
        explain(object(), ["a"])
    with pytest.raises(ValueError, match="output_mode"):
        explain(
            model, ["a"], vectorizer=hatt.data.Vectorizer(output_mode="nested", vocabulary=["a"])
        )
    corrupted = tmp_path / "run"
    corrupted.mkdir()
    (corrupted / "model.keras").write_bytes(b"not a zip file")
    vectorizer.save(corrupted / "vectorizer.json")
    with pytest.raises(
        export.ExportError, match="Could not load the Keras model .*run/model.keras"
    ):
        explain(corrupted, ["a"])


def test_balanced_sample_is_seeded_and_balanced():
    labels = np.array([0] * 50 + [1] * 50)  # aclImdb order: one class first
    chosen = balanced_sample(labels, 10, seed=3)
    assert len(set(chosen)) == 10 and labels[chosen].sum() == 5
    np.testing.assert_array_equal(chosen, balanced_sample(labels, 10, seed=3))
    assert not np.array_equal(chosen, balanced_sample(labels, 10, seed=4))
    with pytest.raises(ValueError, match="n <= 100"):
        balanced_sample(labels, 101)


def test_a_cnn_with_attention_pooling_shows_its_attention(tiny):
    vectorizer = tiny["rnn"].vectorizer
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
