"""The renderers: HTML (parses, every token, self-contained), PNG (size), terminal (tokens)."""

import html.parser
import io
import re
import struct

import numpy as np
import pytest

import hatt
from hatt.inspect import (
    explain,
    png_size,
    to_html,
    to_png,
    to_terminal,
    write_html,
    write_pngs,
)
from hatt.inspect import png as png_module

TRICKY = (
    'Superb <b>"bold"</b> &amp; more & less < 3 >.<br /><br />The "actor" '
    "was it 😀 good?<br />" + " ".join(["watch"] * 30) + "."
)
REVIEWS = [TRICKY, "Dreadful. The plot was it.", ""]


VOID = {"meta", "br", "img", "link", "hr", "input"}


class _Page(html.parser.HTMLParser):
    """Collects the word spans, their titles, the <details> text and anything external."""

    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.words, self.titles, self.details, self.external = [], [], [], []
        self.stack, self.in_words = [], 0

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        if tag not in VOID:
            self.stack.append((tag, attrs))
        if tag == "div" and attrs.get("class") == "words":
            self.in_words += 1
        if tag == "script" or "src" in attrs or tag == "link":
            self.external.append((tag, attrs))
        for value in attrs.values():
            if value and ("http:" in value or "https:" in value or "url(" in value):
                self.external.append((tag, attrs))
        if tag == "span" and self.in_words:
            self.titles.append(attrs.get("title", ""))

    def handle_endtag(self, tag):
        opened, attrs = self.stack.pop()
        assert opened == tag, f"</{tag}> closes <{opened}>"
        if tag == "div" and attrs.get("class") == "words":
            self.in_words -= 1

    def handle_data(self, data):
        if not self.stack:
            return
        tag, _ = self.stack[-1]
        if tag == "span" and self.in_words:
            self.words.append(data)
        if tag == "div" and len(self.stack) > 1 and self.stack[-2][0] == "details":
            self.details.append(data)


@pytest.fixture(scope="module", params=["han", "rnn", "cnn"])
def explained(request, tiny):
    model, vectorizer = tiny[request.param].model, tiny[request.param].vectorizer
    return explain(model, REVIEWS, labels=[1, 0, 1], vectorizer=vectorizer)


def test_html_holds_every_token_with_its_weight_and_parses(explained):
    page = to_html(explained, title='Tiny <model> & "quotes"')
    parser = _Page()
    parser.feed(page)
    parser.close()
    assert not parser.stack, "every tag is closed"
    assert parser.external == []
    assert "<script" not in page.lower() and "src=" not in page.lower()
    tokens = [t for e in explained for t in e.tokens]
    assert parser.words == tokens  # every token, in order, unescaped back exactly
    assert "😀" in tokens and "watch" in tokens
    weights = [w for e in explained for w in e.weights]
    shown = [float(title.split()[1]) for title in parser.titles]
    np.testing.assert_allclose(shown, weights, atol=5e-5)  # hover: the model's weights
    assert parser.details == [e.text for e in explained if e.text]  # raw text, escaped, intact
    assert "Tiny &lt;model&gt; &amp; &quot;quotes&quot;" in page
    family = explained[0].family
    assert f"{family} · {explained[0].score_kind}" in page
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
        expected = round(
            png_module.DPI * (png_module.HEADER_INCHES + png_module.ROW_INCHES * max(rows, 1))
        )
        assert (width, height) == png_size(e) == (1600, expected)
    # one review: the name as given
    assert write_pngs(explained[:1], tmp_path / "one.png") == [tmp_path / "one.png"]


def test_png_caps_long_reviews(tiny, tmp_path):
    model = tiny["han"].model
    vectorizer = hatt.data.Vectorizer(  # room for 12 sentences of 45 words
        min_count=1, output_mode="nested", max_sentences=16, max_words=48,
        vocabulary=tiny["han"].vectorizer.get_vocabulary(False),
    )  # fmt: skip
    # 12 sentences of 45 words: each wraps onto 3 rows of at most 20 words; 36 rows > 30
    long_review = " ".join(" ".join(["the plot was superb"] * 11) + f" {i}." for i in range(12))
    (e,) = explain(model, [long_review], vectorizer=vectorizer)
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
    assert "Review 1" in printed and explained[0].score_kind in printed
    # without colour the strongest words are marked
    top = explained[1].tokens[int(np.argmax(explained[1].weights))]
    assert f"*{top}*" in printed
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
        parser = _Page()
        parser.feed(text)
        parser.close()
        words += parser.words
        numbers += [int(n) for n in re.findall(r'<section class="review" id="review-(\d+)"', text)]
        assert all(f'href="{other.name}"' in text for other in pages if other != page)
    assert words == [t for e in many for t in e.tokens]  # every review once, in order
    assert numbers == list(range(1, 10))
    assert "Reviews 5–8 of 9, page 2 of 3" in pages[1].read_text(encoding="utf-8")
    # one page when they fit (the default cap is 200), without page links
    single = write_html(many, tmp_path / "one" / "all.html")
    assert list(single.parent.iterdir()) == [single] and "<nav" not in single.read_text()
    with pytest.raises(ValueError, match="max_reviews=0"):
        write_html(many, tmp_path / "bad.html", max_reviews=0)


def test_explain_shows_progress_on_stderr_unless_told_not_to(tiny, capsys):
    model, vectorizer = tiny["rnn"].model, tiny["rnn"].vectorizer
    explain(model, REVIEWS, vectorizer=vectorizer, batch_size=1)
    captured = capsys.readouterr()
    assert "3/3" in captured.err and captured.out == ""
    explain(model, REVIEWS, vectorizer=vectorizer, batch_size=1, progress=False)
    captured = capsys.readouterr()
    assert captured.err == "" and captured.out == ""
