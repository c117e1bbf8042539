"""NgramLogit: the bag-of-n-grams logits against a NumPy reference, masking, packed input.

Every layout runs with one logit (`units=1`, the binary head's vector of weights)
and with three (`units=3`, a matrix of weights, one column a class).
"""

import json
import zipfile

import keras
import numpy as np
import pytest

from hatt.layers import NgramLogit
from hatt.layers.ngram_logit import ngram_feature_ids

V, BUCKETS = 12, 97


def reference(ids, weights, ngram=2, reduction="sum", binary=False, idf=None):
    """Per review: sum of the weights of its unigrams and hashed n-grams (no padding).

    With `binary`, a feature that occurs several times in a review counts once; with
    `idf`, each weight is times its feature's IDF, and `"l2"` divides by the norm of
    those IDFs. `weights` is `[features]` or `[features, units]`; the result
    `[reviews, units]`.
    """
    weights = np.asarray(weights).reshape(len(weights), -1)
    out = []
    for row in np.asarray(ids).reshape(len(ids), -1, np.asarray(ids).shape[-1]):
        total, count, squares, seen = np.zeros(weights.shape[1]), 0, 0.0, set()
        for seq in row:
            for n in range(1, ngram + 1):
                for i in range(len(seq) - n + 1):
                    gram = seq[i : i + n]
                    if (gram == 0).any():
                        continue
                    if n == 1:
                        feature = gram[0]
                    else:
                        h = gram[0]
                        for g in gram[1:]:
                            h = (h * V + g) % BUCKETS
                        feature = V + h
                    if binary and feature in seen:
                        continue
                    seen.add(feature)
                    value = 1.0 if idf is None else idf[feature]
                    total += weights[feature] * value
                    count += 1
                    squares += value**2
        if reduction == "mean":
            total /= max(count, 1)
        elif reduction == "sqrt":
            total /= np.sqrt(max(count, 1))
        elif reduction == "l2":
            total = total / np.sqrt(squares) if squares > 0 else total * 0
        out.append(total)
    return np.array(out, np.float32).reshape(len(out), weights.shape[1])


def layer_with_weights(ngram=2, reduction="sum", units=1, **kwargs):
    layer = NgramLogit(V, buckets=BUCKETS, ngram=ngram, reduction=reduction, units=units, **kwargs)
    layer.build((None, None))
    shape = (layer.num_features,) if units == 1 else (layer.num_features, units)
    assert tuple(layer.embeddings.shape) == shape  # one logit: a vector, as saved before units
    weights = np.random.default_rng(0).standard_normal(shape).astype("float32")
    layer.embeddings.assign(weights)
    return layer, weights


UNITS = pytest.mark.parametrize("units", [1, 3])


@UNITS
@pytest.mark.parametrize("ngram", [1, 2, 3])
@pytest.mark.parametrize("reduction", ["sum", "mean", "sqrt"])
def test_matches_numpy_reference_and_ignores_padding(ngram, reduction, units):
    ids = np.array(
        [[3, 4, 5, 6, 0, 0], [7, 0, 0, 0, 0, 0], [0, 0, 0, 0, 0, 0], [1, 1, 2, 11, 9, 8]]
    )
    layer, weights = layer_with_weights(ngram, reduction, units)
    out = keras.ops.convert_to_numpy(layer(ids))
    assert out.shape == (4, units)
    np.testing.assert_allclose(out, reference(ids, weights, ngram, reduction), rtol=1e-5, atol=1e-6)
    assert (out[2] == 0.0).all()  # no tokens: 0, not NaN
    # More padding changes nothing.
    padded = np.pad(ids, ((0, 0), (0, 5)))
    np.testing.assert_allclose(keras.ops.convert_to_numpy(layer(padded)), out, atol=1e-6)


@UNITS
def test_nested_ids_keep_ngrams_inside_sentences(units):
    nested = np.array([[[3, 4, 0], [5, 6, 7]], [[0, 0, 0], [0, 0, 0]]])
    layer, weights = layer_with_weights(2, units=units)
    out = keras.ops.convert_to_numpy(layer(nested))
    np.testing.assert_allclose(out, reference(nested, weights, 2), rtol=1e-5, atol=1e-6)
    # the bigram (4, 5) across the sentence end is not a feature
    flat = keras.ops.convert_to_numpy(layer(np.array([[3, 4, 5, 6, 7]])))
    assert not np.isclose(out[0], flat[0]).any()


@UNITS
@pytest.mark.parametrize("reduction", ["sum", "sqrt"])
def test_packed_layout_equals_dense_nested_and_the_reference(units, reduction):
    dense = np.array([[[3, 4, 0], [5, 6, 7]], [[8, 9, 0], [0, 0, 0]], [[0, 0, 0], [0, 0, 0]]])
    # rows: group 0 (width 2) holds [3, 4] and [8, 9]; group 1 (width 3) holds [5, 6, 7];
    # the third document has no sentence
    index = np.array([[1, 3], [2, 0], [0, 0]])
    groups = [np.array([[3, 4], [8, 9]]), np.array([[5, 6, 7]])]
    layer, weights = layer_with_weights(2, reduction, units)
    packed = keras.ops.convert_to_numpy(layer([index, *groups]))
    assert packed.shape == (3, units)
    np.testing.assert_allclose(packed, keras.ops.convert_to_numpy(layer(dense)), rtol=1e-5)
    expected = reference(dense, weights, 2, reduction)
    np.testing.assert_allclose(packed, expected, rtol=1e-5, atol=1e-6)


@UNITS
@pytest.mark.parametrize("reduction", ["sum", "sqrt"])
def test_binary_counts_a_feature_once_per_review(reduction, units):
    # repeats inside a row, across sentences, and of a bigram
    flat = np.array([[3, 4, 3, 4, 3, 0], [5, 5, 5, 5, 0, 0], [0, 0, 0, 0, 0, 0]])
    layer, weights = layer_with_weights(2, reduction, units, binary=True)
    out = keras.ops.convert_to_numpy(layer(flat))
    expected = reference(flat, weights, 2, reduction, binary=True)
    np.testing.assert_allclose(out, expected, rtol=1e-5, atol=1e-6)
    assert not np.allclose(expected, reference(flat, weights, 2, reduction))  # repeats matter
    assert (out[2] == 0.0).all()
    # nested and packed: once per document, not once per sentence
    dense = np.array([[[3, 4, 0], [3, 4, 7]], [[8, 9, 0], [0, 0, 0]]])
    index = np.array([[1, 3], [2, 0]])
    groups = [np.array([[3, 4], [8, 9]]), np.array([[3, 4, 7]])]
    expected = reference(dense, weights, 2, reduction, binary=True)
    np.testing.assert_allclose(
        keras.ops.convert_to_numpy(layer(dense)), expected, rtol=1e-5, atol=1e-6
    )
    packed = keras.ops.convert_to_numpy(layer([index, *groups]))
    np.testing.assert_allclose(packed, expected, rtol=1e-5, atol=1e-6)


@UNITS
@pytest.mark.parametrize("binary", [False, True])
def test_empty_batch_and_empty_reviews(binary, units):
    # reshape(features, (0, -1)) is ambiguous for 0 elements: torch raised on an empty batch.
    layer, _ = layer_with_weights(2, "sqrt", units, binary=binary)
    for ids in (np.zeros((0, 5), "int32"), np.zeros((0, 2, 3), "int32")):
        assert tuple(layer(ids, training=True).shape) == (0, units)
    empty_packed = [np.zeros((0, 2), "int32"), np.zeros((0, 3), "int32")]
    assert tuple(layer(empty_packed).shape) == (0, units)
    for ids in (np.zeros((3, 0), "int32"), np.zeros((3, 0, 4), "int32")):
        np.testing.assert_array_equal(keras.ops.convert_to_numpy(layer(ids)), np.zeros((3, units)))


@UNITS
def test_feature_dropout_only_in_training(units):
    ids = np.tile(np.arange(2, 12), (4, 1))
    layer, _ = layer_with_weights(2, "sum", units, feature_dropout=0.5, seed=1)
    inference = keras.ops.convert_to_numpy(layer(ids))
    assert np.allclose(inference, inference[0])
    trained = keras.ops.convert_to_numpy(layer(ids, training=True))
    assert not np.allclose(trained, inference) and np.isfinite(trained).all()


@pytest.mark.parametrize("reduction", ["sum", "sqrt"])
def test_feature_dropout_drops_a_feature_for_every_unit_at_once(reduction):
    """Column k of the weights is (k + 1) × column 0: the kept features are shared."""
    ids = np.tile(np.arange(2, 12), (6, 1))
    layer = NgramLogit(
        V, buckets=BUCKETS, reduction=reduction, units=3, feature_dropout=0.5, seed=2
    )
    layer.build((None, None))
    column = np.random.default_rng(0).uniform(0.5, 1.5, layer.num_features)
    layer.embeddings.assign(np.outer(column, [1.0, 2.0, 3.0]).astype("float32"))
    trained = keras.ops.convert_to_numpy(layer(ids, training=True))
    np.testing.assert_allclose(trained, np.outer(trained[:, 0], [1.0, 2.0, 3.0]), rtol=1e-5)
    assert len(np.unique(trained[:, 0].round(4))) > 1  # the rows dropped differently


def test_feature_ids_hash_into_buckets():
    ids = np.array([[11, 11, 11, 0]])
    features, mask = ngram_feature_ids(ids, V, BUCKETS, ngram=3)
    features = keras.ops.convert_to_numpy(features)[keras.ops.convert_to_numpy(mask)]
    assert features.min() >= 0 and features.max() < V + BUCKETS
    assert len(features) == 3 + 2 + 1


@UNITS
def test_config_round_trip_and_keras_file(tmp_path, units):
    layer = NgramLogit(
        V,
        buckets=BUCKETS,
        ngram=3,
        reduction="mean",
        binary=True,
        feature_dropout=0.25,
        units=units,
        embeddings_regularizer="l2",
        name="wide",
    )
    config = layer.get_config()
    assert config["units"] == units
    assert NgramLogit.from_config(config).get_config() == config
    inputs = keras.Input((None,), dtype="int32")
    outputs = layer(inputs)
    assert tuple(outputs.shape) == (None, units)
    model = keras.Model(inputs, outputs)
    weights = np.linspace(-1, 1, layer.num_features * units).astype("float32")
    layer.embeddings.assign(weights.reshape(layer.embeddings.shape))
    ids = np.array([[3, 4, 5, 0], [6, 6, 0, 0]])
    model.save(tmp_path / "wide.keras")
    again = keras.saving.load_model(tmp_path / "wide.keras")
    np.testing.assert_allclose(
        keras.ops.convert_to_numpy(again(ids)), keras.ops.convert_to_numpy(model(ids)), rtol=1e-6
    )


def test_a_file_saved_before_units_existed_loads_unchanged(tmp_path):
    """A `.keras` file whose layer config has no `units` (hatt before this option) loads."""
    layer = NgramLogit(V, buckets=BUCKETS, name="wide")
    inputs = keras.Input((None,), dtype="int32")
    model = keras.Model(inputs, layer(inputs))
    layer.embeddings.assign(np.linspace(-1, 1, layer.num_features).astype("float32"))
    model.save(tmp_path / "new.keras")
    # the same archive with the layer's config as it was written before `units`
    with (
        zipfile.ZipFile(tmp_path / "new.keras") as new,
        zipfile.ZipFile(tmp_path / "old.keras", "w") as old,
    ):
        for item in new.infolist():
            data = new.read(item.filename)
            if item.filename == "config.json":
                config = json.loads(data)
                wide = [c for c in config["config"]["layers"] if c["name"] == "wide"][0]
                del wide["config"]["units"]
                data = json.dumps(config).encode()
            old.writestr(item, data)
    again = keras.saving.load_model(tmp_path / "old.keras")
    assert again.get_layer("wide").units == 1
    assert tuple(again.get_layer("wide").embeddings.shape) == (layer.num_features,)
    ids = np.array([[3, 4, 5, 0]])
    np.testing.assert_allclose(
        keras.ops.convert_to_numpy(again(ids)), keras.ops.convert_to_numpy(model(ids)), rtol=1e-6
    )


@pytest.mark.parametrize(
    "kwargs,name",
    [
        ({"vocabulary_size": 0}, "vocabulary_size"),
        ({"buckets": -1}, "buckets"),
        ({"ngram": 0}, "ngram"),
        ({"reduction": "max"}, "reduction"),
        ({"feature_dropout": 1.0}, "feature_dropout"),
        ({"binary": 1}, "binary"),
        ({"units": 0}, "units"),
        ({"units": 2.0}, "units"),
    ],
)
def test_bad_arguments_name_the_argument(kwargs, name):
    with pytest.raises(ValueError, match=name):
        NgramLogit(**{"vocabulary_size": V, **kwargs})


# === token_contributions: each token's exact share of the logits ========================


def _feature(gram):
    """The feature id of an n-gram of ids, as `reference` hashes it."""
    if len(gram) == 1:
        return int(gram[0])
    h = gram[0]
    for g in gram[1:]:
        h = (h * V + g) % BUCKETS
    return V + int(h)


def token_reference(ids, weights, ngram=2, reduction="sum", binary=False, idf=None):
    """Per token: Σ over its n-grams of weight × value × scale / n (binary: / the
    feature's occurrences; the value is the feature's IDF, or 1)."""
    idf = np.ones(len(weights)) if idf is None else np.asarray(idf)
    weights = np.asarray(weights).reshape(len(weights), -1)
    ids = np.asarray(ids)
    out = np.zeros((*ids.shape, weights.shape[1]))
    for r, review in enumerate(ids.reshape(len(ids), -1, ids.shape[-1]) if ids.size else []):
        grams = [  # (sentence, start, n, feature)
            (s, i, n, _feature(seq[i : i + n]))
            for s, seq in enumerate(review)
            for n in range(1, ngram + 1)
            for i in range(len(seq) - n + 1)
            if (seq[i : i + n] != 0).all()
        ]
        features = [g[3] for g in grams]
        count = len(set(features)) if binary else len(features)
        squares = sum(idf[f] ** 2 for f in set(features))
        scale = {"sum": 1.0, "mean": 1 / max(count, 1), "sqrt": 1 / np.sqrt(max(count, 1))}
        scale["l2"] = 1 / np.sqrt(squares) if squares > 0 else 0.0
        view = out[r].reshape(len(review), ids.shape[-1], -1)
        for s, i, n, feature in grams:
            share = weights[feature] * idf[feature] * scale[reduction] / n
            if binary:
                share = share / features.count(feature)
            view[s, i : i + n] += share
    return out


@UNITS
@pytest.mark.parametrize("binary", [False, True])
@pytest.mark.parametrize("reduction", ["sum", "mean", "sqrt"])
@pytest.mark.parametrize("ngram", [1, 3])
def test_token_contributions_sum_to_the_logits(units, binary, reduction, ngram):
    layer, weights = layer_with_weights(ngram, reduction, units, binary=binary)
    flat = np.array(
        [[3, 4, 3, 4, 3, 0], [5, 5, 5, 5, 0, 0], [0, 0, 0, 0, 0, 0], [9, 0, 0, 0, 0, 0]]
    )
    nested = np.array([[[3, 4, 0], [3, 4, 7]], [[8, 9, 0], [0, 0, 0]], [[0, 0, 0], [0, 0, 0]]])
    for ids in (flat, nested, flat[:, :1], nested[:, :, :2]):
        shares = keras.ops.convert_to_numpy(layer.token_contributions(ids))
        assert shares.shape == (*ids.shape, units)
        np.testing.assert_allclose(
            shares.sum(axis=tuple(range(1, ids.ndim))),
            keras.ops.convert_to_numpy(layer(ids)),
            atol=1e-5,
        )
        np.testing.assert_allclose(
            shares, token_reference(ids, weights, ngram, reduction, binary), atol=1e-5
        )
        assert np.all(shares[ids == 0] == 0)  # padding gets nothing


@pytest.mark.parametrize("binary", [False, True])
def test_token_contributions_by_hand_on_a_tiny_vocabulary(binary):
    """ids 3 4 3 with bigrams, reduction "sqrt": the shares written out."""
    layer, w = layer_with_weights(2, "sqrt", binary=binary)
    w34, w43 = w[_feature([3, 4])], w[_feature([4, 3])]
    if binary:  # features {3, 4, (3 4), (4 3)}; feature 3 occurs twice, so halves
        expected = np.array([w[3] / 2 + w34 / 2, w[4] + w34 / 2 + w43 / 2, w[3] / 2 + w43 / 2])
        expected /= np.sqrt(4)
    else:  # five features: 3, 4, 3, (3 4), (4 3)
        expected = np.array([w[3] + w34 / 2, w[4] + w34 / 2 + w43 / 2, w[3] + w43 / 2])
        expected /= np.sqrt(5)
    shares = keras.ops.convert_to_numpy(layer.token_contributions(np.array([[3, 4, 3, 0]])))
    np.testing.assert_allclose(shares[0, :, 0], [*expected, 0.0], rtol=1e-5)


@pytest.mark.skipif(
    keras.backend.backend() != "tensorflow",
    reason="traces with tf.function, as the SavedModel's explain signature does (TensorFlow only)",
)
def test_token_contributions_under_a_traced_function_with_unknown_shapes():
    import tensorflow as tf

    layer, weights = layer_with_weights(3, "sqrt", 3, binary=True)
    traced = tf.function(
        layer.token_contributions, input_signature=[tf.TensorSpec([None, None, None], tf.int32)]
    )
    for ids in (np.array([[[3, 4, 0], [3, 4, 7]]]), np.array([[[4]], [[5]]]), np.zeros((0, 2, 2))):
        ids = ids.astype("int32")
        np.testing.assert_allclose(
            traced(ids).numpy(), token_reference(ids, weights, 3, "sqrt", True), atol=1e-5
        )


def test_token_contributions_refuse_the_packed_layout():
    layer, _ = layer_with_weights(2)
    with pytest.raises(ValueError, match="dense_twin"):
        layer.token_contributions([np.array([[1]]), np.array([[3, 4]])])


@UNITS
def test_binary_counts_the_one_feature_of_a_one_token_batch(units):
    """A batch whose longest review has one token has one feature column: still counted."""
    layer, weights = layer_with_weights(3, "sum", units, binary=True)
    out = keras.ops.convert_to_numpy(layer(np.array([[4], [0]])))
    np.testing.assert_allclose(out, [weights[4].reshape(-1), np.zeros(units)], rtol=1e-6)


# === idf and the "l2" reduction: TF-IDF features over hashed n-grams ======================


def layer_with_idf(ngram=2, reduction="l2", units=1, idf=True):
    """A binary layer with random weights and an IDF whose feature 3 is 0 (unseen)."""
    layer, weights = layer_with_weights(ngram, reduction, units, binary=True, idf=idf)
    values = np.random.default_rng(1).uniform(1.0, 4.0, layer.num_features).astype("float32")
    values[3] = 0.0
    if idf:
        layer.set_idf(values)
    return layer, weights, values if idf else None


@UNITS
@pytest.mark.parametrize("reduction", ["l2", "sqrt", "sum"])
@pytest.mark.parametrize("ngram", [1, 3])
def test_idf_matches_the_reference_in_every_layout(units, reduction, ngram):
    layer, weights, idf = layer_with_idf(ngram, reduction, units)
    flat = np.array(
        [[3, 4, 3, 4, 5, 0], [3, 3, 0, 0, 0, 0], [0, 0, 0, 0, 0, 0], [9, 8, 7, 6, 5, 4]]
    )
    out = keras.ops.convert_to_numpy(layer(flat))
    expected = reference(flat, weights, ngram, reduction, binary=True, idf=idf)
    np.testing.assert_allclose(out, expected, rtol=1e-5, atol=1e-6)
    assert np.isfinite(out).all() and (out[2] == 0).all()
    if ngram == 1:  # only feature 3, whose IDF is 0
        assert (out[1] == 0).all()
    assert not np.allclose(expected, reference(flat, weights, ngram, reduction, binary=True))
    # nested and packed: the norm is the document's
    dense = np.array([[[3, 4, 0], [3, 4, 7]], [[8, 9, 0], [0, 0, 0]]])
    groups = [np.array([[3, 4], [8, 9]]), np.array([[3, 4, 7]])]
    expected = reference(dense, weights, ngram, reduction, binary=True, idf=idf)
    for ids in (dense, [np.array([[1, 3], [2, 0]]), *groups]):
        np.testing.assert_allclose(
            keras.ops.convert_to_numpy(layer(ids)), expected, rtol=1e-5, atol=1e-6
        )
    shares = keras.ops.convert_to_numpy(layer.token_contributions(flat))
    np.testing.assert_allclose(shares.sum(axis=1), out, atol=1e-5)
    np.testing.assert_allclose(
        shares, token_reference(flat, weights, ngram, reduction, True, idf), atol=1e-5
    )


def test_l2_without_idf_is_sqrt_of_a_binary_review():
    ids = np.array([[3, 4, 3, 4, 5, 0], [9, 8, 7, 6, 5, 4]])
    l2, weights = layer_with_weights(2, "l2", binary=True)
    sqrt = NgramLogit(V, buckets=BUCKETS, ngram=2, reduction="sqrt", binary=True)
    sqrt.build((None, None))
    sqrt.embeddings.assign(weights)
    np.testing.assert_allclose(
        keras.ops.convert_to_numpy(l2(ids)), keras.ops.convert_to_numpy(sqrt(ids)), rtol=1e-6
    )


def test_layer_features_are_the_layers_values():
    """The fit's features (`nblr.layer_features` on counts) weigh to the layer's logits."""
    import tensorflow as tf

    from hatt.training.channel.ngram import channel_features, ngram_counts

    layer, weights, idf = layer_with_idf(3, "l2", units=3)
    ids = [[3, 4, 3, 4, 5], [3, 3], [], [9, 8, 7, 6, 5, 4, 11, 1]]
    counts = ngram_counts(tf.ragged.constant(ids, dtype="int64"), V, BUCKETS, 3)
    dense = np.array([row + [0] * (8 - len(row)) for row in ids])
    np.testing.assert_allclose(
        channel_features(layer, counts) @ weights,
        keras.ops.convert_to_numpy(layer(dense)),
        rtol=1e-5,
        atol=1e-6,
    )


def test_idf_round_trips_in_a_keras_file(tmp_path):
    layer, _, idf = layer_with_idf(2, "l2")
    inputs = keras.Input((None,), dtype="int32")
    model = keras.Model(inputs, layer(inputs))
    model.save(tmp_path / "tfidf.keras")
    again = keras.saving.load_model(tmp_path / "tfidf.keras").layers[-1]
    assert again.idf and again.reduction == "l2"
    np.testing.assert_array_equal(keras.ops.convert_to_numpy(again.idf_weights), idf)
    assert not again.idf_weights.trainable
    ids = np.array([[3, 4, 5, 0], [6, 6, 0, 0]])
    np.testing.assert_allclose(
        keras.ops.convert_to_numpy(model(ids)), keras.ops.convert_to_numpy(again(ids)), rtol=1e-6
    )


def test_idf_and_l2_refuse_what_they_cannot_do():
    with pytest.raises(ValueError, match="binary=True"):
        NgramLogit(V, buckets=BUCKETS, reduction="l2")
    with pytest.raises(ValueError, match="idf"):
        NgramLogit(V, buckets=BUCKETS, idf=1)
    with pytest.raises(ValueError, match="idf=True"):
        NgramLogit(V, buckets=BUCKETS).set_idf(np.ones(V + BUCKETS))
    layer = NgramLogit(V, buckets=BUCKETS, binary=True, idf=True)
    for bad in (np.ones(V), np.full(V + BUCKETS, -1.0), np.full(V + BUCKETS, np.nan)):
        with pytest.raises(ValueError, match="finite floats >= 0"):
            layer.set_idf(bad)
