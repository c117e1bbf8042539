"""How ``import hatt`` starts inside the ``hatt`` command: quiet, and light for ``--help``.

TensorFlow writes a start-up block to standard error while it is imported
(oneDNN, CUDA lookups; "E0000 ... failed call to cuInit" on a machine without
a GPU) through its C++ logger, before ``TF_CPP_MIN_LOG_LEVEL`` is read for all
of them. In the ``hatt`` command (not in a user's own Python) the import runs
with file descriptor 2 pointed at ``/dev/null`` and ``TF_CPP_MIN_LOG_LEVEL=3``
(unless ``--verbose``), and a help request (``hatt``, ``hatt --help``,
``hatt train --help``) imports no TensorFlow at all: the subpackages load when
first used (:func:`hatt.__getattr__`).
"""

import contextlib
import os
import sys

VERBOSE_FLAG = "--verbose"


def command_arguments():
    """The arguments of the ``hatt`` command when this process is one, else ``None``.

    The ``hatt`` console script (``sys.argv[0]`` named ``hatt``), ``python -m
    hatt`` or ``python -m hatt.cli``.
    """
    if os.path.basename(sys.argv[0] or "") == "hatt":
        return sys.argv[1:]
    original = getattr(sys, "orig_argv", [])
    if "-m" in original:
        at = original.index("-m")
        if original[at + 1 : at + 2] in (["hatt"], ["hatt.cli"]):
            return original[at + 2 :]
    return None


def is_help_request(arguments):
    """``hatt`` alone, or ``-h`` / ``--help`` before any ``--``."""
    if not arguments or arguments == [VERBOSE_FLAG]:
        return True
    before = arguments[: arguments.index("--")] if "--" in arguments else arguments
    return "-h" in before or "--help" in before


@contextlib.contextmanager
def quiet_native_logs():
    """Standard error (file descriptor 2) to ``/dev/null`` for the block; restored after."""
    sys.stderr.flush()
    saved = os.dup(2)
    devnull = os.open(os.devnull, os.O_WRONLY)
    try:
        os.dup2(devnull, 2)
        yield
    finally:
        sys.stderr.flush()
        os.dup2(saved, 2)
        os.close(saved)
        os.close(devnull)


def plan():
    """``(light, quiet)`` for this process: import nothing heavy; silence TF's start-up."""
    arguments = command_arguments()
    if arguments is None:
        return False, False
    quiet = VERBOSE_FLAG not in arguments
    if quiet:
        os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
    return is_help_request(arguments), quiet
