"""hatt: attention-based document classifiers for Keras 3.

Importing ``hatt`` registers every hatt layer and model with Keras'
serialization registry, so ``keras.saving.load_model("model.keras")`` works
without ``custom_objects`` once ``import hatt`` has run.
"""

__version__ = "0.3.0"

# Importing the subpackages registers their serializable classes with Keras.
# (hatt.export registers TextModel, the end-to-end text → prediction model.)
from hatt import data, export, inspect, layers, models  # noqa: E402

__all__ = ["__version__", "data", "export", "inspect", "layers", "models"]
