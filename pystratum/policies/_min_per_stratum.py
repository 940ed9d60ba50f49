"""``MinPerStratum(m)``: every batch holds at least ``m`` rows of every stratum.

The allocation of Hocking (2025), "Stratified batch sampler for mlr3torch",
in exact integer arithmetic.
"""

from __future__ import annotations

import warnings

import numpy as np

from ..base._validation import check_int
from ._base import Allocation, Policy, check_batch_order, small_cuts

__all__ = ["MinPerStratum", "SingleBatchError", "StratumTooSmallWarning", "as_policy"]


class StratumTooSmallWarning(UserWarning):
    """The smallest stratum has fewer rows than ``min_samples_per_stratum``."""


class SingleBatchError(ValueError):
    """A plan whose only batch holds every row, refused unless ``allow_single_batch=True``.

    Raised by every face (core, lazy plan, torch samplers, trainers, CLI,
    the R bindings, which map R's ``pystratum_single_batch`` condition to
    it); a ``ValueError``, so code catching that keeps working. The message
    names the smallest strata, the number of rows and the fixes.
    """


class MinPerStratum(Policy):
    """At least ``m`` rows of every stratum in every batch, as many batches as that allows.

    ``num_batches = max(1, N_min // m)`` and the row of rank ``i`` (1-based)
    in stratum ``s`` goes to batch ``ceil(i * num_batches / N_s)``.
    Guarantee: when ``N_min >= m`` every batch holds at least ``m`` rows of
    every stratum, and a stratum's per-batch counts differ by at most one;
    every row is in exactly one batch. When ``N_min < m`` there is one batch
    holding every row, and a ``StratumTooSmallWarning`` names the smallest
    stratum (the R package and the blog do the same).
    """

    name = "min_per_stratum"

    def __init__(self, m, *, batch_order=None):
        self.batch_order = check_batch_order(batch_order)
        self._m = check_int(m, "min_samples_per_stratum", minimum=1)

    @property
    def m(self) -> int:
        """Read-only, as every policy parameter (policies are hashed and shared)."""
        return self._m

    def params(self) -> dict:
        return self._with_batch_order({"m": self.m})

    def num_batches(self, strata) -> int:
        return self._num_batches(strata, stacklevel=5)

    def _num_batches(self, strata, stacklevel) -> int:
        sizes, labels = strata.sizes, strata.labels
        m = self.m
        smallest = int(np.argmin(sizes))
        n_min = int(sizes[smallest])
        if n_min < m:
            label = labels[smallest]
            warnings.warn(
                f"The smallest stratum ({label!r}) has {n_min} rows, fewer than "
                f"min_samples_per_stratum={m}: returning a single batch with every row. "
                f"Lower min_samples_per_stratum to at most {n_min} to get several batches.",
                StratumTooSmallWarning,
                stacklevel=stacklevel,
            )
        return max(1, n_min // m)

    def allocate(self, strata, epoch) -> Allocation:
        num_batches = self._num_batches(strata, stacklevel=5)
        # ceil(i * B / N_s) == b  <=>  floor((b-1) * N_s / B) < i <= floor(b * N_s / B),
        # so the cut before batch b is floor(b * N_s / B): exact, no float rounding
        # (the R original's float version can open a batch without minority rows).
        # N_s * B <= N_s * N_min fits int64 for any data set that fits in memory.
        batch_edges = np.arange(num_batches + 1, dtype=np.int64)
        cuts = (strata.sizes[:, None] * batch_edges[None, :]) // num_batches
        return Allocation(small_cuts(cuts, strata.sizes))

    def batch_cuts(self, strata, epoch, batches):
        """Closed form, O(S) per batch: ``lo = floor(b N_s / B)``, ``hi = floor((b + 1) N_s / B)``."""
        sizes = strata.sizes
        num_batches = max(1, int(sizes.min()) // self.m)
        batches = np.asarray(batches, dtype=np.int64)[:, None]
        return (sizes[None, :] * batches) // num_batches, \
            (sizes[None, :] * (batches + 1)) // num_batches


def as_policy(policy) -> Policy:
    """A policy object, or an int as shorthand for ``MinPerStratum(m)``.

    Anything else is refused as the shorthand's argument,
    ``min_samples_per_stratum``, which is what the R package blames too.
    """
    if isinstance(policy, Policy):
        return policy
    fix = ("Pass an int (at least m rows of every stratum per batch) or a policy object such "
           "as pystratum.policies.FixedSize(batch_size=64).")
    if isinstance(policy, type) and issubclass(policy, Policy):
        fix = f"That is the class {policy.__name__} itself: call it, e.g. {policy.__name__}(...)."
    check_int(policy, "min_samples_per_stratum", minimum=1, fix=fix)
    return MinPerStratum(policy)
