"""The files of a run directory (``hatt train --run-dir``), named once.

Training (:mod:`hatt.training.run.loop`, :mod:`hatt.training.run.resume`), the
exporter (:mod:`hatt.export`) and :class:`hatt.TextClassifier` read and write
these names; none of them types a run directory's file name itself.
"""

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
STATE = "state.json"  # resume: the epoch reached and the RNG state
STATUS = "status.json"  # resume: running / finished / interrupted

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
)


def path(run_dir, name):
    """``run_dir / name`` as a :class:`~pathlib.Path`."""
    return Path(run_dir) / name


def is_run_dir(folder):
    """Whether ``folder`` holds a trained model: its ``model.keras`` and ``vectorizer.json``."""
    folder = Path(folder)
    return (folder / MODEL).is_file() and (folder / VECTORIZER).is_file()
