"""Export time per family, and SavedModel versus in-memory probabilities on IMDB reviews.

For every run directory given (default: the full IMDB runs under
``runs/experiments/FAMILY``), or for tiny models trained here on a synthetic
corpus (``--tiny``), the script

1. exports the run with ``hatt.export.export`` into a scratch folder and times it
   (the first export in the process, tracing included);
2. reloads the SavedModel with plain ``tf.saved_model.load`` and feeds it the
   first ``--reviews`` test reviews as raw text (batches of 50);
3. feeds the same reviews to the trained id model in memory (the packed HAN on
   packed batches, as trained) and reports the largest probability difference;
4. checks the attention contract on those outputs (0 on padding, sums to 1).

    python -m experiments.benchmarks.export_check [--runs DIR ...] [--reviews 200]
    python -m experiments.benchmarks.export_check --tiny

Writes experiments/results/export.json (``--tiny``: export_tiny.json).
"""

import argparse
import json
import tempfile
import time
from pathlib import Path

import keras
import numpy as np
import tensorflow as tf

import hatt
from hatt import export, training
from hatt.data import Imdb, Split, Vectorizer, load_imdb, pack_sentences
from hatt.data.pipeline import default_sentence_groups

ROOT = Path(__file__).resolve().parents[2]
RESULTS = ROOT / "experiments" / "results"
FAMILIES = ("cnn", "rnn", "transformer", "han")


def parse_args():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--runs",
        nargs="+",
        default=[str(ROOT / "runs" / "experiments" / f) for f in FAMILIES],
        help="run directories of hatt train",
    )
    parser.add_argument("--tiny", action="store_true", help="train tiny models here instead")
    parser.add_argument("--data", default=None, help="aclImdb folder or .tar.gz")
    parser.add_argument("--reviews", type=int, default=200, help="test reviews compared")
    parser.add_argument("--out", default=None)
    return parser.parse_args()


def tiny_runs(root):
    """Train each family for one epoch on a small synthetic corpus; return the run dirs."""
    rng = np.random.default_rng(0)

    def split(n):
        labels = np.arange(n) % 2
        texts = [
            " ".join(f"w{rng.integers(50)}" for _ in range(rng.integers(5, 30)))
            + (". Superb!" if y else ". Dreadful!")
            for y in labels
        ]
        return Split(texts, labels)

    imdb = Imdb(split(200), split(50), split(max(200, 1)), "synthetic")
    small = {
        "cnn": {"embedding_dim": 16, "filters": 8},
        "rnn": {"embedding_dim": 16, "units": 8},
        "transformer": {"embedding_dim": 16, "num_heads": 2, "intermediate_dim": 16},
        "han": {"embedding_dim": 16, "word_units": 8, "sentence_units": 8},
    }
    runs = []
    for family in FAMILIES:
        config = training.TrainConfig(
            model=family, model_kwargs=small[family], epochs=1, min_count=1, batch_size=16
        )
        training.train(config, root / family, texts=imdb, command="export_check --tiny", verbose=0)
        runs.append(root / family)
    return runs, imdb.test.texts


def in_memory(run_dir, texts, batch_size=50):
    """The trained id model's probabilities, fed as training fed it (the packed HAN packed)."""
    model = keras.saving.load_model(run_dir / "model.keras")
    vectorizer = Vectorizer.load(run_dir / "vectorizer.json")
    groups = sentence_groups(run_dir, model, vectorizer) if hatt.models.is_packed(model) else None
    out = []
    for start in range(0, len(texts), batch_size):
        batch = texts[start : start + batch_size]
        if groups:
            inputs = pack_sentences(vectorizer.ragged_ids(batch), groups)
        else:
            inputs = vectorizer(batch)
        out.append(np.asarray(model(inputs, training=False)).reshape(-1))
    return np.concatenate(out)


def sentence_groups(run_dir, model, vectorizer):
    """The packed layout's group widths: the run's config.json, else hatt.data's default."""
    config = json.loads((run_dir / "config.json").read_text())
    groups = config.get("sentence_groups") or default_sentence_groups(vectorizer.max_words)
    count = sum(name.startswith("words_") for name in model.input)
    if len(groups) != count:
        raise SystemExit(
            f"{run_dir}: the packed model has {count} sentence groups, config.json {groups}"
        )
    return tuple(groups)


def contract_violations(outputs):
    """Largest |sum - 1| over real rows and largest weight on padding."""
    tokens = outputs["tokens"].numpy()
    real = tokens != b""
    weights = outputs["word_attention"].numpy()
    has = real.any(-1)
    worst_sum = float(np.abs(weights.sum(-1)[has] - 1).max()) if has.any() else 0.0
    return worst_sum, float(np.abs(weights[~real]).max(initial=0.0))


def check(run_dir, texts, scratch):
    start = time.perf_counter()
    result = export.export(run_dir, scratch / run_dir.name)
    seconds = time.perf_counter() - start
    loaded = tf.saved_model.load(str(result.saved_model))
    serve = loaded.signatures["serving_default"]
    start = time.perf_counter()
    served, worst_sum, worst_pad = [], 0.0, 0.0
    for begin in range(0, len(texts), 50):
        outputs = serve(text=tf.constant(texts[begin : begin + 50]))
        served.append(outputs["probability"].numpy())
        s, p = contract_violations(outputs)
        worst_sum, worst_pad = max(worst_sum, s), max(worst_pad, p)
    serve_seconds = time.perf_counter() - start
    served = np.concatenate(served)
    memory = in_memory(run_dir, texts)
    size = sum(f.stat().st_size for f in result.saved_model.rglob("*") if f.is_file())
    return {
        "run": str(run_dir),
        "family": result.family,
        "score_kind": result.score_kind,
        "export_seconds": round(seconds, 2),
        "saved_model_mb": round(size / 2**20, 2),
        "reviews": len(texts),
        "serve_seconds": round(serve_seconds, 2),
        "max_abs_probability_difference": float(np.abs(served - memory).max()),
        "max_abs_attention_sum_error": worst_sum,
        "max_attention_on_padding": worst_pad,
    }


def main():
    args = parse_args()
    with tempfile.TemporaryDirectory() as scratch:
        scratch = Path(scratch)
        if args.tiny:
            runs, texts = tiny_runs(scratch / "runs")
            texts = list(texts[: args.reviews])
        else:
            runs = [Path(r) for r in args.runs]
            imdb = load_imdb(args.data)
            texts = list(imdb.test.texts[: args.reviews])
        rows = [check(run, texts, scratch / "saved_models") for run in runs]
    for row in rows:
        print(
            f"{row['family']:<12} export {row['export_seconds']:6.2f} s  "
            f"SavedModel {row['saved_model_mb']:7.2f} MB  "
            f"max |p_saved - p_memory| over {row['reviews']} reviews "
            f"{row['max_abs_probability_difference']:.2e}  "
            f"sum error {row['max_abs_attention_sum_error']:.1e}  "
            f"padding {row['max_attention_on_padding']:.1e}"
        )
    out = Path(args.out or RESULTS / ("export_tiny.json" if args.tiny else "export.json"))
    out.write_text(json.dumps({"tiny": args.tiny, "results": rows}, indent=2) + "\n")
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
