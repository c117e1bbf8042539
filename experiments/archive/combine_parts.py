"""How should the deep part and the n-gram channel be combined? Read from trained runs.

A run trained with ``ngram.fit="separate"`` saves both parts' logits on the
validation and test splits (``validation_probabilities.npz`` /
``test_probabilities.npz``: ``deep_logits``, ``channel_logits``). This script
compares, per run, ways to weigh them, each chosen on the validation split
only:

- ``channel``: the channel alone (its own intercept);
- ``likelihood``: what training does, ``a·deep + b·channel + c`` by a
  practically unpenalized logistic regression on validation (least log loss);
- ``accuracy``: ``w·deep/σ_deep + (1 − w)·channel/σ_channel`` with ``w`` on a
  grid of 21 points, the one with the highest validation accuracy (ties: the
  smallest ``w``).

It reports each one's validation accuracy and log loss, the likelihood mix's
5-fold cross-validated accuracy on validation against the channel's on the
same folds, and the test accuracy of each (read once, after the choice).

    python -m experiments.archive.combine_parts RUN_DIR [RUN_DIR ...] [--name combine_parts]

Writes experiments/results/NAME.json and NAME.md.
"""

import argparse
import json
import shlex
import sys
from pathlib import Path

import numpy as np

from hatt.training import logit_accuracy as accuracy
from hatt.training import logit_log_loss as log_loss

EXPERIMENTS = Path(__file__).resolve().parents[1]  # experiments/ (this file: archive/)
RESULTS = EXPERIMENTS / "results"
GRID = np.linspace(0.0, 1.0, 21)


def parse_args(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("runs", nargs="+", help="run directories of separate-fit binary runs")
    parser.add_argument("--name", default="combine_parts")
    parser.add_argument("--results", default=str(RESULTS))
    parser.add_argument("--seed", type=int, default=0, help="the cross-validation's folds")
    return parser.parse_args(argv)


def load_parts(run):
    """`{split: (deep, channel, labels)}` of a run directory, float64 logits."""
    parts = {}
    for split in ("validation", "test"):
        path = Path(run) / f"{split}_probabilities.npz"
        if not path.is_file():
            raise SystemExit(f"{run}: no {path.name} (train it with this hatt first)")
        saved = np.load(path)
        missing = {"deep_logits", "channel_logits", "labels"} - set(saved.files)
        if missing:
            raise SystemExit(
                f"{path}: no {', '.join(sorted(missing))}: not a separate-fit run of the n-gram "
                "channel (ngram.fit='separate')"
            )
        deep, channel = (
            np.asarray(saved[k], np.float64) for k in ("deep_logits", "channel_logits")
        )
        if deep.ndim != 1:
            raise SystemExit(f"{path}: {deep.shape[-1]} classes; this script reads two-class runs")
        parts[split] = (deep, channel, np.asarray(saved["labels"]))
    return parts


def _likelihood_fit(x, y):
    from sklearn.linear_model import LogisticRegression

    return LogisticRegression(C=1e4, max_iter=1000).fit(x, y)


def compare(parts, seed=0):
    """The three combinations of one run, chosen on validation, and their figures."""
    from sklearn.model_selection import StratifiedKFold

    deep, channel, y = parts["validation"]
    x = np.stack([deep, channel], axis=1)
    mixer = _likelihood_fit(x, y)
    sd, sc = deep.std() or 1.0, channel.std() or 1.0
    by_w = [accuracy(w * deep / sd + (1 - w) * channel / sc, y) for w in GRID]
    w = float(GRID[int(np.argmax(by_w))])  # argmax: the first (smallest w) of ties

    def combinations(split):
        d, c, _ = parts[split]
        return {
            "channel": c,
            "likelihood": mixer.decision_function(np.stack([d, c], axis=1)),
            "accuracy": w * d / sd + (1 - w) * c / sc,
            "deep": d,
        }

    folds = StratifiedKFold(5, shuffle=True, random_state=seed).split(x, y)
    cv_mix, cv_channel = [], []
    for train, held in folds:
        fold_mixer = _likelihood_fit(x[train], y[train])
        cv_mix.append(accuracy(fold_mixer.decision_function(x[held]), y[held]))
        cv_channel.append(accuracy(channel[held], y[held]))
    row = {
        "accuracy_weight": w,
        "likelihood_mix": {
            "deep": float(mixer.coef_[0][0]),
            "channel": float(mixer.coef_[0][1]),
            "bias": float(mixer.intercept_[0]),
        },  # fmt: skip
        "cv5_validation_accuracy": {
            "likelihood": float(np.mean(cv_mix)),
            "channel": float(np.mean(cv_channel)),
        },  # fmt: skip
    }
    for split in ("validation", "test"):
        labels = parts[split][2]
        for name, logits in combinations(split).items():
            row.setdefault(name, {})[f"{split}_accuracy"] = accuracy(logits, labels)
            if name != "accuracy":  # the weighted sum of standardized logits is no probability
                row[name][f"{split}_loss"] = log_loss(logits, labels)
    return row


def markdown(report):
    lines = [
        f"Command: `{report['command']}`",
        "",
        "| run | deep val | channel val | mix val (likelihood) | channel val loss | mix val loss "
        "| 5-fold CV on val: mix / channel | accuracy-chosen w | test: channel | test: likelihood "
        "mix | test: accuracy-chosen |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for run, r in report["runs"].items():
        cv = r["cv5_validation_accuracy"]
        lines.append(
            f"| {run} | {r['deep']['validation_accuracy']:.2%} "
            f"| {r['channel']['validation_accuracy']:.2%} "
            f"| {r['likelihood']['validation_accuracy']:.2%} "
            f"| {r['channel']['validation_loss']:.4f} | {r['likelihood']['validation_loss']:.4f} "
            f"| {cv['likelihood']:.2%} / {cv['channel']:.2%} | {r['accuracy_weight']:.2f} "
            f"| {r['channel']['test_accuracy']:.2%} | **{r['likelihood']['test_accuracy']:.2%}** "
            f"| {r['accuracy']['test_accuracy']:.2%} |"
        )
    return "\n".join(lines) + "\n"


def main(argv=None):
    args = parse_args(argv)
    runs = {str(run): compare(load_parts(run), args.seed) for run in args.runs}
    report = {
        "command": "python -m experiments.archive.combine_parts "
        + shlex.join(sys.argv[1:] if argv is None else argv),
        "grid": GRID.tolist(),
        "runs": runs,
    }
    out = Path(args.results)
    out.mkdir(parents=True, exist_ok=True)
    (out / f"{args.name}.json").write_text(json.dumps(report, indent=2) + "\n")
    (out / f"{args.name}.md").write_text(markdown(report))
    print(markdown(report))
    return report


if __name__ == "__main__":
    main()
