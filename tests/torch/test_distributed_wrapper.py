"""DistributedSamplerWrapper: one inner order for every rank, equal disjoint parts."""

from __future__ import annotations

import pickle
import random

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from torch.utils.data import BatchSampler, RandomSampler, SequentialSampler
from torch.utils.data import WeightedRandomSampler

from _torch_helpers import run_ranks
from pystratum.torch import DistributedSamplerWrapper, StratifiedBatchSampler


def parts(make, n_ranks, epoch=0, drop_last=False, seed=5):
    """Each rank's items of ``epoch``; the global torch/numpy state differs per rank."""
    out = []
    for rank in range(n_ranks):
        torch.manual_seed(100 + rank)
        np.random.seed(100 + rank)
        wrapper = DistributedSamplerWrapper(make(), num_replicas=n_ranks, rank=rank, seed=seed,
                                            drop_last=drop_last)
        wrapper.set_epoch(epoch)
        out.append(list(wrapper))
    return out


class NumpySampler(torch.utils.data.Sampler):
    """A sampler owning a numpy Generator (as many weighted class samplers do)."""

    def __init__(self, n):
        self.n, self.rng = n, np.random.default_rng()

    def __iter__(self):
        return iter(self.rng.permutation(self.n).tolist())

    def __len__(self):
        return self.n


class GlobalNumpySampler(NumpySampler):
    """Draws from numpy's global generator (catalyst's BalanceClassSampler does)."""

    def __iter__(self):
        return iter(np.random.permutation(self.n).tolist())


@pytest.mark.parametrize("make", [
    lambda: RandomSampler(range(50)),
    lambda: RandomSampler(range(50), generator=torch.Generator().manual_seed(7)),
    lambda: WeightedRandomSampler(torch.rand(50, generator=torch.Generator().manual_seed(0)),
                                  50, replacement=False),
    lambda: NumpySampler(50),
    lambda: GlobalNumpySampler(50),
], ids=["random", "random_seeded", "weighted", "numpy_generator", "numpy_global"])
@pytest.mark.parametrize("n_ranks", [2, 3])
def test_ranks_cover_one_order_disjointly(make, n_ranks):
    for epoch in range(2):
        ranks = parts(make, n_ranks, epoch)
        assert len({len(p) for p in ranks}) == 1
        rows = [row for part in ranks for row in part]
        # 50 rows over 3 ranks: one padded row, taken from the start of the order.
        assert sorted(set(rows)) == list(range(50))
        assert len(rows) - 50 == -(-50 // n_ranks) * n_ranks - 50
    assert parts(make, n_ranks, 0) != parts(make, n_ranks, 1)  # a new order each epoch


def test_the_list_it_on_every_rank_pattern_overlaps():
    # What the wrapper fixes: each rank lists its own copy, positions rank::n.
    ranks = []
    for rank in range(2):
        torch.manual_seed(100 + rank)
        ranks.append(list(RandomSampler(range(50)))[rank::2])
    assert set(ranks[0]) & set(ranks[1])


def test_the_inner_generators_are_given_back():
    generator = torch.Generator().manual_seed(3)
    inner = RandomSampler(range(10), generator=generator)
    wrapper = DistributedSamplerWrapper(inner, num_replicas=2, rank=0, seed=1)
    list(wrapper)
    assert inner.generator is generator
    before = torch.get_rng_state()
    list(DistributedSamplerWrapper(RandomSampler(range(10)), num_replicas=2, rank=0, seed=1))
    assert torch.equal(torch.get_rng_state(), before)


def test_batch_samplers_are_sharded_by_whole_batches():
    make = lambda: BatchSampler(RandomSampler(range(50)), 8, drop_last=False)  # noqa: E731
    ranks = parts(make, 2)
    assert [len(p) for p in ranks] == [4, 4]  # 7 batches, one reused
    batches = [tuple(b) for part in ranks for b in part]
    assert sorted(row for b in set(batches) for row in b) == list(range(50))
    assert all(len(b) in (8, 2) for b in batches)


def test_a_stratified_batch_sampler_inside_keeps_its_epochs():
    labels = np.repeat([0, 1], [40, 10])
    inner = lambda: StratifiedBatchSampler(labels, 2, seed=4)  # noqa: E731
    ranks = parts(inner, 2, epoch=3)
    expected = StratifiedBatchSampler(labels, 2, seed=4).plan(3).batches
    expected = [list(map(int, b)) for b in expected]
    assert len(expected) == 5  # rank 1 reuses batch 0
    assert ranks[0] == expected[0::2] and ranks[1] == expected[1::2] + expected[:1]


@pytest.mark.parametrize("drop_last", [False, True])
def test_drop_last_trims_like_distributed_sampler(drop_last):
    ranks = parts(lambda: SequentialSampler(range(11)), 3, drop_last=drop_last)
    if drop_last:
        assert ranks == [[0, 3, 6], [1, 4, 7], [2, 5, 8]]
    else:
        assert ranks == [[0, 3, 6, 9], [1, 4, 7, 10], [2, 5, 8, 0]]


def test_state_dict_resumes_mid_epoch_and_copies_continue():
    wrapper = DistributedSamplerWrapper(RandomSampler(range(40)), num_replicas=2, rank=1, seed=8)
    wrapper.set_epoch(4)
    iterator = iter(wrapper)
    head = [next(iterator) for _ in range(7)]
    state = wrapper.state_dict()
    clone = pickle.loads(pickle.dumps(wrapper))
    rest = list(iterator)
    fresh = DistributedSamplerWrapper(RandomSampler(range(40)), num_replicas=2, rank=1, seed=99)
    fresh.load_state_dict(state)
    assert fresh.seed == 8 and fresh.epoch == 4
    assert list(fresh) == rest == list(clone)
    assert len(head + rest) == len(wrapper) == 20


def test_bad_arguments_and_states_name_the_argument():
    with pytest.raises(TypeError, match=r"^sampler must have a length"):
        DistributedSamplerWrapper((x for x in range(3)), num_replicas=1, rank=0, seed=0)
    with pytest.raises(ValueError, match=r"^rank must be given"):
        DistributedSamplerWrapper(range(4), num_replicas=2, seed=0)
    with pytest.raises(ValueError, match=r"^seed=None with num_replicas=2"):
        DistributedSamplerWrapper(range(4), num_replicas=2, rank=0)
    with pytest.raises(ValueError, match=r"^drop_last=True leaves no item"):
        DistributedSamplerWrapper(range(1), num_replicas=2, rank=0, seed=0, drop_last=True)
    wrapper = DistributedSamplerWrapper(range(4), num_replicas=2, rank=0, seed=0)
    state = wrapper.state_dict()
    with pytest.raises(ValueError, match=r"^state_dict\['num_replicas'\] must match"):
        DistributedSamplerWrapper(range(4), num_replicas=1, seed=0).load_state_dict(state)
    with pytest.raises(ValueError, match=r"^state_dict\['items_yielded'\]"):
        wrapper.load_state_dict({**state, "items_yielded": 3})
    with pytest.raises(TypeError, match=r"^state_dict must be the dict"):
        wrapper.load_state_dict(None)


def test_an_inner_sampler_whose_length_changes_is_an_error():
    class Shrinking(torch.utils.data.Sampler):
        def __iter__(self):
            return iter(range(3))

        def __len__(self):
            return 4

    with pytest.raises(ValueError, match=r"^sampler yielded 3 items in epoch 0 but len"):
        list(DistributedSamplerWrapper(Shrinking(), num_replicas=1, seed=0))


@settings(max_examples=80, deadline=None)
@given(n=st.integers(1, 60), n_ranks=st.integers(1, 4), drop_last=st.booleans(),
       seed=st.integers(0, 2 ** 62), epoch=st.integers(0, 50), kind=st.sampled_from(
           ["random", "weighted", "numpy", "python_random"]))
def test_property_equal_counts_and_one_order(n, n_ranks, drop_last, seed, epoch, kind):
    if drop_last and n < n_ranks:
        return
    def make():
        if kind == "random":
            return RandomSampler(range(n))
        if kind == "weighted":
            return WeightedRandomSampler(torch.ones(n), n, replacement=True)
        if kind == "numpy":
            return NumpySampler(n)
        return _PythonRandom(n)
    ranks = parts(make, n_ranks, epoch, drop_last, seed)
    count = n // n_ranks if drop_last else -(-n // n_ranks)
    assert [len(p) for p in ranks] == [count] * n_ranks
    # Interleaving the ranks' parts gives one order (padded from its start).
    order = [ranks[j % n_ranks][j // n_ranks] for j in range(count * n_ranks)]
    kept = min(n, count * n_ranks)
    assert order[kept:] == order[:len(order) - kept]
    if kind != "weighted":
        assert sorted(order[:kept]) == sorted(set(order[:kept]))


class _PythonRandom(torch.utils.data.Sampler):
    """Draws from Python's global random module."""

    def __init__(self, n):
        self.n = n

    def __iter__(self):
        return iter(random.sample(range(self.n), self.n))

    def __len__(self):
        return self.n


def test_two_gloo_ranks_overlap_with_the_pattern_and_cover_with_the_wrapper(tmp_path):
    n = 37
    results = run_ranks("wrapper_overlap_worker", 2,
                        {"n_rows": n, "seed": 3, "batch_size": 4}, tmp_path)
    # The pattern: each rank's own listing, positions rank::2. They overlap and miss rows.
    for key in ("pattern", "pattern_weighted"):
        a, b = (set(r[key]) for r in results)
        assert a & b and len(a | b) < n
    for name in ("random", "weighted", "own"):
        parts_ = [r["wrapper"][name] for r in results]
        assert parts_[0]["len"] == parts_[1]["len"] == 19
        for epoch in range(2):
            a, b = (p["epochs"][epoch] for p in parts_)
            assert len(a) == len(b) == 19
            # 37 rows, 2 ranks: 38 positions, the last one the order's first row again.
            assert set(a) | set(b) == set(range(n))
            assert len(set(a) & set(b)) == 1
        assert parts_[0]["epochs"][0] != parts_[0]["epochs"][1]
    a, b = (r["wrapper"]["batches"]["epochs"][0] for r in results)
    assert len(a) == len(b) == 5  # 10 batches of 4 rows (the last 1), 5 per rank
    assert sorted(row for batch in a + b for row in batch) == list(range(n))
