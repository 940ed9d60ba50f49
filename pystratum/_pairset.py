"""A set of non-negative int64 keys with vectorised membership (pure numpy).

Observed (user, item) pairs become keys ``user * num_items + item``; every
generated negative is checked against them. A sorted key array with
``searchsorted`` costs about 23 dependent, mostly cache-missing reads per
query for 10^7 keys; this open-addressing table (linear probing, load at
most 1/2, multiplicative hashing) needs about 1.5 reads per query and is
many times faster on that size (``benchmarks/bench_negatives.py`` measures
both).
"""

from __future__ import annotations

import numpy as np

__all__ = ["PairSet"]

_EMPTY = np.int64(-1)
# Fibonacci hashing: the top bits of key * 2^64/phi spread consecutive keys.
_MULTIPLIER = np.uint64(0x9E3779B97F4A7C15)
# Queries are looked up a chunk at a time so the working arrays stay in cache.
_CHUNK = 1 << 15
# Probing runs past the last home slot into this tail instead of wrapping
# around, which saves a masking pass per probe; a longer run (never seen at
# load 1/2) rebuilds the table with a longer tail.
_TAIL = 64


class PairSet:
    """The distinct keys of ``keys`` (non-negative int64), with ``contains(queries)``.

    ``len(set)`` is the number of distinct keys, so ``keys.size - len(set)``
    counts duplicates.
    """

    def __init__(self, keys: np.ndarray):
        keys = np.asarray(keys, dtype=np.int64)
        bits = max(4, int(2 * max(keys.size, 1) - 1).bit_length())  # 2^bits >= 2 * size
        self._shift = np.uint64(64 - bits)
        tail = _TAIL
        while True:
            table = np.full((1 << bits) + tail, _EMPTY, dtype=np.int64)
            # Inserting a chunk at a time bounds the temporaries to a few MiB.
            if all(self._insert(table, keys[start:start + (1 << 20)])
                   for start in range(0, keys.size, 1 << 20)):
                break
            tail *= 4
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

    def _insert(self, table: np.ndarray, keys: np.ndarray) -> bool:
        """Insert ``keys``; False if a probe run would leave the table (rebuild longer)."""
        slots = self._slots(keys)
        pending = keys
        end = table.shape[0]
        while pending.size:
            free = table[slots] == _EMPTY
            # Several keys may claim one free slot: one write wins, the others
            # (and any key already present, i.e. a duplicate) see their slot
            # taken and only keys equal to the slot's content count as placed.
            table[slots[free]] = pending[free]
            keep = table[slots] != pending
            pending = pending[keep]
            slots = slots[keep] + 1
            if slots.size and slots.max() >= end:
                return False
        return True

    def contains(self, queries: np.ndarray) -> np.ndarray:
        """Boolean array: which queries (non-negative int64) are in the set."""
        queries = np.ascontiguousarray(queries, dtype=np.int64)
        out = np.empty(queries.shape[0], dtype=bool)
        for start in range(0, queries.shape[0], _CHUNK):
            out[start:start + _CHUNK] = self._contains_chunk(queries[start:start + _CHUNK])
        return out

    def _contains_chunk(self, queries: np.ndarray) -> np.ndarray:
        table = self._table
        slots = self._slots(queries)
        values = table[slots]
        found = values == queries
        go = ~found & (values != _EMPTY)
        if not go.any():
            return found
        # A key sits at or after its home slot with no empty slot in between:
        # walk on only while the slot holds another key. No run reaches past
        # the table's end (insertion made sure of it).
        index = np.flatnonzero(go)
        pending = queries[index]
        slots = slots[index]
        while index.size:
            slots += 1
            values = table[slots]
            hit = values == pending
            found[index[hit]] = True
            go = ~hit & (values != _EMPTY)
            index = index[go]
            pending = pending[go]
            slots = slots[go]
        return found
