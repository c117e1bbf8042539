"""Writing an export: the next SavedModel version of a model, atomically, beside its Keras files."""

import dataclasses
import errno
import os
import shutil
import tempfile
import time
from pathlib import Path

import keras
import numpy as np
import tensorflow as tf

from hatt import run_dir as run_files
from hatt._version import __version__
from hatt.export import attribution
from hatt.export.facts import attention_facts, run_facts
from hatt.export.layout import (
    EXPORT_FILE,
    VERSION_FINGERPRINTS,
    VERSION_METADATA,
    ExportError,
    advisory_json,
    export_folder,
    is_version_name,
    read_json,
    version_numbers,
    write_json,
)
from hatt.export.loading import load_run


@dataclasses.dataclass
class ExportResult:
    """Where :func:`export` wrote: ``path`` (saved_models/NAME), ``version``, ``saved_model``.

    ``replaced``: the version whose ``model.keras`` (and ``vectorizer.json``) this one
    replaced, ``None`` for the first version; ``newer``: a version written meanwhile
    by another export, whose ``model.keras`` stays (``None`` as a rule).
    """

    path: Path
    version: int
    saved_model: Path
    keras_file: Path
    family: str
    score_kind: str
    seconds: float
    replaced: int | None = None
    newer: int | None = None

    def version_line(self):
        """What the export did to ``path``, in words: ``saved_models/han: version 2
        (replaces version 1's model.keras; version 1 stays servable)`` (issue 64: a
        second run became version 2 without a word)."""
        if self.newer is not None:
            what = f"model.keras stays version {self.newer}'s, written meanwhile"
        elif self.replaced is not None:
            what = (
                f"replaces version {self.replaced}'s model.keras; version {self.replaced} "
                "stays servable"
            )
        else:
            what = "a new model"
        return f"{self.path}: version {self.version} ({what})"


def _next_version(folder):
    folder = Path(folder)
    taken = (
        [int(p.name) for p in folder.iterdir() if is_version_name(p.name)]
        if folder.is_dir()
        else []
    )
    return max(taken, default=0) + 1


def save_saved_model(text_model, path):
    """Write ``text_model`` as a SavedModel: ``serving_default``, ``predict``, ``explain``.

    All three take ``text``. ``serving_default`` returns
    :attr:`TextModel.output_keys` (the prediction, tokens and scores);
    ``predict`` only :attr:`TextModel.prediction_keys`
    (:meth:`TextModel.classify`: no explanation is computed); ``explain``
    :attr:`TextModel.explain_keys` (:meth:`TextModel.explain` at
    :data:`hatt.export.attribution.DEFAULT_STEPS`).

    Uses ``keras.export.ExportArchive``: the endpoints' traces capture the
    weights, and only the vectorizer (its lookup tables, no weights) is
    ``track()``-ed. Tracking ``text_model`` would add the ``keras.Variable``
    wrappers beside the ``tf.Variable`` s the traces hold, and the checkpoint
    would store every weight twice (keras-team/keras#23553): twice the disk and
    twice the memory of every server that loads the model. The endpoint is ``text_model``
    itself, so the SavedModel runs the same ``hatt.data`` preprocessing as
    training.

    Args:
        text_model: A :class:`TextModel`.
        path: The folder to write (must not exist).
    """
    # Builds every layer (ExportArchive needs them built); two sentences of two words,
    # so that no attention runs over an axis of length 1 (Keras warns about that).
    text_model(tf.constant(["warm up. warm up."]))
    archive = keras.export.ExportArchive()
    archive.track(text_model.vectorizer)  # its tables; the weights come with the endpoints

    def serve(text):
        return text_model(text)

    def predict(text):
        return text_model.classify(text)

    def explain(text):
        return text_model.explain(text)

    text_spec = [tf.TensorSpec([None], tf.string, name="text")]
    for name, fn in (("serving_default", serve), ("predict", predict), ("explain", explain)):
        _trace_as_saved(archive.add_endpoint(name, fn, input_signature=text_spec))
    archive.write_out(str(path), verbose=False)


def _trace_as_saved(endpoint):
    """Trace ``endpoint`` (a ``tf.function``) once, as ``tf.saved_model.save`` looks it up.

    ``ExportArchive.write_out`` lists the variables an endpoint uses by tracing
    it outside a save context; ``tf.saved_model.save`` then traces it again,
    because TensorFlow's function cache key holds the save context's variable
    policy. Each endpoint was traced twice: a tiny HAN's export took 45.5 s, 23.2 s
    traced once (same files, same outputs). Traced here inside a save context with
    the default ``SaveOptions`` (those ``write_out`` saves with), the trace is the one
    the save reuses, and ``write_out`` reads the variables from it
    (``concrete_functions``, which it prefers to tracing). Without TensorFlow's
    private ``save_context`` module the export is as before, only slower.
    """
    try:
        from tensorflow.python.saved_model import save_context
    except ImportError:
        return
    if endpoint is None or not hasattr(endpoint, "get_concrete_function"):
        return
    with save_context.save_context(tf.saved_model.SaveOptions()):
        concrete = endpoint.get_concrete_function()
    endpoint.concrete_functions = [concrete]


def write_export(text_model, out, metadata=None, fingerprints=None):
    """Write the next version of ``text_model`` into ``out`` (a ``saved_models/NAME`` folder).

    Everything is written into a temporary folder of its own first
    (``out/.tmp-export-PID-XXXXXXXX``, unique even for two exports in one
    process) and moved into place when complete, so a crash never leaves a
    half-written version that "latest" would pick, and two exports at once
    never share a file:

    1. remove stale temporaries of killed exports (:func:`remove_stale_temporaries`);
    2. write the SavedModel and rename it to ``out/VERSION`` (the next free
       number; if another export took it meanwhile, the one after);
    3. replace ``out/model.keras`` (the end-to-end :class:`TextModel`) and
       ``out/vectorizer.json``, unless a newer version is already in place
       (its export writes them);
    4. rewrite ``out/export.json`` (atomically) from the newest complete
       version folder, so it never names an older version than the folders
       hold.

    Args:
        text_model: A :class:`TextModel`.
        out: The export folder (created).
        metadata: Extra JSON-able facts for ``export.json`` (source run, metrics).
        fingerprints: The run's ``training_fingerprints.npy`` (or ``None``): copied
            into the version as :data:`~hatt.export.layout.VERSION_FINGERPRINTS`
            (``assets.extra/``, which TF Serving ignores), so ``hatt evaluate`` can
            tell the model's training documents from new ones.

    Returns:
        An :class:`ExportResult`.
    """
    start = time.perf_counter()
    if not str(out).strip():
        raise ExportError(  # Path("") is the working directory: never an export by accident
            "Expected out to name the export folder (e.g. saved_models/NAME). Received: out=''"
        )
    out = Path(out)
    check_same_task(out, text_model.class_names)  # before anything is written into out
    created = not out.exists()
    out.mkdir(parents=True, exist_ok=True)
    remove_stale_temporaries(out)
    staging = Path(tempfile.mkdtemp(prefix=f"{TEMPORARY_PREFIX}{os.getpid()}-", dir=out))
    before = version_numbers(out)
    try:
        facts = _export_facts(text_model, metadata)
        version = _write_version(text_model, facts, staging, out, fingerprints)
        keras_file, newer = _write_keras_files(text_model, staging, out, version)
        _write_index(out, staging)
    except Exception as error:
        shutil.rmtree(staging, ignore_errors=True)
        if created and not any(out.iterdir()):  # an empty folder it made: gone with the rest
            out.rmdir()
        if is_disk_full(error):
            raise disk_full_error(out, error) from error
        raise
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return ExportResult(
        path=out,
        version=version,
        saved_model=out / str(version),
        keras_file=keras_file,
        family=text_model.family,
        score_kind=text_model.score_kind,
        seconds=round(time.perf_counter() - start, 2),
        replaced=max(before, default=None) if newer is None else None,
        newer=newer,
    )


def save_keras(text_model, path, facts=None):
    """Write ``text_model`` as the ``.keras`` file ``path``, whole or not at all.

    ``facts``: what its run recorded (a Predictor's ``metadata``); the n-gram mix and
    the run's warnings go inside the file (:attr:`TextModel.facts`), so the model
    loaded alone still warns as ``hatt inspect`` does.

    Written under a temporary name beside ``path`` and renamed into place: a save
    cut short (a full disk, Ctrl-C) leaves no truncated ``.keras`` at ``path`` (an
    earlier file there stays as it was).

    Raises:
        ExportError: the disk filled up (:func:`disk_full_error`).
    """
    path = Path(path)
    if facts is not None:
        text_model.facts = facts
    temporary = path.with_name(f".tmp-{path.stem}-{os.getpid()}.keras")  # Keras wants .keras
    try:
        text_model.save(temporary)
        os.replace(temporary, path)
    except BaseException as error:
        temporary.unlink(missing_ok=True)
        if is_disk_full(error):
            raise disk_full_error(path, error) from error
        if isinstance(error, OSError):  # named by the user's path, not the temporary one
            raise ExportError(
                f"Could not write {str(path)!r}: {error.strerror or type(error).__name__}"
                + ("" if path.parent.is_dir() else f" (no folder {str(path.parent)!r})")
            ) from error
        raise
    return path


def is_disk_full(error):
    """An ``OSError`` (or TensorFlow's ``ResourceExhaustedError``) of a full disk or quota."""
    if isinstance(error, OSError) and error.errno in (errno.ENOSPC, errno.EDQUOT):
        return True
    full = ("No space left on device", "Disk quota exceeded")
    return isinstance(error, tf.errors.ResourceExhaustedError) and any(
        m in str(error) for m in full
    )


def disk_full_error(path, error):
    """The :class:`ExportError` of a write to ``path`` that met a full disk: where, how much
    room is left, and that nothing half-written was left behind."""
    where = Path(path).resolve()
    while not where.exists() and where != where.parent:
        where = where.parent
    free = shutil.disk_usage(where).free / 2**20
    return ExportError(
        f"The disk is full: writing {str(path)!r} stopped ({free:,.1f} MiB free on the disk "
        f"of {str(where)!r}; {type(error).__name__}). Nothing half-written was left in its "
        "place. Free some space, or write the model elsewhere."
    )


class OtherTaskError(ExportError):
    """An export folder serves other classes than the model meant for it
    (:func:`check_same_task`)."""


EXPORT_FIX = (
    "Export it under its own name: `hatt export RUN_DIR --name NAME` (saved_models/NAME) "
    "or `--out DIR`."
)


def check_same_task(out, class_names, fix=EXPORT_FIX):
    """A new version of ``out`` must serve its versions' task: the same classes, in order.

    TF Serving clients of ``out`` ask for "the latest version"; a model of other
    classes there would switch them to another task silently, and would replace the
    ``model.keras`` and ``vectorizer.json`` the older versions share. The export
    checks it before writing; ``hatt train`` before its first epoch
    (:class:`SameTaskCheck`).

    Args:
        out: the export folder (it need not exist).
        class_names: the new model's classes, in order.
        fix: the message's last sentence: how to export under another name.

    Raises:
        OtherTaskError: ``out``'s newest version has other class names (the message
            gives both and ``fix``).
    """
    numbers = version_numbers(out)
    if not numbers:
        return
    newest = Path(out) / str(numbers[-1]) / VERSION_METADATA
    try:
        recorded = read_json(newest).get("class_names")
    except ExportError:
        return  # an older export without its facts: nothing to compare
    wanted = list(class_names)
    if recorded is not None and list(recorded) != wanted:
        raise OtherTaskError(
            f"{str(out)!r} already serves another task: version {numbers[-1]} has "
            f"{len(recorded)} classes {_shown(recorded)}, this model {len(wanted)} classes "
            f"{_shown(wanted)}. A new version must answer the same task, so nothing was "
            f"written. {fix}"
        )


class SameTaskCheck(keras.callbacks.Callback):
    """:func:`check_same_task` of ``out`` before the first epoch of a run into ``run_dir``.

    ``hatt train`` passes it to ``fit``: a clash with the export folder fails once the
    corpus is read (the run's ``classes.json`` written), not after training (issue 64,
    item 8). Self-training's teacher, trained first in ``run_dir/teacher``, is checked.
    """

    def __init__(self, out, run_dir, fix=EXPORT_FIX):
        super().__init__()
        self.out, self.run_dir, self.fix = Path(out), Path(run_dir), fix
        self.checked = False

    def on_train_begin(self, logs=None):
        if self.checked:
            return
        for folder in (self.run_dir, self.run_dir / run_files.TEACHER):
            names = advisory_json(folder / run_files.CLASSES).get("class_names")
            if names is not None:
                check_same_task(self.out, names, self.fix)
                self.checked = True
                return


def _shown(names, most=6):
    shown = ", ".join(map(str, names[:most]))
    return f"({shown}{', ...' if len(names) > most else ''})"


def _export_facts(text_model, metadata):
    return {
        "family": text_model.family,
        "score_kind": text_model.score_kind,
        "outputs": list(text_model.output_keys),
        "signatures": {
            "serving_default": list(text_model.output_keys),
            "predict": list(text_model.prediction_keys),
            "explain": list(text_model.explain_keys),
        },
        "methods": list(text_model.methods),
        "explain_steps": attribution.DEFAULT_STEPS,
        "num_classes": text_model.num_classes,
        "class_names": list(text_model.class_names),
        # each version its own attention settings (the page names them; model.keras is
        # the newest version's only)
        "attention": attention_facts(text_model.classifier.get_config()),
        "input": "text: tf.string [None], raw review text",
        "hatt_version": __version__,
        "keras_version": keras.__version__,
        "tensorflow_version": tf.__version__,
        **(metadata or {}),
    }


def _write_version(text_model, facts, staging, out, fingerprints=None):
    """Write the SavedModel in ``staging`` and move it to ``out/VERSION``; return VERSION."""
    saved_model = staging / "saved_model"
    save_saved_model(text_model, saved_model)
    (saved_model / "assets.extra").mkdir(exist_ok=True)
    if isinstance(fingerprints, np.ndarray):  # a classifier's, held in memory
        np.save(saved_model / VERSION_FINGERPRINTS, fingerprints.astype(np.int64))
    elif fingerprints is not None:
        shutil.copyfile(fingerprints, saved_model / VERSION_FINGERPRINTS)
    version = _next_version(out)
    while True:  # another export may take the number meanwhile: then the next one
        write_json(saved_model / VERSION_METADATA, {**facts, "version": version})
        try:
            os.rename(saved_model, out / str(version))
            return version
        except OSError:
            if not (out / str(version)).exists():
                raise
            version += 1


def _write_keras_files(text_model, staging, out, version):
    """``out/model.keras`` and ``out/vectorizer.json``, when ``version`` is the newest.

    Returns:
        ``(keras_file, newer)``: ``newer`` the newer version whose files stay, or ``None``.
    """
    keras_file = out / run_files.MODEL
    text_model.save(staging / run_files.MODEL)
    text_model.vectorizer.save(staging / run_files.VECTORIZER)
    newest = max(version_numbers(out), default=0)
    if version < newest:
        return keras_file, newest
    os.replace(staging / run_files.MODEL, keras_file)
    os.replace(staging / run_files.VECTORIZER, out / run_files.VECTORIZER)
    return keras_file, None


def _write_index(out, staging, attempts=5):
    """``out/export.json``: the newest complete version's facts and every version number.

    Written atomically; rewritten while the version folders change under it
    (an export running beside this one), so the last writer leaves it true.
    """
    for _ in range(attempts):
        versions = version_numbers(out)
        if not versions:
            return
        facts = read_json(out / str(versions[-1]) / VERSION_METADATA)
        write_json(staging / EXPORT_FILE, {**facts, "versions": versions})
        os.replace(staging / EXPORT_FILE, out / EXPORT_FILE)
        if version_numbers(out) == versions:
            return


# Temporaries of an export: this prefix, then the writer's process id.
TEMPORARY_PREFIX = ".tmp-export-"
# A temporary untouched for this long is stale, whatever its writer (other hosts, old names).
STALE_SECONDS = 30 * 60


def remove_stale_temporaries(out):
    """Remove what killed exports left in ``out``; return the names removed.

    A ``.tmp-*`` entry is stale when its writer's process (the id in a
    ``.tmp-export-PID-*`` name) no longer runs on this machine, or when
    nothing in it has changed for :data:`STALE_SECONDS` (entries from other
    machines or older hatt versions, whose names carry no usable process
    id). A running export's temporaries are left alone.
    """
    removed = []
    for entry in sorted(Path(out).glob(".tmp-*")):
        if not _is_stale(entry):
            continue
        if entry.is_dir() and not entry.is_symlink():
            shutil.rmtree(entry, ignore_errors=True)
        else:
            entry.unlink(missing_ok=True)
        removed.append(entry.name)
    return removed


def _is_stale(entry):
    writer = _writer_pid(entry.name)
    if writer is not None and not _process_running(writer):
        return True
    return time.time() - _last_change(entry) > STALE_SECONDS


def _writer_pid(name):
    if not name.startswith(TEMPORARY_PREFIX):
        return None
    pid = name[len(TEMPORARY_PREFIX) :].split("-", 1)[0]
    return int(pid) if is_version_name(pid) else None  # ASCII digits ('²' is a digit)


def _process_running(pid):
    if os.name != "posix":  # os.kill(pid, 0) would end the process on Windows
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:  # it exists but belongs to someone else
        return True
    return True


def _last_change(entry):
    try:
        newest = entry.lstat().st_mtime
    except OSError:
        return time.time()
    if entry.is_dir():
        for folder, _, files in os.walk(entry):
            for name in files:
                try:
                    newest = max(newest, os.lstat(os.path.join(folder, name)).st_mtime)
                except OSError:
                    continue
    return newest


def export(run_dir, out=None):
    """Export a run directory of ``hatt train`` (``hatt export RUN_DIR [--out DIR]``).

    Args:
        run_dir: A run directory (``config.json``, ``model.keras``,
            ``vectorizer.json``; ``metrics.json`` is copied into ``export.json``).
        out: The export folder; by default the one ``hatt train`` exports the run to
            (:func:`hatt.export.layout.export_folder` of its family and corpus:
            ``saved_models/cnn`` for IMDB, ``saved_models/my-cnn`` for ``my.csv``).

    Returns:
        An :class:`ExportResult` (``version`` is the number just written).
    """
    run_dir = Path(run_dir)
    if not run_dir.is_dir():
        raise ExportError(f"No run directory at {str(run_dir)!r}.")
    text_model = load_run(run_dir)
    metadata = {"source_run": str(run_dir.resolve())}
    if (run_dir / run_files.METRICS).is_file():
        metrics = read_json(run_dir / run_files.METRICS)
        metadata["metrics"] = {
            k: metrics[k]
            for k in (
                "test_accuracy",
                "test_macro_f1",
                "test_mae",
                "validation_accuracy",
                "epochs",
                "parameters",
                "command",
                "data_source",
                "train_size",
            )
            if k in metrics
        }
    metadata.update(run_facts(run_dir))
    if not out:
        config = advisory_json(run_dir / run_files.CONFIG)
        out = export_folder(text_model.family, data=config.get("data"), labels=config.get("labels"))
    fingerprints = run_dir / run_files.TRAINING_FINGERPRINTS
    return write_export(
        text_model, Path(out), metadata, fingerprints if fingerprints.is_file() else None
    )


# === What a run recorded against reading its parts at face value =======================
