"""Serving a batch: its rows gathered from cached shards, in the batch's order."""

from __future__ import annotations

import numpy as np

from ..base._validation import check_int, show
from ._cache import ShardCache
from ._checks import checked_loads
from ._reader import RowLocator, RowOps, check_shard_sizes
from ._retain import KEEP, RunNeeds, default_retain_rows

__all__ = ["BatchServer"]


class BatchServer:
    """Gathers the rows of batches (lists of row positions) from a :class:`ShardReader`.

    Guarantee: ``serve(batch)`` holds exactly the rows of ``batch``, in the
    batch's order (a row listed twice is served twice), or raises; every
    shard passes through a :class:`~pystratum.shards.ShardCache` of
    ``cache_shards`` decoded shards, so a batch that needs more shards than
    that is still served whole (the cache evicts between shards).

    Plan-aware retention (:meth:`plan_run`): the server is told the run of
    batches it will serve (an epoch, or a worker's part of it). When the cache
    evicts a shard, exactly the rows of that shard that later batches of the
    run still need are copied aside and served from there, each released
    after its last use; so a shard is loaded at most once per run as long as
    the rows held aside stay within ``retain_rows`` (default: as many rows as
    a full cache holds, ``cache_shards`` times the largest shard). An eviction
    whose rows do not fit keeps none of them, and the shard is read again
    when needed: never an error, never a wrong row (held rows are found by
    shard and offset, whatever is served). Rows the run serves more than once
    (the strata ``Targets`` or ``small="repeat"`` recycle) are copied aside
    the first time their shard is read, whatever the budget, and kept into
    the next runs while those recycle them. Memory: the cache plus the rows
    held aside (``stats.kept_rows``, ``stats.kept_bytes``, their peaks
    ``stats.peak_kept_rows`` and ``stats.peak_kept_bytes``);
    :func:`~pystratum.shards.shard_retention_profile` computes the loads and
    the peak of a run without reading anything.
    """

    def __init__(self, reader, *, cache_shards: int = 8, retain_rows: int | None = None):
        if not callable(getattr(reader, "load", None)) or not hasattr(reader, "shard_sizes"):
            raise TypeError(
                f"reader must have shard_sizes and a load(shard) method (pystratum.shards."
                f"ShardReader), got reader={show(reader)} of type {type(reader).__name__}.")
        self.reader = reader
        self.sizes = check_shard_sizes(reader.shard_sizes, "reader.shard_sizes")
        self.locator = RowLocator(self.sizes)
        self.ops = RowOps(reader)
        self.cache = ShardCache(checked_loads(reader), self.sizes, self.ops, cache_shards,
                                on_evict=self._evicted)
        self.retain_rows = default_retain_rows(self.sizes, self.cache.capacity) \
            if retain_rows is None else check_int(retain_rows, "retain_rows", minimum=0)
        self._kept_offsets: dict = {}   # shard -> sorted offsets whose rows are kept aside
        self._kept_parts: dict = {}     # shard -> those rows, decoded, in offset order
        self._kept_release: dict = {}   # shard -> the access after which each is released
        self._kept_bytes: dict = {}
        self._pending: dict = {}        # shard -> offsets to keep, copied at its next read
        self._run = None                # the run's needs (RunNeeds) while it is served
        self._run_batches = None
        self._next_batch = 0
        self._access = None             # the access being served, for the eviction hook

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

    def plan_run(self, batches, *, start: int = 0) -> None:
        """Serve ``batches[start:]`` next, in order, with plan-aware retention (class docstring).

        Recycled rows: rows kept before and still recycled by this run stay,
        without a new read; rows no longer recycled are released; rows newly
        recycled are copied aside the next time their shard is read (their
        first pass reads it anyway). Serving another batch than the next one
        of the run ends the plan (rows held for it are released; recycled
        rows stay); a later :meth:`plan_run` starts a new one.
        """
        start = check_int(start, "start", minimum=0, maximum=len(batches))
        # Not cast: locate() refuses rows that are not integers (1.5 is no row). The caller's
        # 1-D arrays are kept as they are (reshape would make new objects), so serve() knows
        # the run's next batch by identity, without comparing its rows.
        arrays = [np.asarray(b) for b in batches[start:]]
        arrays = [a if a.ndim == 1 and a.size else
                  (a if a.size else a.astype(np.int64)).reshape(-1) for a in arrays]
        rows = np.concatenate(arrays) if arrays else np.zeros(0, dtype=np.int64)
        shard, offset = self.locator.locate(rows, "batches")
        needs = RunNeeds(np.array([a.shape[0] for a in arrays], dtype=np.int64), rows, shard,
                         offset, self.sizes.shape[0])
        wanted = needs.recycled
        for h in list(self._kept_offsets):
            still = np.isin(self._kept_offsets[h], wanted.get(h, ()))
            self._restrict(h, still)
            if h in self._kept_release:
                self._kept_release[h][:] = KEEP  # rows of the last run's plan are all recycled now
        self._pending = {}
        for h, offsets in wanted.items():
            missing = np.setdiff1d(offsets, self._kept_offsets.get(h, ()), assume_unique=True)
            if missing.size:
                self._pending[h] = missing
        self._run = needs
        self._run_batches = arrays
        self._next_batch = 0

    def serve(self, batch):
        """The rows of ``batch`` (row positions), in its order, as the reader decodes them."""
        rows = np.asarray(batch)
        if rows.ndim != 1 or rows.shape[0] == 0:
            raise ValueError(f"batch must be a non-empty 1-D list of row positions, got shape "
                             f"{rows.shape}.")
        shard, offset = self.locator.locate(rows)
        access = self._first_access(batch, rows)
        if shard[0] == shard[-1] and np.all(shard == shard[0]):  # one shard: one take
            return self.ops.finish(self._take(int(shard[0]), offset, access))
        order = np.argsort(shard, kind="stable")
        cuts = np.flatnonzero(np.diff(shard[order])) + 1
        groups = np.split(order, cuts)
        # Groups in ascending shard order: the run's accesses of this batch, one after another.
        parts = [self._take(int(shard[group[0]]), offset[group],
                            None if access is None else access + j)
                 for j, group in enumerate(groups)]
        # Each part's rows written straight to their places in the batch (one array per column),
        # instead of concatenating the parts and reordering the result.
        return self.ops.finish(self.ops.scatter(parts, groups, rows.shape[0]))

    def _first_access(self, batch, rows):
        """The run's access of ``batch``'s first shard, or None when it is not the run's next."""
        if self._run is None:
            return None
        k = self._next_batch
        if k < len(self._run_batches) and (self._run_batches[k] is batch or
                                           np.array_equal(self._run_batches[k], rows)):
            self._next_batch = k + 1
            return int(self._run.access_start[k])
        self._end_plan()
        return None

    def _end_plan(self) -> None:
        """Forget the run's plan: rows held for it are released, recycled rows stay."""
        self._run = self._run_batches = None
        for h in list(self._kept_release):
            self._restrict(h, self._kept_release[h] == KEEP)

    def _take(self, h: int, offsets: np.ndarray, access):
        kept = self._kept_offsets.get(h)
        if kept is not None:
            index = np.minimum(np.searchsorted(kept, offsets), kept.shape[0] - 1)
            if np.array_equal(kept[index], offsets):
                rows = self.ops.take(self._kept_parts[h], index)
                if access is not None:  # rows served for the last time are released
                    release = self._kept_release[h]
                    if release.min() <= access:
                        self._restrict(h, release > access)
                return rows
        self._access = access
        try:
            decoded = self.cache.get(h)
        finally:
            self._access = None
        missing = self._pending.pop(h, None)
        if missing is not None:
            self._keep(h, decoded, missing, np.full(missing.shape[0], KEEP, dtype=np.int64))
        return self.ops.take(decoded, offsets)

    def _evicted(self, h: int, decoded) -> None:
        """The cache's eviction hook: the rows of ``h`` that later accesses need, held aside."""
        if self._run is None or self._access is None:
            return
        offsets, uses = self._run.needed_after(h, self._access)
        if not offsets.size:
            return
        if self.stats.kept_rows + offsets.shape[0] > self.retain_rows:
            self.stats.retain_refused += 1  # read again when needed
            return
        self._keep(h, decoded, offsets, uses)

    def _keep(self, h: int, decoded, missing: np.ndarray, release: np.ndarray) -> None:
        """Add the rows at ``missing`` offsets of the decoded shard ``h`` to its kept rows."""
        added = self.ops.take(decoded, missing)
        if h in self._kept_offsets:
            offsets = np.concatenate([self._kept_offsets[h], missing])
            order = np.argsort(offsets, kind="stable")
            part = self.ops.take(self.ops.concat([self._kept_parts[h], added]), order)
            release = np.concatenate([self._kept_release[h], release])[order]
            offsets = offsets[order]
        else:
            order = np.argsort(missing, kind="stable")
            offsets, part, release = missing[order], self.ops.take(added, order), release[order]
        self._set_part(h, offsets, part, release)

    def _restrict(self, h: int, still: np.ndarray) -> None:
        """Keep only the kept rows of ``h`` where ``still`` holds; release the others."""
        if still.all():
            return
        if not still.any():
            self._set_part(h, None, None, None)
            return
        index = np.flatnonzero(still)
        self._set_part(h, self._kept_offsets[h][index], self.ops.take(self._kept_parts[h], index),
                       self._kept_release[h][index])

    def _set_part(self, h: int, offsets, part, release) -> None:
        stats = self.stats
        if h in self._kept_offsets:
            stats.kept_rows -= self._kept_offsets.pop(h).shape[0]
            stats.kept_bytes -= self._kept_bytes.pop(h)
            del self._kept_parts[h], self._kept_release[h]
        if offsets is None:
            return
        self._kept_offsets[h], self._kept_parts[h], self._kept_release[h] = offsets, part, release
        self._kept_bytes[h] = self.ops.nbytes(part)
        stats.kept_rows += offsets.shape[0]
        stats.kept_bytes += self._kept_bytes[h]
        stats.peak_kept_rows = max(stats.peak_kept_rows, stats.kept_rows)
        stats.peak_kept_bytes = max(stats.peak_kept_bytes, stats.kept_bytes)
