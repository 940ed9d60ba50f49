"""Which rows of an object array hold the very same Python object, at integer speed.

Object arrays and lists of labels often repeat a few objects: labels built
from a few literals or names and fancy-indexed (``names[codes]``), or label
sets filled from one list of names. Rows holding the same object hold equal values, so
numbering the rows by object identity first, hashing the array's pointers as
integers (``_encode.objects_by_identity``, with the encoder's integer hashing), leaves
only the few distinct objects to compare by value, in Python.

Identity only ever merges rows that are equal, never rows that are not: the
caller still compares the distinct objects by value and checks their types.
The pointers are read as integers and never followed; they are valid while the
array (which holds a reference to each object) is alive, and the integer view keeps it so.
"""

from __future__ import annotations

import numpy as np

__all__ = ["object_pointers", "objects_repeat"]

# Rows looked at to decide whether the objects repeat; at most this share of them distinct.
_SAMPLE_ROWS = 4096
_MAX_DISTINCT_SHARE = 1 / 16


def objects_repeat(pointers: np.ndarray) -> bool:
    """Whether evenly spaced rows show few distinct objects (not fresh objects per row, where
    hashing by value costs no more)."""
    sample = pointers[::max(1, pointers.shape[0] // _SAMPLE_ROWS)]
    return np.unique(sample).shape[0] <= max(1, _MAX_DISTINCT_SHARE * sample.shape[0])


def object_pointers(values: np.ndarray) -> np.ndarray:
    """The object pointers of a 1-D object array, as intp (a view of a contiguous array, or of
    its contiguous copy, which holds the same objects). The view's base is that array, so the
    objects outlive the integers read from it."""
    return np.frombuffer(np.ascontiguousarray(values), dtype=np.intp)
