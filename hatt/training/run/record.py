"""What the steps of one run share (:class:`Run`), and how a method takes part in it
(:class:`RunHook`).

:func:`hatt.training.run.loop.train` makes one :class:`Run` after its checks and
hands it to each step; a step fills the fields it owns (the backup once ``fit`` has
made it, the channel's figures once the mix is fit). Every field is declared here,
with its default, and the record has slots: nothing is added to a run on the fly
(an undeclared attribute raises ``AttributeError``).

A method that extends the plain run (word vectors, a language model, ``--init``,
adversarial training) is a :class:`RunHook`: the loop calls every registered hook
(:data:`hatt.training.run.hooks.METHODS`) at the same points, in the list's order, as
Keras calls its callbacks. A new method is its module, its settings and one line in
that list.
"""

import dataclasses
import json
from pathlib import Path
from typing import Any

import numpy as np
import tensorflow as tf

from hatt import run_dir as run_files
from hatt.training.run import distribute
from hatt.training.starts import word_vectors


@dataclasses.dataclass(slots=True)
class Run:
    """One training run: its settings, its directory, its strategy and its resume state,
    and what its steps hand on to later steps.

    Args:
        config: the run's :class:`hatt.training.TrainConfig` (replaced by its form
            fitted to the corpus once the corpus is read).
        run_dir: the run directory.
        strategy: the ``tf.distribute`` strategy it trains under.
        state: the backup's state of an interrupted run it resumes (``None``: a new run).
        verbose: Keras' verbosity for ``fit`` and the pretraining steps.
        callbacks: the caller's Keras callbacks, after the loop's own.
        init_source: ``--init``'s trained model, loaded before the data
            (:func:`hatt.training.starts.transfer.load_source`).
        class_weight: Keras ``class_weight`` (``None``: every class weighs 1).
        epoch_logits: the cross-fitting recorder of the deep part's validation logits
            (:class:`hatt.training.channel.crossfit.EpochLogits`), or ``None``.
        backup: the per-epoch backup (:class:`hatt.training.run.resume.RunBackup`),
            set by ``fit`` and removed once the results are written.
        channel_info: ``ngram_channel.json`` of a separate fit (the held-out
            validation figures that evaluate reports with a refit).
        unlabeled_ids: the unlabeled documents as ids, encoded once a run
            (:meth:`encoded_unlabeled`).
        predict_functions: :meth:`predict`'s traced functions, by model and input spec.

    Derived on construction: ``replicas`` (the strategy's), ``initial_epoch`` (the
    epochs the backup holds) and ``fit_epochs`` (the epochs ``fit`` runs to: the
    settings', or the backup's when the interrupted run had finished training).
    """

    config: Any
    run_dir: Path
    strategy: Any
    state: dict | None = None
    verbose: Any = "auto"
    callbacks: list = dataclasses.field(default_factory=list)
    init_source: Any = None
    class_weight: dict | None = None
    epoch_logits: Any = None
    backup: Any = None
    channel_info: dict | None = None
    unlabeled_ids: Any = None
    predict_functions: dict = dataclasses.field(default_factory=dict, repr=False)
    replicas: int = dataclasses.field(init=False, default=1)
    initial_epoch: int = dataclasses.field(init=False, default=0)
    fit_epochs: int = dataclasses.field(init=False, default=0)

    def __post_init__(self):
        self.run_dir = Path(self.run_dir)
        self.replicas = int(self.strategy.num_replicas_in_sync)
        self.initial_epoch = int(self.state["epoch"]) if self.state else 0
        # An interrupted run that had finished its epochs (or stopped early) only
        # evaluates and writes its results.
        done = self.state and self.state.get("training_done")
        self.fit_epochs = self.initial_epoch if done else self.config.epochs

    def write_json(self, name, value):
        """Write ``value`` as ``RUN_DIR/name`` (indented JSON)."""
        (self.run_dir / name).write_text(json.dumps(value, indent=2) + "\n")

    def local(self, dataset):
        """``dataset`` with the options of the run's strategy."""
        return distribute.distribute_options(dataset, self.strategy)

    def prediction_dataset(self, corpus, split):
        """``split`` of ``corpus`` in its order, inputs only, as :meth:`predict` takes it."""
        return self.local(corpus.prediction_dataset(split, self.replicas))

    def predict(self, model, dataset):
        """``model``'s outputs (NumPy) on ``dataset`` (:meth:`prediction_dataset`), in order.

        On one device, through one graph a model, traced for the dataset's element
        spec: ``model.predict`` traces again for each new batch shape (three or four
        times a split for a tiny HAN, most of a small run's prediction time). Under a
        multi-replica strategy ``model.predict`` spreads (and gathers) the batches.
        """
        if self.replicas > 1:
            return model.predict(dataset, verbose=0)
        spec = dataset.element_spec
        key = (model, repr(spec))  # a model hashes as itself
        if key not in self.predict_functions:
            self.predict_functions[key] = tf.function(
                lambda x: model(x, training=False), input_signature=[spec]
            )
        outputs = [self.predict_functions[key](x) for x in dataset]
        return tf.nest.map_structure(lambda *parts: np.concatenate(parts), *outputs)

    def encoded_unlabeled(self, corpus):
        """The unlabeled documents as ids of the run's vectorizer, encoded once a run
        (``None`` without any); ``unlabeled.json`` says what was read."""
        if corpus.unlabeled is None:
            return None
        if self.unlabeled_ids is None:
            self.write_json(run_files.UNLABELED, corpus.unlabeled.report)
            self.unlabeled_ids = word_vectors.encode_unlabeled(
                corpus.unlabeled.texts, corpus.vectorizer
            )
        return self.unlabeled_ids


class RunHook:
    """A method's part in a run: the points where the loop calls it (each does nothing here).

    The loop calls every registered hook at each point, in the registry's order
    (:data:`hatt.training.run.hooks.METHODS`), as Keras calls its callbacks. A hook
    looks at the run's settings and does nothing when its method is off.

    Example:

    >>> class Announce(hatt.training.run.record.RunHook):
    ...     def before_fit(self, run, model, corpus):
    ...         print(f"{run.run_dir}: {model.count_params()} parameters")
    """

    def check(self, config, model):
        """Before any data: refuse settings the model (built once, on a tiny vocabulary)
        cannot take. Raises ``ValueError``."""

    def configure(self, config, model):
        """The built model, before it is compiled: which of its layers train."""

    def compiled(self, config, model):
        """The compiled model: a method that changes the training step replaces it here."""

    def train_dataset(self, run, corpus, dataset, steps):
        """The training dataset (before the strategy's options): returns it, or a dataset
        that replaces it (``steps`` batches an epoch)."""
        return dataset

    def before_fit(self, run, model, corpus):
        """A new run's start, before ``fit`` (after the n-gram channel's): weights copied
        or pretrained into ``model``. Not called on a resumed run: the backup holds its
        trained weights."""
