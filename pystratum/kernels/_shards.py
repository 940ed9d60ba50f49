"""The compiled stable sort by block of the shard-blocked order (optional: needs numba).

A counting sort: one pass reads each row's block (its shard's block, a
random read, prefetched a few rows ahead) and counts, one pass places every
row after the earlier rows of its block. The same order as numpy's stable
argsort of the block keys (``pystratum.engine._shards``), in two passes
over the rows and no index array; the tests compare both paths.
"""

from __future__ import annotations

import numba
import numpy as np

from . import _stack_distance as stack_distance
from ._tools import prefetch as _prefetch

# Rows ahead whose shard entry is prefetched.
_AHEAD = 16


@numba.njit(nogil=True, boundscheck=False, cache=True)
def sort_by_block(rows, row_shards, block, n_blocks, out):
    """``out``: ``rows`` stably sorted by ``block[row_shards[row]]`` (values ``< n_blocks``)."""
    n = rows.shape[0]
    keys = np.empty(n, dtype=block.dtype)
    starts = np.zeros(n_blocks + 1, dtype=np.int64)
    for i in range(n):
        if i + _AHEAD < n:
            _prefetch(row_shards, rows[i + _AHEAD])
        key = block[row_shards[rows[i]]]
        keys[i] = key
        starts[np.int64(key) + 1] += 1
    for b in range(n_blocks):
        starts[b + 1] += starts[b]
    for i in range(n):
        key = np.int64(keys[i])
        out[starts[key]] = rows[i]
        starts[key] += 1



first_servings = numba.njit(nogil=True, cache=True)(stack_distance.first_servings)
reuse_histogram = numba.njit(nogil=True, cache=True)(stack_distance.reuse_histogram)
