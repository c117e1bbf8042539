"""The n-gram channel's grid chosen by k-fold cross-validation on the training split
(``ngram.folds``; :func:`hatt.training.channel.ngram.cross_validate_grid`)."""

import dataclasses

import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.linear_model import LogisticRegression
from sklearn.model_selection import GridSearchCV, StratifiedKFold

from hatt.layers import NgramLogit
from hatt.training import TrainConfig
from hatt.training.channel import nblr
from hatt.training.channel import ngram as ngram_lib
from hatt.training.settings.config import CV_DOCUMENTS, CV_FOLDS, NgramSettings

FEATURES = 60


def noisy_counts(n, seed):
    """Binary-ish counts whose first 10 features lean to class 1 and next 10 to class 0,
    weakly, so that the strength of regularization matters."""
    rng = np.random.default_rng(seed)
    labels = rng.integers(0, 2, n)
    rates = np.full((n, FEATURES), 0.08)
    rates[:, :10] += 0.06 * labels[:, None]
    rates[:, 10:20] += 0.06 * (1 - labels[:, None])
    counts = (rng.random((n, FEATURES)) < rates).astype(np.float32)
    return sp.csr_matrix(counts), labels


def channel(idf=False, units=1):
    layer = NgramLogit(
        FEATURES, buckets=8, ngram=1, binary=True, reduction="sum", idf=idf, units=units
    )
    layer.build((None, None))
    assert layer.num_features == FEATURES
    return layer


def config(**ngram):
    settings = dict(init="lr", reduction="sum", binary=True, C=[0.01, 0.1, 1.0, 10.0])
    return TrainConfig(model="cnn", ngram={**settings, **ngram}, seed=7)


def test_the_folds_choose_as_scikit_learns_grid_search_does():
    """init='lr' on plain features: each fold's held-out accuracy, their mean and the chosen C
    equal GridSearchCV's over a LogisticRegression with the same folds."""
    counts, labels = noisy_counts(150, 0)
    cfg = config(folds=4)
    weights, intercept, info = ngram_lib.fit_ngram_channel(channel(), cfg, counts, labels)
    search = GridSearchCV(
        LogisticRegression(solver="liblinear", random_state=7, max_iter=1000),
        {"C": cfg.ngram.C},
        cv=StratifiedKFold(4, shuffle=True, random_state=7),
    ).fit(counts.toarray(), labels)
    record = info["cross_validation"]
    assert record["folds"] == 4 and [p["C"] for p in record["points"]] == cfg.ngram.C
    for i, point in enumerate(record["points"]):
        folds = [search.cv_results_[f"split{k}_test_score"][i] for k in range(4)]
        np.testing.assert_allclose(point["fold_accuracies"], folds, atol=1e-12)
        assert point["cv_accuracy"] == pytest.approx(search.cv_results_["mean_test_score"][i])
    scores = [p["cv_accuracy"] for p in record["points"]]
    assert len(set(scores)) > 1  # the grid's points differ, so the choice is a real one
    assert info["C"] == search.best_params_["C"] == record["chosen"]["C"]
    assert info["cv_accuracy"] == max(scores)
    # ... and the kept fit is the whole split's at that C
    reference = LogisticRegression(C=info["C"], solver="liblinear", random_state=7)
    reference.fit(counts.toarray(), labels)
    np.testing.assert_allclose(weights, reference.coef_.ravel(), rtol=1e-4, atol=1e-6)
    assert intercept == pytest.approx(reference.intercept_[0], rel=1e-4, abs=1e-6)


def test_without_folds_the_validation_split_chooses():
    counts, labels = noisy_counts(150, 0)
    validation = noisy_counts(80, 1)
    cfg = config(folds=0)
    _, _, info = ngram_lib.fit_ngram_channel(channel(), cfg, counts, labels, validation)
    assert "cross_validation" not in info
    best = max(info["selection"], key=nblr.selection_score)
    assert info["C"] == best["C"]
    # the same split with folds: the validation split only measures the kept fit
    _, _, by_folds = ngram_lib.fit_ngram_channel(
        channel(),
        dataclasses.replace(cfg, ngram=dataclasses.replace(cfg.ngram, folds=5)),
        counts,
        labels,
        validation,
    )
    assert (
        "selection" not in by_folds and by_folds["C"] == by_folds["cross_validation"]["chosen"]["C"]
    )
    assert "channel_validation_accuracy" in by_folds


def test_nblr_folds_search_alpha_with_c():
    counts, labels = noisy_counts(150, 2)
    cfg = config(init="nblr", alpha=[0.5, 2.0], C=[0.01, 1.0], folds=3)
    _, _, info = ngram_lib.fit_ngram_channel(channel(), cfg, counts, labels)
    points = info["cross_validation"]["points"]
    assert [(p["alpha"], p["C"]) for p in points] == cfg.ngram.grid_points()
    assert all(len(p["fold_accuracies"]) == 3 for p in points)
    chosen = max(points, key=lambda p: p["cv_accuracy"])
    assert (info["alpha"], info["C"]) == (chosen["alpha"], chosen["C"])


def test_each_fold_takes_its_idf_from_its_own_training_reviews(monkeypatch):
    """A layer with idf: the held-out fold never reaches the IDF its fold is fit with."""
    counts, labels = noisy_counts(120, 3)
    seen = []
    real = ngram_lib.fit_logistic_channel

    def spy(fold_counts, fold_labels, **fit):
        seen.append((fold_counts.shape[0], fit["idf"], fold_counts))
        return real(fold_counts, fold_labels, **fit)

    monkeypatch.setattr(ngram_lib, "fit_logistic_channel", spy)
    cfg = config(folds=3, reduction="l2", idf=True, C=[1.0, 10.0])
    layer = NgramLogit(FEATURES, buckets=8, ngram=1, binary=True, reduction="l2", idf=True)
    layer.build((None, None))
    ngram_lib.fit_ngram_channel(layer, cfg, counts, labels)
    assert [rows for rows, _, _ in seen] == [80, 80, 80, 120]  # three folds, then the split
    for _, idf, fold_counts in seen:
        np.testing.assert_allclose(idf, nblr.document_idf(fold_counts))
    assert not np.allclose(seen[0][1], seen[-1][1])


def test_the_folds_score_with_the_runs_class_weights():
    """Unbalanced classes with class_weight 'balanced': each fold's score is the held-out
    accuracy weighted by class (the mean of the recalls on stratified folds)."""
    counts, labels = noisy_counts(200, 4)
    keep = np.flatnonzero((labels == 0) | (np.arange(200) % 4 == 0))
    counts, labels = counts[keep], labels[keep]
    cfg = dataclasses.replace(config(folds=3), class_weight="balanced")
    _, _, info = ngram_lib.fit_ngram_channel(channel(), cfg, counts, labels)
    plain = ngram_lib.fit_ngram_channel(
        channel(), dataclasses.replace(cfg, class_weight="none"), counts, labels
    )[2]
    assert info["class_weight"]["1"] > 1 > info["class_weight"]["0"]
    weighted = [p["fold_accuracies"] for p in info["cross_validation"]["points"]]
    unweighted = [p["fold_accuracies"] for p in plain["cross_validation"]["points"]]
    assert weighted != unweighted


def test_folds_resolve_by_the_training_split():
    auto = NgramSettings(init="nblr", reduction="sqrt")
    assert auto.folds == "auto" and len(auto.grid_points()) > 1
    assert auto.folds_for(np.arange(CV_DOCUMENTS - 1) % 2) == CV_FOLDS
    assert auto.folds_for(np.arange(CV_DOCUMENTS) % 2) == 0  # IMDB's 22,500: validation
    # never more folds than the smallest class has reviews; below 2, the validation split
    assert auto.folds_for(np.array([0] * 50 + [1] * 3)) == 3
    assert auto.folds_for(np.array([0] * 50 + [1])) == 0
    assert NgramSettings(folds=0).folds_for(np.arange(100) % 2) == 0
    assert NgramSettings(folds=10).folds_for(np.arange(100_000) % 2) == 10


def test_a_single_point_fits_no_fold(monkeypatch):
    counts, labels = noisy_counts(100, 5)
    monkeypatch.setattr(ngram_lib, "cross_validate_grid", None)  # would fail if called
    _, _, info = ngram_lib.fit_ngram_channel(channel(), config(C=0.1), counts, labels)
    assert info["C"] == 0.1 and "cross_validation" not in info


@pytest.mark.parametrize("folds", ["five", 1, -2, 2.5])
def test_bad_folds_are_refused(folds):
    with pytest.raises((ValueError, TypeError), match="ngram.folds"):
        NgramSettings(folds=folds)


def test_three_classes_cross_validate_the_softmax_channel():
    rng = np.random.default_rng(6)
    labels = np.arange(180) % 3
    rates = np.full((180, FEATURES), 0.08)
    for k in range(3):
        rates[labels == k, 10 * k : 10 * k + 10] += 0.08
    counts = sp.csr_matrix((rng.random(rates.shape) < rates).astype(np.float32))
    cfg = config(folds=3)
    weights, _, info = ngram_lib.fit_ngram_channel(channel(units=3), cfg, counts, labels)
    search = GridSearchCV(
        LogisticRegression(solver="lbfgs", random_state=7, max_iter=1000),
        {"C": cfg.ngram.C},
        cv=StratifiedKFold(3, shuffle=True, random_state=7),
    ).fit(counts.toarray(), labels)
    means = [p["cv_accuracy"] for p in info["cross_validation"]["points"]]
    np.testing.assert_allclose(means, search.cv_results_["mean_test_score"], atol=0.02)
    assert weights.shape == (FEATURES, 3) and info["scheme"] == "multinomial"
