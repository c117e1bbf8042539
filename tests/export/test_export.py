"""hatt.export: the SavedModel contract (checked in a process without hatt or Keras), the
end-to-end .keras file, the loader's forms, the packed HAN's dense twin, saliency
(versions, metadata, damaged files and refusals: test_versions.py)."""

import json

import keras
import numpy as np
import pytest
import tensorflow as tf

import hatt
from hatt import export
from hatt.data import Vectorizer, load_imdb, pack_sentences
from tests._fresh_process import run_json_script
from tests._planted import write_planted_imdb
from tests._scripts import load_experiment
from tests.conftest import FAMILIES
from tests.export._loaded import saved_model

LONG_REVIEW = " ".join(f"w{i % 40}" for i in range(50_000)) + " superb"
BAD_INPUTS = [
    "",
    "   ",
    LONG_REVIEW,
    "😀🎬👍🏽❤️",
    "no punctuation at all just words superb w1 w2 w3 w4 w5 w6 w7 w8 w9 w10 w11 w12 w13",
    "!!! ... ???",
    "<br /><br />",
]

# One fresh process for every check that needs one. First with `keras` and `hatt`
# unimportable (TensorFlow then treats Keras as absent): each SavedModel loaded once, its
# `serving_default` and `predict` signatures, then `explain`. Then `import hatt` alone and
# Keras' own loader on saved_models/NAME/model.keras (argv[4]: `{family: path}`).
SAVED_MODEL_SCRIPT = r"""
import json, sys
BLOCKED = ("keras", "hatt", "tf_keras")
for name in BLOCKED:
    sys.modules[name] = None
import numpy as np
import tensorflow as tf

paths, texts = json.loads(sys.argv[1]), json.loads(open(sys.argv[2], encoding="utf-8").read())
out = sys.argv[3]

def arrays(outputs, prefix=""):
    found = {}
    for key, value in outputs.items():
        value = value.numpy()
        if value.dtype == object:
            value = np.array([b.decode("utf-8") for b in value.reshape(-1)], dtype=str).reshape(value.shape)
        found[prefix + key] = value
    return found

def specs(structure):
    return {k: [v.dtype.name, v.shape.as_list()] for k, v in structure.items()}

report = {"serve": {}, "explain": {}}
for family, path in paths.items():
    loaded = tf.saved_model.load(path)
    serve = loaded.signatures["serving_default"]
    saved = arrays(serve(text=tf.constant(texts["batch"])))
    predict = loaded.signatures["predict"]  # the fast path: the prediction only
    saved.update(arrays(predict(text=tf.constant(texts["batch"])), "predict/"))
    for i, text in enumerate(texts["bad"]):
        saved.update(arrays(serve(text=tf.constant([text])), f"single{i}/"))
    np.savez(out + f"/serve-{family}.npz", **saved)
    empty = serve(text=tf.zeros([0], tf.string))
    report["serve"][family] = {
        "empty": {k: v.shape.as_list() for k, v in empty.items()},
        "inputs": specs(serve.structured_input_signature[1]),
        "outputs": specs(serve.structured_outputs),
        "predict": specs(predict.structured_outputs),
    }

    explain = loaded.signatures["explain"]
    saved = {}
    for prefix, batch in (("", texts["explain"]), ("empty/", [""]), ("blank/", ["   \t "])):
        saved.update(arrays(explain(text=tf.constant(batch)), prefix))
    np.savez(out + f"/explain-{family}.npz", **saved)
    report["explain"][family] = {
        "inputs": specs(explain.structured_input_signature[1]),
        "outputs": specs(explain.structured_outputs),
        "empty_batch": {k: v.shape.as_list() for k, v in explain(text=tf.zeros([0], tf.string)).items()},
    }
report["modules"] = sorted(
    {m.split(".")[0] for m, module in sys.modules.items() if module is not None} & set(BLOCKED)
)

for name in BLOCKED:  # now `import hatt` alone, then Keras' own loader
    del sys.modules[name]
import hatt, keras

report["keras"] = {}
for family, path in json.loads(sys.argv[4]).items():
    model = keras.saving.load_model(path)
    outputs = model(texts["keras"])
    np.savez(out + f"/keras-{family}.npz", probability=outputs["probability"].numpy(),
             word_attention=outputs["word_attention"].numpy())
    report["keras"][family] = [type(model).__name__, model.family, model.score_kind]
print(json.dumps(report))
"""


def _texts(tiny_corpus):
    return {"batch": list(tiny_corpus.test.texts) + BAD_INPUTS, "bad": BAD_INPUTS}


def _in_memory(tiny, texts):
    """Probabilities and ids of the trained id model, fed the way training fed it."""
    assert hatt.models.is_packed(tiny.model) == (tiny.family == "han")  # the HAN as trained
    probability = np.asarray(tiny.model(tiny.inputs(texts), training=False)).reshape(-1)
    return probability, tiny.vectorizer(texts).numpy(), tiny.vectorizer


def _check_weights(tokens, weights):
    """0 on padding; sums to 1 over the real tokens of each row; all 0 for an empty row."""
    real = tokens != ""
    assert weights.shape == tokens.shape and weights.dtype == np.float32
    assert np.all(np.isfinite(weights)) and np.all(weights >= 0)
    assert np.all(weights[~real] == 0)
    sums = weights.sum(-1)
    has = real.any(-1)
    np.testing.assert_allclose(sums[has], 1.0, atol=1e-5)
    assert np.all(sums[~has] == 0)


def _check_prediction(out):
    """``probabilities`` sum to 1; ``probability`` is class 1's; ``label`` names the argmax."""
    probabilities, count = out["probabilities"], len(out["label"])
    assert probabilities.shape == (count, 2) and probabilities.dtype == np.float32
    assert np.all(np.isfinite(probabilities))
    np.testing.assert_allclose(probabilities.sum(-1), 1.0, atol=1e-6)
    np.testing.assert_array_equal(probabilities[:, 1], out["probability"])
    names = np.array(export.BINARY_CLASS_NAMES)[probabilities.argmax(-1)]
    np.testing.assert_array_equal(np.asarray(out["label"]).astype(str), names)


def _check_contract(family, out, reference_ids, vectorizer):
    nested = family == "han"
    keys = {"probabilities", "label", "probability", "tokens", "word_attention"} | (
        {"sentence_attention"} if nested else set()
    )
    assert set(out) == keys
    tokens = out["tokens"]
    assert tokens.ndim == (3 if nested else 2) and out["probability"].shape == (len(tokens),)
    assert out["probability"].dtype == np.float32 and np.all(np.isfinite(out["probability"]))
    _check_prediction(out)
    # the tokens are exactly the words behind the ids the model saw ("" = id 0)
    index = {w: i for i, w in enumerate(vectorizer.get_vocabulary())}
    ids = np.vectorize(lambda t: index.get(t, 1) if t else 0, otypes=[np.int32])(tokens)
    np.testing.assert_array_equal(ids, reference_ids)
    _check_weights(tokens, out["word_attention"])
    if nested:
        sentences = (tokens != "").any(-1)
        _check_weights(np.where(sentences, "s", ""), out["sentence_attention"])


# The .keras files reloaded in the fresh process: the CNN (saliency through a gradient) and
# the HAN (dense twin of the packed model); the other families' load in-process below.
KERAS_FAMILIES = ("cnn", "han")


@pytest.fixture(scope="module")
def served(exported, tiny_corpus, tmp_path_factory):
    """The four SavedModels' signatures on the tests' texts, run in one fresh process while
    it cannot import hatt or Keras, then (``import hatt`` alone) the :data:`KERAS_FAMILIES`'
    ``model.keras`` files in the same process: ``(texts, report, folder)``, the arrays as
    ``folder/serve-FAMILY.npz``, ``folder/explain-FAMILY.npz`` and ``folder/keras-FAMILY.npz``."""
    folder = tmp_path_factory.mktemp("served")
    texts = {
        **_texts(tiny_corpus),
        "explain": list(tiny_corpus.test.texts)[:8] + ["", "   ", "superb"],
        "keras": list(tiny_corpus.test.texts) + BAD_INPUTS[:2] + BAD_INPUTS[3:],
    }
    (folder / "texts.json").write_text(json.dumps(texts), encoding="utf-8")
    paths = {f: str(exported[f].saved_model) for f in FAMILIES}
    keras_files = {f: str(exported[f].keras_file) for f in KERAS_FAMILIES}
    report = run_json_script(
        SAVED_MODEL_SCRIPT,
        json.dumps(paths),
        str(folder / "texts.json"),
        str(folder),
        json.dumps(keras_files),
    )
    return texts, report, folder


def test_saved_models_serve_raw_text_without_hatt_or_keras(served, tiny, tiny_corpus):
    texts, report, folder = served
    assert report["modules"] == []  # neither hatt nor keras was imported
    for family in FAMILIES:
        signature = report["serve"][family]
        assert signature["inputs"] == {"text": ["string", [None]]}
        rank = 3 if family == "han" else 2
        prediction = {
            "probabilities": ["float32", [None, 2]],
            "label": ["string", [None]],
            "probability": ["float32", [None]],
        }
        assert signature["predict"] == prediction
        expected = {
            **prediction,
            "tokens": ["string", [None] * rank],
            "word_attention": ["float32", [None] * rank],
        }
        if family == "han":
            expected["sentence_attention"] = ["float32", [None, None]]
        assert signature["outputs"] == expected
        assert signature["empty"]["probability"] == [0]  # an empty batch is no error
        assert all(shape[0] == 0 for shape in signature["empty"].values())

        saved = dict(np.load(folder / f"serve-{family}.npz"))
        batch = {k: v for k, v in saved.items() if "/" not in k}
        fast = {k.split("/", 1)[1]: v for k, v in saved.items() if k.startswith("predict/")}
        assert set(fast) == set(prediction)  # the same prediction, without the scores
        for key in ("probabilities", "probability"):
            np.testing.assert_allclose(fast[key], batch[key], atol=1e-6, rtol=0)
        np.testing.assert_array_equal(fast["label"], batch["label"])
        probability, ids, vectorizer = _in_memory(tiny[family], texts["batch"])
        np.testing.assert_allclose(batch["probability"], probability, atol=1e-5, rtol=0)
        _check_contract(family, batch, ids, vectorizer)

        # the in-process TextModel is the same function as the SavedModel
        local = export.Predictor.from_text_model(export.TextModel(tiny[family].model, vectorizer))(
            texts["batch"]
        )
        np.testing.assert_array_equal(local["tokens"].astype(str), batch["tokens"])
        np.testing.assert_array_equal(local["label"].astype(str), batch["label"])
        for key in batch:
            if key not in ("tokens", "label"):
                np.testing.assert_allclose(local[key], batch[key], atol=1e-5, rtol=0)

        # flat models keep the first and the last halves of a long review (head_tail)
        if family != "han":
            row = batch["tokens"][len(tiny_corpus.test.texts) + BAD_INPUTS.index(LONG_REVIEW)]
            words = LONG_REVIEW.split()
            half = vectorizer.sequence_length // 2
            assert list(row) == words[:half] + words[-half:]

        # every bad input alone: finite, and no token means no weight
        for i, text in enumerate(BAD_INPUTS):
            single = {
                k.split("/", 1)[1]: v for k, v in saved.items() if k.startswith(f"single{i}/")
            }
            _check_contract(family, single, vectorizer([text]).numpy(), vectorizer)
            if not text.strip() or text.strip(" !.?") == "" or text == "<br /><br />":
                assert np.all(single["tokens"] == "") and np.all(single["word_attention"] == 0)


SIGNED = ("total", "gradient_x_input", "integrated_gradients", "ngram")
METHODS = {  # the fixtures': the CNN pools by max, the CNN and the HAN have the channel
    "cnn": ["total", "gradient_x_input", "integrated_gradients", "ngram"],
    "rnn": ["attention", "total", "gradient_x_input", "integrated_gradients"],
    "transformer": ["attention", "total", "gradient_x_input", "integrated_gradients"],
    "han": ["attention", "total", "gradient_x_input", "integrated_gradients", "ngram"],
}
TOTALS = (
    "logit",
    "logit_deep",
    "logit_ngram",
    "logit_bias",
    "logit_baseline",
    "ig_delta",
    "ig_completeness_error",
)


def _check_explain_contract(family, out, methods):
    """Shapes, dtypes, zeros on padding and the sums of the ``explain`` signature."""
    tokens = out["tokens"]
    n, real, han = len(tokens), tokens != "", family == "han"
    assert tokens.ndim == (3 if han else 2)
    assert out["target"].dtype == np.int32 and out["target"].shape == (n,)
    np.testing.assert_array_equal(out["target"], out["probabilities"].argmax(-1))
    for method in methods:
        values = out[method]
        assert values.shape == tokens.shape and values.dtype == np.float32, method
        assert np.all(np.isfinite(values)) and np.all(values[~real] == 0), method
    for key in TOTALS:
        assert out[key].shape == (n,) and out[key].dtype == np.float32, key
        assert np.all(np.isfinite(out[key])), key
    parts = out["logit_deep"] + out["logit_ngram"] + out["logit_bias"]
    np.testing.assert_allclose(parts, out["logit"], atol=1e-5)
    # the logit is the model's (its sigmoid is class 1's probability), negated for class 0
    z = np.where(out["target"] == 1, out["logit"], -out["logit"]).astype(np.float64)
    np.testing.assert_allclose(1 / (1 + np.exp(-z)), out["probability"], atol=1e-6)
    axes = tuple(range(1, tokens.ndim))
    if "ngram" in methods:
        np.testing.assert_allclose(out["ngram"].sum(axes), out["logit_ngram"], atol=1e-5)
    else:
        assert np.all(out["logit_ngram"] == 0)
    # the total: the deep part's integrated gradients + the channel's share, whose words sum
    # to the logit minus the baseline as closely as integrated gradients sum to theirs
    channel = out["ngram"] if "ngram" in methods else 0.0
    np.testing.assert_allclose(out["total"], out["integrated_gradients"] + channel, atol=1e-5)
    ig_error = np.abs(out["integrated_gradients"].sum(axes) - out["ig_delta"])
    moved = out["logit"] - out["logit_baseline"]
    np.testing.assert_allclose(np.abs(out["total"].sum(axes) - moved), ig_error, atol=1e-4)
    if "attention" in methods:
        _check_weights(tokens, out["attention"])
    if han:
        for method in set(methods) & set(SIGNED):
            np.testing.assert_allclose(
                out[f"sentence_{method}"], out[method].sum(-1), atol=1e-5, err_msg=method
            )


def test_explain_signature_serves_every_method_without_hatt_or_keras(served, exported, tiny):
    texts, report, folder = served
    assert report["modules"] == []  # neither hatt nor keras was imported
    for family in FAMILIES:
        facts = json.loads((exported[family].path / export.EXPORT_FILE).read_text())
        methods = facts["methods"]
        assert methods == METHODS[family]
        signature = report["explain"][family]
        assert signature["inputs"] == {"text": ["string", [None]]}
        assert sorted(signature["outputs"]) == sorted(facts["signatures"]["explain"])
        rank = 3 if family == "han" else 2
        assert signature["outputs"]["tokens"] == ["string", [None] * rank]
        assert signature["outputs"]["target"] == ["int32", [None]]
        for method in methods:
            assert signature["outputs"][method] == ["float32", [None] * rank]
        for key in TOTALS:
            assert signature["outputs"][key] == ["float32", [None]]
        assert all(shape[0] == 0 for shape in signature["empty_batch"].values())

        saved = dict(np.load(folder / f"explain-{family}.npz"))
        batch = {k: v for k, v in saved.items() if "/" not in k}
        _check_explain_contract(family, batch, methods)
        for prefix in ("empty/", "blank/"):  # no token: finite, nothing attributed
            single = {k.split("/", 1)[1]: v for k, v in saved.items() if k.startswith(prefix)}
            _check_explain_contract(family, single, methods)
            assert np.all(single["tokens"] == "")
            for method in set(methods) & set(SIGNED):
                assert np.all(single[method] == 0)
        # the SavedModel's Predictor and the Keras one give the same arrays
        for predictor in (saved_model(exported[family].path), export.load(tiny[family].run_dir)):
            assert predictor.methods == tuple(methods)
            local = predictor.explain(texts["explain"], batch_size=4)
            assert set(local) == set(batch)
            np.testing.assert_array_equal(local["tokens"].astype(str), batch["tokens"])
            np.testing.assert_array_equal(local["label"].astype(str), batch["label"])
            for key in set(batch) - {"tokens", "label"}:
                np.testing.assert_allclose(local[key], batch[key], atol=1e-4, err_msg=key)


def test_keras_file_is_the_same_model_after_import_hatt_alone(served, exported):
    texts, report, folder = served  # the .keras files reloaded in the served process
    assert set(report["keras"]) == set(KERAS_FAMILIES)
    for family in KERAS_FAMILIES:
        kind = "saliency" if family == "cnn" else "attention"
        assert report["keras"][family] == ["TextModel", family, kind]
        from_keras = np.load(folder / f"keras-{family}.npz")
        served_out = saved_model(exported[family].path)(texts["keras"])
        assert served_out.keys() >= {"probability", "word_attention"}
        for key in ("probability", "word_attention"):
            np.testing.assert_allclose(from_keras[key], served_out[key], atol=1e-5, rtol=0)


def test_load_accepts_every_form_and_batches_consistently(exported, tiny, tiny_corpus):
    texts = list(tiny_corpus.test.texts) + ["", "🎬", b"\xff\xfe invalid bytes superb"]
    result = exported["han"]
    latest = saved_model(result.path)  # export.load(result.path), shared with the tests above
    assert (latest.kind, latest.version, latest.family) == ("saved_model", 1, "han")
    whole = latest(texts)
    # (result.keras_file is loaded in a fresh process above and by hatt predict)
    for form in (result.saved_model, tiny["han"].run_dir):
        predictor = export.load(form)
        assert (predictor.family, predictor.score_kind) == ("han", "attention")
        np.testing.assert_allclose(
            predictor.predict_proba(texts, batch_size=8), whole["probability"], atol=1e-5
        )
    # batches of 4 are padded to a common width: the same arrays as one call
    batched = latest(texts, batch_size=4)
    assert set(batched) == set(whole)
    np.testing.assert_array_equal(batched["tokens"], whole["tokens"])
    for key in ("probability", "word_attention", "sentence_attention"):
        np.testing.assert_allclose(batched[key], whole[key], atol=1e-5)
    empty = latest([])
    assert empty["probability"].shape == (0,) and empty["tokens"].shape[0] == 0
    with pytest.raises(ValueError, match="not a single string"):
        latest("one review")
    with pytest.raises(ValueError, match="batch_size"):
        latest.predict_proba(texts, batch_size=0)


def test_the_saved_model_stores_each_weight_once(exported, tiny):
    """Not twice, as a tracked Keras model would (keras-team/keras#23553), and no optimizer."""
    for family in FAMILIES:
        # the export's model.keras leaves the run's optimizer state behind
        saved = keras.saving.load_model(exported[family].path / "model.keras")
        assert getattr(saved.classifier, "optimizer", None) is None
        checkpoint = exported[family].saved_model / "variables" / "variables"
        stored = sum(
            int(np.prod(shape))
            for name, shape in tf.train.list_variables(str(checkpoint))
            if name != "_CHECKPOINTABLE_OBJECT_GRAPH"
        )
        model = keras.saving.load_model(tiny[family].run_dir / "model.keras")
        assert stored == model.count_params(), family


def test_each_endpoint_is_traced_once_when_saved(tiny, tmp_path):
    """ExportArchive lists variables by tracing; the save must reuse that trace, not redo it."""
    text_model = export.load_run(tiny["cnn"].run_dir)
    calls = {"classify": 0, "explain": 0}
    for name in calls:
        method = getattr(text_model, name)

        def counted(text, _method=method, _name=name):
            calls[_name] += 1  # once per trace: a traced function runs its Python once
            return _method(text)

        setattr(text_model, name, counted)
    export.save_saved_model(text_model, tmp_path / "saved")
    assert calls == {"classify": 1, "explain": 1}
    loaded = tf.saved_model.load(str(tmp_path / "saved"))
    texts = tf.constant(["superb w1 w2. bad w3", ""])
    served = loaded.signatures["predict"](text=texts)["probability"].numpy()
    np.testing.assert_allclose(served, text_model.classify(texts)["probability"], atol=1e-6)


def _nested_vectorizer():
    vectorizer = Vectorizer(
        max_tokens=50, min_count=1, output_mode="nested", max_sentences=4, max_words=6
    )
    return vectorizer.adapt(["a good film. a bad film! great acting, dull plot and story?"])


def _randomise_ngram_channel(model):
    """The channel starts at zeros; give it weights that change the result."""
    layer = model.get_layer("ngram_logit")
    rng = np.random.default_rng(0)
    layer.set_weights([rng.normal(size=w.shape).astype("float32") for w in layer.get_weights()])


@pytest.mark.parametrize(
    "channel",
    [None, {"buckets": 16}, {"buckets": 16, "order": 3, "binary": True, "reduction": "sum"}],
)
def test_dense_twin_of_a_packed_han_gives_the_same_outputs(channel):
    keras.utils.set_random_seed(3)
    vectorizer = _nested_vectorizer()
    ngram_buckets = bool(channel)
    packed = hatt.models.build(
        "han",
        vocabulary_size=vectorizer.vocabulary_size,
        embedding_dim=8,
        word_units=4,
        sentence_units=4,
        attention_units=6,
        attention_score="additive",
        packed_groups=2,
        ngram=channel,
    )
    if ngram_buckets:
        _randomise_ngram_channel(packed)
    twin = hatt.models.dense_twin(packed)
    assert not isinstance(twin.input, dict) and hatt.models.dense_twin(twin) is twin
    if ngram_buckets:  # the twin's channel is the packed one's, setting for setting
        assert (
            twin.get_layer("ngram_logit").get_config()
            == packed.get_layer("ngram_logit").get_config()
        )
    texts = ["A good film. A bad, dull plot!", "great", "", "acting story film good bad a."]
    packed_out = hatt.models.attention_model(packed)(
        pack_sentences(vectorizer.ragged_ids(texts), (2, 6))
    )
    dense_out = hatt.models.attention_model(twin)(vectorizer(texts))
    for key in ("probability", "sentence_attention"):
        np.testing.assert_allclose(dense_out[key], packed_out[key], atol=1e-6)
    words = np.asarray(dense_out["word_attention"])
    np.testing.assert_allclose(
        words, np.asarray(packed_out["word_attention"])[..., : words.shape[-1]], atol=1e-6
    )


@pytest.mark.parametrize("ngram_buckets", [0, 16])
def test_cnn_saliency_is_normalised_gradient_times_input(ngram_buckets):
    channel = {"buckets": ngram_buckets} if ngram_buckets else None
    keras.utils.set_random_seed(5)
    vectorizer = Vectorizer(max_tokens=50, min_count=1, sequence_length=12)
    vectorizer.adapt(["one two three four five six seven eight nine ten"])
    model = hatt.models.build(
        "cnn",
        vocabulary_size=vectorizer.vocabulary_size,
        embedding_dim=16,
        filters=8,
        dropout=0.0,
        ngram=channel,
    )
    if ngram_buckets:  # its logit is added to the deep one; only the deep one depends on e
        _randomise_ngram_channel(model)
    text_model = export.TextModel(model, vectorizer)
    assert (text_model.family, text_model.score_kind) == ("cnn", "saliency")
    pooled = hatt.models.build(
        "cnn", vocabulary_size=vectorizer.vocabulary_size, pooling="attention"
    )
    assert export.TextModel(pooled, vectorizer).score_kind == "attention"
    text = "two seven four nine one"
    saliency = np.asarray(text_model([text, ""])["word_attention"])
    assert np.all(saliency[1] == 0)

    # Reference: d logit / d eps when one token's embedding is scaled by (1 + eps)
    # equals sum_d g * e for that token (central differences, float64 logits).
    embedding = model.get_layer("embedding")
    table = embedding.get_weights()[0]
    ids = vectorizer([text])

    def logit(scaled_id, eps):
        weights = table.copy()
        weights[scaled_id] *= 1 + eps
        embedding.set_weights([weights])
        p = float(np.asarray(model(ids, training=False))[0, 0])
        return np.log(p) - np.log1p(-p)

    eps = 1e-2
    products = np.array([(logit(i, eps) - logit(i, -eps)) / (2 * eps) for i in np.asarray(ids)[0]])
    embedding.set_weights([table])
    reference = np.abs(products) / np.abs(products).sum()
    np.testing.assert_allclose(saliency[0, : len(reference)], reference, atol=2e-3)


def test_text_model_checks_its_inputs():
    vectorizer = _nested_vectorizer()
    model = hatt.models.build("rnn", vocabulary_size=vectorizer.vocabulary_size, units=4)
    with pytest.raises(ValueError, match="output_mode='flat'"):
        export.TextModel(model, vectorizer)
    with pytest.raises(ValueError, match="hatt.data.Vectorizer"):
        export.TextModel(model, "vocabulary.txt")
    flat = Vectorizer(max_tokens=50, min_count=1).adapt(["a b c"])
    text_model = export.TextModel(model, flat)
    with pytest.raises(ValueError, match="not a single string"):
        text_model("a b c")
    assert tf.is_tensor(text_model(["a b c"])["probability"])


def test_evaluate_exports_scores_the_newest_saved_models_on_raw_test_text(
    tmp_path, exported, monkeypatch
):
    """experiments/evaluate_exports.py: TensorFlow alone, the aclImdb test folder, a JSON file."""
    module = load_experiment("evaluate_exports")
    read = []  # what its child process read, kept for the checks (not a third process)

    def read_test_split(data, limit, _read=module.read_test_split):
        read.append(_read(data, limit))
        return read[-1]

    monkeypatch.setattr(module, "read_test_split", read_test_split)
    root = write_planted_imdb(tmp_path, n_train=8, n_test=16)
    saved_models = [exported[family] for family in FAMILIES][0].path.parent  # all four
    rows = module.main(
        ["--data", str(root), "--saved-models", str(saved_models), "--results", str(tmp_path)]
    )
    assert json.loads((tmp_path / "exports_on_test.json").read_text()) == rows
    texts, labels = read[0]
    assert len(texts) == 16
    for row in rows:
        served = saved_model(exported[row["family"]].path)(texts)["probability"]
        expected = float(np.mean((np.asarray(served).reshape(-1) > 0.5) == labels))
        assert row["test_accuracy"] == pytest.approx(expected) and row["finite"]
        assert row["saved_model"].endswith(f"{row['family']}/{exported[row['family']].version}")

    # measuring one family again keeps the other families' rows (the transformer: its
    # SavedModel loads in a fifth of the HAN's time). `--limit` reaches the reader, which
    # runs here what its child process runs (load_imdb), rather than a second child
    def read_limited(data, limit):
        assert (data, limit) == (str(root), 4)
        imdb = load_imdb(data, limit=limit, validation_size=0, progress=False)
        return list(imdb.test.texts), np.asarray(imdb.test.labels)

    monkeypatch.setattr(module, "read_test_split", read_limited)
    again = module.main(
        ["--data", str(root), "--saved-models", str(saved_models), "--results", str(tmp_path)]
        + ["--families", "transformer", "--limit", "4"]
    )
    assert [row["family"] for row in again] == list(FAMILIES)
    assert [row for row in again if row["family"] != "transformer"] == [
        row for row in rows if row["family"] != "transformer"
    ]
    assert next(row for row in again if row["family"] == "transformer")["reviews"] == 4


def test_saliency_is_all_zeros_when_every_product_is_zero():
    """No token moves the logit: no token carries evidence (as for an empty review)."""
    vectorizer = Vectorizer(max_tokens=50, min_count=1, sequence_length=12)
    vectorizer.adapt(["one two three four five six seven eight nine ten"])
    model = hatt.models.build(
        "cnn", vocabulary_size=vectorizer.vocabulary_size, embedding_dim=8, filters=4
    )
    logit = model.get_layer("logit")
    logit.set_weights([np.zeros_like(w) for w in logit.get_weights()])  # z = 0 for every input
    text_model = export.TextModel(model, vectorizer)
    out = text_model(["two seven four nine one", "", "three"])
    np.testing.assert_array_equal(out["word_attention"], 0.0)
    np.testing.assert_allclose(out["probability"], 0.5)
    (explained,) = hatt.inspect.explain(model, ["two seven four"], vectorizer=vectorizer)
    assert explained.weights == [0.0, 0.0, 0.0] and explained.display_weights() == [[0, 0, 0]]
    # the rule itself: shares of the kept total; a row without weight stays at zeros
    weights = export.normalise(np.array([[1.0, 3.0, 5.0], [0.0, 0.0, 2.0]]), [[1, 1, 0], [1, 1, 0]])
    np.testing.assert_allclose(weights, [[0.25, 0.75, 0.0], [0.0, 0.0, 0.0]])
