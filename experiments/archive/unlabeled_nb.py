"""What the NB ratios can take from unlabeled text: NB-LR with its log-count ratios smoothed
by how often each n-gram occurs in IMDB's 50,000 unlabeled reviews.

Issue 36, item 2 asks what the n-gram channel can take from unlabeled text (vocabulary,
IDF, NB ratios smoothed). The vocabulary was measured in ``experiments/unlabeled.py``
(``rnn_unsup_vocab``), the IDF in ``experiments/unlabeled_idf.py``; this script measures
the NB ratios, on the NB-LR baseline itself (``experiments/baselines.py``'s features and
classifier), the model of hatt's channel for two classes: if smoothing by unlabeled
text does not help the baseline, it will not help the channel.

NB-LR's ratios (Wang & Manning 2012, :func:`hatt.training.log_count_ratios`) smooth
every n-gram's document counts alike, ``p = alpha + Σ_pos f̂`` (``q`` likewise). With
unlabeled text the smoothing can be a prior centred on each n-gram's background rate, as
a Dirichlet prior smooths a language model with a collection's:

    p_f = alpha + Σ_pos f̂ + μ · u_f        q_f = alpha + Σ_neg f̂ + μ · u_f

where ``u_f`` is the fraction of unlabeled reviews that contain n-gram ``f`` and ``μ``
is the prior's weight in documents: an n-gram common in reviews at large needs more
labelled evidence to get a large ratio; one rare there keeps little smoothing beyond
``alpha``. ``μ = 0`` is NB-LR as it is.

The same draws, tuning reviews and exclusion as ``unlabeled_idf.py`` (its
:func:`unlabeled_idf.measure`): on the small-corpora benchmark's draws at ``--size``
labels, scored on each draw's 5,000 tuning reviews (training reviews outside the draw;
IMDB's test split is never read), every unsup text equal to a tuning review dropped.
Each ``μ`` of ``--priors`` is scored at every ``(alpha, C)`` of the baseline's grid.
Two classes only (above two, hatt's channel is TF-IDF, measured by ``unlabeled_idf.py``).

The question, set before the first run: does a ``μ`` raise the mean tuning accuracy
over the 5 draws and the grid's 28 points above ``μ = 0``'s, and on how many of the
140 (draw, point) is it below? Writes ``OUT/nb.json`` and ``OUT/nb.md``.

Run:  nice -n 10 python -m experiments.archive.unlabeled_nb --data aclImdb --draws 1 2 3 4 5
      [--size 1000] [--priors 30 300]
"""

import argparse
import os

import numpy as np

from experiments import baselines, harness
from experiments.archive import unlabeled_idf  # the draws, tuning reviews and exclusion: measure

PRIORS = (30.0, 300.0)  # μ: about 7 and 70 % of a 1,000-label draw's n-gram mass a class


def parse_args(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", default=os.environ.get(harness.ENV_VAR), help="IMDB folder")
    parser.add_argument("--unlabeled", default=str(unlabeled_idf.unlabeled_rows.UNSUP))
    parser.add_argument("--draws", type=int, nargs="+", default=[1, 2, 3, 4, 5])
    parser.add_argument("--size", type=int, default=1000)
    parser.add_argument("--tuning-size", type=int, default=5000)
    parser.add_argument("--priors", type=float, nargs="+", default=list(PRIORS), help="μ")
    parser.add_argument("--seed", type=int, default=1337, help="seed of the draws")
    parser.add_argument("--out", default=str(unlabeled_idf.RESULTS))
    args = parser.parse_args(argv)
    args.tasks = ["polarity"]
    return args


def smoothed_ratios(present, positive, alpha, background, mu):
    """``log((p / |p|₁) / (q / |q|₁))`` with ``p = alpha + Σ_pos f̂ + mu · background``.

    Args:
        present: ``[reviews, features]`` 0/1 (sparse) of the labelled reviews.
        positive: bool per review.
        alpha: the uniform smoothing, > 0.
        background: ``[features]``, the fraction of unlabeled reviews with each.
        mu: the prior's weight in documents (0: NB-LR's ratios).
    """
    prior = alpha + mu * np.asarray(background, np.float64)
    p = np.asarray(present[positive].sum(axis=0), np.float64).ravel() + prior
    q = np.asarray(present[~positive].sum(axis=0), np.float64).ravel() + prior
    return np.log(p / p.sum()) - np.log(q / q.sum())


def background_rates(features, unlabeled_tokens):
    """The fraction of ``unlabeled_tokens`` documents that contain each feature."""
    present = baselines.binarize(features.transform(unlabeled_tokens))
    return np.asarray(present.mean(axis=0)).ravel()


def compare_priors(train, tuning, unlabeled_tokens, num_classes, seed, priors=PRIORS):
    """``(accuracy, features)``: tuning accuracy of each ``μ`` at each ``(alpha, C)``."""
    if num_classes != 2:
        raise ValueError(f"Expected two classes (NB-LR's ratios). Received: {num_classes}")
    fixed = baselines.SETTINGS["nb_lr"]["fixed"]
    features = baselines.create_features("nb_lr", **fixed).fit(train.texts)
    x_train = baselines.binarize(features.transform(train.texts))
    x_tuning = baselines.binarize(features.transform(tuning.texts))
    background = background_rates(features, unlabeled_tokens)
    classes = np.unique(train.labels)
    positive = np.asarray(train.labels) == classes[1]
    grid = baselines.SETTINGS["nb_lr"]["grid"]
    accuracy = {}
    for mu in (0.0, *priors):
        scores = accuracy[_variant(mu)] = {}
        for alpha in grid["alpha"]:
            r = smoothed_ratios(x_train, positive, alpha, background, mu)
            scaled_train, scaled_tuning = x_train.multiply(r).tocsr(), x_tuning.multiply(r).tocsr()
            for C in grid["C"]:
                model = baselines.create_classifier(C, seed).fit(scaled_train, positive)
                predicted = np.where(model.predict(scaled_tuning), classes[1], classes[0])
                scores[f"alpha {alpha}, C {C}"] = float(np.mean(predicted == tuning.labels))
    return accuracy, len(features.vocabulary_)


def _variant(mu):
    return "draw" if mu == 0 else f"draw + unsup, μ {mu:g}"


def markdown(result, command):
    """Rows: the grid's points; columns: ``μ``; then the means and the counts below."""
    rows = result["tasks"]["polarity"]
    variants = list(next(iter(rows.values()))["accuracy"])
    points = list(next(iter(rows.values()))["accuracy"]["draw"])

    def mean(variant, point):
        return np.mean([row["accuracy"][variant][point] for row in rows.values()])

    lines = [
        "# NB-LR: NB ratios smoothed by the draw alone or by the unlabeled reviews' rates",
        "",
        f"`{command}`",
        "",
        f"{result['size']} labels a draw; mean accuracy over draws {result['draws']} on each "
        "draw's 5,000 tuning reviews (training reviews outside the draw), at each `(alpha, C)` "
        "of the baseline's grid; `μ`: the prior's weight in documents on each n-gram's "
        "rate in the unlabeled reviews (`draw`: NB-LR as it is).",
        "",
        "| alpha, C | " + " | ".join(variants) + " |",
        "|---|" + "---:|" * len(variants),
    ]
    for point in points:
        shown = " | ".join(f"{100 * mean(v, point):.2f} %" for v in variants)
        lines.append(f"| {point} | {shown} |")
    overall = [np.mean([mean(v, p) for p in points]) for v in variants]
    lines.append(
        "| **mean over the grid** | " + " | ".join(f"**{100 * m:.2f} %**" for m in overall) + " |"
    )
    best = [max(mean(v, p) for p in points) for v in variants]
    lines.append("| best point | " + " | ".join(f"{100 * m:.2f} %" for m in best) + " |")
    lines.append("")
    for variant in variants[1:]:
        below = sum(
            row["accuracy"][variant][p] < row["accuracy"]["draw"][p]
            for row in rows.values()
            for p in points
        )
        lines.append(
            f"- {variant}: below `draw` in {below} of {len(rows) * len(points)} (draw, point)."
        )
    return "\n".join(lines) + "\n"


def main(argv=None):
    args = parse_args(argv)

    def compare(train, tuning, unlabeled_tokens, num_classes, seed):
        return compare_priors(train, tuning, unlabeled_tokens, num_classes, seed, args.priors)

    return unlabeled_idf.measure(args, compare, "nb", markdown, "unlabeled_nb", argv)


if __name__ == "__main__":
    main()
