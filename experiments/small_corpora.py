"""Small corpora: every family's `hatt train` default beside NB-LR and TF-IDF + LR.

Issue 30, item 1. IMDB subsamples of the training split (stratified, seeded,
several draws per size) are written as a user would hold them, a ``.jsonl``
table with a ``text`` and a ``label`` column, and the FULL test split (25,000
reviews) as a second table. Each family then runs exactly as a user types it::

    hatt train FAMILY --data draw.jsonl --test test.jsonl --run-dir R --export-dir E

(its preset, hatt's own validation carving; only where the files go is
given), so that rerunning this script after a change to the presets or the
mix measures the new defaults with no edit here. The two linear baselines of
``experiments/baselines.py`` run on the same draws, tuned as their user tunes
them: their ``C`` (and NB-LR's ``alpha``) is chosen by stratified 5-fold
cross-validation on every document of the draw (``GridSearchCV`` over the
Pipeline, the features fit inside each fold), then refit on all of them. With
``--baseline-tuning validation`` they are tuned as the figures recorded before
2026-11-30 were: on the validation slice that ``hatt.data.load_corpus`` carves
from the draw (the slice `hatt train` uses), then refit on the rest of the draw;
those cells go to ``OUT/validation_tuned/TASK/`` (never over the cross-validated
ones), and ``OUT/baseline_tuning.md`` sets the two tunings side by side.

Tasks (``--task``): ``polarity`` (negative / positive) and ``rating`` (the 8
star ratings 1-4 and 7-10 from the file names); a draw is stratified by the
task's labels.

Draws: draw ``d`` of size ``n`` takes, per class, the first ``n``-share
documents of a permutation seeded by ``(seed, d)``; a draw is reproducible
and the smaller sizes of one draw are (nearly) subsets of the larger ones.

Per cell (task × size × draw × method) one JSON file
``OUT/TASK/nSIZE-dDRAW-METHOD.json``: test accuracy and macro-F1, the model's
bytes (hatt: the exported SavedModel folder and the ``.keras`` file;
baselines: the pickled scikit-learn pipeline), ``fit_seconds`` (hatt: Keras
``fit``, its ``train_seconds``; baselines: choosing the hyper-parameters and
the refit) and ``wall_seconds`` (hatt: the whole ``hatt train`` process,
reading, the channel, test evaluation and export included; baselines: the
cell from reading the tables to the test figures). A finished cell is skipped
on the next run (``--force`` redoes it); an interrupted ``hatt train`` resumes
from its run directory. ``OUT/small_corpora.md`` (mean ± sample std over
draws) and the learning curve are regenerated from the JSON files after every
cell, or alone with ``--table-only``.

Run:  python -m experiments.small_corpora [--data PATH] [--sizes 500 1000 2000 5000]
      [--draws 2] [--families cnn rnn transformer han] [--task polarity|rating]
      [--baselines nb_lr tfidf_lr] [--baseline-tuning cv5|validation]
      [--out DIR] [--force] [--table-only]
      (``--families`` with no name: the baselines alone)
"""

import argparse
import json
import os
import time
from pathlib import Path

import numpy as np

import hatt
from experiments import baselines, harness
from experiments.harness import BASELINES, ENV_VAR, LABELS, ROOT, TASKS
from hatt.models import FAMILIES

RESULTS = ROOT / "experiments" / "results" / "small_corpora"
RUNS = ROOT / "runs" / "small_corpora"
FIGURE = ROOT / "docs" / "small_corpora.png"
TABLE_NAME = "small_corpora.md"
TUNING_TABLE_NAME = "baseline_tuning.md"
VALIDATION_TUNED = "validation_tuned"  # OUT/validation_tuned/TASK/: --baseline-tuning validation


# === Arguments ===


def parse_args(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", default=None, help="aclImdb folder or .tar.gz (else $HATT_IMDB)")
    parser.add_argument("--sizes", type=int, nargs="+", default=[500, 1000, 2000, 5000])
    parser.add_argument("--draws", type=int, default=2, help="draws per size")
    parser.add_argument("--families", nargs="*", choices=FAMILIES, default=list(FAMILIES))
    parser.add_argument(
        "--baselines", nargs="*", choices=BASELINES, default=list(BASELINES), help="linear ones"
    )
    parser.add_argument(
        "--baseline-tuning",
        choices=baselines.TUNINGS,
        default=baselines.TUNINGS[0],
        help="the baselines' hyper-parameters: 5-fold CV on the draw (default) or "
        f"hatt's validation slice (cells under OUT/{VALIDATION_TUNED}/)",
    )
    parser.add_argument("--task", choices=TASKS, default="polarity")
    parser.add_argument("--seed", type=int, default=1337, help="seed of the draws")
    parser.add_argument("--out", default=str(RESULTS), help="folder of the JSON cells + table")
    parser.add_argument("--runs", default=str(RUNS), help="tables, run dirs, exports (ignored)")
    parser.add_argument(
        "--figure", default=None, help=f"the learning curve (default: {FIGURE} or OUT/...png)"
    )
    parser.add_argument("--force", action="store_true", help="redo finished cells")
    parser.add_argument("--table-only", action="store_true", help="only regenerate table + PNG")
    args = parser.parse_args(argv)
    for size in args.sizes:
        if size < 2:
            raise ValueError(f"Expected every --sizes value to be >= 2. Received: --sizes {size}")
    if args.draws < 1:
        raise ValueError(f"Expected --draws to be >= 1. Received: --draws {args.draws}")
    if args.figure is None:
        same = Path(args.out).resolve() == RESULTS.resolve()
        args.figure = str(FIGURE if same else Path(args.out) / "small_corpora.png")
    return args


# === Dataset ===


# === Cells ===


def cell_path(out, task, size, draw, method, tuning=baselines.TUNINGS[0]):
    """A cell's file; a validation-tuned baseline's under ``OUT/validation_tuned/``."""
    if method in BASELINES and tuning == "validation":
        out = Path(out) / VALIDATION_TUNED
    return Path(out) / task / f"n{size:05d}-d{draw}-{method}.json"


# === The run ===


def methods(args):
    return [*args.baselines, *args.families]


def run_cell(args, pools, test_tokens, size, draw, method):
    """One cell: train and evaluate ``method`` on the draw, write its JSON."""
    tables = harness.draw_tables(pools, args.task, size, draw, args.seed, args.runs)
    place = Path(args.runs) / args.task / f"n{size:05d}-d{draw}"
    place.mkdir(parents=True, exist_ok=True)
    if method in BASELINES:
        figures = harness.baseline_cell(
            method, tables, test_tokens, args.seed, tuning=args.baseline_tuning
        )
    else:
        figures = harness.hatt_cell(method, tables, place, force=args.force)
    cell = {
        "task": args.task,
        "size": size,
        "draw": draw,
        "seed": args.seed,
        "method": method,
        "kind": "baseline" if method in BASELINES else "hatt",
        **figures,
        "commit": harness.commit(),
        "hatt_version": hatt.__version__,
        "finished": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
    }
    path = cell_path(args.out, args.task, size, draw, method, args.baseline_tuning)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(cell, indent=2) + "\n")
    return cell


def run_all(args, run=run_cell):
    """Every missing cell, small sizes first; the table and curve after each one."""
    todo = [
        (size, draw, method)
        for size in sorted(args.sizes)
        for draw in range(args.draws)
        for method in methods(args)
        if args.force
        or not cell_path(args.out, args.task, size, draw, method, args.baseline_tuning).exists()
    ]
    total = len(args.sizes) * args.draws * len(methods(args))
    print(
        f"[small_corpora] {args.task}: {total - len(todo)} of {total} cells done, {len(todo)} to run"
    )
    pools, test_tokens = None, harness.CachedTestTokens()
    for i, (size, draw, method) in enumerate(todo, 1):
        if pools is None and run is run_cell:
            pools = harness.create_dataset(args.data, args.task)
        start = time.perf_counter()
        print(
            f"[small_corpora] ({i}/{len(todo)}) {args.task} n={size} draw {draw} {method} ...",
            flush=True,
        )
        cell = run(args, pools, test_tokens, size, draw, method)
        print(
            f"[small_corpora]   accuracy {cell['test_accuracy']:.4f}, macro-F1 "
            f"{cell['test_macro_f1']:.4f} ({time.perf_counter() - start:.0f} s)",
            flush=True,
        )
        write_reports(args.out, args.figure)
    return len(todo)


# === Table and curve ===


def read_cells(out):
    """Every cell JSON under ``out`` (``OUT/TASK/*.json``)."""
    return [json.loads(p.read_text()) for p in sorted(Path(out).glob("*/n*-d*-*.json"))]


def model_bytes(cell):
    """A cell's model size: hatt's SavedModel folder, a baseline's pickle."""
    return cell.get("saved_model_bytes", cell.get("model_bytes"))


def deep_weight(cell):
    """The weight the mix gave a hatt model's deep part.

    ``None`` when no mix was recorded, or when it is a matrix (more than two
    classes mix each class's logit from every class's: no one sign to show).
    """
    mix = (cell.get("ngram_channel") or {}).get("mix") or {}
    weight = mix.get("deep")
    return weight if isinstance(weight, int | float) else None


def aggregate(cells):
    """``{task: {size: {method: summary}}}``: mean ± std over draws of each figure."""
    groups = {}
    for cell in cells:
        groups.setdefault((cell["task"], cell["size"], cell["method"]), []).append(cell)
    summary = {}
    for (task, size, method), group in sorted(groups.items()):
        group = sorted(group, key=lambda c: c["draw"])
        row = {"draws": [c["draw"] for c in group], "kind": group[0]["kind"]}
        for key in ("test_accuracy", "test_macro_f1", "fit_seconds", "wall_seconds"):
            values = [c[key] for c in group if c.get(key) is not None]
            row[key] = harness.mean_std(values) if values else None
        row["model_bytes"] = harness.mean_std([model_bytes(c) for c in group])
        if group[0]["kind"] == "hatt":
            row["keras_bytes"] = harness.mean_std([c["keras_bytes"] for c in group])
            weights = [w for w in map(deep_weight, group) if w is not None]
            row["deep_weight"] = harness.mean_std(weights) if weights else None
            row["negative_deep"] = sum(w < 0 for w in weights)
        row["by_draw"] = {c["draw"]: c["test_accuracy"] for c in group}
        summary.setdefault(task, {}).setdefault(size, {})[method] = row
    return summary


def goal(methods_at_size):
    """Item 2's goal at one size: families against the better linear baseline per draw.

    The better linear baseline of a draw is the more accurate of NB-LR and
    TF-IDF + LR on that draw; its mean is over the draws every compared
    method has. Returns ``None`` when a baseline or every family is missing.
    """
    linear = [methods_at_size.get(name) for name in BASELINES]
    families = {m: r for m, r in methods_at_size.items() if r["kind"] == "hatt"}
    if any(row is None for row in linear) or not families:
        return None
    result = {"families": {}}
    for family, row in families.items():
        draws = sorted(set(row["by_draw"]).intersection(*(r["by_draw"] for r in linear)))
        if not draws:
            continue
        best_linear = np.mean([max(r["by_draw"][d] for r in linear) for d in draws])
        mean = np.mean([row["by_draw"][d] for d in draws])
        result["families"][family] = {
            "accuracy": float(mean),
            "better_linear": float(best_linear),
            "draws": draws,
            "at_least": bool(mean >= best_linear),
        }
    if not result["families"]:
        return None
    best = max(result["families"], key=lambda f: result["families"][f]["accuracy"])
    result["best_family"] = best
    result["best_beats"] = bool(
        result["families"][best]["accuracy"] > result["families"][best]["better_linear"]
    )
    return result


def _pct(pair, draws):
    """A percentage, ``mean ± std`` over two draws or more, the value alone for one."""
    if pair is None:
        return "–"
    return f"{100 * pair[0]:.2f}" + (f" ± {100 * pair[1]:.2f}" if draws > 1 else "")


def _megabytes(pair):
    return f"{pair[0] / 1e6:.1f}"


def _seconds(pair):
    return "–" if pair is None else f"{pair[0]:.0f}"


def _deep(row):
    """The mix's deep weight, mean ± std, and on how many draws it was negative."""
    if row.get("deep_weight") is None:
        return "–"
    mean, std = row["deep_weight"]
    spread = f" ± {std:.2f}" if len(row["draws"]) > 1 else ""
    return f"{mean:+.2f}{spread} ({row['negative_deep']})"


def format_table(summary):
    """The markdown: per task, one row per size × method, then the goal lines."""
    lines = [
        "<!-- generated by python -m experiments.small_corpora --table-only; do not edit -->",
        "",
        "Mean ± sample std over draws; test = IMDB's full test split. The baselines' C (and "
        "NB-LR's alpha): 5-fold cross-validation on every document of the draw, then a refit "
        f"on all of them (the validation-slice tuning recorded before: {TUNING_TABLE_NAME}). "
        "Model size: hatt's "
        "exported SavedModel folder (the .keras file in brackets), a baseline's pickled "
        "scikit-learn pipeline. Fit s: hatt's Keras fit (train_seconds), a baseline's "
        "hyper-parameter choice and refit. Wall s: the whole `hatt train` process (reading, "
        "channel, 25,000-review test evaluation, export); a baseline's cell from its tables "
        "to its test figures (the test split's tokenization shared). Deep weight: the "
        "validation mix's weight on the deep part's logit (ngram_channel.json's mix.deep), "
        "in brackets on how many draws it was negative.",
    ]
    for task, sizes in summary.items():
        lines += [
            "",
            f"### Task: {task}",
            "",
            "| train docs | method | draws | accuracy % | macro-F1 % | model MB | fit s | wall s "
            "| deep weight (< 0) |",
            "|---:|---|---:|---:|---:|---:|---:|---:|---:|",
        ]
        for size, rows in sizes.items():
            for method, row in sorted(rows.items(), key=lambda kv: (kv[1]["kind"], kv[0])):
                n, size_text = len(row["draws"]), _megabytes(row["model_bytes"])
                if "keras_bytes" in row:
                    size_text += f" ({_megabytes(row['keras_bytes'])})"
                lines.append(
                    f"| {size} | {LABELS.get(method, method)} | {n} | "
                    f"{_pct(row['test_accuracy'], n)} | {_pct(row['test_macro_f1'], n)} | "
                    f"{size_text} | "
                    f"{_seconds(row['fit_seconds'])} | {_seconds(row['wall_seconds'])} | "
                    f"{_deep(row)} |"
                )
        lines += ["", "Goal (issue 30, item 2), against the better linear baseline per draw:", ""]
        for size, rows in sizes.items():
            lines.append(f"- {size}: {format_goal(goal(rows))}")
    return "\n".join(lines) + "\n"


def format_goal(result):
    if result is None:
        return "not measured (a baseline or every family missing)"
    best = result["best_family"]
    row = result["families"][best]
    head = (
        f"best family {best} {100 * row['accuracy']:.2f} % vs {100 * row['better_linear']:.2f} % "
        f"→ {'beats it' if result['best_beats'] else 'does NOT beat it'}"
    )
    each = ", ".join(
        f"{family} {'≥' if r['at_least'] else '<'} ({100 * (r['accuracy'] - r['better_linear']):+.2f})"
        for family, r in sorted(result["families"].items())
    )
    return f"{head}; each default at least as accurate: {each}"


# === The baselines' two tunings ===


def tuning_of(cell):
    """How a baseline cell was tuned (a cell written before cross-validation: on validation)."""
    return cell.get("tuning", "validation")


def format_tuning_table(cells):
    """The markdown: per task × size × baseline, the cross-validated cells beside the
    validation-tuned ones, and their difference on the draws both have."""
    groups = {}
    for cell in cells:
        key = (cell["task"], cell["size"], cell["method"])
        groups.setdefault(key, {}).setdefault(tuning_of(cell), {})[cell["draw"]] = cell
    cv, validation = baselines.TUNINGS
    lines = [
        "<!-- generated by python -m experiments.small_corpora --table-only; do not edit -->",
        "",
        f"The baselines' hyper-parameters chosen two ways on the same draws. {cv}: stratified "
        "5-fold cross-validation on every document of the draw (GridSearchCV over the "
        "Pipeline, features fit inside each fold), then a refit on all of them. validation: "
        "accuracy on the validation slice hatt carves from the draw, then a refit on the rest "
        f"(cells under {VALIDATION_TUNED}/). Mean ± sample std over draws; test = IMDB's full "
        "test split. Δ: cv5 − validation in points, mean over the draws both have.",
    ]
    header = (
        f"| train docs | baseline | {cv} draws | {cv} accuracy % | {cv} macro-F1 % "
        "| validation draws | validation accuracy % | validation macro-F1 % "
        "| Δ accuracy | Δ macro-F1 | shared draws |"
    )
    for task in sorted({key[0] for key in groups}):
        lines += ["", f"### Task: {task}", "", header, "|---:|---|" + "---:|" * 9]
        for (_, size, method), by_tuning in sorted(
            (k, v) for k, v in groups.items() if k[0] == task
        ):
            lines.append(
                _tuning_row(size, method, by_tuning.get(cv, {}), by_tuning.get(validation, {}))
            )
    return "\n".join(lines) + "\n"


def _tuning_row(size, method, cv, validation):
    """One row of :func:`format_tuning_table`; ``cv``, ``validation``: ``{draw: cell}``."""
    shared = sorted(set(cv) & set(validation))
    row = [str(size), LABELS.get(method, method)]
    for cells in (cv, validation):
        row.append(str(len(cells)))
        for key in ("test_accuracy", "test_macro_f1"):
            values = [cell[key] for cell in cells.values()]
            row.append(_pct(harness.mean_std(values), len(values)) if values else "–")
    for key in ("test_accuracy", "test_macro_f1"):
        gaps = [100 * (cv[d][key] - validation[d][key]) for d in shared]
        row.append(f"{np.mean(gaps):+.2f}" if gaps else "–")
    row.append(" ".join(map(str, shared)) or "–")
    return "| " + " | ".join(row) + " |"


def write_reports(out, figure):
    """The markdown tables and the learning curve from the JSON cells alone."""
    cells = read_cells(out)
    validation_tuned = read_cells(Path(out) / VALIDATION_TUNED)
    if not cells and not validation_tuned:
        raise ValueError(f"Expected cell JSON files under --out. Received: --out {str(out)!r}")
    if validation_tuned:
        both = [c for c in cells if c["kind"] == "baseline"] + validation_tuned
        (Path(out) / TUNING_TABLE_NAME).write_text(format_tuning_table(both))
    if not cells:
        return None
    summary = aggregate(cells)
    (Path(out) / TABLE_NAME).write_text(format_table(summary))
    harness.plot(summary, figure)
    return summary


def main(argv=None):
    args = parse_args(argv)
    if not args.table_only:
        if args.data is None and not os.environ.get(ENV_VAR):
            raise ValueError(f"Expected --data PATH (an aclImdb folder) or ${ENV_VAR} to be set.")
        run_all(args)
    write_reports(args.out, args.figure)
    print(f"[small_corpora] table: {Path(args.out) / TABLE_NAME}, curve: {args.figure}")


if __name__ == "__main__":
    main()
