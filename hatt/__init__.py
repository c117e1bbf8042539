"""hatt: attention-based document classifiers for Keras 3.

Importing ``hatt`` registers every hatt layer and model with Keras'
serialization registry, so ``keras.saving.load_model("model.keras")`` works
without ``custom_objects`` once ``import hatt`` has run.

The object a user holds is :class:`hatt.TextClassifier` (``fit`` on raw
texts, ``predict``, ``explain``, ``save``); :func:`hatt.load` reloads a saved
one. ``hatt.sklearn.HattClassifier`` is its scikit-learn face (imported on its
own: ``from hatt.sklearn import HattClassifier``).
"""

__version__ = "0.3.0"

import contextlib  # noqa: E402
import importlib  # noqa: E402

from hatt import _startup  # noqa: E402

_LIGHT, _QUIET = _startup.plan()  # the `hatt` command's --help: no TensorFlow at all

if not _LIGHT:
    # Importing the subpackages registers their serializable classes with Keras.
    # (hatt.export registers TextModel, the end-to-end text → prediction model.)
    with _startup.quiet_native_logs() if _QUIET else contextlib.nullcontext():
        from hatt import data, export, inspect, layers, models
        from hatt.classifier import TextClassifier, load


def __getattr__(name):
    """``hatt --help`` imported nothing heavy: a subpackage loads when first used."""
    if name in ("data", "export", "inspect", "layers", "models"):
        return importlib.import_module(f"hatt.{name}")
    if name in ("TextClassifier", "load"):
        return getattr(importlib.import_module("hatt.classifier"), name)
    raise AttributeError(f"module 'hatt' has no attribute {name!r}")


__all__ = [
    "TextClassifier",
    "__version__",
    "data",
    "export",
    "inspect",
    "layers",
    "load",
    "models",
]
