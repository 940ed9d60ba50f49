"""A reader's shards checked to hold one kind of rows: the same type, dtype, row shape, columns.

A batch joins rows of several shards. Rows of different kinds (1-D and 2-D
arrays, a list and an array, int64 and float64, tables or samples with other
columns) would fail deep inside numpy or pyarrow, or worse join silently into
a batch whose type depends on which shards it touched. Each shard is checked
once, when it is loaded, against the first shard loaded; the error names
``reader.load(shard)``, both shards, what differs and the fix.
"""

from __future__ import annotations

import numpy as np

__all__ = ["CheckedLoads", "checked_loads", "schema_differences"]

_TYPES = ("a pyarrow Table or RecordBatch, a numpy array (rows along axis 0) or a list (one "
          "item per row)")


def checked_loads(reader):
    """``reader`` with a ``load`` that checks each shard against the first one loaded; a reader
    that takes its own rows (``take``, ``concat``) decides its own types and is left as it is."""
    if getattr(reader, "take", None) is not None:
        return reader
    return CheckedLoads(reader)


class CheckedLoads:
    """``reader.load`` with the check; every other attribute is the reader's."""

    def __init__(self, reader):
        self._reader = reader
        self._first = None  # (shard, its kind of rows) of the first shard loaded

    def __getattr__(self, name):
        if name.startswith("_"):  # unpickling looks up hooks before _reader exists
            raise AttributeError(name)
        return getattr(self._reader, name)

    def load(self, shard):
        rows = self._reader.load(shard)
        kind = _kind(rows, shard)
        if self._first is None:
            self._first = (shard, kind)
        elif kind != self._first[1]:
            raise _mismatch(shard, kind, *self._first)
        return rows


def _kind(rows, shard):
    """What must agree from shard to shard: ``(type, detail)``."""
    try:
        import pyarrow as pa
    except ImportError:  # pragma: no cover - exercised only without pyarrow
        pa = None
    if pa is not None and isinstance(rows, (pa.Table, pa.RecordBatch)):
        if rows.num_columns == 0:
            raise ValueError(
                f"reader.load({shard}) must return a table with at least one column, got "
                f"{rows.num_rows} rows and no column: pyarrow's take and concat_tables drop the "
                f"rows of a table without columns. Load at least one column.")
        return ("table", rows.schema.remove_metadata())
    if isinstance(rows, np.ndarray):
        if rows.ndim == 0:
            raise ValueError(f"reader.load({shard}) must return rows along axis 0, got a 0-d "
                             f"array ({rows!r}): return an array with one entry per row.")
        return ("array", (rows.dtype, rows.shape[1:]))
    if isinstance(rows, (list, tuple)):
        return ("list", _sample_keys(rows, shard))
    if isinstance(rows, dict):
        raise TypeError(
            f"reader.load({shard}) must return {_TYPES}, got a dict (keys "
            f"{sorted(map(str, rows))[:8]}): for columns return pyarrow.table(columns); for "
            f"samples return a list of dicts; or give the reader take(rows, offsets), "
            f"concat(parts) and nbytes(rows).")
    raise TypeError(f"reader.load({shard}) must return {_TYPES}, got {type(rows).__name__}: "
                    f"give the reader take(rows, offsets), concat(parts) and nbytes(rows) "
                    f"methods for other types.")


def _sample_keys(rows, shard):
    """The keys of a list's samples when they are dicts (all of them the same), else None."""
    if not rows:
        return None
    # One C-level comparison per row: a shard is checked at every load, so no sorting per row.
    keys = rows[0].keys() if isinstance(rows[0], dict) else None
    if keys is None:
        odd = next((i for i, row in enumerate(rows) if isinstance(row, dict)), None)
    else:
        odd = next((i for i, row in enumerate(rows)
                    if not isinstance(row, dict) or row.keys() != keys), None)
    if odd is not None:
        raise ValueError(
            f"reader.load({shard}) must return samples of one kind, got row {odd} "
            f"{_keys_text(_names(rows[odd]))} but row 0 {_keys_text(_names(rows[0]))}: a batch "
            f"of them could not be collated. Give every sample the same keys.")
    return _names(rows[0])


def _names(row):
    """A sample's keys, sorted (by repr: keys 1 and "1" differ, as collation sees them), or None
    when it is not a dict."""
    return tuple(sorted(row, key=repr)) if isinstance(row, dict) else None


def _keys_text(keys) -> str:
    return "not a dict" if keys is None else f"with keys {list(keys)}"


def _mismatch(shard, kind, first_shard, first_kind) -> Exception:
    here, there = f"reader.load({shard})", f"reader.load({first_shard})"
    if kind[0] != first_kind[0]:
        names = {"table": "a pyarrow table", "array": "a numpy array", "list": "a list"}
        return TypeError(
            f"{here} must return the same type of rows as every other shard, got "
            f"{names[kind[0]]} but {there} returned {names[first_kind[0]]}: a batch mixing the "
            f"two shards could not be joined. Return one type from load() for every shard.")
    if kind[0] == "array":
        (dtype, shape), (first_dtype, first_shape) = kind[1], first_kind[1]
        if dtype != first_dtype:
            return TypeError(
                f"{here} must return rows of one dtype for every shard, got {dtype} but {there} "
                f"returned {first_dtype}: a batch's dtype would depend on the shards it touches. "
                f"Cast in load() (e.g. rows.astype(np.{first_dtype})).")
        return ValueError(
            f"{here} must return rows of one shape for every shard, got rows of shape {shape} "
            f"({len(shape) + 1}-D array) but {there} returned rows of shape {first_shape} "
            f"({len(first_shape) + 1}-D array): they cannot be joined into one batch. Return "
            f"arrays with the same shape after axis 0 for every shard.")
    if kind[0] == "list":
        return ValueError(
            f"{here} must return samples of one kind for every shard, got samples "
            f"{_keys_text(kind[1])} but {there} returned samples {_keys_text(first_kind[1])}: "
            f"a batch mixing the two shards could not be collated. Give every sample the same "
            f"keys.")
    notes = schema_differences(first_kind[1], kind[1])
    return ValueError(
        f"{here} must return tables of one schema for every shard, but it differs from "
        f"{there}'s: {'; '.join(notes) or 'column order or nullability'}. Return the same "
        f"columns with the same types from load() for every shard (e.g. table.cast(schema)).")


def schema_differences(first, schema) -> list:
    """How Arrow schema ``schema`` differs from ``first`` in words: each shared column whose
    type changed (``"'a': int64 -> double"``), then the columns missing and extra; empty when
    only the column order or nullability differ."""
    notes = [f"{name!r}: {first.field(name).type} -> {schema.field(name).type}"
             for name in first.names if name in schema.names
             and not schema.field(name).type.equals(first.field(name).type)]
    missing = [n for n in first.names if n not in schema.names]
    extra = [n for n in schema.names if n not in first.names]
    if missing:
        notes.append(f"missing {missing!r}")
    if extra:
        notes.append(f"extra {extra!r}")
    return notes
