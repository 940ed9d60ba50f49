"""``ClassesPerBatch(P, K)``: batches of P distinct strata x K rows each (PK sampling).

Metric learning, contrastive and triplet losses need batches of a few
classes with several rows each, among thousands or millions of classes.
Every other policy puts every stratum in every batch, so this one has a
sparse allocation (:class:`pystratum.policies.SlotPlan`): slots of K rows,
O(strata + slots) to describe, laid out into batches by the shared engine
(:func:`pystratum.engine._assemble_slots.assemble_slots`).
"""

from __future__ import annotations

import warnings
from dataclasses import replace

import numpy as np

from ..base._validation import SIZE_MAX, check_choice, check_int, check_served_size
from ._base import Allocation, Policy, SlotPlan, check_batch_order, slot_step

__all__ = ["ClassesPerBatch", "SlotRefills", "SmallStrataWarning"]

_CLASSES_MODES = ("proportional", "uniform")
_SMALL_MODES = ("error", "drop", "repeat")


class SmallStrataWarning(UserWarning):
    """``ClassesPerBatch(small="drop")`` left out strata with fewer than ``per_class`` rows."""


class ClassesPerBatch(Policy):
    """Every batch: exactly ``classes_per_batch`` (P) distinct strata, ``per_class`` (K) rows each.

    classes_per_batch: P >= 1, the strata in every batch.
    per_class:         K >= 1, the rows of each of those strata in the batch.
    classes:           ``"proportional"`` (every row of every stratum served
                       at least once per epoch, see below) or ``"uniform"``
                       (every stratum in the same number of batches per
                       epoch, +-1; rows without replacement across epochs:
                       see "Uniform" below).
    num_batches:       ``classes="uniform"`` only: the epoch's length in
                       batches; None (default) means ``ceil(N / (P * K))``,
                       ``N`` the served rows.
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
    With ``rng="R"`` or ``"torch"`` an epoch whose refills beyond one per
    stratum cost more than 10**8 row draws plus the rows the epoch serves
    (each its rows plus 2,000 for the call,
    :mod:`pystratum.policies._draw_cost`) is refused before anything is
    drawn.

    With ``rng="index"`` the three parts are keyed bijections instead
    (:func:`pystratum.engine._assemble_slots.slot_index_draws`), the same in R.
    ``plan_batches``/``stratified_batches`` materialise them (O(N)); the
    lazy plan (``lazy_plan()``, the samplers' ``rng="index"``) computes
    batch ``b`` alone from :meth:`lazy_slots` (O(S) per epoch: slot counts
    and :class:`SlotRefills`), the same rows in the same order
    (:mod:`pystratum.engine._lazy_slots`).

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

    Uniform (``classes="uniform"``). ``B = num_batches`` or ``ceil(N /
    (P * K))`` batches, ``T = B * P`` slots, ``S'`` served strata numbered
    ``i = 0 .. S'-1`` in order of first appearance. Every stratum has
    ``T // S'`` slots, and the ``r = T mod S'`` strata ``i`` with ``(i -
    epoch * r) mod S' < r`` one more: a cyclic window moving by ``r`` each
    epoch, so over epochs ``0 .. e-1`` stratum ``i`` has had ``C_i(e) = e *
    (T // S') + ceil((e * r - i) / S')`` slots (0 for the ceiling when
    negative), which differ by at most one between strata, for every ``e``.

    Rows: stratum ``s`` serves its endless *pass sequence*: pass ``p``
    (ranks ``p * N_s .. (p + 1) * N_s - 1``) is all ``N_s`` rows in a fresh
    random order, so every row comes round once before any repeats. Epoch
    ``e`` serves ranks ``K * C_i(e) ..`` (``n_s * K`` of them): where epoch
    ``e - 1`` stopped, computed in closed form for any epoch (no epoch is
    replayed). Over epochs ``0 .. e-1``, cumulatively from epoch 0 and for
    every ``e`` (not over an arbitrary window of epochs, which may hold one
    pass's end and the next pass's start), the serve counts of a stratum's
    rows differ by at most one, and are equal whenever its passes end on an
    epoch end.
    Pass ``p``'s raw order is the keyed bijection of ``rng="index"``
    (:func:`pystratum.streams._index.permute_ranks`, keys ``round_keys(key,
    p, turn)``: the stratum's rows in row order, ``turn`` its order of first
    appearance), ``key`` the seed for ``rng="index"``, ``seed mod 2**52``
    for ``"R"``/``"torch"``, and ``SeedSequence.generate_state(1,
    uint64) >> 12`` for ``"numpy"`` (no shuffle: row order). A slot that
    straddles passes ``p - 1`` and ``p`` (``t = p * N_s mod K > 0`` rows of
    pass ``p - 1``) must not repeat those ``t`` rows: when ``N_s >= K``,
    pass ``p``'s first ``K`` raw rows are reordered so that the first ``K -
    t`` of them not among pass ``p - 1``'s last ``t`` (as served) come
    first, the others after them in raw order (positions ``>= K`` keep the
    raw order; a pass stays a permutation). Pass ``p - 1``'s served tail
    depends on its own reordering only when ``N_s - t < K``; that chain
    stops within ``K / gcd(N_s, K)`` passes (a pass ending on a slot edge),
    so it stays closed form. Small strata with ``small="repeat"``
    (``N_s < K``) take K consecutive ranks of their pass sequence (rows
    repeat inside the slot). The epoch's one random draw is the layout
    order of the strata (numpy: ``permutation(S')`` of the epoch's
    generator; R and torch: the epoch's group is that one draw, R
    ``sample.int(S', S')``; index: the keyed bijection of stream ``S``). The
    layout is the one above, so no stratum is twice in a batch and every
    batch holds P distinct strata x K rows.
    """

    name = "classes_per_batch"
    allocates_slots = True

    split_safe_by_default = True

    def __init__(self, classes_per_batch, per_class, *, classes="proportional", small="error",
                 num_batches=None, batch_order=None):
        # Slots of K rows already give whole classes to every chunk (see the docstring).
        self.batch_order = check_batch_order(batch_order)
        fix = "It is a whole number of strata (classes) per batch."
        self.classes_per_batch = check_int(classes_per_batch, "classes_per_batch", minimum=1,
                                           maximum=SIZE_MAX, fix=fix)
        self.per_class = check_int(per_class, "per_class", minimum=1, maximum=SIZE_MAX,
                                   fix="It is a whole number of rows per class in a batch.")
        self.classes = check_choice(classes, "classes", _CLASSES_MODES)
        self.small = check_choice(small, "small", _SMALL_MODES)
        if num_batches is not None:
            num_batches = check_int(num_batches, "num_batches", minimum=1, maximum=SIZE_MAX,
                                    fix="It is the epoch's length in batches (None: "
                                        "ceil(N / (classes_per_batch * per_class))).")
            if self.classes != "uniform":
                raise ValueError(
                    f"num_batches={num_batches} sets the epoch's length for "
                    f"classes='uniform' only; classes={self.classes!r} has the length its "
                    f"slots need. Pass classes='uniform' or leave num_batches=None.")
        self.epoch_batches = num_batches

    def params(self) -> dict:
        params = {"classes_per_batch": self.classes_per_batch, "per_class": self.per_class,
                  "classes": self.classes, "small": self.small}
        if self.epoch_batches is not None:
            params["num_batches"] = self.epoch_batches
        return self._with_batch_order(params)

    def may_recycle(self) -> bool:
        return True

    def num_batches(self, strata) -> int:
        return self._layout(strata, warn=True)[2]

    def batch_cuts(self, strata, epoch, batches):
        """Not available: a slot allocation has no rank ranges per batch (:meth:`lazy_slots`)."""
        raise ValueError(
            "ClassesPerBatch has no rank ranges per batch: its slot layout puts P strata, not "
            "every stratum, in a batch. Lazy plans (lazy_plan(), the samplers' rng='index') "
            "read lazy_slots() instead; for a table of counts use plan_batches(...).counts.")

    def allocate(self, strata, epoch) -> Allocation:
        if self.classes == "uniform":
            return self._uniform(strata, epoch)
        own, n_slots, plan = self._proportional(strata, epoch)
        sizes = np.asarray(strata.sizes, dtype=np.int64)
        stratum, size, take = self._refills(sizes, own, n_slots, strata.first_rows)
        plan = replace(plan, refill_strata=stratum, refill_sizes=size, refill_takes=take)
        return Allocation(None, slots=plan)

    def lazy_slots(self, strata, epoch):
        """Epoch ``epoch``'s slots for a lazy plan, in O(S) memory: ``(SlotPlan, refills)``.

        The :class:`SlotPlan` is :meth:`allocate`'s with its refill arrays
        left empty (one entry per refill draw: O(N / K) when one large
        stratum sets B); ``refills`` (:class:`SlotRefills`, None for
        ``classes="uniform"``, which has none) locates any refill rank in
        O(1) from O(S) per-stratum counts, in the same draw order.
        """
        if self.classes == "uniform":
            return self._uniform(strata, epoch).slots, None
        own, n_slots, plan = self._proportional(strata, epoch)
        return plan, SlotRefills(strata.sizes, own, n_slots, self.per_class, strata.first_rows)

    def _proportional(self, strata, epoch):
        """``(own slots, slots, SlotPlan without refills)`` of ``classes="proportional"``."""
        own, served, num_batches = self._layout(strata, warn=True, depth=1)
        sizes = np.asarray(strata.sizes, dtype=np.int64)
        n_slots = own + _extra_slots(own, sizes, served, num_batches * self.classes_per_batch,
                                     strata.first_rows, epoch)
        empty = np.zeros(0, dtype=np.int64)
        plan = SlotPlan(n_slots=n_slots, width=self.per_class,
                        per_batch=self.classes_per_batch, num_batches=num_batches,
                        step=slot_step(num_batches), refill_strata=empty, refill_sizes=empty,
                        refill_takes=empty)
        return own, n_slots, plan

    def _layout(self, strata, *, warn, depth=0):
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
                SmallStrataWarning, stacklevel=4 + depth)
        own = np.where(served, np.maximum(-(-sizes // k), 1), 0).astype(np.int64)
        total = int(own.sum())
        num_batches = max(-(-total // p), int(own.max()))
        if self.classes == "uniform":
            rows = int(sizes[served].sum())
            num_batches = self.epoch_batches or -(-rows // (p * k))
            check_served_size(num_batches * p * k, rows, rows, "num_batches" if
                              self.epoch_batches else "classes_per_batch",
                              self.epoch_batches or p,
                              f"an epoch of {num_batches:,} batches of {p} x {k} rows",
                              "Lower num_batches, classes_per_batch or per_class.")
            return own, served, num_batches
        # Checked before any table exists: a huge stratum with a large P asks B * P * K rows.
        check_served_size(num_batches * p * k, total + sizes.shape[0], int(sizes.sum()),
                          "classes_per_batch", p,
                          f"an epoch of {num_batches:,} batches of {p} x {k} rows (B is set by "
                          f"the largest stratum's {int(own.max()):,} slots or by the total of "
                          f"{total:,} slots)",
                          "Lower classes_per_batch or per_class, or split the largest strata.")
        return own, served, num_batches

    def _uniform(self, strata, epoch) -> Allocation:
        """``classes="uniform"``: slots and pass starts in closed form (see "Uniform" above)."""
        _, served, num_batches = self._layout(strata, warn=True)
        n_strata = served.shape[0]
        turn = np.argsort(strata.first_rows, kind="stable")
        order = turn[served[turn]]  # served strata in order of first appearance: i = 0 .. S'-1
        count = order.shape[0]
        total = num_batches * self.classes_per_batch
        base, r = divmod(total, count)
        index = np.arange(count, dtype=np.int64)
        shift = (epoch * r) % count
        extra = ((index - shift) % count < r).astype(np.int64)
        # Slots before this epoch: e * base + ceil((e * r - i) / S'), never below 0.
        whole, part = divmod(epoch * r, count)  # Python ints: e * r may pass 2**63
        done = epoch * base + whole + (index < part)
        n_slots = np.zeros(n_strata, dtype=np.int64)
        n_slots[order] = base + extra
        starts = np.zeros(n_strata, dtype=np.int64)
        starts[order] = np.asarray(done, dtype=np.int64) * self.per_class
        empty = np.zeros(0, dtype=np.int64)
        plan = SlotPlan(n_slots=n_slots, width=self.per_class,
                        per_batch=self.classes_per_batch, num_batches=num_batches,
                        step=slot_step(num_batches), refill_strata=empty, refill_sizes=empty,
                        refill_takes=empty, pass_starts=starts)
        return Allocation(None, slots=plan)

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
        # min(N_s, k) ranks of all N_s until it is full: whole passes, then the rest.
        more = [stratum], [size], [take]
        for s in np.flatnonzero(repeat).tolist():
            n = int(sizes[s])
            takes = np.concatenate([_pass_takes(k - n, n),
                                    np.tile(_pass_takes(k, n), int(n_slots[s]) - 1)])
            for values, value in zip(more, (s, n, takes)):
                values.append(np.broadcast_to(np.asarray(value, dtype=np.int64), takes.shape))
        stratum, size, take = (np.concatenate(values) for values in more)
        # Draw order: strata in order of first appearance, each one's refills in turn.
        order = np.argsort(position[stratum], kind="stable")
        return stratum[order], size[order], take[order]


def _pass_takes(missing: int, n: int) -> np.ndarray:
    """``min(n, missing)`` until ``missing`` rows are drawn: the takes of a small stratum's slot."""
    whole, rest = divmod(missing, n)
    takes = np.full(whole + (rest > 0), n, dtype=np.int64)
    if rest:
        takes[-1] = rest
    return takes


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



class SlotRefills:
    """The refill draws of a ``classes="proportional"`` epoch, located in O(1) from O(S) counts.

    :meth:`ClassesPerBatch._refills` lists the draws (one entry each, in draw
    order: strata in order of first appearance, each stratum's refills slot
    by slot). Each stratum's draws are consecutive in that list and follow a
    fixed pattern, so the list is never built: ``first[s]`` (where stratum
    ``s``'s draws begin) and the pattern give, for a rank ``u >= N_s`` of
    the stratum's epoch sequence, the draw that fills it, the draw's domain
    and the place of ``u`` in the draw.

    * ``N_s >= K``, ``r = N_s mod K``: with ``r > 0`` draw 0 fills ranks
      ``N_s .. N_s + K - r - 1`` from ``N_s - r`` ranks; every later draw
      (an extra slot) fills K ranks from ``N_s``.
    * ``N_s < K`` (``small="repeat"``): slot 0's ``K - N_s`` missing ranks
      take ``ceil((K - N_s) / N_s)`` draws of up to ``N_s``, each later slot
      ``ceil(K / N_s)`` draws; all from ``N_s``.
    """

    def __init__(self, sizes, own, n_slots, width, first_rows):
        sizes = np.asarray(sizes, dtype=np.int64)
        own = np.asarray(own, dtype=np.int64)
        n_slots = np.asarray(n_slots, dtype=np.int64)
        k = int(width)
        self.sizes, self.width = sizes, k
        self.repeat = (own > 0) & (sizes < k)
        self.remainder = sizes % k
        self.partial = ((own > 0) & ~self.repeat & (self.remainder > 0)).astype(np.int64)
        safe = np.maximum(sizes, 1)
        self.head = -(-(k - sizes) // safe)  # slot 0's draws (repeat strata)
        self.per_slot = -(-k // safe)  # each later slot's draws (repeat strata)
        extras = n_slots - own
        count = np.where(self.repeat, self.head + extras * self.per_slot, self.partial + extras)
        count = np.where(own > 0, count, 0)
        turn = np.argsort(first_rows, kind="stable")
        self.first = np.zeros(sizes.shape[0], dtype=np.int64)
        self.first[turn] = np.cumsum(count[turn]) - count[turn]
        self.total = int(count.sum())

    def locate(self, stratum, rank):
        """``(draw, size, within)`` for ranks ``rank >= N_s`` of strata ``stratum`` (arrays).

        Rank ``rank[i]`` is value ``within[i]`` of draw number ``draw[i]``
        (draw order, from 0), which takes distinct values of ``range(size[i])``.
        """
        stratum = np.asarray(stratum, dtype=np.int64)
        rank = np.asarray(rank, dtype=np.int64)
        k = self.width
        n = self.sizes[stratum]
        # N_s >= K: the partial draw (r > 0), then one draw of K per extra slot.
        partial = self.partial[stratum]
        first_take = np.where(partial == 1, k - self.remainder[stratum], 0)
        v = rank - n
        in_partial = v < first_take
        w = v - first_take
        local = np.where(in_partial, 0, partial + w // k)
        within = np.where(in_partial, v, w % k)
        size = np.where(in_partial, n - self.remainder[stratum], n)
        repeat = np.flatnonzero(self.repeat[stratum])
        if repeat.shape[0]:
            # N_s < K: draws of up to N_s each, slot 0 after its N_s own ranks.
            nr, ur, sr = n[repeat], rank[repeat], stratum[repeat]
            slot, t = np.divmod(ur, k)
            m = np.where(slot == 0, t - nr, t)
            local[repeat] = np.where(slot == 0, 0, self.head[sr] + (slot - 1) * self.per_slot[sr])
            local[repeat] += m // nr
            within[repeat] = m % nr
            size[repeat] = nr
        return self.first[stratum] + local, size, within
