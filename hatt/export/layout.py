"""The export folder's layout (``saved_models/NAME/{VERSION/, export.json}``) and its JSON.

Shared by the writer (:mod:`hatt.export.writer`) and the loader (:mod:`hatt.export.loading`).
"""

import json
import re
from pathlib import Path

from hatt import run_dir as run_files
from hatt.data import imdb
from hatt.data.readers.archive import ARCHIVE_SUFFIXES
from hatt.data.readers.files import read_json_object
from hatt.data.readers.load import reader_for
from hatt.data.readers.table import TABLE_FORMATS
from hatt.data.readers.tfds import TFDS_PREFIX


class ExportError(ValueError):
    """A model folder or file that hatt cannot load or write (message names the path)."""


EXPORT_FILE = "export.json"  # saved_models/NAME/export.json
VERSION_METADATA = "assets.extra/hatt_export.json"  # inside each version (TF Serving ignores it)
# the run's training documents' fingerprints, copied into each version (never served)
VERSION_FINGERPRINTS = f"assets.extra/{run_files.TRAINING_FINGERPRINTS}"


def is_version_name(name):
    """Whether ``name`` is a version folder's name: ASCII digits only (``3``, ``12``).

    The one test of a version folder (issue 63: ``str.isdigit`` took ``²``, which
    ``int()`` then refused with "invalid literal for int()", and ``٣``, read as 3).
    TF Serving reads only ASCII numbers too; another name is an ordinary folder.
    """
    return bool(name) and name.isascii() and name.isdigit()


def version_numbers(folder):
    """Numeric version folders (:func:`is_version_name`) holding a ``saved_model.pb``,
    ascending."""
    folder = Path(folder)
    if not folder.is_dir():
        return []
    found = [
        int(p.name)
        for p in folder.iterdir()
        if is_version_name(p.name) and p.is_dir() and (p / "saved_model.pb").is_file()
    ]
    return sorted(found)


def write_json(path, value):
    Path(path).write_text(json.dumps(value, indent=2) + "\n")


def read_json(path):
    """A JSON object from ``path``; :class:`ExportError` naming the file if it is not one."""
    try:
        return read_json_object(path)
    except (OSError, ValueError) as error:
        raise ExportError(f"Could not read {str(path)!r}: {error}") from error


def advisory_json(path):
    """The JSON object at ``path``, or ``{}`` when it is absent or cannot be read."""
    try:
        return read_json(path) if Path(path).is_file() else {}
    except ExportError:
        return {}


# === Where a model is exported: saved_models/NAME ======================================

EXPORT_ROOT = "saved_models"  # the default home of exports (TF Serving's model base paths)
# What a corpus's file name ends in that its model's name leaves out (my.csv.gz → my).
_CORPUS_SUFFIXES = (".gz", *TABLE_FORMATS, *ARCHIVE_SUFFIXES, ".txt", ".json")


def check_model_name(name, flag="--name"):
    """``name`` if it is one folder name under ``saved_models/`` (no path, not hidden)."""
    if not name or name != name.strip() or "/" in name or "\\" in name or name.startswith("."):
        raise ValueError(
            f"Expected {flag} to be a folder name such as reviews-cnn (no '/', not starting "
            f"with '.'). Received: {flag} {name!r}"
        )
    return name


def default_model_name(family, data=None, labels=None):
    """The name a model of ``family`` trained on ``data`` gets under ``saved_models/``.

    IMDB (no ``data``, ``tfds:imdb_reviews``, an ``aclImdb`` folder or archive) keeps
    the family's own name, ``cnn``; its rating task is ``imdb-rating-cnn``. Any other
    corpus names its model: the data file's or folder's name without its suffixes
    (``tfds:NAME``: NAME), lower-cased, runs of other characters than ``a-z0-9_-``
    made one ``-``, then ``-FAMILY``: ``--data my.csv`` gives ``my-cnn``, ``--data
    tickets/`` ``tickets-cnn``. A user's own first model thus never becomes a new
    version of the IMDB model of ``make train`` (issue 64, item 8).
    """
    stem = _corpus_stem(data)
    if stem is None:
        return f"imdb-rating-{family}" if labels == "rating" else family
    return f"{stem}-{family}"


def _corpus_stem(data):
    """The sanitised name of a corpus, ``None`` for IMDB."""
    reader = reader_for(data)
    if reader.format == "imdb":
        return None
    if reader.format == "tfds":
        name = str(data)[len(TFDS_PREFIX) :]
    else:
        path = Path(data).expanduser()
        name = (path.resolve() if path.is_dir() else path).name
        root = imdb.find_root(path, strict=True) if path.is_dir() else None
        if name.lower().startswith("aclimdb") or (root is not None and imdb.is_imdb(root)):
            return None
        while name.lower().endswith(_CORPUS_SUFFIXES):
            name = name[: name.lower().rindex(".")]
    stem = re.sub(r"[^a-z0-9_-]+", "-", name.lower()).strip("-_")
    return stem or "data"


def export_folder(family, *, data=None, labels=None, name=None, export_dir=None):
    """Where ``hatt train`` and ``hatt export`` write a model: the one place that decides.

    Args:
        family: the model's family.
        data, labels: its corpus (the ``data`` and ``labels`` settings).
        name: ``--name``: the folder's name under ``export_dir`` (or ``saved_models/``).
        export_dir: ``hatt train --export-dir``: ``None`` (not given), a folder
            (the model goes to ``DIR/FAMILY``, or ``DIR/NAME``, as before 0.4), or
            ``""`` (no export).

    Returns:
        The export folder (:class:`~pathlib.Path`), or ``None`` for ``export_dir=""``.
        Without ``name`` nor ``export_dir``: ``saved_models/`` and
        :func:`default_model_name`.
    """
    if export_dir == "":
        if name is not None:
            raise ValueError(
                "Expected either --name NAME (export there) or --export-dir '' (no export), "
                f"not both. Received: --name {name!r} --export-dir ''"
            )
        return None
    if name is not None:
        return Path(export_dir or EXPORT_ROOT) / check_model_name(name)
    if export_dir is not None:
        return Path(export_dir) / family
    return Path(EXPORT_ROOT) / default_model_name(family, data, labels)
