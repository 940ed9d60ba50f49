"""R values as Python values: batches, weights, an mlr3 task's stratum columns.

Every function here reads rpy2 objects returned by the R package's bridge
functions (``r/R/python_bridge.R``) and must run inside ``Session.calling()``.
"""

from __future__ import annotations

import numpy as np

from ._conditions import RError
from ._rvalues import field, first_string, from_r_index

__all__ = ["batches_from_r", "field", "first_string", "task_frame_from_r", "weights_from_r"]


def batches_from_r(outcome, r_function: str) -> list:
    """``bridge_stratified_batches``'s flat positions and sizes as 0-based int64 arrays."""
    if not bool(field(outcome, "is_list")[0]):
        raise RError(
            f"R's {r_function} returned an object of class "
            f"{first_string(field(outcome, 'r_type'))}, not a list of batches."
        )
    flat = field(outcome, "flat")
    sizes = field(outcome, "sizes")
    if flat is not None and not bool(field(outcome, "all_integer")[0]):
        raise RError(f"R's {r_function} returned batches that are not integer vectors.")
    positions = from_r_index(flat) if flat is not None else np.empty(0, dtype=np.int64)
    sizes = np.asarray(sizes, dtype=np.int64) if sizes is not None else np.empty(0, np.int64)
    if sizes.size == 0:
        return []
    return np.split(positions, np.cumsum(sizes[:-1]))


def weights_from_r(outcome, batches) -> list | None:
    """``attr(batches, "weights")`` as float64 arrays parallel to ``batches``, or None."""
    if not bool(field(outcome, "has_weights")[0]):
        return None
    flat = np.asarray(field(outcome, "weights_flat"), dtype=np.float64)
    sizes = [batch.shape[0] for batch in batches]
    if flat.shape[0] != sum(sizes) or not bool(field(outcome, "weights_aligned")[0]):
        raise RError("R's pystratum::stratified_batches returned weights that are not "
                     "parallel to its batches.")
    return np.split(flat, np.cumsum(sizes[:-1])) if sizes else []


def task_frame_from_r(found, pandas):
    """``bridge_task_strata``'s description of a task's stratum columns as a DataFrame."""
    if first_string(field(found, "error")) == "empty":
        raise ValueError(
            f"task has no stratum columns: task$col_roles$stratum is empty (task class "
            f"{first_string(field(found, 'task_class'))}). Set it in R, e.g. "
            f"task$col_roles$stratum = \"target_column\" (several columns allowed), "
            f"or pass the strata to StratifiedBatchSampler yourself."
        )
    n_rows = int(field(found, "n_rows")[0])
    n_data = int(field(found, "n_data")[0])
    if n_rows != n_data:
        raise RError(
            f"task$data(rows = task$row_ids) returned {n_data} rows, but the task has "
            f"{n_rows} row ids."
        )
    names = [str(v) for v in field(found, "columns")]
    frame = {name: _column_from_r(column, name, pandas)
             for name, column in zip(names, field(found, "info"))}
    return pandas.DataFrame(frame, index=pandas.RangeIndex(n_rows))


def _column_from_r(column, name, pandas):
    kind = first_string(field(column, "kind"))
    r_class = first_string(field(column, "class"))
    if kind == "other":
        raise TypeError(
            f"task column {name!r} has R class {r_class}, which pystratum.r cannot turn into "
            f"stratum labels; use a factor, character, integer, double, logical, Date or "
            f"POSIXct column (e.g. convert it in R with as.character())."
        )
    first_na = int(field(column, "first_na")[0])
    if first_na:
        position = int(from_r_index([first_na])[0])
        raise ValueError(
            f"task column {name!r} has a missing value (NA) at position {position} (0-based, "
            f"task$row_ids order). Every row needs a stratum: fill or drop the missing labels "
            f"in R before batching."
        )
    values = field(column, "values")
    if kind == "factor":
        codes = from_r_index(values) if values is not None else np.empty(0, np.int64)
        levels = [str(v) for v in field(column, "levels") or []]
        ordered = bool(field(column, "ordered")[0])
        return pandas.Categorical.from_codes(codes, categories=levels, ordered=ordered)
    if kind == "integer":
        return np.asarray(values if values is not None else [], dtype=np.int64)
    if kind == "double":
        return np.asarray(values if values is not None else [], dtype=np.float64)
    if kind == "logical":
        return np.asarray(values if values is not None else [], dtype=bool)
    if kind == "character":
        return np.asarray([str(v) for v in values or []], dtype=object)
    if kind == "complex":
        return np.asarray(values if values is not None else [], dtype=np.complex128)
    if kind in ("Date", "POSIXct"):
        return _times_from_r(values, kind, name)
    raise TypeError(
        f"task column {name!r} has R type {kind} (class {r_class}), which pystratum.r cannot "
        f"turn into stratum labels; convert it in R, e.g. with as.character()."
    )


def _times_from_r(values, kind, name):
    """R Dates (days) and POSIXct (seconds since 1970 UTC) as datetime64, keeping every value apart.

    R holds both as doubles. Whole days become datetime64[D]; seconds become
    datetime64[ns] rounded to the nanosecond, which is exact for any
    realistic time stamp; if rounding ever made two distinct R values equal
    (which would merge two strata) this raises instead.
    """
    doubles = np.asarray(values if values is not None else [], dtype=np.float64)
    if kind == "Date" and np.array_equal(doubles, np.round(doubles)):
        return doubles.astype(np.int64).astype("datetime64[D]")
    scale = 86_400e9 if kind == "Date" else 1e9
    nanoseconds = np.round(doubles * scale)
    if not np.all(np.abs(nanoseconds) < 2.0**63) or (
            np.unique(nanoseconds).size != np.unique(doubles).size):
        raise ValueError(
            f"task column {name!r} ({kind}) holds values that nanosecond date-times cannot "
            f"keep apart, which would merge strata. Convert the column in R first, e.g. "
            f"with as.character() or format(x, '%Y-%m-%d %H:%M:%OS6')."
        )
    return nanoseconds.astype(np.int64).astype("datetime64[ns]")
