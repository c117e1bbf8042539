"""HAN training step: packed sentence groups versus dense ``[batch, S, W]`` batches.

Both models are built by ``hatt.models.build("han")`` with the same weights; the
same reviews (IMDB train, bucketed batches of 32) are fed as dense nested
batches and as packed batches (``make_dataset(..., packed=True)``). Training
steps of the two are interleaved batch by batch, so a noisy machine slows both
alike; the script prints the median step time of each and their ratio, and the
padding share each layout feeds the word encoder.

    python -m experiments.benchmarks.han_packed [--data PATH] [--reviews 3000]

Writes experiments/results/han_packed.json.
"""

import argparse
import json
import statistics
import time
from pathlib import Path

import keras
import numpy as np

import hatt
from hatt.data import Vectorizer, encode, load_imdb, make_dataset, padding_share
from hatt.data.pipeline import default_sentence_groups

RESULTS = Path(__file__).resolve().parents[1] / "results" / "han_packed.json"


def parse_args():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", default=None, help="aclImdb folder or .tar.gz")
    parser.add_argument("--reviews", type=int, default=3000, help="training reviews used")
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--warmup", type=int, default=5, help="batches before timing")
    parser.add_argument(
        "--groups",
        type=int,
        nargs="+",
        default=None,
        help="sentence-group widths (default: hatt.data.pipeline.default_sentence_groups)",
    )
    parser.add_argument("--seed", type=int, default=1337)
    parser.add_argument("--out", default=str(RESULTS))
    return parser.parse_args()


def create_datasets(args):
    imdb = load_imdb(args.data, seed=args.seed, limit=args.reviews)
    texts, labels = imdb.train.texts, imdb.train.labels
    vectorizer = Vectorizer(max_tokens=30000, min_count=2, output_mode="nested").adapt(texts)
    ids = encode(texts, vectorizer, progress=True)
    options = {"vectorizer": vectorizer, "ids": ids, "batch_size": args.batch_size}
    groups = tuple(args.groups or default_sentence_groups(vectorizer.max_words))
    dense = make_dataset(None, labels, **options)  # the same batches in the same order:
    packed = make_dataset(None, labels, packed=True, sentence_groups=groups, **options)
    return vectorizer, dense, packed, groups


def create_models(vectorizer, groups):
    keras.utils.set_random_seed(0)
    dense = hatt.models.build("han", vocabulary_size=vectorizer.vocabulary_size)
    packed = hatt.models.build(
        "han", vocabulary_size=vectorizer.vocabulary_size, packed_groups=len(groups)
    )
    packed.set_weights(dense.get_weights())
    for model in (dense, packed):
        model.compile("adam", "binary_crossentropy")
    return dense, packed


def measure(models, datasets, warmup):
    times = {"dense": [], "packed": []}
    pairs = zip(*datasets.values(), strict=True)
    for i, batches in enumerate(pairs):
        order = list(zip(times, models, batches, strict=True))
        for name, model, (x, y) in order if i % 2 == 0 else order[::-1]:
            start = time.perf_counter()
            model.train_on_batch(x, y)
            if i >= warmup:
                times[name].append(time.perf_counter() - start)
    return times


def main():
    args = parse_args()
    vectorizer, dense_ds, packed_ds, groups = create_datasets(args)
    dense, packed = create_models(vectorizer, groups)
    # Both layouts compute the same function with the same weights: a sanity check.
    x_dense, _ = next(iter(dense_ds))
    x_packed, _ = next(iter(packed_ds))
    gap = float(np.abs(dense.predict_on_batch(x_dense) - packed.predict_on_batch(x_packed)).max())
    times = measure((dense, packed), {"dense": dense_ds, "packed": packed_ds}, args.warmup)
    medians = {name: statistics.median(t) for name, t in times.items()}
    result = {
        "reviews": args.reviews,
        "batch_size": args.batch_size,
        "sentence_groups": list(groups),
        "steps_timed": len(times["dense"]),
        "median_step_seconds": medians,
        "speedup": medians["dense"] / medians["packed"],
        "padding": {"dense": padding_share(dense_ds), "packed": padding_share(packed_ds)},
        "backend": keras.backend.backend(),
        "hatt_version": hatt.__version__,
        "seed": args.seed,
        "max_probability_gap_before_training": gap,
    }
    print(
        f"\nHAN train step, {result['steps_timed']} IMDB batches of {args.batch_size} "
        f"(median, interleaved):\n"
        f"  dense  [batch, S, W]   {1000 * medians['dense']:7.1f} ms   "
        f"padding {result['padding']['dense']:.1%}\n"
        f"  packed {str(list(groups)):<15} {1000 * medians['packed']:7.1f} ms   "
        f"padding {result['padding']['packed']:.1%}\n"
        f"  speed-up {result['speedup']:.2f}x; same weights give the same probabilities "
        f"(max gap {gap:.1e})"
    )
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(result, indent=2) + "\n")
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
