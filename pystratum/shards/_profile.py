"""What a plan costs a reader: shard loads per epoch for every LRU cache size, in one pass.

A reader with an LRU cache of ``C`` decoded shards (:class:`~pystratum.shards.ShardCache`)
loads a shard whenever a batch asks for one it does not hold. An LRU cache of ``C`` hits
exactly the re-accesses whose *stack distance* (distinct other shards asked for since the
shard's last access) is below ``C`` (Mattson et al., 1970), so one pass over a plan's
accesses gives the loads for every cache size at once.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .. import kernels as kernel_gate
from ..base._validation import check_bool, check_int, show
from ..kernels import _stack_distance as plain_loops
from ._retain import RunNeeds, default_retain_rows, simulate_retention

__all__ = ["RetentionProfile", "ShardLoadProfile", "shard_load_profile",
           "shard_retention_profile"]


@dataclass(frozen=True)
class ShardLoadProfile:
    """Shard loads of one epoch's batches, read in order through an LRU cache.

    ``first_reads``: distinct shards the epoch reads (a cache of any size loads each once);
    ``one_pass_cache``: the smallest cache (in shards) that loads every shard at most once;
    ``shards_per_batch``: (mean, max) distinct shards a batch reads.
    """

    first_reads: int
    one_pass_cache: int
    shards_per_batch: tuple
    num_batches: int
    _far: np.ndarray  # _far[c]: re-accesses at stack distance >= c

    def loads(self, cache_shards: int) -> int:
        """Shard loads per epoch with an LRU cache of ``cache_shards`` shards (at least 1)."""
        if isinstance(cache_shards, bool) or not isinstance(cache_shards, (int, np.integer)) \
                or cache_shards < 1:
            raise ValueError(f"cache_shards must be a whole number >= 1, got "
                             f"cache_shards={cache_shards!r}. Pass the number of decoded shards "
                             f"the cache holds.")
        return self.first_reads + int(self._far[min(int(cache_shards), self._far.shape[0] - 1)])


def _order_and_bounds(plan) -> tuple:
    """``plan``'s rows in serving order and its batch bounds: a ``BatchPlan`` (``order``,
    ``bounds``) or a sequence of batches (lists of row positions), as ``ShardedBatches`` takes."""
    if hasattr(plan, "order") and hasattr(plan, "bounds"):
        return np.asarray(plan.order, dtype=np.int64), np.asarray(plan.bounds, dtype=np.int64)
    try:
        batches = [np.asarray(batch) for batch in plan]
    except TypeError:
        raise TypeError(f"plan must be a BatchPlan or a list of batches (lists of row "
                        f"positions), got {show(plan)} of type {type(plan).__name__}.") from None
    for b, batch in enumerate(batches):
        if batch.ndim != 1 or (batch.size and batch.dtype.kind not in "iu"):
            raise TypeError(f"plan must be a BatchPlan or a list of batches (1-D lists of integer "
                            f"row positions), got batch {b} of shape {batch.shape} and dtype "
                            f"{batch.dtype}.")
    sizes = [batch.shape[0] for batch in batches]
    order = np.concatenate(batches).astype(np.int64) if batches else np.zeros(0, np.int64)
    return order, np.concatenate([[0], np.cumsum(sizes, dtype=np.int64)]).astype(np.int64)


def _renumbered(shard_of_row: np.ndarray) -> np.ndarray:
    """Each shard id replaced by its rank among the distinct ids (int64), as
    ``np.unique(..., return_inverse=True)`` gives it: by a lookup table when the ids are below
    twice the row count (one pass instead of a sort of every row), else by ``np.unique``."""
    if shard_of_row.size and int(shard_of_row.max()) < 2 * shard_of_row.shape[0]:
        present = np.zeros(int(shard_of_row.max()) + 1, dtype=np.int64)
        present[shard_of_row] = 1
        return (np.cumsum(present) - 1)[shard_of_row]
    return np.unique(shard_of_row.astype(np.int64), return_inverse=True)[1] \
        .reshape(-1).astype(np.int64)


def _sorted_distinct(keys: np.ndarray) -> np.ndarray:
    """``np.unique(keys)`` by a sort and a mask: numpy 2.4's ``unique`` of int64 keys takes ~50x
    longer (12 s against 0.2 s for 10**7 keys), which dominated the replay of a 10**8-row plan."""
    keys.sort()  # in place (the caller's array is a temporary): no second copy of 10**8 keys
    keep = np.ones(keys.shape[0], dtype=bool)
    np.not_equal(keys[1:], keys[:-1], out=keep[1:])
    return keys[keep]


def _checked_shards(order: np.ndarray, shard_of_row) -> np.ndarray:
    """``shard_of_row`` checked against the plan's rows, its shards renumbered ``0..H-1``."""
    shard_of_row = np.asarray(shard_of_row)
    if shard_of_row.ndim != 1 or not np.issubdtype(shard_of_row.dtype, np.integer):
        raise TypeError(f"shard_of_row must be a 1-D integer array (a shard index per row), got "
                        f"an array of dtype {shard_of_row.dtype} and shape {shard_of_row.shape}.")
    if shard_of_row.dtype.kind == "u" and shard_of_row.size and \
            int(shard_of_row.max()) > np.iinfo(np.int64).max:
        raise ValueError(f"shard_of_row must hold shard indices below 2**63, got "
                         f"{int(shard_of_row.max())}.")
    if order.size and order.min() < 0:
        raise ValueError(f"plan must hold row positions >= 0, got row {int(order.min())}: "
                         f"pass the plan's 0-based row positions.")
    if order.size and order.max() >= shard_of_row.shape[0]:
        raise ValueError(f"shard_of_row must hold a shard for every row the plan serves, got "
                         f"{shard_of_row.shape[0]} entries for rows up to {int(order.max())}.")
    if shard_of_row.size and shard_of_row.min() < 0:
        raise ValueError("shard_of_row must hold shard indices >= 0, got "
                         f"{int(shard_of_row.min())}.")
    # Shards renumbered 0..H-1 in their own order: loads do not depend on the ids, and sparse
    # or huge ids (file hashes, 10**17) then cost neither memory nor overflowing keys.
    return _renumbered(shard_of_row)


def shard_load_profile(plan, shard_of_row, *, kept_rows: bool = True) -> ShardLoadProfile:
    """The :class:`ShardLoadProfile` of ``plan``'s batches (a ``BatchPlan`` or a list of batches).

    ``shard_of_row``: the shard index (``0..H-1``) of every row. ``kept_rows=True`` counts a
    row served again in the same epoch (a stratum a policy recycles) as no read, as
    :class:`~pystratum.shards.BatchServer` keeps such rows after their first read.
    Guarantee: ``loads(C)`` equals what an LRU cache of ``C`` shards loads serving the batches
    in order, each batch's shards asked for in ascending order (the tests replay the cache).
    """
    kept_rows = check_bool(kept_rows, "kept_rows")
    order, bounds = _order_and_bounds(plan)
    shard_of_row = _checked_shards(order, shard_of_row)
    n_shards = int(shard_of_row.max()) + 1 if shard_of_row.size else 1
    kernels = kernel_gate.compiled_for("shards", order.shape[0])
    if kept_rows:
        first = (kernels or plain_loops).first_servings(order, shard_of_row.shape[0])
    else:
        first = np.ones(order.shape[0], dtype=bool)
    # keys = batch * n_shards + shard, built in place: a plan of 10**8 rows makes each of these
    # arrays 0.8 GB, and temporaries of each step would double the replay's memory
    keys = np.repeat(np.arange(bounds.shape[0] - 1, dtype=np.int64), np.diff(bounds))[first]
    keys *= n_shards
    keys += shard_of_row[order[first]]
    keys = _sorted_distinct(keys)
    batch_of, shards = keys // n_shards, keys % n_shards
    first_reads, hist = (kernels or plain_loops).reuse_histogram(shards, n_shards)
    far = np.concatenate([np.cumsum(hist[::-1])[::-1], [0]])
    reused = np.flatnonzero(hist)
    per_batch = np.bincount(batch_of, minlength=bounds.shape[0] - 1)
    return ShardLoadProfile(
        first_reads=int(first_reads),
        one_pass_cache=int(reused.max()) + 1 if reused.size else 1,
        shards_per_batch=(float(per_batch.mean()) if per_batch.size else 0.0,
                          int(per_batch.max()) if per_batch.size else 0),
        num_batches=int(bounds.shape[0] - 1), _far=far)


@dataclass(frozen=True)
class RetentionProfile:
    """What :class:`~pystratum.shards.BatchServer` does serving a plan's batches as one planned run
    (:meth:`~pystratum.shards.BatchServer.plan_run`) from a cold start.

    ``loads``: shard loads; ``peak_kept_rows``: the most rows held aside at once (recycled
    rows and rows evicted shards still owe); ``retain_refused``: evictions whose rows did not
    fit ``retain_rows`` (0 means every shard is loaded at most once); ``loads_per_shard``,
    its largest value ``max_loads_per_shard`` and ``first_reads`` (the shards loaded at all);
    ``num_batches``; ``cache_shards`` and ``retain_rows``, the settings simulated.
    """

    loads: int
    peak_kept_rows: int
    retain_refused: int
    max_loads_per_shard: int
    first_reads: int
    num_batches: int
    cache_shards: int
    retain_rows: int
    loads_per_shard: np.ndarray


def shard_retention_profile(plan, shard_of_row, *, cache_shards: int,
                            retain_rows: int | None = None) -> RetentionProfile:
    """The :class:`RetentionProfile` of ``plan``'s batches (a ``BatchPlan`` or a list of batches)
    through a server with an LRU cache of ``cache_shards`` shards and plan-aware retention
    within ``retain_rows`` rows (default: ``cache_shards`` times the largest shard, the
    server's default).

    ``shard_of_row``: the shard (``0..H-1``, or any ids, ranked) of every row; the rows are
    identified by their positions. Guarantee: the loads, the peak of rows held aside and the
    refused evictions are exactly those of a ``BatchServer(reader, cache_shards=...,
    retain_rows=...)`` over the same shards after ``plan_run(batches)``, serving the batches
    in order (the tests compare both). A replay per (batch, shard) access, vectorised per row.
    """
    cache_shards = check_int(cache_shards, "cache_shards", minimum=1)
    order, bounds = _order_and_bounds(plan)
    shard_of_row = _checked_shards(order, shard_of_row)
    n_shards = int(shard_of_row.max()) + 1 if shard_of_row.size else 1
    if retain_rows is None:
        retain_rows = default_retain_rows(np.bincount(shard_of_row, minlength=1), cache_shards)
    else:
        retain_rows = check_int(retain_rows, "retain_rows", minimum=0)
    needs = RunNeeds(np.diff(bounds), order, shard_of_row[order], order, n_shards)
    run = simulate_retention(needs, cache_shards, retain_rows)
    loads_per_shard = run["loads_per_shard"]
    return RetentionProfile(
        loads=int(run["loads"]), peak_kept_rows=int(run["peak_kept_rows"]),
        retain_refused=int(run["refused"]),
        max_loads_per_shard=int(loads_per_shard.max()) if loads_per_shard.size else 0,
        first_reads=int(np.count_nonzero(loads_per_shard)), num_batches=int(bounds.shape[0] - 1),
        cache_shards=cache_shards, retain_rows=retain_rows, loads_per_shard=loads_per_shard)
