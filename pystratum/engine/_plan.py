"""The public core: strata in, batches of row positions out."""

from __future__ import annotations

import warnings
from types import SimpleNamespace

import numpy as np

from ._assemble import (BatchOrder, assemble_batches, assemble_by_stratum, assemble_in_place,
                        assemble_slots, block_weights, in_place_kernels, pass_key, slot_draws,
                        slot_epoch_draws, slot_index_draws, stratum_draws)
from ..strata._label_matrix import LabelMatrix, label_matrix
from ..strata._encode import EncodedStrata, encode_strata
from ..strata._members import members_of_codes, row_values
from ..streams._base import RNG_CHOICES, stream_for
from ..base._validation import check_bool, check_choice, check_epoch
from ..policies import Policy, StratumTooSmallWarning, check_allocation
from ..policies._multi_label import (MultiLabelShortfallError, assign_batches, placing_steps,
                                     check_label_matrix, shortfall_message)
from ._arguments import check_strata_are_groups, resolve_policy
from ._batch_order import reorder_split_safe
from ._batch_plan import BatchPlan
from ._lazy import LazyPlan
from ._shards import (ShardBlocks, ShardMembers, label_signatures, redeal_labels, redeal_slots,
                      shard_first)
from ..strata._shards import check_window, read_shards
from ._single_batch import check_several_batches, check_several_label_batches, quiet_if_refused

__all__ = ["BatchPlan", "plan_batches", "stratified_batches", "plan_from_stream",
           "resolve_policy", "check_strata_are_groups"]

def plan_batches(strata, policy=None, *, seed=None, rng="numpy", epoch=0, shuffle=True,
                 min_samples_per_stratum=None, allow_single_batch=False, shards=None,
                 window=1) -> BatchPlan:
    """Like :func:`stratified_batches`, returning a :class:`BatchPlan` report."""
    policy = resolve_policy(policy, min_samples_per_stratum)
    rng = check_choice(rng, "rng", RNG_CHOICES)
    epoch = check_epoch(epoch)
    shuffle = check_bool(shuffle, "shuffle")
    allow_single_batch = check_bool(allow_single_batch, "allow_single_batch")
    window = check_shard_arguments(shards, window, policy, rng)
    if not shuffle and epoch != 0:
        raise ValueError(
            f"epoch={epoch} has no effect since shuffle=False (every epoch then follows row "
            f"order). Leave epoch=0, or set shuffle=True."
        )
    # Scalar arguments first (as the R package does), the O(N) strata last.
    stream = stream_for(rng, seed, shuffle)
    if getattr(policy, "reads_label_matrix", False):  # MultiLabel: a 2-D input is labels
        return label_plan(strata, policy, stream, epoch=epoch, rng=rng,
                          allow_single_batch=allow_single_batch, shards=shards, window=window)
    encoded = encode_strata(strata)
    check_strata_are_groups(encoded)
    order = None if shards is None else ShardOrder(read_shards(shards, encoded.n_rows), window)
    with quiet_if_refused(allow_single_batch):
        return plan_from_stream(encoded, policy, stream, epoch=epoch, rng=rng,
                                allow_single_batch=allow_single_batch, shards=order)


class ShardOrder:
    """``shards=`` read (a :class:`~pystratum.strata._shards.ShardLayout`) with its ``window``."""

    def __init__(self, layout, window: int):
        self.layout = layout
        self.window = window

    @property
    def n_shards(self) -> int:
        return self.layout.n_shards

    def blocks(self, stream) -> ShardBlocks:
        """The epoch's blocks from the shard permutation ``stream`` drew (None: identity)."""
        permutation = None if stream is None else stream.shard_permutation
        return ShardBlocks(self.layout.index, self.layout.n_shards, self.window, permutation)


def check_shard_arguments(shards, window, policy, rng: str) -> int:
    """``window`` checked; ``shards=`` refused where the order cannot honour it (docs/SHARDS.md)."""
    window = check_window(window)
    if shards is None:
        if window != 1:
            raise ValueError(
                f"window={window} has no effect without shards (the window counts shards per "
                f"block). Pass shards= (a shard id per row, or shard_sizes(sizes)), or leave "
                f"window=1.")
        return window
    if rng == "index" and getattr(policy, "reads_label_matrix", False):
        return window  # the MultiLabel refusal of rng='index' says it
    if rng == "index" and getattr(policy, "allocates_slots", False):
        raise ValueError(
            "shards cannot be honoured with rng='index' by ClassesPerBatch, got rng='index' "
            "with shards=: its keyed refills and layout have no shard-blocked form. Use "
            "rng='numpy', rng='R' or rng='torch' with shards, or leave shards=None.")
    if getattr(policy, "allocates_slots", False) and getattr(policy, "classes", None) == "uniform":
        raise ValueError(
            "shards cannot be honoured by ClassesPerBatch(classes='uniform'), got shards= with "
            "classes='uniform': its passes are keyed orders, not drawn row sequences, so there "
            "is nothing to sort by block. Use classes='proportional', or leave shards=None.")
    return window


def plan_from_stream(encoded: EncodedStrata, policy: Policy, stream, *, epoch: int,
                     rng: str, num_batches: int | None = None,
                     with_weights: bool = True, allow_single_batch: bool = True,
                     shards: ShardOrder | None = None) -> BatchPlan:
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
    :func:`pystratum.engine._assemble.stratum_draws` and
    :meth:`pystratum.streams._base.EpochStream.epoch_draws`). With the numpy
    stream they come from the epoch's own generator; with the R and torch
    streams the epoch is the (k+1)-th such group of draws. ``stream=None``
    (no shuffle) uses row order and the identity for every draw.
    From ``2**17`` rows, with numba installed, the one permutation of the
    other policies is drawn into the array that becomes the order
    (:func:`pystratum.engine._assemble.assemble_in_place`): the same draws, the
    same batches, about half the time and memory.

    Order inside a batch: the permutation's order, except for sampling
    policies (``policy.may_recycle()`` or an allocation with
    ``pool_sizes``: Targets, Downsample), whose batches list their strata
    in order of first appearance in the data, each stratum's rows in the
    order of its epoch sequence
    (:func:`pystratum.engine._assemble.assemble_by_stratum`). ``with_weights=False``
    leaves ``weights`` None (a caller that takes them from elsewhere).
    ``allow_single_batch=False``: a one-batch allocation is refused
    (:func:`pystratum.engine._single_batch.check_several_batches`) before
    anything is drawn; the samplers check once, at construction.

    ``shards`` (a :class:`ShardOrder`): the shard-blocked order of
    docs/SHARDS.md. The epoch's group of draws starts with a permutation of
    the shards; every drawn row sequence (the permutation of the rows,
    each stratum draw, each refill) is stably sorted by the block of its
    rows' shards before the unchanged cuts are applied.
    """
    if getattr(stream, "name", None) == "index" and not policy.allocates_slots:
        members = members_of_codes(encoded.codes, encoded.sizes, encoded.labels)
        lazy = LazyPlan(members, policy, stream, epoch, shards=None if shards is None else
                        (ShardMembers.of(members, shards.layout), shards.window))
        check_several_batches(encoded, policy, lazy.num_batches, allow_single_batch)
        return lazy.materialise()
    split_safe = policy.split_safe()
    allocation = check_allocation(policy.allocate(encoded, epoch), encoded, policy, epoch,
                                  num_batches=num_batches)
    check_several_batches(encoded, policy, allocation.num_batches, allow_single_batch)
    if getattr(stream, "name", None) == "index":
        return _slot_plan(encoded, policy, stream, epoch, rng, allocation)
    n = encoded.n_rows
    if allocation.slots is not None:
        return _slot_plan(encoded, policy, stream, epoch, rng, allocation, shards)
    if shards is not None:
        stream = shard_first(stream, shards.n_shards)
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
        if shards is not None:
            draws = _sorted_stratum_draws(draws, sources, shards.blocks(stream))
        del sources
        batches = assemble_by_stratum(draws, allocation, planned, encoded.first_rows,
                                      split_safe=split_safe)
        del draws
        by_stratum = True
    else:
        kernels = None if shards is not None else in_place_kernels(n, encoded.n_strata)
        if kernels is not None:
            # The epoch's one permutation drawn into the array that becomes the order.
            batches = assemble_in_place(encoded.codes, allocation.cuts, stream, epoch, kernels)
        else:
            # int32 when N < 2**31: the same values in half the memory, read only here.
            draws = np.arange(n, dtype=np.int64) if stream is None \
                else stream.compact_permutation(n, epoch)
            if shards is not None:
                draws = shards.blocks(stream).order(draws)
            batches = assemble_batches(encoded.codes, draws, allocation.cuts,
                                       sizes=encoded.sizes)
            del draws
        if split_safe:
            batches = BatchOrder(reorder_split_safe(batches.order, batches.bounds, encoded.codes,
                                                    encoded.first_rows), batches.bounds)
        by_stratum = False
    weights = None
    if allocation.row_weights is not None and with_weights:
        if by_stratum:
            weights = block_weights(allocation.row_weights, allocation.cuts, encoded.first_rows,
                                    split_safe=split_safe)
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


def read_label_matrix(labels):
    """``(matrix, names)`` of a label matrix: a numpy array (names ``"0".."L-1"``), a
    table with ``columns`` and ``to_numpy()`` (a pandas DataFrame: its column names),
    a :class:`~pystratum.strata._label_matrix.LabelMatrix`, or any other form
    :func:`pystratum.label_matrix` reads (torch tensors, scipy.sparse, dicts of columns)."""
    names = None
    if isinstance(labels, LabelMatrix):
        return check_label_matrix(labels.matrix, list(labels.labels))
    if not isinstance(labels, np.ndarray) and not hasattr(labels, "columns"):
        read = label_matrix(labels, name="strata")
        return check_label_matrix(read.matrix, list(read.labels))
    if hasattr(labels, "columns") and hasattr(labels, "to_numpy"):
        names = [str(name) for name in labels.columns]
        labels = labels.to_numpy()
    return check_label_matrix(labels, names)


def label_draw_group(n_rows: int, n_batches: int) -> list:
    """The one group of draws a MultiLabel epoch takes: rows, then batches (R: the same)."""
    return [(n_rows, n_rows), (n_batches, n_batches)]


def label_draws(stream, n_rows: int, n_batches: int, epoch: int, shards=None):
    """An epoch's two draws for MultiLabel: a permutation of the rows, then of the batches.

    One group ``[(N, N), (B, B)]`` per epoch (R: ``sample.int(N)`` then
    ``sample.int(B)``); ``stream=None`` (no shuffle): both identities.
    ``shards`` (a :class:`ShardOrder`): the group starts with the shard
    permutation ``(H, H)`` and the rows' permutation is sorted by block.
    """
    if getattr(stream, "name", None) == "index":
        raise ValueError(
            "rng='index' cannot serve MultiLabel, got rng='index': its batches depend on every "
            "row's labels at once, so there is no per-batch closed form for a lazy plan. Use "
            "rng='numpy', rng='R' or rng='torch'.")
    if shards is not None:
        stream = shard_first(stream, shards.n_shards)
    if stream is None:
        rows, batches = np.arange(n_rows, dtype=np.int64), np.arange(n_batches, dtype=np.int64)
    else:
        group = label_draw_group(n_rows, n_batches)
        rows, batches = stream.epoch_draws(n_rows, group, epoch, draws_of=lambda k: group)
        rows, batches = np.asarray(rows, dtype=np.int64), np.asarray(batches, dtype=np.int64)
    if shards is not None:
        rows = shards.blocks(stream).order(rows)
    return rows, batches


def label_plan(labels, policy, stream, *, epoch: int, rng: str, names=None,
               allow_single_batch: bool = True, shards=None, window: int = 1) -> BatchPlan:
    """The plan of a label-reading policy (:class:`pystratum.policies.MultiLabel`).

    ``labels``: a label matrix (see :func:`read_label_matrix`), or with
    ``names`` an (N, L) bool array already checked. Draws
    :func:`label_draws`, assigns with
    :func:`pystratum.policies._multi_label.assign_batches`; ``strict``
    turns a remaining shortfall into ``MultiLabelShortfallError``.
    ``allow_single_batch=False``: a one-batch plan is refused
    (:func:`pystratum.engine._single_batch.check_several_label_batches`),
    before any draw. ``shards`` (ids, :func:`~pystratum.shard_sizes`, or a
    :class:`ShardOrder` already read) with ``window``: the shard-blocked order.
    """
    if getattr(stream, "name", None) == "index":
        label_draws(stream, 0, 0, epoch)  # the refusal, before reading the matrix
    if names is None:
        matrix, names = read_label_matrix(labels)
    else:
        matrix = labels
    n_rows = matrix.shape[0]
    if shards is not None and not isinstance(shards, ShardOrder):
        shards = ShardOrder(read_shards(shards, n_rows), window)
    n_batches = policy.batches_for(n_rows)
    if not allow_single_batch and n_batches < 2:
        check_several_label_batches(
            SimpleNamespace(n_rows=n_rows, labels=names, sizes=matrix.sum(axis=0, dtype=np.int64)),
            policy, n_batches, allow_single_batch)
    permutation, batch_ties = label_draws(stream, n_rows, n_batches, epoch, shards)
    assigned = assign_batches(matrix, permutation, batch_ties, policy.min_per_label)
    sizes = assigned.counts.sum(axis=0)
    if policy.strict:
        message = shortfall_message(names, assigned.counts, sizes, policy.min_per_label)
        if message is not None:
            raise MultiLabelShortfallError(message)
    batch = assigned.batch
    if shards is not None:  # rows of one label set dealt in batch order (docs/SHARDS.md)
        batch = redeal_labels(batch, permutation, label_signatures(matrix))
    key = batch.astype(np.uint16 if n_batches <= 1 << 16 else np.int64)
    order = permutation[np.argsort(key, kind="stable")]
    bounds = np.zeros(n_batches + 1, dtype=np.int64)
    np.cumsum(np.bincount(batch, minlength=n_batches), out=bounds[1:])
    if policy.split_safe():
        # Placing labels (0..L, L: no label) as strata, in step order.
        order = reorder_split_safe(order, bounds, placing_steps(matrix),
                                   np.arange(matrix.shape[1] + 1))
    return BatchPlan(order=order, bounds=bounds, strata=tuple(names), cuts=None,
                     seed=None if stream is None else stream.seed, rng=rng, epoch=epoch,
                     shuffle=stream is not None, policy=policy,
                     label_counts=assigned.counts)


def _slot_plan(encoded, policy, stream, epoch, rng, allocation, shards=None) -> BatchPlan:
    """A slot allocation's plan (ClassesPerBatch): :func:`pystratum.engine._assemble.assemble_slots`."""
    n = encoded.n_rows
    planned = slot_draws(allocation.slots, n)
    if shards is not None:
        stream = shard_first(stream, shards.n_shards)
    if getattr(stream, "name", None) == "index":
        drawn = slot_index_draws(encoded, allocation.slots, stream.seed, epoch)
    elif stream is None:
        drawn = [np.arange(take, dtype=np.int64) for _, take in planned]
    else:
        drawn = slot_epoch_draws(stream, n, planned, epoch,
                                 draws_of=lambda k: epoch_draw_sizes(encoded, policy, k))
    if shards is not None:
        drawn = _sorted_slot_draws(drawn, allocation.slots, encoded, shards.blocks(stream))
    passes = None
    if allocation.slots.pass_starts is not None:  # classes="uniform": keyed pass orders
        passes = (encoded.grouped_rows, pass_key(stream))
    batches, layout = assemble_slots(drawn, allocation.slots, encoded.codes, encoded.sizes,
                                     encoded.first_rows, passes)
    if shards is not None:  # each stratum's slots filled in serving order (docs/SHARDS.md)
        batches = BatchOrder(redeal_slots(batches.order, layout.batch_strata, layout.columns,
                                          allocation.slots.width), batches.bounds)
    return BatchPlan(order=batches.order, bounds=batches.bounds, strata=encoded.labels,
                     cuts=None, seed=None if stream is None else stream.seed, rng=rng,
                     epoch=epoch, shuffle=stream is not None, policy=policy,
                     batch_strata=layout.batch_strata)


def _sorted_stratum_draws(draws, sources, blocks) -> list:
    """A sampling policy's draws, each sorted by block: pass 0 (rows; the stratum's pool
    from then on), then every extra pass (indices into that sorted pool)."""
    ordered = []
    pool = None
    for drawn, source in zip(draws, sources):
        if source is not None:  # pass 0 of the next stratum
            pool = blocks.order(drawn)
            ordered.append(pool)
        else:
            ordered.append(blocks.order_indices(drawn, pool))
    return ordered


def _sorted_slot_draws(drawn, slots, encoded, blocks) -> list:
    """ClassesPerBatch's draws sorted by block: the rows' permutation, then every refill
    (pass-0 ranks of its stratum, by the block of the row each points to). The layout
    draw is not a row sequence and stays as it is."""
    permutation, layout, *refills = drawn
    permutation = blocks.order(np.asarray(permutation, dtype=np.int64))
    if not refills:
        return [permutation, layout]
    picks = np.concatenate(refills).astype(np.int64, copy=False)
    # Pass 0 of every stratum: its rows in the sorted permutation's order.
    codes = encoded.codes
    grouped = permutation[np.argsort(codes[permutation], kind="stable")]
    sizes = np.asarray(encoded.sizes, dtype=np.int64)
    strata = np.asarray(slots.refill_strata, dtype=np.int64)
    takes = np.asarray(slots.refill_takes, dtype=np.int64)
    starts = (np.cumsum(sizes) - sizes)[strata]
    rows = grouped[np.repeat(starts, takes) + picks]
    return [permutation, layout, blocks.order_runs(picks, rows, takes)]


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

        return row_values(encoded, weights)
    return weights[encoded.codes]


def draws_by_stratum(policy: Policy, allocation) -> bool:
    """Whether an epoch draws stratum by stratum (sampling policies: pools or recycling)."""
    return policy.may_recycle() or allocation.pool_sizes is not None


def advance_stream(stream, encoded: EncodedStrata, policy: Policy, epoch: int,
                   n_shards: int | None = None) -> None:
    """Move ``stream`` to the start of ``epoch``, replaying skipped epochs' groups of draws
    (with ``n_shards``: each group led by the shard permutation)."""
    stream.advance_to(encoded.n_rows, epoch,
                      lambda k: epoch_draw_sizes(encoded, policy, k, n_shards))


def epoch_draw_sizes(encoded: EncodedStrata, policy: Policy, epoch: int,
                     n_shards: int | None = None) -> list:
    """``[(size, take), ...]``: the draws of epoch ``epoch`` (an epoch skipped over).

    ``[(N, N)]`` (one permutation) unless the policy draws stratum by stratum.
    With ``n_shards`` (H, an epoch with ``shards=``) the group starts with ``(H, H)``.
    """
    if n_shards is not None:
        return [(n_shards, n_shards)] + epoch_draw_sizes(encoded, policy, epoch)
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
                       shuffle=True, min_samples_per_stratum=None,
                       allow_single_batch=False, shards=None, window=1) -> list:
    """Split rows into mini-batches whose composition the policy guarantees.

    Parameters
    ----------
    strata : array-like, pandas Series/DataFrame, dict of columns, 2-D array or list of rows
        One label per row (a list, 1-D array, Series or Categorical), or
        several columns: a DataFrame, a dict ``{name: column}``, a 2-D array
        (rows x variables) or a list of equal-length row tuples. Every distinct
        combination of values (compared with ``==``) is one stratum. A list
        of arrays is ambiguous and refused (see docs/INPUTS.md). With
        :class:`pystratum.policies.MultiLabel` the input is a label matrix
        instead (rows x labels of 0/1 or booleans: a 2-D array or a
        DataFrame of 0/1 columns), never stratum columns.
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
    allow_single_batch : bool
        False (default): a plan of a single batch (every row in it) is a
        ValueError naming the smallest strata and the fix (a smaller ``m``
        or ``batch_size``, ``FixedSize(batch_size)``; for several 0/1
        columns passed as strata, which look like multi-label indicators,
        one label column or fewer columns). True when one batch per epoch
        is really meant.
    shards : None, 1-D array of int shard ids (one per row), or :func:`pystratum.shard_sizes`
        Where every row is stored (docs/SHARDS.md). Each epoch then puts the
        shards in a random order shared by all strata, cuts it into blocks of
        ``window`` shards, and shuffles each stratum's rows only within a
        block; the policy's cuts do not change, so every guarantee below
        holds exactly as without shards, and a batch reads few shards.
        Refused with ``rng="index"`` (not built yet) and with
        ``ClassesPerBatch(classes="uniform")``.
    window : int
        Shards per block, ``>= 1`` (default 1). ``window`` >= the number of
        shards gives the row-random order; larger windows mix more shards
        into a batch and need a larger cache (docs/SHARDS.md, "What W trades").

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
    stratum's per-batch counts differ by at most one. Every policy: at
    least two batches, or a ValueError unless ``allow_single_batch=True``;
    allowed, a single batch holds every row (if ``N_min < m`` a
    ``StratumTooSmallWarning`` says so).
    ``FixedSize``: see :class:`pystratum.policies.FixedSize`.
    """
    return plan_batches(strata, policy, seed=seed, rng=rng, epoch=epoch, shuffle=shuffle,
                        min_samples_per_stratum=min_samples_per_stratum,
                        allow_single_batch=allow_single_batch, shards=shards,
                        window=window).batches
