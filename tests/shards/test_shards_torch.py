"""The DataLoader face of the shard readers: real loaders, workers, DDP (gloo), resume."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from torch.utils.data import DataLoader
from torchdata.stateful_dataloader import StatefulDataLoader

from _reader_data import head_rows, interleave, labels_10_percent, shard_blocked_plans
from _reader_workers import LoggedParquetShards, logged_loads, write_shards
from _torch_helpers import run_ranks
import pystratum
from pystratum.policies import MinPerStratum, Targets
from pystratum.shards import STATE_FORMAT, run_batch_ids
from pystratum.shards.torch import ShardBatchDataset, table_tensors
from pystratum.torch import StratifiedBatchSampler

N_ROWS, GROUP_ROWS = 4000, 100  # 40 shards (2 files of 20 row groups)


@pytest.fixture
def parquet_dir(tmp_path):
    write_shards(tmp_path / "data", labels_10_percent(), group_rows=GROUP_ROWS)
    return tmp_path / "data"


@pytest.mark.parametrize("num_workers", [0, 2])
def test_a_dataloader_serves_the_plans_whole_batches_in_contiguous_worker_runs(
        parquet_dir, tmp_path, num_workers):
    labels = labels_10_percent()
    sampler = StratifiedBatchSampler(labels, MinPerStratum(4), seed=3)
    reader = LoggedParquetShards(parquet_dir, ["row", "label"], log=tmp_path / "loads.log")
    dataset = ShardBatchDataset(reader, sampler, transform=table_tensors, with_rows=True)
    loader = DataLoader(dataset, batch_size=None, num_workers=num_workers)
    for epoch in range(2):
        dataset.set_epoch(epoch)
        served = []
        for rows, batch in loader:
            assert batch["row"].tolist() == rows.tolist()  # the rows asked, in order
            counts = np.bincount(batch["label"].numpy(), minlength=2)
            assert counts.min() >= 4  # the policy's guarantee reaches the model
            served.append(rows.tolist())
        plan = [b.tolist() for b in sampler.plan(epoch)]
        workers = max(num_workers, 1)
        runs = [[plan[i] for i in run_batch_ids(len(plan), 1, 0, False, workers, w)]
                for w in range(workers)]
        assert served == interleave(runs)
        assert len(loader) == len(plan)


def test_workers_of_a_shard_blocked_plan_read_each_shard_about_once(parquet_dir, tmp_path):
    labels = labels_10_percent()
    window, cache = 2, 6
    reader = LoggedParquetShards(parquet_dir, ["row", "label"], log=tmp_path / "loads.log")
    plans = shard_blocked_plans(labels, MinPerStratum(4), reader.shard_sizes, window=window)
    dataset = ShardBatchDataset(reader, plans, cache_shards=cache, with_rows=True)
    rows = [r for r, _ in DataLoader(dataset, batch_size=None, num_workers=2)]
    np.testing.assert_array_equal(np.sort(torch.cat(rows).numpy()), np.arange(N_ROWS))
    loads = logged_loads(tmp_path / "loads.log")
    assert set(loads.tolist()) == set(range(40))
    # Two runs: the boundary between them re-reads at most one cache's worth of shards.
    assert len(loads) <= 40 + cache
    # Row-random plan, same loader: many times the shards.
    (tmp_path / "loads.log").unlink()
    sampler = StratifiedBatchSampler(labels, MinPerStratum(4), seed=3)
    dataset = ShardBatchDataset(reader, sampler, cache_shards=cache)
    for _ in DataLoader(dataset, batch_size=None, num_workers=2):
        pass
    assert len(logged_loads(tmp_path / "loads.log")) > 5 * 40


@pytest.mark.parametrize("num_workers", [0, 2])
def test_a_stateful_dataloader_resumes_mid_epoch(parquet_dir, tmp_path, num_workers):
    labels = labels_10_percent()

    def make():
        sampler = StratifiedBatchSampler(labels, MinPerStratum(4), seed=9)
        reader = LoggedParquetShards(parquet_dir, ["row"], log=tmp_path / "loads.log")
        dataset = ShardBatchDataset(reader, sampler, with_rows=True)
        loader = StatefulDataLoader(dataset, batch_size=None, num_workers=num_workers)
        return dataset, loader

    dataset, loader = make()
    dataset.set_epoch(1)
    full = [rows.tolist() for rows, _ in loader]
    dataset, loader = make()
    dataset.set_epoch(1)
    head = head_rows(loader, 7)
    state = loader.state_dict()
    assert STATE_FORMAT in repr(state)  # the dataset's own state, not a fast-forward
    dataset, loader = make()
    loader.load_state_dict(state)
    rest = [rows.tolist() for rows, _ in loader]
    assert head + rest == full
    assert len(rest) == len(full) - 7


def test_the_dataset_state_resumes_without_torchdata(parquet_dir, tmp_path):
    labels = labels_10_percent()
    sampler = StratifiedBatchSampler(labels, MinPerStratum(4), seed=9)
    reader = LoggedParquetShards(parquet_dir, ["row"], log=tmp_path / "loads.log")
    dataset = ShardBatchDataset(reader, sampler, with_rows=True)
    dataset.set_epoch(2)
    iterator = iter(dataset)
    head = [next(iterator)[0].tolist() for _ in range(5)]
    state = dataset.state_dict()
    assert (state["epoch"], state["batches_yielded"]) == (2, 5)
    again = ShardBatchDataset(reader, sampler, with_rows=True)
    again.load_state_dict(state)
    assert again.epoch == 2
    rest = [rows.tolist() for rows, _ in again]
    assert head + rest == [b.tolist() for b in sampler.plan(2)]


def test_the_progress_bar_counts_the_runs_batches(parquet_dir, tmp_path, capsys):
    labels = labels_10_percent()
    sampler = StratifiedBatchSampler(labels, MinPerStratum(4), seed=9)
    reader = LoggedParquetShards(parquet_dir, ["row"], log=tmp_path / "loads.log",
                                 progress=True)
    dataset = ShardBatchDataset(reader, sampler, progress=True)
    served = sum(1 for _ in DataLoader(dataset, batch_size=None))
    err = capsys.readouterr().err
    assert "Parquet footers" in err and "2/2" in err  # the footer scan
    assert f"epoch 0: 100%" in err and f"{served}/{served}" in err


@pytest.mark.parametrize("num_workers", [0, 2])
def test_ddp_ranks_serve_contiguous_runs_and_read_each_shard_about_once(tmp_path, num_workers):
    labels = labels_10_percent()
    write_shards(tmp_path / "data", labels, group_rows=GROUP_ROWS)
    window = 2
    config = {"directory": str(tmp_path / "data"), "labels": labels.tolist(), "m": 4,
              "window": window, "seed": 4, "epochs": 2, "num_workers": num_workers,
              "log_dir": str(tmp_path)}
    results = run_ranks("_reader_workers:ddp_shards_worker", 2, config, tmp_path, timeout=180)
    plans = shard_blocked_plans(labels, MinPerStratum(4), np.full(40, GROUP_ROWS),
                                window=window, seed=4)
    for epoch in range(2):
        plan = [b.tolist() for b in plans(epoch)]
        per_rank = -(-len(plan) // 2)
        assert [r["len"] for r in results] == [per_rank, per_rank]
        workers = max(num_workers, 1)
        for rank, result in enumerate(results):
            served = result["epochs"][epoch]
            assert len(served) == per_rank  # every rank the same number of batches
            runs = [[plan[i] for i in run_batch_ids(len(plan), 2, rank, False, workers, w)]
                    for w in range(workers)]
            assert served == interleave(runs)
        real = results[0]["epochs"][epoch] + results[1]["epochs"][epoch][:len(plan) - per_rank]
        assert sorted(r for batch in real for r in batch) == list(range(N_ROWS))
    # The models agree: both ranks took the same number of steps.
    np.testing.assert_allclose(results[0]["weight"], results[1]["weight"], rtol=1e-6)
    loads = sum(len(r["loads"]) for r in results)
    runs = 2 * max(num_workers, 1)
    # 2 epochs of 40 shards; each boundary between runs re-reads at most a cache's worth,
    # and so does a padded batch (a rank's run wrapping to the epoch's start).
    assert 2 * 40 <= loads <= 2 * (40 + runs * (2 * window + 2))


def test_persistent_workers_see_set_epoch_and_keep_recycled_rows_across_epochs(tmp_path):
    labels = (np.random.default_rng(0).random(8000) < 0.05).astype(np.int64)
    write_shards(tmp_path / "data", labels, group_rows=200)  # 40 shards
    reader = LoggedParquetShards(tmp_path / "data", ["row"], log=tmp_path / "loads.log")
    policy = Targets({0: 0.5, 1: 0.5}, 128)

    def plans(epoch):
        return pystratum.plan_batches(labels, policy, seed=1, epoch=epoch, window=2,
                                      shards=pystratum.shard_sizes(reader.shard_sizes))

    dataset = ShardBatchDataset(reader, plans, cache_shards=6, with_rows=True)
    loader = DataLoader(dataset, batch_size=None, num_workers=2, persistent_workers=True)
    loads = []
    for epoch in range(3):
        dataset.set_epoch(epoch)
        before = len(logged_loads(tmp_path / "loads.log"))
        served = [rows.tolist() for rows, _ in loader]
        plan = [b.tolist() for b in plans(epoch)]
        runs = [[plan[i] for i in run_batch_ids(len(plan), 1, 0, False, 2, w)] for w in range(2)]
        assert served == interleave(runs)  # the workers serve the epoch set in the main process
        loads.append(len(logged_loads(tmp_path / "loads.log")) - before)
    # Epoch 0 reads every shard in each worker for the recycled stratum's first pass; after
    # that the workers serve it from the rows they kept.
    assert max(loads[1:]) < 0.6 * loads[0]


def test_a_shard_aware_sampler_as_the_plan_reads_each_shard_once_per_epoch(parquet_dir, tmp_path):
    labels = labels_10_percent()
    reader = LoggedParquetShards(parquet_dir, ["row", "label"], log=tmp_path / "loads.log")
    sampler = StratifiedBatchSampler(labels, MinPerStratum(4), seed=3, window=2,
                                     shards=pystratum.shard_sizes(reader.shard_sizes))
    dataset = ShardBatchDataset(reader, sampler, cache_shards=6, with_rows=True,
                                n_rows=len(labels))
    for epoch in range(2):
        dataset.set_epoch(epoch)
        before = logged_loads(tmp_path / "loads.log")
        served = [rows.tolist() for rows, _ in DataLoader(dataset, batch_size=None)]
        assert served == [b.tolist() for b in sampler.plan(epoch)]
        loads = logged_loads(tmp_path / "loads.log")[len(before):]
        assert np.bincount(loads, minlength=40).max() == 1  # each shard at most once


def test_the_plans_importance_weights_come_with_each_batch(parquet_dir, tmp_path):
    labels = labels_10_percent()
    policy = pystratum.Downsample({0: 0.25}, MinPerStratum(2))  # majority rows weigh ~4
    sampler = StratifiedBatchSampler(labels, policy, seed=2)
    reader = LoggedParquetShards(parquet_dir, ["row"], log=tmp_path / "loads.log")
    dataset = ShardBatchDataset(reader, sampler, with_rows=True, with_weights=True)
    plan = sampler.plan(0)
    served = list(DataLoader(dataset, batch_size=None, num_workers=2))
    runs = [list(run_batch_ids(len(plan), 1, 0, False, 2, w)) for w in range(2)]
    for (rows, table, weights), b in zip(served, interleave(runs)):
        assert rows.tolist() == plan[b].tolist() == table.column("row").to_pylist()
        np.testing.assert_array_equal(weights.numpy(), plan.batch_weights(b))
    assert {round(w, 6) for _, _, ws in served for w in ws.tolist()} == \
        {1.0, round(float(np.max(plan.weights)), 6)}
    (batch,) = [b for b in ShardBatchDataset(reader, [[0, 5]], with_weights=False)]
    assert batch.num_rows == 2
    (unweighted,) = [w for _, w in ShardBatchDataset(reader, [[0, 5]], with_weights=True)]
    assert unweighted.tolist() == [1.0, 1.0]


def test_every_ddp_rank_resumes_mid_epoch_from_rank_0s_state(tmp_path):
    labels = labels_10_percent()
    write_shards(tmp_path / "data", labels, group_rows=GROUP_ROWS)
    config = {"directory": str(tmp_path / "data"), "labels": labels.tolist(), "m": 4,
              "seed": 6, "epoch": 1, "stop": 9, "num_workers": 2}
    results = run_ranks("_reader_workers:ddp_resume_worker", 2, config, tmp_path, timeout=180)
    plan = [b.tolist() for b in StratifiedBatchSampler(labels, MinPerStratum(4), seed=6).plan(1)]
    for rank, result in enumerate(results):
        runs = [[plan[i] for i in run_batch_ids(len(plan), 2, rank, False, 2, w)]
                for w in range(2)]
        assert result["len"] == -(-len(plan) // 2)
        assert len(result["head"]) == 9
        assert result["head"] + result["rest"] == interleave(runs)


def test_retain_rows_reaches_the_workers_servers(parquet_dir, tmp_path):
    # A row-random plan reads most shards for every batch: with a budget of every row, each
    # worker loads each shard at most once; with no budget, many times (plan-aware retention).
    labels = labels_10_percent()
    sampler = StratifiedBatchSampler(labels, MinPerStratum(4), seed=3)
    loads = {}
    for retain_rows in (N_ROWS, 0):
        log = tmp_path / f"loads-{retain_rows}.log"
        reader = LoggedParquetShards(parquet_dir, ["row", "label"], log=log)
        dataset = ShardBatchDataset(reader, sampler, cache_shards=2, retain_rows=retain_rows)
        for _ in DataLoader(dataset, batch_size=None, num_workers=2):
            pass
        loads[retain_rows] = logged_loads(log)
    assert len(loads[N_ROWS]) <= 2 * 40  # two workers, each shard once per worker
    assert len(loads[0]) > 5 * 40
    with pytest.raises(ValueError, match="^retain_rows"):
        ShardBatchDataset(reader, sampler, retain_rows=-1)
