"""The channel as TF-IDF + LR (``ngram.init="lr"``, ``idf``, ``reduction="l2"``).

Against scikit-learn on the same counts, and in a 3-class model: the IDF the fit sets
is the layer's, the mix folds into the model exactly, and a saved model keeps it.
"""

import keras
import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.feature_extraction.text import TfidfTransformer
from sklearn.linear_model import LogisticRegression

import hatt
from hatt import training
from hatt.data import TextCorpus
from hatt.training.channel import nblr
from hatt.training.channel import ngram as ngram_lib
from hatt.training.settings.config import DEFAULT_C, NgramSettings
from tests.training.test_ngram_multiclass import logits_of, planted_classes


def random_counts(rows, columns, seed, density=0.2):
    """Binary-ish counts with some columns nobody has (they must get IDF 0)."""
    rng = np.random.default_rng(seed)
    counts = sp.random(rows, columns, density, format="csr", random_state=rng, dtype=np.float32)
    counts.data[:] = rng.integers(1, 4, counts.nnz)
    keep = np.ones(columns, np.float32)
    keep[5] = 0.0
    counts = (counts @ sp.diags(keep)).tocsr()
    counts.eliminate_zeros()
    return counts


def test_document_idf_is_sklearns_smoothed_idf_and_zero_where_unseen():
    counts = random_counts(40, 30, 0)
    idf = nblr.document_idf(counts)
    used = nblr.columns_in_use(counts)
    assert 5 not in used and idf[5] == 0
    expected = TfidfTransformer(smooth_idf=True).fit(counts[:, used]).idf_
    np.testing.assert_allclose(idf[used], expected, rtol=1e-6)
    # min_df: the columns in fewer rows count for nothing, the others keep their IDF
    df = np.diff(counts.tocsc().indptr)
    kept = nblr.document_idf(counts, min_df=8)
    assert (kept[df < 8] == 0).all() and (df < 8).any()
    np.testing.assert_array_equal(kept[df >= 8], idf[df >= 8])


@pytest.mark.parametrize("num_classes", [2, 3])
def test_lr_fit_equals_sklearn_tfidf_and_logistic_regression(num_classes):
    """On unit rows of binary TF-IDF, the channel's weights are scikit-learn's coefficients."""
    counts = random_counts(90, 50, 1)
    labels = np.arange(90) % num_classes
    idf = nblr.document_idf(counts)
    weights, intercept, info = nblr.fit_logistic_channel(
        counts, labels, binary=True, reduction="l2", idf=idf, C=2.0, num_classes=num_classes
    )
    used = nblr.columns_in_use(counts)
    binary = counts[:, used].copy()
    binary.data[:] = 1.0
    x = TfidfTransformer(smooth_idf=True, norm="l2").fit_transform(binary)
    np.testing.assert_allclose(
        nblr.layer_features(counts, True, "l2", idf)[:, used].toarray(), x.toarray(), rtol=1e-5
    )
    solver = "liblinear" if num_classes == 2 else "lbfgs"
    model = LogisticRegression(C=2.0, solver=solver, random_state=0, max_iter=1000).fit(x, labels)
    expected = model.coef_.T if num_classes > 2 else model.coef_.ravel()
    np.testing.assert_allclose(weights[used], expected, rtol=1e-4, atol=1e-6)
    np.testing.assert_allclose(
        intercept,
        model.intercept_ if num_classes > 2 else model.intercept_[0],
        rtol=1e-4,
        atol=1e-6,
    )
    assert not weights[5].any()  # a column no review has stays 0
    assert info["init"] == "lr" and info["idf"] is True
    assert info.get("scheme") == ("multinomial" if num_classes > 2 else None)


def test_lr_min_df_keeps_rare_features_at_zero():
    counts = random_counts(60, 40, 3)
    labels = np.arange(60) % 2
    df = np.diff(counts.tocsc().indptr)
    weights, _, info = nblr.fit_logistic_channel(
        counts, labels, binary=True, reduction="l2", C=10.0, min_df=12
    )
    assert info["min_df"] == 12 and (df < 12).any() and (df >= 12).any()
    assert not weights[df < 12].any() and weights[df >= 12].all()


def test_lr_refuses_a_class_without_a_training_review():
    counts = random_counts(30, 20, 2)
    with pytest.raises(ValueError, match=r"classes \[2\]"):
        nblr.fit_logistic_channel(
            counts, np.arange(30) % 2, binary=True, reduction="l2", num_classes=3
        )


def test_settings_check_l2_and_give_it_a_default_grid():
    settings = NgramSettings(binary=True, reduction="l2", idf=True, init="lr", fit="separate")
    assert settings.C == DEFAULT_C["l2"] and settings.channel().idf is True
    with pytest.raises(ValueError, match="binary=true"):
        NgramSettings(reduction="l2", init="lr")
    with pytest.raises(ValueError, match="ngram.idf"):
        NgramSettings(binary=True, idf="yes")


# === In a 3-class model: the separate fit, its refit and the mix ===


@pytest.fixture(scope="module")
def tfidf_model(tmp_path_factory):
    """A 3-class CNN whose TF-IDF channel is fit apart, refit on train + validation, mixed."""
    corpus = TextCorpus(
        *(planted_classes(n, seed) for n, seed in ((240, 0), (120, 1), (120, 2))),
        "planted-3",
        class_names=("0", "1", "2"),
    )
    cfg = training.TrainConfig(
        model="cnn",
        model_kwargs={"embedding_dim": 8, "filters": 4},
        ngram={
            "buckets": 64,
            "binary": True,
            "reduction": "l2",
            "idf": True,
            "init": "lr",
            "C": [1.0, 10.0],
            "fit": "separate",
            "refit": True,
        },
        epochs=1,
        batch_size=16,
        min_count=1,
    )
    vectorizer = training.create_vectorizer(cfg).adapt(corpus.train.texts)
    model = training.create_model(cfg, vectorizer, steps_per_epoch=10, num_classes=3)
    splits = {
        name: (hatt.data.encode(split.texts, vectorizer), np.asarray(split.labels))
        for name, split in (("train", corpus.train), ("validation", corpus.validation))
    }
    splits["test"] = (
        hatt.data.encode(corpus.test.texts, vectorizer),
        np.asarray(corpus.test.labels),
    )
    keras.utils.set_random_seed(0)
    model.fit(splits["train"][0].to_tensor(), splits["train"][1], epochs=2, verbose=0)
    deep = keras.Model(model.inputs, model.get_layer("logit").output)
    info, logits = training.mix_ngram_channel(
        model,
        cfg,
        *splits["train"],
        splits["validation"],
        splits["test"],
        lambda name: deep.predict(splits[name][0].to_tensor(), verbose=0),
    )
    path = tmp_path_factory.mktemp("tfidf") / "model.keras"
    model.save(path)
    return model, splits, info, logits, path


def test_the_refit_sets_the_idf_of_train_and_validation(tfidf_model):
    model, splits, info, _, _ = tfidf_model
    layer = model.get_layer("ngram_logit")
    both = sp.vstack(
        [ngram_lib.channel_counts(layer, splits[s][0]) for s in ("train", "validation")]
    )
    np.testing.assert_allclose(
        keras.ops.convert_to_numpy(layer.idf_weights), nblr.document_idf(both), rtol=1e-6
    )
    assert (
        info["init"] == "lr" and info["refit"]["init"] == "lr" and info["scheme"] == "multinomial"
    )
    assert info["channel_validation_accuracy"] >= 0.85  # the cue word is in 85 % of reviews


def test_the_model_is_the_mix_of_its_parts_and_survives_a_reload(tfidf_model):
    model, splits, info, logits, path = tfidf_model
    ids, labels = splits["test"]
    z = logits_of(model, ids)
    np.testing.assert_allclose(z, logits["test"]["mixed_logits"], rtol=1e-4, atol=1e-4)
    assert info["mixed_test_accuracy"] == pytest.approx((z.argmax(1) == labels).mean())
    again = keras.saving.load_model(path)
    np.testing.assert_allclose(logits_of(again, ids), z, rtol=1e-5, atol=1e-5)
    # the channel's share of each token sums to the channel's logits (explanations)
    layer, dense_ids = again.get_layer("ngram_logit"), ids.to_tensor()
    shares = keras.ops.convert_to_numpy(layer.token_contributions(dense_ids))
    np.testing.assert_allclose(
        shares.sum(axis=1), keras.ops.convert_to_numpy(layer(dense_ids)), rtol=1e-4, atol=1e-5
    )


@pytest.mark.parametrize("num_classes", [2, 3])
def test_balanced_class_weights_give_sklearns_balanced_logistic_regression(num_classes):
    """The run's class weights reach the channel: scikit-learn's class_weight="balanced"."""
    from sklearn.metrics import balanced_accuracy_score

    from hatt.training.settings.scale import class_weight_map

    counts = random_counts(120, 50, 4)
    labels = np.where(np.arange(120) % 5 == 0, 1, 0)  # 24 of class 1, 96 of class 0
    if num_classes == 3:
        labels[::7] = 2
    class_weight = class_weight_map("balanced", np.bincount(labels))
    # a validation split of the training split's proportions, as a stratified carve gives
    validation = (random_counts(120, 50, 5), labels.copy())
    idf = nblr.document_idf(counts)
    weights, intercept, info = nblr.fit_logistic_channel(
        counts,
        labels,
        binary=True,
        reduction="l2",
        idf=idf,
        C=[0.5, 4.0],
        validation=validation,
        num_classes=num_classes,
        class_weight=class_weight,
    )
    used = nblr.columns_in_use(counts)
    x = nblr.layer_features(counts, True, "l2", idf)[:, used]
    solver = "liblinear" if num_classes == 2 else "lbfgs"
    model = LogisticRegression(
        C=info["C"], solver=solver, random_state=0, max_iter=1000, class_weight="balanced"
    ).fit(x, labels)
    expected = model.coef_.T if num_classes > 2 else model.coef_.ravel()
    np.testing.assert_allclose(weights[used], expected, rtol=1e-4, atol=1e-6)
    assert info["class_weight"] == {str(k): pytest.approx(w) for k, w in class_weight.items()}
    # C is chosen on the validation accuracy weighted alike: on a split of the training
    # split's proportions, the mean recall of the classes
    for entry in info["selection"]:
        assert 0.0 <= entry["validation_weighted_accuracy"] <= 1.0
    best = max(info["selection"], key=lambda e: e["validation_weighted_accuracy"])
    assert info["C"] == best["C"]
    logits = nblr.layer_features(validation[0], True, "l2", idf) @ weights + intercept
    recall = balanced_accuracy_score(validation[1], nblr.predicted_classes(logits))
    assert info["validation_weighted_accuracy"] == pytest.approx(recall)
    unweighted = nblr.fit_logistic_channel(
        counts, labels, binary=True, reduction="l2", idf=idf, C=info["C"], num_classes=num_classes
    )[0]
    assert not np.allclose(unweighted, weights)
