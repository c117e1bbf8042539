"""The classification head shared by the four families, with the optional n-gram channel."""

import keras

from hatt.layers import NgramLogit
from hatt.layers.ngram_logit import REDUCTIONS
from hatt.models import _checks


def check_ngram_args(
    ngram_buckets, ngram, ngram_reduction, ngram_dropout, ngram_l2, ngram_binary=False
):
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


def classify(
    features,
    ids,
    vocabulary_size,
    ngram_buckets,
    ngram,
    ngram_reduction,
    ngram_dropout,
    ngram_l2,
    ngram_binary=False,
):
    """`features` → probability `[batch, 1]` named `"probability"`.

    Without the n-gram channel: `Dense(1, sigmoid)`. With it:
    `Dense(1)` (`"logit"`) + `NgramLogit(ids)` (`"ngram_logit"`) → sigmoid.
    `ids` is the model's input (a tensor, or the packed HAN's list).
    """
    if not ngram_buckets:
        head = keras.layers.Dense(1, activation="sigmoid", dtype="float32", name="probability")
        return head(features)
    logit = keras.layers.Dense(1, dtype="float32", name="logit")(features)
    wide = NgramLogit(
        vocabulary_size,
        buckets=ngram_buckets,
        ngram=ngram,
        reduction=ngram_reduction,
        binary=ngram_binary,
        feature_dropout=ngram_dropout,
        embeddings_regularizer=keras.regularizers.L2(ngram_l2) if ngram_l2 else None,
        dtype="float32",
        name="ngram_logit",
    )(ids)
    total = keras.layers.Add(dtype="float32", name="total_logit")([logit, wide])
    return keras.layers.Activation("sigmoid", dtype="float32", name="probability")(total)
