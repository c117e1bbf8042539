"""The renderers: HTML (parses, every token, self-contained), PNG (size), terminal (tokens)."""

import html
import html.parser
import io
import re
import struct
from pathlib import Path
from xml.etree import ElementTree

import numpy as np
import pytest

from hatt.export.attribution import METHODS
from hatt.inspect import (
    explain,
    png_size,
    to_html,
    to_png,
    to_terminal,
    write_html,
    write_pngs,
)
from hatt.inspect import html as html_module
from hatt.inspect import png as png_module
from hatt.inspect.explanation import is_signed, method_label
from hatt.inspect.html import review_html
from tests.inspect._fake import FakePredictor

TRICKY = (
    'Superb <b>"bold"</b> &amp; more & less < 3 >.<br /><br />The "actor" '
    "was it 😀 good?<br />" + " ".join(["watch"] * 30) + "."
)
REVIEWS = [TRICKY, "Dreadful. The plot was it.", ""]


VOID = {"meta", "br", "img", "link", "hr", "input"}


class _Page(html.parser.HTMLParser):
    """Strict: every tag closed in order. Collects, per method view (`div.view.m-METHOD`),
    the word spans and their titles; the <details> text; radio inputs; anything external."""

    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.words, self.titles, self.classes = {}, {}, {}
        self.details, self.external, self.inputs = [], [], []
        self.stack, self.in_words, self.view = [], 0, None

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        if tag not in VOID:
            self.stack.append((tag, attrs))
        classes = (attrs.get("class") or "").split()
        if tag == "div" and "view" in classes:
            self.view = next(c[2:] for c in classes if c.startswith("m-"))
        if tag == "div" and classes == ["words"]:
            self.in_words += 1
        if tag == "input":
            self.inputs.append(attrs)
        if tag == "script" or "src" in attrs or tag == "link":
            self.external.append((tag, attrs))
        for value in attrs.values():
            if value and ("http:" in value or "https:" in value or "url(" in value):
                self.external.append((tag, attrs))
        if tag == "span" and self.in_words:
            self.titles.setdefault(self.view, []).append(attrs.get("title", ""))
            self.classes.setdefault(self.view, []).append(attrs.get("class", ""))

    def handle_endtag(self, tag):
        opened, attrs = self.stack.pop()
        assert opened == tag, f"</{tag}> closes <{opened}>"
        if tag == "div" and attrs.get("class") == "words":
            self.in_words -= 1
        if tag == "div" and "view" in (attrs.get("class") or "").split():
            self.view = None

    def handle_data(self, data):
        if not self.stack:
            return
        tag, _ = self.stack[-1]
        if tag == "span" and self.in_words:
            self.words.setdefault(self.view, []).append(data)
        if tag == "div" and len(self.stack) > 1 and self.stack[-2][0] == "details":
            self.details.append(data)


def parse(page):
    parser = _Page()
    parser.feed(page)
    parser.close()
    assert not parser.stack, "every tag is closed"
    return parser


@pytest.fixture(scope="module", params=["han", "rnn", "cnn"])
def explained(request, tiny):
    model, vectorizer = tiny[request.param].model, tiny[request.param].vectorizer
    return explain(model, REVIEWS, labels=[1, 0, 1], vectorizer=vectorizer)


def test_html_holds_every_token_with_its_weight_and_parses(explained):
    page = to_html(explained, title='Tiny <model> & "quotes"')
    parser = parse(page)
    assert parser.external == []
    assert "<script" not in page.lower() and "src=" not in page.lower()
    views = explained[0].views
    assert set(parser.words) == set(views)  # every method's view is in the page
    for method in views:
        tokens = [t for e in explained for t in e.tokens]
        assert parser.words[method] == tokens  # every token, in order, unescaped back exactly
        scores = [w for e in explained for s in e.scores[method] for w in s]
        shown = [float(title.split()[0]) for title in parser.titles[method]]
        np.testing.assert_allclose(shown, scores, atol=5e-5)  # hover: the raw scores
    assert "😀" in parser.words[views[0]] and "watch" in parser.words[views[0]]
    assert parser.details == [e.text for e in explained if e.text]  # raw text, escaped, intact
    assert "Tiny &lt;model&gt; &amp; &quot;quotes&quot;" in page
    family = explained[0].family
    labels = ", ".join(method_label(m) for m in views)
    assert f"{family} · {labels}" in page
    assert "true positive" in page and "true negative" in page
    assert "empty for the model" in page  # the "" review


def test_png_has_the_documented_size(explained, tmp_path):
    paths = write_pngs(explained, tmp_path / "review.png")
    assert [p.name for p in paths] == ["review_1.png", "review_2.png", "review_3.png"]
    for e, path in zip(explained, paths, strict=True):
        header = path.read_bytes()[:24]
        assert header[:8] == b"\x89PNG\r\n\x1a\n"
        width, height = struct.unpack(">II", header[16:24])
        rows = len(png_module._grid(e)[0])
        header = png_module._header_inches(png_module._captions(e, None))  # wrapped captions
        assert header >= png_module.HEADER_INCHES
        expected = round(png_module.DPI * (header + png_module.ROW_INCHES * max(rows, 1)))
        assert (width, height) == png_size(e) == (1600, expected)
    # one review: the name as given
    assert write_pngs(explained[:1], tmp_path / "one.png") == [tmp_path / "one.png"]


@pytest.mark.parametrize("method", [None, "all"])
def test_png_captions_wrap_within_the_image(method):
    """Issue 63: captions were cut at the right edge ("the words sum to logit − baseli…")."""
    warning = "The deep part has a negative weight " + "and a long reason " * 30 + ": the rest"
    predictor = FakePredictor("han")
    predictor.metadata = {"warnings": [warning]}
    (e,) = explain(
        predictor, ["A superb film, good acting. But the ending was bad."], progress=False
    )
    fig = png_module.figure(e, method)
    try:
        renderer = fig.canvas.get_renderer()
        captions = [t for t in fig.texts if t.get_text()]
        assert any("\n" in t.get_text() for t in captions)  # something did wrap
        for text in captions:
            assert text.get_window_extent(renderer).x1 <= png_module.WIDTH_PX, text.get_text()
        words = " ".join(" ".join(t.get_text().split()) for t in captions)
        assert " ".join(("warning: " + warning.split(":")[0]).split()) in words  # all of it
    finally:
        png_module.plt.close(fig)


def test_png_caps_long_reviews(tmp_path):
    # 12 sentences of 45 words: each wraps onto 3 rows of at most 20 words; 36 rows > 30
    long_review = " ".join(" ".join(["the plot was superb"] * 11) + f" {i}." for i in range(12))
    # a HAN's explanation that keeps every word (tests/inspect/_fake.py): the grid, not the
    # model, is under test (a tiny HAN with room for 12 sentences of 45 words gives the same)
    (e,) = explain(FakePredictor("han"), [long_review], progress=False)
    assert len(e.sentences) == 12 and {len(s) for s in e.sentences} == {45}
    rows, strip, starts, columns, notes = png_module._grid(e)
    assert len(rows) == png_module.MAX_ROWS and "6 more rows not shown" in notes
    assert columns == png_module.MAX_COLUMNS and starts[:4] == [True, False, False, True]
    assert [len(words) for words, _ in rows[:3]] == [20, 20, 5]
    to_png(e, tmp_path / "long.png")
    width, height = struct.unpack(">II", (tmp_path / "long.png").read_bytes()[16:24])
    assert (width, height) == png_size(e)


def test_terminal_prints_every_token(explained):
    out = io.StringIO()
    text = to_terminal(explained, file=out, color=False, width=100)
    printed = out.getvalue()
    assert printed == text
    assert "\x1b[" not in printed  # no colour codes when not a terminal
    for e in explained:
        for token in e.tokens:
            assert token in printed
    method = explained[0].default_method()  # attention, else gradient × input
    assert "Review 1" in printed and method_label(method) in printed
    # without colour the strongest words are marked: *word*, or [+word] / [-word] when signed
    shading = [v for s in explained[1].display_scores(method) for v in s]
    strongest = int(np.argmax(np.abs(shading)))
    top = explained[1].tokens[strongest]
    mark = (
        f"*{top}*" if not is_signed(method) else f"[{'+' if shading[strongest] > 0 else '-'}{top}]"
    )
    assert mark in printed
    coloured = io.StringIO()
    to_terminal(explained, file=coloured, color=True, width=100)
    assert "\x1b[" in coloured.getvalue()


def test_write_html_splits_many_reviews_into_linked_pages(explained, tmp_path):
    many = explained * 3  # 9 reviews, 4 a page: out.html, out-2.html, out-3.html
    first = write_html(many, tmp_path / "out.html", max_reviews=4)
    assert first == tmp_path / "out.html"
    pages = [tmp_path / name for name in ("out.html", "out-2.html", "out-3.html")]
    assert sorted(tmp_path.iterdir()) == sorted(pages)
    words, numbers = [], []
    for page in pages:
        text = page.read_text(encoding="utf-8")
        words += parse(text).words.get(many[0].default_method(), [])
        numbers += [int(n) for n in re.findall(r'<section class="review" id="review-(\d+)"', text)]
        assert all(f'href="{other.name}"' in text for other in pages if other != page)
    assert words == [t for e in many for t in e.tokens]  # every review once, in order
    assert numbers == list(range(1, 10))
    assert "Reviews 5–8 of 9, page 2 of 3" in pages[1].read_text(encoding="utf-8")
    # one page when they fit (the default cap is 100), without page links
    single = write_html(many, tmp_path / "one" / "all.html")
    assert (
        list(single.parent.iterdir()) == [single] and '<nav class="pages"' not in single.read_text()
    )
    with pytest.raises(ValueError, match="max_reviews=0"):
        write_html(many, tmp_path / "bad.html", max_reviews=0)


def test_explain_shows_progress_on_stderr_unless_told_not_to(tiny, capsys):
    model, vectorizer = tiny["rnn"].model, tiny["rnn"].vectorizer
    explain(model, REVIEWS, vectorizer=vectorizer, batch_size=2)  # 2 batches, 3 reviews
    captured = capsys.readouterr()
    assert "3/3" in captured.err and captured.out == ""
    explain(model, REVIEWS, vectorizer=vectorizer, batch_size=2, progress=False)
    captured = capsys.readouterr()
    assert captured.err == "" and captured.out == ""


# --- every method: the switch, the palettes, the legend (a stand-in with known numbers) ----

SCRIPTED = [
    "A superb cast <script>alert('x')</script>. The plot was bad.",
    "Dreadful! Bad, bad.",
    "",
]


@pytest.fixture(params=["han", "rnn"])
def scored(request):
    """Explanations of every method (tests/inspect/_fake.py: known scores)."""
    return explain(FakePredictor(request.param), SCRIPTED, labels=[1, 0, 1], progress=False)


def _rgb(style):
    """The (r, g, b) and alpha of a `background:rgba(...)` style."""
    r, g, b, a = re.search(r"rgba\((\d+),(\d+),(\d+),([\d.]+)\)", style).groups()
    return (int(r), int(g), int(b)), float(a)


def test_html_page_holds_every_method_behind_a_switch_and_escapes_the_review(scored):
    page = to_html(scored, method="integrated_gradients")
    parser = parse(page)
    assert parser.external == [] and "<script" not in page.lower()
    assert "&lt;script&gt;alert(&#x27;x&#x27;)&lt;/script&gt;" in page  # the raw text, as text
    assert parser.details[0] == SCRIPTED[0]
    tokens = [t for e in scored for t in e.tokens]
    for method in METHODS:  # each method's scores, for every token, in the page
        assert parser.words[method] == tokens
        shown = [float(title.split()[0]) for title in parser.titles[method]]
        expected = [v for e in scored for s in e.scores[method] for v in s]
        np.testing.assert_allclose(shown, expected, atol=5e-5)
    # the switch: a radio input per method and "all", the asked one checked, a label each,
    # and CSS that hides the other methods' views
    assert [i["id"] for i in parser.inputs] == [f"show-{m}" for m in (*METHODS, "all")]
    assert [i["id"] for i in parser.inputs if "checked" in i] == ["show-integrated_gradients"]
    assert all(i["type"] == "radio" and i["name"] == "method" for i in parser.inputs)
    for m in (*METHODS, "all"):
        assert f'<label for="show-{m}">' in page
    for m in METHODS:
        assert f"#show-{m}:checked ~ .switched .view:not(.m-{m}) {{ display: none; }}" in page
    assert "#show-all:checked ~ .switched .view" not in page  # "all": every view shows
    opened = [i["id"] for i in parse(to_html(scored)).inputs if "checked" in i]
    assert opened == ["show-total"]  # the default view: the whole prediction


def test_review_fragment_is_well_formed_xml_with_a_view_per_method(scored):
    e = scored[0]
    fragment = review_html(e, number=3, method="all")
    root = ElementTree.fromstring(fragment)  # strict: well-formed, entities escaped
    views = [d.get("class") for d in root.iter("div") if "view" in d.get("class", "").split()]
    assert views == [f"view m-{m}" for m in METHODS]
    assert root.get("id") == "review-3"
    one = ElementTree.fromstring(review_html(e, method="ngram"))
    assert [d.get("class") for d in one.iter("div") if d.get("class", "").startswith("view")] == [
        "view m-ngram"
    ]
    # hatt serve's call still works: the default view alone, the total
    default = ElementTree.fromstring(review_html(e, number=1, heading="m · version 1"))
    assert [d.get("class") for d in default.iter("div") if "view" in d.get("class", "")] == [
        "view m-total"
    ]


def test_signed_scores_use_a_diverging_palette_and_attention_a_sequential_one(scored):
    page = to_html(scored)
    parser = parse(page)
    shades = dict(re.findall(r"\.words \.(\w+) \{ background: (rgba\([^)]*\)); \}", page))
    assert len(shades) == 3 * html_module.LEVELS  # every shade a class, defined in the page

    def colour_of(css_class):
        return _rgb(shades[css_class]) if css_class else (None, 0.0)

    e = scored[0]  # "superb" (+2) towards the predicted positive class, "bad" (-1) against
    index = {t: i for i, t in enumerate(e.tokens)}
    for method in ("total", "gradient_x_input", "integrated_gradients", "ngram"):
        classes = parser.classes[method]
        towards, strong = colour_of(classes[index["superb"]])
        against, weak = colour_of(classes[index["bad"]])
        assert towards == html_module.TOWARDS_RGB and against == html_module.AGAINST_RGB
        assert strong == pytest.approx(0.85) and weak == pytest.approx(0.425)
    attention = parser.classes["attention"]
    assert {colour_of(attention[index[t]])[0] for t in ("superb", "bad")} == {html_module.WORD_RGB}
    # 0 is neutral: no class, no colour; the sign picks the hue, not the size
    assert html_module.shade_class(0.0, True) == "" == html_module.shade_class(0.02, True)
    assert (
        html_module.shade_class(-0.5, True) == "n10" and html_module.shade_class(0.5, True) == "p10"
    )
    assert html_module.shade_class(0.5, False) == "w10"
    # the sentence bands: the same diverging hues, transparent at 0
    assert _rgb(html_module.colour(0.0, True))[1] == 0.0
    assert _rgb(html_module.colour(-0.5, True))[0] == html_module.AGAINST_RGB
    assert _rgb(html_module.colour(0.5, True))[0] == html_module.TOWARDS_RGB
    assert _rgb(html_module.colour(0.5, False))[0] == html_module.WORD_RGB


def test_the_legend_says_which_method_is_shown_and_which_class_it_explains(scored):
    page = to_html(scored)
    # two reviews predicted positive, one negative: the legend points at each review's class
    assert "explains the logit of each review&#x27;s predicted class" in page
    assert "<b>integrated gradients</b>: integrated gradients over the word embeddings" in page
    assert "class-agnostic" in page and "<b>attention</b>" in page
    assert "each word&#x27;s contribution to the logit of &#x27;negative&#x27;" in page
    one = to_html(scored[:1])
    assert "<b>n-gram channel</b>: the n-gram channel&#x27;s exact share" in one
    assert "Signed: it explains the logit of class &#x27;positive&#x27;." in one
    assert 'class="legend view m-ngram"' in one  # switched with the method
    # the decomposition: deep part + n-gram channel + bias = the logit, on every review,
    # and the same logit as the words' total + the baseline
    for e in scored:
        assert html.escape(f"{e.decomposition_line()} {e.total_line()}") in page
    assert "completeness error 1.00 %" in page
    assert "<b>total</b>: each word&#x27;s contribution to the whole logit" in page


def test_a_method_the_model_lacks_is_a_clear_error(scored, tmp_path):
    cnn = explain(FakePredictor("cnn", methods=("gradient_x_input", "integrated_gradients")),
                  SCRIPTED[:1])  # fmt: skip
    with pytest.raises(ValueError, match=r"methods \('gradient_x_input', 'integrated_gradients'\)"
                       r" or 'all'. Received: method='attention'"):  # fmt: skip
        to_html(cnn, method="attention")
    with pytest.raises(ValueError, match="method='attention'"):
        review_html(cnn[0], method="attention")
    with pytest.raises(ValueError, match="method='bogus'"):
        write_html(scored, tmp_path / "page.html", method="bogus")
    with pytest.raises(ValueError, match="method='ngram'"):
        to_terminal(cnn, file=False, method="ngram")
    with pytest.raises(ValueError, match="method='ngram'"):
        write_pngs(cnn, tmp_path / "review.png", method="ngram")
    assert list(tmp_path.iterdir()) == []  # nothing written


@pytest.mark.parametrize("method", [*METHODS, "all"])
def test_terminal_shows_each_method_and_all(scored, method):
    text = to_terminal(scored, file=False, color=False, width=120, method=method)
    for e in scored:
        assert e.decomposition_line() in text and e.total_line() in text
        for token in e.tokens:
            assert token in text
    shown = METHODS if method == "all" else (method,)
    for m in shown:
        assert method_label(m) in text
    if method == "all":
        assert all(scored[0].method_note(m) in " ".join(text.split()) for m in METHODS)
    elif is_signed(method):  # "superb" for the positive prediction, "bad" against it
        assert "[+superb]" in text and "[-bad]" in text
    else:
        assert "*superb*" in text and "[+" not in text


@pytest.mark.parametrize("method", [*METHODS, "all"])
def test_png_shows_each_method_and_all_at_its_documented_size(scored, method, tmp_path):
    e = scored[0]
    path = to_png(e, tmp_path / f"{method}.png", method=method)
    width, height = struct.unpack(">II", path.read_bytes()[16:24])
    rows = max(len(png_module._grid(e, "attention")[0]), 1)
    panels = len(METHODS) if method == "all" else 1
    titles = sum(  # a panel's title wrapped onto more lines
        png_module._extra_inches(
            png_module._wrap(e.method_note(m), png_module.TITLE), png_module.TITLE
        )
        for m in (METHODS if panels > 1 else ())
    )
    inches = (
        png_module._header_inches(png_module._captions(e, method))
        + titles
        + (
            panels * (png_module.PANEL_INCHES + png_module.ROW_INCHES * rows)
            if panels > 1
            else png_module.ROW_INCHES * rows
        )
    )
    assert (width, height) == png_size(e, method) == (1600, round(png_module.DPI * inches))
    if is_signed(method):  # the diverging map: signed shading in [-1, 1]
        shading = [v for row in png_module._grid(e, method)[0] for v in row[1]]
        assert min(shading) < 0 < max(shading) and max(map(abs, shading)) == pytest.approx(1)


def test_a_png_cut_short_leaves_no_file(tmp_path, monkeypatch):
    # issue 63, second pass: `inspect --png` on a full disk left a 0-byte PNG at the path
    import errno

    import matplotlib.figure

    (e,) = explain(FakePredictor("cnn"), ["a fine film"], progress=False)

    def full(self, path, **kwargs):
        Path(path).write_bytes(b"")
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(matplotlib.figure.Figure, "savefig", full)
    with pytest.raises(OSError, match="No space left"):
        to_png(e, tmp_path / "i.png")
    assert list(tmp_path.iterdir()) == []
