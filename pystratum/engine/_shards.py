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

    ``counts[s, h]``: rows of stratum ``s`` in shard ``h``; ``by_shard``: the
    member numbers of every stratum, stratum after stratum, ordered by shard
    (then member number); ``starts[s, h]``: where shard ``h``'s members of
    ``s`` start in it. O(N) memory plus two ``S x H`` tables.
    """

    def __init__(self, members, row_shards: np.ndarray, n_shards: int):
        sizes = np.asarray(members.sizes, dtype=np.int64)
        n_strata = sizes.shape[0]
        stratum = np.repeat(np.arange(n_strata, dtype=np.int64), sizes)
        within = np.arange(stratum.shape[0], dtype=np.int64) - np.repeat(np.cumsum(sizes) - sizes,
                                                                          sizes)
        shard = np.asarray(row_shards, dtype=np.int64)[members.member(stratum, within)]
        key = stratum * n_shards + shard
        order = np.argsort(key, kind="stable")
        self.by_shard = within[order]
        self.counts = np.bincount(key, minlength=n_strata * n_shards).reshape(n_strata, n_shards)
        starts = np.zeros(n_strata * n_shards + 1, dtype=np.int64)
        np.cumsum(self.counts.reshape(-1), out=starts[1:])
        self.starts = starts[:-1].reshape(n_strata, n_shards)
        self.n_shards = n_shards

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
    (``t`` the stratum's turn, ``m`` the number of blocks). Set-up: the
    ``S x (H + 1)`` table ``D`` (O(S * H)); a rank costs two binary searches.
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
        counts = shard_members.counts[:, self.shard_at]          # (S, H), epoch order
        self.running = np.zeros((counts.shape[0], n_shards + 1), dtype=np.int64)
        np.cumsum(counts, axis=1, out=self.running[:, 1:])
        edges = np.minimum(np.arange(self.n_blocks + 1, dtype=np.int64) * self.window, n_shards)
        self.block_edges = self.running[:, edges]               # (S, m + 1)

    def positions(self, stratum, ranks) -> np.ndarray:
        """Member numbers of ``ranks`` of ``stratum`` (int arrays shaped alike, or a scalar
        stratum)."""
        from ..streams._index import permute_run_ranks

        ranks = np.asarray(ranks, dtype=np.int64)
        stratum = np.broadcast_to(np.asarray(stratum, dtype=np.int64), ranks.shape)
        if ranks.shape[0] == 0:
            return np.empty(0, dtype=np.int64)
        edges = self.block_edges
        # The block of each rank: the last block edge <= rank, per stratum.
        block = np.empty(ranks.shape[0], dtype=np.int64)
        for s in np.unique(stratum).tolist():
            where = np.flatnonzero(stratum == s)
            block[where] = np.searchsorted(edges[s], ranks[where], side="right") - 1
        first = edges[stratum, block]
        size = edges[stratum, block + 1] - first
        pair = self.turn[stratum] * self.n_blocks + block
        distinct, run = np.unique(pair, return_inverse=True)
        run = run.reshape(-1)
        run_sizes = np.empty(distinct.shape[0], dtype=np.int64)
        run_sizes[run] = size
        keys = self.stream.keys(self.epoch, BLOCK_STREAM_BASE + distinct)
        order_index = first + permute_run_ranks(ranks - first, run, run_sizes, keys)
        # The shard-order row -> its shard position q, then the member within that shard.
        position = np.empty(ranks.shape[0], dtype=np.int64)
        for s in np.unique(stratum).tolist():
            where = np.flatnonzero(stratum == s)
            position[where] = np.searchsorted(self.running[s], order_index[where],
                                              side="right") - 1
        shard = self.shard_at[position]
        members = self.shard_members
        at = members.starts[stratum, shard] + order_index - self.running[stratum, position]
        return members.by_shard[at]
