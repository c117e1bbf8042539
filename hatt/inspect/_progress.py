"""One progress bar for hatt.inspect: Keras' `Progbar`, drawn on stderr.

Standard output stays for results (the terminal view, JSON lines), so a bar
never mixes into output that is piped or captured.
"""

import contextlib
import sys

import keras


class Progress:
    """A `keras.utils.Progbar` over `total` items on stderr; does nothing when off.

    Args:
        total: Number of items (reviews).
        enabled: Draw the bar.
        unit: What an item is called.
    """

    def __init__(self, total, enabled=True, unit="review"):
        self._bar = None
        if enabled:
            with contextlib.redirect_stdout(sys.stderr):
                self._bar = keras.utils.Progbar(total, unit_name=unit)

    def update(self, done):
        """Move the bar to `done` items."""
        if self._bar is not None:
            with contextlib.redirect_stdout(sys.stderr):
                self._bar.update(done)
