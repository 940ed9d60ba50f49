"""Argument checks shared by every public entry point.

Messages follow one shape so users (and the R package, which mirrors them)
can rely on it: ``<name> must be <what>, got <name>=<value>`` plus the fix.
"""

from __future__ import annotations

import numbers
import operator

import numpy as np

__all__ = ["check_int", "check_bool", "check_choice"]


def _show(value) -> str:
    text = repr(value)
    return text if len(text) <= 80 else text[:77] + "..."


def check_int(value, name: str, *, minimum: int | None = None, fix: str = "") -> int:
    """Return ``value`` as a Python int, rejecting bools, floats and strings.

    Raises TypeError for a non-integer and ValueError below ``minimum``.
    """
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (numbers.Integral, np.integer)):
        raise TypeError(
            f"{name} must be an integer, got {name}={_show(value)} of type "
            f"{type(value).__name__}. {fix}".rstrip()
        )
    value = operator.index(value)
    if minimum is not None and value < minimum:
        what = "a positive integer" if minimum == 1 else f"an integer >= {minimum}"
        raise ValueError(f"{name} must be {what}, got {name}={value}. {fix}".rstrip())
    return value


def check_bool(value, name: str) -> bool:
    """Accept only real booleans: ``shuffle=0`` is more likely a slip than a choice."""
    if not isinstance(value, (bool, np.bool_)):
        raise TypeError(
            f"{name} must be True or False, got {name}={_show(value)} of type "
            f"{type(value).__name__}."
        )
    return bool(value)


def check_choice(value, name: str, choices) -> str:
    if not isinstance(value, str) or value not in choices:
        options = ", ".join(repr(c) for c in choices)
        raise ValueError(f"{name} must be one of {options}, got {name}={_show(value)}.")
    return value
