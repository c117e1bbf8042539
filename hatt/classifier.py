"""hatt.TextClassifier: the one object a user holds, from raw strings to predictions.

As keras-hub's task: a preset (``hatt/presets/*.json``, the tuned settings ``hatt
train FAMILY`` uses) or a family with settings, then ``fit`` on raw texts and labels,
``predict`` on raw texts, ``explain`` (drawn in Jupyter), ``save`` / :func:`load` and
``export``. Nothing is computed here that the library computes elsewhere:

- settings become a :class:`hatt.training.TrainConfig` through
  :func:`hatt.training.assemble_config` (the CLI's layering and validation);
- the documents become a corpus through :func:`hatt.data.corpus.assemble` (the
  class order of the CLI, the seeded stratified validation split), or
  :func:`hatt.data.corpus.encode_labels` when ``validation_data`` is given;
- training is :func:`hatt.training.train` (``hatt train``'s loop: vocabulary on the
  training split, early stopping, the n-gram channel's separate fit, the mix and
  the refit, the run directory);
- the trained model is the raw-text model of :mod:`hatt.export` (the run directory
  loaded by :func:`hatt.export.load`), so ``predict`` / ``explain`` / ``save`` /
  ``export`` run the same code as ``hatt predict``, ``hatt inspect`` and the
  SavedModel;
- ``evaluate`` is :func:`hatt.training.run.metrics.classification_metrics` (the
  figures of ``metrics.json``).

**Test split.** ``fit(texts, labels)`` trains on the documents it is given, less
a validation split (carved out of them when ``validation_data`` is ``None``), and
keeps no test split: the training loop's test step gets the validation split as
a stand-in and only the validation figures are kept (``metrics`` and, with
``run_dir``, ``metrics.json`` have no ``test_*`` figures); measure held-out
documents with :meth:`TextClassifier.evaluate`. ``fit`` on a
:class:`hatt.data.TextCorpus` (``hatt.data.load_corpus``), or ``fit()`` with the
data source in the settings (``data=``, ``test_data=``, as ``hatt train``'s
flags), evaluates that corpus's test split as ``hatt train`` does: ``hatt train``
is this ``fit``.

Example:

>>> clf = hatt.TextClassifier.from_preset("han", epochs=3)
>>> clf.fit(texts, labels)                       # raw strings, class names or ints
>>> clf.predict(["A wonderful, moving film."])   # [1, C] probabilities
>>> clf.explain(["A wonderful, moving film."])   # renders in Jupyter
>>> clf.save("han.keras"); hatt.load("han.keras").predict_labels(["Dull."])
"""

import contextlib
import dataclasses
import io
import json
import shlex
import tempfile
from pathlib import Path

import numpy as np

from hatt import export, models, training
from hatt import inspect as hatt_inspect
from hatt import run_dir as run_files
from hatt.data.corpus import TextCorpus
from hatt.data.documents import (
    IN_MEMORY_CORPUS,
    check_documents,
    check_texts,
    in_memory_corpus,
    in_memory_log,
    is_dataset,
    label_names,
    warn_empty,
)
from hatt.data.unlabeled import IN_MEMORY_UNLABELED
from hatt.training.run import loop
from hatt.training.run import metrics as metrics_lib
from hatt.training.settings import config as config_lib

# TrainConfig fields that name where the documents come from: fit takes the documents.
SOURCE_FIELDS = ("data", "labels", "text_column", "label_column", "test_data", "prepared")
UNREAD = "unread"  # a classifier's training fingerprints, not yet read from its source
# metrics.json keys of the test split: fit's test split is the validation split's stand-in.
TEST_KEYS = (
    "test_accuracy",
    "test_loss",
    "test_macro_f1",
    "test_mae",
    "test_mae_median",
    "test_probabilities",
    "test_size",
)


# === Results =========================================================================


def read_history(run_dir):
    """``{metric: [value per epoch]}`` (Keras' ``History.history``) from ``history.csv``."""
    history = {}
    for row in loop.read_history(run_dir):
        for key, value in row.items():
            if key != "epoch" and value not in ("", None):
                history.setdefault(key, []).append(float(value))
    return history


def validation_only(metrics):
    """``metrics`` without the test split's figures (fit's test split is validation's stand-in)."""
    kept = {k: v for k, v in metrics.items() if k not in TEST_KEYS and k != "test"}
    kept["evaluated_on"] = "validation"
    return kept


def _rewrite_metrics(run_dir, metrics):
    """The run directory's results as fit reports them (no stand-in test figures)."""
    run_files.write_metrics(run_dir, metrics)
    (Path(run_dir) / run_files.TEST_PROBABILITIES).unlink(missing_ok=True)


# === The classifier ==================================================================


class TextClassifier:
    """A document classifier on raw text: preset + vectorizer + backbone + head + n-gram channel.

    Build it with ``TextClassifier(family, **settings)`` (the family's tuned
    preset, as ``hatt train FAMILY``, plus ``settings``; ``preset=None``: the bare
    defaults), :meth:`from_preset` (a preset by name) or :meth:`from_model` (starting from a trained model, ``--init``; ``init="imdb"``:
    hatt's IMDB start of the family, built once and cached,
    :mod:`hatt.training.starts.imdb`), train it with :meth:`fit`, then :meth:`predict`,
    :meth:`predict_labels`,
    :meth:`evaluate`, :meth:`explain`, :meth:`save` (reloaded by
    :func:`hatt.load`) and :meth:`export`.

    Args:
        family: ``"cnn"``, ``"rnn"``, ``"transformer"`` or ``"han"``.
        preset: ``"default"``: the family's own preset (``hatt/presets/FAMILY.json``,
            the tuned settings ``hatt train FAMILY`` uses: its n-gram channel, and
            shapes scaled to the corpus); a preset's name; or ``None`` for the bare
            :class:`hatt.training.TrainConfig` defaults.
        **settings: :class:`hatt.training.TrainConfig` fields (``epochs``,
            ``batch_size``, ``learning_rate``, ``ngram``, ``model_kwargs``,
            ``validation_size``, ``seed``, ...) and arguments of the family's
            builder (``dropout``, ``embedding_dim``, ...), over the preset's.

    Attributes:
        config: the checked :class:`hatt.training.TrainConfig`.
        family: the model family.
        class_names: the classes, in the order of :meth:`predict`'s columns
            (after ``fit``; the CLI's order: sorted, numerically for numbers,
            or ``classes=``).
        num_classes: their number.
        history: ``{metric: [value per epoch]}`` of the last ``fit``.
        metrics: what the last ``fit`` measured (``metrics.json`` less the
            test figures: see the module docstring).

    Raises:
        ValueError: an unknown family, preset or setting, or a value out of
            range (TrainConfig's checks), before any training.
    """

    def __init__(
        self, family=models.DEFAULT_FAMILY, *, preset=config_lib.DEFAULT_PRESET, **settings
    ):
        overrides = config_lib.settings_overrides(family, settings)
        config = config_lib.assemble_config(family, preset=preset, overrides=overrides)
        self._start(config, config.model)

    def _start(self, config, family, predictor=None):
        """The state every constructor starts from: ``__init__`` and the ``from_*`` classmethods
        (which have their config, or a trained model, already) all set it here."""
        self.config = config
        self.family = family
        self.history = None
        self.metrics = None
        self._predictor = predictor
        self._run_dir = None  # a kept run directory, loaded on first use
        self._fingerprints = UNREAD  # of its training documents: read from its source when asked

    @classmethod
    def from_preset(cls, name, **overrides):
        """The classifier of preset ``name`` (``hatt train``'s tuned settings), with overrides.

        Args:
            name: a preset of ``hatt/presets`` (``"cnn"``, ``"han"``, ``"cnn_kim"``, ...).
            **overrides: settings over the preset's (see :class:`TextClassifier`).

        Example:

        >>> clf = hatt.TextClassifier.from_preset("han", epochs=3, dropout=0.2)
        """
        return cls(config_lib.preset_family(name), preset=name, **overrides)

    @classmethod
    def from_model(cls, path, *, preset=config_lib.DEFAULT_PRESET, **settings):
        """A classifier that starts from the trained hatt model at ``path`` (``--init``).

        Its family is the trained model's; ``fit`` copies the trained model's
        layers into the new model before training (the encoders and attentions,
        the word vectors of the words both vocabularies know, the head when the
        classes are the same: :mod:`hatt.training.starts.transfer`; ``init.json`` in the
        run directory says what), for a small corpus of a related task. The
        settings must build the same layers (the same preset and builder
        arguments as the trained model) for them to be copied.
        ``init_frozen_epochs=N`` keeps the copied layers frozen for the first
        ``N`` epochs (gradual unfreezing); ``discriminative_decay=2.6`` trains
        them slower the lower they are (ULMFiT's discriminative rates). As
        ``hatt train FAMILY --init PATH``.

        Args:
            path: a run directory, a ``.keras`` file or ``saved_models/NAME``.
            preset: the settings to start from: ``"default"`` (the family's own
                preset, as ``hatt train``), a preset's name, or ``None`` (the bare
                defaults).
            **settings: settings over the preset's (see :class:`TextClassifier`).

        Raises:
            ValueError: no trained hatt model at ``path`` (or a SavedModel
                without its ``.keras`` file), or a bad setting.

        Example:

        >>> clf = hatt.TextClassifier.from_model("runs/han-imdb", init_frozen_epochs=1)
        >>> clf.fit(texts, labels)  # a few hundred documents of a related task
        """
        if "init" in settings:
            raise ValueError(
                "Expected the trained model as from_model's path only. Received: "
                f"init={settings['init']!r} as a setting too."
            )
        try:
            source = export.load_trained(path)  # the Keras model its layers are copied from
        except export.ExportError as error:
            raise ValueError(
                "Expected path to name a trained hatt model (a run directory, a .keras file "
                f"or saved_models/NAME). Received: path={str(path)!r}: {error}"
            ) from None
        return cls(source.family, preset=preset, init=str(path), **settings)

    @classmethod
    def from_config(cls, config):
        """The classifier of an assembled :class:`hatt.training.TrainConfig` (``hatt train``'s).

        Example:

        >>> config = hatt.training.assemble_config("cnn", preset="cnn", overrides={"epochs": 2})
        >>> clf = hatt.TextClassifier.from_config(config)
        """
        if not isinstance(config, config_lib.TrainConfig):
            raise ValueError(
                "Expected config to be a hatt.training.TrainConfig (from "
                f"hatt.training.assemble_config). Received: {type(config).__name__}"
            )
        clf = cls.__new__(cls)  # assembled already: __init__ would assemble it again
        clf._start(config, config.model)
        return clf

    @classmethod
    def from_predictor(cls, predictor):
        """A trained classifier over a loaded :class:`hatt.export.Predictor` (:func:`load`)."""
        clf = cls.__new__(cls)  # trained already: no settings to assemble
        clf._start(None, predictor.family, predictor)
        return clf

    # --- pickle, joblib, copy.deepcopy -----------------------------------------------

    def __getstate__(self):
        """The state pickle, joblib and ``copy.deepcopy`` carry: the settings, figures and
        history, and a trained model as its ``.keras`` file's bytes (its loaded TensorFlow
        functions cannot be pickled; issue 63).

        Raises:
            hatt.export.ExportError: a classifier over a SavedModel (raw text in only):
                load the export's ``model.keras`` to pickle it.
        """
        state = {k: v for k, v in self.__dict__.items() if k not in ("_predictor", "_run_dir")}
        state["_trained"] = export.predictor_state(self.predictor) if self.trained else None
        return state

    def __setstate__(self, state):
        state = dict(state)
        trained = state.pop("_trained")
        self.__dict__.update(state, _run_dir=None)
        self._predictor = None if trained is None else export.predictor_from_state(trained)

    def __repr__(self):
        state = f"classes={list(self.class_names)!r}" if self.trained else "untrained"
        preset = self.config.preset if self.config is not None else None
        return f"TextClassifier(family={self.family!r}, preset={preset!r}, {state})"

    # --- what it knows ----------------------------------------------------------------

    @property
    def trained(self):
        return self._predictor is not None or self._run_dir is not None

    @property
    def predictor(self):
        """The :class:`hatt.export.Predictor` (``hatt predict``'s path); raises before ``fit``."""
        if self._predictor is None and self._run_dir is not None:
            self._predictor = export.load(self._run_dir)  # fit(run_dir=...): loaded when used
        if self._predictor is None:
            raise ValueError(
                "This TextClassifier is not trained yet: call fit(x, y) first (or hatt.load a "
                "saved one)."
            )
        return self._predictor

    @property
    def class_names(self):
        return self.predictor.class_names

    @property
    def num_classes(self):
        return len(self.class_names)

    # --- training ---------------------------------------------------------------------

    def fit(
        self,
        x=None,
        y=None,
        validation_data=None,
        epochs=None,
        callbacks=None,
        run_dir=None,
        verbose="auto",
        *,
        restart=False,
        command=None,
        unlabeled=None,
    ):
        """Train on raw documents: ``hatt train``'s loop (``hatt train`` calls this).

        Args:
            x: the documents: a list, NumPy array or pandas Series of ``str``, or
                a ``tf.data.Dataset`` of ``(text, label)`` pairs (batched or not;
                then ``y=None``); or a :class:`hatt.data.TextCorpus`
                (``hatt.data.load_corpus``: its train, validation and test
                splits, the test split evaluated as ``hatt train`` does); or
                ``None``: the corpus the settings name (``data=``,
                ``test_data=``, ``label_column=``, ``prepared=``, ... as
                ``hatt train``'s flags; IMDB when none is given).
            y: one label per document: class names or numbers (``3``, ``3.0``
                and ``"3"`` are class ``"3"``). The class order is the CLI's:
                sorted, numerically when every name is a number, or the
                ``classes=`` setting.
            validation_data: ``(texts, labels)`` or a dataset as ``x``; ``None``:
                a seeded, stratified split carved out of ``x`` (``validation_size``,
                ``validation_split``), as ``hatt train`` carves it. It chooses
                the best epoch (early stopping) and fits the n-gram channel's mix.
            epochs: the most epochs (``None``: the settings' ``epochs``).
            callbacks: Keras callbacks, run after the loop's own (the NaN stop,
                early stopping, the per-epoch backup).
            run_dir: where the run's files go (``config.json``, ``history.csv``,
                ``metrics.json``, ``model.keras``, ...): an interrupted run
                there of the same settings resumes. ``None``: a temporary
                folder, removed once the model is loaded.
            verbose: Keras ``fit``'s verbosity; ``0`` also silences the
                loop's printed steps and progress bars.
            restart: remove an earlier run's files from ``run_dir`` first.
            command: the command line ``metrics.json`` records (``hatt train``'s).
            unlabeled: documents without labels that word2vec (and with the
                setting ``unlabeled_vocabulary=True`` the vocabulary)
                also learn from: a path (a folder of ``.txt`` files, a table, a
                text file of one document a line, an archive; as ``hatt train
                --unlabeled``) or a list of ``str``. Any equal to a validation or
                test text is dropped (``unlabeled.json`` in the run directory
                counts them). Needs the setting ``word_vectors="word2vec"``
                (the rnn, han and transformer presets). ``None``: the settings'
                ``unlabeled``.

        Returns:
            ``self``, trained.

        Raises:
            ValueError: bad documents or labels (a single string, no documents, an
                item that is not a string, a missing label, one class, lengths
                that differ), documents given beside a data source setting, or
                settings that do not build a model: before any training.
        """
        config = self._config_for(epochs)
        config, unlabeled = self._unlabeled(config, unlabeled)
        callbacks = loop.check_callbacks(callbacks)
        texts = self._documents(config, x, y, validation_data)
        if config.strategy == "default":  # a multi-worker strategy must precede any op:
            loop.check_buildable(config)  # then the loop's first step checks the settings
        with self._quiet(verbose):
            if isinstance(texts, tuple):  # in memory: a corpus without a test split
                texts = in_memory_corpus(*texts[:2], config, *texts[2:])
            train = dict(
                texts=texts,
                command=command,
                verbose=verbose,
                restart=restart,
                callbacks=callbacks,
                unlabeled=unlabeled,
                in_memory=isinstance(texts, TextCorpus) and texts.source == IN_MEMORY_CORPUS,
            )
            if run_dir is not None:
                self._train(config, Path(run_dir), keep=True, **train)
            else:
                with tempfile.TemporaryDirectory(prefix="hatt-fit-") as folder:
                    self._train(config, Path(folder) / "run", keep=False, **train)
                # its files are gone with the folder
                self.metrics.pop("validation_probabilities", None)
                self.metrics.pop("test_probabilities", None)
        return self

    def _documents(self, config, x, y, validation_data):
        """What fit trains on: a TextCorpus, ``None`` (the settings' source) or ``(texts,
        names, validation, log)`` to assemble, checked before anything is built."""
        defaults = config_lib.TrainConfig()
        named = [f for f in SOURCE_FIELDS if getattr(config, f) != getattr(defaults, f)]
        if x is None:
            if y is not None or validation_data is not None:
                raise ValueError(
                    "Expected documents x with y or validation_data. Received: x=None (the "
                    "settings' data source) with " + ("y" if y is not None else "validation_data")
                )
            return None
        if named:
            raise ValueError(
                f"Expected either documents x or the data source setting {named[0]}=, not "
                f"both. Received: x and {named[0]}={getattr(config, named[0])!r}"
            )
        if isinstance(x, TextCorpus):
            if y is not None or validation_data is not None:
                raise ValueError(
                    "Expected y=None and validation_data=None with a hatt.data.TextCorpus x "
                    "(it holds its labels and its validation split)."
                )
            return x
        log = in_memory_log()  # what was skipped: printed and kept with the corpus
        texts, names = check_documents(x, y, log=log)
        validation = None
        if validation_data is not None:
            validation = self._validation(validation_data)
        return texts, names, validation, log

    def _validation(self, validation_data):
        if is_dataset(validation_data):
            return check_documents(validation_data, None, "validation_data", "validation_data")
        if not isinstance(validation_data, tuple | list) or len(validation_data) != 2:
            raise ValueError(
                "Expected validation_data to be a (texts, labels) pair or a tf.data.Dataset. "
                f"Received: validation_data of type {type(validation_data).__name__}"
            )
        return check_documents(*validation_data, "validation_data[0]", "validation_data[1]")

    def _config_for(self, epochs):
        if self.config is None:
            raise ValueError(
                "This TextClassifier was loaded from a saved model and has no training "
                "settings. Build one with TextClassifier.from_preset(...) to train."
            )
        if epochs is None:
            return self.config
        return dataclasses.replace(self.config, epochs=epochs)  # checked again

    @staticmethod
    def _unlabeled(config, unlabeled):
        """``(config, documents)``: ``config.unlabeled`` set from fit's ``unlabeled=``
        (a path, or the in-memory marker with the documents beside it), checked."""
        if unlabeled is None:
            return config, None
        if isinstance(unlabeled, str | Path):
            return dataclasses.replace(config, unlabeled=str(unlabeled)), None
        if isinstance(unlabeled, np.ndarray):
            unlabeled = unlabeled.tolist()
        if not isinstance(unlabeled, list | tuple) or not unlabeled:
            raise ValueError(
                "Expected unlabeled to be a path or a non-empty list of documents (str). "
                f"Received: unlabeled={unlabeled!r:.80}"
            )
        marked = dataclasses.replace(config, unlabeled=IN_MEMORY_UNLABELED)
        return marked, list(unlabeled)

    @staticmethod
    def _quiet(verbose):
        """``verbose=0``: the loop's printed steps and progress bars go nowhere."""
        if verbose == 0:
            return contextlib.redirect_stdout(io.StringIO())
        return contextlib.nullcontext()

    def _train(self, config, run_dir, *, keep, in_memory, command, **train):
        command = command or "hatt.TextClassifier.fit " + shlex.quote(str(run_dir))
        metrics = training.train(config, run_dir, command=command, **train)
        if in_memory:  # its test split was the validation split's stand-in
            metrics = validation_only(metrics)
            _rewrite_metrics(run_dir, metrics)
        self.metrics = metrics
        self.history = read_history(run_dir)
        self._predictor = None
        self._run_dir = run_dir if keep else None
        self._fingerprints = export.training_fingerprints(run_dir)  # before the folder goes
        if not keep:
            self._predictor = export.load(run_dir)

    # --- using it ---------------------------------------------------------------------

    def predict(self, texts, batch_size=64):
        """Class probabilities of raw documents: ``[N, C]`` float32, columns :attr:`class_names`."""
        texts = check_texts(texts, "texts", allow_empty=True)
        warn_empty(texts, "texts")
        return self._probabilities(texts, batch_size)

    def _probabilities(self, texts, batch_size):
        """predict's probabilities of checked texts (:func:`hatt.data.documents.check_texts`)."""
        out = self.predictor.predict(texts, batch_size=export.check_batch_size(batch_size))
        return np.asarray(out["probabilities"], dtype=np.float32).reshape(-1, self.num_classes)

    def predict_labels(self, texts, batch_size=64):
        """The most probable class's name for each document (NumPy array of ``str``)."""
        probabilities = self.predict(texts, batch_size)
        return np.asarray(self.class_names, dtype=object)[np.argmax(probabilities, axis=-1)]

    def label_indices(self, labels, argument="labels"):
        """Class names or numbers → indices into :attr:`class_names` (``ValueError`` for others)."""
        index = {name: k for k, name in enumerate(self.class_names)}
        names = label_names(labels, argument)
        unknown = sorted(set(names) - set(index))
        if unknown:
            raise ValueError(
                f"Expected {argument} to be among the classes {list(self.class_names)}. "
                f"Received: {unknown}"
            )
        return np.asarray([index[name] for name in names], dtype=np.int64)

    def evaluate(self, texts, labels, batch_size=64):
        """The figures of ``metrics.json`` on labelled documents.

        Returns:
            :func:`hatt.training.run.metrics.classification_metrics`: ``examples``,
            ``accuracy``, ``macro_f1``, ``per_class``, ``confusion_matrix``
            (and ``mae`` / ``mae_median`` for numeric classes); ``training_documents``:
            how many of ``texts`` the model trained on (its training and validation
            documents; ``None`` when it keeps no fingerprints of them), and
            ``held_out``: the same figures on the others alone, when some are.
        """
        texts = check_texts(texts, "texts")
        indices = self.label_indices(labels)
        if len(indices) != len(texts):
            raise ValueError(
                f"Expected one label per text. Received: {len(texts)} texts and "
                f"{len(indices)} labels"
            )
        probabilities = self.predict(texts, batch_size)
        figures = metrics_lib.classification_metrics(indices, probabilities, self.class_names)
        return {**figures, **self._held_out(texts, indices, probabilities)}

    def _training_fingerprints(self):
        """Its training documents' fingerprints (:func:`hatt.export.training_fingerprints`)."""
        if isinstance(self._fingerprints, str):  # UNREAD: a loaded model's, from its source
            self._fingerprints = export.training_fingerprints(self.predictor.source)
        return self._fingerprints

    def _held_out(self, texts, indices, probabilities):
        """``training_documents``: how many of ``texts`` it trained on (``None``: it keeps no
        fingerprints); ``held_out``: the figures of the others alone, when some are."""
        seen = export.seen_in_training(self._training_fingerprints(), texts)
        if seen is None:
            return {"training_documents": None}
        out = {"training_documents": int(seen.sum())}
        if 0 < out["training_documents"] < len(texts):
            out["held_out"] = metrics_lib.classification_metrics(
                indices[~seen], probabilities[~seen], self.class_names
            )
        return out

    def explain(self, texts, method="total", labels=None, steps=None, batch_size=32):
        """Why the model decided, word by word: :func:`hatt.inspect.explain` on this model.

        Args:
            texts: raw documents.
            method: the scores to keep: one of the model's methods (``"total"``,
                ``"attention"``, ``"gradient_x_input"``,
                ``"integrated_gradients"``, ``"ngram"``) or ``"all"``.
            labels: the true labels (names or numbers), shown beside the prediction.
            steps: integrated gradients' steps (``None``: the default).
            batch_size: documents a model call.

        Returns:
            :class:`hatt.inspect.Explanations`: a list of :class:`hatt.inspect.Explanation`
            that Jupyter draws as ``hatt inspect`` does (HTML).
        """
        texts = check_texts(texts, "texts")
        indices = None if labels is None else self.label_indices(labels)
        explained = hatt_inspect.explain(
            self.predictor,
            texts,
            labels=None if indices is None else indices.tolist(),
            methods=method,
            steps=steps,
            batch_size=batch_size,
            progress=False,
        )
        return hatt_inspect.Explanations(explained)

    # --- writing it -------------------------------------------------------------------

    @property
    def text_model(self):
        """The trained :class:`hatt.export.TextModel` (raw text → outputs, one Keras model)."""
        return self.predictor.text_model

    def save(self, path):
        """Write the model as one ``.keras`` file (vocabulary and weights inside).

        :func:`hatt.load` (or ``keras.saving.load_model`` after ``import hatt``)
        reloads it without ``custom_objects``. Written under a temporary name and
        renamed: a save cut short leaves no truncated file at ``path``.

        Raises:
            hatt.export.ExportError: the disk is full (nothing is left at ``path``).
        """
        path = Path(path)
        if path.suffix != ".keras":
            raise ValueError(f"Expected a path ending in .keras. Received: path={str(path)!r}")
        # whole or not at all, with what its run found (the warnings a notebook shows)
        return export.save_keras(self.text_model, path, self.predictor.metadata)

    def export(self, out):
        """Write the next version of a TF Serving export into ``out`` (as ``hatt export``).

        Returns:
            :class:`hatt.export.ExportResult` (``out/VERSION/`` the SavedModel,
            ``out/model.keras``, ``out/export.json``).
        """
        # what `hatt export` carries: the run's n-gram facts and warnings, and its figures
        metadata = dict(self.predictor.metadata)
        if self.metrics:
            metadata["metrics"] = self.metrics
        return export.write_export(self.text_model, out, metadata, self._training_fingerprints())


def load(path):
    """A trained :class:`TextClassifier` from a ``.keras`` file, a run directory or an export.

    Args:
        path: a ``.keras`` file (:meth:`TextClassifier.save`, an export's
            ``model.keras``), a run directory of ``hatt train`` or ``fit(run_dir=)``
            (its ``metrics.json`` and history come along), a
            ``saved_models/NAME`` folder (its ``model.keras``) or a SavedModel
            folder (predict and explain only).

    Raises:
        hatt.export.ExportError: (a ``ValueError``) nothing loadable at ``path``.

    Example:

    >>> clf = hatt.load("han.keras")
    >>> clf.predict_labels(["A wonderful, moving film."])
    """
    if not isinstance(path, str | Path) or not str(path).strip():
        raise export.ExportError(
            "Expected path to name a model: a .keras file, a run directory or "
            f"saved_models/NAME. Received: path={path!r:.80}"
        )
    path = Path(path)
    if (
        path.is_dir()
        and (path / export.EXPORT_FILE).is_file()
        and (path / run_files.MODEL).is_file()
    ):
        path = path / run_files.MODEL  # saved_models/NAME: the newest version's Keras model
    clf = TextClassifier.from_predictor(export.load(path))
    if (
        path.is_dir()
        and (path / run_files.METRICS).is_file()
        and (path / run_files.HISTORY).is_file()
    ):
        clf.metrics = json.loads((path / run_files.METRICS).read_text())
        clf.history = read_history(path)
    return clf


__all__ = ["TextClassifier", "load"]
