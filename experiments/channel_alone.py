"""The n-gram channel alone beside a user's TF-IDF + LR, on small IMDB draws (issue 61, item 1).

On a user's few thousand documents the mix often drops the deep part, so the model
is its channel; that channel must not trail the baseline a user runs. This script
fits the channel alone, exactly as ``hatt train`` fits it after training
(``ngram.fit="separate"`` with ``refit``: its grid chosen, then fit again on the
training and validation splits together), under several ways of choosing its
grid, and scikit-learn's ``TfidfVectorizer(ngram_range=(1, 2), sublinear_tf=True)``
+ ``LogisticRegression`` with ``C`` chosen by stratified 5-fold cross-validation on
the whole draw (``GridSearchCV``), as a user tunes it. No deep part is trained.

**Tuning data only**: each draw of ``--sizes`` documents comes from IMDB's
training split (:func:`experiments.harness.draw_indices`), and every cell is scored
on ``--held-out`` other training reviews (seeded, disjoint from the draw); IMDB's
test split is never read. The variants (``VARIANTS``):

- ``validation``: the family's preset as ``hatt train`` scales it to the draw, its
  grid chosen on hatt's validation slice (10 % of the draw): the rule before
  ``ngram.folds``;
- ``folds``: the same grid chosen by 5-fold cross-validation on the training part
  (``ngram.folds`` 5, what ``"auto"`` gives below 10,000 reviews);
- ``folds_wide``: a wider grid by the same folds (``C`` 10-1,000 for NB-LR
  channels; 0.5-32 for the TF-IDF channel above two classes);
- ``tfidf``: the TF-IDF channel (binary unigrams and bigrams valued by their IDF,
  rows of unit L2 norm, one logistic regression: ``TFIDF``), ``C`` 1-100 by the folds.

Run:  python -m experiments.channel_alone [--data PATH] [--task polarity|rating]
      [--sizes 500 1000 2000 5000] [--draws 0 1 2] [--family cnn]
Writes experiments/results/channel_alone/TASK.json and TASK.md (mean ± std over draws).
"""

import argparse
import dataclasses
import json
import time
from pathlib import Path

import numpy as np

import hatt
from experiments import harness
from hatt import training

RESULTS = harness.ROOT / "experiments" / "results" / "channel_alone"
VALIDATION_SHARE = 0.1  # hatt's own validation slice of a training table
WIDE_C = {"sqrt": [10.0, 30.0, 100.0, 300.0, 1000.0], "l2": [0.5, 1.0, 2.0, 4.0, 8.0, 16.0, 32.0]}
VARIANTS = ("validation", "folds", "folds_wide", "tfidf")
# the TF-IDF channel (hatt.training.settings.scale.MULTICLASS_NGRAM's features) on two classes
TFIDF = {"order": 2, "idf": True, "reduction": "l2", "init": "lr", "binary": True}
TFIDF_C = [1.0, 3.0, 10.0, 30.0, 100.0]
BASELINE_C = [1.0, 3.0, 10.0, 30.0, 100.0]


def parse_args(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", default=None, help="IMDB (folder or .tar.gz); else HATT_IMDB")
    parser.add_argument("--task", choices=harness.TASKS, default="polarity")
    parser.add_argument("--sizes", type=int, nargs="+", default=[500, 1000, 2000, 5000])
    parser.add_argument("--draws", type=int, nargs="+", default=[0, 1, 2])
    parser.add_argument("--family", default="cnn")
    parser.add_argument("--held-out", type=int, default=5000)
    parser.add_argument("--seed", type=int, default=1337)
    parser.add_argument("--out", type=Path, default=RESULTS)
    return parser.parse_args(argv)


def variant_settings(config, variant):
    """The scaled config's ``ngram`` section for ``variant``."""
    ngram = config.ngram
    if variant == "validation":
        return dataclasses.replace(ngram, folds=0)
    if variant == "folds":
        return dataclasses.replace(ngram, folds=5)
    if variant == "folds_wide":
        return dataclasses.replace(ngram, folds=5, C=WIDE_C[ngram.reduction])
    return dataclasses.replace(ngram, **TFIDF, folds=5, C=TFIDF_C, alpha=1.0)


def split_off_validation(labels, seed):
    """Training and validation rows of a draw, stratified (hatt's 10 % slice)."""
    from sklearn.model_selection import train_test_split

    rows = np.arange(len(labels))
    return train_test_split(
        rows, test_size=VALIDATION_SHARE, stratify=labels, random_state=seed, shuffle=True
    )


def channel_cells(family, draw_pool, held_out, classes, seed):
    """Every variant's held-out accuracy and macro-F1 of the channel alone on one draw."""
    labels = np.array([classes.index(label) for label in draw_pool.labels])
    held_labels = np.array([classes.index(label) for label in held_out.labels])
    config = training.assemble_config(family, seed=seed)
    config = config.fit_to_corpus(np.bincount(labels, minlength=len(classes)))
    train_rows, validation_rows = split_off_validation(labels, seed)
    vectorizer = training.create_vectorizer(config).adapt([draw_pool.texts[i] for i in train_rows])
    ids = hatt.data.encode(draw_pool.texts, vectorizer)
    held_ids = hatt.data.encode(held_out.texts, vectorizer)
    cells = {}
    for variant in VARIANTS:
        settings = variant_settings(config, variant)
        cfg = dataclasses.replace(config, ngram=settings)
        layer = channel_layer(settings, vectorizer.vocabulary_size, len(classes))
        counts = training.channel_counts(layer, ids)
        train = (counts[train_rows], labels[train_rows])
        validation = (counts[validation_rows], labels[validation_rows])
        start = time.perf_counter()
        _, _, info = training.fit_ngram_channel(layer, cfg, *train, validation)
        weights, intercept, _ = training.refit_ngram_channel(layer, cfg, info, train, validation)
        held_counts = training.channel_counts(layer, held_ids)
        logits = training.channel_features(layer, held_counts) @ weights + intercept
        cells[variant] = {
            **scores(training.predicted_classes(logits), held_labels),
            "alpha": info.get("alpha"),
            "C": info.get("C"),
            "cv_accuracy": info.get("cv_accuracy"),
            "seconds": round(time.perf_counter() - start, 1),
        }
    return cells


def channel_layer(settings, vocabulary_size, num_classes):
    layer = hatt.layers.NgramLogit(
        vocabulary_size,
        buckets=settings.buckets,
        ngram=settings.order,
        reduction=settings.reduction,
        binary=settings.binary,
        units=1 if num_classes == 2 else num_classes,
        idf=settings.idf,
    )
    layer.build((None, None))
    return layer


def baseline_cell(draw_pool, held_out, seed):
    """TF-IDF + LR with C by stratified 5-fold CV on the whole draw (a user's baseline)."""
    from sklearn.feature_extraction.text import TfidfVectorizer
    from sklearn.linear_model import LogisticRegression
    from sklearn.model_selection import GridSearchCV, StratifiedKFold
    from sklearn.pipeline import make_pipeline

    start = time.perf_counter()
    pipeline = make_pipeline(
        TfidfVectorizer(ngram_range=(1, 2), sublinear_tf=True),
        LogisticRegression(max_iter=2000),
    )
    search = GridSearchCV(
        pipeline,
        {"logisticregression__C": BASELINE_C},
        cv=StratifiedKFold(5, shuffle=True, random_state=seed),
    ).fit(draw_pool.texts, draw_pool.labels)
    predicted = search.predict(held_out.texts)
    return {
        **scores(predicted, held_out.labels),
        "C": search.best_params_["logisticregression__C"],
        "cv_accuracy": float(search.best_score_),
        "seconds": round(time.perf_counter() - start, 1),
    }


def scores(predicted, labels):
    from sklearn.metrics import f1_score

    predicted, labels = np.asarray(predicted), np.asarray(labels)
    return {
        "accuracy": float((predicted == labels).mean()),
        "macro_f1": float(f1_score(labels, predicted, average="macro")),
    }


def held_out_rows(labels, excluded, size, seed):
    rng = np.random.default_rng([seed, 99])
    rows = np.setdiff1d(np.arange(len(labels)), excluded)
    return np.sort(rng.permutation(rows)[:size])


def table(results):
    methods = ["tfidf_lr", *VARIANTS]
    lines = [
        "| documents | " + " | ".join(methods) + " |",
        "|---:|" + "---:|" * len(methods),
    ]
    for size, draws in sorted(results.items(), key=lambda item: int(item[0])):
        row = []
        for method in methods:
            mean, std = harness.mean_std([d[method]["accuracy"] * 100 for d in draws.values()])
            f1 = np.mean([d[method]["macro_f1"] for d in draws.values()])
            row.append(f"{mean:.2f} ± {std:.2f} / {f1:.3f}")
        lines.append(f"| {size} | " + " | ".join(row) + " |")
    return "\n".join(lines) + "\n"


def main(argv=None):
    args = parse_args(argv)
    pools = harness.create_dataset(args.data, args.task)
    train_pool = pools["train"]
    classes = sorted(set(train_pool.labels.tolist()), key=lambda c: (len(c), c))  # "2" < "10"
    out = args.out / f"{args.task}.json"
    results = json.loads(out.read_text()) if out.exists() else {}
    for draw in args.draws:
        drawn = np.unique(
            np.concatenate(
                [harness.draw_indices(train_pool.labels, n, draw, args.seed) for n in args.sizes]
            )
        )
        held_out = train_pool.subset(
            held_out_rows(train_pool.labels, drawn, args.held_out, args.seed + draw)
        )
        for size in args.sizes:
            cell = results.setdefault(str(size), {}).get(str(draw))
            if cell is not None:
                continue
            draw_pool = train_pool.subset(
                harness.draw_indices(train_pool.labels, size, draw, args.seed)
            )
            print(f"{args.task} n={size} draw {draw}", flush=True)
            cell = channel_cells(args.family, draw_pool, held_out, classes, args.seed)
            cell["tfidf_lr"] = baseline_cell(draw_pool, held_out, args.seed)
            cell["commit"] = harness.commit()
            print(json.dumps({k: v for k, v in cell.items() if k != "commit"}), flush=True)
            results[str(size)][str(draw)] = cell
            args.out.mkdir(parents=True, exist_ok=True)
            out.write_text(json.dumps(results, indent=1))
            (args.out / f"{args.task}.md").write_text(
                f"# The channel alone, {args.task}: held-out accuracy % / macro-F1\n\n"
                f"Command: `python -m experiments.channel_alone --task {args.task}` "
                f"(family {args.family}, seed {args.seed}; {args.held_out} other training "
                "reviews score each draw; mean ± std over draws)\n\n" + table(results)
            )


if __name__ == "__main__":
    main()
