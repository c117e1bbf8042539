"""The explanation methods' names for people and their kinds (signed or not).

Shared by the Explanation type and every renderer (html, png, terminal), so a
renderer needs no Explanation import and the Explanation can draw itself with
the HTML renderer without an import circle.
"""

from hatt.export.attribution import SIGNED_METHODS

ALL = "all"  # the renderers' "every method, side by side"
METHOD_LABELS = {
    "attention": "attention",
    "total": "total",
    "gradient_x_input": "gradient × input",
    "integrated_gradients": "integrated gradients",
    "ngram": "n-gram channel",
    "saliency": "saliency",
}
# The view shown unless asked, the first the explanation has.
DEFAULT_VIEWS = ("total", "attention", "gradient_x_input")


def is_signed(method):
    """Whether `method`'s scores are signed (towards / against the explained class)."""
    return method in SIGNED_METHODS


def method_label(method):
    """A method's name for people (`"integrated_gradients"` → `"integrated gradients"`)."""
    return METHOD_LABELS.get(method, str(method))
