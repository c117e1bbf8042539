"""Resume after a crash (SIGKILL), reproducible runs (--seed), NaN loss, run-directory checks.

The CLI runs are fresh processes on a planted corpus (tests/_resume_runs.py) with a
tiny CNN: one straight run, one killed and resumed, one of another seed. The
in-process checks share one straight run that stops early; a run that crashed after
epoch N is a copy of its run directory as epoch N's backup left it (what a crash
right then leaves), so no check trains the epochs before its crash again.
"""

import copy
import csv
import json
import shutil
import signal
import subprocess
from pathlib import Path

import keras
import numpy as np
import pytest

from hatt import cli, training
from hatt import run_dir as run_files
from hatt.training.run import loop, resume
from tests._planted import write_planted_imdb
from tests._resume_runs import (
    MODEL_ARGS,
    env,
    hatt_train,
    run_hatt,
    wait_for_a_backup,
    write_corpus,
)


def history_rows(run_dir):
    with open(Path(run_dir) / "history.csv", newline="") as f:
        return list(csv.reader(f))


def _weights(run_dir):
    return keras.saving.load_model(Path(run_dir) / "model.keras").get_weights()


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    return write_corpus(tmp_path_factory.mktemp("planted"))


@pytest.fixture(scope="module")
def reference(corpus, tmp_path_factory):
    """An uninterrupted run with --seed 5."""
    run_dir = tmp_path_factory.mktemp("reference") / "run"
    result = run_hatt(hatt_train(corpus, run_dir))
    assert result.returncode == 0, result.stderr[-3000:]
    return run_dir


@pytest.mark.slow
def test_sigkill_then_same_command_resumes_from_the_last_finished_epoch(
    corpus, reference, tmp_path, capsys
):
    """Also: the same --seed gives the same run in another process (the killed and the
    resumed processes together give the reference's history, results and weights)."""
    run_dir = tmp_path / "run"
    argv = hatt_train(corpus, run_dir)
    state_file = run_dir / run_files.BACKUP / resume.STATE_FILE
    process = subprocess.Popen(
        argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env()
    )
    try:
        wait_for_a_backup(process, run_dir)
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
    assert expected["deterministic"] is True and expected["seed"] == 5
    keys = ("test_accuracy", "test_loss", "validation_accuracy", "validation_loss", "best_epoch")
    for key in keys:
        assert metrics[key] == expected[key], key
    np.testing.assert_array_equal(
        np.load(run_dir / "test_probabilities.npz")["probabilities"],
        np.load(reference / "test_probabilities.npz")["probabilities"],
    )
    for a, b in zip(_weights(reference), _weights(run_dir), strict=True):
        np.testing.assert_array_equal(a, b)

    # A finished run is not trained again silently (the command's own exit code and words).
    capsys.readouterr()
    assert cli.main(argv[3:]) == 2
    err = capsys.readouterr().err
    assert "holds a finished run" in err and "Traceback" not in err


@pytest.mark.slow
def test_another_seed_gives_other_weights(corpus, reference, tmp_path):
    """(The same seed giving the same run, in another process, is checked on the killed
    and resumed run above.)"""
    other = tmp_path / "other"
    result = run_hatt(hatt_train(corpus, other, 6))
    assert result.returncode == 0, result.stderr[-3000:]
    assert json.loads((other / "metrics.json").read_text())["seed"] == 6
    assert any(
        a.shape != b.shape or not np.array_equal(a, b)
        for a, b in zip(_weights(reference), _weights(other), strict=True)
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


# The straight run's settings: it stops early (so resuming must carry the early-stopping
# state) well before its 12 epochs.
EARLY = {"epochs": 12, "patience": 1, "monitor": "val_loss", "learning_rate": 0.3}


@pytest.fixture(scope="module")
def straight(planted, tmp_path_factory):
    """``(metrics, after)``: one uninterrupted run, and ``after(n)``: a copy of its run
    directory as the backup after epoch ``n`` left it (a crash then leaves just that)."""
    root = tmp_path_factory.mktemp("straight")
    save = resume.RunBackup.on_epoch_end

    def save_and_copy(self, epoch, logs=None):
        save(self, epoch, logs)
        shutil.copytree(self.run_dir, root / f"after-{epoch + 1}")

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(resume.RunBackup, "on_epoch_end", save_and_copy)
        metrics = training.train(_config(**EARLY), root / "run", texts=planted, verbose=0)

    def after(epochs, run_dir):
        shutil.copytree(root / f"after-{epochs}", run_dir)
        return run_dir

    return metrics, after


def test_a_corrupted_or_mismatched_backup_is_a_clear_error_and_the_run_resumes_as_one(
    tmp_path, planted, straight
):
    """The errors leave the backup as it was: the run then resumes, keeping the
    early-stopping state (best weights and patience), and stops and restores as one run."""
    whole, after = straight
    config = _config(**EARLY)
    assert whole["epochs"] < 12  # it stopped early
    crashed = whole["epochs"] - 1  # one epoch before the stop
    run_dir = after(crashed, tmp_path / "run")
    state = resume.read_state(run_dir)
    assert state["epoch"] == crashed and len(state["records"]) == crashed
    assert not state["training_done"]

    with pytest.raises(resume.RunError, match="other settings.*learning_rate"):
        training.train(
            _config(**{**EARLY, "learning_rate": 0.5}), run_dir, texts=planted, verbose=0
        )

    weights = run_dir / run_files.BACKUP / state["weights"]
    good = weights.read_bytes()
    weights.write_bytes(good[: len(good) // 2])  # a partial file
    with pytest.raises(resume.RunError, match="missing or corrupted.*--restart"):
        training.train(config, run_dir, texts=planted, verbose=0)
    weights.write_bytes(good)

    state_file = run_dir / run_files.BACKUP / resume.STATE_FILE
    state_text = state_file.read_text()
    state_file.write_text(state_text[:40])
    with pytest.raises(resume.RunError, match="is corrupted"):
        training.train(config, run_dir, texts=planted, verbose=0)
    # the command line says the same, without a traceback
    argv = ["train", "cnn", "--preset", "none", "--run-dir", str(run_dir), "--export-dir", ""]
    assert cli.main(argv) == 2

    state_file.write_text(state_text)
    resumed = training.train(config, run_dir, texts=planted, verbose=0)
    assert resumed["resumed_from_epoch"] == crashed
    for key in ("epochs", "best_epoch", "validation_loss", "test_loss", "test_accuracy"):
        assert resumed[key] == pytest.approx(whole[key], rel=1e-5), key
    history = training.read_history(run_dir)
    assert [int(r["epoch"]) for r in history] == list(range(whole["epochs"]))
    losses = [float(r["val_loss"]) for r in history]
    assert resumed["best_epoch"] == int(np.argmin(losses)) + 1

    # --restart starts over in the same directory
    metrics = training.train(config, run_dir, texts=planted, verbose=0, restart=True)
    assert metrics["resumed_from_epoch"] == 0 and metrics["epochs"] == whole["epochs"]


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


def test_a_crash_after_the_last_epoch_only_writes_the_results(tmp_path, planted, straight):
    whole, after = straight
    run_dir = after(whole["epochs"], tmp_path / "run")  # every epoch backed up
    state = resume.read_state(run_dir)
    assert state["epoch"] == whole["epochs"] and state["training_done"]
    metrics = training.train(_config(**EARLY), run_dir, texts=planted, verbose=0)
    assert metrics["resumed_from_epoch"] == whole["epochs"] and metrics["epochs"] == whole["epochs"]
    assert metrics["best_epoch"] == state["early_stopping"]["best_epoch"] + 1
    assert [int(r["epoch"]) for r in training.read_history(run_dir)] == list(range(whole["epochs"]))
    assert (run_dir / "model.keras").exists() and np.isfinite(metrics["test_loss"])
