"""Train a model family: check → corpus → model → fit → evaluate → run directory.

:func:`train` is one plain run (``hatt train`` reaches it through
:func:`hatt.training.train`), as a page of named steps, each a function of its own:
check the configuration and the run directory (nothing is written yet), open the
corpus (:class:`hatt.training.run.datasets.Corpus`: vocabulary fitted on the training
split only), create the run directory, build and compile the model, start the n-gram
channel (joint fit) and each method, fit with Keras (progress bars,
early stopping on the validation split, best epoch restored, a backup every
epoch), fit and mix the channel (separate fit), evaluate **once** on the test
split, save the in-order probabilities, and write the metrics. The run
directory gets ``config.json``, ``history.csv``, ``metrics.json``,
``model.keras``, ``vectorizer.json`` and TensorBoard logs.

The steps share a :class:`hatt.training.run.record.Run`. The methods that extend a
run (word vectors, ``--init``, the language model, AT / VAT) are called at fixed
points through their hooks (:data:`hatt.training.run.hooks.METHODS`); none is named
here.
"""

import csv
import json
import shlex
import sys
import time
from pathlib import Path

import keras
import numpy as np

from hatt import lock as run_lock
from hatt import models
from hatt import run_dir as run_files
from hatt._version import __version__
from hatt.data.stats import imbalance_warning
from hatt.models import head as head_lib
from hatt.training.channel import crossfit, mix, ngram
from hatt.training.run import distribute, resume
from hatt.training.run import metrics as metrics_lib
from hatt.training.run.datasets import Corpus, packed, sentence_groups
from hatt.training.run.hooks import METHODS
from hatt.training.run.optimizers import create_optimizer
from hatt.training.run.record import Run
from hatt.training.settings import scale
from hatt.training.settings.limits import check_batch_memory
from hatt.training.starts import transfer

# Keys every results file has (neural runs and the baselines alike), so the
# results table and the ensemble can read any of them.
METRIC_KEYS = (
    "model",
    "test_accuracy",
    "test_loss",
    "validation_accuracy",
    "epochs",
    "train_seconds",
    "examples_per_second",
    "parameters",
    "seed",
    "command",
    "hatt_version",
    "test_probabilities",
    "validation_probabilities",
)
TRIAL_VOCABULARY = 8  # the vocabulary of the model built once to check the settings


# === The model ========================================================================


def model_arguments(config, vocabulary_size):
    """``hatt.models.build`` keyword arguments of ``config`` (the channel included)."""
    kwargs = dict(config.model_kwargs)
    kwargs["vocabulary_size"] = vocabulary_size
    if packed(config):
        kwargs.setdefault("packed_groups", len(sentence_groups(config)))
    if models.family_spec(config.model).positional:
        kwargs.setdefault("sequence_length", config.sequence_length)
    channel = config.ngram.channel() if config.ngram is not None else None
    return {"ngram": channel, **kwargs}


def create_model(config, vectorizer, steps_per_epoch, num_classes=2):
    """The compiled model of ``config`` (the cyclical schedule is set in optimizer steps)."""
    model = models.build(
        config.model,
        num_classes=num_classes,
        **model_arguments(config, vectorizer.vocabulary_size),
    )
    if config.ngram is not None and config.ngram.frozen:
        model.get_layer("ngram_logit").trainable = False
    for method in METHODS:  # which layers train (word_vectors_trainable=false)
        method.configure(config, model)
    model.compile(
        optimizer=create_optimizer(config, steps_per_epoch),
        loss=head_lib.loss_for(num_classes),
        metrics=["accuracy"],
    )
    for method in METHODS:  # the training step (AT / VAT change it)
        method.compiled(config, model)
    return model


def check_buildable(config):
    """Build the model once on a tiny vocabulary: bad argument values fail before any data.

    Raises:
        ValueError: the family's builder (or the head) refuses a setting, or a
            batch's activations cannot fit in memory (:func:`check_batch_memory`).
    """
    check_batch_memory(config)
    try:
        model = models.build(config.model, **model_arguments(config, TRIAL_VOCABULARY))
    except (TypeError, ValueError) as error:
        raise ValueError(f"The settings do not build a {config.model} model: {error}") from error
    for method in METHODS:  # e.g. word vectors' source, AT's word embedding
        method.check(config, model)


def check_callbacks(callbacks):
    """``callbacks`` (fit's, train's) as a list of Keras callbacks, checked before any work."""
    if callbacks is None:
        return None
    if isinstance(callbacks, keras.callbacks.Callback):
        return [callbacks]
    if not isinstance(callbacks, list | tuple):
        raise ValueError(
            "Expected callbacks to be a list of keras.callbacks.Callback. Received: "
            f"callbacks of type {type(callbacks).__name__}"
        )
    for i, callback in enumerate(callbacks):
        if not isinstance(callback, keras.callbacks.Callback):
            raise ValueError(
                "Expected callbacks to hold keras.callbacks.Callback instances (e.g. "
                f"keras.callbacks.CSVLogger('log.csv')). Received: callbacks[{i}]="
                f"{callback!r:.80} ({type(callback).__name__})"
            )
    return list(callbacks)


def set_seed(config):
    """Seed Python, NumPy and Keras (and TensorFlow); turn on op determinism if asked."""
    keras.utils.set_random_seed(config.seed)
    if config.deterministic:
        import tensorflow as tf

        tf.config.experimental.enable_op_determinism()


# === Steps ============================================================================


def check_run(config, run_dir, strategy, *, restart=False, **fields):
    """Step 1: every check that needs no data; nothing is written.

    Returns:
        The :class:`hatt.training.run.record.Run` (``fields``: its other fields).
    """
    replicas = int(strategy.num_replicas_in_sync)
    if replicas > 1 and packed(config):
        raise ValueError(
            "The packed HAN layout cannot be split across replicas (its sentence groups "
            f"differ in size). Received: packed=True with {replicas} replicas; pass --set "
            "packed=false."
        )
    check_buildable(config)
    run_dir = distribute.worker_run_dir(run_dir, strategy)
    state = resume.check_run_dir(
        run_dir,
        config.to_dict(),
        restart=restart,
        normalize=config.saved_form,
    )
    if state:
        print(f"Resuming {run_dir} after epoch {state['epoch']} of {config.epochs}")
    return Run(config, Path(run_dir), strategy, state, **fields)


def start_run_dir(run, corpus, *, restart=False):
    """Step 3: create the run directory (the data is ready): config, vocabulary, class names,
    and the fingerprints of the documents it trains on (raw text only)."""
    resume.create_run_dir(run.run_dir, restart=restart)
    run.write_json(run_files.CONFIG, run.config.to_dict())
    run.write_json(run_files.CLASSES, {"class_names": list(corpus.class_names)})
    corpus.vectorizer.save(run.run_dir / run_files.VECTORIZER)
    write_training_fingerprints(run.run_dir, corpus.training_fingerprints())


def write_training_fingerprints(run_dir, values):
    """``training_fingerprints.npy`` (``values``: sorted unique int64), atomically; nothing
    for ``None`` (a prepared corpus: its shards hold no text)."""
    if values is None:
        return

    def write(target):
        with open(target, "wb") as f:  # a file object: np.save adds no ".npy" to its name
            np.save(f, np.asarray(values, dtype=np.int64), allow_pickle=False)

    run_files.write_atomic(Path(run_dir) / run_files.TRAINING_FINGERPRINTS, write)


def class_weights(config, corpus):
    """Keras ``class_weight`` for ``config.class_weight`` (``None``: every class weighs 1):
    :func:`hatt.training.settings.scale.class_weight_map` of the training split's counts."""
    return scale.class_weight_map(config.class_weight, corpus.class_counts("train"))


def run_datasets(run, corpus, steps):
    """Step 3a: the run's datasets from its first epoch on, each method's change to the
    training dataset made (VAT's term reads a batch of unlabeled documents a step)."""
    datasets = corpus.datasets(
        epochs=run.fit_epochs, initial_epoch=run.initial_epoch, replicas=run.replicas
    )
    for method in METHODS:
        datasets["train"] = method.train_dataset(run, corpus, datasets["train"], steps)
    return {name: run.local(dataset) for name, dataset in datasets.items()}


def build_model(run, corpus, steps):
    """Step 4: the compiled model, under the run's strategy."""
    with run.strategy.scope():
        return create_model(run.config, corpus.vectorizer, steps, corpus.num_classes)


def start_channel(run, model, corpus):
    """Step 5 (``ngram.fit="joint"``): set the n-gram channel's start before training."""
    if run.state or run.config.ngram is None:
        return  # a resumed run restores the channel's trained weights
    train_ids, labels = corpus.in_memory_split("train") or (None, None)
    with run.strategy.scope():
        info = ngram.init_ngram_channel(
            model, run.config, train_ids, labels, corpus.in_memory_split("validation")
        )
    if info is not None:
        run.write_json(run_files.NGRAM_CHANNEL, info)


def start_methods(run, model, corpus):
    """Step 5 (a new run): each method's start (:data:`hatt.training.run.hooks.METHODS`:
    word vectors, ``init``'s weights, the language model), after the channel's."""
    if run.state:
        return  # a resumed run restores its trained weights
    for method in METHODS:
        method.before_fit(run, model, corpus)


def fit(run, model, datasets, steps):
    """Step 6: Keras ``fit`` with early stopping and the per-epoch backup.

    Returns:
        ``(history, train_seconds)``: every epoch's logs (the interrupted
        sessions' included) and the training time.
    """
    config = run.config
    timer = _Timer()
    stop_on_nan = resume.StopOnNaN()
    early_stopping = keras.callbacks.EarlyStopping(
        monitor=config.monitor,
        mode="max" if "accuracy" in config.monitor else "min",
        patience=config.patience,
        restore_best_weights=True,
    )
    # The backup follows early stopping (it saves and restores its state) and
    # writes history.csv, every epoch once, from its records.
    backup = resume.RunBackup(run.run_dir, config.to_dict(), early_stopping, run.state)
    with run.strategy.scope():
        backup.restore_model(model)
        # the copied / pretrained layers frozen first, and at slower rates the lower they are
        unfreezing = transfer.fine_tuning(model, config, run.run_dir, early_stopping)
    distribute.build_before_fit(model, datasets["validation"], run.strategy)
    distribute.rank_one_logs_for_multiworker(model, run.strategy)
    # The epoch's validation logits are written before its backup: a resumed run has them.
    epoch_logits = [run.epoch_logits] if run.epoch_logits else []
    callbacks = [
        stop_on_nan,
        *epoch_logits,
        early_stopping,
        backup,
        keras.callbacks.TensorBoard(log_dir=str(run.run_dir / run_files.LOGS), write_graph=False),
        timer,
        *unfreezing,
        *run.callbacks,
    ]
    # Ctrl-C stops at a batch end (after the backup of a finished epoch), not mid-step
    with resume.at_batch_end() as stop_on_interrupt:
        model.fit(
            datasets["train"],
            validation_data=datasets["validation"],
            class_weight=run.class_weight,
            epochs=run.fit_epochs,
            initial_epoch=run.initial_epoch,
            steps_per_epoch=steps,
            callbacks=[*callbacks, stop_on_interrupt],
            shuffle=False,  # the dataset shuffles itself, seeded by (seed, epoch)
            verbose=run.verbose,
        )
    if stop_on_nan.where:
        _stop_on_nan(run.run_dir, stop_on_nan.where, backup)
    run.backup = backup  # removed once the results are written
    return backup.history(), backup.previous_seconds + timer.seconds


def mix_channel(run, model, corpus):
    """Step 7 (``ngram.fit="separate"``): fit the channel now and weigh it against the deep part.

    Returns:
        ``{split: {"deep_logits", "channel_logits"}}`` to save beside the
        probabilities (empty without a separate fit).
    """
    settings = run.config.ngram
    if settings is None or settings.fit != "separate":
        return {}
    deep_model = head_lib.deep_part(model)

    def deep_logits(split):
        return run.predict(deep_model, run.prediction_dataset(corpus, split))

    info, logits = mix.mix_ngram_channel(
        model,
        run.config,
        *corpus.in_memory_split("train"),
        corpus.in_memory_split("validation"),
        corpus.in_memory_split("test"),
        deep_logits,
        validation_by_epoch=crossfit.recorded(run),
    )
    run.write_json(run_files.NGRAM_CHANNEL, info)
    run.channel_info = info  # the held-out validation figures evaluate reports with a refit
    return logits


def evaluate(run, model, datasets):
    """Step 8: loss and accuracy on validation and, once, on test.

    With ``ngram.refit`` the model's channel has seen the validation split, so
    the validation figures are the mix's before the refit (``ngram_channel.json``).
    """
    if _refit(run):  # no pass over validation: the model's own figures there are in-sample
        channel = run.channel_info
        validation_loss = channel["mixed_validation_loss"]
        validation_accuracy = channel["mixed_validation_accuracy"]
    else:
        validation_loss, validation_accuracy = model.evaluate(datasets["validation"], verbose=0)
    test_loss, test_accuracy = model.evaluate(datasets["test"], verbose=0)
    return {
        "test_accuracy": float(test_accuracy),
        "test_loss": float(test_loss),
        "validation_accuracy": float(validation_accuracy),
        "validation_loss": float(validation_loss),
    }


def save_predictions(run, model, corpus, channel_logits):
    """Step 9: ``model.keras`` and each split's probabilities in its own order (for ensembles).

    Returns:
        ``{split: probabilities}`` (``[N]`` of class 1 for two classes, else
        ``[N, C]``) for validation and test.
    """
    model.save(run.run_dir / run_files.MODEL)
    out = {}
    for split in ("validation", "test"):
        parts = dict(channel_logits.get(split, {}))
        mixed = parts.pop("mixed_logits", None)
        if split == "validation" and _refit(run):  # held out, as evaluate's figures
            probabilities = _probabilities(mixed)
        else:
            probabilities = run.predict(model, run.prediction_dataset(corpus, split))
        if corpus.num_classes == 2:
            probabilities = probabilities.reshape(-1)
        np.savez_compressed(
            run.run_dir / f"{split}_probabilities.npz",
            probabilities=probabilities.astype(np.float32),
            labels=corpus.labels(split).astype(np.int8),
            ids=np.array(corpus.review_ids(split)),
            **{key: value.astype(np.float32) for key, value in parts.items()},
        )
        out[split] = probabilities
    return out


def classification_scores(corpus, probabilities):
    """Macro-F1, per-class figures and confusion matrices (and MAE for ordered classes).

    Returns:
        ``{"validation": ..., "test": ...}`` of
        :func:`hatt.training.run.metrics.classification_metrics`, and the test
        split's ``test_macro_f1`` (and ``test_mae``) at the top level.
    """
    scores = {
        split: metrics_lib.classification_metrics(corpus.labels(split), values, corpus.class_names)
        for split, values in probabilities.items()
    }
    flat = {"test_macro_f1": scores["test"]["macro_f1"]}
    for key in ("mae", "mae_median"):
        if key in scores["test"]:
            flat[f"test_{key}"] = scores["test"][key]
    return {**flat, **scores}


FEW_DOCUMENTS = 10  # a class with fewer training documents than this is warned about


FEW_NAMED = 5  # classes with few documents named one a warning; the rest counted in one


def run_warnings(metrics, corpus, class_weight=None):
    """What a user should know before trusting the run: unbalanced classes (weighed by
    ``class_weight``, the run's resolved setting), classes with a handful of training
    documents, and what the mix decided (the deep part dropped, or weighted 0)."""
    counts = corpus.class_counts("train")
    weighting = class_weight or "none"
    imbalance = imbalance_warning(corpus.class_names, counts, weighting)
    found = [f"Unbalanced classes: {imbalance}."] if imbalance else []
    few = [
        (n, int(c)) for n, c in zip(corpus.class_names, counts, strict=True) if c < FEW_DOCUMENTS
    ]
    for name, count in few[:FEW_NAMED]:
        found.append(
            f"The class {name!r} has {count} training document(s) (fewer than "
            f"{FEW_DOCUMENTS}): its figures rest on very little; add documents of it or "
            "merge it with a neighbour."
        )
    if len(few) > FEW_NAMED:  # one line for the rest (a 2,000-class run wrote 2,000 warnings)
        found.append(
            f"{len(few) - FEW_NAMED:,} more classes have fewer than {FEW_DOCUMENTS} training "
            f"documents each ({len(few):,} of {len(counts):,} in all; metrics.json's "
            "per_class figures name them)."
        )
    found.extend((metrics.get("ngram_channel") or {}).get("warnings", []))
    return found


def write_metrics(run, model, corpus, scores, history, train_seconds, command):
    """Step 10: ``metrics.json`` (and the backup goes: the run is finished)."""
    config, run_dir = run.config, run.run_dir
    epochs_run = len(history.get("loss", []))
    train_examples = corpus.sizes["train"] * epochs_run
    metrics = {
        "model": config.model,
        "num_classes": corpus.num_classes,
        "class_names": list(corpus.class_names),
        **scores,
        "epochs": epochs_run,
        "best_epoch": _best_epoch(history, config.monitor),
        "train_seconds": round(train_seconds, 2),
        "examples_per_second": round(train_examples / max(train_seconds, 1e-9), 1),
        "parameters": int(model.count_params()),
        "seed": config.seed,
        "command": command or " ".join(shlex.quote(a) for a in sys.argv),
        "hatt_version": __version__,
        "train_size": corpus.sizes["train"],
        "validation_size": corpus.sizes["validation"],
        "test_size": corpus.sizes["test"],
        "limit": config.limit,
        "test_probabilities": str(run_dir / run_files.TEST_PROBABILITIES),
        "validation_probabilities": str(run_dir / run_files.VALIDATION_PROBABILITIES),
        "data_source": corpus.source,
        "read": corpus.report,  # what reading skipped ({"skipped": {reason: n}, ...})
        "keras_version": keras.__version__,
        "backend": keras.backend.backend(),
        "strategy": config.strategy,
        "replicas": run.replicas,
        "resumed_from_epoch": run.initial_epoch,
        "deterministic": config.deterministic,
        "prepared": config.prepared,
        "scaled": config.scaled,  # what the preset's scaling to the corpus changed
    }
    channel_file = run_dir / run_files.NGRAM_CHANNEL
    if channel_file.exists():  # how the n-gram channel started, and its accuracy alone
        metrics["ngram_channel"] = json.loads(channel_file.read_text())
    metrics["warnings"] = run_warnings(metrics, corpus, run.config.class_weight)
    # where the embedding and the encoder started (their seconds are not in train_seconds)
    for key, name in (
        ("word_vectors", run_files.WORD_VECTORS),
        ("language_model", run_files.LANGUAGE_MODEL),
    ):
        if (run_dir / name).exists():
            metrics[key] = json.loads((run_dir / name).read_text())
    run_files.write_metrics(run_dir, metrics)
    run.backup.remove()  # the run is finished; metrics.json marks it
    return metrics


# === The page =========================================================================


def train(
    config,
    run_dir,
    *,
    texts=None,
    command=None,
    verbose="auto",
    restart=False,
    callbacks=None,
    unlabeled=None,
):
    """Train ``config.model`` on its corpus and write the run directory.

    Everything that can be checked without data is checked first, and the run
    directory is created only once the corpus is ready: a run that fails
    before training leaves nothing behind. A run directory with a backup of
    an interrupted run of the same settings resumes from its last finished
    epoch (see :mod:`hatt.training.run.resume`).

    Args:
        config: a :class:`hatt.training.TrainConfig`.
        run_dir: the run directory (created).
        texts: an already read corpus, a :class:`hatt.data.TextCorpus` (its
            train, validation and test splits and class names); ``None``: the
            config's data source (``hatt.data.load_corpus``), or the shards of
            ``config.prepared``.
        command: the command line recorded in ``metrics.json``.
        verbose: Keras ``fit`` verbosity.
        restart: remove an earlier run's files from ``run_dir`` first.
        callbacks: Keras callbacks added after the loop's own (NaN stop,
            early stopping, the per-epoch backup, TensorBoard).
        unlabeled: unlabeled documents as a list of str, for
            ``config.unlabeled="(in memory)"`` (else ``config.unlabeled``'s path
            is read).

    Returns:
        The metrics dict also written to ``metrics.json``.

    Raises:
        ValueError: a setting, the corpus (e.g. a split without every class)
            or the run directory does not fit.
        hatt.lock.DirectoryInUse: another live process trains into ``run_dir``.
        hatt.training.run.resume.RunError: ``run_dir`` holds a finished run, a
            backup of other settings or a corrupted backup.
        hatt.training.run.resume.NaNLossError: the loss became NaN (``status.json``
            says where).
    """
    strategy = distribute.create_strategy(config.strategy)  # first: precedes any other op
    # one writer a run directory, held to the end (hatt.lock; released by the OS on a crash)
    resume.check_writable(distribute.worker_run_dir(run_dir, strategy))  # why not, first
    with run_lock.hold(distribute.worker_run_dir(run_dir, strategy)):
        run = check_run(
            config,
            run_dir,
            strategy,
            restart=restart,
            verbose=verbose,
            callbacks=list(callbacks or ()),
        )
        set_seed(config)
        if config.init is not None:  # a bad --init fails before the data; a resumed run
            run.init_source = transfer.load_source(config.init, config.model)  # needs its words
        corpus = Corpus.open(config, texts, unlabeled, transfer.source_words(run.init_source))
        run.config = config = config.fit_to_corpus(corpus.class_counts("train"))
        start_run_dir(run, corpus, restart=restart)
        steps = corpus.steps_per_epoch(run.replicas)
        datasets = run_datasets(run, corpus, steps)
        model = build_model(run, corpus, steps)
        start_channel(run, model, corpus)
        start_methods(run, model, corpus)
        run.class_weight = class_weights(config, corpus)
        run.epoch_logits = crossfit.recorder(run, model, corpus)  # step 6a
        history, train_seconds = fit(run, model, datasets, steps)
        channel_logits = mix_channel(run, model, corpus)
        scores = evaluate(run, model, datasets)
        probabilities = save_predictions(run, model, corpus, channel_logits)
        scores.update(classification_scores(corpus, probabilities))
        return write_metrics(run, model, corpus, scores, history, train_seconds, command)


# === Helpers ==========================================================================


def _refit(run):
    """Whether the channel was fit again on train + validation (``ngram.refit``)."""
    return run.config.ngram is not None and run.config.ngram.refit


def _probabilities(logits):
    """Sigmoid of ``[N]`` logits, softmax of ``[N, C]``."""
    from scipy.special import expit, softmax

    logits = np.asarray(logits, np.float64)
    return expit(logits) if logits.ndim == 1 else softmax(logits, axis=1)


class _Timer(keras.callbacks.Callback):
    """Wall time of ``fit`` (training and per-epoch validation)."""

    def on_train_begin(self, logs=None):
        self.start = time.perf_counter()

    def on_train_end(self, logs=None):
        self.seconds = time.perf_counter() - self.start


def _stop_on_nan(run_dir, where, backup):
    status = {"status": "nan_loss", **where, "last_good_epoch": len(backup.records)}
    run_files.write_json_atomic(Path(run_dir) / resume.STATUS_FILE, status)
    raise resume.NaNLossError(
        f"The training loss became {where['loss']} at epoch {where['epoch']}, batch "
        f"{where['batch']}; training stopped (written to {Path(run_dir) / resume.STATUS_FILE}). "
        "Lower the learning rate (--set learning_rate=...) and run again with --restart, or "
        f"resume from the last good epoch ({len(backup.records)}) by running the same command."
    )


def _best_epoch(history, monitor):
    values = history.get(monitor)
    if not values:
        return None
    best = np.argmax(values) if "accuracy" in monitor else np.argmin(values)
    return int(best) + 1


def read_history(run_dir):
    """The rows of a run directory's ``history.csv`` (dicts of strings)."""
    with open(Path(run_dir) / run_files.HISTORY, newline="") as f:
        return list(csv.DictReader(f))


def _evaluated(metrics):
    """What the test figures were computed on, in words."""
    if metrics.get("limit"):
        return f"test split limited to {metrics['test_size']} reviews by --limit"
    return f"full test split, {metrics['test_size']} reviews"


def _class_lines(metrics):
    """The summary's macro-F1 line (two classes too: a majority-class model shows in it)
    and, for ordered classes, the MAE."""
    if "test_macro_f1" not in metrics:
        return []
    names = metrics.get("class_names") or ()
    classes = f"{len(names)} classes: {', '.join(names)}" if names else "every class weighs 1"
    lines = [f"  test macro-F1        {metrics['test_macro_f1']:.4f}   ({classes})"]
    if "test_mae" in metrics:
        lines.append(
            f"  test MAE             {metrics['test_mae']:.3f}   (in label units; "
            f"{metrics['test_mae_median']:.3f} when the model answers the median of its "
            "own predicted distribution)"
        )
    return lines


def summary(metrics, run_dir):
    """A one-screen summary of a finished run."""
    minutes = metrics["train_seconds"] / 60
    lines = [
        "",
        f"hatt train {metrics['model']} — finished",
        f"  test accuracy        {metrics['test_accuracy']:.4f}   ({_evaluated(metrics)}; "
        f"loss {metrics['test_loss']:.4f})",
        f"  validation accuracy  {metrics['validation_accuracy']:.4f}   "
        f"(best epoch {metrics['best_epoch']} of {metrics['epochs']})",
        *_class_lines(metrics),
        f"  training             {minutes:.1f} min, "
        f"{metrics['examples_per_second']:.0f} reviews/s, {metrics['parameters']:,} parameters",
        f"  seed                 {metrics['seed']}",
        f"  run directory        {run_dir}",
    ]
    lines += [f"  warning: {warning}" for warning in metrics.get("warnings", [])]
    return "\n".join(lines)
