"""Share of padding in training batches on the IMDB train split.

Compares, for the flat layout ``[batch, T]`` and the nested layout
``[batch, S, W]``:

- fixed shape: every batch padded to the maximum (T=400; S=30, W=50),
- hatt's pipeline: reviews bucketed by length (quantile buckets), each batch
  padded only to its own longest review (``hatt.data.make_dataset``),
- for the nested layout, the floor that no batching of a dense ``[batch, S, W]``
  tensor can go under: each review padded to its own ``S_d × W_d`` (its
  sentences differ in length),
- the packed nested layout (``make_dataset(..., packed=True)``): the batch's
  sentences in groups of similar length, each group ``[N_k, W_k]`` padded to
  its own longest sentence (what the HAN's word encoder would run over).

Run:  python -m experiments.benchmarks.padding [--data PATH]
Writes experiments/results/padding.json.
"""

import argparse
import json
import time
from pathlib import Path

import numpy as np
import tensorflow as tf

import hatt
from hatt.data import Vectorizer, encode, load_imdb, make_dataset, padding_share
from hatt.data.pipeline import default_sentence_groups

RESULTS = Path(__file__).resolve().parents[1] / "results" / "padding.json"


def parse_args():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", default=None, help="aclImdb folder or .tar.gz")
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--num-buckets", type=int, default=16)
    parser.add_argument("--seed", type=int, default=1337)
    parser.add_argument("--out", default=str(RESULTS))
    return parser.parse_args()


def fixed_share(ids, max_shape):
    """Padding share when every review is padded to ``max_shape``."""
    real = int(ids.flat_values.shape[0])
    return 1.0 - real / (int(ids.nrows()) * int(np.prod(max_shape)))


def own_shape_floor(ids):
    """Nested: padding when each review is padded only to its own S_d x W_d."""
    sentences = ids.row_lengths().numpy()
    widest = tf.reduce_max(ids.row_lengths(axis=2), axis=1).numpy()
    return 1.0 - int(ids.flat_values.shape[0]) / float((sentences * widest).sum())


def main():
    args = parse_args()
    imdb = load_imdb(args.data, seed=args.seed)
    texts, labels = imdb.train.texts, imdb.train.labels
    flat = Vectorizer(max_tokens=30000, min_count=2, sequence_length=400).adapt(texts)
    nested = Vectorizer(
        output_mode="nested",
        max_sentences=30,
        max_words=50,
        vocabulary=flat.get_vocabulary(include_special_tokens=False),
    )
    results = {"reviews": len(texts), "batch_size": args.batch_size, "seed": args.seed}
    for name, vectorizer in (("flat", flat), ("nested", nested)):
        start = time.perf_counter()
        ids = encode(texts, vectorizer, progress=True)
        options = {
            "vectorizer": vectorizer,
            "ids": ids,
            "batch_size": args.batch_size,
            "shuffle": True,
            "seed": args.seed,
            "num_buckets": args.num_buckets,
        }
        dataset = make_dataset(None, labels, **options)
        row = {
            "max_shape": list(vectorizer.max_shape()),
            "fixed_shape_padding": fixed_share(ids, vectorizer.max_shape()),
            "bucketed_padding": padding_share(dataset),
            "seconds": time.perf_counter() - start,
        }
        if name == "nested":
            row["own_shape_floor"] = own_shape_floor(ids)
            packed = make_dataset(None, labels, packed=True, **options)
            row["packed_padding"] = padding_share(packed)
            row["sentence_groups"] = list(default_sentence_groups(vectorizer.max_words))
        results[name] = row

    print(f"\nPadding share in batches of {args.batch_size}, IMDB train ({len(texts)} reviews)")
    header = f"{'layout':<8}{'max shape':>12}{'fixed shape':>14}{'bucketed':>11}"
    print(header + f"{'dense floor':>13}{'packed':>9}")
    for name in ("flat", "nested"):
        row = results[name]
        extra = "".join(
            f"{row[key]:{width}.1%}" if key in row else f"{'-':>{width}}"
            for key, width in (("own_shape_floor", 13), ("packed_padding", 9))
        )
        shape = "x".join(map(str, row["max_shape"]))
        print(
            f"{name:<8}{shape:>12}{row['fixed_shape_padding']:14.1%}"
            f"{row['bucketed_padding']:11.1%}{extra}"
        )
    print(
        "dense floor: each review padded only to its own sentences x longest sentence; "
        "no batching of a dense [batch, S, W] tensor goes below it.\n"
        "packed: sentences of each bucketed batch grouped by length "
        f"(widths {results['nested']['sentence_groups']}), each group padded to its longest."
    )
    results["hatt_version"] = hatt.__version__
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(results, indent=2) + "\n")
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
