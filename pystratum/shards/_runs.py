"""An epoch's batches, and the contiguous run of them each rank and each loader worker serves.

Shard-aware plans put consecutive batches on the same few shards. Handing
batches out round-robin (rank ``r`` takes ``r, r + n, ...``) would make
every rank and every worker read every shard. Here rank ``r`` of ``n``
takes one contiguous run of the epoch, and worker ``w`` of ``k`` one
contiguous run of its rank's, so together they read each shard about once.
"""

from __future__ import annotations

import numpy as np

__all__ = ["EpochPlan", "epoch_batches", "rank_run_length", "run_batch_ids"]


def epoch_batches(plans, epoch: int) -> list:
    """The batches of ``epoch`` (int64 arrays of row positions) from ``plans``."""
    plan = EpochPlan(plans, epoch)
    return plan.take(np.arange(plan.num_batches))[0]


class EpochPlan:
    """One epoch of ``plans``, read as far as a run needs it.

    ``plans``: an object with ``plan(epoch)`` (``StratifiedBatchSampler``),
    a callable ``epoch -> plan``, or one plan served every epoch; a plan is a
    :class:`~pystratum.BatchPlan`, a lazy plan (:func:`pystratum.lazy_plan`:
    only the batches a run asks for are computed, so a worker holds its run,
    not the epoch) or a sequence of batches.
    """

    def __init__(self, plans, epoch: int):
        if hasattr(plans, "plan") and callable(plans.plan):
            plan = plans.plan(epoch)
        elif callable(plans):
            plan = plans(epoch)
        else:
            plan = plans
        self._lazy = None
        if all(hasattr(plan, name) for name in ("batches_of", "batch_weights", "materialise")):
            self._lazy = plan
            self.num_batches = len(plan)
            return
        self._batches, self._weights = self._read(plan, epoch)
        self.num_batches = len(self._batches)

    def take(self, ids) -> tuple:
        """``(batches, weights)`` of the batches ``ids``: weights a list parallel to them (the
        plan's importance weights of each served row) or None when the plan has none."""
        ids = np.asarray(ids, dtype=np.int64)
        if self._lazy is None:
            weights = None if self._weights is None else [self._weights[b] for b in ids.tolist()]
            return [self._batches[b] for b in ids.tolist()], weights
        if ids.shape[0] == 0:
            return [], None
        order, bounds = self._lazy.batches_of(ids)
        order = np.asarray(order, dtype=np.int64)
        batches = [order[bounds[i]:bounds[i + 1]] for i in range(ids.shape[0])]
        weights = None
        if getattr(self._lazy, "row_weights", None) is not None:
            weights = [np.asarray(self._lazy.batch_weights(b), dtype=np.float64)
                       for b in ids.tolist()]
        return batches, weights

    @staticmethod
    def _read(plan, epoch):
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
                f"plans must be a sampler with plan(epoch), a callable epoch -> plan, a BatchPlan "
                f"or a list of batches, got {type(plan).__name__}.") from None
        for b, batch in enumerate(batches):
            if batch.ndim != 1 or batch.dtype.kind not in "iu" or batch.shape[0] == 0:
                raise ValueError(
                    f"plans must give batches that are non-empty lists of integer row positions; "
                    f"batch {b} of epoch {epoch} has shape {batch.shape} and dtype {batch.dtype}.")
        if not batches:
            raise ValueError(f"plans gave no batch for epoch {epoch}; a plan has at least one "
                             f"batch.")
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
