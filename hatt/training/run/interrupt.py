"""Ctrl-C during ``fit``: stop at the next batch boundary, not in the middle of a step.

Python's own SIGINT handler raises ``KeyboardInterrupt`` wherever the main thread
happens to be. Inside ``keras.Model.fit`` that can be halfway through a training
step or while tf.data's threads hand over a batch, and unwinding from there has
crashed TensorFlow (SIGSEGV, no message: seen in CI under load). While ``fit``
runs, :func:`at_batch_end` puts a handler in place that only notes the signal;
its callback raises ``KeyboardInterrupt`` at the end of the current training
batch, or, where the signal came during an epoch's validation pass, once that
epoch has ended and been backed up (the callback comes after the backup). So the
resume state holds finished epochs only, and ``hatt train`` prints where it
stopped and how to resume (``hatt.cli.train``). A second Ctrl-C raises at once,
as Python's handler does.

The handler is put in place only in the main thread and only where SIGINT has
Python's default handler (not where it is ignored, or someone else's); it is put
back when ``fit`` ends, however it ends (a signal noted after the last epoch's
end raises then).
"""

import contextlib
import signal
import threading

import keras


class StopOnInterrupt(keras.callbacks.Callback):
    """Raise ``KeyboardInterrupt`` at a batch or epoch end once SIGINT has come.

    Put it after the callbacks that save an epoch (:class:`hatt.training.run.resume.RunBackup`).
    """

    def __init__(self):
        super().__init__()
        self.requested = False

    def request(self, signum=None, frame=None):
        """The SIGINT handler: the first signal is noted, a second raises at once."""
        if self.requested:
            raise KeyboardInterrupt
        self.requested = True

    def _stop_if_requested(self):
        if self.requested:
            raise KeyboardInterrupt

    def on_train_batch_end(self, batch, logs=None):
        self._stop_if_requested()

    def on_epoch_end(self, epoch, logs=None):
        self._stop_if_requested()


@contextlib.contextmanager
def at_batch_end():
    """While the block runs, SIGINT stops the returned callback's ``fit`` at a batch end.

    Yields:
        A :class:`StopOnInterrupt` to put among ``fit``'s callbacks (it does
        nothing where the handler could not be put in place).

    Example:

    >>> with at_batch_end() as stopper:
    ...     isinstance(stopper, keras.callbacks.Callback)
    True
    """
    stopper = StopOnInterrupt()
    main = threading.current_thread() is threading.main_thread()
    if not main or signal.getsignal(signal.SIGINT) is not signal.default_int_handler:
        yield stopper
        return
    signal.signal(signal.SIGINT, stopper.request)
    try:
        yield stopper
    finally:
        signal.signal(signal.SIGINT, signal.default_int_handler)
    if stopper.requested:  # it came after the last epoch's end: stop here, as asked
        raise KeyboardInterrupt
