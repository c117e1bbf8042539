"""One writer per directory: an OS file lock on ``DIR/.lock`` holding the writer's pid.

``fcntl.flock`` locks belong to the open file, so the OS releases them when the
process exits, however it exits (a crash, ``SIGKILL``): a stale ``.lock`` file
left behind locks nothing. ``hatt train`` holds its run directory's lock for
the whole run, ``hatt prepare`` its output folder's. The file says who holds it:
``PID HOST SINCE`` (``SINCE`` in UTC, ISO 8601); :func:`holder` reads it while the
lock is held (``hatt predict runs/x`` on a run still training says so).

Example:

>>> with hatt.lock.hold("runs/cnn"):
...     ...  # a second process entering hold("runs/cnn") gets a ValueError
"""

import contextlib
import dataclasses
import datetime
import fcntl
import os
import socket
from pathlib import Path

LOCK_NAME = ".lock"


@dataclasses.dataclass(frozen=True)
class Holder:
    """Who holds a lock: the ``.lock`` file's ``PID HOST SINCE`` (``None`` where unsaid)."""

    pid: int | None = None
    host: str | None = None
    since: str | None = None

    def __str__(self):
        said = f"pid {self.pid}" if self.pid is not None else "another process"
        if self.host:
            said += f" on host {self.host}"
        return said + (f" since {self.since}" if self.since else "")


class DirectoryInUse(ValueError):
    """The directory is locked by another live process (``pid``: its id, or None;
    ``holder``: its :class:`Holder`)."""

    def __init__(self, directory, pid, what="run directory", holder=None):
        self.directory, self.pid = str(directory), pid
        self.holder = holder or Holder(pid)
        super().__init__(f"{what} {self.directory} is in use by {self.holder}")


def _holder(handle):
    """The :class:`Holder` a ``.lock`` file names (an older file holds the pid alone)."""
    handle.seek(0)
    fields = handle.read().split()
    pid = fields[0] if fields else ""
    return Holder(
        int(pid) if pid.isascii() and pid.isdigit() else None,
        fields[1] if len(fields) > 1 else None,
        fields[2] if len(fields) > 2 else None,
    )


def holder(directory):
    """The :class:`Holder` of ``directory``'s lock while a live process holds it, else ``None``
    (no ``.lock``, a stale one, or a path that is not a directory). Takes no lock itself."""
    try:
        handle = open(Path(directory) / LOCK_NAME, encoding="utf-8", errors="replace")  # noqa: SIM115
    except OSError:
        return None
    with handle:
        try:
            fcntl.flock(handle, fcntl.LOCK_SH | fcntl.LOCK_NB)
        except BlockingIOError:
            return _holder(handle)
        except OSError:
            return None
        fcntl.flock(handle, fcntl.LOCK_UN)
        return None


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
        held = _holder(handle)
        handle.close()
        raise DirectoryInUse(directory, held.pid, what, held) from None
    since = datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    handle.seek(0)
    handle.truncate()
    handle.write(f"{os.getpid()} {socket.gethostname() or '-'} {since}\n")
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
