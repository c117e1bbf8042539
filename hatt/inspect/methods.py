"""The explanation methods' names for people and their kinds (signed or not).

Read from the one registry of methods (:data:`hatt.names.EXPLANATION_METHODS`);
shared by the Explanation type and every renderer (html, png, terminal), so a
renderer needs no Explanation import and the Explanation can draw itself with
the HTML renderer without an import circle.
"""

from hatt.names import EXPLANATION_METHODS, SIGNED_METHODS

ALL = "all"  # the renderers' "every method, side by side"
METHOD_LABELS = {
    **{method.name: method.label for method in EXPLANATION_METHODS},
    "saliency": "saliency",  # a model's score kind, shown as a view of its word weights
}
# The view shown unless asked, the first the explanation has.
DEFAULT_VIEWS = ("total", "attention", "gradient_x_input")


def is_signed(method):
    """Whether `method`'s scores are signed (towards / against the explained class)."""
    return method in SIGNED_METHODS


def method_label(method):
    """A method's name for people (`"integrated_gradients"` → `"integrated gradients"`)."""
    return METHOD_LABELS.get(method, str(method))
