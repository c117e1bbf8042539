"""A model path whose run is still training is named as such, with its lock's holder (issue 63)."""

import os
import socket

import pytest

from hatt import cli, lock


@pytest.mark.parametrize(
    "argv",
    [
        ["predict", "{run}", "a fine film"],
        ["export", "{run}", "--out", "{out}"],
        ["inspect", "{run}", "--text", "a fine film", "--quiet"],
        ["serve", "busy={run}", "--port", "0"],
    ],
)
def test_a_run_still_training_names_its_lock_holder(tmp_path, capsys, argv):
    run = tmp_path / "run"
    handle = lock.acquire(run)  # what hatt train holds for the whole run
    (run / "config.json").write_text('{"model": "cnn"}')
    try:
        argv = [a.format(run=run, out=tmp_path / "out") for a in argv]
        assert cli.main(argv) == 2
    finally:
        lock.release(handle)
    err = capsys.readouterr().err
    assert f"'{run}' is a run directory still being trained" in err
    assert f"pid {os.getpid()} on host {socket.gethostname()} since 20" in err
    assert "wait for that run to finish, or stop it" in err
    assert "Traceback" not in err and err.count("\n") == 1


def test_a_stale_lock_changes_nothing(tmp_path, capsys):
    run = tmp_path / "run"
    lock.release(lock.acquire(run))  # the .lock file stays, held by no one
    (run / "config.json").write_text('{"model": "cnn"}')
    assert lock.holder(run) is None
    assert cli.main(["predict", str(run), "a fine film"]) == 2
    assert "holds no hatt model" in capsys.readouterr().err
