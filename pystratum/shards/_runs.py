"""An epoch's batches, and the contiguous run of them each rank and each loader worker serves.

Shard-aware plans put consecutive batches on the same few shards. Handing
batches out round-robin (rank ``r`` takes ``r, r + n, ...``) would make
every rank and every worker read every shard. Here rank ``r`` of ``n``
takes one contiguous run of the epoch, and worker ``w`` of ``k`` one
contiguous run of its rank's, so together they read each shard about once.
"""

from __future__ import annotations

import numpy as np

__all__ = ["epoch_batches", "epoch_plan", "rank_run_length", "run_batch_ids"]


def epoch_batches(plans, epoch: int) -> list:
    """The batches of ``epoch`` (int64 arrays of row positions) from ``plans``."""
    return epoch_plan(plans, epoch)[0]


def epoch_plan(plans, epoch: int) -> tuple:
    """``(batches, weights)`` of ``epoch`` from ``plans``: weights a list parallel to the
    batches (the plan's importance weights of each served row) or None when it has none.

    ``plans``: an object with ``plan(epoch)`` (``StratifiedBatchSampler``),
    a callable ``epoch -> plan``, or one plan served every epoch; a plan is a
    :class:`~pystratum.BatchPlan`, a lazy plan (materialised here) or a
    sequence of batches.
    """
    if hasattr(plans, "plan") and callable(plans.plan):
        plan = plans.plan(epoch)
    elif callable(plans):
        plan = plans(epoch)
    else:
        plan = plans
    if hasattr(plan, "materialise"):
        plan = plan.materialise()
    if hasattr(plan, "order") and hasattr(plan, "bounds"):
        order = np.asarray(plan.order, dtype=np.int64)
        bounds = np.asarray(plan.bounds, dtype=np.int64)
        spans = range(bounds.shape[0] - 1)
        weights = getattr(plan, "weights", None)
        if weights is not None:
            weights = [np.asarray(weights[bounds[b]:bounds[b + 1]], dtype=np.float64)
                       for b in spans]
        return [order[bounds[b]:bounds[b + 1]] for b in spans], weights
    try:
        batches = [np.asarray(batch) for batch in plan]
    except TypeError:
        raise TypeError(
            f"plans must be a sampler with plan(epoch), a callable epoch -> plan, a BatchPlan or "
            f"a list of batches, got {type(plan).__name__}.") from None
    for b, batch in enumerate(batches):
        if batch.ndim != 1 or batch.dtype.kind not in "iu" or batch.shape[0] == 0:
            raise ValueError(f"plans must give batches that are non-empty lists of integer row "
                             f"positions; batch {b} of epoch {epoch} has shape {batch.shape} and "
                             f"dtype {batch.dtype}.")
    if not batches:
        raise ValueError(f"plans gave no batch for epoch {epoch}; a plan has at least one batch.")
    return [batch.astype(np.int64, copy=False) for batch in batches], None


def rank_run_length(num_batches: int, num_replicas: int, drop_last: bool) -> int:
    """Batches every rank serves per epoch (the same on every rank, or DDP hangs)."""
    return num_batches // num_replicas if drop_last else -(-num_batches // num_replicas)


def run_batch_ids(num_batches: int, num_replicas: int, rank: int, drop_last: bool,
                  num_workers: int = 1, worker: int = 0) -> np.ndarray:
    """Global batch indices that worker ``worker`` of rank ``rank`` serves, in order.

    Rank ``r`` serves positions ``r * c .. r * c + c - 1`` of the epoch,
    ``c`` = :func:`rank_run_length`; position ``p`` holds batch ``p %
    num_batches`` (with ``drop_last=False`` the last rank's run may wrap to
    the epoch's first batches so that every rank serves ``c``; with
    ``drop_last=True`` the last ``num_batches % num_replicas`` batches are
    served by nobody). Worker ``w`` of ``k`` serves positions ``c * w // k
    .. c * (w + 1) // k - 1`` of its rank's run. Guarantee: the runs of all
    ranks and workers are disjoint and contiguous and, without padding, cover
    the epoch (``drop_last=False``) or its first ``num_replicas * c`` batches.
    """
    per_rank = rank_run_length(num_batches, num_replicas, drop_last)
    first = per_rank * worker // num_workers
    stop = per_rank * (worker + 1) // num_workers
    return (rank * per_rank + np.arange(first, stop, dtype=np.int64)) % num_batches
