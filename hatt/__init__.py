"""hatt: attention-based document classifiers for Keras 3.

The object a user holds is :class:`hatt.TextClassifier` (``fit`` on raw texts,
``predict``, ``explain``, ``save``); :func:`hatt.load` reloads a saved one.
``hatt.sklearn.HattClassifier`` is its scikit-learn face (imported on its own:
``from hatt.sklearn import HattClassifier``).

This face is lazy: the public names and subpackages below are imported when first
used, so ``import hatt`` costs little and ``hatt --help`` imports no TensorFlow.
Importing ``hatt`` (outside a help request) registers every hatt layer and model
with Keras' serialization registry, so ``keras.saving.load_model("model.keras")``
works without ``custom_objects`` once ``import hatt`` has run. No module inside the
package imports this face: they import the module that owns a name.
"""

import contextlib
import importlib

from hatt import _startup
from hatt._version import __version__

# Public name -> the module that owns it; resolved on first use (PEP 562).
_NAMES = {
    "TextClassifier": "hatt.classifier",
    "load": "hatt.classifier",
}
_SUBPACKAGES = ("data", "export", "inspect", "layers", "models", "training")

_LIGHT, _QUIET = _startup.plan()  # the `hatt` command's --help: no TensorFlow at all

if not _LIGHT:
    # The layers and models register their serializable classes with Keras here.
    with _startup.quiet_native_logs() if _QUIET else contextlib.nullcontext():
        from hatt import layers, models


def __getattr__(name):
    """A public name or subpackage, imported on first use."""
    if name in _SUBPACKAGES:
        return importlib.import_module(f"hatt.{name}")
    if name in _NAMES:
        return getattr(importlib.import_module(_NAMES[name]), name)
    raise AttributeError(f"module 'hatt' has no attribute {name!r}")


def __dir__():
    return sorted(set(globals()) | set(_NAMES) | set(_SUBPACKAGES))


__all__ = [
    "TextClassifier",
    "__version__",
    "data",
    "export",
    "inspect",
    "layers",
    "load",
    "models",
    "training",
]
