"""hatt.training.channel.ngram above two classes: one-vs-rest NB(-LR) channel and the multinomial mix.

Also pins the binary path to the formulas it had before classes were added
(frozen copies below), so the IMDB figures cannot move.
"""

import dataclasses

import keras
import numpy as np
import pytest
import scipy.sparse as sp
import tensorflow as tf
from scipy.special import softmax
from sklearn.linear_model import LogisticRegression
from sklearn.metrics import log_loss

import hatt
from hatt import training
from hatt.data import Imdb, Split, TextCorpus
from hatt.layers import NgramLogit
from hatt.models import head
from hatt.training.channel import mix as mix_lib
from hatt.training.channel import nblr
from hatt.training.channel import ngram as ngram_lib
from tests._planted import planted_split

V, BUCKETS = 14, 97
CUES = ("apple", "banana", "cherry", "damson")


def planted_classes(n, seed, classes=3, cue_rate=0.85, filler=30):
    """A :class:`hatt.data.Split` of ``n`` reviews of ``classes`` classes (labels cycle
    0, 1, 2, ...): filler words ``w0 ..`` with the class's cue word (``CUES``) planted
    in a share ``cue_rate`` of them, and a weaker word ``lean{label}`` (or a random
    class's) in every review."""
    rng = np.random.default_rng(seed)
    texts, labels = [], []
    for i in range(n):
        label = i % classes
        words = [f"w{rng.integers(filler)}" for _ in range(rng.integers(6, 20))]
        lean = label if rng.random() < 0.6 else int(rng.integers(classes))
        words.insert(int(rng.integers(len(words))), f"lean{lean}")
        if rng.random() < cue_rate:
            words.insert(int(rng.integers(len(words))), CUES[label])
        cut = int(rng.integers(1, len(words)))
        texts.append(f"{' '.join(words[:cut])}. {' '.join(words[cut:])}.")
        labels.append(label)
    return Split(texts, np.array(labels))


def id_classes(n, seed, classes=3, nested=False):
    """Encoded reviews: class k holds id 2 + k once, among filler ids 2 + classes .. V - 1."""
    rng = np.random.default_rng(seed)
    reviews, labels = [], []
    for i in range(n):
        label = i % classes
        review = list(rng.integers(2 + classes, V, rng.integers(3, 9)))
        review.insert(int(rng.integers(len(review))), 2 + label)
        if nested:
            cut = int(rng.integers(1, len(review)))
            review = [review[:cut], review[cut:]]
        reviews.append(review)
        labels.append(label)
    return tf.ragged.constant(reviews, dtype="int32"), np.array(labels)


# === The fit, on the features the layer computes ===


@pytest.mark.parametrize("nested", [False, True])
@pytest.mark.parametrize("binary", [False, True])
@pytest.mark.parametrize("reduction", ["sum", "sqrt"])
def test_layer_features_times_a_weight_matrix_equal_the_layer(nested, binary, reduction):
    ids, _ = id_classes(17, 0, nested=nested)
    layer = NgramLogit(V, buckets=BUCKETS, ngram=3, reduction=reduction, binary=binary, units=4)
    layer.build((None, None))
    weights = np.random.default_rng(1).standard_normal((layer.num_features, 4)).astype("float32")
    layer.embeddings.assign(weights)
    counts = ngram_lib.ngram_counts(ids, V, BUCKETS, 3, chunk_size=5)
    expected = keras.ops.convert_to_numpy(layer(ids.to_tensor()))
    got = nblr.layer_features(counts, binary, reduction) @ weights
    np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-5)


def test_one_vs_rest_ratios_are_each_class_against_the_rest():
    ids, labels = id_classes(60, 0, classes=3)
    counts = ngram_lib.ngram_counts(ids, V, BUCKETS, 2)
    ratios = nblr.one_vs_rest_log_count_ratios(counts, labels, 3, alpha=0.5)
    assert ratios.shape == (counts.shape[1], 3) and ratios.dtype == np.float32
    x = (counts.toarray() > 0).astype(float)
    for k in range(3):
        p, q = 0.5 + x[labels == k].sum(0), 0.5 + x[labels != k].sum(0)
        direct = np.where(x.sum(0) > 0, np.log(p / p.sum()) - np.log(q / q.sum()), 0.0)
        np.testing.assert_allclose(ratios[:, k], direct, rtol=1e-5, atol=1e-6)
        assert ratios[2 + k, k] > 0 and ratios[2 + k, k] == ratios[2 + k].max()  # its cue id
    # the same as the binary function on "k against the rest"
    binary = nblr.log_count_ratios(counts, (labels == 1).astype(int), alpha=0.5)
    np.testing.assert_array_equal(ratios[:, 1], binary)


def test_one_vs_rest_nblr_equals_a_logistic_regression_per_class():
    ids, labels = id_classes(90, 0, classes=3)
    counts = ngram_lib.ngram_counts(ids, V, BUCKETS, 2)
    weights, intercept, info = nblr.fit_nb_logistic(
        counts, labels, binary=True, reduction="sum", alpha=0.5, C=0.3
    )
    assert weights.shape == (counts.shape[1], 3) and intercept.shape == (3,)
    x = (counts.toarray() > 0).astype(float)
    for k in range(3):
        p, q = 0.5 + x[labels == k].sum(0), 0.5 + x[labels != k].sum(0)
        r = np.where(x.sum(0) > 0, np.log(p / p.sum()) - np.log(q / q.sum()), 0.0)
        reference = LogisticRegression(C=0.3, solver="liblinear", random_state=0)
        reference.fit(x * r, labels == k)
        np.testing.assert_allclose(weights[:, k], reference.coef_.ravel() * r, rtol=1e-4, atol=1e-6)
        assert intercept[k] == pytest.approx(reference.intercept_[0], rel=1e-4, abs=1e-6)
    assert info["scheme"] == "one-vs-rest" and info["C"] == 0.3
    assert info["train_accuracy"] == 1.0
    assert info["train_accuracy"] == ngram_lib.channel_accuracy(
        counts, labels, weights, True, "sum", intercept
    )


def test_c_is_chosen_on_the_validation_argmax_accuracy():
    ids, labels = id_classes(60, 0, classes=4)
    val_ids, val_labels = id_classes(40, 1, classes=4)
    counts = ngram_lib.ngram_counts(ids, V, BUCKETS, 2)
    validation = (ngram_lib.ngram_counts(val_ids, V, BUCKETS, 2), val_labels)
    weights, intercept, info = nblr.fit_nb_logistic(
        counts, labels, binary=False, reduction="sqrt", C=[1e-4, 1.0], validation=validation
    )
    assert [e["C"] for e in info["selection"]] == [1e-4, 1.0]
    best = max(info["selection"], key=lambda e: e["validation_accuracy"])
    assert info["C"] == best["C"] and info["validation_accuracy"] == best["validation_accuracy"]
    logits = nblr.layer_features(validation[0], False, "sqrt") @ weights + intercept
    assert info["validation_accuracy"] == (logits.argmax(1) == val_labels).mean() == 1.0


@pytest.mark.parametrize(
    "kwargs,match",
    [
        ({"labels": np.array([0, 1, 2, 5] * 5)}, "0..5"),  # inferred: 6 classes, 3 and 4 missing
        ({"labels": np.array([0, 1, 2, 3] * 5), "num_classes": 3}, "ints in 0..2"),
        ({"labels": np.array([0, 1, 2, 3] * 5), "num_classes": 1}, "num_classes"),
        ({"labels": np.array([0, 1, 2, -1] * 5), "num_classes": 3}, "labels"),
        ({"labels": np.array([0.5, 1, 2, 0] * 5), "num_classes": 3}, "labels"),
    ],
)
def test_bad_labels_name_the_problem(kwargs, match):
    ids, _ = id_classes(20, 0)
    counts = ngram_lib.ngram_counts(ids, V, BUCKETS, 2)
    if match == "0..5":
        match = r"classes \[3, 4\]"
    with pytest.raises(ValueError, match=match):
        nblr.fit_nb_logistic(counts, binary=True, reduction="sum", **kwargs)


# === The channel in a 3-class model ===


@pytest.fixture(scope="module")
def corpus():
    train, validation, test = (
        planted_classes(n, seed) for n, seed in ((240, 0), (120, 1), (120, 2))
    )
    return TextCorpus(train, validation, test, "planted-3", class_names=("0", "1", "2"))


def config(fit, init="nblr"):
    return training.TrainConfig(
        model="cnn",
        model_kwargs={"embedding_dim": 8, "filters": 4},
        ngram={
            "buckets": 64,
            "binary": True,
            "reduction": "sum",
            "init": init,
            "C": [0.1, 1.0],
            "fit": fit,
        },
        epochs=1,
        batch_size=16,
        min_count=1,
        learning_rate=1e-2,
    )


def prepared(corpus, fit, init="nblr"):
    cfg = config(fit, init)
    vectorizer = training.create_vectorizer(cfg).adapt(corpus.train.texts)
    model = training.create_model(cfg, vectorizer, steps_per_epoch=10, num_classes=3)
    splits = {
        name: (hatt.data.encode(split.texts, vectorizer), np.asarray(split.labels))
        for name, split in (
            ("train", corpus.train),
            ("validation", corpus.validation),
            ("test", corpus.test),
        )
    }
    return cfg, model, splits


def logits_of(model, ids):
    return keras.Model(model.inputs, head.logits_tensor(model)).predict(ids.to_tensor(), verbose=0)


@pytest.mark.parametrize("init", ["nb", "nblr"])
def test_joint_start_makes_the_model_the_one_vs_rest_channel(corpus, init):
    """With the deep kernel at zero, the model's logits are the channel's (+ its intercepts)."""
    cfg, model, splits = prepared(corpus, "joint", init)
    dense = model.get_layer("logit")
    dense.kernel.assign(np.zeros(dense.kernel.shape, "float32"))
    bias = keras.ops.convert_to_numpy(dense.bias).copy()
    info = training.init_ngram_channel(model, cfg, *splits["train"], splits["validation"])
    layer = model.get_layer("ngram_logit")
    weights = keras.ops.convert_to_numpy(layer.embeddings)
    assert weights.shape == (layer.num_features, 3)
    val_ids, val_labels = splits["validation"]
    counts = ngram_lib.ngram_counts(val_ids, layer.vocabulary_size, 64, layer.ngram)
    intercept = keras.ops.convert_to_numpy(dense.bias) - bias
    if init == "nb":
        assert info["scheme"] == "one-vs-rest" and np.all(intercept == 0)
    expected = nblr.layer_features(counts, True, "sum") @ weights + intercept + bias
    np.testing.assert_allclose(logits_of(model, val_ids), expected, rtol=1e-4, atol=1e-5)
    accuracy = (expected.argmax(1) == val_labels).mean()
    assert accuracy == pytest.approx(info["channel_validation_accuracy"])
    assert accuracy >= 0.85  # the cue word is in 85 % of the reviews, the lean word helps


@pytest.fixture(scope="module")
def mixed(corpus):
    """A 3-class CNN whose deep part trained with the channel at zero, then mixed."""
    cfg, model, splits = prepared(corpus, "separate")
    keras.utils.set_random_seed(0)
    train_ids, train_labels = splits["train"]
    model.fit(train_ids.to_tensor(), train_labels, epochs=3, batch_size=16, verbose=0)
    deep_model = keras.Model(model.inputs, model.get_layer("logit").output)

    def deep_logits(name):
        return deep_model.predict(splits[name][0].to_tensor(), verbose=0)

    before = {name: deep_logits(name) for name in ("validation", "test")}
    info, logits = training.mix_ngram_channel(
        model, cfg, *splits["train"], splits["validation"], splits["test"], deep_logits
    )
    return model, splits, before, info, logits


def test_the_mix_folds_exactly_into_the_model(mixed):
    """model logits = a·deep + b·channel + c: one non-negative weight a part, a bias a class."""
    model, splits, before, info, logits = mixed
    mix = info["mix"]
    assert set(mix) == {"deep", "channel", "bias", "held_out"}
    assert mix["deep"] >= 0 and mix["channel"] >= 0 and np.shape(mix["bias"]) == (3,)
    intercept = np.asarray(info["channel_intercept"])
    for name in ("validation", "test"):
        assert logits[name]["deep_logits"].shape == logits[name]["channel_logits"].shape
        np.testing.assert_allclose(logits[name]["deep_logits"], before[name], atol=1e-6)
    reference = mix_lib.fit_mix(
        logits["validation"]["deep_logits"],
        logits["validation"]["channel_logits"] - intercept,
        splits["validation"][1],
        use_deep=mix["deep"] > 0,
        anchor=intercept,
        hold_bias=True,  # above two classes the biases stay the channel's own
    )
    np.testing.assert_allclose(
        [mix["deep"], mix["channel"]], [reference.deep, reference.channel], rtol=1e-6, atol=1e-6
    )
    np.testing.assert_allclose(mix["bias"], mix["channel"] * intercept, rtol=1e-6, atol=1e-9)
    for name in ("validation", "test"):
        ids, labels = splits[name]
        deep, channel = logits[name]["deep_logits"], logits[name]["channel_logits"] - intercept
        expected = mix["deep"] * deep + mix["channel"] * channel + np.asarray(mix["bias"])
        z = logits_of(model, ids)
        np.testing.assert_allclose(z, expected, atol=1e-4, rtol=1e-4)
        np.testing.assert_allclose(
            model.predict(ids.to_tensor(), verbose=0), softmax(expected, axis=1), atol=1e-5
        )
        assert info[f"mixed_{name}_accuracy"] == pytest.approx((z.argmax(1) == labels).mean())
        deep_accuracy = (deep.argmax(1) == labels).mean()
        assert info[f"deep_{name}_accuracy"] == pytest.approx(deep_accuracy)
        expected_loss = log_loss(labels, softmax(expected, axis=1), labels=[0, 1, 2])
        assert info[f"mixed_{name}_loss"] == pytest.approx(expected_loss, rel=1e-4)


def test_the_mix_reports_the_parts_and_is_no_worse_than_the_channel(mixed):
    _, _, _, info, _ = mixed
    assert info["fit"] == "separate" and info["trainable"] is False
    assert info["scheme"] == "one-vs-rest" and len(info["channel_intercept"]) == 3
    for name in ("validation", "test"):
        for part in ("deep", "channel", "mixed"):
            assert 0 <= info[f"{part}_{name}_accuracy"] <= 1
    assert info["channel_validation_accuracy"] >= 0.85
    assert info["mixed_validation_accuracy"] >= info["channel_validation_accuracy"] - 0.03
    assert info["mixed_test_accuracy"] >= 0.8


def test_the_mix_refuses_a_validation_split_without_a_class(corpus):
    cfg, model, splits = prepared(corpus, "separate")
    val_ids, val_labels = splits["validation"]
    keep = np.flatnonzero(val_labels != 2)
    validation = (tf.gather(val_ids, keep), val_labels[keep])
    deep_model = keras.Model(model.inputs, model.get_layer("logit").output)
    with pytest.raises(ValueError, match=r"validation split.*classes \[2\]"):
        training.mix_ngram_channel(
            model,
            cfg,
            *splits["train"],
            validation,
            deep_logits=lambda _: deep_model.predict(validation[0].to_tensor(), verbose=0),
        )


def test_deep_logits_of_the_wrong_shape_are_a_clear_error(corpus):
    cfg, model, splits = prepared(corpus, "separate")
    n = len(splits["validation"][1])
    with pytest.raises(ValueError, match=r"deep_logits\('validation'\).*\[N, 3\]"):
        training.mix_ngram_channel(
            model, cfg, *splits["train"], splits["validation"], deep_logits=lambda _: np.zeros(n)
        )


# === Two classes: the numbers of before ===


def frozen_fit_nb_logistic(counts, labels, binary, reduction, alpha, C):
    """The binary NB-LR as it was before classes were added (one C, no validation)."""
    present = sp.csr_matrix(counts, dtype=np.float32)
    present.data = (present.data != 0).astype(present.dtype)
    positive = np.asarray(present[labels == 1].sum(axis=0), np.float64).ravel()
    negative = np.asarray(present[labels == 0].sum(axis=0), np.float64).ravel()
    seen = positive + negative >= 1
    p, q = positive + alpha, negative + alpha
    ratios = np.where(seen, np.log(p / p.sum()) - np.log(q / q.sum()), 0.0).astype(np.float32)
    x = nblr.layer_features(counts, binary, reduction) @ sp.diags(ratios)
    model = LogisticRegression(C=C, solver="liblinear", random_state=0, max_iter=1000)
    model.fit(x, labels)
    return (model.coef_.ravel() * ratios).astype(np.float32), float(model.intercept_[0])


def test_binary_fit_and_mix_keep_their_numbers():
    """What the binary channel computed before: fit, mix and the folded weights, to the
    last bits (the solver sees only the columns in use since nblr.columns_in_use, and
    with NumPy 2.4 / scikit-learn 1.9 its sums round differently from the frozen fit's)."""
    train, validation = planted_split(120, 0, 0.8, 0.7), planted_split(60, 1, 0.8, 0.7)
    corpus = Imdb(train, validation, validation, "planted")
    cfg = config("separate")
    vectorizer = training.create_vectorizer(cfg).adapt(corpus.train.texts)
    model = training.create_model(cfg, vectorizer, steps_per_epoch=10)
    train_ids = hatt.data.encode(train.texts, vectorizer)
    val_ids = hatt.data.encode(validation.texts, vectorizer)
    labels, val_labels = train.labels, validation.labels
    layer, dense = model.get_layer("ngram_logit"), model.get_layer("logit")
    counts = ngram_lib.ngram_counts(train_ids, layer.vocabulary_size, 64, layer.ngram)
    val_counts = ngram_lib.ngram_counts(val_ids, layer.vocabulary_size, 64, layer.ngram)
    weights, intercept, info = nblr.fit_nb_logistic(
        counts, labels, binary=True, reduction="sum", C=0.1
    )
    old_weights, old_intercept = frozen_fit_nb_logistic(counts, labels, True, "sum", 1.0, 0.1)
    np.testing.assert_allclose(weights, old_weights, rtol=1e-12, atol=1e-15)
    assert intercept == pytest.approx(old_intercept, rel=1e-12)
    # the mix, over made-up deep logits
    deep = np.random.default_rng(0).normal(0, 2, (len(val_labels), 1)).astype("float32")
    kernel, bias = (keras.ops.convert_to_numpy(v).copy() for v in (dense.kernel, dense.bias))
    info, logits = training.mix_ngram_channel(
        model, cfg, train_ids, labels, (val_ids, val_labels), deep_logits=lambda _: deep
    )
    chosen, chosen_intercept = frozen_fit_nb_logistic(counts, labels, True, "sum", 1.0, info["C"])
    channel = np.asarray(nblr.layer_features(val_counts, True, "sum") @ chosen, np.float64)
    deep64 = np.asarray(deep, np.float64).reshape(-1)
    # the mix is fit under a, b >= 0 (issue 30), its penalty anchored at the channel as
    # fit (issue 36); kept whenever the fit weighs the deep part, else the channel alone
    assert set(info["mix"]) == {"deep", "channel", "bias", "held_out"}
    a, b, c = (info["mix"][k] for k in ("deep", "channel", "bias"))
    assert a >= 0 and b >= 0
    reference = mix_lib.fit_mix(deep64, channel, val_labels, anchor=chosen_intercept)
    np.testing.assert_allclose(
        [a, b, c], [reference.deep, reference.channel, reference.bias], rtol=1e-6, atol=1e-8
    )
    assert info["channel_intercept"] == pytest.approx(chosen_intercept, rel=1e-12)
    assert info["mixed_validation_accuracy"] == float(
        ((a * deep64 + b * channel + c > 0) == val_labels).mean()
    )
    mixed = 1 / (1 + np.exp(-(a * deep64 + b * channel + c)))
    assert info["mixed_validation_loss"] == pytest.approx(log_loss(val_labels, mixed), rel=1e-6)
    own = 1 / (1 + np.exp(-(channel + chosen_intercept)))
    assert info["channel_validation_loss"] == pytest.approx(log_loss(val_labels, own), rel=1e-6)
    # fit for this loss over a family that holds the channel alone: never worse on it
    assert info["mixed_validation_loss"] <= info["channel_validation_loss"] + 1e-6
    np.testing.assert_array_equal(keras.ops.convert_to_numpy(dense.kernel), kernel * a)
    np.testing.assert_array_equal(keras.ops.convert_to_numpy(dense.bias), bias * a + c)
    np.testing.assert_allclose(
        keras.ops.convert_to_numpy(layer.embeddings), chosen * b, rtol=1e-12, atol=1e-15
    )
    assert logits["validation"]["deep_logits"].shape == (len(val_labels),)
    np.testing.assert_allclose(
        logits["validation"]["channel_logits"], channel + chosen_intercept, rtol=1e-12, atol=1e-12
    )


def test_refit_fits_every_class_column_on_train_and_validation(corpus):
    """ngram.refit above two classes: the kept columns are the OvR fits of train + validation."""
    import scipy.sparse as sp

    cfg, model, splits = prepared(corpus, "separate")
    cfg.ngram.refit = True
    deep_model = keras.Model(model.inputs, model.get_layer("logit").output)

    def deep_logits(name):
        return deep_model.predict(splits[name][0].to_tensor(), verbose=0)

    info, logits = training.mix_ngram_channel(
        model, cfg, *splits["train"], splits["validation"], splits["test"], deep_logits
    )
    layer = model.get_layer("ngram_logit")
    counts = {
        name: ngram_lib.ngram_counts(ids, layer.vocabulary_size, 64, layer.ngram)
        for name, (ids, _) in splits.items()
    }
    fit = {
        "first": nblr.fit_nb_logistic(
            counts["train"], splits["train"][1], binary=True, reduction="sum", C=info["C"],
            num_classes=3,
        ),
        "both": nblr.fit_nb_logistic(
            sp.vstack([counts["train"], counts["validation"]]).tocsr(),
            np.concatenate([splits["train"][1], splits["validation"][1]]),
            binary=True, reduction="sum", C=info["C"], num_classes=3,
        ),
    }  # fmt: skip
    np.testing.assert_allclose(info["refit"]["intercept"], fit["both"][1], rtol=1e-4, atol=1e-6)
    np.testing.assert_allclose(info["channel_intercept"], fit["first"][1], rtol=1e-4, atol=1e-6)
    for name, kept in (("validation", "first"), ("test", "both")):
        weights, intercept, _ = fit[kept]
        expected = nblr.layer_features(counts[name], True, "sum") @ weights + intercept
        np.testing.assert_allclose(logits[name]["channel_logits"], expected, rtol=1e-4, atol=1e-4)
    # the model is the mix over the refit channel: its test logits are the mixed ones
    np.testing.assert_allclose(
        logits_of(model, splits["test"][0]), logits["test"]["mixed_logits"], rtol=1e-4, atol=1e-4
    )


# === The run's class weights reach the channel's fit and the mix ===


def test_class_weight_map_is_sklearns_balanced_rule():
    from sklearn.utils.class_weight import compute_class_weight

    from hatt.training.settings.scale import class_weight_map

    labels = np.array([0] * 30 + [1] * 10 + [2] * 5)
    expected = compute_class_weight("balanced", classes=np.arange(3), y=labels)
    weights = class_weight_map("balanced", np.bincount(labels))
    np.testing.assert_allclose([weights[k] for k in range(3)], expected)
    assert class_weight_map(None, [30, 10]) is None
    with pytest.raises(ValueError, match="resolved"):
        class_weight_map("auto", [30, 10])


def test_sqrt_class_weights_are_the_root_of_balanced_at_the_same_total():
    from hatt.training.settings.scale import class_weight_map

    counts = np.array([40, 10, 5])
    weights = class_weight_map("sqrt", counts)
    roots = np.sqrt(counts.sum() / (3 * counts))  # NumPy reference: root of balanced
    expected = roots * counts.sum() / (counts * roots).sum()
    np.testing.assert_allclose([weights[k] for k in range(3)], expected)
    assert np.isclose(sum(weights[k] * counts[k] for k in range(3)), counts.sum())
    assert np.isclose(weights[1] / weights[0], 2.0)  # 4x rarer weighs 2x (balanced: 4x)
    assert class_weight_map("sqrt", [20, 20]) == {0: 1.0, 1: 1.0}
    config = hatt.training.assemble_config("cnn", class_weight="sqrt").fit_to_corpus([40, 10])
    assert config.class_weight == "sqrt"
    warning = hatt.data.stats.imbalance_warning(["a", "b"], [90, 10], "sqrt")
    assert "1 / sqrt(frequency) (--class-weight sqrt)" in warning


def test_weighted_one_vs_rest_nblr_weighs_each_review_by_its_class():
    ids, labels = id_classes(90, 0, classes=3)
    labels = labels.copy()
    labels[labels == 2] = np.where(np.arange((labels == 2).sum()) % 3 == 0, 2, 0)  # 2 is rare
    counts = ngram_lib.ngram_counts(ids, V, BUCKETS, 2)
    class_weight = {0: 0.5, 1: 1.0, 2: 3.0}
    weights, intercept, info = nblr.fit_nb_logistic(
        counts, labels, binary=True, reduction="sum", alpha=0.5, C=0.3, class_weight=class_weight
    )
    x = (counts.toarray() > 0).astype(float)
    review_weights = np.array([class_weight[k] for k in labels])
    for k in range(3):
        p, q = 0.5 + x[labels == k].sum(0), 0.5 + x[labels != k].sum(0)
        r = np.where(x.sum(0) > 0, np.log(p / p.sum()) - np.log(q / q.sum()), 0.0)
        reference = LogisticRegression(C=0.3, solver="liblinear", random_state=0)
        reference.fit(x * r, labels == k, sample_weight=review_weights)
        np.testing.assert_allclose(weights[:, k], reference.coef_.ravel() * r, rtol=1e-4, atol=1e-6)
        assert intercept[k] == pytest.approx(reference.intercept_[0], rel=1e-4, abs=1e-6)
    assert info["class_weight"] == {"0": 0.5, "1": 1.0, "2": 3.0}


def unbalanced(split, keep_every=4):
    """``split`` with only every ``keep_every``-th review of class 2 kept."""
    labels = np.asarray(split.labels)
    seen = np.cumsum(labels == 2)
    keep = (labels != 2) | (seen % keep_every == 1)
    return Split([t for t, k in zip(split.texts, keep, strict=True) if k], labels[keep])


def channel_fit(class_weight):
    """The 3-class channel (NB-LR, C from a grid on validation) fit on a training split
    whose class 2 is 4x smaller: ``(info, recall of class 2 on a balanced validation)``."""
    train = unbalanced(planted_classes(240, 0, cue_rate=0.5))
    validation = planted_classes(120, 1, cue_rate=0.5)
    cfg = dataclasses.replace(config("joint"), class_weight=class_weight)
    vectorizer = training.create_vectorizer(cfg).adapt(train.texts)
    layer = NgramLogit(vectorizer.vocabulary_size, buckets=64, ngram=2, units=3)
    layer.build((None, None))
    counts, val_counts = (
        ngram_lib.channel_counts(layer, hatt.data.encode(split.texts, vectorizer))
        for split in (train, validation)
    )
    labels, val_labels = np.asarray(train.labels), np.asarray(validation.labels)
    weights, intercept, info = ngram_lib.fit_ngram_channel(
        layer, cfg, counts, labels, (val_counts, val_labels)
    )
    logits = nblr.layer_features(val_counts, layer.binary, layer.reduction) @ weights + intercept
    recall = (nblr.predicted_classes(logits)[val_labels == 2] == 2).mean()
    return info, labels, recall


@pytest.mark.parametrize("class_weight", ["auto", "balanced", "none"])
def test_the_channel_fit_takes_the_runs_class_weight(class_weight):
    """'balanced' (and 'auto', on classes 4x apart) weighs the classes n / (C n_k); 'none' not."""
    info, labels, _ = channel_fit(class_weight)
    if class_weight == "none":
        assert "class_weight" not in info
        return
    per_class = np.bincount(labels)
    assert per_class.max() > 1.5 * per_class.min()  # so "auto" is "balanced"
    expected = per_class.sum() / (3 * per_class)
    np.testing.assert_allclose([info["class_weight"][str(k)] for k in range(3)], expected, 1e-5)


def test_balanced_weights_find_more_of_the_small_class():
    recall = {weight: channel_fit(weight)[2] for weight in ("none", "balanced")}
    assert recall["balanced"] > recall["none"]


def test_the_mix_weighs_validation_reviews_by_the_runs_class_weights(corpus, monkeypatch):
    """mix_ngram_channel gives choose_mix each validation review's class weight (the training
    split's, rescaled to a mean of 1)."""
    train = unbalanced(corpus.train)
    small = TextCorpus(
        train, corpus.validation, corpus.test, "small-2", class_names=("0", "1", "2")
    )
    cfg, model, splits = prepared(small, "separate")
    cfg = dataclasses.replace(cfg, class_weight="balanced")
    seen = {}
    real = mix_lib.choose_mix

    def spy(*args, **kwargs):
        seen["weights"] = kwargs.get("sample_weight")
        return real(*args, **kwargs)

    monkeypatch.setattr(mix_lib, "choose_mix", spy)
    deep_model = keras.Model(model.inputs, model.get_layer("logit").output)
    info, logits = training.mix_ngram_channel(
        model,
        cfg,
        *splits["train"],
        splits["validation"],
        None,
        lambda name: deep_model.predict(splits[name][0].to_tensor(), verbose=0),
    )
    train_counts = np.bincount(splits["train"][1])
    per_class = train_counts.sum() / (3 * train_counts)
    expected = per_class[splits["validation"][1]]
    np.testing.assert_allclose(seen["weights"], expected / expected.mean(), rtol=1e-6)
    # what the mix is fit for, reported beside the plain log loss
    losses = nblr.logit_losses(logits["validation"]["mixed_logits"], splits["validation"][1])
    assert info["mixed_validation_weighted_loss"] == pytest.approx(
        np.average(losses, weights=expected)
    )
    assert info["mixed_validation_loss"] == pytest.approx(losses.mean())
