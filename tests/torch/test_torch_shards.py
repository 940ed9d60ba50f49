"""The torch faces with shards= and window=: the core's batches, real loaders, resume, DDP."""

import itertools

import numpy as np
import pytest
import torch
from torch.utils.data import DataLoader, TensorDataset
from torchdata.stateful_dataloader import StatefulDataLoader

from _torch_helpers import imbalanced_labels, run_ranks
from pystratum import plan_batches, shard_sizes
from pystratum.policies import FixedSize, MinPerStratum, MultiLabel, Targets
from pystratum.torch import StratifiedBatchSampler, StratifiedSampler


N_ROWS = 1200
SIZES = [100] * 12


@pytest.fixture(scope="module")
def labels():
    return imbalanced_labels(N_ROWS, 90, seed=3)


def loader_epoch(loader):
    return [index.tolist() for (index,) in loader]


@pytest.mark.parametrize("rng", ["numpy", "R", "torch", "index"])
@pytest.mark.parametrize("policy", [MinPerStratum(6), FixedSize(64), Targets({0: .5, 1: .5}, 40)],
                         ids=["min", "fixed", "targets"])
def test_sampler_serves_the_cores_sharded_batches(labels, rng, policy):
    if rng == "index" and isinstance(policy, Targets):
        with pytest.raises(ValueError, match=r"^shards cannot be honoured with rng='index'"):
            StratifiedBatchSampler(labels, policy, seed=5, rng=rng, shards=shard_sizes(SIZES))
        return
    sampler = StratifiedBatchSampler(labels, policy, seed=5, rng=rng, shards=shard_sizes(SIZES),
                                     window=2)
    loader = DataLoader(TensorDataset(torch.arange(N_ROWS)), batch_sampler=sampler)
    for epoch in range(3):  # each iter() is the next epoch; the R/torch streams keep going
        expected = plan_batches(labels, policy, seed=5, rng=rng, epoch=epoch,
                                shards=shard_sizes(SIZES), window=2).batches
        assert loader_epoch(loader) == [b.tolist() for b in expected]
    # set_epoch jumps (sequential streams replay the skipped epochs, shard draws included).
    sampler.set_epoch(7)
    expected = plan_batches(labels, policy, seed=5, rng=rng, epoch=7,
                            shards=shard_sizes(SIZES), window=2).batches
    assert loader_epoch(loader) == [b.tolist() for b in expected]


def test_multi_label_sampler_with_shards():
    matrix = np.random.default_rng(0).random((600, 4)) < 0.2
    policy = MultiLabel(batch_size=50)
    sampler = StratifiedBatchSampler(matrix, policy, seed=2, rng="R", shards=shard_sizes([60] * 10),
                                     window=1)
    for epoch in range(2):
        expected = plan_batches(matrix, policy, seed=2, rng="R", epoch=epoch,
                                shards=shard_sizes([60] * 10)).batches
        assert list(sampler) == [b.tolist() for b in expected]


def test_flat_sampler_face_with_shards(labels):
    sampler = StratifiedSampler(labels, batch_size=64, seed=4, shards=shard_sizes(SIZES),
                                window=3)
    loader = DataLoader(TensorDataset(torch.arange(N_ROWS)), sampler=sampler,
                        batch_size=sampler.batch_size)
    expected = plan_batches(labels, FixedSize(64), seed=4, shards=shard_sizes(SIZES),
                            window=3).batches
    assert loader_epoch(loader) == [b.tolist() for b in expected]


@pytest.mark.parametrize("rng", ["R", "index"])
def test_stateful_dataloader_resumes_mid_epoch_with_shards(labels, rng):
    dataset = TensorDataset(torch.arange(N_ROWS))

    def make(seed=11, shards=shard_sizes(SIZES), window=2):
        sampler = StratifiedBatchSampler(labels, FixedSize(40), seed=seed, rng=rng,
                                         shards=shards, window=window)
        return StatefulDataLoader(dataset, batch_sampler=sampler)

    reference = make()
    expected = [loader_epoch(reference) for _ in range(3)]
    loader = make()
    loader_epoch(loader)
    iterator = iter(loader)
    assert [i.tolist() for (i,) in itertools.islice(iterator, 5)] == expected[1][:5]
    state = loader.state_dict()
    del iterator, loader
    resumed = make(seed=999)
    resumed.load_state_dict(state)
    assert loader_epoch(resumed) == expected[1][5:]
    assert loader_epoch(resumed) == expected[2]
    # Other shards, another window, or none: refused, naming what differs.
    for shards, window, name in ((shard_sizes([200] * 6), 2, "shards"), (None, 1, "shards"),
                                 (shard_sizes(SIZES), 3, "window")):
        other = make(shards=shards, window=window)
        with pytest.raises(ValueError, match=f"saved with {name}="):
            other.load_state_dict(state)
            next(iter(other))


def test_state_records_the_shard_fingerprint_and_window(labels):
    sampler = StratifiedBatchSampler(labels, FixedSize(64), seed=1, shards=shard_sizes(SIZES),
                                     window=2)
    state = sampler.state_dict()
    assert isinstance(state["shards"], str) and state["window"] == 2
    ids = np.repeat(np.arange(12) * 7, 100)  # the same layout as ids: the same fingerprint
    same = StratifiedBatchSampler(labels, FixedSize(64), seed=1, shards=ids, window=2)
    same.load_state_dict(state)
    plain = StratifiedBatchSampler(labels, FixedSize(64), seed=1)
    assert plain.state_dict()["shards"] is None
    forged = dict(state, shards=3)
    with pytest.raises(TypeError, match=r"^state_dict\['shards'\]"):
        sampler.load_state_dict(forged)


def test_sampler_refuses_bad_shards_naming_them(labels):
    with pytest.raises(ValueError, match=r"^shards must hold one shard id per row"):
        StratifiedBatchSampler(labels, FixedSize(64), seed=1, shards=np.zeros(5, dtype=int))
    with pytest.raises(TypeError, match=r"^window must be an integer"):
        StratifiedBatchSampler(labels, FixedSize(64), seed=1, shards=shard_sizes(SIZES),
                               window=1.5)
    with pytest.raises(ValueError, match=r"^window=2 has no effect without shards"):
        StratifiedBatchSampler(labels, FixedSize(64), seed=1, window=2)


def test_two_rank_gloo_ddp_serves_whole_sharded_batches(labels, tmp_path):
    config = {"labels": labels.tolist(), "policy": FixedSize(64).to_dict(), "seed": 21,
              "rng": "R", "shard_sizes": SIZES, "window": 2, "epochs": 2}
    results = run_ranks("_shards_workers:ddp_shards_worker", 2, config, tmp_path, timeout=120)
    for epoch in range(2):
        plan = [b.tolist() for b in plan_batches(labels, FixedSize(64), seed=21, rng="R",
                                                 epoch=epoch, shards=shard_sizes(SIZES),
                                                 window=2).batches]
        served = [r["epochs"][epoch] for r in results]
        assert len(served[0]) == len(served[1]) == results[0]["length"]
        for rank in range(2):
            assert served[rank] == [plan[(j * 2 + rank) % len(plan)]
                                    for j in range(len(served[rank]))]
