"""Member lists: the rows of every stratum, for plans that look rows up on demand.

The lazy plan (``rng="index"``) needs "the i-th row of stratum s" in O(1).
:class:`StratumMembers` answers it from one of two layouts:

* ranges (rows already grouped by stratum, e.g. data written partitioned by
  label): stratum ``s`` is rows ``starts[s] .. starts[s] + sizes[s] - 1``;
  memory O(S), whatever N is;
* one member array (any row order): ``rows[offsets[s]:offsets[s + 1]]`` are the
  rows of stratum ``s`` in increasing order (a stable grouping by stratum),
  int32 when N < 2**31, else int64, built chunk by chunk from the codes.

The member array can live in a ``.npy`` file (numpy's own format) that is
memory-mapped read-only, so DataLoader workers and the local ranks of one
machine share one copy; a memory-mapped ``StratumMembers`` pickles as its
directory, so spawned workers map the same file instead of copying it.
"""

from __future__ import annotations

import hashlib
import json
import os
from dataclasses import dataclass, field

import numpy as np

from .. import kernels as kernel_gate

__all__ = ["grouped_strata", "members_of_labels", "MemberWriter", "RunTracker", "StratumMembers",
           "members_digest", "members_of_codes", "members_of_runs", "row_values"]

# Integer labels spanning fewer values than this are counted by chunked bincount.
_DENSE_LABEL_SPAN = 1 << 16
# Rows grouped per step: the sort's temporaries stay small at any N.
_CHUNK_ROWS = 1 << 22
_ROWS_FILE = "rows.npy"
# Up to this many strata the member array is filled by one scan per stratum.
_FEW_STRATA = 4
_STRATA_FILE = "strata.json"


@dataclass(frozen=True, eq=False)
class StratumMembers:
    """Where each stratum's rows are, in increasing row order.

    sizes:      int64 ``(S,)``, rows per stratum (each >= 1).
    labels:     one label per stratum (the order of the strata codes).
    first_rows: int64 ``(S,)``, each stratum's first row (policies and the
                stream order strata by it, a property of the data).
    starts:     int64 ``(S,)`` when every stratum is one run of rows, else None.
    rows:       int32/int64 ``(N,)`` member array when the strata are not runs.
    directory:  where ``rows`` is memory-mapped from, if it is.
    """

    sizes: np.ndarray
    labels: tuple
    first_rows: np.ndarray
    starts: np.ndarray | None = None
    rows: np.ndarray | None = None
    directory: str | None = None
    offsets: np.ndarray = field(init=False)

    def __post_init__(self):
        offsets = np.zeros(self.sizes.shape[0] + 1, dtype=np.int64)
        np.cumsum(self.sizes, out=offsets[1:])
        object.__setattr__(self, "offsets", offsets)

    @property
    def n_rows(self) -> int:
        return int(self.offsets[-1])

    @property
    def n_strata(self) -> int:
        return int(self.sizes.shape[0])

    @property
    def grouped(self) -> bool:
        """True when every stratum is one run of consecutive rows (O(S) memory)."""
        return self.rows is None

    def member(self, strata, positions) -> np.ndarray:
        """int64 rows: member ``positions[i]`` (0-based, increasing row order) of ``strata[i]``."""
        strata = np.asarray(strata)
        positions = np.asarray(positions, dtype=np.int64)
        if self.rows is None:
            return self.starts[strata] + positions
        return self.rows[self.offsets[strata] + positions].astype(np.int64, copy=False)

    def save(self, directory) -> "StratumMembers":
        """Write to ``directory`` (created) and return the memory-mapped copy.

        ``rows.npy`` holds the member array (absent for runs), ``strata.json``
        the sizes, first rows, starts and labels (JSON values; tuples of
        multi-column strata come back as tuples).
        """
        directory = os.fspath(directory)
        os.makedirs(directory, exist_ok=True)
        if self.rows is not None:
            np.save(os.path.join(directory, _ROWS_FILE), self.rows)
        _write_strata(directory, self)
        return StratumMembers.load(directory)

    @classmethod
    def load(cls, directory) -> "StratumMembers":
        """Open what :meth:`save` wrote; the member array is memory-mapped read-only."""
        directory = os.fspath(directory)
        with open(os.path.join(directory, _STRATA_FILE), encoding="utf-8") as handle:
            meta = json.load(handle)
        rows = None
        if meta["starts"] is None:
            rows = np.load(os.path.join(directory, _ROWS_FILE), mmap_mode="r")
        return cls(
            sizes=np.asarray(meta["sizes"], dtype=np.int64),
            labels=tuple(tuple(v) if isinstance(v, list) else v for v in meta["labels"]),
            first_rows=np.asarray(meta["first_rows"], dtype=np.int64),
            starts=None if meta["starts"] is None else np.asarray(meta["starts"], dtype=np.int64),
            rows=rows,
            directory=directory,
        )

    def __reduce__(self):
        if self.directory is not None:
            return (StratumMembers.load, (self.directory,))
        return super().__reduce__()


def members_digest(members: StratumMembers) -> str:
    """A fingerprint of the partition of rows into strata (labels and their order do not count).

    Strata are taken in order of first appearance, each as its run (start,
    size) or its member rows, so the same rows grouped the same way give the
    same digest whichever way the members were built (labels in memory,
    Parquet). O(S) for runs; one pass over the member array otherwise.
    """
    turn = np.argsort(members.first_rows, kind="stable")
    digest = hashlib.blake2b(digest_size=16)
    digest.update(np.int64(members.n_rows).tobytes())
    # Rows hashed in the width the builders use for this N (4 bytes below 2**31).
    width = np.int32 if members.n_rows <= np.iinfo(np.int32).max else np.int64
    digest.update(members.sizes[turn].astype(np.int64).tobytes())
    rows, offsets = members.rows, members.offsets
    for s in turn.tolist():
        lo, hi = int(offsets[s]), int(offsets[s + 1])
        if rows is None:
            first, last = int(members.starts[s]), int(members.starts[s]) + hi - lo - 1
        else:
            first, last = int(rows[lo]), int(rows[hi - 1])
        if last - first == hi - lo - 1:
            # A run (member rows are increasing, so first and last tell).
            digest.update(b"run" + np.int64(first).tobytes())
            continue
        digest.update(b"rows")
        for start in range(lo, hi, _CHUNK_ROWS):
            chunk = rows[start:min(start + _CHUNK_ROWS, hi)]
            digest.update(np.ascontiguousarray(chunk, dtype=width).tobytes())
    return digest.hexdigest()


def _json_label(label):
    if isinstance(label, tuple):
        return [_json_label(v) for v in label]
    if isinstance(label, np.generic):
        label = label.item()
    if label is None or isinstance(label, (bool, int, float, str)):
        return label
    raise TypeError(
        f"StratumMembers.save() writes labels as JSON, but label {label!r} of type "
        f"{type(label).__name__} is not a JSON value; encode the strata as ints or strings."
    )


def row_values(members: StratumMembers, per_stratum) -> np.ndarray:
    """``(N,)`` array: every row gets its stratum's entry of ``per_stratum``."""
    per_stratum = np.asarray(per_stratum)
    if members.rows is None:
        # The runs tile 0..N-1: in order of their starts they are the rows in order.
        turn = np.argsort(members.starts, kind="stable")
        return np.repeat(per_stratum[turn], members.sizes[turn])
    values = np.empty(members.n_rows, dtype=per_stratum.dtype)
    for s in range(members.n_strata):
        values[members.rows[members.offsets[s]:members.offsets[s + 1]]] = per_stratum[s]
    return values


def grouped_strata(sizes, labels=None) -> StratumMembers:
    """Strata of rows stored stratum by stratum: ``sizes[0]`` rows of the first, then ...

    O(S) memory for any N (pass it as ``strata`` to :func:`pystratum.lazy_plan`).
    """
    sizes_array = np.asarray(sizes)
    if sizes_array.ndim != 1 or sizes_array.shape[0] == 0 or sizes_array.dtype.kind not in "iu" \
            or (sizes_array < 1).any():
        raise ValueError(
            f"sizes must be a non-empty list of positive integers (rows of each stratum, "
            f"in storage order), got sizes={sizes!r}."
        )
    if labels is not None and len(labels) != sizes_array.shape[0]:
        raise ValueError(
            f"labels must have one label per stratum ({sizes_array.shape[0]}), got "
            f"{len(labels)} labels."
        )
    if labels is not None:
        _check_distinct_labels(labels)
    return members_of_runs(sizes_array, labels)


def _check_distinct_labels(labels):
    """Strata are told apart by their labels: two runs with one label would be two strata
    that every policy keyed by label (Targets, Downsample) cannot tell apart."""
    first = {}
    for k, label in enumerate(labels):
        try:
            j = first.setdefault(label, k)
        except TypeError:
            raise TypeError(
                f"labels must be hashable (strings, numbers, tuples), got labels[{k}]={label!r} "
                f"of type {type(label).__name__}."
            ) from None
        if j != k:
            raise ValueError(
                f"labels[{j}] and labels[{k}] are both {label!r}: each run of rows is one "
                f"stratum and needs its own label. If the two runs are one stratum, store its "
                f"rows together and give its size once."
            )


def members_of_runs(sizes, labels=None) -> StratumMembers:
    """Strata that are consecutive runs of rows: stratum ``s`` is the ``s``-th run.

    O(S) memory for any number of rows: the form for data stored grouped
    (e.g. partitioned) by stratum.
    """
    sizes = np.asarray(sizes, dtype=np.int64)
    starts = np.zeros(sizes.shape[0], dtype=np.int64)
    np.cumsum(sizes[:-1], out=starts[1:])
    if labels is None:
        labels = tuple(range(sizes.shape[0]))
    return StratumMembers(sizes=sizes, labels=tuple(labels), first_rows=starts, starts=starts)


def members_of_labels(values, *, directory=None):
    """Member lists straight from a 1-D numpy array of small integer (or bool) labels.

    Everything chunk by chunk (counts, runs, members): no N-sized temporary
    beside the member array, where encoding the whole column first would
    hold an 8-byte copy per row. Returns None for any other input (then the
    general encoder is used).
    """
    if not isinstance(values, np.ndarray) or values.ndim != 1 or values.shape[0] == 0 or \
            values.dtype.kind not in "iub":
        return None
    is_bool = values.dtype.kind == "b"
    if is_bool:
        values = values.view(np.int8)
    lo, hi = int(values.min()), int(values.max())
    if hi - lo >= _DENSE_LABEL_SPAN:
        return None
    n_rows = values.shape[0]
    lowest = values.dtype.type(lo)

    def offsets(chunk):
        # Subtracted in the labels' dtype only when unsigned (chunk >= lo, so
        # no wrap); signed labels widen first, or int8 -100 - 100 wraps round.
        if values.dtype.kind == "u":
            return (chunk - lowest).astype(np.intp, copy=False)
        return chunk.astype(np.intp) - lo

    counts = np.zeros(hi - lo + 1, dtype=np.int64)
    for start in range(0, n_rows, _CHUNK_ROWS):
        counts += np.bincount(offsets(values[start:start + _CHUNK_ROWS]),
                              minlength=counts.shape[0])
    present = np.flatnonzero(counts)
    code_of_value = np.full(counts.shape[0], -1, dtype=np.int64)
    code_of_value[present] = np.arange(present.shape[0])
    # Python ints: uint64 labels above 2**63 do not fit the offsets' int64.
    labels = [int(offset) + lo for offset in present.tolist()]
    # Values 0..k-1 all present are the codes already.
    table = None if lo == 0 and present.shape[0] == counts.shape[0] else code_of_value

    def chunks():
        for start in range(0, n_rows, _CHUNK_ROWS):
            chunk = values[start:start + _CHUNK_ROWS]
            yield (chunk if table is None else table[offsets(chunk)]), start

    if is_bool:
        labels = [bool(v) for v in labels]
    runs = RunTracker(present.shape[0])
    for chunk, start in chunks():
        runs.add(chunk, start)
    sizes = counts[present]
    if runs.grouped:
        return runs.members(sizes, labels)
    writer = MemberWriter(sizes, n_rows, directory)
    for chunk, start in chunks():
        writer.add(chunk, start)
    return writer.finish(labels, runs.first_rows)


def members_of_codes(codes, sizes, labels, *, directory=None) -> StratumMembers:
    """Member lists of integer codes ``0..S-1`` (every code present), chunk by chunk.

    When every stratum is one run of rows the result holds ranges (O(S));
    otherwise one member array (stable grouping: rows of a stratum in
    increasing order), written to ``directory/rows.npy`` and memory-mapped
    when ``directory`` is given. Peak extra memory: the member array plus
    O(chunk).
    """
    n_rows = int(codes.shape[0])
    runs = RunTracker(len(sizes))
    for start in range(0, n_rows, _CHUNK_ROWS):
        runs.add(np.asarray(codes[start:start + _CHUNK_ROWS]), start)
    if runs.grouped:
        return runs.members(sizes, labels)
    writer = MemberWriter(sizes, n_rows, directory)
    for start in range(0, n_rows, _CHUNK_ROWS):
        writer.add(np.asarray(codes[start:start + _CHUNK_ROWS]), start)
    return writer.finish(labels, runs.first_rows)


class RunTracker:
    """First row of each code and whether every code is one run, fed chunk by chunk."""

    def __init__(self, n_strata: int):
        self.first_rows = np.full(n_strata, -1, dtype=np.int64)
        self.runs = 0
        self._previous = None

    def add(self, chunk, start: int) -> None:
        if chunk.shape[0] == 0:
            return
        change = np.flatnonzero(chunk[1:] != chunk[:-1]) + 1
        if self._previous is None or chunk[0] != self._previous:
            change = np.concatenate([[0], change])
        self.runs += change.shape[0]
        run_codes = chunk[change]
        unseen = self.first_rows[run_codes] < 0
        if unseen.any():
            # A code's first row starts its first run.
            new_codes, first = np.unique(run_codes[unseen], return_index=True)
            self.first_rows[new_codes] = change[unseen][first] + start
        self._previous = chunk[-1]

    @property
    def grouped(self) -> bool:
        return self.runs == self.first_rows.shape[0]

    def members(self, sizes, labels) -> StratumMembers:
        """The ranges form (only when :attr:`grouped`)."""
        return StratumMembers(sizes=np.asarray(sizes, dtype=np.int64), labels=tuple(labels),
                              first_rows=self.first_rows, starts=self.first_rows)


class MemberWriter:
    """Builds the member array from chunks of codes given in row order."""

    def __init__(self, sizes, n_rows: int, directory=None):
        self.sizes = np.asarray(sizes, dtype=np.int64)
        self.directory = directory
        dtype = np.int32 if n_rows <= np.iinfo(np.int32).max else np.int64
        if directory is not None:
            os.makedirs(os.fspath(directory), exist_ok=True)
            self.rows = np.lib.format.open_memmap(
                os.path.join(os.fspath(directory), _ROWS_FILE), mode="w+", dtype=dtype,
                shape=(n_rows,))
        else:
            self.rows = np.empty(n_rows, dtype=dtype)
        self._write = np.zeros(self.sizes.shape[0], dtype=np.int64)
        np.cumsum(self.sizes[:-1], out=self._write[1:])
        self._kernels = None
        if self.sizes.shape[0] > _FEW_STRATA:
            # Few strata: numpy's scans are as fast, and need no numba import.
            self._kernels = kernel_gate.compiled_for("index", n_rows)

    def add(self, chunk, start: int) -> None:
        n_strata = self.sizes.shape[0]
        if self._kernels is not None and chunk.dtype.kind in "iu":
            # Many strata: one pass appending each row to its stratum (a
            # counting sort), half the time of the sort below; the same array.
            self._kernels.write_members(chunk, start, self._write, np.asarray(self.rows))
            return
        if n_strata <= _FEW_STRATA:
            # Few strata: one scan per stratum, sequential writes.
            for s in range(n_strata):
                where = np.flatnonzero(chunk == s)
                stop = self._write[s] + where.shape[0]
                where += start
                self.rows[self._write[s]:stop] = where
                self._write[s] = stop
            return
        order = np.argsort(chunk, kind="stable")  # radix sort for 8/16-bit codes
        sorted_codes = chunk[order]
        per_stratum = np.bincount(sorted_codes, minlength=n_strata)
        destination = np.arange(order.shape[0], dtype=np.int64)
        destination += (self._write - (np.cumsum(per_stratum) - per_stratum))[sorted_codes]
        order += start
        self.rows[destination] = order
        self._write += per_stratum

    def finish(self, labels, first_rows) -> StratumMembers:
        members = StratumMembers(sizes=self.sizes, labels=tuple(labels), first_rows=first_rows,
                                 rows=self.rows)
        if self.directory is None:
            return members
        self.rows.flush()
        self.rows = None
        _write_strata(self.directory, members)
        return StratumMembers.load(self.directory)


def _write_strata(directory, members):
    meta = {
        "sizes": members.sizes.tolist(),
        "first_rows": members.first_rows.tolist(),
        "starts": None if members.starts is None else members.starts.tolist(),
        "labels": [_json_label(label) for label in members.labels],
    }
    with open(os.path.join(os.fspath(directory), _STRATA_FILE), "w", encoding="utf-8") as handle:
        json.dump(meta, handle)
