"""What R values can hold, and the one place where 0-based and 1-based indices meet."""

from __future__ import annotations

import numpy as np

__all__ = ["R_DOUBLE_EXACT_MAX", "R_INDEX_BASE", "R_INT_MAX", "field", "first_string",
           "from_r_index", "to_r_index"]

# R integers are signed 32-bit and -2**31 is NA_integer_ (the R package's
# R_INT_MAX in r/R/validation.R is the same number).
R_INT_MAX = 2**31 - 1
# Beyond this a double no longer holds every integer exactly.
R_DOUBLE_EXACT_MAX = 2**53
# R's vectors are 1-based; every index crossing the boundary goes through
# to_r_index / from_r_index and nowhere else.
R_INDEX_BASE = 1


def to_r_index(zero_based) -> np.ndarray:
    """0-based int array -> 1-based int32 array (R positions, factor codes)."""
    return (np.asarray(zero_based, dtype=np.int64) + R_INDEX_BASE).astype(np.int32)


def from_r_index(one_based) -> np.ndarray:
    """1-based R integer/double vector -> 0-based int64 numpy array."""
    return np.asarray(one_based, dtype=np.int64) - R_INDEX_BASE


def _null():
    import rpy2.rinterface as ri  # the session has started rpy2 before any R value exists

    return ri.NULL


def field(r_list, name):
    """Element ``name`` of an R list, or None if absent or NULL."""
    null = _null()
    names = r_list.names
    names = [] if names is None or names is null else list(names)
    if name not in names:
        return None
    value = r_list[names.index(name)]
    return None if value is null else value


def first_string(value):
    """The first element of an R character vector, or None for NULL / NA."""
    import rpy2.rinterface as ri

    if value is None:
        return None
    text = value[0]
    return None if text is ri.NA_Character or text is None else str(text)
