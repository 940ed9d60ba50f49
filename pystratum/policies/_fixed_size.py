"""``FixedSize(batch_size, min_per_stratum=1)``: stratified batches of a chosen size."""

from __future__ import annotations

import numpy as np

from .._validation import check_int
from ._base import Allocation, Policy, small_cuts

__all__ = ["FixedSize", "fixed_size_num_batches"]


def fixed_size_num_batches(n_rows: int, batch_size: int) -> int:
    """``max(1, round(n_rows / batch_size))`` with halves rounded up, in integers.

    The nearest number of batches keeps the mean batch size closest to the
    request; the integer form (not Python's or R's half-to-even ``round``)
    makes both languages agree on every input.
    """
    return max(1, (2 * n_rows + batch_size) // (2 * batch_size))


class FixedSize(Policy):
    """Batches of about ``batch_size`` rows, each stratum spread as evenly as possible.

    ``B = max(1, round(N / batch_size))`` batches (halves up). Stratum ``s``
    gives every batch ``N_s // B`` rows; its ``N_s % B`` extra rows go one
    each to consecutive batches, cyclically, strata taken in order of first
    appearance in the data, each continuing where the previous one stopped;
    in epoch ``k`` the cycle starts where epoch ``k - 1``'s stopped (so no
    batch is always the big one).

    Guarantees: every row is in exactly one batch per epoch; every batch has
    ``floor(N / B)`` or ``ceil(N / B)`` rows; a stratum's per-batch counts
    differ by at most one; every batch holds at least ``min_per_stratum``
    rows of every stratum. When a stratum is too small for that, a
    ValueError names it, its size, and the smallest feasible ``batch_size``.
    """

    name = "fixed_size"

    def __init__(self, batch_size, min_per_stratum=1):
        self._batch_size = check_int(batch_size, "batch_size", minimum=1)
        self._min_per_stratum = check_int(min_per_stratum, "min_per_stratum", minimum=1)

    # Read-only: a policy is hashed and shared (plans, samplers); changing it
    # in place would change a sampler's len() behind its back.
    @property
    def batch_size(self) -> int:
        return self._batch_size

    @property
    def min_per_stratum(self) -> int:
        return self._min_per_stratum

    def params(self) -> dict:
        return {"batch_size": self.batch_size, "min_per_stratum": self.min_per_stratum}

    def num_batches(self, strata) -> int:
        sizes = strata.sizes
        n_rows = int(sizes.sum())
        num_batches = fixed_size_num_batches(n_rows, self.batch_size)
        self._check_feasible(sizes, strata.labels, num_batches, n_rows)
        return num_batches

    def _extra_starts(self, strata, epoch, num_batches, extra):
        """First batch of each stratum's run of extra rows (see the class docstring)."""
        # Extras of a stratum occupy batches start, start + 1, ... (mod B), where
        # the previous stratum's stopped, strata in order of first appearance
        # (a property of the data, not of the label coding, so R agrees); the
        # epoch shifts the cycle by a whole epoch's extras. All < B: no overflow.
        total_extra = int(extra.sum()) % num_batches
        first = (epoch % num_batches) * total_extra % num_batches
        turn = np.argsort(strata.first_rows, kind="stable")
        starts = np.empty_like(extra)
        starts[turn] = (first + np.cumsum(extra[turn]) - extra[turn]) % num_batches
        return starts

    def allocate(self, strata, epoch) -> Allocation:
        sizes = strata.sizes
        num_batches = self.num_batches(strata)
        base = sizes // num_batches
        extra = sizes % num_batches
        starts = self._extra_starts(strata, epoch, num_batches, extra)
        batch_ids = np.arange(num_batches, dtype=np.int64)
        takes_extra = (batch_ids[None, :] - starts[:, None]) % num_batches < extra[:, None]
        cuts = np.zeros((sizes.shape[0], num_batches + 1), dtype=np.int64)
        np.cumsum(base[:, None] + takes_extra, axis=1, out=cuts[:, 1:])
        return Allocation(small_cuts(cuts, sizes))

    def batch_cuts(self, strata, epoch, batches):
        """Closed form, O(S) per batch: ``lo = base * b`` + extras of batches before ``b``.

        A stratum's extras sit in the cyclic run ``start, ..., start + extra - 1``
        (mod B); the part of it before batch ``b`` is the unwrapped run's part
        ``clip(b - start, 0, extra)`` plus the wrapped tail's ``clip(b, 0,
        start + extra - B)``.
        """
        sizes = strata.sizes
        num_batches = self.num_batches(strata)
        base = sizes // num_batches
        extra = sizes % num_batches
        starts = self._extra_starts(strata, epoch, num_batches, extra)
        wrapped = np.maximum(starts + extra - num_batches, 0)
        batches = np.asarray(batches, dtype=np.int64)[:, None]

        def before(b):
            return base * b + np.clip(b - starts, 0, extra) + np.minimum(b, wrapped)

        return before(batches), before(batches + 1)

    def _check_feasible(self, sizes, labels, num_batches, n_rows):
        m = self.min_per_stratum
        smallest = int(np.argmin(sizes))
        n_min = int(sizes[smallest])
        if n_min // num_batches >= m:
            return
        label = labels[smallest]
        most_batches = n_min // m
        if most_batches == 0:
            fix = (f"No batch size can do that: lower min_per_stratum to at most {n_min}, or "
                   f"use a policy that oversamples small strata.")
        else:
            # Smallest b with round(N / b) <= most_batches: N / b < most_batches + 1/2.
            smallest_size = 2 * n_rows // (2 * most_batches + 1) + 1
            fix = (f"Use batch_size >= {smallest_size} (at most {most_batches} batches), lower "
                   f"min_per_stratum, or use a policy that oversamples small strata.")
        raise ValueError(
            f"batch_size={self.batch_size} gives {num_batches} batches of {n_rows} rows, but "
            f"stratum {label!r} has only {n_min} rows: it cannot give every batch "
            f"min_per_stratum={m} row(s). {fix}"
        )
