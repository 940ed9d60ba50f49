"""The public core: strata in, batches of row positions out."""

from __future__ import annotations

import numbers
import operator
import warnings
from dataclasses import dataclass
from functools import cached_property

import numpy as np

from ._assemble import (BatchOrder, assemble_batches, assemble_by_stratum, assemble_in_place,
                        assemble_slots, block_weights, in_place_kernels, slot_draws,
                        slot_epoch_draws, slot_index_draws, stratum_draws)
from ._strata import EncodedStrata, encode_strata
from ._streams import RNG_CHOICES, stream_for
from ._validation import check_bool, check_choice, check_epoch, check_int, show
from .policies import MinPerStratum, Policy, StratumTooSmallWarning, as_policy, check_allocation

__all__ = ["BatchPlan", "plan_batches", "stratified_batches", "plan_from_stream",
           "resolve_policy", "check_strata_are_groups"]

# Below this many strata, few rows per stratum is plausible (small data);
# above it, about one row per stratum means a feature column was passed.
_GROUP_CHECK_MIN_STRATA = 100


@dataclass(frozen=True, repr=False)
class BatchPlan:
    """One epoch's batches, with what is needed to report and reproduce them.

    order:   int64 row positions (0-based), batches concatenated.
    bounds:  batch ``b`` is ``order[bounds[b]:bounds[b + 1]]``.
    strata:  the stratum labels (tuples for multi-column strata).
    cuts:    the policy's rank cuts, integer table (n_strata, num_batches + 1):
             ranks ``cuts[s, b] <= r < cuts[s, b + 1]`` of stratum ``s`` (in
             the epoch's order) are in batch ``b`` (see
             :class:`pystratum.policies.Allocation`).
    counts:  integer table (num_batches, n_strata): rows of each stratum per
             batch, the differences of ``cuts`` (built on first use: with
             many strata and batches it holds about one entry per row).
    seed:    pass it again (same ``rng``, ``epoch``) to get the same batches.
    policy:  the composition (a :class:`pystratum.policies.Policy`).
    weights: None when the policy has no importance weights (every row 1),
             else float64 aligned with ``order``: the weight of each served
             row (see :class:`pystratum.policies.Downsample`).
    batch_strata: slot policies (:class:`pystratum.policies.ClassesPerBatch`)
             only, else None: int ``(num_batches, P)``, the stratum code of
             every slot of every batch (each slot ``K`` rows). ``cuts`` is
             then None: the sparse plan never builds an S x B table.
    """

    order: np.ndarray
    bounds: np.ndarray
    strata: tuple
    cuts: np.ndarray
    seed: object
    rng: str
    epoch: int
    shuffle: bool
    policy: Policy
    weights: np.ndarray | None = None
    batch_strata: np.ndarray | None = None

    @cached_property
    def counts(self) -> np.ndarray:
        """Rows of each stratum in each batch, shape ``(num_batches, n_strata)``, the cuts' dtype.

        Slot plans (``batch_strata`` set) build the dense table only up to
        ``max(N, 2**20)`` entries; beyond that (10**4 classes and 10**4
        batches would be 10**8 entries) it is a ValueError pointing to
        ``batch_strata`` and :meth:`slot_counts`, the sparse views.
        """
        if self.batch_strata is None:
            return np.diff(self.cuts, axis=1).T
        n_batches, n_strata = self.num_batches, len(self.strata)
        limit = max(self.order.shape[0], 1 << 20)
        if n_batches * n_strata > limit:
            raise ValueError(
                f"plan.counts would be a dense {n_batches:,} x {n_strata:,} table "
                f"({n_batches * n_strata:,} entries, over the limit of {limit:,}) for a "
                f"{self.policy!r} plan. Use plan.batch_strata (the stratum of every slot of "
                f"every batch) or plan.slot_counts() (stratum, batch, rows triples).")
        counts = np.zeros((n_batches, n_strata), dtype=np.int64)
        width = self.policy.per_class
        np.add.at(counts, (np.repeat(np.arange(n_batches), self.batch_strata.shape[1]),
                           self.batch_strata.ravel()), width)
        return counts

    def slot_counts(self) -> tuple:
        """``(batch, stratum, rows)`` int64 arrays: the nonzero entries of :attr:`counts`.

        Sparse (one entry per slot for slot plans), so it works at any size.
        """
        if self.batch_strata is not None:
            n_batches, per_batch = self.batch_strata.shape
            return (np.repeat(np.arange(n_batches, dtype=np.int64), per_batch),
                    self.batch_strata.ravel().astype(np.int64),
                    np.full(n_batches * per_batch, self.policy.per_class, dtype=np.int64))
        batch, stratum = np.nonzero(self.counts)
        return (batch.astype(np.int64), stratum.astype(np.int64),
                self.counts[batch, stratum].astype(np.int64))

    @property
    def min_samples_per_stratum(self):
        """``m`` of a :class:`~pystratum.policies.MinPerStratum` plan, else None."""
        return self.policy.m if isinstance(self.policy, MinPerStratum) else None

    @property
    def num_batches(self) -> int:
        return int(self.bounds.shape[0] - 1)

    def __len__(self) -> int:
        return self.num_batches

    @property
    def batches(self) -> list:
        """List of int64 arrays of row positions, one per batch (views of ``order``)."""
        return BatchOrder(self.order, self.bounds).batches()

    def __iter__(self):
        return iter(self.batches)

    def batch_weights(self, batch: int) -> np.ndarray:
        """The weights of batch ``batch``'s rows (ones when the policy has none)."""
        batch = self._batch_index(batch)
        if self.weights is None:
            return np.ones(int(self.bounds[batch + 1] - self.bounds[batch]), dtype=np.float64)
        return self.weights[self.bounds[batch]:self.bounds[batch + 1]]

    def __getitem__(self, batch):
        """``plan[b]``: batch ``b`` (0-based; negative counts from the end) as an int64
        array; ``plan[a:b]``: a list of such arrays."""
        if isinstance(batch, slice):
            try:
                chosen = range(self.num_batches)[batch]
            except (TypeError, ValueError) as error:  # a zero step, non-integer bounds
                raise type(error)(
                    f"batch={show(batch)} is not a valid slice of the plan's "
                    f"{self.num_batches} batch(es): {error}. Use integers for start, stop and "
                    f"a non-zero step."
                ) from None
            return [self[b] for b in chosen]
        index = self._batch_index(batch)
        return self.order[self.bounds[index]:self.bounds[index + 1]]

    def _batch_index(self, batch) -> int:
        """``batch`` as an index in ``0..num_batches-1``, or an error naming ``batch``."""
        n = self.num_batches
        if isinstance(batch, (bool, np.bool_)) or not isinstance(batch, (numbers.Integral,
                                                                         np.integer)):
            raise TypeError(
                f"batch must be an integer or a slice, got batch={show(batch)} of type "
                f"{type(batch).__name__}: plan[b] is batch b (0-based, negative counts from "
                f"the end), plan[a:b] a list of batches."
            )
        index = operator.index(batch)
        if not -n <= index < n:
            raise IndexError(
                f"batch={index} is out of range for a plan with {n} batch(es); use 0..{n - 1} "
                f"or -{n}..-1."
            )
        return index % n

    def batch_of_row(self) -> np.ndarray:
        """int64 array with the 0-based batch of each row position."""
        result = np.full(self.order.shape[0], -1, dtype=np.int64)
        sizes = np.diff(self.bounds)
        result[self.order] = np.repeat(np.arange(self.num_batches, dtype=np.int64), sizes)
        return result

    def counts_table(self, max_rows: int | None = 10) -> str:
        """The per-batch x per-stratum count table as text (like the blog's ``dcast``).

        Batches are numbered from 0, as in ``plan[b]`` and :meth:`batch_of_row`
        (Python is 0-based throughout; the R package numbers from 1).
        ``max_rows``: at most this many batch rows (an int >= 1), the first and
        last ones around a ``...`` row; None shows every batch.
        """
        if max_rows is not None:
            max_rows = check_int(max_rows, "max_rows", minimum=1,
                                 fix="It is how many batch rows to show; None shows all.")
        header = ["batch"] + [_label_text(label) for label in self.strata] + ["total"]
        rows = []
        shown = list(range(self.num_batches))
        if max_rows is not None and len(shown) > max_rows:
            shown = shown[: max_rows // 2] + [None] + shown[-(max_rows - max_rows // 2):]
        for b in shown:
            if b is None:
                rows.append(["..."] * len(header))
                continue
            counts = self.counts[b]
            rows.append([str(b)] + [str(int(c)) for c in counts] + [str(int(counts.sum()))])
        widths = [max(len(r[k]) for r in [header] + rows) for k in range(len(header))]
        lines = ["  ".join(cell.rjust(w) for cell, w in zip(row, widths)) for row in [header] + rows]
        return "\n".join(lines)

    def plot(self, ax=None, *, title=None, max_strata: int = 8):
        """Stacked bars of this plan's per-batch counts (needs matplotlib); returns the Axes.

        One bar per batch (0-based), one band per stratum; with more than
        ``max_strata`` strata the largest ``max_strata - 1`` are drawn and the
        rest summed into "other". See :func:`pystratum.plot.plot_counts`.
        """
        from .plot import plot_counts

        if self.batch_strata is not None and \
                self.num_batches * len(self.strata) > max(self.order.shape[0], 1 << 20):
            counts, labels = self._lumped_slot_counts(max_strata)
            return plot_counts(counts, labels, ax=ax, title=title, max_strata=max_strata)
        return plot_counts(self.counts, self.strata, ax=ax, title=title, max_strata=max_strata)

    def _lumped_slot_counts(self, max_strata: int):
        """A slot plan's counts for the ``max_strata - 1`` strata with most slots, plus "other"."""
        batch, stratum, rows = self.slot_counts()
        totals = np.bincount(stratum, weights=rows, minlength=len(self.strata))
        keep = np.sort(np.argsort(-totals, kind="stable")[:max(max_strata - 1, 1)])
        column = np.full(len(self.strata), keep.shape[0], dtype=np.int64)
        column[keep] = np.arange(keep.shape[0])
        counts = np.zeros((self.num_batches, keep.shape[0] + 1), dtype=np.int64)
        np.add.at(counts, (batch, column[stratum]), rows)
        labels = [self.strata[k] for k in keep.tolist()] + \
            [f"other ({len(self.strata) - keep.shape[0]} strata)"]
        return counts, labels

    def __repr__(self) -> str:
        return (
            f"BatchPlan(num_batches={self.num_batches}, n_rows={self.order.shape[0]}, "
            f"n_strata={len(self.strata)}, policy={self.policy!r}, rng={self.rng!r}, "
            f"seed={self.seed!r}, "
            f"epoch={self.epoch}, shuffle={self.shuffle})"
        )


def _label_text(label) -> str:
    if isinstance(label, tuple):
        return "/".join(str(v) for v in label)
    return str(label)


def resolve_policy(policy, min_samples_per_stratum) -> Policy:
    """The policy of a call that takes ``policy`` or the older ``min_samples_per_stratum``."""
    if min_samples_per_stratum is not None:
        if policy is not None:
            raise TypeError(
                f"Pass either policy or min_samples_per_stratum, not both: got policy="
                f"{policy!r} and min_samples_per_stratum={min_samples_per_stratum!r}. "
                f"An int policy means min_samples_per_stratum."
            )
        policy = min_samples_per_stratum
    # A missing policy is refused as the shorthand's argument, as in R.
    return as_policy(policy)


def check_strata_are_groups(encoded: EncodedStrata, name: str = "strata") -> None:
    """Refuse strata with (on average) under two rows each, among many strata.

    A feature table, a row id or a continuous target passed as strata gives
    about one row per stratum; every batch would then need every stratum, so
    the whole data set would be one batch. That is never what was meant.
    """
    n_strata, n_rows = encoded.n_strata, encoded.n_rows
    if n_strata >= _GROUP_CHECK_MIN_STRATA and n_rows < 2 * n_strata:
        raise ValueError(
            f"{name} has {n_strata} distinct strata for {n_rows} rows (on average "
            f"{n_rows / n_strata:.2f} rows per stratum): this looks like a feature column, a "
            f"row id or a continuous target, not group labels, and every batch would have to "
            f"hold every stratum (one batch with the whole data set). Pass the class or group "
            f"column(s) as {name}; bin a continuous target first (e.g. numpy.digitize or "
            f"pandas.qcut)."
        )


def plan_batches(strata, policy=None, *, seed=None, rng="numpy", epoch=0, shuffle=True,
                 min_samples_per_stratum=None) -> BatchPlan:
    """Like :func:`stratified_batches`, returning a :class:`BatchPlan` report."""
    policy = resolve_policy(policy, min_samples_per_stratum)
    rng = check_choice(rng, "rng", RNG_CHOICES)
    epoch = check_epoch(epoch)
    shuffle = check_bool(shuffle, "shuffle")
    if not shuffle and epoch != 0:
        raise ValueError(
            f"epoch={epoch} has no effect since shuffle=False (every epoch then follows row "
            f"order). Leave epoch=0, or set shuffle=True."
        )
    # Scalar arguments first (as the R package does), the O(N) strata last.
    stream = stream_for(rng, seed, shuffle)
    encoded = encode_strata(strata)
    check_strata_are_groups(encoded)
    return plan_from_stream(encoded, policy, stream, epoch=epoch, rng=rng)


def plan_from_stream(encoded: EncodedStrata, policy: Policy, stream, *, epoch: int,
                     rng: str, num_batches: int | None = None,
                     with_weights: bool = True) -> BatchPlan:
    """The plan for already-validated inputs; ``stream=None`` means row order.

    Framework layers (the torch sampler) call this with a stream they keep
    across epochs, so sequential streams do not restart every epoch, and
    pass ``num_batches`` (epoch 0's) so a policy whose count changes with
    the epoch is an error rather than a wrong ``len(sampler)``. The policy's
    allocation is checked (:func:`pystratum.policies.check_allocation`): a
    faulty policy is an error naming it, never wrong batches.

    Draws of an epoch: one ``permutation(N)`` (``compact_permutation``),
    except for sampling policies (``policy.may_recycle()`` or an allocation
    with ``pool_sizes``: Targets, Downsample), which draw stratum by stratum
    (order of first appearance in the data) just the rows they serve: a
    partial shuffle of the stratum picking its pool (pass 0), then one per
    extra pass of a recycled stratum, the last one cut short (see
    :func:`pystratum._assemble.stratum_draws` and
    :meth:`pystratum._streams.EpochStream.epoch_draws`). With the numpy
    stream they come from the epoch's own generator; with the R and torch
    streams the epoch is the (k+1)-th such group of draws. ``stream=None``
    (no shuffle) uses row order and the identity for every draw.
    From ``2**17`` rows, with numba installed, the one permutation of the
    other policies is drawn into the array that becomes the order
    (:func:`pystratum._assemble.assemble_in_place`): the same draws, the
    same batches, about half the time and memory.

    Order inside a batch: the permutation's order, except for sampling
    policies (``policy.may_recycle()`` or an allocation with
    ``pool_sizes``: Targets, Downsample), whose batches list their strata
    in order of first appearance in the data, each stratum's rows in the
    order of its epoch sequence
    (:func:`pystratum._assemble.assemble_by_stratum`). ``with_weights=False``
    leaves ``weights`` None (a caller that takes them from elsewhere).
    """
    if getattr(stream, "name", None) == "index" and policy.allocates_slots:
        allocation = check_allocation(policy.allocate(encoded, epoch), encoded, policy, epoch,
                                      num_batches=num_batches)
        return _slot_plan(encoded, policy, stream, epoch, rng, allocation)
    if getattr(stream, "name", None) == "index":
        from ._lazy import LazyPlan
        from ._members import members_of_codes

        members = members_of_codes(encoded.codes, encoded.sizes, encoded.labels)
        return LazyPlan(members, policy, stream, epoch).materialise()
    n = encoded.n_rows
    allocation = check_allocation(policy.allocate(encoded, epoch), encoded, policy, epoch,
                                  num_batches=num_batches)
    if allocation.slots is not None:
        return _slot_plan(encoded, policy, stream, epoch, rng, allocation)
    if draws_by_stratum(policy, allocation):
        planned = stratum_draws(allocation, encoded.sizes, encoded.first_rows)
        sizes = [(size, take) for _, size, take in planned]
        # A stratum's first draw picks its rows (its pool), the others index the pool.
        grouped, offsets = encoded.grouped_rows, encoded.offsets
        sources = [grouped[offsets[s]:offsets[s + 1]] if i == 0 or planned[i - 1][0] != s
                   else None for i, (s, _, _) in enumerate(planned)]
        if stream is None:
            draws = [np.arange(take, dtype=np.int64) if source is None else source[:take]
                     for (_, take), source in zip(sizes, sources)]
        else:
            draws = stream.epoch_orders(n, sizes, epoch, sources,
                                        draws_of=lambda k: epoch_draw_sizes(encoded, policy, k))
        del sources
        batches = assemble_by_stratum(draws, allocation, planned, encoded.first_rows)
        del draws
        by_stratum = True
    else:
        kernels = in_place_kernels(n, encoded.n_strata)
        if kernels is not None:
            # The epoch's one permutation drawn into the array that becomes the order.
            batches = assemble_in_place(encoded.codes, allocation.cuts, stream, epoch, kernels)
        else:
            # int32 when N < 2**31: the same values in half the memory, read only here.
            draws = np.arange(n, dtype=np.int64) if stream is None \
                else stream.compact_permutation(n, epoch)
            batches = assemble_batches(encoded.codes, draws, allocation.cuts,
                                       sizes=encoded.sizes)
            del draws
        by_stratum = False
    weights = None
    if allocation.row_weights is not None and with_weights:
        if by_stratum:
            weights = block_weights(allocation.row_weights, allocation.cuts, encoded.first_rows)
        else:
            weights = np.asarray(allocation.row_weights,
                                 dtype=np.float64)[encoded.codes[batches.order]]
    return BatchPlan(
        order=batches.order,
        bounds=batches.bounds,
        strata=encoded.labels,
        cuts=allocation.cuts,
        seed=None if stream is None else stream.seed,
        rng=rng,
        epoch=epoch,
        shuffle=stream is not None,
        policy=policy,
        weights=weights,
    )


def _slot_plan(encoded, policy, stream, epoch, rng, allocation) -> BatchPlan:
    """A slot allocation's plan (ClassesPerBatch): :func:`pystratum._assemble.assemble_slots`."""
    n = encoded.n_rows
    planned = slot_draws(allocation.slots, n)
    if getattr(stream, "name", None) == "index":
        drawn = slot_index_draws(encoded, allocation.slots, stream.seed, epoch)
    elif stream is None:
        drawn = [np.arange(take, dtype=np.int64) for _, take in planned]
    else:
        drawn = slot_epoch_draws(stream, n, planned, epoch,
                                 draws_of=lambda k: epoch_draw_sizes(encoded, policy, k))
    batches, layout = assemble_slots(drawn, allocation.slots, encoded.codes, encoded.sizes,
                                     encoded.first_rows)
    return BatchPlan(order=batches.order, bounds=batches.bounds, strata=encoded.labels,
                     cuts=None, seed=None if stream is None else stream.seed, rng=rng,
                     epoch=epoch, shuffle=stream is not None, policy=policy,
                     batch_strata=layout.batch_strata)


def row_weights(encoded: EncodedStrata, policy: Policy) -> np.ndarray:
    """float64 weight of every row under ``policy`` (ones when it has none).

    ``encoded``: the strata as codes, or as member lists (``StratumMembers``).

    The sampling policies' weights depend on the stratum sizes only, so they
    are the same in every epoch; ``BatchPlan.weights`` is this table read in
    the plan's order.
    """
    allocation = check_allocation(policy.allocate(encoded, 0), encoded, policy, 0)
    if allocation.slots is not None or allocation.row_weights is None:
        return np.ones(encoded.n_rows, dtype=np.float64)
    weights = np.asarray(allocation.row_weights, dtype=np.float64)
    if not hasattr(encoded, "codes"):  # member lists (rng="index")
        from ._members import row_values

        return row_values(encoded, weights)
    return weights[encoded.codes]


def draws_by_stratum(policy: Policy, allocation) -> bool:
    """Whether an epoch draws stratum by stratum (sampling policies: pools or recycling)."""
    return policy.may_recycle() or allocation.pool_sizes is not None


def advance_stream(stream, encoded: EncodedStrata, policy: Policy, epoch: int) -> None:
    """Move ``stream`` to the start of ``epoch``, replaying skipped epochs' groups of draws."""
    stream.advance_to(encoded.n_rows, epoch, lambda k: epoch_draw_sizes(encoded, policy, k))


def epoch_draw_sizes(encoded: EncodedStrata, policy: Policy, epoch: int) -> list:
    """``[(size, take), ...]``: the draws of epoch ``epoch`` (an epoch skipped over).

    ``[(N, N)]`` (one permutation) unless the policy draws stratum by stratum.
    """
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", StratumTooSmallWarning)  # said for the epoch served
        allocation = check_allocation(policy.allocate(encoded, epoch), encoded, policy, epoch)
    if allocation.slots is not None:
        return slot_draws(allocation.slots, encoded.n_rows)
    if not draws_by_stratum(policy, allocation):
        return [(encoded.n_rows, encoded.n_rows)]
    return [(size, take)
            for _, size, take in stratum_draws(allocation, encoded.sizes, encoded.first_rows)]


def stratified_batches(strata, policy=None, *, seed=None, rng="numpy", epoch=0,
                       shuffle=True, min_samples_per_stratum=None) -> list:
    """Split rows into mini-batches whose composition the policy guarantees.

    Parameters
    ----------
    strata : array-like, pandas Series/DataFrame, dict of columns, 2-D array or list of rows
        One label per row (a list, 1-D array, Series or Categorical), or
        several columns: a DataFrame, a dict ``{name: column}``, a 2-D array
        (rows x variables) or a list of equal-length row tuples. Every distinct
        combination of values (compared with ``==``) is one stratum. A list
        of arrays is ambiguous and refused (see docs/INPUTS.md).
    policy : int or pystratum.policies.Policy
        The composition. An int ``m`` means ``MinPerStratum(m)``: the fewest
        rows of each stratum a batch may hold (``min_samples_per_stratum=m``
        is accepted too). ``FixedSize(batch_size)`` gives batches of a chosen
        size with every stratum spread evenly.
    seed : None, int, numpy SeedSequence or Generator
        With ``rng="R"`` an int means R's ``set.seed(seed)``. None draws fresh
        entropy (see :func:`plan_batches` to read back the seed used).
    rng : {"numpy", "R", "torch", "index"}
        The random stream the epoch's permutation comes from. ``"numpy"``
        (default) is Python only. ``"R"`` with a seed gives exactly the R
        package's batches (``stratified_batches(strata, policy, seed)``,
        whose default stream is ``"R"``) minus one; ``"torch"`` with a seed
        gives R torch's, for the same libtorch version only. ``"index"``:
        the lazy plan (:func:`pystratum.lazy_plan`), per-stratum keyed
        bijections; the seed is a whole number in ``[0, 2**52)`` and rows
        inside a batch come stratum by stratum (strata in order of first
        appearance), each stratum's in a pseudo-random order.
    epoch : int
        Which epoch's shuffle (0 first, at most 2**31 - 1). Each epoch is a new
        permutation. Cost: ``rng="numpy"`` reaches any epoch in O(1); with
        ``rng="R"`` or ``"torch"`` epoch k is the stream's (k+1)-th
        group of draws, so the k epochs before it are drawn first, each with
        the draws its policy makes (sampling policies: one per stratum plus
        one per extra pass of a recycled stratum); a call for which that
        costs more than 10**8 row draws (every draw its rows plus 2000 for
        the call) is refused with a ValueError saying the cost and the fix.
        Must be 0 when ``shuffle=False``.
    shuffle : bool
        False keeps row order (the identity permutation).

    Returns
    -------
    list of int64 numpy arrays of 0-based row positions, one per batch.

    Guarantees (every policy): every row appears in at most one batch, and
    in exactly one unless the policy leaves rows out; inside a batch rows
    keep permuted order (sampling policies, ``Targets`` and ``Downsample``:
    stratum by stratum, see :class:`pystratum.policies.Targets`); the same (strata, policy, seed, rng, epoch) always
    gives the same batches, and with ``rng="R"`` they equal R's
    ``pystratum::stratified_batches`` minus one. ``MinPerStratum(m)``: with
    the smallest stratum of size ``N_min >= m`` there are ``N_min // m``
    batches, each holding at least ``m`` rows of every stratum, and a
    stratum's per-batch counts differ by at most one; if ``N_min < m`` a
    single batch holds every row and a ``StratumTooSmallWarning`` says so.
    ``FixedSize``: see :class:`pystratum.policies.FixedSize`.
    """
    return plan_batches(strata, policy, seed=seed, rng=rng, epoch=epoch, shuffle=shuffle,
                        min_samples_per_stratum=min_samples_per_stratum).batches
