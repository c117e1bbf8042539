"""Resume after a crash (SIGKILL), reproducible runs (--seed), NaN loss, run-directory checks.

The CLI runs are subprocesses on a planted corpus (tests/_planted.py) with a
tiny CNN; they are shared by the tests of this module.
"""

import copy
import csv
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import keras
import numpy as np
import pytest

from hatt import cli, training
from hatt import run_dir as run_files
from hatt.training.run import loop, resume
from tests._planted import write_planted_imdb

MODEL_ARGS = ["--set", "model_kwargs.embedding_dim=16", "--set", "model_kwargs.filters=8"]


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
        "validation_size=100",
        "--set",
        "patience=3",
        *MODEL_ARGS,
        "--run-dir",
        str(run_dir),
        "--export-dir",
        "",
        *extra,
    ]


def _env():
    return {**os.environ, "KERAS_BACKEND": "tensorflow", "TF_CPP_MIN_LOG_LEVEL": "3"}


def run_hatt(argv, timeout=300):
    result = subprocess.run(
        argv, capture_output=True, text=True, env=_env(), timeout=timeout, check=False
    )
    return result


def history_rows(run_dir):
    with open(Path(run_dir) / "history.csv", newline="") as f:
        return list(csv.reader(f))


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    return write_planted_imdb(tmp_path_factory.mktemp("planted"), n_train=600, n_test=100)


@pytest.fixture(scope="module")
def reference(corpus, tmp_path_factory):
    """An uninterrupted run with --seed 5."""
    run_dir = tmp_path_factory.mktemp("reference") / "run"
    result = run_hatt(hatt_train(corpus, run_dir))
    assert result.returncode == 0, result.stderr[-3000:]
    return run_dir


@pytest.mark.slow
def test_sigkill_then_same_command_resumes_from_the_last_finished_epoch(
    corpus, reference, tmp_path
):
    run_dir = tmp_path / "run"
    argv = hatt_train(corpus, run_dir)
    state_file = run_dir / run_files.BACKUP / resume.STATE_FILE
    process = subprocess.Popen(
        argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=_env()
    )
    deadline = time.monotonic() + 240
    try:
        while time.monotonic() < deadline and process.poll() is None:
            try:
                if json.loads(state_file.read_text())["epoch"] >= 1:
                    break
            except (OSError, ValueError):
                pass  # not written yet (the rename makes a half-written state impossible)
            time.sleep(0.01)
        process.send_signal(signal.SIGKILL)
    finally:
        process.wait(timeout=60)
    assert process.returncode == -signal.SIGKILL, "the run ended before it could be killed"
    assert not (run_dir / "metrics.json").exists()
    killed = json.loads(state_file.read_text())
    done = killed["epoch"]
    assert 1 <= done < 3 and len(killed["records"]) == done

    result = run_hatt(argv)
    assert result.returncode == 0, result.stderr[-3000:]
    assert f"Resuming {run_dir} after epoch {done} of 3" in result.stdout
    rows = history_rows(run_dir)
    assert [row[0] for row in rows[1:]] == ["0", "1", "2"]  # every epoch once
    # the finished epochs were kept, not re-run
    header = rows[0]
    for record, row in zip(killed["records"], rows[1:], strict=False):
        assert {k: float(v) for k, v in zip(header, row, strict=True)} == record
    metrics = json.loads((run_dir / "metrics.json").read_text())
    assert metrics["resumed_from_epoch"] == done and metrics["epochs"] == 3
    assert not (run_dir / run_files.BACKUP).exists()  # removed once the run finished
    # Same weights, optimizer state, random state, data order and early-stopping state
    # as the uninterrupted run: the same history and the same results, exactly.
    assert rows == history_rows(reference)
    expected = json.loads((reference / "metrics.json").read_text())
    for key in ("test_accuracy", "test_loss", "validation_accuracy", "best_epoch"):
        assert metrics[key] == expected[key], key
    np.testing.assert_array_equal(
        np.load(run_dir / "test_probabilities.npz")["probabilities"],
        np.load(reference / "test_probabilities.npz")["probabilities"],
    )

    # A finished run is not trained again silently.
    again = run_hatt(argv)
    assert again.returncode == 2 and "holds a finished run" in again.stderr
    assert "Traceback" not in again.stderr


@pytest.mark.slow
def test_same_seed_gives_identical_runs_and_another_seed_other_weights(corpus, reference, tmp_path):
    same, other = tmp_path / "same", tmp_path / "other"
    for run_dir, seed in ((same, 5), (other, 6)):
        result = run_hatt(hatt_train(corpus, run_dir, seed))
        assert result.returncode == 0, result.stderr[-3000:]
    first = json.loads((reference / "metrics.json").read_text())
    second = json.loads((same / "metrics.json").read_text())
    assert first["deterministic"] is True and first["seed"] == 5
    for key in ("test_accuracy", "test_loss", "validation_accuracy", "validation_loss"):
        assert first[key] == second[key], key
    assert history_rows(reference) == history_rows(same)
    weights = {
        name: keras.saving.load_model(run_dir / "model.keras").get_weights()
        for name, run_dir in (("first", reference), ("same", same), ("other", other))
    }
    for a, b in zip(weights["first"], weights["same"], strict=True):
        np.testing.assert_array_equal(a, b)
    assert any(
        a.shape != b.shape or not np.array_equal(a, b)
        for a, b in zip(weights["first"], weights["other"], strict=True)
    )


# === In-process checks on a small in-memory corpus =====================================


@pytest.fixture(scope="module")
def planted():
    from hatt.data import Imdb, Split
    from tests._planted import planted_texts

    def split(n, seed):
        texts, labels = planted_texts(n, seed)
        return Split(texts, np.array(labels), [f"r{i}" for i in range(n)])

    return Imdb(split(160, 0), split(40, 1), split(40, 2), "planted")


def _config(**overrides):
    values = {
        "model": "cnn",
        "model_kwargs": {"embedding_dim": 8, "filters": 4},
        "epochs": 3,
        "batch_size": 16,
        "min_count": 1,
        "patience": 3,
    }
    return training.TrainConfig(**{**values, **overrides})


class _Crash(Exception):
    pass


def _interrupted_run(run_dir, planted, monkeypatch, after_epochs=1):
    """Train until ``after_epochs`` epochs are backed up, then 'crash'."""
    save = resume.RunBackup.on_epoch_end

    def crash_after(self, epoch, logs=None):
        save(self, epoch, logs)
        if epoch + 1 >= after_epochs:
            raise _Crash

    with monkeypatch.context() as patch:
        patch.setattr(resume.RunBackup, "on_epoch_end", crash_after)
        with pytest.raises(_Crash):
            training.train(_config(), run_dir, texts=planted, verbose=0)


def test_a_corrupted_or_mismatched_backup_is_a_clear_error(tmp_path, planted, monkeypatch):
    run_dir = tmp_path / "run"
    _interrupted_run(run_dir, planted, monkeypatch)
    state = resume.read_state(run_dir)
    assert state["epoch"] == 1 and len(state["records"]) == 1

    with pytest.raises(resume.RunError, match="other settings.*learning_rate"):
        training.train(_config(learning_rate=0.5), run_dir, texts=planted, verbose=0)

    weights = run_dir / run_files.BACKUP / state["weights"]
    good = weights.read_bytes()
    weights.write_bytes(good[: len(good) // 2])  # a partial file
    with pytest.raises(resume.RunError, match="missing or corrupted.*--restart"):
        training.train(_config(), run_dir, texts=planted, verbose=0)
    weights.write_bytes(good)

    state_file = run_dir / run_files.BACKUP / resume.STATE_FILE
    state_text = state_file.read_text()
    state_file.write_text(state_text[:40])
    with pytest.raises(resume.RunError, match="is corrupted"):
        training.train(_config(), run_dir, texts=planted, verbose=0)
    # the command line says the same, without a traceback
    argv = ["train", "cnn", "--preset", "none", "--run-dir", str(run_dir), "--export-dir", ""]
    assert cli.main(argv) == 2

    state_file.write_text(state_text)
    metrics = training.train(_config(), run_dir, texts=planted, verbose=0)
    assert metrics["resumed_from_epoch"] == 1 and metrics["epochs"] == 3
    assert [int(r["epoch"]) for r in training.read_history(run_dir)] == [0, 1, 2]

    # --restart starts over in the same directory
    metrics = training.train(_config(), run_dir, texts=planted, verbose=0, restart=True)
    assert metrics["resumed_from_epoch"] == 0 and metrics["epochs"] == 3


def test_resume_keeps_the_early_stopping_state(tmp_path, planted, monkeypatch):
    """Best weights and patience carry over: the resumed run stops and restores as one run."""
    config = _config(epochs=12, patience=1, monitor="val_loss", learning_rate=0.3)
    whole = training.train(config, tmp_path / "whole", texts=planted, verbose=0)
    assert whole["epochs"] < 12  # it stopped early
    run_dir = tmp_path / "split"
    save = resume.RunBackup.on_epoch_end

    def crash_after(self, epoch, logs=None):
        save(self, epoch, logs)
        if epoch + 1 == whole["epochs"] - 1:  # crash one epoch before the stop
            raise _Crash

    with monkeypatch.context() as patch:
        patch.setattr(resume.RunBackup, "on_epoch_end", crash_after)
        with pytest.raises(_Crash):
            training.train(config, run_dir, texts=planted, verbose=0)
    resumed = training.train(config, run_dir, texts=planted, verbose=0)
    assert resumed["resumed_from_epoch"] == whole["epochs"] - 1
    for key in ("epochs", "best_epoch", "validation_loss", "test_loss", "test_accuracy"):
        assert resumed[key] == pytest.approx(whole[key], rel=1e-5), key
    losses = [float(r["val_loss"]) for r in training.read_history(run_dir)]
    assert resumed["best_epoch"] == int(np.argmin(losses)) + 1


def test_a_nan_loss_stops_the_run_with_a_clear_message(tmp_path, planted, capsys):
    run_dir = tmp_path / "run"
    config = _config()
    config.learning_rate = float("nan")  # past the config's own check (it refuses NaN)
    with pytest.raises(resume.NaNLossError, match="became nan at epoch 1, batch 2"):
        training.train(config, run_dir, texts=planted, verbose=0)
    status = json.loads((run_dir / resume.STATUS_FILE).read_text())
    assert status["status"] == "nan_loss" and status["epoch"] == 1
    assert status["last_good_epoch"] == 0
    assert not (run_dir / "metrics.json").exists() and not (run_dir / "model.keras").exists()


def test_the_cli_reports_a_nan_loss_without_a_traceback(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("HATT_CACHE", str(tmp_path / "cache"))
    root = write_planted_imdb(tmp_path / "corpus", n_train=80, n_test=20)
    argv = ["train", "cnn", "--preset", "none", "--data", str(root), "--epochs", "2"]
    argv += ["--set", "min_count=1"]
    argv += ["--set", "validation_size=20", *MODEL_ARGS]
    real = loop.create_optimizer

    def diverging(config, *args, **kwargs):  # a NaN learning rate past the config's check
        config = copy.copy(config)
        config.learning_rate = float("nan")
        return real(config, *args, **kwargs)

    monkeypatch.setattr(loop, "create_optimizer", diverging)
    argv += ["--run-dir", str(tmp_path / "run"), "--export-dir", ""]
    assert cli.main(argv) == 2
    err = capsys.readouterr().err
    assert "training loss became nan" in err and "Traceback" not in err
    assert json.loads((tmp_path / "run" / "status.json").read_text())["status"] == "nan_loss"


def test_a_crash_after_the_last_epoch_only_writes_the_results(tmp_path, planted, monkeypatch):
    run_dir = tmp_path / "run"
    _interrupted_run(run_dir, planted, monkeypatch, after_epochs=3)  # every epoch backed up
    state = resume.read_state(run_dir)
    assert state["epoch"] == 3 and state["training_done"]
    metrics = training.train(_config(), run_dir, texts=planted, verbose=0)
    assert metrics["resumed_from_epoch"] == 3 and metrics["epochs"] == 3
    assert metrics["best_epoch"] == state["early_stopping"]["best_epoch"] + 1
    assert [int(r["epoch"]) for r in training.read_history(run_dir)] == [0, 1, 2]
    assert (run_dir / "model.keras").exists() and np.isfinite(metrics["test_loss"])
