"""One writer per directory: an OS file lock on ``DIR/.lock`` holding the writer's pid.

``fcntl.flock`` locks belong to the open file, so the OS releases them when the
process exits, however it exits (a crash, ``SIGKILL``): a stale ``.lock`` file
left behind locks nothing. ``hatt train`` holds its run directory's lock for
the whole run, ``hatt prepare`` its output folder's.

Example:

>>> with hatt.lock.hold("runs/cnn"):
...     ...  # a second process entering hold("runs/cnn") gets a ValueError
"""

import contextlib
import fcntl
import os
from pathlib import Path

LOCK_NAME = ".lock"


class DirectoryInUse(ValueError):
    """The directory is locked by another live process (``pid``: its id, or None)."""

    def __init__(self, directory, pid, what="run directory"):
        self.directory, self.pid = str(directory), pid
        holder = f"pid {pid}" if pid is not None else "another process"
        super().__init__(f"{what} {self.directory} is in use by {holder}")


def _holder(handle):
    handle.seek(0)
    text = handle.read().strip()
    return int(text) if text.isdigit() else None


def acquire(directory, what="run directory"):
    """Lock ``directory`` (created if missing) for this process; the open file is the lock.

    ``what`` names the directory in the refusal (``"run directory"``, ``"folder"``).

    Raises:
        DirectoryInUse: another live process holds it.
    """
    directory = Path(directory)
    try:
        directory.mkdir(parents=True, exist_ok=True)
        handle = open(directory / LOCK_NAME, "a+", encoding="utf-8")  # noqa: SIM115 (held)
    except OSError as error:
        raise ValueError(
            f"Could not lock the directory {str(directory)!r}: {error.strerror or error}"
        ) from None
    try:
        fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        pid = _holder(handle)
        handle.close()
        raise DirectoryInUse(directory, pid, what) from None
    handle.seek(0)
    handle.truncate()
    handle.write(f"{os.getpid()}\n")
    handle.flush()
    return handle


def release(handle):
    """Let go of a lock from :func:`acquire` (the ``.lock`` file stays; it locks nothing)."""
    with contextlib.suppress(OSError):
        fcntl.flock(handle, fcntl.LOCK_UN)
    handle.close()


@contextlib.contextmanager
def hold(directory, what="run directory"):
    """``with hold(directory):`` — :func:`acquire` on entry, :func:`release` on exit.

    A directory that the lock created and that holds nothing else on exit (the
    work failed before writing) is removed again: a failed start leaves nothing.
    """
    directory = Path(directory)
    created = not directory.exists()
    handle = acquire(directory, what)
    try:
        yield handle
    finally:
        release(handle)
        if created and [p.name for p in directory.iterdir()] == [LOCK_NAME]:
            with contextlib.suppress(OSError):
                (directory / LOCK_NAME).unlink()
                directory.rmdir()
