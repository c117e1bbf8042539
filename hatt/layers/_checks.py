"""Argument checks shared by the layers and the model builders: `ValueError`s that name and echo the value.

Each check is `check(name, value)` and raises with the message Keras uses,
"Expected NAME to be .... Received: NAME=VALUE".
"""

import functools
import math


def check_positive_int(name, value):
    """Raise unless `value` is a positive int (bools rejected)."""
    if not isinstance(value, int) or isinstance(value, bool) or value <= 0:
        raise ValueError(f"Expected {name} to be a positive int. Received: {name}={value!r}")


def check_optional_positive_int(name, value):
    """Raise unless `value` is `None` or a positive int."""
    if value is not None:
        if not isinstance(value, int) or isinstance(value, bool) or value <= 0:
            raise ValueError(
                f"Expected {name} to be a positive int or None. Received: {name}={value!r}"
            )


def check_positive_number(name, value):
    """Raise unless `value` is a finite int or float > 0 (bools, infinity and NaN rejected)."""
    if not is_finite_number(value) or not value > 0:
        raise ValueError(f"Expected {name} to be a finite number > 0. Received: {name}={value!r}")


def is_finite_number(value):
    """An int or a float that is neither infinite nor NaN (bools are not numbers here)."""
    if not isinstance(value, (int, float)) or isinstance(value, bool):
        return False
    return math.isfinite(value)


def check_rate(name, value):
    """Raise unless `value` is a number in `[0, 1)` (a dropout rate)."""
    if not isinstance(value, (int, float)) or isinstance(value, bool) or not 0 <= value < 1:
        raise ValueError(f"Expected {name} to be a float in [0, 1). Received: {name}={value!r}")


def check_choice(name, value, choices):
    """Raise unless `value` is one of `choices`."""
    if value not in choices:
        raise ValueError(
            f"Expected {name} to be one of {tuple(choices)}. Received: {name}={value!r}"
        )


def check_optional_non_negative_int(name, value):
    """Raise unless `value` is `None` or an int >= 0."""
    if value is not None and (not isinstance(value, int) or isinstance(value, bool) or value < 0):
        raise ValueError(f"Expected {name} to be an int >= 0 or None. Received: {name}={value!r}")


def choice(choices):
    """The check "one of `choices`" as `ARGUMENT_CHECKS` holds it: `check(name, value)`."""
    return functools.partial(_check_choice_of, choices)


def _check_choice_of(choices, name, value):
    check_choice(name, value, choices)


def check_bool(name, value):
    """Raise unless `value` is a bool."""
    if not isinstance(value, bool):
        raise ValueError(f"Expected {name} to be a bool. Received: {name}={value!r}")


def check_positive_ints(name, value):
    """Raise unless `value` is a non-empty list or tuple of positive ints."""
    if (
        not isinstance(value, (list, tuple))
        or not value
        or not all(isinstance(v, int) and not isinstance(v, bool) and v > 0 for v in value)
    ):
        raise ValueError(
            f"Expected {name} to be a non-empty list of positive ints. Received: {name}={value!r}"
        )
