"""Argument checks shared by the model builders: `ValueError`s that name and echo the value.

A builder starts with `check_arguments(locals())`: its arguments are checked
by name (`ARGUMENT_CHECKS`), each the same way in every family that takes it.
"""

from hatt.layers._checks import (
    check_bool,
    check_choice,
    check_optional_non_negative_int,
    check_optional_positive_int,
    check_positive_int,
    check_positive_ints,
    check_positive_number,
    check_rate,
    choice,
)
from hatt.layers.context_attention import SCORES, check_attention_arguments
from hatt.layers.normalizers import NORMALIZERS
from hatt.layers.position_embedding import MODES


def check_num_classes(value):
    """Raise unless `value` is an int >= 2 (the number of classes of a classifier)."""
    if not isinstance(value, int) or isinstance(value, bool) or value < 2:
        raise ValueError(f"Expected num_classes to be an int >= 2. Received: num_classes={value!r}")


def unknown_keys_error(what, unknown, known):
    """A ``ValueError`` for settings that do not exist, with "did you mean" for typos.

    Args:
        what: what the keys are, e.g. ``"ngram settings"`` or ``"model_kwargs for cnn"``.
        unknown: the keys given that are not known (sorted in the message).
        known: every known key.

    Example:

    >>> str(unknown_keys_error("ngram settings", ["bukets"], ["buckets", "order"]))
    "Unknown ngram settings: 'bukets' (did you mean 'buckets'?). Known: ['buckets', 'order']"
    """
    import difflib

    shown = []
    for key in sorted(unknown, key=str):
        close = difflib.get_close_matches(str(key), [str(k) for k in known], n=1, cutoff=0.6)
        shown.append(f"{key!r} (did you mean {close[0]!r}?)" if close else repr(key))
    return ValueError(f"Unknown {what}: {', '.join(shown)}. Known: {sorted(known)}")


ATTENTION_OPTIONS = ("local_p", "window", "hard", "hard_k")  # ContextAttention's, as a dict


def check_attention_options(options, normalizer="softmax"):
    """Raise unless `options` is `None` or a dict of `ContextAttention`'s local-p and hard
    options (`ATTENTION_OPTIONS`) the layer accepts with `normalizer`; the message
    names `attention_options`."""
    if options is None:
        return
    if not isinstance(options, dict) or set(options) - set(ATTENTION_OPTIONS):
        raise ValueError(
            f"Expected attention_options to be a dict of {ATTENTION_OPTIONS}. "
            f"Received: attention_options={options!r}"
        )
    try:
        check_attention_arguments(normalizer=normalizer, **options)
    except ValueError as error:
        raise ValueError(f"attention_options: {error}") from None


# The builders' arguments, by name, and their checks: an argument means the same in every
# builder that takes it. A family's own choices (`cell`, the CNN's `pooling`) come with the call.
ARGUMENT_CHECKS = {
    **dict.fromkeys(
        "vocabulary_size embedding_dim units num_layers word_units sentence_units filters "
        "num_heads intermediate_dim sequence_length".split(),
        check_positive_int,
    ),
    **dict.fromkeys(
        ("attention_units", "hidden_dim", "conv_kernel_size", "packed_groups"),
        check_optional_positive_int,
    ),
    "attention_window": check_optional_non_negative_int,
    "kernel_sizes": check_positive_ints,
    "attention_score": choice(SCORES),
    "attention_normalizer": choice(NORMALIZERS),
    "position_embedding": choice(MODES),
    "attention_temperature": check_positive_number,
    "dropout": check_rate,
    "word_dropout": check_rate,
    "norm_first": check_bool,
}


def check_arguments(arguments, **choices):
    """Check a builder's `arguments` (its `locals()` as it starts) before it builds.

    Each argument is checked by its entry in `ARGUMENT_CHECKS`, or by `choices`
    (`name=the values it may take`, the family's own), in the order of the
    signature; then `attention_options` against `attention_normalizer`.

    Args:
        arguments: Dict of the builder's arguments by name.
        **choices: The family's own choices, e.g. `cell=CELLS`.

    Example:

    >>> def build(vocabulary_size, cell="gru", dropout=0.5):
    ...     check_arguments(locals(), cell=("gru", "lstm"))
    """
    for name, value in arguments.items():
        if name in choices:
            check_choice(name, value, choices[name])
        elif name in ARGUMENT_CHECKS:
            ARGUMENT_CHECKS[name](name, value)
    if "attention_options" in arguments:
        normalizer = arguments.get("attention_normalizer", "softmax")
        check_attention_options(arguments["attention_options"], normalizer)
