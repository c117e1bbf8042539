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
import os
import shlex
import sys
import time
from pathlib import Path

import keras
import numpy as np

import hatt
from hatt import models, ngram_init, resume
from hatt.data import prepared as prepared_lib

FLAT_FAMILIES = ("cnn", "rnn", "transformer")
# `hatt train --strategy`: tf.distribute strategies (see create_strategy).
STRATEGIES = ("default", "mirrored", "multiworker")
NGRAM_INITS = ("nb", "nblr", "zeros")
# TrainConfig fields that a prepared corpus fixes (hatt prepare → hatt train --prepared).
PREPARED_FIELDS = (
    "data",
    "validation_size",
    "limit",
    "max_tokens",
    "min_count",
    "sequence_length",
    "max_sentences",
    "max_words",
    "truncation",
)
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
    # Naive Bayes log-count ratios of the training split ("nb", as NBSVM), at an
    # NB-weighted logistic regression fit on it ("nblr", see hatt.ngram_init), or at 0.
    ngram_init: str = "nb"
    ngram_init_scale: float = 1.0
    ngram_alpha: float = 1.0  # NB smoothing of the log-count ratios
    # "nblr": inverse L2 strength, or a grid chosen on validation accuracy
    ngram_C: float | list = dataclasses.field(default_factory=lambda: [0.01, 0.03, 0.1, 0.3])
    # False: the channel keeps its start (e.g. the "nblr" fit) and training
    # fits the deep part to what the linear model leaves.
    ngram_trainable: bool = True
    # "joint": the channel starts per ngram_init and trains with the deep part.
    # "separate": the deep part trains with the channel off; then the channel is
    # set per ngram_init and the two logits are weighted, a·deep + b·channel + c,
    # by a logistic regression on the validation split (mix_ngram_channel).
    ngram_fit: str = "joint"
    # Features in fewer training reviews start at 0: a feature seen in one review
    # only "predicts" that review's label, which the training set rewards and the
    # test set does not.
    ngram_min_df: int = 1
    # scaling out (README "Scaling out"); batch_size is the global batch
    strategy: str = "default"  # "default", "mirrored" or "multiworker" (TF_CONFIG)
    prepared: str | None = None  # a folder written by `hatt prepare`
    shuffle_buffer: int = 10000  # reviews in the shuffle buffer when reading shards
    # Op determinism (tf.config.experimental.enable_op_determinism) for the
    # process: with the seed, two CPU runs give identical weights. `hatt train
    # --seed S` turns it on.
    deterministic: bool = False

    def __post_init__(self):
        if self.model not in models.FAMILIES:
            raise ValueError(
                f"Expected model to be one of {models.FAMILIES}. Received: model={self.model!r}"
            )
        if self.ngram_init not in NGRAM_INITS:
            raise ValueError(
                f"Expected ngram_init to be one of {NGRAM_INITS}. "
                f"Received: ngram_init={self.ngram_init!r}"
            )
        if self.ngram_fit not in ("joint", "separate"):
            raise ValueError(
                "Expected ngram_fit to be 'joint' or 'separate'. "
                f"Received: ngram_fit={self.ngram_fit!r}"
            )
        if self.ngram_fit == "separate" and self.ngram_init == "zeros":
            raise ValueError(
                "ngram_fit='separate' sets the channel after training from ngram_init, "
                "which must be 'nb' or 'nblr'. Received: ngram_init='zeros'"
            )
        if not isinstance(self.ngram_trainable, bool):
            raise ValueError(
                "Expected ngram_trainable to be a bool. "
                f"Received: ngram_trainable={self.ngram_trainable!r}"
            )
        if self.optimizer not in ("adam", "clr"):
            raise ValueError(
                f"Expected optimizer to be 'adam' or 'clr'. Received: optimizer={self.optimizer!r}"
            )
        if self.strategy not in STRATEGIES:
            raise ValueError(
                f"Expected strategy to be one of {STRATEGIES}. Received: strategy={self.strategy!r}"
            )
        for name in ("epochs", "batch_size", "patience", "shuffle_buffer"):
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


def create_datasets(config, imdb, vectorizer, *, epochs=None, initial_epoch=0, replicas=1):
    """Encode every split once; return its ids and its (bucketed) dataset.

    Args:
        epochs, initial_epoch: the training dataset holds the batches of
            epochs ``initial_epoch..epochs-1``, epoch ``e`` shuffled by
            ``(seed, e)`` (``fit`` then needs ``steps_per_epoch``); ``None``:
            one epoch, reshuffled on every iteration.
        replicas: the replicas each batch is split across. With more than
            one, no batch is smaller than ``replicas`` (an empty replica batch
            breaks some CPU kernels): the training set drops such partial
            batches (at most ``replicas - 1`` reviews a bucket, others every
            epoch), validation and test keep every review, in order, in
            batches of :func:`evaluation_batch_size`.

    Returns:
        ``{split: (ids, dataset)}`` for train (shuffled, seeded), validation
        and test. The ids are reused for the in-order prediction datasets.
    """
    options = {**_dataset_options(config, vectorizer), "num_buckets": config.num_buckets}
    out = {}
    for name in ("train", "validation", "test"):
        split = getattr(imdb, name)
        ids = hatt.data.encode(split.texts, vectorizer, progress=True)
        if name != "train" and replicas > 1:
            dataset = hatt.data.make_dataset(
                None,
                split.labels,
                ids=ids,
                bucketing=False,
                **{**options, "batch_size": evaluation_batch_size(config, len(split), replicas)},
            )
        else:
            dataset = hatt.data.make_dataset(
                None,
                split.labels,
                ids=ids,
                shuffle=name == "train",
                seed=config.seed,
                epochs=epochs if name == "train" else None,
                initial_epoch=initial_epoch,
                min_batch_size=replicas,
                **options,
            )
        out[name] = (ids, dataset)
    return out


def steps_per_epoch(config, ids, replicas=1):
    """Training batches per epoch (bucketing leaves one partial batch per bucket at most)."""
    lengths = hatt.data.pipeline.document_lengths(ids)
    boundaries = hatt.data.pipeline.bucket_boundaries(lengths, config.num_buckets)
    return hatt.data.pipeline.count_batches(lengths, boundaries, config.batch_size, replicas)


def evaluation_batch_size(config, size, replicas):
    """``batch_size``, or a little more, so that no in-order batch has fewer than ``replicas``."""
    if replicas <= 1:
        return config.batch_size
    if size < replicas:
        raise ValueError(
            f"Expected every split to hold at least one review per replica ({replicas}). "
            f"Received: a split of {size} reviews."
        )
    for batch_size in range(config.batch_size, config.batch_size + size + 1):
        if size % batch_size == 0 or size % batch_size >= replicas:
            return batch_size
    return size


# === Prepared corpora (hatt prepare / hatt train --prepared) =========================


def prepared_settings(prepared_dir):
    """The TrainConfig values a prepared corpus fixes (:data:`PREPARED_FIELDS`)."""
    manifest = prepared_lib.read_manifest(prepared_dir)
    return {k: v for k, v in manifest["settings"].items() if k in PREPARED_FIELDS}


class _PreparedSplit:
    """What ``train`` needs of a split read from shards: its size, labels and ids."""

    def __init__(self, prepared_dir, name, manifest):
        self.prepared_dir, self.name, self.manifest = prepared_dir, name, manifest
        self.size = int(manifest["splits"][name]["reviews"])

    def __len__(self):
        return self.size

    def labels_and_ids(self):
        return prepared_lib.split_labels_and_ids(self.prepared_dir, self.name, self.manifest)


def open_prepared(config):
    """The vectorizer and the three splits of ``config.prepared``, checked against ``config``."""
    manifest = prepared_lib.read_manifest(config.prepared)
    layout = "flat" if config.model in FLAT_FAMILIES else "nested"
    if manifest["layout"] != layout:
        raise prepared_lib.PreparedDataError(
            f"The corpus in {config.prepared!r} was prepared in the {manifest['layout']} layout "
            f"(for {manifest.get('model')!r}); {config.model!r} needs the {layout} layout. Run "
            f"`hatt prepare --model {config.model} ...` for it."
        )
    differ = {
        k: (v, getattr(config, k))
        for k, v in manifest["settings"].items()
        if k in PREPARED_FIELDS[3:] and getattr(config, k) != v  # the vocabulary's settings
    }
    if differ:
        raise prepared_lib.PreparedDataError(
            f"The corpus in {config.prepared!r} was prepared with other settings "
            f"({', '.join(f'{k}: {a!r} != {b!r}' for k, (a, b) in differ.items())}); prepare it "
            "again with these settings or leave them at the prepared values."
        )
    vectorizer = prepared_lib.load_vectorizer(config.prepared)
    splits = {name: _PreparedSplit(config.prepared, name, manifest) for name in prepared_lib.SPLITS}
    return manifest, vectorizer, splits


def create_prepared_datasets(config, manifest, *, epochs=None, initial_epoch=0, replicas=1):
    """``{split: dataset}`` read from the shards of ``config.prepared`` (train shuffled).

    ``replicas`` as in :func:`create_datasets`.
    """
    packed = _sentence_groups(config) if _packed(config) else None
    out = {}
    for name in prepared_lib.SPLITS:
        size = manifest["splits"][name]["reviews"]
        evaluation = name != "train" and replicas > 1
        out[name] = prepared_lib.prepared_dataset(
            config.prepared,
            name,
            batch_size=evaluation_batch_size(config, size, replicas)
            if evaluation
            else config.batch_size,
            shuffle=name == "train",
            seed=config.seed,
            shuffle_buffer=config.shuffle_buffer,
            bucketing=not evaluation,
            num_buckets=config.num_buckets,
            packed=packed,
            epochs=epochs,
            initial_epoch=initial_epoch,
            manifest=manifest,
            min_batch_size=replicas if name == "train" else 1,
        )
    return out


def prepared_steps_per_epoch(config, manifest, replicas=1):
    """Training batches per epoch of a prepared corpus, from its length histogram."""
    lengths = prepared_lib.split_lengths(manifest, "train")
    boundaries = hatt.data.pipeline.bucket_boundaries(lengths, config.num_buckets)
    return hatt.data.pipeline.count_batches(lengths, boundaries, config.batch_size, replicas)


# === Scaling out: strategies, workers, determinism ===================================


def create_strategy(name="default"):
    """The ``tf.distribute`` strategy ``hatt train --strategy NAME`` trains under.

    - ``"default"``: one device (TensorFlow's default strategy).
    - ``"mirrored"``: ``MirroredStrategy`` over the machine's GPUs, or over its
      logical CPU devices when there is no GPU (split a CPU into several with
      ``tf.config.set_logical_device_configuration`` before TensorFlow starts).
    - ``"multiworker"``: ``MultiWorkerMirroredStrategy``; the cluster and this
      worker's place in it come from the ``TF_CONFIG`` environment variable.
      Create it before any other TensorFlow operation runs.

    Every batch of ``batch_size`` reviews (the global batch) is split across
    the replicas.
    """
    import tensorflow as tf

    if name == "default":
        return tf.distribute.get_strategy()
    if name == "mirrored":
        gpus = tf.config.list_logical_devices("GPU")
        if gpus:
            return tf.distribute.MirroredStrategy([d.name for d in gpus])
        # Over logical CPUs the default collective all-reduce aborts on the HAN's
        # gradients ("Shape mismatch in the collective instance ... expected shape
        # [841] but another member ... [1585]"); reducing on one device works.
        return tf.distribute.MirroredStrategy(
            [d.name for d in tf.config.list_logical_devices("CPU")],
            cross_device_ops=tf.distribute.ReductionToOneDevice(),
        )
    if name == "multiworker":
        if not os.environ.get("TF_CONFIG"):
            raise ValueError(
                "Expected the TF_CONFIG environment variable with --strategy multiworker "
                '(e.g. TF_CONFIG=\'{"cluster": {"worker": ["host1:12345", "host2:12345"]}, '
                '"task": {"type": "worker", "index": 0}}\'). Received: TF_CONFIG unset.'
            )
        return tf.distribute.MultiWorkerMirroredStrategy()
    raise ValueError(f"Expected strategy to be one of {STRATEGIES}. Received: strategy={name!r}")


def worker_run_dir(run_dir, strategy):
    """Where this worker writes: ``run_dir`` on the chief, ``run_dir/worker-N`` elsewhere.

    Every worker of a multi-worker run trains, evaluates and saves (those are
    collective operations); only the chief's files are the run's results.
    """
    resolver = getattr(strategy, "cluster_resolver", None)
    if resolver is None or not resolver.task_type or strategy.extended.should_checkpoint:
        return Path(run_dir)
    return Path(run_dir) / f"worker-{resolver.task_id}"


def _distribute_options(dataset, strategy, policy="DATA"):
    """Multi-worker: shard by data (every worker sees its slice of every global batch).

    Sharding by file would give workers different numbers of batches from
    bucketed or sharded input; by data, the step counts agree (and
    ``predict`` gathers the workers' slices back in the split's order).
    """
    import tensorflow as tf

    if not isinstance(strategy, tf.distribute.MultiWorkerMirroredStrategy):
        return dataset
    options = tf.data.Options()
    options.experimental_distribute.auto_shard_policy = getattr(
        tf.data.experimental.AutoShardPolicy, policy
    )
    return dataset.with_options(options)


def _build_under_strategy(model, dataset, strategy):
    """Build the compiled model's state on one local batch, not on fit's first batch.

    Keras 3.15's TensorFlow trainer (``_maybe_symbolic_build``) draws the
    first batch from ``fit``'s own iterator for a model created under a
    strategy and averages it across replicas with ``strategy.reduce``. Under
    ``MultiWorkerMirroredStrategy`` that fails ("Attempt to convert a value
    (PerReplica ...) to a Tensor": the reduction gets the ``(x, y)`` tuple,
    see tensorflow#72388), and with ``steps_per_epoch`` the drawn batch is
    lost to training. The model is already built; the metrics, loss and
    optimizer are built here from one batch of ``dataset``, and the trainer's
    step is skipped for this model.
    """
    if getattr(model, "_distribute_strategy", None) is None:
        return  # not created under a strategy: Keras builds lazily, nothing to avoid
    batch = next(iter(dataset.take(1)))
    with strategy.scope():
        model._symbolic_build(data_batch=batch)
    model._maybe_symbolic_build = lambda iterator=None, data_batch=None: None


def _rank_one_logs_for_multiworker(model, strategy):
    """Let ``fit`` / ``evaluate`` reduce their logs under ``MultiWorkerMirroredStrategy``.

    Keras 3.15's TensorFlow trainer reduces a step's logs across workers with
    ``strategy.reduce("MEAN", value, axis=0)``, which fails on the scalar loss
    and metrics ("Invalid reduction dimension 0 for input with 0 dimensions",
    tensorflow#72388). Returning each log as a ``[1]`` tensor makes the same
    reduction average the workers' values into a scalar.
    """
    import tensorflow as tf

    if not isinstance(strategy, tf.distribute.MultiWorkerMirroredStrategy):
        return

    def rank_one(step):
        def wrapped(data):
            return {k: keras.ops.reshape(v, [1]) for k, v in step(data).items()}

        return wrapped

    model.train_step = rank_one(model.train_step)
    model.test_step = rank_one(model.test_step)


def set_seed(config):
    """Seed Python, NumPy and Keras (and TensorFlow); turn on op determinism if asked."""
    keras.utils.set_random_seed(config.seed)
    if config.deterministic:
        import tensorflow as tf

        tf.config.experimental.enable_op_determinism()


def create_model(config, vectorizer, steps_per_epoch):
    kwargs = dict(config.model_kwargs)
    kwargs["vocabulary_size"] = vectorizer.vocabulary_size
    if _packed(config):
        kwargs.setdefault("packed_groups", len(_sentence_groups(config)))
    if config.model == "transformer":
        kwargs.setdefault("sequence_length", config.sequence_length)
    legacy = {  # model_kwargs' ngram_* keys → the head's n-gram channel
        "ngram_buckets": "buckets",
        "ngram": "order",
        "ngram_reduction": "reduction",
        "ngram_binary": "binary",
        "ngram_dropout": "feature_dropout",
        "ngram_l2": "l2",
    }
    channel = {legacy[k]: kwargs.pop(k) for k in list(kwargs) if k in legacy}
    ngram = channel if channel.get("buckets") else None
    model = models.build(config.model, ngram=ngram, **kwargs)
    frozen = not config.ngram_trainable or config.ngram_fit == "separate"
    if frozen and ngram:
        model.get_layer("ngram_logit").trainable = False
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
    counts = ngram_init.ngram_counts(ids, vocabulary_size, buckets, ngram, chunk_size)
    return ngram_init.log_count_ratios(counts, labels, alpha=alpha, min_df=min_df)


def fit_ngram_channel(layer, config, counts, labels, validation=None):
    """The n-gram channel's weights per ``config.ngram_init``, from training counts.

    Args:
        layer: the model's ``NgramLogit`` (its ``binary`` and ``reduction``).
        config: a :class:`TrainConfig` (``ngram_init``, ``ngram_alpha``,
            ``ngram_C``, ``ngram_min_df``, ``ngram_init_scale``).
        counts, labels: the training split's counts
            (:func:`hatt.ngram_init.ngram_counts`) and labels.
        validation: optional ``(counts, labels)`` of the validation split, which
            chooses ``ngram_C`` from a grid and measures the channel alone.

    Returns:
        ``(weights, intercept, info)``: the channel's weights, the intercept of
        its logit (``0`` for ``"nb"``), and a dict describing the start (``init``,
        the channel-alone accuracies, for ``"nblr"`` the chosen ``C``).
    """
    start = time.perf_counter()
    intercept = 0.0
    if config.ngram_init == "nb":
        weights = ngram_init.log_count_ratios(
            counts, labels, alpha=config.ngram_alpha, min_df=config.ngram_min_df
        )
        info = {"init": "nb", "alpha": config.ngram_alpha, "min_df": config.ngram_min_df}
    else:
        weights, intercept, info = ngram_init.fit_nb_logistic(
            counts,
            labels,
            binary=layer.binary,
            reduction=layer.reduction,
            alpha=config.ngram_alpha,
            min_df=config.ngram_min_df,
            C=config.ngram_C,
            validation=validation,
            seed=config.seed,
        )
    weights = weights * config.ngram_init_scale
    intercept *= config.ngram_init_scale
    info["scale"] = config.ngram_init_scale
    for name, split in (("train", (counts, labels)), ("validation", validation)):
        if split is not None:
            info[f"channel_{name}_accuracy"] = ngram_init.channel_accuracy(
                *split, weights, layer.binary, layer.reduction, intercept
            )
    info["seconds"] = round(time.perf_counter() - start, 2)
    return weights, intercept, info


def _channel_counts(layer, ids):
    return ngram_init.ngram_counts(ids, layer.vocabulary_size, layer.buckets, layer.ngram)


def init_ngram_channel(model, config, ids, labels, validation=None):
    """Set the n-gram channel's weights per ``config.ngram_init`` (no-op without one).

    With ``ngram_fit="separate"`` nothing is set here: the deep part trains
    with the channel at zero, and :func:`mix_ngram_channel` sets it afterwards.

    Args:
        model: a model built with ``ngram_buckets > 0`` (else nothing happens).
        config: a :class:`TrainConfig`.
        ids, labels: the encoded training split and its labels.
        validation: optional ``(ids, labels)`` of the validation split (see
            :func:`fit_ngram_channel`).

    Returns:
        The start's description (:func:`fit_ngram_channel`), or ``None`` when
        there is no channel or it is set after training.
    """
    try:
        layer = model.get_layer("ngram_logit")
    except ValueError:
        return None
    if config.ngram_init == "zeros":
        return {"init": "zeros"}
    if config.ngram_fit == "separate":  # the deep part trains alone first
        return None
    if ids is None:
        raise ValueError(
            f"ngram_init={config.ngram_init!r} counts n-grams in the tokenized training split, "
            "which a prepared corpus does not hold in memory. Use --set ngram_init=zeros with "
            "--prepared, or train from raw text."
        )
    print(f"Starting the n-gram channel ({config.ngram_init}) from the training split")
    if validation is not None:
        validation = (_channel_counts(layer, validation[0]), validation[1])
    weights, intercept, info = fit_ngram_channel(
        layer, config, _channel_counts(layer, ids), labels, validation
    )
    layer.embeddings.assign(weights)
    if intercept:
        bias = model.get_layer("logit").bias
        bias.assign(bias + intercept)
    info["trainable"] = config.ngram_trainable
    accuracy = info.get("channel_validation_accuracy")
    if accuracy is not None:
        print(f"The n-gram channel alone: validation accuracy {accuracy:.4f}")
    return info


def mix_ngram_channel(model, config, ids, labels, validation, test=None, deep_logits=None):
    """``ngram_fit="separate"``: set the channel, then weigh it against the deep part.

    The deep part has been trained with the channel at zero. The channel's
    weights are now fit as ``ngram_init`` says (training split only), and a
    logistic regression on the validation split over the two logits gives
    ``a``, ``b`` and ``c`` of ``a·deep + b·channel + c`` (``channel`` without
    its own intercept, which ``c`` replaces), written into the model (the
    ``"logit"`` kernel and bias are scaled by ``a`` and shifted by ``c``, the
    channel's weights scaled by ``b``): the model's layers and its saved form
    stay as they are. Three numbers are fit on validation, so the validation
    accuracy afterwards is slightly optimistic; nothing is fit on the test
    split (its accuracies of the parts are only reported).

    Args:
        model: the trained model (channel named ``"ngram_logit"``, deep logit
            named ``"logit"``).
        config: its :class:`TrainConfig`.
        ids, labels: the encoded training split and its labels.
        validation: ``(ids, labels)`` of the validation split.
        test: optional ``(ids, labels)`` of the test split, to report the parts'
            accuracies there (nothing is fit on it).
        deep_logits: callable ``split_name -> float array`` of the deep part's
            logits in the split's order.

    Returns:
        ``(info, logits)``: a dict with the channel's start (as
        :func:`fit_ngram_channel`), the mix, and the accuracy of the deep
        part, the channel and both on validation (and test); and per split
        ``{"deep_logits", "channel_logits"}`` (the parts before the mix, the
        channel with its own intercept), float arrays in the split's order.
    """
    from sklearn.linear_model import LogisticRegression

    if ids is None or validation is None:
        raise ValueError(
            "ngram_fit='separate' fits the channel on the tokenized training split and the mix "
            "on the validation split, which a prepared corpus does not hold in memory. Use "
            "ngram_fit='joint' with --prepared."
        )
    layer, dense = model.get_layer("ngram_logit"), model.get_layer("logit")
    splits = {"validation": validation, **({"test": test} if test is not None else {})}
    counts = {name: (_channel_counts(layer, i), np.asarray(y)) for name, (i, y) in splits.items()}
    print(f"Fitting the n-gram channel ({config.ngram_init}) on the training split")
    weights, intercept, info = fit_ngram_channel(
        layer, config, _channel_counts(layer, ids), labels, counts["validation"]
    )
    parts = {}  # split → (deep logit, channel logit without its intercept, labels)
    for name, (split_counts, y) in counts.items():
        features = ngram_init.layer_features(split_counts, layer.binary, layer.reduction)
        deep = np.asarray(deep_logits(name), np.float64).reshape(-1)
        parts[name] = (deep, np.asarray(features @ weights, np.float64), y)
    deep, channel, y = parts["validation"]
    mixer = LogisticRegression(C=1e4, max_iter=1000).fit(np.stack([deep, channel], 1), y)
    a, b = (float(w) for w in mixer.coef_[0])
    c = float(mixer.intercept_[0])
    kernel, bias = (keras.ops.convert_to_numpy(v) for v in (dense.kernel, dense.bias))
    dense.kernel.assign(kernel * a)
    dense.bias.assign(bias * a + c)
    layer.embeddings.assign(weights * b)
    info["fit"] = "separate"
    info["trainable"] = False  # the channel never trained with the deep part
    info["channel_intercept"] = intercept
    info["mix"] = {"deep": a, "channel": b, "bias": c}
    for name, (deep, channel, y) in parts.items():
        info[f"deep_{name}_accuracy"] = float(((deep > 0) == y).mean())
        info[f"channel_{name}_accuracy"] = float(((channel + intercept > 0) == y).mean())
        info[f"mixed_{name}_accuracy"] = float(((a * deep + b * channel + c > 0) == y).mean())
    print(
        f"Mixed on validation: {a:.3f}·deep + {b:.3f}·channel + {c:.3f}; validation accuracy "
        f"deep {info['deep_validation_accuracy']:.4f}, channel "
        f"{info['channel_validation_accuracy']:.4f}, both {info['mixed_validation_accuracy']:.4f}"
    )
    # The parts' logits (deep without its mix, channel with its own intercept), saved
    # beside the probabilities so ensembles can weigh the parts themselves.
    logits = {
        name: {"deep_logits": deep, "channel_logits": channel + intercept}
        for name, (deep, channel, _) in parts.items()
    }
    return info, logits


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


def train(config, run_dir, *, imdb=None, command=None, verbose="auto", restart=False):
    """Train ``config.model`` on IMDB and write the run directory.

    A run directory with a backup of an interrupted run of the same settings
    resumes from its last finished epoch (see :mod:`hatt.resume`).

    Args:
        config: a :class:`TrainConfig`.
        run_dir: the run directory (created).
        imdb: an already loaded :class:`hatt.data.Imdb` (else ``load_imdb``,
            or the shards of ``config.prepared``).
        command: the command line recorded in ``metrics.json``.
        verbose: Keras ``fit`` verbosity.
        restart: remove an earlier run's files from ``run_dir`` first.

    Returns:
        The metrics dict also written to ``metrics.json``.

    Raises:
        hatt.resume.RunError: ``run_dir`` holds a finished run, a backup of
            other settings or a corrupted backup.
        hatt.resume.NaNLossError: the loss became NaN (``status.json`` says where).
    """
    strategy = create_strategy(config.strategy)  # first: multi-worker set-up precedes any op
    replicas = int(strategy.num_replicas_in_sync)
    if replicas > 1 and _packed(config):
        raise ValueError(
            "The packed HAN layout cannot be split across replicas (its sentence groups "
            f"differ in size). Received: packed=True with {replicas} replicas; pass --set "
            "packed=false."
        )
    if (
        config.prepared
        and config.ngram_fit == "separate"
        and config.model_kwargs.get("ngram_buckets")
    ):
        raise ValueError(
            "ngram_fit='separate' fits the n-gram channel on the tokenized training split, "
            "which a prepared corpus does not hold in memory. Use ngram_fit='joint' with "
            "ngram_init='zeros' with --prepared, or train from raw text."
        )
    run_dir = worker_run_dir(run_dir, strategy)
    state = resume.open_run_dir(run_dir, config.to_dict(), restart=restart)
    (run_dir / "config.json").write_text(json.dumps(config.to_dict(), indent=2) + "\n")
    set_seed(config)
    initial_epoch = int(state["epoch"]) if state else 0
    # An interrupted run that had finished its epochs (or stopped early) only
    # evaluates and writes its results.
    fit_epochs = initial_epoch if state and state.get("training_done") else config.epochs
    if state:
        print(f"Resuming {run_dir} after epoch {initial_epoch} of {config.epochs}")

    if config.prepared:
        manifest, vectorizer, splits = open_prepared(config)
        imdb = hatt.data.Imdb(splits["train"], splits["validation"], splits["test"], "")
        imdb.source = f"{manifest['source']} (prepared: {config.prepared})"
        vectorizer.save(run_dir / "vectorizer.json")
        datasets = create_prepared_datasets(
            config, manifest, epochs=fit_epochs, initial_epoch=initial_epoch, replicas=replicas
        )
        encoded = {name: (None, datasets[name]) for name in datasets}
        train_steps = prepared_steps_per_epoch(config, manifest, replicas)
    if imdb is None:
        imdb = hatt.data.load_imdb(
            config.data,
            validation_size=config.validation_size,
            validation_split=config.validation_split,
            seed=config.seed,
            limit=config.limit,
        )
    if not config.prepared:
        print(f"Fitting the vocabulary on {len(imdb.train)} training reviews")
        vectorizer = create_vectorizer(config).adapt(imdb.train.texts, progress=True)
        vectorizer.save(run_dir / "vectorizer.json")
        print("Tokenizing train / validation / test")
        encoded = create_datasets(
            config,
            imdb,
            vectorizer,
            epochs=fit_epochs,
            initial_epoch=initial_epoch,
            replicas=replicas,
        )
        train_steps = steps_per_epoch(config, encoded["train"][0], replicas)
    train_ds, validation_ds, test_ds = (
        _distribute_options(encoded[name][1], strategy) for name in ("train", "validation", "test")
    )
    # The cyclical schedule is set in optimizer steps; the batch count is known.
    with strategy.scope():
        model = create_model(config, vectorizer, train_steps)
        if not state:  # a resumed run restores the channel's trained weights below
            train_ids, validation_ids = encoded["train"][0], encoded["validation"][0]
            labels = None if train_ids is None else imdb.train.labels
            validation = None
            if validation_ids is not None:
                validation = (validation_ids, imdb.validation.labels)
            channel = init_ngram_channel(model, config, train_ids, labels, validation)
            if channel is not None:
                (run_dir / "ngram_channel.json").write_text(json.dumps(channel, indent=2) + "\n")

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
    backup = resume.RunBackup(run_dir, config.to_dict(), early_stopping, state)
    with strategy.scope():
        backup.restore_model(model)
    _build_under_strategy(model, encoded["validation"][1], strategy)
    _rank_one_logs_for_multiworker(model, strategy)
    callbacks = [
        stop_on_nan,
        early_stopping,
        backup,
        keras.callbacks.TensorBoard(log_dir=str(run_dir / "logs"), write_graph=False),
        timer,
    ]
    model.fit(
        train_ds,
        validation_data=validation_ds,
        epochs=fit_epochs,
        initial_epoch=initial_epoch,
        steps_per_epoch=train_steps,
        callbacks=callbacks,
        shuffle=False,  # the dataset shuffles itself, seeded by (seed, epoch)
        verbose=verbose,
    )
    if stop_on_nan.where:
        _stop_on_nan(run_dir, stop_on_nan.where, backup)
    history = backup.history()  # every epoch, the interrupted sessions' included
    channel_logits = {}
    if config.ngram_fit == "separate" and config.model_kwargs.get("ngram_buckets"):
        deep_model = keras.Model(model.inputs, model.get_layer("logit").output)

        def deep_logits(split_name):
            dataset = _prediction_data(
                config, vectorizer, encoded, split_name, getattr(imdb, split_name), replicas
            )[0]
            return deep_model.predict(_distribute_options(dataset, strategy), verbose=0)

        def split(name):
            ids = encoded[name][0]
            return None if ids is None else (ids, getattr(imdb, name).labels)

        channel, channel_logits = mix_ngram_channel(
            model,
            config,
            encoded["train"][0],
            imdb.train.labels,
            split("validation"),
            split("test"),
            deep_logits,
        )
        (run_dir / "ngram_channel.json").write_text(json.dumps(channel, indent=2) + "\n")
    epochs_run = len(history.get("loss", []))
    train_seconds = backup.previous_seconds + timer.seconds
    validation_loss, validation_accuracy = model.evaluate(validation_ds, verbose=0)
    test_loss, test_accuracy = model.evaluate(test_ds, verbose=0)
    model.save(run_dir / "model.keras")
    # Probabilities in each split's own order (no bucketing), for ensembles.
    for split_name in ("validation", "test"):
        split = getattr(imdb, split_name)
        predict_ds, labels, ids = _prediction_data(
            config, vectorizer, encoded, split_name, split, replicas
        )
        parts = channel_logits.get(split_name, {})
        np.savez_compressed(
            run_dir / f"{split_name}_probabilities.npz",
            probabilities=model.predict(_distribute_options(predict_ds, strategy), verbose=0)
            .reshape(-1)
            .astype(np.float32),
            labels=labels.astype(np.int8),
            ids=np.array(ids),
            **{key: value.astype(np.float32) for key, value in parts.items()},
        )

    train_examples = len(imdb.train) * epochs_run
    metrics = {
        "model": config.model,
        "test_accuracy": float(test_accuracy),
        "test_loss": float(test_loss),
        "validation_accuracy": float(validation_accuracy),
        "validation_loss": float(validation_loss),
        "epochs": epochs_run,
        "best_epoch": _best_epoch(history, config.monitor),
        "train_seconds": round(train_seconds, 2),
        "examples_per_second": round(train_examples / max(train_seconds, 1e-9), 1),
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
        "strategy": config.strategy,
        "replicas": replicas,
        "resumed_from_epoch": initial_epoch,
        "deterministic": config.deterministic,
        "prepared": config.prepared,
    }
    channel_file = run_dir / "ngram_channel.json"
    if channel_file.exists():  # how the n-gram channel started, and its accuracy alone
        metrics["ngram_channel"] = json.loads(channel_file.read_text())
    (run_dir / "metrics.json").write_text(json.dumps(metrics, indent=2) + "\n")
    backup.remove()  # the run is finished; metrics.json marks it
    return metrics


def _prediction_data(config, vectorizer, encoded, split_name, split, replicas=1):
    """An in-order dataset of a split, with its labels and review ids."""
    batch_size = evaluation_batch_size(config, len(split), replicas)
    if config.prepared:
        dataset = prepared_lib.prepared_dataset(
            config.prepared,
            split_name,
            batch_size=batch_size,
            bucketing=False,
            packed=_sentence_groups(config) if _packed(config) else None,
        ).map(lambda x, y: x)
        labels, ids = split.labels_and_ids()
        return dataset, labels, ids
    dataset = hatt.data.make_dataset(
        None,
        ids=encoded[split_name][0],
        bucketing=False,
        **{**_dataset_options(config, vectorizer), "batch_size": batch_size},
    )
    return dataset, split.labels, split.ids


def _stop_on_nan(run_dir, where, backup):
    status = {"status": "nan_loss", **where, "last_good_epoch": len(backup.records)}
    resume.write_json_atomic(Path(run_dir) / resume.STATUS_FILE, status)
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
