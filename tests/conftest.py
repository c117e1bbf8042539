"""Shared fixtures: THE planted corpus and one tiny trained model per family.

Each family is trained once per session, on first use (a test of one family
trains only that one), from the library's own pieces: ``hatt.data.Vectorizer``,
``hatt.data.make_dataset``, ``hatt.models.build`` and ``model.fit`` (not
``hatt.training``, so that these fixtures do not move with its configuration).
Each is saved as a run directory in the layout ``hatt export`` reads
(``model.keras``, ``vectorizer.json``, ``config.json``, ``metrics.json``) and,
on first use again, exported.

- ``tiny_corpus``: an ``Imdb`` of planted reviews (``tests._planted``): 1-4
  sentences, IMDB's ``<br /><br />`` breaks in every third review, long
  enough that the small limits below truncate and wrap some of them.
- ``tiny``: ``{family: TinyFamily}`` (model, vectorizer, run_dir,
  sentence_groups). The CNN and the HAN carry the n-gram channel (as in
  ``experiments/configs``); the HAN is packed, as ``hatt train`` trains it.
- ``exported``: ``{family: hatt.export.ExportResult}``.

Under pytest-xdist the workers share both: the first worker to ask for a family
trains (or exports) it under a lock, in a folder beside every worker's own
temporary folder, and the others load what it wrote (pytest-xdist's recipe for
a session fixture made once), rather than each worker training and exporting
the same model again (a HAN export alone takes 20-45 s of CI).
"""

import contextlib
import dataclasses
import fcntl
import json
import os
import pickle
from pathlib import Path

import keras
import numpy as np
import pytest

import hatt
from hatt import export
from hatt.data import Imdb, Split, make_dataset, pack_sentences
from tests._planted import planted_corpus

if keras.backend.backend() == "tensorflow":
    # The suite traces hundreds of tiny graphs and runs each a few times: Grappler's
    # rewrites (semantics-preserving; on for users) cost more than they save on them
    # (tests/training/test_loop.py 133 -> 116 s). Processes the tests start keep it on.
    import tensorflow as tf

    tf.config.optimizer.set_experimental_options({"disable_meta_optimizer": True})

# The seconds each module took in the last measured suite (experiments.benchmarks.suite_time
# writes it): under pytest-xdist the heaviest modules start first, so that no long module
# starts last while the other worker has nothing left to do.
MODULE_SECONDS = Path(__file__).with_name("module_seconds.json")


def pytest_collection_modifyitems(config, items):
    """Under pytest-xdist, the modules heaviest first (each module's tests in their order);
    a module not measured yet goes first. Every worker sorts alike, as xdist requires."""
    if os.environ.get("PYTEST_XDIST_WORKER") is None or not MODULE_SECONDS.exists():
        return
    seconds = json.loads(MODULE_SECONDS.read_text())["seconds"]
    items.sort(key=lambda item: -seconds.get(item.nodeid.split("::")[0], float("inf")))


FAMILIES = ("cnn", "rnn", "transformer", "han")
# Small limits so truncation and sentence wrapping happen on the tiny corpus.
LIMITS = {"sequence_length": 20, "max_sentences": 6, "max_words": 8}
SENTENCE_GROUPS = (3, LIMITS["max_words"])  # the packed HAN's layout
EPOCHS = 6
TINY_KWARGS = {
    "cnn": {
        "embedding_dim": 8,
        "kernel_sizes": (2, 3),
        "filters": 8,
        "dropout": 0.0,
        "ngram": {"buckets": 64},
    },
    "rnn": {"embedding_dim": 8, "units": 8, "dropout": 0.0},
    "transformer": {
        "embedding_dim": 8,
        "num_layers": 1,
        "num_heads": 2,
        "intermediate_dim": 16,
        "dropout": 0.0,
        "sequence_length": 64,
    },
    "han": {
        "embedding_dim": 8,
        "word_units": 8,
        "sentence_units": 8,
        "dropout": 0.0,
        "packed_groups": len(SENTENCE_GROUPS),
        "ngram": {"buckets": 64},
    },
}


def planted(n, seed):
    """``n`` reviews of the fixtures' corpus, as a :class:`hatt.data.Split`."""
    texts, labels = planted_corpus(n, seed, words=(4, 28), sentences=(1, 4), html_breaks=True)
    return Split(texts, np.array(labels))


@dataclasses.dataclass
class TinyFamily:
    """A trained tiny model, its vectorizer and its run directory."""

    family: str
    model: keras.Model
    vectorizer: hatt.data.Vectorizer
    run_dir: Path
    sentence_groups: tuple | None = None  # the packed HAN's layout

    def inputs(self, texts):
        """The model's input for raw texts, as training fed it (the HAN packed)."""
        if self.sentence_groups:
            return pack_sentences(self.vectorizer.ragged_ids(texts), self.sentence_groups)
        return self.vectorizer(texts)


def train_tiny(family, train, run_dir):
    """Train ``family`` on ``train`` (a Split) and write its run directory."""
    keras.utils.set_random_seed(0)
    vectorizer = hatt.data.Vectorizer(
        max_tokens=100,
        min_count=1,
        output_mode="nested" if family == "han" else "flat",
        **LIMITS,
    ).adapt(train.texts)
    groups = SENTENCE_GROUPS if family == "han" else None
    dataset = make_dataset(
        train.texts,
        train.labels,
        vectorizer=vectorizer,
        batch_size=16,
        shuffle=True,
        seed=0,
        bucketing=False,
        packed=groups is not None,
        sentence_groups=groups,
    )
    model = hatt.models.build(
        family, vocabulary_size=vectorizer.vocabulary_size, **TINY_KWARGS[family]
    )
    model.compile(keras.optimizers.Adam(0.02), "binary_crossentropy", metrics=["accuracy"])
    model.fit(dataset, epochs=EPOCHS, shuffle=False, verbose=0)  # shuffled by make_dataset
    run_dir.mkdir(parents=True)
    model.save(run_dir / "model.keras")
    vectorizer.save(run_dir / "vectorizer.json")
    config = {"model": family, "packed": groups is not None, "sentence_groups": groups, **LIMITS}
    (run_dir / "config.json").write_text(json.dumps(config))
    (run_dir / "metrics.json").write_text(json.dumps({"model": family, "epochs": EPOCHS}))
    return TinyFamily(family, model, vectorizer, run_dir, groups)


class PerFamily(dict):
    """``{family: make(family)}``, each made on first use."""

    def __init__(self, make):
        super().__init__()
        self._make = make

    def __missing__(self, family):
        if family not in FAMILIES:
            raise KeyError(family)
        self[family] = self._make(family)
        return self[family]


@pytest.fixture(scope="session")
def tiny_corpus():
    return Imdb(planted(160, 0), planted(16, 1), planted(16, 2), "planted")


def shared_folder(tmp_path_factory, name):
    """A folder that every xdist worker of this run shares (without xdist: a new one)."""
    if os.environ.get("PYTEST_XDIST_WORKER") is None:
        return tmp_path_factory.mktemp(name)
    folder = tmp_path_factory.getbasetemp().parent / name
    folder.mkdir(exist_ok=True)
    return folder


@contextlib.contextmanager
def locked(path):
    """An exclusive lock on ``path`` (a file), held across processes."""
    with open(path, "a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def made_once(folder, name, make, load):
    """What ``make()`` makes the first time any worker asks for ``name``, and after that
    ``load(facts)``: ``make()`` returns ``(result, facts)``, the facts pickled as
    ``folder/NAME.done`` for the other workers; one lock a name."""
    done = folder / f"{name}.done"
    with locked(folder / f"{name}.lock"):
        if done.exists():
            return load(pickle.loads(done.read_bytes()))
        made = make()
        done.write_bytes(pickle.dumps(made[1]))
        return made[0]


def _tiny_facts(tiny_family):
    return {"family": tiny_family.family, "run_dir": tiny_family.run_dir}


def _load_tiny(facts):
    groups = SENTENCE_GROUPS if facts["family"] == "han" else None
    run_dir = facts["run_dir"]
    model = keras.saving.load_model(run_dir / "model.keras")
    vectorizer = hatt.data.Vectorizer.load(run_dir / "vectorizer.json")
    return TinyFamily(facts["family"], model, vectorizer, run_dir, groups)


@pytest.fixture(scope="session")
def tiny(tiny_corpus, tmp_path_factory):
    """``{family: TinyFamily}``, run directories side by side under one folder."""
    root = shared_folder(tmp_path_factory, "runs")

    def make(family):
        trained = train_tiny(family, tiny_corpus.train, root / family)
        return trained, _tiny_facts(trained)

    return PerFamily(lambda family: made_once(root, family, lambda: make(family), _load_tiny))


@pytest.fixture(scope="session")
def exported(tiny, tmp_path_factory):
    """``{family: ExportResult}``: each run exported to ``saved_models/FAMILY``."""
    root = shared_folder(tmp_path_factory, "saved_models")

    def make(family):
        result = export.export(tiny[family].run_dir, root / family)
        return result, result

    return PerFamily(lambda family: made_once(root, family, lambda: make(family), lambda r: r))
