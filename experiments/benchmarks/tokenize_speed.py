"""Text → ids speed and memory, beside scikit-learn's TF-IDF(1,3) transform, in one run (issue 31).

    python -m experiments.benchmarks.tokenize_speed --data /path/to/aclImdb [--reviews 25000]

Prints reviews/s (median of ``--repeats``) of the Vectorizer eagerly and inside a
``tf.function`` (the path of tf.data and the exports), of
``TfidfVectorizer(ngram_range=(1, 3)).transform`` on the same test reviews, and the
peak RSS growth of one huge unpunctuated review among 2,047 ordinary ones.
Results go to ``experiments/results/tokenize_speed.json``.
"""

import argparse
import glob
import json
import os
import resource
import statistics
import time
from pathlib import Path

import tensorflow as tf
from sklearn.feature_extraction.text import TfidfVectorizer

from hatt.data import Vectorizer

RESULTS = Path(__file__).resolve().parents[1] / "results" / "tokenize_speed.json"


def read_reviews(data, limit):
    files = sorted(glob.glob(os.path.join(data, "test", "*", "*.txt")))[:limit]
    return [Path(f).read_text(encoding="utf-8") for f in files]


def rate(step, batches, total, repeats):
    step(batches[0])
    runs = []
    for _ in range(repeats):
        start = time.perf_counter()
        for batch in batches:
            step(batch)
        runs.append(total / (time.perf_counter() - start))
    return round(statistics.median(runs))


def peak_mb():
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", default=os.environ.get("HATT_IMDB_DIR", "aclImdb"))
    parser.add_argument("--reviews", type=int, default=25000)
    parser.add_argument("--batch-size", type=int, default=512)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    texts = read_reviews(args.data, args.reviews)
    batches = [
        tf.constant(texts[i : i + args.batch_size]) for i in range(0, len(texts), args.batch_size)
    ]
    results = {"reviews": len(texts), "batch_size": args.batch_size}
    for mode, settings in (("flat", {"sequence_length": 800}), ("nested", {})):
        vectorizer = Vectorizer(max_tokens=30000, min_count=2, output_mode=mode, **settings)
        vectorizer.adapt(texts[:5000])
        results[f"{mode}_eager_reviews_per_s"] = rate(vectorizer, batches, len(texts), args.repeats)
        graph = tf.function(vectorizer.call)
        results[f"{mode}_graph_reviews_per_s"] = rate(graph, batches, len(texts), args.repeats)
    tfidf = TfidfVectorizer(ngram_range=(1, 3)).fit(texts[:5000])
    results["sklearn_tfidf13_transform_reviews_per_s"] = rate(
        lambda batch: tfidf.transform([t.decode("utf-8") for t in batch.numpy()]),
        batches,
        len(texts),
        args.repeats,
    )
    before = peak_mb()
    graph(tf.constant(["word " * 60000] + texts[:2047]))
    results["huge_review_among_2047_peak_growth_mb"] = round(peak_mb() - before, 1)
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    RESULTS.write_text(json.dumps(results, indent=2) + "\n")
    for key, value in results.items():
        print(f"{key:45s} {value}")


if __name__ == "__main__":
    main()
