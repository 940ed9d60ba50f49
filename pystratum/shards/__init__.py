"""Stratified batches served from sharded storage (numpy and pyarrow; no torch).

Data read whole shard by shard (Parquet row groups, WebDataset tar shards,
MDS or litdata chunks) is served batch by batch through a bounded cache of
decoded shards:

* :class:`ShardReader`, the protocol: ``shard_sizes`` and ``load(shard)``;
  :class:`ParquetShards` implements it for Parquet files (row groups as
  shards, column projection, local paths and fsspec URLs).
* :class:`ShardCache`: an LRU cache of decoded shards with counters
  (:class:`CacheStats`: loads, hits, peak shards and bytes held).
* :class:`BatchServer`: a batch's rows gathered from the cached shards, in
  the batch's order; rows a policy recycles kept after their first read.
* :class:`ShardedBatches`: an epoch's batches, each rank and each loader
  worker a contiguous run of them (not round-robin), with a resume state
  that refuses data changed since it was saved.
* :func:`shard_load_profile`: what a plan costs a reader, shard loads per
  epoch for every LRU cache size (one pass over the plan's accesses);
  :func:`shard_retention_profile`: the loads and the rows held aside of a
  server with plan-aware retention (:meth:`BatchServer.plan_run`).

The torch face is :mod:`pystratum.shards.torch` (``ShardBatchDataset``).
With a shard-aware plan (``plan_batches(..., shards=, window=)``) an epoch
reads each shard about once; see ``vignettes/sharded-storage.md``.
"""

from __future__ import annotations

from ._cache import CacheStats, ShardCache
from ._epochs import STATE_FORMAT, EpochRun, ShardedBatches, data_fingerprint
from ._parquet import ParquetShards
from ._profile import (RetentionProfile, ShardLoadProfile, shard_load_profile,
                       shard_retention_profile)
from ._reader import RowLocator, ShardReader, check_shard_sizes
from ._runs import EpochPlan, epoch_batches, rank_run_length, run_batch_ids
from ._serve import BatchServer

__all__ = ["BatchServer", "CacheStats", "EpochPlan", "EpochRun", "ParquetShards", "RowLocator",
           "STATE_FORMAT", "ShardCache", "ShardLoadProfile", "ShardReader", "ShardedBatches", "check_shard_sizes",
           "data_fingerprint", "epoch_batches", "rank_run_length", "run_batch_ids", "shard_load_profile",
           "RetentionProfile", "shard_retention_profile"]
