"""`hatt inspect` end to end on tiny models saved as run directories."""

import html
import html.parser
import json
import re
import struct

import numpy as np
import pytest

from hatt import cli, export
from hatt.inspect import explain, png_size
from tests.data.conftest import write_tiny_imdb
from tests.inspect._backwards import write_backwards_run
from tests.inspect._fake import FakePredictor

REVIEW = 'The plot was superb! The "actor" was it &amp; 😀.<br />Watch it'


class _Words(html.parser.HTMLParser):
    """The words of each method's view (`div.view.m-METHOD`) of a page."""

    def __init__(self):
        super().__init__()
        self.words, self.depth, self.view = {}, 0, None

    def handle_starttag(self, tag, attrs):
        classes = (dict(attrs).get("class") or "").split()
        if tag == "div" and "view" in classes:
            self.view = next(c[2:] for c in classes if c.startswith("m-"))
        if tag == "div" and ("class", "words") in attrs:
            self.depth += 1

    def handle_endtag(self, tag):
        if tag == "div" and self.depth:
            self.depth -= 1

    def handle_data(self, data):
        if self.depth and data.strip():
            self.words.setdefault(self.view, []).append(data)


@pytest.mark.parametrize("family", ["han", "rnn"])
def test_inspect_writes_terminal_html_and_png(tiny, tmp_path, capsys, family):
    run_dir = tiny[family].run_dir
    out = tmp_path / "out"
    argv = [
        "inspect", str(run_dir), "--text", REVIEW, "--html", str(out / "page.html"),
        "--png", str(out / "review.png"), "--json", str(tmp_path / "e.json"),
    ]  # fmt: skip
    assert cli.main(argv) == 0
    captured = capsys.readouterr()
    expected = explain(run_dir, [REVIEW])[0]
    assert expected.tokens == ["the", "plot", "was", "superb", "the", "actor", "was", "it",
                               "😀", "watch", "it"]  # fmt: skip
    for token in expected.tokens:
        assert token in captured.out  # the terminal view
    assert "total" in captured.out and "1 review(s) explained" in captured.err
    assert "(shown: total)" in captured.err and "warning" not in captured.err  # nothing to warn
    page = (out / "page.html").read_text(encoding="utf-8")
    parser = _Words()
    parser.feed(page)
    parser.close()
    assert parser.words == {m: expected.tokens for m in expected.views}  # every method's view
    assert "<script" not in page and "http" not in page.replace("hatt", "")
    header = (out / "review.png").read_bytes()[:24]
    assert header[:8] == b"\x89PNG\r\n\x1a\n"
    assert struct.unpack(">II", header[16:24]) == png_size(expected)
    saved = json.loads((tmp_path / "e.json").read_text(encoding="utf-8"))
    assert saved[0]["sentences"] == expected.sentences and saved[0]["family"] == family


def test_inspect_reads_files_and_imdb_test_reviews(tiny, tmp_path, monkeypatch, capsys):
    reviews = tmp_path / "reviews.txt"
    reviews.write_bytes(b"A superb film.\n\nDreadful \xff\xfe plot.\n")  # invalid UTF-8
    assert cli.main(["inspect", str(tiny["cnn"].run_dir), "--file", str(reviews), "--quiet"]) == 0
    captured = capsys.readouterr()
    # the default view is the total, attention or not
    assert re.search(r"2 review\(s\) explained with .* scores \(shown: total\)", captured.err)
    assert captured.out == ""
    monkeypatch.setenv("HATT_CACHE", str(tmp_path / "cache"))
    root = write_tiny_imdb(tmp_path / "corpus")
    pages = tmp_path / "imdb.html"
    argv = ["inspect", str(tiny["han"].run_dir), "--imdb-test", "4", "--data", str(root),
            "--html", str(pages), "--no-color"]  # fmt: skip
    assert cli.main(argv) == 0
    out = capsys.readouterr().out
    assert out.count("Review ") == 4 and "\x1b[" not in out
    page = pages.read_text(encoding="utf-8")
    assert page.count("true positive") == 2 and page.count("true negative") == 2
    assert page.count('<section class="review"') == 4
    for word in ("lovely", "masterpiece", "rubbish", "waste"):  # the tiny test split
        assert word in page


def test_inspect_errors_are_one_line(tiny, tmp_path, capsys):
    run_dir = tiny["rnn"].run_dir
    assert cli.main(["inspect", str(tmp_path / "missing"), "--text", "a"]) == 2
    assert "hatt inspect: error:" in capsys.readouterr().err
    assert cli.main(["inspect", str(run_dir), "--file", str(tmp_path / "no.txt")]) == 2
    assert "No such file" in capsys.readouterr().err
    with pytest.raises(SystemExit):  # argparse: one source is required
        cli.main(["inspect", str(run_dir)])


@pytest.mark.parametrize("family", ["cnn", "han"])
def test_explain_on_a_loaded_predictor_equals_the_text_model_in_memory(tiny, family):
    texts = [REVIEW, "Dreadful. The plot was it.", ""]
    model, vectorizer = tiny[family].model, tiny[family].vectorizer
    served = export.TextModel(model, vectorizer)(texts)
    loaded = explain(export.load(tiny[family].run_dir), texts)
    for i, e in enumerate(loaded):
        assert (
            e.family == family
            and e.tokens == explain(model, texts, vectorizer=vectorizer)[i].tokens
        )
        assert e.probability == pytest.approx(float(served["probability"][i]), abs=1e-5)
        word = np.asarray(served["word_attention"])[i]
        if family == "han":
            sentence = np.asarray(served["sentence_attention"])[i]
            np.testing.assert_allclose(e.sentence_weights, sentence[: len(e.sentences)], atol=1e-5)
            for s, weights in enumerate(e.word_weights):
                np.testing.assert_allclose(weights, word[s, : len(weights)], atol=1e-5)
        else:
            np.testing.assert_allclose(e.weights, word[: len(e.tokens)], atol=1e-5)


def test_inspect_splits_a_long_html_report_into_linked_pages(tiny, tmp_path, capsys):
    """--html-per-page caps each page; every page is written and named on stderr."""
    run_dir = tiny["rnn"].run_dir
    reviews = tmp_path / "reviews.txt"
    reviews.write_text("\n".join(f"review {i} was superb" for i in range(5)) + "\n")
    page = tmp_path / "page.html"
    argv = ["inspect", str(run_dir), "--file", str(reviews), "--html", str(page)]
    assert cli.main([*argv, "--html-per-page", "2", "--quiet"]) == 0
    err = capsys.readouterr().err
    pages = [page, tmp_path / "page-2.html", tmp_path / "page-3.html"]
    for path in pages:
        assert path.exists() and f"wrote {path}" in err
    assert not (tmp_path / "page-4.html").exists()
    assert "page-2.html" in pages[0].read_text(encoding="utf-8")
    assert cli.main([*argv, "--html-per-page", "-1"]) == 2
    assert "--html-per-page" in capsys.readouterr().err


# --- --method and --steps (a stand-in model with every method: tests/inspect/_fake.py) ------


@pytest.fixture
def fake_model(monkeypatch):
    """`hatt inspect fake ...` explains with a FakePredictor (the family set by the test)."""

    def use(predictor):
        monkeypatch.setattr(export, "as_predictor", lambda model, vectorizer=None: predictor)
        return predictor

    return use


MIXED = "A superb cast. The plot was bad."


def test_inspect_method_and_steps_reach_every_view_and_the_json(fake_model, tmp_path, capsys):
    fake = fake_model(FakePredictor("han"))
    argv = [
        "inspect", "fake", "--text", MIXED, "--text", "Dreadful!", "--method",
        "integrated_gradients", "--steps", "9", "--no-color", "--json", str(tmp_path / "e.json"),
        "--html", str(tmp_path / "page.html"), "--png", str(tmp_path / "review.png"),
    ]  # fmt: skip
    assert cli.main(argv) == 0
    captured = capsys.readouterr()
    assert [steps for _, steps in fake.calls] == [9]  # --steps reaches the model
    out = captured.out
    assert "han · integrated gradients (logit of positive)" in out
    assert "logit of 'positive' " in out and "+ n-gram channel " in out  # the decomposition
    assert "[+superb]" in out and "[-bad]" in out and "attention" not in out.split("\n", 1)[1]
    assert "(shown: integrated_gradients)" in captured.err
    saved = json.loads((tmp_path / "e.json").read_text(encoding="utf-8"))
    for review in saved:  # the JSON has every method whatever --method shows
        assert set(review["scores"]) == {"attention", "total", "gradient_x_input",
                                         "integrated_gradients", "ngram"}  # fmt: skip
        d = review["decomposition"]
        assert d["deep"] + d["ngram"] + d["bias"] == pytest.approx(d["logit"], abs=1e-5)
        assert review["completeness_error"] == pytest.approx(0.01, abs=1e-4)
    assert [r["explained_class"] for r in saved] == [1, 0]
    page = (tmp_path / "page.html").read_text(encoding="utf-8")
    assert 'id="show-integrated_gradients" checked' in page
    assert (tmp_path / "review_1.png").exists() and (tmp_path / "review_2.png").exists()


def test_inspect_method_all_shows_every_method(fake_model, capsys):
    fake_model(FakePredictor("rnn"))
    assert cli.main(["inspect", "fake", "--text", MIXED, "--method", "all", "--no-color"]) == 0
    out = " ".join(capsys.readouterr().out.split())
    for note in ("attention: the model's own weights", "gradient × input: each word's",
                 "total: each word's contribution to the logit",
                 "integrated gradients: each word's", "n-gram channel: each word's"):  # fmt: skip
        assert note in out
    assert "rnn · every method" in out


def test_inspect_rejects_a_method_the_model_lacks_before_running_it(fake_model, capsys):
    fake = fake_model(FakePredictor("cnn", methods=("gradient_x_input", "integrated_gradients")))
    assert cli.main(["inspect", "fake", "--text", MIXED, "--method", "ngram"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "hatt inspect: error: Expected --method to be one of this " \
        "model's methods ('gradient_x_input', 'integrated_gradients') or 'all'. " \
        "Received: --method ngram" in err  # fmt: skip
    assert fake.calls == []
    assert cli.main(["inspect", "fake", "--text", MIXED, "--steps", "0"]) == 2
    assert "--steps" in capsys.readouterr().err and fake.calls == []
    with pytest.raises(SystemExit):  # argparse: not a method at all
        cli.main(["inspect", "fake", "--text", MIXED, "--method", "lime"])
    assert "invalid choice: 'lime'" in capsys.readouterr().err
    assert cli.main(["inspect", "fake", "--text", MIXED, "--quiet"]) == 0
    # an export before the total view, without attention: gradient x input by default
    assert "(shown: gradient_x_input)" in capsys.readouterr().err


def test_inspect_method_all_on_a_real_model(tiny, tmp_path, capsys):
    run_dir = tiny["han"].run_dir
    argv = ["inspect", str(run_dir), "--text", REVIEW, "--method", "all", "--steps", "8",
            "--no-color", "--json", str(tmp_path / "e.json"), "--html", str(tmp_path / "p.html")]  # fmt: skip
    assert cli.main(argv) == 0
    out = capsys.readouterr().out
    assert "han · every method" in out and "logit of " in out and "n-gram channel" in out
    (saved,) = json.loads((tmp_path / "e.json").read_text(encoding="utf-8"))
    assert set(saved["scores"]) == {"attention", "total", "gradient_x_input",
                                    "integrated_gradients", "ngram"}  # fmt: skip
    assert set(saved["decomposition"]) == {"deep", "ngram", "bias", "logit", "baseline"}
    assert saved["completeness_error"] >= 0
    page = (tmp_path / "p.html").read_text(encoding="utf-8")
    assert 'id="show-all" checked' in page
    for method in saved["scores"]:
        assert f'class="view m-{method}"' in page


def test_inspect_warns_about_a_model_whose_deep_part_weighs_negatively(
    tiny, tiny_corpus, tmp_path, capsys
):
    """Issue 30: the total is shown, and the warning is on stderr and at the top of the page."""
    run = write_backwards_run(tiny["cnn"].run_dir, tiny_corpus, tmp_path / "run")
    argv = ["inspect", str(run), "--text", "A superb cast. w1 w2 superb!", "--no-color",
            "--html", str(tmp_path / "page.html"), "--png", str(tmp_path / "review.png")]  # fmt: skip
    assert cli.main(argv) == 0
    captured = capsys.readouterr()
    warnings = export.load(run).warnings
    assert len(warnings) == 3
    for warning in warnings:  # each once, a line each, on stderr
        assert captured.err.count(f"hatt inspect: warning: {warning}\n") == 1
    assert "(shown: total)" in captured.err
    assert "[+superb]" in captured.out  # the total: towards 'positive', as predicted
    page = (tmp_path / "page.html").read_text(encoding="utf-8")
    assert page.count('<div class="warning" role="note">') == 1  # once a page, not a card
    for warning in warnings:
        assert html.escape(warning) in page
    assert 'id="show-total" checked' in page
    # the page's total view colours "superb" blue (towards 'positive'), its IG view red
    classes = re.findall(r'<span class="(\w+)" title="[^"]*">superb</span>', page)
    views = re.findall(r'class="view m-(\w+)"', page)
    assert views == ["total", "gradient_x_input", "integrated_gradients", "ngram"]
    by_view = dict(zip(views, [classes[2 * i : 2 * i + 2] for i in range(len(views))], strict=True))
    assert all(c.startswith("p") for c in by_view["total"] + by_view["ngram"])
    assert all(c.startswith("n") for c in by_view["integrated_gradients"])
