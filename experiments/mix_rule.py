"""Which rule should keep the deep part in the mix at small validation splits? Nested CV.

The mix (:func:`hatt.training.channel.mix.choose_mix`) fits ``a·deep + b·channel + c`` on the
validation split; a 5-fold check on it says whether the deep part lowers the held-out
log loss, and a rule keeps the deep part or not from it: a margin of ``KEEP_MARGIN_SE``
standard errors (1.0 until issue 36; now ``-inf``, keep it whenever the fit weighs it,
the fit's penalty anchored at the channel as fit: ``anchored``).
This script scores each candidate rule by nested cross-validation on the validation
logits of finished runs (``validation_probabilities.npz``):

- outer: repeated stratified K-fold on a run's validation reviews;
- on the outer training folds, each rule decides (the mix fit with the deep part, its
  held-out check on those reviews, kept or not by the rule's margin; else the channel
  alone, as :func:`choose_mix` does);
- the decided mix is scored on the outer held-out fold (log loss and accuracy).

This judge leans to the deep part, whose best epoch was chosen on the same validation
reviews; ``experiments/mix_tuning.py`` judges the rules on reviews no run saw, and chose
today's rule.

Rules: ``always`` (keep the deep part whenever its fit weight is positive), margins of
0, 0.5, 1 (the rule until issue 36) and 2 standard errors, ``channel`` (never keep it) and
``anchored`` (always, with the mix's penalty anchored at the channel as fit). The pooled
held-out log loss over every run and repeat picks the rule. Only then, as a report,
each rule is applied to the whole validation split and scored on the run's test logits
(``test_probabilities.npz``): those columns are not used to choose. It trains nothing.

Run:  python -m experiments.mix_rule RUN_DIR [RUN_DIR ...] [--repeats 10] [--out DIR]
"""

import argparse
import json
import sys
from pathlib import Path

import numpy as np

from hatt.training import (
    Mix,
    fit_mix,
    held_out_check,
    keeps_deep,
    logit_accuracy,
    logit_losses,
    predicted_classes,
)

# Margins in standard errors.
RULES = {"always": -np.inf, "0 SE": 0.0, "0.5 SE": 0.5, "1 SE": 1.0, "2 SE": 2.0}
CHANNEL = "channel"  # never keep the deep part
# Kept whenever weighed, the mix's penalty anchored at the channel as fit (b = 1, its own
# intercept) instead of at 0 (hatt.training.fit_mix's anchor): issue 36's second rule.
ANCHORED = "anchored"
# Issue 36's third question: the anchored mix fit on the deep part's cross-fitted
# validation logits (each fold's at the epoch the other folds chose;
# hatt.training.channel.crossfit), kept whenever weighed, or only where the held-out check on
# those logits passes by one standard error. Runs without the cross-fitted logits
# (before they were recorded) have neither rule.
CROSSFIT = "crossfit"
CROSSFIT_1SE = "crossfit 1 SE"
# Issue 36's fifth question: above two classes the anchored mix with its biases held at
# the channel's own intercept (times the channel's weight; hatt.training.fit_mix's
# hold_bias): only the two weights are fit on validation. Two classes: the anchored mix.
BIASES_HELD = "anchored, biases held"
# hatt's own rule: kept whenever weighed (KEEP_MARGIN_SE = -inf), the fit anchored at the
# channel as fit (hatt.training.channel.mix.choose_mix), chosen on draw 3 (mix_tuning.py); above
# two classes with its biases held, chosen on draws 8 and 9.
TODAY = BIASES_HELD


def shown(rule):
    """A rule's name in the tables, today's marked."""
    return f"{rule} (today)" if rule == TODAY else rule


def load_split(run_dir, name):
    """(deep logits, channel logits with its own intercept, labels) of a run's split."""
    data = np.load(Path(run_dir) / f"{name}_probabilities.npz")
    return (
        np.asarray(data["deep_logits"], np.float64),
        np.asarray(data["channel_logits"], np.float64),
        np.asarray(data["labels"], np.int64),
    )


def load_crossfit(run_dir):
    """The run's cross-fitted validation deep logits, or ``None`` (not recorded)."""
    with np.load(Path(run_dir) / "validation_probabilities.npz") as data:
        if "crossfit_deep_logits" not in data.files:
            return None
        return np.asarray(data["crossfit_deep_logits"], np.float64)


def num_classes_of(deep):
    return 2 if deep.ndim == 1 else deep.shape[1]


def decide(deep, channel, y, seed=0, crossfit=None):
    """Every rule's mix on these reviews: ``{rule: Mix}`` (one held-out check shared);
    the cross-fitted rules only with the cross-fitted deep logits ``crossfit``."""
    classes = num_classes_of(deep)
    with_deep = fit_mix(deep, channel, y)
    check = held_out_check(deep, channel, y, classes, seed=seed)
    if classes == 2:
        alone = Mix(0.0, 1.0, 0.0)  # the channel as fit (its intercept is in it)
    else:
        alone = fit_mix(deep, channel, y, use_deep=False)
    mixes = {}
    for rule, margin in RULES.items():
        passes = check["folds"] == 0 or keeps_deep(
            check["difference"], check["difference_se"], margin
        )
        mixes[rule] = with_deep if with_deep.deep > 0 and passes else alone
    mixes[CHANNEL] = alone
    # The channel's logits hold its intercept: anchor 0. Where the fit's a is 0, this is
    # already the anchored fit of the channel alone.
    mixes[ANCHORED] = fit_mix(deep, channel, y, anchor=0.0)
    mixes[BIASES_HELD] = (
        mixes[ANCHORED] if classes == 2 else fit_mix(deep, channel, y, anchor=0.0, hold_bias=True)
    )
    if crossfit is not None:
        mixes.update(crossfit_mixes(crossfit, channel, y, seed))
    return mixes


def crossfit_mixes(crossfit, channel, y, seed=0):
    """The cross-fitted rules' mixes: the anchored fit on the cross-fitted deep logits,
    kept whenever weighed (``crossfit``) or where its held-out check passes by one
    standard error (``crossfit 1 SE``; else the channel alone, fit the same way)."""
    fit = fit_mix(crossfit, channel, y, anchor=0.0)
    check = held_out_check(crossfit, channel, y, num_classes_of(crossfit), seed=seed, anchor=0.0)
    passes = check["folds"] == 0 or keeps_deep(check["difference"], check["difference_se"], 1.0)
    alone = fit_mix(crossfit, channel, y, use_deep=False, anchor=0.0)
    return {CROSSFIT: fit, CROSSFIT_1SE: fit if fit.deep > 0 and passes else alone}


def nested_scores(deep, channel, y, folds=5, repeats=10, crossfit=None):
    """Per rule: mean held-out log loss and accuracy over ``repeats`` outer K-folds (the
    rules decide on the cross-fitted logits where given, and are scored on ``deep``)."""
    from collections import defaultdict

    from sklearn.model_selection import StratifiedKFold

    losses, correct, kept = defaultdict(list), defaultdict(list), defaultdict(int)
    for repeat in range(repeats):
        splitter = StratifiedKFold(folds, shuffle=True, random_state=repeat)
        for train, held in splitter.split(np.zeros(len(y)), y):
            fitted = None if crossfit is None else crossfit[train]
            mixes = decide(deep[train], channel[train], y[train], seed=repeat, crossfit=fitted)
            for rule, mix in mixes.items():
                logits = mix.logits(deep[held], channel[held])
                losses[rule].append(logit_losses(logits, y[held]))
                correct[rule].append(predicted_classes(logits) == y[held])
                kept[rule] += int(mix.deep > 0)
    decisions = repeats * folds
    return {
        rule: {
            "held_out_loss": float(np.concatenate(losses[rule]).mean()),
            "held_out_accuracy": float(np.concatenate(correct[rule]).mean()),
            "deep_kept_share": kept[rule] / decisions,
        }
        for rule in losses
    }


def test_scores(run_dir):
    """Per rule, decided on the whole validation split: test accuracy (a report only)."""
    mixes = decide(*load_split(run_dir, "validation"), crossfit=load_crossfit(run_dir))
    deep, channel, y = load_split(run_dir, "test")
    return {
        rule: {
            "test_accuracy": logit_accuracy(mix.logits(deep, channel), y),
            "deep_kept": mix.deep > 0,
        }
        for rule, mix in mixes.items()
    }


def mean_over_runs(runs, part):
    """``{rule: {key: mean over runs of run[part][rule][key]}}``: every run weighs the same;
    the rules every run has (the cross-fitted ones only where each run recorded them)."""
    first = runs[0][part]
    rules = [rule for rule in first if all(rule in run[part] for run in runs)]
    return {
        rule: {key: float(np.mean([run[part][rule][key] for run in runs])) for key in first[rule]}
        for rule in rules
    }


def analyse(run_dirs, repeats):
    runs = []
    for run_dir in run_dirs:
        deep, channel, y = load_split(run_dir, "validation")
        print(f"{run_dir}: {len(y)} validation reviews, {repeats} x 5-fold")
        crossfit = load_crossfit(run_dir)
        runs.append(
            {
                "run_dir": str(run_dir),
                "validation_reviews": len(y),
                "nested": nested_scores(deep, channel, y, repeats=repeats, crossfit=crossfit),
                "test": test_scores(run_dir),
            }
        )
    # "pooled": the mean over runs of each run's held-out mean (every run weighs the same)
    pooled = mean_over_runs(runs, "nested")
    chosen = min(pooled, key=lambda rule: pooled[rule]["held_out_loss"])
    return {"runs": runs, "pooled": pooled, "chosen": chosen, "repeats": repeats}


def markdown(result):
    rules = list(result["pooled"])
    lines = [
        "# The mix's rule for keeping the deep part, chosen on validation",
        "",
        "Written by `python -m experiments.mix_rule` (nested cross-validation on each run's "
        f"validation logits, {result['repeats']} repeats of 5 folds). Chosen on the pooled "
        f"held-out log loss: **{result['chosen']}**. The test columns are a report, not "
        "used to choose.",
        "",
        "| rule | held-out log loss (pooled) | held-out accuracy (pooled) | deep part kept "
        "(share of decisions) |",
        "|---|---:|---:|---:|",
    ]
    for rule in rules:
        p = result["pooled"][rule]
        lines.append(
            f"| {shown(rule)} | {p['held_out_loss']:.4f} | {100 * p['held_out_accuracy']:.2f} % | "
            f"{100 * p['deep_kept_share']:.0f} % |"
        )
    lines += ["", "Per run: held-out log loss / test accuracy (deep part kept: *).", ""]
    lines.append("| run | validation reviews | " + " | ".join(map(shown, rules)) + " |")
    lines.append("|---|---:|" + "---:|" * len(rules))
    for run in result["runs"]:
        cells = [
            f"{run['nested'][r]['held_out_loss']:.4f} / "
            f"{100 * run['test'][r]['test_accuracy']:.2f} %{'*' if run['test'][r]['deep_kept'] else ''}"
            for r in rules
        ]
        lines.append(
            f"| {run['run_dir']} | {run['validation_reviews']} | " + " | ".join(cells) + " |"
        )
    return "\n".join(lines) + "\n"


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("run_dirs", nargs="+")
    parser.add_argument("--repeats", type=int, default=10)
    parser.add_argument("--out", default="experiments/results/mix_rule")
    args = parser.parse_args(argv)
    result = analyse(args.run_dirs, args.repeats)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    (out / "mix_rule.json").write_text(json.dumps(result, indent=2) + "\n")
    table = markdown(result)
    (out / "mix_rule.md").write_text(table)
    print(table)
    return 0


if __name__ == "__main__":
    sys.exit(main())
