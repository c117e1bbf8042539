"""HAN inference speed: where the time goes, and each variant side by side in one run (issue 31).

    python -m experiments.benchmarks.han_speed --run /tmp/presets/run-han \\
        --data /tmp/imdb/aclImdb [--reviews 2048] [--batch-size 64] [--repeats 3]

Loads a HAN run directory (``hatt.export.load_run``), tokenizes ``--reviews``
IMDB test reviews (a seeded sample of the 25,000) into dense ``[batch, S, W]``
batches, and times, in reviews/s (median of ``--repeats`` passes; the variants
take turns within every pass, so a busy machine slows them alike):

- ``profile_ms_per_review``: the parts of the dense classifier alone (word
  embedding, word BiGRU over ``[batch * S, W]``, word attention, sentence BiGRU
  and attention, the n-gram channel), as main built it before and as
  ``load_run`` builds it now;
- ``variants``: the whole classifier on the same ids: ``plain`` (the dense
  graph with a plain ``Bidirectional`` word encoder: main before this change),
  ``plain_xla`` (the same in ``tf.function(jit_compile=True)``), ``grouped_G``
  (the word encoder a ``LengthGroupedBidirectional`` with ``G`` groups),
  ``skip_masked`` (the word attention scoring the words only),
  ``grouped_8_skip_masked`` (both: what ``load_run`` builds now), and
  ``packed`` (the trained packed model on
  ``hatt.data.pack_sentences`` batches, packing not timed: the training
  layout, for reference);
- ``predict``: ``TextModel.classify`` (raw text → prediction: the exported
  ``predict`` signature's function) with the plain classifier and with the
  one ``load_run`` builds now.

Every variant's probabilities are compared with ``plain``'s (largest absolute
difference). Writes ``experiments/results/han_speed.json`` and ``.md`` (or
``--out``).
"""

import argparse
import glob
import json
import os
import random
import statistics
import time
from pathlib import Path

import keras
import numpy as np
import tensorflow as tf

from hatt import export
from hatt.data import pack_sentences
from hatt.models.wiring import EncoderMask, LengthGroupedBidirectional

RESULTS = Path(__file__).resolve().parents[1] / "results" / "han_speed.json"


def parse_args():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--run", default="/tmp/presets/run-han", help="HAN run directory")
    parser.add_argument("--data", default=os.environ.get("HATT_IMDB", "/tmp/imdb/aclImdb"))
    parser.add_argument("--reviews", type=int, default=2048)
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--groups", type=int, nargs="+", default=[4, 8, 16])
    parser.add_argument("--sentence-groups", type=int, nargs="+", default=[16, 50])
    parser.add_argument("--threads", type=int, default=None, help="TF intra-op threads")
    parser.add_argument("--inter-threads", type=int, default=None, help="TF inter-op threads")
    parser.add_argument("--no-xla", action="store_true", help="skip the jit_compile variant")
    parser.add_argument("--seed", type=int, default=1337)
    parser.add_argument("--out", default=str(RESULTS))
    return parser.parse_args()


# === Data ===


def read_reviews(data, count, seed):
    """`count` IMDB test reviews, a seeded sample of both classes."""
    files = sorted(glob.glob(os.path.join(data, "test", "*", "*.txt")))
    if not files:
        raise SystemExit(f"No IMDB test reviews under {data!r} (expected test/neg, test/pos).")
    files = random.Random(seed).sample(files, min(count, len(files)))
    return [Path(f).read_text(encoding="utf-8") for f in files]


def batches_of(text_model, texts, batch_size, sentence_groups):
    """Raw-text, dense-id and packed-id batches of the same reviews."""
    texts_b, dense_b, packed_b = [], [], []
    for start in range(0, len(texts), batch_size):
        chunk = tf.constant(texts[start : start + batch_size])
        ragged = text_model.ragged_ids(chunk)
        texts_b.append(chunk)
        dense_b.append(text_model.vectorizer.densify(ragged))
        packed_b.append(pack_sentences(ragged, sentence_groups))
    return texts_b, dense_b, packed_b


def fill(dense_batches):
    """Share of the `[batch * S, W]` cells and rows that hold a word."""
    cells = words = rows = real = 0
    for ids in dense_batches:
        ids = ids.numpy().reshape(-1, ids.shape[-1])
        cells, words = cells + ids.size, words + int((ids != 0).sum())
        rows, real = rows + ids.shape[0], real + int((ids != 0).any(axis=1).sum())
    return {"word_cells_filled": round(words / cells, 4), "rows_with_a_word": round(real / rows, 4)}


# === Models ===


def variant_of(model, groups=None, skip_masked=False):
    """A clone of the dense HAN `model` with its weights, built as asked.

    `groups=None`: the word encoder a plain `Bidirectional` (as main built it
    before), else a `LengthGroupedBidirectional` with `groups` groups;
    `skip_masked`: the word attention's setting.
    """

    def clone(layer):
        config = layer.get_config()
        if layer.name == "word_encoder":
            config.pop("groups", None), config.pop("min_rows", None)
            if groups is None:
                return keras.layers.Bidirectional.from_config(config)
            return LengthGroupedBidirectional.from_config({**config, "groups": groups})
        if layer.name == "word_attention":
            config["skip_masked"] = skip_masked
        return layer.__class__.from_config(config)

    twin = keras.models.clone_model(model, clone_function=clone)
    twin.set_weights(model.get_weights())
    return twin


def parts_of(model):
    """Functions over dense ids that run one part of the classifier each."""
    layer = model.get_layer
    embedding, encoder = layer("word_embedding"), layer("word_encoder")
    attention, channel = layer("word_attention"), layer("ngram_logit")
    sentence_encoder, sentence_attention = layer("sentence_encoder"), layer("sentence_attention")
    encoder_mask = EncoderMask()
    units = attention.kernel.shape[0]

    def rows(ids):
        return tf.reshape(ids, [-1, tf.shape(ids)[2]])

    def embed(ids):
        return embedding(rows(ids))

    def word_encoder(ids):
        words = rows(ids)
        return encoder(embedding(words), mask=encoder_mask(words != 0), training=False)

    def word_attention(ids):
        words = rows(ids)
        states = tf.ones(tf.concat([tf.shape(words), [units]], 0)) * 0.1
        return attention(states, mask=words != 0)

    def sentence_level(ids):
        mask = tf.reduce_any(ids != 0, -1)
        vectors = tf.ones(tf.concat([tf.shape(mask), [units]], 0)) * 0.1
        states = sentence_encoder(vectors, mask=encoder_mask(mask), training=False)
        return sentence_attention(states, mask=mask)

    return {
        "word_embedding": embed,
        "word_encoder": word_encoder,
        "word_attention": word_attention,
        "sentence_encoder_and_attention": sentence_level,
        "ngram_channel": channel,
    }


# === Timing ===


def time_all(functions, batches, repeats):
    """reviews/s of each function (median over passes; the functions take turns in a pass)."""
    names = list(functions)
    for name in names:  # trace and warm up
        functions[name](batches[name][0])
    seconds = {name: [] for name in names}
    for _ in range(repeats):
        for name in names:
            start = time.perf_counter()
            for batch in batches[name]:
                functions[name](batch)
            seconds[name].append(time.perf_counter() - start)
    return {name: statistics.median(s) for name, s in seconds.items()}


def outputs(function, batches):
    return np.concatenate([np.asarray(function(b)).reshape(-1) for b in batches])


def numpy_out(function):
    return lambda batch: keras.tree.map_structure(np.asarray, function(batch))


# === Report ===


def run(args):
    text_model = export.load_run(args.run)
    texts = read_reviews(args.data, args.reviews, args.seed)
    texts_b, dense_b, packed_b = batches_of(
        text_model, texts, args.batch_size, args.sentence_groups
    )
    plain = variant_of(text_model.classifier)
    report = {
        "run": str(args.run),
        "reviews": len(texts),
        "batch_size": args.batch_size,
        "threads": {
            "intra_op": args.threads or "default",
            "inter_op": args.inter_threads or "default",
        },
        "padding": fill(dense_b),
        "dense_shapes": sorted({str(tuple(b.shape)) for b in dense_b}),
    }

    # -- profile: the parts of the classifier of before and of now --
    parts = {
        f"{name}/{when}": numpy_out(tf.function(f, reduce_retracing=True))
        for when, model in (("before", plain), ("now", text_model.classifier))
        for name, f in parts_of(model).items()
    }
    seconds = time_all(parts, dict.fromkeys(parts, dense_b), args.repeats)
    report["profile_ms_per_review"] = {}
    for key, spent in seconds.items():
        name, when = key.split("/")
        report["profile_ms_per_review"].setdefault(name, {})[when] = round(
            1000 * spent / len(texts), 3
        )

    # -- whole classifier, variant by variant --
    models = {
        "plain": plain,
        **{f"grouped_{g}": variant_of(plain, groups=g) for g in args.groups},
        "skip_masked": variant_of(plain, skip_masked=True),
        "grouped_8_skip_masked": text_model.classifier,  # what load_run builds now
    }
    variants = {
        name: tf.function(lambda x, m=model: m(x, training=False), reduce_retracing=True)
        for name, model in models.items()
    }
    if not args.no_xla:
        variants["plain_xla"] = tf.function(
            lambda x: plain(x, training=False), jit_compile=True, reduce_retracing=True
        )
    packed_model = keras.saving.load_model(Path(args.run) / "model.keras", compile=False)
    variants["packed"] = tf.function(
        lambda x: packed_model(x, training=False), reduce_retracing=True
    )
    inputs = {name: dense_b for name in variants} | {"packed": packed_b}
    reference = outputs(variants["plain"], dense_b)
    report["max_abs_difference"] = {
        name: float(np.abs(outputs(f, inputs[name]) - reference).max())
        for name, f in variants.items()
    }
    variants = {name: numpy_out(f) for name, f in variants.items()}
    seconds = time_all(variants, inputs, args.repeats)
    report["variants"] = {n: round(len(texts) / s) for n, s in seconds.items()}
    report["variants_speedup"] = {n: round(seconds["plain"] / s, 2) for n, s in seconds.items()}

    # -- raw text to prediction (the exported predict signature's function) --
    plain_text_model = export.TextModel(plain, text_model.vectorizer, family="han")
    predict = {
        "plain": tf.function(plain_text_model.classify),
        "now": tf.function(text_model.classify),
    }
    predict = {name: numpy_out(f) for name, f in predict.items()}
    seconds = time_all(predict, dict.fromkeys(predict, texts_b), args.repeats)
    report["predict"] = {n: round(len(texts) / s) for n, s in seconds.items()}
    report["predict_speedup"] = round(seconds["plain"] / seconds["now"], 2)
    report["load_average"] = [round(x, 2) for x in os.getloadavg()]
    return report


def markdown(report):
    lines = [
        "# HAN inference speed (issue 31)",
        "",
        f"Run `{report['run']}`, {report['reviews']} IMDB test reviews, batches of "
        f"{report['batch_size']}, TF threads {report['threads']}, load average at the end "
        f"{report['load_average']}. Dense batches {', '.join(report['dense_shapes'])}; "
        f"{report['padding']['word_cells_filled']:.1%} of the `[batch * S, W]` cells hold a "
        f"word, {report['padding']['rows_with_a_word']:.1%} of the rows.",
        "",
        "Command: `python -m experiments.benchmarks.han_speed --run RUN --data aclImdb`",
        "",
        "## Where the time goes (each part of the classifier alone, ms per review)",
        "",
        "| part | before | now |",
        "|---|---:|---:|",
    ]
    for name, spent in report["profile_ms_per_review"].items():
        lines.append(f"| {name} | {spent['before']} | {spent['now']} |")
    lines += [
        "",
        "## The classifier on ids, variant by variant (one run, median of passes)",
        "",
        "| variant | reviews/s | x plain | max abs difference in probability |",
        "|---|---:|---:|---:|",
    ]
    for name, rate in report["variants"].items():
        lines.append(
            f"| {name} | {rate:,} | {report['variants_speedup'][name]} | "
            f"{report['max_abs_difference'][name]:.2e} |"
        )
    lines += [
        "",
        "## Raw text to prediction (`TextModel.classify`, the `predict` signature)",
        "",
        "| classifier | reviews/s |",
        "|---|---:|",
        *[f"| {n} | {r:,} |" for n, r in report["predict"].items()],
        "",
        f"now / plain: {report['predict_speedup']}x",
        "",
    ]
    return "\n".join(lines)


def main():
    args = parse_args()
    if args.threads:
        tf.config.threading.set_intra_op_parallelism_threads(args.threads)
    if args.inter_threads:
        tf.config.threading.set_inter_op_parallelism_threads(args.inter_threads)
    report = run(args)
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(report, indent=2) + "\n")
    out.with_suffix(".md").write_text(markdown(report))
    print(markdown(report))


if __name__ == "__main__":
    main()
