"""The session's SavedModels, each loaded once a test process.

``export.load`` of an export is a ``tf.saved_model.load`` (a HAN's, with its ``explain``
graph: seconds), and a SavedModel Predictor keeps no state between calls (a Keras one
does: it traces a graph after a few batches), so the export tests share one Predictor a
SavedModel path. A test of ``export.load`` itself still calls it.
"""

import functools

from hatt import export


@functools.cache
def saved_model(path):
    """``export.load(path)`` for a SavedModel (or a ``saved_models/NAME`` folder), loaded once."""
    predictor = export.load(path)
    assert predictor.kind == "saved_model", path
    return predictor
