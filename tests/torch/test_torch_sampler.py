"""pystratum.torch.StratifiedBatchSampler with real DataLoaders (one process)."""

import warnings

import numpy as np
import pandas as pd
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from torch.utils.data import DataLoader, Dataset, TensorDataset

from _torch_helpers import (assert_every_batch_holds, assert_one_epoch, imbalanced_labels,
                            run_ranks, stratum_counts)
from pystratum import RStream, StratumTooSmallWarning, plan_batches
from pystratum.policies import MinPerStratum, strata_of_sizes
from pystratum.engine._assemble import assemble_batches
from pystratum.strata._encode import encode_strata
from pystratum.torch import StratifiedBatchSampler

N_ROWS = 2000
N_POSITIVE = 60  # 3% positives
M = 2


@pytest.fixture(scope="module")
def labels():
    return imbalanced_labels(N_ROWS, N_POSITIVE, seed=3)


def index_loader(labels, sampler, **kwargs):
    """A real DataLoader whose batches are the row indices (and labels) it fetched."""
    dataset = TensorDataset(torch.arange(len(labels)), torch.as_tensor(labels))
    return DataLoader(dataset, batch_sampler=sampler, **kwargs)


def loader_epoch(loader):
    return [index.tolist() for index, _ in loader]


def per_batch_counts(batches, labels):
    return [stratum_counts(b, labels, 2).tolist() for b in batches]


# ----------------------------------------------------------------- DataLoader


def test_dataloader_guarantee_length_epochs_and_seed(labels):
    sampler = StratifiedBatchSampler(labels, M, seed=1)
    loader = index_loader(labels, sampler)
    assert len(sampler) == len(loader) == N_POSITIVE // M
    first = loader_epoch(loader)
    second = loader_epoch(loader)
    for epoch in (first, second):
        assert len(epoch) == len(loader)
        assert_every_batch_holds(epoch, labels, M)  # >= m positives and >= m negatives
        assert_one_epoch(epoch, N_ROWS)
    assert first != second  # a new shuffle...
    assert per_batch_counts(first, labels) == per_batch_counts(second, labels)  # ...same counts
    # Same seed, same batches, epoch by epoch.
    again = index_loader(labels, StratifiedBatchSampler(labels, M, seed=1))
    assert loader_epoch(again) == first
    assert loader_epoch(again) == second
    # Batches are plain lists of Python ints.
    batch = next(iter(StratifiedBatchSampler(labels, M, seed=1)))
    assert type(batch) is list and all(type(i) is int for i in batch)


def test_batches_are_the_core_plans(labels):
    for rng in ("numpy", "R", "torch"):
        sampler = StratifiedBatchSampler(labels, M, seed=5, rng=rng)
        for epoch in range(3):
            expected = plan_batches(labels, M, seed=5, rng=rng, epoch=epoch).batches
            assert list(sampler) == [b.tolist() for b in expected], (rng, epoch)


@pytest.mark.filterwarnings("ignore:.*pin_memory.*:UserWarning")
def test_workers_persistent_workers_and_pin_memory(labels):
    reference = StratifiedBatchSampler(labels, M, seed=2)
    expected = [list(reference) for _ in range(3)]
    sampler = StratifiedBatchSampler(labels, M, seed=2)
    loader = index_loader(labels, sampler, num_workers=2, persistent_workers=True,
                          pin_memory=True)
    got = [loader_epoch(loader) for _ in range(3)]
    assert got == expected
    assert [len(e) for e in got] == [len(loader)] * 3
    loader = index_loader(labels, StratifiedBatchSampler(labels, M, seed=2), num_workers=2)
    assert [loader_epoch(loader) for _ in range(2)] == expected[:2]


def test_set_epoch_selects_any_epoch(labels):
    sequential = StratifiedBatchSampler(labels, M, seed=9, rng="R")
    epochs = [list(sequential) for _ in range(4)]
    for epoch in (3, 1, 0, 2):
        fresh = StratifiedBatchSampler(labels, M, seed=9, rng="R")
        fresh.set_epoch(epoch)
        assert fresh.epoch == epoch
        assert list(fresh) == epochs[epoch]
        if epoch + 1 < len(epochs):
            assert list(fresh) == epochs[epoch + 1]  # then on to the next epoch
    # DistributedSampler style: set_epoch before every epoch.
    styled = StratifiedBatchSampler(labels, M, seed=9, rng="R")
    for epoch in range(4):
        styled.set_epoch(epoch)
        assert list(styled) == epochs[epoch]


def test_several_replicas_move_epochs_only_through_set_epoch(labels):
    """num_replicas > 1: an extra iter() (a peek) re-serves the epoch instead of skipping one."""
    def make():
        return StratifiedBatchSampler(labels, M, seed=4, num_replicas=2, rank=1)

    plans = [[b.tolist() for b in make().plan(e)] for e in range(2)]
    epochs = [plans[e][1::2] for e in range(2)]  # rank 1 of 2: batches 1, 3, 5, ...
    sampler = make()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert next(iter(sampler)) == epochs[0][0]  # a peek
        assert sampler.epoch == 0
        assert list(sampler) == epochs[0]  # the epoch itself, from its start
        sampler.set_epoch(1)
        assert list(sampler) == epochs[1]
        sampler.set_epoch(1)  # asked for explicitly: served again, no warning
        assert list(sampler) == epochs[1]
    # An epoch served to its end starting again without set_epoch: warned once.
    with pytest.warns(UserWarning, match=r"serves epoch 1 again.*set_epoch\(epoch\) before each "
                                         r"epoch"):
        assert list(sampler) == epochs[1]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert list(sampler) == epochs[1]  # once per sampler
    # One replica keeps moving on by itself.
    single = StratifiedBatchSampler(labels, M, seed=4)
    assert [list(single), list(single)] == [[b.tolist() for b in make().plan(e)]
                                            for e in range(2)]


def test_abandoned_iterators(labels):
    sampler = StratifiedBatchSampler(labels, M, seed=4)
    epochs = [list(StratifiedBatchSampler(labels, M, seed=4).plan(e)) for e in range(3)]
    epochs = [[b.tolist() for b in e] for e in epochs]
    unused = iter(sampler)  # created, never advanced: consumes no epoch
    del unused
    partial = iter(sampler)
    assert next(partial) == epochs[0][0]
    assert sampler.epoch == 0
    # A new iter() starts the next epoch even if the last one was left early.
    assert list(sampler) == epochs[1]
    assert list(partial) == epochs[0][1:]  # the old iterator still finishes its own epoch
    assert list(sampler) == epochs[2]


def test_seed_none_draws_once_and_reports_it(labels):
    sampler = StratifiedBatchSampler(labels, M)
    assert isinstance(sampler.seed, int)
    first, second = list(sampler), list(sampler)
    replay = StratifiedBatchSampler(labels, M, seed=sampler.seed)
    assert [list(replay), list(replay)] == [first, second]


def test_unshuffled(labels):
    sampler = StratifiedBatchSampler(labels, M, shuffle=False)
    assert sampler.seed is None
    first = list(sampler)
    assert list(sampler) == first
    assert [b.tolist() for b in plan_batches(labels, M, shuffle=False).batches] == first


def test_global_torch_rng_untouched(labels):
    before = torch.get_rng_state()
    list(StratifiedBatchSampler(labels, M, seed=3, rng="torch"))
    assert torch.equal(before, torch.get_rng_state())


# -------------------------------------------------------------- random streams


def test_rng_torch_is_randperm_of_a_private_generator(labels):
    generator = torch.Generator().manual_seed(11)
    encoded = encode_strata(labels)
    cuts = MinPerStratum(M).allocate(encoded, 0).cuts
    sampler = StratifiedBatchSampler(labels, M, seed=11, rng="torch")
    for _ in range(3):
        permutation = torch.randperm(N_ROWS, generator=generator).numpy()
        expected = assemble_batches(encoded.codes, permutation, cuts).batches()
        assert list(sampler) == [b.tolist() for b in expected]


def test_rng_torch_same_batches_in_another_process(labels, tmp_path):
    config = {"n_rows": N_ROWS, "n_positive": N_POSITIVE, "data_seed": 3, "m": M, "seed": 123,
              "epochs": 2}
    (result,) = run_ranks("torch_rng_worker", 1, config, tmp_path, timeout=60)
    sampler = StratifiedBatchSampler(labels, M, seed=123, rng="torch")
    assert result["epochs"] == [list(sampler), list(sampler)]


def test_rng_r_epochs_are_consecutive_rstream_permutations(labels):
    stream = RStream(2024)
    encoded = encode_strata(labels)
    cuts = MinPerStratum(M).allocate(encoded, 0).cuts
    sampler = StratifiedBatchSampler(labels, M, seed=2024, rng="R")
    for _ in range(3):
        expected = assemble_batches(encoded.codes, stream.permutation(N_ROWS), cuts).batches()
        assert list(sampler) == [b.tolist() for b in expected]


# ----------------------------------------------------------------- strata input


class TargetsDataset(Dataset):
    """torchvision style: labels in ``.targets``."""

    def __init__(self, targets, attribute="targets", length=None):
        setattr(self, attribute, targets)
        self._length = len(targets) if length is None else length

    def __len__(self):
        return self._length

    def __getitem__(self, i):
        return i


def test_strata_forms_give_the_same_batches(labels):
    expected = list(StratifiedBatchSampler(labels, M, seed=8))
    forms = [
        labels.tolist(),
        torch.as_tensor(labels),
        pd.Series(labels),
        TargetsDataset(labels.tolist()),
        TargetsDataset(torch.as_tensor(labels)),
        TargetsDataset(labels, attribute="labels"),
        lambda: labels,
    ]
    for strata in forms:
        assert list(StratifiedBatchSampler(strata, M, seed=8)) == expected, type(strata)


def test_multi_column_strata(labels):
    group = np.arange(N_ROWS) % 3
    columns = torch.stack([torch.as_tensor(labels), torch.as_tensor(group)], dim=1)
    sampler = StratifiedBatchSampler(columns, 1, seed=1)
    combined = labels * 3 + group
    batches = list(sampler)
    assert len(batches) == np.bincount(combined).min()
    assert_every_batch_holds(batches, combined, 1)
    frame = pd.DataFrame({"y": labels, "g": group})
    assert list(StratifiedBatchSampler(frame, 1, seed=1)) == batches
    # A list of tensors could be rows or columns: refused, naming the forms to use.
    with pytest.raises(TypeError, match=r"could be rows or columns.*torch.stack\(columns, dim=1\)"):
        StratifiedBatchSampler([torch.as_tensor(labels), torch.as_tensor(group)], 1, seed=1)
    assert list(StratifiedBatchSampler({"y": torch.as_tensor(labels), "g": torch.as_tensor(group)},
                                       1, seed=1)) == batches


def test_dataframe_with_a_labels_column_is_data_not_a_dataset():
    frame = pd.DataFrame({"labels": [0, 1] * 10, "other": [5] * 20})
    sampler = StratifiedBatchSampler(frame, 1, seed=0)
    assert sampler.num_batches == 10  # two columns -> strata (0, 5) and (1, 5), 10 rows each


# ------------------------------------------------------------------ validation


@pytest.mark.parametrize("kwargs, error, match", [
    ({"num_replicas": 2, "rank": 3, "seed": 1}, ValueError,
     r"rank must be in \[0, num_replicas\), got rank=3 with num_replicas=2"),
    ({"num_replicas": 2, "rank": True, "seed": 1}, TypeError, "rank must be an integer"),
    ({"num_replicas": 0, "rank": 0}, ValueError, "num_replicas must be a positive integer"),
    ({"num_replicas": 2.0, "rank": 0}, TypeError, "num_replicas must be an integer"),
    ({"num_replicas": 2, "seed": 1}, ValueError, "rank must be given with num_replicas=2"),
    ({"rank": -1}, ValueError, "rank must be an integer >= 0, got rank=-1"),
    ({"num_replicas": 2, "rank": 0}, ValueError, "ranks would disagree"),
    ({"shuffle": False, "seed": 3}, ValueError,
     "seed=3 has no effect since shuffle=False"),
    ({"shuffle": 1}, TypeError, "shuffle must be True or False"),
    ({"drop_last": "yes"}, TypeError, "drop_last must be True or False"),
    ({"rng": "python"}, ValueError, "rng must be one of"),
    ({"seed": True}, TypeError, "seed must be an integer"),
    ({"seed": -1}, ValueError, "seed"),
    ({"seed": np.random.default_rng(1)}, TypeError, "got a numpy Generator"),
    ({"seed": "abc"}, TypeError, "seed must be"),
    ({"dataset": list(range(5))}, ValueError, "strata has 2000 labels but the dataset has 5 rows"),
])
def test_argument_errors(labels, kwargs, error, match):
    with pytest.raises(error, match=match):
        StratifiedBatchSampler(labels, M, **kwargs)


@pytest.mark.parametrize("m, error, match", [
    (0, ValueError,
     "min_samples_per_stratum must be a positive integer, got min_samples_per_stratum=0"),
    (True, TypeError, "min_samples_per_stratum must be an integer"),
    (2.5, TypeError, "min_samples_per_stratum must be an integer"),
])
def test_min_samples_errors(labels, m, error, match):
    with pytest.raises(error, match=match):
        StratifiedBatchSampler(labels, m)


def test_strata_errors():
    with pytest.raises(TypeError, match="without .targets or .labels"):
        StratifiedBatchSampler(TargetsDataset([0, 1], attribute="other"), 1)
    with pytest.raises(ValueError, match="but the dataset has 3 rows"):
        StratifiedBatchSampler(TargetsDataset([0, 1, 0, 1], length=3), 1)
    with pytest.raises(TypeError, match="strata must be array-like"):
        StratifiedBatchSampler(5, 1)
    with pytest.raises(ValueError, match="missing value at row 1"):
        StratifiedBatchSampler([0.0, float("nan"), 1.0], 1)


def test_drop_last_with_fewer_batches_than_replicas(labels):
    # 60 positives // m=25 -> 2 batches for 3 replicas.
    with pytest.raises(ValueError, match=r"drop_last=True leaves no batch.*2 batch\(es\).*"
                                         r"num_replicas=3"):
        StratifiedBatchSampler(labels, 25, seed=1, num_replicas=3, rank=0, drop_last=True)
    # Padding instead: every rank serves one whole batch, rank 2 reuses batch 0.
    plan = [b.tolist() for b in StratifiedBatchSampler(labels, 25, seed=1).plan(0)]
    served = [list(StratifiedBatchSampler(labels, 25, seed=1, num_replicas=3, rank=r))
              for r in range(3)]
    assert served == [[plan[0]], [plan[1]], [plan[0]]]


def test_stratum_too_small_warns_once(labels):
    # One whole-dataset batch is an error unless asked for (test_torch_guards.py); asked
    # for, it still warns once.
    with pytest.warns(StratumTooSmallWarning, match="fewer than min_samples_per_stratum=100"):
        sampler = StratifiedBatchSampler(labels, 100, seed=1, allow_single_batch=True)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        batches = list(sampler) + list(sampler)  # epochs do not repeat the warning
    assert len(sampler) == 1
    assert [len(b) for b in batches] == [N_ROWS, N_ROWS]


def test_repr(labels):
    text = repr(StratifiedBatchSampler(labels, M, seed=1))
    assert "min_samples_per_stratum=2" in text and "num_batches=30" in text


# -------------------------------------------------------------------- property


@settings(max_examples=40, deadline=None)
@given(
    strata=st.integers(1, 4).flatmap(
        lambda k: st.lists(st.integers(0, k - 1), min_size=1, max_size=200)),
    m=st.integers(1, 6),
    seed=st.integers(0, 2**31 - 1),
    num_replicas=st.integers(1, 4),
    drop_last=st.booleans(),
    rng=st.sampled_from(["numpy", "R", "torch"]),
)
def test_dataloader_invariants(strata, m, seed, num_replicas, drop_last, rng):
    labels = np.unique(np.asarray(strata), return_inverse=True)[1].reshape(-1)
    sizes = np.bincount(labels)
    n_min = int(sizes.min())
    total = max(1, n_min // m)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", StratumTooSmallWarning)
        if drop_last and total < num_replicas:
            with pytest.raises(ValueError, match="drop_last=True leaves no batch"):
                StratifiedBatchSampler(labels, m, seed=seed, rng=rng, num_replicas=num_replicas,
                                       rank=0, drop_last=True, allow_single_batch=True)
            return
        samplers = [StratifiedBatchSampler(labels, m, seed=seed, rng=rng, drop_last=drop_last,
                                           num_replicas=num_replicas, rank=r,
                                           allow_single_batch=True)
                    for r in range(num_replicas)]
    loaders = [index_loader(labels, s) for s in samplers]
    for epoch in range(2):
        for s in samplers:
            s.set_epoch(epoch)  # several replicas: the epoch moves only through set_epoch
        served = [loader_epoch(loader) for loader in loaders]
        # len() is exact and equal on every rank.
        assert [len(b) for b in served] == [len(loader) for loader in loaders]
        assert len({len(b) for b in served}) == 1
        # Round-robin positions j * n + r below `total` are real batches: one epoch.
        real = [served[r][j] for j in range(len(served[0])) for r in range(num_replicas)
                if j * num_replicas + r < total]
        if drop_last:
            assert len(real) == total // num_replicas * num_replicas
        else:
            assert_one_epoch(real, len(labels))
        counts = np.array([stratum_counts(b, labels, len(sizes)) for b in real])
        if n_min >= m:
            assert counts.min() >= m
        # A stratum's per-batch counts differ by at most one.
        assert (counts.max(axis=0) - counts.min(axis=0)).max() <= 1
