"""Plan-aware retention: what a run of batches still needs of each shard, known in advance.

A reader serves a run of batches it knows whole (an epoch, or one worker's
part of it). Each batch asks for its distinct shards in ascending order; the
k-th (batch, shard) pair of the run is *access* k. :class:`RunNeeds` holds,
for every shard, the rows the run serves once (each with the access that
serves it, in access order) and the rows it serves more than once (the rows a
policy recycles), so that when a cache evicts a shard, the rows later
accesses still need are a suffix of that shard's list: one binary search.
All of it is computed with numpy sorts over the run's rows, never a Python
loop per row.
"""

from __future__ import annotations

import numpy as np

__all__ = ["KEEP", "RunNeeds", "default_retain_rows", "simulate_retention"]

# The release access of a row kept for as long as the run recycles it (past the run's end).
KEEP = np.iinfo(np.int64).max


def default_retain_rows(sizes: np.ndarray, cache_shards: int) -> int:
    """The default budget of rows held aside: as many as a full cache holds (``cache_shards``
    times the largest shard), for the server and its profile alike."""
    return int(cache_shards) * int(sizes.max())


def _smallest_int(values: np.ndarray, limit: int) -> np.ndarray:
    return values.astype(np.int32 if limit < 2**31 else np.int64, copy=False)


class RunNeeds:
    """The accesses of a run of batches and, per shard, which rows they need and when.

    ``batch_sizes``, ``shard`` and ``offset``: the run's rows in serving
    order, as (shard, offset in shard); ``row`` identifies a row (any integer
    id unique to it, e.g. its position). ``n_shards``: shards are ``0 ..
    n_shards - 1``.

    * ``access_start[k]``: the first access of batch ``k`` (its shards in
      ascending order are accesses ``access_start[k] ..
      access_start[k + 1] - 1``); ``access_shard[a]``: the shard of access ``a``.
    * Rows served once: ``once_ptr`` (CSR by shard), ``once_offset`` and
      ``once_use`` (the access serving the row), sorted by use within a shard.
    * ``recycled``: shard -> the sorted offsets of its rows served more than once.
    * ``once_at[a]``: rows served once at access ``a``; ``all_recycled[a]``:
      whether every row access ``a`` serves is served more than once.
    """

    def __init__(self, batch_sizes: np.ndarray, row: np.ndarray, shard: np.ndarray,
                 offset: np.ndarray, n_shards: int):
        batch_sizes = np.asarray(batch_sizes, dtype=np.int64)
        n_batches = batch_sizes.shape[0]
        self.n_shards = n_shards
        batch_of = np.repeat(np.arange(n_batches, dtype=np.int64), batch_sizes)
        shard = shard.astype(np.int64, copy=False)
        keys, access = np.unique(batch_of * n_shards + shard, return_inverse=True)
        access = access.reshape(-1)
        n_access = keys.shape[0]
        self.access_shard = keys % n_shards
        self.access_start = np.searchsorted(keys // n_shards,
                                            np.arange(n_batches + 1, dtype=np.int64))
        # Rows served more than once: equal neighbours once sorted (memory of the run's size,
        # not of the data's, for a worker's part of a large epoch).
        ordered = np.sort(row)
        twice = ordered[1:][ordered[1:] == ordered[:-1]]
        many = np.isin(row, twice) if twice.size else np.zeros(row.shape[0], dtype=bool)
        once = np.flatnonzero(~many)
        # Rows served once, by shard: a stable sort keeps serving order, so within a shard the
        # accesses grow (a batch's entries of one shard share one access). Small unsigned keys
        # make numpy's stable sort a radix sort.
        key_type = np.uint16 if n_shards <= 2**16 else np.int64
        order = once[np.argsort(shard[once].astype(key_type), kind="stable")]
        self.once_ptr = np.searchsorted(shard[order], np.arange(n_shards + 1, dtype=np.int64))
        self.once_offset = offset[order].astype(np.int64, copy=False)
        self.once_use = _smallest_int(access[order], n_access)
        self.once_at = np.bincount(access[once], minlength=n_access)
        self.all_recycled = np.bincount(access[many], minlength=n_access) == \
            np.bincount(access, minlength=n_access)
        self.recycled: dict = {}
        repeated = np.flatnonzero(many)
        if repeated.size:
            # One entry per recycled row, sorted by (shard, offset).
            first = repeated[np.unique(row[repeated], return_index=True)[1]]
            first = first[np.lexsort((offset[first], shard[first]))]
            kept_shard, kept_offset = shard[first], offset[first].astype(np.int64)
            cuts = np.flatnonzero(np.diff(kept_shard)) + 1
            for group in np.split(np.arange(first.shape[0]), cuts):
                self.recycled[int(kept_shard[group[0]])] = kept_offset[group]
        self.recycled_count = np.zeros(n_shards, dtype=np.int64)
        for h, offsets in self.recycled.items():
            self.recycled_count[h] = offsets.shape[0]

    @property
    def num_accesses(self) -> int:
        return int(self.access_shard.shape[0])

    def needed_after(self, shard: int, access: int) -> tuple[np.ndarray, np.ndarray]:
        """``(offsets, uses)``: the rows of ``shard`` served once, at an access after ``access``."""
        lo, hi = int(self.once_ptr[shard]), int(self.once_ptr[shard + 1])
        start = lo + int(np.searchsorted(self.once_use[lo:hi], access, side="right"))
        return self.once_offset[start:hi], self.once_use[start:hi].astype(np.int64)

    def count_needed_after(self, shard: int, access: int) -> int:
        lo, hi = int(self.once_ptr[shard]), int(self.once_ptr[shard + 1])
        return hi - lo - int(np.searchsorted(self.once_use[lo:hi], access, side="right"))


def simulate_retention(needs: RunNeeds, cache_shards: int, retain_rows: int) -> dict:
    """What :class:`~pystratum.shards.BatchServer` does serving the run from a cold start: its
    loads, the most rows it holds aside at once, and the evictions whose rows did not fit.

    The server's rules, replayed per access (not per row): an access whose rows are all held
    aside reads nothing (and releases the rows served for the last time); any other asks the
    LRU cache; a load evicts the least recently used shard, whose rows the run still needs
    are then held aside when they fit within ``retain_rows`` (all of them or none); a shard's
    recycled rows are copied aside when the cache first hands it out.
    """
    shard_of = needs.access_shard.tolist()
    once_at = needs.once_at.tolist()
    all_recycled = needs.all_recycled.tolist()
    recycled_count = needs.recycled_count.tolist()
    n_shards = needs.n_shards
    covered = bytearray(n_shards)   # every later row of the shard is held aside
    kept = bytearray(n_shards)      # its recycled rows are held aside
    cache: dict = {}                # insertion order = recency (oldest first)
    held = peak = loads = refused = 0
    loads_per_shard = np.zeros(n_shards, dtype=np.int64)
    for access, shard in enumerate(shard_of):
        if covered[shard]:
            held -= once_at[access]
            continue
        if kept[shard] and all_recycled[access]:
            continue
        if shard in cache:
            del cache[shard]
        else:
            loads += 1
            loads_per_shard[shard] += 1
            while len(cache) >= cache_shards:
                evicted = next(iter(cache))
                del cache[evicted]
                need = needs.count_needed_after(evicted, access)
                if need:
                    if held + need <= retain_rows:
                        held += need
                        covered[evicted] = 1
                        peak = max(peak, held)
                    else:
                        refused += 1
        cache[shard] = None
        if not kept[shard]:
            kept[shard] = 1
            if recycled_count[shard]:
                held += recycled_count[shard]
                peak = max(peak, held)
    return {"loads": loads, "peak_kept_rows": peak, "refused": refused, "kept_rows": held,
            "loads_per_shard": loads_per_shard}
