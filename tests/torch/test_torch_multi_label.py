"""StratifiedBatchSampler serving MultiLabel plans: the core's batches, every epoch and rank.

The sampler reads a label matrix (a 2-D array or tensor, or a dataset's
2-D ``.targets``) and serves ``plan_batches(labels, policy, seed=, rng=,
epoch=k)``'s batches through a DataLoader, sharded whole per rank and
resumable mid-epoch.
"""

from __future__ import annotations

import itertools

import numpy as np
import pytest
import torch
from torch.utils.data import DataLoader, TensorDataset
from torchdata.stateful_dataloader import StatefulDataLoader

from _torch_helpers import multi_label_matrix, run_ranks
from pystratum import plan_batches
from pystratum.policies import MultiLabel, SingleBatchError
from pystratum.torch import StratifiedBatchSampler

N_ROWS, N_LABELS = 600, 5


@pytest.fixture(scope="module")
def matrix():
    return multi_label_matrix(N_ROWS, N_LABELS, seed=3)


def core_batches(matrix, policy, seed, rng, epoch):
    return [b.tolist() for b in plan_batches(matrix, policy, seed=seed, rng=rng,
                                             epoch=epoch).batches]


def loader_epoch(loader):
    return [index.tolist() for index, _ in loader]


@pytest.mark.parametrize("rng", ["numpy", "R", "torch"])
def test_a_dataloader_serves_the_core_plan_every_epoch(matrix, rng):
    policy = MultiLabel(batch_size=64)
    dataset = TensorDataset(torch.arange(N_ROWS), torch.as_tensor(matrix))
    sampler = StratifiedBatchSampler(torch.as_tensor(matrix), policy, seed=17, rng=rng)
    loader = DataLoader(dataset, batch_sampler=sampler)
    assert len(sampler) == sampler.num_batches == -(-N_ROWS // 64)
    served = []
    for epoch in range(3):
        sampler.set_epoch(epoch)
        batches = loader_epoch(loader)
        assert batches == core_batches(matrix, policy, 17, rng, epoch)
        served.append(batches)
    assert served[0] != served[1] != served[2]  # a new shuffle per epoch
    # Skipping epochs (a sequential stream replays them) gives the same epoch.
    late = StratifiedBatchSampler(matrix, policy, seed=17, rng=rng)
    late.set_epoch(2)
    assert list(late) == served[2]
    assert late.plan(1).batches[0].tolist() == served[1][0]


def test_one_replica_moves_to_the_next_epoch_at_each_iter(matrix):
    policy = MultiLabel(num_batches=7, min_per_label=2)
    sampler = StratifiedBatchSampler(matrix, policy, seed=5)
    assert [list(sampler) for _ in range(2)] == [core_batches(matrix, policy, 5, "numpy", k)
                                                  for k in range(2)]


def test_a_datasets_2d_targets_are_read_as_the_label_matrix(matrix):
    dataset = TensorDataset(torch.arange(N_ROWS))
    dataset.targets = torch.as_tensor(matrix)
    policy = MultiLabel(batch_size=100)
    sampler = StratifiedBatchSampler(dataset, policy, seed=2, rng="R")
    assert list(sampler) == core_batches(matrix, policy, 2, "R", 0)
    assert sampler.plan(0).strata == ("0", "1", "2", "3", "4")
    # The dataset's length is checked against the matrix's rows.
    with pytest.raises(ValueError, match=r"^strata \(a label matrix\) has 600 rows but the "
                                         r"dataset has 10 rows"):
        StratifiedBatchSampler(matrix, policy, seed=2, dataset=TensorDataset(torch.arange(10)))


def test_a_resume_mid_epoch_continues_the_same_batches(matrix):
    dataset = TensorDataset(torch.arange(N_ROWS), torch.as_tensor(matrix))
    policy = MultiLabel(batch_size=50)

    def make(seed=11):
        sampler = StratifiedBatchSampler(matrix, policy, seed=seed, rng="R")
        return StatefulDataLoader(dataset, batch_sampler=sampler)

    expected = [core_batches(matrix, policy, 11, "R", k) for k in range(3)]
    loader = make()
    assert loader_epoch(loader) == expected[0]
    iterator = iter(loader)
    assert [i.tolist() for i, _ in itertools.islice(iterator, 5)] == expected[1][:5]
    state = loader.state_dict()
    del iterator, loader
    resumed = make(seed=999)  # the saved seed replaces it
    resumed.load_state_dict(state)
    assert loader_epoch(resumed) == expected[1][5:]
    assert loader_epoch(resumed) == expected[2]


def test_the_sampler_state_resumes_in_the_sampler_itself(matrix):
    policy = MultiLabel(batch_size=80)
    sampler = StratifiedBatchSampler(matrix, policy, seed=4, rng="torch")
    iterator = iter(sampler)
    first = [next(iterator) for _ in range(3)]
    state = sampler.state_dict()
    fresh = StratifiedBatchSampler(matrix, policy, seed=0, rng="torch")
    fresh.load_state_dict(state)
    assert first + list(fresh) == core_batches(matrix, policy, 4, "torch", 0)
    with pytest.raises(ValueError, match="strata"):
        StratifiedBatchSampler(1 - matrix, policy, seed=4, rng="torch").load_state_dict(state)


def test_rng_index_is_refused_with_the_cores_message(matrix):
    with pytest.raises(ValueError, match=r"^rng='index' cannot serve MultiLabel"):
        StratifiedBatchSampler(matrix, MultiLabel(batch_size=64), seed=1, rng="index")


@pytest.mark.parametrize("policy", [MultiLabel(num_batches=1), MultiLabel(batch_size=N_ROWS)])
def test_a_single_batch_is_refused_unless_allowed(matrix, policy):
    with pytest.raises(SingleBatchError, match=r"single batch holding all 600 rows of the "
                                               r"label matrix \(5 labels\)") as caught:
        StratifiedBatchSampler(matrix, policy, seed=1)
    assert "allow_single_batch=True" in str(caught.value)
    assert str(caught.value) == str(pytest.raises(
        SingleBatchError, plan_batches, matrix, policy, seed=1).value)
    sampler = StratifiedBatchSampler(matrix, policy, seed=1, allow_single_batch=True)
    assert [sorted(b) for b in sampler] == [list(range(N_ROWS))]


def test_two_ranks_share_whole_batches_without_a_process_group(matrix):
    policy = MultiLabel(batch_size=64)
    plan = core_batches(matrix, policy, 8, "numpy", 0)
    ranks = [list(StratifiedBatchSampler(matrix, policy, seed=8, num_replicas=2, rank=r))
             for r in range(2)]
    assert len(ranks[0]) == len(ranks[1]) == -(-len(plan) // 2)
    for rank in range(2):
        assert ranks[rank] == [plan[(j * 2 + rank) % len(plan)] for j in range(len(ranks[0]))]


def test_multi_label_two_rank_ddp(tmp_path, matrix):
    """A real 2-rank gloo group on 127.0.0.1: whole MultiLabel batches per rank, set_epoch."""
    config = {"n_rows": N_ROWS, "n_labels": N_LABELS, "data_seed": 3, "batch_size": 64,
              "seed": 21, "rng": "R", "epochs": 2}
    results = run_ranks("ddp_multi_label_worker", 2, config, tmp_path, timeout=120)
    policy = MultiLabel(batch_size=64)
    for epoch in range(2):
        plan = core_batches(matrix, policy, 21, "R", epoch)
        served = [r["epochs"][epoch] for r in results]
        assert len(served[0]) == len(served[1]) == results[0]["len"] == -(-len(plan) // 2)
        for rank in range(2):
            assert served[rank] == [plan[(j * 2 + rank) % len(plan)]
                                    for j in range(len(served[rank]))]
        rows = np.sort(np.concatenate([served[r][j] for j in range(len(served[0]))
                                       for r in range(2) if j * 2 + r < len(plan)]))
        np.testing.assert_array_equal(rows, np.arange(N_ROWS))


def test_a_shortfall_without_strict_warns_once_per_epoch():
    import warnings

    from pystratum.policies import LabelShortfallWarning
    from pystratum.torch import StratifiedBatchSampler

    rows = np.array([[1, 1, 0], [0, 1, 1], [1, 0, 1]] * 2)  # 4 batches: 2 of one row
    sampler = StratifiedBatchSampler(rows, MultiLabel(num_batches=4), seed=1)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("default")  # Python's own filter: repeats of one message hidden
        for _ in range(3):
            assert sum(map(len, sampler)) == 6
    epochs = [str(w.message) for w in caught if issubclass(w.category, LabelShortfallWarning)]
    assert [m.split(":")[0] for m in epochs] == [
        f"min_per_label=1 is not met in epoch {e}" for e in range(3)]
