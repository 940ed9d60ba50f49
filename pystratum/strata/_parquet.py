"""Strata from Parquet/Arrow datasets too big for memory (optional: ``pyarrow``).

Only the stratum column(s) are read, in record batches, through
``pyarrow.dataset``; no other column is ever materialised. Counts, first
rows and the run structure come from a first pass; when the rows are not
grouped by stratum, a second pass fills the member array chunk by chunk.

Rows are numbered in the order the files are read: the files as listed
when a list is given, else sorted by path (pyarrow gives no order for a
discovered directory), each file's rows in order. That is the row order a
reader of the same files in the same order sees, and the numbering the
batches use.
"""

from __future__ import annotations

import math
import os

import numpy as np

from ._members import MemberWriter, RunTracker, StratumMembers
from ._encode import raise_missing

__all__ = ["parquet_strata"]

_BATCH_ROWS = 1 << 20


def parquet_strata(source, columns, *, format="parquet", filesystem=None,
                   batch_rows: int = _BATCH_ROWS, members_directory=None) -> StratumMembers:
    """Member lists of the strata in ``columns`` of a Parquet (or Arrow) dataset.

    source:  a file or directory path, a list of files, an fsspec URL
             (``"s3://bucket/data/"``, ``"memory://..."``) or a
             ``pyarrow.dataset.Dataset``.
    columns: the stratum column name, or a list of them (every distinct
             combination of values is one stratum, labels are tuples); a
             column listed twice is refused (ValueError).
    format:  ``"parquet"``, ``"arrow"``/``"ipc"`` or ``"feather"`` (pyarrow's names).
    members_directory: write the member array there (``rows.npy``) and map
             it read-only, so DataLoader workers and local ranks share it.

    Returns a :class:`~pystratum.strata._members.StratumMembers` to pass as
    ``strata`` to :func:`pystratum.lazy_plan` (or the sampler with
    ``rng="index"``). Memory: O(S) when the rows are grouped by stratum
    (e.g. written partitioned by label), else the member array (4 bytes per
    row below 2**31 rows) plus one record batch. A missing value (null, or
    NaN in a float column) raises a ValueError naming the column and the
    0-based row. Values a dictionary-encoded (categorical) column lists but
    no row has are no strata, as for an in-memory categorical.
    """
    try:
        import pyarrow as pa
        import pyarrow.dataset as ds
    except ImportError:  # pragma: no cover - exercised only without pyarrow
        raise ImportError(
            "parquet_strata needs pyarrow: pip install 'stratabatch[parquet]'."
        ) from None
    names = [columns] if isinstance(columns, str) else list(columns) \
        if isinstance(columns, (list, tuple)) else None
    if not names or not all(isinstance(c, str) for c in names):
        raise TypeError(
            f"columns must be a column name or a non-empty list of column names, got "
            f"columns={columns!r}."
        )
    repeated = sorted({c for c in names if names.count(c) > 1})
    if repeated:
        raise ValueError(
            f"columns lists {repeated!r} more than once (columns={columns!r}); a repeated "
            f"column adds nothing to the strata: list each column once."
        )
    dataset = _open_dataset(source, format, filesystem, ds, pa)
    missing = [c for c in names if c not in dataset.schema.names]
    if missing:
        raise ValueError(
            f"columns {missing!r} not found in the dataset; its columns are "
            f"{dataset.schema.names!r}."
        )
    fragments = _ordered_fragments(dataset, source)

    def record_batches():
        for fragment in fragments:
            yield from fragment.to_batches(columns=names, batch_size=batch_rows,
                                           use_threads=False)

    encoder = _Encoder(names)
    runs = None
    counts = np.zeros(0, dtype=np.int64)
    start = 0
    for batch in record_batches():
        codes = encoder.encode(batch, start)
        if runs is None or runs.first_rows.shape[0] < encoder.n_codes:
            runs = _grow_tracker(runs, encoder.n_codes)
        if counts.shape[0] < encoder.n_codes:
            counts = np.concatenate([counts, np.zeros(encoder.n_codes - counts.shape[0],
                                                      dtype=np.int64)])
        counts += np.bincount(codes, minlength=counts.shape[0])
        runs.add(codes, start)
        start += codes.shape[0]
    if start == 0:
        raise ValueError(f"the dataset at {source!r} has no rows; pass a dataset with data.")
    labels, code_of_appearance = encoder.sorted_labels()
    sizes = np.empty(counts.shape[0], dtype=np.int64)
    sizes[code_of_appearance] = counts
    first_rows = np.empty_like(sizes)
    first_rows[code_of_appearance] = runs.first_rows
    if runs.grouped:
        return StratumMembers(sizes=sizes, labels=labels, first_rows=first_rows,
                              starts=first_rows)
    writer = MemberWriter(sizes, start, members_directory)
    start = 0
    for batch in record_batches():
        codes = code_of_appearance[encoder.encode(batch, start)]
        writer.add(codes, start)
        start += codes.shape[0]
    return writer.finish(labels, first_rows)


def _open_dataset(source, format, filesystem, ds, pa):
    if isinstance(source, ds.Dataset):
        return source
    if isinstance(source, (str, os.PathLike)):
        source = os.fspath(source)
        if filesystem is None and "://" in source and not source.startswith("file://"):
            filesystem, source = _fsspec_filesystem(source)
    elif isinstance(source, (list, tuple)):
        source = [os.fspath(s) for s in source]
        if filesystem is None and source and "://" in source[0]:
            filesystem, first = _fsspec_filesystem(source[0])
            prefix = source[0][: len(source[0]) - len(first)]
            source = [s[len(prefix):] if s.startswith(prefix) else s for s in source]
    else:
        raise TypeError(
            f"source must be a path, a list of paths, an fsspec URL or a "
            f"pyarrow.dataset.Dataset, got source={source!r} of type {type(source).__name__}."
        )
    return ds.dataset(source, format=format, filesystem=filesystem)


def _fsspec_filesystem(url):
    """pyarrow's view of an fsspec filesystem, and the path inside it."""
    try:
        import fsspec
    except ImportError:
        raise ImportError(
            f"source={url!r} is a URL, which needs fsspec: pip install fsspec (or the "
            f"'parquet' extra), or pass a local path."
        ) from None
    from pyarrow.fs import FSSpecHandler, PyFileSystem

    fs, path = fsspec.core.url_to_fs(url)
    return PyFileSystem(FSSpecHandler(fs)), path


def _ordered_fragments(dataset, source):
    fragments = list(dataset.get_fragments())
    if isinstance(source, (list, tuple)) or not all(hasattr(f, "path") for f in fragments):
        return fragments  # the caller's order
    return sorted(fragments, key=lambda f: f.path)


def _grow_tracker(runs, n_codes):
    grown = RunTracker(n_codes)
    if runs is not None:
        known = runs.first_rows.shape[0]
        grown.first_rows[:known] = runs.first_rows
        grown.runs = runs.runs
        grown._previous = runs._previous
    return grown


class _Encoder:
    """Codes by order of first appearance across record batches."""

    def __init__(self, names):
        self.names = names
        self.column_codes = [dict() for _ in names]  # per column: value -> code
        self.column_labels = [[] for _ in names]
        self.combined = {}  # tuple of column codes -> combined code
        self.combined_labels = []

    @property
    def n_codes(self) -> int:
        return len(self.combined) if len(self.names) > 1 else len(self.column_labels[0])

    def encode(self, batch, start: int) -> np.ndarray:
        per_column = [self._encode_column(batch.column(k), k, start)
                      for k in range(len(self.names))]
        if len(per_column) == 1:
            return per_column[0]
        stacked = np.stack(per_column, axis=1)
        keys, inverse = np.unique(stacked, axis=0, return_inverse=True)
        table = np.empty(keys.shape[0], dtype=np.int64)
        for i, key in enumerate(map(tuple, keys.tolist())):
            code = self.combined.get(key)
            if code is None:
                code = self.combined[key] = len(self.combined_labels)
                self.combined_labels.append(tuple(
                    labels[c] for labels, c in zip(self.column_labels, key)))
            table[i] = code
        return table[inverse.reshape(-1)]

    def _encode_column(self, array, k, start):
        import pyarrow as pa

        name = self.names[k]
        if array.null_count:
            row = int(np.flatnonzero(array.is_null().to_numpy(zero_copy_only=False))[0])
            raise_missing(f"strata[{name!r}]", start + row, "null")
        if not pa.types.is_dictionary(array.type):
            array = array.dictionary_encode()
        indices = array.indices.to_numpy(zero_copy_only=False)
        values = array.dictionary.to_pylist()
        codes, labels = self.column_codes[k], self.column_labels[k]
        table = np.empty(len(values), dtype=np.int64)
        # A dictionary (a categorical's categories) may list values no row
        # has: they are no stratum, as for an in-memory categorical.
        used = np.bincount(indices, minlength=len(values)) > 0
        for i, value in enumerate(values):
            if not used[i]:
                continue
            if isinstance(value, float) and math.isnan(value):
                raise_missing(f"strata[{name!r}]", start + int(np.flatnonzero(indices == i)[0]),
                              "nan")
            code = codes.get(value)
            if code is None:
                code = codes[value] = len(labels)
                labels.append(value)
            table[i] = code
        return table[indices]

    def sorted_labels(self):
        """Labels sorted where they sort (as ``encode_strata``), and each code's new place."""
        labels = self.combined_labels if len(self.names) > 1 else self.column_labels[0]
        try:
            order = sorted(range(len(labels)), key=lambda i: labels[i])
        except TypeError:
            order = list(range(len(labels)))
        place = np.empty(len(labels), dtype=np.int64)
        place[np.asarray(order, dtype=np.int64)] = np.arange(len(labels))
        return tuple(labels[i] for i in order), place
