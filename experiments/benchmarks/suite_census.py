"""A pytest plugin that counts what the suite's time is spent on, by test module.

    python -m experiments.benchmarks.suite_time --census [--label NAME]

loads it into every pytest(-xdist) worker (``-p experiments.benchmarks.suite_census``)
with ``HATT_CENSUS_DIR`` naming a folder; each worker writes there, at its end,
``census-WORKER.json`` (after each test): ``{module: {counter: value}}`` of

- ``training_runs``: calls of ``hatt.training.train`` (every ``TextClassifier.fit``
  and in-process ``hatt train``, resumed runs included; a self-training run, teacher
  and student, is one call);
- ``keras_fits``: ``keras.Model.fit`` calls (the loop's and every other);
- ``fresh_processes``: Python processes a test starts (``subprocess.Popen`` of
  ``sys.executable``; each imports TensorFlow again);
- ``traces`` and ``trace_seconds``: TensorFlow graphs traced (``tf.function``
  concrete functions, ``tf.data`` maps included) and the seconds spent tracing them.

What a test's fixtures do counts for the test that first asks for them, as pytest
times it. Traces are counted through TensorFlow's private
``tracing_compilation._create_concrete_function`` (checked on TensorFlow 2.21): a
benchmark may lean on it, the library does not.
"""

import collections
import json
import os
import subprocess
import sys
import time
from pathlib import Path

COUNTERS = ("training_runs", "keras_fits", "fresh_processes", "traces", "trace_seconds")
_counts = collections.defaultdict(collections.Counter)
_module = [None]  # the running test's module; None before any (and in an xdist controller)


def _count(name, value=1):
    if _module[0] is not None:  # the controller's own processes (its workers) are no test's
        _counts[_module[0]][name] += value


def _wrap(owner, attribute, counter):
    original = getattr(owner, attribute)

    def counted(*args, **kwargs):
        _count(counter)
        return original(*args, **kwargs)

    setattr(owner, attribute, counted)


def _count_traces():
    from tensorflow.python.eager.polymorphic_function import tracing_compilation

    original = tracing_compilation._create_concrete_function
    depth = [0]

    def counted(*args, **kwargs):
        depth[0] += 1
        start = time.perf_counter()
        try:
            return original(*args, **kwargs)
        finally:
            depth[0] -= 1
            if depth[0] == 0:  # a graph traced inside another is part of its trace
                _count("traces")
                _count("trace_seconds", time.perf_counter() - start)

    tracing_compilation._create_concrete_function = counted


def _count_fresh_processes():
    original = subprocess.Popen.__init__

    def counted(self, args, *rest, **kwargs):
        argv = [args] if isinstance(args, (str, bytes)) else list(args)
        if argv and str(argv[0]) == sys.executable:
            _count("fresh_processes")
        original(self, args, *rest, **kwargs)

    subprocess.Popen.__init__ = counted


def pytest_configure(config):
    if not os.environ.get("HATT_CENSUS_DIR"):
        return
    import keras

    import hatt.training

    _wrap(hatt.training, "train", "training_runs")
    _wrap(keras.Model, "fit", "keras_fits")
    _count_traces()
    _count_fresh_processes()


def pytest_runtest_protocol(item, nextitem):
    _module[0] = item.nodeid.split("::", 1)[0]


def pytest_runtest_logfinish(nodeid, location):
    """Write the worker's counts after each test (an xdist worker may end without
    ``pytest_unconfigure``); what the controller starts (its workers) is not counted."""
    folder = os.environ.get("HATT_CENSUS_DIR")
    if not folder:
        return
    worker = os.environ.get("PYTEST_XDIST_WORKER", "main")
    counts = {module: dict(counter) for module, counter in _counts.items()}
    path = Path(folder) / f"census-{worker}.json"
    partial = path.with_suffix(".partial")
    partial.write_text(json.dumps(counts))
    os.replace(partial, path)


def read(folder):
    """``{module: {counter: value}}`` summed over the workers' files in ``folder``."""
    total = collections.defaultdict(collections.Counter)
    for path in sorted(Path(folder).glob("census-*.json")):
        for module, counter in json.loads(path.read_text()).items():
            total[module].update(counter)
    return {
        module: {name: round(counter.get(name, 0), 1) for name in COUNTERS}
        for module, counter in total.items()
    }
