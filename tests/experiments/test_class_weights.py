"""experiments/class_weights.py: the unbalanced three-class corpus and its baseline cells."""

import json

import numpy as np
import pytest

from experiments import class_weights, harness
from tests._planted import planted_classes


def rating_pool(n, seed):
    """A harness.Pool of IMDB-like ratings 1..10 (names), planted words by rating."""
    rng = np.random.default_rng(seed)
    ratings = rng.integers(1, 11, n).astype(str)
    return harness.Pool(
        [f"review {r} stars {i}" for i, r in enumerate(ratings)], ratings, list(range(n))
    )


def test_the_three_classes_come_from_their_ratings_and_others_are_left_out():
    pool = class_weights.class_pool(rating_pool(300, 0))
    for text, label in zip(pool.texts, pool.labels, strict=True):
        rating = text.split()[1]
        assert rating in class_weights.CLASSES[label]
    assert set(pool.labels) == set(class_weights.CLASSES)
    assert len(pool.labels) < 300  # ratings 2, 3, 5, 6, 8, 9 left out


def test_a_draw_takes_each_class_its_size_and_is_seeded():
    pool = class_weights.class_pool(rating_pool(4000, 1))
    first = class_weights.draw(pool, class_weights.TRAIN_SIZES, 1337, 0)
    names, counts = np.unique(first.labels, return_counts=True)
    assert dict(zip(names, counts, strict=True)) == class_weights.TRAIN_SIZES
    assert class_weights.draw(pool, class_weights.TRAIN_SIZES, 1337, 0).ids == first.ids
    assert class_weights.draw(pool, class_weights.TRAIN_SIZES, 1337, 1).ids != first.ids
    with pytest.raises(ValueError, match="at least 200 reviews of class 'awful'"):
        class_weights.draw(pool.subset(np.arange(100)), class_weights.TRAIN_SIZES, 1337, 0)


def test_scores_name_the_smallest_class_and_its_recall():
    labels = np.array(["a"] * 6 + ["b"] * 3 + ["c"])
    predicted = np.array(["a"] * 6 + ["b", "b", "a", "a"])
    got = class_weights.scores(labels, predicted)
    assert got["smallest_class"] == "c" and got["smallest_class_recall"] == 0.0
    assert got["test_accuracy"] == pytest.approx(0.8)


@pytest.mark.parametrize("class_weight", [None, "balanced"])
def test_the_baseline_is_tuned_by_cross_validation_on_the_training_table(tmp_path, class_weight):
    texts, labels = planted_classes(90, 0)
    paths = {}
    for name, rows in (("train", slice(0, 60)), ("test", slice(60, 90))):
        paths[name] = tmp_path / f"{name}.jsonl"
        with paths[name].open("w", encoding="utf-8") as f:
            for text, label in zip(texts[rows], labels[rows], strict=True):
                f.write(json.dumps({"text": text, "label": label}) + "\n")
    cell = class_weights.baseline_cell(paths, class_weight)
    assert cell["C"] in (1.0, 10.0, 100.0)
    assert cell["test_accuracy"] > 0.5 and 0 <= cell["test_macro_f1"] <= 1


def test_the_baselines_sqrt_weights_are_hatts_rule():
    from hatt.training.settings.scale import class_weight_map

    labels = np.array(["awful"] * 200 + ["great"] * 30 + ["mixed"] * 120)
    mine = class_weights.sklearn_class_weight("sqrt", labels)
    theirs = class_weight_map("sqrt", [200, 30, 120])  # classes in sorted order
    assert mine == pytest.approx({"awful": theirs[0], "great": theirs[1], "mixed": theirs[2]})
    assert class_weights.sklearn_class_weight("none", labels) is None
    assert class_weights.sklearn_class_weight("balanced", labels) == "balanced"
