"""``ClassesPerBatch(P, K)``: batches of P distinct strata x K rows each (PK sampling).

Metric learning, contrastive and triplet losses need batches of a few
classes with several rows each, among thousands or millions of classes.
Every other policy puts every stratum in every batch, so this one has a
sparse allocation (:class:`pystratum.policies.SlotPlan`): slots of K rows,
O(strata + slots) to describe, laid out into batches by the shared engine
(:func:`pystratum.engine._assemble.assemble_slots`).
"""

from __future__ import annotations

import warnings

import numpy as np

from ..base._validation import SIZE_MAX, check_choice, check_int, check_served_size
from ._base import Allocation, Policy, SlotPlan, slot_step

__all__ = ["ClassesPerBatch", "SmallStrataWarning"]

_CLASSES_MODES = ("proportional",)
_SMALL_MODES = ("error", "drop", "repeat")


class SmallStrataWarning(UserWarning):
    """``ClassesPerBatch(small="drop")`` left out strata with fewer than ``per_class`` rows."""


class ClassesPerBatch(Policy):
    """Every batch: exactly ``classes_per_batch`` (P) distinct strata, ``per_class`` (K) rows each.

    classes_per_batch: P >= 1, the strata in every batch.
    per_class:         K >= 1, the rows of each of those strata in the batch.
    classes:           ``"proportional"`` (every row of every stratum served
                       at least once per epoch, see below).
    small:             strata with fewer than K rows: ``"error"`` (default; the
                       error names them), ``"drop"`` (left out of every batch,
                       a :class:`SmallStrataWarning` gives their number and
                       rows) or ``"repeat"`` (their rows repeat inside their
                       slot: the one exception to "no row twice in a batch").

    Guarantees (``classes="proportional"``): every batch holds P * K rows,
    exactly K rows of each of P distinct strata, no row twice (except
    ``small="repeat"``); every row of every served stratum is served at
    least once per epoch; a row is served twice only as a *refill* row
    (below). The same (strata, policy, seed, rng, epoch) gives the same
    batches, and with ``rng="R"`` the R package's
    ``policy_classes_per_batch()`` gives the same ones (plus one).

    Slots. Stratum ``s`` (``N_s`` rows) fills ``c_s = ceil(N_s / K)``
    slots of K rows (``small="repeat"``: 1 slot when ``N_s < K``). With
    ``T = sum c_s`` the epoch has ``B = max(ceil(T / P), max_s c_s)``
    batches; the ``E = B * P - T`` slots the batches still lack are *extra*
    slots, handed out by water-filling: one at a time to the stratum with
    the fewest slots so far. In closed form: every stratum below a level
    ``L`` is raised to ``L`` (the highest level the extras pay for), and the
    ``r`` extras left go to strata at level ``L`` (listed larger stratum
    first, then order of first appearance in the data), a cyclic window of
    ``r`` starting at ``epoch * r`` so that, over epochs, no stratum is
    always the one left out. So ``n_s = c_s + e_s <= B`` slots per stratum.

    Rows of a slot. Stratum ``s``'s *epoch sequence* has ``n_s * K`` ranks;
    its slot ``j`` (``0 <= j < n_s``) holds ranks ``j*K .. j*K + K - 1``.
    Ranks ``0 .. N_s - 1`` are the stratum's rows in the order of the
    epoch's permutation of all N rows (pass 0). The later ranks are
    refills, each a *fresh draw* of distinct pass-0 ranks:

    * the last own slot (``r_s = N_s mod K > 0``): ``K - r_s`` ranks drawn
      from the ``N_s - r_s`` pass-0 ranks not in that slot (no row twice in
      the slot);
    * each extra slot: K ranks drawn from all ``N_s``;
    * ``small="repeat"`` (``N_s < K``): a slot needing ``k`` more rows
      draws ``min(N_s, k)`` ranks from all ``N_s`` until it is full.

    Draws of an epoch, in order: the permutation of all N rows (numpy
    ``permutation(N)``, R ``sample.int(N, N)``), a permutation of the
    ``S'`` served strata (the layout order, below), then one draw
    ``(size, take)`` per refill, strata in order of first appearance,
    each stratum's refills slot by slot. With ``rng="R"`` (and ``"torch"``)
    each is one draw of the stream (R ``sample.int(size, take)``). With
    ``rng="numpy"`` all refills come from one call ``integers(0, highs)``
    of the epoch's generator, ``highs`` listing ``size, size - 1, ...,
    size - take + 1`` for each refill, each refill then a partial
    Fisher-Yates shuffle of ``range(size)`` (R's ``sample.int`` algorithm).

    With ``rng="index"`` (``plan_batches``/``stratified_batches`` only: the
    plan is materialised, there is no lazy plan yet) the three parts are
    keyed bijections instead (:func:`pystratum.engine._assemble.slot_index_draws`),
    the same in R.

    Layout (the schedule, O(S + T) and the same in R): the served strata in
    layout order, each stratum's ``n_s`` slots one after the other, give
    slot positions ``q = 0 .. B*P - 1``; position ``q`` goes to batch
    ``(q mod B) * g mod B`` as its ``(q // B)``-th slot, ``g`` the step of
    :func:`pystratum.policies._base.slot_step` (coprime to B, near
    ``0.618 B``, its continued fraction with small quotients). A stratum's
    ``n_s <= B`` positions are consecutive, so they land in distinct batches
    (no stratum twice in a batch) and every batch gets exactly P slots.

    Spread: a stratum with ``n`` slots is in batches ``(c + k) * g mod B``,
    ``k < n``; any two of them are at least ``d(n) = min_{1 <= k < n}
    |k * g mod B|`` batches apart (circular distance), by the three-distance
    theorem at least ``B / ((A + 2) * n)`` with ``A`` the largest partial
    quotient of ``B / g`` (``A <= 5`` for every B up to 10**5; the tests
    check the bound for every B up to 3000).

    Order inside a batch: slot by slot (slot ``q // B``), each slot's K rows
    in epoch-sequence order.
    """

    name = "classes_per_batch"
    allocates_slots = True

    def __init__(self, classes_per_batch, per_class, *, classes="proportional", small="error"):
        fix = "It is a whole number of strata (classes) per batch."
        self.classes_per_batch = check_int(classes_per_batch, "classes_per_batch", minimum=1,
                                           maximum=SIZE_MAX, fix=fix)
        self.per_class = check_int(per_class, "per_class", minimum=1, maximum=SIZE_MAX,
                                   fix="It is a whole number of rows per class in a batch.")
        self.classes = check_choice(classes, "classes", _CLASSES_MODES)
        self.small = check_choice(small, "small", _SMALL_MODES)

    def params(self) -> dict:
        return {"classes_per_batch": self.classes_per_batch, "per_class": self.per_class,
                "classes": self.classes, "small": self.small}

    def may_recycle(self) -> bool:
        return True

    def num_batches(self, strata) -> int:
        return self._layout(strata, warn=True)[2]

    def batch_cuts(self, strata, epoch, batches):
        """Not available: a slot allocation has no rank ranges per batch (no lazy plan yet)."""
        raise ValueError(
            "ClassesPerBatch has no lazy plan yet: lazy_plan() and the samplers' rng='index' "
            "need rank ranges per batch, which its slot layout does not give. Use "
            "plan_batches(..., rng='index') (materialised from the same keyed draws), or "
            "rng='numpy' (default) or rng='R' (the R package's batches).")

    def allocate(self, strata, epoch) -> Allocation:
        own, served, num_batches = self._layout(strata, warn=True)
        sizes = np.asarray(strata.sizes, dtype=np.int64)
        n_slots = own + _extra_slots(own, sizes, served, num_batches * self.classes_per_batch,
                                     strata.first_rows, epoch)
        stratum, size, take = self._refills(sizes, own, n_slots, strata.first_rows)
        plan = SlotPlan(n_slots=n_slots, width=self.per_class,
                        per_batch=self.classes_per_batch, num_batches=num_batches,
                        step=slot_step(num_batches), refill_strata=stratum, refill_sizes=size,
                        refill_takes=take)
        return Allocation(None, slots=plan)

    def _layout(self, strata, *, warn):
        """``(own slots per stratum, served mask, B)``, checked; warns for dropped strata."""
        sizes = np.asarray(strata.sizes, dtype=np.int64)
        p, k = self.classes_per_batch, self.per_class
        small = sizes < k
        if small.any() and self.small == "error":
            which = np.flatnonzero(small)
            shown = ", ".join(f"{strata.labels[s]!r} ({int(sizes[s])} rows)"
                              for s in which[:10].tolist())
            more = "" if which.shape[0] <= 10 else f" and {which.shape[0] - 10} more"
            raise ValueError(
                f"per_class={k} needs at least {k} rows of every stratum (ClassesPerBatch), but "
                f"{which.shape[0]} stratum/strata have fewer: {shown}{more}. Pass "
                f"small='drop' to leave them out, small='repeat' to repeat their rows inside "
                f"their slot, or a smaller per_class."
            )
        served = ~small if self.small == "drop" else np.ones(sizes.shape[0], dtype=bool)
        n_served = int(served.sum())
        if n_served < p:
            feasible_k = int(np.sort(sizes)[-p]) if sizes.shape[0] >= p else 0
            largest_p = n_served
            hint = (f"the largest feasible classes_per_batch with per_class={k} is "
                    f"{largest_p}" + ("" if largest_p else f": no stratum has {k} rows"))
            hint += (f"; the largest feasible per_class with classes_per_batch={p} is "
                     f"{feasible_k}" if feasible_k else
                     f"; there are only {sizes.shape[0]} strata, so classes_per_batch="
                     f"{p} is never feasible")
            raise ValueError(
                f"classes_per_batch={p} with per_class={k} needs {p} distinct "
                f"strata that can fill a slot of {k} rows in every batch, but only {n_served} "
                f"of the {sizes.shape[0]} strata can ({hint}). Lower classes_per_batch or "
                f"per_class" + ("" if self.small == "repeat" else
                                ", or pass small='repeat'") + "."
            )
        if warn and self.small == "drop" and small.any():
            dropped = np.flatnonzero(small)
            warnings.warn(
                f"ClassesPerBatch(per_class={k}, small='drop') leaves out {dropped.shape[0]} "
                f"stratum/strata with fewer than {k} rows ({int(sizes[dropped].sum())} rows "
                f"in all, e.g. {strata.labels[int(dropped[0])]!r}); they are in no batch.",
                SmallStrataWarning, stacklevel=4)
        own = np.where(served, np.maximum(-(-sizes // k), 1), 0).astype(np.int64)
        total = int(own.sum())
        num_batches = max(-(-total // p), int(own.max()))
        # Checked before any table exists: a huge stratum with a large P asks B * P * K rows.
        check_served_size(num_batches * p * k, total + sizes.shape[0], int(sizes.sum()),
                          "classes_per_batch", p,
                          f"an epoch of {num_batches:,} batches of {p} x {k} rows (B is set by "
                          f"the largest stratum's {int(own.max()):,} slots or by the total of "
                          f"{total:,} slots)",
                          "Lower classes_per_batch or per_class, or split the largest strata.")
        return own, served, num_batches

    def _refills(self, sizes, own, n_slots, first_rows):
        """The refill draws ``(stratum, size, take)`` in draw order (see the class docstring)."""
        k = self.per_class
        turn = np.argsort(first_rows, kind="stable")
        position = np.empty_like(turn)
        position[turn] = np.arange(turn.shape[0])  # place in order of first appearance
        remainder = sizes % k
        extras = n_slots - own
        repeat = (own > 0) & (sizes < k)
        # Partial last own slot (K - r draws from the N - r ranks outside it), then
        # one draw of K per extra slot: vectorised, strata with many slots are common.
        partial = ((own > 0) & ~repeat & (remainder > 0)).astype(np.int64)
        count = np.where(repeat, 0, partial + extras)
        stratum = np.repeat(np.arange(sizes.shape[0], dtype=np.int64), count)
        index = np.arange(stratum.shape[0], dtype=np.int64) - np.repeat(np.cumsum(count) - count,
                                                                        count)
        first = (index == 0) & (partial[stratum] == 1)
        size = np.where(first, sizes[stratum] - remainder[stratum], sizes[stratum])
        take = np.where(first, k - remainder[stratum], k)
        # Small strata with small="repeat": a slot needing k more rows draws
        # min(N_s, k) ranks of all N_s until it is full (few such strata).
        more = [], [], []
        for s in np.flatnonzero(repeat).tolist():
            n = int(sizes[s])
            for slot in range(int(n_slots[s])):
                missing = k - (n if slot == 0 else 0)
                while missing > 0:
                    for values, value in zip(more, (s, n, min(n, missing))):
                        values.append(value)
                    missing -= min(n, missing)
        stratum, size, take = (np.concatenate([a, np.asarray(b, dtype=np.int64)])
                               for a, b in zip((stratum, size, take), more))
        # Draw order: strata in order of first appearance, each one's refills in turn.
        order = np.argsort(position[stratum], kind="stable")
        return stratum[order], size[order], take[order]


def _extra_slots(own, sizes, served, capacity, first_rows, epoch) -> np.ndarray:
    """Water-filling of ``capacity - sum(own)`` extra slots (see the class docstring)."""
    extra = np.zeros_like(own)
    left = capacity - int(own.sum())
    if left == 0:
        return extra
    candidates = np.flatnonzero(served)
    levels = own[candidates]
    # The level L: raising every candidate below L to L costs at most `left`.
    ordered = np.sort(levels)
    cost_to = np.cumsum(ordered)  # cost to raise the first i+1 to ordered[i]: ordered[i]*(i+1) - cost_to[i]
    below = ordered * np.arange(1, ordered.shape[0] + 1) - cost_to
    i = int(np.searchsorted(below, left, side="right")) - 1  # last index with cost <= left
    level = int(ordered[i]) + (left - int(below[i])) // (i + 1)
    raised = np.maximum(level - levels, 0)
    extra[candidates] = raised
    rest = left - int(raised.sum())
    if rest:
        # Strata at the level (after raising): ties by size (larger first), then first appearance,
        # rotated by the epoch.
        tied = candidates[(levels + raised) == level]
        key = np.lexsort((first_rows[tied], -sizes[tied]))
        tied = tied[key]
        start = (epoch * rest) % tied.shape[0]
        chosen = np.take(tied, np.arange(start, start + rest) % tied.shape[0])
        extra[chosen] += 1
    return extra

