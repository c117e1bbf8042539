"""Training: configuration and presets, the corpus, the n-gram channel's fit, the loop.

By concern:

- :mod:`~hatt.training.config`: :class:`TrainConfig` (with its ``ngram``
  section), presets (``hatt/presets/``), ``--set`` overrides, assembly.
- :mod:`~hatt.training.corpus`: :class:`Corpus`, from raw text or prepared shards.
- :mod:`~hatt.training.optimizers`: Adam, or the cyclical LR and momentum.
- :mod:`~hatt.training.distribute`: ``tf.distribute`` strategies, and every
  Keras / TensorFlow private-API workaround in one place.
- :mod:`~hatt.training.ngram`: the n-gram channel's NB / NB-LR fit and mix.
- :mod:`~hatt.training.resume`: the per-epoch backup and resuming.
- :mod:`~hatt.training.loop`: :func:`train`, a page of named steps.
"""

from hatt.training import config, corpus, distribute, loop, mix, ngram, optimizers, resume
from hatt.training.config import (
    FLAT_FAMILIES,
    NGRAM_FITS,
    NGRAM_INITS,
    PREPARED_FIELDS,
    PRESETS,
    NgramSettings,
    TrainConfig,
    assemble_config,
    load_preset,
    merge_config,
    parse_overrides,
    prepared_settings,
    translate_legacy,
)
from hatt.training.corpus import (
    Corpus,
    create_datasets,
    create_vectorizer,
    sentence_groups,
    steps_per_epoch,
)
from hatt.training.distribute import STRATEGIES, create_strategy, worker_run_dir
from hatt.training.loop import (
    METRIC_KEYS,
    create_model,
    read_history,
    set_seed,
    summary,
    train,
)
from hatt.training.mix import mix_ngram_channel
from hatt.training.ngram import (
    fit_ngram_channel,
    init_ngram_channel,
    nb_log_ratios,
)
from hatt.training.optimizers import (
    CyclicalSGD,
    DiscriminativeAdam,
    LazyAdam,
    TriangularSchedule,
    create_optimizer,
)

__all__ = [
    "FLAT_FAMILIES",
    "METRIC_KEYS",
    "NGRAM_FITS",
    "NGRAM_INITS",
    "PREPARED_FIELDS",
    "PRESETS",
    "STRATEGIES",
    "Corpus",
    "CyclicalSGD",
    "DiscriminativeAdam",
    "NgramSettings",
    "TrainConfig",
    "TriangularSchedule",
    "assemble_config",
    "config",
    "corpus",
    "create_datasets",
    "create_model",
    "create_optimizer",
    "LazyAdam",
    "create_strategy",
    "create_vectorizer",
    "distribute",
    "fit_ngram_channel",
    "init_ngram_channel",
    "load_preset",
    "loop",
    "merge_config",
    "mix",
    "mix_ngram_channel",
    "nb_log_ratios",
    "ngram",
    "optimizers",
    "parse_overrides",
    "prepared_settings",
    "read_history",
    "resume",
    "sentence_groups",
    "set_seed",
    "steps_per_epoch",
    "summary",
    "train",
    "translate_legacy",
    "worker_run_dir",
]
