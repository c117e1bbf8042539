"""Ctrl-C during fit stops at a batch end and leaves finished epochs only (hatt.training.run.resume)."""

import os
import signal
import threading

import keras
import pytest

from hatt import training
from hatt.data import Imdb
from hatt.training.run import resume
from tests._planted import planted_split
from tests.training.test_resume import _config


@pytest.fixture
def python_sigint():
    """SIGINT with Python's own handler (a pytest-xdist worker ignores it), put back after."""
    if threading.current_thread() is not threading.main_thread():
        pytest.skip("signal handlers can only be set in the main thread")
    before = signal.signal(signal.SIGINT, signal.default_int_handler)
    yield
    signal.signal(signal.SIGINT, before)


class _CtrlCAt(keras.callbacks.Callback):
    """Send this process SIGINT at a given training batch of a given epoch."""

    def __init__(self, epoch, batch):
        super().__init__()
        self.at, self.epoch = (epoch, batch), None

    def on_epoch_begin(self, epoch, logs=None):
        self.epoch = epoch

    def on_train_batch_begin(self, batch, logs=None):
        if (self.epoch, batch) == self.at:
            os.kill(os.getpid(), signal.SIGINT)


def test_ctrl_c_mid_epoch_stops_at_the_batch_end_with_finished_epochs_only(tmp_path, python_sigint):
    planted = Imdb(planted_split(160, 0), planted_split(40, 1), planted_split(40, 2), "planted")
    config = _config(epochs=4, patience=4)  # test_resume's tiny CNN
    ctrl_c = _CtrlCAt(epoch=1, batch=3)  # in the second epoch's fourth batch
    with pytest.raises(KeyboardInterrupt) as stopped:
        training.train(config, tmp_path, texts=planted, verbose=0, callbacks=[ctrl_c])
    # raised by the callback at the batch's end, not by Python's handler inside the step
    assert stopped.traceback[-1].path.name == "resume.py"
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler  # put back
    state = resume.read_state(tmp_path)
    assert state["epoch"] == 1 and len(state["records"]) == 1  # the partial epoch is not one
    assert len(training.read_history(tmp_path)) == 1
    metrics = training.train(config, tmp_path, texts=planted, verbose=0)
    assert metrics["resumed_from_epoch"] == 1 and metrics["epochs"] == 4


def test_a_second_ctrl_c_raises_at_once_and_a_late_one_after_fit(python_sigint):
    stopper = resume.StopOnInterrupt()
    stopper.on_train_batch_end(0)  # nothing asked: nothing happens
    stopper.request()
    with pytest.raises(KeyboardInterrupt):
        stopper.request()
    with pytest.raises(KeyboardInterrupt):
        stopper.on_train_batch_end(1)
    # a signal noted after the last epoch's end still stops, when the block ends
    with pytest.raises(KeyboardInterrupt):
        with resume.at_batch_end() as stopper:
            assert signal.getsignal(signal.SIGINT) == stopper.request
            os.kill(os.getpid(), signal.SIGINT)
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler


def test_an_ignored_sigint_stays_ignored(python_sigint):
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    with resume.at_batch_end() as stopper:
        assert signal.getsignal(signal.SIGINT) is signal.SIG_IGN
        assert not stopper.requested
    assert signal.getsignal(signal.SIGINT) is signal.SIG_IGN


def test_sigterm_during_fit_stops_as_ctrl_c_does(python_sigint):
    # issue 63, second pass: `kill PID` ended hatt train without a word
    before = signal.signal(signal.SIGTERM, signal.SIG_DFL)
    try:
        with pytest.raises(KeyboardInterrupt):
            with resume.at_batch_end() as stopper:
                assert signal.getsignal(signal.SIGTERM) == stopper.request
                os.kill(os.getpid(), signal.SIGTERM)  # noted, then raised as the block ends
        assert signal.getsignal(signal.SIGTERM) is signal.SIG_DFL  # put back
    finally:
        signal.signal(signal.SIGTERM, before)
