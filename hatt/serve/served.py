"""The models a server holds: names, versions, and TF Serving's status and metadata.

A :class:`ServedModel` wraps one loaded :class:`hatt.export.Predictor` under
a name. It runs the model two ways (the two signatures it lists in its
metadata) and explains reviews:

- ``predict`` (the default of ``:predict``): ``probabilities``, ``label``
  and, for two classes, ``probability`` (the response names its class,
  ``probability_of``); no attention or saliency computed
  (``Predictor.predict``, the SavedModel's ``predict`` signature);
- ``serving_default``: every output of the export (also ``tokens``,
  ``word_attention`` and, for the HAN, ``sentence_attention``);
- :meth:`ServedModel.explain`: :func:`hatt.inspect.explain`'s
  explanations, the input of the page's renderer.
"""

import dataclasses
import re
from pathlib import Path

import numpy as np

from hatt import export
from hatt import inspect as hatt_inspect
from hatt.export.layout import is_version_name

PREDICT = "predict"
SERVING_DEFAULT = "serving_default"
SIGNATURES = (PREDICT, SERVING_DEFAULT)
# Two sentences of two words: every axis of every output is at least 2 long.
WARM_UP = ["warm up. warm up."]
NAME_PATTERN = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*")
_DTYPES = {"f": "DT_FLOAT", "i": "DT_INT64", "u": "DT_INT64", "b": "DT_BOOL"}


@dataclasses.dataclass
class ServedModel:
    """A loaded model served under ``name`` (one version, as TF Serving's latest policy).

    Attributes:
        name: The model's name in URLs (``/v1/models/NAME``).
        predictor: The :class:`hatt.export.Predictor` (or an object with its
            interface).
        version: The version served: the SavedModel's, or 1 for a ``.keras``
            file or a run directory.
        class_names: The class names (index = class id).
        signatures: ``{signature name: {"inputs": ..., "outputs": ...}}`` in
            TF Serving's ``SignatureDef`` JSON (made by running the model
            once on a short review).
    """

    name: str
    predictor: object
    version: int
    class_names: tuple
    signatures: dict

    @property
    def family(self):
        return self.predictor.family

    @property
    def score_kind(self):
        return self.predictor.score_kind

    @property
    def methods(self):
        """The explanation methods ``:explain`` offers (:data:`hatt.export.attribution.METHODS`
        the model has; an older export without an ``explain`` signature only its
        ``score_kind``)."""
        return tuple(self.predictor.methods) or (self.score_kind,)

    def run(self, signature, texts):
        """The outputs of ``signature`` (:data:`SIGNATURES`) for ``texts``: NumPy arrays."""
        if signature == PREDICT:
            return self.predictor.predict(list(texts))  # the fast path: no scores computed
        return self.predictor(list(texts))

    def explain(self, texts):
        """One :class:`hatt.inspect.Explanation` per text."""
        texts = list(texts)
        return hatt_inspect.explain(
            self.predictor, texts, batch_size=max(len(texts), 1), progress=False
        )

    def status(self):
        """TF Serving's ``GetModelStatusResponse`` as JSON."""
        return {
            "model_version_status": [
                {
                    "version": str(self.version),
                    "state": "AVAILABLE",
                    "status": {"error_code": "OK", "error_message": ""},
                }
            ]
        }

    def metadata(self):
        """TF Serving's ``GetModelMetadataResponse`` as JSON, plus hatt's facts."""
        return {
            "model_spec": {"name": self.name, "signature_name": "", "version": str(self.version)},
            "metadata": {
                "signature_def": {"signature_def": self.signatures},
                "hatt": self.describe(),
            },
        }

    def describe(self):
        """What the page shows about the model (JSON)."""
        return {
            "name": self.name,
            "version": self.version,
            "family": self.family,
            "score_kind": self.score_kind,
            "methods": list(self.methods),
            "class_names": list(self.class_names),
            "corpus": self.corpus,
        }

    @property
    def corpus(self):
        """The name of the model's training documents (its run's data source: the file or
        folder's own name, never its path on the training machine, issue 63), or None."""
        metrics = getattr(self.predictor, "metadata", {}).get("metrics") or {}
        source = str(metrics.get("data_source") or "").replace("\\", "/").rstrip("/")
        return source.rsplit("/", 1)[-1] or None


def _tensor_info(name, array, fixed=None):
    array = np.asarray(array)
    dims = [-1] * array.ndim
    if fixed is not None:
        dims[-1] = fixed
    return {
        "dtype": _DTYPES.get(array.dtype.kind, "DT_STRING"),
        "tensor_shape": {
            "dim": [{"size": str(d), "name": ""} for d in dims],
            "unknown_rank": False,
        },
        "name": name,
    }


def signature_def(signature, outputs, class_count):
    """A TF Serving ``SignatureDef`` (JSON) for ``outputs``, a dict of example arrays."""
    return {
        "inputs": {"text": _tensor_info(f"{signature}_text:0", np.array([""], dtype=object))},
        "outputs": {
            key: _tensor_info(key, value, class_count if key == "probabilities" else None)
            for key, value in sorted(outputs.items())
        },
        "method_name": "tensorflow/serving/predict",
    }


def served_model(name, predictor):
    """Wrap ``predictor`` as a :class:`ServedModel` named ``name``; runs it once (warm-up).

    The warm-up call also describes the signatures from what the model
    really returns.
    """
    if not isinstance(name, str) or not NAME_PATTERN.fullmatch(name):
        raise ValueError(
            "Expected a model name of letters, digits, '.', '_' and '-' (not starting "
            f"with '.', '_' or '-'). Received: name={name!r}"
        )
    if isinstance(predictor, export.Predictor):
        predictor.use_graphs()  # the warm-up traces every function, not the first requests
    names = tuple(predictor.class_names)
    model = ServedModel(name, predictor, predictor.version or 1, names, {})
    model.signatures = {
        signature: signature_def(signature, model.run(signature, WARM_UP), len(names))
        for signature in SIGNATURES
    }
    return model


def model_name(path):
    """The name a model folder or file is served under.

    ``saved_models/cnn`` → ``cnn``; a version folder ``saved_models/cnn/3``
    → ``cnn``; ``runs/han-20260101/model.keras`` → ``han-20260101`` (a
    file named ``model.keras`` takes its folder's name); ``other.keras`` →
    ``other``.
    """
    path = Path(path).resolve()
    if path.suffix == ".keras":
        return path.parent.name if path.stem == "model" else path.stem
    if is_version_name(path.name) and (path / "saved_model.pb").is_file():
        return path.parent.name
    return path.name


def parse_spec(spec):
    """``"NAME=PATH"`` or ``"PATH"`` → ``(name, path)`` (the name from :func:`model_name`)."""
    name, sep, path = spec.partition("=")
    if sep and NAME_PATTERN.fullmatch(name) and path:
        return name, path
    return model_name(spec), spec


def load_models(specs, loader=export.load):
    """Load and warm up each model of ``specs`` (``PATH`` or ``NAME=PATH``).

    Args:
        specs: Model paths as ``hatt.export.load`` takes them, each
            optionally prefixed with ``NAME=``.
        loader: The loading function (tests pass their own).

    Returns:
        ``{name: ServedModel}`` in the order given.

    Raises:
        ValueError: no model, two models with one name (the message says to
            use ``NAME=PATH``), a name that cannot be used in a URL, or a
            model that cannot be loaded (``hatt.export.ExportError``).
    """
    specs = list(specs)
    if not specs:
        raise ValueError("Expected at least one model to serve. Received: models=[]")
    named = [parse_spec(spec) for spec in specs]
    seen = {}
    for name, path in named:
        if name in seen:
            raise ValueError(
                f"Expected distinct model names. Received: {seen[name]!r} and {path!r} are both "
                f"named {name!r}; name them with NAME=PATH."
            )
        seen[name] = path
    return {name: served_model(name, loader(path)) for name, path in named}
