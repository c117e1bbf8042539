"""Import a script of ``experiments/`` as a module (they are not a package)."""

import importlib.util
from pathlib import Path

EXPERIMENTS = Path(__file__).resolve().parents[1] / "experiments"


def load_experiment(name):
    """``load_experiment("run_all")`` → the module of ``experiments/run_all.py``, freshly run."""
    spec = importlib.util.spec_from_file_location(name, EXPERIMENTS / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module
