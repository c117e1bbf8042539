"""The files of a run directory (``hatt train --run-dir``), named once, and their writers.

Training (:mod:`hatt.training.run.loop`, :mod:`hatt.training.run.resume`,
:mod:`hatt.training.self_training`, the starts and the channel), the exporter
(:mod:`hatt.export`) and :class:`hatt.TextClassifier` read and write these names;
none of them types a run directory's file or folder name itself.
``metrics.json`` has one writer, :func:`write_metrics`.
"""

import json
import os
from pathlib import Path

CONFIG = "config.json"  # the assembled config (preset + overrides), hatt.training.Config
VECTORIZER = "vectorizer.json"  # the adapted hatt.data.Vectorizer
CLASSES = "classes.json"  # {"class_names": [...]}, in the model's column order
MODEL = "model.keras"  # the id model (the vectorizer beside it makes it a TextModel)
METRICS = "metrics.json"  # the run's figures; written last, so its presence means "done"
HISTORY = "history.csv"  # one row an epoch
NGRAM_CHANNEL = "ngram_channel.json"  # the n-gram channel's separate fit and the mix
WORD_VECTORS = "word_vectors.json"  # where the initial word vectors came from
# word2vec's vectors, keyed by what they depend on: a restarted or re-run run with the
# same corpus and settings reads them instead of training word2vec again
WORD_VECTOR_CACHE = "word_vectors.npz"
UNLABELED = "unlabeled.json"  # the unlabeled documents read: kept, skipped, excluded
# language-model pretraining (hatt.training.starts.language_model): what it read, each epoch's
# losses; its checkpoint, keyed by what it depends on (a stopped run resumes from it)
LANGUAGE_MODEL = "language_model.json"
LANGUAGE_MODEL_CHECKPOINT = "language_model.npz"
SENTENCE_MODEL_CHECKPOINT = "sentence_model.npz"  # the HAN's sentence stage's (sentence_model)
INIT = "init.json"  # what was copied from the trained model of --init
VALIDATION_PROBABILITIES = "validation_probabilities.npz"
# the deep part's validation logits after every epoch (the mix's cross-fitting)
EPOCH_LOGITS = "validation_logits_by_epoch.npz"
TEST_PROBABILITIES = "test_probabilities.npz"
# the documents the model trained on (train and validation splits), as fingerprints
# (hatt.data.text.fingerprints: sorted, unique int64): `hatt evaluate` tells them apart;
# the export copies them into each version (hatt.export.layout.VERSION_FINGERPRINTS)
TRAINING_FINGERPRINTS = "training_fingerprints.npy"
STATE = "state.json"  # resume: the epoch reached and the RNG state
STATUS = "status.json"  # resume: running / finished / interrupted
# resume's per-epoch backup (hatt.training.run.resume): a folder of the last epoch's weights,
# the best epoch's (early stopping) and state.json, renamed into place last
BACKUP = "backup"
BACKUP_WEIGHTS = "weights-{epoch:04d}.npz"
BACKUP_BEST_WEIGHTS = "best-{epoch:04d}.npz"
LOGS = "logs"  # TensorBoard's
# self-training (hatt.training.self_training): the teacher's run directory inside the
# student's, its probabilities on every unlabeled document, the kept pseudo labels
# (document index, label, confidence) and their summary (threshold table, counts, figures)
TEACHER = "teacher"
TEACHER_PROBABILITIES = "teacher_probabilities.npz"
PSEUDO_LABELS = "pseudo_labels.npz"
PSEUDO_LABELS_SUMMARY = "pseudo_labels.json"
SELF_TRAINING_OUTPUTS = (TEACHER_PROBABILITIES, PSEUDO_LABELS, PSEUDO_LABELS_SUMMARY)
PARTIAL = ".partial.npz"  # a checkpoint's name while it is written (then renamed into place)

# What a finished run leaves (resume's check that a directory is a run's).
OUTPUTS = (
    CONFIG,
    CLASSES,
    NGRAM_CHANNEL,
    WORD_VECTORS,
    UNLABELED,
    LANGUAGE_MODEL,
    INIT,
    HISTORY,
    METRICS,
    MODEL,
    VECTORIZER,
    VALIDATION_PROBABILITIES,
    TEST_PROBABILITIES,
    EPOCH_LOGITS,
    TRAINING_FINGERPRINTS,
)


def partial(path):
    """The name ``path`` (a run directory's arrays) is written under before it is renamed."""
    return Path(path).with_name(Path(path).name + PARTIAL)


def write_atomic(path, write):
    """Write ``path`` through ``write(temporary_path)``, then rename it into place."""
    path = Path(path)
    temporary = path.with_name(f".{path.name}.tmp-{os.getpid()}")
    try:
        write(temporary)
        with open(temporary, "rb+") as f:
            os.fsync(f.fileno())
        os.replace(temporary, path)
    finally:
        if temporary.exists():
            temporary.unlink()


def write_json_atomic(path, value):
    """Write ``value`` as indented JSON to ``path``, atomically (:func:`write_atomic`)."""

    def write(target):
        Path(target).write_text(json.dumps(value, indent=2) + "\n")

    write_atomic(path, write)


def write_metrics(run_dir, metrics):
    """Write ``run_dir/metrics.json``: the one writer of a run's figures.

    Written last by a run (its presence means "finished"), under a temporary
    name and renamed into place, so a reader never sees half of it. The
    training loop, self-training (the student's figures with the teacher's)
    and :meth:`hatt.TextClassifier.fit` (no stand-in test figures) all write
    through it.
    """
    write_json_atomic(Path(run_dir) / METRICS, metrics)


def path(run_dir, name):
    """``run_dir / name`` as a :class:`~pathlib.Path`."""
    return Path(run_dir) / name


def is_run_dir(folder):
    """Whether ``folder`` holds a trained model: its ``model.keras`` and ``vectorizer.json``."""
    folder = Path(folder)
    return (folder / MODEL).is_file() and (folder / VECTORIZER).is_file()
