"""hatt.training.channel.ngram: counts, NB-weighted LR, and the separate fit with its mix."""

import functools
import json

import keras
import numpy as np
import pytest
import scipy.sparse
import tensorflow as tf
from sklearn.linear_model import LogisticRegression

import hatt
from hatt import models, training
from hatt.data import Imdb
from hatt.layers import NgramLogit
from hatt.training.channel import mix as mix_lib
from hatt.training.channel import nblr
from hatt.training.channel import ngram as ngram_lib
from tests._fresh_process import run_json_script
from tests._planted import planted_split

V, BUCKETS = 12, 97


def random_reviews(n, seed, nested=False):
    rng = np.random.default_rng(seed)
    if nested:
        return [
            [list(rng.integers(1, V, rng.integers(1, 5))) for _ in range(rng.integers(1, 4))]
            for _ in range(n)
        ]
    return [list(rng.integers(1, V, rng.integers(0, 9))) for _ in range(n)]


@pytest.mark.parametrize("nested", [False, True])
@pytest.mark.parametrize("binary", [False, True])
@pytest.mark.parametrize("reduction", ["sum", "mean", "sqrt"])
def test_layer_features_times_weights_equal_the_layer(nested, binary, reduction):
    """The sparse matrix that sklearn fits reproduces NgramLogit's output exactly."""
    reviews = random_reviews(23, 0, nested)
    ids = tf.ragged.constant(reviews, dtype="int32")
    layer = NgramLogit(V, buckets=BUCKETS, ngram=3, reduction=reduction, binary=binary)
    layer.build((None, None))
    weights = np.random.default_rng(1).standard_normal(layer.num_features).astype("float32")
    layer.embeddings.assign(weights)
    counts = ngram_lib.ngram_counts(ids, V, BUCKETS, 3, chunk_size=5)
    assert counts.shape == (23, layer.num_features)
    expected = keras.ops.convert_to_numpy(layer(ids.to_tensor())).ravel()
    got = nblr.layer_features(counts, binary, reduction) @ weights
    np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-5)


def separable(n, seed):
    """Reviews of ids: label 1 iff id 2 occurs (else id 3), plus filler ids 4..11."""
    rng = np.random.default_rng(seed)
    reviews, labels = [], []
    for i in range(n):
        label = i % 2
        review = list(rng.integers(4, V, rng.integers(3, 9)))
        review.insert(int(rng.integers(len(review))), 2 if label else 3)
        reviews.append(review)
        labels.append(label)
    return tf.ragged.constant(reviews, dtype="int32"), np.array(labels)


def test_fit_nb_logistic_equals_sklearn_on_nb_scaled_features():
    ids, labels = separable(80, 0)
    counts = ngram_lib.ngram_counts(ids, V, BUCKETS, 2)
    weights, intercept, info = nblr.fit_nb_logistic(
        counts, labels, binary=True, reduction="sum", alpha=0.5, C=0.3
    )
    # reference: sklearn on binarized counts times r, r from a direct count
    x = (counts.toarray() > 0).astype(float)
    p, q = 0.5 + x[labels == 1].sum(0), 0.5 + x[labels == 0].sum(0)
    r = np.where(x.sum(0) > 0, np.log(p / p.sum()) - np.log(q / q.sum()), 0.0)
    reference = LogisticRegression(C=0.3, solver="liblinear", random_state=0).fit(x * r, labels)
    np.testing.assert_allclose(weights, reference.coef_.ravel() * r, rtol=1e-4, atol=1e-6)
    assert intercept == pytest.approx(reference.intercept_[0], rel=1e-4, abs=1e-6)
    assert weights[2] > 0 > weights[3] and info["C"] == 0.3 and info["train_accuracy"] == 1.0


def test_c_grid_is_chosen_on_validation():
    ids, labels = separable(60, 0)
    val_ids, val_labels = separable(40, 1)
    counts = ngram_lib.ngram_counts(ids, V, BUCKETS, 2)
    validation = (ngram_lib.ngram_counts(val_ids, V, BUCKETS, 2), val_labels)
    _, _, info = nblr.fit_nb_logistic(
        counts, labels, binary=False, reduction="sqrt", C=[1e-4, 1.0], validation=validation
    )
    assert [e["C"] for e in info["selection"]] == [1e-4, 1.0]
    best = max(info["selection"], key=lambda e: e["validation_accuracy"])
    assert info["C"] == best["C"] and info["validation_accuracy"] == best["validation_accuracy"]


@pytest.mark.parametrize("num_classes", [2, 3])
def test_alpha_grid_is_searched_with_c_on_validation(num_classes):
    """Every (alpha, C) pair is fit, alpha outermost; the best validation accuracy wins (the
    first on a tie), and its weights are the single fit's at that point."""
    rng = np.random.default_rng(0)
    reviews = [list(rng.integers(1, V, rng.integers(2, 9))) for _ in range(150)]
    # the label leans on ids 1..3 only: a noisy task, so the grid's points differ
    labels = np.array([min(sum(t <= 3 for t in r), num_classes - 1) for r in reviews])
    labels = np.where(rng.random(150) < 0.2, rng.integers(0, num_classes, 150), labels)
    counts = ngram_lib.ngram_counts(tf.ragged.constant(reviews, dtype="int32"), V, BUCKETS, 2)
    train, validation = (counts[:100], labels[:100]), (counts[100:], labels[100:])
    common = {"binary": True, "reduction": "sqrt", "num_classes": num_classes}
    alphas, grid = [0.1, 1.0, 10.0], [0.01, 1.0, 100.0]
    weights, intercept, info = nblr.fit_nb_logistic(
        *train, alpha=alphas, C=grid, validation=validation, **common
    )
    pairs = [(e["alpha"], e["C"]) for e in info["selection"]]
    assert pairs == [(a, c) for a in alphas for c in grid]
    accuracies = [e["validation_accuracy"] for e in info["selection"]]
    first_best = info["selection"][int(np.argmax(accuracies))]
    assert (info["alpha"], info["C"]) == (first_best["alpha"], first_best["C"])
    single = nblr.fit_nb_logistic(*train, alpha=info["alpha"], C=info["C"], **common)
    np.testing.assert_allclose(weights, single[0], rtol=1e-6)
    np.testing.assert_allclose(intercept, single[1], rtol=1e-6)
    logits = nblr.layer_features(validation[0], True, "sqrt") @ weights + intercept
    assert nblr.logit_accuracy(logits, validation[1]) == pytest.approx(max(accuracies))


@pytest.mark.parametrize(
    "kwargs,match",
    [
        ({"C": 0}, "C"),
        ({"C": [0.1, 1.0]}, "validation"),
        ({"alpha": []}, "alpha"),
        ({"alpha": [0.5, 1.0]}, "grid of alpha needs a validation"),
        ({"labels": np.ones(10, int)}, "both labels"),
    ],
)
def test_fit_nb_logistic_bad_input(kwargs, match):
    ids, labels = separable(10, 0)
    counts = ngram_lib.ngram_counts(ids, V, BUCKETS, 2)
    args = {"labels": labels, "binary": True, "reduction": "sum", **kwargs}
    with pytest.raises(ValueError, match=match):
        nblr.fit_nb_logistic(counts, **args)


@pytest.fixture(scope="module")
def planted():
    # the cue word is missing from a fifth of the reviews, and a weaker word leans 70/30
    train, validation, test = (
        planted_split(n, seed, 0.8, 0.7) for n, seed in ((200, 0), (80, 1), (80, 2))
    )
    return Imdb(train, validation, test, "planted")


def config(model, fit="joint", **extra):
    kwargs = {"embedding_dim": 16}
    kwargs.update({"filters": 8} if model == "cnn" else {"word_units": 8, "sentence_units": 8})
    return training.TrainConfig(
        model=model,
        model_kwargs=kwargs,
        ngram={
            "buckets": 64,
            "binary": True,
            "reduction": "sum",
            "init": "nblr",
            "C": [0.1, 1.0],
            "fit": fit,
        },
        **{"epochs": 2, **extra},
        batch_size=16,
        min_count=1,
        learning_rate=1e-2,
    )


def test_nblr_start_predicts_what_the_logistic_regression_does(planted):
    """Before training, with the deep part silenced, the model is the fitted LR."""
    cfg = config("cnn")
    vectorizer = training.create_vectorizer(cfg).adapt(planted.train.texts)
    model = training.create_model(cfg, vectorizer, steps_per_epoch=10)
    dense = model.get_layer("logit")
    dense.kernel.assign(np.zeros(dense.kernel.shape, "float32"))
    train_ids = hatt.data.encode(planted.train.texts, vectorizer)
    validation = (hatt.data.encode(planted.validation.texts, vectorizer), planted.validation.labels)
    info = training.init_ngram_channel(model, cfg, train_ids, planted.train.labels, validation)
    layer = model.get_layer("ngram_logit")
    counts = ngram_lib.ngram_counts(validation[0], layer.vocabulary_size, 64, layer.ngram)
    weights = keras.ops.convert_to_numpy(layer.embeddings)
    bias = float(keras.ops.convert_to_numpy(dense.bias)[0])
    logits = nblr.layer_features(counts, True, "sum") @ weights + bias
    probabilities = model.predict(validation[0].to_tensor(), verbose=0).ravel()
    np.testing.assert_allclose(probabilities, 1 / (1 + np.exp(-logits)), rtol=1e-4, atol=1e-6)
    accuracy = ((probabilities > 0.5) == planted.validation.labels).mean()
    assert accuracy == pytest.approx(info["channel_validation_accuracy"])
    assert info["init"] == "nblr" and info["C"] in (0.1, 1.0) and accuracy >= 0.8


# refit off on the HAN, on with the CNN: each family's separate fit once, and each side of
# ngram.refit once (its fit itself is checked on its own below, with and without)
SEPARATE = [("han", False), ("cnn", True)]


@pytest.fixture(scope="module")
def separate_runs(planted, tmp_path_factory):
    """``run(model, refit)``: ``(run_dir, metrics)`` of a ``training.train`` run with the
    channel fit separately, trained on first use; the tests below read the same runs."""

    @functools.cache
    def run(model, refit):
        run_dir = tmp_path_factory.mktemp(f"separate_{model}_{refit}")
        # one sentence group (not the default's many): the packed HAN traces one recurrence
        shape = {"max_words": 16, "sentence_groups": [16]} if model == "han" else {}
        cfg = config(model, fit="separate", epochs=1, **shape)
        cfg.ngram.refit = refit
        metrics = training.train(cfg, run_dir, texts=planted, command="test", verbose=0)
        return run_dir, metrics

    return run


@pytest.mark.slow
@pytest.mark.parametrize("model, refit", SEPARATE)
def test_separate_fit_mixes_the_parts_on_validation(separate_runs, model, refit):
    run_dir, metrics = separate_runs(model, refit)
    channel = metrics["ngram_channel"]
    assert json.loads((run_dir / "ngram_channel.json").read_text()) == channel
    assert channel["fit"] == "separate" and set(channel["mix"]) == {
        "deep",
        "channel",
        "bias",
        "held_out",
    }
    assert channel["trainable"] is False
    # 200 training reviews (below CV_DOCUMENTS): the grid was chosen by 5 folds of them
    assert channel["cross_validation"]["folds"] == 5
    assert channel["C"] == channel["cross_validation"]["chosen"]["C"] and "selection" not in channel
    # the saved model is the mix: its accuracy is the mixed one, on validation and test
    # (with the refit, validation's is the held-out mix's, never the in-sample model's)
    assert metrics["validation_accuracy"] == pytest.approx(channel["mixed_validation_accuracy"])
    assert metrics["validation_loss"] == pytest.approx(channel["mixed_validation_loss"], abs=1e-4)
    assert ("refit" in channel) == refit
    assert metrics["test_accuracy"] == pytest.approx(channel["mixed_test_accuracy"])
    # the mix beats neither part by accident: it is at least as good as the channel on
    # validation (it can weigh the deep part at 0)
    assert channel["mixed_validation_accuracy"] >= channel["channel_validation_accuracy"] - 0.02
    assert metrics["test_accuracy"] >= 0.85
    # the parts' logits are saved beside the probabilities, and their mix is the model
    saved = np.load(run_dir / "validation_probabilities.npz")
    a, b, c = (channel["mix"][k] for k in ("deep", "channel", "bias"))
    own = saved["channel_logits"] - channel["channel_intercept"]
    # c is the model's (beside the final fit); validation's channel is the training
    # split's fit, so its mix is c moved back by b times the refit's change of intercept
    final = channel["refit"]["intercept"] if refit else channel["channel_intercept"]
    mixed = a * saved["deep_logits"] + b * own + c - b * (final - channel["channel_intercept"])
    np.testing.assert_allclose(saved["probabilities"], 1 / (1 + np.exp(-mixed)), atol=1e-4)


@pytest.mark.slow
def test_the_separately_fit_channel_is_saved_frozen_beside_the_deep_part(separate_runs):
    """The channel did not train with the deep part: each saved model (reloaded in one
    fresh process for the runs) holds it frozen, with its weights (the mix's b · fit)."""
    paths = [str(separate_runs(model, refit)[0] / "model.keras") for model, refit in SEPARATE]
    states = run_json_script(
        """
import json, sys, numpy as np, keras, hatt
states = []
for path in sys.argv[1:]:
    layer = keras.saving.load_model(path).get_layer("ngram_logit")
    weights = keras.ops.convert_to_numpy(layer.embeddings)
    states.append({"trainable": layer.trainable, "nonzero": int(np.count_nonzero(weights))})
print(json.dumps(states))
""",
        *paths,
    )
    assert len(states) == len(SEPARATE)
    for state in states:
        assert state["trainable"] is False and state["nonzero"] > 0


@pytest.mark.parametrize("refit,alpha", [(False, 1.0), (True, 1.0), (True, [0.05, 20.0])])
def test_refit_keeps_the_mix_and_fits_the_channel_on_train_and_validation(planted, refit, alpha):
    """ngram.refit: the saved channel is b · the NB-LR of train + validation at the chosen
    alpha and C."""
    cfg = config("cnn", fit="separate")
    cfg.ngram.refit = refit
    cfg.ngram.alpha = alpha
    vectorizer = training.create_vectorizer(cfg).adapt(planted.train.texts)
    model = training.create_model(cfg, vectorizer, steps_per_epoch=10)
    splits = {
        name: (hatt.data.encode(split.texts, vectorizer), np.asarray(split.labels))
        for name, split in (
            ("train", planted.train), ("validation", planted.validation), ("test", planted.test)
        )
    }  # fmt: skip
    rng = np.random.default_rng(0)
    deep = {
        name: rng.standard_normal(len(y)) + 0.5 * (2 * y - 1) for name, (_, y) in splits.items()
    }
    info, logits = mix_lib.mix_ngram_channel(
        model, cfg, *splits["train"], splits["validation"], splits["test"], deep.__getitem__
    )
    layer = model.get_layer("ngram_logit")
    counts = {
        name: ngram_lib.ngram_counts(ids, layer.vocabulary_size, 64, layer.ngram)
        for name, (ids, _) in splits.items()
    }
    chosen = {"C": info["C"], "alpha": info["alpha"]}
    assert info["alpha"] in (alpha if isinstance(alpha, list) else [alpha])
    first = nblr.fit_nb_logistic(
        counts["train"], splits["train"][1], binary=True, reduction="sum", **chosen
    )
    both = nblr.fit_nb_logistic(
        scipy.sparse.vstack([counts["train"], counts["validation"]]),
        np.concatenate([splits["train"][1], splits["validation"][1]]),
        binary=True, reduction="sum", **chosen,
    )  # fmt: skip
    kept = both if refit else first
    saved = keras.ops.convert_to_numpy(layer.embeddings)
    np.testing.assert_allclose(saved, info["mix"]["channel"] * kept[0], rtol=1e-4, atol=1e-6)
    # validation: the training-split fit (what the mix saw); test: the kept fit
    for name, fit in (("validation", first), ("test", kept)):
        expected = nblr.layer_features(counts[name], True, "sum") @ fit[0] + fit[1]
        np.testing.assert_allclose(logits[name]["channel_logits"], expected, rtol=1e-4, atol=1e-5)
    assert ("refit" in info) == refit
    if refit:
        assert info["refit"]["train_size"] == len(splits["train"][1]) + len(splits["validation"][1])
        assert {k: info["refit"][k] for k in chosen} == chosen
        assert "selection" not in info["refit"]
        assert info["refit"]["intercept"] == pytest.approx(both[1], rel=1e-4)
    # the top level describes the training-split fit, whose logits validation keeps
    assert info["channel_intercept"] == pytest.approx(first[1], rel=1e-4)
    with pytest.raises(ValueError, match="ngram.refit"):
        training.TrainConfig(model="cnn", ngram={"refit": True})


def test_separate_fit_config_checks():
    with pytest.raises(ValueError, match="ngram.fit"):
        training.TrainConfig(model="cnn", ngram={"fit": "stacked"})
    with pytest.raises(ValueError, match="zeros"):
        training.TrainConfig(model="cnn", ngram={"fit": "separate", "init": "zeros"})
    with pytest.raises(ValueError, match="ngram.init"):
        training.TrainConfig(model="cnn", ngram={"init": "svm"})
    with pytest.raises(ValueError, match="ngram.alpha"):
        training.TrainConfig(model="cnn", ngram={"alpha": [0.5, -1.0], "init": "nblr"})
    with pytest.raises(ValueError, match="grid of ngram.alpha .* needs ngram.init='nblr'"):
        training.TrainConfig(model="cnn", ngram={"alpha": [0.5, 1.0], "init": "nb"})
    assert training.TrainConfig(model="cnn", ngram={"alpha": [0.5, 1], "init": "nblr"})
    with pytest.raises(ValueError, match="ngram.trainable"):
        training.TrainConfig(model="cnn", ngram={"trainable": "no"})
    with pytest.raises(ValueError, match="ngram.binary"):
        models.build("cnn", vocabulary_size=50, ngram={"buckets": 8, "binary": 1})
