import json
import subprocess
import sys

import pytest

from hatt import cli
from tests.data.conftest import write_tiny_imdb


def test_help_lists_the_data_command():
    out = subprocess.run(
        [sys.executable, "-m", "hatt.cli", "--help"], capture_output=True, text=True, check=True
    )
    assert "data" in out.stdout and "usage: hatt" in out.stdout


def test_data_prints_split_sizes_and_statistics(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("HATT_CACHE", str(tmp_path / "cache"))
    root = write_tiny_imdb(tmp_path)
    assert (
        cli.main(["data", "--data", str(root), "--validation-size", "4", "--quiet", "--json"]) == 0
    )
    stats = json.loads(capsys.readouterr().out)
    train = stats["splits"]["train"]
    assert train["reviews"] == 8 and train["positive"] == 4
    assert stats["splits"]["test"]["reviews"] == 4
    # "Lovely film." / "Masterpiece!" / "Rubbish." / "Waste of time." -> 2, 1, 1, 3 words
    assert stats["splits"]["test"]["words_per_review"]["max"] == 3
    assert stats["splits"]["test"]["sentences_per_review"]["mean"] == 1.0
    assert cli.main(["data", "--data", str(root), "--validation-size", "4", "--quiet"]) == 0
    table = capsys.readouterr().out
    assert "words_per_sentence" in table and "validation" in table


def test_missing_data_is_a_clear_error_not_a_traceback(tmp_path, capsys):
    assert cli.main(["data", "--data", str(tmp_path / "missing"), "--quiet"]) == 2
    err = capsys.readouterr().err
    assert "HATT_IMDB" in err and "Traceback" not in err


@pytest.mark.parametrize("argv", [["--version"], ["data", "--limit", "x"]])
def test_argument_errors_exit(argv):
    with pytest.raises(SystemExit):
        cli.main(argv)
