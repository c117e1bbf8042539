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


def test_data_statistics_live_in_the_library(tmp_path, monkeypatch):
    import hatt

    monkeypatch.setenv("HATT_CACHE", str(tmp_path / "cache"))
    imdb = hatt.data.load_imdb(str(write_tiny_imdb(tmp_path)), validation_size=4, progress=False)
    stats = hatt.data.statistics(imdb)
    assert stats["splits"]["train"]["reviews"] == 8
    assert "words_per_sentence" in hatt.data.format_statistics(stats)


PNG = b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\x00\x00\x00\x10" + bytes(range(256)) * 4


@pytest.mark.parametrize("command", ["predict", "inspect"])
def test_a_file_that_is_not_text_is_refused_naming_it(tmp_path, capsys, command):
    image = tmp_path / "picture.png"
    image.write_bytes(PNG)
    assert cli.main([command, str(tmp_path / "no-model"), "--file", str(image)]) == 2
    err = capsys.readouterr().err
    assert f"hatt {command}: error:" in err and "picture.png" in err and "NUL" in err
    assert err.count("\n") == 1 and "Traceback" not in err


def test_mostly_undecodable_text_is_refused_and_a_few_bad_bytes_are_repaired(tmp_path, capsys):
    from hatt.data import read_texts

    latin = tmp_path / "latin.txt"
    latin.write_bytes("é".encode("latin-1") * 50 + b"\n")
    with pytest.raises(ValueError, match="latin.txt.*not UTF-8"):
        read_texts(str(latin))
    mixed = tmp_path / "mixed.txt"
    mixed.write_bytes(b"a fine film\n\nbad \xff byte\nanother \xfe\xfe one\n\xef\xbf\xbd is fine\n")
    texts = read_texts(str(mixed))
    assert [i for i, _ in texts.lines] == [0, 2, 3, 4]  # blank lines skipped, indices kept
    assert texts.texts[1] == "bad \ufffd byte" and texts.replaced_lines == 2
    # the command line reports the repaired lines on stderr
    assert len(cli._read_file(str(mixed)).lines) == 4
    assert "2 line(s) held invalid UTF-8" in capsys.readouterr().err


def test_os_errors_are_one_line_naming_the_path(monkeypatch, capsys):
    from hatt import export

    def refuse(*args, **kwargs):
        raise PermissionError(13, "Permission denied", "/read-only/cnn/1")

    monkeypatch.setattr(export, "export", refuse)
    assert cli.main(["export", "some-run", "--out", "/read-only/cnn"]) == 2
    err = capsys.readouterr().err
    assert err == "hatt export: error: Permission denied: '/read-only/cnn/1'\n"


def test_train_choices_come_from_the_library():
    import hatt
    from hatt import training

    parser = cli.build_parser()
    train = parser._subparsers._group_actions[0].choices["train"]
    options = {a.dest: a for a in train._actions}
    assert tuple(options["model"].choices) == hatt.models.FAMILIES
    assert tuple(options["strategy"].choices) == training.STRATEGIES
    assert options["preset"].default == "default"
