"""hatt.training.run.metrics against scikit-learn / NumPy references and hand-made cases."""

import json
import warnings

import numpy as np
import pytest
from sklearn import metrics as skm

from hatt.training.run.metrics import (
    classification_metrics,
    dense_confusion,
    flat_metrics,
    format_metrics,
    median_prediction,
)

STARS = ["1", "2", "3", "4", "7", "8", "9", "10"]


def random_case(seed, n=200, classes=8):
    rng = np.random.default_rng(seed)
    labels = rng.integers(0, classes, n)
    logits = rng.normal(size=(n, classes)) + 2.0 * np.eye(classes)[labels]
    probabilities = np.exp(logits) / np.exp(logits).sum(axis=1, keepdims=True)
    return labels, probabilities


def brute_force_median(probabilities, values):
    """The value minimising the expected absolute error (the smallest on ties)."""
    expected = np.abs(values[None, :] - values[:, None]) @ probabilities.T  # [candidate, N]
    best = []
    for column in expected.T:
        ties = np.flatnonzero(column <= column.min() + 1e-12)
        best.append(values[ties].min())
    return np.array(best)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_matches_sklearn_on_random_predictions(seed):
    labels, probabilities = random_case(seed)
    metrics = classification_metrics(labels, probabilities, STARS)
    predicted = probabilities.argmax(axis=1)
    everything = list(range(len(STARS)))
    assert metrics["examples"] == len(labels)
    assert metrics["accuracy"] == pytest.approx(skm.accuracy_score(labels, predicted))
    assert metrics["macro_f1"] == pytest.approx(
        skm.f1_score(labels, predicted, average="macro", labels=everything, zero_division=0)
    )
    precision, recall, f1, support = skm.precision_recall_fscore_support(
        labels, predicted, labels=everything, zero_division=0
    )
    for k, name in enumerate(STARS):
        row = metrics["per_class"][name]
        assert row["precision"] == pytest.approx(precision[k])
        assert row["recall"] == pytest.approx(recall[k])
        assert row["f1"] == pytest.approx(f1[k])
        assert row["support"] == support[k]
    confusion = metrics["confusion_matrix"]
    assert confusion["classes"] == STARS and confusion["rows"] == "true"
    np.testing.assert_array_equal(
        confusion["matrix"], skm.confusion_matrix(labels, predicted, labels=everything)
    )
    stars = np.array([float(s) for s in STARS])
    assert metrics["mae"] == pytest.approx(skm.mean_absolute_error(stars[labels], stars[predicted]))
    reference = brute_force_median(probabilities, stars)
    assert metrics["mae_median"] == pytest.approx(np.mean(np.abs(reference - stars[labels])))
    json.dumps(metrics)  # JSON-ready: no NumPy types


def test_hand_made_star_case():
    # true 4, argmax 7 (3 stars off); the median of [.4 on 1, .6 on 7] is 7 as well
    # true 1, argmax 10 (9 stars off), but the median of [.45 on 1, .1 on 2, .45 on 10] is 2
    # true 9, argmax 9
    probabilities = np.zeros((3, 8))
    probabilities[0, [0, 4]] = [0.4, 0.6]
    probabilities[1, [0, 1, 7]] = [0.44, 0.1, 0.46]
    probabilities[2, 6] = 1.0
    metrics = classification_metrics([3, 0, 6], probabilities, STARS)
    assert metrics["accuracy"] == pytest.approx(1 / 3)
    assert metrics["mae"] == pytest.approx((3 + 9 + 0) / 3)
    assert metrics["mae_median"] == pytest.approx((3 + 1 + 0) / 3)


def test_median_uses_numeric_order_whatever_the_class_order():
    # String-sorted names ("1" < "10" < "2"): the median must still be taken over 1 < 2 < 10.
    names = ["1", "10", "2"]
    probabilities = np.array([[0.4, 0.35, 0.25]])  # on 1: .4, on 2: .25 (cum .65), on 10: .35
    np.testing.assert_array_equal(median_prediction(probabilities, [1, 10, 2]), [2.0])
    metrics = classification_metrics([1], probabilities, names)  # true 10
    assert metrics["mae"] == pytest.approx(9.0)  # argmax is "1"
    assert metrics["mae_median"] == pytest.approx(8.0)


def test_median_on_an_exact_half_takes_the_lower_value():
    np.testing.assert_array_equal(median_prediction([[0.5, 0.5]], [3.0, 8.0]), [3.0])


def test_binary_vector_equals_two_columns():
    rng = np.random.default_rng(0)
    labels = rng.integers(0, 2, 50)
    p = rng.uniform(size=50)
    p[:3] = 0.5  # ties go to class 0 both ways
    vector = classification_metrics(labels, p, ["neg", "pos"])
    columns = classification_metrics(labels, np.stack([1 - p, p], axis=1), ["neg", "pos"])
    assert vector == columns
    assert vector["accuracy"] == pytest.approx(np.mean((p > 0.5) == labels))
    assert "mae" not in vector  # class names are not numbers


def test_numeric_binary_names_give_the_error_rate_as_mae():
    metrics = classification_metrics([0, 1, 1, 0], [0.1, 0.9, 0.2, 0.6], ["0", "1"])
    assert metrics["mae"] == pytest.approx(0.5) and metrics["accuracy"] == pytest.approx(0.5)


def test_a_class_never_predicted_has_precision_zero_without_warnings():
    labels = [0, 1, 2, 2]
    probabilities = np.array([[0.9, 0.05, 0.05], [0.8, 0.1, 0.1], [0.1, 0.1, 0.8], [0.2, 0, 0.8]])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        metrics = classification_metrics(labels, probabilities, ["a", "b", "c"])
    assert metrics["per_class"]["b"] == {"precision": 0.0, "recall": 0.0, "f1": 0.0, "support": 1}
    assert metrics["per_class"]["a"]["precision"] == pytest.approx(0.5)
    # a class absent from the labels: recall 0 and F1 0, still counted in the macro mean
    absent = classification_metrics([0, 0], [[1, 0, 0], [0, 0, 1]], ["a", "b", "c"])
    assert absent["per_class"]["b"] == {"precision": 0.0, "recall": 0.0, "f1": 0.0, "support": 0}
    assert absent["macro_f1"] == pytest.approx((2 / 3) / 3)
    assert all(np.isfinite(v) for row in absent["per_class"].values() for v in row.values())


@pytest.mark.parametrize(
    ("labels", "probabilities", "names", "match"),
    [
        ([], np.zeros((0, 3)), ["a", "b", "c"], "at least one example"),
        ([], [], ["a", "b"], "at least one example"),
        ([0], [[1.0]], ["a"], "class_names"),
        ([0], [[0.5, 0.5]], ["a", "a"], "class_names"),
        ([0], [[0.5, 0.5]], "ab", "class_names"),
        ([0], [0.5], ["a", "b", "c"], r"probabilities.*shape \(1,\)"),
        ([0], [[0.5, 0.5]], ["a", "b", "c"], "probabilities to have 3 columns"),
        ([0], [[[0.5, 0.5]]], ["a", "b"], "probabilities"),
        ([0, 1], [[0.5, 0.5]], ["a", "b"], r"labels to be 1 class indices.*shape \(2,\)"),
        ([2], [[0.5, 0.5]], ["a", "b"], r"labels.*\[0, 1\].*\[2\]"),
        ([-1], [[0.5, 0.5]], ["a", "b"], r"labels.*\[-1\]"),
        ([0.5], [[0.5, 0.5]], ["a", "b"], r"labels.*\[0.5\]"),
        (["a"], [[0.5, 0.5]], ["a", "b"], "labels"),
        ([0], [[np.nan, 0.5]], ["a", "b"], r"probabilities to lie in \[0, 1\].*nan"),
        ([0], [[1.5, -0.5]], ["a", "b"], r"probabilities to lie in \[0, 1\]"),
        ([0], [[0.5, 0.2]], ["a", "b"], "row 0 sums to 0.7"),
        ([0], [["x", "y"]], ["a", "b"], "probabilities"),
    ],
)
def test_bad_input_names_the_argument(labels, probabilities, names, match):
    with pytest.raises(ValueError, match=match):
        classification_metrics(labels, probabilities, names)


def test_format_metrics_is_a_markdown_table():
    probabilities = np.array([[0.7, 0.2, 0.1], [0.1, 0.8, 0.1], [0.6, 0.3, 0.1]])
    metrics = classification_metrics([0, 1, 2], probabilities, ["1", "a|b", "3"])
    text = format_metrics(json.loads(json.dumps(metrics)))  # as read back from metrics.json
    lines = text.splitlines()
    assert lines[0] == "accuracy 66.67 % · macro-F1 0.5556 · 3 examples"  # "a|b": no MAE
    assert "| 1 | 0.5000 | 1.0000 | 0.6667 | 1 |" in lines
    assert "| a\\|b | 1.0000 | 1.0000 | 1.0000 | 1 |" in lines  # the name's bar is escaped
    assert "| 3 | 0.0000 | 0.0000 | 0.0000 | 1 |" in lines
    assert "| true \\ predicted | 1 | a\\|b | 3 |" in lines
    assert "| 3 | 1 | 0 | 0 |" in lines  # the "3" review was predicted "1"
    # every table row has as many cells as its header
    for row in (line for line in lines if line.startswith("|")):
        cells = row.replace("\\|", "").count("|")
        assert cells in (6, 5)


def test_format_metrics_states_both_errors_for_numeric_classes():
    # the "9" review: argmax "1" (8 stars off), median "2" (7 off); the "1" review is right
    metrics = classification_metrics([2, 0], [[0.4, 0.2, 0.4], [1, 0, 0]], ["1", "2", "9"])
    assert format_metrics(metrics).splitlines()[0] == (
        "accuracy 50.00 % · macro-F1 0.2222 · MAE 4.000 (median prediction 3.500) · 2 examples"
    )


def test_flat_metrics_names_the_split():
    metrics = classification_metrics([0, 1], [[0.9, 0.1], [0.3, 0.7]], ["1", "10"])
    assert flat_metrics(metrics, "test") == {
        "test_accuracy": 1.0,
        "test_macro_f1": 1.0,
        "test_mae": 0.0,
        "test_mae_median": 0.0,
    }
    binary = flat_metrics(classification_metrics([0, 1], [0.9, 0.7], ["neg", "pos"]), "valid")
    assert binary == {"valid_accuracy": 0.5, "valid_macro_f1": pytest.approx(1 / 3)}


def test_many_classes_give_a_small_sparse_confusion_that_reads_back_dense():
    rng = np.random.default_rng(0)
    n, classes = 1000, 10_000
    names = [f"class {k}" for k in range(classes)]
    labels = rng.integers(0, classes, n)
    predicted = np.where(rng.random(n) < 0.7, labels, rng.integers(0, classes, n))
    probabilities = np.full((n, classes), 0.5 / (classes - 1), np.float32)
    probabilities[np.arange(n), predicted] = 0.5
    metrics = classification_metrics(labels, probabilities, names)
    text = json.dumps(metrics, indent=2)
    assert len(text) < 2_000_000 and "matrix" not in metrics["confusion_matrix"]
    dense = dense_confusion(json.loads(text)["confusion_matrix"])
    np.testing.assert_array_equal(
        dense, skm.confusion_matrix(labels, predicted, labels=np.arange(classes))
    )
    assert metrics["accuracy"] == pytest.approx(np.mean(labels == predicted))
    top = metrics["top_confusions"]
    assert top and all(c["true"] != c["predicted"] for c in top)
    assert top[0]["count"] == max(
        dense[i, j] for i, j in zip(*np.nonzero(dense), strict=True) if i != j
    )
    rendered = format_metrics(metrics)
    assert "Most frequent confusions" in rendered and len(rendered) < 200_000
