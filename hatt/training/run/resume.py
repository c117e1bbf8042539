"""Resumable runs: a backup every epoch, restored when the same run is started again.

``hatt train`` keeps ``RUN_DIR/backup/`` up to date at the end of every
epoch: the model's variables (weights and random-seed state), the optimizer's
variables (step counter, moments), the early-stopping state with the best
epoch's weights, and the history of every finished epoch. When the same
command is run again with the same ``--run-dir`` (after a crash, a
``kill -9``, a pre-empted machine), training goes on from the last finished
epoch, "restore the best epoch" still chooses among all epochs, and
``history.csv`` holds every epoch once.

Every file is written under a temporary name and renamed into place, and
``backup/state.json`` is renamed last: a process killed at any moment leaves
the previous complete backup. Keras' own ``keras.callbacks.BackupAndRestore``
(Keras 3.15) saves the weights and the epoch number only — not the
early-stopping state, the best weights or the history — and writes its files
in place, so it is not used here.

Ctrl-C (or SIGTERM) during ``fit`` (:func:`at_batch_end`): stop at the next batch boundary,
not in the middle of a step.

Python's own SIGINT handler raises ``KeyboardInterrupt`` wherever the main thread
happens to be. Inside ``keras.Model.fit`` that can be halfway through a training
step or while tf.data's threads hand over a batch, and unwinding from there has
crashed TensorFlow (SIGSEGV, no message: seen in CI under load). While ``fit``
runs, :func:`at_batch_end` puts a handler in place that only notes the signal;
its callback raises ``KeyboardInterrupt`` at the end of the current training
batch, or, where the signal came during an epoch's validation pass, once that
epoch has ended and been backed up (the callback comes after the backup). So the
resume state holds finished epochs only, and ``hatt train`` prints where it
stopped and how to resume (``hatt.cli.train``). A second Ctrl-C raises at once,
as Python's handler does.

The handler is put in place only in the main thread and only where SIGINT has
Python's default handler (not where it is ignored, or someone else's); it is put
back when ``fit`` ends, however it ends (a signal noted after the last epoch's
end raises then).
"""

import contextlib
import csv
import math
import os
import shutil
import signal
import threading
import time
from pathlib import Path

import keras
import numpy as np

from hatt import run_dir as run_files
from hatt.data.readers.files import read_json_object
from hatt.run_dir import write_atomic, write_json_atomic

STATE_FILE = run_files.STATE
STATUS_FILE = run_files.STATUS
STATE_FORMAT = 1
# What `hatt train` writes into a run directory (removed by restart=True).
RUN_FILES = (*run_files.OUTPUTS, STATUS_FILE)
RUN_FOLDERS = (run_files.BACKUP, run_files.LOGS)
# Settings that may change between the interrupted and the resumed run.
MAY_DIFFER = ("strategy",)


class RunError(ValueError):
    """A run directory cannot be used as asked (the message says what to do)."""


class NaNLossError(RunError):
    """The training loss became NaN or infinite; the run was stopped."""


# === Files ==========================================================================


def _save_arrays(path, arrays):
    def write(target):
        with open(target, "wb") as f:
            np.savez(f, *arrays)

    write_atomic(path, write)


def _load_arrays(path):
    try:
        with open(path, "rb") as f, np.load(f, allow_pickle=False) as data:
            return [data[f"arr_{i}"] for i in range(len(data.files))]
    except Exception as error:  # zipfile, OSError, ValueError, EOFError: all mean unreadable
        raise RunError(
            f"The backup file {str(path)!r} is missing or corrupted ({type(error).__name__}: "
            f"{error}). Delete {str(Path(path).parent)!r} or pass --restart to train from "
            "the start."
        ) from error


def write_history(path, records):
    """``history.csv`` from the epoch records: first column ``epoch`` (0-based, as Keras)."""
    keys = sorted({k for record in records for k in record} - {"epoch"})

    def write(target):
        with open(target, "w", newline="") as f:
            writer = csv.writer(f)
            writer.writerow(["epoch", *keys])
            for record in records:
                writer.writerow([record["epoch"], *(record.get(k, "") for k in keys)])

    write_atomic(path, write)


# === Run directory ==================================================================


def clear_run_dir(run_dir):
    """Remove what ``hatt train`` wrote into ``run_dir`` (nothing else)."""
    run_dir = Path(run_dir)
    for name in RUN_FILES:
        (run_dir / name).unlink(missing_ok=True)
    for name in RUN_FOLDERS:
        shutil.rmtree(run_dir / name, ignore_errors=True)


def read_state(run_dir):
    """The backup's state (dict) or ``None`` when ``run_dir`` has no backup."""
    path = Path(run_dir) / run_files.BACKUP / STATE_FILE
    if not path.exists():
        return None
    try:
        state = read_json_object(path)
        if state.get("format") != STATE_FORMAT or "epoch" not in state:
            raise ValueError(f"unknown format {state.get('format')!r}")
    except (OSError, ValueError) as error:
        raise RunError(
            f"The backup {str(path)!r} is corrupted ({error}). Delete {str(path.parent)!r} or "
            "pass --restart to train from the start."
        ) from error
    return state


def check_writable(run_dir):
    """Raise ``RunError`` naming ``run_dir`` and why, when it cannot be (created and) written."""
    run_dir = Path(run_dir)
    if run_dir.exists() and not run_dir.is_dir():
        raise RunError(f"Cannot write the run directory {str(run_dir)!r}: it is a file.")
    existing = run_dir
    while not existing.exists():
        existing = existing.parent
    if not existing.is_dir():
        raise RunError(
            f"Cannot create the run directory {str(run_dir)!r}: {str(existing)!r} is a file."
        )
    if not os.access(existing, os.W_OK | os.X_OK):
        read_only = bool(os.statvfs(existing).f_flag & os.ST_RDONLY)
        raise RunError(
            f"Cannot write the run directory {str(run_dir)!r}: "
            + (
                f"{str(existing)!r} is on a read-only file system."
                if read_only
                else f"permission denied on {str(existing)!r}."
            )
        )


def check_run_dir(run_dir, config, *, restart=False, normalize=None):
    """Check ``run_dir`` before training ``config`` (nothing is written); the backup to resume.

    Args:
        run_dir: the run directory (it need not exist yet).
        config: the run's settings as a dict (``TrainConfig.to_dict()``).
        restart: the run will start over (an earlier run's files do not matter).
        normalize: optional callable that brings the backup's settings to
            today's form (a backup written before a configuration change).

    Returns:
        The backup state (a dict) when the run resumes, else ``None``.

    Raises:
        RunError: the directory cannot be written, holds a finished run, or a
            backup of a run with other settings, or a corrupted backup.
    """
    run_dir = Path(run_dir)
    check_writable(run_dir)
    if restart:
        return None
    if (run_dir / run_files.METRICS).exists():
        raise RunError(
            f"The run directory {str(run_dir)!r} holds a finished run (metrics.json). Use "
            "another --run-dir, or --restart to train again from the start."
        )
    state = read_state(run_dir)
    if state is None:
        return None
    saved = state.get("config", {})
    if normalize is not None:
        try:
            saved = normalize(saved)
        except ValueError:
            pass  # compared as written: the difference is reported below
    saved = {k: v for k, v in saved.items() if k not in MAY_DIFFER}
    wanted = {k: v for k, v in config.items() if k not in MAY_DIFFER}
    if saved != wanted:
        differ = sorted(k for k in set(saved) | set(wanted) if saved.get(k) != wanted.get(k))
        changes = ", ".join(f"{k}: {saved.get(k)!r} -> {wanted.get(k)!r}" for k in differ)
        raise RunError(
            f"The run directory {str(run_dir)!r} holds an interrupted run with other settings "
            f"({changes}). Run the same command to resume it, use another --run-dir, or pass "
            "--restart to train from the start."
        )
    return state


def create_run_dir(run_dir, *, restart=False):
    """Create ``run_dir`` when training starts (``restart``: an earlier run's files removed first)."""
    run_dir = Path(run_dir)
    if restart:
        clear_run_dir(run_dir)
    run_dir.mkdir(parents=True, exist_ok=True)
    (run_dir / STATUS_FILE).unlink(missing_ok=True)
    return run_dir


def open_run_dir(run_dir, config, *, restart=False):
    """:func:`check_run_dir`, then :func:`create_run_dir`: the backup to resume, if any."""
    state = check_run_dir(run_dir, config, restart=restart)
    create_run_dir(run_dir, restart=restart)
    return state


# === The backup callback ============================================================


def _all_variables(model):
    variables = list(model.variables)
    if model.optimizer is not None:
        variables += list(model.optimizer.variables)
    return variables


class RunBackup(keras.callbacks.Callback):
    """Back up the training state at the end of every epoch; restore it on resume.

    Put it right after the ``keras.callbacks.EarlyStopping`` it saves (its
    ``on_train_begin`` must run after the one that resets early stopping, and
    its ``on_epoch_end`` after the one that updates it).

    Args:
        run_dir: the run directory; the backup goes to ``run_dir/backup/`` and
            ``history.csv`` is rewritten from the records every epoch.
        config: the run's settings (dict), stored to detect a changed command.
        early_stopping: the run's ``EarlyStopping`` callback, or ``None``.
        state: a backup state from :func:`open_run_dir` to resume from.
    """

    def __init__(self, run_dir, config, early_stopping=None, state=None):
        super().__init__()
        self.run_dir = Path(run_dir)
        self.backup_dir = self.run_dir / run_files.BACKUP
        self.config = config
        self.early_stopping = early_stopping
        self.state = state
        self.records = list(state["records"]) if state else []
        self.previous_seconds = float(state.get("train_seconds", 0.0)) if state else 0.0
        self.seconds = self.previous_seconds

    @property
    def initial_epoch(self):
        return int(self.state["epoch"]) if self.state else 0

    @property
    def training_done(self):
        """The interrupted run had finished its epochs (or stopped early)."""
        return bool(self.state and self.state.get("training_done"))

    def restore_model(self, model):
        """Load the backed-up model and optimizer variables into ``model``.

        Call it inside the strategy's scope (the optimizer's variables are
        created here when they do not exist yet).
        """
        if not self.state:
            return
        if model.optimizer is not None and not model.optimizer.built:
            model.optimizer.build(model.trainable_variables)
        arrays = _load_arrays(self.backup_dir / self.state["weights"])
        variables = _all_variables(model)
        shapes = [tuple(v.shape) for v in variables]
        if [a.shape for a in arrays] != shapes:
            raise RunError(
                f"The backup in {str(self.backup_dir)!r} does not match the model "
                f"({len(arrays)} arrays for {len(variables)} variables). Pass --restart to "
                "train from the start."
            )
        for variable, value in zip(variables, arrays, strict=True):
            variable.assign(value)

    def on_train_begin(self, logs=None):
        self.session_start = _now()
        if self.state:  # the history as the backup has it (a kill can leave it an epoch ahead)
            write_history(self.run_dir / run_files.HISTORY, self.records)
        stopper = self.early_stopping
        if not self.state or stopper is None:
            return
        saved = self.state.get("early_stopping") or {}
        stopper.wait = int(saved.get("wait", 0))
        stopper.best = saved.get("best")
        stopper.best_epoch = int(saved.get("best_epoch", 0))
        stopper.stopped_epoch = int(saved.get("stopped_epoch", 0))
        if saved.get("best_weights"):
            stopper.best_weights = _load_arrays(self.backup_dir / saved["best_weights"])

    def on_epoch_end(self, epoch, logs=None):
        logs = dict(logs or {})
        loss = logs.get("loss")
        if loss is not None and not math.isfinite(float(loss)):
            return  # never back up a diverged epoch
        self.seconds = self.previous_seconds + (_now() - self.session_start)
        self.records = [r for r in self.records if r["epoch"] < epoch]
        self.records.append({"epoch": epoch, **{k: float(v) for k, v in logs.items()}})
        self.backup_dir.mkdir(parents=True, exist_ok=True)
        weights = run_files.BACKUP_WEIGHTS.format(epoch=epoch)
        _save_arrays(self.backup_dir / weights, [np.asarray(v) for v in _all_variables(self.model)])
        stopper = self.early_stopping
        early = None
        if stopper is not None:
            previous = (self.state or {}).get("early_stopping") or {}
            best_weights = previous.get("best_weights")
            if stopper.best_weights is not None and (
                stopper.best_epoch == epoch or best_weights is None
            ):
                best_weights = run_files.BACKUP_BEST_WEIGHTS.format(epoch=epoch)
                _save_arrays(self.backup_dir / best_weights, stopper.best_weights)
            early = {
                "wait": int(stopper.wait),
                "best": None if stopper.best is None else float(stopper.best),
                "best_epoch": int(stopper.best_epoch),
                "stopped_epoch": int(stopper.stopped_epoch),
                "best_weights": best_weights,
            }
        done = bool(self.model.stop_training) or epoch + 1 >= self.params.get("epochs", 0)
        self.state = {
            "format": STATE_FORMAT,
            "epoch": epoch + 1,
            "training_done": done,
            "weights": weights,
            "early_stopping": early,
            "records": self.records,
            "train_seconds": round(self.seconds, 3),
            "config": self.config,
        }
        write_history(self.run_dir / run_files.HISTORY, self.records)
        write_json_atomic(self.backup_dir / STATE_FILE, self.state)  # the commit point
        keep = {STATE_FILE, weights, (early or {}).get("best_weights")}
        for path in self.backup_dir.iterdir():
            if path.name not in keep and not path.name.startswith("."):
                path.unlink(missing_ok=True)

    def history(self):
        """Every finished epoch's logs, ``{key: [value per epoch]}`` (like ``History``)."""
        keys = sorted({k for record in self.records for k in record} - {"epoch"})
        return {k: [record.get(k) for record in self.records] for k in keys}

    def remove(self):
        """Delete the backup (the run has finished and written its results)."""
        shutil.rmtree(self.backup_dir, ignore_errors=True)


class StopOnNaN(keras.callbacks.Callback):
    """Stop training at the first batch whose loss is NaN or infinite; remember where."""

    def __init__(self):
        super().__init__()
        self.where = None

    def on_train_batch_end(self, batch, logs=None):
        loss = (logs or {}).get("loss")
        if loss is not None and not math.isfinite(float(loss)):
            self.where = {"epoch": self._epoch + 1, "batch": batch + 1, "loss": str(float(loss))}
            self.model.stop_training = True

    def on_epoch_begin(self, epoch, logs=None):
        self._epoch = epoch


def _now():
    return time.perf_counter()


# === Ctrl-C during fit ==============================================================


class StopOnInterrupt(keras.callbacks.Callback):
    """Raise ``KeyboardInterrupt`` at a batch or epoch end once SIGINT has come.

    Put it after the callbacks that save an epoch (:class:`hatt.training.run.resume.RunBackup`).
    """

    def __init__(self):
        super().__init__()
        self.requested = False

    def request(self, signum=None, frame=None):
        """The SIGINT handler: the first signal is noted, a second raises at once."""
        if self.requested:
            raise KeyboardInterrupt
        self.requested = True

    def _stop_if_requested(self):
        if self.requested:
            raise KeyboardInterrupt

    def on_train_batch_end(self, batch, logs=None):
        self._stop_if_requested()

    def on_epoch_end(self, epoch, logs=None):
        self._stop_if_requested()


@contextlib.contextmanager
def at_batch_end():
    """While the block runs, SIGINT stops the returned callback's ``fit`` at a batch end.

    Yields:
        A :class:`StopOnInterrupt` to put among ``fit``'s callbacks (it does
        nothing where the handler could not be put in place).

    Example:

    >>> with at_batch_end() as stopper:
    ...     isinstance(stopper, keras.callbacks.Callback)
    True
    """
    stopper = StopOnInterrupt()
    main = threading.current_thread() is threading.main_thread()
    if not main or signal.getsignal(signal.SIGINT) is not signal.default_int_handler:
        yield stopper
        return
    signal.signal(signal.SIGINT, stopper.request)
    # SIGTERM (kill, a scheduler's stop) where it would end the process without a word:
    # stopped as Ctrl-C stops, so the run says where it stopped and how to resume (issue 63)
    term = signal.getsignal(signal.SIGTERM) is signal.SIG_DFL
    if term:
        signal.signal(signal.SIGTERM, stopper.request)
    try:
        yield stopper
    finally:
        signal.signal(signal.SIGINT, signal.default_int_handler)
        if term:
            signal.signal(signal.SIGTERM, signal.SIG_DFL)
    if stopper.requested:  # it came after the last epoch's end: stop here, as asked
        raise KeyboardInterrupt
