"""Distributed training: real torch.distributed (gloo) runs, Lightning and accelerate.

The multi-process tests start their ranks as separate processes on
127.0.0.1 (a free port), torchrun style, and fail, killing every child, if
the run takes longer than its timeout: a hang is a failure, not a stall.
"""

import numpy as np
import pytest
import torch
from torch.utils.data import DataLoader, TensorDataset

from _torch_helpers import (assert_every_batch_holds, assert_one_epoch, imbalanced_labels,
                            run_ranks)
from pystratum.torch import StratifiedBatchSampler


N_ROWS = 600
N_POSITIVE = 18  # 3% positives


def expected_plan(labels, m, seed, epoch, rng):
    sampler = StratifiedBatchSampler(labels, m, seed=seed, rng=rng)
    return [b.tolist() for b in sampler.plan(epoch)]


def check_ranks(results, labels, m, epochs, *, drop_last=False, rng="numpy", served_epochs=None):
    """Per-rank guarantee, equal counts, and real (non-padded) batches = one epoch.

    ``served_epochs[k]``: the epoch the k-th pass should serve (default k).
    """
    world = len(results)
    seeds = {r["seed"] for r in results}
    assert len(seeds) == 1, f"ranks used different seeds: {seeds}"
    (seed,) = seeds
    for epoch in range(epochs):
        served = [r["epochs"][epoch] for r in results]
        assert len({len(s) for s in served}) == 1, "ranks yielded different numbers of batches"
        plan = expected_plan(labels, m, seed,
                             epoch if served_epochs is None else served_epochs[epoch], rng)
        total = len(plan)
        for rank, batches in enumerate(served):
            assert_every_batch_holds(batches, labels, m)
            # Whole batches round-robin; padding reuses whole batches from the start.
            assert batches == [plan[(j * world + rank) % total] for j in range(len(batches))]
        real = [served[r][j] for j in range(len(served[0])) for r in range(world)
                if j * world + r < total]
        if drop_last:
            assert len(real) == total // world * world
        else:
            assert_one_epoch(real, len(labels))
    if epochs > 1 and served_epochs is None:
        assert results[0]["epochs"][0] != results[0]["epochs"][1]  # a new shuffle each epoch
    # Every rank took the same number of optimizer steps: the DDP models agree.
    weights = np.array([r["weight"] for r in results])
    np.testing.assert_allclose(weights, weights[:1].repeat(world, axis=0), rtol=1e-6)


def run(m, seed, rng="numpy", drop_last=False, num_workers=0, epochs=2):
    return {"m": m, "seed": seed, "rng": rng, "drop_last": drop_last,
            "num_workers": num_workers, "epochs": epochs}


@pytest.mark.parametrize("world, runs", [
    # 9 batches on 2 ranks: padded (rank 1 reuses batch 0), then drop_last (4 each)
    # with a loader worker process.
    (2, [run(2, 11), run(2, 4, drop_last=True, num_workers=1, epochs=1)]),
    # 4 batches on 3 ranks; seed=None is broadcast from rank 0.
    (3, [run(4, None, rng="torch")]),
], ids=["2-ranks", "3-ranks"])
def test_ddp_training(tmp_path, world, runs):
    config = {"n_rows": N_ROWS, "n_positive": N_POSITIVE, "runs": runs}
    per_rank = run_ranks("ddp_worker", world, config, tmp_path, timeout=120)
    labels = imbalanced_labels(N_ROWS, N_POSITIVE)
    for k, settings in enumerate(runs):
        results = [r["runs"][k] for r in per_rank]
        assert [r["rank"] for r in results] == list(range(world))
        assert all(r["num_replicas"] == world for r in results)
        total = N_POSITIVE // settings["m"]
        expected_len = total // world if settings["drop_last"] else -(-total // world)
        for r in results:
            assert r["len_sampler"] == r["len_loader"] == expected_len
        check_ranks(results, labels, settings["m"], epochs=settings["epochs"],
                    drop_last=settings["drop_last"], rng=settings["rng"])


def test_shards_by_hand_without_a_process_group():
    labels = imbalanced_labels(N_ROWS, N_POSITIVE)
    for world in (2, 3, 4, 5):
        for drop_last in (False, True):
            samplers = [StratifiedBatchSampler(labels, 2, seed=3, num_replicas=world, rank=r,
                                               drop_last=drop_last) for r in range(world)]
            results = []
            for s in samplers:
                passes = []
                for epoch in range(2):
                    s.set_epoch(epoch)  # several replicas: the epoch moves only through it
                    passes.append(list(s))
                results.append({"seed": 3, "epochs": passes, "weight": [0.0]})
            assert {len(s) for s in samplers} == {9 // world if drop_last else -(-9 // world)}
            check_ranks(results, labels, 2, epochs=2, drop_last=drop_last)


@pytest.mark.parametrize("set_epoch, num_workers", [(True, 0), (False, 1)],
                         ids=["set_epoch", "no-set_epoch-worker"])
def test_ddp_peek_on_one_rank_keeps_ranks_in_step(tmp_path, set_epoch, num_workers):
    """One extra iter() on rank 1 (a peeked batch) must not move rank 1 to another epoch."""
    config = {"n_rows": N_ROWS, "n_positive": N_POSITIVE, "m": 2, "seed": 5, "epochs": 2,
              "set_epoch": set_epoch, "num_workers": num_workers, "peek_rank": 1,
              "peek_epoch": 1 if set_epoch else 0}
    results = run_ranks("ddp_peek_worker", 2, config, tmp_path, timeout=120)
    labels = imbalanced_labels(N_ROWS, N_POSITIVE)
    # Without set_epoch both passes serve epoch 0 (as DistributedSampler would).
    served = [0, 1] if set_epoch else [0, 0]
    check_ranks(results, labels, 2, epochs=2, served_epochs=served)
    peek_epoch = config["peek_epoch"]
    assert results[1]["peeked"] == results[1]["epochs"][peek_epoch][0]
    assert results[0]["peeked"] is None
    if set_epoch:
        assert results[0]["epochs"][0] != results[0]["epochs"][1]
        assert [r["warnings"] for r in results] == [[], []]  # a peek alone does not warn
    else:
        # The second full pass of epoch 0 warns once on each rank that set_epoch is missing.
        for r in results:
            assert len(r["warnings"]) == 1 and "serves epoch 0 again" in r["warnings"][0]


def test_lightning_ddp(tmp_path):
    """Trainer(strategy='ddp', use_distributed_sampler=False), ranks launched torchrun style."""
    config = {"n_rows": N_ROWS, "n_positive": N_POSITIVE, "m": 2, "seed": None, "epochs": 2}
    results = run_ranks("lightning_worker", 2, config, tmp_path, timeout=150)
    labels = imbalanced_labels(N_ROWS, N_POSITIVE)
    assert [r["num_replicas"] for r in results] == [2, 2]
    assert all(r["len_sampler"] == 5 for r in results)
    check_ranks(results, labels, 2, epochs=2)


def test_accelerate_multi_process(tmp_path):
    """accelerate shards the sampler's whole batches (split_batches=False) over 2 CPU processes."""
    config = {"n_rows": N_ROWS, "n_positive": N_POSITIVE, "m": 2, "seed": 6, "epochs": 2}
    results = run_ranks("accelerate_worker", 2, config, tmp_path, timeout=150,
                        extra_env={"ACCELERATE_USE_CPU": "true"})
    labels = imbalanced_labels(N_ROWS, N_POSITIVE)
    assert [r["num_processes"] for r in results] == [2, 2]
    assert [r["len_loader"] for r in results] == [5, 5]
    check_ranks(results, labels, 2, epochs=2)


def test_accelerate_batch_sampler_shard_in_process():
    """accelerate's own sharding (prepare_data_loader, split_batches=False), rank by rank."""
    from accelerate.data_loader import prepare_data_loader

    labels = imbalanced_labels(N_ROWS, N_POSITIVE)
    dataset = TensorDataset(torch.arange(N_ROWS))
    for world in (2, 4):
        results = []
        for rank in range(world):
            sampler = StratifiedBatchSampler(labels, 2, seed=12, num_replicas=1, rank=0)
            loader = prepare_data_loader(DataLoader(dataset, batch_sampler=sampler),
                                         num_processes=world, process_index=rank,
                                         split_batches=False, put_on_device=False)
            epochs = [[index.tolist() for (index,) in loader] for _ in range(2)]
            assert len(loader) == len(epochs[0]) == -(-9 // world)
            results.append({"seed": 12, "epochs": epochs, "weight": [0.0]})
        check_ranks(results, labels, 2, epochs=2)


def test_rank_and_seed_resolution_without_a_process_group():
    from pystratum.torch._distributed import resolve_replicas, resolve_seed

    assert resolve_replicas(None, None) == (1, 0)
    assert resolve_replicas(3, 2) == (3, 2)
    with pytest.raises(ValueError, match="rank must be given with num_replicas=2"):
        resolve_replicas(2, None)
    with pytest.raises(ValueError, match=r"rank must be in \[0, num_replicas\)"):
        resolve_replicas(2, 2)
    assert resolve_seed(7, 2) == 7
    assert isinstance(resolve_seed(None, 1), int)
    with pytest.raises(ValueError, match="ranks would disagree"):
        resolve_seed(None, 2)
    with pytest.raises(TypeError, match="got a numpy Generator"):
        resolve_seed(np.random.default_rng(0), 1)


def test_frameworks_reach_set_epoch_through_batch_sampler_sampler():
    """Lightning and accelerate call set_epoch on loader.batch_sampler.sampler only."""
    from accelerate.data_loader import prepare_data_loader
    from lightning.fabric.utilities.data import _set_sampler_epoch

    labels = imbalanced_labels(N_ROWS, N_POSITIVE)
    dataset = TensorDataset(torch.arange(N_ROWS))
    reference = StratifiedBatchSampler(labels, 2, seed=1, num_replicas=2, rank=1)
    reference.set_epoch(3)
    expected = list(reference)
    sampler = StratifiedBatchSampler(labels, 2, seed=1, num_replicas=2, rank=1)
    loader = DataLoader(dataset, batch_sampler=sampler)
    _set_sampler_epoch(loader, 3)
    assert sampler.epoch == 3
    assert [index.tolist() for (index,) in loader] == expected
    # accelerate's loader sets the epoch from its own counter at each iter().
    sampler = StratifiedBatchSampler(labels, 2, seed=1)
    shard = prepare_data_loader(DataLoader(dataset, batch_sampler=sampler), num_processes=1,
                                process_index=0, put_on_device=False)
    shard.set_epoch(5)
    assert sampler.epoch == 5


def test_a_teardown_abort_after_the_result_is_tolerated_and_nothing_else(tmp_path):
    """gloo's known exit race ('terminate called without an active exception', SIGABRT)
    after a rank wrote its result does not fail a run; the same abort before it does."""
    with pytest.warns(UserWarning, match="aborted in torch.distributed's teardown"):
        (tmp_path / "after").mkdir()
        results = run_ranks("teardown_abort_worker", 2, {"after_result": True},
                            tmp_path / "after")
    assert [r["rank"] for r in results] == [0, 1]
    (tmp_path / "before").mkdir()
    with pytest.raises(AssertionError, match="exit codes"):
        run_ranks("teardown_abort_worker", 2, {"after_result": False}, tmp_path / "before")
