"""experiments/baselines.py on made-up corpora (no real IMDB needed)."""

import inspect
import json

import numpy as np
import pytest

from hatt.data import Split
from hatt.training import METRIC_KEYS, ngram
from tests._scripts import load_experiment

REQUIRED_KEYS = {*METRIC_KEYS, "hyperparameters"}

FILLER = "the a movie film plot story actor scene it was and of this to watch saw".split()


@pytest.fixture(scope="module")
def baselines():
    return load_experiment("baselines")


def planted_reviews(n, seed):
    """``n`` reviews of filler words; positives hold "splendid", negatives "dreadful"."""
    rng = np.random.default_rng(seed)
    labels = np.arange(n, dtype=np.int64) % 2
    texts = []
    for label in labels:
        words = list(rng.choice(FILLER, size=6))
        words.insert(int(rng.integers(0, 6)), "splendid" if label else "dreadful")
        texts.append(" ".join(words).capitalize() + ".<br />It ends.")
    return texts, labels


def planted_split(baselines, n, seed, prefix):
    texts, labels = planted_reviews(n, seed)
    ids = [f"{prefix}/{i}" for i in range(n)]
    return Split(baselines.tokenize(texts, progress=False), labels, ids)


def test_log_count_ratio_matches_hand_computation(baselines):
    counts = np.array([[2, 0, 1], [1, 1, 0], [0, 3, 1], [0, 1, 0]])
    labels = np.array([1, 1, 0, 0])
    # binarized: positives [1,0,1] + [1,1,0]; negatives [0,1,1] + [0,1,0]
    # p = 1 + [2, 1, 1] = [3, 2, 2] (sum 7);  q = 1 + [0, 2, 1] = [1, 3, 2] (sum 6)
    expected = np.log(np.array([(3 / 7) / (1 / 6), (2 / 7) / (3 / 6), (2 / 7) / (2 / 6)]))
    ratios = ngram.log_count_ratios(counts, labels, alpha=1.0, dtype=np.float64)
    np.testing.assert_allclose(ratios, expected)

    scaled = baselines.NBScaler(alpha=1.0).fit(counts, labels).transform(counts).toarray()
    np.testing.assert_allclose(scaled, (counts > 0) * expected)


def test_nb_features_are_the_channel_features(baselines):
    """The baseline's NB features f̂ ⊙ r equal the n-gram channel's (binary, summed) ones."""
    train = planted_split(baselines, 60, seed=0, prefix="train")
    features = baselines.create_features("nb_lr", **baselines.SETTINGS["nb_lr"]["fixed"])
    counts = features.fit_transform(train.texts)
    for alpha in baselines.SETTINGS["nb_lr"]["grid"]["alpha"]:
        scaler = baselines.NBScaler(alpha=alpha).fit(counts, train.labels)
        ratios = ngram.log_count_ratios(counts, train.labels, alpha=alpha, dtype=np.float64)
        np.testing.assert_array_equal(scaler.r_, ratios)
        channel = ngram.layer_features(counts.astype(np.float64), binary=True) @ np.diag(ratios)
        np.testing.assert_array_equal(scaler.transform(counts).toarray(), channel)


def test_log_count_ratio_rejects_non_positive_alpha(baselines):
    with pytest.raises(ValueError, match="alpha=0"):
        ngram.log_count_ratios(np.ones((2, 2)), np.array([0, 1]), alpha=0)


def test_tokens_are_hatt_words(baselines):
    docs = baselines.tokenize(["Great film!<br />I don't regret it... 10/10", "", "!!!"])
    assert docs == ["great film i don't regret it 10 10", "", ""]


@pytest.mark.parametrize("name", ["tfidf_lr", "nb_lr"])
def test_pipeline_learns_a_planted_word(baselines, name):
    train = planted_split(baselines, 200, seed=0, prefix="train")
    validation = planted_split(baselines, 20, seed=1, prefix="train")
    test = planted_split(baselines, 100, seed=2, prefix="test")
    best, table = baselines.select_hyperparameters(name, train, validation, progress=False)
    assert set(best) <= {"C", "alpha"} and len(table) == int(
        np.prod([len(v) for v in baselines.SETTINGS[name]["grid"].values()])
    )
    model, seconds = baselines.train(name, train, best)
    assert seconds > 0
    result = baselines.evaluate(model, test)
    assert result["accuracy"] == 1.0
    assert result["probabilities"].shape == (100,)
    # the planted words carry the largest weights, with opposite signs
    vocabulary = model.named_steps["features"].vocabulary_
    coef = model.named_steps["classifier"].coef_.ravel()
    if name == "nb_lr":
        coef = coef * model.named_steps["nb"].r_
    assert coef[vocabulary["splendid"]] == coef.max() and coef[vocabulary["dreadful"]] == coef.min()


def test_hyperparameters_are_chosen_by_validation_accuracy(baselines):
    train = planted_split(baselines, 40, seed=0, prefix="train")
    validation = planted_split(baselines, 10, seed=1, prefix="train")
    grid = {"C": [1e-6, 10.0]}
    best, table = baselines.select_hyperparameters(
        "tfidf_lr", train, validation, grid=grid, progress=False
    )
    assert [row["C"] for row in table] == grid["C"]
    assert best == {"C": max(table, key=lambda r: r["validation_accuracy"])["C"]}
    # Inverting the validation labels must invert the preference: selection reads them.
    flipped = Split(validation.texts, 1 - validation.labels, validation.ids)
    _, flipped_table = baselines.select_hyperparameters(
        "tfidf_lr", train, flipped, grid=grid, progress=False
    )
    for row, flipped_row in zip(table, flipped_table, strict=True):
        assert row["validation_accuracy"] + flipped_row["validation_accuracy"] == pytest.approx(1)


def test_selection_never_receives_test_data(baselines, tmp_path, monkeypatch):
    """Only train/validation reach selection; the test split goes to evaluate() once."""
    assert list(inspect.signature(baselines.select_hyperparameters).parameters)[:3] == [
        "name",
        "train",
        "validation",
    ]
    seen = {"select": [], "evaluate": []}
    select, evaluate = baselines.select_hyperparameters, baselines.evaluate

    def spy_select(name, train, validation, **kwargs):
        seen["select"].extend(train.ids + validation.ids)
        return select(name, train, validation, **kwargs)

    def spy_evaluate(model, split):
        seen["evaluate"].append(split.ids[0].split("/")[0])
        return evaluate(model, split)

    monkeypatch.setattr(baselines, "select_hyperparameters", spy_select)
    monkeypatch.setattr(baselines, "evaluate", spy_evaluate)
    baselines.main(tiny_arguments(tmp_path))
    assert seen["select"] and all(i.startswith("train/") for i in seen["select"])
    # per baseline: validation (from train/) then test, each once
    assert seen["evaluate"] == ["train", "test", "train", "test"]


def write_tiny_imdb(root):
    """A planted-word corpus in the aclImdb layout: 30 train and 10 test reviews."""
    for split, n, seed in (("train", 30, 0), ("test", 10, 1)):
        texts, labels = planted_reviews(n, seed)
        for i, (text, label) in enumerate(zip(texts, labels, strict=True)):
            folder = root / "aclImdb" / split / ("pos" if label else "neg")
            folder.mkdir(parents=True, exist_ok=True)
            (folder / f"{i}_{9 if label else 2}.txt").write_text(text, encoding="utf-8")
    return root / "aclImdb"


def tiny_arguments(tmp_path):
    root = write_tiny_imdb(tmp_path / "corpus")
    return [
        "--data",
        str(root),
        "--validation-size",
        "10",
        "--results",
        str(tmp_path / "results"),
        "--runs",
        str(tmp_path / "runs"),
        "--quiet",
    ]


def test_main_writes_metrics_and_test_probabilities(baselines, tmp_path, monkeypatch):
    monkeypatch.setenv("HATT_CACHE", str(tmp_path / "cache"))
    arguments = tiny_arguments(tmp_path)
    baselines.main([*arguments, "--only", "nb_lr", "--seed", "7"])
    assert sorted(p.name for p in (tmp_path / "results").iterdir()) == ["baseline_nb_lr.json"]
    metrics = json.loads((tmp_path / "results" / "baseline_nb_lr.json").read_text())
    assert REQUIRED_KEYS <= set(metrics)
    assert metrics["model"] == "nb_lr" and metrics["seed"] == 7 and metrics["epochs"] is None
    assert metrics["test_accuracy"] == 1.0 and 0 <= metrics["validation_accuracy"] <= 1
    assert metrics["test_loss"] > 0 and metrics["examples_per_second"] > 0
    assert "--only nb_lr" in metrics["command"] and metrics["data"] == arguments[1]
    hyper = metrics["hyperparameters"]
    assert {"C", "alpha", "grid", "ngram_range", "min_df", "features"} <= set(hyper)
    assert hyper["C"] in hyper["grid"]["C"] and hyper["ngram_range"] == [1, 2]
    assert metrics["parameters"] == hyper["features"] + 1
    saved = np.load(metrics["test_probabilities"])
    assert saved["probabilities"].shape == saved["labels"].shape == (10,)
    assert all(i.startswith("test/") for i in saved["ids"])
    np.testing.assert_array_equal(saved["probabilities"] > 0.5, saved["labels"] == 1)
    validation = np.load(metrics["validation_probabilities"])
    assert validation["probabilities"].shape == (10,)
    assert all(i.startswith("train/") for i in validation["ids"])
