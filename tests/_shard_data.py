"""Shared data for the shard reader tests: labels stored shard after shard, readers, plans."""

from __future__ import annotations

import numpy as np

from pystratum import plan_batches


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


def shard_blocked_plans(labels, policy, sizes, *, window: int, seed: int = 0):
    """epoch -> batches, each stratum's rows ordered by a per-epoch block of ``window`` shards.

    The order docs/SHARDS.md specifies, built here from the core's
    ``shuffle=False`` plan over rows pre-ordered by (block, random key), so
    the readers are tested independently of the engine's own ``shards=``.
    """
    labels = np.asarray(labels)
    sizes = np.asarray(sizes, dtype=np.int64)
    shard_of_row = np.repeat(np.arange(sizes.shape[0]), sizes)

    def plans(epoch):
        rng = np.random.default_rng([seed, epoch])
        block = np.empty(sizes.shape[0], dtype=np.int64)
        block[rng.permutation(sizes.shape[0])] = np.arange(sizes.shape[0]) // window
        sequence = np.lexsort((rng.random(labels.shape[0]), block[shard_of_row]))
        plan = plan_batches(labels[sequence], policy, shuffle=False, allow_single_batch=True)
        return [sequence[batch] for batch in plan.batches]

    return plans
