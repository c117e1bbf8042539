"""How ``import hatt`` starts: quiet, and light for the ``hatt`` command's ``--help``.

TensorFlow writes a start-up block to standard error while it is imported
(oneDNN, CUDA lookups; "E0000 ... failed call to cuInit" on a machine without
a GPU) through its C++ logger, before ``TF_CPP_MIN_LOG_LEVEL`` is read for all
of them, and a WARNING each time a graph is traced again for a new shape or
model ("triggered tf.function retracing": hatt traces one graph a model and
split on purpose). When quiet, the import runs with file descriptor 2 pointed
at ``/dev/null`` and ``TF_CPP_MIN_LOG_LEVEL=3``, and the retracing warning is
dropped. Quiet is the default in the ``hatt`` command (``--verbose`` lets
TensorFlow speak) and in a user's own Python, where TensorFlow's start-up is
left to speak when it was imported before hatt or ``TF_CPP_MIN_LOG_LEVEL`` is
set, and ``HATT_VERBOSE=1`` lets both speak. A help request (``hatt``, ``hatt --help``, ``hatt
train --help``) imports no TensorFlow at all: the subpackages load when first
used (:func:`hatt.__getattr__`).
"""

import contextlib
import logging
import os
import sys

VERBOSE_FLAG = "--verbose"
VERBOSE_VARIABLE = "HATT_VERBOSE"  # =1: a user's own Python lets TensorFlow speak
RETRACING = "triggered tf.function retracing"


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


def verbose_asked():
    """``HATT_VERBOSE=1`` (or ``true``, ``yes``): TensorFlow may speak in a user's Python."""
    return os.environ.get(VERBOSE_VARIABLE, "").lower() in ("1", "true", "yes")


def python_is_quiet():
    """A user's own Python: TensorFlow's start-up block hidden unless TensorFlow came first,
    its log level is set, or ``HATT_VERBOSE=1``."""
    return (
        not verbose_asked()
        and "tensorflow" not in sys.modules
        and "TF_CPP_MIN_LOG_LEVEL" not in os.environ
    )


class _DropRetracing(logging.Filter):
    def filter(self, record):
        return RETRACING not in record.getMessage()


def drop_retracing_warnings():
    """TensorFlow's "triggered tf.function retracing" WARNING dropped (once per process)."""
    logger = logging.getLogger("tensorflow")
    if not any(isinstance(f, _DropRetracing) for f in logger.filters):
        logger.addFilter(_DropRetracing())


def plan():
    """``(light, quiet)`` for this process: import nothing heavy; silence TF's start-up."""
    arguments = command_arguments()
    if arguments is None:
        light, quiet = False, python_is_quiet()
    else:
        light, quiet = is_help_request(arguments), VERBOSE_FLAG not in arguments
    if quiet:
        os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
    if quiet or (arguments is None and not verbose_asked()):  # noise whoever imported first
        drop_retracing_warnings()
    return light, quiet
