"""The shard-blocked order (docs/SHARDS.md): the shard draw, the blocks, the stable sort.

An epoch with ``shards=`` draws one more thing first, a permutation of the
H shards (:class:`ShardFirstStream` puts it in front of the policy's group
of draws, so sequential streams replay it when they skip epochs). Shard
``perm[j]`` gets block ``j // W``; every row sequence the policy draws is
then stably sorted by the block of each row's shard (:class:`ShardBlocks`).
The policy's cuts are applied afterwards, unchanged.
"""

from __future__ import annotations

import numpy as np

from .. import kernels as kernel_gate
from ..streams._base import _draw

__all__ = ["ShardFirstStream", "ShardBlocks", "shard_first", "stable_argsort_small",
           "with_shard_draw"]


def _smallest_unsigned(count: int):
    for dtype in (np.uint8, np.uint16, np.uint32):
        if count <= np.iinfo(dtype).max + 1:
            return dtype
    return np.uint64


def stable_argsort_small(keys: np.ndarray) -> np.ndarray:
    """Stable argsort of unsigned keys in O(len): numpy's radix sort, 16 bits a pass.

    numpy sorts 8- and 16-bit integers stably by radix (``kind="stable"``);
    wider keys take one such pass per 16 bits, low half first (LSD).
    """
    if keys.dtype.itemsize <= 2:
        return np.argsort(keys, kind="stable")
    wide = keys.astype(np.uint64, copy=False)
    order = np.argsort((wide & 0xFFFF).astype(np.uint16), kind="stable")
    shift = 16
    while shift < 8 * keys.dtype.itemsize and (wide >> shift).any():
        part = ((wide[order] >> shift) & 0xFFFF).astype(np.uint16)
        order = order[np.argsort(part, kind="stable")]
        shift += 16
    return order


def with_shard_draw(n_shards: int, draws_of, n_rows: int):
    """``draws_of`` with the shard permutation ``(H, H)`` put first in every epoch's group."""
    def group(epoch):
        rest = [(n_rows, n_rows)] if draws_of is None else list(draws_of(epoch))
        return [(n_shards, n_shards)] + rest
    return group


class ShardFirstStream:
    """A stream whose every epoch draws the shard permutation first, then what it is asked.

    Wraps an :class:`~pystratum.streams._base.EpochStream` for one epoch's
    draws: ``epoch_draws``, ``epoch_orders`` and ``compact_permutation``
    ask the wrapped stream for the group ``[(H, H)] + draws`` and keep the
    first draw as :attr:`shard_permutation`. ``draws_of`` (skipped epochs,
    sequential streams) gets the shard draw put first as well.
    """

    def __init__(self, stream, n_shards: int):
        self.stream = stream
        self.n_shards = n_shards
        self.shard_permutation = None

    @property
    def name(self):
        return self.stream.name

    @property
    def seed(self):
        return self.stream.seed

    def _keep(self, drawn) -> list:
        self.shard_permutation = np.asarray(drawn[0], dtype=np.int64)
        return list(drawn[1:])

    def epoch_draws(self, n: int, draws, epoch: int, draws_of=None) -> list:
        group = [(self.n_shards, self.n_shards)] + list(draws)
        return self._keep(self.stream.epoch_draws(
            n, group, epoch, with_shard_draw(self.n_shards, draws_of, n)))

    def epoch_orders(self, n: int, draws, epoch: int, sources, draws_of=None) -> list:
        group = [(self.n_shards, self.n_shards)] + list(draws)
        return self._keep(self.stream.epoch_orders(
            n, group, epoch, [None] + list(sources), with_shard_draw(self.n_shards, draws_of, n)))

    def compact_permutation(self, n: int, epoch: int) -> np.ndarray:
        """The epoch's permutation of the rows, drawn after the shard permutation."""
        return self.epoch_draws(n, [(n, n)], epoch, lambda k: [(n, n)])[0]


class _NumpyShardFirstStream(ShardFirstStream):
    """The numpy stream's wrapper: also hands out the epoch's generator after the shard draw
    (the slot policies' numpy path draws from it directly)."""

    def generator_for_epoch(self, epoch: int):
        generator = self.stream.generator_for_epoch(epoch)
        self.shard_permutation = np.asarray(_draw(generator, self.n_shards, self.n_shards),
                                            dtype=np.int64)
        return generator


def shard_first(stream, n_shards: int):
    """The wrapper of ``stream`` for an epoch with shards (None: no shuffle, stays None)."""
    if stream is None:
        return None
    if hasattr(stream, "generator_for_epoch"):
        return _NumpyShardFirstStream(stream, n_shards)
    return ShardFirstStream(stream, n_shards)


class ShardBlocks:
    """One epoch's blocks: ``block[perm[j]] = j // W``, and the stable sort by them.

    ``permutation`` None (no shuffle) means the identity shard order.
    """

    def __init__(self, row_shards: np.ndarray, n_shards: int, window: int, permutation=None):
        self.row_shards = row_shards
        self.n_shards = n_shards
        window = min(int(window), max(n_shards, 1))  # j // W is 0 for every j once W >= H
        n_blocks = -(-n_shards // window) if n_shards else 0
        self.n_blocks = n_blocks
        place = np.arange(n_shards, dtype=np.int64) // window
        block = np.empty(n_shards, dtype=_smallest_unsigned(max(n_blocks, 1)))
        if permutation is None:
            block[:] = place
        else:
            block[np.asarray(permutation, dtype=np.int64)] = place
        self.block = block

    def row_blocks(self, rows: np.ndarray) -> np.ndarray:
        """The block of each row's shard."""
        return self.block[self.row_shards[rows]]

    def order(self, rows: np.ndarray) -> np.ndarray:
        """``rows`` stably sorted by the block of their shard (a row sequence).

        From ``kernels.MIN_ROWS`` rows with numba (the ``fast`` extra): a
        compiled counting sort (``pystratum.kernels._shards``), the same order.
        """
        if self.n_blocks <= 1:
            return rows
        kernels = kernel_gate.compiled_for("shards", rows.shape[0]) if rows.ndim == 1 else None
        if kernels is not None:
            out = np.empty_like(rows)
            kernels.sort_by_block(np.ascontiguousarray(rows), self.row_shards, self.block,
                                  self.n_blocks, out)
            return out
        return rows[stable_argsort_small(self.row_blocks(rows))]

    def order_indices(self, indices: np.ndarray, pool: np.ndarray) -> np.ndarray:
        """``indices`` into ``pool``, stably sorted by the block of the pool row each points to."""
        if self.n_blocks <= 1:
            return indices
        return indices[stable_argsort_small(self.row_blocks(pool[indices]))]

    def order_runs(self, values: np.ndarray, rows: np.ndarray, takes: np.ndarray) -> np.ndarray:
        """``values`` (runs of ``takes`` entries) sorted stably within each run by the block
        of ``rows`` (one row per value)."""
        if self.n_blocks <= 1 or values.shape[0] == 0:
            return values
        run = np.repeat(np.arange(takes.shape[0], dtype=np.int64), takes)
        key = run * self.n_blocks + self.row_blocks(rows).astype(np.int64)
        return values[np.argsort(key, kind="stable")]


def redeal_slots(order: np.ndarray, batch_strata: np.ndarray, columns: np.ndarray,
                 width: int) -> np.ndarray:
    """ClassesPerBatch with shards: each stratum's K-row slots dealt in serving order.

    Without shards slot ``j`` of stratum ``s`` (its ``j``-th K ranks) sits at
    slot position ``q = run_start[s] + j`` and goes to batch ``(q mod B) * g
    mod B``, which scatters a stratum's ranks over the epoch. With shards the
    same chunks of K ranks go to the same slots of ``s`` (so ``batch_strata``
    and every count are unchanged) but chunk ``i`` fills the ``i``-th slot of
    ``s`` in serving order (batch, then place): the batches sweep each
    stratum's block-sorted sequence forward. ``order``: the plan's flat
    order, ``(B * P * K,)``; ``columns``: batch ``b`` holds slot positions
    ``p * B + columns[b]``.
    """
    n_batches, per_batch = batch_strata.shape
    if n_batches == 0 or per_batch == 0:
        return order
    blocks = order.reshape(n_batches * per_batch, width)
    flat = np.arange(n_batches * per_batch, dtype=np.int64)
    batch, place = np.divmod(flat, per_batch)
    position = place * n_batches + np.asarray(columns, dtype=np.int64)[batch]
    # Slots in sequence order: ascending slot position (strata in layout order, j ascending).
    by_position = np.empty_like(flat)
    by_position[position] = flat
    strata = batch_strata.reshape(-1)
    first_position = np.full(int(strata.max()) + 1, np.iinfo(np.int64).max, dtype=np.int64)
    np.minimum.at(first_position, strata, position)
    # Slots in serving order, strata in the same (layout) order: stable by the stratum's start.
    by_serving = np.argsort(first_position[strata], kind="stable")
    dealt = np.empty_like(blocks)
    dealt[by_serving] = blocks[by_position]
    return dealt.reshape(-1)


def label_signatures(matrix: np.ndarray) -> np.ndarray:
    """An integer per row, equal for rows with the same label set (int64, 0..G-1)."""
    packed = np.packbits(np.asarray(matrix, dtype=bool), axis=1)
    if packed.shape[1] == 0:
        return np.zeros(matrix.shape[0], dtype=np.int64)
    keys = np.ascontiguousarray(packed).view(np.dtype((np.void, packed.shape[1]))).reshape(-1)
    return np.unique(keys, return_inverse=True)[1].reshape(-1).astype(np.int64)


def redeal_labels(batch: np.ndarray, permutation: np.ndarray, signatures: np.ndarray) -> np.ndarray:
    """MultiLabel with shards: rows of one label set dealt to that set's places in batch order.

    ``batch[i]``: the batch of row ``permutation[i]`` after the assignment.
    Rows with the same label set are interchangeable (every label count stays
    the same), so among the rows of one label set, taken in the epoch's
    (block-sorted) order, the ``i``-th gets the ``i``-th smallest of the
    batches that set was given. Returns the new ``batch``.
    """
    group = signatures[permutation]
    by_group = np.argsort(group, kind="stable")                       # (group, position)
    by_group_batch = np.lexsort((batch, group))                       # (group, batch, position)
    dealt = np.empty_like(batch)
    dealt[by_group] = batch[by_group_batch]
    return dealt


# rng="index": stream numbers reserved for shards (docs/SHARDS.md, "Lazy plans"). Other
# keyed streams use the strata's turns and small multiples of S, far below 2**51.
SHARD_ORDER_STREAM = 2**52 - 1
BLOCK_STREAM_BASE = 2**51


class ShardMembers:
    """Every stratum's members grouped by shard, once (``rng="index"`` with shards).

    Only the (stratum, shard) pairs that hold rows are kept, at most N of
    them, so memory is O(N + H) however many strata and shards there are
    (an ``S x H`` table would not fit for thousands of strata over
    thousands of shards). ``by_shard``: the member numbers of every stratum,
    stratum after stratum, ordered by shard (then member number); pair ``i``
    is stratum ``pair_stratum[i]``'s rows of shard ``pair_shard[i]``,
    ``pair_count[i]`` of them from ``by_shard[pair_start[i]]`` on. Pairs are
    in (stratum, shard) order.
    """

    def __init__(self, members, row_shards: np.ndarray, n_shards: int):
        sizes = np.asarray(members.sizes, dtype=np.int64)
        n_strata = sizes.shape[0]
        stratum = np.repeat(np.arange(n_strata, dtype=np.int64), sizes)
        within = np.arange(stratum.shape[0], dtype=np.int64) - np.repeat(np.cumsum(sizes) - sizes,
                                                                          sizes)
        shard = np.asarray(row_shards, dtype=np.int64)[members.member(stratum, within)]
        order = np.argsort(stratum * n_shards + shard, kind="stable")
        self.by_shard = within[order]
        stratum, shard = stratum[order], shard[order]
        starts = np.flatnonzero(np.r_[True, (stratum[1:] != stratum[:-1])
                                      | (shard[1:] != shard[:-1])]) if order.shape[0] else \
            np.empty(0, dtype=np.int64)
        self.pair_start = starts.astype(np.int64)
        self.pair_stratum = stratum[starts]
        self.pair_shard = shard[starts]
        self.pair_count = np.diff(np.r_[starts, order.shape[0]]).astype(np.int64)
        self.n_strata = n_strata
        self.n_shards = n_shards
        # The pairs grouped by shard (stably: strata in order), for the epochs' counting sorts.
        self.pairs_by_shard = stable_argsort_small(
            self.pair_shard.astype(_smallest_unsigned(max(n_shards, 1))))
        self.shard_pairs = np.bincount(self.pair_shard, minlength=n_shards)
        self.pair_stratum_key = self.pair_stratum.astype(_smallest_unsigned(max(n_strata, 1)))

    @classmethod
    def of(cls, members, layout) -> "ShardMembers":
        """From a :class:`~pystratum.strata._shards.ShardLayout` of the members' rows."""
        return cls(members, layout.index, layout.n_shards)


class LazyShardOrder:
    """One epoch's shard-blocked order for ``rng="index"``: stratum ranks -> member numbers.

    The shard at position ``j`` of the epoch is ``perm[j]``, ``perm`` the keyed
    bijection of ``range(H)`` with stream :data:`SHARD_ORDER_STREAM`; block
    ``j // W``. A stratum's rows in *shard order* are its members of shard
    ``perm[0]``, then of ``perm[1]``, ... (each shard's in member order); its
    ranks in block ``j`` are ``D[s, jW] .. D[s, (j+1)W] - 1``, ``D`` the
    running counts in that order. Rank ``r`` in block ``j`` is the shard-order
    row ``D[s, jW] + perm_{s,j}(r - D[s, jW])``, ``perm_{s,j}`` the keyed
    bijection of the block's rows with stream ``BLOCK_STREAM_BASE + t * m + j``
    (``t`` the stratum's turn, ``m`` the number of blocks). ``D`` changes only
    at the shards holding rows of ``s``, so it is kept as the running counts
    of the (stratum, shard) pairs sorted by (stratum, epoch position):
    set-up O(H + P) for P <= N pairs (counting sorts); a rank costs three
    binary searches.
    """

    def __init__(self, shard_members: ShardMembers, window: int, stream, epoch: int,
                 turn_of_stratum: np.ndarray):
        n_shards = shard_members.n_shards
        self.shard_members = shard_members
        self.window = min(int(window), max(n_shards, 1))
        self.n_blocks = -(-n_shards // self.window)
        self.stream = stream
        self.epoch = epoch
        self.turn = np.asarray(turn_of_stratum, dtype=np.int64)
        from ..streams._index import permute_ranks

        keys = stream.keys(epoch, [SHARD_ORDER_STREAM])[:, 0]
        self.shard_at = permute_ranks(np.arange(n_shards, dtype=np.int64), n_shards, keys)
        position_of = np.empty(n_shards, dtype=np.int64)
        position_of[self.shard_at] = np.arange(n_shards, dtype=np.int64)
        members = shard_members
        position = position_of[members.pair_shard]
        # Pairs by stratum, then epoch position (a stratum's rows in shard order), in
        # O(P + H): the pairs of each shard in the epoch's shard order, then a stable radix
        # sort by stratum.
        lengths = members.shard_pairs[self.shard_at]
        starts = (np.cumsum(members.shard_pairs) - members.shard_pairs)[self.shard_at]
        in_order = np.repeat(starts - (np.cumsum(lengths) - lengths), lengths) + \
            np.arange(int(lengths.sum()), dtype=np.int64)
        by_position = members.pairs_by_shard[in_order]
        self.pair = by_position[stable_argsort_small(members.pair_stratum_key[by_position])]
        count = members.pair_count[self.pair]
        self.pair_end = np.cumsum(count)                  # global shard-order index, past the pair
        self.pair_begin = self.pair_end - count
        # (stratum, block) of every pair, non-decreasing: a block's rows are a run of pairs.
        self.pair_block_key = (members.pair_stratum[self.pair] * self.n_blocks
                               + position[self.pair] // self.window)
        sizes = np.bincount(members.pair_stratum, weights=members.pair_count,
                            minlength=members.n_strata).astype(np.int64)
        self.stratum_base = np.cumsum(sizes) - sizes     # global index of a stratum's rank 0

    def positions(self, stratum, ranks) -> np.ndarray:
        """Member numbers of ``ranks`` of ``stratum`` (int arrays shaped alike, or a scalar
        stratum)."""
        from ..streams._index import permute_run_ranks

        ranks = np.asarray(ranks, dtype=np.int64)
        stratum = np.broadcast_to(np.asarray(stratum, dtype=np.int64), ranks.shape)
        if ranks.shape[0] == 0:
            return np.empty(0, dtype=np.int64)
        index = self.stratum_base[stratum] + ranks
        held_by = np.searchsorted(self.pair_end, index, side="right")
        block_key = self.pair_block_key[held_by]
        block = block_key - stratum * self.n_blocks
        first = self.pair_begin[np.searchsorted(self.pair_block_key, block_key, side="left")]
        size = self.pair_end[np.searchsorted(self.pair_block_key, block_key, side="right") - 1] \
            - first
        pair = self.turn[stratum] * self.n_blocks + block
        distinct, run = np.unique(pair, return_inverse=True)
        run = run.reshape(-1)
        run_sizes = np.empty(distinct.shape[0], dtype=np.int64)
        run_sizes[run] = size
        keys = self.stream.keys(self.epoch, BLOCK_STREAM_BASE + distinct)
        order_index = first + permute_run_ranks(index - first, run, run_sizes, keys)
        # The shard-order row -> its pair, then the member within that pair's shard.
        at_pair = np.searchsorted(self.pair_end, order_index, side="right")
        members = self.shard_members
        at = members.pair_start[self.pair[at_pair]] + order_index - self.pair_begin[at_pair]
        return members.by_shard[at]
