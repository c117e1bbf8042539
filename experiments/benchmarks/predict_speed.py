"""The exported model's `predict` beside scikit-learn's TF-IDF(1,3) + LR, in one run (issue 31).

    python -m experiments.benchmarks.predict_speed --export /path/to/saved_models/cnn/cnn \
        --data /path/to/aclImdb [--reviews 25000] [--repeats 3]

On the test reviews, each figure the median of ``--repeats`` passes (reviews/s):

- the SavedModel's ``predict`` signature (``tf.saved_model.load``, plain TensorFlow)
  at batch 64 and 256, and ``hatt.export.load(...).predict_proba`` at batch 64;
- the Keras classifier alone on precomputed dense ids (the ``model.keras`` beside the
  export, in a ``tf.function``), and the same under XLA (``jit_compile=True``) with its
  largest probability difference;
- the tokenizer alone (text → dense ids, the ``predict`` signature's first half);
- a scikit-learn ``TfidfVectorizer(ngram_range=(1, 3))`` + ``LogisticRegression``
  pipeline's ``predict_proba`` (fit on the 25,000 train reviews once);
- one review alone through the ``predict`` signature: latency p50/p99 in ms.

Results go to ``experiments/results/predict_speed.json`` and ``.md`` (with ``uptime``'s
load average: the machine is shared).
"""

import argparse
import glob
import json
import os
import statistics
import time
from pathlib import Path

import numpy as np
import tensorflow as tf

RESULTS = Path(__file__).resolve().parents[1] / "results" / "predict_speed"


def read_split(data, split, limit=None):
    texts, labels = [], []
    for label, name in enumerate(("neg", "pos")):
        files = sorted(glob.glob(os.path.join(data, split, name, "*.txt")))
        texts += [Path(f).read_text(encoding="utf-8") for f in files]
        labels += [label] * len(files)
    order = np.random.default_rng(0).permutation(len(texts))[:limit]
    return [texts[i] for i in order], np.asarray(labels)[order]


def rate(step, batches, total, repeats):
    """Median reviews/s over ``repeats`` passes of ``step`` over ``batches`` (one warm-up)."""
    step(batches[0])
    runs = []
    for _ in range(repeats):
        start = time.perf_counter()
        for batch in batches:
            step(batch)
        runs.append(total / (time.perf_counter() - start))
    return round(statistics.median(runs), 1)


def batched(texts, size):
    return [tf.constant(texts[i : i + size]) for i in range(0, len(texts), size)]


def load_average():
    return [round(x, 2) for x in os.getloadavg()]


# === The measurements ===


def signature_rates(export_dir, texts, repeats):
    loaded = tf.saved_model.load(str(export_dir))
    predict = loaded.signatures["predict"]
    out = {}
    for size in (64, 256):
        out[f"predict signature, batch {size}"] = rate(
            lambda b: predict(text=b), batched(texts, size), len(texts), repeats
        )
    latencies = []
    singles = batched(texts[:201], 1)
    predict(text=singles[0])
    for single in singles[1:]:
        start = time.perf_counter()
        predict(text=single)
        latencies.append((time.perf_counter() - start) * 1000)
    out["one review, p50 ms"] = round(float(np.percentile(latencies, 50)), 2)
    out["one review, p99 ms"] = round(float(np.percentile(latencies, 99)), 2)
    return out


def predictor_rate(export_dir, texts, repeats):
    from hatt import export

    predictor = export.load(export_dir)
    return {
        "hatt.export.load predict_proba, batch 64": rate(
            lambda b: predictor.predict_proba(b, batch_size=64),
            [texts[i : i + 1024] for i in range(0, len(texts), 1024)],
            len(texts),
            repeats,
        )
    }


def keras_rates(export_dir, texts, repeats, size=64):
    """The tokenizer alone, and the classifier alone on precomputed ids (plain and XLA)."""
    from hatt import export

    text_model = export.load(Path(export_dir) / "model.keras").text_model
    vectorizer = text_model.vectorizer

    @tf.function(autograph=False)
    def tokenize(batch):
        return vectorizer.densify(vectorizer.ragged_ids(batch))

    batches = batched(texts, size)
    out = {"tokenizer alone (text -> dense ids)": rate(tokenize, batches, len(texts), repeats)}
    ids = [tokenize(b) for b in batches]
    # One length for every batch (the longest), so that XLA compiles once; padding
    # never changes a review's output (tests/models pin it).
    longest = max(int(x.shape[1]) for x in ids)
    ids = [tf.pad(x, [[0, 0], [0, longest - int(x.shape[1])]]) for x in ids]
    spec = [tf.TensorSpec([None, None], tf.int32)]

    @tf.function(autograph=False, input_signature=spec)
    def classify(x):
        return text_model.classifier(x, training=False)

    @tf.function(autograph=False, jit_compile=True)
    def classify_xla(x):
        return text_model.classifier(x, training=False)

    out["classifier on ids"] = rate(classify, ids, len(texts), repeats)
    out["classifier on ids, XLA"] = rate(classify_xla, ids, len(texts), repeats)
    difference = max(
        float(np.max(np.abs(classify(x).numpy() - classify_xla(x).numpy()))) for x in ids[:20]
    )
    out["classifier XLA max |p difference| (first 20 batches)"] = difference
    return out


def sklearn_rates(data, texts, repeats):
    from sklearn.feature_extraction.text import TfidfVectorizer
    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import make_pipeline

    train, labels = read_split(data, "train")
    pipeline = make_pipeline(
        TfidfVectorizer(ngram_range=(1, 3), sublinear_tf=True, min_df=2),
        LogisticRegression(C=8.0, max_iter=1000),
    )
    pipeline.fit(train, labels)
    batches = [texts[i : i + 64] for i in range(0, len(texts), 64)]
    return {
        "sklearn TF-IDF(1,3)+LR predict_proba, batch 64": rate(
            pipeline.predict_proba, batches, len(texts), repeats
        ),
        "sklearn TF-IDF(1,3) transform alone, batch 64": rate(
            pipeline[0].transform, batches, len(texts), repeats
        ),
    }


def before_rates(path, texts, repeats):
    return {f"before: {k}": v for k, v in signature_rates(path, texts, repeats).items()}


def saved_model(export_dir):
    """The newest numbered version inside ``export_dir``, or the folder itself."""
    versions = [p for p in export_dir.iterdir() if p.name.isdigit()]
    return max(versions, key=lambda p: int(p.name)) if versions else export_dir


# === Report ===


def markdown(report):
    lines = [
        "# Predict speed (issue 31)",
        "",
        f"`{report['command']}`",
        "",
        f"{report['reviews']} IMDB test reviews, {report['cpus']} CPUs, median of "
        f"{report['repeats']} passes; load average {report['load_before']} before, "
        f"{report['load_after']} after.",
        "",
        "| what | figure |",
        "|---|---|",
    ]
    lines += [f"| {key} | {value} |" for key, value in report["figures"].items()]
    return "\n".join(lines) + "\n"


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--export", required=True, help="a SavedModel folder (version inside)")
    parser.add_argument("--data", default=os.environ.get("HATT_IMDB", "aclImdb"))
    parser.add_argument("--reviews", type=int, default=25000)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--output", default=str(RESULTS))
    parser.add_argument(
        "--before", help="another export (an older build) whose signature is timed beside"
    )
    parser.add_argument("--skip-sklearn", action="store_true")
    args = parser.parse_args(argv)
    export_dir = Path(args.export)
    texts, _ = read_split(args.data, "test", args.reviews)
    report = {
        "command": "python -m experiments.benchmarks.predict_speed "
        + " ".join(
            f"--{k.replace('_', '-')} {v}"
            for k, v in vars(args).items()
            if v is not None and v is not False
        ),
        "reviews": len(texts),
        "repeats": args.repeats,
        "cpus": os.cpu_count(),
        "load_before": load_average(),
        "figures": {},
    }
    steps = [
        lambda: signature_rates(saved_model(export_dir), texts, args.repeats),
        lambda: predictor_rate(export_dir, texts, args.repeats),
        lambda: keras_rates(export_dir, texts, args.repeats),
    ]
    if args.before:
        steps.insert(0, lambda: before_rates(saved_model(Path(args.before)), texts, args.repeats))
    if not args.skip_sklearn:
        steps.append(lambda: sklearn_rates(args.data, texts, args.repeats))
    for step in steps:
        figures = step()
        report["figures"].update(figures)
        for key, value in figures.items():
            print(f"{key:55s} {value}", flush=True)
    report["load_after"] = load_average()
    output = Path(args.output)
    output.parent.mkdir(parents=True, exist_ok=True)
    output.with_suffix(".json").write_text(json.dumps(report, indent=2) + "\n")
    output.with_suffix(".md").write_text(markdown(report))


if __name__ == "__main__":
    main()
