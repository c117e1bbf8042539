"""What a run depends on: :class:`TrainConfig`, presets, and assembly (its sections: :mod:`~hatt.training.settings.ngram`, ...).

A run's settings come in layers, each on top of the last (:func:`assemble_config`):
the family's preset (``hatt/presets/FAMILY.json``, the tuned recipe; ``None``
for the bare defaults), a JSON file (``hatt train --config``), ``--set
key=value`` overrides, then the command line's own options. Every value is
checked here — its type against the dataclass annotation, the model's
keyword arguments against the family's builder, the n-gram channel's section
— so that a bad setting fails before any data is read.

The n-gram channel is ONE section, ``ngram`` (:class:`NgramSettings`, in its own module): the
layer's settings (``buckets``, ``order``, ...) and how it is fit (``fit``,
``init``, ``C``, ...). Configurations written before that section existed
(``model_kwargs.ngram_buckets``, top-level ``ngram_init`` ...) are translated
by :func:`translate_legacy`, so old config files and run directories load.
"""

import dataclasses
import inspect
import json
import typing

from hatt import models
from hatt import presets as presets_package
from hatt.data.readers.files import read_json_object
from hatt.models._checks import ARGUMENT_CHECKS, unknown_keys_error
from hatt.names import CLASS_WEIGHTS, STRATEGIES
from hatt.training.settings import glove, scale
from hatt.training.settings.checks import (
    check_at_most,
    check_choice,
    check_fields,
    check_positive_int,
    check_seed,
    check_share,
    check_type,
    describe_kinds,
    kinds_of,
)
from hatt.training.settings.legacy import (  # noqa: F401
    LEGACY_FIELDS,
    LEGACY_MODEL_KWARGS,
    complete_later,
    drop_removed,
    translate_legacy,
)
from hatt.training.settings.ngram import (  # noqa: F401  (the section's names, read here too)
    CV_DOCUMENTS,
    CV_FOLDS,
    DEFAULT_C,
    NGRAM_FITS,
    NGRAM_INITS,
    NgramSettings,
)
from hatt.training.settings.optimizer import DECAYS, OPTIMIZERS, check_learning_rate_decay
from hatt.training.settings.scale import SCALED_KEYS
from hatt.training.settings.semi import check_semi_supervised

FLAT_FAMILIES = tuple(f for f in models.FAMILIES if not models.family_spec(f).nested)
WORD_VECTOR_SCALES = ("match", "none")  # word_vectors_scale: fit their norm, or not
# TrainConfig fields that choose the corpus and its splits (hatt.data.load_corpus).
DATA_FIELDS = (
    "data",
    "labels",
    "text_column",
    "label_column",
    "test_data",
    "classes",
    "test_size",
    "validation_size",
    "limit",
)
# ... and those that fit the vocabulary and shape the ids.
VOCABULARY_FIELDS = (
    "max_tokens",
    "min_count",
    "sequence_length",
    "max_sentences",
    "max_words",
    "truncation",
)
# TrainConfig fields that a prepared corpus fixes (hatt prepare → hatt train --prepared).
PREPARED_FIELDS = DATA_FIELDS + VOCABULARY_FIELDS
IMDB_LABELS = ("binary", "rating")
PRESET_PACKAGE = "hatt.presets"
DEFAULT_PRESET = "default"  # assemble_config: the family's own preset, when it has one


# Early stopping's quantity (Keras' validation logs): a misspelt one would turn it off.
MONITORS = ("val_loss", "val_accuracy")
# === The run's configuration ========================================================


@dataclasses.dataclass
class TrainConfig:
    """Everything a run depends on; written to ``config.json`` in the run directory.

    ``model_kwargs`` go to ``hatt.models.build(model, ...)`` (``vocabulary_size``
    is filled in from the vocabulary); ``ngram`` adds the n-gram channel
    (:class:`NgramSettings`, or a dict of its keys; ``None``: no channel).
    ``preset`` records the preset the settings started from.
    """

    model: str = models.DEFAULT_FAMILY
    preset: str | None = None
    model_kwargs: dict = dataclasses.field(default_factory=dict)
    ngram: NgramSettings | None = None
    # data (hatt.data.load_corpus): IMDB by default; a folder per class, a table
    # (.csv/.tsv/.jsonl), "tfds:NAME"; `labels` ("binary" / "rating") is IMDB's task
    data: str | None = None
    labels: str | None = None
    text_column: str = "text"
    label_column: str = "label"
    test_data: str | None = None  # a separate test table / folder
    classes: list | None = None  # the class order (default: sorted, numbers numerically)
    test_size: float = 0.2  # share carved out for test when the data has no test split
    seed: int = 1337
    # reviews carved out of train for validation: an int, a share in (0, 1), or None
    # (min(2500, 10 % of train))
    validation_size: int | float | None = None
    validation_split: str = "blocks"
    limit: int | None = None
    # "balanced": weigh classes by 1 / frequency; "sqrt": by 1 / sqrt(frequency); "auto":
    # balanced when the training split's largest class is over 1.5x its smallest
    # (hatt.training.settings.scale); "none"/None: 1
    class_weight: str | None = "auto"
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
    # the embedding's start (hatt.training.starts.word_vectors): None (random), "word2vec"
    # (trained on the training split), "glove" (GloVe 6B: embedding_dim 50, settings/glove.py),
    # or the path of a text file of vectors
    word_vectors: str | None = None
    word_vectors_epochs: int = 5  # word2vec's passes over the training split
    word_vectors_scale: str = "match"  # "match": rows scaled to the random start's spread
    word_vectors_trainable: bool = True  # False: the embedding stays at the vectors
    # unlabeled documents (hatt.data.unlabeled.read_unlabeled: a folder, a table, a text
    # file of one a line, an archive such as aclImdb_v1_unsup.tar.gz) that word2vec and
    # the vocabulary learn from beside the training split; texts equal to a validation
    # or test text are dropped. Needs a step that learns from them (hatt.training.settings.semi).
    unlabeled: str | None = None
    unlabeled_text_column: str | None = None  # a table's text column (default "text")
    unlabeled_vocabulary: bool = False  # the vocabulary from them too (1,000 IMDB labels: -0.88)
    unlabeled_limit: int | None = None  # keep at most this many (None: up to a memory budget)
    # language-model pretraining of the word encoder (hatt.training.starts.language_model): a
    # bidirectional LM on the training split and the unlabeled documents, before training
    lm_epochs: int = 0  # its epochs; 0: none
    lm_window: int = 100  # words a row at most (a HAN row is a sentence)
    lm_negatives: int = 256  # words drawn a batch for the sampled softmax
    lm_batch_size: int = 128  # rows a batch
    # HAN, after the language model: its sentence encoder (and word attention) pretrained to
    # predict the neighbouring sentences' words (hatt.training.starts.sentence_model); 0: none
    lm_sentence_epochs: int = 0
    init: str | None = None  # a trained model of the family to start from (training/transfer)
    init_frozen_epochs: int = 0  # gradual unfreezing: epochs the copied layers stay frozen
    # discriminative rates (ULMFiT): each layer copied (or pretrained) trains at the rate of
    # the one above it divided by this; 1: every layer at the run's rate
    discriminative_decay: float = 1.0

    # self-training (hatt.training.self_training): a teacher labels the unlabeled
    # documents, a student trains on the labeled and the confident ones
    pseudo_labels: bool = False
    pseudo_label_threshold: float | None = None  # the confidence kept; None: chosen on validation
    pseudo_label_limit: int | None = None  # at most this many (the most confident); None: all

    # adversarial training on the embeddings (hatt.training.run.adversarial, Miyato et al.)
    adversarial: str = "none"  # "none", "at" (adversarial) or "vat" (virtual adversarial)
    adversarial_epsilon: float = 5.0  # the perturbation's L2 norm per document
    adversarial_weight: float = 1.0  # the adversarial loss's weight beside the usual loss
    # VAT's term on batches of the run's unlabeled documents (each as large as a labeled
    # batch) when it has them; false: on the labeled batches
    adversarial_unlabeled: bool = True

    # optimization
    optimizer: str = "adam"  # "adam", "lazy_adam" (sparse rows) or "clr" (cyclical LR + momentum)
    learning_rate: float = 1e-3
    # adam / lazy_adam: "constant", or "cosine" (from learning_rate down to 0 over
    # `epochs`, after `warmup_epochs` of linear rise from 0)
    learning_rate_decay: str = "constant"
    warmup_epochs: float = 0.0
    clr_min_learning_rate: float = 1e-3
    clr_max_learning_rate: float = 3e-2
    clr_step_epochs: float = 2.0  # half a cycle, in epochs
    clr_min_momentum: float = 0.85
    clr_max_momentum: float = 0.95
    epochs: int = 10
    patience: int = 2
    monitor: str = "val_accuracy"
    # scaling out (README "Scaling out"); batch_size is the global batch
    strategy: str = "default"  # "default", "mirrored" or "multiworker" (TF_CONFIG)
    prepared: str | None = None  # a folder written by `hatt prepare`
    shuffle_buffer: int = 10000  # reviews in the shuffle buffer when reading shards
    # Op determinism (tf.config.experimental.enable_op_determinism) for the
    # process: with the seed, two CPU runs give identical weights. `hatt train
    # --seed S` turns it on.
    deterministic: bool = False
    # Keys that scale with the training split, its size or its classes
    # (hatt.training.settings.scale.SCALED_KEYS): assemble_config lists those a preset gave and the
    # user did not set. `scaled`: what the run changed ({"train_documents": N, key: [from, to]}).
    scale: list | None = None
    scaled: dict | None = None

    def __post_init__(self):
        check_choice("model", self.model, models.FAMILIES)
        if isinstance(self.model_kwargs, dict):  # model_kwargs.ngram_* of old callers
            moved = translate_legacy({"model_kwargs": self.model_kwargs, "ngram": self.ngram})
            self.model_kwargs, self.ngram = moved["model_kwargs"], moved["ngram"]
        self.ngram = NgramSettings.from_value(self.ngram)
        check_fields(self)
        for name in (
            "epochs",
            "batch_size",
            "patience",
            "shuffle_buffer",
            "num_buckets",
            "word_vectors_epochs",
            "max_tokens",
            "sequence_length",
            "max_sentences",
            "max_words",
        ):  # first: a warm-up's check below reads epochs
            check_positive_int(name, getattr(self, name))
        check_positive_int("min_count", self.min_count)
        for name, most in MOST.items():  # a bound past which a run never starts (issue 63)
            check_at_most(name, getattr(self, name), most)
        check_kernel_width(self.model_kwargs, self.sequence_length)
        for name in ("learning_rate", "clr_min_learning_rate", "clr_max_learning_rate"):
            if not getattr(self, name) > 0:
                raise ValueError(
                    f"Expected {name} to be a number > 0. Received: {name}={getattr(self, name)!r}"
                )
        check_seed("seed", self.seed)
        check_choice("monitor", self.monitor, MONITORS)
        check_choice("optimizer", self.optimizer, OPTIMIZERS)
        check_choice("learning_rate_decay", self.learning_rate_decay, DECAYS)
        check_learning_rate_decay(self)
        check_choice("strategy", self.strategy, STRATEGIES)
        check_choice("word_vectors_scale", self.word_vectors_scale, WORD_VECTOR_SCALES)
        self.model_kwargs = glove.checked_width(self.model, self.word_vectors, self.model_kwargs)
        if self.limit is not None:
            check_positive_int("limit", self.limit, minimum=2)
        check_semi_supervised(self)
        if self.labels is not None:
            check_choice("labels", self.labels, IMDB_LABELS)
        if self.class_weight is not None:
            check_choice("class_weight", self.class_weight, CLASS_WEIGHTS)
            if self.class_weight == "none":
                self.class_weight = None
        for key in self.scale or ():
            check_choice("scale", key, SCALED_KEYS)
        check_share("test_size", self.test_size)
        if isinstance(self.validation_size, float) and not self.validation_size.is_integer():
            check_share("validation_size", self.validation_size)
        elif self.validation_size is not None:
            self.validation_size = int(self.validation_size)
            check_positive_int("validation_size", self.validation_size, minimum=0)
        if self.classes is not None and (
            len(self.classes) < 2 or not all(isinstance(c, str) and c for c in self.classes)
        ):
            raise ValueError(
                "Expected classes to be a list of at least two class names (strings). "
                f"Received: classes={self.classes!r}"
            )
        check_model_kwargs(self.model, self.model_kwargs)

    @classmethod
    def from_dict(cls, values, *, saved=False):
        """A config from a dict (``config.json``), old flat n-gram keys translated.

        ``saved``: ``values`` is a run's own record (its ``config.json`` or
        backup), where settings removed since are dropped rather than refused.

        A run's ``config.json`` holds the settings as resolved for its training
        split (``scaled``); they are read back as asked (the preset's values,
        ``class_weight="auto"``), which the same split resolves the same way
        (:meth:`fit_to_corpus`): a resumed run compares equal to its command.
        """
        _check_scaled(values.get("scaled"))
        values = translate_legacy(drop_removed(values) if saved else values, complete=True)
        if saved:
            values = complete_later(values)
        values = scale.unscale(values)
        fields = {f.name for f in dataclasses.fields(cls)}
        unknown = sorted(set(values) - fields)
        if unknown:
            raise unknown_keys_error("configuration keys", unknown, fields)
        return cls(**values)

    def to_dict(self):
        return dataclasses.asdict(self)

    def saved_form(self, saved):
        """A run's saved settings (its backup's or ``config.json``'s dict) in the form of
        this config's :meth:`to_dict`, to compare them: read back as asked
        (:meth:`from_dict`), and for a run saved before some keys came to scale, its
        ``scale`` completed (:func:`hatt.training.settings.scale.complete_scale`)."""
        values = TrainConfig.from_dict(saved, saved=True).to_dict()
        return scale.complete_scale(values, self.to_dict(), saved.get("scaled"))

    def fit_to_corpus(self, counts):
        """A copy of this config scaled to the training split's ``counts`` per class.

        See :func:`hatt.training.settings.scale.fit_to_corpus`: ``scale``'s keys and
        ``class_weight="auto"`` are resolved; ``scaled`` records what changed.
        """
        return scale.fit_to_corpus(self, counts)


# Upper bounds of settings whose huge values hang or exhaust memory before training starts
# (issue 63: --epochs 10**20 built one dataset an epoch until killed).
MOST = {"epochs": 100_000, "max_tokens": 50_000_000, "sequence_length": 1_000_000}


def check_kernel_width(model_kwargs, sequence_length):
    """A convolution wider than the text it reads (issue 63: kernel_sizes=[100000] over 400
    words grew to 7.6 GB before its first step)."""
    widths = model_kwargs.get("kernel_sizes") if isinstance(model_kwargs, dict) else None
    if isinstance(widths, list | tuple) and widths and max(widths) > sequence_length:
        raise ValueError(
            f"Expected model_kwargs.kernel_sizes to be at most sequence_length={sequence_length} "
            f"words wide. Received: model_kwargs.kernel_sizes={list(widths)!r}"
        )


def _check_scaled(scaled):
    """``scaled`` (what a run changed, in its config.json) is undone only when well formed."""
    if scaled is None:
        return
    check_type("scaled", scaled, dict | None)
    known = ("train_documents", "class_weight", *SCALED_KEYS)
    unknown = set(scaled) - set(known)
    if unknown:
        raise unknown_keys_error("scaled keys", unknown, known)
    for key, change in scaled.items():
        if key != "train_documents" and not (isinstance(change, list | tuple) and len(change) == 2):
            raise ValueError(
                f"Expected scaled.{key} to be [from, to]. Received: scaled.{key}={change!r}"
            )


def check_model_kwargs(family, model_kwargs):
    """Raise unless every key of ``model_kwargs`` is an argument of ``family``'s builder."""
    known = [k for k in models.builder_arguments(family)]
    unknown = sorted(set(model_kwargs) - set(known))
    if unknown:
        raise unknown_keys_error(f"model_kwargs for {family}", unknown, known)
    for key, value in model_kwargs.items():  # each value as the builder will check it
        check = ARGUMENT_CHECKS.get(key)
        if check is not None and value is not None:
            check(f"model_kwargs.{key}", value)


# === Overrides and layering ==========================================================


def _string_keys():
    """Dotted keys whose values are strings, so ``--set KEY=word`` needs no JSON quotes."""
    hints = typing.get_type_hints(TrainConfig)
    keys = {name for name, hint in hints.items() if str in kinds_of(hint)}
    ngram = typing.get_type_hints(NgramSettings)
    keys |= {f"ngram.{name}" for name, hint in ngram.items() if str in kinds_of(hint)}
    keys |= {f"ngram_{name}" for name in ("init", "fit", "reduction")}  # legacy spellings
    keys.add("model_kwargs.ngram_reduction")
    for family in models.FAMILIES:
        builder = models.registry.BUILDERS[family]
        for name, parameter in inspect.signature(builder).parameters.items():
            if isinstance(parameter.default, str):
                keys.add(f"model_kwargs.{name}")
    return keys


def _expected(key):
    """The expected type of a dotted key, for error messages."""
    hints = typing.get_type_hints(TrainConfig)
    head, _, rest = key.partition(".")
    if head == "ngram" and rest:
        hints, head = typing.get_type_hints(NgramSettings), rest
    if head == "model_kwargs" and rest:  # a builder argument: the kind of its default
        defaults = {
            type(default)
            for builder in models.registry.BUILDERS.values()
            for name, default in _builder_defaults(builder)
            if name == rest and default is not None
        }
        return describe_kinds(sorted(defaults, key=str)) if defaults else "a JSON value"
    return describe_kinds(kinds_of(hints[head])) if head in hints else "a JSON value"


def _builder_defaults(builder):
    return [(n, p.default) for n, p in inspect.signature(builder).parameters.items()]


def parse_overrides(pairs):
    """``["epochs=3", "model_kwargs.units=32"]`` → a nested dict; values parsed as JSON.

    A value that is not JSON is an error, except a bare word for a string
    setting (``optimizer=clr``, ``data=/path``, ``model_kwargs.cell=lstm``).
    """
    out = {}
    string_keys = None
    for pair in pairs or []:
        if "=" not in pair:
            raise ValueError(f"Expected --set key=value. Received: {pair!r}")
        key, raw = pair.split("=", 1)
        key = key.strip()
        try:
            value = json.loads(raw)
        except json.JSONDecodeError:
            string_keys = _string_keys() if string_keys is None else string_keys
            if key not in string_keys:
                raise ValueError(
                    f"Expected --set {key}=VALUE to be {_expected(key)} written as JSON. "
                    f"Received: {key}={raw!r}"
                ) from None
            value = raw
        target = out
        parts = key.split(".")
        for part in parts[:-1]:
            target = target.setdefault(part, {})
            if not isinstance(target, dict):
                raise ValueError(f"Expected {part} to be a section. Received: --set {pair!r}")
        target[parts[-1]] = value
    return out


def merge_config(base, overrides):
    """``base`` with ``overrides`` on top; dict values (sections) are merged key by key."""
    merged = dict(base)
    for key, value in overrides.items():
        if isinstance(value, dict) and isinstance(merged.get(key), dict):
            merged[key] = {**merged[key], **value}
        else:
            merged[key] = value
    return merged


# === Presets =========================================================================


_preset_files = presets_package.preset_files
PRESETS = presets_package.PRESETS


def load_preset(name):
    """The settings of preset ``name`` (``hatt/presets/NAME.json``) as a dict.

    Example:

    >>> hatt.training.load_preset("cnn")["ngram"]["fit"]
    'separate'
    """
    files = _preset_files()
    if name not in files:
        raise ValueError(f"Expected preset to be one of {tuple(sorted(files))}. Received: {name!r}")
    return json.loads(files[name].read_text(encoding="utf-8"))


def read_config_file(path):
    """A JSON file of TrainConfig keys (``hatt train --config``), old flat keys translated."""
    try:
        values = read_json_object(path)
    except (OSError, ValueError) as error:
        raise ValueError(f"Could not read --config {str(path)!r}: {error}") from error
    return translate_legacy(values)


def prepared_settings(prepared_dir):
    """The TrainConfig values a prepared corpus fixes (:data:`PREPARED_FIELDS`)."""
    from hatt.data import prepared as prepared_lib

    manifest = prepared_lib.read_manifest(prepared_dir)
    return {k: v for k, v in manifest["settings"].items() if k in PREPARED_FIELDS}


# The configuration's sections: objects of settings, laid over the preset's key by key.
SECTIONS = {"model_kwargs": (dict,), "ngram": (dict, type(None))}


def _check_sections(layer, where):
    """``layer`` (a ``--config`` file's, ``--set``'s or the options' settings), refused with
    a clear message where a section is not an object (issue 63: ``--set ngram=5`` ended in
    a TypeError while the layers were merged)."""
    for key, kinds in SECTIONS.items():
        if key in layer and not isinstance(layer[key], kinds):
            null = " or null (no channel)" if type(None) in kinds else ""
            raise ValueError(
                f"Expected {key} to be an object of settings{null} ({where}; e.g. "
                f"{{'{key}': {{NAME: VALUE}}}}, on the command line --set {key}.NAME=VALUE). "
                f"Received: {key}={layer[key]!r}"
            )
    return layer


def _preset_scaled_keys(settings, config, overrides, config_file):
    """The keys of :data:`SCALED_KEYS` that ``settings`` (the preset) gave and no later layer
    set. With ``init`` the builder's (``model_kwargs.*``) never scale: the start's shapes are
    the model's, or its layers could not be copied (the CNN's filters)."""
    later = [translate_legacy(overrides)]
    if config_file:
        later.append(translate_legacy(read_config_file(config_file)))
    keys = []
    for key in SCALED_KEYS:
        section, name = key.split(".")
        if name not in (settings.get(section) or {}):
            continue
        if any(name in (layer.get(section) or {}) for layer in later):
            continue
        if section == "model_kwargs" and config.get("init"):
            continue
        if config.get(section) and config[section].get(name) == settings[section][name]:
            keys.append(key)
    return keys


# Builder arguments the training loop fills in itself (never a Python setting).
FILLED_ARGUMENTS = ("vocabulary_size", "num_classes", "ngram")


def settings_overrides(family, settings):
    """Flat keyword settings → the nested overrides of :func:`hatt.training.assemble_config`.

    A key is a :class:`hatt.training.TrainConfig` field (``epochs``,
    ``batch_size``, ``ngram``, ``model_kwargs``, ...) or an argument of the
    family's builder (``dropout``, ``embedding_dim``, ...: it goes into
    ``model_kwargs``, over the preset's). Section values (dicts) are merged key by
    key over the preset's by ``assemble_config``. The data source settings
    (``data``, ``test_data``, ``label_column``, ...: ``hatt train``'s flags) are
    what :meth:`TextClassifier.fit` reads when it is given no documents.

    Raises:
        ValueError: a key that is neither (listing both).
    """
    if family not in models.FAMILIES:
        raise ValueError(
            f"Expected family to be one of {models.FAMILIES}. Received: family={family!r}"
        )
    fields = [f.name for f in dataclasses.fields(TrainConfig)]
    arguments = [a for a in models.builder_arguments(family) if a not in FILLED_ARGUMENTS]
    overrides = {}
    for key, value in settings.items():
        if key in ("model", "preset"):
            raise ValueError(
                f"Expected the family and preset as TextClassifier(family=...) or "
                f"TextClassifier.from_preset(name). Received: {key}={value!r} as a setting."
            )
        if key in fields:
            overrides[key] = value
        elif key in arguments:
            overrides.setdefault("model_kwargs", {})[key] = value
        else:
            raise unknown_keys_error(
                f"setting for {family!r} (a training setting or a {family} builder argument)",
                [key],
                [*fields, *arguments],
            )
    return overrides


def preset_family(name):
    """The family of preset ``name`` (its ``"model"``; ``ValueError`` for an unknown preset)."""
    return load_preset(name).get("model", name)


def assemble_config(family, preset=DEFAULT_PRESET, config_file=None, overrides=(), **values):
    """A checked :class:`TrainConfig` from its layers, each on top of the last.

    Args:
        family: the model family (``"cnn"``, ...).
        preset: ``"default"``: the family's own preset (``hatt/presets/FAMILY.json``)
            if there is one; a preset's name; ``None`` (or ``"none"``): the bare
            defaults.
        config_file: a JSON file of settings.
        overrides: ``KEY=VALUE`` strings (:func:`parse_overrides`) or a dict.
        **values: settings of the command line's own options (``None``: not given).
            With ``prepared``, the corpus's data and vocabulary settings win.

    Returns:
        A :class:`TrainConfig` whose ``preset`` names the preset used.
    """
    check_choice("family", family, models.FAMILIES)
    if preset == DEFAULT_PRESET:
        preset = models.family_spec(family).preset
    if preset == "none":
        preset = None
    config = {"model": family}
    settings = {}
    if preset is not None:
        settings = translate_legacy(load_preset(preset))
        if settings.get("model", family) != family:
            raise ValueError(
                f"Expected a preset for {family}. Received: preset={preset!r} "
                f"(for {settings['model']!r})"
            )
        config = merge_config(config, {**settings, "preset": preset})
    if config_file:
        config = merge_config(config, _check_sections(read_config_file(config_file), "--config"))
    where = "the settings" if isinstance(overrides, dict) else "--set"
    if not isinstance(overrides, dict):
        overrides = parse_overrides(overrides)
    config = merge_config(config, translate_legacy(_check_sections(overrides, where)))
    config.update(
        {k: v for k, v in _check_sections(values, "the options").items() if v is not None}
    )
    config["model"] = family
    config = glove.fit_width(config, [overrides, config_file and read_config_file(config_file)])
    if "scale" not in config:
        config["scale"] = _preset_scaled_keys(settings, config, overrides, config_file)
    if config.get("prepared"):  # the corpus fixes the data and vocabulary settings
        config = merge_config(config, prepared_settings(config["prepared"]))
    return TrainConfig.from_dict(config)
