"""Scikit-learn baselines on IMDB: TF-IDF + logistic regression and NB-weighted LR.

Two bag-of-n-grams baselines for the neural models, on the same splits
(``hatt.data.load_imdb`` defaults: 22,500 train / 2,500 validation carved from
``train/`` with seed 1337 / the full 25,000-review ``test/``):

- ``tfidf_lr``: TF-IDF over word uni- and bigrams (sublinear tf, l2 rows) →
  ``LogisticRegression``.
- ``nb_lr``: NB-weighted logistic regression (Wang & Manning 2012, NBSVM-style):
  binarized uni+bigram counts ``f̂``, the log-count ratio
  ``r = log((p / |p|₁) / (q / |q|₁))`` with ``p = α + Σ_{y=1} f̂`` and
  ``q = α + Σ_{y=0} f̂`` from the training split, features ``f̂ ⊙ r`` →
  ``LogisticRegression``. The paper's weight interpolation β is not used
  (β = 1).

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
evaluated once on the test split. Vocabulary, IDF and ``r`` come from the
training split only.

Run:  python experiments/baselines.py [--data PATH] [--seed 1337] [--limit N]
      [--only tfidf_lr|nb_lr]
Writes experiments/results/baseline_<name>.json and the validation and test
probabilities (with labels and review ids, for ensembles, as ``run_all.py``
reads them) to runs/baselines/baseline_<name>_<split>_probabilities.npz
(git-ignored).
"""

import argparse
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
from sklearn.base import BaseEstimator, TransformerMixin
from sklearn.feature_extraction.text import CountVectorizer, TfidfVectorizer
from sklearn.linear_model import LogisticRegression
from sklearn.metrics import accuracy_score, log_loss
from sklearn.pipeline import Pipeline

import hatt
from hatt.data import Split, load_imdb
from hatt.data.imdb import ENV_VAR
from hatt.training import ngram

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "experiments" / "results"
RUNS = ROOT / "runs" / "baselines"
BASELINES = ("tfidf_lr", "nb_lr")

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


# === Arguments ===


def parse_args(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", default=None, help="aclImdb folder or .tar.gz (else $HATT_IMDB)")
    parser.add_argument("--seed", type=int, default=1337, help="validation split and solver seed")
    parser.add_argument("--limit", type=int, default=None, help="keep at most N reviews a split")
    parser.add_argument("--only", choices=BASELINES, default=None, help="run one baseline")
    parser.add_argument("--validation-size", type=int, default=2500)
    parser.add_argument("--results", default=str(RESULTS), help="folder for baseline_<name>.json")
    parser.add_argument("--runs", default=str(RUNS), help="folder for test probabilities")
    parser.add_argument("--quiet", action="store_true", help="no progress output")
    return parser.parse_args(argv)


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


def create_dataset(data=None, *, seed=1337, limit=None, validation_size=2500, progress=True):
    """Load IMDB (the neural models' splits) and tokenize every split.

    Returns:
        dict ``{"train", "validation", "test"}`` of :class:`hatt.data.Split`
        whose ``texts`` are space-joined hatt tokens.
    """
    imdb = load_imdb(
        data, validation_size=validation_size, seed=seed, limit=limit, progress=progress
    )
    splits = {}
    for name in ("train", "validation", "test"):
        split = getattr(imdb, name)
        if progress:
            print(f"Tokenizing {name} ({len(split)} reviews)")
        splits[name] = Split(tokenize(split.texts, progress=progress), split.labels, split.ids)
    return splits


# === Model ===


class NBScaler(TransformerMixin, BaseEstimator):
    """Binarize counts and scale each feature by its NB log-count ratio ``r``.

    ``r`` is the n-gram channel's own (:func:`hatt.training.ngram.log_count_ratios`),
    in float64.
    """

    def __init__(self, alpha=1.0):
        self.alpha = alpha

    def fit(self, X, y):
        self.r_ = ngram.log_count_ratios(X, y, alpha=self.alpha, dtype=np.float64)
        return self

    def transform(self, X):
        binary = sp.csr_matrix(X, dtype=np.float64, copy=True)
        binary.data = (binary.data > 0).astype(np.float64)
        return binary.multiply(self.r_).tocsr()


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


def create_model(name, hyperparameters, seed=1337):
    """A scikit-learn Pipeline for baseline ``name`` with the chosen hyper-parameters."""
    fixed = SETTINGS[name]["fixed"] if name in SETTINGS else {}
    steps = [("features", create_features(name, **fixed))]
    if name == "nb_lr":
        steps.append(("nb", NBScaler(alpha=hyperparameters["alpha"])))
    steps.append(("classifier", create_classifier(hyperparameters["C"], seed)))
    return Pipeline(steps)


# === Hyper-parameters (validation split only) ===


def select_hyperparameters(name, train, validation, *, grid=None, seed=1337, progress=True):
    """Choose hyper-parameters by accuracy on ``validation``; never sees test data.

    Features are fitted on ``train`` once; each grid point fits the classifier
    on ``train`` and scores it on ``validation``. Ties go to the first grid
    point (smaller ``C``, smaller ``alpha``).

    Returns:
        ``(best, table)``: the chosen hyper-parameters, and one row per grid
        point with its validation accuracy.
    """
    grid = grid or SETTINGS[name]["grid"]
    features = create_features(name, **SETTINGS[name]["fixed"])
    x_train = features.fit_transform(train.texts)
    x_validation = features.transform(validation.texts)
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
                shown = ", ".join(f"{k}={v:g}" for k, v in {"C": entry["C"], **point}.items())
                print(
                    f"  {name} {shown}: validation accuracy "
                    f"{entry['validation_accuracy']:.4f} ({entry['seconds']:.1f} s)"
                )

        _, _, selection = ngram.fit_logistic_grid(
            xt, train.labels, grid["C"], (xv, validation.labels), seed=seed, on_fit=report
        )
        for entry in selection:
            table.append(
                {"C": entry["C"], **point, "validation_accuracy": entry["validation_accuracy"]}
            )
    best = max(table, key=lambda row: row["validation_accuracy"])  # first maximum
    return {k: v for k, v in best.items() if k != "validation_accuracy"}, table


# === Train / evaluate ===


def train(name, train_split, hyperparameters, seed=1337):
    """Fit baseline ``name`` on the training split alone; returns ``(model, seconds)``."""
    model = create_model(name, hyperparameters, seed)
    start = time.perf_counter()
    model.fit(train_split.texts, train_split.labels)
    return model, time.perf_counter() - start


def evaluate(model, split):
    """Accuracy, log loss and P(positive) of ``model`` on ``split``."""
    probabilities = model.predict_proba(split.texts)[:, 1]
    return {
        "accuracy": float(accuracy_score(split.labels, probabilities > 0.5)),
        "loss": float(log_loss(split.labels, probabilities, labels=[0, 1])),
        "probabilities": probabilities,
    }


def count_parameters(model):
    classifier = model.named_steps["classifier"]
    return int(classifier.coef_.size + classifier.intercept_.size)


def _display_path(path):
    path = Path(path).resolve()
    return str(path.relative_to(ROOT)) if path.is_relative_to(ROOT) else str(path)


def run_baseline(name, splits, args, command):
    """Select on validation, refit on train, test once, write JSON + probabilities."""
    progress = not args.quiet
    if progress:
        print(f"[{name}] choosing hyper-parameters on validation")
    best, table = select_hyperparameters(
        name, splits["train"], splits["validation"], seed=args.seed, progress=progress
    )
    if progress:
        print(f"[{name}] refitting on train with {best}")
    model, seconds = train(name, splits["train"], best, seed=args.seed)
    validation = evaluate(model, splits["validation"])
    test = evaluate(model, splits["test"])

    runs = Path(args.runs)
    runs.mkdir(parents=True, exist_ok=True)
    probabilities_paths = {}
    for split, result in (("validation", validation), ("test", test)):
        path = runs / f"baseline_{name}_{split}_probabilities.npz"
        np.savez_compressed(
            path,
            probabilities=result["probabilities"].astype(np.float32),
            labels=splits[split].labels.astype(np.int8),
            ids=np.array(splits[split].ids),
        )
        probabilities_paths[split] = _display_path(path)
    n_train = len(splits["train"])
    metrics = {
        "model": name,
        "test_accuracy": test["accuracy"],
        "test_loss": test["loss"],
        "validation_accuracy": validation["accuracy"],
        "validation_loss": validation["loss"],
        "epochs": None,
        "train_seconds": round(seconds, 3),
        "examples_per_second": round(n_train / seconds, 1),
        "parameters": count_parameters(model),
        "seed": args.seed,
        "command": command,
        "hatt_version": hatt.__version__,
        "hyperparameters": {
            **best,
            "grid": SETTINGS[name]["grid"],
            "ngram_range": list(NGRAM_RANGE),
            **SETTINGS[name]["fixed"],
            "features": len(model.named_steps["features"].vocabulary_),
            "solver": "liblinear",
            "tokens": "hatt.data.tokenize, flattened over sentences",
            "fit_on": "train",
        },
        "selection": table,
        "examples": {k: len(v) for k, v in splits.items()},
        "data": args.data or os.environ.get(ENV_VAR) or "tensorflow_datasets:imdb_reviews",
        "limit": args.limit,
        "validation_probabilities": probabilities_paths["validation"],
        "test_probabilities": probabilities_paths["test"],
    }
    results = Path(args.results)
    results.mkdir(parents=True, exist_ok=True)
    out = results / f"baseline_{name}.json"
    out.write_text(json.dumps(metrics, indent=2) + "\n")
    if progress:
        print(
            f"[{name}] validation accuracy {validation['accuracy']:.4f}, "
            f"test accuracy {test['accuracy']:.4f}, test log loss {test['loss']:.4f}, "
            f"train {seconds:.1f} s → {_display_path(out)}"
        )
    return metrics


def main(argv=None):
    args = parse_args(argv)
    command = shlex.join(["python", *(sys.argv if argv is None else [__file__, *argv])])
    splits = create_dataset(
        args.data,
        seed=args.seed,
        limit=args.limit,
        validation_size=args.validation_size,
        progress=not args.quiet,
    )
    names = [args.only] if args.only else list(BASELINES)
    return {name: run_baseline(name, splits, args, command) for name in names}


if __name__ == "__main__":
    main()
