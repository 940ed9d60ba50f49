"""The sampler with policy objects: FixedSize through a DataLoader, resume and 2-rank DDP."""

import itertools

import numpy as np
import pytest
import torch
from torch.utils.data import DataLoader, TensorDataset

from _torch_helpers import assert_one_epoch, imbalanced_labels, run_ranks, stratum_counts
from pystratum import plan_batches
from pystratum.policies import FixedSize, MinPerStratum
from pystratum.torch import StratifiedBatchSampler

from torchdata.stateful_dataloader import StatefulDataLoader


N_ROWS = 1000
N_POSITIVE = 60


@pytest.fixture(scope="module")
def labels():
    return imbalanced_labels(N_ROWS, N_POSITIVE, seed=7)


def loader_epoch(loader):
    return [index.tolist() for index, _ in loader]


def check_fixed_size(batches, labels, num_batches, batch_size=64):
    """Exact sizes: ``batch_size`` rows but a shorter last batch, strata spread evenly."""
    assert len(batches) == num_batches == -(-len(labels) // batch_size)
    assert_one_epoch(batches, len(labels))
    sizes = [len(b) for b in batches]
    assert sizes[:-1] == [batch_size] * (num_batches - 1)
    assert sizes[-1] == len(labels) - (num_batches - 1) * batch_size
    counts = np.array([stratum_counts(b, labels, 2) for b in batches[:-1]])
    assert (counts.max(axis=0) - counts.min(axis=0)).max() <= 1  # strata spread evenly
    assert counts.min() >= 1


@pytest.mark.parametrize("rng", ["numpy", "R", "torch"])
def test_fixed_size_with_a_dataloader(labels, rng):
    policy = FixedSize(64)
    sampler = StratifiedBatchSampler(labels, policy, seed=3, rng=rng)
    loader = DataLoader(TensorDataset(torch.arange(N_ROWS), torch.as_tensor(labels)),
                        batch_sampler=sampler)
    assert sampler.policy == policy and sampler.min_samples_per_stratum is None
    epochs = [loader_epoch(loader) for _ in range(2)]
    for epoch, batches in enumerate(epochs):
        check_fixed_size(batches, labels, len(loader))
        expected = plan_batches(labels, policy, seed=3, rng=rng, epoch=epoch).batches
        assert batches == [b.tolist() for b in expected]
    assert epochs[0] != epochs[1]
    assert "policy=FixedSize(batch_size=64, min_per_stratum=1, sizes='exact')" in repr(sampler)


def test_int_and_keyword_alias_mean_min_per_stratum(labels):
    by_int = list(StratifiedBatchSampler(labels, 3, seed=2))
    assert list(StratifiedBatchSampler(labels, MinPerStratum(3), seed=2)) == by_int
    assert list(StratifiedBatchSampler(labels, min_samples_per_stratum=3, seed=2)) == by_int
    with pytest.raises(TypeError, match="either policy or min_samples_per_stratum, not both"):
        StratifiedBatchSampler(labels, 3, min_samples_per_stratum=3)
    with pytest.raises(TypeError, match="min_samples_per_stratum must be an integer"):
        StratifiedBatchSampler(labels, "fixed")


def test_fixed_size_infeasible_is_an_error(labels):
    with pytest.raises(ValueError, match="batch_size"):
        StratifiedBatchSampler(labels, FixedSize(8, min_per_stratum=2), seed=1)


def test_strata_with_one_row_each_are_refused():
    with pytest.raises(ValueError, match="looks like a feature column"):
        StratifiedBatchSampler(np.arange(600), FixedSize(32), seed=1)


@pytest.mark.parametrize("num_workers", [0, 2])
def test_fixed_size_resumes_with_stateful_dataloader(labels, num_workers):
    dataset = TensorDataset(torch.arange(N_ROWS), torch.as_tensor(labels))

    def make(seed=11):
        sampler = StratifiedBatchSampler(labels, FixedSize(50), seed=seed, rng="R")
        return StatefulDataLoader(dataset, batch_sampler=sampler, num_workers=num_workers)

    reference = make()
    expected = [loader_epoch(reference) for _ in range(3)]
    loader = make()
    loader_epoch(loader)
    iterator = iter(loader)
    assert [i.tolist() for i, _ in itertools.islice(iterator, 6)] == expected[1][:6]
    state = loader.state_dict()
    del iterator, loader
    resumed = make(seed=999)
    resumed.load_state_dict(state)
    assert loader_epoch(resumed) == expected[1][6:]
    assert loader_epoch(resumed) == expected[2]
    # The state records the policy; another policy refuses it.
    other = StatefulDataLoader(dataset, batch_sampler=StratifiedBatchSampler(
        labels, FixedSize(40), seed=11, rng="R"), num_workers=num_workers)
    with pytest.raises(ValueError, match="saved with policy="):
        other.load_state_dict(state)
        next(iter(other))


def test_fixed_size_state_records_the_policy(labels):
    state = StratifiedBatchSampler(labels, FixedSize(50, min_per_stratum=2), seed=1).state_dict()
    assert state["policy"] == {"name": "fixed_size",
                               "params": {"batch_size": 50, "min_per_stratum": 2,
                                          "sizes": "exact"}}
    assert state["min_samples_per_stratum"] is None


def test_fixed_size_two_rank_ddp(tmp_path, labels):
    """A real 2-rank gloo group: whole FixedSize batches per rank, one epoch between them."""
    config = {"n_rows": N_ROWS, "n_positive": N_POSITIVE, "data_seed": 7, "batch_size": 64,
              "seed": 21, "epochs": 2}
    results = run_ranks("ddp_fixed_size_worker", 2, config, tmp_path, timeout=120)
    for epoch in range(2):
        plan = [b.tolist() for b in plan_batches(labels, FixedSize(64), seed=21,
                                                 epoch=epoch).batches]
        served = [r["epochs"][epoch] for r in results]
        assert len(served[0]) == len(served[1]) == -(-len(plan) // 2)
        for rank in range(2):
            assert served[rank] == [plan[(j * 2 + rank) % len(plan)]
                                    for j in range(len(served[rank]))]
        real = [served[r][j] for j in range(len(served[0])) for r in range(2)
                if j * 2 + r < len(plan)]
        check_fixed_size(real, labels, len(plan))


def test_a_policy_whose_batch_count_moves_with_the_epoch_is_an_error_not_a_wrong_len():
    from pystratum.policies import Allocation, Policy, _base

    class Growing(Policy):
        name = "test_growing"

        def params(self):
            return {}

        def allocate(self, strata, epoch):
            edges = np.arange(epoch + 2, dtype=np.int64)
            return Allocation(strata.sizes[:, None] * edges[None, :] // (epoch + 1))

    try:
        sampler = StratifiedBatchSampler(np.repeat([0, 1], [30, 20]), Growing(), seed=1,
                                         allow_single_batch=True)
        assert len(sampler) == 1 and len(list(sampler)) == 1
        with pytest.raises(ValueError, match=r"^policy Growing: .*2 batches, but epoch 0 has 1"):
            list(sampler)
    finally:
        _base._REGISTRY.pop("test_growing")


def test_a_faulty_policy_is_refused_when_the_sampler_is_built():
    from pystratum.policies import Allocation, Policy, _base

    class Negative(Policy):
        name = "test_negative"

        def params(self):
            return {}

        def allocate(self, strata, epoch):
            return Allocation(np.stack([-np.ones_like(strata.sizes), strata.sizes], axis=1))

    try:
        with pytest.raises(ValueError, match=r"^policy Negative: .*start at -1"):
            StratifiedBatchSampler(np.repeat([0, 1], [30, 20]), Negative(), seed=1)
    finally:
        _base._REGISTRY.pop("test_negative")
