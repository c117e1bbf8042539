"""`hatt train` in a fresh process, as tests/training/test_resume.py and
tests/test_cli_interrupt.py run it: a tiny CNN on a small planted corpus on disk,
killed or interrupted from outside and run again."""

import json
import os
import subprocess
import sys
import time

from hatt import run_dir as run_files
from hatt.training.run import resume
from tests._planted import write_planted_imdb

MODEL_ARGS = ["--set", "model_kwargs.embedding_dim=16", "--set", "model_kwargs.filters=8"]
# 240 training reviews (30 batches an epoch) after the 60 held out for validation: enough
# steps that a run is still training when the test's signal comes right after a backup.
N_TRAIN, N_TEST, VALIDATION = 300, 60, 60


def write_corpus(folder):
    return write_planted_imdb(folder, n_train=N_TRAIN, n_test=N_TEST)


def hatt_train(corpus, run_dir, seed=5, *extra):
    return [
        sys.executable,
        "-m",
        "hatt.cli",
        "train",
        "cnn",
        "--preset",
        "none",
        "--data",
        str(corpus),
        "--epochs",
        "3",
        "--seed",
        str(seed),
        "--set",
        "batch_size=8",
        "--set",
        "min_count=1",
        "--set",
        f"validation_size={VALIDATION}",
        "--set",
        "patience=3",
        *MODEL_ARGS,
        "--run-dir",
        str(run_dir),
        "--export-dir",
        "",
        *extra,
    ]


def env():
    return {**os.environ, "KERAS_BACKEND": "tensorflow", "TF_CPP_MIN_LOG_LEVEL": "3"}


def run_hatt(argv, timeout=300):
    return subprocess.run(
        argv, capture_output=True, text=True, env=env(), timeout=timeout, check=False
    )


def wait_for_a_backup(process, run_dir, timeout=240):
    """Wait until ``process`` has backed up its first epoch (or ended, or ``timeout``)."""
    state_file = run_dir / run_files.BACKUP / resume.STATE_FILE
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and process.poll() is None:
        try:
            if json.loads(state_file.read_text())["epoch"] >= 1:
                return
        except (OSError, ValueError):
            pass  # not written yet (the rename makes a half-written state impossible)
        time.sleep(0.01)
