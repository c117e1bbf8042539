"""The one place where ``hatt.serve`` meets :class:`hatt.export.Predictor`.

The server is written against the multi-class Predictor contract:

- ``predictor.predict(texts)`` → ``probabilities`` ``[N, C]``, ``label``
  ``[N]`` (class names) and, for two classes, ``probability`` ``[N]``: the
  fast path, no attention or saliency computed;
- ``predictor(texts)`` → the same plus ``tokens``, ``word_attention`` (and
  ``sentence_attention`` for the HAN);
- ``predictor.class_names``.

A Predictor that predates that contract (two classes only: ``probability``
and ``predict_proba``) is adapted here: ``probabilities`` become
``[1 - p, p]`` and ``label`` ``"negative"`` / ``"positive"``. Once every
Predictor has the contract, the fallback branches below can go.
"""

import numpy as np

BINARY_CLASS_NAMES = ("negative", "positive")


def class_names(predictor):
    """The model's class names, a tuple of str (index = class id)."""
    names = getattr(predictor, "class_names", None)
    return tuple(str(n) for n in names) if names else BINARY_CLASS_NAMES


def _derive(outputs, names):
    """Add ``probabilities`` and ``label`` to outputs that only hold ``probability``."""
    outputs = dict(outputs)
    if "probabilities" not in outputs:
        p = np.asarray(outputs["probability"], np.float32).reshape(-1)
        outputs["probabilities"] = np.stack([1.0 - p, p], axis=-1).astype(np.float32)
    probabilities = np.asarray(outputs["probabilities"], np.float32)
    outputs["probabilities"] = probabilities
    if "label" not in outputs:
        index = probabilities.argmax(axis=-1) if len(probabilities) else np.zeros(0, int)
        outputs["label"] = np.array([names[i] for i in index], dtype=object)
    if len(names) == 2 and "probability" not in outputs:
        outputs["probability"] = probabilities[:, 1] if len(probabilities) else np.zeros(0)
    return outputs


def predict(predictor, texts):
    """The fast path: ``probabilities``, ``label`` [, ``probability``] only.

    Uses ``predictor.predict`` (the SavedModel's ``predict`` signature) when
    the Predictor has it; otherwise ``predict_proba``, which runs
    ``serving_default`` and so computes the scores too (and drops them).
    """
    texts = list(texts)
    if hasattr(predictor, "predict"):
        return _derive(predictor.predict(texts), class_names(predictor))
    probability = predictor.predict_proba(texts, batch_size=max(len(texts), 1))
    return _derive({"probability": probability}, class_names(predictor))


def outputs(predictor, texts):
    """Every output (``serving_default``): the prediction, tokens and scores."""
    return _derive(predictor(list(texts)), class_names(predictor))


def prediction_of(explanation, names):
    """``{"label", "probabilities"[, "probability"]}`` of a :class:`hatt.inspect.Explanation`."""
    probabilities = getattr(explanation, "probabilities", None)
    if probabilities is None:
        p = float(explanation.probability)
        probabilities = [1.0 - p, p]
    probabilities = [float(p) for p in probabilities]
    label = getattr(explanation, "predicted_label", None)
    if label is None:
        label = names[int(np.argmax(probabilities))]
    out = {"label": str(label), "probabilities": probabilities}
    if len(probabilities) == 2:
        out["probability"] = probabilities[1]
    return out
