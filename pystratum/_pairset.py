"""A set of non-negative int64 keys with vectorised membership (pure numpy).

Observed (user, item) pairs become keys ``user * num_items + item``; every
generated negative is checked against them. A sorted key array with
``searchsorted`` costs about 23 dependent, mostly cache-missing reads per
query for 10^7 keys; this open-addressing table (linear probing, load at
most 1/2, multiplicative hashing) costs about 1.5 reads per query and about
5x less time on that size (``benchmarks/bench_negatives.py`` measures both).
"""

from __future__ import annotations

import numpy as np

__all__ = ["PairSet"]

_EMPTY = np.int64(-1)
# Fibonacci hashing: the top bits of key * 2^64/phi spread consecutive keys.
_MULTIPLIER = np.uint64(0x9E3779B97F4A7C15)
# Queries are looked up a chunk at a time so the working arrays stay in cache.
_CHUNK = 1 << 15


class PairSet:
    """The distinct keys of ``keys`` (non-negative int64), with ``contains(queries)``.

    ``len(set)`` is the number of distinct keys, so ``keys.size - len(set)``
    counts duplicates.
    """

    def __init__(self, keys: np.ndarray):
        keys = np.asarray(keys, dtype=np.int64)
        bits = max(4, int(2 * max(keys.size, 1) - 1).bit_length())  # 2^bits >= 2 * size
        self._bits = bits
        self._mask = (1 << bits) - 1
        self._shift = np.uint64(64 - bits)
        table = np.full(1 << bits, _EMPTY, dtype=np.int64)
        for start in range(0, keys.size, 1 << 22):
            self._insert(table, keys[start:start + (1 << 22)])
        self._table = table
        self._size = int(np.count_nonzero(table != _EMPTY))

    def __len__(self) -> int:
        return self._size

    @property
    def nbytes(self) -> int:
        return int(self._table.nbytes)

    def _slots(self, keys: np.ndarray) -> np.ndarray:
        hashed = keys.view(np.uint64) * _MULTIPLIER
        hashed >>= self._shift
        return hashed.view(np.int64)

    def _insert(self, table: np.ndarray, keys: np.ndarray) -> None:
        slots = self._slots(keys)
        pending = keys
        while pending.size:
            free = table[slots] == _EMPTY
            # Several keys may claim one free slot: one write wins, the others
            # (and any key already present, i.e. a duplicate) see their slot
            # taken and only keys equal to the slot's content count as placed.
            table[slots[free]] = pending[free]
            placed = table[slots] == pending
            keep = ~placed
            pending = pending[keep]
            slots = (slots[keep] + 1) & self._mask

    def contains(self, queries: np.ndarray) -> np.ndarray:
        """Boolean array: which queries (non-negative int64) are in the set."""
        queries = np.asarray(queries, dtype=np.int64)
        out = np.empty(queries.shape[0], dtype=bool)
        for start in range(0, queries.shape[0], _CHUNK):
            out[start:start + _CHUNK] = self._contains_chunk(queries[start:start + _CHUNK])
        return out

    def _contains_chunk(self, queries: np.ndarray) -> np.ndarray:
        table = self._table
        found = np.zeros(queries.shape[0], dtype=bool)
        slots = self._slots(np.ascontiguousarray(queries))
        values = table[slots]
        hit = values == queries
        found |= hit
        go = ~hit & (values != _EMPTY)
        if not go.any():
            return found
        index = np.flatnonzero(go)
        pending = queries[index]
        slots = (slots[index] + 1) & self._mask
        while index.size:
            values = table[slots]
            hit = values == pending
            found[index[hit]] = True
            go = ~hit & (values != _EMPTY)
            index = index[go]
            pending = pending[go]
            slots = (slots[go] + 1) & self._mask
        return found
