"""Training step time of Johnson & Zhang's one-hot CNN: Adam against LazyAdam.

The one-hot CNN (``hatt.models.build("cnn", words="one_hot")``) keeps a
``[vocabulary, width · filters]`` table; Keras' Adam updates every row of it
and of its two moment estimates at each step, ``hatt.training.LazyAdam`` only
the rows the batch looked up. This times one ``train_on_batch`` of each on
the same batches — word ids drawn from a Zipf distribution over the
vocabulary (exponent 1.1, about how English word frequencies fall off),
review lengths from IMDB's (a log-normal around 230 words, at most
``--length``), sorted into batches of similar length as training does — for
each ``--filters``. The two optimizers are interleaved step by step (the
order alternating), so a noisy machine slows both alike; the median of
``--steps`` steps after ``--warmup`` is reported with the ratio.

    python -m experiments.benchmarks.lazy_adam [--filters 300 1000] [--steps 20]

Writes experiments/results/lazy_adam.json and lazy_adam.md.
"""

import argparse
import json
import platform
import statistics
import time
from pathlib import Path

import keras
import numpy as np

import hatt
from hatt.training import LazyAdam

RESULTS = Path(__file__).resolve().parents[1] / "results"


def parse_args(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--filters", type=int, nargs="+", default=[300, 1000])
    parser.add_argument("--width", type=int, default=3)
    parser.add_argument("--vocabulary", type=int, default=30000)
    parser.add_argument("--batch", type=int, default=32)
    parser.add_argument("--length", type=int, default=800)
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--warmup", type=int, default=3)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", default=str(RESULTS))
    return parser.parse_args(argv)


def batches(args):
    """`steps + warmup` `(ids, labels)` batches: Zipf word ids, IMDB-like lengths."""
    rng = np.random.default_rng(args.seed)
    ranks = np.arange(1, args.vocabulary - 1)
    p = ranks**-1.1
    p /= p.sum()
    out = []
    for _ in range(args.steps + args.warmup):
        lengths = np.clip(rng.lognormal(np.log(230), 0.6, args.batch), 10, args.length).astype(int)
        width = int(lengths.max())
        ids = np.zeros((args.batch, width), "int32")
        for row, n in enumerate(lengths):
            ids[row, :n] = rng.choice(ranks, n, p=p) + 1  # 0 is padding, 1 OOV
        out.append((ids, rng.integers(0, 2, (args.batch, 1)).astype("float32")))
    return out


def time_filters(args, filters, data):
    models = {}
    for name, optimizer in (("adam", keras.optimizers.Adam(1e-3)), ("lazy_adam", LazyAdam(1e-3))):
        keras.utils.set_random_seed(args.seed)
        model = hatt.models.build(
            "cnn", vocabulary_size=args.vocabulary, words="one_hot",
            kernel_sizes=[args.width], filters=filters,
        )  # fmt: skip
        model.compile(optimizer=optimizer, loss="binary_crossentropy")
        models[name] = model
    times = {name: [] for name in models}
    for step, (ids, labels) in enumerate(data):
        order = list(models) if step % 2 == 0 else list(reversed(models))
        for name in order:
            start = time.perf_counter()
            models[name].train_on_batch(ids, labels)
            if step >= args.warmup:
                times[name].append(time.perf_counter() - start)
    median = {name: statistics.median(t) for name, t in times.items()}
    return {
        "filters": filters,
        "parameters": models["adam"].count_params(),
        "median_seconds": median,
        "ratio_adam_over_lazy": median["adam"] / median["lazy_adam"],
    }


def main(argv=None):
    args = parse_args(argv)
    data = batches(args)
    rows = [time_filters(args, f, data) for f in args.filters]
    report = {
        "command": "python -m experiments.benchmarks.lazy_adam",
        "settings": {k: v for k, v in vars(args).items() if k != "out"},
        "machine": {"processor": platform.processor(), "cpus": __import__("os").cpu_count()},
        "backend": keras.backend.backend(),
        "rows": rows,
    }
    lines = [
        "| filters | parameters | Adam s/step | LazyAdam s/step | Adam / LazyAdam |",
        "|---|---|---|---|---|",
    ]
    for r in rows:
        m = r["median_seconds"]
        lines.append(
            f"| {r['filters']:,} | {r['parameters']:,} | {m['adam']:.3f} | {m['lazy_adam']:.3f} "
            f"| {r['ratio_adam_over_lazy']:.2f}× |"
        )
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    (out / "lazy_adam.json").write_text(json.dumps(report, indent=2) + "\n")
    table = "\n".join(lines) + "\n"
    (out / "lazy_adam.md").write_text(f"Command: `{report['command']}`\n\n{table}")
    print(table)
    return report


if __name__ == "__main__":
    main()
