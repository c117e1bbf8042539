"""hatt: attention-based document classifiers for Keras 3.

The object a user holds is :class:`hatt.TextClassifier` (``fit`` on raw texts,
``predict``, ``explain``, ``save``); :func:`hatt.load` reloads a saved one.
``hatt.sklearn.HattClassifier`` is its scikit-learn face (imported on its own:
``from hatt.sklearn import HattClassifier``).

This face is lazy: the public names are imported when first used (``hatt.TextClassifier``
imports the classifier, ``hatt.inspect`` the renderers), and ``hatt --help`` imports no
TensorFlow. Importing ``hatt`` (outside a help request) registers every serializable hatt
class with Keras (layers, models, the Vectorizer, TextModel, the optimizers), so
``keras.saving.load_model("model.keras")`` works without ``custom_objects`` once
``import hatt`` has run. No module inside the package imports this face: each imports
the module that owns a name.
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

# The modules that register serializable classes with Keras (``.keras`` files name them):
# imported with the face, so ``keras.saving.load_model`` works after ``import hatt``.
_SERIALIZABLE = (
    "hatt.layers",
    "hatt.models",
    "hatt.data.vectorize",  # Vectorizer
    "hatt.export.text_model",  # TextModel
    "hatt.training.run.optimizers",  # LazyAdam, DiscriminativeAdam, CyclicalSGD
)

if not _LIGHT:
    with _startup.quiet_native_logs() if _QUIET else contextlib.nullcontext():
        for _module in _SERIALIZABLE:
            importlib.import_module(_module)


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
