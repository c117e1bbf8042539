"""The checks every settings section runs on its values: types against annotations, ranges, choices."""

import dataclasses
import math
import types
import typing


def kinds_of(annotation):
    """``int | None`` → ``(int, NoneType)``; ``float`` → ``(float,)``."""
    if isinstance(annotation, types.UnionType) or typing.get_origin(annotation) is typing.Union:
        return typing.get_args(annotation)
    return (annotation,)


def is_kind(value, kind):
    if kind is type(None):
        return value is None
    if isinstance(value, bool):
        return kind is bool
    if kind is float:
        return isinstance(value, int | float)
    if kind is list:
        return isinstance(value, list | tuple)
    return isinstance(value, kind)


def describe_kinds(kinds):
    names = {type(None): "None", float: "a float", int: "an int", bool: "a bool"}
    names.update({str: "a str", list: "a list", dict: "a dict"})
    return " or ".join(names.get(k, getattr(k, "__name__", str(k))) for k in kinds)


def check_type(name, value, annotation):
    """Raise a ``ValueError`` naming ``name`` unless ``value`` fits ``annotation``."""
    kinds = kinds_of(annotation)
    if not any(is_kind(value, kind) for kind in kinds):
        raise ValueError(
            f"Expected {name} to be {describe_kinds(kinds)}. Received: {name}={value!r}"
        )
    if isinstance(value, float) and not math.isfinite(value):  # no setting means infinity
        raise ValueError(f"Expected {name} to be a finite number. Received: {name}={value!r}")


def check_fields(instance, prefix=""):
    hints = typing.get_type_hints(type(instance))
    for field in dataclasses.fields(instance):
        if dataclasses.is_dataclass(kinds_of(hints[field.name])[0]):
            continue  # a nested section checks itself
        check_type(prefix + field.name, getattr(instance, field.name), hints[field.name])


SEEDS = (0, 2**32 - 1)  # what NumPy's and Keras' random seeds take


def check_seed(name, value):
    if not SEEDS[0] <= value <= SEEDS[1]:
        raise ValueError(
            f"Expected {name} to be an int from {SEEDS[0]} to {SEEDS[1]} (2**32 - 1). "
            f"Received: {name}={value!r}"
        )


def check_at_most(name, value, most):
    if value > most:
        raise ValueError(f"Expected {name} to be at most {most:,}. Received: {name}={value!r}")


def check_positive_int(name, value, minimum=1):
    if value < minimum:
        raise ValueError(f"Expected {name} to be an int >= {minimum}. Received: {name}={value!r}")


def check_share(name, value):
    if not 0 < value < 1:
        raise ValueError(f"Expected {name} to be a float in (0, 1). Received: {name}={value!r}")


def check_choice(name, value, choices):
    if value not in choices:
        raise ValueError(f"Expected {name} to be one of {choices}. Received: {name}={value!r}")
