"""What a user meets through scikit-learn: ``HattClassifier``'s default beside the bare defaults.

Issue 64 found the README's ``HattClassifier(family="cnn", epochs=3, dropout=0.3)``
scoring 70 % on a user's 1,500 documents, the tuned preset 85 %, scikit-learn's
TF-IDF + LR 86 %: the face built the bare defaults. ``HattClassifier(family)`` now
starts from the family's preset, as ``hatt train FAMILY``. This script measures
the three as a user would run them, on an IMDB polarity draw of ``--size`` reviews
of the training split, scored on ``--test-size`` reviews drawn from the test split:

- ``default``: ``HattClassifier(family)`` (the preset, as the README now shows it);
- ``bare``: ``HattClassifier(family, preset=None, epochs=3, dropout=0.3)``, the README's
  line before;
- ``tfidf_lr``: ``TfidfVectorizer(ngram_range=(1, 2), sublinear_tf=True)`` +
  ``LogisticRegression``, ``C`` in {1, 10, 100} by stratified 5-fold ``GridSearchCV``.

Each cell is kept in ``results.json`` as it ends (a rerun resumes; ``--force``
measures again) and ``results.md`` is written from it.

Run:  python -m experiments.python_face --data PATH [--size 1500] [--test-size 2000]
          [--families cnn han] [--out DIR]
"""

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np
from sklearn.feature_extraction.text import TfidfVectorizer
from sklearn.linear_model import LogisticRegression
from sklearn.metrics import accuracy_score, f1_score
from sklearn.model_selection import GridSearchCV, StratifiedKFold
from sklearn.pipeline import make_pipeline

from experiments import harness
from hatt.sklearn import HattClassifier

SEED = 1337
RESULTS = harness.ROOT / "experiments" / "results" / "python_face"


def create_dataset(data, size, test_size, draw=0):
    """A polarity draw of ``size`` training reviews and ``test_size`` test reviews."""
    pools = harness.create_dataset(data, "polarity")
    train = pools["train"].subset(harness.draw_indices(pools["train"].labels, size, draw, SEED))
    test = pools["test"].subset(harness.draw_indices(pools["test"].labels, test_size, draw, SEED))
    return train, test


def create_model(cell, family):
    """The estimator of ``cell`` (``default``, ``bare`` or ``tfidf_lr``)."""
    if cell == "default":
        return HattClassifier(family)
    if cell == "bare":
        return HattClassifier(family, preset=None, epochs=3, dropout=0.3)
    pipeline = make_pipeline(
        TfidfVectorizer(ngram_range=(1, 2), sublinear_tf=True),
        LogisticRegression(max_iter=2000),
    )
    folds = StratifiedKFold(n_splits=5, shuffle=True, random_state=SEED)
    return GridSearchCV(pipeline, {"logisticregression__C": [1, 10, 100]}, cv=folds)


def evaluate(model, train, test):
    start = time.perf_counter()
    model.fit(train.texts, np.asarray(train.labels))
    fit_seconds = time.perf_counter() - start
    predicted = model.predict(test.texts)
    return {
        "test_accuracy": round(float(accuracy_score(test.labels, predicted)), 4),
        "test_macro_f1": round(float(f1_score(test.labels, predicted, average="macro")), 4),
        "fit_seconds": round(fit_seconds, 1),
        "train_size": len(train.texts),
        "test_size": len(test.texts),
    }


def write_table(results, path):
    lines = [
        "| estimator | family | accuracy | macro-F1 | fit s |",
        "|---|---|---:|---:|---:|",
    ]
    for key, row in sorted(results.items()):
        cell, family = key.split("/")
        lines.append(
            f"| {cell} | {family} | {100 * row['test_accuracy']:.2f} % | "
            f"{row['test_macro_f1']:.4f} | {row['fit_seconds']} |"
        )
    Path(path).write_text("\n".join(lines) + "\n")


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--data", required=True, help="IMDB (folder or .tar.gz)")
    parser.add_argument("--size", type=int, default=1500)
    parser.add_argument("--test-size", type=int, default=2000)
    parser.add_argument("--families", nargs="+", default=["cnn"])
    parser.add_argument("--out", type=Path, default=RESULTS)
    parser.add_argument("--force", action="store_true")
    args = parser.parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    path = args.out / "results.json"
    results = {} if args.force or not path.exists() else json.loads(path.read_text())
    train, test = create_dataset(args.data, args.size, args.test_size)
    cells = [("tfidf_lr", "sklearn")]
    cells += [(cell, family) for family in args.families for cell in ("default", "bare")]
    for cell, family in cells:
        key = f"{cell}/{family}"
        if key in results:
            continue
        print(f"[python_face] {key}: fitting on {len(train.texts)} reviews", file=sys.stderr)
        results[key] = {**evaluate(create_model(cell, family), train, test), "seed": SEED}
        results[key]["commit"] = harness.commit()
        path.write_text(json.dumps(results, indent=2) + "\n")
        print(f"[python_face] {key}: {results[key]}", file=sys.stderr)
    write_table(results, args.out / "results.md")


if __name__ == "__main__":
    main()
