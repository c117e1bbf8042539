"""Every route through Starlette's test client: tiny real exports, a fake model that fails."""

import asyncio
import json

import httpx2
import numpy as np
import pytest
from starlette.testclient import TestClient

from hatt import export, serve
from hatt.export.attribution import METHODS as ATTRIBUTION_METHODS
from hatt.inspect import explain
from tests.serve.conftest import BOOM, fake_run

REVIEWS = [
    "A superb film. The acting was wonderful!<br /><br />See it.",
    "Dreadful.",
    'Boring <b>"plot"</b> & worse acting; it was dull dull dull and I left early. Awful!',
    "",
]


def test_status_and_metadata_follow_tf_serving(client, served):
    for name, model in served.items():
        version = str(model.version)
        status = {
            "model_version_status": [
                {
                    "version": version,
                    "state": "AVAILABLE",
                    "status": {"error_code": "OK", "error_message": ""},
                }
            ]
        }
        assert client.get(f"/v1/models/{name}").json() == status
        assert client.get(f"/v1/models/{name}/versions/{version}").json() == status
        metadata = client.get(f"/v1/models/{name}/metadata").json()
        assert metadata == client.get(f"/v1/models/{name}/versions/{version}/metadata").json()
        assert metadata["model_spec"] == {"name": name, "signature_name": "", "version": version}
        signatures = metadata["metadata"]["signature_def"]["signature_def"]
        assert set(signatures) == {"predict", "serving_default"}
        text = signatures["predict"]["inputs"]["text"]
        assert text["dtype"] == "DT_STRING" and text["tensor_shape"]["dim"] == [
            {"size": "-1", "name": ""}
        ]
        fast = signatures["predict"]["outputs"]
        assert set(fast) == {"probabilities", "label", "probability"}
        assert [d["size"] for d in fast["probabilities"]["tensor_shape"]["dim"]] == ["-1", "2"]
        full = signatures["serving_default"]["outputs"]
        rank = 3 if model.family == "han" else 2
        assert len(full["tokens"]["tensor_shape"]["dim"]) == rank
        assert ("sentence_attention" in full) == (model.family == "han")
        assert metadata["metadata"]["hatt"]["family"] == model.family
    assert client.get("/v1/models").json() == {"models": ["cnn", "han", "fake"]}


@pytest.mark.parametrize("name", ["cnn", "han"])
def test_predict_in_both_formats_matches_the_predictor(client, served, name):
    predictor = served[name].predictor
    reference = predictor.predict_proba(REVIEWS)  # NumPy reference, batch of 64
    row = client.post(f"/v1/models/{name}:predict", json={"instances": REVIEWS})
    assert row.status_code == 200, row.text
    predictions = row.json()["predictions"]
    keys = {"probabilities", "label", "probability", "probability_of"}
    assert [set(p) for p in predictions] == [keys] * 4
    assert {p["probability_of"] for p in predictions} == {"positive"}  # the second class
    np.testing.assert_allclose([p["probability"] for p in predictions], reference, atol=1e-6)
    np.testing.assert_allclose(
        [p["probabilities"] for p in predictions],
        np.stack([1 - reference, reference], axis=1),
        atol=1e-6,
    )
    labels = ["positive" if p >= 0.5 else "negative" for p in reference]
    assert [p["label"] for p in predictions] == labels
    # {"text": ...} objects in rows; the columnar format, as an object and as a list
    objects = client.post(
        f"/v1/models/{name}/versions/{served[name].version}:predict",
        json={"instances": [{"text": t} for t in REVIEWS]},
    )
    assert objects.json() == row.json()
    for inputs in ({"text": REVIEWS}, REVIEWS):
        columnar = client.post(f"/v1/models/{name}:predict", json={"inputs": inputs}).json()
        assert set(columnar) == {"outputs", "warnings"}  # REVIEWS[3] holds no text
        np.testing.assert_allclose(columnar["outputs"]["probability"], reference, atol=1e-6)
        assert columnar["outputs"]["label"] == labels
    empty = client.post(f"/v1/models/{name}:predict", json={"instances": []})
    assert empty.json() == {"predictions": []}


@pytest.mark.parametrize("name", ["cnn", "han"])
def test_serving_default_returns_tokens_and_scores_per_review(client, served, name):
    outputs = served[name].predictor(REVIEWS)
    body = {"instances": REVIEWS, "signature_name": "serving_default"}
    predictions = client.post(f"/v1/models/{name}:predict", json=body).json()["predictions"]
    for i, prediction in enumerate(predictions):
        tokens = np.array(prediction["tokens"], dtype=object)
        # the review's own tokens: the batch's padding is cut off
        expected = outputs["tokens"][i][tuple(slice(0, n) for n in tokens.shape)]
        assert tokens.tolist() == expected.tolist()
        assert (outputs["tokens"][i] != "").sum() == (tokens != "").sum()
        np.testing.assert_allclose(
            prediction["word_attention"],
            outputs["word_attention"][i][tuple(slice(0, n) for n in tokens.shape)],
            atol=1e-6,
        )
        if name == "han":
            np.testing.assert_allclose(
                prediction["sentence_attention"],
                outputs["sentence_attention"][i][: tokens.shape[0]],
                atol=1e-6,
            )
    columnar = client.post(
        f"/v1/models/{name}:predict",
        json={"inputs": {"text": REVIEWS}, "signature_name": "serving_default"},
    ).json()["outputs"]
    assert columnar["tokens"] == outputs["tokens"].tolist()  # padded like one tensor


@pytest.mark.parametrize("name", ["cnn", "han"])
def test_explain_returns_the_explanations_of_hatt_inspect(client, served, name):
    reference = explain(served[name].predictor, REVIEWS, progress=False, methods="all")
    methods = served[name].methods
    expected = {"cnn": ATTRIBUTION_METHODS[1:], "han": ATTRIBUTION_METHODS}[name]
    assert methods == expected  # both tiny models have the n-gram channel
    response = client.post(f"/v1/models/{name}:explain", json={"instances": REVIEWS})
    assert response.status_code == 200, response.text
    body = response.json()
    assert set(body) == {"predictions", "explanations", "warnings"}  # REVIEWS[3] is ""
    for e, got, prediction in zip(
        reference, body["explanations"], body["predictions"], strict=True
    ):
        assert got["tokens"] == e.tokens and got["sentences"] == e.sentences
        # a request that names no method gets the total view (the page's default)
        assert got["method"] == "total" and got["methods"] == list(methods)
        for method in methods:  # every method's scores, as hatt.inspect computes them
            flat = [w for s in got["scores"][method] for w in s]
            np.testing.assert_allclose(flat, [w for s in e.scores[method] for w in s], atol=1e-5)
            np.testing.assert_allclose(
                got["sentence_scores_by_method"][method], e.sentence_scores[method], atol=1e-5
            )
        assert got["word_scores"] == got["scores"]["total"]
        parts = got["decomposition"]
        assert parts["deep"] + parts["ngram"] + parts["bias"] == pytest.approx(
            parts["logit"], abs=1e-4
        )
        assert got["explained_label"] == prediction["label"]
        assert prediction["probability"] == pytest.approx(e.probability, abs=1e-6)
    chosen = client.post(
        f"/v1/models/{name}:explain",
        json={"inputs": {"text": REVIEWS}, "method": "integrated_gradients"},
    ).json()
    for got in chosen["explanations"]:
        assert got["method"] == "integrated_gradients"
        assert got["word_scores"] == got["scores"]["integrated_gradients"]
    wrong = client.post(f"/v1/models/{name}:explain", json={"instances": ["a"], "method": "lime"})
    assert wrong.status_code == 400 and "method='lime'" in wrong.json()["error"]


def test_explain_of_an_export_without_the_explain_signature_gives_its_one_view(client, fake):
    body = client.post("/v1/models/fake:explain", json={"instances": ["a fine film"]}).json()
    (got,) = body["explanations"]
    assert got["method"] == "saliency" == fake.score_kind and got["methods"] == ["saliency"]
    assert got["tokens"] == ["a", "fine", "film"]
    np.testing.assert_allclose(got["word_scores"], [[1 / 3, 1 / 3, 1 / 3]], atol=1e-6)
    assert got["decomposition"] is None


@pytest.mark.parametrize(
    "method, path, body, status, words",
    [
        ("POST", "/v1/models/nope:predict", {"instances": ["a"]}, 404, "Latest(nope)"),
        ("GET", "/v1/models/nope", None, 404, "Latest(nope)"),
        ("POST", "/v1/models/fake/versions/3:predict", {"instances": ["a"]}, 404, "(fake, 3)"),
        ("GET", "/v1/models/fake/versions/3/metadata", None, 404, "Specific(fake, 3)"),
        ("POST", "/v1/models/fake/versions/x:predict", {"instances": ["a"]}, 400, "'x'"),
        ("POST", "/v1/models/fake/versions/²:predict", {"instances": ["a"]}, 400, "'²'"),
        ("GET", "/v1/models/fake/versions/" + "9" * 5000, None, 400, "(5000 chars)"),
        ("GET", "/v1/models/fake/versions/١٢", None, 400, "at most 18 digits"),
        ("POST", "/v1/models/fake:classify", {"instances": ["a"]}, 404, ":classify"),
        ("GET", "/v1/models/fake:predict", None, 405, "Expected POST"),
        ("POST", "/v1/models/fake/metadata", {}, 405, "Expected GET"),
        ("GET", "/nowhere", None, 404, "no such path /nowhere"),
        ("POST", "/v1/models/fake:predict", {"instances": "a"}, 400, "instances"),
        ("POST", "/v1/models/fake:predict", {"instances": ["a"] * 9}, 413, "at most 8"),
        ("POST", "/v1/models/fake:explain", {"inputs": {"text": [1]}}, 400, "inputs.text[0]"),
        ("POST", "/v1/models/fake:predict", {"instances": ["a"], "signature_name": "x"}, 400,
         "signature_name"),
        ("POST", "/ui/explain", {"model": "fake"}, 400, "Expected text"),
        ("POST", "/ui/explain", {"model": "nope", "text": "a"}, 404, "Latest(nope)"),
    ],
)  # fmt: skip
def test_errors_are_json_with_the_status_and_the_reason(client, method, path, body, status, words):
    response = client.request(method, path, json=body)
    assert response.status_code == status
    assert response.headers["content-type"] == "application/json"
    error = response.json()
    assert set(error) == {"error"} and words in error["error"], error


def test_malformed_json_is_400(client):
    response = client.post("/v1/models/fake:predict", content=b'{"instances": [')
    assert response.status_code == 400
    assert response.json()["error"].startswith("Malformed JSON body")


def test_body_size_is_capped_with_and_without_a_length(served, fake):
    app = serve.create_app({"fake": fake}, serve.Settings(max_body_bytes=200))
    from starlette.testclient import TestClient

    with TestClient(app) as client:
        big = {"instances": ["word " * 100]}
        response = client.post("/v1/models/fake:predict", json=big)
        assert response.status_code == 413 and "at most 200 bytes" in response.json()["error"]

        def chunks():  # no Content-Length: the server counts what it reads
            yield b'{"instances": ["'
            for _ in range(50):
                yield b"word word "
            yield b'"]}'

        response = client.post("/v1/models/fake:predict", content=chunks())
        assert response.status_code == 413 and "at most 200 bytes" in response.json()["error"]
        small = client.post("/v1/models/fake:predict", json={"instances": ["a b"]})
        assert small.status_code == 200


def test_a_failing_model_is_a_500_and_the_server_keeps_serving(client):
    for verb in ("predict", "explain"):
        response = client.post(f"/v1/models/fake:{verb}", json={"instances": [f"a {BOOM} b"]})
        assert response.status_code == 500
        assert "the fake model exploded" in response.json()["error"]
        assert "'fake'" in response.json()["error"]
        ok = client.post(f"/v1/models/fake:{verb}", json={"instances": ["a b"]})
        assert ok.status_code == 200
    ok = client.post("/v1/models/fake:predict", json={"instances": ["x y z"]}).json()
    assert ok == {
        "predictions": [
            {
                "probabilities": [0.25, 0.75],
                "label": "positive",
                "probability": 0.75,
                "probability_of": "positive",
            }
        ]
    }


async def _concurrently(app, requests):
    transport = httpx2.ASGITransport(app=app)
    async with httpx2.AsyncClient(transport=transport, base_url="http://test") as client:
        return await asyncio.gather(*(client.post(path, json=body) for path, body in requests))


async def _get(app, path):
    transport = httpx2.ASGITransport(app=app)
    async with httpx2.AsyncClient(transport=transport, base_url="http://test") as client:
        return await client.get(path)


def test_concurrent_requests_are_batched_and_answer_as_alone(served):
    settings = serve.Settings(max_batch_size=64, batch_wait_ms=200)
    app = serve.create_app(served, settings)
    body = {"signature_name": "serving_default"}
    requests = [("/v1/models/han:predict", {**body, "instances": [r]}) for r in REVIEWS] * 3
    responses = asyncio.run(_concurrently(app, requests))
    batcher = app.state.server.batchers[("han", "serving_default")]
    assert batcher.texts == len(requests) and batcher.calls < len(requests)
    stats = asyncio.run(_get(app, "/ui/stats")).json()
    assert stats == {"han": {"serving_default": {"calls": batcher.calls, "texts": len(requests)}}}
    alone = serve.create_app(served, serve.Settings(batching=False))
    separately = asyncio.run(_concurrently(alone, requests))
    assert alone.state.server.batchers[("han", "serving_default")].calls == len(requests)
    for together, apart in zip(responses, separately, strict=True):
        assert together.status_code == apart.status_code == 200
        a, b = together.json()["predictions"][0], apart.json()["predictions"][0]
        assert a["tokens"] == b["tokens"]  # nothing of the other reviews' padding
        np.testing.assert_allclose(a["word_attention"], b["word_attention"], atol=1e-5)
        np.testing.assert_allclose(a["probabilities"], b["probabilities"], atol=1e-5)


def test_one_failing_request_does_not_fail_its_batch(fake):
    app = serve.create_app({"fake": fake}, serve.Settings(batch_wait_ms=200))
    texts = ["good film", f"a {BOOM}", "bad film", "fine"]
    requests = [("/v1/models/fake:explain", {"instances": [t]}) for t in texts]
    responses = asyncio.run(_concurrently(app, requests))
    assert [r.status_code for r in responses] == [200, 500, 200, 200]
    assert responses[0].json()["explanations"][0]["tokens"] == ["good", "film"]
    assert json.loads(responses[1].text)["error"].endswith("the fake model exploded")


def _fake_app(name, run, class_names):
    """An app serving one fake two-class SavedModel-like predictor ``run``, and it."""
    predictor = export.Predictor(
        run, family="cnn", score_kind="saliency", source="fake", kind="saved_model",
        class_names=class_names,
    )  # fmt: skip
    return serve.create_app(
        {name: serve.served_model(name, predictor)}, serve.Settings()
    ), predictor


def test_every_answer_names_the_class_of_probability():
    # issue 64, item 5: ("unhappy", "happy"): p(happy) = 0.25, the label unhappy
    def unhappy_run(batch):
        out = dict(fake_run(batch))
        out["probability"] = out["probability"] * 0 + 0.25
        return out

    app, predictor = _fake_app("feel", unhappy_run, ("unhappy", "happy"))
    with TestClient(app) as client:
        rows = client.post("/v1/models/feel:predict", json={"instances": ["meh"]}).json()
        columns = client.post("/v1/models/feel:predict", json={"inputs": ["meh"]}).json()
        explained = client.post("/v1/models/feel:explain", json={"instances": ["meh"]}).json()
        page = client.post("/ui/explain", json={"model": "feel", "text": "meh"}).json()
    (row,) = rows["predictions"]
    assert (row["label"], row["probability"], row["probability_of"]) == ("unhappy", 0.25, "happy")
    assert columns["outputs"]["probability_of"] == ["happy"]
    for prediction in (explained["predictions"][0], page["prediction"]):
        assert prediction["label"] == "unhappy" and prediction["probability_of"] == "happy"
    # the SavedModel's signature (the metadata TF Serving clients read) is unchanged
    metadata = serve.served_model("feel", predictor).metadata()
    outputs = metadata["metadata"]["signature_def"]["signature_def"]["predict"]["outputs"]
    assert "probability" in outputs and "probability_of" not in outputs


def test_a_review_without_text_is_answered_and_said_in_both_formats():
    # issue 63, second pass: `:predict {"instances": [""]}` answered 200 without a word
    app, _ = _fake_app("m", fake_run, ("neg", "pos"))
    with TestClient(app) as client:
        rows = client.post("/v1/models/m:predict", json={"instances": ["", "fine", " "]}).json()
        columns = client.post("/v1/models/m:predict", json={"inputs": ["fine"]}).json()
        explained = client.post("/v1/models/m:explain", json={"instances": [""]}).json()
    assert len(rows["predictions"]) == 3
    assert rows["warnings"] == [
        "2 review(s) hold no text (at 0, 2): their answers are the model's answer to an empty "
        "review, not a reading of one"
    ]
    assert "warnings" not in columns  # only where there is one
    assert explained["warnings"][0].startswith("1 review(s) hold no text (at 0)")
