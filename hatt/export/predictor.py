"""The Predictor: one face for a loaded SavedModel and an in-memory TextModel (batches, NumPy out)."""

import collections
from pathlib import Path

import numpy as np
import tensorflow as tf

from hatt.export import attribution
from hatt.export.facts import model_warnings
from hatt.export.layout import ExportError
from hatt.export.text_model import BINARY_CLASS_NAMES


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


MAX_BATCH = 2**20  # documents a model call: past it TensorFlow refuses the int (issue 63)


def check_batch_size(batch_size):
    """`batch_size` as an int; `ValueError` unless it is an int in [1, MAX_BATCH] (bools refused)."""
    if (
        isinstance(batch_size, bool)
        or not isinstance(batch_size, int | np.integer)
        or not 1 <= batch_size <= MAX_BATCH
    ):
        raise ValueError(
            f"Expected batch_size to be a positive int at most {MAX_BATCH:,}. "
            f"Received: {batch_size!r}"
        )
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


def probability_of(class_names):
    """The class whose probability a two-class model's ``probability`` output is: the
    second (its sigmoid head's class 1); ``None`` for more classes (no such output).

    Every output a user reads that shows ``probability`` names it beside it as
    ``probability_of`` (``hatt predict``'s lines, the server's answers; issue 64: a line
    ``"label": "happy", "probability": 0.45`` read as happy's 45 %).
    """
    names = tuple(class_names)
    return names[1] if len(names) == 2 else None


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

    # A Keras model runs each function (serve, predict, explain) eagerly for its first
    # batches (no tracing cost, fine for a few reviews) and traces it into a graph once
    # that function has this many batches to run in all (a tiny HAN: 6 s to trace, then
    # ~100x faster a batch than eagerly). Counted by function: one review explained after
    # a large predict runs eagerly (a tiny HAN: about 4 s, against 28 s to trace it).
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
        self._batches = collections.Counter()  # batches run (or asked for), by function
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
    def probability_of(self):
        """The class ``probability`` is of (:func:`probability_of`): the second of two."""
        return probability_of(self.class_names)

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
        :data:`hatt.export.attribution.DEFAULT_STEPS`).

        Args:
            texts: list of raw reviews.
            batch_size: reviews per call; `None` runs them all at once.
                Batches are padded to a common width when joined ("" / 0).

        Returns:
            A dict of NumPy arrays, the keys of the ``explain`` signature
            (see the module docstring), ``tokens`` and ``label`` as ``str``.
            An export written before the ``total`` view gets ``total``,
            ``logit_baseline`` (and the HAN's ``sentence_total``) from its
            parts (:func:`hatt.export.attribution.with_total`).

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

    def use_graphs(self):
        """Run each function of an in-memory model as a graph from its next call on (traced
        then), whatever its batches: what a server wants, whose requests are a few reviews
        each (``hatt serve`` calls it, and traces them in its warm-up). Returns ``self``."""
        for name in self._functions:
            self._batches[name] = max(self._batches[name], self.GRAPH_FROM_BATCHES)
        return self

    def _runner(self, name, batches):
        self._batches[name] += batches
        function = self._functions[name]
        if self.kind != "keras" or self._batches[name] < self.GRAPH_FROM_BATCHES:
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
