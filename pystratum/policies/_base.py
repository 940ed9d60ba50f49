"""The policy protocol: stratum sizes in, an allocation (per-stratum rank cuts) out.

A policy decides *how many* rows of each stratum each batch receives; it
never sees rows or random numbers. The shared assembly step
(``pystratum.engine._assemble``) then takes the epoch's permutation, ranks every
row within its stratum and sends the row of rank ``r`` of stratum ``s`` to
batch ``b`` when ``cuts[s, b] <= r < cuts[s, b + 1]``. So a new composition
is one new ``Policy`` subclass, and every face (core, torch sampler, R
package) serves it without change.

Policies are registered by ``name`` so that plans, sampler states and the
golden vectors record them as ``{"name": ..., "params": ...}`` and
:func:`policy_from_params` rebuilds them.
"""

from __future__ import annotations

import abc
import inspect
import json
import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import ClassVar

import numpy as np

from ..base._validation import _show

__all__ = ["Allocation", "Policy", "SlotPlan", "check_allocation", "check_slot_layout",
           "policy_from_params", "registered_policies", "slot_step", "strata_of_sizes"]

_REGISTRY: dict = {}


@dataclass(frozen=True)
class Allocation:
    """What a policy decides for one epoch.

    cuts:        int array ``(n_strata, num_batches + 1)``, non-decreasing along
                 each row, ``cuts[:, 0] == 0``: ranks ``cuts[s, b] <= r <
                 cuts[s, b + 1]`` of stratum ``s`` go to batch ``b``; ranks
                 ``>= cuts[s, -1]`` to no batch.
    row_weights: None, or float64 ``(n_strata,)``: the weight every served row
                 of stratum ``s`` carries (importance weights of sampling
                 policies; None means 1 for every row).
    pool_sizes:  None (every row), or int ``(n_strata,)``: stratum ``s``
                 serves ``pool_s <= size_s`` of its rows, a fresh uniformly
                 random subset each epoch (the others go to no batch).

    Rank ``r`` of stratum ``s`` is row ``r % pool_s`` of pass ``r // pool_s``.
    Pass 0 is the pool in a fresh random order (drawn as a partial shuffle
    of the stratum's rows); a cut beyond the pool (``cuts[s, -1] > pool_s``)
    *recycles* the stratum: pass ``p >= 1`` lists the pool's rows (in pass
    0's order) reordered by a fresh permutation of ``range(pool_s)``, the
    last pass by a partial one of just the ranks it serves (see
    ``pystratum.engine._assemble.stratum_draws`` for the order of draws). Such
    policies' epochs draw stratum by stratum; the others draw one
    permutation of all rows.
    """

    cuts: np.ndarray | None
    row_weights: np.ndarray | None = None
    pool_sizes: np.ndarray | None = None
    # The sparse form (ClassesPerBatch): slots of K rows laid out by the engine;
    # then ``cuts`` is None (a dense table would hold S x B entries).
    slots: SlotPlan | None = None

    @property
    def num_batches(self) -> int:
        if self.slots is not None:
            return self.slots.num_batches
        return int(self.cuts.shape[1] - 1)

    @property
    def counts(self) -> np.ndarray:
        """Rows of each stratum in each batch, shape ``(num_batches, n_strata)``.

        For a slot allocation the table depends on the epoch's layout draw:
        see ``BatchPlan.counts``.
        """
        if self.slots is not None:
            raise ValueError("a slot allocation (ClassesPerBatch) has no count table before "
                             "its epoch's layout is drawn; use plan_batches(...).counts or "
                             ".batch_strata.")
        return np.diff(self.cuts, axis=1).T


@dataclass(frozen=True)
class SlotPlan:
    """A sparse allocation: every batch is ``per_batch`` slots of ``width`` rows.

    n_slots:       int64 ``(n_strata,)``: slots of each stratum (0: left out),
                   at most ``num_batches`` each, adding up to
                   ``num_batches * per_batch``.
    width:         K, rows per slot; ``per_batch``: P, slots per batch.
    step:          the layout step ``g`` (:func:`slot_step`), coprime to B.
    refill_*:      int64 arrays, one entry per refill draw in draw order:
                   stratum ``refill_strata[i]`` appends ``refill_takes[i]``
                   distinct ranks drawn from its first ``refill_sizes[i]``
                   pass-0 ranks to its epoch sequence.

    pass_starts:   None, or int64 ``(n_strata,)`` (then no refills): the
                   epoch's ranks are ``pass_starts[s] .. + n_slots[s] * width
                   - 1`` of stratum ``s``'s endless *pass sequence* (pass
                   ``p`` = ranks ``p * N_s ..``, each pass a keyed random
                   order of its rows; ``ClassesPerBatch(classes="uniform")``,
                   see ``pystratum.engine._assemble_slots.pass_sequence``).

    Stratum ``s``'s epoch sequence is its ``N_s`` rows in the epoch
    permutation's order (pass 0) followed by its refills, ``n_slots[s] *
    width`` ranks in all (or, with ``pass_starts``, that window of its pass
    sequence); slot ``j`` holds ranks ``j*K .. j*K + K - 1``.
    The engine (``pystratum.engine._assemble_slots.slot_layout``) lays the slots into
    batches given the epoch's layout order of the strata. Memory O(S + refills).
    """

    n_slots: np.ndarray
    width: int
    per_batch: int
    num_batches: int
    step: int
    refill_strata: np.ndarray
    refill_sizes: np.ndarray
    refill_takes: np.ndarray
    pass_starts: np.ndarray | None = None


def slot_step(num_batches: int) -> int:
    """The layout step ``g`` for ``num_batches`` batches (R: the same rule).

    Candidates ``c, c + 1, c - 1, c + 2, c - 2, ...`` (``c = floor(0.618034 *
    B)``, at most 400 either side, within ``1..B-1``), coprime to ``B``; the
    first whose continued fraction ``B / g`` has all partial quotients <= 3
    is taken, else the first with the smallest largest quotient. Small
    quotients keep the points ``k * g mod B`` evenly spread (three-distance
    theorem), which is the policy's spread guarantee. ``B <= 2``: 1 (0 for 1).
    """
    if num_batches <= 2:
        return num_batches - 1
    centre = num_batches * 618034 // 1000000
    best = None
    for distance in range(401):
        for step in ((centre,) if distance == 0 else (centre + distance, centre - distance)):
            if not 1 <= step < num_batches or math.gcd(step, num_batches) != 1:
                continue
            largest = max(_largest_quotient(num_batches, step), 3)
            if best is None or largest < best[0]:
                best = (largest, step)
            if largest == 3:
                return step
    return best[1]


def _largest_quotient(a: int, b: int) -> int:
    """The largest partial quotient of the continued fraction of ``a / b``."""
    largest = 0
    while b:
        quotient, rest = divmod(a, b)
        largest = max(largest, quotient)
        a, b = b, rest
    return largest


class Policy(abc.ABC):
    """Base of every batch composition.

    Subclasses set ``name`` (registered on definition), validate their
    parameters in ``__init__``, return them from :meth:`params` (plain JSON
    values, so ``policy_from_params(p.name, p.params()) == p``), and implement
    :meth:`allocate`. ``allocate`` must give the same ``num_batches`` for
    every epoch (``len(sampler)`` relies on it); counts may vary by epoch.
    """

    name: ClassVar[str]
    # Policies whose allocation is a SlotPlan (ClassesPerBatch): lazy plans
    # (rng="index") read lazy_slots() instead of batch_cuts().
    allocates_slots: ClassVar[bool] = False
    # Policies that read their input as a label matrix (rows x labels of 0/1,
    # pystratum.label_matrix) rather than as stratum columns: MultiLabel sets
    # it True. The faces ask this flag (pystratum.torch's reads_label_matrix,
    # the CLI's --label), never the class, so a 2-D input stays stratum
    # columns for every other policy.
    reads_label_matrix: ClassVar[bool] = False
    # Whether batch_order=None means "split_safe" for every rng: the policies
    # whose assembly lists a batch stratum by stratum (docs/BATCH_ORDER.md).
    split_safe_by_default: ClassVar[bool] = False
    #: ``"split_safe"``, ``"assembled"`` or None (the policy's default; see
    #: :meth:`split_safe`). Set by the constructors' ``batch_order`` argument.
    batch_order = None

    def split_safe(self, index: bool = False) -> bool:
        """Whether this policy's batches come in the split-safe order.

        ``batch_order="split_safe"``/``"assembled"`` decide; None (the
        default) means split-safe where the assembly would list a batch
        stratum by stratum: ``Targets``, ``Downsample``, ``ClassesPerBatch``
        and every ``rng="index"`` plan (``index=True``); ``MinPerStratum``
        and ``FixedSize`` otherwise keep the epoch permutation's order (the
        R mlr3torch workflows' batches).
        """
        if self.batch_order is None:
            return self.split_safe_by_default or index
        return self.batch_order == "split_safe"

    def _with_batch_order(self, params: dict) -> dict:
        """``params`` plus ``batch_order`` when it was given (None is not recorded)."""
        if self.batch_order is not None:
            params["batch_order"] = self.batch_order
        return params

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        name = cls.__dict__.get("name")
        if name is None:
            # A concrete subclass without a name of its own would be recorded
            # under its parent's name and rebuilt as the parent: refuse it.
            if not _is_abstract(cls):
                inherited = getattr(cls, "name", None)
                raise TypeError(
                    f"Policy subclass {cls.__qualname__} must set name = '<name>' in its class "
                    f"body: plans, sampler states and golden vectors record a policy by name"
                    + (f", and under its parent's name {inherited!r} it would be rebuilt as "
                       f"{_REGISTRY[inherited].__name__}" if inherited in _REGISTRY else "")
                    + "."
                )
            return
        if not isinstance(name, str) or not name.isidentifier():
            raise TypeError(f"Policy subclass {cls.__qualname__}: name must be a str that is an "
                            f"identifier (it names R's class pystratum_policy_<name> too), got "
                            f"name={name!r}.")
        known = _REGISTRY.get(name)
        # The same class defined again (a re-run notebook cell, importlib.reload)
        # replaces itself; another class may not take a name that is in use.
        if known is not None and known is not cls and (
                known.__module__, known.__qualname__) != (cls.__module__, cls.__qualname__):
            raise ValueError(f"policy name {name!r} is already registered by "
                             f"{known.__module__}.{known.__qualname__}; pick another name for "
                             f"{cls.__module__}.{cls.__qualname__}.")
        _REGISTRY[name] = cls

    @abc.abstractmethod
    def params(self) -> dict:
        """The constructor's keyword arguments, as plain JSON values."""

    @abc.abstractmethod
    def allocate(self, strata, epoch: int) -> Allocation:
        """The allocation of one epoch.

        ``strata`` describes the strata, not the rows: ``.sizes`` (int64, every
        entry >= 1), ``.labels`` (for messages) and ``.first_rows`` (the first
        row of each stratum; computed on first use, so only policies that
        need an order of strata pay for it). ``pystratum.strata._encode.EncodedStrata``
        is one; :func:`strata_of_sizes` makes one from sizes alone.
        """

    def may_recycle(self) -> bool:
        """Whether some epoch may serve a row twice (then epochs draw extra permutations).

        Policies that never do keep drawing exactly one permutation per epoch.
        """
        return False

    def short_last_batch(self, strata) -> bool:
        """Whether every epoch's last batch is a short remainder (fewer rows than the others).

        A sampler with ``drop_last=True`` then leaves that batch out, as
        torch's ``BatchSampler(drop_last=True)`` does, before sharing batches
        across ranks. False by default: other policies' batch sizes follow
        from the data, with no remainder batch to drop.
        """
        return False

    def num_batches(self, strata) -> int:
        """Batches per epoch (the same for every epoch); checks and warns as :meth:`allocate`.

        The default reads it off ``allocate(strata, 0)``; policies with a
        closed form override it so lazy plans never build the cut table.
        """
        return self.allocate(strata, 0).num_batches

    def batch_cuts(self, strata, epoch: int, batches):
        """Rank ranges of the given batches: ``(lo, hi)``, int64 ``(len(batches), S)``.

        Ranks ``lo[i, s] <= r < hi[i, s]`` of stratum ``s`` go to batch
        ``batches[i]``, exactly as ``allocate(strata, epoch).cuts[s, b]`` and
        ``cuts[s, b + 1]`` say. Lazy plans (``rng="index"``) call this per
        batch; the default computes the whole table (O(S x B)), so policies
        with a closed form override it to cost O(S) per batch. A lazy plan
        calls the default at most once per epoch (it keeps the table).
        """
        cuts = self.allocate(strata, epoch).cuts
        batches = np.asarray(batches, dtype=np.int64)
        return (cuts[:, batches].T.astype(np.int64), cuts[:, batches + 1].T.astype(np.int64))

    def lazy_slots(self, strata, epoch: int):
        """A slot policy's epoch for lazy plans: ``(SlotPlan, refills)`` in O(S) memory.

        Only policies with ``allocates_slots`` need it (``ClassesPerBatch``
        defines it); the lazy plan then computes a batch from its P slots.
        The default refuses: a slot policy without it has no lazy plan.
        """
        raise ValueError(
            f"policy={self!r} has no lazy plan (rng='index' computed batch by batch): its "
            f"allocation is a SlotPlan and {type(self).__name__} does not define lazy_slots(). "
            f"Use plan_batches(..., rng='index') (materialised), or rng='numpy' or rng='R'.")

    def to_dict(self) -> dict:
        """``{"name": ..., "params": ...}``: what plans, states and vectors record.

        Raises TypeError when ``params()`` is not a dict of plain JSON values
        (numpy scalars, say), which no state file or vector could hold.
        """
        params = self.params()
        try:
            if not isinstance(params, dict) or not all(isinstance(k, str) for k in params):
                raise TypeError("not a dict with str keys")
            json.dumps(params, allow_nan=False)
        except (TypeError, ValueError) as error:
            raise TypeError(
                f"{type(self).__name__}.params() must return a dict of plain JSON values "
                f"(int, float, str, bool, None, lists and dicts of them), got "
                f"{_show(params)} ({error}). Convert numpy scalars with int() or float()."
            ) from None
        return {"name": self.name, "params": params}

    def __eq__(self, other):
        if not isinstance(other, Policy):
            return NotImplemented
        return self.to_dict() == other.to_dict()

    def __hash__(self):
        return hash(json.dumps(self.to_dict(), sort_keys=True))

    def __repr__(self) -> str:
        arguments = ", ".join(f"{key}={value!r}" for key, value in self.params().items())
        return f"{type(self).__name__}({arguments})"


@dataclass(frozen=True)
class StrataOfSizes:
    """Strata known by their sizes only, appearing in the order given."""

    sizes: np.ndarray
    labels: tuple
    first_rows: np.ndarray


def strata_of_sizes(sizes, labels=None) -> StrataOfSizes:
    """Strata of the given sizes whose rows come stratum by stratum (for tests and tools).

    ``sizes``: one or more whole numbers >= 1; ``labels``: one per stratum
    (default ``0, 1, ...``).
    """
    array = np.asarray(sizes)
    if array.ndim != 1 or array.shape[0] == 0 or array.dtype.kind not in "iu":
        raise TypeError(f"sizes must be a non-empty 1-D sequence of integers, got "
                        f"sizes={_show(sizes)}.")
    if (array < 1).any():
        raise ValueError(f"sizes must be >= 1 (a stratum has rows), got sizes={_show(sizes)}.")
    sizes = array.astype(np.int64)
    if labels is None:
        labels = tuple(range(sizes.shape[0]))
    labels = tuple(labels)
    if len(labels) != sizes.shape[0]:
        raise ValueError(f"labels must give one label per stratum ({sizes.shape[0]}), got "
                         f"{len(labels)}: labels={_show(labels)}.")
    first_rows = np.concatenate([[0], np.cumsum(sizes)[:-1]]).astype(np.int64)
    return StrataOfSizes(sizes, labels, first_rows)


def check_allocation(allocation, strata, policy, epoch, *, num_batches=None) -> Allocation:
    """``policy.allocate``'s result checked against the contract of :class:`Allocation`.

    The engine calls this on every allocation, so a policy's bug is an error
    naming the policy instead of wrong batches (negative cuts silently lose
    rows) or an IndexError deep in the assembly. Cuts may pass a stratum's
    pool (``pool_sizes``, else its size) only when ``policy.may_recycle()``
    says rows can be served twice. ``num_batches``: the count of epoch 0,
    which every epoch must keep (samplers rely on it). Returns the
    allocation, its cuts as int32/int64 (what the assembly expects). Costs
    O(n_strata * num_batches), at most about the number of rows for
    policies that serve each row once.
    """
    where = f"policy {type(policy).__name__}: allocate(strata, epoch={epoch})"
    if not isinstance(allocation, Allocation):
        raise TypeError(f"{where} must return a pystratum.policies.Allocation, got a "
                        f"{type(allocation).__name__}.")
    if allocation.slots is not None:
        return _check_slots(allocation, strata, policy, where, num_batches)
    cuts = allocation.cuts
    sizes = np.asarray(strata.sizes, dtype=np.int64)
    n_strata = sizes.shape[0]
    if not isinstance(cuts, np.ndarray) or cuts.dtype.kind not in "iu":
        kind = getattr(cuts, "dtype", type(cuts).__name__)
        raise TypeError(f"{where} returned cuts of type {kind}; they must be a numpy array of "
                        f"integers (int64, or int32 when every stratum fits).")
    if cuts.ndim != 2 or cuts.shape[0] != n_strata or cuts.shape[1] < 2:
        raise TypeError(f"{where} returned cuts of shape {cuts.shape}; they must have shape "
                        f"(n_strata, num_batches + 1) = ({n_strata}, B + 1) with B >= 1.")
    if cuts.dtype.kind == "u" and cuts.size and int(cuts.max()) > np.iinfo(np.int64).max:
        raise ValueError(f"{where} returned cuts up to {int(cuts.max())}, beyond int64.")
    # Checked in their own dtype (int32 differences cannot overflow): with many
    # strata the table holds about N entries, and int64 copies would double it.
    wide = cuts if cuts.dtype in (np.int32, np.int64) else cuts.astype(np.int64)
    labels = strata.labels
    pools = allocation.pool_sizes
    if pools is not None:
        pools = _per_stratum(pools, "pool_sizes", "iu", "integers", n_strata, where)
        pools = pools.astype(np.int64)
        bad = np.flatnonzero((pools < 1) | (pools > sizes))
        if bad.size:
            s = int(bad[0])
            raise ValueError(f"{where} returned pool_sizes[{s}]={int(pools[s])} for stratum "
                             f"{_show(labels[s])} of {int(sizes[s])} rows; a pool holds 1 to "
                             f"all of its stratum's rows.")
    recycles = policy.may_recycle()

    def fail(message):
        raise ValueError(f"{where} returned cuts that {message}. Cuts must start at 0, never "
                         f"decrease along a row and end at most at the stratum's size (its "
                         f"pool's, with pool_sizes) unless the policy recycles rows "
                         f"(may_recycle() returns True).")

    bad = np.flatnonzero(wide[:, 0] != 0)
    if bad.size:
        s = int(bad[0])
        fail(f"start at {int(wide[s, 0])} for stratum {_show(labels[s])} (cuts[{s}, 0])")
    decreasing = wide[:, 1:] < wide[:, :-1]
    if decreasing.any():
        s, b = (int(k) for k in np.argwhere(decreasing)[0])
        fail(f"decrease for stratum {_show(labels[s])}: cuts[{s}, {b}]={int(wide[s, b])} > "
             f"cuts[{s}, {b + 1}]={int(wide[s, b + 1])}")
    limit = sizes if pools is None else pools
    bad = np.flatnonzero(wide[:, -1] > limit) if not recycles else np.empty(0, np.int64)
    if bad.size:
        s = int(bad[0])
        fail(f"end at {int(wide[s, -1])} for stratum {_show(labels[s])}, which has only "
             f"{int(limit[s])} rows" + ("" if pools is None else " in its pool"))
    del decreasing
    # Cuts never decrease, so a batch is empty exactly when its column total does not grow.
    empty = np.flatnonzero(np.diff(wide.sum(axis=0, dtype=np.int64)) == 0)
    n_batches = wide.shape[1] - 1
    if empty.size:
        raise ValueError(f"{where} gives batch {int(empty[0])} no row (of {n_batches} "
                         f"batches); every batch must receive at least one row.")
    if num_batches is not None and n_batches != num_batches:
        raise ValueError(f"{where} gives {n_batches} batches, but epoch 0 has "
                         f"{num_batches}: num_batches must not depend on the epoch "
                         f"(len(sampler) relies on it); only the counts may vary.")
    weights = allocation.row_weights
    if weights is not None:
        weights = _per_stratum(weights, "row_weights", "iuf", "floats", n_strata, where)
        weights = weights.astype(np.float64, copy=False)
        bad = np.flatnonzero(~(np.isfinite(weights) & (weights >= 0)))
        if bad.size:
            fail_at = int(bad[0])
            raise ValueError(f"{where} returned row_weights[{fail_at}]={float(weights[fail_at])} for "
                             f"stratum {_show(labels[fail_at])}; weights must be finite and "
                             f">= 0.")
    if cuts.dtype in (np.int32, np.int64) and weights is allocation.row_weights:
        return allocation
    return Allocation(small_cuts(wide, np.maximum(sizes, wide[:, -1]))
                      if cuts.dtype not in (np.int32, np.int64) else cuts, weights,
                      allocation.pool_sizes)


def check_slot_layout(plan, strata, policy, epoch, *, num_batches=None) -> SlotPlan:
    """``policy.lazy_slots``'s :class:`SlotPlan` checked, refills aside: O(S).

    What :func:`check_allocation` checks of a slot allocation but its refill
    arrays (which a lazy plan leaves empty): slots per stratum between 0 and
    B adding up to ``B * P``, positive sizes, a step coprime to B, and epoch
    0's number of batches.
    """
    where = f"policy {type(policy).__name__}: lazy_slots(strata, epoch={epoch})"
    if not isinstance(plan, SlotPlan):
        raise TypeError(f"{where} must return a pystratum.policies.SlotPlan first, got a "
                        f"{type(plan).__name__}.")
    _check_slot_layout(plan, strata, where)
    if plan.pass_starts is not None:
        starts = _per_stratum(plan.pass_starts, "pass_starts", "iu", "integers",
                              np.asarray(strata.sizes).shape[0], where)
        if (starts < 0).any():
            raise ValueError(f"{where} returned a SlotPlan that has a negative pass start.")
    return _check_batches(plan, where, plan.num_batches, num_batches)


def _check_slot_layout(plan, strata, where):
    """The refill-free part of a SlotPlan's checks; returns ``n_slots`` as int64."""
    n_strata = np.asarray(strata.sizes).shape[0]

    def fail(message):
        raise ValueError(f"{where} returned a SlotPlan that {message}.")

    n_slots = _per_stratum(plan.n_slots, "n_slots", "iu", "integers", n_strata, where)
    n_slots = n_slots.astype(np.int64)
    width, per_batch, batches = plan.width, plan.per_batch, plan.num_batches
    if not all(isinstance(v, int) and v >= 1 for v in (width, per_batch, batches)):
        fail(f"has width={width!r}, per_batch={per_batch!r}, num_batches={batches!r}; each "
             f"must be an int >= 1")
    if (n_slots < 0).any() or (n_slots > batches).any():
        fail(f"gives a stratum {int(n_slots.max())} slots (or fewer than 0) for {batches} "
             f"batches; a stratum has at most one slot per batch")
    if int(n_slots.sum()) != batches * per_batch:
        fail(f"has {int(n_slots.sum())} slots for {batches} batches of {per_batch}")
    if not (isinstance(plan.step, int) and 0 <= plan.step < max(batches, 2)
            and math.gcd(plan.step, batches) == 1):
        fail(f"has step={plan.step!r}, not coprime to num_batches={batches}")
    return n_slots


def _check_slots(allocation, strata, policy, where, num_batches) -> Allocation:
    """A slot allocation (:class:`SlotPlan`) checked: O(S + refills)."""
    plan = allocation.slots
    sizes = np.asarray(strata.sizes, dtype=np.int64)
    n_strata = sizes.shape[0]

    def fail(message):
        raise ValueError(f"{where} returned a SlotPlan that {message}.")

    if not isinstance(plan, SlotPlan) or allocation.cuts is not None or \
            allocation.pool_sizes is not None or allocation.row_weights is not None:
        fail("comes with cuts, pool_sizes or row_weights, or is no SlotPlan; a slot "
             "allocation is Allocation(None, slots=SlotPlan(...)) alone")
    n_slots = _check_slot_layout(plan, strata, where)
    width, batches = plan.width, plan.num_batches
    strata_, sizes_, takes = (np.asarray(a) for a in (plan.refill_strata, plan.refill_sizes,
                                                      plan.refill_takes))
    if not (strata_.shape == sizes_.shape == takes.shape and strata_.ndim == 1):
        fail("has refill arrays of different shapes")
    if strata_.size:
        if strata_.min() < 0 or strata_.max() >= n_strata or (n_slots[strata_] == 0).any():
            fail("refills a stratum outside the strata or without slots")
        if (takes < 1).any() or (takes > sizes_).any() or (sizes_ > sizes[strata_]).any():
            fail("has a refill taking more ranks than it draws from, or drawing from more "
                 "ranks than its stratum has")
    served = n_slots * width
    if plan.pass_starts is not None:
        starts = _per_stratum(plan.pass_starts, "pass_starts", "iu", "integers", n_strata, where)
        if strata_.size or (starts < 0).any():
            fail("has pass_starts with refills, or a negative pass start")
        return _check_batches(allocation, where, batches, num_batches)
    refilled = np.bincount(strata_.astype(np.int64), weights=takes, minlength=n_strata)
    short = np.flatnonzero((n_slots > 0) & (np.minimum(sizes, served) + refilled != served))
    if short.size:
        s = int(short[0])
        fail(f"fills stratum {_show(strata.labels[s])} with {int(min(sizes[s], served[s]))} "
             f"pass-0 rows and {int(refilled[s])} refills for {int(served[s])} ranks")
    if not policy.may_recycle() and strata_.size:
        fail("refills rows while the policy's may_recycle() is False")
    return _check_batches(allocation, where, batches, num_batches)


def _check_batches(allocation, where, batches, num_batches) -> Allocation:
    """``allocation``, if its number of batches is epoch 0's (``num_batches``; None: epoch 0)."""
    if num_batches is not None and batches != num_batches:
        raise ValueError(f"{where} gives {batches} batches, but epoch 0 has "
                         f"{num_batches}: num_batches must not depend on the epoch "
                         f"(len(sampler) relies on it); only the counts may vary.")
    return allocation


def _per_stratum(values, name, kinds, what, n_strata, where) -> np.ndarray:
    """An allocation's per-stratum array (pool_sizes, row_weights) checked for shape and dtype."""
    values = np.asarray(values)
    if values.shape != (n_strata,) or values.dtype.kind not in kinds:
        raise TypeError(f"{where} returned {name} of shape {values.shape} and dtype "
                        f"{values.dtype}; they must be None or {n_strata} {what}, one per "
                        f"stratum.")
    return values


def _is_abstract(cls) -> bool:
    # ABCMeta sets __abstractmethods__ only after __init_subclass__ has run.
    return any(getattr(getattr(cls, attribute, None), "__isabstractmethod__", False)
               for attribute in dir(cls))


def registered_policies() -> dict:
    """``{name: class}`` of every policy defined so far."""
    return dict(_REGISTRY)


#: The values of every policy's ``batch_order`` argument (None: the policy's default).
BATCH_ORDERS = ("split_safe", "assembled")


def check_batch_order(value):
    """``batch_order`` checked: None, ``"split_safe"`` or ``"assembled"``; the error names it."""
    if value is not None and (not isinstance(value, str) or value not in BATCH_ORDERS):
        raise ValueError(f"batch_order must be 'split_safe', 'assembled' or None, got "
                         f"batch_order={_show(value)}. Pass 'split_safe' (chunks of a split batch "
                         f"keep every stratum's share), 'assembled' (the assembly's order) or "
                         f"None (the policy's default).")
    # A str subclass (numpy's str_) is recorded as the plain str it equals.
    return None if value is None else str(value)


def policy_from_params(name, params) -> Policy:
    """Rebuild a policy from what :meth:`Policy.to_dict` recorded."""
    if not isinstance(name, str) or name not in _REGISTRY:
        known = ", ".join(repr(k) for k in sorted(_REGISTRY))
        raise ValueError(f"policy name must be one of {known}, got name={_show(name)}.")
    if not isinstance(params, Mapping):
        raise TypeError(f"policy params must be a dict of keyword arguments, got "
                        f"params={_show(params)} of type {type(params).__name__}.")
    params = dict(params)
    policy_class = _REGISTRY[name]
    try:
        inspect.signature(policy_class).bind(**params)
    except TypeError as error:
        raise TypeError(f"policy params {params!r} do not fit {name!r} "
                        f"({policy_class.__name__}): {error}.") from None
    return policy_class(**params)


def small_cuts(cuts: np.ndarray, sizes: np.ndarray) -> np.ndarray:
    """Cuts as int32 when every stratum fits: with many strata the table holds ~N entries."""
    return cuts.astype(np.int32) if sizes.max() <= np.iinfo(np.int32).max else cuts
