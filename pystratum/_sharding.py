"""Sharding whole batches across data-parallel ranks (pure numpy, no torch).

Every rank computes the same epoch plan and keeps whole batches, so each
batch keeps its composition on every rank. The rule is the one a reader can
check by hand: rank ``r`` of ``n`` takes batches ``r, r + n, r + 2n, ...``.
Every rank must yield the same number of batches (DDP hangs otherwise):

* ``drop_last=False``: ``ceil(B / n)`` batches per rank; the short ranks
  take whole batches again from the start of the epoch (position ``j*n + r``
  holds batch ``(j*n + r) % B``).
* ``drop_last=True``: ``floor(B / n)`` batches per rank; the last ``B % n``
  batches of the epoch are served by no rank.

Samplers of every composition (stratified, tree, negative pairs) use these
two functions, so they all shard alike.
"""

from __future__ import annotations

import numpy as np

__all__ = ["rank_batch_count", "rank_batch_indices"]


def rank_batch_count(num_batches: int, num_replicas: int, drop_last: bool) -> int:
    """Batches each rank yields per epoch (the same on every rank)."""
    if drop_last:
        return num_batches // num_replicas
    return -(-num_batches // num_replicas)


def rank_batch_indices(num_batches: int, num_replicas: int, rank: int, drop_last: bool,
                       start: int = 0, stop: int | None = None) -> np.ndarray:
    """0-based indices of the epoch's batches that ``rank`` serves, in order.

    ``start`` skips the first ``start`` of them (a mid-epoch resume); ``stop``
    (default: all) ends before the ``stop``-th (a chunk of them).
    Guarantee: without padding, the ranks' indices are disjoint and together
    cover ``0..num_batches-1`` (``drop_last=False``) or its first
    ``num_replicas * (num_batches // num_replicas)`` (``drop_last=True``).
    """
    take = rank_batch_count(num_batches, num_replicas, drop_last)
    if stop is not None:
        take = min(take, stop)
    positions = np.arange(start, take, dtype=np.int64) * num_replicas + rank
    return positions % num_batches if num_batches else positions
