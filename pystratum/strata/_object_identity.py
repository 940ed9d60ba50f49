"""Which rows of an object array hold the very same Python object, at integer speed.

Object arrays and lists of labels often repeat a few objects: labels built
from a few literals or names and fancy-indexed (``names[codes]``), or label
sets filled from one list of names. Rows holding the same object hold equal values, so
numbering the rows by object identity first, hashing the array's pointers as
integers, leaves only the few distinct objects to compare by value, in Python.

Identity only ever merges rows that are equal, never rows that are not: the
caller still compares the distinct objects by value and checks their types.
The pointers are read as integers and never followed; they are valid while the
array (which holds a reference to each object) is alive, and the integer view keeps it so.
"""

from __future__ import annotations

import sys

import numpy as np

__all__ = ["codes_by_identity"]

# Rows looked at to decide whether the objects repeat; at most this share of them distinct.
_SAMPLE_ROWS = 4096
_MAX_DISTINCT_SHARE = 1 / 16


def codes_by_identity(values: np.ndarray, *, sampled: bool = False):
    """``(codes, n_objects)`` for a 1-D object array whose rows repeat the same objects, or None.

    ``codes`` (int64) numbers the distinct objects (by identity) in order of first
    appearance; None when a sample of rows shows mostly distinct objects (fresh objects
    per row, where hashing by value costs no more; ``sampled=True``: the caller has
    looked already) or without pandas and pyarrow.
    """
    pointers = _pointers(values)
    if not sampled and not _objects_repeat(pointers):
        return None
    return _hash_integers(pointers)


def _objects_repeat(pointers: np.ndarray) -> bool:
    """Whether evenly spaced rows show few distinct objects."""
    sample = pointers[::max(1, pointers.shape[0] // _SAMPLE_ROWS)]
    return np.unique(sample).shape[0] <= max(1, _MAX_DISTINCT_SHARE * sample.shape[0])


def _pointers(values: np.ndarray) -> np.ndarray:
    """The object pointers of a 1-D object array, as intp (a view of a contiguous array, or of
    its contiguous copy, which holds the same objects). The view's base is that array, so the
    objects outlive the integers read from it."""
    return np.frombuffer(np.ascontiguousarray(values), dtype=np.intp)


def _hash_integers(integers: np.ndarray):
    """``(codes, n_distinct)``: first-appearance codes of integers, hashed in C."""
    pandas = _loaded_pandas()
    if pandas is not None:
        codes, uniques = pandas.factorize(integers)
        return codes.astype(np.int64, copy=False), len(uniques)
    try:
        import pyarrow
        import pyarrow.compute
    except ImportError:
        return None
    encoded = pyarrow.compute.dictionary_encode(pyarrow.array(integers))
    codes = np.frombuffer(encoded.indices.buffers()[1], dtype=np.int32,
                          count=len(encoded.indices))
    return codes.astype(np.int64), len(encoded.dictionary)


def _loaded_pandas():
    """pandas if the caller has imported it (importing it here would cost more than it saves)."""
    return sys.modules.get("pandas")
