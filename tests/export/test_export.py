"""hatt.export: the SavedModel contract (checked in a process without hatt or Keras), the
end-to-end .keras file, the loader, version numbering, the packed HAN's dense twin, saliency."""

import concurrent.futures
import json
import os
import shutil
import subprocess
import sys
import time

import keras
import numpy as np
import pytest
import tensorflow as tf

import hatt
from hatt import cli, export
from hatt.data import Vectorizer, pack_sentences
from tests._fresh_process import run_json_script
from tests._planted import write_planted_imdb
from tests._scripts import load_experiment
from tests.conftest import EPOCHS, FAMILIES
from tests.inspect._backwards import RECORD, RECORDED_WARNING, write_backwards_run

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

# Runs with `keras` and `hatt` unimportable (TensorFlow then treats Keras as absent).
SERVE_SCRIPT = r"""
import json, sys
for name in ("keras", "hatt", "tf_keras"):
    sys.modules[name] = None
import numpy as np
import tensorflow as tf

paths, texts = json.loads(sys.argv[1]), json.loads(open(sys.argv[2], encoding="utf-8").read())

def arrays(outputs, prefix=""):
    out = {}
    for key, value in outputs.items():
        value = value.numpy()
        if value.dtype == object:
            value = np.array([b.decode("utf-8") for b in value.reshape(-1)], dtype=str).reshape(value.shape)
        out[prefix + key] = value
    return out

report = {}
for family, path in paths.items():
    loaded = tf.saved_model.load(path)
    serve = loaded.signatures["serving_default"]
    saved = arrays(serve(text=tf.constant(texts["batch"])))
    predict = loaded.signatures["predict"]  # the fast path: the prediction only
    saved.update(arrays(predict(text=tf.constant(texts["batch"])), "predict/"))
    for i, text in enumerate(texts["bad"]):
        saved.update(arrays(serve(text=tf.constant([text])), f"single{i}/"))
    np.savez(sys.argv[3] + f"/{family}.npz", **saved)
    empty = serve(text=tf.zeros([0], tf.string))
    report[family] = {
        "empty": {k: v.shape.as_list() for k, v in empty.items()},
        "inputs": {k: [v.dtype.name, v.shape.as_list()] for k, v in serve.structured_input_signature[1].items()},
        "outputs": {k: [v.dtype.name, v.shape.as_list()] for k, v in serve.structured_outputs.items()},
        "predict": {k: [v.dtype.name, v.shape.as_list()] for k, v in predict.structured_outputs.items()},
    }
report["modules"] = sorted(
    {m.split(".")[0] for m, module in sys.modules.items() if module is not None}
    & {"keras", "hatt", "tf_keras"}
)
print(json.dumps(report))
"""

# The `explain` signature, again without `keras` or `hatt`.
EXPLAIN_SCRIPT = r"""
import json, sys
for name in ("keras", "hatt", "tf_keras"):
    sys.modules[name] = None
import numpy as np
import tensorflow as tf

paths, texts = json.loads(sys.argv[1]), json.loads(open(sys.argv[2], encoding="utf-8").read())
report = {}
for family, path in paths.items():
    explain = tf.saved_model.load(path).signatures["explain"]
    saved = {}
    for prefix, batch in (("", texts["batch"]), ("empty/", [""]), ("blank/", ["   \t "])):
        for key, value in explain(text=tf.constant(batch)).items():
            value = value.numpy()
            if value.dtype == object:
                decoded = [b.decode("utf-8") for b in value.reshape(-1)]
                value = np.array(decoded, dtype=str).reshape(value.shape)
            saved[prefix + key] = value
    np.savez(sys.argv[3] + f"/{family}.npz", **saved)
    report[family] = {
        "inputs": {k: [v.dtype.name, v.shape.as_list()] for k, v in explain.structured_input_signature[1].items()},
        "outputs": {k: [v.dtype.name, v.shape.as_list()] for k, v in explain.structured_outputs.items()},
        "empty_batch": {k: v.shape.as_list() for k, v in explain(text=tf.zeros([0], tf.string)).items()},
    }
report["modules"] = sorted(
    {m.split(".")[0] for m, module in sys.modules.items() if module is not None}
    & {"keras", "hatt", "tf_keras"}
)
print(json.dumps(report))
"""

# `import hatt` alone, then Keras' own loader on saved_models/NAME/model.keras.
KERAS_SCRIPT = r"""
import json, sys
import numpy as np
import hatt, keras

paths, texts = json.loads(sys.argv[1]), json.loads(open(sys.argv[2], encoding="utf-8").read())
report = {}
for family, path in paths.items():
    model = keras.saving.load_model(path)
    out = model(texts["batch"])
    np.savez(sys.argv[3] + f"/{family}.npz", probability=out["probability"].numpy(),
             word_attention=out["word_attention"].numpy())
    report[family] = [type(model).__name__, model.family, model.score_kind]
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


def test_saved_models_serve_raw_text_without_hatt_or_keras(exported, tiny, tiny_corpus, tmp_path):
    texts = _texts(tiny_corpus)
    (tmp_path / "texts.json").write_text(json.dumps(texts), encoding="utf-8")
    paths = {f: str(exported[f].saved_model) for f in FAMILIES}
    report = run_json_script(
        SERVE_SCRIPT, json.dumps(paths), str(tmp_path / "texts.json"), str(tmp_path)
    )
    assert report.pop("modules") == []  # neither hatt nor keras was imported
    for family in FAMILIES:
        signature = report[family]
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

        saved = dict(np.load(tmp_path / f"{family}.npz"))
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


def test_explain_signature_serves_every_method_without_hatt_or_keras(
    exported, tiny, tiny_corpus, tmp_path
):
    texts = {"batch": list(tiny_corpus.test.texts)[:8] + ["", "   ", "superb"]}
    (tmp_path / "texts.json").write_text(json.dumps(texts), encoding="utf-8")
    paths = {f: str(exported[f].saved_model) for f in FAMILIES}
    report = run_json_script(
        EXPLAIN_SCRIPT, json.dumps(paths), str(tmp_path / "texts.json"), str(tmp_path)
    )
    assert report.pop("modules") == []  # neither hatt nor keras was imported
    for family in FAMILIES:
        facts = json.loads((exported[family].path / export.EXPORT_FILE).read_text())
        methods = facts["methods"]
        assert methods == METHODS[family]
        signature = report[family]
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

        saved = dict(np.load(tmp_path / f"{family}.npz"))
        batch = {k: v for k, v in saved.items() if "/" not in k}
        _check_explain_contract(family, batch, methods)
        for prefix in ("empty/", "blank/"):  # no token: finite, nothing attributed
            single = {k.split("/", 1)[1]: v for k, v in saved.items() if k.startswith(prefix)}
            _check_explain_contract(family, single, methods)
            assert np.all(single["tokens"] == "")
            for method in set(methods) & set(SIGNED):
                assert np.all(single[method] == 0)
        # the SavedModel's Predictor and the Keras one give the same arrays
        for predictor in (export.load(exported[family].path), export.load(tiny[family].run_dir)):
            assert predictor.methods == tuple(methods)
            local = predictor.explain(texts["batch"], batch_size=4)
            assert set(local) == set(batch)
            np.testing.assert_array_equal(local["tokens"].astype(str), batch["tokens"])
            np.testing.assert_array_equal(local["label"].astype(str), batch["label"])
            for key in set(batch) - {"tokens", "label"}:
                np.testing.assert_allclose(local[key], batch[key], atol=1e-4, err_msg=key)


def test_an_export_without_the_explain_signature_asks_for_a_reexport(tiny, tmp_path):
    """A SavedModel written before `explain` existed: prediction works, explain says what to do."""
    text_model = export.load_run(tiny["rnn"].run_dir)
    text_model(tf.constant(["warm up. warm up."]))
    archive = keras.export.ExportArchive()
    archive.track(text_model)
    spec = [tf.TensorSpec([None], tf.string, name="text")]
    archive.add_endpoint("serving_default", lambda text: text_model(text), input_signature=spec)
    archive.add_endpoint("predict", lambda text: text_model.classify(text), input_signature=spec)
    archive.write_out(str(tmp_path / "1"), verbose=False)
    old = export.load(tmp_path / "1")
    assert old.methods == ()
    assert old.predict(["superb"])["probabilities"].shape == (1, 2)
    with pytest.raises(export.ExportError, match=r"no `explain` signature.*hatt export RUN_DIR"):
        old.explain(["superb"])


def test_an_export_without_the_total_view_gets_it_from_its_parts(exported, tiny, tmp_path):
    """A SavedModel written before `total` existed: the Predictor adds it, as the new one has it."""
    text_model = export.load_run(tiny["han"].run_dir)
    text_model(tf.constant(["warm up. warm up."]))
    archive = keras.export.ExportArchive()
    archive.track(text_model)
    spec = [tf.TensorSpec([None], tf.string, name="text")]
    new_keys = ("total", "sentence_total", "logit_baseline")

    def old_explain(text):
        return {k: v for k, v in text_model.explain(text).items() if k not in new_keys}

    archive.add_endpoint("serving_default", lambda text: text_model(text), input_signature=spec)
    archive.add_endpoint("explain", old_explain, input_signature=spec)
    archive.write_out(str(tmp_path / "1"), verbose=False)
    old_methods = [m for m in METHODS["han"] if m != "total"]
    (tmp_path / "1" / "assets.extra").mkdir()
    (tmp_path / "1" / export.VERSION_METADATA).write_text(
        json.dumps({"family": "han", "score_kind": "attention", "methods": old_methods})
    )
    old = export.load(tmp_path / "1")
    assert old.methods == tuple(METHODS["han"])
    texts = ["A superb cast. The plot was dreadful!", "", "superb"]
    got, expected = old.explain(texts), export.load(exported["han"].path).explain(texts)
    assert set(got) == set(expected)
    for key in new_keys:
        np.testing.assert_allclose(got[key], expected[key], atol=1e-5, err_msg=key)
    (explained,) = hatt.inspect.explain(old, texts[:1], progress=False)
    assert explained.default_method() == "total" and explained.total_line() is not None


def test_keras_file_is_the_same_model_after_import_hatt_alone(exported, tiny_corpus, tmp_path):
    # the CNN (saliency through a gradient) and the HAN (dense twin of the packed model);
    # the other families' .keras files load in-process in the tests below
    texts = {"batch": list(tiny_corpus.test.texts) + BAD_INPUTS[:2] + BAD_INPUTS[3:]}
    (tmp_path / "texts.json").write_text(json.dumps(texts), encoding="utf-8")
    paths = {f: str(exported[f].keras_file) for f in ("cnn", "han")}
    report = run_json_script(
        KERAS_SCRIPT, json.dumps(paths), str(tmp_path / "texts.json"), str(tmp_path)
    )
    for family in paths:
        kind = "saliency" if family == "cnn" else "attention"
        assert report[family] == ["TextModel", family, kind]
        from_keras = np.load(tmp_path / f"{family}.npz")
        served = export.load(exported[family].path)(texts["batch"])
        assert served.keys() >= {"probability", "word_attention"}
        for key in ("probability", "word_attention"):
            np.testing.assert_allclose(from_keras[key], served[key], atol=1e-5, rtol=0)


def test_load_accepts_every_form_and_batches_consistently(exported, tiny, tiny_corpus):
    texts = list(tiny_corpus.test.texts) + ["", "🎬", b"\xff\xfe invalid bytes superb"]
    result = exported["han"]
    latest = export.load(result.path)
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


def test_export_metadata_names_family_and_score_kind(exported, tiny):
    for family in FAMILIES:
        result = exported[family]
        facts = json.loads((result.path / export.EXPORT_FILE).read_text())
        inside = json.loads((result.saved_model / export.VERSION_METADATA).read_text())
        kind = "saliency" if family == "cnn" else "attention"
        for record in (facts, inside):
            assert (record["family"], record["score_kind"], record["version"]) == (family, kind, 1)
            assert record["explain_steps"] == hatt.export.attribution.DEFAULT_STEPS
            assert record["methods"] == METHODS[family]
        assert facts["source_run"] == str(tiny[family].run_dir.resolve())
        assert facts["metrics"] == {"epochs": EPOCHS}  # from the run's metrics.json
        assert facts["versions"] == [1]
        # nothing to warn about: the tiny runs record no mix and no warning
        assert facts["warnings"] == inside["warnings"] == [] and "ngram" not in facts
        assert export.load(result.path).warnings == [] == export.load(tiny[family].run_dir).warnings
        assert Vectorizer.load(result.path / "vectorizer.json").get_vocabulary() == (
            tiny[family].vectorizer.get_vocabulary()
        )


def test_an_export_carries_the_runs_mix_and_warnings(tiny, tiny_corpus, tmp_path):
    """A run whose mix weighs the deep part negatively: the export alone knows it."""
    run = write_backwards_run(tiny["cnn"].run_dir, tiny_corpus, tmp_path / "run")
    result = export.export(run, tmp_path / "saved_models" / "cnn")
    facts = json.loads((result.path / export.EXPORT_FILE).read_text())
    inside = json.loads((result.saved_model / export.VERSION_METADATA).read_text())
    assert facts["ngram"] == inside["ngram"] == RECORD
    warnings = facts["warnings"]
    assert inside["warnings"] == warnings and len(warnings) == 3
    assert "negative weight" in warnings[0] and "-0.050·deep + 2.300·channel" in warnings[0]
    assert (
        "below the n-gram channel alone" in warnings[1] and "0.8125 against 0.8750" in warnings[1]
    )
    assert warnings[2] == RECORDED_WARNING
    for form in (result.path, result.keras_file, run):  # SavedModel, its .keras, the run
        assert export.load(form).warnings == warnings, form
    shutil.rmtree(run)  # the export alone
    assert export.load(result.path).warnings == warnings


def test_model_warnings_read_the_mix_of_two_and_more_classes():
    fine = {"mix": {"deep": 0.7, "channel": 1.2, "bias": 0.1}, "deep_validation_accuracy": 0.9,
            "channel_validation_accuracy": 0.89}  # fmt: skip
    assert export.model_warnings(fine) == [] == export.model_warnings(None)
    assert export.model_warnings({}, ["kept", "kept", 3]) == ["kept"]  # once; str only
    three = {"mix": {"deep": [[0.5, 0.1, 0.0], [0.2, -0.3, 0.1], [0.0, 0.1, 0.4]],
                     "channel": np.eye(3).tolist(), "bias": [0, 0, 0]}}  # fmt: skip
    (warning,) = export.model_warnings(three, class_names=["bad", "mixed", "good"])
    assert "negative weight" in warning and "for the class(es) mixed" in warning
    below = {**fine, "deep_validation_accuracy": 0.8}
    (warning,) = export.model_warnings(below)
    assert "0.8000 against 0.8900" in warning


def test_reexport_takes_the_next_free_version(tiny, tmp_path, capsys):
    out = tmp_path / "cnn"
    assert cli.main(["export", str(tiny["cnn"].run_dir), "--out", str(out)]) == 0
    assert "(version 1)" in capsys.readouterr().out
    (out / "3").mkdir()  # an incomplete version: its number is taken, but never loaded
    (out / ".tmp-4-99").mkdir()  # a crashed export's leftovers
    assert export.load(out).version == 1
    assert export.export(tiny["cnn"].run_dir, out).version == 4
    assert export.load(out).version == 4
    assert json.loads((out / export.EXPORT_FILE).read_text())["versions"] == [1, 4]
    assert sorted(p.name for p in out.iterdir() if p.name.startswith(".tmp-")) == [".tmp-4-99"]


def test_a_hand_edited_family_that_the_weights_are_not_is_refused(tiny, tmp_path, capsys):
    """Issue 33, item 7: config.json's family must be the model's, or nothing is exported."""
    run_dir = tmp_path / "run"
    shutil.copytree(tiny["cnn"].run_dir, run_dir)
    config = json.loads((run_dir / "config.json").read_text())
    (run_dir / "config.json").write_text(json.dumps({**config, "model": "han"}))
    out = tmp_path / "out"
    assert cli.main(["export", str(run_dir), "--out", str(out)]) != 0
    message = capsys.readouterr().err
    assert "says model='han'" in message and "holds a 'cnn' model" in message
    assert not out.exists() or not any(out.iterdir())


def test_a_model_of_other_classes_never_becomes_a_new_version(tiny, tmp_path, capsys, monkeypatch):
    """Issue 34, item 1: another task is refused before anything is written; --name gives it
    a folder of its own."""
    other = tmp_path / "other-run"
    shutil.copytree(tiny["cnn"].run_dir, other)
    (other / "classes.json").write_text(json.dumps({"class_names": ["ham", "spam"]}))
    monkeypatch.chdir(tmp_path)
    assert cli.main(["export", str(tiny["cnn"].run_dir)]) == 0
    out = tmp_path / "saved_models" / "cnn"
    before = {p.name: p.stat().st_mtime_ns for p in out.iterdir()}
    capsys.readouterr()
    assert cli.main(["export", str(other)]) != 0
    message = capsys.readouterr().err
    assert "already serves another task" in message and "(ham, spam)" in message
    assert "--name" in message
    assert {p.name: p.stat().st_mtime_ns for p in out.iterdir()} == before
    assert export.load(out).class_names == tiny_class_names(tiny)
    assert cli.main(["export", str(other), "--name", "spam-cnn"]) == 0
    assert export.load(tmp_path / "saved_models" / "spam-cnn").class_names == ("ham", "spam")
    assert cli.main(["export", str(other), "--name", "../x"]) != 0
    assert "--name" in capsys.readouterr().err


def tiny_class_names(tiny):
    return export.load(tiny["cnn"].run_dir).class_names


def test_loader_errors_name_the_path(exported, tiny, tmp_path):
    with pytest.raises(export.ExportError, match="No model at .*missing"):
        export.load(tmp_path / "missing")
    (tmp_path / "empty").mkdir()
    with pytest.raises(export.ExportError, match="empty.* holds no hatt model"):
        export.load(tmp_path / "empty")
    (tmp_path / "notes.txt").write_text("hello")
    with pytest.raises(export.ExportError, match="Expected a .keras file"):
        export.load(tmp_path / "notes.txt")

    # a SavedModel whose graph file is cut short
    broken = tmp_path / "broken"
    shutil.copytree(exported["rnn"].saved_model, broken)
    pb = broken / "saved_model.pb"
    pb.write_bytes(pb.read_bytes()[: pb.stat().st_size // 3])
    with pytest.raises(export.ExportError, match="Could not load the SavedModel .*broken"):
        export.load(broken)

    # a SavedModel whose variables are garbled
    garbled = tmp_path / "garbled"
    shutil.copytree(exported["rnn"].saved_model, garbled)
    for data in (garbled / "variables").glob("variables.data-*"):
        data.write_bytes(b"\x00garbage" * 3)
    with pytest.raises(export.ExportError, match="Could not load the SavedModel .*garbled"):
        export.load(garbled)

    # a truncated .keras file
    cut = tmp_path / "cut.keras"
    cut.write_bytes(exported["rnn"].keras_file.read_bytes()[:500])
    with pytest.raises(export.ExportError, match="Could not load the Keras model .*cut.keras"):
        export.load(cut)

    # an id model without its vocabulary
    lonely = tmp_path / "lonely"
    lonely.mkdir()
    (lonely / "model.keras").write_bytes((tiny["rnn"].run_dir / "model.keras").read_bytes())
    with pytest.raises(export.ExportError, match="no vectorizer.json beside it"):
        export.load(lonely / "model.keras")
    with pytest.raises(export.ExportError, match="No run directory"):
        export.export(tmp_path / "no-run")


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


def test_evaluate_exports_scores_the_newest_saved_models_on_raw_test_text(tmp_path, exported):
    """experiments/evaluate_exports.py: TensorFlow alone, the aclImdb test folder, a JSON file."""
    module = load_experiment("evaluate_exports")
    root = write_planted_imdb(tmp_path, n_train=8, n_test=16)
    saved_models = [exported[family] for family in FAMILIES][0].path.parent  # all four
    rows = module.main(
        ["--data", str(root), "--saved-models", str(saved_models), "--results", str(tmp_path)]
    )
    assert json.loads((tmp_path / "exports_on_test.json").read_text()) == rows
    texts, labels = module.read_test_split(str(root), None)
    assert len(texts) == 16
    for row in rows:
        served = export.load(exported[row["family"]].path)(texts)["probability"]
        expected = float(np.mean((np.asarray(served).reshape(-1) > 0.5) == labels))
        assert row["test_accuracy"] == pytest.approx(expected) and row["finite"]
        assert row["saved_model"].endswith(f"{row['family']}/{exported[row['family']].version}")
    # measuring one family again keeps the other families' rows
    again = module.main(
        ["--data", str(root), "--saved-models", str(saved_models), "--results", str(tmp_path)]
        + ["--families", "han", "--limit", "4"]
    )
    assert [row["family"] for row in again] == list(FAMILIES)
    assert [row for row in again if row["family"] != "han"] == [
        row for row in rows if row["family"] != "han"
    ]
    assert next(row for row in again if row["family"] == "han")["reviews"] == 4


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


def _copy_run(run_dir, folder):
    shutil.copytree(run_dir, folder)
    return folder


DAMAGED_VECTORIZERS = {
    "truncated": lambda text: text[: len(text) // 2],
    "no class_name": lambda text: json.dumps(
        {k: v for k, v in json.loads(text).items() if k != "class_name"}
    ),
    "no vocabulary": lambda text: json.dumps(
        {**json.loads(text), "config": {**json.loads(text)["config"], "vocabulary": None}}
    ),
}


@pytest.mark.parametrize("damage", list(DAMAGED_VECTORIZERS))
def test_a_damaged_vectorizer_json_is_one_could_not_read_error(tiny, tmp_path, capsys, damage):
    run = _copy_run(tiny["rnn"].run_dir, tmp_path / "run")
    vectorizer_file = run / "vectorizer.json"
    vectorizer_file.write_text(DAMAGED_VECTORIZERS[damage](vectorizer_file.read_text()))
    message = "Could not read a Vectorizer from .*run/vectorizer.json"
    with pytest.raises(export.ExportError, match=message):
        export.load(run)  # hatt predict and hatt.inspect load through here
    if damage != "no class_name":
        return
    with pytest.raises(export.ExportError, match=message):
        export.load(run / "model.keras")
    with pytest.raises(export.ExportError, match=message):
        export.export(run, tmp_path / "out")
    with pytest.raises(export.ExportError, match=message):
        hatt.inspect.explain(run, ["a review"])
    for argv in (["predict", str(run), "a review"], ["inspect", str(run), "--text", "a review"]):
        assert cli.main(argv) == 2
        err = capsys.readouterr().err
        assert "Could not read a Vectorizer from" in err and "Traceback" not in err


def _dead_pid():
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()
    return child.pid


def test_a_killed_export_is_cleaned_up_and_export_json_follows_the_versions(
    exported, tiny, tmp_path
):
    out = tmp_path / "rnn"
    shutil.copytree(exported["rnn"].path, out)
    # killed after its version folder was in place, before export.json named it
    shutil.copytree(out / "1", out / "2")
    inside = json.loads((out / "2" / export.VERSION_METADATA).read_text())
    (out / "2" / export.VERSION_METADATA).write_text(json.dumps({**inside, "version": 2}))
    assert json.loads((out / export.EXPORT_FILE).read_text())["version"] == 1  # stale
    # killed while writing: a half SavedModel, a 0-byte .keras; an old leftover of an
    # older hatt; and the temporaries of an export still running (this process)
    dead = _dead_pid()
    (out / f".tmp-export-{dead}-a1b2c3" / "saved_model" / "variables").mkdir(parents=True)
    (out / f".tmp-export-{dead}-d4e5f6.keras").write_bytes(b"")
    (out / ".tmp-7-4242").mkdir()
    old = time.time() - 2 * 24 * 3600  # two days
    os.utime(out / ".tmp-7-4242", (old, old))
    running = out / f".tmp-export-{os.getpid()}-running"
    running.mkdir()

    latest = export.load(out)  # the highest complete version, whatever export.json says
    assert (latest.version, latest.family) == (2, "rnn")
    result = export.export(tiny["rnn"].run_dir, out)
    assert result.version == 3
    assert sorted(p.name for p in out.iterdir() if p.name.startswith(".tmp-")) == [running.name]
    facts = json.loads((out / export.EXPORT_FILE).read_text())
    assert (facts["version"], facts["versions"]) == (3, [1, 2, 3])
    assert export.load(out).version == 3


def test_two_exports_at_once_take_two_versions(tiny, tmp_path):
    out = tmp_path / "rnn"
    with concurrent.futures.ThreadPoolExecutor(2) as pool:
        results = list(pool.map(lambda _: export.export(tiny["rnn"].run_dir, out), range(2)))
    assert sorted(r.version for r in results) == [1, 2]
    assert not [p.name for p in out.iterdir() if p.name.startswith(".tmp-")]
    facts = json.loads((out / export.EXPORT_FILE).read_text())
    assert (facts["version"], facts["versions"]) == (2, [1, 2])
    for version in (1, 2):
        inside = json.loads((out / str(version) / export.VERSION_METADATA).read_text())
        assert inside["version"] == version
    assert export.load(out).version == 2
    assert export.load(out / "model.keras").family == "rnn"


def test_a_saved_model_serves_text_but_not_edited_ids(exported):
    predictor = export.load(exported["rnn"].path)
    with pytest.raises(export.ExportError, match="SavedModel: its signature takes raw text"):
        predictor.ragged_ids(["a review"])
    with pytest.raises(export.ExportError, match="model.keras or the run directory"):
        hatt.inspect.deletion_test(predictor, ["a review"], progress=False)
