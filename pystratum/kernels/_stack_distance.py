"""LRU stack distances of a shard access sequence, as plain loops over numpy arrays.

Written once: ``kernels._shards`` compiles these with numba, and
``pystratum.shards._profile`` runs them as they are where numba is absent (this
module imports no numba). The same values either way.
"""

from __future__ import annotations

import numpy as np


def first_servings(order, n_rows):
    """True where ``order`` serves a row for the first time (a row served again reads no shard)."""
    seen = np.zeros(n_rows, dtype=np.bool_)
    first = np.empty(order.shape[0], dtype=np.bool_)
    for i in range(order.shape[0]):
        first[i] = not seen[order[i]]
        seen[order[i]] = True
    return first


def reuse_histogram(shards, n_shards):
    """``(first accesses, hist)``: ``hist[d]`` counts re-accesses with ``d`` distinct other shards
    asked for since the shard's last access. A Fenwick tree over time holds a 1 at each shard's
    latest access, so the distinct shards in between are a difference of two prefix sums."""
    total = shards.shape[0]
    tree = np.zeros(total + 1, dtype=np.int64)
    last = np.full(n_shards, -1, dtype=np.int64)
    hist = np.zeros(n_shards + 1, dtype=np.int64)
    first = 0
    for t in range(total):
        shard = shards[t]
        previous = last[shard]
        if previous < 0:
            first += 1
        else:
            between = 0
            i = t
            while i > 0:
                between += tree[i]
                i -= i & -i
            i = previous + 1
            while i > 0:
                between -= tree[i]
                i -= i & -i
            hist[between] += 1
            i = previous + 1
            while i <= total:
                tree[i] -= 1
                i += i & -i
        i = t + 1
        while i <= total:
            tree[i] += 1
            i += i & -i
        last[shard] = t
    return first, hist
