"""The classification head shared by the four families, with the optional n-gram channel."""

import keras

from hatt.layers import NgramLogit
from hatt.layers.ngram_logit import REDUCTIONS
from hatt.models import _checks


def ngram_options(ngram_buckets, ngram, ngram_reduction, ngram_dropout, ngram_l2, ngram_binary):
    """Check a builder's `ngram_*` arguments; return them as the dict `classify` takes."""
    if isinstance(ngram_buckets, bool) or not isinstance(ngram_buckets, int) or ngram_buckets < 0:
        raise ValueError(
            f"Expected ngram_buckets to be an int >= 0. Received: ngram_buckets={ngram_buckets!r}"
        )
    _checks.check_positive_int("ngram", ngram)
    _checks.check_choice("ngram_reduction", ngram_reduction, REDUCTIONS)
    _checks.check_rate("ngram_dropout", ngram_dropout)
    if not isinstance(ngram_l2, int | float) or ngram_l2 < 0:
        raise ValueError(f"Expected ngram_l2 to be a float >= 0. Received: ngram_l2={ngram_l2!r}")
    if not isinstance(ngram_binary, bool):
        raise ValueError(
            f"Expected ngram_binary to be a bool. Received: ngram_binary={ngram_binary!r}"
        )
    return {
        "ngram_buckets": ngram_buckets,
        "ngram": ngram,
        "ngram_reduction": ngram_reduction,
        "ngram_dropout": ngram_dropout,
        "ngram_l2": ngram_l2,
        "ngram_binary": ngram_binary,
    }


def ngram_options_of(layer):
    """The `ngram_*` arguments that rebuild `layer`, a channel made by `classify`."""
    return ngram_options(
        layer.buckets,
        layer.ngram,
        layer.reduction,
        layer.feature_dropout,
        float(getattr(layer.embeddings_regularizer, "l2", 0.0)),
        layer.binary,
    )


def classify(features, ids, vocabulary_size, channel):
    """`features` → probability `[batch, 1]` named `"probability"`.

    Without the n-gram channel (`channel["ngram_buckets"] == 0`):
    `Dense(1, sigmoid)`. With it: `Dense(1)` (`"logit"`) +
    `NgramLogit(ids)` (`"ngram_logit"`) → sigmoid. `ids` is the model's input
    (a tensor, or the packed HAN's list); `channel` comes from `ngram_options`.
    """
    if not channel["ngram_buckets"]:
        head = keras.layers.Dense(1, activation="sigmoid", dtype="float32", name="probability")
        return head(features)
    logit = keras.layers.Dense(1, dtype="float32", name="logit")(features)
    l2 = channel["ngram_l2"]
    wide = NgramLogit(
        vocabulary_size,
        buckets=channel["ngram_buckets"],
        ngram=channel["ngram"],
        reduction=channel["ngram_reduction"],
        binary=channel["ngram_binary"],
        feature_dropout=channel["ngram_dropout"],
        embeddings_regularizer=keras.regularizers.L2(l2) if l2 else None,
        dtype="float32",
        name="ngram_logit",
    )(ids)
    total = keras.layers.Add(dtype="float32", name="total_logit")([logit, wide])
    return keras.layers.Activation("sigmoid", dtype="float32", name="probability")(total)
