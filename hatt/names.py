"""Names and limits the command line offers before any model code loads (no Keras, no TF).

The modules that own them (:mod:`hatt.models.registry`, :mod:`hatt.training.run.distribute`,
:mod:`hatt.export.attribution`, :mod:`hatt.inspect.html`, :mod:`hatt.presets`) take them from
here, so ``hatt --help`` lists the same choices without importing TensorFlow.

The explanation methods are registered here once (:data:`EXPLANATION_METHODS`): their
name, kind (signed or not), labels and what a model needs to have them. Their math is
:mod:`hatt.export.attribution`'s; export, inspect and the serve page read the rest here.
"""

import dataclasses

FAMILIES = ("cnn", "rnn", "transformer", "han")  # hatt.models.build's families
STRATEGIES = ("default", "mirrored", "multiworker")  # hatt.training's tf.distribute choices
CLASS_WEIGHTS = ("auto", "balanced", "sqrt", "none")  # TrainConfig.class_weight, --class-weight


@dataclasses.dataclass(frozen=True)
class Method:
    """An explanation method, registered once in :data:`EXPLANATION_METHODS`.

    Attributes:
        name: its key in the explain signature and in an explanation's scores.
        label: its name for people (pages, legends, the terminal).
        signed: whether its scores argue for (+) or against (-) the explained
            class; else they are weights in ``[0, 1]`` (attention).
        needs_attention: only a model whose words are pooled by
            ``ContextAttention`` (``score_kind == "attention"``) has it.
        needs_channel: only a model with the n-gram channel has it.
        part: what part of the prediction its scores explain, as the serve
            page's menu says it (``None``: its label says it).
    """

    name: str
    label: str
    signed: bool
    needs_attention: bool = False
    needs_channel: bool = False
    part: str | None = None

    @property
    def page_label(self):
        """Its label in the serve page's menu: the label and the part it explains."""
        return f"{self.label} ({self.part})" if self.part else self.label


# The explanation methods, in the order pages and the explain signature show them.
EXPLANATION_METHODS = (
    Method("attention", "attention", signed=False, needs_attention=True),
    Method("total", "total", signed=True, part="whole prediction"),
    Method("gradient_x_input", "gradient × input", signed=True, part="deep part"),
    Method("integrated_gradients", "integrated gradients", signed=True, part="deep part"),
    Method("ngram", "n-gram channel", signed=True, needs_channel=True),
)
METHODS = tuple(m.name for m in EXPLANATION_METHODS)
SIGNED_METHODS = tuple(m.name for m in EXPLANATION_METHODS if m.signed)


def explanation_method(name):
    """The registered :class:`Method` called ``name``.

    Raises:
        ValueError: no method has that name.
    """
    for method in EXPLANATION_METHODS:
        if method.name == name:
            return method
    raise ValueError(f"Expected a method name, one of {METHODS}. Received: method={name!r}")


def model_methods(score_kind, has_channel):
    """The methods a model has, in :data:`METHODS` order: attention with ``score_kind``
    ``"attention"``, the n-gram channel's with ``has_channel``, the others always."""
    return tuple(
        m.name
        for m in EXPLANATION_METHODS
        if (score_kind == "attention" or not m.needs_attention)
        and (has_channel or not m.needs_channel)
    )


MAX_REVIEWS = 100  # reviews a page of write_html (100 IMDB reviews, 4 methods: about 6 MB)
SPLIT_CHOICES = ("auto", "test", "train", "all")  # what hatt evaluate reads of a source
