"""The arguments several subcommands share (data source, seed, limit, --set, files)."""

import argparse
import sys

import hatt

MODEL_HELP = (
    "a SavedModel folder, a saved_models/NAME folder (latest version), a .keras file "
    "or a run directory"
)


class CommandParser(argparse.ArgumentParser):
    """A subcommand's parser: options may come between its positionals, and what it does
    not know is an error in its own usage.

    ``hatt predict MODEL --threshold 0.3 "a review"`` works as ``hatt predict --threshold
    0.3 MODEL "a review"`` does (argparse's intermixed parsing: its plain parsing gave
    ``TEXT ...`` nothing at the option and then refused the reviews with the top-level
    usage, issue 63); an unknown option is refused with ``usage: hatt predict ...``.
    """

    _parsing = False

    def parse_known_args(self, args=None, namespace=None):
        if self._parsing:  # the intermixed parse's own passes
            return super().parse_known_args(args, namespace)
        self._parsing = True
        try:
            namespace, extras = self.parse_known_intermixed_args(args, namespace)
        finally:
            self._parsing = False
        if extras:
            self.error(f"unrecognized arguments: {' '.join(extras)}")
        return namespace, extras


def _add_data(parser):
    parser.add_argument(
        "--data",
        metavar="PATH",
        default=None,
        help="the corpus: a folder with a subfolder per class (or a .tar.gz / .zip of one), "
        "a .csv / .tsv / .jsonl table (optionally .gz), tfds:NAME, or an aclImdb folder or "
        ".tar.gz (default: IMDB from $HATT_IMDB, then tensorflow-datasets)",
    )
    parser.add_argument(
        "--labels",
        choices=("binary", "rating"),
        default=None,
        help="IMDB only: binary (negative / positive, the default) or rating (8 classes: "
        "the star ratings 1-4 and 7-10 in the file names)",
    )
    parser.add_argument(
        "--text-column", default=None, metavar="NAME", help="a table's text column (default: text)"
    )
    parser.add_argument(
        "--label-column",
        default=None,
        metavar="NAME",
        help="a table's label column (default: label)",
    )
    parser.add_argument(
        "--test",
        metavar="PATH",
        default=None,
        help="a separate test table or folder (default: the data's own test split, else "
        "20 %% of it carved out, stratified)",
    )
    parser.add_argument(
        "--classes",
        metavar="A,B,C",
        default=None,
        help="the class names in this order (default: sorted, numerically for numbers); "
        "a label not among them is an error",
    )


def data_options(args):
    """The :func:`hatt.data.load_corpus` keyword arguments that ``_add_data``'s flags give.

    ``source`` (``--data``), ``labels``, ``text_column``, ``label_column``,
    ``test`` and ``classes`` (``--classes a,b,c`` as a list); the split
    options (``validation_size``, ``seed``, ``limit``) are the caller's.
    """
    classes = None
    if args.classes is not None:
        classes = [name.strip() for name in args.classes.split(",")]
        if len(classes) < 2 or not all(classes) or len(set(classes)) != len(classes):
            raise ValueError(
                "Expected --classes to be two or more distinct class names separated by "
                f"commas. Received: --classes {args.classes!r}"
            )
    options = {
        "source": args.data,
        "labels": args.labels,
        "text_column": args.text_column,
        "label_column": args.label_column,
        "test": args.test,
        "classes": classes,
    }
    return {key: value for key, value in options.items() if value is not None}


def _add_seed(parser, help, default=None):
    parser.add_argument("--seed", type=int, default=default, help=help)


def _add_limit(parser):
    parser.add_argument(
        "--limit", type=int, default=None, help="keep a stratified subset of N per split"
    )


def _add_set(parser, help):
    parser.add_argument("--set", metavar="KEY=VALUE", action="append", default=[], help=help)


def _add_quiet(parser, help="no progress bars"):
    parser.add_argument("--quiet", action="store_true", help=help)


def _add_text_file(parser, help):
    parser.add_argument("--file", metavar="F", default=None, help=help)


def _read_file(name):
    """The reviews of ``--file`` (a repaired line count goes to standard error)."""
    texts = hatt.data.read_texts(name)
    if texts.replaced_lines:
        where = "standard input" if name == "-" else name
        print(
            f"hatt: {where}: {texts.replaced_lines} line(s) held invalid UTF-8 "
            "(replaced with U+FFFD)",
            file=sys.stderr,
        )
    return texts


def _config_data_options(args):
    """The TrainConfig data fields that ``_add_data``'s flags give (``None``: not given).

    ``hatt train`` and ``hatt prepare`` lay them over the preset and ``--config``.
    """
    options = data_options(args)
    names = {"source": "data", "test": "test_data"}  # load_corpus → TrainConfig
    return {names.get(key, key): value for key, value in options.items()}
