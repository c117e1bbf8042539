"""Train a model family on IMDB: data → vocabulary → fit → evaluate → run directory.

:func:`train` is what ``hatt train`` runs. It loads IMDB through
:mod:`hatt.data`, fits the vocabulary on the training split only, trains with
Keras ``fit`` (progress bars), early-stops on the validation split and
restores the best epoch, then evaluates **once** on the full test split. The
run directory gets ``config.json``, ``history.csv``, ``metrics.json``,
``model.keras``, ``vectorizer.json`` and TensorBoard logs.

Optimizers: Adam (default) or the cyclical learning rate with cyclical
momentum of Smith (2017, 2018) — triangular policy, SGD with Nesterov
momentum — computed in the graph from the optimizer's step counter.
"""

import csv
import dataclasses
import json
import shlex
import sys
import time
from pathlib import Path

import keras
import numpy as np

import hatt
from hatt import models

FLAT_FAMILIES = ("cnn", "rnn", "transformer")
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


# === Cyclical learning rate and momentum ============================================


def _triangle(step, step_size):
    """0 → 1 → 0 over ``2 * step_size`` steps (Smith's triangular policy)."""
    step = keras.ops.cast(step, "float32")
    cycle = keras.ops.floor(1.0 + step / (2.0 * step_size))
    return keras.ops.maximum(0.0, 1.0 - keras.ops.abs(step / step_size - 2.0 * cycle + 1.0))


@keras.saving.register_keras_serializable(package="hatt")
class TriangularSchedule(keras.optimizers.schedules.LearningRateSchedule):
    """Cyclical value between ``low`` and ``high`` (triangular policy).

    With ``inverse=True`` the cycle goes from ``high`` down to ``low`` and
    back (cyclical momentum falls while the learning rate rises).

    Args:
        low: smallest value.
        high: largest value.
        step_size: optimizer steps from ``low`` to ``high`` (half a cycle).
        inverse: start at ``high`` instead of ``low``.

    References:
        Smith, "Cyclical Learning Rates for Training Neural Networks", 2017;
        Smith, "A disciplined approach to neural network hyper-parameters", 2018.
    """

    def __init__(self, low, high, step_size, inverse=False):
        if not 0 <= low <= high:
            raise ValueError(f"Expected 0 <= low <= high. Received: low={low!r}, high={high!r}")
        if step_size <= 0:
            raise ValueError(f"Expected step_size > 0. Received: step_size={step_size!r}")
        self.low = float(low)
        self.high = float(high)
        self.step_size = float(step_size)
        self.inverse = bool(inverse)

    def __call__(self, step):
        phase = _triangle(step, self.step_size)
        if self.inverse:
            return self.high - (self.high - self.low) * phase
        return self.low + (self.high - self.low) * phase

    def get_config(self):
        return {
            "low": self.low,
            "high": self.high,
            "step_size": self.step_size,
            "inverse": self.inverse,
        }


@keras.saving.register_keras_serializable(package="hatt")
class CyclicalSGD(keras.optimizers.SGD):
    """SGD with Nesterov momentum whose momentum follows a schedule.

    The learning rate can be any schedule (e.g. :class:`TriangularSchedule`);
    the momentum is ``momentum_schedule(iterations)``, evaluated in the graph
    at every step (Keras' ``SGD`` takes momentum as a constant).

    Args:
        learning_rate: float or schedule.
        momentum_schedule: a :class:`TriangularSchedule` (or any serializable
            schedule) giving the momentum at each step.
        nesterov: Nesterov momentum.
        **kwargs: other ``keras.optimizers.SGD`` arguments.
    """

    def __init__(self, learning_rate=0.01, momentum_schedule=None, nesterov=True, **kwargs):
        kwargs.pop("momentum", None)
        # A non-zero constant makes SGD create its momentum slots; the value used
        # at each step comes from momentum_schedule.
        super().__init__(learning_rate=learning_rate, momentum=0.9, nesterov=nesterov, **kwargs)
        if isinstance(momentum_schedule, dict):
            momentum_schedule = keras.saving.deserialize_keras_object(momentum_schedule)
        self.momentum_schedule = momentum_schedule or TriangularSchedule(0.85, 0.95, 1000, True)

    def current_momentum(self):
        return self.momentum_schedule(self.iterations)

    def update_step(self, gradient, variable, learning_rate):
        learning_rate = keras.ops.cast(learning_rate, variable.dtype)
        gradient = keras.ops.cast(gradient, variable.dtype)
        momentum = keras.ops.cast(self.current_momentum(), variable.dtype)
        m = self.momentums[self._get_variable_index(variable)]
        scaled = keras.ops.multiply(gradient, learning_rate)
        self.assign(m, keras.ops.subtract(keras.ops.multiply(m, momentum), scaled))
        if self.nesterov:  # look ahead along the updated velocity
            self.assign_add(variable, keras.ops.subtract(keras.ops.multiply(m, momentum), scaled))
        else:
            self.assign_add(variable, m)

    def get_config(self):
        config = super().get_config()
        config.pop("momentum", None)
        config["momentum_schedule"] = keras.saving.serialize_keras_object(self.momentum_schedule)
        return config


# === Configuration ==================================================================


@dataclasses.dataclass
class TrainConfig:
    """Everything a run depends on; written to ``config.json`` in the run directory.

    ``model_kwargs`` go to ``hatt.models.build(model, ...)`` (``vocabulary_size``
    is filled in from the vocabulary).
    """

    model: str = "cnn"
    model_kwargs: dict = dataclasses.field(default_factory=dict)
    # data
    data: str | None = None
    seed: int = 1337
    validation_size: int = 2500
    validation_split: str = "blocks"
    limit: int | None = None
    max_tokens: int = 30000
    min_count: int = 2
    sequence_length: int = 400
    max_sentences: int = 30
    max_words: int = 50
    truncation: str = "head_tail"
    packed: bool = True  # HAN only: packed sentence groups (far less padding)
    # Widths of the packed sentence groups; None: hatt.data's default (least padding).
    # On a CPU a recurrent word encoder pays per time step, so fewer groups run
    # faster (experiments/benchmarks/han_packed.py).
    sentence_groups: list | None = None
    batch_size: int = 32
    num_buckets: int = 16
    # optimization
    optimizer: str = "adam"  # "adam" or "clr" (cyclical LR + momentum, SGD Nesterov)
    learning_rate: float = 1e-3
    clr_min_learning_rate: float = 1e-3
    clr_max_learning_rate: float = 3e-2
    clr_step_epochs: float = 2.0  # half a cycle, in epochs
    clr_min_momentum: float = 0.85
    clr_max_momentum: float = 0.95
    epochs: int = 10
    patience: int = 2
    monitor: str = "val_accuracy"
    # n-gram channel (model_kwargs["ngram_buckets"] > 0): start its weights at the
    # Naive Bayes log-count ratios of the training split ("nb", as NBSVM) or at 0.
    ngram_init: str = "nb"
    ngram_init_scale: float = 1.0
    # Features in fewer training reviews start at 0: a feature seen in one review
    # only "predicts" that review's label, which the training set rewards and the
    # test set does not.
    ngram_min_df: int = 1

    def __post_init__(self):
        if self.model not in models.FAMILIES:
            raise ValueError(
                f"Expected model to be one of {models.FAMILIES}. Received: model={self.model!r}"
            )
        if self.ngram_init not in ("nb", "zeros"):
            raise ValueError(
                f"Expected ngram_init to be 'nb' or 'zeros'. Received: ngram_init={self.ngram_init!r}"
            )
        if self.optimizer not in ("adam", "clr"):
            raise ValueError(
                f"Expected optimizer to be 'adam' or 'clr'. Received: optimizer={self.optimizer!r}"
            )
        for name in ("epochs", "batch_size", "patience"):
            value = getattr(self, name)
            if not isinstance(value, int) or isinstance(value, bool) or value < 1:
                raise ValueError(
                    f"Expected {name} to be a positive int. Received: {name}={value!r}"
                )

    @classmethod
    def from_dict(cls, values):
        fields = {f.name for f in dataclasses.fields(cls)}
        unknown = sorted(set(values) - fields)
        if unknown:
            raise ValueError(f"Unknown configuration keys: {unknown}. Known keys: {sorted(fields)}")
        return cls(**values)

    def to_dict(self):
        return dataclasses.asdict(self)


def parse_overrides(pairs):
    """``["epochs=3", "model_kwargs.units=32"]`` → nested dict (values parsed as JSON)."""
    out = {}
    for pair in pairs or []:
        if "=" not in pair:
            raise ValueError(f"Expected --set key=value. Received: {pair!r}")
        key, raw = pair.split("=", 1)
        try:
            value = json.loads(raw)
        except json.JSONDecodeError:
            value = raw
        target = out
        parts = key.strip().split(".")
        for part in parts[:-1]:
            target = target.setdefault(part, {})
        target[parts[-1]] = value
    return out


def merge_config(base, overrides):
    merged = dict(base)
    for key, value in overrides.items():
        if isinstance(value, dict) and isinstance(merged.get(key), dict):
            merged[key] = {**merged[key], **value}
        else:
            merged[key] = value
    return merged


# === Steps ==========================================================================


def create_vectorizer(config):
    return hatt.data.Vectorizer(
        max_tokens=config.max_tokens,
        min_count=config.min_count,
        output_mode="flat" if config.model in FLAT_FAMILIES else "nested",
        sequence_length=config.sequence_length,
        max_sentences=config.max_sentences,
        max_words=config.max_words,
        truncation=config.truncation,
    )


def _packed(config):
    return config.model == "han" and config.packed


def _sentence_groups(config):
    groups = config.sentence_groups or hatt.data.pipeline.default_sentence_groups(config.max_words)
    return tuple(int(g) for g in groups)


def _dataset_options(config, vectorizer):
    packed = _packed(config)
    return {
        "vectorizer": vectorizer,
        "batch_size": config.batch_size,
        "packed": packed,
        "sentence_groups": _sentence_groups(config) if packed else None,
    }


def create_datasets(config, imdb, vectorizer):
    """Encode every split once; return its ids and its (bucketed) dataset.

    Returns:
        ``{split: (ids, dataset)}`` for train (shuffled, seeded), validation
        and test. The ids are reused for the in-order prediction datasets.
    """
    options = {**_dataset_options(config, vectorizer), "num_buckets": config.num_buckets}
    out = {}
    for name in ("train", "validation", "test"):
        split = getattr(imdb, name)
        ids = hatt.data.encode(split.texts, vectorizer, progress=True)
        dataset = hatt.data.make_dataset(
            None, split.labels, ids=ids, shuffle=name == "train", seed=config.seed, **options
        )
        out[name] = (ids, dataset)
    return out


def create_model(config, vectorizer, steps_per_epoch):
    kwargs = dict(config.model_kwargs)
    kwargs["vocabulary_size"] = vectorizer.vocabulary_size
    if _packed(config):
        kwargs.setdefault("packed_groups", len(_sentence_groups(config)))
    if config.model == "transformer":
        kwargs.setdefault("sequence_length", config.sequence_length)
    model = models.build(config.model, **kwargs)
    model.compile(
        optimizer=create_optimizer(config, steps_per_epoch),
        loss="binary_crossentropy",
        metrics=["accuracy"],
    )
    return model


def nb_log_ratios(
    ids, labels, vocabulary_size, buckets, ngram=2, alpha=1.0, min_df=1, chunk_size=1024
):
    """Naive Bayes log-count ratios of the n-gram channel's features (NBSVM).

    With binarized feature counts per review, ``p = alpha + Σ_pos f`` and
    ``q = alpha + Σ_neg f``, the ratio is ``r = log((p / |p|₁) / (q / |q|₁))``
    (Wang & Manning 2012). Features no training review has get ``0``.

    Args:
        ids: ``tf.RaggedTensor`` of encoded reviews (flat or nested), as from
            ``hatt.data.encode``.
        labels: 0/1 labels, one per review.
        vocabulary_size, buckets, ngram: as in ``hatt.layers.NgramLogit``.
        alpha: additive smoothing.
        min_df: features in fewer training reviews get ``0``.

    Returns:
        float32 NumPy array ``[vocabulary_size + buckets]``.
    """
    from hatt.layers.ngram_logit import ngram_feature_ids

    size = vocabulary_size + (buckets if ngram > 1 else 0)
    labels = np.asarray(labels)
    counts = np.zeros((2, size), np.float64)
    for start in range(0, len(labels), chunk_size):
        dense = ids[start : start + chunk_size].to_tensor()
        features, mask = ngram_feature_ids(dense, vocabulary_size, buckets, ngram)
        features = np.asarray(features).reshape(len(dense), -1)
        mask = np.asarray(mask).reshape(len(dense), -1)
        rows = np.broadcast_to(np.arange(len(dense))[:, None], features.shape)
        # One count per (review, feature): binarized.
        pairs = np.unique(rows[mask].astype(np.int64) * size + features[mask])
        for label in (0, 1):
            chosen = labels[start + pairs // size] == label
            counts[label] += np.bincount(pairs[chosen] % size, minlength=size)
    seen = counts.sum(axis=0) >= max(1, min_df)
    p, q = counts[1] + alpha, counts[0] + alpha
    ratios = np.log(p / p.sum()) - np.log(q / q.sum())
    return np.where(seen, ratios, 0.0).astype(np.float32)


def init_ngram_channel(model, config, ids, labels):
    """Set the n-gram channel's weights per ``config.ngram_init`` (no-op without one)."""
    try:
        layer = model.get_layer("ngram_logit")
    except ValueError:
        return None
    if config.ngram_init == "zeros":
        return layer
    ratios = nb_log_ratios(
        ids, labels, layer.vocabulary_size, layer.buckets, layer.ngram, min_df=config.ngram_min_df
    )
    layer.embeddings.assign(ratios * config.ngram_init_scale)
    return layer


def create_optimizer(config, steps_per_epoch):
    if config.optimizer == "adam":
        return keras.optimizers.Adam(learning_rate=config.learning_rate)
    step_size = max(1.0, config.clr_step_epochs * steps_per_epoch)
    return CyclicalSGD(
        learning_rate=TriangularSchedule(
            config.clr_min_learning_rate, config.clr_max_learning_rate, step_size
        ),
        momentum_schedule=TriangularSchedule(
            config.clr_min_momentum, config.clr_max_momentum, step_size, inverse=True
        ),
        nesterov=True,
    )


class _Timer(keras.callbacks.Callback):
    """Wall time of ``fit`` (training and per-epoch validation)."""

    def on_train_begin(self, logs=None):
        self.start = time.perf_counter()

    def on_train_end(self, logs=None):
        self.seconds = time.perf_counter() - self.start


def train(config, run_dir, *, imdb=None, command=None, verbose="auto"):
    """Train ``config.model`` on IMDB and write the run directory.

    Args:
        config: a :class:`TrainConfig`.
        run_dir: the run directory (created).
        imdb: an already loaded :class:`hatt.data.Imdb` (else ``load_imdb``).
        command: the command line recorded in ``metrics.json``.
        verbose: Keras ``fit`` verbosity.

    Returns:
        The metrics dict also written to ``metrics.json``.
    """
    run_dir = Path(run_dir)
    run_dir.mkdir(parents=True, exist_ok=True)
    (run_dir / "config.json").write_text(json.dumps(config.to_dict(), indent=2) + "\n")
    keras.utils.set_random_seed(config.seed)

    if imdb is None:
        imdb = hatt.data.load_imdb(
            config.data,
            validation_size=config.validation_size,
            validation_split=config.validation_split,
            seed=config.seed,
            limit=config.limit,
        )
    print(f"Fitting the vocabulary on {len(imdb.train)} training reviews")
    vectorizer = create_vectorizer(config).adapt(imdb.train.texts, progress=True)
    vectorizer.save(run_dir / "vectorizer.json")
    print("Tokenizing train / validation / test")
    encoded = create_datasets(config, imdb, vectorizer)
    train_ds, validation_ds, test_ds = (
        encoded[name][1] for name in ("train", "validation", "test")
    )
    # The cyclical schedule is set in optimizer steps; the batch count is known.
    steps_per_epoch = int(train_ds.cardinality())
    model = create_model(config, vectorizer, steps_per_epoch)
    init_ngram_channel(model, config, encoded["train"][0], imdb.train.labels)

    timer = _Timer()
    callbacks = [
        keras.callbacks.EarlyStopping(
            monitor=config.monitor,
            mode="max" if "accuracy" in config.monitor else "min",
            patience=config.patience,
            restore_best_weights=True,
        ),
        keras.callbacks.CSVLogger(str(run_dir / "history.csv")),
        keras.callbacks.TensorBoard(log_dir=str(run_dir / "logs"), write_graph=False),
        timer,
    ]
    history = model.fit(
        train_ds,
        validation_data=validation_ds,
        epochs=config.epochs,
        callbacks=callbacks,
        shuffle=False,  # the dataset shuffles itself, seeded
        verbose=verbose,
    )
    epochs_run = len(history.history.get("loss", []))
    validation_loss, validation_accuracy = model.evaluate(validation_ds, verbose=0)
    test_loss, test_accuracy = model.evaluate(test_ds, verbose=0)
    model.save(run_dir / "model.keras")
    # Probabilities in each split's own order (no bucketing), for ensembles.
    for split_name in ("validation", "test"):
        split = getattr(imdb, split_name)
        predict_ds = hatt.data.make_dataset(
            None,
            ids=encoded[split_name][0],
            bucketing=False,
            **_dataset_options(config, vectorizer),
        )
        np.savez_compressed(
            run_dir / f"{split_name}_probabilities.npz",
            probabilities=model.predict(predict_ds, verbose=0).reshape(-1).astype(np.float32),
            labels=split.labels.astype(np.int8),
            ids=np.array(split.ids),
        )

    train_examples = len(imdb.train) * epochs_run
    metrics = {
        "model": config.model,
        "test_accuracy": float(test_accuracy),
        "test_loss": float(test_loss),
        "validation_accuracy": float(validation_accuracy),
        "validation_loss": float(validation_loss),
        "epochs": epochs_run,
        "best_epoch": _best_epoch(history.history, config.monitor),
        "train_seconds": round(timer.seconds, 2),
        "examples_per_second": round(train_examples / max(timer.seconds, 1e-9), 1),
        "parameters": int(model.count_params()),
        "seed": config.seed,
        "command": command or " ".join(shlex.quote(a) for a in sys.argv),
        "hatt_version": hatt.__version__,
        "train_size": len(imdb.train),
        "validation_size": len(imdb.validation),
        "test_size": len(imdb.test),
        "test_probabilities": str(run_dir / "test_probabilities.npz"),
        "validation_probabilities": str(run_dir / "validation_probabilities.npz"),
        "data_source": imdb.source,
        "keras_version": keras.__version__,
        "backend": keras.backend.backend(),
    }
    (run_dir / "metrics.json").write_text(json.dumps(metrics, indent=2) + "\n")
    return metrics


def _best_epoch(history, monitor):
    values = history.get(monitor)
    if not values:
        return None
    best = np.argmax(values) if "accuracy" in monitor else np.argmin(values)
    return int(best) + 1


def read_history(run_dir):
    with open(Path(run_dir) / "history.csv", newline="") as f:
        return list(csv.DictReader(f))


def summary(metrics, run_dir):
    """A one-screen summary of a finished run."""
    minutes = metrics["train_seconds"] / 60
    lines = [
        "",
        f"hatt train {metrics['model']} — finished",
        f"  test accuracy        {metrics['test_accuracy']:.4f}   (full test split, "
        f"{metrics['test_size']} reviews; loss {metrics['test_loss']:.4f})",
        f"  validation accuracy  {metrics['validation_accuracy']:.4f}   "
        f"(best epoch {metrics['best_epoch']} of {metrics['epochs']})",
        f"  training             {minutes:.1f} min, "
        f"{metrics['examples_per_second']:.0f} reviews/s, {metrics['parameters']:,} parameters",
        f"  seed                 {metrics['seed']}",
        f"  run directory        {run_dir}",
    ]
    return "\n".join(lines)
