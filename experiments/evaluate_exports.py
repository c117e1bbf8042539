"""Score the exported models on the full IMDB test split, from raw text, without hatt.

An independent check of the results table: each ``saved_models/FAMILY`` (its
newest SavedModel version) is loaded with plain ``tf.saved_model.load`` in a
process that never imports ``keras`` or ``hatt`` for the models (hatt's loader
reads the review files only), fed the 25,000 raw test reviews through its
``predict`` signature (the prediction without the explanations that
``serving_default`` adds; older exports without it use ``serving_default``), and
scored against the labels. The accuracy is compared with the run's
``experiments/results/FAMILY.json``.

    python -m experiments.evaluate_exports [--data PATH] [--families cnn rnn ...]
        [--saved-models saved_models] [--batch-size 100]

Writes experiments/results/exports_on_test.json (a family not measured this time keeps
its earlier row, which names the version it scored).
"""

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "experiments" / "results"
FAMILIES = ("cnn", "rnn", "transformer", "han")


def parse_args(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", default=None, help="aclImdb folder or .tar.gz (else $HATT_IMDB)")
    parser.add_argument("--families", nargs="+", default=list(FAMILIES))
    parser.add_argument("--saved-models", default=str(ROOT / "saved_models"))
    parser.add_argument("--batch-size", type=int, default=100)
    parser.add_argument("--limit", type=int, default=None, help="keep at most N test reviews")
    parser.add_argument("--results", default=str(RESULTS))
    return parser.parse_args(argv)


def newest_version(folder):
    versions = [p for p in Path(folder).iterdir() if p.is_dir() and p.name.isdigit()]
    if not versions:
        raise SystemExit(f"no SavedModel version under {folder}; run hatt export first")
    return max(versions, key=lambda p: int(p.name))


def read_test_split(data, limit):
    """Raw test texts and labels, read by hatt's loader in a child process (no keras here)."""
    import subprocess
    import tempfile

    script = (
        "import json, sys, hatt.data.imdb as m\n"
        "limit = int(sys.argv[2]) if sys.argv[2] else None\n"
        "imdb = m.load_imdb(sys.argv[1] or None, limit=limit, validation_size=0)\n"
        "test = {'texts': list(imdb.test.texts), 'labels': [int(y) for y in imdb.test.labels]}\n"
        "open(sys.argv[3], 'w', encoding='utf-8').write(json.dumps(test))\n"
    )
    with tempfile.TemporaryDirectory() as scratch:
        out = Path(scratch) / "test.json"
        result = subprocess.run(
            [sys.executable, "-c", script, data or "", str(limit or ""), str(out)],
            capture_output=True,
            text=True,
            check=False,
        )
        if result.returncode:
            raise SystemExit(result.stderr[-2000:])
        test = json.loads(out.read_text(encoding="utf-8"))
    return test["texts"], np.array(test["labels"])


def main(argv=None):
    args = parse_args(argv)
    texts, labels = read_test_split(args.data, args.limit)
    import tensorflow as tf  # after the child process: only TensorFlow serves the models

    rows = []
    for family in args.families:
        version = newest_version(Path(args.saved_models) / family)
        signatures = tf.saved_model.load(str(version)).signatures
        # `predict`: the prediction alone (serving_default also explains every review)
        serve = signatures["predict"] if "predict" in signatures else signatures["serving_default"]
        start = time.perf_counter()
        probabilities = []
        for begin in range(0, len(texts), args.batch_size):
            batch = tf.constant(texts[begin : begin + args.batch_size])
            probabilities.append(serve(text=batch)["probability"].numpy().reshape(-1))
            print(f"\r{family}: {begin + len(batch)}/{len(texts)}", end="", flush=True)
        probabilities = np.concatenate(probabilities)
        accuracy = float(np.mean((probabilities > 0.5) == labels))
        recorded = Path(args.results) / f"{family}.json"
        table = json.loads(recorded.read_text())["test_accuracy"] if recorded.exists() else None
        rows.append(
            {
                "family": family,
                "saved_model": str(
                    version.relative_to(ROOT) if version.is_relative_to(ROOT) else version
                ),
                "reviews": len(texts),
                "test_accuracy": accuracy,
                "results_table": table,
                "finite": bool(np.isfinite(probabilities).all()),
                "seconds": round(time.perf_counter() - start, 1),
            }
        )
        print(f"\r{family}: test accuracy {accuracy:.5f} (results table {table})")
    results = Path(args.results)
    results.mkdir(parents=True, exist_ok=True)
    path = results / "exports_on_test.json"
    rows = merge_rows(json.loads(path.read_text()) if path.exists() else [], rows)
    path.write_text(json.dumps(rows, indent=2) + "\n")
    return rows


def merge_rows(earlier, measured):
    """The rows of ``measured`` and, for families not measured now, ``earlier``'s (each names its version)."""
    by_family = {row["family"]: row for row in earlier}
    by_family.update({row["family"]: row for row in measured})
    order = {family: i for i, family in enumerate(FAMILIES)}
    return sorted(by_family.values(), key=lambda row: order.get(row["family"], len(order)))


if __name__ == "__main__":
    main()
