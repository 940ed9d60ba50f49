"""Turn whatever the user calls "strata" into one integer code per row.

Every distinct combination of column values is one stratum. Only the
partition of rows matters to the allocation, so the codes' numbering is an
implementation detail: renaming or reordering labels never changes batches.
Labels are kept (sorted where the values sort) for reports such as the
per-batch count table.

No pandas import here: pandas objects are recognised by duck typing, and
``pandas.isna`` is used only when pandas is already loaded by the caller.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass
from functools import cached_property

import numpy as np

# Besides the encoder, the input predicates and the missing-value check are
# shared with pystratum.r, which must accept and refuse exactly the same input.
__all__ = ["EncodedStrata", "encode_strata", "check_object_missing", "first_rows_of_codes",
           "is_column_like",
           "is_dataframe", "raise_missing", "smallest_code_dtype"]

# An integer column whose value range is at most this many times the row
# count is compacted with bincount (linear time) instead of sorted.
_DENSE_RANGE_FACTOR = 4


@dataclass(frozen=True)
class EncodedStrata:
    """Strata as integer codes.

    codes:  integer array (smallest fitting dtype), one code in ``0..n_strata-1`` per row.
    labels: one label per code; a tuple of column values for multi-column strata.
    sizes:  int64 array, rows per stratum (every stratum has at least one row).
    """

    codes: np.ndarray
    labels: tuple
    sizes: np.ndarray

    @property
    def n_rows(self) -> int:
        return int(self.codes.shape[0])

    @property
    def n_strata(self) -> int:
        return int(self.sizes.shape[0])

    @cached_property
    def first_rows(self) -> np.ndarray:
        """int64, the first row position of each stratum.

        Policies that treat strata in turn (e.g. FixedSize's cyclic extras)
        take them in order of first appearance: a property of the data, so
        it is the same in both languages and under any relabelling.
        """
        return first_rows_of_codes(self.codes, self.n_strata)


def encode_strata(strata, *, name: str = "strata") -> EncodedStrata:
    """Encode one or several stratum columns into per-row integer codes.

    Accepts a 1-D array-like of labels (ints, floats, strings, bools, pandas
    categoricals or Series), a pandas DataFrame, a 2-D array (one column per
    variable) or a list/tuple of 1-D columns. Missing values raise a
    ValueError naming the first offending row.
    """
    if isinstance(strata, EncodedStrata):
        return strata
    columns = _split_columns(strata, name)
    n_rows = len(columns[0][1])
    for column_name, column in columns:
        if len(column) != n_rows:
            raise ValueError(
                f"{name} columns must all have the same length, but {column_name} has "
                f"{len(column)} rows and {columns[0][0]} has {n_rows}."
            )
    if n_rows == 0:
        raise ValueError(
            f"{name} is empty (0 rows); pass one stratum label per row of the data set."
        )
    encoded = [_encode_column(column, column_name) for column_name, column in columns]
    if len(encoded) == 1:
        codes, labels = encoded[0]
        return _finish(codes, tuple(labels))
    return _combine(encoded)


def _split_columns(strata, name):
    """Return ``[(column_name, 1-D column), ...]`` without copying data where possible."""
    if strata is None or isinstance(strata, (str, bytes)) or np.isscalar(strata):
        raise TypeError(
            f"{name} must be array-like with one label per row (a list, numpy array, "
            f"pandas Series/DataFrame, 2-D array or list of columns), got "
            f"{name}={strata!r} of type {type(strata).__name__}."
        )
    if is_dataframe(strata):
        if strata.shape[1] == 0:
            raise ValueError(
                f"{name} is a DataFrame with zero columns; pass at least one stratum column."
            )
        return [(f"{name}[{col!r}]", strata[col]) for col in strata.columns]
    if is_pandas_1d(strata):
        return [(name, strata)]
    if isinstance(strata, (list, tuple)) and len(strata) > 0 and all(
        is_column_like(item) for item in strata
    ):
        return [(f"{name}[{k}]", item) for k, item in enumerate(strata)]
    array = np.asarray(strata) if not isinstance(strata, np.ndarray) else strata
    if array.ndim == 1:
        return [(name, array)]
    if array.ndim == 2:
        if array.shape[1] == 0:
            raise ValueError(
                f"{name} is a 2-D array with zero columns (shape {array.shape}); "
                f"pass at least one stratum column."
            )
        return [(f"{name}[:, {k}]", array[:, k]) for k in range(array.shape[1])]
    raise ValueError(
        f"{name} must be 1-D (one label per row) or 2-D (one column per stratum variable), "
        f"got an array with shape {array.shape}."
    )


def is_dataframe(obj) -> bool:
    return hasattr(obj, "columns") and hasattr(obj, "iloc") and getattr(obj, "ndim", 0) == 2


def is_pandas_1d(obj) -> bool:
    return type(obj).__module__.startswith("pandas") and getattr(obj, "ndim", 0) == 1


def is_column_like(obj) -> bool:
    if isinstance(obj, (str, bytes)) or np.isscalar(obj) or obj is None:
        return False
    return getattr(obj, "ndim", 1) == 1 and hasattr(obj, "__len__")


def _encode_column(column, column_name):
    """Return ``(codes, labels)`` for one column; codes index into labels."""
    categorical = _categorical_parts(column)
    if categorical is not None:
        codes, categories = categorical
        missing = codes < 0
        if missing.any():
            raise_missing(column_name, int(np.argmax(missing)), "missing category (NaN)")
        return codes, list(categories)

    values = column.to_numpy() if hasattr(column, "to_numpy") else np.asarray(column)
    if values.ndim != 1:
        raise ValueError(
            f"{column_name} must be 1-D, got an array with shape {values.shape}."
        )
    kind = values.dtype.kind
    if kind == "b":
        codes = values.view(np.int8)
        present = [bool(np.any(codes == 0)), bool(np.any(codes == 1))]
        if all(present):
            return codes, [False, True]
        return np.zeros(codes.shape[0], dtype=np.int8), [present[1]]
    if kind in "iu":
        return _encode_integers(values)
    if kind == "f" or kind == "c":
        missing = np.isnan(values)
        if missing.any():
            row = int(np.argmax(missing))
            raise_missing(column_name, row, _show_value(values[row]))
        if kind == "f" and np.all(np.isfinite(values)) and np.array_equal(values, np.round(values)):
            # Integral floats (e.g. 0.0/1.0 labels) take the linear-time path.
            codes, labels = _encode_integers(values.astype(np.int64))
            return codes, [float(v) for v in labels]
        return _encode_sorted(values)
    if kind in "USO":
        if kind == "O":
            check_object_missing(values, column_name)
        return _encode_sorted(values)
    if kind in "mM":
        missing = np.isnat(values)
        if missing.any():
            raise_missing(column_name, int(np.argmax(missing)), "NaT")
        return _encode_sorted(values)
    raise TypeError(
        f"{column_name} has dtype {values.dtype}, which cannot be used as stratum labels; "
        f"use ints, floats, strings, bools or categoricals."
    )


def _categorical_parts(column):
    """(codes, categories) for pandas categoricals, else None."""
    dtype = getattr(column, "dtype", None)
    if dtype is None or getattr(dtype, "name", "") != "category":
        return None
    cat = column.cat if hasattr(column, "cat") else column
    return np.asarray(cat.codes), list(cat.categories)


def _encode_integers(values):
    lo = int(values.min())
    hi = int(values.max())
    span = hi - lo + 1
    if span > _DENSE_RANGE_FACTOR * values.shape[0] + 1024:
        return _encode_sorted(values)
    offsets = values if lo == 0 else values - lo
    present = np.bincount(offsets, minlength=span) > 0
    labels = (np.flatnonzero(present) + lo).tolist()
    if present.all():
        return offsets, labels  # already 0..k-1 (e.g. 0/1 labels): no table look-up
    code_of_offset = (np.cumsum(present) - 1).astype(smallest_code_dtype(len(labels)))
    return code_of_offset[offsets], labels


def smallest_code_dtype(n_codes: int):
    """The smallest signed dtype for codes 0..n_codes-1 (keeps N-sized arrays small)."""
    for dtype in (np.int8, np.int16, np.int32):
        if n_codes <= np.iinfo(dtype).max:
            return dtype
    return np.int64


def _encode_sorted(values):
    try:
        labels, codes = np.unique(values, return_inverse=True)
    except TypeError:
        # Mixed types that do not sort (e.g. 1 and "a"): number by first appearance.
        return _encode_by_appearance(values)
    return codes.reshape(-1), labels.tolist()


def _encode_by_appearance(values):
    code_of_label: dict = {}
    codes = np.fromiter(
        (code_of_label.setdefault(v, len(code_of_label)) for v in values.tolist()),
        dtype=np.int64,
        count=values.shape[0],
    )
    return codes, list(code_of_label)


def check_object_missing(values, column_name):
    pandas = sys.modules.get("pandas")
    if pandas is not None:
        missing = np.asarray(pandas.isna(values), dtype=bool)
    else:
        missing = np.fromiter((_is_missing_scalar(v) for v in values.tolist()), dtype=bool,
                              count=values.shape[0])
    if missing.any():
        row = int(np.argmax(missing))
        raise_missing(column_name, row, _show_value(values[row]))


def _is_missing_scalar(value) -> bool:
    if value is None:
        return True
    if type(value).__name__ in ("NAType", "NaTType"):
        return True
    try:
        return bool(value != value)  # NaN is the only value unequal to itself
    except (TypeError, ValueError):
        return False


def _show_value(value) -> str:
    return repr(value.item() if isinstance(value, np.generic) else value)


def raise_missing(column_name, row, shown):
    raise ValueError(
        f"{column_name} has a missing value at row {row} (0-based): {shown}. Every row "
        f"needs a stratum: fill the missing labels (e.g. with their own 'missing' level) "
        f"or drop those rows before batching."
    )


def _combine(encoded):
    """Combine per-column codes into one code per distinct combination."""
    combined = encoded[0][0].astype(np.int64)
    n_levels = len(encoded[0][1])
    for codes, labels in encoded[1:]:
        combined = combined * len(labels) + codes  # int64: no overflow of small code dtypes
        n_levels *= len(labels)
        combined, n_levels = _compact(combined, n_levels)
    # Label each combined stratum by its column values, read off one member row.
    first_rows = first_rows_of_codes(combined, n_levels)
    labels = tuple(
        tuple(col_labels[int(col_codes[row])] for col_codes, col_labels in encoded)
        for row in first_rows
    )
    order = sorted(range(len(labels)), key=lambda k: _sort_key(labels[k]))
    relabel = np.empty(len(labels), dtype=np.int64)
    relabel[np.asarray(order, dtype=np.int64)] = np.arange(len(labels))
    return _finish(relabel[combined], tuple(labels[k] for k in order))


def _sort_key(label):
    return tuple((type(v).__name__, v) if not isinstance(v, (int, float)) else ("", v)
                 for v in label)


def _compact(codes, n_levels):
    """Renumber codes to 0..k-1 (k = number present) to keep products small."""
    if n_levels <= _DENSE_RANGE_FACTOR * codes.shape[0] + 1024:
        present = np.bincount(codes, minlength=n_levels) > 0
        code_of_level = np.cumsum(present) - 1
        return code_of_level[codes], int(present.sum())
    uniques, inverse = np.unique(codes, return_inverse=True)
    return inverse.reshape(-1), int(uniques.shape[0])


def first_rows_of_codes(codes, n_levels):
    """First row of each level, for compact codes (0..n_levels-1, all present)."""
    first_rows = np.full(n_levels, codes.shape[0], dtype=np.int64)
    np.minimum.at(first_rows, codes, np.arange(codes.shape[0], dtype=np.int64))
    return first_rows


def _finish(codes, labels) -> EncodedStrata:
    sizes = np.bincount(codes, minlength=len(labels)).astype(np.int64)
    if np.any(sizes == 0):
        # Unused categories of a categorical are not strata: nothing to batch.
        keep = sizes > 0
        code_of_old = np.cumsum(keep) - 1
        codes = code_of_old[codes]
        labels = tuple(label for label, k in zip(labels, keep) if k)
        sizes = sizes[keep]
    codes = codes.astype(smallest_code_dtype(len(labels)), copy=False)
    return EncodedStrata(codes=codes, labels=tuple(labels), sizes=sizes)
