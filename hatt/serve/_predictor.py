"""The one place where ``hatt.serve`` calls :class:`hatt.export.Predictor`.

- ``predict``: ``predictor.predict(texts)`` → ``probabilities`` ``[N, C]``,
  ``label`` ``[N]`` (class names) and, for two classes, ``probability``
  ``[N]``: the fast path (the SavedModel's ``predict`` signature), no
  attention or saliency computed;
- ``outputs``: ``predictor(texts)`` → the same plus ``tokens``,
  ``word_attention`` (and ``sentence_attention`` for the HAN);
- ``prediction_of``: the same prediction keys from a
  :class:`hatt.inspect.Explanation`.
"""


def class_names(predictor):
    """The model's class names, a tuple of str (index = class id)."""
    return tuple(predictor.class_names)


def predict(predictor, texts):
    """The fast path: ``probabilities``, ``label`` [, ``probability``] only."""
    return predictor.predict(list(texts))


def outputs(predictor, texts):
    """Every output (``serving_default``): the prediction, tokens and scores."""
    return predictor(list(texts))


def prediction_of(explanation, names=None):
    """``{"label", "probabilities"[, "probability"]}`` of a :class:`hatt.inspect.Explanation`."""
    probabilities = [float(p) for p in explanation.probabilities]
    out = {"label": explanation.predicted_label, "probabilities": probabilities}
    if len(probabilities) == 2:
        out["probability"] = probabilities[1]
    return out
