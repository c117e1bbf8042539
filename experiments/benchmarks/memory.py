"""Peak resident memory of one HAN training epoch: from raw text versus from prepared shards.

Every run is a separate ``hatt train han`` process (the han preset, hatt/presets/han.json,
one epoch, then the evaluation on validation and test that ``hatt train``
always does); its peak resident set size is the kernel's figure for that
process (``ru_maxrss`` from ``os.wait4``), not an estimate. For each corpus size
(``--limits``, reviews per split; 0 = the full corpus) the script trains once
from raw text and once from shards for each shard count (``--shards``, shards
of the training split), after ``hatt prepare`` has written them (its own peak
is reported too).

    python -m experiments.benchmarks.memory [--data PATH] [--limits 2000 4000] [--shards 2 20]

Prints a table and writes experiments/results/memory.json.
"""

import argparse
import json
import os
import platform
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
RESULTS = ROOT / "experiments" / "results" / "memory.json"
CONFIG = ROOT / "hatt" / "presets" / "han.json"
TRAIN_SHARE = 1.0  # --limit N keeps N reviews in every split (train included)


def parse_args():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", default=None, help="aclImdb folder or .tar.gz")
    parser.add_argument(
        "--limits", type=int, nargs="+", default=[2000, 4000], help="reviews per split (0: all)"
    )
    parser.add_argument(
        "--shards", type=int, nargs="+", default=[2, 20], help="shard counts of the train split"
    )
    parser.add_argument("--skip-raw", action="store_true", help="only the runs from shards")
    parser.add_argument("--out", default=str(RESULTS), help="JSON results file")
    return parser.parse_args()


def measure(argv, log):
    """Run ``argv``; return (exit status, peak RSS in MiB, wall seconds)."""
    start = time.perf_counter()
    with open(log, "w") as f:
        process = subprocess.Popen(argv, stdout=f, stderr=subprocess.STDOUT)
        _, status, usage = os.wait4(process.pid, 0)
    process.returncode = os.waitstatus_to_exitcode(status)
    return process.returncode, usage.ru_maxrss / 1024, time.perf_counter() - start


def hatt(*args):
    return [sys.executable, "-m", "hatt.cli", *args]


def main():
    args = parse_args()
    data = ["--data", args.data] if args.data else []
    rows = []
    with tempfile.TemporaryDirectory(prefix="hatt-memory-") as tmp:
        tmp = Path(tmp)
        for limit in args.limits:
            limit_args = ["--limit", str(limit)] if limit else []
            label = f"{limit} / split" if limit else "full"
            train = ["train", "han", "--config", str(CONFIG), "--epochs", "1"]
            train += ["--export-dir", ""]
            run_dir = tmp / f"raw-{limit}"
            if not args.skip_raw:
                status, peak, seconds = measure(
                    hatt(*train, *data, *limit_args, "--run-dir", str(run_dir)), tmp / "raw.log"
                )
                rows.append(_row("raw text", label, None, status, peak, seconds, run_dir))
                _save(args, rows)
            for shards in args.shards:
                reviews = limit * TRAIN_SHARE if limit else 22500
                shard_size = max(1, int(-(-reviews // shards)))
                out = tmp / f"prepared-{limit}-{shards}"
                prepare = ["prepare", "--model", "han", *data, *limit_args, "--quiet"]
                prepare += ["--out", str(out), "--shard-size", str(shard_size)]
                status, peak, seconds = measure(hatt(*prepare), tmp / "prepare.log")
                manifest = json.loads((out / "prepared.json").read_text()) if status == 0 else {}
                count = len(manifest.get("splits", {}).get("train", {}).get("shards", []))
                rows.append(_row("hatt prepare", label, count, status, peak, seconds, None))
                _save(args, rows)
                run_dir = tmp / f"shards-{limit}-{shards}"
                status, peak, seconds = measure(
                    hatt(*train, "--prepared", str(out), "--run-dir", str(run_dir)),
                    tmp / "shards.log",
                )
                rows.append(_row("shards", label, count, status, peak, seconds, run_dir))
                _save(args, rows)
    _print(rows)
    print(f"\nwritten to {args.out}")
    return 0 if all(r["exit_status"] == 0 for r in rows) else 1


def _save(args, rows):
    """Write the rows measured so far (a long run leaves its partial results)."""
    print(json.dumps(rows[-1]), flush=True)
    result = {
        "description": "peak RSS (MiB, ru_maxrss of each process) of `hatt train han` for one "
        "epoch (hatt/presets/han.json) from raw text vs from `hatt prepare` shards",
        "command": " ".join(["python", "-m", "experiments.benchmarks.memory", *sys.argv[1:]]),
        "machine": {"cpus": os.cpu_count(), "python": platform.python_version()},
        "runs": rows,
    }
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(result, indent=2) + "\n")


def _row(source, corpus, shards, status, peak, seconds, run_dir):
    row = {
        "source": source,
        "corpus": corpus,
        "train_shards": shards,
        "exit_status": status,
        "peak_rss_mib": round(peak, 1),
        "seconds": round(seconds, 1),
    }
    if run_dir is not None and (run_dir / "metrics.json").exists():
        metrics = json.loads((run_dir / "metrics.json").read_text())
        row["train_reviews"] = metrics["train_size"]
        row["test_accuracy"] = round(metrics["test_accuracy"], 4)
    return row


def _print(rows):
    print(f"\n{'source':<14}{'corpus':>14}{'shards':>8}{'train':>8}{'peak RSS':>12}{'seconds':>9}")
    for r in rows:
        shards = "" if r["train_shards"] is None else r["train_shards"]
        peak = f"{r['peak_rss_mib']:.0f} MiB" + ("" if r["exit_status"] == 0 else " (failed)")
        print(
            f"{r['source']:<14}{r['corpus']:>14}{shards!s:>8}{r.get('train_reviews', ''):>8}"
            f"{peak:>12}{r['seconds']:>9.1f}"
        )


if __name__ == "__main__":
    sys.exit(main())
