"""BiGRU vs BiSRU encoders: training step time and prediction speed, side by side (issue 35).

    python -m experiments.benchmarks.sru_speed [--threads 2] [--batch 32] [--length 400]
    KERAS_BACKEND=torch python -m experiments.benchmarks.sru_speed

Builds the rnn classifier at the sizes of ``hatt/presets/rnn.json`` (its
``model_kwargs``; the n-gram channel left out: it does not depend on the cell)
once per ``--cells`` entry, the same in all but ``cell``, and times on
synthetic token ids ``[--batch, --length]`` (random ids, each review right
padded to a random length between a quarter of ``--length`` and all of it):

- ``train_step_ms``: one ``model.train_on_batch`` (Adam, binary cross-entropy;
  a traced graph under TensorFlow), the mean over ``--steps`` steps;
- ``predict_reviews_per_s``: ``model.predict_on_batch`` over ``--predict-batches``
  batches, in reviews per second;
- the same in CPU time of the process (all its threads): ``train_step_cpu_ms``,
  ``predict_reviews_per_cpu_s``.

Each is the median of ``--repeats`` runs after a warm-up step; the cells take
turns batch by batch (the order alternating), so a busy machine slows them
alike. The process is held to ``--threads`` cores (TensorFlow's intra-
and inter-op threads, torch's threads). Writes ``experiments/results/
sru_speed.json`` and ``.md`` (or ``--out``).
"""

import argparse
import json
import os
import platform
import statistics
import sys
import time
from pathlib import Path

import numpy as np

RESULTS = Path(__file__).resolve().parents[1] / "results" / "sru_speed.json"
PRESET = Path(__file__).resolve().parents[2] / "hatt" / "presets" / "rnn.json"


def parse_args():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cells", nargs="+", default=["gru", "sru"])
    parser.add_argument("--threads", type=int, default=2, help="cores the process may use")
    parser.add_argument("--batch", type=int, default=32)
    parser.add_argument("--length", type=int, default=400, help="tokens a padded review")
    parser.add_argument("--vocab", type=int, default=None, help="default: the preset's")
    parser.add_argument("--steps", type=int, default=5, help="training steps a run")
    parser.add_argument("--predict-batches", type=int, default=8, help="batches a run")
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--out", type=Path, default=RESULTS)
    return parser.parse_args()


def limit_threads(threads):
    """Hold the backend to `threads` cores (before it starts any work)."""
    import keras

    if keras.backend.backend() == "tensorflow":
        import tensorflow as tf

        tf.config.threading.set_intra_op_parallelism_threads(threads)
        tf.config.threading.set_inter_op_parallelism_threads(threads)
    elif keras.backend.backend() == "torch":
        import torch

        torch.set_num_threads(threads)
        torch.set_num_interop_threads(threads)


def synthetic_batches(count, batch, length, vocab, seed):
    """`count` id batches `[batch, length]`, right padded to random lengths."""
    rng = np.random.default_rng(seed)
    batches = []
    for _ in range(count):
        ids = rng.integers(1, vocab, size=(batch, length)).astype("int32")
        lengths = rng.integers(length // 4, length + 1, size=batch)
        ids[np.arange(length)[None, :] >= lengths[:, None]] = 0
        batches.append(ids)
    return batches


def create_model(cell, model_kwargs, vocab):
    import keras

    import hatt

    keras.utils.set_random_seed(0)
    model = hatt.models.build("rnn", vocabulary_size=vocab, **{**model_kwargs, "cell": cell})
    model.compile(keras.optimizers.Adam(1e-3), "binary_crossentropy")
    return model


def timed(fn, *args):
    """`(wall seconds, CPU seconds of the process)` of `fn(*args)`."""
    wall, cpu = time.perf_counter(), time.process_time()
    fn(*args)
    return time.perf_counter() - wall, time.process_time() - cpu


def measure(models, train_batches, predict_batches, labels, repeats):
    """`{cell: {measure: [one value a run]}}`.

    Within a run the cells take turns batch by batch (the order alternating),
    so that a busy machine slows them alike; CPU time (all threads of the
    process) is recorded beside wall time, being less moved by other work.
    """
    cells = list(models)
    for cell in cells:  # warm-up: traces the graphs
        models[cell].train_on_batch(train_batches[0], labels)
        models[cell].predict_on_batch(predict_batches[0])
    keys = (
        "train_step_s",
        "train_step_cpu_s",
        "predict_reviews_per_s",
        "predict_reviews_per_cpu_s",
    )
    runs = {cell: {key: [] for key in keys} for cell in cells}
    turn = 0
    for _ in range(repeats):
        totals = {cell: np.zeros(4) for cell in cells}
        for ids in train_batches:
            turn += 1
            for cell in cells if turn % 2 else cells[::-1]:
                totals[cell][:2] += timed(models[cell].train_on_batch, ids, labels)
        for ids in predict_batches:
            turn += 1
            for cell in cells if turn % 2 else cells[::-1]:
                totals[cell][2:] += timed(models[cell].predict_on_batch, ids)
        reviews = sum(len(ids) for ids in predict_batches)
        for cell, (wall, cpu, predict_wall, predict_cpu) in totals.items():
            runs[cell]["train_step_s"].append(wall / len(train_batches))
            runs[cell]["train_step_cpu_s"].append(cpu / len(train_batches))
            runs[cell]["predict_reviews_per_s"].append(reviews / predict_wall)
            runs[cell]["predict_reviews_per_cpu_s"].append(reviews / predict_cpu)
    return runs


def summarize(runs, baseline):
    rows = {}
    for cell, times in runs.items():
        rows[cell] = {
            "train_step_ms": 1e3 * statistics.median(times["train_step_s"]),
            "train_step_cpu_ms": 1e3 * statistics.median(times["train_step_cpu_s"]),
            "predict_reviews_per_s": statistics.median(times["predict_reviews_per_s"]),
            "predict_reviews_per_cpu_s": statistics.median(times["predict_reviews_per_cpu_s"]),
        }
    base = rows[baseline]
    for row in rows.values():
        row["train_speedup"] = base["train_step_ms"] / row["train_step_ms"]
        row["train_cpu_speedup"] = base["train_step_cpu_ms"] / row["train_step_cpu_ms"]
        row["predict_speedup"] = row["predict_reviews_per_s"] / base["predict_reviews_per_s"]
        row["predict_cpu_speedup"] = (
            row["predict_reviews_per_cpu_s"] / base["predict_reviews_per_cpu_s"]
        )
    return rows


def markdown(report):
    lines = [
        "# BiGRU vs BiSRU encoders: training step and prediction speed (issue 35, item 5)",
        "",
        f"The rnn classifier at `hatt/presets/rnn.json`'s sizes ({report['model_kwargs']}, "
        f"vocabulary {report['vocab']:,}), synthetic batches of {report['batch']} reviews x "
        f"{report['length']} tokens ({100 * report['padding_fraction']:.0f} % padding), "
        f"{report['threads']} threads, {report['backend']} backend (Keras {report['keras']}), "
        f"{report['machine']}; load average at the end {report['load_average']}. Median of "
        f"{report['repeats']} runs ({report['steps']} training steps, "
        f"{report['predict_batches']} prediction batches a run), the cells taking turns "
        "batch by batch.",
        "",
        f"Command: `{report['command']}`",
        "",
        f"Speed-ups are against {report['baseline']} (higher is faster). CPU time is the "
        "process's, all threads: on a shared machine it moves less than wall time.",
        "",
        "| cell | training step (ms) | speed-up | CPU ms a step | speed-up "
        "| prediction (reviews/s) | speed-up | reviews a CPU second | speed-up |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for cell, row in report["results"].items():
        lines.append(
            f"| {cell} | {row['train_step_ms']:.0f} | {row['train_speedup']:.2f} "
            f"| {row['train_step_cpu_ms']:.0f} | {row['train_cpu_speedup']:.2f} "
            f"| {row['predict_reviews_per_s']:,.0f} | {row['predict_speedup']:.2f} "
            f"| {row['predict_reviews_per_cpu_s']:,.0f} | {row['predict_cpu_speedup']:.2f} |"
        )
    return "\n".join(lines) + "\n"


def main():
    args = parse_args()
    limit_threads(args.threads)
    import keras

    model_kwargs = json.loads(PRESET.read_text())["model_kwargs"]
    model_kwargs.pop("cell", None)
    vocab = args.vocab or json.loads(PRESET.read_text())["max_tokens"]
    train_batches = synthetic_batches(args.steps, args.batch, args.length, vocab, seed=0)
    predict_batches = synthetic_batches(args.predict_batches, args.batch, args.length, vocab, 1)
    labels = np.random.default_rng(2).integers(0, 2, size=(args.batch, 1)).astype("float32")
    models = {cell: create_model(cell, model_kwargs, vocab) for cell in args.cells}
    runs = measure(models, train_batches, predict_batches, labels, args.repeats)
    report = {
        "benchmark": "sru_speed",
        "command": " ".join(["python -m experiments.benchmarks.sru_speed", *sys.argv[1:]]),
        "backend": keras.backend.backend(),
        "keras": keras.__version__,
        "machine": f"{platform.machine()}, {os.cpu_count()} CPUs",
        "threads": args.threads,
        "load_average": [round(x, 2) for x in os.getloadavg()],
        "model_kwargs": model_kwargs,
        "vocab": vocab,
        "batch": args.batch,
        "length": args.length,
        "padding_fraction": float(np.mean([(b == 0).mean() for b in train_batches])),
        "steps": args.steps,
        "predict_batches": args.predict_batches,
        "repeats": args.repeats,
        "baseline": args.cells[0],
        "results": summarize(runs, args.cells[0]),
        "runs": runs,
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(report, indent=2) + "\n")
    args.out.with_suffix(".md").write_text(markdown(report))
    print(markdown(report))


if __name__ == "__main__":
    main()
