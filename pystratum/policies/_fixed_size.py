"""``FixedSize(batch_size, min_per_stratum=1, sizes="exact")``: stratified batches of a chosen size."""

from __future__ import annotations

import numpy as np

from ..base._validation import check_choice, check_int
from ._base import Allocation, Policy, check_batch_order, small_cuts

__all__ = ["FixedSize", "fixed_size_num_batches", "fixed_size_smallest_batch_size"]

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


def _scaled_ceil(values: np.ndarray, numerator: int, denominator: int) -> np.ndarray:
    """``ceil(values * numerator / denominator)`` exactly, for int64 ``values >= 0``."""
    if int(values.max(initial=0)) * numerator < 2 ** 62:
        return -(-values * numerator // denominator)
    return np.array([-(-int(v) * numerator // denominator) for v in values], dtype=np.int64)


# How many batch sizes the error message's search tries on either side.
SEARCH = 4096


def _last_batch_range(sizes: np.ndarray, batch_size: int, m: int):
    """``(full, last_rows, lo, hi)`` of exact sizes: stratum ``s`` may give the last batch
    from ``lo_s`` to ``hi_s`` rows.

    The guarantee allows the floor or the ceiling of its share ``N_s L / N``
    (and at least ``m`` when the last batch is full) but no more than ``N_s
    - m F``, what is left once each of the ``F`` full batches has ``m`` of
    its rows. Its other rows then spread over the full batches in counts
    that differ by at most one, all ``>= m``, and the cyclic extras give
    every full batch exactly ``batch_size``: the input is feasible exactly
    when ``lo <= hi`` for every stratum and ``sum(lo) <= L <= sum(hi)``.
    """
    n_rows = int(sizes.sum())
    full = (n_rows - 1) // batch_size
    last_rows = n_rows - full * batch_size
    # Beyond 2^62 a requirement is larger than any stratum either way.
    lo = _scaled_floor(sizes, last_rows, n_rows)
    if last_rows == batch_size:
        lo = np.maximum(lo, min(m, 2 ** 62))
    hi = np.minimum(_scaled_ceil(sizes, last_rows, n_rows), sizes - min(m * full, 2 ** 62))
    return full, last_rows, lo, hi


def _exact_feasible(sizes: np.ndarray, batch_size: int, m: int) -> bool:
    """Whether exact sizes can keep every guarantee (see :func:`_last_batch_range`)."""
    _, last_rows, lo, hi = _last_batch_range(sizes, batch_size, m)
    return bool((lo <= hi).all()) and int(lo.sum()) <= last_rows <= int(hi.sum())


def _exact_last(sizes: np.ndarray, turn: np.ndarray, batch_size: int, m: int):
    """``(full, last)``: the last batch's rows per stratum, or ``last=None`` if infeasible.

    Systematic rounding of ``N_s L / N`` over the strata in turn order (each
    count its floor or ceiling, adding up to ``L``); where that gives a
    stratum more than its ``hi`` (or less than its ``lo``), the strata after
    it in turn order with room take (or give) the row instead.
    """
    full, last_rows, lo, hi = _last_batch_range(sizes, batch_size, m)
    if not ((lo <= hi).all() and int(lo.sum()) <= last_rows <= int(hi.sum())):
        return full, None
    if full == 0:
        return full, sizes.copy()
    bounds = np.zeros(sizes.shape[0] + 1, dtype=np.int64)
    np.cumsum(sizes[turn], out=bounds[1:])
    last = np.empty_like(sizes)
    last[turn] = np.diff(_scaled_floor(bounds, last_rows, int(sizes.sum())))
    last = np.clip(last, lo, hi)
    gap = last_rows - int(last.sum())
    if gap:
        room = (last < hi)[turn] if gap > 0 else (last > lo)[turn]
        moved = turn[np.flatnonzero(room)[:abs(gap)]]
        last[moved] += 1 if gap > 0 else -1
    return full, last


def _smallest_from(sizes: np.ndarray, start: int, m: int):
    """``(batch_size, True)``: the smallest feasible ``batch_size >= start``
    within :data:`SEARCH` tries, else ``(enough, False)``, where every
    ``batch_size >= enough = ceil(m N / min N_s)`` is feasible (each full
    batch's count of ``s`` is then at least ``floor(N_s batch_size / N) >= m``).
    """
    enough = -(-m * int(sizes.sum()) // int(sizes.min()))
    for candidate in range(start, min(enough, start + SEARCH)):
        if _exact_feasible(sizes, candidate, m):
            return candidate, True
    return max(enough, start), start >= enough


def fixed_size_smallest_batch_size(sizes, min_per_stratum=1, rule="exact"):
    """The smallest ``batch_size`` for which ``FixedSize(batch_size, min_per_stratum,
    sizes=rule)`` is feasible on strata of these sizes, or None when none is.

    Returns ``(batch_size, smallest)``. ``"balanced"``: the smallest with
    ``round(N / batch_size) <= min(N_s) // min_per_stratum``, and every
    larger one works too. ``"exact"``: feasibility is not monotone in
    ``batch_size`` (the last batch's rounding), so this searches upward from
    the fewest rows that can work; ``smallest`` is False when the search
    stopped at ``ceil(m N / min N_s)``, from which on every size works.
    """
    sizes = np.asarray(sizes, dtype=np.int64)
    n_rows, n_min = int(sizes.sum()), int(sizes.min())
    most_batches = n_min // min_per_stratum
    if most_batches == 0:
        return None
    if rule == "balanced":
        # Smallest b with round(N / b) <= most_batches: N / b < most_batches + 1/2.
        return 2 * n_rows // (2 * most_batches + 1) + 1, True
    # At most n_min // m full batches: F = ceil(N / b) - 1 <= most_batches.
    return _smallest_from(sizes, -(-n_rows // (most_batches + 1)), min_per_stratum)


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
    ``N_s L / N`` and they add up to ``L``. Where that would leave a
    stratum fewer than ``min_per_stratum`` rows for each full batch (``l_s >
    N_s - min_per_stratum * F``), it gives the floor instead, and as many
    strata as that frees rows, the first in that order that can, give their
    ceiling instead of their floor. Its other ``N_s - l_s`` rows are
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
    least ``min_per_stratum`` rows of every stratum.

    Exact sizes accept exactly the inputs for which some allocation keeps
    every one of these guarantees: with ``F`` full batches and a last batch
    of ``L``, stratum ``s`` can give the last batch no fewer than ``lo_s =
    floor(N_s L / N)`` rows (``max(that, min_per_stratum)`` when ``L =
    batch_size``) and no more than ``hi_s = min(ceil(N_s L / N), N_s -
    min_per_stratum * F)``; feasible when ``lo_s <= hi_s`` for every
    stratum and ``sum(lo) <= L <= sum(hi)``. Feasibility is not monotone in
    ``batch_size`` (the last batch's rounding), but every ``batch_size >=
    ceil(min_per_stratum * N / min(N_s))`` is feasible. Otherwise a
    ValueError states the rule that fails with its numbers and what works:
    the nearest larger and smaller ``batch_size`` (searched over 4096 sizes
    either way) and the largest ``min_per_stratum`` for this ``batch_size``.
    It blames ``min_per_stratum`` when a stratum has fewer rows than that
    (no ``batch_size`` up to ``N`` works), else ``batch_size``.
    """

    name = "fixed_size"

    def __init__(self, batch_size, min_per_stratum=1, sizes="exact", *, batch_order=None):
        self.batch_order = check_batch_order(batch_order)
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
        return self._with_batch_order({"batch_size": self.batch_size,
                                       "min_per_stratum": self.min_per_stratum,
                                       "sizes": self.sizes})

    def num_batches(self, strata) -> int:
        sizes = strata.sizes
        n_rows = int(sizes.sum())
        if self.sizes == "exact":
            if not _exact_feasible(np.asarray(sizes, dtype=np.int64), self.batch_size,
                                   self.min_per_stratum):
                self._exact_infeasible(strata)
            return -(-n_rows // self.batch_size)
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

    def _exact_layout(self, strata, epoch):
        """``(full, last, base, extra, starts)`` of the exact sizes: ``full`` batches
        (``F``) of ``batch_size`` rows, then one of ``sum(last)`` rows."""
        sizes = np.asarray(strata.sizes, dtype=np.int64)
        # One batch needs no order of strata (computing it costs a pass over the rows).
        turn = None if int(sizes.sum()) <= self.batch_size else \
            np.argsort(strata.first_rows, kind="stable")
        full, last = _exact_last(sizes, turn, self.batch_size, self.min_per_stratum)
        if last is None:
            self._exact_infeasible(strata)
        if full == 0:
            base = extra = starts = np.zeros_like(sizes)
        else:
            base, extra = (sizes - last) // full, (sizes - last) % full
            starts = self._extra_starts(strata, epoch, full, extra)
        return full, last, base, extra, starts

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

    def _exact_infeasible(self, strata):
        """The ValueError of exact sizes that cannot keep every guarantee: the rule, the
        numbers, and the batch sizes (or the minimum) that work."""
        m, batch_size = self.min_per_stratum, self.batch_size
        sizes = np.asarray(strata.sizes, dtype=np.int64)
        n_rows, n_min = int(sizes.sum()), int(sizes.min())
        if n_min < m:
            short = int(np.argmin(sizes))
            raise ValueError(
                f"min_per_stratum={m} is more rows than stratum {strata.labels[short]!r} has "
                f"({n_min}): no batch size below the row count ({n_rows}) gives every full batch "
                f"that many; lower min_per_stratum to at most {n_min}, or use a policy that "
                f"oversamples small strata.")
        full, last_rows, lo, hi = _last_batch_range(sizes, batch_size, m)
        turn = np.argsort(strata.first_rows, kind="stable")
        if last_rows < batch_size:
            shape = (f"batch_size={batch_size} gives {full} full batch(es) and a last batch of "
                     f"{last_rows} row(s) ({n_rows} rows): every full batch needs "
                     f"min_per_stratum={m} row(s) of every stratum, and each stratum s gives the "
                     f"last batch the floor or the ceiling of N_s * {last_rows} / {n_rows} rows")
        else:
            shape = (f"batch_size={batch_size} gives {full + 1} full batch(es) ({n_rows} rows): "
                     f"every batch needs min_per_stratum={m} row(s) of every stratum")
        gaps = (hi - lo)[turn]
        if gaps.min() < 0:
            short = int(turn[np.argmin(gaps)])
            n_s = int(sizes[short])
            if last_rows < batch_size:
                floor_share = n_s * last_rows // n_rows
                need = (f"{m} x {full} full batch(es) + floor({n_s} * {last_rows} / {n_rows}) = "
                        f"{m * full + floor_share}")
            else:
                need = f"{m} x {full + 1} batches = {m * (full + 1)}"
            why = f"stratum {strata.labels[short]!r} has {n_s} row(s), fewer than {need}"
        else:
            ceil = _scaled_ceil(sizes, last_rows, n_rows)
            capped = [repr(strata.labels[int(s)]) for s in turn if hi[s] < ceil[s]]
            why = (f"then the strata can fill at most {int(hi.sum())} of its {last_rows} rows "
                   f"(strata {', '.join(capped)} need every row beyond their floor share for the "
                   f"full batches)")
        raise ValueError(f"{shape}; but {why}. {self._exact_fix(sizes)}")

    def _exact_fix(self, sizes) -> str:
        """What works instead: the nearest larger and smaller ``batch_size``, a lower minimum."""
        m, batch_size = self.min_per_stratum, self.batch_size
        n_rows, n_min = int(sizes.sum()), int(sizes.min())
        enough = -(-m * n_rows // n_min)
        above, nearest = _smallest_from(sizes, batch_size + 1, m)
        if nearest and above < enough:
            fixes = [f"batch_size={above} (the smallest larger one that works; every batch_size "
                     f">= {enough} works)"]
        else:
            fixes = [f"batch_size >= {above} (every one works)"]
        # No batch size below `fewest` has at most n_min // m full batches.
        fewest = -(-n_rows // (n_min // m + 1))
        below = next((candidate for candidate in range(batch_size - 1, fewest - 1, -1)[:SEARCH]
                      if _exact_feasible(sizes, candidate, m)), None)
        if below is not None:
            fixes.append(f"batch_size={below} (the largest smaller one that works)")
        # Lowering the minimum only ever helps: bisect for the largest one that works.
        works, fails = 0, m
        while fails - works > 1:
            middle = (works + fails) // 2
            if _exact_feasible(sizes, batch_size, middle):
                works = middle
            else:
                fails = middle
        if works:
            fixes.append(f"min_per_stratum={works} (the largest that works with this batch_size)")
        return f"Use {', '.join(fixes)}, or a policy that oversamples small strata."

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
