"""Declared constraints on settings, checked in one place (in the spirit of scikit-learn's
``_parameter_constraints``: ``Interval(Real, 0, None, closed="neither")``, ``StrOptions({...})``).

A typed settings class lists its fields' constraints in ``parameter_constraints`` (a dict: field name ->
constraint) and checks them when it is made (:class:`Constrained`); a model declares its own flags' constraints
on its :class:`inference.options.ModelOption`\\ s. A value that breaks one is refused with a
:class:`inference.errors.UsageError` in one line naming the flag: ``--beta must be a positive number, got -1.0``.
``None`` is always accepted: a setting not given (the model or family decides).
"""
from __future__ import annotations

import math
from numbers import Integral, Real
from typing import ClassVar

from inference.errors import UsageError

__all__ = ["Integral", "Real", "Interval", "Options", "StrOptions", "Constrained", "check", "validate",
           "validate_options", "flag_of", "POSITIVE", "NON_NEGATIVE", "AT_LEAST_1", "AT_LEAST_0", "UNIT_LEFT", "TOPICS"]


class Interval:
    """Numbers of ``type`` (``Real`` or ``Integral``; never a bool, never NaN or infinite) between ``left`` and
    ``right`` (``None``: unbounded); ``closed``: which bounds belong to it, "both", "left", "right" or
    "neither"."""

    def __init__(self, type, left, right, closed: str = "both"):
        if closed not in ("both", "left", "right", "neither"):
            raise ValueError(f"closed must be both, left, right or neither, got {closed!r}")
        self.type, self.left, self.right, self.closed = type, left, right, closed

    def accepts(self, value) -> bool:
        if isinstance(value, bool) or not isinstance(value, self.type):
            return False
        if isinstance(value, Real) and not math.isfinite(float(value)):
            return False
        if self.left is not None and (value < self.left or (value == self.left and self.closed in ("right", "neither"))):
            return False
        if self.right is not None and (value > self.right or (value == self.right and self.closed in ("left", "neither"))):
            return False
        return True

    def __str__(self) -> str:
        number = "an integer" if self.type is Integral else "a number"
        left_in, right_in = self.closed in ("both", "left"), self.closed in ("both", "right")
        if self.right is None and self.left is not None:
            if self.left == 0 and not left_in:
                return f"a positive {number.split()[-1]}"
            if self.type is Integral and left_in:
                return f"at least {self.left}"
            return f"{number} {'>=' if left_in else '>'} {self.left}"
        if self.left is None and self.right is not None:
            return f"{number} {'<=' if right_in else '<'} {self.right}"
        if self.left is None:
            return number
        return f"in {'[' if left_in else '('}{self.left}, {self.right}{']' if right_in else ')'}"


class Options:
    """One of a set of values of ``type``."""

    def __init__(self, type, options):
        self.type, self.options = type, tuple(sorted(options)) if not isinstance(options, tuple) else options

    def accepts(self, value) -> bool:
        return isinstance(value, self.type) and value in self.options

    def __str__(self) -> str:
        shown = [str(o) for o in self.options]
        return "one of " + ", ".join(shown) if len(shown) > 2 else " or ".join(shown)


def StrOptions(options) -> Options:
    """One of a set of strings (in the order given when ``options`` is a tuple, else sorted)."""
    return Options(str, options)


#: constraints several settings share
POSITIVE = Interval(Real, 0, None, closed="neither")
NON_NEGATIVE = Interval(Real, 0, None, closed="left")
AT_LEAST_1 = Interval(Integral, 1, None, closed="left")
AT_LEAST_0 = Interval(Integral, 0, None, closed="left")
UNIT_LEFT = Interval(Real, 0, 1, closed="left")          # a fraction in [0, 1)
TOPICS = Interval(Integral, 2, None, closed="left")      # K: two topics or more


def flag_of(name: str) -> str:
    """The command-line flag of a setting: ``heldout_fraction`` -> ``--heldout-fraction``."""
    return "--" + name.replace("_", "-")


def _shown(value) -> str:
    return repr(value) if isinstance(value, str) else str(value)


def check(name: str, value, constraint):
    """``value`` when it is None or meets ``constraint``; else a :class:`UsageError` naming ``name`` (a flag,
    or a param such as ``SparkTopicsLDA: k``)."""
    if value is None or constraint is None or constraint.accepts(value):
        return value
    raise UsageError(f"{name} must be {constraint}, got {_shown(value)}")


def validate(settings, constraints: dict, name=flag_of) -> None:
    """Check every field of ``settings`` (an object, or a dict) that ``constraints`` names; ``name`` makes the
    field's name as the user wrote it (its flag by default)."""
    for field, constraint in constraints.items():
        value = settings.get(field) if isinstance(settings, dict) else getattr(settings, field)
        check(name(field), value, constraint)


def validate_options(values: dict, options) -> None:
    """Check a model's own settings (``values``: ModelOption.name -> value) against the constraints its
    :class:`inference.options.ModelOption`\\ s declare."""
    for option in options:
        check(option.flag, values.get(option.name), option.constraint)


class Constrained:
    """Mixin of a dataclass of settings: its fields are checked against ``parameter_constraints`` when it is
    made (a subclass with a ``__post_init__`` of its own calls ``super().__post_init__()``)."""

    parameter_constraints: ClassVar[dict] = {}

    def __post_init__(self):
        validate(self, self.parameter_constraints)
