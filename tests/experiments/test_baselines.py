"""experiments/baselines.py on made-up corpora (no real IMDB needed)."""

import importlib
import inspect
import json
from pathlib import Path

import numpy as np
import pytest

from hatt.data import Split
from hatt.training import METRIC_KEYS, classification_metrics, layer_features, log_count_ratios

REQUIRED_KEYS = {*METRIC_KEYS, "hyperparameters"}

FILLER = "the a movie film plot story actor scene it was and of this to watch saw".split()


@pytest.fixture(scope="module")
def baselines():
    return importlib.import_module("experiments.baselines")


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
    ratios = log_count_ratios(counts, labels, alpha=1.0, dtype=np.float64)
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
        ratios = log_count_ratios(counts, train.labels, alpha=alpha, dtype=np.float64)
        np.testing.assert_array_equal(scaler.r_, ratios)
        channel = layer_features(counts.astype(np.float64), binary=True) @ np.diag(ratios)
        np.testing.assert_array_equal(scaler.transform(counts).toarray(), channel)


def test_log_count_ratio_rejects_non_positive_alpha(baselines):
    with pytest.raises(ValueError, match="alpha=0"):
        log_count_ratios(np.ones((2, 2)), np.array([0, 1]), alpha=0)


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

    def spy_evaluate(model, split, *args):
        seen["evaluate"].append(split.ids[0].split("/")[0])
        return evaluate(model, split, *args)

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


# === More than two classes (the IMDB ratings task) on a planted 3-class corpus ===

CUES = ("dreadful", "mediocre", "splendid")  # one cue word per class
STARS = ("1", "5", "9")  # numeric class names, so the figures include the MAE


def planted_three_class(baselines, n, seed, prefix):
    """``n`` reviews of filler words; class k (cycling 0, 1, 2) holds ``CUES[k]``."""
    rng = np.random.default_rng(seed)
    labels = np.arange(n, dtype=np.int64) % 3
    texts = []
    for label in labels:
        words = list(rng.choice(FILLER, size=6))
        words.insert(int(rng.integers(0, 6)), CUES[label])
        texts.append(" ".join(words).capitalize() + ".")
    ids = [f"{prefix}/{i}_{STARS[label]}" for i, label in enumerate(labels)]
    return Split(baselines.tokenize(texts, progress=False), labels, ids)


def three_class_splits(baselines):
    return {
        "train": planted_three_class(baselines, 90, seed=0, prefix="train"),
        "validation": planted_three_class(baselines, 30, seed=1, prefix="train"),
        "test": planted_three_class(baselines, 60, seed=2, prefix="test"),
    }


@pytest.mark.parametrize("name", ["tfidf_lr", "nb_lr"])
def test_multiclass_pipeline_learns_the_planted_words(baselines, name):
    splits = three_class_splits(baselines)
    best, table = baselines.select_hyperparameters(
        name, splits["train"], splits["validation"], progress=False, num_classes=3
    )
    grid = baselines.grid_of(name, 3)
    assert len(table) == int(np.prod([len(v) for v in grid.values()]))
    assert set(best) == set(grid)
    model, _ = baselines.train(name, splits["train"], best, num_classes=3)
    result = baselines.evaluate(model, splits["test"], STARS)
    assert result["accuracy"] == 1.0 and result["metrics"]["mae"] == 0.0
    assert result["probabilities"].shape == (60, 3)
    np.testing.assert_allclose(result["probabilities"].sum(axis=1), 1.0, rtol=1e-6)
    assert result["metrics"]["confusion_matrix"]["matrix"] == [[20, 0, 0], [0, 20, 0], [0, 0, 20]]
    # each class's cue word carries its class's largest weight
    vocabulary = model.named_steps["features"].vocabulary_
    coef = model.named_steps["classifier"].coef_
    assert coef.shape[0] == 3
    for k, cue in enumerate(CUES):
        assert coef[k].argmax() == vocabulary[cue]


def test_nb_one_vs_rest_is_one_nb_lr_per_class(baselines):
    """coef_[k] = w_k ⊙ r_k of an NB-LR of class k against the rest; the argmax predicts."""
    from sklearn.linear_model import LogisticRegression

    train = three_class_splits(baselines)["train"]
    counts = baselines.create_features("nb_lr").fit_transform(train.texts)
    model = baselines.NBOneVsRest(alpha=0.5, C=0.3, seed=0).fit(counts, train.labels)
    binary = (counts.toarray() > 0).astype(float)
    scores = []
    for k in range(3):
        ratios = log_count_ratios(counts, train.labels == k, alpha=0.5, dtype=np.float64)
        reference = LogisticRegression(C=0.3, solver="liblinear", random_state=0)
        reference.fit(binary * ratios, (train.labels == k).astype(int))
        np.testing.assert_allclose(model.coef_[k], reference.coef_[0] * ratios, atol=1e-10)
        scores.append(reference.decision_function(binary * ratios))
    scores = np.stack(scores, axis=1)
    np.testing.assert_allclose(model.decision_function(counts), scores, atol=1e-8)
    np.testing.assert_array_equal(model.predict(counts), scores.argmax(axis=1))
    sigmoids = 1 / (1 + np.exp(-scores))
    np.testing.assert_allclose(
        model.predict_proba(counts), sigmoids / sigmoids.sum(axis=1, keepdims=True)
    )


def test_multiclass_selection_reads_validation_only(baselines):
    """Each grid point's accuracy is a multinomial LR fit on train, scored on validation."""
    from sklearn.linear_model import LogisticRegression

    splits = three_class_splits(baselines)
    train, validation = splits["train"], splits["validation"]
    grid = {"C": [1e-4, 10.0]}
    best, table = baselines.select_hyperparameters(
        "tfidf_lr", train, validation, grid=grid, progress=False, num_classes=3
    )
    features = baselines.create_features("tfidf_lr", **baselines.SETTINGS["tfidf_lr"]["fixed"])
    x_train = features.fit_transform(train.texts)
    x_validation = features.transform(validation.texts)
    for row in table:
        reference = LogisticRegression(C=row["C"], solver="lbfgs", max_iter=1000, random_state=1337)
        reference.fit(x_train, train.labels)
        accuracy = np.mean(reference.predict(x_validation) == validation.labels)
        assert row["validation_accuracy"] == pytest.approx(accuracy)
    assert best == {"C": 10.0} and table[1]["validation_accuracy"] == 1.0
    # shifting the validation labels (k → k+1) makes the strong model wrong everywhere
    shifted = Split(validation.texts, (validation.labels + 1) % 3, validation.ids)
    _, shifted_table = baselines.select_hyperparameters(
        "tfidf_lr", train, shifted, grid=grid, progress=False, num_classes=3
    )
    assert shifted_table[1]["validation_accuracy"] == 0.0


def test_load_task_asks_load_corpus_for_the_ratings(baselines, monkeypatch):
    import hatt.data

    calls = []

    def fake_load_corpus(source, **kwargs):
        calls.append((source, kwargs))
        return type("Corpus", (), {"class_names": list(STARS)})()

    monkeypatch.setattr(hatt.data, "load_corpus", fake_load_corpus, raising=False)
    corpus, class_names = baselines.load_task("rating", "/data/aclImdb", seed=7, limit=50)
    assert class_names == STARS and corpus.class_names == list(STARS)
    assert calls == [
        (
            "/data/aclImdb",
            {
                "labels": "rating",
                "progress": True,
                "validation_size": 2500,
                "seed": 7,
                "limit": 50,
            },
        )
    ]
    with pytest.raises(ValueError, match="task='stars'"):
        baselines.load_task("stars")


def test_main_on_ratings_writes_the_multiclass_figures(baselines, tmp_path, monkeypatch):
    splits = three_class_splits(baselines)
    raw = type("Corpus", (), dict(splits))  # texts are already tokens: tokenizing keeps them
    monkeypatch.setattr(baselines, "load_task", lambda task, *a, **k: (raw, STARS))
    monkeypatch.setattr(baselines, "RESULTS", tmp_path / "results")
    monkeypatch.setattr(baselines, "RUNS", tmp_path / "runs")
    baselines.main(["--labels", "rating", "--only", "nb_lr", "--quiet"])
    # the ratings' results go to their own folder, with the binary files' names
    out = tmp_path / "results" / "rating" / "baseline_nb_lr.json"
    metrics = json.loads(out.read_text())
    assert REQUIRED_KEYS <= set(metrics)
    assert metrics["task"] == "rating" and metrics["class_names"] == list(STARS)
    assert metrics["test_accuracy"] == 1.0 and metrics["test_macro_f1"] == 1.0
    assert metrics["test_mae"] == 0.0
    assert "validation_mae" in metrics and metrics["validation_accuracy"] == 1.0
    assert metrics["test"]["per_class"]["5"]["support"] == 20
    assert metrics["parameters"] == 3 * metrics["hyperparameters"]["features"] + 3
    assert "one-vs-rest" in metrics["hyperparameters"]["solver"]
    assert "--labels rating" in metrics["command"]
    saved = np.load(metrics["test_probabilities"])
    assert saved["probabilities"].shape == (60, 3)
    assert Path(metrics["test_probabilities"]).parent == tmp_path / "runs" / "rating"
    np.testing.assert_array_equal(saved["probabilities"].argmax(axis=1), saved["labels"])
    # the figures are those of the saved probabilities (the median's MAE depends on how
    # sure the strongly regularized one-vs-rest model is, so it is checked this way)
    again = classification_metrics(saved["labels"], saved["probabilities"], STARS)
    assert metrics["test_mae_median"] == pytest.approx(again["mae_median"])
    assert metrics["test"]["confusion_matrix"] == again["confusion_matrix"]


# === Cross-validated tuning (a user's GridSearchCV on the training documents) ===


def noisy_split(n, seed, num_classes=2, noise=0.3):
    """``n`` planted reviews whose cue word is a random class's in ``noise`` of them, so the
    grid's points score differently across folds."""
    rng = np.random.default_rng(seed)
    labels = np.arange(n, dtype=np.int64) % num_classes
    cues = CUES if num_classes == 3 else ("dreadful", "splendid")
    texts = []
    for label in labels:
        cue = cues[rng.integers(num_classes)] if rng.random() < noise else cues[label]
        texts.append(" ".join([*rng.choice(FILLER, size=5), cue, *rng.choice(FILLER, size=2)]))
    return Split(texts, labels, [f"train/{i}" for i in range(n)])


CV_CASES = [
    ("tfidf_lr", 2, {"C": [1e-3, 0.3, 100.0]}),
    ("nb_lr", 2, {"C": [1e-3, 0.3, 100.0], "alpha": [0.1, 2.0]}),
    ("nb_lr", 3, {"C": [1e-3, 100.0], "alpha": [0.1, 2.0]}),
]


@pytest.mark.parametrize(("name", "num_classes", "grid"), CV_CASES)
def test_cross_validation_is_a_hand_loop_over_stratified_folds(baselines, name, num_classes, grid):
    """Every point's mean fold accuracy and the choice equal a loop over
    StratifiedKFold(5, shuffle=True, random_state=seed) that fits create_model's whole
    Pipeline on each fold's other documents."""
    from sklearn.model_selection import StratifiedKFold

    train = noisy_split(60, seed=4, num_classes=num_classes)
    best, table = baselines.cross_validate_hyperparameters(
        name, train, grid=grid, seed=11, num_classes=num_classes
    )
    texts, labels = np.asarray(train.texts, dtype=object), train.labels
    folds = list(StratifiedKFold(5, shuffle=True, random_state=11).split(texts, labels))
    alphas = grid.get("alpha", [None])
    expected = []
    for alpha in alphas:  # alpha outermost, then C: the most regularized first
        for C in grid["C"]:
            point = {"C": C} if alpha is None else {"alpha": alpha, "C": C}
            scores = []
            for fit, held in folds:
                model = baselines.create_model(name, point, 11, num_classes)
                model.fit(list(texts[fit]), labels[fit])
                scores.append(np.mean(model.predict(list(texts[held])) == labels[held]))
            expected.append((point, scores))
    hyperparameters = [{k: v for k, v in row.items() if k in ("C", "alpha")} for row in table]
    assert hyperparameters == [point for point, _ in expected]
    for row, (_, scores) in zip(table, expected, strict=True):
        np.testing.assert_allclose(row["fold_accuracies"], scores)
        assert row["cv_accuracy"] == pytest.approx(np.mean(scores))
    means = [np.mean(scores) for _, scores in expected]
    assert best == expected[int(np.argmax(means))][0]  # the first of the best
    assert len(set(np.round(means, 6))) > 1  # the data tell the points apart


@pytest.mark.parametrize(("name", "num_classes", "grid"), CV_CASES)
def test_cross_validation_chooses_what_grid_search_cv_chooses(baselines, name, num_classes, grid):
    """scikit-learn's GridSearchCV over the same Pipeline and folds: same scores, same point."""
    from sklearn.model_selection import GridSearchCV, StratifiedKFold

    train = noisy_split(60, seed=5, num_classes=num_classes)
    best, table = baselines.cross_validate_hyperparameters(
        name, train, grid=grid, seed=3, num_classes=num_classes
    )
    points = [{k: row[k] for k in grid} for row in table]
    search = GridSearchCV(
        baselines.create_model(name, points[0], 3, num_classes),
        [
            {baselines.pipeline_parameter(name, k, num_classes): [v] for k, v in p.items()}
            for p in points
        ],
        cv=StratifiedKFold(5, shuffle=True, random_state=3),
        scoring="accuracy",
    ).fit(train.texts, train.labels)
    np.testing.assert_allclose(
        [row["cv_accuracy"] for row in table], search.cv_results_["mean_test_score"]
    )
    assert best == points[search.best_index_]


def test_cross_validation_fits_the_features_inside_each_fold(baselines, monkeypatch):
    """A word found only in a fold's held-out documents has no column, hence no NB
    ratio, in that fold's features; every word of the fold's other documents has one."""
    train = noisy_split(50, seed=6)
    train = Split([f"{t} uid{i}" for i, t in enumerate(train.texts)], train.labels, train.ids)
    fitted, create = [], baselines.create_features

    def recorded(*args, **kwargs):
        features = create(*args, **kwargs)
        fitted.append(features)
        return features

    monkeypatch.setattr(baselines, "create_features", recorded)
    ratios, nb_fit = [], baselines.NBScaler.fit

    def recorded_fit(self, X, y):
        ratios.append(X.shape[1])
        return nb_fit(self, X, y)

    monkeypatch.setattr(baselines.NBScaler, "fit", recorded_fit)
    baselines.cross_validate_hyperparameters("nb_lr", train, grid={"C": [1.0], "alpha": [1.0]})
    vocabularies = [f.vocabulary_ for f in fitted if hasattr(f, "vocabulary_")]
    assert len(vocabularies) == 5 == len(ratios)
    held_out = [set() for _ in vocabularies]
    for k, vocabulary in enumerate(vocabularies):
        uids = {w for w in vocabulary if w.startswith("uid") and " " not in w}
        assert len(uids) == 40  # 4 folds of 10 documents; their own 10 are missing
        held_out[k] = {f"uid{i}" for i in range(50)} - uids
        assert ratios[k] == len(vocabulary)  # one NB ratio per column of the fold's features
    assert set().union(*held_out) == {f"uid{i}" for i in range(50)}  # each held out once
