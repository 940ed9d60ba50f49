"""The torch sampler with rng="index": rank-local lazy batches, resume, DDP (gloo)."""

import itertools

import numpy as np
import pytest
import torch
from torch.utils.data import TensorDataset
from torchdata.stateful_dataloader import StatefulDataLoader

from _torch_helpers import assert_every_batch_holds, imbalanced_labels, run_ranks
from pystratum import lazy_plan
from pystratum._sharding import rank_batch_indices
from pystratum.policies import FixedSize
from pystratum.torch import StratifiedBatchSampler

N_ROWS = 600
N_POSITIVE = 30


@pytest.fixture(scope="module")
def labels():
    return imbalanced_labels(N_ROWS, N_POSITIVE, seed=3)


@pytest.mark.parametrize("policy", [3, FixedSize(40)], ids=["min", "fixed"])
def test_one_replica_serves_the_lazy_plan_epoch_after_epoch(labels, policy):
    sampler = StratifiedBatchSampler(labels, policy, seed=9, rng="index")
    for epoch in range(2):
        served = list(sampler)
        expected = [b.tolist() for b in lazy_plan(labels, policy, seed=9, epoch=epoch)]
        assert served == expected
        assert sorted(itertools.chain.from_iterable(served)) == list(range(N_ROWS))
    assert [b.tolist() for b in sampler.plan(1)] == served


@pytest.mark.parametrize("drop_last", [False, True])
def test_each_rank_computes_its_own_whole_batches(labels, drop_last, monkeypatch):
    plan = lazy_plan(labels, 4, seed=2, epoch=0)  # 7 batches
    asked = []
    original = type(plan).batches_of

    def spy(self, ids):
        asked.extend(np.asarray(ids).tolist())
        return original(self, ids)

    monkeypatch.setattr(type(plan), "batches_of", spy)
    served = []
    for rank in range(3):
        asked.clear()
        sampler = StratifiedBatchSampler(labels, 4, seed=2, rng="index", num_replicas=3,
                                         rank=rank, drop_last=drop_last)
        batches = list(sampler)
        chosen = rank_batch_indices(7, 3, rank, drop_last).tolist()
        assert asked == chosen  # only this rank's batches were computed
        assert batches == [plan[b].tolist() for b in chosen]
        assert_every_batch_holds(batches, labels, 4)
        served.append(batches)
    assert len({len(s) for s in served}) == 1


def test_resume_mid_epoch_computes_only_the_rest(labels, monkeypatch):
    sampler = StratifiedBatchSampler(labels, 3, seed=5, rng="index")
    sampler.set_epoch(4)
    iterator = iter(sampler)
    head = [next(iterator) for _ in range(6)]
    state = sampler.state_dict()
    assert state["epoch"] == 4 and state["batches_yielded"] == 6
    rest = list(iterator)
    resumed = StratifiedBatchSampler(labels, 3, seed=5, rng="index")
    resumed.load_state_dict(state)
    asked = []
    from pystratum._lazy import LazyPlan

    original = LazyPlan.batches_of

    def spy(self, ids):
        asked.extend(np.asarray(ids).tolist())
        return original(self, ids)

    monkeypatch.setattr(LazyPlan, "batches_of", spy)
    assert list(resumed) == rest
    assert min(asked) == 6  # the first six batches were never recomputed
    assert head + rest == [b.tolist() for b in lazy_plan(labels, 3, seed=5, epoch=4)]


def test_stateful_dataloader_resumes_exactly(labels):
    dataset = TensorDataset(torch.arange(N_ROWS), torch.as_tensor(labels))

    def loader():
        sampler = StratifiedBatchSampler(labels, 3, seed=17, rng="index")
        return StatefulDataLoader(dataset, batch_sampler=sampler)

    full = loader()
    reference = [[i.tolist() for i, _ in full] for _ in range(2)]
    first = loader()
    iterator = iter(first)
    head = [i.tolist() for i, _ in itertools.islice(iterator, 4)]
    state = first.state_dict()
    second = loader()
    second.load_state_dict(state)
    tail = [i.tolist() for i, _ in second]
    assert head + tail == reference[0]
    assert [i.tolist() for i, _ in second] == reference[1]


def test_ddp_two_gloo_ranks(tmp_path, labels):
    runs = [{"m": 3, "seed": 21, "rng": "index", "drop_last": False, "num_workers": 0,
             "epochs": 2}]
    config = {"n_rows": N_ROWS, "n_positive": N_POSITIVE, "runs": runs}
    per_rank = run_ranks("ddp_worker", 2, config, tmp_path, timeout=120)
    toy_labels = imbalanced_labels(N_ROWS, N_POSITIVE)
    results = [r["runs"][0] for r in per_rank]
    for epoch in range(2):
        plan = [b.tolist() for b in lazy_plan(toy_labels, 3, seed=21, epoch=epoch)]
        served = [r["epochs"][epoch] for r in results]
        assert len(served[0]) == len(served[1]) == 5
        for rank, batches in enumerate(served):
            assert batches == [plan[(2 * j + rank) % len(plan)] for j in range(5)]
            assert_every_batch_holds(batches, toy_labels, 3)
        together = sorted(itertools.chain.from_iterable(served[0] + served[1]))
        assert together == list(range(N_ROWS))
    weights = np.array([r["weight"] for r in results])
    np.testing.assert_allclose(weights[0], weights[1], rtol=1e-6)
