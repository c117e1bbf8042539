"""The one progress bar (issue 34, item 4): a bar on a terminal, one plain line in a log."""

import io
import subprocess
import sys

import pytest

from hatt.progress import Progress, on_terminal


class _Terminal(io.StringIO):
    def isatty(self):
        return True


def _draw(stream, monkeypatch, where="stdout"):
    monkeypatch.setattr(sys, where, stream)
    bar = Progress(3000, unit="review", stream=where)
    for done in (1000, 2000, 3000):
        bar.update(done)
    return stream.getvalue()


def test_a_redirected_bar_writes_one_plain_line(monkeypatch):
    written = _draw(io.StringIO(), monkeypatch)
    assert "\x1b" not in written and "\r" not in written and "\b" not in written
    lines = written.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("3000/3000")
    assert "review" in lines[0]


def test_a_terminal_gets_the_redrawn_bar(monkeypatch):
    written = _draw(_Terminal(), monkeypatch)
    assert written.count("3000") >= 1 and ("\r" in written or "\b" in written)


def test_a_bar_on_stderr_leaves_stdout_clean(monkeypatch, capsys):
    written = _draw(io.StringIO(), monkeypatch, where="stderr")
    assert "3000/3000" in written
    assert capsys.readouterr().out == ""


def test_an_off_bar_writes_nothing_and_a_bad_stream_is_refused(capsys):
    Progress(5, enabled=False).update(5)
    assert capsys.readouterr() == ("", "")
    with pytest.raises(ValueError, match="stream must be 'stdout' or 'stderr', got 'log'"):
        Progress(5, stream="log")
    assert on_terminal(io.StringIO()) is False


def test_hatt_data_into_a_file_holds_no_escape_codes(tmp_path):
    folder = tmp_path / "corpus"
    for label in ("neg", "pos"):
        (folder / label).mkdir(parents=True)
        for i in range(12):
            (folder / label / f"{i}.txt").write_text(f"A {label} review number {i}. Words here.")
    log = tmp_path / "log.txt"
    with log.open("w") as out:
        done = subprocess.run(
            [sys.executable, "-m", "hatt.cli", "data", "--data", str(folder)],
            stdout=out,
            stderr=subprocess.STDOUT,
            timeout=300,
        )
    text = log.read_text()
    assert done.returncode == 0, text
    assert "24/24" in text and "\x1b" not in text and "\r" not in text
