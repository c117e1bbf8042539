"""Scikit-learn baselines on IMDB: TF-IDF + logistic regression and NB-weighted LR.

Two bag-of-n-grams baselines for the neural models, on the same splits
(``hatt.data.load_imdb`` defaults: 22,500 train / 2,500 validation carved from
``train/`` with seed 1337 / the full 25,000-review ``test/``), for two tasks
(``--labels``): ``binary`` (positive / negative, the default) and ``rating``
(IMDB's 8 star ratings 1-4 and 7-10, from the file names, through
``hatt.data.load_corpus(..., labels="rating")``).

- ``tfidf_lr``: TF-IDF over word uni- and bigrams (sublinear tf, l2 rows) →
  ``LogisticRegression`` (binary: liblinear; more classes: a multinomial
  (softmax) regression, lbfgs).
- ``nb_lr``: NB-weighted logistic regression (Wang & Manning 2012, NBSVM-style):
  binarized uni+bigram counts ``f̂``, the log-count ratio
  ``r = log((p / |p|₁) / (q / |q|₁))`` with ``p = α + Σ_{y=1} f̂`` and
  ``q = α + Σ_{y=0} f̂`` from the training split, features ``f̂ ⊙ r`` →
  ``LogisticRegression``. The paper's weight interpolation β is not used
  (β = 1). More classes: one-vs-rest (:class:`NBOneVsRest`): per class ``k``
  the ratios ``r_k`` of class ``k`` against the rest and an L2 logistic
  regression on ``f̂ ⊙ r_k``; the prediction is the class of the highest
  score, the probabilities are the per-class sigmoids normalised to sum to 1.

Tokens: reviews go through ``hatt.data.tokenize`` (the TensorFlow string ops the
neural models use: HTML breaks removed, lower-cased, punctuation dropped), are
flattened over sentences and joined with spaces; scikit-learn then splits on
whitespace, so the baselines see exactly the neural models' words (bigrams
span sentence ends, as in the flat models' sequences). Measured on 5,000
training reviews (2 shared cores): hatt tokenize + join 2.2 s, then a (1, 2)-gram
``CountVectorizer`` fit 2.9 s; scikit-learn's own analyzer on the raw text took
5.1 s for the same fit, so reusing hatt's tokenizer costs nothing extra.

Protocol: ``C`` (and, for ``nb_lr``, the NB smoothing ``α``) is chosen from a
small grid by accuracy on the validation split only (ties → the first, i.e.
smallest, value); the model is then refit, timed, on the training split alone
(not train + validation: the neural models get the same 22,500 reviews) and
evaluated once on the test split. The results file records it as
``"tuning": "validation"``.

The other tuning, :func:`cross_validate_hyperparameters` (``"cv5"``: a user's
``GridSearchCV`` over a Pipeline, stratified 5-fold on every training
document, the features fit inside each fold), is what the few-label cells of
``experiments/harness.py`` use. It is not this script's: one refit on the full
split takes 17 s (NB-LR) and 70 s (TF-IDF + LR) on 2 shared cores
(``train_seconds`` of ``results/baseline_*.json``), so 5 folds over the grids
(28 and 8 points) would take about 30-40 minutes a baseline. Vocabulary, IDF and ``r`` come from the
training split only. Each split's figures are
:func:`hatt.training.classification_metrics` (accuracy, macro-F1,
per-class figures, confusion matrix; for the ratings the MAE in stars).

Run:  python -m experiments.baselines [--labels binary|rating] [--data PATH]
      [--seed 1337] [--limit N] [--only tfidf_lr|nb_lr]
Writes experiments/results/baseline_<name>.json (``rating``:
experiments/results/rating/baseline_<name>.json) and the validation and test
probabilities (with labels and review ids, for ensembles, as ``run_all.py``
reads them) to runs/baselines/[rating/]baseline_<name>_<split>_probabilities.npz
(git-ignored).
"""

import argparse
import itertools
import json
import os
import shlex
import sys
import time
from pathlib import Path

import keras
import numpy as np
import scipy.sparse as sp
import tensorflow as tf
from sklearn.base import BaseEstimator, ClassifierMixin, TransformerMixin
from sklearn.feature_extraction.text import CountVectorizer, TfidfVectorizer
from sklearn.linear_model import LogisticRegression
from sklearn.metrics import log_loss
from sklearn.model_selection import StratifiedKFold
from sklearn.pipeline import Pipeline

import hatt
from hatt.data import Split, load_imdb
from hatt.data.imdb import ENV_VAR
from hatt.training import (
    classification_metrics,
    fit_logistic_grid,
    flat_metrics,
    format_metrics,
    log_count_ratios,
)

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "experiments" / "results"
RUNS = ROOT / "runs" / "baselines"
BASELINES = ("tfidf_lr", "nb_lr")
# The tasks on IMDB: the default binary one, and the 8 star ratings (issue 12).
TASKS = ("binary", "rating")
BINARY_CLASSES = ("neg", "pos")  # load_imdb's labels 0 and 1

NGRAM_RANGE = (1, 2)
# Every baseline's settings: fixed ones, and the grids searched on validation.
SETTINGS = {
    "tfidf_lr": {
        "fixed": {"min_df": 2, "sublinear_tf": True},
        "grid": {"C": [1.0, 2.0, 4.0, 8.0, 16.0, 32.0, 64.0, 128.0]},
    },
    "nb_lr": {
        "fixed": {"min_df": 1},
        "grid": {"C": [0.01, 0.03, 0.1, 0.3, 1.0, 3.0, 10.0], "alpha": [0.25, 0.5, 1.0, 2.0]},
    },
}
# More than two classes: the grids searched instead of "grid" above. Both want stronger
# regularization than on the binary task, so the grids reach lower. On the IMDB ratings'
# validation split: the multinomial regression fell from C = 1 to 8 (42.28, 42.16, 41.84,
# 40.92 %); NB-LR one-vs-rest peaked at the binary grid's lowest C = 0.01 with alpha = 0.5
# (43.16 %, against 42.80 % at best with alpha = 0.25, and 41.40 % at C = 10).
MULTICLASS_GRIDS = {
    "tfidf_lr": {"C": [0.125, 0.25, 0.5, 1.0, 2.0, 4.0]},
    "nb_lr": {"C": [0.001, 0.003, 0.01, 0.03, 0.1, 0.3], "alpha": [0.5, 1.0, 2.0]},
}
MULTINOMIAL_ITERATIONS = 1000  # lbfgs' limit for the multinomial regression
# How a baseline's hyper-parameters are chosen: stratified 5-fold cross-validation on
# every training document (cross_validate_hyperparameters), or accuracy on a held-out
# validation split (select_hyperparameters).
FOLDS = 5
TUNINGS = (f"cv{FOLDS}", "validation")


def grid_of(name, num_classes):
    """The grid searched on validation for baseline ``name`` and ``num_classes`` classes."""
    return SETTINGS[name]["grid"] if num_classes == 2 else MULTICLASS_GRIDS[name]


# === Arguments ===


def parse_args(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", default=None, help="aclImdb folder or .tar.gz (else $HATT_IMDB)")
    parser.add_argument(
        "--labels",
        choices=TASKS,
        default="binary",
        help="the task: positive/negative (default) or the 8 star ratings",
    )
    parser.add_argument("--seed", type=int, default=1337, help="validation split and solver seed")
    parser.add_argument("--limit", type=int, default=None, help="keep at most N reviews a split")
    parser.add_argument("--only", choices=BASELINES, default=None, help="run one baseline")
    parser.add_argument("--validation-size", type=int, default=2500)
    parser.add_argument(
        "--results",
        default=None,
        help="folder for baseline_<name>.json (default: experiments/results[/TASK])",
    )
    parser.add_argument(
        "--runs", default=None, help="folder for the probabilities (default: runs/baselines[/TASK])"
    )
    parser.add_argument("--quiet", action="store_true", help="no progress output")
    args = parser.parse_args(argv)
    args.results = args.results or str(task_folder(RESULTS, args.labels))
    args.runs = args.runs or str(task_folder(RUNS, args.labels))
    return args


def task_folder(root, task):
    """Where a task's files go: ``root`` for the binary task, ``root/TASK`` for the others."""
    return Path(root) if task == "binary" else Path(root) / task


# === Dataset ===


def tokenize(texts, batch_size=2000, progress=True):
    """Raw reviews → one space-joined string of hatt tokens per review."""
    bar = keras.utils.Progbar(len(texts), unit_name="review") if progress else None
    out = []
    for start in range(0, len(texts), batch_size):
        words = hatt.data.tokenize(texts[start : start + batch_size]).merge_dims(1, 2)
        joined = tf.strings.reduce_join(words, axis=1, separator=" ").numpy()
        out.extend(doc.decode("utf-8") for doc in joined)
        if bar is not None:
            bar.update(len(out))
    return out


def load_task(task, data=None, *, seed=1337, limit=None, validation_size=2500, progress=True):
    """The raw splits of ``task`` (the neural runs' splits) and its class names.

    Returns:
        ``(corpus, class_names)``: an object with ``.train``, ``.validation``
        and ``.test`` :class:`hatt.data.Split` (labels: indices into
        ``class_names``), and the class names.
    """
    if task not in TASKS:
        raise ValueError(f"Expected task to be one of {TASKS}. Received: task={task!r}")
    options = {"validation_size": validation_size, "seed": seed, "limit": limit}
    if task == "binary":
        return load_imdb(data, progress=progress, **options), BINARY_CLASSES
    from hatt.data import load_corpus  # the sources of issue 12 (IMDB ratings among them)

    corpus = load_corpus(data, labels=task, progress=progress, **options)
    return corpus, tuple(corpus.class_names)


def create_dataset(
    data=None, *, task="binary", seed=1337, limit=None, validation_size=2500, progress=True
):
    """Load the splits of ``task`` (:func:`load_task`) and tokenize every split.

    Returns:
        ``(splits, class_names)``: dict ``{"train", "validation", "test"}`` of
        :class:`hatt.data.Split` whose ``texts`` are space-joined hatt tokens,
        and the class names.
    """
    corpus, class_names = load_task(
        task, data, seed=seed, limit=limit, validation_size=validation_size, progress=progress
    )
    splits = {}
    for name in ("train", "validation", "test"):
        split = getattr(corpus, name)
        if progress:
            print(f"Tokenizing {name} ({len(split)} reviews)")
        splits[name] = Split(tokenize(split.texts, progress=progress), split.labels, split.ids)
    return splits, class_names


# === Model ===


class NBScaler(TransformerMixin, BaseEstimator):
    """Binarize counts and scale each feature by its NB log-count ratio ``r``.

    ``r`` is the n-gram channel's own (:func:`hatt.training.log_count_ratios`),
    in float64.
    """

    def __init__(self, alpha=1.0):
        self.alpha = alpha

    def fit(self, X, y):
        self.r_ = log_count_ratios(X, y, alpha=self.alpha, dtype=np.float64)
        return self

    def transform(self, X):
        return binarize(X).multiply(self.r_).tocsr()


def binarize(X):
    """Counts → float64 CSR of 0/1 (``f̂``)."""
    binary = sp.csr_matrix(X, dtype=np.float64, copy=True)
    binary.data = (binary.data > 0).astype(np.float64)
    return binary


class NBOneVsRest(ClassifierMixin, BaseEstimator):
    """NB-LR for more than two classes, one-vs-rest.

    Per class ``k``: the log-count ratios ``r_k`` of class ``k`` against the
    rest (:class:`NBScaler` on ``y == k``) and a binary L2 logistic regression
    on ``f̂ ⊙ r_k``. Its score on a review is ``f̂ · (w_k ⊙ r_k) + b_k``
    (``coef_[k]`` holds ``w_k ⊙ r_k``); the prediction is the class of the
    highest score, and ``predict_proba`` normalises the per-class sigmoids
    to sum to 1 (their argmax is the prediction).

    Args:
        alpha: NB smoothing of every ``r_k``.
        C: inverse L2 strength of every regression.
        seed: the solver's random state.
    """

    def __init__(self, alpha=1.0, C=1.0, seed=1337):
        self.alpha = alpha
        self.C = C
        self.seed = seed

    def fit(self, X, y):
        y = np.asarray(y)
        self.classes_ = np.unique(y)
        coefs, intercepts = [], []
        for label in self.classes_:
            scaler = NBScaler(alpha=self.alpha).fit(X, y == label)
            regression = create_classifier(self.C, self.seed)
            regression.fit(scaler.transform(X), (y == label).astype(np.int64))
            coefs.append(regression.coef_.ravel() * scaler.r_)
            intercepts.append(regression.intercept_[0])
        self.coef_ = np.stack(coefs)
        self.intercept_ = np.asarray(intercepts)
        return self

    def decision_function(self, X):
        return np.asarray(binarize(X) @ self.coef_.T) + self.intercept_

    def predict_proba(self, X):
        sigmoids = 1.0 / (1.0 + np.exp(-self.decision_function(X)))
        return sigmoids / sigmoids.sum(axis=1, keepdims=True)

    def predict(self, X):
        return self.classes_[np.argmax(self.decision_function(X), axis=1)]


def create_features(name, **fixed):
    """The feature extractor of baseline ``name`` (fitted on train only)."""
    common = {
        "ngram_range": NGRAM_RANGE,
        "tokenizer": str.split,  # texts are hatt tokens joined with spaces
        "token_pattern": None,
        "lowercase": False,  # hatt already lower-cased
        "min_df": fixed.get("min_df", 1),
    }
    if name == "tfidf_lr":
        return TfidfVectorizer(sublinear_tf=fixed.get("sublinear_tf", True), **common)
    if name == "nb_lr":
        return CountVectorizer(binary=True, **common)
    raise ValueError(f"Expected name to be one of {BASELINES}. Received: name={name!r}")


def create_classifier(C, seed):
    return LogisticRegression(C=C, solver="liblinear", max_iter=1000, random_state=seed)


def create_multiclass_classifier(name, hyperparameters, seed):
    """The classifier of baseline ``name`` for more than two classes."""
    if name == "nb_lr":
        return NBOneVsRest(alpha=hyperparameters["alpha"], C=hyperparameters["C"], seed=seed)
    # lbfgs fits the multinomial (softmax) regression when there are more than two classes.
    return LogisticRegression(
        C=hyperparameters["C"], solver="lbfgs", max_iter=MULTINOMIAL_ITERATIONS, random_state=seed
    )


def create_model(name, hyperparameters, seed=1337, num_classes=2):
    """A scikit-learn Pipeline for baseline ``name`` with the chosen hyper-parameters."""
    fixed = SETTINGS[name]["fixed"] if name in SETTINGS else {}
    steps = [("features", create_features(name, **fixed))]
    if num_classes > 2:
        steps.append(("classifier", create_multiclass_classifier(name, hyperparameters, seed)))
        return Pipeline(steps)
    if name == "nb_lr":
        steps.append(("nb", NBScaler(alpha=hyperparameters["alpha"])))
    steps.append(("classifier", create_classifier(hyperparameters["C"], seed)))
    return Pipeline(steps)


# === Hyper-parameters (validation split only) ===


def select_hyperparameters(
    name, train, validation, *, grid=None, seed=1337, progress=True, num_classes=2
):
    """Choose hyper-parameters by accuracy on ``validation``; never sees test data.

    Features are fitted on ``train`` once; each grid point fits the classifier
    on ``train`` and scores it on ``validation``. Ties go to the first grid
    point (smaller ``C``, smaller ``alpha``). More than two classes: the
    accuracy of the argmax (:func:`select_multiclass`).

    Returns:
        ``(best, table)``: the chosen hyper-parameters, and one row per grid
        point with its validation accuracy.
    """
    grid = grid or grid_of(name, num_classes)
    features = create_features(name, **SETTINGS[name]["fixed"])
    x_train = features.fit_transform(train.texts)
    x_validation = features.transform(validation.texts)
    if num_classes > 2:
        return select_multiclass(
            name, (x_train, train.labels), (x_validation, validation.labels), grid, seed, progress
        )
    alphas = grid.get("alpha", [None])
    table = []
    for alpha in alphas:
        xt, xv = x_train, x_validation
        if alpha is not None:
            scaler = NBScaler(alpha=alpha).fit(x_train, train.labels)
            xt, xv = scaler.transform(x_train), scaler.transform(x_validation)
        point = {} if alpha is None else {"alpha": alpha}

        def report(entry, point=point):
            if progress:
                _report(name, {"C": entry["C"], **point}, entry)

        _, _, selection = fit_logistic_grid(
            xt, train.labels, grid["C"], (xv, validation.labels), seed=seed, on_fit=report
        )
        for entry in selection:
            table.append(
                {"C": entry["C"], **point, "validation_accuracy": entry["validation_accuracy"]}
            )
    return _best(table), table


def select_multiclass(name, train, validation, grid, seed=1337, progress=True):
    """Every grid point's classifier on the featurized ``train``, scored on ``validation``.

    Args:
        name: the baseline.
        train, validation: ``(features, labels)``.
        grid: ``{"C": [...]}`` (and ``"alpha"`` for ``nb_lr``); points are
            tried in the order of ``itertools.product`` (alpha outermost).

    Returns:
        ``(best, table)`` as :func:`select_hyperparameters`.
    """
    keys = sorted(grid, key=lambda k: k != "alpha")  # alpha first, then C
    table = []
    for values in itertools.product(*(grid[k] for k in keys)):
        point = {"C": None, **dict(zip(keys, values, strict=True))}
        start = time.perf_counter()
        classifier = create_multiclass_classifier(name, point, seed).fit(*train)
        entry = {
            **point,
            "validation_accuracy": float(
                np.mean(classifier.predict(validation[0]) == validation[1])
            ),
        }
        if progress:
            _report(name, point, {**entry, "seconds": time.perf_counter() - start})
        table.append(entry)
    return _best(table), table


def _best(table, score="validation_accuracy"):
    best = max(table, key=lambda row: row[score])  # first maximum
    return {k: v for k, v in best.items() if k in ("C", "alpha")}


# === Hyper-parameters (cross-validation on the training documents) ===


def cross_validate_hyperparameters(
    name, train, *, grid=None, folds=FOLDS, seed=1337, num_classes=2
):
    """Choose hyper-parameters by mean accuracy over stratified folds of ``train``.

    What a user's ``GridSearchCV`` over the Pipeline of :func:`create_model`
    chooses (the tests check that it is the same): for every grid point the
    whole Pipeline (vocabulary, IDF or NB ratios included) is fit on each
    fold's other documents and scored on the fold; folds from
    ``StratifiedKFold(folds, shuffle=True, random_state=seed)``. Grid points go
    in :func:`grid_points` order and ties go to the first (the most
    regularized). The features step depends on no grid point, so it is fit
    once a fold (:func:`fold_accuracies`) rather than once a point and fold.

    Returns:
        ``(best, table)``: the chosen hyper-parameters, and one row per grid
        point with its ``cv_accuracy`` (the mean) and ``fold_accuracies``.
    """
    points = grid_points(grid or grid_of(name, num_classes))
    texts, labels = np.asarray(train.texts, dtype=object), np.asarray(train.labels)
    splitter = StratifiedKFold(folds, shuffle=True, random_state=seed)
    scores = np.stack(
        [
            fold_accuracies(
                name,
                points,
                (texts[fit], labels[fit]),
                (texts[held], labels[held]),
                seed,
                num_classes,
            )
            for fit, held in splitter.split(texts, labels)
        ],
        axis=1,
    )
    table = [
        {**point, "cv_accuracy": float(np.mean(row)), "fold_accuracies": row.tolist()}
        for point, row in zip(points, scores, strict=True)
    ]
    return _best(table, "cv_accuracy"), table


def fold_accuracies(name, points, fit, held, seed=1337, num_classes=2):
    """Each grid point's accuracy on one fold's ``held`` documents, its Pipeline fit on ``fit``.

    ``fit``, ``held``: ``(texts, labels)``. The features step, the same for
    every point, is fit on ``fit`` alone, once; each point's remaining steps
    (NB ratios, classifier) are fit on its output.
    """
    features = create_model(name, points[0], seed, num_classes).named_steps["features"]
    x_fit, x_held = features.fit_transform(fit[0]), features.transform(held[0])
    accuracies = []
    for point in points:
        rest = Pipeline(create_model(name, point, seed, num_classes).steps[1:])
        rest.fit(x_fit, fit[1])
        accuracies.append(float(np.mean(rest.predict(x_held) == held[1])))
    return np.asarray(accuracies)


def grid_points(grid):
    """Every point of ``grid`` as a dict: ``alpha`` outermost, then ``C``, each in grid order."""
    keys = sorted(grid, key=lambda k: k != "alpha")
    values = itertools.product(*(grid[k] for k in keys))
    return [dict(zip(keys, point, strict=True)) for point in values]


def pipeline_parameter(name, key, num_classes):
    """The parameter of :func:`create_model`'s Pipeline that holds hyper-parameter ``key``."""
    step = "nb" if key == "alpha" and name == "nb_lr" and num_classes == 2 else "classifier"
    return f"{step}__{key}"


def _report(name, point, entry):
    shown = ", ".join(f"{k}={v:g}" for k, v in point.items())
    print(
        f"  {name} {shown}: validation accuracy "
        f"{entry['validation_accuracy']:.4f} ({entry['seconds']:.1f} s)"
    )


# === Train / evaluate ===


def train(name, train_split, hyperparameters, seed=1337, num_classes=2):
    """Fit baseline ``name`` on the training split alone; returns ``(model, seconds)``."""
    model = create_model(name, hyperparameters, seed, num_classes)
    start = time.perf_counter()
    model.fit(train_split.texts, train_split.labels)
    return model, time.perf_counter() - start


def evaluate(model, split, class_names=BINARY_CLASSES):
    """Accuracy, log loss, probabilities and every figure of ``model`` on ``split``.

    Returns:
        dict: ``accuracy``, ``loss``, ``probabilities`` (binary: ``[N]``,
        P(class 1); else ``[N, C]`` in ``class_names``' order) and ``metrics``
        (:func:`hatt.training.classification_metrics`).
    """
    num_classes = len(class_names)
    columns = model.predict_proba(split.texts)
    probabilities = np.zeros((len(split), num_classes))
    probabilities[:, model.classes_] = columns  # a class absent from train keeps 0
    if num_classes == 2:
        probabilities = probabilities[:, 1]
    metrics = classification_metrics(split.labels, probabilities, class_names)
    return {
        "accuracy": metrics["accuracy"],
        "loss": float(log_loss(split.labels, probabilities, labels=list(range(num_classes)))),
        "probabilities": probabilities,
        "metrics": metrics,
    }


def count_parameters(model):
    classifier = model.named_steps["classifier"]
    return int(classifier.coef_.size + classifier.intercept_.size)


def _display_path(path):
    path = Path(path).resolve()
    return str(path.relative_to(ROOT)) if path.is_relative_to(ROOT) else str(path)


def save_probabilities(name, splits, results, runs):
    """Each evaluated split's probabilities, labels and ids → npz; returns their paths."""
    runs = Path(runs)
    runs.mkdir(parents=True, exist_ok=True)
    paths = {}
    for split, result in results.items():
        path = runs / f"baseline_{name}_{split}_probabilities.npz"
        np.savez_compressed(
            path,
            probabilities=result["probabilities"].astype(np.float32),
            labels=splits[split].labels.astype(np.int8),
            ids=np.array(splits[split].ids),
        )
        paths[f"{split}_probabilities"] = _display_path(path)
    return paths


def run_baseline(name, splits, args, command, class_names=BINARY_CLASSES):
    """Select on validation, refit on train, test once, write JSON + probabilities."""
    progress = not args.quiet
    num_classes = len(class_names)
    if progress:
        print(f"[{name}] choosing hyper-parameters on validation")
    best, table = select_hyperparameters(
        name,
        splits["train"],
        splits["validation"],
        seed=args.seed,
        progress=progress,
        num_classes=num_classes,
    )
    if progress:
        print(f"[{name}] refitting on train with {best}")
    model, seconds = train(name, splits["train"], best, seed=args.seed, num_classes=num_classes)
    results = {
        split: evaluate(model, splits[split], class_names) for split in ("validation", "test")
    }
    validation, test = results["validation"], results["test"]
    n_train = len(splits["train"])
    metrics = {
        "model": name,
        "task": args.labels,
        "class_names": list(class_names),
        **flat_metrics(test["metrics"], "test"),
        "test_loss": test["loss"],
        **flat_metrics(validation["metrics"], "validation"),
        "validation_loss": validation["loss"],
        "epochs": None,
        "train_seconds": round(seconds, 3),
        "examples_per_second": round(n_train / seconds, 1),
        "parameters": count_parameters(model),
        "seed": args.seed,
        "command": command,
        "hatt_version": hatt.__version__,
        "tuning": "validation",
        "hyperparameters": describe(name, model, best, num_classes),
        "selection": table,
        "examples": {k: len(v) for k, v in splits.items()},
        "data": args.data or os.environ.get(ENV_VAR) or "tensorflow_datasets:imdb_reviews",
        "limit": args.limit,
        **save_probabilities(name, splits, results, args.runs),
        "test": test["metrics"],
        "validation": validation["metrics"],
    }
    results_dir = Path(args.results)
    results_dir.mkdir(parents=True, exist_ok=True)
    out = results_dir / f"baseline_{name}.json"
    out.write_text(json.dumps(metrics, indent=2) + "\n")
    if progress:
        print(f"[{name}] validation accuracy {validation['accuracy']:.4f}, test:")
        print(format_metrics(test["metrics"]))
        print(
            f"[{name}] test log loss {test['loss']:.4f}, train {seconds:.1f} s → {_display_path(out)}"
        )
    return metrics


def describe(name, model, best, num_classes):
    """The ``hyperparameters`` entry of a results file: chosen, searched and fixed settings."""
    if num_classes == 2:
        solver = "liblinear"
    elif name == "nb_lr":
        solver = "liblinear, one-vs-rest (one NB-LR per class)"
    else:
        solver = "lbfgs, multinomial"
    return {
        **best,
        "grid": grid_of(name, num_classes),
        "ngram_range": list(NGRAM_RANGE),
        **SETTINGS[name]["fixed"],
        "features": len(model.named_steps["features"].vocabulary_),
        "solver": solver,
        "tokens": "hatt.data.tokenize, flattened over sentences",
        "fit_on": "train",
    }


def main(argv=None):
    args = parse_args(argv)
    command = shlex.join(
        ["python", "-m", "experiments.baselines", *(sys.argv[1:] if argv is None else argv)]
    )
    splits, class_names = create_dataset(
        args.data,
        task=args.labels,
        seed=args.seed,
        limit=args.limit,
        validation_size=args.validation_size,
        progress=not args.quiet,
    )
    names = [args.only] if args.only else list(BASELINES)
    return {name: run_baseline(name, splits, args, command, class_names) for name in names}


if __name__ == "__main__":
    main()
