"""Argument checks shared by every public entry point.

Messages follow one shape so users (and the R package, which mirrors them)
can rely on it: ``<name> must be <what>, got <name>=<value>`` plus the fix.
"""

from __future__ import annotations

import numbers
import operator

import numpy as np

__all__ = ["EPOCH_MAX", "SIZE_MAX", "MAX_SERVED_ROWS", "check_int", "check_bool",
           "check_choice", "check_epoch", "check_served_size", "show"]

# Epochs are R integers on the R side (the sampler's counter, the vectors'
# fields), so both languages accept exactly 0..2**31 - 1.
EPOCH_MAX = 2**31 - 1
# Size parameters (batch sizes, batch counts, negatives per pair) are whole
# numbers R holds exactly as doubles: at most 2**53 in both languages.
SIZE_MAX = 2**53
# What one epoch (or one batch of generated pairs) may hold: 16 times the
# input's rows (recycling small strata legitimately serves rows several
# times), and at least 2**24 rows on small inputs. Parameters asking more are
# refused with a memory estimate before anything is allocated, rather than
# failing to allocate or running for minutes.
MAX_SERVED_ROWS = 2**24
SERVED_PER_ROW = 16


def show(value) -> str:
    """``repr(value)``, cut to 80 characters (messages quote user values, which can be huge)."""
    try:
        text = repr(value)
    except Exception:  # a hostile __repr__ must not replace the real error
        text = f"<{type(value).__name__} object>"
    return text if len(text) <= 80 else text[:77] + "..."


_show = show  # the name the policies and the tree sampler import


def check_int(value, name: str, *, minimum: int | None = None, maximum: int | None = None,
              fix: str = "") -> int:
    """Return ``value`` as a Python int, rejecting bools, floats and strings.

    Raises TypeError for a non-integer and ValueError outside ``[minimum, maximum]``.
    """
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (numbers.Integral, np.integer)):
        raise TypeError(
            f"{name} must be an integer, got {name}={show(value)} of type "
            f"{type(value).__name__}. {fix}".rstrip()
        )
    value = operator.index(value)
    if minimum is not None and value < minimum:
        what = "a positive integer" if minimum == 1 else f"an integer >= {minimum}"
        raise ValueError(f"{name} must be {what}, got {name}={value}. {fix}".rstrip())
    if maximum is not None and value > maximum:
        low = "" if minimum is None else f"{minimum} <= "
        raise ValueError(
            f"{name} must be an integer {low}{name} <= {maximum}, got {name}={value}. {fix}".rstrip()
        )
    return value


def check_epoch(value, name: str = "epoch") -> int:
    """An epoch number: an int in ``[0, EPOCH_MAX]``, the range R's integers hold."""
    return check_int(value, name, minimum=0, maximum=EPOCH_MAX,
                     fix="Epochs count from 0 and are R integers in the R package, "
                         "so both languages stop at 2**31 - 1.")


def check_bool(value, name: str) -> bool:
    """Accept only real booleans: ``shuffle=0`` is more likely a slip than a choice."""
    if not isinstance(value, (bool, np.bool_)):
        raise TypeError(
            f"{name} must be True or False, got {name}={show(value)} of type "
            f"{type(value).__name__}."
        )
    return bool(value)


def check_choice(value, name: str, choices) -> str:
    if not isinstance(value, str) or value not in choices:
        options = ", ".join(repr(c) for c in choices)
        raise ValueError(f"{name} must be one of {options}, got {name}={show(value)}.")
    return value


def check_served_size(rows: int, entries: int, n_rows: int, name: str, value, what: str,
                      fix: str) -> None:
    """Refuse a parameter that makes an epoch larger than the input can use.

    ``rows``: rows the epoch (or batch) serves; ``entries``: entries of the
    tables built for it (e.g. a policy's count table). Each may be at most
    ``max(16 * n_rows, MAX_SERVED_ROWS)``; otherwise a ValueError names ``name``
    and ``value``, says ``what`` it makes, estimates the memory (16 bytes a
    row for positions and draws, 8 an entry) and gives ``fix``. The R
    package applies the same rule with the same words.
    """
    limit = max(SERVED_PER_ROW * n_rows, MAX_SERVED_ROWS)
    if rows <= limit and entries <= limit:
        return
    gib = (16 * rows + 8 * entries) / 2**30
    raise ValueError(
        f"{name}={show(value)} makes {what}: {rows:,} rows served and {entries:,} table "
        f"entries, about {gib:,.1f} GiB, from an input of {n_rows:,} rows. An epoch may serve, "
        f"and its tables hold, at most max(16 N, 2**24) = {limit:,} of each. {fix}"
    )
