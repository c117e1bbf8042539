"""hatt.sklearn.HattClassifier: scikit-learn's estimator checks that apply, classes_ order,
cross_val_score and GridSearchCV on the planted corpus with the tiniest CNN."""

import numpy as np
import pytest
import sklearn.utils.estimator_checks as checks
from sklearn.base import clone
from sklearn.exceptions import NotFittedError
from sklearn.model_selection import (
    GridSearchCV,
    StratifiedKFold,
    StratifiedShuffleSplit,
    cross_val_score,
)

from hatt.sklearn import HattClassifier
from tests.conftest import planted

# The tiniest CNN of tests/conftest.py, without the n-gram channel (the fastest fit).
TINY = {
    "embedding_dim": 8,
    "kernel_sizes": [2],
    "filters": 8,
    "max_tokens": 100,
    "min_count": 1,
    "sequence_length": 20,
    "batch_size": 16,
    "learning_rate": 0.03,
    "patience": 3,
}
# scikit-learn's checks that apply to an estimator of raw text (see hatt/sklearn.py for
# those that cannot: they fit on numeric 2-D arrays).
APPLICABLE = (
    "check_estimator_cloneable",
    "check_estimator_repr",
    "check_no_attributes_set_in_init",
    "check_parameters_default_constructible",
    "check_get_params_invariance",
    "check_set_params",
    "check_do_not_raise_errors_in_init_or_set_params",
    "check_estimators_unfitted",
    "check_mixin_order",
    "check_valid_tag_types",
    "check_estimator_tags_renamed",
    "check_requires_y_none",
    "check_supervised_y_no_nan",
    "check_classifiers_regression_target",
)


@pytest.fixture(scope="module")
def corpus():
    return planted(120, 3)


@pytest.mark.parametrize("check", APPLICABLE)
@pytest.mark.filterwarnings("ignore::RuntimeWarning")  # scikit-learn casting its own NaN y
def test_scikit_learn_checks_that_apply(check):
    getattr(checks, check)("HattClassifier", HattClassifier("cnn", preset=None, epochs=1, **TINY))


def test_parameters_are_stored_as_given_and_cloned():
    grid = [0.1, 0.5]
    estimator = HattClassifier(
        "han", preset=None, epochs=2, dropout=0.3, ngram={"buckets": 64}, C=grid
    )
    params = estimator.get_params()
    assert params["dropout"] == 0.3 and params["C"] is grid and params["family"] == "han"
    copy = clone(estimator)
    assert copy.get_params() == params and copy is not estimator
    assert estimator.set_params(dropout=0.1, family="cnn") is estimator
    assert estimator.get_params()["dropout"] == 0.1 and estimator.family == "cnn"
    with pytest.raises(NotFittedError):
        estimator.predict(["a b"])


def test_an_unknown_setting_fails_at_fit_with_the_known_ones(corpus):
    estimator = HattClassifier("cnn").set_params(dropuot=0.2)
    with pytest.raises(
        ValueError, match=r"Unknown setting.*'dropuot' \(did you mean 'dropout'\?\)"
    ):
        estimator.fit(corpus.texts, corpus.labels)


@pytest.fixture(scope="module")
def search(corpus):
    """One grid search for the module: two settings on one stratified split, then the refit
    on the whole corpus (3 fits), with labels whose text and number orders differ."""
    y = np.array(["9", "10"])[corpus.labels]  # "10" marks the planted "superb"
    split = StratifiedShuffleSplit(n_splits=1, test_size=0.5, random_state=0)
    search = GridSearchCV(
        HattClassifier("cnn", preset=None, epochs=3, **TINY), {"dropout": [0.0, 0.5]}, cv=split
    )
    return search.fit(np.asarray(corpus.texts, dtype=object), y), y


def test_classes_in_numpy_s_order_whatever_the_classifier_s(search):
    """ "10" < "9" as text (np.unique), "9" < "10" as numbers (hatt's class order)."""
    estimator = search[0].best_estimator_  # refit on the whole corpus
    np.testing.assert_array_equal(estimator.classes_, ["10", "9"])
    assert estimator.classifier_.class_names == ("9", "10")
    test = planted(40, 4)
    probabilities = estimator.predict_proba(test.texts)
    inner = estimator.classifier_.predict(test.texts)
    np.testing.assert_array_equal(probabilities, inner[:, [1, 0]])
    predicted = estimator.predict(test.texts)
    np.testing.assert_array_equal(predicted, estimator.classes_[probabilities.argmax(axis=1)])
    expected = np.array(["9", "10"])[test.labels]
    assert np.mean(predicted == expected) >= 0.9  # the columns are mapped right
    assert estimator.score(test.texts, expected) == pytest.approx(np.mean(predicted == expected))


def test_documents_without_text_are_answered_and_named_once(search):
    # issue 64: predict([""]) answered a class without a word
    import warnings

    estimator = search[0].best_estimator_
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        probabilities = estimator.predict_proba(np.array(["a fine film", None, " "], dtype=object))
    said = [w for w in caught if issubclass(w.category, UserWarning)]
    assert len(said) == 1 and str(said[0].message).startswith("2 document(s) hold no text (X[1]")
    assert said[0].filename == __file__  # the user's line, not hatt's
    assert probabilities.shape == (3, 2) and np.isfinite(probabilities).all()


def test_a_fitted_search_pickles_with_its_estimator(search):
    # issue 63: joblib persistence of a fitted HattClassifier failed on its TF functions
    import pickle

    test = planted(20, 6)
    again = pickle.loads(pickle.dumps(search[0]))
    np.testing.assert_allclose(
        again.predict_proba(test.texts), search[0].predict_proba(test.texts), atol=1e-6
    )
    np.testing.assert_array_equal(again.best_estimator_.classes_, ["10", "9"])


def test_labels_that_name_one_class_twice_are_refused(corpus):
    y = np.array(["3", "3.0", "4"])[np.arange(len(corpus)) % 3]  # "3.0" is class "3"
    with pytest.raises(ValueError, match="same class"):
        HattClassifier("cnn", preset=None, **TINY).fit(corpus.texts, y)


@pytest.mark.slow
def test_cross_val_score_fits_and_scores_each_fold(corpus):
    folds = StratifiedKFold(n_splits=2, shuffle=True, random_state=0)
    estimator = HattClassifier("cnn", preset=None, epochs=3, **TINY)
    scores = cross_val_score(estimator, corpus.texts, corpus.labels, cv=folds)
    assert scores.shape == (2,) and scores.min() >= 0.8


@pytest.mark.slow
def test_grid_search_fits_each_setting_and_refits_the_best(search, corpus):
    search, y = search
    assert search.best_params_["dropout"] in (0.0, 0.5)
    assert len(search.cv_results_["mean_test_score"]) == 2
    assert search.best_estimator_.classifier_.config.model_kwargs["dropout"] in (0.0, 0.5)
    assert search.score(corpus.texts, y) >= 0.8


def test_empty_cells_are_skipped_and_counted_and_a_class_left_without_text_is_named(
    corpus, monkeypatch, capsys
):
    # issue 64: a pandas column with empty cells failed where the CLI skips and counts them
    import hatt.classifier

    kept = {}

    def fit(self, texts, names, **kwargs):
        kept.update(texts=texts, names=names)
        raise StopIteration

    monkeypatch.setattr(hatt.classifier.TextClassifier, "fit", fit)
    X = np.array(["a good film", None, "a bad film", ""], dtype=object)
    with pytest.raises(StopIteration):
        HattClassifier("cnn", preset=None, **TINY).fit(X, ["pos", "neg", "neg", "pos"])
    assert kept == {"texts": ["a good film", "a bad film"], "names": ["pos", "neg"]}
    assert "Skipped 2 document(s) with an empty text: X[1], X[3]" in capsys.readouterr().err
    with pytest.raises(ValueError, match=r"every document of the class\(es\) \['neg'\] has an"):
        HattClassifier("cnn", preset=None, **TINY).fit(X, ["pos", "neg", "pos", "neg"])
