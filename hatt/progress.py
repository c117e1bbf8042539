"""One progress bar for all of hatt: Keras' `Progbar`, or a plain line when not on a terminal.

On a terminal the bar redraws itself in place. When the stream is a file or a
pipe (a redirected training log, CI) the bar writes one plain line when it
finishes (``25000/25000 - 3s - 121us/review``) instead of a stream of escape
codes: Keras' ``verbose=2``.

Also :func:`printable`: text as a terminal may show it, its controls escaped
(class names, warnings and reviews in every printed table and line).
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


# Characters a terminal acts on (C0 / C1 controls such as ESC, bidirectional overrides):
# shown escaped, so that a review or a class name cannot move the cursor or recolour.
_BIDI_CONTROLS = frozenset("\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069")


def printable(text):
    """``text`` with control characters and bidi overrides escaped (``\\x1b``, ``\\u202e``).

    Tabs are kept; every other control character (newlines included) is escaped.
    """
    text = str(text)
    if text.isprintable() and not _BIDI_CONTROLS.intersection(text):
        return text
    return "".join(
        c if c == "\t" or (c.isprintable() and c not in _BIDI_CONTROLS) else ascii(c)[1:-1]
        for c in text
    )


def printable_lines(text):
    """``text`` as printable lines, joined by newlines: split at ``\\n`` only, so that a
    class name holding ``\\r`` (or another of ``str.splitlines``' breaks) stays on its row,
    shown escaped (issue 63)."""
    return "\n".join(printable(line) for line in str(text).split("\n"))


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
