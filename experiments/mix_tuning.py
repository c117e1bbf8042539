"""The mix's keep-the-deep-part rule judged on tuning reviews: neither validation nor test.

``experiments/mix_rule.py`` scores each candidate rule by nested cross-validation on
a run's validation logits. That judge leans to the deep part: the deep part's best
epoch was chosen on those same validation reviews, so its validation logits look
better than its logits on unseen reviews (the channel is fit on the training split
only and has no such edge). On the small-corpora draws nested cross-validation picked
"always keep it", which cost up to 1 point of test accuracy on the from-scratch runs.

Here the judge is a third set. IMDB's training split holds 25,000 reviews and a draw
takes 500 or 1,000 of them; the rest never reach the run. For each draw this script
writes ``tuning.jsonl``, ``--tuning-size`` reviews (5,000) of the training split
outside every drawn size of that draw, stratified by the task's labels and seeded,
and trains each method as a user types it with the tuning table given as the run's
``--test`` table (no export)::

    hatt train FAMILY --data draw.jsonl --test tuning.jsonl --run-dir R --export-dir ''

so the run's ``test_probabilities.npz`` holds the deep part's and the channel's
logits of the tuning reviews. Every rule of ``mix_rule.RULES`` (and the channel alone)
then decides on the run's whole validation split, exactly as
:func:`hatt.training.channel.mix.choose_mix` would with its margin, and its mix is scored on
the tuning reviews. IMDB's test split is not read.

**The criterion, fixed before any run was made**: the rule with the highest tuning
accuracy, averaged over runs (each run weighs the same); where two rules tie to 0.01
points, the one nearer today's margin. The mean tuning log loss is reported beside it.
Draws 1 and 2 (19 runs) chose ``always``.

**A second question, fixed before its runs (draw 3)**: the fit's penalty anchored at
the channel as fit (``mix_rule.ANCHORED``: ``½(a² + (b - 1)² + ‖c - b·intercept‖²)``
instead of ``½(a² + b²)`` with ``c`` free) was better on the 19 runs above (72.87 →
73.00 % mean tuning accuracy), found by looking at them, so they cannot judge it. It
is judged on draw 3 alone (``--judge-draws 3 --rules always anchored``: polarity at
500 and 1,000 labels from scratch (CNN, HAN, BiGRU), HAN and BiGRU with unlabeled
text at 1,000, ratings at 1,000 (CNN, HAN)), with the criterion above: it replaces
``always`` only if its mean tuning accuracy over those runs is higher by more than
0.01 points.

**A third question, fixed before its runs (draw 4)**: the from-scratch deep parts'
validation logits flatter them (their epoch was chosen on those reviews: 3-7 points
above their tuning accuracy over draws 1-3, ``all_draws.md``). Fitting the mix on the
deep part's *cross-fitted* validation logits (each of 5 folds' at the epoch the other
folds would have chosen; recorded by every run since ``hatt.training.channel.crossfit``) may
remove that. Candidates: ``mix_rule.CROSSFIT`` (the anchored fit on the cross-fitted
logits, kept whenever weighed) and ``mix_rule.CROSSFIT_1SE`` (kept only where the
held-out check on those logits passes by one standard error), both applied to the
model's own deep logits. Judged on draw 4 alone, the same 10 kinds of run as draw 3
(``--judge-draws 4 --rules anchored crossfit "crossfit 1 SE"``), with the criterion
above: a cross-fitted rule replaces ``anchored`` only if its mean tuning accuracy over
those runs is higher by more than 0.01 points (between the two, the higher; a tie goes
to the one listed first).

**A fifth question, fixed before its runs were looked at (draws 8 and 9)**: on the
ratings (8 classes) at 1,000 labels, with the channel's multi-class settings
(``experiments/channel_grid.py``, kept on draws 6 and 7), the anchored mix scored below
the channel alone: its two weights and 8 biases are fit on 100 validation reviews, next
to deep parts near chance. An exploration on draws 1-5's ratings runs (10 runs, their
channels refit by ``channel_grid.py``, scored by a throwaway script, so those draws
cannot judge it and no figures are given here): the anchored mix scored below the
channel alone as fit, and the anchored mix with its biases held at the channel's
intercept (``mix_rule.BIASES_HELD``: only ``a`` and ``b`` fit) about level with it. Candidate: ``mix_rule.BIASES_HELD`` (above two classes; two classes
keep the anchored mix). Judged on draws 8 and 9's ratings runs (CNN and HAN at 1,000
labels, 4 runs, run with the multi-class channel; ``--judge-draws 8 9 --rules anchored
"anchored, biases held"``), with the criterion above: it replaces ``anchored`` above two
classes only if its mean tuning accuracy over those runs is higher by more than 0.01
points. **Judged (``biases_held.md``): kept**, 36.80 % against 36.30 % (the mean tuning
log loss rose from 1.7530 to 1.7736); ``hatt.training.channel.mix.choose_mix`` holds the biases
above two classes and ``mix_rule.TODAY`` is this rule.

Run:  python -m experiments.mix_tuning --data aclImdb [--task polarity] [--sizes 500 1000]
      [--draws 1 2] [--methods cnn han rnn han_unsup] [--tuning-size 5000]
      [--runs runs/mix_tuning] [--out experiments/results/mix_rule]
      python -m experiments.mix_tuning --report-only  (the table from the finished runs)
      python -m experiments.mix_tuning --report-only --baselines [--task rating]  (NB-LR and
        TF-IDF + LR on every drawn table, scored on its tuning reviews, beside hatt)
      python -m experiments.mix_tuning --report-only --judge-draws 3 --rules always anchored
        --name anchored  (the second question: anchored.json / anchored.md)
"""

import argparse
import json
import os
import shlex
import sys
import time
from pathlib import Path

import numpy as np

from experiments import harness, mix_rule  # the draws and tables; the rules and how each decides
from experiments import unlabeled as unlabeled_rows  # the --unlabeled methods' flags
from hatt.models import FAMILIES

ROOT = Path(__file__).resolve().parents[1]
RUNS = ROOT / "runs" / "mix_tuning"
RESULTS = ROOT / "experiments" / "results" / "mix_rule"
TIE = 1e-4  # tuning accuracies this close are a tie (0.01 points)


def parse_args(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", default=os.environ.get(harness.ENV_VAR), help="IMDB folder")
    parser.add_argument("--task", choices=harness.TASKS, default="polarity")
    parser.add_argument("--sizes", type=int, nargs="+", default=[500, 1000])
    parser.add_argument("--draws", type=int, nargs="+", default=[1])
    parser.add_argument(
        "--methods",
        nargs="+",
        default=["cnn", "han", "rnn"],
        help="families (from scratch) or experiments/unlabeled.py's hatt methods",
    )
    parser.add_argument("--unlabeled", default=str(unlabeled_rows.UNSUP))
    parser.add_argument("--tuning-size", type=int, default=5000)
    parser.add_argument("--seed", type=int, default=1337, help="seed of the draws")
    parser.add_argument("--runs", default=str(RUNS))
    parser.add_argument("--out", default=str(RESULTS))
    parser.add_argument("--repeats", type=int, default=10, help="nested CV repeats (reported)")
    parser.add_argument("--report-only", action="store_true")
    parser.add_argument("--judge-draws", type=int, nargs="+", help="judge on these draws' runs")
    parser.add_argument("--rules", nargs="+", help="choose among these rules only (default: all)")
    parser.add_argument("--name", default="tuning", help="the report's file names")
    parser.add_argument(
        "--baselines",
        action="store_true",
        help="also fit NB-LR and TF-IDF + LR on each drawn table of --task under --runs "
        "(of --draws only, where given with it), scored on the draw's tuning reviews",
    )
    return parser.parse_args(argv)


# === The tables ===


def tuning_indices(labels, excluded, size, draw, seed):
    """``size`` training reviews outside ``excluded``, stratified by ``labels`` and seeded
    by ``(seed, draw)`` apart from the draws' own permutation."""
    labels = np.asarray(labels)
    free = np.setdiff1d(np.arange(len(labels)), np.asarray(sorted(excluded), np.int64))
    if size > len(free):
        raise ValueError(
            f"Expected --tuning-size <= {len(free)} (the training reviews outside the draw). "
            f"Received: {size}"
        )
    picked = harness.draw_indices(labels[free], size, draw, seed + 7919)  # not the draws' own
    return free[picked]


def write_tables(pools, task, sizes, draw, seed, tuning_size, runs):
    """Per size, the draw's table, and the draw's one tuning table: ``{size: tables}``."""
    place = Path(runs) / task / "data"
    labels = pools["train"].labels
    drawn = {size: harness.draw_indices(labels, size, draw, seed) for size in sizes}
    tuning = place / f"d{draw}-tuning.jsonl"
    if not tuning.exists():
        excluded = set(np.concatenate(list(drawn.values())).tolist())
        picked = tuning_indices(labels, excluded, tuning_size, draw, seed)
        harness.write_table(pools["train"].subset(picked), tuning)
    tables = {}
    for size, indices in drawn.items():
        train = place / f"n{size:05d}-d{draw}.jsonl"
        if not train.exists():
            harness.write_table(pools["train"].subset(indices), train)
        tables[size] = {"train": train, "test": tuning}
    return tables


# === The runs ===


def train(method, tables, run_dir, unlabeled):
    """``hatt train`` of one method on a draw, the tuning table as its test split."""
    family = method.split("_")[0]
    extra = ["--export-dir", ""]
    if method not in FAMILIES:
        overrides = unlabeled_rows.HATT_METHODS[method][1]
        if overrides is not None:
            extra += ["--unlabeled", str(unlabeled)]
            for pair in overrides:
                extra += ["--set", pair]
    command = ["hatt", "train", family, "--data", str(tables["train"])]
    command += ["--test", str(tables["test"]), "--run-dir", str(run_dir), *extra]
    start = time.perf_counter()
    harness.run_hatt(command, run_dir.parent / f"{method}.log")
    print(f"{run_dir}: {time.perf_counter() - start:.0f} s", flush=True)


def run_all(args):
    pools = harness.create_dataset(args.data, args.task)
    for draw in args.draws:
        tables = write_tables(
            pools, args.task, args.sizes, draw, args.seed, args.tuning_size, args.runs
        )
        for size in args.sizes:
            for method in args.methods:
                run_dir = Path(args.runs) / args.task / f"n{size:05d}-d{draw}" / method
                if not (run_dir / "metrics.json").exists():
                    run_dir.parent.mkdir(parents=True, exist_ok=True)
                    train(method, tables[size], run_dir, args.unlabeled)


def run_baselines(args, draws=None):
    """NB-LR and TF-IDF + LR on every drawn table of ``args.task`` under ``args.runs``, as
    the small-corpora benchmark fits them (``C`` chosen on hatt's validation slice of the
    draw), the draw's tuning table as their test split: ``BASELINE.json`` beside the
    draw's runs (a finished one is kept)."""
    test_tokens = harness.CachedTestTokens()
    data = Path(args.runs) / args.task / "data"
    for table in sorted(data.glob("n*-d*.jsonl")):
        size, draw = (int(part) for part in table.stem[1:].split("-d"))
        if draws is not None and draw not in draws:
            continue
        tables = {"train": table, "test": data / f"d{draw}-tuning.jsonl"}
        place = Path(args.runs) / args.task / table.stem
        for name in harness.BASELINES:
            path = place / f"{name}.json"
            if not path.exists():
                place.mkdir(parents=True, exist_ok=True)
                cell = harness.baseline_cell(
                    name, tables, test_tokens, args.seed, tuning="validation"
                )
                path.write_text(json.dumps(cell, indent=2) + "\n")
                print(f"{path}: {100 * cell['test_accuracy']:.2f} %", flush=True)


# === The choice ===


def finished_runs(runs, draws=None):
    """Every finished run under ``runs`` (a ``metrics.json`` and both logit files), of
    ``draws`` only when given, named from the repository's root where it is inside it."""
    found = sorted(
        path.parent.resolve()
        for path in Path(runs).glob("*/n*-d*/*/metrics.json")
        if (path.parent / "test_probabilities.npz").exists()
        and (draws is None or int(path.parent.parent.name.split("-d")[1]) in draws)
    )
    return [path.relative_to(ROOT) if path.is_relative_to(ROOT) else path for path in found]


def tuning_scores(run_dir, channel=None):
    """Per rule, decided on the run's validation split: accuracy and log loss on its tuning
    reviews (the run's ``--test`` table). ``channel``: other channel logits
    (``{"validation", "test"}``, with their intercept) in place of the run's own."""
    from hatt.training import logit_accuracy, logit_log_loss

    def split(name):
        deep, own, y = mix_rule.load_split(run_dir, name)
        return deep, own if channel is None else channel[name], y

    crossfit = mix_rule.load_crossfit(run_dir)
    mixes = mix_rule.decide(*split("validation"), crossfit=crossfit)
    deep, channel, y = split("test")
    return {
        rule: {
            "accuracy": logit_accuracy(mix.logits(deep, channel), y),
            "log_loss": logit_log_loss(mix.logits(deep, channel), y),
            "deep_kept": bool(mix.deep > 0),
        }
        for rule, mix in mixes.items()
    }


def parts_accuracies(run_dir):
    """Each part alone on the run's validation split and its tuning reviews (as the run
    recorded them in ``ngram_channel.json``; its test split is the tuning table), or
    ``None`` for a run without that record."""
    path = Path(run_dir) / "ngram_channel.json"
    if not path.is_file():
        return None
    info = json.loads(path.read_text())
    return {
        f"{part}_{split}": info[f"{part}_{name}_accuracy"]
        for part in ("deep", "channel")
        for split, name in (("validation", "validation"), ("tuning", "test"))
    }


def kind_of(run):
    """``with unlabeled text`` for the ``--unlabeled`` methods, else ``from scratch``."""
    return "with unlabeled text" if "unsup" in Path(run["run_dir"]).name else "from scratch"


def _by_kind(result, rules):
    """Mean tuning accuracy per rule, from scratch and with unlabeled text."""
    kinds = sorted({kind_of(run) for run in result["runs"]})
    lines = ["", "By kind of run: mean tuning accuracy.", ""]
    lines.append(
        "| rule | "
        + " | ".join(
            f"{kind} ({sum(kind_of(r) == kind for r in result['runs'])})" for kind in kinds
        )
        + " |"
    )
    lines.append("|---|" + "---:|" * len(kinds))
    for rule in rules:
        means = [
            np.mean(
                [run["tuning"][rule]["accuracy"] for run in result["runs"] if kind_of(run) == kind]
            )
            for kind in kinds
        ]
        lines.append(
            f"| {mix_rule.shown(rule)} | " + " | ".join(f"{100 * m:.2f} %" for m in means) + " |"
        )
    return lines


def _parts_by_method(result):
    """Each part's accuracy on validation and on the tuning reviews, mean over a method's
    runs: a part that looks better on validation than on unseen reviews is flattered by
    it (the deep part's best epoch was chosen there)."""
    runs = [run for run in result["runs"] if run.get("parts")]
    if not runs:
        return []
    lines = [
        "",
        "Each part alone (mean over a method's runs): accuracy on the validation split "
        "against the tuning reviews.",
        "",
        "| method | runs | deep: validation | deep: tuning | channel: validation | channel: tuning |",
        "|---|---:|---:|---:|---:|---:|",
    ]
    methods = sorted(
        {Path(run["run_dir"]).parent.parent.name + "/" + Path(run["run_dir"]).name for run in runs}
    )
    for method in methods:
        group = [
            r
            for r in runs
            if Path(r["run_dir"]).parent.parent.name + "/" + Path(r["run_dir"]).name == method
        ]
        means = [
            np.mean([r["parts"][key] for r in group])
            for key in ("deep_validation", "deep_tuning", "channel_validation", "channel_tuning")
        ]
        lines.append(
            f"| {method} | {len(group)} | " + " | ".join(f"{100 * m:.1f} %" for m in means) + " |"
        )
    return lines


def baseline_cells(accuracies):
    """hatt's tuning accuracy per run beside the baselines fit on the same draw:
    ``{(task size, draw): {method or baseline: accuracy}}`` from ``{run_dir: accuracy}``
    and the ``BASELINE.json`` files of ``--baselines`` in each run's draw folder."""
    cells = {}
    for run_dir, accuracy in accuracies.items():
        run_dir = Path(run_dir)
        place = run_dir.parent if run_dir.is_absolute() else ROOT / run_dir.parent
        size, draw = (int(part) for part in run_dir.parent.name[1:].split("-d"))
        row = cells.setdefault((f"{run_dir.parent.parent.name} {size}", draw), {})
        row[run_dir.name] = accuracy
        for name in harness.BASELINES:
            if (place / f"{name}.json").is_file():
                row[name] = json.loads((place / f"{name}.json").read_text())["test_accuracy"]
    return cells


def beside_baselines(cells, rule=mix_rule.TODAY):
    """The markdown lines of :func:`baseline_cells`' ``cells`` (hatt under ``rule``): per
    task, size and method, the mean over the draws where every column was run."""
    if not any(name in row for row in cells.values() for name in harness.BASELINES):
        return []
    lines = [
        "",
        f"Beside the linear baselines on the same draws' tuning reviews (hatt under "
        f"{rule}; NB-LR and TF-IDF + LR fit as the small-corpora benchmark fits "
        "them, `--baselines`): mean over the draws that have the method and both "
        "baselines; the last column against the better baseline of each draw, in bold "
        "where hatt is below it.",
        "",
        "| task, labels | method | draws | hatt | NB-LR | TF-IDF + LR | hatt − better baseline |",
        "|---|---|---:|---:|---:|---:|---:|",
    ]
    for group in sorted({key[0] for key in cells}):
        rows = {draw: row for (g, draw), row in cells.items() if g == group}
        methods = sorted({m for row in rows.values() for m in row} - set(harness.BASELINES))
        for method in methods:
            draws = sorted(
                d for d, row in rows.items() if method in row and set(harness.BASELINES) <= set(row)
            )
            if not draws:
                continue
            means = [np.mean([rows[d][m] for d in draws]) for m in (method, *harness.BASELINES)]
            better = np.mean([max(rows[d][b] for b in harness.BASELINES) for d in draws])
            gap = means[0] - better
            shown = f"{100 * gap:+.2f}"
            lines.append(
                f"| {group} | {method} | {len(draws)} | "
                + " | ".join(f"{100 * m:.2f} %" for m in means)
                + f" | {f'**{shown}**' if gap < 0 else shown} |"
            )
    return lines


def choose(runs, rules=None):
    """The criterion of the module docstring over ``runs`` (``[{"tuning": scores}]``),
    among ``rules`` (default: every rule scored)."""
    mean = mix_rule.mean_over_runs(runs, "tuning")
    rules = list(mean) if rules is None else list(rules)
    # ties go to the rule nearest today's, or (today's not among them) to the first listed
    today = rules.index(mix_rule.TODAY) if mix_rule.TODAY in rules else 0
    best = max(mean[rule]["accuracy"] for rule in rules)
    tied = [i for i, rule in enumerate(rules) if mean[rule]["accuracy"] >= best - TIE]
    chosen = rules[min(tied, key=lambda i: (abs(i - today), i))]
    return mean, chosen


def analyse(run_dirs, repeats, rules=None):
    runs = []
    for run_dir in run_dirs:
        deep, channel, y = mix_rule.load_split(run_dir, "validation")
        runs.append(
            {
                "run_dir": str(run_dir),
                "validation_reviews": len(y),
                "tuning_reviews": len(mix_rule.load_split(run_dir, "test")[2]),
                "tuning": tuning_scores(run_dir),
                "parts": parts_accuracies(run_dir),
                "nested": mix_rule.nested_scores(
                    deep, channel, y, repeats=repeats, crossfit=mix_rule.load_crossfit(run_dir)
                ),
            }
        )
    mean, chosen = choose(runs, rules)
    return {"runs": runs, "mean": mean, "chosen": chosen, "among": rules, "repeats": repeats}


def markdown(result, command):
    rules = list(result["mean"])
    among = f" among {', '.join(result['among'])}" if result.get("among") else ""
    lines = [
        "# The mix's rule for keeping the deep part, judged on tuning reviews",
        "",
        f"Written by `{command}`: each rule decides on a run's validation split and is "
        "scored on that draw's tuning reviews (training reviews outside the draw; IMDB's "
        "test split is not read). Criterion fixed before the runs: the highest mean "
        f"tuning accuracy over runs{among}. Chosen: **{result['chosen']}**.",
        "",
        "| rule | tuning accuracy (mean over runs) | tuning log loss (mean) | deep part kept "
        "(share of runs) | nested-CV log loss on validation (mean) |",
        "|---|---:|---:|---:|---:|",
    ]
    for rule in rules:
        m = result["mean"][rule]
        nested = np.mean([run["nested"][rule]["held_out_loss"] for run in result["runs"]])
        lines.append(
            f"| {mix_rule.shown(rule)} | {100 * m['accuracy']:.2f} % | {m['log_loss']:.4f} | "
            f"{100 * m['deep_kept']:.0f} % | {nested:.4f} |"
        )
    lines += (
        _by_kind(result, rules)
        + _parts_by_method(result)
        + beside_baselines(
            baseline_cells(
                {
                    run["run_dir"]: run["tuning"][mix_rule.TODAY]["accuracy"]
                    for run in result["runs"]
                }
            )
        )
    )
    lines += ["", "Per run: tuning accuracy (deep part kept: *).", ""]
    names = " | ".join(map(mix_rule.shown, rules))
    lines.append(f"| run | validation reviews | tuning reviews | {names} |")
    lines.append("|---|---:|---:|" + "---:|" * len(rules))
    for run in result["runs"]:
        cells = [
            f"{100 * run['tuning'][r]['accuracy']:.2f} %{'*' if run['tuning'][r]['deep_kept'] else ''}"
            for r in rules
        ]
        lines.append(
            f"| {run['run_dir']} | {run['validation_reviews']} | {run['tuning_reviews']} | "
            + " | ".join(cells)
            + " |"
        )
    return "\n".join(lines) + "\n"


def report(args):
    run_dirs = finished_runs(args.runs, args.judge_draws)
    if not run_dirs:
        raise SystemExit(f"No finished run under {args.runs} (draws {args.judge_draws}).")
    result = analyse(run_dirs, args.repeats, args.rules)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    (out / f"{args.name}.json").write_text(json.dumps(result, indent=2) + "\n")
    command = "python -m experiments.mix_tuning --report-only"
    if args.baselines:  # the report's baseline table needs them fit
        command += f" --baselines --task {args.task}"
    if args.judge_draws:
        command += " --judge-draws " + " ".join(map(str, args.judge_draws))
    if args.rules:
        command += " --rules " + " ".join(map(shlex.quote, args.rules))
    if args.name != "tuning":
        command += f" --name {args.name}"
    if args.repeats != parse_args([]).repeats:
        command += f" --repeats {args.repeats}"
    table = markdown(result, command)
    (out / f"{args.name}.md").write_text(table)
    print(table)


def main(argv=None):
    args = parse_args(argv)
    if not args.report_only:
        run_all(args)
    if args.baselines:
        run_baselines(args, args.draws if not args.report_only else None)
    report(args)
    return 0


if __name__ == "__main__":
    sys.exit(main())
