"""Does ``--class-weight balanced`` reach the whole model? Unbalanced classes, as a user has them.

Issue 61 found ``hatt train han`` on a three-class folder of 200 / 120 / 30 documents
giving the *identical* model with ``--class-weight balanced`` and ``none``: the weights
reached the deep part only, while the n-gram channel's fit and its mix (which decide
such a model) took none. This script builds such a corpus from IMDB's ratings and
trains it as a user would, beside scikit-learn's TF-IDF + LR tuned by 5-fold
cross-validation with and without ``class_weight="balanced"``:

- classes: ``awful`` (rating 1), ``mixed`` (4 or 7), ``great`` (10); the training table
  takes 200 / 120 / 30 of them from IMDB's training split (seeded, per draw), the test
  table 2,000 / 1,200 / 300 from the test split (the same proportions, seeded);
- hatt: ``hatt train FAMILY --data TRAIN --test TEST --class-weight W`` (the preset
  otherwise), each in its own process (:func:`experiments.harness.hatt_cell`);
- the baseline: ``TfidfVectorizer(ngram_range=(1, 2), sublinear_tf=True)`` +
  ``LogisticRegression``, ``C`` in {1, 10, 100} by stratified 5-fold CV on the training
  table (``GridSearchCV``, accuracy), with ``class_weight`` None, ``"balanced"``, or for
  ``sqrt`` the square roots of the balanced weights rescaled to the same total (the rule of
  ``--class-weight sqrt``).

Writes ``experiments/results/class_weights/results.json`` and ``results.md`` (accuracy,
macro-F1 and the smallest class's recall on the test table, and the mix's weights).
Cells already written are reused (a run resumes); ``--force`` trains them again.

Run:  python -m experiments.class_weights --data PATH [--families han cnn] [--draws 1]
          [--weights none sqrt balanced] [--runs DIR] [--out DIR]
"""

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np

from experiments import harness

CLASSES = {"awful": ("1",), "mixed": ("4", "7"), "great": ("10",)}
TRAIN_SIZES = {"awful": 200, "mixed": 120, "great": 30}
TEST_SCALE = 10  # the test table: ten times the training table, same proportions
WEIGHTS = ("none", "sqrt", "balanced")  # --class-weight W (--weights: a subset)
SEED = 1337
RESULTS = harness.ROOT / "experiments" / "results" / "class_weights"


def class_pool(pool):
    """An IMDB rating pool (:func:`harness.create_dataset` with ``"rating"``) → the three
    classes of :data:`CLASSES` (reviews of other ratings left out)."""
    names = np.full(len(pool.labels), "", dtype=object)
    for name, ratings in CLASSES.items():
        names[np.isin(pool.labels, ratings)] = name
    keep = np.flatnonzero(names != "")
    kept = pool.subset(keep)
    kept.labels = names[keep].astype(str)
    return kept


def draw(pool, sizes, seed, draw_number):
    """``sizes[class]`` reviews of each class, seeded by ``(seed, draw_number)``."""
    for name, size in sizes.items():
        if np.sum(pool.labels == name) < size:
            raise ValueError(
                f"Expected at least {size} reviews of class {name!r} to draw from. "
                f"Received: {int(np.sum(pool.labels == name))}"
            )
    rng = np.random.default_rng([seed, draw_number])
    chosen = [
        rng.permutation(np.flatnonzero(pool.labels == name))[:size] for name, size in sizes.items()
    ]
    return pool.subset(np.sort(np.concatenate(chosen)))


def tables(data, runs, draw_number):
    """The draw's training and test tables (written once under ``runs``)."""
    folder = Path(runs) / "data"
    paths = {
        "train": folder / f"train-d{draw_number}.jsonl",
        "test": folder / f"test-d{draw_number}.jsonl",
    }
    if not all(p.exists() for p in paths.values()):
        pools = {k: class_pool(v) for k, v in harness.create_dataset(data, "rating").items()}
        test_sizes = {k: v * TEST_SCALE for k, v in TRAIN_SIZES.items()}
        harness.write_table(draw(pools["train"], TRAIN_SIZES, SEED, draw_number), paths["train"])
        harness.write_table(draw(pools["test"], test_sizes, SEED + 1, draw_number), paths["test"])
    return paths


def read_table(path):
    with open(path, encoding="utf-8") as lines:  # not splitlines(): texts may hold U+2028
        rows = [json.loads(line) for line in lines if line.strip()]
    return [r["text"] for r in rows], np.array([r["label"] for r in rows])


def scores(labels, predicted):
    """Accuracy, macro-F1 and the smallest class's recall."""
    from sklearn.metrics import accuracy_score, f1_score, recall_score

    names, counts = np.unique(labels, return_counts=True)
    smallest = names[np.argmin(counts)]
    return {
        "test_accuracy": float(accuracy_score(labels, predicted)),
        "test_macro_f1": float(f1_score(labels, predicted, average="macro")),
        "smallest_class": str(smallest),
        "smallest_class_recall": float(
            recall_score(labels, predicted, labels=[smallest], average="macro")
        ),
    }


def sklearn_class_weight(weight, labels):
    """scikit-learn's ``class_weight`` for ``--class-weight weight`` on these labels."""
    if weight == "none":
        return None
    if weight == "balanced":
        return "balanced"
    names, counts = np.unique(labels, return_counts=True)
    roots = np.sqrt(counts.sum() / (len(counts) * counts))
    roots *= counts.sum() / (counts * roots).sum()
    return dict(zip(names.tolist(), roots.tolist(), strict=True))


def baseline_cell(paths, weight):
    """scikit-learn's TF-IDF + LR, C by stratified 5-fold CV on the training table."""
    from sklearn.feature_extraction.text import TfidfVectorizer
    from sklearn.linear_model import LogisticRegression
    from sklearn.model_selection import GridSearchCV, StratifiedKFold
    from sklearn.pipeline import make_pipeline

    start = time.perf_counter()
    texts, labels = read_table(paths["train"])
    test_texts, test_labels = read_table(paths["test"])
    pipeline = make_pipeline(
        TfidfVectorizer(ngram_range=(1, 2), sublinear_tf=True),
        LogisticRegression(class_weight=sklearn_class_weight(weight, labels), max_iter=1000),
    )
    search = GridSearchCV(
        pipeline,
        {"logisticregression__C": [1.0, 10.0, 100.0]},
        cv=StratifiedKFold(5, shuffle=True, random_state=SEED),
    ).fit(texts, labels)
    return {
        **scores(test_labels, search.predict(test_texts)),
        "C": search.best_params_["logisticregression__C"],
        "seconds": round(time.perf_counter() - start, 2),
    }


def hatt_cell(family, paths, place, weight, force):
    """``hatt train FAMILY --class-weight WEIGHT`` on the draw; its test figures from the
    run's own test predictions (the smallest class's recall among them)."""
    cell = harness.hatt_cell(
        family,
        paths,
        place,
        force,
        name=f"{family}-{weight}",
        extra=("--class-weight", weight),
    )
    run_dir = place / f"{family}-{weight}"
    predictions = np.load(run_dir / "test_probabilities.npz")
    names = np.asarray(json.loads((run_dir / "classes.json").read_text())["class_names"])
    predicted = names[predictions["probabilities"].argmax(axis=1)]
    channel = json.loads((run_dir / "metrics.json").read_text()).get("ngram_channel") or {}
    return {
        **scores(names[predictions["labels"]], predicted),
        "mix": channel.get("mix"),
        "channel_class_weight": channel.get("class_weight"),
        "command": cell["command"],
        "fit_seconds": cell["fit_seconds"],
    }


def markdown(result):
    lines = [
        "# Class weights on unbalanced classes",
        "",
        f"Commit {result['commit']}; `{result['command']}`. Training table 200 / 120 / 30 "
        "(awful / mixed / great, IMDB ratings 1 / 4 or 7 / 10), test table ten times it, "
        "same proportions.",
        "",
        "| draw | model | class weight | accuracy | macro-F1 | recall of the smallest class "
        "| mix (deep, channel) |",
        "|---:|---|---|---:|---:|---:|---|",
    ]
    for row in result["rows"]:
        mix = row.get("mix")
        shown = f"{mix['deep']:.3f}, {mix['channel']:.3f}" if isinstance(mix, dict) else ""
        lines.append(
            f"| {row['draw']} | {row['model']} | {row['class_weight']} | "
            f"{100 * row['test_accuracy']:.2f} % | {row['test_macro_f1']:.3f} | "
            f"{100 * row['smallest_class_recall']:.1f} % | {shown} |"
        )
    return "\n".join(lines) + "\n"


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", default=None, help="the labeled IMDB (else $HATT_IMDB)")
    parser.add_argument("--families", nargs="+", default=["han", "cnn"])
    parser.add_argument("--weights", nargs="+", choices=WEIGHTS, default=list(WEIGHTS))
    parser.add_argument("--draws", type=int, default=1)
    parser.add_argument("--runs", default=str(harness.ROOT / "runs" / "class_weights"))
    parser.add_argument("--out", default=str(RESULTS))
    parser.add_argument("--force", action="store_true", help="train the cells again")
    args = parser.parse_args(argv)
    rows = []
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    for number in range(args.draws):
        paths = tables(args.data, args.runs, number)
        place = Path(args.runs) / f"d{number}"
        place.mkdir(parents=True, exist_ok=True)
        for weight in args.weights:
            print(f"draw {number}: scikit-learn TF-IDF + LR, class_weight {weight}", flush=True)
            cell = baseline_cell(paths, weight)
            rows.append({"draw": number, "model": "tfidf_lr", "class_weight": weight, **cell})
        for family in args.families:
            for weight in args.weights:
                print(f"draw {number}: hatt train {family} --class-weight {weight}", flush=True)
                cell = hatt_cell(family, paths, place, weight, args.force)
                rows.append({"draw": number, "model": family, "class_weight": weight, **cell})
        result = {
            "commit": harness.commit(),
            "command": "python -m experiments.class_weights " + " ".join(sys.argv[1:] or []),
            "rows": rows,
        }
        (out / "results.json").write_text(json.dumps(result, indent=2) + "\n")
        (out / "results.md").write_text(markdown(result))
    print((out / "results.md").read_text())
    return 0


if __name__ == "__main__":
    sys.exit(main())
