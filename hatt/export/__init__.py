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
  it has, in :data:`hatt.export.attribution.METHODS` order; ``()`` for an export
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
  explanations path; the math is :mod:`hatt.export.attribution`);
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
  probability of the second class (IMDB: positive), as before 0.3. The
  signature does not name it; every answer hatt writes for a user (``hatt
  predict``'s lines, the server's JSON) adds ``probability_of``, that class's
  name (:func:`probability_of`).

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
:data:`hatt.export.attribution.METHODS`), at ``explain_steps`` integrated-gradients
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

# The package, one module a concern: text_model (the raw-text model), writer
# (SavedModel versions), loading (THE loader), predictor (batches in, NumPy
# out), facts (what a run recorded), layout (the export folder's files).
from hatt.export.facts import (
    NGRAM_FACTS,
    fingerprints_file,
    model_warnings,
    run_facts,
    seen_in_training,
    training_fingerprints,
)
from hatt.export.layout import (
    EXPORT_FILE,
    EXPORT_ROOT,
    VERSION_FINGERPRINTS,
    VERSION_METADATA,
    ExportError,
    default_model_name,
    export_folder,
)
from hatt.export.loading import (
    as_predictor,
    load,
    load_run,
    load_trained,
    predictor_from_state,
    predictor_state,
    read_class_names,
)
from hatt.export.predictor import (
    MAX_BATCH,
    PREDICTION_KEYS,
    Predictor,
    check_batch_size,
    probability_of,
)
from hatt.export.text_model import (
    BINARY_CLASS_NAMES,
    EXPLAIN_TOTALS,
    TextModel,
    check_class_names,
    default_class_names,
    normalise,
)
from hatt.export.writer import (
    STALE_SECONDS,
    TEMPORARY_PREFIX,
    ExportResult,
    OtherTaskError,
    SameTaskCheck,
    check_same_task,
    disk_full_error,
    export,
    is_disk_full,
    remove_stale_temporaries,
    save_keras,
    save_saved_model,
    write_export,
)

__all__ = [
    "MAX_BATCH",
    "BINARY_CLASS_NAMES",
    "EXPLAIN_TOTALS",
    "EXPORT_FILE",
    "EXPORT_ROOT",
    "NGRAM_FACTS",
    "PREDICTION_KEYS",
    "STALE_SECONDS",
    "TEMPORARY_PREFIX",
    "VERSION_FINGERPRINTS",
    "VERSION_METADATA",
    "ExportError",
    "ExportResult",
    "OtherTaskError",
    "SameTaskCheck",
    "Predictor",
    "TextModel",
    "as_predictor",
    "load_trained",
    "predictor_from_state",
    "predictor_state",
    "check_batch_size",
    "check_class_names",
    "check_same_task",
    "default_model_name",
    "export_folder",
    "fingerprints_file",
    "default_class_names",
    "export",
    "load",
    "load_run",
    "model_warnings",
    "normalise",
    "probability_of",
    "read_class_names",
    "remove_stale_temporaries",
    "run_facts",
    "disk_full_error",
    "is_disk_full",
    "save_keras",
    "save_saved_model",
    "seen_in_training",
    "training_fingerprints",
    "write_export",
]
