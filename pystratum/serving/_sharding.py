"""Sharding whole batches across data-parallel ranks (pure numpy, no torch).

Every rank computes the same epoch plan and keeps whole batches, so each
batch keeps its composition on every rank. The rule is the one a reader can
check by hand: rank ``r`` of ``n`` takes batches ``r, r + n, r + 2n, ...``.
Every rank must yield the same number of batches (DDP hangs otherwise):

* ``drop_last=False``: ``ceil(B / n)`` batches per rank; the short ranks
  take whole batches again from the start of the epoch (position ``j*n + r``
  holds batch ``(j*n + r) % B``).
* ``drop_last=True``: first a short last batch (``short_last``: the
  policy's remainder batch, e.g. exact ``FixedSize`` sizes) is dropped, as
  torch's ``BatchSampler(drop_last=True)`` drops it, leaving ``B' = B - 1``
  batches (else ``B' = B``); then ``floor(B' / n)`` batches per rank, the
  last ``B' % n`` of them served by no rank. In one process that is just
  the short batch.

Samplers of every composition (stratified, tree, negative pairs) use these
two functions, so they all shard alike.
"""

from __future__ import annotations

import numpy as np

__all__ = ["kept_batches", "rank_batch_count", "rank_batch_indices"]


def kept_batches(num_batches: int, drop_last: bool, short_last: bool = False) -> int:
    """Batches of the epoch the ranks share: a short last batch goes first under drop_last."""
    return num_batches - 1 if drop_last and short_last else num_batches


def rank_batch_count(num_batches: int, num_replicas: int, drop_last: bool,
                     short_last: bool = False) -> int:
    """Batches each rank yields per epoch (the same on every rank)."""
    num_batches = kept_batches(num_batches, drop_last, short_last)
    if drop_last:
        return num_batches // num_replicas
    return -(-num_batches // num_replicas)


def rank_batch_indices(num_batches: int, num_replicas: int, rank: int, drop_last: bool,
                       start: int = 0, stop: int | None = None,
                       short_last: bool = False) -> np.ndarray:
    """0-based indices of the epoch's batches that ``rank`` serves, in order.

    ``start`` skips the first ``start`` of them (a mid-epoch resume); ``stop``
    (default: all) ends before the ``stop``-th (a chunk of them).
    Guarantee: without padding, the ranks' indices are disjoint and together
    cover ``0..num_batches-1`` (``drop_last=False``) or, with ``B'`` the
    batches kept (:func:`kept_batches`), the first ``num_replicas * (B' //
    num_replicas)`` (``drop_last=True``): never a dropped short last batch.
    """
    take = rank_batch_count(num_batches, num_replicas, drop_last, short_last)
    if stop is not None:
        take = min(take, stop)
    positions = np.arange(start, take, dtype=np.int64) * num_replicas + rank
    return positions % num_batches if num_batches else positions
