"""The ``hatt`` command: a thin shell over the library.

Subcommands arrive with the features they drive; ``hatt data`` describes the
IMDB corpus (split sizes and length statistics).
"""

import argparse
import json
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
    return parser


def main(argv=None):
    parser = build_parser()
    args = parser.parse_args(argv)
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
