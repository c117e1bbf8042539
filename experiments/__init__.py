"""hatt's experiments: research scripts over the public API, run from the project root.

Each script is a module run with ``python -m experiments.NAME`` (the speed and load
scripts: ``python -m experiments.benchmarks.NAME``); the pieces the few-label scripts
share (draws, baseline and hatt cells, tables) are in :mod:`experiments.harness`.
Questions answered whose scripts no current results table needs are kept in
:mod:`experiments.archive`; every figure stays under ``experiments/results/``.
"""
