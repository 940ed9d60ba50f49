"""User and item ids: checked and converted to 1-D int64 arrays.

Every id the sampler stores or is asked about (``users``, ``items``, the
ids given to ``log_q``) passes through here: lists, numpy arrays, pandas
Series (nullable dtypes included) and tensors become int64; missing
values, fractions, booleans, negative ids and ids past ``num_users`` /
``num_items`` are refused with a TypeError/ValueError naming the first
offending entry and the fix.
"""

from __future__ import annotations

import math
import numbers

import numpy as np

from ..base._validation import _show


def _id_array(values, name: str) -> np.ndarray:
    """A 1-D int64 array of non-negative ids, or a TypeError/ValueError naming the entry."""
    module = type(values).__module__
    if module.startswith("pandas"):
        values = values.to_numpy(dtype=object) if values.dtype == object or \
            str(values.dtype) in ("Int64", "Int32", "Float64") else values.to_numpy()
    elif module.startswith("torch"):
        values = values.detach().cpu().numpy()
    array = np.asarray(values)
    if array.ndim != 1:
        raise ValueError(
            f"{name} must be one-dimensional (one id per observed pair), got an array of shape "
            f"{array.shape}.")
    if array.dtype == bool:
        raise TypeError(f"{name} must hold integer ids, got booleans ({name}={_show(values)}).")
    if array.dtype == object:
        for position, value in enumerate(array.tolist()):
            if value is None or (isinstance(value, float) and math.isnan(value)) or \
                    type(value).__name__ in ("NAType", "NaTType"):
                raise ValueError(
                    f"{name} must not hold missing values, got {name}[{position}]={value!r}. "
                    f"Drop the pairs with a missing id.")
            if isinstance(value, (bool, np.bool_)) or not isinstance(
                    value, (numbers.Integral, np.integer, float, np.floating)):
                raise TypeError(
                    f"{name} must hold integer ids, got {name}[{position}]={value!r} of type "
                    f"{type(value).__name__}.")
        values_list = array.tolist()
        for position, value in enumerate(values_list):
            if isinstance(value, (numbers.Integral, np.integer)) and \
                    not -2**63 <= int(value) < 2**63:
                raise ValueError(
                    f"{name} must hold ids below 2^63 (int64), got {name}[{position}]="
                    f"{_show(value)}. Remap ids to 0..n-1 first (e.g. pandas.factorize).")
        array = np.asarray(values_list, dtype=np.float64 if any(
            isinstance(v, (float, np.floating)) for v in values_list) else np.int64)
    if array.dtype.kind == "f":
        bad = np.flatnonzero(np.isnan(array))
        if bad.size:
            raise ValueError(
                f"{name} must not hold NaN, got {name}[{int(bad[0])}]=nan ({bad.size} NaN "
                f"value(s)). Drop the pairs with a missing id.")
        bad = np.flatnonzero(~np.isfinite(array) | (array != np.trunc(array)))
        if bad.size:
            raise TypeError(
                f"{name} must hold whole-number ids, got {name}[{int(bad[0])}]="
                f"{float(array[bad[0]])!r}. Map ids to integers 0..n-1 first.")
        if array.size and np.abs(array).max() >= 2.0**53:
            position = int(np.flatnonzero(np.abs(array) >= 2.0**53)[0])
            raise ValueError(
                f"{name} must hold float ids below 2^53 (exact as floats), got {name}"
                f"[{position}]={float(array[position])!r}; pass integers.")
        array = array.astype(np.int64)
    elif array.dtype.kind == "u":
        if array.size and array.max() > np.iinfo(np.int64).max:
            position = int(np.flatnonzero(array > np.iinfo(np.int64).max)[0])
            raise ValueError(
                f"{name} must hold ids below 2^63 (int64), got {name}[{position}]="
                f"{int(array[position])}. Remap ids to 0..n-1 first (e.g. pandas.factorize).")
        array = array.astype(np.int64)
    elif array.dtype.kind != "i":
        raise TypeError(
            f"{name} must hold integer ids, got dtype {array.dtype} ({name}={_show(values)}). "
            f"Map ids to integers 0..n-1 first (e.g. pandas.factorize).")
    else:
        array = array.astype(np.int64, copy=False)
    if array.size:
        low = int(array.min())
        if low < 0:
            position = int(np.flatnonzero(array < 0)[0])
            raise ValueError(
                f"{name} must hold ids >= 0 (0-based), got {name}[{position}]="
                f"{int(array[position])}. Map ids to 0..n-1 first (e.g. pandas.factorize).")
    return np.ascontiguousarray(array)


def _query_ids(values, name: str, upper: int, upper_name: str) -> np.ndarray:
    """Ids asked about (``log_q``): as :func:`_id_array`, any shape, each in ``[0, upper)``."""
    shape = np.shape(values)
    array = _id_array(np.reshape(np.asarray(values, dtype=object), -1)
                      if len(shape) != 1 else values, name)
    if array.size:
        _check_upper(array, name, upper, upper_name)
    return array.reshape(shape)


def _check_upper(array, name, upper, upper_name):
    high = int(array.max())
    if high >= upper:
        position = int(np.flatnonzero(array >= upper)[0])
        raise ValueError(
            f"{name} must hold ids in [0, {upper_name}={upper}), got {name}[{position}]="
            f"{int(array[position])}. Ids are 0-based: pass {upper_name}={high + 1} (or more), or "
            f"remap the ids.")
