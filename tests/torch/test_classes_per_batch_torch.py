"""ClassesPerBatch through the torch sampler: the core's plans, set_epoch, resume, DDP."""

import itertools

import numpy as np
import pytest
import torch
from torch.utils.data import TensorDataset

from _torch_helpers import run_ranks
from pystratum import plan_batches
from pystratum.serving._sharding import rank_batch_indices
from pystratum.policies import ClassesPerBatch, Policy
from pystratum.torch import StratifiedBatchSampler


SIZES = [9, 4, 13, 7, 22, 5, 16, 11, 8, 30]
LABELS = np.random.default_rng(7).permutation(np.repeat(np.arange(len(SIZES)), SIZES))
POLICY = ClassesPerBatch(3, 4)


def assert_pk(batch):
    slots = LABELS[np.asarray(batch)].reshape(3, 4)
    assert (slots == slots[:, :1]).all() and len(set(slots[:, 0].tolist())) == 3
    assert len(set(batch)) == 12


@pytest.mark.parametrize("rng", ["numpy", "R", "torch", "index"])
def test_sampler_serves_the_core_plans_epoch_after_epoch(rng):
    sampler = StratifiedBatchSampler(LABELS, POLICY, seed=4, rng=rng)
    for epoch in range(3):
        sampler.set_epoch(epoch)
        served = [list(b) for b in sampler]
        expected = plan_batches(LABELS, POLICY, seed=4, rng=rng, epoch=epoch)
        assert served == [b.tolist() for b in expected.batches]
        assert len(sampler) == len(expected)
        for batch in served:
            assert_pk(batch)
        assert set(itertools.chain(*served)) == set(range(len(LABELS)))


@pytest.mark.parametrize("rng", ["numpy", "R", "index"])
def test_state_dict_resumes_mid_epoch(rng):
    reference = StratifiedBatchSampler(LABELS, POLICY, seed=9, rng=rng)
    expected = []
    for epoch in range(3):
        reference.set_epoch(epoch)
        expected.append([list(b) for b in reference])
    first = StratifiedBatchSampler(LABELS, POLICY, seed=9, rng=rng)
    first.set_epoch(1)
    iterator = iter(first)
    head = [list(b) for b in itertools.islice(iterator, 4)]
    state = first.state_dict()
    resumed = StratifiedBatchSampler(LABELS, POLICY, seed=9, rng=rng)
    resumed.load_state_dict(state)
    tail = [list(b) for b in resumed]
    assert head + tail == expected[1]
    resumed.set_epoch(2)
    assert [list(b) for b in resumed] == expected[2]


@pytest.mark.parametrize("rng", ["R", "index"])
def test_stateful_dataloader_resumes_mid_epoch(rng):
    from torchdata.stateful_dataloader import StatefulDataLoader

    dataset = TensorDataset(torch.arange(len(LABELS)))

    def loader():
        return StatefulDataLoader(dataset, batch_sampler=StratifiedBatchSampler(
            LABELS, POLICY, seed=3, rng=rng))

    reference = loader()
    expected = [[index.tolist() for (index,) in reference] for _ in range(2)]
    first = loader()
    iterator = iter(first)
    head = [index.tolist() for (index,) in itertools.islice(iterator, 5)]
    resumed = loader()
    resumed.load_state_dict(first.state_dict())
    assert head + [index.tolist() for (index,) in resumed] == expected[0]


@pytest.mark.parametrize("world,rng", [(2, "R"), (3, "R"), (2, "index")])
def test_ddp_ranks_get_whole_pk_batches(tmp_path, world, rng):
    config = {"labels": LABELS.tolist(), "policy": POLICY.to_dict(), "seed": 5, "rng": rng,
              "epochs": 2}
    results = run_ranks("ddp_policy_worker", world, config, tmp_path)
    assert len({r["length"] for r in results}) == 1
    for epoch in range(2):
        plan = plan_batches(LABELS, POLICY, seed=5, rng=rng, epoch=epoch)
        for result in results:
            chosen = rank_batch_indices(len(plan), world, result["rank"], False)
            assert result["epochs"][epoch] == [plan[b].tolist() for b in chosen]
            for rows, weights in zip(result["epochs"][epoch], result["weights"][epoch]):
                assert_pk(rows)
                assert weights == [1.0] * 12


def test_a_slot_policy_without_lazy_slots_is_refused_at_construction():
    # Refused at construction, before any DDP or model set-up, not at the first batch.
    class NoLazySlots(ClassesPerBatch):
        name = "classes_per_batch_without_lazy_slots"

        def lazy_slots(self, strata, epoch):
            return Policy.lazy_slots(self, strata, epoch)

    message = "policy=.*has no lazy plan.*lazy_slots\\(\\).*rng='numpy'"
    with pytest.raises(ValueError, match=message):
        StratifiedBatchSampler(LABELS, NoLazySlots(3, 4), seed=1, rng="index")


def test_sampler_with_rng_index_unshuffled_is_not_lazy_and_builds():
    # shuffle=False takes no lazy plan: nothing to refuse.
    sampler = StratifiedBatchSampler(LABELS, POLICY, shuffle=False, rng="index")
    assert len(list(iter(sampler))) == len(sampler)


UNIFORM = ClassesPerBatch(3, 4, classes="uniform")


@pytest.mark.parametrize("rng", ["numpy", "R", "torch", "index"])
def test_uniform_sampler_serves_the_core_plans_and_rows_come_round(rng):
    sampler = StratifiedBatchSampler(LABELS, UNIFORM, seed=6, rng=rng)
    uses = np.zeros(len(LABELS), dtype=np.int64)
    for epoch in range(4):
        sampler.set_epoch(epoch)
        served = [list(b) for b in sampler]
        expected = plan_batches(LABELS, UNIFORM, seed=6, rng=rng, epoch=epoch)
        assert served == [b.tolist() for b in expected.batches]
        assert len(sampler) == len(expected) == -(-len(LABELS) // 12)
        for batch in served:
            assert_pk(batch)
        uses += np.bincount(list(itertools.chain(*served)), minlength=len(LABELS))
    for s in range(len(SIZES)):  # rows without replacement across epochs
        mine = uses[LABELS == s]
        assert mine.max() - mine.min() <= 1 and mine.min() >= 1


@pytest.mark.parametrize("rng", ["numpy", "R", "index"])
def test_uniform_state_dict_resumes_mid_epoch_and_set_epoch_jumps(rng):
    first = StratifiedBatchSampler(LABELS, UNIFORM, seed=2, rng=rng)
    first.set_epoch(3)
    iterator = iter(first)
    head = [list(b) for b in itertools.islice(iterator, 5)]
    resumed = StratifiedBatchSampler(LABELS, UNIFORM, seed=2, rng=rng)
    resumed.load_state_dict(first.state_dict())
    tail = [list(b) for b in resumed]
    expected = plan_batches(LABELS, UNIFORM, seed=2, rng=rng, epoch=3)
    assert head + tail == [b.tolist() for b in expected.batches]


@pytest.mark.parametrize("rng", ["numpy", "index"])
def test_uniform_ddp_ranks_get_whole_pk_batches(tmp_path, rng):
    config = {"labels": LABELS.tolist(), "policy": UNIFORM.to_dict(), "seed": 5, "rng": rng,
              "epochs": 2}
    results = run_ranks("ddp_policy_worker", 2, config, tmp_path)
    assert len({r["length"] for r in results}) == 1
    for epoch in range(2):
        plan = plan_batches(LABELS, UNIFORM, seed=5, rng=rng, epoch=epoch)
        for result in results:
            chosen = rank_batch_indices(len(plan), 2, result["rank"], False)
            assert result["epochs"][epoch] == [plan[b].tolist() for b in chosen]
            for rows in result["epochs"][epoch]:
                assert_pk(rows)


@pytest.mark.parametrize("policy", [POLICY, UNIFORM], ids=["proportional", "uniform"])
def test_rng_index_from_member_lists_under_a_dataloader(policy):
    # The lazy face proper: strata as member lists (no per-row labels kept), a real
    # DataLoader with workers, epochs by set_epoch and a resume at batch 3 of epoch 2.
    from torch.utils.data import DataLoader

    from pystratum import grouped_strata

    runs = np.repeat(np.arange(len(SIZES)), SIZES)  # the rows grouped_strata(SIZES) describes
    dataset = TensorDataset(torch.arange(len(runs)))
    sampler = StratifiedBatchSampler(grouped_strata(SIZES), policy, seed=12, rng="index")
    loader = DataLoader(dataset, batch_sampler=sampler, num_workers=2)
    for epoch in range(3):
        sampler.set_epoch(epoch)
        served = [index.tolist() for (index,) in loader]
        expected = plan_batches(runs, policy, seed=12, rng="index", epoch=epoch)
        assert served == [b.tolist() for b in expected.batches]
        for batch in served:
            slots = runs[np.asarray(batch)].reshape(3, 4)
            assert (slots == slots[:, :1]).all() and len(set(slots[:, 0].tolist())) == 3
    sampler.set_epoch(2)
    iterator = iter(sampler)
    head = [list(b) for b in itertools.islice(iterator, 3)]
    resumed = StratifiedBatchSampler(grouped_strata(SIZES), policy, seed=0, rng="index")
    resumed.load_state_dict(sampler.state_dict())  # the saved seed wins
    assert head + [list(b) for b in resumed] == [
        b.tolist() for b in plan_batches(runs, policy, seed=12, rng="index", epoch=2).batches]
