"""hatt.export.attribution and TextModel.explain: signed scores against NumPy references.

Integrated gradients against exact attributions (a quadratic function, and a CNN
whose weights make it linear along the path), completeness, the n-gram channel's
shares (flat, nested, packed HAN), the logit's decomposition, padding, the sign
of a planted cue word, two and more classes; the total view (the deep part's
integrated gradients + the channel's share) against the logit of the same model
with its word embeddings and channel zeroed, and on a model whose mix gives the
deep part a negative weight (issue 30).
"""

import functools

import keras
import numpy as np
import pytest
import tensorflow as tf
import threadpoolctl

import hatt
from hatt import export
from hatt.data import Vectorizer, pack_sentences
from hatt.export import attribution
from tests._planted import planted_classes, planted_corpus
from tests.inspect._backwards import backwards_cnn

WORDS = "one two three four five six seven eight nine ten superb dreadful"


def numpy_dict(out):
    return {k: np.asarray(v) for k, v in out.items()}


# === The math on plain functions ========================================================


def test_integrated_gradients_of_a_quadratic_is_exact():
    """f(e) = (a · e)²: f(αe) = α² f(e), so IG = ½ e · ∇f(e), and gradient × input = e · ∇f(e)."""
    rng = np.random.default_rng(0)
    embedded = rng.standard_normal((3, 5, 4)).astype("float32")
    a = rng.standard_normal((5, 4)).astype("float32")

    def function(inputs, x):
        (scale,) = inputs
        return scale * tf.reduce_sum(x * a, axis=(1, 2)) ** 2

    scale = np.array([1.0, -2.0, 0.5], "float32")
    found = numpy_dict(attribution.attributions(function, (scale,), embedded, steps=2))
    dot = (embedded * a).sum((1, 2))
    products = scale[:, None] * 2 * dot[:, None] * (embedded * a).sum(-1)  # e · ∇f(e) per token
    np.testing.assert_allclose(found["gradient_x_input"], products, rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(found["integrated_gradients"], products / 2, rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(found["value"], scale * dot**2, rtol=1e-5)
    np.testing.assert_allclose(found["delta"], scale * dot**2, rtol=1e-5)  # f(0) = 0
    error = attribution.completeness_error(found["integrated_gradients"], found["delta"])
    assert np.all(np.asarray(error) < 1e-4)


def test_the_points_run_in_chunks_without_changing_the_result(monkeypatch):
    rng = np.random.default_rng(1)
    embedded = rng.standard_normal((2, 6, 3)).astype("float32")

    def function(inputs, x):
        return tf.reduce_sum(tf.tanh(x) * inputs[0][:, None, None], axis=(1, 2)) + 1.0

    slopes = (np.array([1.0, -1.0], "float32"),)
    whole = numpy_dict(attribution.attributions(function, slopes, embedded, steps=7))
    # 36 values a copy; 9 points: one a pass, two (the last pass half empty), or four
    for budget in (36, 72, 144):
        monkeypatch.setattr(attribution, "CHUNK_ELEMENTS", budget)
        chunked = numpy_dict(attribution.attributions(function, slopes, embedded, steps=7))
        for key, value in whole.items():
            np.testing.assert_allclose(chunked[key], value, atol=1e-6, err_msg=key)
    # the reference: the integral itself, computed densely in NumPy
    alphas = (np.arange(20000) + 0.5) / 20000
    slope = np.array([1.0, -1.0])[:, None, None]
    dense = sum(slope / np.cosh(a * embedded) ** 2 for a in alphas) / len(alphas)
    np.testing.assert_allclose(whole["integrated_gradients"], (dense * embedded).sum(-1), atol=1e-5)
    at_e = slope / np.cosh(embedded) ** 2
    np.testing.assert_allclose(whole["gradient_x_input"], (at_e * embedded).sum(-1), atol=1e-5)
    np.testing.assert_allclose(whole["delta"], (slope * np.tanh(embedded)).sum((1, 2)), atol=1e-5)


def test_quadrature_weights_sum_to_one_and_nodes_lie_inside():
    alphas, weights = attribution.quadrature(5)
    assert alphas.shape == weights.shape == (5,)
    assert np.all((alphas > 0) & (alphas < 1))
    np.testing.assert_allclose(weights.sum(), 1.0, rtol=1e-6)
    # exact for degree 2 * steps - 1
    np.testing.assert_allclose((weights * alphas**9).sum(), 1 / 10, rtol=1e-5)


@pytest.mark.parametrize("steps", [0, -3, 2.5, True, "8"])
def test_bad_steps_are_a_clear_error(steps):
    with pytest.raises(ValueError, match=r"Expected steps to be a positive int\. Received"):
        attribution.check_steps(steps)


def test_class_values_negate_for_class_zero_and_pick_a_unit_above():
    one = np.array([[2.0], [-3.0]], "float32")
    np.testing.assert_array_equal(attribution.class_values(one, np.array([1, 0])), [2.0, 3.0])
    shares = np.arange(12, dtype="float32").reshape(2, 2, 3)  # [batch, T, units]
    np.testing.assert_array_equal(
        attribution.class_values(shares, np.array([2, 0])), [[2.0, 5.0], [6.0, 9.0]]
    )


# === A CNN that is linear along the path: IG is exact, and equals gradient × input =====


def _vectorizer(nested=False, **limits):
    mode = "nested" if nested else "flat"
    limits = limits or ({"max_sentences": 4, "max_words": 6} if nested else {"sequence_length": 12})
    vectorizer = Vectorizer(max_tokens=50, min_count=1, output_mode=mode, **limits)
    return vectorizer.adapt([WORDS])


def _linear_cnn(vectorizer, channel=None):
    """Positive embeddings and kernels, zero conv biases: ReLU is the identity on αe, and
    each filter's maximum stays at one position, so z(αe) = α (z(e) - b) + b."""
    keras.utils.set_random_seed(0)
    model = hatt.models.build(
        "cnn",
        vocabulary_size=vectorizer.vocabulary_size,
        embedding_dim=4,
        kernel_sizes=(2, 3),
        filters=3,
        dropout=0.0,
        ngram=channel,
    )
    rng = np.random.default_rng(2)
    embedding = model.get_layer("embedding")
    embedding.set_weights([rng.uniform(0.1, 1.0, embedding.get_weights()[0].shape)])
    for width in (2, 3):
        conv = model.get_layer(f"conv_{width}")
        kernel, bias = conv.get_weights()
        conv.set_weights([rng.uniform(0.0, 1.0, kernel.shape), np.zeros_like(bias)])
    logit = model.get_layer("logit")
    kernel, bias = logit.get_weights()
    logit.set_weights([rng.standard_normal(kernel.shape), np.array([0.3])])
    if channel:
        wide = model.get_layer("ngram_logit")
        wide.embeddings.assign(rng.standard_normal(wide.embeddings.shape).astype("float32"))
    return model


def _linear_cnn_reference(model, ids):
    """NumPy: each token's exact share of z - b (the winning windows' products), and z."""
    table = model.get_layer("embedding").get_weights()[0]
    w = model.get_layer("logit").get_weights()[0][:, 0]
    length = int((ids != 0).sum())
    e = table[ids[:length]]  # the real tokens; padding is zeroed by the model
    shares, pooled = np.zeros(len(ids)), []
    for width in (2, 3):
        kernel = model.get_layer(f"conv_{width}").get_weights()[0]  # [width, d, filters]
        left = (width - 1) // 2  # Keras' "same" padding
        padded = np.pad(e, ((left, width - 1 - left), (0, 0)))
        windows = np.stack([padded[t : t + width] for t in range(length)])  # [T, width, d]
        outputs = np.einsum("twd,wdf->tf", windows, kernel)
        for f in range(kernel.shape[-1]):
            best = int(outputs[:, f].argmax())
            pooled.append(outputs[best, f])
            for j in range(width):  # token best + j - left supplied row j of the window
                token = best + j - left
                if 0 <= token < length:
                    shares[token] += w[len(pooled) - 1] * kernel[j, :, f] @ e[token]
    return shares, float(np.array(pooled) @ w)


@pytest.mark.parametrize("target", [None, 0, 1])
def test_integrated_gradients_equal_the_exact_attribution_of_a_linear_path(target):
    vectorizer = _vectorizer()
    model = _linear_cnn(vectorizer)
    text_model = export.TextModel(model, vectorizer)
    texts = ["two seven four nine one", "superb ten ten three", "five"]
    out = numpy_dict(text_model.explain(texts, steps=1, target=target))
    ids = np.asarray(vectorizer(texts))
    bias = 0.3
    for row, review in enumerate(ids):
        shares, deep = _linear_cnn_reference(model, review)
        sign = 1.0 if out["target"][row] == 1 else -1.0
        assert target is None or out["target"][row] == target
        np.testing.assert_allclose(out["integrated_gradients"][row], sign * shares, atol=1e-5)
        np.testing.assert_allclose(out["gradient_x_input"][row], sign * shares, atol=1e-5)
        np.testing.assert_allclose(out["ig_delta"][row], sign * deep, rtol=1e-5)
        np.testing.assert_allclose(out["logit_deep"][row], sign * deep, rtol=1e-5)
        np.testing.assert_allclose(out["logit_bias"][row], sign * bias, rtol=1e-6)
    assert np.all(out["ig_completeness_error"] < 1e-4)
    # the logit is the model's: log(p / (1 - p)) for class 1
    p = np.asarray(model(ids)).reshape(-1)
    z = np.log(p) - np.log1p(-p)
    np.testing.assert_allclose(out["logit"], np.where(out["target"] == 1, z, -z), atol=1e-4)
    if target is None:
        np.testing.assert_array_equal(out["target"], (p > 0.5).astype("int32"))


def test_the_total_of_a_linear_path_sums_to_the_logit_minus_the_bias():
    """Zero conv biases: the deep part gives its bias at the zero embedding, so the baseline is
    the bias and the total's words (their exact shares + the channel's) sum to logit - bias."""
    vectorizer = _vectorizer()
    model = _linear_cnn(vectorizer, channel={"buckets": 32, "order": 2})
    text_model = export.TextModel(model, vectorizer)
    texts = ["two seven four nine one", "superb ten ten three", "", "five"]
    out = numpy_dict(text_model.explain(texts, steps=1))
    ids = np.asarray(vectorizer(texts))
    channel = np.asarray(model.get_layer("ngram_logit")(ids))[:, 0]
    for row, review in enumerate(ids):
        sign = 1.0 if out["target"][row] == 1 else -1.0
        shares = _linear_cnn_reference(model, review)[0] if review.any() else 0.0
        np.testing.assert_allclose(out["total"][row], sign * shares + out["ngram"][row], atol=1e-5)
        np.testing.assert_allclose(out["logit_baseline"][row], sign * 0.3, rtol=1e-6)
        np.testing.assert_allclose(out["ngram"][row].sum(), sign * channel[row], atol=1e-5)
    np.testing.assert_allclose(out["total"].sum(-1), out["logit"] - out["logit_bias"], atol=1e-5)
    assert np.all(out["total"][ids == 0] == 0)  # padding
    assert np.all(out["total"][2] == 0) and out["logit"][2] == out["logit_baseline"][2]


def test_two_classes_class_zero_is_the_negation_of_class_one():
    vectorizer = _vectorizer()
    model = _linear_cnn(vectorizer, channel={"buckets": 32, "order": 2})
    text_model = export.TextModel(model, vectorizer)
    texts = ["two seven four nine one", "superb ten ten three", "", "five"]
    one = numpy_dict(text_model.explain(texts, steps=4, target=1))
    zero = numpy_dict(text_model.explain(texts, steps=4, target=0))
    np.testing.assert_array_equal(one["target"], 1)
    np.testing.assert_array_equal(zero["target"], 0)
    for key in (
        "total",
        "gradient_x_input",
        "integrated_gradients",
        "ngram",
        *export.EXPLAIN_TOTALS[:-1],
    ):
        np.testing.assert_allclose(zero[key], -one[key], atol=1e-6, err_msg=key)
    np.testing.assert_allclose(zero["ig_completeness_error"], one["ig_completeness_error"])
    with pytest.raises(ValueError, match=r"Expected target .* Received: target=2"):
        text_model.explain(texts, target=2)
    with pytest.raises(ValueError, match="Expected steps"):
        text_model.explain(texts, steps=0)


# === Every family: the contract of explain ==============================================

CHANNEL = {"buckets": 64, "order": 3, "binary": True}
SMALL = {
    "cnn": {"embedding_dim": 8, "filters": 4, "kernel_sizes": (2, 3)},
    "rnn": {"embedding_dim": 8, "units": 4},
    "transformer": {
        "embedding_dim": 8,
        "num_heads": 2,
        "num_layers": 1,
        "intermediate_dim": 8,
        "sequence_length": 32,
    },
    "han": {"embedding_dim": 8, "word_units": 4, "sentence_units": 4},
}


def _random_model(family, vectorizer, num_classes=2, channel=CHANNEL, **kwargs):
    keras.utils.set_random_seed(1)
    model = hatt.models.build(
        family,
        num_classes=num_classes,
        vocabulary_size=vectorizer.vocabulary_size,
        ngram=channel,
        dropout=0.0,
        **SMALL[family],
        **kwargs,
    )
    if channel:
        wide = model.get_layer("ngram_logit")
        rng = np.random.default_rng(3)
        wide.embeddings.assign(rng.standard_normal(wide.embeddings.shape).astype("float32"))
    return model


def check_explanation(out, tokens, text_model):
    """Keys, shapes, zeros on padding, sums: the contract of TextModel.explain."""
    assert tuple(out) == text_model.explain_keys
    real = tokens != ""
    n = len(tokens)
    for method in text_model.methods:
        values = out[method]
        assert values.shape == tokens.shape and values.dtype == np.float32, method
        assert np.all(np.isfinite(values)) and np.all(values[~real] == 0), method
    for key in export.EXPLAIN_TOTALS:
        assert out[key].shape == (n,) and out[key].dtype == np.float32, key
        assert np.all(np.isfinite(out[key])), key
    assert out["target"].dtype == np.int32
    np.testing.assert_array_equal(out["target"], out["probabilities"].argmax(-1))
    parts = out["logit_deep"] + out["logit_ngram"] + out["logit_bias"]
    np.testing.assert_allclose(parts, out["logit"], atol=1e-5)
    axes = tuple(range(1, tokens.ndim))
    if "ngram" in text_model.methods:
        np.testing.assert_allclose(out["ngram"].sum(axes), out["logit_ngram"], atol=1e-5)
    else:
        assert np.all(out["logit_ngram"] == 0)
    errors = np.abs(out["integrated_gradients"].sum(axes) - out["ig_delta"])
    expected = errors / np.maximum(np.abs(out["ig_delta"]), 1e-6)
    np.testing.assert_allclose(out["ig_completeness_error"], expected, rtol=1e-4, atol=1e-6)
    # the total: integrated gradients + the channel's share; its words sum to the logit
    # minus the baseline, up to integrated gradients' own error
    channel = out["ngram"] if "ngram" in text_model.methods else 0.0
    np.testing.assert_allclose(out["total"], out["integrated_gradients"] + channel, atol=1e-6)
    moved = out["logit"] - out["logit_baseline"]
    np.testing.assert_allclose(np.abs(out["total"].sum(axes) - moved), errors, atol=1e-4)
    if tokens.ndim == 3:
        for method in text_model.methods:
            if method in attribution.SIGNED_METHODS:
                sentence = out[f"sentence_{method}"]
                np.testing.assert_allclose(sentence, out[method].sum(-1), atol=1e-6)


def _zeroed_deep_logits(model, ids):
    """The reference baseline: the model's "logit" layer with every word embedding and the
    channel at zero (a copy of the model: no explanation view involved)."""
    copy = keras.models.clone_model(model)
    copy.set_weights(model.get_weights())
    embedding = next(
        layer for layer in copy.layers if layer.name in ("embedding", "word_embedding")
    )
    embedding.set_weights([np.zeros_like(w) for w in embedding.get_weights()])
    if any(layer.name == "ngram_logit" for layer in copy.layers):
        wide = copy.get_layer("ngram_logit")
        wide.embeddings.assign(np.zeros(wide.embeddings.shape, "float32"))
    logits = keras.Model(copy.inputs, copy.get_layer("logit").output)(ids)
    probabilities = np.asarray(copy(ids))
    return np.asarray(logits), probabilities


# Explained by every family: an empty and a whitespace-only review (rows 1 and 2), one word,
# sentences, a repeated word.
TEXTS = [
    "two seven four. nine one superb!",
    "",
    "   ",
    "ten",
    "ten ten",
    "three. four five six seven",
    "three three three three",
]


@functools.cache
def _explained(family, variant=(), num_classes=2, channel=True, moved=False):
    """A random model of ``family`` (``variant``: build options as ``(key, value)`` pairs;
    ``channel``: with ``CHANNEL``; ``moved``: every weight moved off its start, so that no
    bias is 0), its TextModel and its explanation of ``TEXTS`` at 64 steps.

    Made once a module: tests that ask for the same model read the same explanation (a
    HAN's TextModel, explained eagerly: seconds; its traced explanations are kept with it).
    """
    vectorizer = _vectorizer(nested=family == "han")
    model = _random_model(
        family, vectorizer, num_classes, channel=CHANNEL if channel else None, **dict(variant)
    )
    if moved:
        rng = np.random.default_rng(4)
        for layer in model.layers:
            if layer.name != "ngram_logit":
                moved = [w + 0.2 * rng.standard_normal(w.shape) for w in layer.get_weights()]
                layer.set_weights(moved)
    text_model = export.TextModel(model, vectorizer)
    out = numpy_dict(text_model.explain(TEXTS, steps=64))
    return model, vectorizer, text_model, out


@pytest.mark.parametrize("family", hatt.models.FAMILIES)
@pytest.mark.parametrize(("num_classes", "channel"), [(2, True), (3, True), (2, False)])
def test_the_total_sums_to_the_logit_minus_the_logit_with_no_word_evidence(
    family, num_classes, channel
):
    # biases away from 0: the baseline is not the bias
    model, vectorizer, text_model, out = _explained(family, (), num_classes, channel, moved=True)
    tokens = np.asarray(out["tokens"]).astype(str)
    check_explanation(out, tokens, text_model)
    assert ("ngram" in text_model.methods) == channel
    # the baseline is the model's own logit with no word evidence (every class's)
    logits, _ = _zeroed_deep_logits(model, vectorizer(TEXTS))
    chosen = logits[:, 0] * np.where(out["target"] == 1, 1, -1) if num_classes == 2 else (
        logits[np.arange(len(TEXTS)), out["target"]]
    )  # fmt: skip
    np.testing.assert_allclose(out["logit_baseline"], chosen, atol=1e-4)
    assert np.any(np.abs(out["logit_baseline"] - out["logit_bias"]) > 1e-2)
    # completeness: the words' total is the logit minus that baseline
    axes = tuple(range(1, tokens.ndim))
    moved = out["logit"] - out["logit_baseline"]
    np.testing.assert_allclose(out["total"].sum(axes), moved, atol=0.01 * np.abs(moved).max())
    assert np.all(out["total"][tokens == ""] == 0)
    if family == "han":
        np.testing.assert_allclose(out["sentence_total"], out["total"].sum(-1), atol=1e-6)


def test_an_explanation_without_the_total_gets_it_from_its_parts():
    """A result of an export written before the total view: total, sentence total, baseline."""
    rng = np.random.default_rng(0)
    ig, ngram = rng.standard_normal((2, 3, 2, 4)).astype("float32")
    old = {
        "integrated_gradients": ig,
        "ngram": ngram,
        "sentence_integrated_gradients": ig.sum(-1),
        "sentence_ngram": ngram.sum(-1),
        "logit": np.array([1.0, -2.0, 0.5], "float32"),
        "logit_ngram": ngram.sum((1, 2)),
        "ig_delta": ig.sum((1, 2)) * 1.01,
    }
    new = attribution.with_total(old)
    assert "total" not in old  # not changed in place
    np.testing.assert_allclose(new["total"], ig + ngram)
    np.testing.assert_allclose(new["sentence_total"], (ig + ngram).sum(-1), rtol=1e-6)
    np.testing.assert_allclose(
        new["logit_baseline"], old["logit"] - old["logit_ngram"] - old["ig_delta"]
    )
    without_channel = attribution.with_total({"integrated_gradients": ig})
    np.testing.assert_array_equal(without_channel["total"], ig)
    assert attribution.with_total(new) is new  # already there
    assert attribution.with_total({"attention": ig}) == {"attention": ig}
    assert attribution.with_total_method(("attention", "integrated_gradients", "ngram")) == (
        "attention",
        "total",
        "integrated_gradients",
        "ngram",
    )
    assert attribution.with_total_method(()) == ()


# The CNN preset reads one-hot words (an Embedding of kernel rows + RegionSum): its
# "embedding output" is those rows, so explain it as well as the embedding CNN.
VARIANTS = [pytest.param(family, {}, id=family) for family in hatt.models.FAMILIES]
VARIANTS.append(pytest.param("cnn", {"words": "one_hot"}, id="cnn-one_hot"))


@pytest.mark.parametrize(("family", "variant"), VARIANTS)
@pytest.mark.parametrize("num_classes", [2, 3])
def test_explain_keeps_its_contract_on_every_family(family, variant, num_classes):
    _, _, text_model, out = _explained(family, tuple(variant.items()), num_classes)
    texts = TEXTS
    served = numpy_dict(text_model(texts))  # serving_default's
    tokens = served["tokens"].astype(str)
    np.testing.assert_array_equal(np.asarray(out["tokens"]).astype(str), tokens)
    check_explanation(out, tokens, text_model)
    assert out["probabilities"].shape == (len(texts), num_classes)
    assert ("probability" in out) == (num_classes == 2)
    # the attention is serving_default's, and the prediction too
    np.testing.assert_allclose(out["probabilities"], served["probabilities"], atol=1e-6)
    if text_model.score_kind == "attention":
        np.testing.assert_allclose(out["attention"], served["word_attention"], atol=1e-6)
    # a smooth model at 64 steps: completeness holds
    assert np.all(out["ig_completeness_error"][np.abs(out["ig_delta"]) > 1e-3] < 0.01)
    # an empty and a whitespace-only review: nothing to attribute, finite figures
    assert np.all(out["integrated_gradients"][1:3] == 0) and np.all(out["ngram"][1:3] == 0)
    # The id-level path gives the same (without tokens). It is traced, once a model and steps
    # (a HAN's trace: 20 s); it reads ids the same way whatever the family's encoder or the
    # head, so a flat family at two and three classes and the nested HAN check it.
    if (family, variant) == ("cnn", {}) or (family, num_classes) == ("han", 2):
        by_ids = numpy_dict(text_model.explain_from_ids(text_model.ragged_ids(texts), steps=64))
        assert set(by_ids) == set(out) - {"tokens"}
        for key in by_ids:
            if key != "label":
                np.testing.assert_allclose(by_ids[key], out[key], atol=1e-5, err_msg=key)
        empty = numpy_dict(text_model.explain_from_ids(text_model.ragged_ids([]), steps=64))
        assert all(v.shape[0] == 0 for v in empty.values())


def test_explain_runs_traced_with_unknown_shapes():
    _, _, text_model, eager = _explained("han")  # at 64 steps, explain's default
    spec = [tf.TensorSpec([None], tf.string)]
    traced = tf.function(text_model.explain, input_signature=spec, autograph=False)  # as exported
    for key, value in numpy_dict(traced(tf.constant(TEXTS))).items():
        if value.dtype.kind == "f":
            np.testing.assert_allclose(value, eager[key], atol=1e-5, err_msg=key)
    assert numpy_dict(traced(tf.zeros([0], tf.string)))["logit"].shape == (0,)


@pytest.mark.parametrize("reduction", ["sum", "mean", "sqrt"])
@pytest.mark.parametrize("binary", [False, True])
def test_ngram_shares_sum_to_the_channel_of_flat_and_packed_models(reduction, binary):
    channel = {"buckets": 64, "order": 3, "reduction": reduction, "binary": binary}
    texts = ["two seven two seven. nine one superb two seven!", "ten", "", "five five. five"]
    # flat: the CNN's channel on its own ids
    flat_vectorizer = _vectorizer()
    cnn = _random_model("cnn", flat_vectorizer, channel=channel)
    out = numpy_dict(export.TextModel(cnn, flat_vectorizer).explain(texts, steps=2))
    channel_logit = np.asarray(cnn.get_layer("ngram_logit")(flat_vectorizer(texts)))[:, 0]
    sign = np.where(out["target"] == 1, 1.0, -1.0)  # the explained class's share
    np.testing.assert_allclose(out["ngram"].sum(-1), sign * channel_logit, atol=1e-5)
    np.testing.assert_allclose(out["logit_ngram"], sign * channel_logit, atol=1e-6)
    # nested: a packed HAN, explained through its dense twin, against its packed channel
    vectorizer = _vectorizer(nested=True)
    packed = _random_model("han", vectorizer, channel=channel, packed_groups=2)
    text_model = export.TextModel(packed, vectorizer)
    out = numpy_dict(text_model.explain(texts, steps=2))
    inputs = pack_sentences(vectorizer.ragged_ids(texts), (3, 6))
    packed_logit = np.asarray(packed.get_layer("ngram_logit")(hatt.models.head.channel_ids(inputs)))
    sign = np.where(out["target"] == 1, 1.0, -1.0)
    assert len(set(np.abs(packed_logit[:, 0]).round(4))) == len(texts)  # the reviews differ
    np.testing.assert_allclose(out["ngram"].sum((1, 2)), sign * packed_logit[:, 0], atol=1e-5)
    np.testing.assert_allclose(out["sentence_ngram"].sum(-1), out["logit_ngram"], atol=1e-5)
    tokens = np.asarray(out["tokens"]).astype(str)
    check_explanation(out, tokens, text_model)


def test_more_classes_explain_each_class_with_its_own_logit():
    texts, names = planted_classes(6, 0, words=(3, 8))
    vectorizer = Vectorizer(max_tokens=60, min_count=1, sequence_length=16).adapt(texts)
    model = _random_model("rnn", vectorizer, num_classes=3)
    text_model = export.TextModel(model, vectorizer)
    logits = None
    for target in range(3):
        out = numpy_dict(text_model.explain(texts, steps=32, target=target))
        np.testing.assert_array_equal(out["target"], target)
        check_explanation_sums = out["logit_deep"] + out["logit_ngram"] + out["logit_bias"]
        np.testing.assert_allclose(check_explanation_sums, out["logit"], atol=1e-5)
        np.testing.assert_allclose(out["ngram"].sum(-1), out["logit_ngram"], atol=1e-5)
        assert np.all(out["ig_completeness_error"][np.abs(out["ig_delta"]) > 1e-3] < 0.01)
        logits = (
            out["logit"][:, None] if logits is None else np.hstack([logits, out["logit"][:, None]])
        )
    # softmax of the three explained logits is the model's prediction
    probabilities = np.exp(logits) / np.exp(logits).sum(-1, keepdims=True)
    np.testing.assert_allclose(probabilities, out["probabilities"], atol=1e-5)


# === A trained model: the planted cue word argues for its class =========================


@pytest.mark.slow
@pytest.mark.parametrize(
    "family,methods",
    [
        ("cnn", attribution.SIGNED_METHODS),
        ("rnn", attribution.SIGNED_METHODS),
        # Saturated: gradient x input (a local slope) has the cue's sign wrong on some
        # reviews; integrated gradients (the whole path) gives it the largest share.
        ("transformer", ("integrated_gradients",)),
        # The tiny HAN's deep part gives nearly its whole logit from zero embeddings
        # already (IG's baseline): its words move it little either way. Its channel's
        # shares still must flip.
        ("han", ("ngram",)),
    ],
)
def test_signed_scores_flip_with_the_planted_cue_word(tiny, family, methods):
    """The cue "superb" argues for class 1, "dreadful" against; as predicted, both argue for."""
    text_model = export.TextModel(tiny[family].model, tiny[family].vectorizer)
    methods = [m for m in methods if m in text_model.methods]
    assert methods
    base, _ = planted_corpus(6, 7, words=(6, 12), sentences=2, cues=("superb",))
    swapped = [text.replace("superb", "dreadful").replace("Superb", "Dreadful") for text in base]
    # both sets in one batch (rows are explained independently): two calls, not four
    as_class_one = numpy_dict(text_model.explain(base + swapped, target=1))
    predicted = numpy_dict(text_model.explain(base + swapped))
    n = len(base)
    for rows, cue, sign in ((slice(0, n), "superb", 1.0), (slice(n, None), "dreadful", -1.0)):
        np.testing.assert_array_equal(predicted["target"][rows], 1 if sign > 0 else 0)
        tokens = np.asarray(predicted["tokens"][rows]).astype(str)
        at_cue = tokens == cue
        assert at_cue.reshape(n, -1).sum(-1).tolist() == [1] * n
        for method in methods:
            # towards class 1 for "superb", against it for "dreadful"
            assert np.all(sign * as_class_one[method][rows][at_cue] > 0), (method, cue)
            # explained as predicted: the cue argues for the prediction, the most of any word
            assert np.all(predicted[method][rows][at_cue] > 0), (method, cue)
            scores = predicted[method][rows].reshape(n, -1)
            np.testing.assert_array_equal(
                scores.argmax(-1), at_cue.reshape(n, -1).argmax(-1), err_msg=method
            )


# === A deep part with a negative mix weight: its scores point backwards, the total not ===


def test_the_total_does_not_point_backwards_when_the_deep_part_weighs_negatively(tiny, tiny_corpus):
    """The issue's case: the deep part, weighted -0.05, colours "superb" against 'positive';
    the model predicts 'positive' through its channel, and the total says why."""
    model, vectorizer = backwards_cnn(tiny["cnn"].run_dir, tiny_corpus)
    text_model = export.TextModel(model, vectorizer)
    texts, _ = planted_corpus(6, 7, words=(6, 12), sentences=2, cues=("superb",))
    out = numpy_dict(text_model.explain(texts))
    np.testing.assert_array_equal(out["target"], 1)  # predicted positive
    at_cue = np.asarray(out["tokens"]).astype(str) == "superb"
    assert at_cue.sum() == len(texts)
    assert np.all(out["integrated_gradients"][at_cue] < 0)  # backwards: the deep part's view
    assert np.all(out["gradient_x_input"][at_cue] < 0)
    assert np.all(out["ngram"][at_cue] > 0)
    assert np.all(out["total"][at_cue] > 0)  # the whole prediction: towards 'positive'
    # the cue argues the most of any word in the total
    np.testing.assert_array_equal(out["total"].argmax(-1), at_cue.argmax(-1))
    moved = out["logit"] - out["logit_baseline"]
    np.testing.assert_allclose(out["total"].sum(-1), moved, rtol=0.05)


def test_steps_past_the_cap_are_refused_before_any_memory_is_taken():
    """Issue 33, item 11: 100,000 steps asked NumPy for 74.5 GiB of nodes; now a clear error."""
    with pytest.raises(ValueError, match=r"steps <= 1024.*Received: steps=100000"):
        attribution.check_steps(100000)
    assert attribution.check_steps(attribution.MAX_STEPS) == attribution.MAX_STEPS
    # NumPy's eigenvalue solver on one thread: 0.4 s; on BLAS threads beside pytest-xdist's
    # other worker on two cores, 8 to 13 s
    with threadpoolctl.threadpool_limits(limits=1):
        alphas, weights = attribution.quadrature(attribution.MAX_STEPS)
    assert len(alphas) == attribution.MAX_STEPS and abs(weights.sum() - 1.0) < 1e-5
