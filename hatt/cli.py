"""The ``hatt`` command: a thin shell over the library.

Subcommands arrive with the features they drive; ``hatt data`` describes the
IMDB corpus (split sizes and length statistics).
"""

import argparse
import json
import shlex
import sys

import hatt


def _add_data_arguments(parser):
    parser.add_argument(
        "--data",
        metavar="PATH",
        default=None,
        help="aclImdb folder or .tar.gz (default: $HATT_IMDB, then tensorflow-datasets)",
    )
    parser.add_argument("--seed", type=int, default=1337, help="seed of the validation split")
    parser.add_argument(
        "--validation-size", type=int, default=2500, help="reviews carved out of train"
    )
    parser.add_argument(
        "--limit", type=int, default=None, help="keep a stratified subset of N per split"
    )


def _summary(values):
    import numpy as np

    values = np.asarray(values)
    if values.size == 0:
        return {"mean": 0.0, "median": 0.0, "p90": 0.0, "p99": 0.0, "max": 0}
    return {
        "mean": round(float(values.mean()), 1),
        "median": round(float(np.median(values)), 1),
        "p90": round(float(np.percentile(values, 90)), 1),
        "p99": round(float(np.percentile(values, 99)), 1),
        "max": int(values.max()),
    }


def data_statistics(imdb):
    """Split sizes and length statistics (words, sentences, words per sentence)."""
    from hatt.data import tokenize

    stats = {"source": imdb.source, "splits": {}}
    for name in ("train", "validation", "test"):
        split = getattr(imdb, name)
        words_per_review, sentences_per_review, words_per_sentence = [], [], []
        for start in range(0, len(split), 4096):
            tokens = tokenize(split.texts[start : start + 4096])
            sentence_lengths = tokens.row_lengths(axis=2)
            words_per_review.extend(tokens.merge_dims(1, 2).row_lengths().numpy().tolist())
            sentences_per_review.extend(tokens.row_lengths().numpy().tolist())
            words_per_sentence.extend(sentence_lengths.flat_values.numpy().tolist())
        stats["splits"][name] = {
            "reviews": len(split),
            "positive": int(split.labels.sum()),
            "negative": int(len(split) - split.labels.sum()),
            "words_per_review": _summary(words_per_review),
            "sentences_per_review": _summary(sentences_per_review),
            "words_per_sentence": _summary(words_per_sentence),
        }
    return stats


def _print_statistics(stats):
    print(f"IMDB from {stats['source']}")
    header = f"{'split':<11}{'reviews':>8}{'pos':>7}{'neg':>7}  {'':<20}"
    header += "".join(f"{k:>9}" for k in ("mean", "median", "p90", "p99", "max"))
    print(header)
    for name, split in stats["splits"].items():
        first = True
        for key in ("words_per_review", "sentences_per_review", "words_per_sentence"):
            s = split[key]
            prefix = (
                f"{name:<11}{split['reviews']:>8}{split['positive']:>7}{split['negative']:>7}"
                if first
                else " " * 33
            )
            print(
                f"{prefix}  {key:<20}"
                + "".join(f"{s[k]:>9}" for k in ("mean", "median", "p90", "p99", "max"))
            )
            first = False


def cmd_data(args):
    from hatt.data import load_imdb

    imdb = load_imdb(
        args.data,
        validation_size=args.validation_size,
        seed=args.seed,
        limit=args.limit,
        progress=not args.quiet,
    )
    stats = data_statistics(imdb)
    if args.json:
        print(json.dumps(stats, indent=2))
    else:
        _print_statistics(stats)
    return 0


def cmd_train(args):
    import shutil
    import time
    from pathlib import Path

    from hatt import training

    values = {"model": args.model}
    if args.config:
        try:
            values = training.merge_config(values, json.loads(Path(args.config).read_text()))
        except (OSError, json.JSONDecodeError) as error:
            raise ValueError(f"Could not read --config {args.config!r}: {error}") from error
        values["model"] = args.model
    values = training.merge_config(values, training.parse_overrides(args.set))
    for key in ("data", "epochs", "seed", "limit", "strategy", "prepared"):
        if getattr(args, key) is not None:
            values[key] = getattr(args, key)
    if args.seed is not None:  # a seed asked for on the command line: reproducible run
        values["deterministic"] = True
    if values.get("prepared"):  # the corpus fixes the data and vocabulary settings
        values = training.merge_config(values, training.prepared_settings(values["prepared"]))
    config = training.TrainConfig.from_dict(values)
    run_dir = Path(
        args.run_dir or Path("runs") / f"{config.model}-{time.strftime('%Y%m%d-%H%M%S')}"
    )
    # Quoted so that the recorded command can be pasted back into a shell.
    command = shlex.join(["hatt", *(sys.argv[1:] if args.argv is None else args.argv)])
    metrics = training.train(config, run_dir, command=command, restart=args.restart)
    print(training.summary(metrics, run_dir))
    if args.export_dir:
        # Until SavedModel export lands: the .keras model and its vocabulary.
        target = Path(args.export_dir) / config.model
        target.mkdir(parents=True, exist_ok=True)
        shutil.copy2(run_dir / "model.keras", target / "model.keras")
        shutil.copy2(run_dir / "vectorizer.json", target / "vectorizer.json")
        print(f"  exported to           {target}/model.keras (+ vectorizer.json)")
    return 0


def cmd_prepare(args):
    from pathlib import Path

    from hatt import training
    from hatt.data import load_imdb
    from hatt.data import prepared as prepared_lib

    values = training.merge_config({"model": args.model}, training.parse_overrides(args.set))
    for key in ("data", "seed", "limit"):
        if getattr(args, key) is not None:
            values[key] = getattr(args, key)
    config = training.TrainConfig.from_dict(values)
    imdb = load_imdb(
        config.data, validation_size=config.validation_size, seed=config.seed, limit=config.limit
    )
    settings = {k: getattr(config, k) for k in training.PREPARED_FIELDS}
    settings["seed"] = config.seed
    manifest = prepared_lib.prepare(
        imdb,
        training.create_vectorizer(config),
        args.out,
        model=config.model,
        shard_size=args.shard_size,
        settings=settings,
        progress=not args.quiet,
    )
    splits = manifest["splits"]
    print(
        f"\nPrepared {manifest['layout']} ids for {config.model} in {Path(args.out)}: "
        + ", ".join(
            f"{n} {s['reviews']} reviews / {len(s['shards'])} shards" for n, s in splits.items()
        )
        + f"; vocabulary {manifest['vocabulary_size']} ids"
    )
    print(f"Train with: hatt train {config.model} --prepared {args.out}")
    return 0


def build_parser():
    parser = argparse.ArgumentParser(
        prog="hatt",
        description="Attention-based document classifiers for Keras 3, on IMDB reviews.",
    )
    parser.add_argument("--version", action="version", version=f"hatt {hatt.__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")

    data = sub.add_parser("data", help="load IMDB and print split sizes and length statistics")
    _add_data_arguments(data)
    data.add_argument("--json", action="store_true", help="print the statistics as JSON")
    data.add_argument("--quiet", action="store_true", help="no progress bars")
    data.set_defaults(func=cmd_data)

    train = sub.add_parser(
        "train",
        help="train a model family on IMDB, evaluate on the test split, export it",
        description="Train MODEL on IMDB: vocabulary from the training split, early stopping "
        "on the validation split (best epoch restored), one evaluation on the full test split.",
    )
    train.add_argument("model", choices=("cnn", "rnn", "transformer", "han"))
    train.add_argument("--data", metavar="PATH", default=None, help="aclImdb folder or .tar.gz")
    train.add_argument("--config", metavar="FILE.json", help="settings (TrainConfig keys)")
    train.add_argument(
        "--set",
        metavar="KEY=VALUE",
        action="append",
        default=[],
        help="override one setting, e.g. --set batch_size=64 --set model_kwargs.units=32",
    )
    train.add_argument("--epochs", type=int, default=None)
    train.add_argument(
        "--seed",
        type=int,
        default=None,
        help="seed Python, NumPy and Keras and turn on op determinism (reproducible run)",
    )
    train.add_argument("--limit", type=int, default=None, help="stratified subset per split")
    train.add_argument(
        "--run-dir",
        default=None,
        help="default: runs/MODEL-TIMESTAMP; the same command with the same --run-dir resumes "
        "an interrupted run",
    )
    train.add_argument(
        "--export-dir", default="saved_models", help="where the model is exported ('' to skip)"
    )
    train.add_argument(
        "--strategy",
        choices=training_strategies(),
        default=None,
        help="tf.distribute strategy: default (one device), mirrored (the machine's GPUs or "
        "logical CPUs), multiworker (reads TF_CONFIG); batch_size is the global batch",
    )
    train.add_argument(
        "--prepared", metavar="DIR", default=None, help="train from `hatt prepare` shards"
    )
    train.add_argument(
        "--restart",
        action="store_true",
        help="discard an interrupted or finished run in --run-dir and train from the start "
        "(without it, the same command resumes an interrupted run)",
    )
    train.set_defaults(func=cmd_train)

    prepare = sub.add_parser(
        "prepare",
        help="tokenize IMDB once into TFRecord shards for `hatt train --prepared`",
        description="Fit the vocabulary on the training split and write the tokenized "
        "train / validation / test splits as TFRecord shards, with vectorizer.json and a "
        "prepared.json manifest.",
    )
    prepare.add_argument("--data", metavar="PATH", default=None, help="aclImdb folder or .tar.gz")
    prepare.add_argument("--out", metavar="DIR", required=True, help="output folder (new)")
    prepare.add_argument(
        "--model",
        choices=("cnn", "rnn", "transformer", "han"),
        default="han",
        help="family whose layout to write (flat for cnn/rnn/transformer, nested for han)",
    )
    prepare.add_argument("--shard-size", type=int, default=5000, help="reviews per shard")
    prepare.add_argument(
        "--set", metavar="KEY=VALUE", action="append", default=[], help="vocabulary settings"
    )
    prepare.add_argument("--seed", type=int, default=None, help="seed of the validation split")
    prepare.add_argument("--limit", type=int, default=None, help="stratified subset per split")
    prepare.add_argument("--quiet", action="store_true", help="no progress bars")
    prepare.set_defaults(func=cmd_prepare)
    return parser


def training_strategies():
    return ("default", "mirrored", "multiworker")


def main(argv=None):
    parser = build_parser()
    args = parser.parse_args(argv)
    args.argv = argv
    if not getattr(args, "func", None):
        parser.print_help()
        return 0
    from hatt.data import DataNotFoundError

    try:
        return args.func(args)
    except (DataNotFoundError, ValueError) as error:
        print(f"hatt {args.command}: error: {error}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
