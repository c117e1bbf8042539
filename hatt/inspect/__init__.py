"""Look inside a trained model: which words and sentences its prediction rests on.

`explain(model, texts)` returns one `Explanation` per review (tokens, word
weights, sentence weights for the HAN, probability, true label when known);
the renderers draw a list of them: `to_html` / `write_html` (one
self-contained page), `to_png` / `write_pngs` (matplotlib heat maps) and
`to_terminal` (rich). `deletion_test` checks whether the weights point at
the words the prediction depends on.

Renderers are imported on first use, so `import hatt.inspect` does not load
matplotlib.
"""

from hatt.inspect.deletion import deletion_test
from hatt.inspect.explain import Explanation, KerasExplainer, explain, load

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
    "KerasExplainer",
    "deletion_test",
    "explain",
    "load",
    *_RENDERERS,
]


def __getattr__(name):
    if name in _RENDERERS:
        import importlib

        module = importlib.import_module(f"hatt.inspect.{_RENDERERS[name]}")
        return getattr(module, name)
    raise AttributeError(f"module 'hatt.inspect' has no attribute {name!r}")
