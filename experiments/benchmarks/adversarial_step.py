"""Training step time with adversarial (AT) and virtual adversarial (VAT) training against
a plain step, on the tests' planted corpus.

AT adds a backward pass to the embeddings and a second forward and backward pass;
VAT a third. This times ``train_on_batch`` of the same batches (the planted
corpus of ``tests/conftest.py`` at the tests' tiny sizes, or ``--units`` wider)
for each method, interleaved step by step so that a noisy machine slows all
alike, and prints the median step after ``--warmup`` (the tracing) and its
ratio to the plain step.

    python -m experiments.benchmarks.adversarial_step [--family rnn han] [--steps 30]
"""

import argparse
import statistics
import time
import types

import keras
import numpy as np

import hatt
from hatt.training import adversarial
from tests._planted import planted_corpus  # run from the project root: python -m ...

METHODS = ("none", "at", "vat")


def parse_args(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--family", nargs="+", default=["rnn", "han"], choices=["rnn", "han"])
    parser.add_argument("--units", type=int, default=8)
    parser.add_argument("--batch-size", type=int, default=16)
    parser.add_argument("--steps", type=int, default=30)
    parser.add_argument("--warmup", type=int, default=4)
    return parser.parse_args(argv)


def create_dataset(family, batch_size):
    """Batches of the planted corpus as the family reads them (the HAN packed)."""
    texts, labels = planted_corpus(batch_size * 4, 0, words=(4, 28), sentences=(1, 4))
    nested = family == "han"
    vectorizer = hatt.data.Vectorizer(
        max_tokens=200,
        min_count=1,
        output_mode="nested" if nested else "flat",
        sequence_length=20,
        max_sentences=6,
        max_words=8,
    ).adapt(texts)
    ids = hatt.data.encode(texts, vectorizer)
    batches = []
    for start in range(0, len(texts), batch_size):
        chunk = ids[start : start + batch_size]
        x = hatt.data.pack_sentences(chunk, (3, 8)) if nested else chunk.to_tensor()
        y = np.asarray(labels[start : start + batch_size], "float32")
        batches.append((x, y))
    return batches


def create_model(family, method, units):
    keras.utils.set_random_seed(0)
    sizes = {"units": units} if family == "rnn" else {"word_units": units, "sentence_units": units}
    packed = {"packed_groups": 2} if family == "han" else {}
    model = hatt.models.build(family, vocabulary_size=200, embedding_dim=8, **sizes, **packed)
    model.compile(optimizer="adam", loss="binary_crossentropy", metrics=["accuracy"])
    if method != "none":
        config = types.SimpleNamespace(
            adversarial=method, adversarial_epsilon=5.0, adversarial_weight=1.0
        )
        adversarial.enable(model, config)
    return model


def time_steps(family, args):
    """``{method: median seconds a step}``."""
    batches = create_dataset(family, args.batch_size)
    models = {method: create_model(family, method, args.units) for method in METHODS}
    seconds = {method: [] for method in METHODS}
    for step in range(args.warmup + args.steps):
        x, y = batches[step % len(batches)]
        for method in METHODS if step % 2 else METHODS[::-1]:
            start = time.perf_counter()
            models[method].train_on_batch(x, y)
            if step >= args.warmup:
                seconds[method].append(time.perf_counter() - start)
    return {method: statistics.median(values) for method, values in seconds.items()}


def main(argv=None):
    args = parse_args(argv)
    for family in args.family:
        median = time_steps(family, args)
        plain = median["none"]
        print(
            f"{family} (batch {args.batch_size}, units {args.units}): plain "
            f"{plain * 1000:.1f} ms/step, AT {median['at'] * 1000:.1f} ms "
            f"({median['at'] / plain:.2f}x), VAT {median['vat'] * 1000:.1f} ms "
            f"({median['vat'] / plain:.2f}x)"
        )


if __name__ == "__main__":
    main()
