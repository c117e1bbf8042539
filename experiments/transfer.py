"""Transfer from a trained model (issue 36, item 6): `hatt train FAMILY --init MODEL` on few labels.

On the small-corpora benchmark's draws (``experiments/small_corpora.py``: the same
tables, the same seeded draws), each ``--sizes`` x ``--draws`` cell gets
``hatt train FAMILY --init MODEL`` as a user types it, beside the same cell trained
from scratch by ``small_corpora.py`` (its row is read from
``experiments/results/small_corpora/TASK/``, not trained again). The default:
the IMDB ratings task (8 classes) started from the binary IMDB HAN (``--init``,
e.g. ``runs/experiments/han`` of ``experiments/run_all.py``): its encoders and
attentions are copied, its head is not (other classes). The binary model was
trained on IMDB's train split with polarity labels only; every figure is on the
FULL test split, which no model saw.

    python -m experiments.transfer --init runs/experiments/han [--task rating]
        [--family han] [--sizes 500 1000 2000] [--draws 1] [--frozen-epochs N]
        [--force] [--table-only]

``--frozen-epochs N`` adds gradual unfreezing (``--set init_frozen_epochs=N``: the
copied layers below the head frozen for the first N epochs): its rows are
``FAMILY_init_frozenN``, a column of their own beside plain ``--init``.

Rows: ``experiments/results/transfer/TASK/nSIZE-dDRAW-METHOD.json`` (kept on a
later run unless ``--force``), ``transfer.md`` regenerated after each.
"""

import argparse
import json
import os
import sys
import time
from pathlib import Path

from experiments import harness  # the draws, tables and hatt cells
from hatt.training import IMDB_START

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "experiments" / "results" / "transfer"
SCRATCH = ROOT / "experiments" / "results" / "small_corpora"
RUNS = ROOT / "runs" / "small_corpora"


def parse_args(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument(
        "--init", help="the trained model to start from, or imdb (hatt's IMDB start, cached)"
    )
    parser.add_argument("--data", default=os.environ.get(harness.ENV_VAR), help="IMDB folder")
    parser.add_argument("--task", default="rating", choices=("rating", "polarity"))
    parser.add_argument("--family", default="han")
    parser.add_argument("--sizes", type=int, nargs="+", default=[500, 1000, 2000])
    parser.add_argument("--draws", type=int, default=1)
    parser.add_argument(
        "--frozen-epochs", type=int, default=0, help="gradual unfreezing: init_frozen_epochs"
    )
    parser.add_argument("--seed", type=int, default=1337)
    parser.add_argument("--out", default=str(RESULTS))
    parser.add_argument("--runs", default=str(RUNS))
    parser.add_argument("--force", action="store_true")
    parser.add_argument("--table-only", action="store_true")
    return parser.parse_args(argv)


def run_cell(args, pools, size, draw):
    method = _method(args.family, args.frozen_epochs)
    path = Path(args.out) / args.task / f"n{size:05d}-d{draw}-{method}.json"
    if path.exists() and not args.force:
        return
    tables = harness.draw_tables(pools, args.task, size, draw, args.seed, args.runs)
    place = Path(args.runs) / args.task / f"n{size:05d}-d{draw}"
    place.mkdir(parents=True, exist_ok=True)
    start = time.perf_counter()
    named = args.init == IMDB_START  # hatt's IMDB start, built once and cached
    extra = ["--init", args.init if named else str(Path(args.init).resolve())]
    if args.frozen_epochs:
        extra += ["--set", f"init_frozen_epochs={args.frozen_epochs}"]
    row = harness.hatt_cell(args.family, tables, place, args.force, name=method, extra=extra)
    init = json.loads((place / method / "init.json").read_text())
    row.update(
        method=method,
        size=size,
        draw=draw,
        init=args.init,
        copied=init["copied"],
        embedding_words=init["embedding_words"],
        head=init["head"],
        frozen_epochs=init.get("frozen_epochs", 0),
        row_wall_seconds=round(time.perf_counter() - start, 2),
        commit=harness.commit(),
    )
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(row, indent=2) + "\n")
    print(f"{method} n={size} draw {draw}: test accuracy {row['test_accuracy']:.4f}", flush=True)


def _method(family, frozen_epochs):
    return f"{family}_init" + (f"_frozen{frozen_epochs}" if frozen_epochs else "")


def _scratch(task, size, draw, method):
    path = SCRATCH / task / f"n{size:05d}-d{draw}-{method}.json"
    return json.loads(path.read_text()) if path.exists() else None


def write_report(out, task, family):
    out = Path(out)
    rows = [json.loads(p.read_text()) for p in sorted((out / task).glob("n*-d*-*_init*.json"))]
    cells = {(row["size"], row["draw"], row["method"]): row for row in rows}
    frozen = sorted({row.get("frozen_epochs", 0) for row in rows} - {0})
    methods = [_method(family, n) for n in (0, *frozen)]
    shown_methods = ["--init", *(f"--init, {n} frozen" for n in frozen)]
    lines = [
        f"# Transfer: {task} task started from a trained model (issue 36)",
        "",
        "Generated by `experiments/transfer.py`; test accuracy and macro-F1 on IMDB's full "
        "test split. From scratch and the baselines: the same draw's rows of "
        "`experiments/small_corpora.py`. `--init, N frozen`: gradual unfreezing "
        "(`--set init_frozen_epochs=N`).",
        "",
        f"| labels | draw | from scratch | {' | '.join(shown_methods)} | NB-LR | TF-IDF + LR "
        "| macro-F1 scratch → init | words from the model |",
        "|---:|---:|---:|" + "---:|" * len(methods) + "---:|---:|---|---:|",
    ]
    for size, draw in sorted({(row["size"], row["draw"]) for row in rows}):
        scratch = [_scratch(task, size, draw, m) for m in (family, "nb_lr", "tfidf_lr")]
        ours = [cells.get((size, draw, m)) for m in methods]
        shown = [_percent(c) for c in (scratch[0], *ours, *scratch[1:])]
        before = "–" if scratch[0] is None else f"{100 * scratch[0]['test_macro_f1']:.2f}"
        row = next(c for c in ours if c is not None)
        after = "–" if ours[0] is None else f"{100 * ours[0]['test_macro_f1']:.2f}"
        lines.append(
            f"| {size} | {draw} | {' | '.join(shown)} | {before} → {after} "
            f"| {row['embedding_words']} |"
        )
    lines += ["", "Commands:", ""] + [f"- `{row['command']}`" for row in rows]
    (out / task).mkdir(parents=True, exist_ok=True)
    (out / task / "transfer.md").write_text("\n".join(lines) + "\n")


def _percent(cell):
    return "–" if cell is None else f"{100 * cell['test_accuracy']:.2f} %"


def main(argv=None):
    args = parse_args(argv)
    if not args.table_only:
        if not args.init or not args.data:
            raise ValueError("Expected --init MODEL and --data (or $HATT_IMDB). Received: none")
        pools = harness.create_dataset(args.data, args.task)
        for size in args.sizes:
            for draw in range(args.draws):
                run_cell(args, pools, size, draw)
                write_report(args.out, args.task, args.family)
    write_report(args.out, args.task, args.family)
    return 0


if __name__ == "__main__":
    sys.exit(main())
