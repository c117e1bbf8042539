"""The survey's attentions side by side (issue 35): accuracy, faithfulness, sparsity, speed.

For each trained run given as ``--model NAME=RUN_DIR`` (``hatt train FAMILY --set
model_kwargs.attention_normalizer=... --run-dir RUN_DIR``), one row:

- test accuracy of the full model and of the deep part alone (the run's
  ``metrics.json``: the full IMDB test split);
- the deletion test of the attention at k = 10 % (ERASER comprehensiveness, the
  ratio of the drop when the top 10 % of tokens by attention are removed to the
  drop when as many random tokens are: :func:`hatt.inspect.deletion_test`, as
  ``experiments/faithfulness.py``) on a balanced, seeded sample of test reviews;
- the attention's sparsity on the same sample: the share of real tokens (and, for
  the HAN, sentences) whose weight is exactly 0, and the mean normalized entropy
  ``H(a) / log(n)`` of each attention distribution over its ``n`` real positions
  (1: uniform, 0: all weight on one position; distributions over one position left out);
- the uniform-attention check (Wiegreffe & Pinter 2019): test accuracy with the
  learned attention and with uniform weights (:func:`hatt.inspect.uniform_attention_check`);
- training speed (reviews/s of ``hatt train``, from ``metrics.json``) and
  prediction speed (reviews/s of the loaded model on the sample, median of 3).

    python -m experiments.attention_variants --model han-softmax=runs/han \\
        --model han-sparsemax=runs/han-sparsemax [--reviews 1000] [--uniform-reviews N]

Each row is written to ``--out/NAME.json`` when measured and kept on a later run
(``--force`` measures it again); ``--out/attention_variants.json`` and
``attention_variants.md`` are regenerated after every row.
"""

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "experiments" / "results" / "attention_variants"
GOAL_K = 10


def parse_args(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", action="append", default=[], metavar="NAME=RUN_DIR")
    parser.add_argument("--data", default=None, help="aclImdb folder or .tar.gz ($HATT_IMDB)")
    parser.add_argument("--reviews", type=int, default=1000)
    parser.add_argument("--uniform-reviews", type=int, default=None, help="default: all")
    parser.add_argument("--draws", type=int, default=5)
    parser.add_argument("--seed", type=int, default=1337)
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--out", default=str(RESULTS))
    parser.add_argument("--force", action="store_true")
    parser.add_argument("--table-only", action="store_true")
    args = parser.parse_args(argv)
    for spec in args.model:
        if "=" not in spec:
            parser.error(f"--model takes NAME=RUN_DIR. Received: {spec!r}")
    return args


# === Measurements ======================================================================


def _entropies(weights, mask):
    """Normalized entropies ``H / log n`` of the rows of ``weights`` (``n`` real positions >= 2)."""
    n = mask.sum(axis=-1)
    safe = np.where(mask & (weights > 0), weights, 1.0)
    entropy = -(np.where(mask, weights, 0.0) * np.log(safe)).sum(axis=-1)
    keep = n >= 2
    return (entropy[keep] / np.log(n[keep])).tolist()


def attention_statistics(out):
    """Zero shares and mean normalized entropies of a batch's attention (``predictor(texts)``)."""
    tokens = np.asarray(out["tokens"])
    words = tokens != ""
    weights = np.asarray(out["word_attention"], dtype=np.float64)
    stats = {
        "word_zero_share": float((weights[words] == 0).mean()),
        "word_entropies": _entropies(weights, words),
    }
    if "sentence_attention" in out:
        sentences = words.any(axis=-1)
        weights = np.asarray(out["sentence_attention"], dtype=np.float64)
        stats["sentence_zero_share"] = float((weights[sentences] == 0).mean())
        stats["sentence_entropies"] = _entropies(weights, sentences)
    return stats


def sparsity(predictor, texts, batch_size):
    """:func:`attention_statistics` over ``texts``, and the prediction speed (median of 3)."""
    parts, seconds = [], []
    for repeat in range(3):
        start = time.perf_counter()
        outs = [predictor(texts[i : i + batch_size]) for i in range(0, len(texts), batch_size)]
        seconds.append(time.perf_counter() - start)
        if repeat == 0:
            parts = [attention_statistics(out) for out in outs]
    merged = {}
    for key in parts[0]:
        if key.endswith("_entropies"):
            values = [v for part in parts for v in part[key]]
            merged[key.replace("_entropies", "_entropy")] = float(np.mean(values))
        else:  # zero shares: weighted by the batch's positions is close; a mean of batches
            merged[key] = float(np.mean([part[key] for part in parts]))
    merged["predict_reviews_per_second"] = round(len(texts) / statistics.median(seconds), 1)
    return merged


def measure(name, run_dir, test, args):
    from experiments import faithfulness as fa  # imports TensorFlow: not for --help
    from hatt import export
    from hatt.inspect import deletion_test, uniform_attention_check

    run_dir = Path(run_dir)
    metrics = json.loads((run_dir / "metrics.json").read_text())
    config = json.loads((run_dir / "config.json").read_text())
    predictor = export.load(run_dir / "model.keras")
    texts, _ = fa.sample(test, args.reviews, args.seed)
    deletion = deletion_test(
        predictor, texts, methods=["attention"], ks=(GOAL_K,), random_draws=args.draws,
        seed=args.seed, batch_size=args.batch_size,
    )  # fmt: skip
    by_k = deletion["by_method"]["attention"]["by_k"][str(GOAL_K)]
    if args.uniform_reviews is None:
        uniform_texts, uniform_labels = list(test.texts), np.asarray(test.labels)
    else:
        uniform_texts, uniform_labels = fa.sample(test, args.uniform_reviews, args.seed)
    uniform = uniform_attention_check(
        predictor, uniform_texts, uniform_labels, batch_size=args.batch_size
    )
    kwargs = config.get("model_kwargs") or {}
    return {
        "name": name,
        "run_dir": str(run_dir),
        "family": metrics["model"],
        "cell": kwargs.get("cell", "gru"),
        "normalizer": kwargs.get("attention_normalizer", "softmax"),
        "test_accuracy": metrics["test_accuracy"],
        "deep_test_accuracy": (metrics.get("ngram_channel") or {}).get("deep_test_accuracy"),
        "train_reviews_per_second": metrics.get("examples_per_second"),
        "train_seconds": metrics.get("train_seconds"),
        "train_command": metrics.get("command"),
        "deletion_k10": {
            "comprehensiveness": by_k["comprehensiveness"],
            "random": deletion["by_method"]["random"]["by_k"][str(GOAL_K)]["comprehensiveness"]
            if "random" in deletion["by_method"]
            else None,
            "ratio": by_k["ratio"],
        },
        "uniform": uniform,
        **sparsity(predictor, texts, args.batch_size),
        "reviews": len(texts),
        "seed": args.seed,
    }


# === Report ============================================================================


def _pct(value):
    return "–" if value is None else f"{100 * value:.2f} %"


def write_reports(out):
    out = Path(out)
    rows = [json.loads(p.read_text()) for p in sorted(out.glob("*.json"))]
    rows = [r for r in rows if "name" in r]
    (out / "attention_variants.json").write_text(json.dumps(rows, indent=2) + "\n")
    lines = [
        "# The survey's attentions on IMDB (issue 35)",
        "",
        "Generated by `experiments/attention_variants.py`; accuracies on the full test split "
        "(seed 1337), the deletion test and the sparsity on a balanced sample of "
        f"{rows[0]['reviews'] if rows else '–'} test reviews.",
        "",
        "| model | test accuracy | deep part | deletion ratio k=10 % | zero weights "
        "(words / sentences) | entropy (words / sentences) | uniform attention "
        "(learned → uniform) | train reviews/s | predict reviews/s |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for r in rows:
        zeros = f"{100 * r['word_zero_share']:.1f} %"
        entropy = f"{r['word_entropy']:.3f}"
        if "sentence_zero_share" in r:
            zeros += f" / {100 * r['sentence_zero_share']:.1f} %"
            entropy += f" / {r['sentence_entropy']:.3f}"
        u = r["uniform"]
        uniform = f"{_pct(u['learned_accuracy'])} → {_pct(u['uniform_accuracy'])}"
        lines.append(
            f"| {r['name']} | {_pct(r['test_accuracy'])} | {_pct(r['deep_test_accuracy'])} "
            f"| {r['deletion_k10']['ratio']:.1f}× | {zeros} | {entropy} | {uniform} "
            f"| {r['train_reviews_per_second']} | {r['predict_reviews_per_second']} |"
        )
    lines += ["", "Training commands:", ""]
    lines += [f"- {r['name']}: `{r['train_command']}`" for r in rows]
    (out / "attention_variants.md").write_text("\n".join(lines) + "\n")


def main(argv=None):
    args = parse_args(argv)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    if not args.table_only and args.model:
        from hatt.data import load_imdb

        test = load_imdb(args.data, validation_size=0, progress=False).test
        for spec in args.model:
            name, run_dir = spec.split("=", 1)
            path = out / f"{name}.json"
            if path.exists() and not args.force:
                print(f"{name}: measured already ({path}); --force measures it again")
                continue
            row = measure(name, run_dir, test, args)
            path.write_text(json.dumps(row, indent=2) + "\n")
            print(f"{name}: deletion ratio {row['deletion_k10']['ratio']:.1f}x", flush=True)
            write_reports(out)
    write_reports(out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
