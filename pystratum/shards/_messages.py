"""Several consecutive batches of one worker's run in one message, and the order that hands
them out one at a time exactly as one batch per message would (numpy and pyarrow; no torch).

A ``DataLoader`` pays one message between processes per item, about as much as
gathering a few hundred rows; sending ``G`` consecutive batches of a worker's
run as one columnar chunk plus batch boundaries pays it once per ``G``
batches. The loader yields messages from its workers in turn; the batches
that one batch per message would have yielded come one from each worker in
turn. :func:`handout_order` gives that order (also after a resume at any
batch), and the receiving side takes each batch from its worker's message.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ._reader import NumericColumns

__all__ = ["BatchMessage", "handout_order", "pack_batches", "worker_run_lengths"]


@dataclass(eq=False, slots=True)
class BatchMessage:
    """Batches ``first .. first + len(self) - 1`` of worker ``worker``'s run, in one payload.

    ``kind``: ``"columns"`` (Arrow tables of numeric columns without nulls:
    one numpy array per column, all batches' rows end to end, and the
    schema), ``"table"`` (one ``pyarrow.Table``), ``"array"`` (one numpy
    array, rows along axis 0), ``"list"`` (one list) or ``"items"`` (one
    item per batch, as served or transformed). ``bounds``: batch ``i`` is
    rows ``bounds[i] .. bounds[i + 1] - 1`` of the payload; ``rows`` and
    ``weights`` (each None unless the dataset yields them) are the batches'
    row positions and importance weights end to end, cut by the same bounds.
    What the receiver derives from it (tensors, a table over the columns) is
    not part of it, so it travels as it was packed.
    """

    worker: int
    first: int
    bounds: np.ndarray
    rows: np.ndarray | None
    weights: np.ndarray | None
    kind: str
    payload: object
    schema: object = None

    def __len__(self) -> int:
        return int(self.bounds.shape[0] - 1)

    def __repr__(self) -> str:
        return (f"BatchMessage(worker={self.worker}, batches {self.first}.."
                f"{self.first + len(self) - 1}, kind={self.kind!r})")


def pack_batches(worker: int, first: int, rows: list, served: list, weights: list | None,
                 *, columns_only: bool = False, with_rows: bool = True) -> BatchMessage:
    """One message holding the batches ``served`` (their row positions ``rows``, weights
    ``weights`` or None), batches ``first ..`` of worker ``worker``'s run; the row positions
    travel only ``with_rows`` (otherwise they only cut the payload into batches).

    The payload is the cheapest form the served batches allow: numeric Arrow
    tables as one numpy array per column (pickled as plain buffers, about a
    third of a ``pyarrow.Table``'s cost), other tables, arrays and lists
    joined end to end, anything else one item per batch. ``columns_only``:
    join numeric Arrow tables only, every other kind stays one item per
    batch (the caller transforms them itself)."""
    sizes = np.fromiter((r.shape[0] for r in rows), dtype=np.int64, count=len(rows))
    bounds = np.zeros(len(rows) + 1, dtype=np.int64)
    np.cumsum(sizes, out=bounds[1:])
    joined_rows = np.concatenate(rows) if with_rows else None
    joined_weights = None if weights is None else np.concatenate(weights)
    kind, payload, schema = _join(served, columns_only)
    return BatchMessage(worker, first, bounds, joined_rows, joined_weights, kind, payload, schema)


def _join(served: list, columns_only: bool):
    """``(kind, payload, schema)`` of the served batches joined end to end, or one item each
    when they cannot be joined without changing a batch."""
    first = served[0]
    if isinstance(first, NumericColumns):  # served without a table per batch
        if all(isinstance(s, NumericColumns) and s.schema.equals(first.schema) for s in served):
            return "columns", [np.concatenate([s.arrays[c] for s in served])
                               for c in range(len(first.arrays))], first.schema
        served = [s.table() if isinstance(s, NumericColumns) else s for s in served]
        first = served[0]
    try:
        import pyarrow as pa
    except ImportError:  # pragma: no cover - exercised only without pyarrow
        pa = None
    if pa is not None and all(isinstance(s, pa.Table) for s in served) and \
            all(s.schema.equals(first.schema, check_metadata=True) for s in served):
        table = pa.concat_tables(served).combine_chunks() if len(served) > 1 else first
        columns = NumericColumns.of(table)
        if columns is not None:
            return "columns", columns.arrays, table.schema
        if not columns_only:
            return "table", table, None
    if columns_only:
        return "items", list(served), None
    if isinstance(first, np.ndarray) and first.ndim >= 1 and all(
            isinstance(s, np.ndarray) and s.dtype == first.dtype and s.shape[1:] == first.shape[1:]
            for s in served):
        return "array", np.concatenate(served), None
    if isinstance(first, list) and all(isinstance(s, list) for s in served):
        return "list", [row for s in served for row in s], None
    return "items", list(served), None


def worker_run_lengths(per_rank: int, num_workers: int) -> list:
    """Batches each of ``num_workers`` workers serves of a rank's ``per_rank``
    (:func:`pystratum.shards.run_batch_ids`' split)."""
    return [per_rank * (w + 1) // num_workers - per_rank * w // num_workers
            for w in range(num_workers)]


def handout_order(run_lengths: list, starts: list):
    """Worker of each next batch, in the order one batch per message yields them: batch ``j``
    of every worker whose run is that long, workers in turn, ``j = 0, 1, ...``, leaving out the
    batches before ``starts[w]`` (already handed out before a resume). After a resume at any
    batch the order continues exactly where the uninterrupted epoch would."""
    longest = max(run_lengths, default=0)
    for j in range(min(starts, default=0), longest):
        for w, (length, start) in enumerate(zip(run_lengths, starts)):
            if start <= j < length:
                yield w
