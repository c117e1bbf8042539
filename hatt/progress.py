"""One progress bar for all of hatt: Keras' `Progbar`, or a plain line when not on a terminal.

On a terminal the bar redraws itself in place. When the stream is a file or a
pipe (a redirected training log, CI) the bar writes one plain line when it
finishes (``25000/25000 - 3s - 121us/review``) instead of a stream of escape
codes: Keras' ``verbose=2``.
"""

import contextlib
import sys


def on_terminal(stream=None):
    """Whether ``stream`` (default: standard output) is an interactive terminal."""
    stream = sys.stdout if stream is None else stream
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError):  # no isatty, or a closed stream
        return False


class Progress:
    """A `keras.utils.Progbar` over `total` items; does nothing when off.

    Args:
        total: Number of items.
        enabled: Draw the bar.
        unit: What an item is called (``"review"``, ``"file"``).
        stream: Where to draw: ``"stdout"`` (the default) or ``"stderr"``
            (for commands whose standard output holds results).

    Example:

    >>> bar = Progress(3, enabled=False)
    >>> bar.update(3)
    """

    def __init__(self, total, enabled=True, unit="review", stream="stdout"):
        if stream not in ("stdout", "stderr"):
            raise ValueError(f"stream must be 'stdout' or 'stderr', got {stream!r}")
        self._stream = stream
        self._bar = None
        if enabled:
            import keras

            with self._redirect():
                verbose = 1 if on_terminal(sys.stdout) else 2
                self._bar = keras.utils.Progbar(total, unit_name=unit, verbose=verbose)

    def _redirect(self):
        if self._stream == "stderr":
            return contextlib.redirect_stdout(sys.stderr)
        return contextlib.nullcontext()

    def update(self, done):
        """Move the bar to `done` items."""
        if self._bar is not None:
            with self._redirect():
                self._bar.update(done)
