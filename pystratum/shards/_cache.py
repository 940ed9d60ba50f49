"""A bounded LRU cache of decoded shards, with the counters that show locality."""

from __future__ import annotations

from collections import OrderedDict
from dataclasses import asdict, dataclass

import numpy as np

from ..base._validation import check_int

__all__ = ["CacheStats", "ShardCache"]


@dataclass
class CacheStats:
    """What a cache did: ``loads`` (reader calls), ``hits``, ``peak_shards`` and ``peak_bytes``
    (most decoded shards held at once, and their bytes), ``kept_rows`` and ``kept_bytes``
    (rows held aside now: recycled rows, and rows a planned run still needs of evicted shards;
    see :class:`pystratum.shards.BatchServer`), ``peak_kept_rows`` and ``peak_kept_bytes``
    (the most held aside at once), ``retain_refused`` (evictions whose still-needed rows did
    not fit the server's ``retain_rows``, so that shard is read again)."""

    loads: int = 0
    hits: int = 0
    peak_shards: int = 0
    peak_bytes: int = 0
    kept_rows: int = 0
    kept_bytes: int = 0
    peak_kept_rows: int = 0
    peak_kept_bytes: int = 0
    retain_refused: int = 0

    def as_dict(self) -> dict:
        return asdict(self)


class ShardCache:
    """At most ``capacity`` decoded shards, the least recently used evicted first.

    Guarantee: ``get(h)`` returns exactly ``shard_sizes[h]`` rows, or raises
    ValueError naming the shard, its expected and its returned row count
    (nothing wrong is ever served). ``loads_per_shard`` counts reader calls
    per shard, so a test can check that each shard was read once.
    ``on_evict(shard, rows)``, if given, sees each evicted shard's decoded rows
    before they are dropped (the server copies aside what its run still needs).
    """

    def __init__(self, reader, sizes: np.ndarray, ops, capacity: int, on_evict=None):
        self.capacity = check_int(capacity, "cache_shards", minimum=1)
        self._reader = reader
        self._sizes = sizes
        self._ops = ops
        self._on_evict = on_evict
        self._shards: OrderedDict = OrderedDict()
        self._bytes: dict = {}
        self.stats = CacheStats()
        self.loads_per_shard = np.zeros(sizes.shape[0], dtype=np.int64)

    @property
    def cached_bytes(self) -> int:
        return sum(self._bytes.values())

    def get(self, shard: int):
        rows = self._shards.get(shard)
        if rows is not None:
            self._shards.move_to_end(shard)
            self.stats.hits += 1
            return rows
        rows = self._reader.load(shard)
        self.stats.loads += 1
        self.loads_per_shard[shard] += 1
        expected = int(self._sizes[shard])
        got = self._ops.count(rows)
        if got != expected:
            raise ValueError(
                f"reader.load({shard}) must return shard_sizes[{shard}]={expected} rows, got "
                f"{got}: the reader's sizes and its data disagree (data changed since the sizes "
                f"were read?). Re-create the reader from the data as it is now.")
        rows = self._ops.prepare(rows)
        while len(self._shards) >= self.capacity:
            evicted, evicted_rows = self._shards.popitem(last=False)
            del self._bytes[evicted]
            if self._on_evict is not None:
                self._on_evict(evicted, evicted_rows)
        self._shards[shard] = rows
        self._bytes[shard] = self._ops.nbytes(rows)
        self.stats.peak_shards = max(self.stats.peak_shards, len(self._shards))
        self.stats.peak_bytes = max(self.stats.peak_bytes, self.cached_bytes)
        return rows

    def clear(self) -> None:
        self._shards.clear()
        self._bytes.clear()
