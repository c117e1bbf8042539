"""The raw-text model: :class:`TextModel` joins a Vectorizer and an id model (one function, three homes)."""

import json

import keras
import numpy as np
import tensorflow as tf
from keras import ops

from hatt import models, names
from hatt.data.corpus import BINARY_CLASSES
from hatt.data.vectorize import PAD_ID, PAD_TOKEN, Vectorizer, text_batch
from hatt.export import attribution
from hatt.models.wiring import plain_recurrences

# The facts of a run a TextModel carries in its .keras file (hatt.export.model_warnings reads them).
MODEL_FACTS = ("ngram", "warnings")


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

    def __init__(self, model, vectorizer, family=None, class_names=None, facts=None, **kwargs):
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
        self.facts = facts
        # Serialized before the views exist (they add nodes to the model's layers).
        self._model_config = keras.saving.serialize_keras_object(model)
        self._views = models.explanation_view(model)
        self.built = True

    @property
    def facts(self):
        """What the model's run found about its parts (:data:`MODEL_FACTS`: the n-gram
        channel's mix, the run's warnings), carried inside its ``.keras`` file so a
        model saved alone still says why its parts should not be read alone
        (:func:`hatt.export.model_warnings`)."""
        return json.loads(self._facts)

    @facts.setter
    def facts(self, value):
        value = value if isinstance(value, dict) else {}
        kept = {k: value[k] for k in MODEL_FACTS if value.get(k) is not None}
        self._facts = json.dumps(kept, default=float)  # a str: Keras tracks no dict of it

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
        """The explanation methods this model has, in :data:`hatt.export.attribution.METHODS` order.

        ``"attention"`` when its words are pooled by ``ContextAttention``
        (``score_kind == "attention"``), ``"ngram"`` when it has the n-gram
        channel; ``"total"``, ``"gradient_x_input"`` and
        ``"integrated_gradients"`` always.
        """
        return names.model_methods(self.score_kind, self._views.channel is not None)

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
        if not models.family_spec(self.family).xla_predict or self.nested:
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
        :mod:`hatt.export.attribution` for the methods.

        Args:
            texts: list of str or 1-D ``tf.string`` tensor of raw reviews.
            steps: Positive int, integrated gradients' quadrature nodes.
                Defaults to :data:`hatt.export.attribution.DEFAULT_STEPS`.
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
        """Dense ids → the prediction, target, every method's scores and the logit's parts
        (the HAN's word encoder as one batch: :func:`hatt.models.wiring.plain_recurrences`)."""
        with plain_recurrences():
            return self._explanations_of(ids, steps, target)

    def _explanations_of(self, ids, steps, target):
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
        out = np.asarray(self._classifier_graph()(ids), np.float32)
        if self.num_classes == 2:
            out = out.reshape(-1)
            out = np.stack([1.0 - out, out], axis=-1)
        return out

    def _classifier_graph(self):
        """The classifier on dense ids of any batch and length, traced once (the deletion
        test's batches change shape, and ``predict_on_batch`` traced again for each)."""
        graph = self.__dict__.get("_ids_classifier")
        if graph is None:  # kept out of Keras' tracking, as the explanation graphs
            classifier = self.classifier
            graph = tf.function(
                lambda ids: classifier(ids, training=False),
                input_signature=[tf.TensorSpec([None] * (3 if self.nested else 2), tf.int32)],
                autograph=False,
            )
            object.__setattr__(self, "_ids_classifier", graph)
        return graph

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
                "facts": self.facts,
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
