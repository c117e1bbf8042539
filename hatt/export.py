"""Export a trained model: raw text in; class probabilities, label, tokens and explanations out.

One function, three ways to run it. :class:`TextModel` (a registered Keras
model) joins a run's :class:`hatt.data.Vectorizer` and its id model: its call
runs the Vectorizer's own tokenize → truncate → look-up code (``hatt.data``,
TensorFlow string ops, not a copy), then the classifier with its attention
(:func:`hatt.models.attention_model`). The same object is what the
``.keras`` file holds and what the SavedModel's endpoint calls, so the
in-memory model, the ``.keras`` file and the SavedModel compute the same thing.

Public API
----------

- :func:`export` ``(run_dir, out=None) -> ExportResult``: write
  ``saved_models/NAME/VERSION/`` (a SavedModel, TF Serving layout; the next
  free version) and ``saved_models/NAME/{model.keras, vectorizer.json,
  export.json}``. ``hatt export RUN_DIR [--out DIR]`` and ``hatt train``
  run it.
- :func:`load` ``(path) -> Predictor``: THE loader, for prediction and for
  explanation (``hatt.inspect`` and ``hatt predict`` call it): a SavedModel
  folder, a ``saved_models/NAME`` folder (its highest complete version), a
  ``.keras`` file (an end-to-end :class:`TextModel`, or an id model with
  ``vectorizer.json`` beside it) or a run directory. Failures raise
  :class:`ExportError` (a ``ValueError``) with the path in the message.
- :class:`Predictor`: ``.family``, ``.score_kind``, ``.source``, ``.kind``
  (``"saved_model"`` or ``"keras"``), ``.methods`` (the explanation methods
  it has, in :data:`hatt.attribution.METHODS` order; ``()`` for an export
  without the ``explain`` signature), ``__call__(texts, batch_size=None) ->
  dict`` of NumPy arrays (``serving_default``'s keys below),
  ``explain(texts, batch_size=None) -> dict`` (``explain``'s keys; an export
  without that signature raises :class:`ExportError`: re-export it with
  ``hatt export RUN_DIR``), ``predict(texts, batch_size=None)``,
  ``predict_proba(texts, batch_size=64) -> [N]``; with a Keras model
  (``kind="keras"``) also the id-level entry points of the deletion test:
  ``ragged_ids(texts)``,
  ``probabilities_from_ids(ragged)`` (a SavedModel-backed Predictor raises a
  clear :class:`ExportError` there: load ``saved_models/NAME/model.keras``
  or the run directory instead).
- :func:`as_predictor` ``(model, vectorizer=None) -> Predictor``: a
  Predictor as is, a :class:`TextModel`, an in-memory ``keras.Model`` with
  its vectorizer, or a path (:func:`load`).
- :class:`TextModel` ``(model, vectorizer)``: the function itself, in
  memory (``Predictor.from_text_model(text_model)`` wraps it like a loaded
  export), with ``explain(texts, steps=None, target=None)`` and
  ``explain_from_ids(ragged, steps=None, target=None)`` (THE text →
  explanations path; the math is :mod:`hatt.attribution`);
  :func:`load_run` ``(run_dir) -> TextModel``; :func:`normalise` (scores →
  weights summing to 1 over a mask).
- Lower level: :func:`save_saved_model` ``(text_model, path)``,
  :func:`write_export` ``(text_model, out, metadata)`` and
  :func:`remove_stale_temporaries` ``(out)``.

The serving contract
--------------------

The SavedModel has three signatures that take ``text`` (``tf.string``,
``[None]``, raw reviews, HTML breaks and all): ``predict``,
``serving_default`` and ``explain``. An empty batch gives empty outputs.

``predict`` (the fast path: nothing else is computed) returns:

- ``probabilities``: float32 ``[None, C]``, one column per class, in the
  order of ``class_names`` (``export.json`` and the version's
  ``assets.extra/hatt_export.json``);
- ``label``: string ``[None]``, the most probable class's name;
- ``probability`` (two-class models only): float32 ``[None]``, the
  probability of the second class (IMDB: positive), as before 0.3.

``serving_default`` returns the same keys, and:

- ``tokens``: string, ``[None, T]`` for flat models (cnn, rnn,
  transformer), ``[None, S, W]`` for the HAN, exactly the tokens the model
  saw after truncation, ``""`` on padding (padded to the batch's longest
  review; every axis at least 1 long);
- ``word_attention``: float32, shaped like ``tokens``: over the real tokens
  of a review (HAN: of a sentence) it sums to 1; 0 on padding; all zeros
  for a review (sentence) without tokens (saliency: also for a review
  none of whose tokens moves the logit, see below);
- ``sentence_attention`` (HAN only): float32 ``[None, S]``, sums to 1 over
  the review's sentences, 0 on padding.

Attention does not depend on the class.
**The CNN has no attention** (max-over-time pooling, its default; a CNN
built with ``pooling="attention"`` gives its attention): under
``word_attention`` it gives *gradient × input saliency* instead, per token
``|Σ_d ∂z/∂e_td · e_td|`` where ``e`` is the embedding output and ``z`` the
logit of the predicted class, normalised to sum to 1 over the review's
tokens. When every product of a review is exactly 0 (no token moves the
logit) its weights are all zeros, as for a review without tokens: no token
carries evidence, and uniform weights would claim that each one does.
With the optional n-gram channel the logit is the sum of the deep logit and
the n-gram logit; only the deep part depends on ``e``, so the saliency
explains that part (the n-gram channel's weights are not in it). The export
records which (``score_kind``: ``"attention"`` or ``"saliency"``) in
``export.json`` and in the version's ``assets.extra/hatt_export.json``.

``explain`` (:meth:`TextModel.explain`; older exports lack it: re-export them
with ``hatt export RUN_DIR``) explains each
review for its predicted class ``c`` (the argmax of ``probabilities``) by
every method the model has (``methods`` in the export's JSON, in the order of
:data:`hatt.attribution.METHODS`), at ``explain_steps`` integrated-gradients
steps. Signed scores are raw (not normalised) contributions to ``z_c``, the
logit of class ``c`` (two classes: ``z_1 = z``, ``z_0 = -z`` for the one
sigmoid logit ``z``), so ``+`` argues for the prediction and ``-`` against
it. It returns the keys of ``predict`` and:

- ``tokens``: as in ``serving_default``; ``target``: int32 ``[None]``, ``c``;
- shaped like ``tokens``, float32, 0 on padding: ``attention`` (models whose
  words are pooled by attention: ``serving_default``'s ``word_attention``;
  HAN: also ``sentence_attention`` ``[None, S]``), ``total`` (each token's
  contribution to the whole of ``z_c``: ``integrated_gradients`` +
  ``ngram``, the deep part's with its mix weight; they sum to ``logit -
  logit_baseline`` up to the quadrature error), ``gradient_x_input``
  (``Σ_d ∂z_c/∂e_td · e_td``), ``integrated_gradients`` (from the zero
  embedding to ``e``, the ids and masks unchanged), ``ngram`` (models with
  the n-gram channel: its exact share of ``z_c`` per token; they sum to
  ``logit_ngram``);
- HAN only, float32 ``[None, S]``: ``sentence_total``,
  ``sentence_gradient_x_input``, ``sentence_integrated_gradients`` [,
  ``sentence_ngram``]: the sums of each sentence's words;
- float32 ``[None]``: ``logit`` (``z_c``) ``= logit_deep + logit_ngram +
  logit_bias`` (the deep part without its bias, the channel's logit or 0,
  the head's bias); ``logit_baseline`` (``z_c`` with no word evidence: the
  deep part at the zero embedding, its bias included, and no channel; an
  export without it is given it by :meth:`Predictor.explain`, as ``total``);
  ``ig_delta`` (``z_c(e) - z_c(0)``, which the
  ``integrated_gradients`` of a review sum to up to the quadrature error)
  and ``ig_completeness_error`` (``|Σ IG - ig_delta| / max(|ig_delta|,
  1e-6)``).

Its cost grows with the steps: on 2 CPU cores, 16 IMDB reviews take about
50× ``serving_default``'s time on the CNN at the default 64 steps.
"""

import dataclasses
import json
import os
import shutil
import tempfile
import time
from pathlib import Path

import keras
import numpy as np
import tensorflow as tf
from keras import ops

import hatt
from hatt import attribution, models
from hatt.data.corpus import BINARY_CLASSES
from hatt.data.files import read_json_object
from hatt.data.vectorize import PAD_ID, PAD_TOKEN, Vectorizer, text_batch


class ExportError(ValueError):
    """A model folder or file that hatt cannot load or write (message names the path)."""


# === Models ===========================================================================


@keras.saving.register_keras_serializable(package="hatt")
class TextModel(keras.Model):
    """Raw review text → probability, tokens and attention (or saliency) weights.

    Runs the Vectorizer's own code (:meth:`hatt.data.Vectorizer.tokens`,
    ``lookup_ids``, ``densify``) and the trained id model with its attention
    view (:func:`hatt.models.attention_model`), so the tokens align exactly
    with the ids the model sees, truncation included. A packed HAN is
    replaced by its dense twin (:func:`hatt.models.dense_twin`). For a model without
    attention (the CNN with max-over-time pooling) ``word_attention`` holds
    normalised gradient × input saliency on the embedding output (see the
    module docstring; a review none of whose tokens moves the logit gets
    all zeros); ``score_kind`` says which. This is hatt's one saliency:
    ``hatt.inspect`` and the deletion test read it from here.

    :meth:`explain` gives every explanation method's signed word scores and
    the logit's decomposition (the SavedModel's ``explain`` signature).

    The id-level methods :meth:`ragged_ids`,
    :meth:`explain_from_ids` and :meth:`probabilities_from_ids` are the same
    function on ids that may have been edited (the deletion test removes
    tokens and runs the model again).

    Saving it as ``.keras`` keeps the vocabulary and the weights;
    ``keras.saving.load_model`` reloads it after ``import hatt``.

    Args:
        model: An id model from :func:`hatt.models.build` (trained or
            reloaded), flat ``[batch, T]`` or nested ``[batch, S, W]``.
        vectorizer: The adapted :class:`hatt.data.Vectorizer` it was trained
            with (``output_mode`` must match the model).
        family: The family name; `None` reads it from the model.
        **kwargs: Base model keyword arguments, such as `name`.

    Call arguments:
        inputs: list of str or 1-D ``tf.string`` tensor of raw reviews.

    Returns:
        A dict of tensors: ``probability`` ``[batch]``, ``tokens``,
        ``word_attention`` (``[batch, T]`` or ``[batch, S, W]``), and for
        the HAN ``sentence_attention`` ``[batch, S]``.

    Example:

    >>> text_model = hatt.export.TextModel(model, vectorizer)
    >>> out = text_model(["A wonderful, moving film.<br />Go and see it!"])
    >>> out["probability"], out["tokens"], out["word_attention"]
    """

    def __init__(self, model, vectorizer, family=None, class_names=None, **kwargs):
        kwargs.setdefault("name", "text_model")
        super().__init__(**kwargs)
        if isinstance(model, dict):
            model = keras.saving.deserialize_keras_object(model)
        if isinstance(vectorizer, dict):
            vectorizer = keras.saving.deserialize_keras_object(vectorizer)
        model = models.dense_twin(model)
        self.nested = _check_pair(model, vectorizer)
        self.family = family or models.family_of(model)
        if self.family not in models.FAMILIES:
            raise ValueError(
                f"Expected family to be one of {models.FAMILIES}. Received: family={self.family!r}"
            )
        # Attention where the model pools with ContextAttention; the CNN's max-over-time
        # pooling (its default) has none, so it gets gradient x input saliency.
        self.score_kind = models.score_kind(model)
        self.classifier = model
        self.vectorizer = vectorizer
        self.num_classes = models.head.num_classes_of(model)
        self.class_names = check_class_names(class_names, self.num_classes)
        # Serialized before the views exist (they add nodes to the model's layers).
        self._model_config = keras.saving.serialize_keras_object(model)
        self._views = models.explanation_view(model)
        self.built = True

    @property
    def prediction_keys(self):
        """The keys of :meth:`classify` (the ``predict`` signature)."""
        keys = ("probabilities", "label")
        return (*keys, "probability") if self.num_classes == 2 else keys

    @property
    def output_keys(self):
        """The keys of :meth:`call` (the ``serving_default`` signature)."""
        keys = (*self.prediction_keys, "tokens", "word_attention")
        return (*keys, "sentence_attention") if self.nested else keys

    @property
    def methods(self):
        """The explanation methods this model has, in :data:`hatt.attribution.METHODS` order.

        ``"attention"`` when its words are pooled by ``ContextAttention``
        (``score_kind == "attention"``), ``"ngram"`` when it has the n-gram
        channel; ``"total"``, ``"gradient_x_input"`` and
        ``"integrated_gradients"`` always.
        """
        has = {
            "attention": self.score_kind == "attention",
            "ngram": self._views.channel is not None,
        }
        return tuple(m for m in attribution.METHODS if has.get(m, True))

    @property
    def explain_keys(self):
        """The keys of :meth:`explain` (the ``explain`` signature), in order."""
        keys = [*self.prediction_keys, "tokens", "target"]
        signed = [m for m in self.methods if m in attribution.SIGNED_METHODS]
        if "attention" in self.methods:
            keys += ["attention", "sentence_attention"] if self.nested else ["attention"]
        keys += signed
        if self.nested:
            keys += [f"sentence_{m}" for m in signed]
        return (*keys, *EXPLAIN_TOTALS)

    def __call__(self, inputs, *args, **kwargs):
        return super().__call__(text_batch(inputs), *args, **kwargs)

    def call(self, inputs, training=False):
        return _on_nonempty(self._outputs, inputs)

    def _outputs(self, inputs):
        tokens = self.vectorizer.tokens(inputs)
        ids = self.vectorizer.densify(self.vectorizer.lookup_ids(tokens))
        outputs = {"tokens": self.vectorizer.densify(tokens, pad_value=PAD_TOKEN)}
        outputs.update(self._scores(ids))
        return outputs

    def classify(self, inputs):
        """Raw reviews → only the prediction (``prediction_keys``): no attention, no saliency.

        The fast path (the SavedModel's ``predict`` signature): it runs the
        classifier alone, not its explanation view.
        """
        return _on_nonempty(self._classify, text_batch(inputs))

    def _classify(self, inputs):
        ids = self.vectorizer.densify(self.vectorizer.lookup_ids(self.vectorizer.tokens(inputs)))
        if self.family != "cnn" or self.nested:
            return self._prediction(self.classifier(ids, training=False))
        return self._prediction(self._compiled_classifier(ids))

    def _compiled_classifier(self, ids):
        """The CNN's classifier on ``ids`` ``[B, T]``, compiled by XLA (the ``predict`` path).

        XLA fuses the one-hot CNN's lookup, region sums, ReLU and max over time,
        so the ``[B, T, sum(kernel_sizes) * filters]`` lookups are never written
        out whole: 3.8x the reviews/s of the plain graph on IMDB's CNN preset
        (experiments/benchmarks/predict_speed.py), the same probabilities within
        1e-6. XLA compiles once per shape, so the ids are padded to
        ``sequence_length`` and the batch to the next power of two (padding never
        changes a review's output), and the extra rows are dropped.
        """
        if not hasattr(self, "_xla_classifier"):
            classifier = self.classifier
            self._xla_classifier = tf.function(
                lambda x: classifier(x, training=False), jit_compile=True, autograph=False
            )
        batch = tf.shape(ids)[0]
        buckets = tf.constant([2**k for k in range(31)], tf.int32)
        rows = tf.reduce_min(tf.boolean_mask(buckets, buckets >= batch))
        columns = tf.maximum(self.vectorizer.sequence_length, tf.shape(ids)[1])
        padded = tf.pad(ids, [[0, rows - batch], [0, columns - tf.shape(ids)[1]]])
        return self._xla_classifier(padded)[:batch]

    def _prediction(self, probabilities):
        """The head's output ``[batch, units]`` → ``probabilities``, ``label`` [, ``probability``]."""
        probabilities = ops.cast(probabilities, "float32")
        outputs = {}
        if self.num_classes == 2:  # the sigmoid head gives the probability of class 1
            positive = ops.reshape(probabilities, (-1,))
            probabilities = ops.stack([1.0 - positive, positive], axis=-1)
            outputs["probability"] = positive
        names = tf.constant(list(self.class_names), dtype=tf.string)
        outputs["probabilities"] = probabilities
        outputs["label"] = tf.gather(names, ops.argmax(probabilities, axis=-1))
        return outputs

    def _scores(self, ids):
        """Dense ids → the prediction, ``word_attention`` [, ``sentence_attention``]."""
        views = self._views.attention(ids, training=False)
        outputs = self._prediction(views["probability"])
        if self.score_kind == "saliency":
            word = self._saliency(ids)
        else:
            word = views["word_attention"]
        outputs["word_attention"] = ops.cast(word, "float32")
        if self.nested:
            outputs["sentence_attention"] = ops.cast(views["sentence_attention"], "float32")
        return outputs

    def _saliency(self, ids):
        """Normalised ``|Σ_d ∂z/∂e · e|`` per token (``z``: the predicted class's logit).

        With two classes ``z`` is the one logit of the sigmoid head (the
        predicted class's logit is ``z`` or ``-z``: the same absolute
        products); with more, the logit of each review's argmax class.

        THE saliency of hatt (export, ``hatt.inspect`` and the deletion test
        all read it from here). A review whose products are all 0 gets all
        zeros (:func:`normalise`), like a review without tokens.
        """
        views = self._views
        embedded = tf.convert_to_tensor(views.embed(ids, training=False))
        with tf.GradientTape() as tape:
            tape.watch(embedded)
            logits = views.logits([ids, embedded], training=False)
            if self.num_classes > 2:
                chosen = ops.one_hot(ops.argmax(logits, axis=-1), self.num_classes)
                logits = ops.sum(logits * ops.stop_gradient(chosen), axis=-1)
        gradient = tape.gradient(logits, embedded)
        scores = ops.abs(ops.sum(gradient * embedded, axis=-1))
        if self.nested:  # the HAN's word embeddings are folded to [batch * S, W]
            scores = ops.reshape(scores, ops.shape(ids))
        return normalise(scores, ops.not_equal(ids, PAD_ID))

    # --- explanations: every method's signed scores and the logit's decomposition --------

    def explain(self, texts, steps=None, target=None):
        """Raw reviews → the prediction, tokens, every method's word scores, the logit's parts.

        THE text → explanations path (``hatt.inspect``, the server and the
        SavedModel's ``explain`` signature read it). Each review is explained
        for its predicted class ``c`` (the argmax of ``probabilities``);
        signed scores argue for (+) or against (-) it. See
        :mod:`hatt.attribution` for the methods.

        Args:
            texts: list of str or 1-D ``tf.string`` tensor of raw reviews.
            steps: Positive int, integrated gradients' quadrature nodes.
                Defaults to :data:`hatt.attribution.DEFAULT_STEPS`.
            target: ``None`` (each review's predicted class), or an int
                class index to explain every review for.

        Returns:
            A dict of tensors (:attr:`explain_keys`): ``probabilities``
            ``[N, C]``, ``label`` ``[N]`` [, ``probability`` ``[N]``],
            ``tokens`` (``[N, T]``, HAN ``[N, S, W]``, ``""`` on padding),
            ``target`` int32 ``[N]``; shaped like ``tokens``, float32, 0 on
            padding: ``attention`` (models with attention; HAN also
            ``sentence_attention`` ``[N, S]``), ``total``
            (``integrated_gradients`` + ``ngram``: each token's share of the
            whole logit), ``gradient_x_input``, ``integrated_gradients``,
            ``ngram`` (models with the channel); HAN only, ``[N, S]``:
            ``sentence_<method>``, the sum of the sentence's words for each
            signed method; float32 ``[N]``: ``logit`` (``z_c``) =
            ``logit_deep`` + ``logit_ngram`` + ``logit_bias``,
            ``logit_baseline`` (``z_c`` with no word evidence; the ``total``
            of a review sums to ``logit - logit_baseline`` up to the
            quadrature error), ``ig_delta`` (``z_c(e) - z_c(0)``) and
            ``ig_completeness_error`` (``|Σ IG - ig_delta| /
            max(|ig_delta|, 1e-6)``).

        Example:

        >>> out = text_model.explain(["A fine cast. A lazy, dull ending."])
        >>> out["tokens"], out["total"], out["logit"] - out["logit_baseline"]
        """
        steps = attribution.check_steps(steps)
        target = self._check_target(target)
        return _on_nonempty(lambda batch: self._explain(batch, steps, target), text_batch(texts))

    def _explain(self, inputs, steps, target):
        tokens = self.vectorizer.tokens(inputs)
        ids = self.vectorizer.densify(self.vectorizer.lookup_ids(tokens))
        outputs = self._explanations(ids, steps, target)
        outputs["tokens"] = self.vectorizer.densify(tokens, pad_value=PAD_TOKEN)
        return {key: outputs[key] for key in self.explain_keys}

    def explain_from_ids(self, ragged, steps=None, target=None):
        """Ragged ids → :meth:`explain`'s dict without ``tokens`` (ids that may have been edited).

        Padded to the batch's longest review; an empty batch gives empty
        arrays.
        """
        steps = attribution.check_steps(steps)
        target = self._check_target(target)
        ids = self.vectorizer.densify(ragged)
        size = tf.shape(ids)[0]
        ids = tf.cond(size > 0, lambda: ids, lambda: tf.zeros([1] * len(ids.shape), ids.dtype))
        outputs = self._explanations_graph(steps, target)(ids)
        return {key: outputs[key][:size] for key in self.explain_keys if key != "tokens"}

    def _check_target(self, target):
        if target is None:
            return None
        if (
            isinstance(target, bool)
            or not isinstance(target, int | np.integer)
            or not 0 <= target < self.num_classes
        ):
            raise ValueError(
                f"Expected target to be None or a class index in [0, {self.num_classes}). "
                f"Received: target={target!r}"
            )
        return int(target)

    def _explanations_graph(self, steps, target):
        """:meth:`_explanations` for these `steps` and `target`, traced once when eager.

        For :meth:`explain_from_ids`, whose caller (the deletion test) runs
        batch after batch: eagerly, the explanation's gradients go op by op,
        and a recurrent model's loop over 800 steps took about 100 times as
        long as traced (16 RNN reviews, 8 steps: 96 s). Raw text goes through
        :meth:`explain`, which a :class:`Predictor` traces once it has run
        enough batches to pay for the trace. One graph per ``(steps,
        target)``, for ids of any batch and length; inside a trace the plain
        method is used.
        """
        if not tf.executing_eagerly():
            return lambda ids: self._explanations(ids, steps, target)
        graphs = self.__dict__.get("_explain_graphs")
        if graphs is None:  # kept out of Keras' tracking: ExportArchive must not see it
            graphs = {}
            object.__setattr__(self, "_explain_graphs", graphs)
        if (steps, target) not in graphs:
            rank = 3 if self.nested else 2
            graphs[steps, target] = tf.function(
                lambda ids: self._explanations(ids, steps, target),
                input_signature=[tf.TensorSpec([None] * rank, tf.int32)],
                autograph=False,
            )
        return graphs[steps, target]

    def _explanations(self, ids, steps, target):
        """Dense ids → the prediction, target, every method's scores and the logit's parts."""
        views = self._views
        mask = ops.not_equal(ids, PAD_ID)
        # A new tensor: the embedding's carries a Keras mask, which the views would warn about.
        embedded = tf.identity(views.embed(ids, training=False))

        parts = views.parts([ids, embedded], training=False)  # the prediction, attention, logits
        prediction = self._prediction(parts["probability"])
        chosen = attribution.predicted_class(prediction["probabilities"])
        if target is not None:
            chosen = ops.full_like(chosen, target)

        def deep(inputs, embedded):  # the explained class's logit from the embeddings on
            ids, chosen = inputs
            return attribution.class_values(views.deep([ids, embedded], training=False), chosen)

        found = attribution.attributions(deep, (ids, chosen), embedded, steps)
        scores = {m: found[m] for m in ("gradient_x_input", "integrated_gradients")}
        if views.channel is not None:
            shares = views.channel.token_contributions(ids)
            scores["ngram"] = attribution.class_values(shares, chosen)
        outputs = {key: prediction[key] for key in self.prediction_keys}
        outputs["target"] = chosen
        outputs.update(self._word_scores(ids, mask, scores, parts))
        outputs.update(
            attribution.decompose(
                parts["deep_logits"], parts.get("ngram_logits"), views.logit_bias, chosen
            )
        )
        outputs["logit_baseline"] = found["value"] - found["delta"]  # the deep part at 0
        outputs["ig_delta"] = found["delta"]
        outputs["ig_completeness_error"] = attribution.completeness_error(
            outputs["integrated_gradients"], found["delta"]
        )
        return outputs

    def _word_scores(self, ids, mask, scores, parts):
        """Scores shaped like ``ids``, 0 on padding (the total among them); attention; the
        HAN's sentence sums."""
        real = ops.cast(mask, "float32")
        # HAN: unfold [batch * S, W] to [batch, S, W]
        shaped = {m: ops.reshape(ops.cast(v, "float32"), ops.shape(ids)) for m, v in scores.items()}
        shaped["total"] = attribution.total(shaped["integrated_gradients"], shaped.get("ngram"))
        outputs = {}
        for method, values in shaped.items():
            outputs[method] = values * real
            if self.nested:
                outputs[f"sentence_{method}"] = ops.sum(outputs[method], axis=-1)
        if self.score_kind == "attention":
            outputs["attention"] = ops.cast(parts["word_attention"], "float32") * real
            if self.nested:
                outputs["sentence_attention"] = ops.cast(parts["sentence_attention"], "float32")
        return outputs

    # --- ids: the deletion test edits them and runs the model again ----------------------

    def ragged_ids(self, texts):
        """Raw reviews → the ragged ``int32`` ids the model sees (truncation included).

        ``[batch, (T)]`` for flat models, ``[batch, (S), (W)]`` for the HAN.
        """
        return self.vectorizer.ragged_ids(text_batch(texts))

    def probabilities_from_ids(self, ragged):
        """Ragged ids → class probabilities, ``[batch, num_classes]`` NumPy (no scores)."""
        ids = self.vectorizer.densify(ragged)
        out = np.asarray(self.classifier.predict_on_batch(ids), np.float32)
        if self.num_classes == 2:
            out = out.reshape(-1)
            out = np.stack([1.0 - out, out], axis=-1)
        return out

    def compute_output_spec(self, inputs, training=False):
        dims = (None,) * (3 if self.nested else 2)
        batch = inputs.shape[0] if inputs.shape else None
        specs = {
            "probabilities": keras.KerasTensor((batch, self.num_classes), dtype="float32"),
            "label": keras.KerasTensor((batch,), dtype="string"),
            "tokens": keras.KerasTensor((batch, *dims[1:]), dtype="string"),
            "word_attention": keras.KerasTensor((batch, *dims[1:]), dtype="float32"),
        }
        if self.num_classes == 2:
            specs["probability"] = keras.KerasTensor((batch,), dtype="float32")
        if self.nested:
            specs["sentence_attention"] = keras.KerasTensor((batch, None), dtype="float32")
        return specs

    def get_config(self):
        config = super().get_config()
        config.update(
            {
                "model": self._model_config,
                "vectorizer": keras.saving.serialize_keras_object(self.vectorizer),
                "family": self.family,
                "class_names": list(self.class_names),
            }
        )
        return config

    @classmethod
    def from_config(cls, config):
        return cls(**config)


def _on_nonempty(function, inputs):
    """``function(inputs)``; an empty batch runs as one empty review, then is sliced away.

    Some kernels (Conv1D's BiasAdd under oneDNN) reject a zero-sized batch.
    """
    size = tf.shape(inputs)[0]
    inputs = tf.cond(size > 0, lambda: inputs, lambda: tf.constant([""]))
    return {key: value[:size] for key, value in function(inputs).items()}


def _check_pair(model, vectorizer):
    """Check that ``vectorizer`` feeds ``model`` (a dense classifier); return nested."""
    if not isinstance(vectorizer, Vectorizer):
        raise ValueError(
            f"Expected vectorizer to be a hatt.data.Vectorizer. Received: {vectorizer!r}"
        )
    vectorizer._check_adapted()
    nested = len(model.inputs[0].shape) == 3
    mode = "nested" if nested else "flat"
    if vectorizer.output_mode != mode:
        raise ValueError(
            f"Expected a vectorizer with output_mode={mode!r} for the model {model.name!r}. "
            f"Received: output_mode={vectorizer.output_mode!r}"
        )
    return nested


BINARY_CLASS_NAMES = BINARY_CLASSES  # IMDB's, and any 2-class model's default
# The explain signature's per-review figures, after the word and sentence scores.
EXPLAIN_TOTALS = (
    "logit",
    "logit_deep",
    "logit_ngram",
    "logit_bias",
    "logit_baseline",
    "ig_delta",
    "ig_completeness_error",
)


def default_class_names(num_classes):
    """Names of a model's classes when none were saved: IMDB's for 2, ``"0"...`` above."""
    return BINARY_CLASS_NAMES if num_classes == 2 else tuple(str(i) for i in range(num_classes))


def check_class_names(class_names, num_classes):
    """``class_names`` as a tuple of ``num_classes`` distinct non-empty str (``None``: default)."""
    if class_names is None:
        return default_class_names(num_classes)
    names = tuple(class_names) if isinstance(class_names, list | tuple) else None
    if (
        names is None
        or len(names) != num_classes
        or not all(isinstance(n, str) and n for n in names)
        or len(set(names)) != len(names)
    ):
        raise ValueError(
            f"Expected class_names to be {num_classes} distinct non-empty strings (one per "
            f"class of the model). Received: class_names={class_names!r}"
        )
    return names


def normalise(scores, mask):
    """Scores ``>= 0`` → weights summing to 1 over ``mask`` along the last axis.

    Masked steps get 0. A row whose kept scores are all 0 (or that keeps no
    step) gets all zeros: nothing in it carries weight, and spreading 1 over
    its steps would claim that each does.
    """
    mask = ops.cast(mask, "float32")
    scores = ops.cast(scores, "float32") * mask
    total = ops.sum(scores, axis=-1, keepdims=True)
    return scores / ops.where(total > 0, total, 1.0)


# === Writing an export ================================================================

EXPORT_FILE = "export.json"  # saved_models/NAME/export.json
VERSION_METADATA = "assets.extra/hatt_export.json"  # inside each version (TF Serving ignores it)


@dataclasses.dataclass
class ExportResult:
    """Where :func:`export` wrote: ``path`` (saved_models/NAME), ``version``, ``saved_model``."""

    path: Path
    version: int
    saved_model: Path
    keras_file: Path
    family: str
    score_kind: str
    seconds: float


def _versions(folder):
    """Numeric version folders holding a ``saved_model.pb``, ascending."""
    folder = Path(folder)
    if not folder.is_dir():
        return []
    found = [
        int(p.name)
        for p in folder.iterdir()
        if p.name.isdigit() and p.is_dir() and (p / "saved_model.pb").is_file()
    ]
    return sorted(found)


def _next_version(folder):
    folder = Path(folder)
    taken = [int(p.name) for p in folder.iterdir() if p.name.isdigit()] if folder.is_dir() else []
    return max(taken, default=0) + 1


def save_saved_model(text_model, path):
    """Write ``text_model`` as a SavedModel: ``serving_default``, ``predict``, ``explain``.

    All three take ``text``. ``serving_default`` returns
    :attr:`TextModel.output_keys` (the prediction, tokens and scores);
    ``predict`` only :attr:`TextModel.prediction_keys`
    (:meth:`TextModel.classify`: no explanation is computed); ``explain``
    :attr:`TextModel.explain_keys` (:meth:`TextModel.explain` at
    :data:`hatt.attribution.DEFAULT_STEPS`).

    Uses ``keras.export.ExportArchive``: the endpoints' traces capture the
    weights, and only the vectorizer (its lookup tables, no weights) is
    ``track()``-ed. Tracking ``text_model`` would add the ``keras.Variable``
    wrappers beside the ``tf.Variable`` s the traces hold, and the checkpoint
    would store every weight twice (keras-team/keras#23553): twice the disk and
    twice the memory of every server that loads the model. The endpoint is ``text_model``
    itself, so the SavedModel runs the same ``hatt.data`` preprocessing as
    training.

    Args:
        text_model: A :class:`TextModel`.
        path: The folder to write (must not exist).
    """
    # Builds every layer (ExportArchive needs them built); two sentences of two words,
    # so that no attention runs over an axis of length 1 (Keras warns about that).
    text_model(tf.constant(["warm up. warm up."]))
    archive = keras.export.ExportArchive()
    archive.track(text_model.vectorizer)  # its tables; the weights come with the endpoints

    def serve(text):
        return text_model(text)

    def predict(text):
        return text_model.classify(text)

    def explain(text):
        return text_model.explain(text)

    text_spec = [tf.TensorSpec([None], tf.string, name="text")]
    archive.add_endpoint("serving_default", serve, input_signature=text_spec)
    archive.add_endpoint("predict", predict, input_signature=text_spec)
    archive.add_endpoint("explain", explain, input_signature=text_spec)
    archive.write_out(str(path), verbose=False)


def write_export(text_model, out, metadata=None):
    """Write the next version of ``text_model`` into ``out`` (a ``saved_models/NAME`` folder).

    Everything is written into a temporary folder of its own first
    (``out/.tmp-export-PID-XXXXXXXX``, unique even for two exports in one
    process) and moved into place when complete, so a crash never leaves a
    half-written version that "latest" would pick, and two exports at once
    never share a file:

    1. remove stale temporaries of killed exports (:func:`remove_stale_temporaries`);
    2. write the SavedModel and rename it to ``out/VERSION`` (the next free
       number; if another export took it meanwhile, the one after);
    3. replace ``out/model.keras`` (the end-to-end :class:`TextModel`) and
       ``out/vectorizer.json``, unless a newer version is already in place
       (its export writes them);
    4. rewrite ``out/export.json`` (atomically) from the newest complete
       version folder, so it never names an older version than the folders
       hold.

    Args:
        text_model: A :class:`TextModel`.
        out: The export folder (created).
        metadata: Extra JSON-able facts for ``export.json`` (source run, metrics).

    Returns:
        An :class:`ExportResult`.
    """
    start = time.perf_counter()
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    remove_stale_temporaries(out)
    staging = Path(tempfile.mkdtemp(prefix=f"{TEMPORARY_PREFIX}{os.getpid()}-", dir=out))
    try:
        facts = _export_facts(text_model, metadata)
        version = _write_version(text_model, facts, staging, out)
        keras_file = _write_keras_files(text_model, staging, out, version)
        _write_index(out, staging)
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return ExportResult(
        path=out,
        version=version,
        saved_model=out / str(version),
        keras_file=keras_file,
        family=text_model.family,
        score_kind=text_model.score_kind,
        seconds=round(time.perf_counter() - start, 2),
    )


def _export_facts(text_model, metadata):
    return {
        "family": text_model.family,
        "score_kind": text_model.score_kind,
        "outputs": list(text_model.output_keys),
        "signatures": {
            "serving_default": list(text_model.output_keys),
            "predict": list(text_model.prediction_keys),
            "explain": list(text_model.explain_keys),
        },
        "methods": list(text_model.methods),
        "explain_steps": attribution.DEFAULT_STEPS,
        "num_classes": text_model.num_classes,
        "class_names": list(text_model.class_names),
        "input": "text: tf.string [None], raw review text",
        "hatt_version": hatt.__version__,
        "keras_version": keras.__version__,
        "tensorflow_version": tf.__version__,
        **(metadata or {}),
    }


def _write_json(path, value):
    Path(path).write_text(json.dumps(value, indent=2) + "\n")


def _write_version(text_model, facts, staging, out):
    """Write the SavedModel in ``staging`` and move it to ``out/VERSION``; return VERSION."""
    saved_model = staging / "saved_model"
    save_saved_model(text_model, saved_model)
    (saved_model / "assets.extra").mkdir(exist_ok=True)
    version = _next_version(out)
    while True:  # another export may take the number meanwhile: then the next one
        _write_json(saved_model / VERSION_METADATA, {**facts, "version": version})
        try:
            os.rename(saved_model, out / str(version))
            return version
        except OSError:
            if not (out / str(version)).exists():
                raise
            version += 1


def _write_keras_files(text_model, staging, out, version):
    """``out/model.keras`` and ``out/vectorizer.json``, when ``version`` is the newest."""
    keras_file = out / "model.keras"
    text_model.save(staging / "model.keras")
    text_model.vectorizer.save(staging / "vectorizer.json")
    if version >= max(_versions(out), default=0):
        os.replace(staging / "model.keras", keras_file)
        os.replace(staging / "vectorizer.json", out / "vectorizer.json")
    return keras_file


def _write_index(out, staging, attempts=5):
    """``out/export.json``: the newest complete version's facts and every version number.

    Written atomically; rewritten while the version folders change under it
    (an export running beside this one), so the last writer leaves it true.
    """
    for _ in range(attempts):
        versions = _versions(out)
        if not versions:
            return
        facts = _read_json(out / str(versions[-1]) / VERSION_METADATA)
        _write_json(staging / EXPORT_FILE, {**facts, "versions": versions})
        os.replace(staging / EXPORT_FILE, out / EXPORT_FILE)
        if _versions(out) == versions:
            return


# Temporaries of an export: this prefix, then the writer's process id.
TEMPORARY_PREFIX = ".tmp-export-"
# A temporary untouched for this long is stale, whatever its writer (other hosts, old names).
STALE_SECONDS = 30 * 60


def remove_stale_temporaries(out):
    """Remove what killed exports left in ``out``; return the names removed.

    A ``.tmp-*`` entry is stale when its writer's process (the id in a
    ``.tmp-export-PID-*`` name) no longer runs on this machine, or when
    nothing in it has changed for :data:`STALE_SECONDS` (entries from other
    machines or older hatt versions, whose names carry no usable process
    id). A running export's temporaries are left alone.
    """
    removed = []
    for entry in sorted(Path(out).glob(".tmp-*")):
        if not _is_stale(entry):
            continue
        if entry.is_dir() and not entry.is_symlink():
            shutil.rmtree(entry, ignore_errors=True)
        else:
            entry.unlink(missing_ok=True)
        removed.append(entry.name)
    return removed


def _is_stale(entry):
    writer = _writer_pid(entry.name)
    if writer is not None and not _process_running(writer):
        return True
    return time.time() - _last_change(entry) > STALE_SECONDS


def _writer_pid(name):
    if not name.startswith(TEMPORARY_PREFIX):
        return None
    pid = name[len(TEMPORARY_PREFIX) :].split("-", 1)[0]
    return int(pid) if pid.isdigit() else None


def _process_running(pid):
    if os.name != "posix":  # os.kill(pid, 0) would end the process on Windows
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:  # it exists but belongs to someone else
        return True
    return True


def _last_change(entry):
    try:
        newest = entry.lstat().st_mtime
    except OSError:
        return time.time()
    if entry.is_dir():
        for folder, _, files in os.walk(entry):
            for name in files:
                try:
                    newest = max(newest, os.lstat(os.path.join(folder, name)).st_mtime)
                except OSError:
                    continue
    return newest


def _read_json(path):
    """A JSON object from ``path``; :class:`ExportError` naming the file if it is not one."""
    try:
        return read_json_object(path)
    except (OSError, ValueError) as error:
        raise ExportError(f"Could not read {str(path)!r}: {error}") from error


def load_run(run_dir):
    """The :class:`TextModel` of a run directory (``model.keras`` + ``vectorizer.json``)."""
    run_dir = Path(run_dir)
    missing = [n for n in ("model.keras", "vectorizer.json") if not (run_dir / n).is_file()]
    if missing:
        raise ExportError(
            f"{str(run_dir)!r} is not a hatt run directory: it has no {' or '.join(missing)} "
            "(hatt train writes model.keras, vectorizer.json and config.json)."
        )
    family = None
    if (run_dir / "config.json").is_file():
        family = _read_json(run_dir / "config.json").get("model")
    return _text_model_from_keras(run_dir / "model.keras", family=family)


CLASSES_FILE = "classes.json"  # a run directory's class names: {"class_names": [...]}


def read_class_names(run_dir):
    """The class names a run directory recorded (``classes.json``), or ``None`` (older runs)."""
    path = Path(run_dir) / CLASSES_FILE
    if not path.is_file():
        return None
    names = _read_json(path).get("class_names")
    if not isinstance(names, list):
        raise ExportError(f"Expected {str(path)!r} to hold a list under 'class_names'.")
    return names


def export(run_dir, out=None):
    """Export a run directory of ``hatt train`` (``hatt export RUN_DIR [--out DIR]``).

    Args:
        run_dir: A run directory (``config.json``, ``model.keras``,
            ``vectorizer.json``; ``metrics.json`` is copied into ``export.json``).
        out: The export folder; defaults to ``saved_models/FAMILY``.

    Returns:
        An :class:`ExportResult` (``version`` is the number just written).
    """
    run_dir = Path(run_dir)
    if not run_dir.is_dir():
        raise ExportError(f"No run directory at {str(run_dir)!r}.")
    text_model = load_run(run_dir)
    metadata = {"source_run": str(run_dir.resolve())}
    if (run_dir / "metrics.json").is_file():
        metrics = _read_json(run_dir / "metrics.json")
        metadata["metrics"] = {
            k: metrics[k]
            for k in (
                "test_accuracy",
                "test_macro_f1",
                "test_mae",
                "validation_accuracy",
                "epochs",
                "parameters",
                "command",
            )
            if k in metrics
        }
    metadata.update(run_facts(run_dir))
    out = Path(out) if out else Path("saved_models") / text_model.family
    return write_export(text_model, out, metadata)


# === What a run recorded against reading its parts at face value =======================

# From a run's n-gram record (metrics.json["ngram_channel"], ngram_channel.json): the
# mix of a separate fit and the parts' accuracies alone, which the warnings read.
NGRAM_FACTS = (
    "fit",
    "mix",
    "deep_validation_accuracy",
    "channel_validation_accuracy",
    "mixed_validation_accuracy",
)


def run_facts(run_dir):
    """What an export carries from its run directory: ``{"ngram": ..., "warnings": [...]}``.

    ``ngram``: :data:`NGRAM_FACTS` of the run's n-gram record (absent for a
    model without the channel, or a joint fit without a mix); ``warnings``:
    :func:`model_warnings` of those and of ``metrics.json["warnings"]``. A
    run directory without ``metrics.json`` (an interrupted run) gives what
    ``ngram_channel.json`` holds. The facts are advisory: a file that
    cannot be read gives none (``hatt export`` reports a damaged
    ``metrics.json`` itself).
    """
    run_dir = Path(run_dir)
    metrics = _advisory_json(run_dir / "metrics.json")
    info = metrics.get("ngram_channel")
    if info is None:
        info = _advisory_json(run_dir / "ngram_channel.json")
    ngram = {k: info[k] for k in NGRAM_FACTS if k in info} if isinstance(info, dict) else {}
    recorded = metrics.get("warnings") or []
    facts = {"ngram": ngram} if ngram else {}
    class_names = metrics.get("class_names")
    facts["warnings"] = model_warnings(ngram, recorded, class_names)
    return facts


def _advisory_json(path):
    """The JSON object at ``path``, or ``{}`` when it is absent or cannot be read."""
    try:
        return _read_json(path) if Path(path).is_file() else {}
    except ExportError:
        return {}


def _facts_beside(keras_file):
    """The recorded facts of a ``.keras`` file's folder: an export's or a run directory's."""
    folder = Path(keras_file).parent
    if (folder / EXPORT_FILE).is_file():
        return _advisory_json(folder / EXPORT_FILE)
    return run_facts(folder)


def _mix_weights(deep):
    """The deep part's own weight in the mix: the number, or ``A``'s diagonal (a class each)."""
    weights = np.asarray(deep, dtype=np.float64)
    return np.diag(weights) if weights.ndim == 2 else weights.reshape(-1)


def model_warnings(ngram=None, recorded=(), class_names=None):
    """Why a model's parts should not be read at face value: a list of sentences.

    - the deep part has a negative weight in the validation mix (two
      classes: ``a < 0`` in ``a·deep + b·channel + c``; more: a negative
      diagonal entry of ``A`` in ``deep @ A + channel @ B + c``): where the
      deep network's words argue for a class, the model counts them
      against it, so the deep part's own scores point backwards;
    - the deep part alone scores below the n-gram channel alone on the
      validation split;
    - then every sentence of ``recorded`` (a run's
      ``metrics.json["warnings"]``) not already said.

    Args:
        ngram: The run's n-gram facts (:data:`NGRAM_FACTS`), or ``None``.
        recorded: Warnings the run wrote (list of str).
        class_names: The model's classes, to name them (optional).

    Returns:
        A list of str, empty for a model with nothing to warn about.
    """
    ngram = ngram if isinstance(ngram, dict) else {}
    found = []
    mix = ngram.get("mix") if isinstance(ngram.get("mix"), dict) else {}
    if mix.get("deep") is not None:
        weights = _mix_weights(mix["deep"])
        if np.any(weights < 0):
            found.append(_negative_weight_warning(mix, weights, class_names))
    deep, channel = (ngram.get(f"{p}_validation_accuracy") for p in ("deep", "channel"))
    if isinstance(deep, int | float) and isinstance(channel, int | float) and deep < channel:
        found.append(
            f"The deep part alone scores below the n-gram channel alone on the validation "
            f"split (accuracy {deep:.4f} against {channel:.4f}): the channel carries this "
            "model. Its deep part's own scores (gradient × input, integrated gradients) "
            "leave the channel out; the total view holds both."
        )
    found.extend(w for w in dict.fromkeys(recorded or ()) if isinstance(w, str) and w not in found)
    return found


def _negative_weight_warning(mix, weights, class_names):
    if weights.size == 1:
        channel = np.asarray(mix.get("channel", np.nan), dtype=np.float64).reshape(-1)[0]
        where = f"{weights[0]:.3f}·deep + {channel:.3f}·channel"
    else:
        names = list(class_names or range(len(weights)))
        negative = [
            str(names[c]) if c < len(names) else str(c) for c in np.flatnonzero(weights < 0)
        ]
        where = f"for the class(es) {', '.join(negative)}"
    return (
        f"The deep part has a negative weight in this model's mix ({where}, fit on the "
        "validation split): the model counts what the deep network learned backwards, so "
        "the deep part's own scores (gradient × input, integrated gradients) colour a word "
        "that the network reads for a class as against it. Read the total view (the "
        "default): the deep part's and the n-gram channel's shares together, which sum to "
        "the prediction."
    )


# === Loading ==========================================================================


def _text_model_from_keras(path, family=None):
    path = Path(path)
    try:
        # compile=False: what is exported or served never trains, and a run's optimizer
        # state (Adam's two moments a weight) would triple the export's model.keras.
        loaded = keras.saving.load_model(path, compile=False)
    except Exception as error:  # noqa: BLE001  (zip, h5, JSON and Keras errors alike)
        raise ExportError(
            f"Could not load the Keras model {str(path)!r} (corrupted or not a .keras file?): "
            f"{type(error).__name__}: {str(error)[:300]}"
        ) from error
    if isinstance(loaded, TextModel):
        return loaded
    vectorizer_path = path.parent / "vectorizer.json"
    if not vectorizer_path.is_file():
        raise ExportError(
            f"{str(path)!r} holds an id model without text preprocessing, and there is no "
            f"vectorizer.json beside it ({str(vectorizer_path)!r})."
        )
    try:
        vectorizer = Vectorizer.load(vectorizer_path)
    except ValueError as error:
        raise ExportError(str(error)) from error
    if family is None and (path.parent / "config.json").is_file():
        family = _read_json(path.parent / "config.json").get("model")
    try:
        return TextModel(
            loaded, vectorizer, family=family, class_names=read_class_names(path.parent)
        )
    except ValueError as error:
        raise ExportError(f"{str(path)!r}: {error}") from error


def _as_text_batch(texts):
    if isinstance(texts, str | bytes):
        raise ValueError(
            "Expected a list of reviews, not a single string. "
            f"Received: texts={texts[:60]!r}. Wrap it in a list."
        )
    if isinstance(texts, tf.Tensor):
        return texts
    texts = [t if isinstance(t, bytes) else str(t) for t in texts]
    return tf.constant(texts, dtype=tf.string, shape=[len(texts)])


def check_batch_size(batch_size):
    """`batch_size` as an int; `ValueError` unless it is a positive int (bools refused)."""
    if (
        isinstance(batch_size, bool)
        or not isinstance(batch_size, int | np.integer)
        or batch_size < 1
    ):
        raise ValueError(f"Expected batch_size to be a positive int. Received: {batch_size!r}")
    return int(batch_size)


def _pad_to(array, shape, value):
    pads = [(0, target - size) for size, target in zip(array.shape, shape, strict=True)]
    return np.pad(array, pads, constant_values=value) if any(p for _, p in pads) else array


def _decode_tokens(out):
    """``tokens`` (bytes) → ``str`` objects, in place; returns ``out``."""
    tokens = out["tokens"]
    out["tokens"] = np.array(
        [b.decode("utf-8", "replace") for b in tokens.reshape(-1)], dtype=object
    ).reshape(tokens.shape)
    return out


def _concatenate(parts):
    """Concatenate per-batch outputs along the batch, padding the other axes."""
    out = {}
    for key in parts[0]:
        arrays = [p[key] for p in parts]
        shape = [max(a.shape[i] for a in arrays) for i in range(1, arrays[0].ndim)]
        value = b"" if key == "tokens" else 0.0
        out[key] = np.concatenate([_pad_to(a, (a.shape[0], *shape), value) for a in arrays])
    return out


PREDICTION_KEYS = ("probabilities", "label", "probability")  # the `predict` signature's


class Predictor:
    """A loaded hatt model: raw review text → class probabilities, label, tokens, attention.

    Returned by :func:`load`. ``family`` (``"cnn"``, ``"rnn"``,
    ``"transformer"``, ``"han"``), ``score_kind`` (``"attention"``, or
    ``"saliency"`` for the CNN), ``class_names`` (tuple of str, in the order
    of ``probabilities``), ``source`` (the path loaded), ``kind``
    (``"saved_model"`` or ``"keras"``), ``version`` (SavedModel version or
    ``None``), ``metadata`` (the export's JSON facts, if any).

    Two ways to run it: calling it gives the prediction with tokens and
    word (and sentence) scores; :meth:`predict` gives the prediction alone,
    computing nothing else (the SavedModel's ``predict`` signature).
    """

    # A Keras model runs eagerly for its first batches (no tracing cost, fine for a
    # few reviews) and is traced into a graph once it has this many batches to run
    # in all (a tiny HAN: 6 s to trace, then ~100x faster a batch than eagerly).
    GRAPH_FROM_BATCHES = 4

    def __init__(
        self,
        run,
        *,
        family,
        score_kind,
        source,
        kind,
        version=None,
        metadata=None,
        text_model=None,
        class_names=None,
        predict=None,
        explain=None,
        methods=(),
    ):
        self._functions = {"serve": run, "predict": predict or run, "explain": explain}
        self._graphs = {}
        self._text_model = text_model
        self._batches = 0
        self.family = family
        self.score_kind = score_kind
        self.class_names = tuple(class_names or BINARY_CLASS_NAMES)
        self.source = Path(source)
        self.kind = kind
        self.version = version
        self.metadata = metadata or {}
        # An export written before the total view gets it from its parts (see explain).
        self.methods = attribution.with_total_method(methods) if explain is not None else ()

    @property
    def num_classes(self):
        return len(self.class_names)

    @property
    def warnings(self):
        """Reasons not to read this model's parts at face value (list of str, often empty).

        From what its run recorded (``metadata``: an export's JSON, or a run
        directory's ``metrics.json``): see :func:`model_warnings`.
        """
        return model_warnings(
            self.metadata.get("ngram"), self.metadata.get("warnings", ()), self.class_names
        )

    def __repr__(self):
        version = f", version={self.version}" if self.version is not None else ""
        return (
            f"Predictor(family={self.family!r}, score_kind={self.score_kind!r}, "
            f"classes={list(self.class_names)!r}, kind={self.kind!r}{version}, "
            f"source={str(self.source)!r})"
        )

    def __call__(self, texts, batch_size=None):
        """Run the model on ``texts`` (list of str), with its explanation.

        Args:
            texts: list of raw reviews.
            batch_size: reviews per call; `None` runs them all at once.
                Batches are padded to a common width when joined ("" / 0).

        Returns:
            A dict of NumPy arrays: ``probabilities`` ``[N, C]`` (float32),
            ``label`` ``[N]`` (the predicted class's name, ``str``),
            ``probability`` ``[N]`` (two-class models: of class 1),
            ``tokens`` (``str`` objects, ``""`` on padding),
            ``word_attention`` and, for the HAN, ``sentence_attention``.
        """
        return _decode_tokens(self._run_batches("serve", texts, batch_size))

    def explain(self, texts, batch_size=None):
        """Every method's word scores and the logit's decomposition (:meth:`TextModel.explain`).

        Each review is explained for its predicted class, at the export's
        steps (``metadata["explain_steps"]``; a Keras model:
        :data:`hatt.attribution.DEFAULT_STEPS`).

        Args:
            texts: list of raw reviews.
            batch_size: reviews per call; `None` runs them all at once.
                Batches are padded to a common width when joined ("" / 0).

        Returns:
            A dict of NumPy arrays, the keys of the ``explain`` signature
            (see the module docstring), ``tokens`` and ``label`` as ``str``.
            An export written before the ``total`` view gets ``total``,
            ``logit_baseline`` (and the HAN's ``sentence_total``) from its
            parts (:func:`hatt.attribution.with_total`).

        Raises:
            ExportError: a SavedModel exported before the ``explain``
                signature existed.
        """
        if self._functions["explain"] is None:
            raise ExportError(
                f"{str(self.source)!r} has no `explain` signature: it was exported by an older "
                "hatt. Re-export it with `hatt export RUN_DIR`, or load the run directory."
            )
        out = _decode_tokens(self._run_batches("explain", texts, batch_size))
        return attribution.with_total(out)

    def predict(self, texts, batch_size=None):
        """The prediction alone: ``probabilities``, ``label`` [, ``probability``].

        As :meth:`__call__` without tokens and scores, which are not computed
        (the fast path a server's ``:predict`` uses).
        """
        out = self._run_batches("predict", texts, batch_size)
        # A model without a `predict` function (exports before 0.3) ran everything.
        return {key: out[key] for key in PREDICTION_KEYS if key in out}

    def predict_proba(self, texts, batch_size=64):
        """Class probabilities: ``[N]`` of class 1 for two classes, ``[N, C]`` above."""
        out = self.predict(texts, check_batch_size(batch_size))
        return out["probability"] if self.num_classes == 2 else out["probabilities"]

    def _run_batches(self, name, texts, batch_size):
        batch = _as_text_batch(texts)
        total = int(batch.shape[0])
        size = check_batch_size(batch_size) if batch_size is not None else max(total, 1)
        run = self._runner(name, -(-total // size))
        parts = []
        for start in range(0, total, size):
            result = run(batch[start : start + size])
            parts.append({k: np.asarray(v) for k, v in result.items()})
        if not parts:  # no texts: the empty shapes of a one-text call
            result = self._functions[name](tf.constant([""]))
            parts = [{k: np.asarray(v)[:0] for k, v in result.items()}]
        out = parts[0] if len(parts) == 1 else _concatenate(parts)
        return self._with_prediction(out)

    def _with_prediction(self, out):
        """Decode ``label``; exports written before 0.3 return ``probability`` only."""
        if "probabilities" not in out:
            positive = out["probability"].astype(np.float32)
            out["probabilities"] = np.stack([1.0 - positive, positive], axis=-1)
            out["label"] = np.array(self.class_names, dtype=object)[
                np.argmax(out["probabilities"], axis=-1)
            ]
        else:
            out["label"] = np.array(
                [
                    b.decode("utf-8", "replace") if isinstance(b, bytes) else str(b)
                    for b in out["label"]
                ],
                dtype=object,
            )
        return out

    def _runner(self, name, batches):
        self._batches += batches
        function = self._functions[name]
        if self.kind != "keras" or self._batches < self.GRAPH_FROM_BATCHES:
            return function
        if name not in self._graphs:
            self._graphs[name] = tf.function(
                function, input_signature=[tf.TensorSpec([None], tf.string)], autograph=False
            )
        return self._graphs[name]

    @classmethod
    def from_text_model(cls, text_model, source=None, metadata=None):
        """A :class:`Predictor` over an in-memory :class:`TextModel` (``kind="keras"``).

        ``metadata``: what its run or export recorded (see :attr:`warnings`).
        """

        def run(batch):
            return text_model(batch)

        def explain(batch):
            return text_model.explain(batch)

        return cls(
            run,
            predict=text_model.classify,
            explain=explain,
            methods=text_model.methods,
            family=text_model.family,
            score_kind=text_model.score_kind,
            class_names=text_model.class_names,
            source=source or ".",
            kind="keras",
            text_model=text_model,
            metadata=metadata,
        )

    # --- ids (the deletion test): Keras models only -----------------------------------

    @property
    def text_model(self):
        """The :class:`TextModel` behind this Predictor.

        Raises:
            ExportError: the Predictor serves a SavedModel, whose signature
                takes raw text only.
        """
        if self._text_model is None:
            raise ExportError(
                f"{str(self.source)!r} is a SavedModel: its signature takes raw text only, so "
                "ids-level calls (ragged_ids, explain_from_ids, probabilities_from_ids; the "
                "deletion test) need the Keras model. Load saved_models/NAME/model.keras or "
                "the run directory instead."
            )
        return self._text_model

    def ragged_ids(self, texts):
        """Raw reviews → the ragged ids the model sees (:meth:`TextModel.ragged_ids`)."""
        return self.text_model.ragged_ids(_as_text_batch(texts))

    def probabilities_from_ids(self, ragged, batch_size=64):
        """Ragged ids → class probabilities, ``[N, C]`` float32."""
        size = check_batch_size(batch_size)
        out = [
            self.text_model.probabilities_from_ids(ragged[s : s + size])
            for s in range(0, int(ragged.nrows()), size)
        ]
        return np.concatenate(out) if out else np.zeros([0, self.num_classes], np.float32)


def _load_saved_model(path):
    path = Path(path)
    try:
        loaded = tf.saved_model.load(str(path))
        signature = loaded.signatures["serving_default"]
    except Exception as error:  # noqa: BLE001  (protobuf, checkpoint and TF errors alike)
        raise ExportError(
            f"Could not load the SavedModel {str(path)!r} (corrupted or incomplete?): "
            f"{type(error).__name__}: {str(error).strip().splitlines()[0][:300]}"
        ) from error
    inputs = signature.structured_input_signature[1]
    outputs = signature.structured_outputs
    if "text" not in inputs or not {"probabilities", "probability"} & set(outputs):
        raise ExportError(
            f"{str(path)!r} is a SavedModel but not a hatt export: its serving_default "
            f"signature takes {sorted(inputs)} and returns {sorted(outputs)}."
        )
    facts = _read_json(path / VERSION_METADATA) if (path / VERSION_METADATA).is_file() else {}
    version = facts.get("version", int(path.name) if path.name.isdigit() else None)

    # Both hold `loaded`: its variables live as long as the Predictor.
    def run(batch):
        return loaded.signatures["serving_default"](text=batch)

    def predict(batch):  # exports before 0.3 have serving_default only
        return loaded.signatures["predict"](text=batch)

    def explain(batch):  # nor had those before the explain signature
        return loaded.signatures["explain"](text=batch)

    return Predictor(
        run,
        predict=predict if "predict" in loaded.signatures else None,
        explain=explain if "explain" in loaded.signatures else None,
        methods=facts.get("methods", ()),
        family=facts.get("family"),
        score_kind=facts.get("score_kind"),
        class_names=facts.get("class_names"),
        source=path,
        kind="saved_model",
        version=version,
        metadata=facts,
    )


def load(path):
    """Load a hatt model for prediction and explanation from any place hatt writes one.

    THE loader: ``hatt predict``, ``hatt inspect``, :func:`hatt.inspect.explain`
    and the deletion test all go through it.

    Args:
        path: One of

            - a SavedModel folder (``saved_models/NAME/3``);
            - a ``saved_models/NAME`` folder: its highest complete version
              (a numeric folder with a ``saved_model.pb``), whatever
              ``export.json`` says (each version carries its own facts in
              ``assets.extra/hatt_export.json``);
            - a ``.keras`` file: an end-to-end :class:`TextModel` (as in
              ``saved_models/NAME/model.keras``), or an id model with
              ``vectorizer.json`` beside it (as in a run directory);
            - a run directory of ``hatt train`` (``model.keras``,
              ``vectorizer.json``, ``config.json``).

    Returns:
        A :class:`Predictor` (``kind="saved_model"`` for the first two,
        ``"keras"`` for the others, which also serve the ids-level calls of
        the deletion test).

    Raises:
        ExportError: the path is missing, holds no model, or the model or
            its ``vectorizer.json`` is corrupted (the message names the
            path).

    Example:

    >>> model = hatt.export.load("saved_models/han")
    >>> out = model(["A wonderful film. I loved it!"])
    >>> out["probability"], out["tokens"], out["word_attention"], out["sentence_attention"]
    """
    path = Path(path)
    if not path.exists():
        raise ExportError(
            f"No model at {str(path)!r}: expected a SavedModel folder, a saved_models/NAME "
            "folder, a .keras file or a hatt run directory."
        )
    if path.is_file():
        if path.suffix != ".keras":
            raise ExportError(
                f"Expected a .keras file or a model folder. Received the file {str(path)!r}."
            )
        return Predictor.from_text_model(_text_model_from_keras(path), path, _facts_beside(path))
    if (path / "saved_model.pb").is_file():
        return _load_saved_model(path)
    versions = _versions(path)
    if versions:
        return _load_saved_model(path / str(versions[-1]))
    if (path / "model.keras").is_file():
        return Predictor.from_text_model(load_run(path), path, run_facts(path))
    raise ExportError(
        f"{str(path)!r} holds no hatt model: no SavedModel (saved_model.pb), no numeric "
        "version folder (1/, 2/, ...) with one, and no run directory files "
        "(config.json, model.keras, vectorizer.json). Export one with `hatt export RUN_DIR`."
    )


def as_predictor(model, vectorizer=None):
    """A :class:`Predictor` for whatever names a model: THE way in for ``hatt.inspect``.

    Args:
        model: A :class:`Predictor` (returned as is), a :class:`TextModel`,
            an in-memory id ``keras.Model`` from :func:`hatt.models.build`
            (with ``vectorizer``), or a path for :func:`load`.
        vectorizer: The adapted :class:`hatt.data.Vectorizer` of an id
            ``keras.Model``; ignored otherwise.

    Returns:
        A :class:`Predictor`.

    Example:

    >>> predictor = hatt.export.as_predictor(model, vectorizer)
    >>> predictor(["A fine film."])["word_attention"]
    """
    if isinstance(model, Predictor):
        return model
    if isinstance(model, TextModel):
        return Predictor.from_text_model(model)
    if isinstance(model, keras.Model):
        if vectorizer is None:
            raise ValueError(
                "Expected vectorizer= (a hatt.data.Vectorizer) with an in-memory keras.Model. "
                f"Received: model={model.name!r}, vectorizer=None"
            )
        return Predictor.from_text_model(TextModel(model, vectorizer))
    if isinstance(model, str | os.PathLike):
        return load(model)
    raise ValueError(
        "Expected model to be a path, a hatt.export.Predictor, a hatt.export.TextModel or a "
        f"keras.Model with vectorizer=. Received: model={model!r}"
    )
