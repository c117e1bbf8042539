"""THE classification head, composed once on any backbone, with the optional n-gram channel.

A family builder (`hatt.models.build_cnn`, ...) ends at its document
representation: a functional `keras.Model` from ids to a `[batch, d]` vector,
whose attention layers are called with `return_attention_scores=True`.
`classifier` adds, on top of that graph (no nested model: the backbone's
layers become the classifier's own, so every layer is found by name):

- `Dense(units)` named `"logit"` over the document vector, with
  `units = 1` for two classes (the positive class's logit) and
  `units = num_classes` above;
- optionally the wide n-gram channel: `hatt.layers.NgramLogit` named
  `"ngram_logit"` over the backbone's own ids, with as many logits as the
  `"logit"` layer, added to the deep logits by an `Add` named
  `"total_logit"` (the NBSVM / fastText-style channel, "wide & deep");
- an `Activation` named `"probability"`: sigmoid for two classes (output
  `[batch, 1]`, the positive class's probability), softmax above (output
  `[batch, num_classes]`).

Every model has the same head shape, so the logits a prediction came from are
always the input of the layer named `"probability"` (`logits_tensor`).
"""

import dataclasses

import keras

from hatt.layers import NgramLogit
from hatt.layers.ngram_logit import REDUCTIONS
from hatt.models import _checks


@dataclasses.dataclass(frozen=True)
class NgramChannel:
    """The n-gram channel's layer settings (what `classifier` builds it with).

    Args:
        buckets: Positive int, hash buckets for the n-grams with `n >= 2`.
        order: Positive int, the longest n-gram (`3`: unigrams, bigrams and
            trigrams).
        reduction: `NgramLogit`'s `reduction` (`"sum"`, `"mean"`, `"sqrt"`,
            `"l2"`).
        binary: Bool, count each feature once per review (NBSVM).
        feature_dropout: Float in `[0, 1)`, `NgramLogit`'s feature dropout.
        l2: Float >= 0, L2 penalty on the channel's weights.
        idf: Bool, `NgramLogit`'s `idf`: each feature valued by its inverse
            document frequency (set by the channel's fit from the training
            split).
    """

    buckets: int = 2**20
    order: int = 2
    reduction: str = "sqrt"
    binary: bool = False
    feature_dropout: float = 0.0
    l2: float = 0.0
    idf: bool = False

    KEYS = ("buckets", "order", "reduction", "binary", "feature_dropout", "l2", "idf")

    def __post_init__(self):
        _checks.check_positive_int("ngram.buckets", self.buckets)
        _checks.check_positive_int("ngram.order", self.order)
        _checks.check_choice("ngram.reduction", self.reduction, REDUCTIONS)
        _checks.check_bool("ngram.binary", self.binary)
        _checks.check_bool("ngram.idf", self.idf)
        if self.reduction == "l2" and not self.binary:
            raise ValueError(
                "ngram.reduction='l2' divides by the L2 norm of a review's feature values, "
                "which counts each feature once: it needs ngram.binary=true. "
                "Received: ngram.binary=false"
            )
        _checks.check_rate("ngram.feature_dropout", self.feature_dropout)
        if isinstance(self.l2, bool) or not isinstance(self.l2, int | float) or self.l2 < 0:
            raise ValueError(
                f"Expected ngram.l2 to be a float >= 0. Received: ngram.l2={self.l2!r}"
            )

    @classmethod
    def from_value(cls, value):
        """`None` → `None`; a dict (or an `NgramChannel`) → a checked `NgramChannel`.

        A dict holds `KEYS` only: a misspelt key is refused with the key it
        resembles (a training configuration's `ngram` section, which also says
        how the channel is fit, passes its `channel()`).
        """
        if value is None or isinstance(value, cls):
            return value
        if not isinstance(value, dict):
            raise ValueError(
                f"Expected ngram to be None or a dict of channel settings. Received: ngram={value!r}"
            )
        unknown = set(value) - set(cls.KEYS)
        if unknown:
            raise _checks.unknown_keys_error("ngram settings", unknown, cls.KEYS)
        return cls(**value)

    @classmethod
    def of_layer(cls, layer):
        """The settings that rebuild `layer`, a channel made by `classifier`."""
        return cls(
            buckets=layer.buckets,
            order=layer.ngram,
            reduction=layer.reduction,
            binary=layer.binary,
            feature_dropout=layer.feature_dropout,
            l2=float(getattr(layer.embeddings_regularizer, "l2", 0.0)),
            idf=getattr(layer, "idf", False),
        )

    def to_dict(self):
        return {key: getattr(self, key) for key in self.KEYS}


def logit_units(num_classes):
    """Logits the head computes: 1 for two classes (sigmoid), `num_classes` above."""
    _checks.check_num_classes(num_classes)
    return 1 if num_classes == 2 else num_classes


def loss_for(num_classes):
    """The Keras loss that matches the head: binary or sparse categorical cross-entropy."""
    return (
        "binary_crossentropy"
        if logit_units(num_classes) == 1
        else "sparse_categorical_crossentropy"
    )


def channel_ids(inputs):
    """The ids `NgramLogit` reads from a backbone's inputs (the packed HAN: its list form)."""
    if isinstance(inputs, dict) and "sentence_index" in inputs:
        groups = sorted((k for k in inputs if k.startswith("words_")), key=lambda k: int(k[6:]))
        return [inputs["sentence_index"], *(inputs[k] for k in groups)]
    return inputs


# The word embedding's name in the builders' backbones (the HAN's: "word_embedding").
EMBEDDING_NAMES = ("embedding", "word_embedding")


def vocabulary_size_of(backbone):
    """The number of word ids of a backbone: its embedding layer's `input_dim`."""
    for name in EMBEDDING_NAMES:
        try:
            return backbone.get_layer(name).input_dim
        except ValueError:
            continue
    raise ValueError(
        f"Expected the backbone {backbone.name!r} to have a layer named 'embedding' or "
        "'word_embedding', as the hatt.models builders make."
    )


def classifier(backbone, num_classes=2, ngram=None, name=None):
    """Compose the classification head (and the optional n-gram channel) on `backbone`.

    Args:
        backbone: A functional `keras.Model` from ids to a document vector
            `[batch, d]`, as the `hatt.models.build_<family>` builders
            return.
        num_classes: Int >= 2. `2` gives a sigmoid over one logit (output
            `[batch, 1]`, the probability of class 1); more gives a softmax
            over `num_classes` logits. Defaults to `2`.
        ngram: `None` (no channel), or an `NgramChannel` / dict of its
            settings (`buckets`, `order`, `reduction`, `binary`,
            `feature_dropout`, `l2`, `idf`): a `hatt.layers.NgramLogit` over the
            backbone's ids with one logit a class (one for two classes),
            added to the deep logits.
        name: The classifier's name. Defaults to the backbone's.

    Returns:
        A functional `keras.Model` from the backbone's inputs to the class
        probabilities, with layers `"logit"`, (`"ngram_logit"`,
        `"total_logit"`) and `"probability"`.

    Example:

    >>> backbone = hatt.models.build_cnn(vocabulary_size=20000)
    >>> model = hatt.models.head.classifier(backbone, num_classes=2)
    """
    units = logit_units(num_classes)
    channel = NgramChannel.from_value(ngram)
    inputs = backbone.input
    # === Layers ===
    logit_layer = keras.layers.Dense(units, dtype="float32", name="logit")
    activation = "sigmoid" if units == 1 else "softmax"
    probability_layer = keras.layers.Activation(activation, dtype="float32", name="probability")
    # === Functional Model ===
    logits = logit_layer(backbone.output)
    if channel is not None:
        wide = NgramLogit(
            vocabulary_size_of(backbone),
            buckets=channel.buckets,
            ngram=channel.order,
            reduction=channel.reduction,
            binary=channel.binary,
            feature_dropout=channel.feature_dropout,
            units=units,
            idf=channel.idf,
            embeddings_regularizer=keras.regularizers.L2(channel.l2) if channel.l2 else None,
            dtype="float32",
            name="ngram_logit",
        )(channel_ids(inputs))
        logits = keras.layers.Add(dtype="float32", name="total_logit")([logits, wide])
    return keras.Model(inputs, probability_layer(logits), name=name or backbone.name)


# === Reading a classifier's head =========================================================


def layer_or_none(model, name):
    """`model.get_layer(name)`, or `None` when it has no such layer."""
    try:
        return model.get_layer(name)
    except ValueError:
        return None


def num_classes_of(model):
    """The number of classes of a classifier built by `classifier`."""
    units = model.outputs[0].shape[-1]
    return 2 if units == 1 else int(units)


def deep_part(model):
    """A classifier's deep part: its inputs to its `"logit"` layer (the weights shared)."""
    return keras.Model(model.inputs, model.get_layer("logit").output)


def ngram_channel_of(model):
    """The `NgramChannel` of a classifier, or `None` when it has none."""
    layer = layer_or_none(model, "ngram_logit")
    return None if layer is None else NgramChannel.of_layer(layer)


def logits_tensor(model):
    """The symbolic logits `[batch, units]` a classifier's probabilities come from.

    The input of the layer named `"probability"`: the deep logit, plus the
    n-gram channel's when the model has one.

    Raises:
        ValueError: `model` has no head of that shape (e.g. a model saved
            before the head was composed, whose `"probability"` layer was a
            `Dense(1, sigmoid)`).
    """
    head = layer_or_none(model, "probability")
    if not isinstance(head, keras.layers.Activation):
        raise ValueError(
            f"Expected the model {model.name!r} to end in the hatt head (an Activation named "
            f"'probability' over the logits). Received: {type(head).__name__} named 'probability'. "
            "Models saved by hatt before 0.2 without the n-gram channel predict as before but "
            "cannot be explained; retrain them with this version."
        )
    return head.input
