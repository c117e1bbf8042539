"""TF Serving's REST dialect: URLs, request bodies and response bodies, without a server.

Everything here is plain functions on parsed JSON and NumPy arrays, so the
rules are tested without HTTP; :mod:`hatt.serve.app` wires them to routes.

Requests (``POST /v1/models/NAME[/versions/N]:predict`` and ``:explain``):

- row format: ``{"instances": ["a review", {"text": "another"}]}``;
- columnar format: ``{"inputs": {"text": ["a review", ...]}}`` or
  ``{"inputs": ["a review", ...]}``;
- optional ``"signature_name"`` (``:predict``: ``"predict"``, the default,
  or ``"serving_default"``) and ``"method"`` (``:explain``).

Errors are :class:`ApiError` (an HTTP status and a message); the app
answers them as TF Serving does, ``{"error": "..."}``.
"""

import json
import re

import numpy as np

from hatt.export.predictor import probability_of
from hatt.serve.served import PREDICT, SIGNATURES

VERSION = re.compile(r"[0-9]{1,18}")
# /v1/models/NAME[/versions/N][/metadata | :VERB]
ROUTE = re.compile(
    r"(?P<name>[^/:]+)(?:/versions/(?P<version>[^/:]+))?"
    r"(?:(?P<metadata>/metadata)|:(?P<verb>[A-Za-z]+))?/?"
)
VERBS = ("predict", "explain")
TOKEN_SHAPED = ("tokens", "word_attention")  # [T] (flat) or [S, W] (HAN) per review
SENTENCE_SHAPED = ("sentence_attention",)  # [S] per review (HAN)


class ApiError(Exception):
    """A request the server answers with ``status`` and ``{"error": message}``."""

    def __init__(self, status, message, retry_after=None):
        super().__init__(message)
        self.status = status
        self.message = message
        self.retry_after = retry_after  # seconds, for 503s: the Retry-After header


# === URLs ============================================================================


def parse_route(rest):
    """``NAME[/versions/N][/metadata|:VERB]`` → ``(name, version or None, action)``.

    ``action`` is ``"status"``, ``"metadata"``, ``"predict"`` or ``"explain"``.

    Raises:
        ApiError: 404 for a path that is not one of these; 400 for a version
            that is not a non-negative integer.
    """
    match = ROUTE.fullmatch(rest)
    if match is None:
        raise ApiError(404, f"Malformed request: no such path /v1/models/{rest}")
    version = match["version"]
    if version is not None:
        # ASCII digits only ("²".isdigit() is true), and at most 18 of them: int() refuses
        # strings past 4,300 digits, and no version number is that long.
        if not VERSION.fullmatch(version):
            shown = version if len(version) <= 40 else f"{version[:40]}... ({len(version)} chars)"
            raise ApiError(
                400,
                "Expected the version to be a non-negative integer of at most 18 digits. "
                f"Received: {shown!r}",
            )
        version = int(version)
    verb = match["verb"]
    if verb is not None and verb not in VERBS:
        raise ApiError(
            404, f"Malformed request: unknown verb :{verb} (this server has :predict, :explain)"
        )
    action = "metadata" if match["metadata"] else verb or "status"
    return match["name"], version, action


def servable_not_found(name, version):
    """TF Serving's 404 message for a model or version it does not hold."""
    spec = f"Latest({name})" if version is None else f"Specific({name}, {version})"
    return ApiError(404, f"Servable not found for request: {spec}")


# === Request bodies ====================================================================


def parse_json(body):
    """The request body (bytes) → a JSON object; :class:`ApiError` 400 otherwise."""
    try:
        value = json.loads(body)
    except UnicodeDecodeError as error:
        raise ApiError(400, f"Malformed JSON body: not UTF-8 ({error.reason})") from None
    except ValueError as error:
        if "digits" in str(error):  # Python's int-size guard, in its own words
            raise ApiError(400, "Malformed JSON body: a number of over 4,300 digits") from None
        raise ApiError(400, f"Malformed JSON body: {error}") from None
    except RecursionError:
        raise ApiError(400, "Malformed JSON body: nested too deeply") from None
    if not isinstance(value, dict):
        raise ApiError(
            400,
            "Expected the body to be a JSON object (see docs/serving.md for its fields). "
            f"Received: {JSON_KINDS.get(type(value), type(value).__name__)}",
        )
    return value


JSON_KINDS = {list: "a JSON array", str: "a JSON string", int: "a JSON number"}
JSON_KINDS.update({float: "a JSON number", bool: "a JSON boolean", type(None): "JSON null"})


def check_unicode(value, field):
    """``value`` if it encodes as UTF-8 (JSON lets a lone surrogate such as ``"\\ud800"`` in)."""
    try:
        value.encode("utf-8")
    except UnicodeEncodeError as error:
        raise ApiError(
            400,
            f"Expected {field} to be valid Unicode text. Received: a lone surrogate "
            f"{value[error.start]!r} at character {error.start} of {field}",
        ) from None
    return value


def _text(value, field):
    if isinstance(value, str):
        return check_unicode(value, field)
    if isinstance(value, dict) and set(value) == {"text"} and isinstance(value["text"], str):
        return check_unicode(value["text"], field)
    shown = json.dumps(value)[:80]
    raise ApiError(
        400,
        f'Expected {field} to be a string or an object {{"text": string}}. Received: '
        f"{field}={shown}",
    )


def parse_texts(body, max_texts, verb="request"):
    """The reviews of a request, and whether it used the columnar format.

    Args:
        body: The parsed JSON object.
        max_texts: The most texts one request may hold.
        verb: What the 413's message calls the request (``":explain request"``).

    Returns:
        ``(texts, columnar)``.

    Raises:
        ApiError: 400 naming the field that is missing or of the wrong
            type; 413 for more than ``max_texts`` texts.
    """
    if ("instances" in body) == ("inputs" in body):
        which = "both" if "instances" in body else "neither"
        raise ApiError(
            400,
            "Expected either 'instances' (row format) or 'inputs' (columnar format). "
            f"Received: {which}",
        )
    columnar = "inputs" in body
    field, values = ("inputs", body["inputs"]) if columnar else ("instances", body["instances"])
    if columnar and isinstance(values, dict):
        if set(values) != {"text"}:
            raise ApiError(
                400,
                "Expected inputs to hold exactly one input, 'text'. "
                f"Received: inputs with keys {sorted(values)}",
            )
        field, values = "inputs.text", values["text"]
    if not isinstance(values, list):
        raise ApiError(
            400,
            f"Expected {field} to be a list of reviews. Received: {field} of JSON type "
            f"{type(values).__name__}",
        )
    if len(values) > max_texts:
        raise ApiError(
            413,
            f"Expected at most {max_texts} texts a {verb}. Received: {len(values)} in {field}",
        )
    if columnar:  # a column of strings; row format also takes {"text": ...} objects
        for i, value in enumerate(values):
            if not isinstance(value, str):
                raise ApiError(
                    400,
                    f"Expected {field}[{i}] to be a string. Received: "
                    f"{field}[{i}]={json.dumps(value)[:80]}",
                )
            check_unicode(value, f"{field}[{i}]")
        return list(values), True
    return [_text(value, f"instances[{i}]") for i, value in enumerate(values)], False


def parse_choice(body, field, choices, default):
    """``body[field]`` if it is one of ``choices`` (``default`` when absent); else 400."""
    value = body.get(field, default)
    if value in ("", None):
        value = default
    if value not in choices:
        raise ApiError(
            400, f"Expected {field} to be one of {list(choices)}. Received: {field}={value!r}"
        )
    return value


# The fields each request body may hold: another is refused, never ignored (issue 63:
# ":explain" took {"steps": -1} and {"label": "zzz"} and answered as if they were absent).
FIELDS = {
    "predict": ("instances", "inputs", "signature_name"),
    "explain": ("instances", "inputs", "method"),
    "ui_explain": ("model", "text", "method", "column"),
}


def with_empty_warning(response, texts):
    """``response`` with ``"warnings"`` naming the reviews that hold no text, if any: each is
    answered (the model's answer to nothing) and said so, never silently (issue 63)."""
    empty = [i for i, text in enumerate(texts) if not text.strip()]
    if empty:
        shown = ", ".join(map(str, empty[:5])) + (" ..." if len(empty) > 5 else "")
        response["warnings"] = [
            f"{len(empty)} review(s) hold no text (at {shown}): their answers are the model's "
            "answer to an empty review, not a reading of one"
        ]
    return response


def check_fields(body, kind):
    """400 unless every field of ``body`` is one :data:`FIELDS` lists for ``kind``."""
    unknown = sorted(str(key) for key in body if key not in FIELDS[kind])
    if unknown:
        raise ApiError(
            400,
            f"Unknown field(s) {unknown} in the {kind.replace('_', ' ')} body. Expected only "
            f"{list(FIELDS[kind])}",
        )


def parse_signature(body):
    """The signature ``:predict`` runs: ``"predict"`` (default) or ``"serving_default"``."""
    return parse_choice(body, "signature_name", SIGNATURES, PREDICT)


# === Outputs ===========================================================================


def _extent(tokens):
    """Per axis, how far a review's real tokens reach (at least 1)."""
    real = np.asarray(tokens) != ""
    extent = []
    for axis in range(real.ndim):
        other = tuple(a for a in range(real.ndim) if a != axis)
        used = np.flatnonzero(real.any(axis=other) if other else real)
        extent.append(int(used[-1]) + 1 if used.size else 1)
    return extent


def rows_of(outputs):
    """A batch's outputs → one dict per review, without the batch's padding.

    The model pads ``tokens`` and the scores to the batch's longest review;
    each row is cut back to its own tokens, so a review's answer does not
    depend on the reviews it was batched with.
    """
    outputs = {k: np.asarray(v) for k, v in outputs.items()}
    count = len(next(iter(outputs.values()))) if outputs else 0
    rows = []
    for i in range(count):
        row = {k: np.asarray(v[i]) for k, v in outputs.items()}
        if "tokens" in row:
            extent = _extent(row["tokens"])
            for key in TOKEN_SHAPED:
                if key in row:
                    row[key] = row[key][tuple(slice(0, e) for e in extent)]
            for key in SENTENCE_SHAPED:
                if key in row:
                    row[key] = row[key][: extent[0]]
        rows.append(row)
    return rows


def _pad_stack(arrays):
    if arrays[0].ndim == 0:
        return np.stack(arrays)
    shape = [max(a.shape[i] for a in arrays) for i in range(arrays[0].ndim)]
    value = "" if arrays[0].dtype.kind in "OUS" else 0
    padded = [
        np.pad(a, [(0, t - s) for s, t in zip(a.shape, shape, strict=True)], constant_values=value)
        for a in arrays
    ]
    return np.stack(padded)


def _json_value(value):
    value = np.asarray(value)
    if value.dtype.kind in "OUS":
        return np.vectorize(str, otypes=[object])(value).tolist() if value.size else value.tolist()
    return value.tolist()


def predict_response(rows, columnar, class_names=()):
    """TF Serving's response: ``{"predictions": [...]}`` or ``{"outputs": {...}}``.

    Row format: one object per review (several named outputs). Columnar: one
    list per output, token-shaped outputs padded to the request's longest
    review (``""`` / 0), as TF Serving returns a tensor. A row holding
    ``probability`` (a two-class model of ``class_names``) also holds
    ``probability_of``, the class it is of (the SavedModel's outputs are unchanged).
    """
    rows = [_named(row, class_names) for row in rows]
    if not columnar:
        return {"predictions": [{k: _json_value(v) for k, v in row.items()} for row in rows]}
    if not rows:
        return {"outputs": {}}
    return {"outputs": {k: _json_value(_pad_stack([r[k] for r in rows])) for k in rows[0]}}


def _named(row, class_names):
    """``row`` with ``probability_of`` beside its ``probability`` (two classes)."""
    named = probability_of(class_names)
    if "probability" not in row or named is None:
        return row
    return {**row, "probability_of": np.asarray(named, dtype=object)}


def prediction_of(explanation):
    """``{"label", "probabilities"[, "probability", "probability_of"]}`` of a
    :class:`hatt.inspect.Explanation`."""
    probabilities = [float(p) for p in explanation.probabilities]
    out = {"label": explanation.predicted_label, "probabilities": probabilities}
    if len(probabilities) == 2:
        out["probability"] = probabilities[1]
        out["probability_of"] = explanation.probability_of
    return out


def explanation_json(explanation, method=None):
    """One review's explanation: the tokens the model saw and every method's scores.

    ``word_scores`` / ``sentence_scores`` are ``method``'s (default: the
    model's first method); ``scores`` / ``sentence_scores_by_method`` hold
    every method's, shaped like ``sentences``. Signed methods explain the
    logit of ``explained_label``; ``decomposition`` splits that logit into
    the deep part, the n-gram channel and the bias.
    """
    e = explanation
    method = method if method in e.scores else e.default_method()
    return {
        "method": method,
        "family": e.family,
        "tokens": e.tokens,
        "sentences": e.sentences,
        "word_scores": e.scores[method],
        "sentence_scores": e.sentence_scores[method],
        "methods": list(e.views),
        "scores": e.scores,
        "sentence_scores_by_method": e.sentence_scores,
        "explained_label": e.explained_label,
        "decomposition": e.decomposition,
        "completeness_error": e.completeness_error,
        "omitted_words": e.omitted_words,
        "gap_before": e.gap_before,
        "attention": e.attention,
        "attention_line": e.attention_line(),
    }


def explain_parts(explanations, method=None):
    """Each explanation's ``(prediction, explanation JSON)``: the server makes them per chunk."""
    return [(prediction_of(e), explanation_json(e, method)) for e in explanations]


def explain_response(explanations, method=None, parts=None):
    """KServe V1's explain response: ``{"predictions": [...], "explanations": [...]}``.

    ``parts`` (from :func:`explain_parts`) stands for ``explanations`` made already.
    """
    parts = explain_parts(explanations, method) if parts is None else parts
    return {"predictions": [p for p, _ in parts], "explanations": [e for _, e in parts]}
