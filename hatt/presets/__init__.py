"""The tuned settings per model family: ``hatt train FAMILY`` starts from ``FAMILY.json``.

Each file holds :class:`hatt.training.TrainConfig` keys (the ``ngram`` section
included); read them with :func:`hatt.training.load_preset`.
"""

from importlib import resources
from pathlib import Path


def preset_files():
    """``{name: file}`` of the presets shipped in this package (``NAME.json``)."""
    return {
        Path(entry.name).stem: entry
        for entry in resources.files(__name__).iterdir()
        if entry.name.endswith(".json")
    }


PRESETS = tuple(sorted(preset_files()))
