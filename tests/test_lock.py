"""Issue 33 item 13: one writer a run directory (hatt.lock), tried with real processes."""

import os
import signal
import socket
import subprocess
import sys
import time

import pytest

from hatt import lock

# The child processes load hatt/lock.py alone (stdlib only): importing hatt loads TensorFlow.
LOAD = (
    "import importlib.util, sys\n"
    f"spec = importlib.util.spec_from_file_location('lock', {lock.__file__!r})\n"
    "lock = importlib.util.module_from_spec(spec)\n"
    "spec.loader.exec_module(lock)\n"
)
HOLDER = (
    LOAD
    + "import time\nhandle = lock.acquire(sys.argv[1])\nprint('held', flush=True)\ntime.sleep(60)\n"
)


def _start_holder(directory):
    process = subprocess.Popen(
        [sys.executable, "-c", HOLDER, str(directory)], stdout=subprocess.PIPE, text=True
    )
    assert process.stdout.readline().strip() == "held"
    return process


def _stop(process):
    process.kill()
    process.wait()
    process.stdout.close()


def _try_in_another_process(directory):
    code = LOAD + "lock.acquire(sys.argv[1])\nprint('acquired')"
    return subprocess.run(
        [sys.executable, "-c", code, str(directory)], capture_output=True, text=True, timeout=60
    )


def test_a_directory_held_by_a_live_process_is_refused_with_its_pid(tmp_path):
    holder = _start_holder(tmp_path / "run")
    try:
        with pytest.raises(lock.DirectoryInUse) as caught:
            lock.acquire(tmp_path / "run")
        held = caught.value.holder
        assert (held.pid, held.host) == (holder.pid, socket.gethostname())
        assert str(caught.value) == (
            f"run directory {tmp_path / 'run'} is in use by pid {holder.pid} on host "
            f"{held.host} since {held.since}"
        )
        assert caught.value.pid == holder.pid and lock.holder(tmp_path / "run") == held
        other = _try_in_another_process(tmp_path / "run")
        assert other.returncode != 0 and f"in use by pid {holder.pid}" in other.stderr
    finally:
        _stop(holder)


def test_a_killed_holder_leaves_the_directory_free(tmp_path):
    holder = _start_holder(tmp_path / "run")
    os.kill(holder.pid, signal.SIGKILL)
    holder.wait()
    holder.stdout.close()
    assert (tmp_path / "run" / lock.LOCK_NAME).read_text().split()[0] == str(holder.pid)  # stale
    assert lock.holder(tmp_path / "run") is None
    other = _try_in_another_process(tmp_path / "run")
    assert other.returncode == 0 and "acquired" in other.stdout, other.stderr
    handle = lock.acquire(tmp_path / "run")
    assert (tmp_path / "run" / lock.LOCK_NAME).read_text().split()[0] == str(os.getpid())
    lock.release(handle)


def test_hold_releases_and_removes_a_directory_it_created_for_nothing(tmp_path):
    with lock.hold(tmp_path / "new"):
        assert (tmp_path / "new" / lock.LOCK_NAME).exists()
    assert not (tmp_path / "new").exists()  # a failed start leaves nothing behind
    with lock.hold(tmp_path / "kept"):
        (tmp_path / "kept" / "config.json").write_text("{}")
    assert (tmp_path / "kept" / "config.json").exists()
    with lock.hold(tmp_path / "kept"):  # free again once released
        pass


def test_hatt_train_refuses_a_run_directory_in_use(tmp_path):
    from hatt.training import TrainConfig, train

    holder = _start_holder(tmp_path / "run")
    try:
        started = time.monotonic()
        with pytest.raises(ValueError, match=f"run directory .*run is in use by pid {holder.pid}"):
            train(TrainConfig(model="cnn", data=str(tmp_path / "absent.csv")), tmp_path / "run")
        assert time.monotonic() - started < 60
        assert sorted(p.name for p in (tmp_path / "run").iterdir()) == [lock.LOCK_NAME]
    finally:
        _stop(holder)


def test_hatt_prepare_refuses_a_folder_in_use(tmp_path):
    from hatt.data import Vectorizer
    from hatt.data.prepared import prepare

    holder = _start_holder(tmp_path / "prepared")
    try:
        with pytest.raises(lock.DirectoryInUse, match=f"folder .* is in use by pid {holder.pid}"):
            prepare(None, Vectorizer(), tmp_path / "prepared", progress=False)
    finally:
        _stop(holder)
