"""The lazy plan (``rng="index"``): any batch of any epoch on demand.

A materialised plan shuffles all N rows, then groups them into batches.
The lazy plan never does: for batch ``b`` of epoch ``k`` it asks the policy
for each stratum's rank range ``[lo_s, hi_s)`` (a closed form for the
built-in policies), maps each rank ``r`` through the stratum's keyed
bijection (``pystratum.streams._index``, keyed by seed, epoch and the
stratum's turn) to a member number, and looks the row up in the member
lists (``pystratum.strata._members``). So batch ``b`` costs O(|batch| + S) time
and the plan O(S) memory beyond the member lists.

Within a batch the rows come in the split-safe order
(:mod:`pystratum.engine._batch_order`, every policy's default here; a
policy's ``batch_order="assembled"`` keeps stratum by stratum, strata in
order of first appearance in the data), each stratum's rows in rank order
(a pseudo-random sample of that stratum). No single permutation exists
here, so there is no permutation order to keep.

Policies that pool or recycle strata (``Targets``, ``Downsample``) work
too: rank ``r`` of a stratum with pool ``P`` is its pool member ``r % P`` of
pass ``r // P``, pass 0 the stratum's shuffled order and every later pass a
further keyed bijection of the pool (the materialised plan's extra
permutations). Their importance weights come with ``batch_weights(b)``.

An epoch of the lazy plan keeps every guarantee of its policy: rank ``r``
of stratum ``s`` goes to batch ``b`` exactly when
``cuts[s, b] <= r < cuts[s, b + 1]``, and the bijection makes the ranks a
shuffle of the stratum, so every row is in exactly one batch (or none,
where the policy leaves rows out) and every batch has the policy's counts.

With numba installed (the ``fast`` extra), blocks of batches of a large plan
are filled by one compiled kernel (``pystratum.kernels._index.fill_segments``:
ranks, cipher and member lookup fused), the same rows as numpy's path; a
single batch stays on numpy's path, so the first one never waits for
numba's import.
"""

from __future__ import annotations

import numpy as np

from .. import kernels as kernel_gate
from ..streams._index import (MAX_INDEX, SMALL_DOMAIN, IndexStream, permute_ranks,
                              small_domain_tables)
from ..strata._members import StratumMembers, members_of_codes, members_of_labels
from ..base._validation import check_bool, check_epoch
from ..policies import Policy, check_allocation
from ..strata._encode import encode_strata
from ._arguments import check_strata_are_groups, resolve_policy
from ._batch_plan import BatchPlan
from ._batch_order import BatchPatterns, place_split_safe
from ._lazy_slots import LazySlots
from ._shards import LazyShardOrder, ShardMembers
from ..strata._shards import check_window, read_shards
from ._single_batch import check_several_batches, quiet_if_refused

__all__ = ["LazyPlan", "lazy_plan"]

# Rows computed per vectorised step when many batches are asked for at once.
_BLOCK_ROWS = 1 << 17
# Up to this many strata, each stratum's ranks go through the cipher with
# scalar parameters (faster); beyond it, one call with per-row parameters.
_PER_STRATUM_MAX = 8


class LazyPlan:
    """One epoch's batches, each computed when asked for (``rng="index"``).

    members: :class:`pystratum.strata._members.StratumMembers` (rows per stratum).
    policy:  a :class:`pystratum.policies.Policy`.
    seed:    a whole number in ``[0, 2**52)`` (see ``IndexStream``).
    epoch:   which epoch (0 first).

    ``plan[b]`` (any ``b``, in any order) and ``plan.batches_of(ids)`` give
    int64 row positions; iterating yields every batch in order. Guarantee:
    the same as the policy's materialised plan (every row in exactly one
    batch unless the policy leaves it out; per-batch counts equal the
    policy's cuts), the same batches for the same (members, policy, seed,
    epoch) in Python and R; rows inside a batch come in the split-safe order
    unless the policy says ``batch_order="assembled"`` (stratum by stratum;
    see the module docstring).
    """

    def __init__(self, members: StratumMembers, policy, seed, epoch: int,
                 num_batches: int | None = None, shards=None):
        self.members = members
        self._shard_order = None
        self.policy = policy
        self.stream = seed if isinstance(seed, IndexStream) else IndexStream(seed)
        self.epoch = int(epoch)
        if members.n_rows > MAX_INDEX:
            raise ValueError(f"rng='index' handles up to 2**52 rows, got {members.n_rows}.")
        # Strata take turns in order of first appearance: a property of the
        # data, so relabelling never changes the batches and R agrees.
        self.turn_order = np.argsort(members.first_rows, kind="stable")
        turn_of_stratum = np.empty_like(self.turn_order)
        turn_of_stratum[self.turn_order] = np.arange(self.turn_order.shape[0])
        self._turn_of_stratum = turn_of_stratum
        self._table = None
        self.row_weights = None
        self._pools = None
        self._pass_keys = {}
        self._slots = None
        if policy.allocates_slots:
            # ClassesPerBatch: P slots per batch, not rank ranges (engine._lazy_slots).
            self._slots = LazySlots(members, policy, self.stream, self.epoch,
                                    self._positions, num_batches)
            self.num_batches = self._slots.num_batches
            if self._slots.pass_starts is None:  # pass 0 keyed per (epoch, stratum)
                self.keys = self.stream.keys(self.epoch, turn_of_stratum)
                self._small = _small_domain_table(members.sizes, self.keys)
            return
        self.num_batches = policy.num_batches(members)
        self.keys = self.stream.keys(self.epoch, turn_of_stratum)  # (ROUNDS, S), code order
        if type(policy).batch_cuts is _default_batch_cuts():
            # No closed form: the policy's whole table, computed once per epoch.

            allocation = check_allocation(policy.allocate(members, self.epoch), members, policy,
                                          self.epoch, num_batches=self.num_batches)
            self._table = allocation.cuts
            if allocation.row_weights is not None:
                self.row_weights = np.asarray(allocation.row_weights, dtype=np.float64)
            pools = members.sizes if allocation.pool_sizes is None else \
                np.asarray(allocation.pool_sizes, dtype=np.int64)
            if allocation.pool_sizes is not None or (self._table[:, -1] > pools).any():
                self._pools = pools
        self._small = _small_domain_table(members.sizes, self.keys)
        self.split_safe = policy.split_safe(index=True)
        if shards is not None:
            self._shard_order = self._sharded(shards)

    def _sharded(self, shards):
        """``shards = (ShardMembers, window)``: the keyed shard-blocked order (docs/SHARDS.md)."""
        if self._pools is not None:
            raise ValueError(
                f"shards cannot be honoured with rng='index' by policy={self.policy!r}, got "
                f"shards= with a policy that pools or recycles strata: a keyed pool cannot be "
                f"chosen at random and sorted by block batch by batch. Use rng='numpy', 'R' "
                f"or 'torch' with shards, or leave shards=None.")
        shard_members, window = shards
        return LazyShardOrder(shard_members, window, self.stream, self.epoch,
                              self._turn_of_stratum)

    @property
    def seed(self) -> int:
        return self.stream.seed

    def __len__(self) -> int:
        return self.num_batches

    def cuts(self, batch_ids):
        """``(lo, hi)``: int64 ``(len(batch_ids), S)`` rank ranges, strata in code order."""
        batch_ids = np.asarray(batch_ids, dtype=np.int64)
        if self._slots is not None:
            raise ValueError(
                f"policy={self.policy!r} puts {self._slots.per_batch} strata in a batch, not "
                f"every stratum: its lazy plan has no rank ranges per batch. Use "
                f"plan.counts(batch_ids) or plan.batch_strata(batch_ids).")
        if self._table is not None:
            return (self._table[:, batch_ids].T.astype(np.int64),
                    self._table[:, batch_ids + 1].T.astype(np.int64))
        return self.policy.batch_cuts(self.members, self.epoch, batch_ids)

    def counts(self, batch_ids) -> np.ndarray:
        """Rows of each stratum (code order) in each of the batches, ``(len, S)``."""
        if self._slots is not None:
            strata = self._slots.batch_strata(batch_ids)
            counts = np.zeros((strata.shape[0], self.members.n_strata), dtype=np.int64)
            np.add.at(counts, (np.arange(strata.shape[0])[:, None], strata), self._slots.width)
            return counts
        lo, hi = self.cuts(batch_ids)
        return hi - lo

    def batch_strata(self, batch_ids) -> np.ndarray:
        """Slot policies (``ClassesPerBatch``): the stratum code of each slot, ``(len, P)``.

        As ``BatchPlan.batch_strata`` of the materialised plan, for these batches.
        """
        if self._slots is None:
            raise ValueError(
                f"batch_strata is defined for slot policies (ClassesPerBatch), not "
                f"policy={self.policy!r}, whose batches hold every stratum: use "
                f"plan.counts(batch_ids).")
        return self._slots.batch_strata(np.asarray(batch_ids, dtype=np.int64).reshape(-1))

    def __getitem__(self, batch: int) -> np.ndarray:
        batch = range(self.num_batches)[batch]
        order, _ = self.batches_of([batch])
        return order

    def batches_of(self, batch_ids):
        """The given batches as ``(order, bounds)``: batch ``batch_ids[i]`` is
        ``order[bounds[i]:bounds[i + 1]]``. O(total rows + len(batch_ids) x S)."""
        batch_ids = np.asarray(batch_ids, dtype=np.int64).reshape(-1)
        if self._slots is not None:
            return self._slots.batches_of(batch_ids)
        return self._batches_of_cuts(*self.cuts(batch_ids))

    def _batches_of_cuts(self, lo, hi):
        """:meth:`batches_of` for the batches whose rank ranges are ``lo, hi`` (rows x S)."""
        order, bounds = self._by_stratum(lo, hi)
        if self.split_safe:
            counts = (hi - lo)[:, self.turn_order].T
            order = place_split_safe(order, bounds, counts)
        return order, bounds

    def _by_stratum(self, lo, hi):
        """The batches stratum by stratum, strata in turn order: ``(order, bounds)``."""
        n_batches = lo.shape[0]
        lo = lo[:, self.turn_order]
        counts = hi[:, self.turn_order] - lo
        # Where each (batch, stratum) segment starts in the output.
        seg_out = np.zeros(counts.shape, dtype=np.int64)
        np.cumsum(counts[:, :-1], axis=1, out=seg_out[:, 1:])
        bounds = np.zeros(n_batches + 1, dtype=np.int64)
        np.cumsum(counts.sum(axis=1), out=bounds[1:])
        seg_out += bounds[:-1, None]
        order = np.empty(int(bounds[-1]), dtype=np.int64)
        kernels = self._kernels(order.shape[0])
        if kernels is not None:
            # Ranks, cipher, cycle-walk and member lookup fused: no temporaries.
            members = self.members
            table, offsets = self._small
            grouped = members.rows is None
            kernels.fill_segments(
                order, np.ascontiguousarray(lo), np.ascontiguousarray(counts), seg_out,
                self.turn_order, members.sizes, self.keys, table, offsets,
                np.empty(0, dtype=np.int64) if grouped else np.asarray(members.rows),
                members.starts if grouped else members.offsets, grouped)
            return order, bounds
        if self.members.n_strata <= _PER_STRATUM_MAX:
            # Few strata: each stratum's ranks go through the cipher with scalar
            # parameters and land straight in their places.
            for turn, stratum in enumerate(self.turn_order.tolist()):
                ranks, places = _segments(lo[:, turn], counts[:, turn], seg_out[:, turn])
                if ranks.shape[0]:
                    order[places] = self._rows_of_stratum(stratum, ranks)
            return order, bounds
        # Many strata: one pass with per-row parameters, segments in output order.
        stratum = np.repeat(np.tile(self.turn_order, n_batches), counts.ravel())
        ranks, _ = _segments(lo.ravel(), counts.ravel(), seg_out.ravel())
        order[:] = self.members.member(stratum, self._positions(stratum, ranks))
        return order, bounds

    def _kernels(self, rows: int):
        """The compiled kernels for a call filling ``rows`` rows, or None (numpy's path).

        Both give the same rows. Pooled or recycled strata (``Targets``,
        ``Downsample``) stay on numpy's path, whose bijections on the pools
        are compiled in turn (``permute_ranks``).
        """
        if self._pools is not None or self._shard_order is not None or \
                rows < kernel_gate.MIN_CALL_ROWS:
            return None
        return kernel_gate.compiled_for("index", self.members.n_rows)

    def _pool_ranks(self, stratum, ranks):
        """Pooled/recycled strata: rank ``r`` is pool rank ``r % pool`` of pass ``r // pool``.

        Pass 0 is the pool in the stratum's shuffled order (its first ``pool``
        ranks); pass ``p >= 1`` reorders the pool by its own keyed bijection
        on ``[0, pool)``, stream number ``turn + S * p`` (what the materialised
        plan draws as extra permutations).
        """
        pool = self._pools[stratum]
        passes = ranks // pool
        within = ranks - passes * pool
        again = np.flatnonzero(passes > 0)
        if again.shape[0] == 0:
            return within
        n_strata = self.members.n_strata
        turn = self._turn_of_stratum[stratum]
        streams = (turn if np.ndim(turn) == 0 else turn[again]) + n_strata * passes[again]
        for stream in np.unique(streams).tolist():
            where = again[streams == stream]
            keys = self._pass_keys.get(stream)
            if keys is None:
                keys = self._pass_keys[stream] = self.stream.keys(self.epoch, [stream])[:, 0]
            size = int(pool if np.ndim(pool) == 0 else pool[where[0]])
            within[where] = permute_ranks(within[where], size, keys)
        return within

    def batch_weights(self, batch: int) -> np.ndarray:
        """The importance weights of batch ``batch``'s rows (ones when the policy has none)."""
        batch = range(self.num_batches)[batch]
        if self._slots is not None:
            return np.ones(self._slots.per_batch * self._slots.width, dtype=np.float64)
        lo, hi = self.cuts([batch])
        counts = (hi - lo)[0, self.turn_order]
        if self.row_weights is None:
            return np.ones(int(counts.sum()), dtype=np.float64)
        return self._weights_of(counts[None, :])

    def _weights_of(self, counts):
        """Row weights of batches with ``counts`` (batches x S, turn order), in output order."""
        in_turn = self.row_weights[self.turn_order]
        if self.split_safe:
            bounds = np.zeros(counts.shape[0] + 1, dtype=np.int64)
            np.cumsum(counts.sum(axis=1), out=bounds[1:])
            return in_turn[BatchPatterns(counts.T).stratum_at(bounds)]
        return np.repeat(np.tile(in_turn, counts.shape[0]), counts.ravel())

    def _rows_of_stratum(self, stratum: int, ranks):
        if self._pools is not None:
            ranks = self._pool_ranks(stratum, ranks)
        n = int(self.members.sizes[stratum])
        if self._shard_order is not None:
            positions = self._shard_order.positions(stratum, ranks)
        elif n <= SMALL_DOMAIN:
            table, offsets = self._small
            positions = table[offsets[stratum] + ranks]
        else:
            positions = permute_ranks(ranks, n, self.keys[:, stratum])
        members = self.members
        if members.rows is None:
            positions += members.starts[stratum]
            return positions
        positions += members.offsets[stratum]
        return members.rows[positions]

    def _positions(self, stratum, ranks):
        """Member numbers of ``ranks`` of ``stratum`` (arrays shaped alike)."""
        if self._pools is not None:
            ranks = self._pool_ranks(stratum, ranks)
        if self._shard_order is not None:
            return self._shard_order.positions(stratum, ranks)
        sizes = self.members.sizes
        positions = np.empty(ranks.shape[0], dtype=np.int64)
        n = sizes[stratum]
        small = n <= SMALL_DOMAIN
        table, offsets = self._small
        where = np.flatnonzero(small)
        positions[where] = table[offsets[stratum[where]] + ranks[where]]
        big = np.flatnonzero(~small)
        positions[big] = permute_ranks(ranks[big], n[big], self.keys[:, stratum[big]])
        return positions

    def __iter__(self):
        return self.iter_batches(range(self.num_batches))

    def iter_batches(self, batch_ids):
        """Yield the given batches in order, computed a block at a time."""
        batch_ids = np.asarray(batch_ids, dtype=np.int64)
        if batch_ids.shape[0] == 0:
            return
        mean_rows = max(1, self.members.n_rows // max(1, self.num_batches))
        step = max(1, _BLOCK_ROWS // mean_rows)
        for start in range(0, batch_ids.shape[0], step):
            order, bounds = self.batches_of(batch_ids[start:start + step])
            edges = bounds.tolist()
            for a, b in zip(edges[:-1], edges[1:]):
                yield order[a:b]

    def materialise(self):
        """The whole epoch as a :class:`pystratum.BatchPlan` (the same batches)."""

        if self._slots is not None:
            every = np.arange(self.num_batches, dtype=np.int64)
            order, bounds = self._slots.batches_of(every)
            return BatchPlan(order=order, bounds=bounds, strata=self.members.labels, cuts=None,
                             seed=self.seed, rng="index", epoch=self.epoch, shuffle=True,
                             policy=self.policy, batch_strata=self._slots.batch_strata(every))
        # The cuts once: they give the batches and the counts alike.
        lo, hi = self.cuts(np.arange(self.num_batches))
        order, bounds = self._batches_of_cuts(lo, hi)
        weights = None
        if self.row_weights is not None:
            weights = self._weights_of((hi - lo)[:, self.turn_order])
        cuts = np.concatenate([lo, hi[-1:]]).T  # (S, B + 1): its differences are hi - lo
        return BatchPlan(order=order, bounds=bounds, strata=self.members.labels,
                         cuts=cuts, seed=self.seed, rng="index", epoch=self.epoch,
                         shuffle=True, policy=self.policy, weights=weights)

    def __repr__(self) -> str:
        return (f"LazyPlan(num_batches={self.num_batches}, n_rows={self.members.n_rows}, "
                f"n_strata={self.members.n_strata}, policy={self.policy!r}, rng='index', "
                f"seed={self.seed!r}, epoch={self.epoch})")


def lazy_plan(strata, policy=None, *, seed=None, epoch=0, min_samples_per_stratum=None,
              members_directory=None, allow_single_batch=False, shards=None,
              window=1) -> LazyPlan:
    """The ``rng="index"`` plan of one epoch, batches computed on demand.

    strata:  anything :func:`pystratum.stratified_batches` accepts, or a
             :class:`~pystratum.strata._members.StratumMembers` (e.g. from
             :func:`pystratum.parquet_strata`, or rows grouped by stratum).
    policy:  as in :func:`pystratum.stratified_batches`.
    seed:    a whole number in ``[0, 2**52)``; None draws one (``plan.seed``).
    members_directory: write the member array there as ``rows.npy`` and map it
             read-only (shared by DataLoader workers and local ranks).
    allow_single_batch: as in :func:`pystratum.stratified_batches` (a plan
             of one batch is a ValueError unless True).
    shards, window: the shard-blocked order (docs/SHARDS.md, "Lazy plans"):
             a shard id per row or :func:`pystratum.shard_sizes`; policies
             that pool or recycle strata and ClassesPerBatch are refused.

    Guarantees: those of the policy, as for :func:`stratified_batches`;
    ``plan[b]`` costs O(|batch| + S); the same arguments give the same
    batches in R (``stratified_batches(..., rng = "index")``, plus one).
    """

    policy = resolve_policy(policy, min_samples_per_stratum)
    epoch = check_epoch(epoch)
    allow_single_batch = check_bool(allow_single_batch, "allow_single_batch")
    stream = IndexStream(seed)
    if isinstance(strata, StratumMembers):
        members = strata
    elif (members := members_of_labels(strata, directory=members_directory)) is not None:
        check_strata_are_groups(members)
    else:
        encoded = encode_strata(strata)
        check_strata_are_groups(encoded)
        members = members_of_codes(encoded.codes, encoded.sizes, encoded.labels,
                                   directory=members_directory)
    sharded = None
    window = check_window(window)
    if shards is not None:
        if policy.allocates_slots:
            raise ValueError(
                "shards cannot be honoured with rng='index' by ClassesPerBatch, got shards=: "
                "its keyed refills and layout have no shard-blocked form. Use "
                "plan_batches(..., rng='numpy') with shards, or leave shards=None.")
        sharded = (ShardMembers.of(members, read_shards(shards, members.n_rows)), window)
    elif window != 1:
        raise ValueError(f"window={window} has no effect without shards (the window counts "
                         f"shards per block). Pass shards=, or leave window=1.")
    with quiet_if_refused(allow_single_batch):
        plan = LazyPlan(members, policy, stream, epoch, shards=sharded)
    check_several_batches(members, policy, plan.num_batches, allow_single_batch)
    return plan


def _default_batch_cuts():

    return Policy.batch_cuts


def _segments(first_rank, length, out_start):
    """Ranks and output places of segments (first rank, length, first place), concatenated."""
    total = int(length.sum())
    seg_of = np.repeat(np.arange(length.shape[0]), length)
    seg_start = np.cumsum(length) - length
    index = np.arange(total, dtype=np.int64)
    ranks = index + (first_rank - seg_start)[seg_of]
    index += (out_start - seg_start)[seg_of]
    return ranks, index


def _small_domain_table(sizes, keys):
    """Whole permutations of the small strata (n <= SMALL_DOMAIN), once per epoch.

    ``table[offsets[s] + r]`` is stratum ``s``'s member number of rank ``r``;
    at most ``SMALL_DOMAIN`` entries per stratum. Each stratum's ``n``
    candidates are encrypted and ranked once (:func:`small_domain_tables`):
    O(sum of small sizes) memory, not the O(sum n_s^2) of ranking every
    candidate again for every rank. On numpy's path (``work=0``): the
    set-up, and so the first batch, never waits for numba's import.
    """
    small = np.flatnonzero(sizes <= SMALL_DOMAIN)
    offsets = np.zeros(sizes.shape[0], dtype=np.int64)
    table, offsets[small] = small_domain_tables(np.asarray(sizes)[small],
                                                np.asarray(keys)[:, small], work=0)
    return table, offsets
