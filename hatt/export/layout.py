"""The export folder's layout (``saved_models/NAME/{VERSION/, export.json}``) and its JSON.

Shared by the writer (:mod:`hatt.export.writer`) and the loader (:mod:`hatt.export.loading`).
"""

import json
from pathlib import Path

from hatt.data.readers.files import read_json_object


class ExportError(ValueError):
    """A model folder or file that hatt cannot load or write (message names the path)."""


EXPORT_FILE = "export.json"  # saved_models/NAME/export.json
VERSION_METADATA = "assets.extra/hatt_export.json"  # inside each version (TF Serving ignores it)


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
