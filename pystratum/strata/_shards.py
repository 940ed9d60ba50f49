"""Shards: which stored shard every row lives in, read and checked once (docs/SHARDS.md).

Two forms: an id per row (labels: shard index ``h`` is the rank of an id
among the distinct ids), or :func:`shard_sizes` when rows are stored shard
after shard. Both become a :class:`ShardLayout`: the shard index of every
row in the smallest unsigned dtype, the shard count ``H`` and the rows of
every shard. ``window`` is checked here too (:func:`check_window`).
"""

from __future__ import annotations

import hashlib
import numbers
import operator

import numpy as np

from ..base._validation import show

__all__ = ["ShardSizes", "ShardLayout", "shard_sizes", "read_shards", "check_window"]

# Ids below this (and below 2 N) are ranked by a presence table, O(N + max id);
# larger ids by np.unique's sort.
_TABLE_IDS = 1 << 22


class ShardSizes:
    """Rows stored shard after shard: shard ``h`` holds the next ``sizes[h]`` rows.

    Made by :func:`shard_sizes`, passed as ``shards=``.
    """

    def __init__(self, sizes: np.ndarray):
        self.sizes = sizes

    def __len__(self) -> int:
        return int(self.sizes.shape[0])

    def __repr__(self) -> str:
        return f"shard_sizes({show(self.sizes.tolist())})"

    def __eq__(self, other) -> bool:
        return isinstance(other, ShardSizes) and np.array_equal(self.sizes, other.sizes)

    __hash__ = None


def shard_sizes(sizes) -> ShardSizes:
    """Shards given by their sizes: rows are stored shard after shard.

    Shard ``h`` holds rows ``offset[h] .. offset[h] + sizes[h] - 1`` with
    ``offset`` the running sum of the sizes. Pass the result as ``shards=``
    (the sizes must then sum to the number of rows). A size of 0 (an empty
    row group) is allowed: the shard holds no row but keeps its place in the
    epoch's shard order. Raises TypeError/ValueError naming ``shards`` for
    sizes that are not whole numbers >= 0 in a 1-D sequence.
    """
    values = _whole_numbers(sizes, "shards", "shard_sizes(sizes)")
    if values.shape[0] == 0:
        raise ValueError("shards must list at least one shard size, got shard_sizes([]). "
                         "Pass the rows of every shard, e.g. shard_sizes([1000, 1000, 500]).")
    if (values < 0).any():
        at = int(np.flatnonzero(values < 0)[0])
        raise ValueError(
            f"shards must have sizes >= 0, got shard_sizes(...)[{at}]={int(values[at])}. "
            f"A size is the number of rows a shard holds; an empty shard has size 0.")
    return ShardSizes(values)


class ShardLayout:
    """The shards of N rows: ``index`` (per row, 0..H-1, unsigned), ``n_shards``, ``sizes``."""

    def __init__(self, index: np.ndarray, n_shards: int, sizes: np.ndarray, stored_in_order: bool):
        self.index = index
        self.n_shards = n_shards
        self.sizes = sizes
        self.stored_in_order = stored_in_order

    @property
    def n_rows(self) -> int:
        return int(self.index.shape[0])

    def fingerprint(self) -> str:
        """A digest of which rows share a shard and how shards are ranked (resume states)."""
        digest = hashlib.blake2b(digest_size=16)
        digest.update(np.asarray(self.sizes, dtype="<i8").tobytes())
        if not self.stored_in_order:
            digest.update(np.ascontiguousarray(self.index).astype("<u4", copy=False).tobytes())
        return digest.hexdigest()


def _smallest_unsigned(count: int):
    for dtype in (np.uint8, np.uint16, np.uint32):
        if count <= np.iinfo(dtype).max + 1:
            return dtype
    return np.uint64


def _whole_numbers(value, name: str, form: str) -> np.ndarray:
    """int64 values of a 1-D sequence of whole numbers (ints, or floats that are integral)."""
    if isinstance(value, (str, bytes)) or np.isscalar(value) or value is None:
        raise TypeError(
            f"{name} must be a 1-D sequence of whole numbers ({form}), got {name}={show(value)} "
            f"of type {type(value).__name__}.")
    try:
        array = np.asarray(value)
    except Exception as error:  # ragged lists, objects numpy cannot hold
        raise TypeError(f"{name} must be a 1-D sequence of whole numbers ({form}), got "
                        f"{name}={show(value)}: {error}") from None
    if array.ndim == 0:
        raise TypeError(
            f"{name} must be a 1-D sequence of whole numbers ({form}), got {name}={show(value)} "
            f"of type {type(value).__name__}.")
    if isinstance(value, (list, tuple)) and any(isinstance(v, (bool, np.bool_)) for v in value):
        raise TypeError(f"{name} must hold whole numbers, not booleans, got {name}="
                        f"{show(value)}. Pass {form} as integers.")
    if array.ndim != 1:
        raise ValueError(f"{name} must be 1-D ({form}), got an array of shape {array.shape}.")
    if array.dtype == np.bool_:
        raise TypeError(f"{name} must hold whole numbers, not booleans, got {name}="
                        f"{show(value)}. Pass {form} as integers.")
    if np.issubdtype(array.dtype, np.integer):
        if array.dtype == np.uint64 and array.shape[0] and int(array.max()) > np.iinfo(np.int64).max:
            raise ValueError(f"{name} must hold whole numbers below 2**63, got {name}="
                             f"{show(value)}.")
        return array.astype(np.int64, copy=False)
    if np.issubdtype(array.dtype, np.floating):
        bad = ~np.isfinite(array)
        bad |= ~bad & (np.floor(np.where(bad, 0, array)) != np.where(bad, 0, array))
        if bad.any():
            at = int(np.flatnonzero(bad)[0])
            raise ValueError(
                f"{name} must hold whole numbers ({form}), got {name}[{at}]={array[at]!r}. "
                f"Ids and sizes count shards and rows: pass integers (NaN has no shard).")
        if array.shape[0] and float(np.abs(array).max()) >= 2.0**53:
            raise ValueError(f"{name} must hold whole numbers below 2**53 when given as floats, "
                             f"got {name}={show(value)}. Pass an integer array.")
        return array.astype(np.int64)
    raise TypeError(
        f"{name} must hold whole numbers ({form}), got {name}={show(value)} of dtype "
        f"{array.dtype}. Pass integer shard ids (or shard_sizes(sizes)).")


def read_shards(shards, n_rows: int) -> ShardLayout:
    """The :class:`ShardLayout` of ``shards`` (ids per row, or :func:`shard_sizes`) for ``n_rows``.

    Ids are labels: shard ``h`` is the ``h``-th smallest distinct id.
    Raises TypeError/ValueError naming ``shards`` (wrong length, negative or
    non-integral ids, sizes not summing to the rows).
    """
    if isinstance(shards, ShardSizes):
        sizes = shards.sizes
        total = int(sizes.sum())
        if total != n_rows:
            raise ValueError(
                f"shards must cover every row: shard_sizes(...) sums to {total:,} rows, got "
                f"{n_rows:,} rows of strata. Pass the sizes of every shard (row group) of this "
                f"data, in storage order.")
        count = int(sizes.shape[0])
        index = np.repeat(np.arange(count, dtype=_smallest_unsigned(count)), sizes)
        return ShardLayout(index, count, sizes, True)
    ids = _whole_numbers(shards, "shards", "a shard id per row")
    if ids.shape[0] != n_rows:
        raise ValueError(
            f"shards must hold one shard id per row: got {ids.shape[0]:,} ids for {n_rows:,} "
            f"rows. Pass an id per row of strata, or shard_sizes(sizes) for rows stored shard "
            f"after shard.")
    if n_rows == 0:
        return ShardLayout(np.empty(0, dtype=np.uint8), 0, np.empty(0, dtype=np.int64), True)
    low = int(ids.min())
    if low < 0:
        at = int(np.argmin(ids))
        raise ValueError(f"shards must hold ids >= 0, got shards[{at}]={low}. Shard ids are "
                         f"non-negative integers (labels; they need not be contiguous).")
    high = int(ids.max())
    if high < max(2 * n_rows, _TABLE_IDS):
        counts = np.bincount(ids, minlength=high + 1)
        present = counts > 0
        count = int(present.sum())
        rank = np.cumsum(present) - 1
        index = rank.astype(_smallest_unsigned(count))[ids]
        sizes = counts[present].astype(np.int64)
    else:
        distinct, inverse, sizes = np.unique(ids, return_inverse=True, return_counts=True)
        count = int(distinct.shape[0])
        index = inverse.reshape(-1).astype(_smallest_unsigned(count))
        sizes = sizes.astype(np.int64)
    in_order = bool(np.all(index[1:] >= index[:-1]))
    return ShardLayout(index, count, sizes, in_order)


def check_window(window) -> int:
    """``window`` as an int >= 1 (any size: a window of H or more is one block)."""
    if isinstance(window, (bool, np.bool_)) or not isinstance(window, (numbers.Integral,
                                                                         np.integer)):
        raise TypeError(
            f"window must be an integer >= 1 (shards per block), got window={show(window)} of "
            f"type {type(window).__name__}. Pass e.g. window=1 (one shard open per stratum) or "
            f"window=4.")
    value = operator.index(window)
    if value < 1:
        raise ValueError(
            f"window must be an integer >= 1 (shards per block), got window={value}. Pass "
            f"window=1 for the most locality; a window of the shard count or more gives the "
            f"row-random order.")
    return value
