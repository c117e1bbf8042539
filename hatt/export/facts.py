"""What a run recorded against reading its parts at face value: the facts and warnings an export carries.

Also which attention a model uses (:func:`attention_facts`), read from its
layers' configs, the one source for a model in memory, a ``.keras`` file and
an export folder's ``model.keras``.
"""

import json
import zipfile
from pathlib import Path

import numpy as np

from hatt import run_dir as run_files
from hatt.data.text import fingerprints
from hatt.export.layout import (
    EXPORT_FILE,
    VERSION_FINGERPRINTS,
    advisory_json,
    version_numbers,
)

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
    metrics = advisory_json(run_dir / run_files.METRICS)
    info = metrics.get("ngram_channel")
    if info is None:
        info = advisory_json(run_dir / run_files.NGRAM_CHANNEL)
    ngram = {k: info[k] for k in NGRAM_FACTS if k in info} if isinstance(info, dict) else {}
    recorded = metrics.get("warnings") or []
    facts = {"ngram": ngram} if ngram else {}
    class_names = metrics.get("class_names")
    facts["warnings"] = model_warnings(ngram, recorded, class_names)
    return facts


def fingerprints_file(source):
    """Where the model loaded from ``source`` (a :class:`Predictor`'s) keeps the fingerprints
    of its training documents, or ``None``: a version's
    :data:`~hatt.export.layout.VERSION_FINGERPRINTS`, a run directory's
    ``training_fingerprints.npy``; for a ``model.keras``, its run directory's or its
    export folder's newest version's (the one it was exported with). A bare ``.keras``
    file elsewhere, an export before them, a prepared corpus's run: none."""
    source = Path(source)
    if source.is_dir():
        candidates = [source / VERSION_FINGERPRINTS, source / run_files.TRAINING_FINGERPRINTS]
    elif source.name == run_files.MODEL:
        folder = source.parent
        candidates = [folder / run_files.TRAINING_FINGERPRINTS]
        if (folder / EXPORT_FILE).is_file() and version_numbers(folder):
            candidates.append(folder / str(version_numbers(folder)[-1]) / VERSION_FINGERPRINTS)
    else:
        candidates = []
    return next((path for path in candidates if path.is_file()), None)


def training_fingerprints(source):
    """The training documents' fingerprints of the model loaded from ``source`` (sorted
    int64, :func:`hatt.data.text.fingerprints`), or ``None`` when it has none
    (:func:`fingerprints_file`) or they cannot be read."""
    path = fingerprints_file(source)
    if path is None:
        return None
    try:
        values = np.load(path, allow_pickle=False)
    except (OSError, ValueError):
        return None
    return values.astype(np.int64).reshape(-1) if values.dtype.kind in "iu" else None


def seen_in_training(trained_on, texts):
    """Which of ``texts`` a model trained on (its train and validation documents), given
    its fingerprints ``trained_on`` (:func:`training_fingerprints`): a boolean array, or
    ``None`` when the model keeps none (``trained_on`` is ``None``)."""
    if trained_on is None:
        return None
    texts = list(texts)
    if not texts:
        return np.zeros(0, dtype=bool)
    return np.isin(fingerprints(texts), trained_on)


def facts_beside(keras_file):
    """The recorded facts of a ``.keras`` file's folder: an export's or a run directory's."""
    folder = Path(keras_file).parent
    if (folder / EXPORT_FILE).is_file():
        return advisory_json(folder / EXPORT_FILE)
    return run_facts(folder)


def _mix_weights(deep):
    """The deep part's own weight in the mix: the number, or ``A``'s diagonal (a class each)."""
    weights = np.asarray(deep, dtype=np.float64)
    return np.diag(weights) if weights.ndim == 2 else weights.reshape(-1)


def model_warnings(ngram=None, recorded=(), class_names=None):
    """Why a model's parts should not be read at face value: a list of sentences.

    :func:`explanation_warnings` (what concerns the deep part's own scores),
    then every sentence of ``recorded`` (a run's ``metrics.json["warnings"]``)
    not already said.

    Args:
        ngram: The run's n-gram facts (:data:`NGRAM_FACTS`), or ``None``.
        recorded: Warnings the run wrote (list of str).
        class_names: The model's classes, to name them (optional).

    Returns:
        A list of str, empty for a model with nothing to warn about.
    """
    found = explanation_warnings(ngram, class_names)
    found.extend(w for w in dict.fromkeys(recorded or ()) if isinstance(w, str) and w not in found)
    return found


def explanation_warnings(ngram=None, class_names=None):
    """The warnings that concern explanations only (the deep part's own scores), which a
    prediction does not need (``hatt predict`` leaves them to ``hatt inspect``, issue 63):

    - the deep part has a negative weight in the validation mix (two
      classes: ``a < 0`` in ``a·deep + b·channel + c``; more: a negative
      diagonal entry of ``A`` in ``deep @ A + channel @ B + c``): where the
      deep network's words argue for a class, the model counts them
      against it, so the deep part's own scores point backwards;
    - the deep part alone scores below the n-gram channel alone on the
      validation split.

    Args: as :func:`model_warnings`'.

    Returns:
        A list of str.
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


# === Which attention a model uses ======================================================

# The options of hatt.layers.ContextAttention that change its weights' shape, and their
# defaults (a config saved before an option existed behaves as its default).
ATTENTION_OPTIONS = {
    "normalizer": "softmax",
    "local_p": False,
    "window": None,
    "hard": None,
    "hard_k": 1,
    "temperature": 1.0,
}


def attention_facts(config):
    """The attention a model uses, from its serialized config.

    Args:
        config: A model's config as Keras serializes it (`model.get_config()`,
            `keras.saving.serialize_keras_object(model)`, or a `.keras`
            file's `config.json`), nested models included.

    Returns:
        `{layer name: {option: value}}` for every `hatt.layers.ContextAttention`
        in it (:data:`ATTENTION_OPTIONS`: `normalizer`, `local_p`, `window`,
        `hard`, `hard_k`), in the config's order; `{}` for a model without
        one (the CNN with max-over-time pooling).

    Example:

    >>> model = hatt.models.build("rnn", vocabulary_size=100, attention_normalizer="sparsemax")
    >>> hatt.export.facts.attention_facts(model.get_config())["word_attention"]["normalizer"]
    'sparsemax'
    """
    found = {}
    stack = [config]
    while stack:
        node = stack.pop()
        if isinstance(node, dict):
            layer = node.get("config")
            if node.get("class_name") == "ContextAttention" and isinstance(layer, dict):
                found.setdefault(
                    str(layer.get("name")),
                    {key: layer.get(key, default) for key, default in ATTENTION_OPTIONS.items()},
                )
                continue
            stack.extend(reversed(list(node.values())))
        elif isinstance(node, list):
            stack.extend(reversed(node))
    return found


def keras_file_attention(path):
    """:func:`attention_facts` of a `.keras` file, read from its `config.json` (no weights
    loaded), or `None` when the file cannot be read."""
    try:
        with zipfile.ZipFile(path) as archive:
            config = json.loads(archive.read("config.json"))
    except (OSError, KeyError, ValueError, zipfile.BadZipFile):
        return None
    return attention_facts(config)


def saved_model_attention(saved_model):
    """The attention of an export's version folder (`saved_models/NAME/VERSION`), or `None`.

    From the export folder's `model.keras`, which is the newest version's:
    `None` for an older version, or an export without it.
    """
    saved_model = Path(saved_model)
    folder = saved_model.parent
    versions = version_numbers(folder)
    if not versions or saved_model.name != str(versions[-1]):
        return None
    if not (folder / run_files.MODEL).is_file():
        return None
    return keras_file_attention(folder / run_files.MODEL)
