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


def test_a_users_own_python_is_quiet_unless_tensorflow_is_asked_to_speak(monkeypatch):
    # issue 64: Python printed TensorFlow's start-up block (twice) where the CLI is quiet
    monkeypatch.setattr(sys, "argv", ["my_script.py", "--help"])
    monkeypatch.setattr(sys, "orig_argv", [sys.executable, "my_script.py", "--help"])
    monkeypatch.delenv("TF_CPP_MIN_LOG_LEVEL", raising=False)
    monkeypatch.delenv("HATT_VERBOSE", raising=False)
    monkeypatch.delitem(sys.modules, "tensorflow", raising=False)
    assert _startup.python_is_quiet()
    monkeypatch.setenv("HATT_VERBOSE", "1")
    assert not _startup.python_is_quiet()
    monkeypatch.delenv("HATT_VERBOSE")
    monkeypatch.setenv("TF_CPP_MIN_LOG_LEVEL", "0")  # the user's own choice stands
    assert _startup.plan() == (False, False)


SCRIPT = """
import hatt
clf = hatt.TextClassifier("cnn", preset=None, epochs=1, filters=4, embedding_dim=4,
                          kernel_sizes=[2], min_count=1, batch_size=8)
clf.fit(["a good film", "a bad film"] * 10, ["pos", "neg"] * 10, verbose=0)
for n in (1, 2, 3, 5, 7, 9, 11):  # new batch shapes: TensorFlow would warn of retracing
    clf.predict(["a good film"] * n, batch_size=n)
print("done")
"""


def test_a_users_script_prints_nothing_of_tensorflow(tmp_path):
    done = _run(["-c", SCRIPT], cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "done"
    for noise in ("E0000", "I0000", "W0000", "absl::InitializeLog", "cuInit", "oneDNN"):
        assert noise not in done.stderr, done.stderr
    assert "retracing" not in done.stderr, done.stderr


def test_the_retracing_warning_alone_is_dropped():
    import logging

    _startup.drop_retracing_warnings()
    _startup.drop_retracing_warnings()  # once, however often asked
    logger = logging.getLogger("tensorflow")
    assert sum(isinstance(f, _startup._DropRetracing) for f in logger.filters) == 1

    def record(message):
        return logging.LogRecord("tensorflow", logging.WARNING, "f", 1, message, None, None)

    assert not logger.filter(record("5 out of the last 8 calls triggered tf.function retracing."))
    assert logger.filter(record("Another warning"))
