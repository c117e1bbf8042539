"""Which n-gram channel? Cross-validated on the training split only.

The n-gram channel of the families (``hatt.layers.NgramLogit`` fit as an
NB-weighted logistic regression, ``ngram.init="nblr"``) depends on its longest
n-gram and its hash buckets. The 2,500-review validation split is too small to
tell settings apart that differ by a few tenths of a point (its standard error
is about 0.6 points), so this script compares them by 5-fold cross-validation on
the 22,500 training reviews, with folds of contiguous review ids per class (ids
come grouped by movie, see ``validation_leak.py``, so a fold shares few movies
with the others). The validation accuracy of the fit on all training reviews is
reported beside it; the test split is not read.

Tokens are the CNN preset's (``hatt/presets/cnn.json``: 30,000 words,
min count 2, 800 tokens, head + tail), as the channel sees them, unless
``--tokens`` names other vocabularies and lengths (``MAX_TOKENS:LENGTH``; a
length of 0 keeps every token). ``--reduction`` compares the layer's reductions
(``"sqrt"``: a review's features divided by the square root of their count, a
length normalisation), ``--alpha`` NB smoothings, ``--beta``
Wang & Manning's interpolation of the logistic regression's coefficients with
their mean magnitude (β = 1: plain NB-LR, hatt's fit; β = 0: NB's ratios alone).

    python -m experiments.archive.channel_cv [--data PATH] [--seed 1337] [--limit N]
        [--settings 2:1048576 3:1048576 3:4194304] [--C 0.1 0.3]
        [--tokens 30000:800 100000:0] [--reduction sum sqrt]
        [--alpha 1.0] [--beta 1.0] [--name channel_cv]

Writes experiments/results/NAME.json and NAME.md (NAME: channel_cv).
"""

import argparse
import itertools
import json
import shlex
import sys
import time
from pathlib import Path

import keras
import numpy as np
from sklearn.linear_model import LogisticRegression

import hatt
from hatt.training import (
    assemble_config,
    channel_accuracy,
    create_vectorizer,
    fit_nb_logistic,
    layer_features,
    log_count_ratios,
    ngram_counts,
)

EXPERIMENTS = Path(__file__).resolve().parents[1]  # experiments/ (this file: archive/)
RESULTS = EXPERIMENTS / "results"
EVERY_TOKEN = 1_000_000  # a sequence_length no review reaches (IMDB's longest: ~2,500 words)


def parse_args(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", default=None, help="aclImdb folder or .tar.gz (else $HATT_IMDB)")
    parser.add_argument("--seed", type=int, default=1337, help="validation split seed")
    parser.add_argument("--limit", type=int, default=None, help="keep at most N reviews a split")
    parser.add_argument(
        "--settings",
        nargs="+",
        default=["2:1048576", "3:1048576", "3:4194304"],
        help="NGRAM:BUCKETS pairs to compare",
    )
    parser.add_argument("--C", nargs="+", type=float, default=[0.1, 0.3], dest="C")
    parser.add_argument(
        "--tokens", nargs="+", default=None, metavar="MAX_TOKENS:LENGTH",
        help="vocabularies and lengths to compare (0: every token; default: the CNN preset's)",
    )  # fmt: skip
    parser.add_argument("--alpha", nargs="+", type=float, default=[1.0], help="NB smoothing")
    parser.add_argument(
        "--reduction", nargs="+", choices=("sum", "mean", "sqrt"), default=["sum"],
        help="the layer's reduction of a review's feature weights",
    )  # fmt: skip
    parser.add_argument(
        "--beta", nargs="+", type=float, default=[1.0],
        help="interpolation with the mean weight (1: none, NB-LR as hatt fits it)",
    )  # fmt: skip
    parser.add_argument("--name", default="channel_cv", help="the results' file name")
    parser.add_argument("--folds", type=int, default=5)
    parser.add_argument("--validation-size", type=int, default=2500)
    parser.add_argument("--results", default=str(RESULTS))
    return parser.parse_args(argv)


def review_number(review_id):
    """'train/pos/12397_8' → 12397."""
    return int(str(review_id).rsplit("/", 1)[-1].split("_")[0])


def block_folds(ids, labels, folds):
    """Per class, reviews sorted by id and cut into ``folds`` contiguous chunks."""
    labels = np.asarray(labels)
    numbers = np.array([review_number(i) for i in ids])
    chunks = []
    for label in (0, 1):
        members = np.where(labels == label)[0]
        chunks.append(np.array_split(members[np.argsort(numbers[members], kind="stable")], folds))
    out = []
    for k in range(folds):
        held = np.concatenate([c[k] for c in chunks])
        out.append((np.setdiff1d(np.arange(len(labels)), held), held))
    return out


def nb_logistic(counts, labels, c, alpha, beta=1.0, reduction="sum"):
    """``(weights, intercept)`` of NB-LR on binary features; ``beta < 1`` interpolates.

    ``reduction`` is the layer's (``"sqrt"`` divides a review's features by the
    square root of their count).

    β = 1 is :func:`hatt.training.fit_nb_logistic` itself. Below 1, the
    logistic regression's coefficients ``w`` (on the NB-scaled features) become
    ``(1 - β) · mean|w| + β · w`` (Wang & Manning 2012's NBSVM interpolation), so
    β = 0 weighs every n-gram by its NB ratio alone.
    """
    if beta == 1.0:
        return fit_nb_logistic(counts, labels, binary=True, reduction=reduction, C=c, alpha=alpha)[
            :2
        ]
    import scipy.sparse as sp

    ratios = log_count_ratios(counts, labels, alpha=alpha)
    features = layer_features(counts, True, reduction) @ sp.diags(ratios)
    logistic = LogisticRegression(C=c, solver="liblinear", random_state=0, max_iter=1000)
    model = logistic.fit(features, labels)  # the binary solver of hatt's channel fits
    coef = model.coef_.ravel()
    coef = (1.0 - beta) * np.abs(coef).mean() + beta * coef
    return (coef * ratios).astype(np.float32), float(model.intercept_[0])


def evaluate(
    counts, labels, folds, validation_counts, validation_labels, c, alpha, beta=1.0, reduction="sum"
):
    """k-fold accuracy on the training split, and the full fit's validation accuracy."""
    start = time.perf_counter()

    def fit(rows):
        return nb_logistic(counts[rows], labels[rows], c, alpha, beta, reduction)

    scores = []
    for train, held in folds:
        weights, intercept = fit(train)
        scores.append(
            channel_accuracy(counts[held], labels[held], weights, True, reduction, intercept)
        )
    weights, intercept = fit(np.arange(len(labels)))
    return {
        "cv_accuracy": float(np.mean(scores)),
        "fold_accuracies": [float(s) for s in scores],
        "validation_accuracy": channel_accuracy(
            validation_counts, validation_labels, weights, True, reduction, intercept
        ),
        "seconds": round(time.perf_counter() - start, 1),
    }


def token_settings(args):
    """``[(max_tokens, sequence_length or None)]``: --tokens, else the CNN preset's."""
    if not args.tokens:
        config = assemble_config("cnn")
        return [(config.max_tokens, config.sequence_length)]
    out = []
    for item in args.tokens:
        try:
            max_tokens, length = (int(v) for v in item.split(":"))
        except ValueError:
            raise SystemExit(
                f"--tokens takes MAX_TOKENS:LENGTH pairs. Received: {item!r}"
            ) from None
        out.append((max_tokens, length or None))
    return out


def encode(imdb, max_tokens, length):
    """The training and validation ids with the CNN preset's tokens, but these two."""
    overrides = {"max_tokens": max_tokens, "sequence_length": length or EVERY_TOKEN}
    vectorizer = create_vectorizer(assemble_config("cnn", overrides=overrides))
    vectorizer.adapt(imdb.train.texts, progress=True)
    ids = [
        hatt.data.encode(split.texts, vectorizer, progress=True)
        for split in (imdb.train, imdb.validation)
    ]
    return vectorizer.vocabulary_size, ids


def main(argv=None):
    args = parse_args(argv)
    tokens = token_settings(args)  # a malformed --tokens fails before the data is read
    imdb = hatt.data.load_imdb(
        args.data, seed=args.seed, limit=args.limit, validation_size=args.validation_size
    )
    labels = np.asarray(imdb.train.labels)
    validation_labels = np.asarray(imdb.validation.labels)
    folds = block_folds(imdb.train.ids, labels, args.folds)
    rows = []
    fits = (args.reduction, args.alpha, args.beta, args.C)  # each token and n-gram setting's
    bar = keras.utils.Progbar(
        len(tokens) * len(args.settings) * int(np.prod([len(f) for f in fits])),
        unit_name="setting",
    )
    for max_tokens, length in tokens:
        vocabulary_size, (train_ids, validation_ids) = encode(imdb, max_tokens, length)
        for setting in args.settings:
            ngram, buckets = (int(v) for v in setting.split(":"))
            shape = (vocabulary_size, buckets, ngram)
            counts = ngram_counts(train_ids, *shape)
            validation_counts = ngram_counts(validation_ids, *shape)
            for reduction, alpha, beta, c in itertools.product(*fits):
                row = evaluate(counts, labels, folds, validation_counts, validation_labels,
                               c, alpha, beta, reduction)  # fmt: skip
                rows.append({"max_tokens": max_tokens, "length": length, "ngram": ngram,
                             "buckets": buckets, "reduction": reduction, "alpha": alpha,
                             "beta": beta, "C": c, **row})  # fmt: skip
                bar.add(1)
    report = {
        "command": command_line("channel_cv"),
        "seed": args.seed,
        "folds": args.folds,
        "train_size": len(labels),
        "tokens": "hatt/presets/cnn.json, but max_tokens and sequence_length as in each row",
        "rows": rows,
    }
    header = (
        "| vocabulary | tokens | longest n-gram | buckets | reduction | α | β | C "
        "| 5-fold CV accuracy (train) | folds | validation |"
    )

    def cells(r):
        length = "all" if r["length"] is None else f"{r['length']:,}"
        return (
            f"| {r['max_tokens']:,} | {length} | {r['ngram']} | 2^{int(np.log2(r['buckets']))} "
            f"| {r['reduction']} | {r['alpha']:g} | {r['beta']:g} | {r['C']} "
        )

    return write_report(report, header, cells, Path(args.results), args.name)


def command_line(script):
    """The command that ran, as the reports quote it."""
    return f"python -m experiments.archive.{script} {shlex.join(sys.argv[1:])}".strip()


def write_report(report, header, cells, results, name):
    """NAME.json and NAME.md: ``header`` then a row a result, ``cells(row)`` then CV and validation.

    ``header`` names every column, CV accuracy, the folds' accuracies and the
    validation accuracy coming after ``cells(row)``'s; ``cells`` may return
    ``(first, last)`` cells, ``last`` written after those three.
    """
    results.mkdir(parents=True, exist_ok=True)
    (results / f"{name}.json").write_text(json.dumps(report, indent=2) + "\n")
    lines = [header, "|" + "---|" * (header.count("|") - 1)]
    for r in report["rows"]:
        first, last = (cells(r), "") if isinstance(cells(r), str) else cells(r)
        lines.append(
            first
            + f"| {100 * r['cv_accuracy']:.2f} % "
            + f"| {' '.join(f'{100 * a:.1f}' for a in r['fold_accuracies'])} "
            + f"| {100 * r['validation_accuracy']:.2f} % |"
            + last
        )
    table = "\n".join(lines) + "\n"
    (results / f"{name}.md").write_text(f"Command: `{report['command']}`\n\n{table}")
    print(table)
    return report


if __name__ == "__main__":
    main()
