"""Overhead of ContextAttention pooling over masked average pooling (forward + backward).

Times one forward + backward pass (gradients of the summed output with respect
to every trainable weight) of

    Embedding(mask_zero=True) -> hatt.layers.ContextAttention
    Embedding(mask_zero=True) -> GlobalAveragePooling1D (masked)

on token ids shaped `[batch, T]` (embeddings `[batch, T, dim]`, default
`[64, 400, 128]`) with random right padding. Both are measured in one process
and interleaved step by step (the order alternating), so that a noisy machine
slows both alike; the median of `--steps` steps after `--warmup` steps is
reported, and their ratio is printed and written as JSON.

    python -m experiments.benchmarks.attention_overhead
    KERAS_BACKEND=torch python -m experiments.benchmarks.attention_overhead

Target: ratio <= 1.3.
"""

import argparse
import json
import os
import platform
import statistics
import time
from pathlib import Path

import keras
import numpy as np

import hatt

TARGET = 1.3
RESULTS = Path(__file__).resolve().parents[1] / "results" / "attention_overhead.json"


def parse_args():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--batch", type=int, default=64)
    parser.add_argument("--steps-per-doc", dest="length", type=int, default=400)
    parser.add_argument("--dim", type=int, default=128)
    parser.add_argument("--vocab", type=int, default=20000)
    parser.add_argument("--score", default="dot")
    parser.add_argument("--units", type=int, default=None, help="projection size (default: dim)")
    parser.add_argument("--warmup", type=int, default=3)
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--output", type=Path, default=RESULTS)
    return parser.parse_args()


def create_dataset(args):
    rng = np.random.default_rng(0)
    ids = rng.integers(1, args.vocab, size=(args.batch, args.length)).astype("int32")
    lengths = rng.integers(args.length // 4, args.length + 1, size=args.batch)
    ids[np.arange(args.length)[None, :] >= lengths[:, None]] = 0
    return ids


def create_models(args):
    def model(pool, name):
        tokens = keras.Input((None,), dtype="int32", name="tokens")
        x = keras.layers.Embedding(args.vocab, args.dim, mask_zero=True, name="embedding")(tokens)
        return keras.Model(tokens, pool(x), name=name)

    attention = model(
        hatt.layers.ContextAttention(score=args.score, units=args.units, name="attention"),
        "attention",
    )
    average = model(keras.layers.GlobalAveragePooling1D(name="average"), "average")
    return attention, average


def make_step(model):
    """A function running forward + backward once and returning when the gradients are ready."""
    backend = keras.backend.backend()
    if backend == "tensorflow":
        import tensorflow as tf

        @tf.function
        def grads(ids):
            with tf.GradientTape() as tape:
                loss = tf.reduce_sum(model(ids, training=True))
            return tape.gradient(loss, model.trainable_variables)

        def step(ids):
            for g in grads(ids):
                _ = g.numpy() if not isinstance(g, tf.IndexedSlices) else g.values.numpy()

        return step
    if backend == "torch":
        import torch

        ids_cache = {}

        def step(ids):
            key = id(ids)
            if key not in ids_cache:
                ids_cache[key] = torch.as_tensor(ids)
            model.zero_grad(set_to_none=True)
            loss = model(ids_cache[key], training=True).sum()
            loss.backward()

        return step
    if backend == "jax":
        import jax

        trainable = [v.value for v in model.trainable_variables]
        non_trainable = [v.value for v in model.non_trainable_variables]

        def loss_fn(trainable, ids):
            out, _ = model.stateless_call(trainable, non_trainable, ids, training=True)
            return out.sum()

        grad_fn = jax.jit(jax.grad(loss_fn))

        def step(ids):
            jax.block_until_ready(grad_fn(trainable, ids))

        return step
    raise SystemExit(f"unsupported backend {backend}")


def measure(steps, ids, warmup, repeats):
    """Interleaved timings: `{name: [seconds, ...]}`, alternating which model goes first."""
    names = list(steps)
    for _ in range(warmup):
        for name in names:
            steps[name](ids)
    times = {name: [] for name in names}
    for i in range(repeats):
        for name in names if i % 2 == 0 else names[::-1]:
            start = time.perf_counter()
            steps[name](ids)
            times[name].append(time.perf_counter() - start)
    return times


def main():
    args = parse_args()
    if args.steps < 10:
        raise SystemExit("--steps must be >= 10")
    ids = create_dataset(args)
    attention, average = create_models(args)
    times = measure(
        {"context_attention": make_step(attention), "average_pooling": make_step(average)},
        ids,
        args.warmup,
        args.steps,
    )
    medians = {name: statistics.median(t) for name, t in times.items()}
    ratio = medians["context_attention"] / medians["average_pooling"]
    result = {
        "benchmark": "attention_overhead",
        "backend": keras.backend.backend(),
        "keras": keras.__version__,
        "machine": f"{platform.machine()}, {os.cpu_count()} CPUs",
        "shape": [args.batch, args.length, args.dim],
        "vocab": args.vocab,
        "score": args.score,
        "units": args.units or args.dim,
        "padding_fraction": float((ids == 0).mean()),
        "warmup": args.warmup,
        "steps": args.steps,
        "median_seconds": medians,
        "times_seconds": times,
        "ratio": ratio,
        "target": TARGET,
        "meets_target": ratio <= TARGET,
    }
    args.output.parent.mkdir(parents=True, exist_ok=True)
    args.output.write_text(json.dumps(result, indent=2) + "\n")
    print(
        f"[{result['backend']}] forward+backward on {result['shape']}: "
        f"ContextAttention {medians['context_attention'] * 1e3:.1f} ms, "
        f"GlobalAveragePooling1D {medians['average_pooling'] * 1e3:.1f} ms "
        f"(median of {args.steps})"
    )
    print(f"ratio {ratio:.2f} (target <= {TARGET}) -> {args.output}")


if __name__ == "__main__":
    main()
