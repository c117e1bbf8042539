"""Sparse attention in the views: exact zeros unshaded, the model's attention named.

The models are tiny and untrained; their attention layers' context vectors
are scaled up so that sparsemax gives exact zeros (a trained sparse model
does the same, it only takes longer to make).
"""

import html
import html.parser
import json
import re
import zipfile
from pathlib import Path

import keras
import numpy as np
import pytest
from rich.style import Style
from starlette.testclient import TestClient

import hatt
from hatt import export, serve
from hatt.export import facts
from hatt.inspect import explain, to_terminal
from hatt.inspect.explanation import Explanation
from hatt.inspect.html import review_html, to_html, write_html
from hatt.inspect.terminal import ZERO_STYLE, sentence_texts
from hatt.inspect.uniform import attention_layers
from hatt.serve.api import explanation_json
from tests.conftest import LIMITS, planted
from tests.serve.test_browser import CHROMEDRIVER, CHROMIUM, chromium

KWARGS = {
    "rnn": {"embedding_dim": 8, "units": 8, "dropout": 0.0},
    "han": {"embedding_dim": 8, "word_units": 8, "sentence_units": 8, "dropout": 0.0},
}
TEXTS = planted(6, 3).texts


def _model(family, normalizer):
    """An untrained model and its vectorizer; sharp scores for sparsemax's zeros."""
    keras.utils.set_random_seed(0)
    vectorizer = hatt.data.Vectorizer(
        max_tokens=100,
        min_count=1,
        output_mode="nested" if family == "han" else "flat",
        **LIMITS,
    ).adapt(planted(40, 0).texts)
    model = hatt.models.build(
        family,
        vocabulary_size=vectorizer.vocabulary_size,
        attention_normalizer=normalizer,
        **KWARGS[family],
    )
    for layer in attention_layers(model):
        layer.context.assign(layer.context * 200.0)
    return export.as_predictor(model, vectorizer)


@pytest.fixture(scope="module")
def sparse():
    """`{family: (predictor, explanations, the explain signature's raw result)}`."""
    out = {}
    for family in ("rnn", "han"):
        predictor = _model(family, "sparsemax")
        out[family] = (predictor, *_explained_and_raw(predictor))
    return out


def _explained_and_raw(predictor):
    """`explain(predictor, TEXTS, methods=["attention"])` and the raw result of the one
    explain call it makes (TEXTS is one batch), kept rather than computed again."""
    raw, explain_batch = [], predictor.explain
    predictor.explain = lambda texts, batch_size=None: (
        raw.append(explain_batch(texts, batch_size)) or raw[-1]
    )
    try:
        explained = explain(predictor, TEXTS, progress=False, methods=["attention"])
    finally:
        del predictor.explain  # the class's method again
    (result,) = raw
    return explained, result


def _document_weights(result, i):
    """Review `i`'s weight of each real token in the review (HAN: word × sentence), the
    tokens in reading order, from the raw result with NumPy."""
    tokens = np.asarray(result["tokens"][i])
    weights = np.asarray(result["attention"][i], dtype=np.float64)
    if "sentence_attention" in result:
        weights = weights * np.asarray(result["sentence_attention"][i])[:, None]
    real = tokens != ""
    return list(tokens[real]), weights[real]


class _Spans(html.parser.HTMLParser):
    """The word spans of a card: `(class, title, word)` each."""

    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.spans, self.open, self.depth = [], None, 0

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        if tag == "div" and attrs.get("class") == "words":
            self.depth += 1
        elif tag == "span" and self.depth:
            self.open = [attrs.get("class") or "", attrs.get("title", ""), ""]

    def handle_data(self, data):
        if self.open is not None:
            self.open[2] += data

    def handle_endtag(self, tag):
        if tag == "span" and self.open is not None:
            self.spans.append(tuple(self.open))
            self.open = None
        elif tag == "div" and self.depth:
            self.depth -= 1


def _spans(card):
    parser = _Spans()
    parser.feed(card)
    return parser.spans


@pytest.mark.parametrize("family", ["rnn", "han"])
def test_words_of_weight_exactly_zero_are_unshaded_in_the_html(sparse, family):
    _, explained, result = sparse[family]
    zeros = shaded = 0
    for i, e in enumerate(explained):
        tokens, weights = _document_weights(result, i)
        spans = _spans(review_html(e, method="attention"))
        assert [word for _, _, word in spans] == tokens == e.tokens
        for (css, title, _), weight in zip(spans, weights, strict=True):
            if weight == 0:
                zeros += 1
                assert css == "zero" and "weight 0 (sparse attention)" in title
            else:  # every non-zero weight is shaded, however small
                shaded += 1
                assert re.fullmatch(r"w\d+", css), (css, weight)
    assert zeros and shaded  # the models give both
    page = to_html(explained)
    assert (
        "span.zero { color: #8c959f; background: none; }" in page
        and "grey, unshaded</span>: a word whose weight" in page
    )


@pytest.mark.parametrize("family", ["rnn", "han"])
def test_words_of_weight_exactly_zero_have_no_background_in_the_terminal(sparse, family):
    _, explained, result = sparse[family]
    for i, e in enumerate(explained):
        _, weights = _document_weights(result, i)
        styles = []
        for line in sentence_texts(e, "attention"):
            starts = {span.start: span.style for span in line.spans}
            offset = 0
            for word in line.plain.split(" ")[:-1]:
                styles.append(starts.get(offset))
                offset += len(word) + 1
        assert len(styles) == len(weights)
        for style, weight in zip(styles, weights, strict=True):
            if weight == 0:
                assert style == ZERO_STYLE and Style.parse(style).bgcolor is None
            else:
                assert Style.parse(style).bgcolor is not None, weight
    shown = to_terminal(explained[:1], file=False, color=True, method="attention")
    assert explained[0].attention_line() in shown.replace("\n", " ").replace("  ", " ")
    assert "dim words without a background: weight exactly 0" in shown
    plain = to_terminal(explained[:1], file=False, color=False, method="attention")
    assert "attention: sparsemax over words" in plain and "dim words" not in plain  # no dim


def _percent(zeros, total):
    return f"{100 * zeros / total:.0f} %"


def test_the_attention_line_names_sparsemax_and_counts_the_zeros(sparse):
    _, explained, result = sparse["rnn"]
    for i, e in enumerate(explained):
        _, weights = _document_weights(result, i)
        zeros = int(np.sum(weights == 0))
        assert e.attention_zeros() == {"words": [zeros, weights.size]}
        assert e.attention_line() == (
            f"attention: sparsemax over words ({_percent(zeros, weights.size)} of weights "
            "exactly 0)"
        )
    _, explained, result = sparse["han"]
    tokens = np.asarray(result["tokens"])
    for i, e in enumerate(explained):
        real = tokens[i] != ""
        words = np.asarray(result["attention"][i])[real]
        sentences = np.asarray(result["sentence_attention"][i])[real.any(-1)]
        word_zeros, sentence_zeros = int(np.sum(words == 0)), int(np.sum(sentences == 0))
        assert e.attention_zeros() == {
            "words": [word_zeros, words.size],
            "sentences": [sentence_zeros, sentences.size],
        }
        assert e.attention_line() == (
            f"attention: sparsemax over words and sentences ({_percent(word_zeros, words.size)} "
            f"of word weights and {_percent(sentence_zeros, sentences.size)} of sentence "
            "weights exactly 0)"
        )
    # carried by the JSON of hatt inspect --format json
    values = json.loads(json.dumps(explained[0].to_dict()))
    assert values["attention"]["sentence_attention"]["normalizer"] == "sparsemax"
    assert values["attention_line"] == explained[0].attention_line()
    assert values["attention_zeros"] == explained[0].attention_zeros()


def test_a_softmax_model_says_softmax_and_shades_every_word():
    predictor = _model("rnn", "softmax")
    explained = explain(predictor, TEXTS[:3], progress=False, methods=["attention"])
    for e in explained:
        assert e.attention["word_attention"]["normalizer"] == "softmax"
        assert e.attention_line() == "attention: softmax over words (0 % of weights exactly 0)"
        spans = _spans(review_html(e, method="attention"))
        assert spans and all(re.fullmatch(r"w\d+", css) for css, _, _ in spans)
        assert "grey, unshaded" not in review_html(e, method="attention")


def _explanation(attention, weights=((0.0, 0.7, 0.3),)):
    sentences = [["w"] * len(row) for row in weights]
    return Explanation(
        "w", "rnn", "attention", 0.7, sentences, [list(w) for w in weights], attention=attention
    )


def test_the_line_names_hard_and_local_attention_and_an_unknown_kind():
    options = dict(facts.ATTENTION_OPTIONS)
    hard = _explanation({"word_attention": {**options, "hard": "gumbel", "hard_k": 2}})
    assert hard.attention_line() == (
        "attention: hard attention (gumbel; top-2 at inference) over words "
        "(33 % of weights exactly 0)"
    )
    assert hard.zero_reasons("attention")[0] == ["weight 0 (hard attention)", None, None]
    local = {**options, "normalizer": "entmax15", "local_p": True, "window": 4}
    assert (
        _explanation({"word_attention": local})
        .attention_line()
        .startswith("attention: entmax-1.5 in a local-p window (D = 4) over words")
    )
    cold = {**options, "normalizer": "sparsemax", "temperature": 0.25}
    assert (
        _explanation({"word_attention": cold})
        .attention_line()
        .startswith("attention: sparsemax (temperature 0.25) over words")
    )
    served = explanation_json(_explanation({"word_attention": cold}))
    assert served["attention"] == {"word_attention": cold}
    assert served["attention_line"].startswith("attention: sparsemax (temperature 0.25)")
    unknown = _explanation(None)  # an export that did not record it: the zeros still count
    assert unknown.attention_line() == (
        "attention: normalizer not recorded over words (33 % of weights exactly 0)"
    )
    assert _explanation(None, [(0.5, 0.5)]).attention_line() is None  # nothing to point out
    assert unknown.zero_reasons("attention")[0][0] == "weight 0"
    assert "(< 1 %" in _explanation(None, [(0.5, 0.5)] * 200 + [(1.0, 0.0)]).attention_line()


def test_attention_facts_read_the_layers_configs_and_an_export_folder(tmp_path):
    inputs = keras.Input((None, 4))
    pooled = hatt.layers.ContextAttention(hard="gumbel", hard_k=3, name="word_attention")(inputs)
    model = keras.Model(inputs, pooled)
    found = facts.attention_facts(model.get_config())
    assert found == {
        "word_attention": {
            "normalizer": "softmax",
            "local_p": False,
            "window": None,
            "hard": "gumbel",
            "hard_k": 3,
            "temperature": 1.0,
        }
    }
    assert facts.attention_facts(hatt.models.build("cnn", vocabulary_size=20).get_config()) == {}
    # an export folder: model.keras is the newest version's, so only that version reads it
    folder = tmp_path / "saved_models" / "rnn"
    for version in (1, 2):
        (folder / str(version)).mkdir(parents=True)
        (folder / str(version) / "saved_model.pb").write_bytes(b"")
    with zipfile.ZipFile(folder / "model.keras", "w") as archive:
        archive.writestr("config.json", json.dumps(keras.saving.serialize_keras_object(model)))
    assert facts.saved_model_attention(folder / "2") == found
    assert facts.saved_model_attention(folder / "1") is None
    (folder / "model.keras").write_bytes(b"not a zip")
    assert facts.saved_model_attention(folder / "2") is None


@pytest.mark.slow  # an export and a server: about 40 s on 2 cores
def test_the_page_card_of_an_exported_model_names_its_attention(sparse, tmp_path):
    """A SavedModel, served: its attention read from its export folder's model.keras."""
    predictor, explained, _ = sparse["rnn"]  # the model in memory and its explanations
    text_model = predictor.text_model
    saved = export.write_export(text_model, tmp_path / "sparse").saved_model
    recorded = json.loads((Path(saved) / "assets.extra" / "hatt_export.json").read_text())
    assert recorded["attention"]["word_attention"]["normalizer"] == "sparsemax"
    model = serve.served_model("sparse", export.load(saved))
    app = serve.create_app({"sparse": model}, serve.Settings(max_batch_size=1))
    with TestClient(app) as client:
        ask = {"model": "sparse", "text": TEXTS[0], "method": "attention"}
        response = client.post("/ui/explain", json=ask)
    assert response.status_code == 200, response.text
    card = response.json()["html"]
    expected = explained[0]  # explain(predictor, TEXTS, methods=["attention"])'s first review
    assert '<p class="attention" title="' in card
    assert html.escape(expected.attention_line()) in card
    assert expected.attention_line().startswith("attention: sparsemax over words (")
    zeros = [css == "zero" for css, _, _ in _spans(card)]
    assert zeros == [w == 0 for w in expected.weights] and any(zeros)


@pytest.mark.slow
@pytest.mark.skipif(
    not (Path(CHROMIUM).is_file() and Path(CHROMEDRIVER).is_file()),
    reason="needs Debian's chromium and chromium-driver",
)
def test_in_a_browser_a_zero_has_no_background_and_a_small_weight_has_one(sparse, tmp_path):
    """The page's own CSS, as Chromium computes it (the serve page's cards share it)."""
    _, explained, _ = sparse["han"]
    page = tmp_path / "page.html"
    write_html(explained, page, method="attention")
    browser = chromium(tmp_path / "profile")
    try:
        browser.get(page.as_uri())
        backgrounds = browser.execute_script(
            "const of = (s) => [...document.querySelectorAll('.view.m-attention ' + s)]"
            "  .map((e) => getComputedStyle(e).backgroundColor);"
            "return {zero: of('.words span.zero'), shaded: of('.words span[class^=w]')};"
        )
    finally:
        browser.quit()
    assert backgrounds["zero"] and set(backgrounds["zero"]) == {"rgba(0, 0, 0, 0)"}
    assert backgrounds["shaded"] and "rgba(0, 0, 0, 0)" not in backgrounds["shaded"]
