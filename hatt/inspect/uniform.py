"""Is attention needed? The uniform-attention check of Wiegreffe & Pinter (2019).

A model's learned attention is replaced by uniform weights over the real
tokens (for the HAN, over the words of each sentence and over the sentences
of the review) and its test accuracy is measured again. When it barely
changes, the attention weights were not what the prediction rested on, and
reading them as an explanation says little.

The uniform copy zeroes each :class:`hatt.layers.ContextAttention`'s
context vectors (and, for `score="additive"`, its score vectors), so every
step's alignment score is exactly 0 for every score function and head; the
layer's masked softmax then gives `1 / n` to each of the `n` real steps and
0 to padding. Everything else, the pooled values included, is unchanged.
"""

import keras
import numpy as np

from hatt import export, models
from hatt.layers import ContextAttention
from hatt.progress import Progress


def attention_layers(model):
    """Every :class:`hatt.layers.ContextAttention` of `model`, nested models included."""
    found = []
    for layer in model.layers:
        if isinstance(layer, ContextAttention):
            found.append(layer)
        elif hasattr(layer, "layers"):
            found.extend(attention_layers(layer))
    return found


def uniform_attention(model):
    """A copy of `model` whose attention is uniform over the real steps; `model` is untouched.

    Args:
        model: An id model from :func:`hatt.models.build` (trained or
            reloaded) with at least one `ContextAttention`. A packed HAN is
            copied as its dense twin (:func:`hatt.models.dense_twin`).

    Returns:
        A new `keras.Model` with the same weights except the attention
        layers' context (and additive score) vectors, which are zero.

    Raises:
        ValueError: the model pools nothing with `ContextAttention` (the
            CNN with max-over-time pooling).

    Example:

    >>> uniform = hatt.inspect.uniform_attention(model)
    >>> hatt.models.attention_model(uniform)(ids)["word_attention"]  # 1/n on real tokens
    """
    if not attention_layers(model):
        raise ValueError(
            "Expected a model whose words are pooled by hatt.layers.ContextAttention (rnn, "
            "transformer, han, or cnn with pooling='attention'). Received: "
            f"model={model.name!r} with no ContextAttention layer"
        )
    model = models.dense_twin(model)
    copy = keras.models.clone_model(model)
    copy.set_weights(model.get_weights())
    for layer in attention_layers(copy):
        layer.context.assign(np.zeros(layer.context.shape, layer.context.dtype))
        if layer.score == "additive":  # v^T tanh(...) is 0 only when v is
            layer.score_vector.assign(np.zeros(layer.score_vector.shape, layer.score_vector.dtype))
    return copy


def uniform_attention_check(
    model, texts, labels, vectorizer=None, batch_size=64, chunk_size=1024, progress=True
):
    """Accuracy with the learned attention and with uniform attention, on the same reviews.

    Both run through the same path (:meth:`hatt.export.Predictor.predict`
    on a :class:`hatt.export.TextModel`), the uniform one on
    :func:`uniform_attention`'s copy.

    Args:
        model: A Keras-backed model for :func:`hatt.export.as_predictor`
            (a run directory, a `.keras` file, a `Predictor` of one, a
            `TextModel`, or a `keras.Model` with `vectorizer`).
        texts: List of raw reviews.
        labels: Their class indices, in the order of the model's
            `class_names`.
        vectorizer: The `hatt.data.Vectorizer` of an in-memory `keras.Model`.
        batch_size: Reviews per model call.
        chunk_size: Reviews between progress-bar updates.
        progress: Show a progress bar (on stderr).

    Returns:
        A dict: `"family"`, `"reviews"`, `"attention_layers"` (names),
        `"learned_accuracy"`, `"uniform_accuracy"`, `"difference"`
        (learned − uniform) and `"agreement"` (share of reviews whose
        predicted class is the same).

    Example:

    >>> hatt.inspect.uniform_attention_check("runs/han-...", test.texts, test.labels)
    """
    predictor = export.as_predictor(model, vectorizer)
    text_model = predictor.text_model
    texts, labels = list(texts), np.asarray(labels)
    if labels.shape != (len(texts),):
        raise ValueError(
            f"Expected labels to be one class index per text ({len(texts)}). "
            f"Received: labels of shape {labels.shape}"
        )
    copy = uniform_attention(text_model.classifier)
    uniform = export.Predictor.from_text_model(
        export.TextModel(
            copy,
            text_model.vectorizer,
            family=text_model.family,
            class_names=text_model.class_names,
        )  # fmt: skip
    )
    learned_classes = _predicted(predictor, texts, batch_size, chunk_size, progress)
    uniform_classes = _predicted(uniform, texts, batch_size, chunk_size, progress)
    learned = float(np.mean(learned_classes == labels)) if len(texts) else 0.0
    flat = float(np.mean(uniform_classes == labels)) if len(texts) else 0.0
    return {
        "family": predictor.family,
        "reviews": len(texts),
        "attention_layers": [layer.name for layer in attention_layers(copy)],
        "learned_accuracy": learned,
        "uniform_accuracy": flat,
        "difference": learned - flat,
        "agreement": float(np.mean(learned_classes == uniform_classes)) if len(texts) else 0.0,
    }


def _predicted(predictor, texts, batch_size, chunk_size, progress):
    """The predicted class index of every text, `chunk_size` texts at a time."""
    bar = Progress(len(texts), enabled=progress, stream="stderr")
    classes = []
    for start in range(0, len(texts), chunk_size):
        out = predictor.predict(texts[start : start + chunk_size], batch_size)
        classes.append(np.argmax(out["probabilities"], axis=-1))
        bar.update(min(start + chunk_size, len(texts)))
    return np.concatenate(classes) if classes else np.zeros([0], np.int64)
