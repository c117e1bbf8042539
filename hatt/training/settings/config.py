"""What a run depends on: :class:`TrainConfig`, its n-gram section, presets, and assembly.

A run's settings come in layers, each on top of the last (:func:`assemble_config`):
the family's preset (``hatt/presets/FAMILY.json``, the tuned recipe; ``None``
for the bare defaults), a JSON file (``hatt train --config``), ``--set
key=value`` overrides, then the command line's own options. Every value is
checked here — its type against the dataclass annotation, the model's
keyword arguments against the family's builder, the n-gram channel's section
— so that a bad setting fails before any data is read.

The n-gram channel is ONE section, ``ngram`` (:class:`NgramSettings`): the
layer's settings (``buckets``, ``order``, ...) and how it is fit (``fit``,
``init``, ``C``, ...). Configurations written before that section existed
(``model_kwargs.ngram_buckets``, top-level ``ngram_init`` ...) are translated
by :func:`translate_legacy`, so old config files and run directories load.
"""

import dataclasses
import json
import types
import typing

import numpy as np

from hatt import models
from hatt import presets as presets_package
from hatt.data.readers.files import read_json_object
from hatt.models._checks import unknown_keys_error
from hatt.models.head import NgramChannel
from hatt.names import STRATEGIES
from hatt.training.settings import scale
from hatt.training.settings.legacy import (  # noqa: F401
    LEGACY_FIELDS,
    LEGACY_MODEL_KWARGS,
    complete_later,
    drop_removed,
    translate_legacy,
)
from hatt.training.settings.optimizer import DECAYS, OPTIMIZERS, check_learning_rate_decay
from hatt.training.settings.scale import SCALED_KEYS
from hatt.training.settings.semi import check_semi_supervised

FLAT_FAMILIES = tuple(f for f in models.FAMILIES if not models.family_spec(f).nested)
NGRAM_FITS = ("joint", "separate")
WORD_VECTOR_SCALES = ("match", "none")  # word_vectors_scale: fit their norm, or not
NGRAM_INITS = ("nb", "nblr", "lr", "zeros")
# ngram.C's grid when none is given, by the layer's reduction: dividing a review's
# features by the square root of their count (hundreds of n-grams a review) makes them
# much smaller, so the same fit needs a much larger C. Each grid brackets the Cs that
# 5-fold CV on IMDB's training split preferred (sum 0.1-0.3, sqrt 100-300; docs/deep_parts.md).
# "l2" (unit rows, TF-IDF's scale) sits between: scikit-learn's TF-IDF + LR baseline
# chooses C 1-128 on the binary task, 0.125-4 on the ratings.
DEFAULT_C = {
    "sum": [0.01, 0.03, 0.1, 0.3],
    "sqrt": [30.0, 100.0, 300.0, 1000.0],
    "l2": [1.0, 3.0, 10.0, 30.0, 100.0],
}
# ngram.folds="auto": below CV_DOCUMENTS training reviews a grid of ngram.C (and alpha)
# is chosen by stratified CV_FOLDS-fold cross-validation on the training split, as a
# user tunes a scikit-learn baseline; above, on the validation split (IMDB's 22,500
# reviews: 2,500 validation reviews choose as well, in a fifth of the fits).
CV_DOCUMENTS = 10000
CV_FOLDS = 5
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
CLASS_WEIGHTS = ("auto", "balanced", "none")
IMDB_LABELS = ("binary", "rating")
PRESET_PACKAGE = "hatt.presets"
DEFAULT_PRESET = "default"  # assemble_config: the family's own preset, when it has one


# === Type checks ====================================================================


def _kinds(annotation):
    """``int | None`` → ``(int, NoneType)``; ``float`` → ``(float,)``."""
    if isinstance(annotation, types.UnionType) or typing.get_origin(annotation) is typing.Union:
        return typing.get_args(annotation)
    return (annotation,)


def _is(value, kind):
    if kind is type(None):
        return value is None
    if isinstance(value, bool):
        return kind is bool
    if kind is float:
        return isinstance(value, int | float)
    if kind is list:
        return isinstance(value, list | tuple)
    return isinstance(value, kind)


def _describe(kinds):
    names = {type(None): "None", float: "a float", int: "an int", bool: "a bool"}
    names.update({str: "a str", list: "a list", dict: "a dict"})
    return " or ".join(names.get(k, getattr(k, "__name__", str(k))) for k in kinds)


def check_type(name, value, annotation):
    """Raise a ``ValueError`` naming ``name`` unless ``value`` fits ``annotation``."""
    kinds = _kinds(annotation)
    if not any(_is(value, kind) for kind in kinds):
        raise ValueError(f"Expected {name} to be {_describe(kinds)}. Received: {name}={value!r}")


def _check_fields(instance, prefix=""):
    hints = typing.get_type_hints(type(instance))
    for field in dataclasses.fields(instance):
        if dataclasses.is_dataclass(_kinds(hints[field.name])[0]):
            continue  # a nested section checks itself
        check_type(prefix + field.name, getattr(instance, field.name), hints[field.name])


def _check_positive_int(name, value, minimum=1):
    if value < minimum:
        raise ValueError(f"Expected {name} to be an int >= {minimum}. Received: {name}={value!r}")


def _check_share(name, value):
    if not 0 < value < 1:
        raise ValueError(f"Expected {name} to be a float in (0, 1). Received: {name}={value!r}")


def _check_choice(name, value, choices):
    if value not in choices:
        raise ValueError(f"Expected {name} to be one of {choices}. Received: {name}={value!r}")


# Early stopping's quantity (Keras' validation logs): a misspelt one would turn it off.
MONITORS = ("val_loss", "val_accuracy")
# === The n-gram channel's section ===================================================


@dataclasses.dataclass
class NgramSettings:
    """The ``ngram`` section of :class:`TrainConfig`: the channel, and how it is fit.

    The first seven keys are the layer's (:class:`hatt.models.NgramChannel`, with
    its defaults); the others say how its weights are set, from the training
    split only (:mod:`hatt.training.channel.ngram`).

    Args:
        buckets, order, reduction, binary, feature_dropout, l2, idf: the
            layer (``hatt.models.build(..., ngram=...)``); with ``idf`` the
            fit sets the features' IDF from the split it fits on.
        fit: ``"joint"``: the channel starts per ``init`` and trains with the
            deep part. ``"separate"``: the deep part trains with the channel
            off; then the channel is set per ``init`` and the two logits are
            weighed, ``a·deep + b·channel + c``, by a logistic regression on
            the validation split.
        init: ``"nb"``: the Naive Bayes log-count ratios (NBSVM); ``"nblr"``:
            an NB-weighted logistic regression; ``"lr"``: a logistic
            regression on the layer's features (softmax above two classes;
            with ``idf`` and ``reduction="l2"``, TF-IDF + LR over hashed
            n-grams); ``"zeros"``.
        alpha: NB smoothing of the log-count ratios, > 0; with ``"nblr"``
            also a grid, searched with ``C``'s on validation accuracy.
        C: ``"nblr"`` and ``"lr"``: inverse L2 strength, or a grid chosen on
            validation accuracy. ``None`` (the default): a grid for the
            reduction, ``DEFAULT_C`` (``"sum"``: 0.01-0.3; ``"sqrt"``:
            30-1,000; ``"l2"``: 1-100; ``"mean"``: needs one given).
        folds: how a grid of ``C`` (and ``alpha``) is chosen. ``k`` >= 2:
            stratified ``k``-fold cross-validation on the training split (the mean
            held-out accuracy, weighted by the run's class weights), then one fit
            on the whole split at the chosen point; ``0``: the accuracy on the
            validation split. ``"auto"`` (the default): ``CV_FOLDS`` folds below
            ``CV_DOCUMENTS`` training reviews, else ``0``. With one point there
            is nothing to choose and no fold is fit.
        min_df: features in fewer training reviews start at 0 (a feature of
            one review only "predicts" that review's label); with ``idf``
            their IDF is 0 too: they count for nothing, as outside
            ``TfidfVectorizer(min_df=...)``'s vocabulary.
        init_scale: the start's weights are multiplied by it.
        trainable: ``False``: the channel keeps its start and training fits the
            deep part to what the linear model leaves.
        refit: ``fit="separate"`` only: once ``C`` is chosen and the mix is
            fit on the validation split, the channel is fit once more, at that
            ``C``, on the training and validation splits together, and the
            model keeps this fit (with the mix's weights). The validation
            figures stay those of the training-split fit, the only ones not
            fit on validation reviews.
    """

    buckets: int = NgramChannel.buckets
    order: int = NgramChannel.order
    reduction: str = NgramChannel.reduction
    binary: bool = NgramChannel.binary
    feature_dropout: float = NgramChannel.feature_dropout
    l2: float = NgramChannel.l2
    idf: bool = NgramChannel.idf
    fit: str = "joint"
    init: str = "nb"
    alpha: float | list = 1.0
    C: float | list | None = None
    folds: int | str = "auto"
    min_df: int = 1
    init_scale: float = 1.0
    trainable: bool = True
    refit: bool = False

    def __post_init__(self):
        _check_fields(self, prefix="ngram.")
        self.channel()  # the layer's own checks
        _check_choice("ngram.fit", self.fit, NGRAM_FITS)
        _check_choice("ngram.init", self.init, NGRAM_INITS)
        if self.fit == "separate" and self.init == "zeros":
            raise ValueError(
                "ngram.fit='separate' sets the channel after training from ngram.init, "
                "which must be 'nb', 'nblr' or 'lr'. Received: ngram.init='zeros'"
            )
        self._default_C()
        for name in ("alpha", "C"):
            value = getattr(self, name)
            grid = value if isinstance(value, list | tuple) else [value]
            if not grid or not all(_is(v, float) and v > 0 for v in grid):
                raise ValueError(
                    f"Expected ngram.{name} to be a positive float or a list of them. "
                    f"Received: ngram.{name}={value!r}"
                )
        if isinstance(self.alpha, list | tuple) and self.init != "nblr":
            raise ValueError(
                "A grid of ngram.alpha is chosen on validation by the NB-weighted logistic "
                f"regression: it needs ngram.init='nblr'. Received: ngram.init={self.init!r}, "
                f"ngram.alpha={self.alpha!r}"
            )
        _check_positive_int("ngram.min_df", self.min_df)
        if self.folds != "auto" and (
            isinstance(self.folds, str) or self.folds < 0 or self.folds == 1
        ):
            raise ValueError(
                "Expected ngram.folds to be 'auto', 0 (choose on the validation split) or an "
                f"int >= 2 (folds of the training split). Received: ngram.folds={self.folds!r}"
            )
        if self.refit and self.fit != "separate":
            raise ValueError(
                "ngram.refit fits the channel again after the mix of ngram.fit='separate'. "
                f"Received: ngram.refit=True with ngram.fit={self.fit!r}"
            )

    def _default_C(self):
        """``C=None`` becomes the grid of the reduction (written out, so runs record it)."""
        if self.C is not None:
            return
        if self.reduction not in DEFAULT_C and self.init in ("nblr", "lr"):
            raise ValueError(
                f"ngram.init={self.init!r} with ngram.reduction={self.reduction!r} needs ngram.C "
                f"(a float or a grid; there is a default grid for {sorted(DEFAULT_C)} only)."
            )
        self.C = list(DEFAULT_C.get(self.reduction, DEFAULT_C["sum"]))

    @classmethod
    def from_value(cls, value):
        """``None`` → ``None``; a dict (or an ``NgramSettings``) → checked settings."""
        if value is None or isinstance(value, cls):
            return value
        if not isinstance(value, dict):
            raise ValueError(
                f"Expected ngram to be None or a dict of settings. Received: ngram={value!r}"
            )
        known = [f.name for f in dataclasses.fields(cls)]
        unknown = sorted(set(value) - set(known))
        if unknown:
            raise unknown_keys_error("ngram settings", unknown, known)
        return cls(**value)

    def channel(self):
        """The layer's settings, for ``hatt.models.build(..., ngram=...)``."""
        return NgramChannel(**{key: getattr(self, key) for key in NgramChannel.KEYS})

    def folds_for(self, labels):
        """The folds that choose a grid on these training ``labels`` (``0``: the
        validation split): ``"auto"`` resolved by their number (:data:`CV_DOCUMENTS`),
        and never more than the smallest class's reviews (a stratified fold needs one
        of each class); fewer than 2 left is ``0``."""
        folds = self.folds
        if folds == "auto":
            folds = CV_FOLDS if len(labels) < CV_DOCUMENTS else 0
        if folds:
            folds = min(folds, int(np.unique(np.asarray(labels), return_counts=True)[1].min()))
        return folds if folds >= 2 else 0

    def grid_points(self):
        """Every ``(alpha, C)`` a fit chooses among (one: nothing to choose)."""
        grids = [v if isinstance(v, list | tuple) else [v] for v in (self.alpha, self.C)]
        return [(a, c) for a in grids[0] for c in grids[1]]

    @property
    def frozen(self):
        """Whether the channel stays out of training (it is fit apart)."""
        return not self.trainable or self.fit == "separate"

    @property
    def needs_counts(self):
        """Whether fitting it counts n-grams in the tokenized splits (not ``"zeros"``)."""
        return self.init != "zeros"


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
    # "balanced": weigh classes by 1 / frequency; "auto": balanced when the training
    # split's largest class is over 1.5x its smallest (hatt.training.settings.scale); "none"/None: 1
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
    # (trained on the training split), or the path of a text file of vectors
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
        _check_choice("model", self.model, models.FAMILIES)
        if isinstance(self.model_kwargs, dict):  # model_kwargs.ngram_* of old callers
            moved = translate_legacy({"model_kwargs": self.model_kwargs, "ngram": self.ngram})
            self.model_kwargs, self.ngram = moved["model_kwargs"], moved["ngram"]
        self.ngram = NgramSettings.from_value(self.ngram)
        _check_fields(self)
        for name in (
            "epochs",
            "batch_size",
            "patience",
            "shuffle_buffer",
            "num_buckets",
            "word_vectors_epochs",
        ):  # first: a warm-up's check below reads epochs
            _check_positive_int(name, getattr(self, name))
        for name in ("learning_rate", "clr_min_learning_rate", "clr_max_learning_rate"):
            if not getattr(self, name) > 0:
                raise ValueError(
                    f"Expected {name} to be a number > 0. Received: {name}={getattr(self, name)!r}"
                )
        _check_choice("monitor", self.monitor, MONITORS)
        _check_choice("optimizer", self.optimizer, OPTIMIZERS)
        _check_choice("learning_rate_decay", self.learning_rate_decay, DECAYS)
        check_learning_rate_decay(self)
        _check_choice("strategy", self.strategy, STRATEGIES)
        _check_choice("word_vectors_scale", self.word_vectors_scale, WORD_VECTOR_SCALES)
        if self.limit is not None:
            _check_positive_int("limit", self.limit, minimum=2)
        check_semi_supervised(self)
        if self.labels is not None:
            _check_choice("labels", self.labels, IMDB_LABELS)
        if self.class_weight is not None:
            _check_choice("class_weight", self.class_weight, CLASS_WEIGHTS)
            if self.class_weight == "none":
                self.class_weight = None
        for key in self.scale or ():
            _check_choice("scale", key, SCALED_KEYS)
        _check_share("test_size", self.test_size)
        if isinstance(self.validation_size, float) and not self.validation_size.is_integer():
            _check_share("validation_size", self.validation_size)
        elif self.validation_size is not None:
            self.validation_size = int(self.validation_size)
            _check_positive_int("validation_size", self.validation_size, minimum=0)
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
        if saved:
            values = complete_later(drop_removed(values))
        values = scale.unscale(translate_legacy(values, complete=True))
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


# === Overrides and layering ==========================================================


def _string_keys():
    """Dotted keys whose values are strings, so ``--set KEY=word`` needs no JSON quotes."""
    import inspect

    hints = typing.get_type_hints(TrainConfig)
    keys = {name for name, hint in hints.items() if str in _kinds(hint)}
    ngram = typing.get_type_hints(NgramSettings)
    keys |= {f"ngram.{name}" for name, hint in ngram.items() if str in _kinds(hint)}
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
    return _describe(_kinds(hints[head])) if head in hints else "a JSON value"


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


def _preset_scaled_keys(settings, config, overrides, config_file):
    """The keys of :data:`SCALED_KEYS` that ``settings`` (the preset) gave and no later layer set."""
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
        if config.get(section) and config[section].get(name) == settings[section][name]:
            keys.append(key)
    return keys


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
    _check_choice("family", family, models.FAMILIES)
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
        config = merge_config(config, read_config_file(config_file))
    if not isinstance(overrides, dict):
        overrides = parse_overrides(overrides)
    config = merge_config(config, translate_legacy(overrides))
    config.update({k: v for k, v in values.items() if v is not None})
    config["model"] = family
    if "scale" not in config:
        config["scale"] = _preset_scaled_keys(settings, config, overrides, config_file)
    if config.get("prepared"):  # the corpus fixes the data and vocabulary settings
        config = merge_config(config, prepared_settings(config["prepared"]))
    return TrainConfig.from_dict(config)
