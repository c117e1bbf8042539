"""hatt beside NB-LR and TF-IDF + LR on the tuning draws, from the reports' saved figures.

``mix_tuning.py`` and ``channel_grid.py`` record each run's tuning accuracy (a
mix_tuning report per rule, a channel_grid report per variant). This script sets
those figures beside the baselines fit on the same draws (``mix_tuning.py
--baselines``, whose ``BASELINE.json`` files lie in each draw's folder under
``--runs``) without the runs themselves: per task, size and method, the mean over
the draws, and every draw's figures in the JSON.

Each ``--from REPORT=KEY`` reads the runs of a report under ``KEY``: a rule of a
mix_tuning report or a variant of a channel_grid report. A run named by a later
``--from`` replaces the same run of an earlier one (a report that rescored runs
under today's settings after another).

It was written because the baselines' first figures on draws 2-9 were wrong:
``small_corpora.CachedTestTokens`` keyed a test table on its first ids, which are
line numbers, so a ``--baselines`` call over several draws scored every later
draw's baselines on the first draw's tuning reviews, part of which those draws had
trained on. They were fit again after the fix (``mix_tuning.py --baselines``).

Run:  python -m experiments.beside_baselines
      --from experiments/results/mix_rule/all_draws.json=anchored
      --from experiments/results/mix_rule/multiclass_all_draws.json=multiclass
      [--runs runs/mix_tuning] [--out experiments/results/mix_rule] [--name beside_baselines]
(polarity under ``anchored``, which is today's rule for two classes; the ratings
under today's channel and rule, as ``channel_grid.py`` rescored them.)
"""

import argparse
import json
import shlex
import sys
from pathlib import Path

from experiments import harness, mix_tuning  # the baseline cells and their table


def parse_args(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--from",
        dest="sources",
        action="append",
        required=True,
        metavar="REPORT=KEY",
        help="a mix_tuning report and a rule, or a channel_grid report and a variant "
        "(repeatable; a later one's runs replace an earlier one's)",
    )
    parser.add_argument("--runs", default=str(mix_tuning.RUNS))
    parser.add_argument("--out", default=str(mix_tuning.RESULTS))
    parser.add_argument("--name", default="beside_baselines", help="the report's file names")
    return parser.parse_args(argv)


def report_accuracies(path, key):
    """``{run_dir: tuning accuracy}`` of a report under ``key`` (a rule or a variant),
    and a description of where they come from."""
    report = json.loads(Path(path).read_text())
    accuracies = {}
    for run in report["runs"]:
        scores = run.get("tuning") or run.get("variants")
        if scores is None or key not in scores:
            known = sorted(scores or ())
            raise SystemExit(f"{path}: a run without {key!r} (it has {known}): {run['run_dir']}")
        accuracies[run["run_dir"]] = scores[key]["accuracy"]
    rule = report.get("rule") if "variants" in report["runs"][0] else key
    kind = f"the variant {key!r} under {rule!r}" if rule != key else f"the rule {key!r}"
    return accuracies, f"`{Path(path).name}`, {kind}"


def under_runs(accuracies, runs):
    """The runs renamed under ``runs`` (``TASK/nSIZE-dDRAW/METHOD``), where their draw
    folders with the baselines are."""
    return {
        str(Path(runs) / Path(run_dir).relative_to(Path(run_dir).parents[2])): accuracy
        for run_dir, accuracy in accuracies.items()
    }


def main(argv=None):
    args = parse_args(argv)
    accuracies, sources = {}, []
    for source in args.sources:
        path, _, key = source.rpartition("=")
        if not path or not key:
            raise SystemExit(f"Expected --from REPORT=KEY. Received: {source!r}")
        found, described = report_accuracies(path, key)
        accuracies.update(under_runs(found, args.runs))
        sources.append(described)
    cells = mix_tuning.baseline_cells(accuracies)
    missing = [
        f"{group} d{draw}"
        for (group, draw), row in sorted(cells.items())
        if not set(harness.BASELINES) <= set(row)
    ]
    lines = mix_tuning.beside_baselines(cells, rule="each source's rule")
    if not lines:
        raise SystemExit(f"No baseline under {args.runs}: run mix_tuning.py --baselines first.")
    command = "python -m experiments.beside_baselines " + " ".join(
        f"--from {shlex.quote(s)}" for s in args.sources
    )
    if args.name != "beside_baselines":
        command += f" --name {shlex.quote(args.name)}"
    text = "\n".join(
        [
            "# hatt beside the linear baselines on the tuning draws",
            "",
            f"Written by `{command}` from " + "; ".join(sources) + ".",
            *lines,
            "",
            f"Draws without both baselines: {', '.join(missing) or 'none'}.",
        ]
    )
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    (out / f"{args.name}.md").write_text(text + "\n")
    draws = [{"group": group, "draw": draw, **row} for (group, draw), row in sorted(cells.items())]
    result = {"command": command, "sources": sources, "draws": draws}
    (out / f"{args.name}.json").write_text(json.dumps(result, indent=2) + "\n")
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
