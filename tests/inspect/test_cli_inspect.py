"""`hatt inspect` end to end on tiny models saved as run directories."""

import html.parser
import json
import struct

import numpy as np
import pytest

from hatt import cli, export
from hatt.inspect import explain, png_size
from tests.data.conftest import write_tiny_imdb

REVIEW = 'The plot was superb! The "actor" was it &amp; 😀.<br />Watch it'


class _Words(html.parser.HTMLParser):
    def __init__(self):
        super().__init__()
        self.words, self.depth = [], 0

    def handle_starttag(self, tag, attrs):
        if tag == "div" and ("class", "words") in attrs:
            self.depth += 1

    def handle_endtag(self, tag):
        if tag == "div" and self.depth:
            self.depth -= 1

    def handle_data(self, data):
        if self.depth and data.strip():
            self.words.append(data)


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
    assert "attention" in captured.out and "1 review(s) explained" in captured.err
    page = (out / "page.html").read_text(encoding="utf-8")
    parser = _Words()
    parser.feed(page)
    parser.close()
    assert parser.words == expected.tokens
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
    assert "2 review(s) explained with saliency scores" in captured.err
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
