"""``Targets(shares, batch_size, epoch="largest")``: exact per-batch shares of every stratum."""

from __future__ import annotations

import math
from collections.abc import Mapping

import numpy as np

from ..base._validation import SIZE_MAX, check_int, check_served_size
from ._base import Allocation, Policy, check_batch_order, small_cuts
from ._shares import (SHARE_SCALE, SHARE_TOLERANCE, extras_of_batches, labelled_numbers,
                      StrataCache, match_keys, share_weights, weyl_step, window_hits)

__all__ = ["Targets"]

_EPOCH_MODES = ("largest", "smallest")


class Targets(Policy):
    """Every batch holds exactly ``batch_size`` rows, each stratum its target share.

    shares:     ``"balanced"`` (equal shares) or a dict ``{label: share}``
                naming every stratum once, shares >= 0 adding up to 1 (within
                1e-9; they are not normalised: a wrong sum is an error). A
                share of 0 leaves that stratum out of every batch.
    batch_size: ``B``, the rows of every batch.
    epoch:      ``"largest"``, ``"smallest"`` or a positive int (batches per epoch).

    Per-batch counts. Shares become integer weights ``w_s = floor(share_s *
    10**6 + 0.5)`` (``"balanced"``: ``w_s = 1``), ``W = sum(w)``. Batch ``J``
    (counted across epochs: ``J = epoch * num_batches + j``) gives stratum
    ``s`` either ``f_s = B * w_s // W`` rows or ``f_s + 1``: the strata's
    remainders ``B * w_s - f_s * W`` lie end to end on a circle of length
    ``W`` (strata in order of first appearance in the data), and batch ``J``
    takes one extra row from each stratum whose arc holds the point ``J * g
    mod W`` (``g`` coprime to ``W``, near ``0.618 W``). So every batch sums to
    ``B``, every count is ``floor`` or ``ceil`` of ``B * share_s``, and over
    any ``W`` consecutive batches stratum ``s`` gets exactly ``B * w_s`` rows:
    the long-run shares are exact.

    Epoch length (``num_batches``, the same in every epoch):

    * ``"largest"``: the fewest batches in which every stratum with a positive
      share gets at least ``N_s`` slots whatever the rotation's phase. Every
      row of every such stratum appears at least once in every epoch; a
      stratum with more slots than rows is recycled (see below).
    * ``"smallest"``: the most batches in which no stratum gets more than
      ``N_s`` slots whatever the phase. No row appears twice in an epoch;
      strata with fewer slots than rows are undersampled (each epoch draws a
      fresh uniformly random subset of just the rows it serves).
    * an int: that many batches; strata are recycled or undersampled as needed.

    Draws: an epoch draws stratum by stratum (order of first appearance in
    the data), and only the rows it serves: stratum ``s`` first draws its
    pass 0, ``min(N_s, T_s)`` of its rows in uniformly random order (a
    partial shuffle: numpy ``Generator.choice(N_s, t, replace=False)``, R
    ``sample.int(N_s, t)``; a permutation when ``t == N_s``). Recycling: a
    stratum with ``T_s > N_s`` slots then serves its rows again in fresh
    random orders, one new permutation per extra pass, the last pass, cut
    short to the ``t`` ranks it serves, again a partial shuffle whose cost
    grows with ``t``, not ``N_s``. Every row is used ``floor(T_s / N_s)`` or
    ``ceil(T_s / N_s)`` times and a row can repeat within a batch only if
    ``T_s / num_batches`` exceeds ``N_s``. An epoch thus costs about one
    random draw per row served, never a permutation of all ``N`` rows.

    Importance weights (``Allocation.row_weights``, ``BatchPlan.weights``,
    ``pystratum.torch.WeightedDataset``): a row of stratum ``s`` weighs
    ``(N_s / N) / (served_s / served)``, its share of the data over its share
    of the rows served, the latter the long-run share ``w_s / W`` (exact
    over any ``W`` consecutive batches), so the weights are the same in
    every epoch. The weighted mean of a loss over the rows served (a batch,
    an epoch) then estimates the mean loss on the data's own class
    distribution, which the unweighted mean over balanced batches does not.
    ``Downsample``'s ``N_s / kept_s`` is the same correction for a
    subsample, scaled to sums: there ``served_s = kept_s`` and ``(N_s /
    kept_s) = (N_s / N) / (kept_s / served) * (N / served)``, the constant
    ``N / served`` turning a mean over the rows served into a sum over all
    rows. A stratum of share 0 is never served; its weight is 0.

    Order inside a batch (Targets and Downsample alike): stratum by stratum,
    strata in order of first appearance in the data, each stratum's rows in
    the order of its epoch sequence (its pass 0, then the extra passes).
    Unlike ``MinPerStratum``/``FixedSize`` (rows in permuted order) this
    places every row directly, in time linear in the rows served; R's
    batches are identical.
    """

    name = "targets"

    split_safe_by_default = True

    def __init__(self, shares, batch_size, epoch="largest", *, batch_order=None):
        self.batch_order = check_batch_order(batch_order)
        self.batch_size = check_int(batch_size, "batch_size", minimum=1, maximum=SIZE_MAX,
                                    fix="Sizes are whole numbers R holds exactly (up to 2**53); "
                                        "an epoch may serve at most max(16 N, 2**24) rows.")
        self.shares = _check_shares(shares)
        if isinstance(epoch, str):
            if epoch not in _EPOCH_MODES:
                raise ValueError(f"epoch must be 'largest', 'smallest' or a positive integer "
                                 f"(batches per epoch), got epoch={epoch!r}.")
            self.epoch = epoch
        else:
            self.epoch = check_int(epoch, "epoch", minimum=1, maximum=SIZE_MAX,
                                   fix="Pass 'largest', 'smallest' or a number of batches.")
        if self.shares != "balanced":
            positive = sum(1 for share in self.shares.values() if share > 0)
            _check_batch_size(self.batch_size, positive)
        self._cached = StrataCache()

    def params(self) -> dict:
        shares = self.shares if self.shares == "balanced" else dict(self.shares)
        return self._with_batch_order({"shares": shares, "batch_size": self.batch_size,
                                       "epoch": self.epoch})

    def may_recycle(self) -> bool:
        return True

    def allocate(self, strata, epoch) -> Allocation:
        layout = self._layout(strata)
        weights, starts, floors, remainders, total, step, num_batches = layout
        first_batch = epoch * num_batches
        extras = extras_of_batches(starts, remainders, total, step, first_batch, num_batches)
        cuts = np.zeros((weights.shape[0], num_batches + 1), dtype=np.int64)
        np.cumsum(floors[:, None] + extras, axis=1, out=cuts[:, 1:])
        return Allocation(small_cuts(cuts, np.maximum(strata.sizes, cuts[:, -1])),
                          row_weights=_importance(strata.sizes, weights, total))

    def _layout(self, strata):
        """Weights, arcs and the epoch length; cached for the last strata seen."""
        sizes = strata.sizes
        turn = np.argsort(strata.first_rows, kind="stable")
        key = (sizes.tobytes(), turn.tobytes())
        cached = self._cached.get(strata, key)
        if cached is not None:
            return cached
        batch = self.batch_size
        n_rows = int(sizes.sum())
        # Bounded by the input before any table is built (and before batch * weight
        # could pass int64): one batch alone, then a fixed number of batches.
        self._check_size(batch, 1, sizes.shape[0], n_rows)
        if not isinstance(self.epoch, str):
            self._check_size(batch, self.epoch, sizes.shape[0], n_rows)
        weights = self._weights(strata)
        total = int(weights.sum())
        floors = batch * weights // total
        remainders = batch * weights - floors * total
        starts = np.empty_like(remainders)
        starts[turn] = (np.cumsum(remainders[turn]) - remainders[turn]) % total
        step = weyl_step(total)
        layout = (weights, starts, floors, remainders, total, step)
        num_batches = self._num_batches(strata, layout)
        self._check_size(batch, num_batches, sizes.shape[0], n_rows)
        result = layout + (num_batches,)
        self._cached.put(strata, key, result)
        return result

    def _check_size(self, batch: int, num_batches: int, n_strata: int, n_rows: int) -> None:
        """An epoch of ``num_batches`` batches of ``batch`` rows must fit the input's bound."""
        if num_batches == 1 or isinstance(self.epoch, str):
            name, value = "batch_size", batch
            fix = ("Lower batch_size." if num_batches == 1 else
                   "Lower batch_size, or raise the smallest positive shares (a small share of "
                   "a large stratum needs many batches to serve it once).")
        else:
            name, value = "epoch", num_batches
            fix = "Lower epoch (batches per epoch) or batch_size, or use epoch='largest'."
        check_served_size(num_batches * batch, n_strata * (num_batches + 1), n_rows, name, value,
                          f"an epoch of {num_batches:,} batch(es) of {batch:,} rows with "
                          f"epoch={self.epoch!r}", fix)

    def _weights(self, strata) -> np.ndarray:
        n_strata = strata.sizes.shape[0]
        if self.shares == "balanced":
            _check_batch_size(self.batch_size, n_strata)
            return np.ones(n_strata, dtype=np.int64)
        keys = list(self.shares)
        index = match_keys(keys, strata, "shares",
                           "Name each stratum by its label (as text for JSON: 1 -> '1').")
        if len(keys) < n_strata:
            named = set(index.tolist())
            missing = [strata.labels[s] for s in range(n_strata) if s not in named]
            raise ValueError(
                f"shares must give every stratum a share, but it misses {len(missing)} "
                f"stratum/strata: {missing[:10]!r}. Add them (a share of 0 leaves a stratum "
                f"out of every batch), or use shares='balanced'."
            )
        weights = np.zeros(n_strata, dtype=np.int64)
        weights[index] = share_weights([self.shares[key] for key in keys])
        return weights

    def _num_batches(self, strata, layout) -> int:
        if not isinstance(self.epoch, str):
            return self.epoch
        sizes = strata.sizes
        weights, starts, floors, remainders, total, step = layout
        positive = np.flatnonzero(weights > 0)
        batch = self.batch_size
        # Rows per batch on average: B * w_s / W; strata needs N_s * W / (B * w_s) batches.
        need = sizes[positive] * total
        per = batch * weights[positive]

        def slots(s, n, fewest):
            return int(n * floors[s]) + window_hits(int(starts[s]), int(remainders[s]), total,
                                                    step, n, fewest=fewest)

        if self.epoch == "largest":
            lowest = int((-(-need // per)).max())

            def enough(n):
                return all(n * floors[s] >= sizes[s] or slots(s, n, True) >= sizes[s]
                           for s in positive)

            return _smallest_true(enough, lowest)
        highest = int((need // per).min())

        def fits(n):
            return all(n * (floors[s] + 1) <= sizes[s] or slots(s, n, False) <= sizes[s]
                       for s in positive)

        num_batches = _largest_true(fits, highest)
        if num_batches == 0:
            ratio = (sizes[positive] * total) / (batch * weights[positive])
            s = int(positive[np.argmin(ratio)])
            raise ValueError(
                f"epoch='smallest' leaves no batch: stratum {strata.labels[s]!r} has "
                f"{int(sizes[s])} rows, fewer than one batch of batch_size={batch} takes from "
                f"it. Lower batch_size, or use epoch='largest' (small strata recycled)."
            )
        return num_batches


def _smallest_true(predicate, lowest: int) -> int:
    """Smallest ``n >= lowest`` with ``predicate(n)`` for a predicate monotone in ``n``."""
    if predicate(lowest):
        return lowest
    good = max(2 * lowest, lowest + 1)
    bad = lowest
    while not predicate(good):
        bad, good = good, 2 * good
    while good - bad > 1:
        middle = (good + bad) // 2
        if predicate(middle):
            good = middle
        else:
            bad = middle
    return good


def _largest_true(predicate, highest: int) -> int:
    """Largest ``0 <= n <= highest`` with ``predicate(n)`` (true at 0, monotone)."""
    if highest <= 0:
        return 0
    if predicate(highest):
        return highest
    good, bad = 0, highest
    while bad - good > 1:
        middle = (good + bad) // 2
        if predicate(middle):
            good = middle
        else:
            bad = middle
    return good


def _check_batch_size(batch_size: int, positive: int) -> None:
    if batch_size < positive:
        raise ValueError(
            f"batch_size must be at least the number of strata with a positive share "
            f"({positive}), got batch_size={batch_size}: a batch could not hold one row of "
            f"each. Use batch_size >= {positive}, or give some strata a share of 0."
        )


def _check_shares(shares):
    if isinstance(shares, str):
        if shares != "balanced":
            raise ValueError(f"shares must be 'balanced' or a dict {{label: share}}, got "
                             f"shares={shares!r}.")
        return shares
    if not isinstance(shares, Mapping) or not shares:
        raise TypeError(
            f"shares must be 'balanced' or a non-empty dict {{label: share}}, got "
            f"shares={shares!r} of type {type(shares).__name__}."
        )
    result = {}
    for label, key, share in labelled_numbers(shares, "shares", "share"):
        if not math.isfinite(share) or share < 0:
            raise ValueError(f"shares must be >= 0, got shares[{label!r}]={share!r}. Give a "
                             f"share of 0 to leave a stratum out.")
        if share > 0 and math.floor(share * SHARE_SCALE + 0.5) == 0:
            raise ValueError(f"shares are resolved to 1e-6, got shares[{label!r}]={share!r}: "
                             f"use a share of at least 5e-7, or 0 to leave the stratum out.")
        result[key] = share
    total = math.fsum(result.values())
    if abs(total - 1.0) > SHARE_TOLERANCE:
        raise ValueError(
            f"shares must add up to 1 (they are not normalised), got a sum of {total!r} for "
            f"shares={shares!r}. Divide each share by the sum."
        )
    return result


def _importance(sizes, weights, total) -> np.ndarray:
    """``(N_s / N) / (w_s / W)`` per stratum, 0 where ``w_s = 0``; float64.

    Computed as ``(N_s * W) / (N * w_s)`` in doubles, the operations R's
    twin performs, so both languages give the same bits.
    """
    sizes = np.asarray(sizes, dtype=np.float64)
    units = np.asarray(weights, dtype=np.float64)
    out = np.zeros(sizes.shape[0], dtype=np.float64)
    positive = units > 0
    out[positive] = (sizes[positive] * float(total)) / (float(sizes.sum()) * units[positive])
    return out
