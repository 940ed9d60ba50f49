"""Readers of sharded storage (numpy/pyarrow layer): Parquet shards, the cache, serving, runs."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.dataset as pads
import pyarrow.parquet as pq
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from _reader_data import ArrayShards, serve_epochs_each_shard_read_once, shard_blocked_plans
import pystratum
from pystratum import parquet_strata, plan_batches, shard_sizes
from pystratum.policies import MinPerStratum, Targets
from pystratum.shards import (BatchServer, ParquetShards, ShardedBatches, run_batch_ids,
                              rank_run_length)


def write_parquet(directory, n_rows=1000, group_rows=100, files=2, seed=0, minority=0.05):
    rng = np.random.default_rng(seed)
    labels = (rng.random(n_rows) < minority).astype(np.int64)
    table = pa.table({"row": np.arange(n_rows), "label": labels, "x": rng.random(n_rows)})
    directory.mkdir(parents=True, exist_ok=True)
    cut = np.linspace(0, n_rows, files + 1).astype(int)
    for f in range(files):
        pq.write_table(table.slice(cut[f], cut[f + 1] - cut[f]), directory / f"part-{f}.parquet",
                       row_group_size=group_rows)
    return labels


# --- ParquetShards ----------------------------------------------------------------------

def test_row_groups_of_every_file_are_the_shards_in_parquet_strata_order(tmp_path):
    labels = write_parquet(tmp_path / "d", n_rows=1050, group_rows=100, files=2)
    reader = ParquetShards(tmp_path / "d", columns=["row", "label"])
    # part-0: 525 rows in groups of 100 (5 x 100 + 25), part-1 likewise.
    assert reader.shard_sizes.tolist() == [100] * 5 + [25] + [100] * 5 + [25]
    assert reader.load(6).column_names == ["row", "label"]  # projection: "x" never read
    assert reader.load(6).column("row").to_pylist() == list(range(525, 625))
    # The strata read from the same files number rows the same way.
    members = parquet_strata(tmp_path / "d", "label")
    assert members.sizes.tolist() == np.bincount(labels).tolist()
    by_file = ParquetShards(tmp_path / "d", shard_by="file")
    assert by_file.shard_sizes.tolist() == [525, 525]
    assert by_file.load(1).column_names == ["row", "label", "x"]


def test_a_list_of_files_keeps_the_callers_order_and_a_dataset_is_accepted(tmp_path):
    write_parquet(tmp_path / "d", n_rows=300, group_rows=50, files=3)
    files = [str(tmp_path / "d" / f"part-{f}.parquet") for f in (2, 0, 1)]
    reader = ParquetShards(files, columns="row")
    assert reader.load(0).column("row").to_pylist()[0] == 200
    dataset = pads.dataset(files, format="parquet")
    assert ParquetShards(dataset, "row").shard_sizes.tolist() == reader.shard_sizes.tolist()


def test_fsspec_urls_are_read_through_pyarrow(tmp_path):
    import fsspec  # the shards extra's, installed with it

    memory = fsspec.filesystem("memory")
    table = pa.table({"row": np.arange(400), "label": np.arange(400) % 3})
    for f in range(2):
        with memory.open(f"/shards-url/part-{f}.parquet", "wb") as handle:
            pq.write_table(table.slice(200 * f, 200), handle, row_group_size=64)
    reader = ParquetShards("memory://shards-url/", columns=["row"])
    assert reader.shard_sizes.tolist() == [64, 64, 64, 8] * 2
    server = BatchServer(reader, cache_shards=2)
    batch = [399, 0, 64, 263, 5]
    assert server.serve(batch).column("row").to_pylist() == batch
    memory.rm("/shards-url", recursive=True)


def test_unknown_columns_and_empty_sources_are_refused(tmp_path):
    write_parquet(tmp_path / "d", n_rows=100, group_rows=50, files=1)
    with pytest.raises(ValueError, match=r"columns \['nope'\] not found in .*part-0.parquet"):
        ParquetShards(tmp_path / "d", columns=["row", "nope"])
    with pytest.raises(ValueError, match="shard_by must be one of"):
        ParquetShards(tmp_path / "d", shard_by="page")
    pq.write_table(pa.table({"row": pa.array([], pa.int64())}), tmp_path / "empty.parquet")
    with pytest.raises(ValueError, match="source must hold at least one row"):
        ParquetShards(tmp_path / "empty.parquet")


# --- serving and the cache ----------------------------------------------------------------

@settings(max_examples=60)
@given(sizes=st.lists(st.integers(0, 7), min_size=1, max_size=12).filter(lambda s: sum(s) > 0),
       data=st.data(), capacity=st.integers(1, 4))
def test_a_batch_is_served_row_for_row_in_its_order(sizes, data, capacity):
    reader = ArrayShards(sizes, values=np.arange(sum(sizes)) * 10 + 3)
    server = BatchServer(reader, cache_shards=capacity)
    for _ in range(3):
        batch = data.draw(st.lists(st.integers(0, sum(sizes) - 1), min_size=1, max_size=30))
        assert server.serve(batch).tolist() == [10 * row + 3 for row in batch]
    stats = server.stats
    assert stats.peak_shards <= capacity
    assert stats.loads == len(reader.calls) == int(server.cache.loads_per_shard.sum())
    assert all(sizes[h] > 0 for h in reader.calls)  # an empty shard is never read


def test_the_cache_evicts_the_least_recently_used_shard():
    reader = ArrayShards([2, 2, 2])
    server = BatchServer(reader, cache_shards=2)
    for batch in ([0], [2], [1], [4], [3], [0]):
        server.serve(batch)
    # 0 load, 1 load, 0 hit, 2 load (evicts 1), 1 load (evicts 0), 0 load.
    assert reader.calls == [0, 1, 2, 1, 0]
    assert (server.stats.loads, server.stats.hits, server.stats.peak_shards) == (5, 1, 2)
    assert server.stats.peak_bytes == 2 * 2 * 8


# --- runs per rank and worker -------------------------------------------------------------

@given(num_batches=st.integers(1, 60), replicas=st.integers(1, 5), workers=st.integers(1, 4),
       drop_last=st.booleans())
def test_runs_are_contiguous_equal_per_rank_and_cover_the_epoch(num_batches, replicas, workers,
                                                                drop_last):
    per_rank = rank_run_length(num_batches, replicas, drop_last)
    positions = []
    for rank in range(replicas):
        runs = [run_batch_ids(num_batches, replicas, rank, drop_last, workers, w)
                for w in range(workers)]
        assert sum(len(r) for r in runs) == per_rank  # every rank the same count
        assert max(len(r) for r in runs) - min(len(r) for r in runs) <= 1
        ids = np.concatenate(runs)
        positions.extend(rank * per_rank + np.arange(per_rank))
        # Contiguous: each run is consecutive positions of the epoch.
        assert np.array_equal(ids, (rank * per_rank + np.arange(per_rank)) % num_batches)
    served = np.asarray(positions, dtype=np.int64)
    if drop_last:
        assert served.tolist() == list(range(replicas * (num_batches // replicas)))
    else:
        assert set((served % num_batches).tolist()) == set(range(num_batches))
        assert served.max(initial=-1) < num_batches + replicas  # padding below one per rank


# --- locality -----------------------------------------------------------------------------

def spread_labels(n_rows=6000, seed=0):
    """Two strata (10% and 90%) spread over every shard, ~15 minority rows per shard."""
    return (np.random.default_rng(seed).random(n_rows) < 0.1).astype(np.int64)


@pytest.mark.parametrize("window", [1, 2, 4])
def test_a_shard_blocked_plan_reads_each_shard_once_per_epoch(window):
    labels = spread_labels()
    sizes = np.full(40, 150)
    plans = shard_blocked_plans(labels, MinPerStratum(4), sizes, window=window)
    reader = ArrayShards(sizes)
    served = ShardedBatches(reader, plans, cache_shards=2 * window + 2)
    serve_epochs_each_shard_read_once(served, epochs=2)
    assert served.stats.loads >= 40 + 40 - served.server.cache.capacity


def test_a_row_random_plan_reads_shards_many_times_over():
    labels = spread_labels()
    reader = ArrayShards(np.full(40, 150))
    served = ShardedBatches(reader, lambda e: plan_batches(labels, MinPerStratum(4), seed=3,
                                                           epoch=e), cache_shards=4)
    batches = sum(1 for _ in served.run())
    assert served.stats.loads > 10 * 40 and batches > 50


def test_ranks_and_workers_together_read_each_shard_about_once():
    labels = spread_labels()
    sizes = np.full(40, 150)
    window = 2
    plans = shard_blocked_plans(labels, MinPerStratum(4), sizes, window=window)
    loads, rows = 0, []
    for rank in range(2):
        for worker in range(2):
            served = ShardedBatches(ArrayShards(sizes), plans, cache_shards=2 * window + 2,
                                    num_replicas=2, rank=rank)
            rows.extend(r for r, _ in served.run(num_workers=2, worker=worker))
            loads += served.stats.loads
    assert np.array_equal(np.sort(np.concatenate(rows)), np.arange(labels.shape[0]))
    # Each of the 3 boundaries between the 4 runs re-reads at most a cache's worth.
    assert 40 <= loads <= 40 + 3 * (2 * window + 2)


# --- recycled strata --------------------------------------------------------------------

@pytest.mark.parametrize("keep", [True, False])
def test_recycled_rows_are_read_once_and_kept(keep):
    # A 4% stratum spread over all 30 shards, recycled by Targets 50/50 in batches of 40:
    # 144 batches, the 120 minority rows served 24 times, each pass over every shard.
    labels = np.zeros(3000, dtype=np.int64)
    labels[np.random.default_rng(0).choice(3000, 120, replace=False)] = 1
    sizes = np.full(30, 100)
    plans = shard_blocked_plans(labels, Targets({0: 0.5, 1: 0.5}, 40), sizes, window=2)
    served = ShardedBatches(ArrayShards(sizes), plans, cache_shards=6, keep_recycled=keep)
    per_epoch = []
    for epoch in range(3):
        served.set_epoch(epoch)
        before = served.server.cache.loads_per_shard.copy()
        for rows, values in served.run():
            assert values.tolist() == rows.tolist()
        per_epoch.append(served.server.cache.loads_per_shard - before)
    if keep:
        # Epoch 0 reads every shard for the first pass and again for the majority; after
        # that the minority comes from the kept rows: each shard at most once per epoch.
        assert per_epoch[0].sum() <= 3 * 30
        assert max(loads.max() for loads in per_epoch[1:]) == 1
        assert served.stats.kept_rows == 120 and served.stats.kept_bytes == 120 * 8
    else:
        assert min(loads.sum() for loads in per_epoch) > 10 * 30  # every pass reads again
        assert served.stats.kept_rows == 0


@pytest.mark.parametrize("window", [1, 2, 4])
def test_the_engines_shard_order_with_targets_reads_each_shard_once_per_epoch_after_the_first(
        window):
    # A 5% stratum recycled ~19 times and a majority recycled a little (rounding): the kept
    # rows of a shard grow when other rows of it are recycled, and are never dropped for it.
    labels = (np.random.default_rng(0).random(20000) < 0.05).astype(np.int64)
    sizes = np.full(40, 500)
    policy = Targets({0: 0.5, 1: 0.5}, 256)
    served = ShardedBatches(ArrayShards(sizes), lambda epoch: plan_batches(
        labels, policy, seed=1, epoch=epoch, shards=shard_sizes(sizes), window=window),
        cache_shards=2 * window + 2)
    for epoch in range(3):
        served.set_epoch(epoch)
        before = served.server.cache.loads_per_shard.copy()
        for rows, values in served.run():
            assert values.tolist() == rows.tolist()
        if epoch:
            assert (served.server.cache.loads_per_shard - before).max() <= 1
    assert served.stats.kept_rows < 2 * labels.sum()  # the recycled rows, not the epoch


class CountingLazyPlan:
    """A lazy plan that records which batches were asked of it."""

    def __init__(self, plan):
        self.plan, self.asked = plan, []

    def __len__(self):
        return len(self.plan)

    def batches_of(self, ids):
        self.asked.extend(np.asarray(ids).tolist())
        return self.plan.batches_of(ids)

    def batch_weights(self, batch):
        return self.plan.batch_weights(batch)

    def materialise(self):
        raise AssertionError("a run must not materialise the whole epoch")

    @property
    def row_weights(self):
        return self.plan.row_weights


@pytest.mark.parametrize("policy, sharded", [
    (MinPerStratum(4), True),
    # Lazy plans refuse shards= with pools; the weights still come with the run's batches.
    (pystratum.Downsample({0: 0.5}, MinPerStratum(4)), False),
])
def test_a_lazy_plans_run_computes_only_its_own_batches(policy, sharded):
    labels = spread_labels()
    sizes = np.full(40, 150)
    shards = {"shards": shard_sizes(sizes), "window": 2} if sharded else {}
    lazy = pystratum.lazy_plan(labels, policy, seed=2, epoch=0, **shards)
    whole = lazy.materialise()
    counting = CountingLazyPlan(lazy)
    served = ShardedBatches(ArrayShards(sizes), counting, num_replicas=2, rank=1,
                            cache_shards=6)
    run = served.run(num_workers=2, worker=0)
    ids = run_batch_ids(len(whole), 2, 1, False, 2, 0)
    got = [(rows.tolist(), run.weights(k).tolist()) for k, (rows, values) in enumerate(run)]
    assert sorted(set(counting.asked)) == sorted(set(ids.tolist()))  # nothing else computed
    assert got == [(whole[b].tolist(), whole.batch_weights(b).tolist()) for b in ids.tolist()]


class TableShards:
    """A ShardReader over one Arrow table cut into shards (numeric columns, or with a string
    column and nulls, which take the concatenate-and-reorder path)."""

    def __init__(self, table, sizes):
        self.table = table
        self.shard_sizes = np.asarray(sizes, dtype=np.int64)
        self.starts = np.cumsum(self.shard_sizes) - self.shard_sizes

    def load(self, shard):
        return self.table.slice(int(self.starts[shard]), int(self.shard_sizes[shard]))


@settings(max_examples=40)
@given(sizes=st.lists(st.integers(1, 9), min_size=1, max_size=6), numeric=st.booleans(),
       cache=st.integers(1, 3), data=st.data())
def test_served_tables_equal_arrows_own_take_on_both_gather_paths(sizes, numeric, cache, data):
    n = sum(sizes)
    columns = {"row": pa.array(np.arange(n)), "f16": pa.array(np.arange(n, dtype=np.float16)),
               "u8": pa.array((np.arange(n) % 200).astype(np.uint8))}
    if not numeric:
        columns["name"] = pa.array([None if i % 3 == 0 else f"r{i}" for i in range(n)])
    table = pa.table(columns)
    server = BatchServer(TableShards(table, sizes), cache_shards=cache)
    for _ in range(3):
        batch = data.draw(st.lists(st.integers(0, n - 1), min_size=1, max_size=15))
        served = server.serve(batch)
        assert isinstance(served, pa.Table) and served.schema == table.schema
        assert served.equals(table.take(np.asarray(batch)))
