"""`hatt inspect` end to end on tiny models saved as run directories."""

import html.parser
import json
import struct

import numpy as np
import pytest

from hatt import cli
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
def test_inspect_writes_terminal_html_and_png(run_dirs, tmp_path, capsys, family):
    out = tmp_path / "out"
    argv = [
        "inspect", str(run_dirs[family]), "--text", REVIEW, "--html", str(out / "page.html"),
        "--png", str(out / "review.png"), "--json", str(tmp_path / "e.json"),
    ]  # fmt: skip
    assert cli.main(argv) == 0
    captured = capsys.readouterr()
    expected = explain(run_dirs[family], [REVIEW])[0]
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


def test_inspect_reads_files_and_imdb_test_reviews(run_dirs, tmp_path, monkeypatch, capsys):
    reviews = tmp_path / "reviews.txt"
    reviews.write_bytes(b"A superb film.\n\nDreadful \xff\xfe plot.\n")  # invalid UTF-8
    assert cli.main(["inspect", str(run_dirs["cnn"]), "--file", str(reviews), "--quiet"]) == 0
    captured = capsys.readouterr()
    assert "2 review(s) explained with saliency scores" in captured.err
    assert captured.out == ""
    monkeypatch.setenv("HATT_CACHE", str(tmp_path / "cache"))
    root = write_tiny_imdb(tmp_path / "corpus")
    pages = tmp_path / "imdb.html"
    argv = ["inspect", str(run_dirs["han"]), "--imdb-test", "4", "--data", str(root),
            "--html", str(pages), "--no-color"]  # fmt: skip
    assert cli.main(argv) == 0
    out = capsys.readouterr().out
    assert out.count("Review ") == 4 and "\x1b[" not in out
    page = pages.read_text(encoding="utf-8")
    assert page.count("true positive") == 2 and page.count("true negative") == 2
    assert page.count('<section class="review"') == 4
    for word in ("lovely", "masterpiece", "rubbish", "waste"):  # the tiny test split
        assert word in page


def test_inspect_errors_are_one_line(run_dirs, tmp_path, capsys):
    assert cli.main(["inspect", str(tmp_path / "missing"), "--text", "a"]) == 2
    assert "hatt inspect: error:" in capsys.readouterr().err
    assert cli.main(["inspect", str(run_dirs["rnn"]), "--file", str(tmp_path / "no.txt")]) == 2
    assert "No such file" in capsys.readouterr().err
    with pytest.raises(SystemExit):  # argparse: one source is required
        cli.main(["inspect", str(run_dirs["rnn"])])


@pytest.mark.parametrize("family", ["cnn", "han"])
def test_the_export_loader_and_the_in_memory_model_agree(tiny_models, run_dirs, family):
    texts = [REVIEW, "Dreadful. The plot was it.", ""]
    model, vectorizer = tiny_models[family]
    in_memory = explain(model, texts, vectorizer=vectorizer)
    loaded = explain(run_dirs[family], texts)
    for a, b in zip(in_memory, loaded, strict=True):
        assert (a.family, a.score_kind) == (b.family, b.score_kind)
        assert a.sentences == b.sentences
        assert a.probability == pytest.approx(b.probability, abs=1e-5)
        np.testing.assert_allclose(a.weights, b.weights, atol=1e-5)
        if family == "han":
            np.testing.assert_allclose(a.sentence_weights, b.sentence_weights, atol=1e-5)
