"""The page: self-contained, its cards are hatt's one renderer, escaped; the IMDB sample."""

import html
import html.parser
import json
import re

import pytest
from starlette.testclient import TestClient

from hatt import export, serve
from hatt.inspect import explain
from hatt.inspect.html import review_html
from tests.data.conftest import write_tiny_imdb
from tests.inspect._backwards import write_backwards_run
from tests.serve.conftest import fake_predictor

SCRIPTED = 'Great film! <script>alert(1)</script> <img src=x onerror="alert(2)"> Loved it.'


class _Tags(html.parser.HTMLParser):
    def __init__(self):
        super().__init__()
        self.tags = []

    def handle_starttag(self, tag, attrs):
        self.tags.append((tag, dict(attrs)))


def test_the_page_is_self_contained(client):
    response = client.get("/")
    assert response.status_code == 200
    policy = response.headers["content-security-policy"]
    assert "script-src 'self'" in policy and "default-src 'none'" in policy
    page = response.text
    parser = _Tags()
    parser.feed(page)
    scripts = [attrs for tag, attrs in parser.tags if tag == "script"]
    assert scripts == [{"src": "/static/page.js", "defer": None}]  # same origin, no inline code
    assert not re.search(r"(https?:)?//[a-z]", page.replace("http-equiv", ""))  # no other host
    assert not any(tag == "link" for tag, _ in parser.tags)
    for needed in (
        'id="review"',
        'id="model-0"',
        'id="model-1"',
        'id="method-0"',
        'name="viewport"',
    ):
        assert needed in page
    script = client.get("/static/page.js")
    assert script.headers["content-type"].startswith("text/javascript")
    assert "innerHTML = result.html" in script.text and "http" not in script.text.replace(
        "https://", ""
    )


def test_models_for_the_page(client, served):
    info = client.get("/ui/models").json()
    assert [m["name"] for m in info["models"]] == ["cnn", "han", "fake"]
    assert info["models"][1] == {
        "name": "han",
        "version": served["han"].version,
        "family": "han",
        "score_kind": "attention",
        "methods": ["attention", "total", "gradient_x_input", "integrated_gradients", "ngram"],
        "class_names": ["negative", "positive"],
        "corpus": None,  # the tiny runs record no data source
    }
    assert info["models"][2]["methods"] == ["saliency"]  # an export without `explain`
    assert info["imdb"] is False


@pytest.mark.parametrize(
    "source, shown",
    [
        ("/home/alice/private/reviews.csv", "reviews.csv"),
        ("C:\\Users\\alice\\data\\aclImdb\\", "aclImdb"),
        ("tfds:imdb_reviews", "tfds:imdb_reviews"),
        ("", None),
    ],
)
def test_the_server_names_a_corpus_without_the_training_machine_s_path(source, shown):
    # issue 63: /ui/models and the metadata gave the data source's full path
    predictor = fake_predictor()
    predictor.metadata = {"metrics": {"data_source": source}}
    model = serve.served_model("fake", predictor)
    assert model.corpus == shown and model.describe()["corpus"] == shown
    assert "alice" not in json.dumps(model.metadata())


@pytest.mark.parametrize("name", ["cnn", "han"])
def test_cards_are_the_renderers_and_escape_the_review(client, served, name):
    # the page sends the method chosen: the total by default
    ask = {"model": name, "text": SCRIPTED, "column": 1, "method": "total"}
    response = client.post("/ui/explain", json=ask)
    assert response.status_code == 200, response.text
    card = response.json()["html"]
    (expected,) = explain(served[name].predictor, [SCRIPTED], progress=False)
    heading = f"{name} · version {served[name].version}"
    assert card == review_html(expected, number=2, heading=heading)  # the default: total
    assert 'class="view m-total"' in card
    assert 'class="warning"' not in card  # nothing to warn about
    assert "<script" not in card and "<img" not in card
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in card  # the raw text, as text
    assert response.json()["prediction"]["label"] in ("positive", "negative")


def test_the_script_opens_each_model_on_the_total_view(client):
    script = client.get("/static/page.js").text
    assert 'const DEFAULT_METHOD = "total";' in script
    assert "if (methods.includes(DEFAULT_METHOD))" in script


def test_a_card_warns_about_a_model_whose_deep_part_weighs_negatively(tiny, tiny_corpus, tmp_path):
    run = write_backwards_run(tiny["cnn"].run_dir, tiny_corpus, tmp_path / "run")
    model = serve.served_model("backwards", export.load(run))
    app = serve.create_app({"backwards": model})
    with TestClient(app) as backwards:
        ask = {"model": "backwards", "text": "A superb cast. w1 superb!", "method": "total"}
        response = backwards.post("/ui/explain", json=ask)
    assert response.status_code == 200, response.text
    card = response.json()["html"]
    warnings = model.predictor.warnings
    assert len(warnings) == 3 and card.count('<div class="warning" role="note">') == 1
    for warning in warnings:
        assert html.escape(warning) in card
    # "superb" argues for the predicted 'positive' in the total: blue (p...) shades
    assert response.json()["prediction"]["label"] == "positive"
    assert re.findall(r'<span class="(\w+)" title="[^"]*">superb</span>', card)[0][0] == "p"


def test_imdb_sample_only_when_data_is_given(client, served, tmp_path):
    assert client.get("/ui/imdb-review").status_code == 404
    root = write_tiny_imdb(tmp_path)
    app = serve.create_app(served, serve.Settings(imdb=str(root)))
    with TestClient(app) as with_data:
        assert with_data.get("/ui/models").json()["imdb"] is True
        test = __import__("hatt").data.load_imdb(str(root), validation_size=0, progress=False).test
        for _ in range(3):
            review = with_data.get("/ui/imdb-review").json()
            assert review["text"] == test.texts[review["index"]]
            assert review["label"] == int(test.labels[review["index"]])


def test_the_favicon_request_is_answered_without_an_error(client):
    response = client.get("/favicon.ico")
    assert response.status_code == 204 and not response.content
