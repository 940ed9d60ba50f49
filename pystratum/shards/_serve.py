"""Serving a batch: its rows gathered from cached shards, in the batch's order."""

from __future__ import annotations

import numpy as np

from ..base._validation import show
from ._cache import ShardCache
from ._checks import checked_loads
from ._reader import RowLocator, RowOps, check_shard_sizes

__all__ = ["BatchServer"]


class BatchServer:
    """Gathers the rows of batches (lists of row positions) from a :class:`ShardReader`.

    Guarantee: ``serve(batch)`` holds exactly the rows of ``batch``, in the
    batch's order (a row listed twice is served twice), or raises; every
    shard passes through a :class:`~pystratum.shards.ShardCache` of
    ``cache_shards`` decoded shards, so a batch that needs more shards than
    that is still served whole (the cache evicts between shards).

    Recycled rows: :meth:`keep_recycled` names the rows a run of batches
    serves more than once (the strata ``Targets`` or ``small="repeat"``
    recycle). The first time their shard is read, those rows are copied
    aside and served from there afterwards, so the passes after the first
    never read their shards again, in this epoch or the next ones. Memory:
    the decoded size of exactly the rows the run serves more than once
    (``stats.kept_rows``, ``stats.kept_bytes``), so at most the rows of the
    strata the policy recycles.
    """

    def __init__(self, reader, *, cache_shards: int = 8):
        if not callable(getattr(reader, "load", None)) or not hasattr(reader, "shard_sizes"):
            raise TypeError(
                f"reader must have shard_sizes and a load(shard) method (pystratum.shards."
                f"ShardReader), got reader={show(reader)} of type {type(reader).__name__}.")
        self.reader = reader
        self.sizes = check_shard_sizes(reader.shard_sizes, "reader.shard_sizes")
        self.locator = RowLocator(self.sizes)
        self.ops = RowOps(reader)
        self.cache = ShardCache(checked_loads(reader), self.sizes, self.ops, cache_shards)
        self._kept_offsets: dict = {}   # shard -> sorted offsets whose rows are kept aside
        self._kept_parts: dict = {}     # shard -> those rows, decoded, in offset order
        self._kept_bytes: dict = {}
        self._pending: dict = {}        # shard -> offsets to keep, copied at its next read

    @property
    def n_rows(self) -> int:
        return self.locator.n_rows

    @property
    def stats(self):
        return self.cache.stats

    def check_unchanged(self) -> None:
        """The reader's ``check_unchanged()`` (if it has one): raises when the stored data changed
        since the reader was built. Call it before serving a new epoch or a resume."""
        check = getattr(self.reader, "check_unchanged", None)
        if callable(check):
            check()

    def keep_recycled(self, batches) -> None:
        """Keep aside exactly the rows that ``batches`` (a run, e.g. an epoch) serve more than once.

        Rows kept before and still recycled stay, without a new read; rows no
        longer recycled are released; rows newly recycled are copied aside
        the next time their shard is read (their first pass reads it anyway).
        """
        rows = np.concatenate([np.asarray(b, dtype=np.int64) for b in batches]) \
            if len(batches) else np.zeros(0, dtype=np.int64)
        values, counts = np.unique(rows, return_counts=True)
        shard, offset = self.locator.locate(values[counts > 1], "batches")
        wanted = {}
        if shard.size:
            cuts = np.flatnonzero(np.diff(shard)) + 1
            for group in np.split(np.arange(shard.size), cuts):
                wanted[int(shard[group[0]])] = offset[group]
        for h in list(self._kept_offsets):
            filled, part = self._kept_offsets[h], self._kept_parts[h]
            still = np.isin(filled, wanted.get(h, ()))
            if not still.any():
                del self._kept_offsets[h], self._kept_parts[h], self._kept_bytes[h]
            elif not still.all():
                self._kept_offsets[h] = filled[still]
                self._kept_parts[h] = self.ops.take(part, np.flatnonzero(still))
                self._kept_bytes[h] = self.ops.nbytes(self._kept_parts[h])
        self._pending = {}
        for h, offsets in wanted.items():
            missing = np.setdiff1d(offsets, self._kept_offsets.get(h, ()), assume_unique=True)
            if missing.size:
                self._pending[h] = missing
        self._update_kept_stats()

    def serve(self, batch):
        """The rows of ``batch`` (row positions), in its order, as the reader decodes them."""
        rows = np.asarray(batch)
        if rows.ndim != 1 or rows.shape[0] == 0:
            raise ValueError(f"batch must be a non-empty 1-D list of row positions, got shape "
                             f"{rows.shape}.")
        shard, offset = self.locator.locate(rows)
        if shard[0] == shard[-1] and np.all(shard == shard[0]):  # one shard: one take
            return self.ops.finish(self._take(int(shard[0]), offset))
        order = np.argsort(shard, kind="stable")
        cuts = np.flatnonzero(np.diff(shard[order])) + 1
        groups = np.split(order, cuts)
        parts = [self._take(int(shard[group[0]]), offset[group]) for group in groups]
        # Each part's rows written straight to their places in the batch (one array per column),
        # instead of concatenating the parts and reordering the result.
        return self.ops.finish(self.ops.scatter(parts, groups, rows.shape[0]))

    def _take(self, h: int, offsets: np.ndarray):
        kept = self._kept_offsets.get(h)
        if kept is not None:
            index = np.minimum(np.searchsorted(kept, offsets), kept.shape[0] - 1)
            if np.array_equal(kept[index], offsets):
                return self.ops.take(self._kept_parts[h], index)
        decoded = self.cache.get(h)
        missing = self._pending.pop(h, None)
        if missing is not None:
            self._keep(h, decoded, missing)
        return self.ops.take(decoded, offsets)

    def _keep(self, h: int, decoded, missing: np.ndarray) -> None:
        """Add the rows at ``missing`` offsets of the decoded shard ``h`` to its kept rows."""
        added = self.ops.take(decoded, missing)
        if h in self._kept_offsets:
            offsets = np.concatenate([self._kept_offsets[h], missing])
            order = np.argsort(offsets, kind="stable")
            part = self.ops.take(self.ops.concat([self._kept_parts[h], added]), order)
            offsets = offsets[order]
        else:
            offsets, part = missing, added
        self._kept_offsets[h] = offsets
        self._kept_parts[h] = part
        self._kept_bytes[h] = self.ops.nbytes(part)
        self._update_kept_stats()

    def _update_kept_stats(self) -> None:
        self.stats.kept_rows = int(sum(offsets.shape[0] for offsets in self._kept_offsets.values()))
        self.stats.kept_bytes = int(sum(self._kept_bytes.values()))
