"""Look inside a trained model: which words and sentences its prediction rests on.

`explain(model, texts)` returns one `Explanation` per review: tokens, every
method's word and sentence scores (`scores`, `sentence_scores`: attention,
and the signed gradient × input, integrated gradients and n-gram channel
contributions to the explained class's logit), the logit's decomposition
(deep part + n-gram channel + bias), the probability and the true label
when known. The renderers draw a list of them, with `method=` (one of the
model's methods, or `"all"`): `to_html` / `write_html` (one self-contained
page with a method switch), `to_png` / `write_pngs` (matplotlib heat maps,
a panel per method) and `to_terminal` (rich). `deletion_test` checks whether
the scores point at the words the prediction depends on.

Models are reached through `hatt.export` (`load`, `as_predictor`): the one
path from raw text to probabilities, tokens and scores, shared with
`hatt predict` and the SavedModel.

Renderers are imported on first use, so `import hatt.inspect` does not load
matplotlib.
"""

from hatt.inspect.deletion import deletion_test
from hatt.inspect.explain import (
    Explanation,
    balanced_sample,
    explain,
    explanations_from_result,
)
from hatt.inspect.explanation import Explanations
from hatt.inspect.uniform import uniform_attention, uniform_attention_check

_RENDERERS = {
    "to_html": "html",
    "write_html": "html",
    "to_png": "png",
    "write_pngs": "png",
    "png_size": "png",
    "to_terminal": "terminal",
}

__all__ = [
    "Explanation",
    "Explanations",
    "balanced_sample",
    "deletion_test",
    "explain",
    "explanations_from_result",
    "uniform_attention",
    "uniform_attention_check",
    *_RENDERERS,
]


def __getattr__(name):
    if name in _RENDERERS:
        import importlib

        module = importlib.import_module(f"hatt.inspect.{_RENDERERS[name]}")
        return getattr(module, name)
    raise AttributeError(f"module 'hatt.inspect' has no attribute {name!r}")
