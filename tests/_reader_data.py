"""Shared data for the shard reader tests: labels stored shard after shard, readers, plans."""

from __future__ import annotations

import numpy as np

from pystratum import plan_batches


def labels_10_percent(n_rows: int = 4000) -> np.ndarray:
    """0/1 labels, about one in ten a 1 (fixed seed): the loader tests' stored data."""
    return (np.random.default_rng(5).random(n_rows) < 0.1).astype(np.int64)


def interleave(runs):
    """The order DataLoader yields its workers' items: one from each in turn, while they last."""
    out = []
    for j in range(max(len(r) for r in runs)):
        out.extend(r[j] for r in runs if j < len(r))
    return out


def head_rows(batches, stop: int) -> list:
    """The row positions (as lists) of the first ``stop`` items ``(rows, batch)`` of
    ``batches``; the iteration is left there, so a state saved now resumes after them."""
    head = []
    for rows, _ in batches:
        head.append(rows.tolist())
        if len(head) == stop:
            break
    return head


class ArrayShards:
    """A ShardReader over a numpy array cut into shards of ``sizes`` rows (rows = positions)."""

    def __init__(self, sizes, values=None):
        self.shard_sizes = np.asarray(sizes, dtype=np.int64)
        n = int(self.shard_sizes.sum())
        self.values = np.arange(n, dtype=np.int64) if values is None else np.asarray(values)
        self.starts = np.cumsum(self.shard_sizes) - self.shard_sizes
        self.calls = []

    def load(self, shard):
        self.calls.append(int(shard))
        start = int(self.starts[shard])
        return self.values[start:start + int(self.shard_sizes[shard])]


class shard_blocked_plans:
    """epoch -> batches, each stratum's rows ordered by a per-epoch block of ``window`` shards.

    The order docs/SHARDS.md specifies, built here from the core's
    ``shuffle=False`` plan over rows pre-ordered by (block, random key), so
    the readers are tested independently of the engine's own ``shards=``.
    A class, not a closure, so DataLoader workers can receive it pickled.
    """

    def __init__(self, labels, policy, sizes, *, window: int, seed: int = 0):
        self.labels = np.asarray(labels)
        self.policy = policy
        self.sizes = np.asarray(sizes, dtype=np.int64)
        self.window = window
        self.seed = seed
        self.shard_of_row = np.repeat(np.arange(self.sizes.shape[0]), self.sizes)

    def __call__(self, epoch):
        shards = self.sizes.shape[0]
        rng = np.random.default_rng([self.seed, epoch])
        block = np.empty(shards, dtype=np.int64)
        block[rng.permutation(shards)] = np.arange(shards) // self.window
        sequence = np.lexsort((rng.random(self.labels.shape[0]), block[self.shard_of_row]))
        plan = plan_batches(self.labels[sequence], self.policy, shuffle=False,
                            allow_single_batch=True)
        return [sequence[batch] for batch in plan.batches]


def serve_epochs_each_shard_read_once(served, epochs: int = 2) -> None:
    """Serves ``epochs`` epochs of ``served`` (a ``ShardedBatches`` over :class:`ArrayShards`, whose
    values are the rows' positions): every batch's values are its rows, and each epoch loads
    every shard at most once (a shard still cached from the last epoch may not be read again)."""
    for epoch in range(epochs):
        served.set_epoch(epoch)
        before = served.server.cache.loads_per_shard.copy()
        for rows, values in served.run():
            assert values.tolist() == rows.tolist()
        assert (served.server.cache.loads_per_shard - before).max() == 1
