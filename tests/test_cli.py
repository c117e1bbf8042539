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
    assert cli.main(["data", "--data", str(root), "--validation-size", "4"]) == 0
    table = capsys.readouterr().out  # --quiet prints one line instead of the tables
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


@pytest.mark.parametrize(
    ("argv", "expected"),
    [
        (["train", "cnn", "--epochs", "-1"], "Expected --epochs >= 1. Received: --epochs -1"),
        (["train", "cnn", "--epochs", "0"], "Expected --epochs >= 1. Received: --epochs 0"),
        (["data", "--limit", "0"], "Expected --limit >= 1. Received: --limit 0"),
        (["data", "--seed", "-3"], "Expected --seed >= 0. Received: --seed -3"),
    ],
)
def test_out_of_range_flags_are_named_as_typed(argv, expected, capsys):
    """Issue 33, item 12: the flag the user typed, not an internal field."""
    assert cli.main(argv) == 2
    err = capsys.readouterr().err
    assert expected in err and "Traceback" not in err


def test_an_argument_that_is_not_utf8_is_refused_naming_it(capsys):
    """Issue 33, item 9."""
    bad = b"caf\xe9".decode("utf-8", "surrogateescape")
    assert cli.main(["predict", "model", "--file", bad]) == 2
    err = capsys.readouterr().err
    assert "--file's value" in err and "b'caf\\xe9'" in err


def test_terminal_escapes_in_model_text_are_shown_escaped_not_acted_on(capsys):
    """Issue 33, item 6."""
    from hatt.inspect.terminal import printable

    hostile = "pos\x1b[2J\u202eitive\r\n"
    assert printable(hostile) == "pos\\x1b[2J\\u202eitive\\r\\n"
    assert printable("a\tplain café") == "a\tplain café"

    class Predictor:
        warnings = (f"class {hostile} is odd",)

    cli.print_model_warnings("predict", Predictor())
    err = capsys.readouterr().err
    assert "\x1b" not in err and "\u202e" not in err and "\\x1b[2J" in err


def test_the_training_summary_shows_macro_f1_for_two_classes_and_names_the_median():
    """Issue 34, items 5 and 6."""
    from hatt.training.run.loop import _class_lines

    binary = {"num_classes": 2, "class_names": ["neg", "pos"], "test_macro_f1": 0.4762}
    assert "test macro-F1        0.4762   (2 classes: neg, pos)" in _class_lines(binary)[0]
    rating = {**binary, "class_names": ["1", "2", "3"], "test_mae": 0.7, "test_mae_median": 0.59}
    assert "0.590 when the model answers the median of its own" in _class_lines(rating)[1]


def test_train_summary_shows_class_names_escaped(monkeypatch, capsys):
    # issue 63: a label pos\x1b[31mRED\x07 turned the terminal red and rang the bell
    from hatt import training
    from hatt.cli import train as train_cli

    monkeypatch.setattr(
        training, "summary", lambda metrics, run_dir: "  pos\x1b[31mRED\x07 0.9\nok"
    )
    train_cli.print_summary({}, "runs/x")
    out = capsys.readouterr().out
    assert "\x1b" not in out and "\x07" not in out
    assert "pos\\x1b[31mRED\\x07 0.9" in out and out.endswith("ok\n")
