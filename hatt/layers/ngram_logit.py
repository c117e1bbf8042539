"""Linear logits over a bag of hashed n-grams (the wide, NBSVM-style channel)."""

import keras
from keras import ops

REDUCTIONS = ("sum", "mean", "sqrt", "l2")


def ngram_feature_ids(ids, vocabulary_size, buckets, ngram=2):
    """Feature ids of the unigrams and hashed n-grams of `ids`, with their mask.

    Unigram features are the ids themselves (`0 <= id < vocabulary_size`);
    an n-gram (`2 <= n <= ngram`) of consecutive ids along the last axis is
    hashed to `vocabulary_size + (polynomial hash mod buckets)`. A feature is
    real when none of its ids is padding (0). N-grams never cross the last
    axis, so for nested `[batch, S, W]` ids they stay inside a sentence.

    Args:
        ids: int tensor `[..., L]`.
        vocabulary_size: Positive int, the number of ids.
        buckets: Positive int, hash buckets for the n-grams.
        ngram: Int >= 1, the longest n-gram.

    Returns:
        Tuple `(features, mask)`, int64 and bool tensors `[..., F]` with
        `F = L + (L - 1) + ... + (L - ngram + 1)` (fewer terms when `L` is
        shorter than `ngram`).
    """
    ids = ops.cast(ids, "int64")
    real = ops.not_equal(ids, 0)
    features, masks = [ids], [real]
    length = ids.shape[-1]
    hashed, hashed_real = ids, real
    for n in range(2, ngram + 1):
        if length is not None and length < n:
            break
        # Rolling polynomial hash of the n-gram ending at each position.
        hashed = ops.mod(hashed[..., :-1] * vocabulary_size + ids[..., n - 1 :], buckets)
        hashed_real = ops.logical_and(hashed_real[..., :-1], real[..., n - 1 :])
        features.append(hashed + vocabulary_size)
        masks.append(hashed_real)
    return ops.concatenate(features, axis=-1), ops.concatenate(masks, axis=-1)


@keras.saving.register_keras_serializable(package="hatt")
class NgramLogit(keras.layers.Layer):
    """Linear logits over a review's bag of unigrams and hashed n-grams.

    The wide channel that Wang & Manning's NBSVM and fastText show to be
    strong on sentiment and topics: one weight per feature (word id, or
    hashed bigram / trigram of consecutive ids) and output unit, summed over
    the review's features and scaled by `reduction`. Added to a deep model's
    logits, it lets the model keep the exact phrase evidence that a bag of
    n-grams captures, while the encoder and its attention learn the rest.
    The weights can be set to Naive Bayes log-count ratios before training
    (see `hatt.training.nb_log_ratios`), as in NBSVM.

    With `units=1` (two classes: the positive class's logit) the weights are
    a vector `(num_features,)`; with `units=C` (one logit a class) a matrix
    `(num_features, C)`, whose column `c` is class `c`'s weights.

    With `idf=True` each feature's value is its inverse document frequency
    (a non-trainable weight `idf`, set from a corpus with `set_idf`; ones
    until then) instead of 1, and `reduction="l2"` divides by the L2 norm of
    the review's values: with `binary=True` the features of
    scikit-learn's `TfidfVectorizer(binary=True)` over hashed n-grams, and
    a feature of IDF 0 (one no training review has) counts for nothing, as
    a word outside the vectorizer's vocabulary.

    Masking: padding (id 0) and n-grams that touch padding contribute
    nothing, so the result does not change when a review is padded further.
    A review without tokens gives `0`.

    Args:
        vocabulary_size: Positive int, the number of word ids (padding and
            OOV included).
        buckets: Positive int, hash buckets shared by all n-grams with
            `n >= 2`. Defaults to `2**20`.
        ngram: Int >= 1, the longest n-gram. Defaults to `2`.
        reduction: How the feature weights of a review are combined:
            `"sum"`, `"mean"`, `"sqrt"` (sum divided by the square root of
            the number of features, between the two) or `"l2"` (sum divided
            by the L2 norm of the review's feature values; needs
            `binary=True`, and without `idf` it equals `"sqrt"`). Defaults
            to `"sqrt"`.
        binary: Bool. If `True`, a feature counts once per review however
            often it occurs (the binarized counts of NBSVM; for a nested or
            packed HAN input, once per document); otherwise every occurrence
            counts. Defaults to `False`.
        feature_dropout: Float in `[0, 1)`: during training, each feature
            of a review is dropped with this probability (the reduction
            counts only the kept ones), which keeps the channel from
            memorising the training set before the deep part has learned.
            Defaults to `0.0`.
        units: Positive int, the number of logits. Defaults to `1`.
        idf: Bool. If `True`, a feature's value is its weight in the `idf`
            vector (`[num_features]`, non-trainable, saved with the model)
            instead of 1. Defaults to `False`.
        embeddings_initializer: Initializer of the weights. Defaults to
            `"zeros"`.
        embeddings_regularizer: Optional regularizer of the weights.
        seed: Optional int, the seed of the feature dropout.

    Call arguments:
        inputs: int ids `[batch, T]` or `[batch, S, W]` (n-grams inside a
            sentence), or the packed HAN layout as a list
            `[sentence_index, words_0, words_1, ...]` (see
            `hatt.data.pack_sentences`).
        training: Python bool, whether feature dropout is active.

    Returns:
        float logits `[batch, units]`.

    Example:

    >>> ids = keras.ops.array([[5, 6, 7, 0], [8, 0, 0, 0]])
    >>> layer = hatt.layers.NgramLogit(vocabulary_size=10, buckets=64)
    >>> layer(ids).shape
    (2, 1)
    >>> hatt.layers.NgramLogit(vocabulary_size=10, buckets=64, units=3)(ids).shape
    (2, 3)
    >>> tfidf = hatt.layers.NgramLogit(
    ...     vocabulary_size=10, buckets=64, binary=True, reduction="l2", idf=True
    ... )
    >>> tfidf.set_idf(keras.ops.linspace(1.0, 2.0, tfidf.num_features))

    References:
        - [Wang & Manning, 2012. Baselines and Bigrams: Simple, Good
          Sentiment and Topic Classification](https://aclanthology.org/P12-2018/)
        - [Joulin et al., 2017. Bag of Tricks for Efficient Text
          Classification](https://aclanthology.org/E17-2068/)
    """

    def __init__(
        self,
        vocabulary_size,
        buckets=2**20,
        ngram=2,
        reduction="sqrt",
        binary=False,
        feature_dropout=0.0,
        units=1,
        idf=False,
        embeddings_initializer="zeros",
        embeddings_regularizer=None,
        seed=None,
        **kwargs,
    ):
        super().__init__(**kwargs)
        for name, value, low in (
            ("vocabulary_size", vocabulary_size, 1),
            ("buckets", buckets, 1),
            ("ngram", ngram, 1),
            ("units", units, 1),
        ):
            if isinstance(value, bool) or not isinstance(value, int) or value < low:
                raise ValueError(
                    f"Expected {name} to be an int >= {low}. Received: {name}={value!r}"
                )
        if reduction not in REDUCTIONS:
            raise ValueError(
                f"Expected reduction to be one of {REDUCTIONS}. Received: reduction={reduction!r}"
            )
        for name, value in (("binary", binary), ("idf", idf)):
            if not isinstance(value, bool):
                raise ValueError(f"Expected {name} to be a bool. Received: {name}={value!r}")
        if reduction == "l2" and not binary:
            raise ValueError(
                "reduction='l2' divides by the L2 norm of a review's feature values, which "
                "counts each feature once: it needs binary=True. Received: binary=False"
            )
        if not isinstance(feature_dropout, int | float) or not 0 <= feature_dropout < 1:
            raise ValueError(
                "Expected feature_dropout to be a float in [0, 1). "
                f"Received: feature_dropout={feature_dropout!r}"
            )
        self.vocabulary_size = vocabulary_size
        self.buckets = buckets
        self.ngram = ngram
        self.reduction = reduction
        self.binary = binary
        self.feature_dropout = float(feature_dropout)
        self.units = units
        self.idf = idf
        self.embeddings_initializer = keras.initializers.get(embeddings_initializer)
        self.embeddings_regularizer = keras.regularizers.get(embeddings_regularizer)
        self.seed = seed
        self.seed_generator = keras.random.SeedGenerator(seed)

    @property
    def num_features(self):
        return self.vocabulary_size + (self.buckets if self.ngram > 1 else 0)

    def build(self, input_shape):
        # One logit keeps the vector shape of the models saved before `units` existed.
        shape = (self.num_features,) if self.units == 1 else (self.num_features, self.units)
        self.embeddings = self.add_weight(
            name="embeddings",
            shape=shape,
            initializer=self.embeddings_initializer,
            regularizer=self.embeddings_regularizer,
        )
        if self.idf:
            self.idf_weights = self.add_weight(
                name="idf", shape=(self.num_features,), initializer="ones", trainable=False
            )

    def set_idf(self, values):
        """Set the features' IDF (`idf=True`): a float array `[num_features]`, each >= 0.

        Args:
            values: float array-like `[num_features]`.

        Raises:
            ValueError: the layer has no `idf`, or `values` has another shape,
                a negative or a non-finite value.
        """
        if not self.idf:
            raise ValueError("set_idf needs a layer built with idf=True. Received: idf=False")
        values = ops.convert_to_tensor(values, "float32")
        shape = tuple(ops.shape(values))
        if shape != (self.num_features,) or not bool(
            ops.all(ops.logical_and(ops.isfinite(values), values >= 0))
        ):
            raise ValueError(
                f"Expected values to be {self.num_features} finite floats >= 0, one a "
                f"feature. Received: shape {shape}"
                + ("" if shape != (self.num_features,) else ", a negative or non-finite value")
            )
        if not self.built:
            self.build(None)
        self.idf_weights.assign(values)

    def _features(self, ids):
        """Feature ids `[rows, F]` per row of `ids` (leading axis), padding as `-1`."""
        features, mask = ngram_feature_ids(ids, self.vocabulary_size, self.buckets, self.ngram)
        features = ops.where(mask, features, -1)
        return _flatten_rows(features)

    def _weigh(self, features, training):
        """Sum of the kept features' weights (`[rows]`, or `[rows, units]`) and their count."""
        keep = ops.greater_equal(features, 0)
        if self.binary:
            # Sorted, a feature's repeats are neighbours: keep the first of each run.
            features = ops.sort(features, axis=-1)
            first = ops.not_equal(features[:, 1:], features[:, :-1])
            # The first column of `features`, not of `first`: that is empty for a width of 1.
            first = ops.concatenate([ops.ones_like(features[:, :1], dtype="bool"), first], axis=-1)
            keep = ops.logical_and(first, ops.greater_equal(features, 0))
        keep = ops.cast(keep, self.compute_dtype)
        if training and self.feature_dropout > 0:
            draw = keras.random.uniform(ops.shape(keep), seed=self.seed_generator)
            keep = keep * ops.cast(draw >= self.feature_dropout, keep.dtype)
        count = ops.sum(keep, axis=-1)  # binary features: also the sum of their squares
        if self.idf:  # each kept feature's value
            keep = keep * ops.take(self._idf(), ops.maximum(features, 0))
            if self.reduction == "l2":  # the sum of the values' squares
                count = ops.sum(keep * keep, axis=-1)
        # Padding (-1) reads feature 0, whose weight `keep` zeroes.
        table = ops.cast(self.embeddings, self.compute_dtype)
        if self.units == 1:
            weights = ops.take(table, ops.maximum(features, 0))
            return ops.sum(weights * keep, axis=-1), count
        weights = ops.take(table, ops.maximum(features, 0), axis=0)  # [rows, F, units]
        return ops.sum(weights * ops.expand_dims(keep, -1), axis=1), count

    def _idf(self):
        return ops.cast(self.idf_weights, self.compute_dtype)

    def _weigh_packed(self, index, groups, training):
        """`_weigh` per document of the packed HAN layout (`sentence_index`, word groups)."""
        index = ops.cast(index, "int32")
        if self.binary:
            # Gather each document's sentence features, then count per document.
            rows = [self._features(g) for g in groups]
            width = ops.shape(rows[0])[1]
            for r in rows[1:]:
                width = ops.maximum(width, ops.shape(r)[1])
            # Pad every group to the widest with -1 (the widths may be dynamic).
            rows = [
                ops.concatenate(
                    [r, ops.full((ops.shape(r)[0], width - ops.shape(r)[1]), -1, "int64")], 1
                )
                for r in rows
            ]
            rows = ops.concatenate([ops.full((1, width), -1, "int64")] + rows, 0)
            documents = ops.take(rows, index, axis=0)  # [batch, S, width]
            return self._weigh(_flatten_rows(documents), training)
        parts = [self._weigh(self._features(g), training) for g in groups]
        # Row i + 1 of the groups concatenated is sentence_index == i + 1; 0 is empty.
        empty = (1,) if self.units == 1 else (1, self.units)
        sums = ops.concatenate([ops.zeros(empty, self.compute_dtype)] + [p[0] for p in parts], 0)
        counts = ops.concatenate([ops.zeros((1,), self.compute_dtype)] + [p[1] for p in parts], 0)
        total = ops.sum(ops.take(sums, index, axis=0), axis=1)
        return total, ops.sum(ops.take(counts, index, axis=0), axis=1)

    def call(self, inputs, training=None):
        if isinstance(inputs, list | tuple):  # packed HAN layout
            index, *groups = inputs
            total, count = self._weigh_packed(index, groups, training)
        else:
            total, count = self._weigh(self._features(inputs), training)
        scale = self._scale(count)
        total = total * (scale if self.units == 1 else ops.expand_dims(scale, -1))
        return ops.expand_dims(total, -1) if self.units == 1 else total

    def token_contributions(self, ids):
        """Each token's exact share of the logits: `[..., L, units]`, summing to `call(ids)`.

        Every real feature's weight, scaled by the reduction as in `call`
        (inference: no feature dropout), is shared equally among the `n`
        tokens of its n-gram. With `binary=True` a feature counts once per
        review however often it occurs, so its weight is also shared equally
        among its occurrences (in a nested review: over all sentences).
        Summed over the tokens (and sentences), the shares give the logits of
        `call` for every reduction; padding gets 0, and so does a token whose
        n-grams touch padding only.

        Args:
            ids: int ids `[batch, T]` or `[batch, S, W]` (the dense layouts;
                view a packed HAN through `hatt.models.dense_twin`).

        Returns:
            float tensor `[batch, T, units]` or `[batch, S, W, units]`.

        Example:

        >>> layer = hatt.layers.NgramLogit(vocabulary_size=10, buckets=64)
        >>> ids = keras.ops.array([[5, 6, 7, 0]])
        >>> shares = layer.token_contributions(ids)  # [1, 4, 1]
        >>> keras.ops.sum(shares, axis=1)  # == layer(ids)
        """
        if isinstance(ids, list | tuple | dict):
            raise ValueError(
                "Expected ids to be a dense int tensor [batch, T] or [batch, S, W]; view a "
                "packed HAN through hatt.models.dense_twin first. "
                f"Received: ids of type {type(ids).__name__}"
            )
        ids = ops.convert_to_tensor(ids)
        features, mask = ngram_feature_ids(ids, self.vocabulary_size, self.buckets, self.ngram)
        shape = ops.shape(features)
        rows = _flatten_rows(ops.where(mask, features, -1))  # [batch, D]: one review a row
        share = ops.cast(ops.greater_equal(rows, 0), self.compute_dtype)
        if self.binary:
            occurrences, count = _feature_runs(rows)
            share = share / ops.cast(occurrences, self.compute_dtype)
        else:
            count = ops.sum(share, axis=-1)
        if self.idf:  # a feature's value, shared as its weight is
            value = ops.take(self._idf(), ops.maximum(rows, 0))
            share = share * value
            if self.reduction == "l2":  # the distinct features' values squared ("l2" is binary)
                count = ops.sum(share * value, axis=-1)
        scale = self._scale(ops.cast(count, self.compute_dtype))  # [batch]
        values = self._lookup(rows) * ops.expand_dims(share * ops.expand_dims(scale, -1), -1)
        values = ops.reshape(values, (*shape, self.units))  # [..., F, units]
        return _spread_over_tokens(values, ops.shape(ids)[-1], self.ngram, ids.shape[-1])

    def _lookup(self, features):
        """The weights of `features` (`[rows, F]`, padding `-1` reads feature 0): `[rows, F, units]`."""
        table = ops.cast(self.embeddings, self.compute_dtype)
        if self.units == 1:
            return ops.expand_dims(ops.take(table, ops.maximum(features, 0)), -1)
        return ops.take(table, ops.maximum(features, 0), axis=0)

    def _scale(self, count):
        """The factor `reduction` applies to a review's sum of weights, from its feature
        count (`"l2"`: the sum of its values' squares)."""
        if self.reduction == "mean":
            return 1.0 / ops.maximum(count, 1.0)
        if self.reduction == "sqrt":
            return 1.0 / ops.sqrt(ops.maximum(count, 1.0))
        if self.reduction == "l2":  # a review without a valued feature gives 0, not NaN
            return ops.where(count > 0, 1.0 / ops.sqrt(ops.maximum(count, 1e-12)), 0.0)
        return ops.ones_like(count)

    def compute_output_shape(self, input_shape):
        if isinstance(input_shape, list | tuple) and isinstance(input_shape[0], list | tuple):
            return (input_shape[0][0], self.units)
        return (input_shape[0], self.units)

    def get_config(self):
        config = super().get_config()
        config.update(
            {
                "vocabulary_size": self.vocabulary_size,
                "buckets": self.buckets,
                "ngram": self.ngram,
                "reduction": self.reduction,
                "binary": self.binary,
                "feature_dropout": self.feature_dropout,
                "units": self.units,
                "idf": self.idf,
                "embeddings_initializer": keras.initializers.serialize(self.embeddings_initializer),
                "embeddings_regularizer": keras.regularizers.serialize(self.embeddings_regularizer),
                "seed": self.seed,
            }
        )
        return config


def _flatten_rows(x):
    """`[rows, ...]` → `[rows, prod(...)]`, with the width spelled out.

    `reshape(x, (rows, -1))` is ambiguous when `x` has no element (an empty
    batch), and torch rejects it.
    """
    shape = ops.shape(x)
    width = 1
    for size in shape[1:]:
        width = width * size
    return ops.reshape(x, (shape[0], width))


def _feature_runs(features):
    """How often each feature occurs in its row, and each row's number of distinct real features.

    Args:
        features: int `[rows, D]`, padding as `-1`.

    Returns:
        `(occurrences, distinct)`: int `[rows, D]` (the count of the
        feature's value in its row, padding included) and `[rows]`.
    """
    order = ops.argsort(features, axis=-1)
    ranked = ops.take_along_axis(features, order, axis=-1)
    # Sorted, a feature's repeats are neighbours: a run starts where the value changes.
    first = ops.concatenate(
        [ops.ones_like(ranked[:, :1], dtype="bool"), ops.not_equal(ranked[:, 1:], ranked[:, :-1])],
        axis=-1,
    )
    width = ops.shape(features)[1]
    positions = ops.zeros_like(features, dtype="int32") + ops.arange(width, dtype="int32")
    # The runs' start positions in order, then `width` (one more, closing the last run).
    starts = ops.sort(ops.where(first, positions, width), axis=-1)
    starts = ops.concatenate([starts, ops.zeros_like(starts[:, :1]) + width], axis=-1)
    run = ops.cumsum(ops.cast(first, "int32"), axis=-1) - 1
    length = ops.take_along_axis(starts, run + 1, axis=-1) - ops.take_along_axis(
        starts, ops.maximum(run, 0), axis=-1
    )
    occurrences = ops.take_along_axis(length, ops.argsort(order, axis=-1), axis=-1)
    distinct = ops.sum(ops.cast(ops.logical_and(first, ranked >= 0), "int32"), axis=-1)
    return occurrences, distinct


def _spread_over_tokens(values, length, ngram, static_length):
    """Feature values `[..., F, units]` (as `ngram_feature_ids` orders them) → `[..., L, units]`.

    The n-grams of order `n` start at positions `0 .. L - n`; each gives a
    `1 / n` share of its value to each of its `n` tokens.
    """
    tokens = values[..., :length, :]  # the unigrams: one token each
    start = length
    for n in range(2, ngram + 1):
        if static_length is not None and static_length < n:
            break  # ngram_feature_ids made no block for this order
        size = ops.maximum(length - n + 1, 0)
        block = values[..., start : start + size, :] / n
        start = start + size
        # Token j gets the n-grams starting at j - n + 1 .. j: a window over the block
        # padded with n - 1 zeros each side (long enough also when L < n).
        padding = [(0, 0)] * (len(values.shape) - 2) + [(n - 1, n - 1), (0, 0)]
        padded = ops.pad(block, padding)
        for offset in range(n):
            tokens = tokens + padded[..., offset : offset + length, :]
    return tokens
