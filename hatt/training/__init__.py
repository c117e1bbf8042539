"""Training: settings, the run, the n-gram channel, starting points, and the methods around them.

The wings, each a folder with one concern:

- :mod:`hatt.training.settings`: :class:`TrainConfig` and its sections, presets
  (``hatt/presets/``), ``--set`` overrides, checks, the keys of older files.
- :mod:`hatt.training.run`: the loop (:func:`train`'s plain run), its datasets
  (:class:`Corpus`), metrics, resume (and Ctrl-C), optimizers, ``tf.distribute``, the
  :class:`~hatt.training.run.record.Run` record and the methods it calls through one hook list.
- :mod:`hatt.training.channel`: the n-gram channel: NB ratios, n-gram features,
  cross-fitting and the mix with the deep part.
- :mod:`hatt.training.starts`: starting points: word vectors, the language model,
  the sentence stage, transfer from a trained model (``--init``) or from hatt's IMDB
  start (``--init imdb``, built once and cached).

Above them, :mod:`hatt.training.self_training` wraps a run (a teacher labels unlabeled
documents, a student trains on them; see :func:`train`). Methods that extend a run plug
into it through one hook list (:data:`hatt.training.run.hooks.METHODS`): the starts, and
:mod:`~hatt.training.adversarial` (AT / VAT, a train-step hook, in ``run/``).

Everything a user or an experiment needs is named here; the modules' other names are
internal.
"""

from hatt.training import self_training
from hatt.training.channel.mix import (
    Mix,
    fit_mix,
    held_out_check,
    keeps_deep,
    mix_ngram_channel,
)
from hatt.training.channel.nblr import (
    fit_logistic_grid,
    fit_nb_logistic,
    layer_features,
    log_count_ratios,
    logit_accuracy,
    logit_log_loss,
    logit_losses,
    predicted_classes,
)
from hatt.training.channel.ngram import (
    channel_accuracy,
    channel_counts,
    channel_features,
    fit_ngram_channel,
    init_ngram_channel,
    nb_log_ratios,
    ngram_counts,
    refit_ngram_channel,
)
from hatt.training.run import adversarial, loop
from hatt.training.run.datasets import (
    Corpus,
    create_datasets,
    create_vectorizer,
    sentence_groups,
    steps_per_epoch,
)
from hatt.training.run.distribute import STRATEGIES, create_strategy, worker_run_dir
from hatt.training.run.loop import (
    METRIC_KEYS,
    create_model,
    read_history,
    set_seed,
    summary,
)
from hatt.training.run.metrics import classification_metrics, flat_metrics, format_metrics
from hatt.training.run.optimizers import (
    CyclicalSGD,
    DiscriminativeAdam,
    LazyAdam,
    TriangularSchedule,
    create_optimizer,
)
from hatt.training.settings.config import (
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
from hatt.training.starts import imdb as imdb_start
from hatt.training.starts.imdb import IMDB_START

__all__ = [
    "adversarial",
    "FLAT_FAMILIES",
    "IMDB_START",
    "METRIC_KEYS",
    "NGRAM_FITS",
    "NGRAM_INITS",
    "PREPARED_FIELDS",
    "PRESETS",
    "STRATEGIES",
    "Corpus",
    "CyclicalSGD",
    "DiscriminativeAdam",
    "Mix",
    "NgramSettings",
    "TrainConfig",
    "TriangularSchedule",
    "assemble_config",
    "channel_accuracy",
    "channel_counts",
    "channel_features",
    "classification_metrics",
    "create_datasets",
    "create_model",
    "create_optimizer",
    "LazyAdam",
    "create_strategy",
    "create_vectorizer",
    "fit_logistic_grid",
    "fit_mix",
    "fit_nb_logistic",
    "fit_ngram_channel",
    "flat_metrics",
    "format_metrics",
    "held_out_check",
    "init_ngram_channel",
    "keeps_deep",
    "layer_features",
    "load_preset",
    "log_count_ratios",
    "logit_accuracy",
    "logit_log_loss",
    "logit_losses",
    "merge_config",
    "mix_ngram_channel",
    "nb_log_ratios",
    "ngram_counts",
    "parse_overrides",
    "predicted_classes",
    "prepared_settings",
    "read_history",
    "refit_ngram_channel",
    "sentence_groups",
    "set_seed",
    "steps_per_epoch",
    "summary",
    "train",
    "translate_legacy",
    "worker_run_dir",
]


def train(config, run_dir, **kwargs):
    """Train ``config`` into ``run_dir``: the plain run, or self-training wrapped around it.

    With ``config.init="imdb"``, hatt's IMDB start of the family is built first when it
    is not cached (:func:`hatt.training.starts.imdb.ensure_start`: a full IMDB run, said
    up front).

    With ``config.pseudo_labels`` the run is wrapped (:func:`hatt.training.self_training.train`:
    a teacher in ``RUN_DIR/teacher/``, its pseudo labels, then the student, each a plain
    run); otherwise it is the plain run itself (:func:`hatt.training.run.loop.train`).

    Args:
        config: a :class:`TrainConfig`.
        run_dir: the run directory (created).
        **kwargs: the plain run's keyword arguments (``texts``, ``command``,
            ``verbose``, ``restart``, ``callbacks``, ``unlabeled``; see
            :func:`hatt.training.run.loop.train`).

    Returns:
        The metrics dict also written to ``RUN_DIR/metrics.json`` (the student's, with
        ``"self_training"`` added, when wrapped).

    Raises:
        ValueError, hatt.training.run.resume.RunError: as the plain run's (and
            ``pseudo_labels`` without unlabeled documents, before any data).
        hatt.data.DataNotFoundError: ``init="imdb"`` not built, and IMDB not found.

    Example:

    >>> config = hatt.training.assemble_config("cnn", epochs=1)
    >>> metrics = hatt.training.train(config, "runs/cnn-1")
    """
    if imdb_start.is_imdb_start(config.init):  # built once, before the run that starts from it
        imdb_start.ensure_start(config.model, fit=loop.train, verbose=kwargs.get("verbose", "auto"))
    if config.pseudo_labels:  # a teacher, its pseudo labels, then the plain run as the student
        return self_training.train(config, run_dir, fit=loop.train, **kwargs)
    return loop.train(config, run_dir, **kwargs)
