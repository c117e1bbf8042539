"""Loading a model from any place hatt writes one: THE loader (:func:`load`) and :func:`as_predictor`."""

import json
import os
import tempfile
import zipfile
from pathlib import Path

import keras
import tensorflow as tf

from hatt import lock, models
from hatt import run_dir as run_files
from hatt.data.vectorize import Vectorizer
from hatt.export.facts import facts_beside, run_facts
from hatt.export.layout import (
    VERSION_METADATA,
    ExportError,
    is_version_name,
    read_json,
    version_numbers,
)
from hatt.export.predictor import Predictor
from hatt.export.text_model import TextModel


def check_not_training(path):
    """Raise where ``path`` holds no model yet because a live ``hatt train`` holds its lock
    (:mod:`hatt.lock`): who holds it and what to do, rather than "not a hatt run
    directory" (issue 63)."""
    held = lock.holder(path)
    if held is not None:
        raise ExportError(
            f"{str(path)!r} is a run directory still being trained (its lock is held by "
            f"{held}): wait for that run to finish, or stop it, then try again."
        )


def load_run(run_dir):
    """The :class:`TextModel` of a run directory (``model.keras`` + ``vectorizer.json``)."""
    run_dir = Path(run_dir)
    missing = [n for n in (run_files.MODEL, run_files.VECTORIZER) if not (run_dir / n).is_file()]
    if missing:
        check_not_training(run_dir)
        raise ExportError(
            f"{str(run_dir)!r} is not a hatt run directory: it has no {' or '.join(missing)} "
            "(hatt train writes model.keras, vectorizer.json and config.json)."
        )
    family = None
    if (run_dir / run_files.CONFIG).is_file():
        family = read_json(run_dir / run_files.CONFIG).get("model")
    return text_model_from_keras(run_dir / run_files.MODEL, family=family)


def read_class_names(run_dir):
    """The class names a run directory recorded (``classes.json``), or ``None`` (older runs)."""
    path = Path(run_dir) / run_files.CLASSES
    if not path.is_file():
        return None
    names = read_json(path).get("class_names")
    if not isinstance(names, list):
        raise ExportError(f"Expected {str(path)!r} to hold a list under 'class_names'.")
    return names


def text_model_from_keras(path, family=None):
    path = Path(path)
    if path.suffix == ".keras" and path.is_file() and not zipfile.is_zipfile(path):
        raise ExportError(  # Keras says "File not found" of a file it cannot open as a zip
            f"{str(path)!r} is not a complete .keras file: a .keras file is a zip archive, and "
            f"this one ({path.stat().st_size:,} bytes) is truncated or damaged (a save cut "
            "short, a full disk, a partial copy?). Save or export the model again."
        )
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
    vectorizer_path = path.parent / run_files.VECTORIZER
    if not vectorizer_path.is_file():
        raise ExportError(
            f"{str(path)!r} holds an id model without text preprocessing, and there is no "
            f"vectorizer.json beside it ({str(vectorizer_path)!r})."
        )
    try:
        vectorizer = Vectorizer.load(vectorizer_path)
    except ValueError as error:
        raise ExportError(str(error)) from error
    if family is None and (path.parent / run_files.CONFIG).is_file():
        family = read_json(path.parent / run_files.CONFIG).get("model")
    _check_family(path, loaded, family)
    try:
        return TextModel(
            loaded, vectorizer, family=family, class_names=read_class_names(path.parent)
        )
    except ValueError as error:
        raise ExportError(f"{str(path)!r}: {error}") from error


def _check_family(path, model, family):
    """The recorded family (config.json's ``model``) must be the one the weights are."""
    built = models.family_of(model)
    if family is not None and family != built:
        raise ExportError(
            f"{str(path.parent / run_files.CONFIG)!r} says model={family!r} but "
            f'{str(path)!r} holds a {built!r} model. Put back "model": {json.dumps(built)} '
            "in config.json (or retrain): hatt exports what the weights compute, never a "
            "model that silently differs from its record."
        )


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
    facts = read_json(path / VERSION_METADATA) if (path / VERSION_METADATA).is_file() else {}
    version = facts.get("version", int(path.name) if is_version_name(path.name) else None)

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
        text_model = text_model_from_keras(path)  # its own facts, then its folder's
        beside = {k: v for k, v in facts_beside(path).items() if v not in (None, [], {})}
        facts = {**text_model.facts, **beside}
        return Predictor.from_text_model(text_model, path, facts)
    if (path / "saved_model.pb").is_file():
        return _load_saved_model(path)
    versions = version_numbers(path)
    if versions:
        return _load_saved_model(path / str(versions[-1]))
    if (path / run_files.MODEL).is_file():
        return Predictor.from_text_model(load_run(path), path, run_facts(path))
    check_not_training(path)
    raise ExportError(
        f"{str(path)!r} holds no hatt model: no SavedModel (saved_model.pb), no numeric "
        "version folder (1/, 2/, ...) with one, and no run directory files "
        "(config.json, model.keras, vectorizer.json). Export one with `hatt export RUN_DIR`."
    )


def predictor_state(predictor):
    """A Keras-backed predictor as picklable values: its ``.keras`` file's bytes, its
    source and metadata (:func:`predictor_from_state` makes it again).

    Raises:
        ExportError: a SavedModel predictor (its signature is a TensorFlow graph).
    """
    if predictor.kind == "saved_model":
        raise ExportError(
            f"Cannot pickle or copy a model loaded from the SavedModel {str(predictor.source)!r}: "
            "its graph is TensorFlow's, not picklable. Load saved_models/NAME/model.keras (or "
            "the run directory) to pickle, joblib.dump or deepcopy it."
        )
    text_model = predictor.text_model
    with tempfile.TemporaryDirectory(prefix="hatt-state-") as folder:
        path = Path(folder) / run_files.MODEL
        text_model.save(path)
        return path.read_bytes(), str(predictor.source), dict(predictor.metadata)


def predictor_from_state(state):
    """The :class:`Predictor` of :func:`predictor_state`'s values (loaded into memory)."""
    keras_bytes, source, metadata = state
    with tempfile.TemporaryDirectory(prefix="hatt-state-") as folder:
        path = Path(folder) / run_files.MODEL
        path.write_bytes(keras_bytes)
        text_model = load(path).text_model
    return Predictor.from_text_model(text_model, source, metadata)


def load_trained(path):
    """A Keras-backed :class:`Predictor` of the model at ``path``, for what needs its layers
    (``--init``, :meth:`hatt.TextClassifier.from_model`, the deletion test).

    As :func:`load`, except that a ``saved_models/NAME`` folder, or its newest version's
    SavedModel folder, gives the ``model.keras`` exported beside it (the newest
    version's; a SavedModel's signature takes raw text only).

    Raises:
        ExportError: as :func:`load`'s, or no Keras model beside the SavedModel (an older
            version, or an export without its ``model.keras``).
    """
    path = Path(path)
    if not (path.is_dir() and ((path / "saved_model.pb").is_file() or version_numbers(path))):
        return load(path)  # a .keras file or a run directory: Keras-backed
    folder = path if version_numbers(path) else path.parent  # saved_models/NAME
    versions = version_numbers(folder)
    newest = bool(versions) and (folder == path or path.name == str(versions[-1]))
    if newest and (folder / run_files.MODEL).is_file():
        return load(folder / run_files.MODEL)  # never the SavedModel itself: loaded for nothing
    raise ExportError(
        f"{str(path)!r} is a SavedModel, whose signature takes raw text only; a model's "
        "layers come from its Keras model: give the saved_models/NAME folder (its newest "
        "version's model.keras), the .keras file or the run directory."
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
