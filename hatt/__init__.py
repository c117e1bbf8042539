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

# Importing the subpackages registers their serializable classes with Keras.
# (hatt.export registers TextModel, the end-to-end text → prediction model.)
from hatt import data, export, inspect, layers, models  # noqa: E402
from hatt.classifier import TextClassifier, load  # noqa: E402

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
