"""Quiet start-up (issue 34, item 4): no TensorFlow block on stderr, no TensorFlow for --help."""

import os
import subprocess
import sys

import pytest

from hatt import _startup

HELP_PROBE = """
import sys
sys.argv = ["hatt", *sys.argv[1:]]
import hatt.cli
try:
    hatt.cli.main()
except SystemExit:
    pass
print("tensorflow imported:", "tensorflow" in sys.modules, "keras imported:", "keras" in sys.modules)
"""


def _run(arguments, **kwargs):
    env = {k: v for k, v in os.environ.items() if k != "TF_CPP_MIN_LOG_LEVEL"}
    return subprocess.run(
        [sys.executable, *arguments], capture_output=True, text=True, env=env, timeout=300, **kwargs
    )


@pytest.mark.parametrize("arguments", [[], ["--help"], ["train", "--help"], ["serve", "-h"]])
def test_help_imports_no_tensorflow(arguments):
    done = _run(["-c", HELP_PROBE, *arguments])
    assert done.returncode == 0, done.stderr
    assert "usage: hatt" in done.stdout
    assert "tensorflow imported: False keras imported: False" in done.stdout
    assert done.stderr == ""


def test_a_command_prints_no_tensorflow_start_up_lines(exported):
    done = _run(["-m", "hatt.cli", "predict", str(exported["cnn"].path), "A fine film."])
    assert done.returncode == 0, done.stderr
    assert '"label"' in done.stdout
    for noise in ("E0000", "I0000", "W0000", "absl::InitializeLog", "cuInit", "oneDNN"):
        assert noise not in done.stderr, done.stderr


def test_verbose_is_accepted_anywhere_and_lets_tensorflow_speak(exported):
    done = _run(
        ["-m", "hatt.cli", "predict", str(exported["cnn"].path), "A fine film.", "--verbose"]
    )
    assert done.returncode == 0, done.stderr
    assert '"label"' in done.stdout


@pytest.mark.parametrize(
    "arguments,light",
    [
        ([], True),
        (["--verbose"], True),
        (["train", "--help"], True),
        (["predict", "m", "--", "-h"], False),  # after "--", -h is a review
        (["train", "cnn"], False),
    ],
)
def test_help_requests_are_recognised(arguments, light):
    assert _startup.is_help_request(arguments) is light


def test_a_users_own_python_is_left_alone(monkeypatch):
    monkeypatch.setattr(sys, "argv", ["my_script.py", "--help"])
    monkeypatch.setattr(sys, "orig_argv", [sys.executable, "my_script.py", "--help"])
    assert _startup.plan() == (False, False)
