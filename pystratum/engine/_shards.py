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
        """``rows`` stably sorted by the block of their shard (a row sequence)."""
        if self.n_blocks <= 1:
            return rows
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
