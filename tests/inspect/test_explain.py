"""hatt.inspect.explain on tiny trained models of all four families (tests/conftest.py)."""

import json
from types import SimpleNamespace

import keras
import numpy as np
import pytest
import tensorflow as tf

import hatt
from hatt import export
from hatt.export.attribution import METHODS
from hatt.inspect import balanced_sample, explain, explanations_from_result
from tests.conftest import PerFamily
from tests.export._loaded import saved_model
from tests.inspect._fake import BIAS, LEXICON, OTHER, FakePredictor, explain_result

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


TEXTS = [*REVIEWS, "", "Superb."]


@pytest.fixture(scope="module")
def shared(tiny, exported):
    """``{"cnn" | "han": facts}``: what both tests of every place a model loads from read,
    made once a family: the TextModel and its Predictor, and the explanations of ``TEXTS``
    in batches of 3 by the TextModel and by the loaded SavedModel."""

    def make(family):
        model, vectorizer = tiny[family].model, tiny[family].vectorizer
        text_model = export.TextModel(model, vectorizer)
        loaded = saved_model(exported[family].path)
        return SimpleNamespace(
            text_model=text_model,
            predictor=export.Predictor.from_text_model(text_model),
            explained={
                "TextModel": explain(text_model, TEXTS, batch_size=3, progress=False),
                "loaded SavedModel": explain(loaded, TEXTS, batch_size=3, progress=False),
            },
        )

    return PerFamily(make)


@pytest.mark.parametrize("family", ["cnn", "han"])
def test_a_keras_file_a_saved_model_and_the_model_in_memory_explain_alike(
    tiny, exported, shared, family
):
    """One path: the same scores from every place a model can be loaded from."""
    texts = TEXTS
    model, vectorizer = tiny[family].model, tiny[family].vectorizer
    in_memory = explain(model, texts, vectorizer=vectorizer)
    text_model = shared[family].text_model
    forms = {
        "TextModel": shared[family].explained["TextModel"],
        "Predictor": export.Predictor.from_text_model(text_model),
        "run directory": tiny[family].run_dir,
        "id model .keras": tiny[family].run_dir / "model.keras",
        "end-to-end .keras": exported[family].keras_file,
        "saved_models/NAME": str(exported[family].path),  # explain loads it (export.load)
        # export.load of its version folder, once a process (tests/export/_loaded.py): a
        # HAN's SavedModel takes seconds to load and seconds more for its first explain call
        "loaded SavedModel": shared[family].explained["loaded SavedModel"],
    }
    for form, source in forms.items():
        if not isinstance(source, list):  # those two explained once for both tests
            source = explain(source, texts, batch_size=3)
        for a, b in zip(in_memory, source, strict=True):
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
    with pytest.raises(export.ExportError, match="run/model.keras. is not a complete .keras file"):
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


# --- every method, through the explain signature's dict (a stand-in with known numbers) ----

SCORED = ["A superb cast. The plot was bad.", "Dreadful!", ""]
SIGNED_FACTORS = {"gradient_x_input": 1.0, "integrated_gradients": 0.9, "ngram": 0.5}


def _lexicon(token):
    return LEXICON.get(token, OTHER)


@pytest.mark.parametrize("family", ["rnn", "han"])
def test_every_method_is_aligned_to_the_same_tokens_with_one_call_per_batch(family):
    fake = FakePredictor(family)
    explained = explain(fake, SCORED, batch_size=2, progress=False)
    assert [len(texts) for texts, _ in fake.calls] == [2, 1]  # explain only, once a batch
    superb, dreadful, empty = explained
    assert superb.sentences == [["a", "superb", "cast"], ["the", "plot", "was", "bad"]]
    for e in explained:
        assert e.methods == e.views == METHODS
        sign = 1.0 if e.explained_class == 1 else -1.0
        assert e.explained_class == e.prediction
        for method, factor in SIGNED_FACTORS.items():
            expected = [[sign * factor * _lexicon(t) for t in s] for s in e.sentences]
            for got, want in zip(e.scores[method], expected, strict=True):
                np.testing.assert_allclose(got, want, atol=1e-6)
            np.testing.assert_allclose(
                e.sentence_scores[method], [sum(row) for row in expected] or np.zeros(0), atol=1e-5
            )
        assert e.word_weights == e.scores["attention"]  # what serving_default gives
        if family == "han":
            assert e.sentence_scores["attention"] == e.sentence_weights
        else:
            assert e.sentence_scores["attention"] == pytest.approx(e.sentence_shares())
        d = e.decomposition
        assert d["deep"] + d["ngram"] + d["bias"] == pytest.approx(d["logit"], abs=1e-5)
        z = sum(_lexicon(t) for t in e.tokens) + BIAS
        assert d["logit"] == pytest.approx(sign * z, abs=1e-5)
        assert d["ngram"] == pytest.approx(sum(map(sum, e.scores["ngram"])), abs=1e-5)
        assert e.completeness_error == pytest.approx(0.01, abs=1e-4) or not e.tokens
    # signed: "superb" argues for the positive prediction, "bad" against it; "dreadful"
    # argues for the negative one (the explained class flips, so does the sign's meaning)
    assert (superb.explained_label, dreadful.explained_label) == ("positive", "negative")
    assert superb.scores["integrated_gradients"][0][1] == pytest.approx(1.8)
    assert superb.scores["integrated_gradients"][1][3] == pytest.approx(-0.9)
    assert dreadful.scores["gradient_x_input"] == [[pytest.approx(2.0)]]
    assert empty.sentences == [] and all(empty.scores[m] == [] for m in METHODS)


def test_a_model_without_attention_or_channel_has_signed_scores_only():
    fake = FakePredictor("cnn", methods=("gradient_x_input", "integrated_gradients"))
    (e,) = explain(fake, SCORED[:1], progress=False)
    assert e.score_kind == "saliency" and e.views == ("gradient_x_input", "integrated_gradients")
    assert e.default_method() == "gradient_x_input"
    # word_weights: serving_default's saliency, |gradient × input| normalised over the review
    raw = np.abs([_lexicon(t) for t in e.tokens])
    np.testing.assert_allclose(e.weights, raw / raw.sum(), atol=1e-6)
    assert e.decomposition["ngram"] == 0.0 and "n-gram" not in e.decomposition_line()
    assert e.decomposition_line().startswith("logit of 'positive' ")
    with pytest.raises(ValueError, match=r"methods \('gradient_x_input', 'integrated_gradients'\)"):
        e.check_method("attention")


def test_methods_and_steps_are_checked_before_the_model_runs():
    fake = FakePredictor("cnn", methods=("gradient_x_input", "integrated_gradients", "ngram"))
    with pytest.raises(ValueError, match=r"this model's methods \('gradient_x_input', "
                       r"'integrated_gradients', 'ngram'\).*methods=\['attention'\]"):  # fmt: skip
        explain(fake, SCORED, methods=["attention"])
    for steps in (0, -3, True, 2.5):
        with pytest.raises(ValueError, match=f"steps={steps!r}"):
            explain(fake, SCORED, steps=steps)
    assert fake.calls == []
    (e,) = explain(fake, SCORED[:1], methods=["ngram", "gradient_x_input"], steps=7)
    assert fake.calls[-1][1] == 7
    assert e.views == ("gradient_x_input", "ngram") and e.completeness_error is None
    (e,) = explain(fake, SCORED[:1], methods="integrated_gradients")
    assert e.views == ("integrated_gradients",) and e.completeness_error is not None
    assert fake.calls[-1][1] is None  # the model's default steps
    fake.kind, fake.metadata = "saved_model", {"explain_steps": 32}
    with pytest.raises(ValueError, match=r"SavedModel: .* export's steps \(32\).*steps=7"):
        explain(fake, SCORED[:1], steps=7)


def test_an_export_without_the_explain_signature_keeps_its_one_view():
    """Exports written before the explain signature: serving_default's scores, one view."""

    class Old(FakePredictor):
        @property
        def methods(self):
            return ()

        def __call__(self, texts, batch_size=None):
            result = explain_result(texts, "rnn", ())  # serving_default's keys only:
            served = {k: result[k] for k in ("probabilities", "label", "probability", "tokens")}
            return {**served, "word_attention": np.abs(result["gradient_x_input"])}

    old = Old("cnn", methods=("gradient_x_input",))
    (e,) = explain(old, SCORED[:1])
    assert e.views == ("saliency",) and e.methods == () and e.decomposition is None
    assert e.scores["saliency"] == e.word_weights
    assert e.headline().startswith("cnn · saliency of the predicted class")
    with pytest.raises(ValueError, match="explain signature"):
        explain(old, SCORED[:1], methods=["gradient_x_input"])
    with pytest.raises(ValueError, match="explain signature"):
        explain(old, SCORED[:1], steps=5)


def test_explanations_are_json_ready_with_every_method():
    explained = explain(FakePredictor("han"), SCORED, progress=False)
    back = json.loads(json.dumps([e.to_dict() for e in explained]))
    first = back[0]
    assert set(first["scores"]) == set(METHODS) == set(first["sentence_scores"])
    assert first["methods"] == list(METHODS)
    assert first["scores"]["ngram"] == explained[0].scores["ngram"]
    assert set(first["decomposition"]) == {"deep", "ngram", "bias", "logit", "baseline"}
    assert first["explained_class"] == 1 and first["completeness_error"] > 0
    assert first["warnings"] == []
    assert first["word_weights"] == explained[0].word_weights  # serving_default's, unchanged


def test_a_truncated_review_aligns_every_method_to_the_tokens_seen():
    text = "One two three. Four five six seven. Eight nine ten eleven twelve."
    positions = np.arange(6, dtype=np.float32)
    result = {
        "probabilities": np.array([[0.3, 0.7]], np.float32),
        "tokens": np.array([["one", "two", "three", "ten", "eleven", "twelve", ""]], object),
        "target": np.array([1]),
        "attention": np.append(positions / positions.sum(), 0)[None],
        "gradient_x_input": np.append(positions, 0)[None],
        "integrated_gradients": np.append(-positions, 0)[None],
    }
    (e,) = explanations_from_result(result, [text], "rnn", "attention")
    assert e.sentences == [["one", "two", "three"], ["ten", "eleven", "twelve"]]
    assert (e.omitted_words, e.gap_before) == (6, 1)
    assert e.scores["gradient_x_input"] == [[0, 1, 2], [3, 4, 5]]
    assert e.scores["integrated_gradients"] == [[0, -1, -2], [-3, -4, -5]]
    assert e.sentence_scores["integrated_gradients"] == [-3, -12]
    assert e.views == ("attention", "gradient_x_input", "integrated_gradients")
    assert e.decomposition is None  # the result had no logit parts
    # display: signed scores keep their sign, relative to the largest |score|
    assert e.display_scores("integrated_gradients") == [[0, -0.2, -0.4], [-0.6, -0.8, -1.0]]
    assert e.sentence_display("integrated_gradients") == [-0.25, -1.0]
    assert e.display_scores("attention") == e.display_weights()


def test_more_classes_explain_the_predicted_one():
    result = {
        "probabilities": np.array([[0.2, 0.1, 0.7]], np.float32),
        "tokens": np.array([["so", "so"]], object),
        "target": np.array([2]),
        "gradient_x_input": np.array([[0.5, -0.25]], np.float32),
        "logit": np.array([1.0]), "logit_deep": np.array([0.75]),
        "logit_ngram": np.array([0.0]), "logit_bias": np.array([0.25]),
    }  # fmt: skip
    (e,) = explanations_from_result(
        result, ["So so"], "cnn", "saliency", class_names=("bad", "fine", "great")
    )
    assert e.explained_label == "great" == e.predicted_label
    assert "gradient × input (logit of great)" in e.headline()
    assert "logit of 'great'" in e.method_note() and e.probability == pytest.approx(0.7)
    assert e.decomposition_line() == "logit of 'great' 1.000 = deep part 0.750 + bias 0.250"


# --- end to end through a real model's explain signature (helper A's, issue 13) ------------


def _real(values, tokens):
    """The values at the real (non-padding) tokens, in order."""
    return [float(v) for v, t in zip(np.ravel(values), np.ravel(tokens), strict=True) if t != ""]


@pytest.mark.parametrize("family", ["cnn", "han"])
def test_every_method_end_to_end_in_memory_and_from_the_saved_model(shared, family):
    texts = TEXTS
    text_model, predictor = shared[family].text_model, shared[family].predictor
    raw = predictor.explain(texts)
    served = predictor(texts)  # serving_default: word_weights stay what it gives
    expected_methods = {"cnn": METHODS[1:], "han": METHODS}[family]  # both have the channel
    # explain(source, texts, batch_size=3, progress=False) of the TextModel and the SavedModel
    for explained in shared[family].explained.values():
        for i, e in enumerate(explained):
            assert e.methods == e.views == expected_methods
            tokens = raw["tokens"][i]
            assert e.tokens == [t for t in np.ravel(tokens) if t != ""]
            for m in e.methods:  # every method aligned to the same tokens, exactly its scores
                assert [len(s) for s in e.scores[m]] == [len(s) for s in e.sentences]
                flat = [v for s in e.scores[m] for v in s]
                np.testing.assert_allclose(flat, _real(raw[m][i], tokens), atol=1e-4)
            np.testing.assert_allclose(
                e.weights, _real(served["word_attention"][i], tokens), atol=1e-5
            )
            d = e.decomposition
            assert d["deep"] + d["ngram"] + d["bias"] == pytest.approx(d["logit"], abs=1e-4)
            assert d["logit"] == pytest.approx(float(raw["logit"][i]), abs=1e-4)
            ngram = sum(map(sum, e.scores["ngram"]))  # the channel's exact share
            assert ngram == pytest.approx(d["ngram"], abs=1e-4)
            assert e.explained_class == e.prediction == int(raw["target"][i])
            assert e.completeness_error == pytest.approx(
                float(raw["ig_completeness_error"][i]), abs=1e-4
            )
            if family == "han" and e.sentences:
                kept = [s for s in range(tokens.shape[0]) if any(t != "" for t in tokens[s])]
                for m in ("gradient_x_input", "integrated_gradients", "ngram"):
                    np.testing.assert_allclose(
                        e.sentence_scores[m], raw[f"sentence_{m}"][i][kept], atol=1e-4
                    )
                np.testing.assert_allclose(
                    e.sentence_scores["attention"], raw["sentence_attention"][i][kept], atol=1e-5
                )
    # the planted cue: "dreadful" argues for the negative prediction it explains
    (e,) = explain(text_model, ["A dreadful film... it was dreadful"], progress=False)
    if e.prediction == 0:
        cue = [
            v for t, v in zip(e.tokens, np.ravel(e.scores["ngram"]), strict=True) if t == "dreadful"
        ]
        assert all(v > 0 for v in cue)
