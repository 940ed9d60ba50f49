"""Batch policies: how many rows of each stratum go into each batch.

A policy is one function ``stratum_sizes -> rank_cuts``. ``rank_cuts`` is an
integer array of shape ``(n_strata, n_batches + 1)``: the rows of stratum
``s`` whose 0-based rank (order of appearance in the epoch's permutation)
lies in ``rank_cuts[s, b] <= rank < rank_cuts[s, b + 1]`` go to batch ``b``.
Rows with rank ``>= rank_cuts[s, -1]`` go to no batch (for future
downsampling policies; the policy here uses every row).

Everything else (permuting, ranking, grouping rows into batches) lives in
``_assemble`` and is shared, so a new policy is one new function here.
"""

from __future__ import annotations

import warnings

import numpy as np

__all__ = ["StratumTooSmallWarning", "min_samples_per_stratum_cuts"]


class StratumTooSmallWarning(UserWarning):
    """The smallest stratum has fewer rows than ``min_samples_per_stratum``."""


def min_samples_per_stratum_cuts(stratum_sizes, min_samples_per_stratum, labels=None):
    """Cuts of the stratified allocation (Hocking 2025, exact integer form).

    ``num_batches = max(1, N_min // m)`` and the row of rank ``i`` (1-based)
    in stratum ``s`` goes to batch ``ceil(i * num_batches / N_s)``.
    Guarantee: when ``N_min >= m`` every batch holds at least ``m`` rows of
    every stratum, and a stratum's per-batch counts differ by at most one.
    When ``N_min < m`` there is one batch holding every row, and a
    ``StratumTooSmallWarning`` names the smallest stratum.
    """
    sizes = np.asarray(stratum_sizes, dtype=np.int64)
    m = int(min_samples_per_stratum)
    smallest = int(np.argmin(sizes))
    n_min = int(sizes[smallest])
    if n_min < m:
        label = labels[smallest] if labels is not None else smallest
        warnings.warn(
            f"The smallest stratum ({label!r}) has {n_min} rows, fewer than "
            f"min_samples_per_stratum={m}: returning a single batch with every row. "
            f"Lower min_samples_per_stratum to at most {n_min} to get several batches.",
            StratumTooSmallWarning,
            stacklevel=4,
        )
    num_batches = max(1, n_min // m)
    # ceil(i * B / N_s) == b  <=>  floor((b-1) * N_s / B) < i <= floor(b * N_s / B),
    # so the cut before batch b is floor(b * N_s / B): exact, no float rounding.
    # N_s * B <= N_s * N_min fits int64 for any data set that fits in memory.
    batch_edges = np.arange(num_batches + 1, dtype=np.int64)
    cuts = (sizes[:, None] * batch_edges[None, :]) // num_batches
    # S x (B+1) can hold about N entries (many strata, m = 1): keep it small.
    return cuts.astype(np.int32) if sizes.max() <= np.iinfo(np.int32).max else cuts
