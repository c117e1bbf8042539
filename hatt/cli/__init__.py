"""The ``hatt`` command: a thin shell over the library, one small function per subcommand.

Subcommands: ``hatt data`` describes a corpus (classes, split sizes and length
statistics), ``hatt train`` trains and exports a family (its preset unless
told otherwise), ``hatt export`` exports a run directory, ``hatt predict``
classifies reviews, ``hatt prepare`` tokenizes IMDB into shards, ``hatt
inspect`` shows what a prediction rests on.

Errors a user can fix — a bad setting, missing data, a path that cannot be
read or written — are one line on standard error and exit status 2.
"""

import argparse
import sys

import hatt
from hatt._startup import VERBOSE_FLAG
from hatt.cli.args import (  # noqa: F401
    CommandParser,
    _config_data_options,
    _read_file,
    data_options,
)
from hatt.cli.corpus import add_data_command, add_prepare_command
from hatt.cli.predict import (
    add_evaluate_command,
    add_inspect_command,
    add_predict_command,
    print_model_warnings,
)
from hatt.cli.train import add_export_command, add_train_command
from hatt.serve.cli import add_serve_command  # cheap: Starlette loads on first use

__all__ = ["build_parser", "data_options", "error_line", "main", "print_model_warnings"]


# === The command ====================================================================


def build_parser():
    parser = argparse.ArgumentParser(
        prog="hatt",
        description="Attention-based document classifiers for Keras 3: train, export, "
        "inspect and serve them.",
    )
    parser.add_argument("--version", action="version", version=f"hatt {hatt.__version__}")
    parser.add_argument(
        VERBOSE_FLAG,
        action="store_true",
        help="show TensorFlow's start-up messages (hidden by default; the flag may come "
        "anywhere on the line)",
    )
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=CommandParser)
    for add in (
        add_data_command,
        add_train_command,
        add_export_command,
        add_predict_command,
        add_evaluate_command,
        add_prepare_command,
        add_inspect_command,
        add_serve_command,
    ):
        add(sub)
    return parser


def error_line(error):
    """One line for a user's error: an OS error names its path and the reason."""
    if isinstance(error, OSError) and error.filename is not None:
        reason = error.strerror or type(error).__name__
        return f"{reason}: {str(error.filename)!r}"
    text = str(error)
    if isinstance(error, hatt.data.DataNotFoundError):
        return text  # its lines say how to provide the data
    return " ".join(text.split("\n"))


def check_utf8(argv):
    """Refuse an argument that is not valid UTF-8 (Python holds its bytes as surrogates)."""
    for i, arg in enumerate(argv):
        try:
            arg.encode("utf-8")
        except UnicodeEncodeError:
            previous = argv[i - 1] if i else ""
            name = f"{previous}'s value" if previous.startswith("-") else f"argument {i + 1}"
            raw = arg.encode("utf-8", "surrogateescape")
            raise ValueError(
                f"Expected {name} to be valid UTF-8 text. Received the bytes {raw!r}"
            ) from None


# Flags whose values the command checks itself: (smallest value, the flag as typed).
FLAG_MINIMUMS = {"epochs": (1, "--epochs"), "limit": (1, "--limit"), "seed": (0, "--seed")}
SEED_LIMIT = 2**32  # NumPy's seeds


def check_flags(args):
    """--epochs, --limit and --seed in range, named as typed (before any setting is built)."""
    for dest, (minimum, flag) in FLAG_MINIMUMS.items():
        value = getattr(args, dest, None)
        if value is not None and value < minimum:
            raise ValueError(f"Expected {flag} >= {minimum}. Received: {flag} {value}")
    seed = getattr(args, "seed", None)
    if seed is not None and seed >= SEED_LIMIT:
        raise ValueError(f"Expected --seed < 2**32. Received: --seed {seed}")


def main(argv=None):
    parser = build_parser()
    given = sys.argv[1:] if argv is None else list(argv)
    try:
        check_utf8(given)
    except ValueError as error:
        print(f"hatt: error: {error}", file=sys.stderr)
        return 2
    # --verbose anywhere (it was read at start-up, before TensorFlow was imported)
    verbose = VERBOSE_FLAG in given
    args = parser.parse_args([a for a in given if a != VERBOSE_FLAG])
    args.verbose = verbose
    args.argv = argv
    if not getattr(args, "func", None):
        parser.print_help()
        return 0
    try:
        check_flags(args)
        return args.func(args)
    except Exception as error:  # noqa: BLE001  (a full disk is TensorFlow's own error class)
        if not isinstance(error, ValueError | OSError) and not disk_full(error):
            raise
        line = error_line(error)
        if disk_full(error):
            line = (
                f"The disk is full ({line}). Free some space or write elsewhere; an "
                "interrupted hatt train resumes with the same command."
            )
        print(f"hatt {args.command}: error: {line}", file=sys.stderr)
        return 2


def disk_full(error):
    """Whether ``error`` is a full disk (:func:`hatt.export.is_disk_full`, once loaded: a
    command that met one has imported it)."""
    writer = sys.modules.get("hatt.export.writer")
    return writer is not None and writer.is_disk_full(error)
