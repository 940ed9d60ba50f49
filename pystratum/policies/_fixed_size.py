"""``FixedSize(batch_size, min_per_stratum=1, sizes="exact")``: stratified batches of a chosen size."""

from __future__ import annotations

import numpy as np

from ..base._validation import check_choice, check_int
from ._base import Allocation, Policy, small_cuts

__all__ = ["FixedSize", "fixed_size_num_batches"]

SIZES = ("exact", "balanced")


def fixed_size_num_batches(n_rows: int, batch_size: int) -> int:
    """``max(1, round(n_rows / batch_size))`` with halves rounded up, in integers.

    The nearest number of batches keeps the mean batch size closest to the
    request; the integer form (not Python's or R's half-to-even ``round``)
    makes both languages agree on every input. (The balanced sizes' count.)
    """
    return max(1, (2 * n_rows + batch_size) // (2 * batch_size))


def _scaled_floor(values: np.ndarray, numerator: int, denominator: int) -> np.ndarray:
    """``floor(values * numerator / denominator)`` exactly, for int64 ``values >= 0``."""
    if int(values.max(initial=0)) * numerator < 2 ** 62:
        return values * numerator // denominator
    # Products past int64 (10^10 rows and batches of 10^9): Python's integers.
    return np.array([int(v) * numerator // denominator for v in values], dtype=np.int64)


def _exact_fewest(layout, last_is_full) -> tuple:
    """``(stratum, rows)``: the fewest rows a stratum gives a full batch of ``layout``."""
    full, last, base, _, _ = layout
    if full == 0:
        fewest = last if last_is_full else np.full_like(last, np.iinfo(np.int64).max)
    else:
        fewest = np.minimum(base, last) if last_is_full else base
    short = int(np.argmin(fewest))
    return short, int(fewest[short])


class FixedSize(Policy):
    """Batches of ``batch_size`` rows (``sizes="exact"``) or about it (``"balanced"``).

    ``sizes="exact"`` (default): ``B = ceil(N / batch_size)`` batches; every
    batch has exactly ``batch_size`` rows except the epoch's last, which has
    ``L = N - (B - 1) * batch_size`` (``1 <= L <= batch_size``: shorter
    unless ``batch_size`` divides ``N``). The counts are a controlled
    rounding of ``N_s * size_b / N``: stratum ``s`` gives the last batch
    ``l_s = floor(C'_s L / N) - floor(C_s L / N)`` rows (``C_s``: rows of
    the strata before ``s``, strata in order of first appearance in the
    data; ``C'_s = C_s + N_s``), so ``l_s`` is the floor or the ceiling of
    ``N_s L / N`` and they add up to ``L``; its other ``N_s - l_s`` rows are
    spread over the ``F = B - 1`` full batches as in the balanced rule
    below (``(N_s - l_s) // F`` each, the extras cyclically), which gives
    every full batch exactly ``batch_size`` rows. Every count of stratum
    ``s`` in a full batch is the floor or the ceiling of ``N_s *
    batch_size / N`` (its full-batch counts differ by at most one).
    ``drop_last=True`` on a sampler drops the short last batch.

    ``sizes="balanced"``: ``B = max(1, round(N / batch_size))`` batches
    (halves up). Stratum ``s`` gives every batch ``N_s // B`` rows; its
    ``N_s % B`` extra rows go one each to consecutive batches, cyclically,
    strata taken in order of first appearance in the data, each continuing
    where the previous one stopped; in epoch ``k`` the cycle starts where
    epoch ``k - 1``'s stopped (so no batch is always the big one). Every
    batch has ``floor(N / B)`` or ``ceil(N / B)`` rows.

    Guarantees (both): every row is in exactly one batch per epoch; a
    stratum's per-batch counts differ by at most one (exact sizes: over the
    full batches; the short last batch holds its floor or ceiling share);
    every batch (exact sizes: every batch but a short last one) holds at
    least ``min_per_stratum`` rows of every stratum. When a stratum is too
    small for that, a ValueError names it, its size, and a ``batch_size``
    that works.
    """

    name = "fixed_size"

    def __init__(self, batch_size, min_per_stratum=1, sizes="exact"):
        self._batch_size = check_int(batch_size, "batch_size", minimum=1)
        self._min_per_stratum = check_int(min_per_stratum, "min_per_stratum", minimum=1)
        self._sizes = check_choice(sizes, "sizes", SIZES)

    # Read-only: a policy is hashed and shared (plans, samplers); changing it
    # in place would change a sampler's len() behind its back.
    @property
    def batch_size(self) -> int:
        return self._batch_size

    @property
    def min_per_stratum(self) -> int:
        return self._min_per_stratum

    @property
    def sizes(self) -> str:
        """``"exact"`` or ``"balanced"`` (see the class docstring)."""
        return self._sizes

    def params(self) -> dict:
        return {"batch_size": self.batch_size, "min_per_stratum": self.min_per_stratum,
                "sizes": self.sizes}

    def num_batches(self, strata) -> int:
        sizes = strata.sizes
        n_rows = int(sizes.sum())
        if self.sizes == "exact":
            num_batches = -(-n_rows // self.batch_size)
            self._exact_layout(strata, 0)  # checks min_per_stratum
            return num_batches
        num_batches = fixed_size_num_batches(n_rows, self.batch_size)
        self._check_feasible(sizes, strata.labels, num_batches, n_rows)
        return num_batches

    def short_last_batch(self, strata) -> bool:
        """Exact sizes whose ``batch_size`` does not divide the rows: the last batch is short."""
        n_rows = int(np.sum(strata.sizes, dtype=np.int64))
        return self.sizes == "exact" and n_rows % self.batch_size != 0

    def _extra_starts(self, strata, epoch, num_batches, extra):
        """First batch of each stratum's run of extra rows (see the class docstring)."""
        # Extras of a stratum occupy batches start, start + 1, ... (mod B), where
        # the previous stratum's stopped, strata in order of first appearance
        # (a property of the data, not of the label coding, so R agrees); the
        # epoch shifts the cycle by a whole epoch's extras. All < B: no overflow.
        # (Exact sizes: the extras fill every full batch alike, so the shift is 0.)
        total_extra = int(extra.sum()) % num_batches
        first = (epoch % num_batches) * total_extra % num_batches
        turn = np.argsort(strata.first_rows, kind="stable")
        starts = np.empty_like(extra)
        starts[turn] = (first + np.cumsum(extra[turn]) - extra[turn]) % num_batches
        return starts

    def _exact_layout(self, strata, epoch, batch_size=None, check=True):
        """``(full, last, base, extra, starts)`` of the exact sizes: ``full`` batches
        (``F``) of ``batch_size`` rows, then one of ``sum(last)`` rows."""
        batch_size = self.batch_size if batch_size is None else batch_size
        sizes = np.asarray(strata.sizes, dtype=np.int64)
        n_rows = int(sizes.sum())
        full = (n_rows - 1) // batch_size
        last_rows = n_rows - full * batch_size
        if full == 0:
            last = sizes.copy()
        else:
            # Systematic rounding of N_s * L / N over the strata in turn order:
            # each count is its floor or ceiling and they add up to L.
            turn = np.argsort(strata.first_rows, kind="stable")
            bounds = np.zeros(sizes.shape[0] + 1, dtype=np.int64)
            np.cumsum(sizes[turn], out=bounds[1:])
            marks = _scaled_floor(bounds, last_rows, n_rows)
            last = np.empty_like(sizes)
            last[turn] = np.diff(marks)
        if full == 0:
            base = extra = starts = np.zeros_like(sizes)
        else:
            base, extra = (sizes - last) // full, (sizes - last) % full
            starts = self._extra_starts(strata, epoch, full, extra)
        layout = full, last, base, extra, starts
        if check and _exact_fewest(layout, last_rows == batch_size)[1] < self.min_per_stratum:
            self._exact_infeasible(strata, layout, last_rows == batch_size)
        return layout

    def allocate(self, strata, epoch) -> Allocation:
        sizes = strata.sizes
        if self.sizes == "exact":
            full, last, base, extra, starts = self._exact_layout(strata, epoch)
            num_batches = full + 1
            counts = np.empty((sizes.shape[0], num_batches), dtype=np.int64)
            if full:
                batch_ids = np.arange(full, dtype=np.int64)
                counts[:, :full] = base[:, None] + (
                    (batch_ids[None, :] - starts[:, None]) % full < extra[:, None])
            counts[:, full] = last
        else:
            num_batches = self.num_batches(strata)
            base = sizes // num_batches
            extra = sizes % num_batches
            starts = self._extra_starts(strata, epoch, num_batches, extra)
            batch_ids = np.arange(num_batches, dtype=np.int64)
            counts = base[:, None] + (
                (batch_ids[None, :] - starts[:, None]) % num_batches < extra[:, None])
        cuts = np.zeros((sizes.shape[0], num_batches + 1), dtype=np.int64)
        np.cumsum(counts, axis=1, out=cuts[:, 1:])
        return Allocation(small_cuts(cuts, sizes))

    def batch_cuts(self, strata, epoch, batches):
        """Closed form, O(S) per batch: ``lo = base * b`` + extras of batches before ``b``.

        A stratum's extras sit in the cyclic run ``start, ..., start + extra - 1``
        (mod B; exact sizes: mod F, over the full batches); the part of it
        before batch ``b`` is the unwrapped run's part ``clip(b - start, 0,
        extra)`` plus the wrapped tail's ``clip(b, 0, start + extra - B)``.
        Exact sizes: the last batch (``b = F``) holds ranks ``N_s - l_s`` to
        ``N_s``.
        """
        sizes = np.asarray(strata.sizes, dtype=np.int64)
        batches = np.asarray(batches, dtype=np.int64)[:, None]
        if self.sizes == "exact":
            full, _, base, extra, starts = self._exact_layout(strata, epoch)
            cycle = max(full, 1)
        else:
            cycle = self.num_batches(strata)
            base = sizes // cycle
            extra = sizes % cycle
            starts = self._extra_starts(strata, epoch, cycle, extra)
            full = cycle
        wrapped = np.maximum(starts + extra - cycle, 0)

        def before(b):
            # Batches past the cycle (exact sizes' last batch): the stratum's end.
            inside = np.minimum(b, full)
            ranks = base * inside + np.clip(inside - starts, 0, extra) + np.minimum(inside, wrapped)
            return np.where(b > full, sizes, ranks)

        return before(batches), before(batches + 1)

    def _exact_infeasible(self, strata, layout, last_is_full):
        """The ValueError of a stratum short of ``min_per_stratum`` in a full batch."""
        m = self.min_per_stratum
        sizes = np.asarray(strata.sizes, dtype=np.int64)
        n_rows = int(sizes.sum())
        short = _exact_fewest(layout, last_is_full)[0]
        if int(sizes.min()) < m:
            short = int(np.argmin(sizes))
            n_s = int(sizes[short])
            raise ValueError(
                f"min_per_stratum={m} is more rows than stratum {strata.labels[short]!r} has "
                f"({n_s}): no batch size below the row count ({n_rows}) gives every full batch "
                f"that many; lower min_per_stratum to at most {n_s}, or use a policy that "
                f"oversamples small strata.")
        raise ValueError(
            f"batch_size={self.batch_size} gives {layout[0]} full batch(es) of {n_rows} rows, "
            f"but stratum {strata.labels[short]!r} has only {int(sizes[short])} rows: it "
            f"cannot give every full batch min_per_stratum={m} row(s). Use batch_size >= "
            f"{self._smallest_exact_size(strata)}, lower min_per_stratum, or use a policy that "
            f"oversamples small strata.")

    def _smallest_exact_size(self, strata) -> int:
        """The smallest feasible ``batch_size`` (exact sizes), searched over a bounded range."""
        sizes = np.asarray(strata.sizes, dtype=np.int64)
        n_rows, n_min, m = int(sizes.sum()), int(sizes.min()), self.min_per_stratum
        # Enough: every full-batch count is at least floor(N_s * batch_size / N) >= m.
        enough = -(-m * n_rows // n_min)
        # Needed: F = B - 1 full batches each taking m of the smallest stratum's rows.
        needed = -(-n_rows // (n_min // m + 1))
        for candidate in range(needed, min(enough, needed + 4096)):
            layout = self._exact_layout(strata, 0, candidate, check=False)
            full_last = n_rows - layout[0] * candidate == candidate
            if _exact_fewest(layout, full_last)[1] >= m:
                return candidate
        return enough

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
