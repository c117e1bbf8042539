"""``hatt data`` (what a corpus holds) and ``hatt prepare`` (tokenized shards)."""

import json

import hatt
from hatt.cli.args import (
    _add_data,
    _add_limit,
    _add_quiet,
    _add_seed,
    _add_set,
    _config_data_options,
    data_options,
)
from hatt.names import FAMILIES

# === hatt data ======================================================================


def _split_size(text):
    """``--validation-size``: a number of documents (int) or a share in (0, 1) (float)."""
    try:
        return int(text)
    except ValueError:
        return float(text)


def cmd_data(args):
    corpus = hatt.data.load_corpus(
        **data_options(args),
        validation_size=args.validation_size,
        seed=args.seed,
        limit=args.limit,
        progress=not args.quiet,
    )
    stats = hatt.data.statistics(corpus)
    if args.json:
        print(json.dumps(stats, indent=2))
    else:
        print(hatt.data.format_statistics(stats, brief=args.quiet))
    return 0


def add_data_command(sub):
    data = sub.add_parser(
        "data",
        help="load a corpus and print its classes, split sizes and length statistics",
        description="Load a corpus (IMDB by default, or --data PATH) as training would, and "
        "print the documents per class in each split, the length statistics, what reading "
        "skipped, and a warning when the largest class has more than 5x the smallest's "
        "documents.",
    )
    _add_data(data)
    _add_seed(data, "seed of the carved splits", default=1337)
    data.add_argument(
        "--validation-size",
        type=_split_size,
        default=None,
        metavar="N",
        help="documents carved out of train for validation (an int, or a share such as 0.1; "
        "default: 10 %%, at most 2500)",
    )
    _add_limit(data)
    data.add_argument("--json", action="store_true", help="print the statistics as JSON")
    _add_quiet(
        data,
        "no progress bars, and one line (classes, source, split sizes) and the warnings "
        "instead of the tables (with --json: the JSON only)",
    )
    data.set_defaults(func=cmd_data)


# === hatt prepare ===================================================================


def cmd_prepare(args):
    from pathlib import Path

    from hatt import training
    from hatt.data import prepared as prepared_lib

    config = training.assemble_config(
        args.model,
        preset=None,
        overrides=args.set,
        **_config_data_options(args),
        seed=args.seed,
        limit=args.limit,
    )
    imdb = training.run.datasets.load_texts(config)
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


def add_prepare_command(sub):
    prepare = sub.add_parser(
        "prepare",
        help="tokenize IMDB once into TFRecord shards for `hatt train --prepared`",
        description="Fit the vocabulary on the training split and write the tokenized "
        "train / validation / test splits as TFRecord shards, with vectorizer.json and a "
        "prepared.json manifest.",
    )
    _add_data(prepare)
    prepare.add_argument("--out", metavar="DIR", required=True, help="output folder (new)")
    prepare.add_argument(
        "--model",
        choices=FAMILIES,
        default="han",
        help="family whose layout to write (flat for cnn/rnn/transformer, nested for han)",
    )
    prepare.add_argument("--shard-size", type=int, default=5000, help="reviews per shard")
    _add_set(prepare, "vocabulary settings")
    _add_seed(prepare, "seed of the validation split")
    _add_limit(prepare)
    _add_quiet(prepare)
    prepare.set_defaults(func=cmd_prepare)
