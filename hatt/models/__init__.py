"""Document-classifier families built on :mod:`hatt.layers`.

`build(name, **kwargs)` builds a family by name (`"cnn"`, `"rnn"`,
`"transformer"`, `"han"`); `build_<name>` are the builders themselves. Every
model maps int ids to a `[batch, 1]` probability; `attention_model(model)`
views the same weights with their attention as extra outputs.
"""

from hatt.models import _layers  # noqa: F401  (registers the helper layers for .keras loading)
from hatt.models.cnn import build_cnn
from hatt.models.han import build_han
from hatt.models.registry import FAMILIES, attention_model, build
from hatt.models.rnn import build_rnn
from hatt.models.transformer import build_transformer

__all__ = [
    "FAMILIES",
    "attention_model",
    "build",
    "build_cnn",
    "build_han",
    "build_rnn",
    "build_transformer",
]
