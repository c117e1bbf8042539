"""Document-classifier families built on :mod:`hatt.layers`.

`family_spec(name)` says what a family is (`hatt.models.spec.FamilySpec`, declared
at the end of the family's module: its builder, flat or nested layout, word
encoder, preset, ...): the one place other folders ask instead of comparing
family names. `build(name, num_classes=2, ngram=None, **kwargs)` builds a
classifier by family name (`"cnn"`, `"rnn"`, `"transformer"`, `"han"`): the
family's backbone (`build_<name>`, ids → document vector) with THE head composed
on it (`hatt.models.head.classifier`: sigmoid for two classes, softmax above,
and the optional n-gram channel). `attention_model(model)` views the same weights with
their attention as extra outputs; `family_of`, `score_kind`, `dense_twin` and
`explanation_view` read a built or reloaded model.
"""

from hatt.models import (
    head,
    wiring,  # noqa: F401  (registers the helper layers for .keras loading)
)
from hatt.models.cnn import build_cnn
from hatt.models.han import build_han
from hatt.models.head import NgramChannel
from hatt.models.registry import (
    DEFAULT_FAMILY,
    FAMILIES,
    SCORE_KINDS,
    ExplanationView,
    attention_model,
    build,
    builder_arguments,
    dense_twin,
    explanation_view,
    family_of,
    family_spec,
    is_packed,
    score_kind,
)
from hatt.models.rnn import build_rnn
from hatt.models.spec import FamilySpec
from hatt.models.transformer import build_transformer

__all__ = [
    "DEFAULT_FAMILY",
    "FAMILIES",
    "SCORE_KINDS",
    "ExplanationView",
    "FamilySpec",
    "NgramChannel",
    "attention_model",
    "build",
    "builder_arguments",
    "dense_twin",
    "explanation_view",
    "family_of",
    "family_spec",
    "head",
    "is_packed",
    "score_kind",
    "build_cnn",
    "build_han",
    "build_rnn",
    "build_transformer",
]
