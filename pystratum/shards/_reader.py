"""The reader protocol, the row -> (shard, offset) map and the few operations on decoded rows.

A reader stores its rows shard after shard: shard ``h`` holds rows
``starts[h] .. starts[h] + shard_sizes[h] - 1``, the numbering the batches
use (for Parquet: the files in order, each file's row groups in order, the
numbering :func:`pystratum.parquet_strata` gives). Decoded rows may be a
``pyarrow.Table`` or ``RecordBatch``, a numpy array (rows along axis 0) or a
list (e.g. one dict per sample); a reader with another type defines
``take(rows, offsets)``, ``concat(parts)`` and ``nbytes(rows)`` itself.
"""

from __future__ import annotations

import sys
from typing import Any, Protocol, runtime_checkable

import numpy as np

from ..base._validation import show

__all__ = ["NumericColumns", "RowLocator", "RowOps", "ShardReader", "check_shard_sizes"]


@runtime_checkable
class ShardReader(Protocol):
    """Anything whose rows live in shards that are read whole.

    ``shard_sizes``: rows per shard (non-negative integers; an empty shard
    keeps its place). ``load(shard)`` returns the decoded rows of shard
    ``shard`` (0-based), exactly ``shard_sizes[shard]`` of them, in storage
    order. ``fingerprint()`` (optional) returns a JSON-able description of
    the stored data that changes when the data does; resume states record it.
    ``check_unchanged()`` (optional) raises ValueError when the stored data
    changed since the reader was built; it runs once at the start of every
    epoch and resume (in each worker), before any row is served, so ``load``
    need not check the data itself.
    """

    shard_sizes: Any

    def load(self, shard: int) -> Any:
        ...


def check_shard_sizes(sizes, name: str = "shard_sizes") -> np.ndarray:
    """``sizes`` as a 1-D int64 array of non-negative integers holding at least one row."""
    array = np.asarray(sizes)
    if array.ndim != 1 or array.shape[0] == 0:
        raise ValueError(f"{name} must be a non-empty 1-D sequence of rows per shard, got "
                         f"{name}={show(sizes)} of shape {array.shape}.")
    if array.dtype.kind not in "iu":
        # Whole floats below 2**63 only: larger ones would wrap when cast to int64.
        if array.dtype.kind == "f" and np.all(np.isfinite(array)) and \
                np.all(array == np.round(array)) and np.all(np.abs(array) < 2.0**63):
            array = array.astype(np.int64)
        else:
            raise TypeError(f"{name} must hold integers (rows per shard), got {name}={show(sizes)} "
                            f"of dtype {array.dtype}.")
    limit = np.iinfo(np.int64).max
    if array.dtype.kind == "u" and int(array.max()) > limit:
        raise ValueError(f"{name} must hold fewer than 2**63 rows per shard, got "
                         f"{int(array.max())}.")
    array = array.astype(np.int64)
    if np.any(array < 0):
        first = int(np.flatnonzero(array < 0)[0])
        raise ValueError(f"{name} must be >= 0 everywhere, got {name}[{first}]={int(array[first])}; "
                         f"a shard holds zero or more rows.")
    # Row positions are int64: a total past 2**63 - 1 would wrap to negative row counts.
    if int(array.max()) > limit // array.shape[0] and sum(array.tolist()) > limit:
        raise ValueError(f"{name} must sum to fewer than 2**63 rows (row positions are 64-bit), "
                         f"got {name}={show(sizes)} summing to {sum(array.tolist())}.")
    if int(array.sum()) == 0:
        raise ValueError(f"{name} must hold at least one row in total, got {name}={show(sizes)}: "
                         f"every shard is empty.")
    return array


class NumericColumns:
    """A decoded Arrow table of fixed-width numeric columns without nulls, held as one numpy
    array per column, so that gathering rows is a numpy take per column (no pyarrow call and
    no Python object per row). :meth:`RowOps.finish` turns it back into a ``pyarrow.Table``."""

    __slots__ = ("schema", "arrays")

    def __init__(self, schema, arrays: list):
        self.schema = schema
        self.arrays = arrays

    @classmethod
    def of(cls, table):
        """``table`` as columns, or None when a column is not fixed-width numeric or has nulls."""
        import pyarrow as pa

        if not isinstance(table, pa.Table):
            return None
        arrays = []
        for column in table.columns:
            kind = column.type
            if not (pa.types.is_integer(kind) or pa.types.is_floating(kind)) or column.null_count:
                return None
            arrays.append(column.to_numpy())  # zero-copy for one chunk
        return cls(table.schema, arrays)

    @property
    def num_rows(self) -> int:
        return int(self.arrays[0].shape[0]) if self.arrays else 0

    @property
    def nbytes(self) -> int:
        return int(sum(array.nbytes for array in self.arrays))

    def take(self, offsets) -> "NumericColumns":
        return NumericColumns(self.schema, [array[offsets] for array in self.arrays])

    def table(self):
        import pyarrow as pa

        return pa.Table.from_arrays(self.arrays, schema=self.schema)


class RowLocator:
    """Row position -> (shard, offset in shard), for rows stored shard after shard."""

    def __init__(self, sizes: np.ndarray):
        self.sizes = sizes
        self.ends = np.cumsum(sizes)
        self.starts = self.ends - sizes
        self.n_rows = int(self.ends[-1])

    def locate(self, rows, what: str = "batch") -> tuple[np.ndarray, np.ndarray]:
        """``(shard, offset)`` of each row; rows outside ``[0, n_rows)`` are refused."""
        rows = np.asarray(rows)
        if rows.dtype.kind not in "iu":
            raise TypeError(f"{what} must hold integer row positions, got dtype {rows.dtype}.")
        rows = rows.astype(np.int64, copy=False)
        if rows.size and (rows.min() < 0 or rows.max() >= self.n_rows):
            bad = int(rows[(rows < 0) | (rows >= self.n_rows)][0])
            raise ValueError(
                f"{what} must hold rows in [0, {self.n_rows}), got row {bad}: the plan's rows do "
                f"not match the reader's shards ({self.n_rows} rows in {self.sizes.shape[0]} "
                f"shards). Build the plan from the same data, in the reader's row order.")
        shard = np.searchsorted(self.ends, rows, side="right")
        return shard, rows - self.starts[shard]


class RowOps:
    """take / concat / count / nbytes of decoded rows, the reader's own methods first."""

    def __init__(self, reader):
        self._reader = reader
        # False: numeric Arrow batches are served as NumericColumns, for a caller that joins
        # several batches into one payload (a pyarrow.Table per batch would be made for nothing)
        self.tables = True

    def count(self, rows) -> int:
        if hasattr(rows, "num_rows"):
            return int(rows.num_rows)
        if isinstance(rows, np.ndarray):
            return int(rows.shape[0]) if rows.ndim else -1
        if isinstance(rows, (list, tuple)) or getattr(self._reader, "take", None) is not None:
            return len(rows)
        raise self._unknown(rows)

    @staticmethod
    def _unknown(rows) -> TypeError:
        return TypeError(
            f"reader.load() must return a pyarrow Table/RecordBatch, a numpy array or a list, got "
            f"{type(rows).__name__}: give the reader take(rows, offsets), concat(parts) and "
            f"nbytes(rows) methods for other types.")

    def prepare(self, rows):
        """Decoded rows as the cache keeps them: numeric Arrow tables as :class:`NumericColumns`
        (unless the reader takes rows itself), anything else as it is."""
        if getattr(self._reader, "take", None) is None:
            columns = NumericColumns.of(rows)
            if columns is not None:
                return columns
        return rows

    def finish(self, rows):
        """Served rows as the reader decodes them (a ``pyarrow.Table`` for numeric columns, or
        :class:`NumericColumns` when ``self.tables`` is False)."""
        return rows.table() if self.tables and isinstance(rows, NumericColumns) else rows

    def scatter(self, parts: list, places: list, n: int):
        """One batch of ``n`` rows from ``parts``: row ``i`` of ``parts[j]`` goes to place
        ``places[j][i]``. Numeric columns and numpy arrays are written in place, one array per
        column; other rows are concatenated and reordered with :meth:`take`."""
        first = parts[0]
        if isinstance(first, NumericColumns) and all(isinstance(p, NumericColumns) for p in parts):
            columns = []
            for c, array in enumerate(first.arrays):
                out = np.empty(n, dtype=array.dtype)
                for part, place in zip(parts, places):
                    out[place] = part.arrays[c]
                columns.append(out)
            return NumericColumns(first.schema, columns)
        if getattr(self._reader, "take", None) is None and isinstance(first, np.ndarray) and \
                all(isinstance(p, np.ndarray) and p.dtype == first.dtype for p in parts):
            out = np.empty((n,) + first.shape[1:], dtype=first.dtype)
            for part, place in zip(parts, places):
                out[place] = part
            return out
        return self.take(self.concat(parts), np.argsort(np.concatenate(places), kind="stable"))

    def take(self, rows, offsets: np.ndarray):
        if isinstance(rows, NumericColumns):
            return rows.take(offsets)
        own = getattr(self._reader, "take", None)
        if own is not None:
            return own(rows, offsets)
        if hasattr(rows, "num_rows"):
            return rows.take(offsets)
        if isinstance(rows, np.ndarray):
            return rows[offsets]
        if isinstance(rows, (list, tuple)):
            return [rows[i] for i in offsets.tolist()]
        raise self._unknown(rows)

    def concat(self, parts: list):
        own = getattr(self._reader, "concat", None)
        if own is not None:
            return own(parts)
        first = parts[0]
        if isinstance(first, NumericColumns) and all(isinstance(p, NumericColumns) for p in parts):
            return NumericColumns(first.schema, [np.concatenate([p.arrays[c] for p in parts])
                                                 for c in range(len(first.arrays))])
        parts = [part.table() if isinstance(part, NumericColumns) else part for part in parts]
        first = parts[0]
        if hasattr(first, "num_rows"):
            import pyarrow as pa

            if isinstance(first, pa.RecordBatch):
                parts = [pa.Table.from_batches([p]) for p in parts]
            return pa.concat_tables(parts) if len(parts) > 1 else parts[0]
        if isinstance(first, np.ndarray):
            return np.concatenate(parts) if len(parts) > 1 else first
        return [row for part in parts for row in part]

    def nbytes(self, rows) -> int:
        if isinstance(rows, NumericColumns):
            return rows.nbytes
        own = getattr(self._reader, "nbytes", None)
        if own is not None:
            return int(own(rows))
        if hasattr(rows, "nbytes"):
            return int(rows.nbytes)
        # Lists: the list and each item's own size, one level deep (dict samples:
        # their values), an estimate that counts the payload bytes.
        total = sys.getsizeof(rows)
        for row in rows:
            if isinstance(row, dict):
                total += sys.getsizeof(row) + sum(sys.getsizeof(v) for v in row.values())
            else:
                total += sys.getsizeof(row)
        return total
