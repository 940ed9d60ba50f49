"""Counting what hostile inputs did: accepted, or refused with a TypeError/ValueError."""

from __future__ import annotations

import warnings

from pystratum.policies import StratumTooSmallWarning


def counted_call(outcomes, face: str, function, *args, **kwargs):
    """``("ok", result)`` or ``("error", error)`` for a TypeError/ValueError, counted in
    ``outcomes[face, "accepted" | error type]``; any other exception escapes (the suite fails)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", StratumTooSmallWarning)
        try:
            result = function(*args, **kwargs)
        except (TypeError, ValueError) as error:
            outcomes[face, type(error).__name__] += 1
            return "error", error
    outcomes[face, "accepted"] += 1
    return "ok", result
