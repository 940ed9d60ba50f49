"""The torch faces against hostile input: WeightedDataset and DistributedSamplerWrapper.

``WeightedDataset.for_sampler`` takes pystratum's samplers (and a
``DistributedSamplerWrapper`` around one) and refuses any other sampler with a
TypeError naming ``sampler``; weights are finite numbers >= 0, one per row of a
dataset with a length, and every refusal names its argument. The wrapper lists
an inner sampler only up to ``len + 1`` items, so one that yields without end
is refused (on every gloo rank alike) instead of hanging. A hostile property
suite counts the inputs tried and what became of them.
"""

from __future__ import annotations

import collections

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from torch.utils.data import BatchSampler, RandomSampler, SequentialSampler

from _torch_helpers import run_ranks
from pystratum.policies import Downsample, MinPerStratum, MultiLabel, Targets
from pystratum.torch import (DistributedSamplerWrapper, StratifiedBatchSampler, StratifiedSampler,
                             WeightedDataset)

ESCAPES = (OverflowError, IndexError, MemoryError, KeyError, RecursionError, AttributeError)
TALLY = collections.Counter()
LABELS = np.array([0] * 12 + [1] * 4)


class Endless(torch.utils.data.Sampler):
    """Yields rows without end while saying it has ``length`` of them."""

    def __init__(self, length):
        self.length = length

    def __iter__(self):
        row = 0
        while True:
            yield row % 3
            row += 1

    def __len__(self):
        return self.length


class NoLength(torch.utils.data.Dataset):
    def __getitem__(self, index):
        return index


def targets_sampler(**kwargs):
    return StratifiedBatchSampler(LABELS, Targets({0: 0.5, 1: 0.5}, 4), seed=1, **kwargs)


def test_for_sampler_takes_the_weights_through_a_distributed_wrapper():
    sampler = targets_sampler()
    wrapped = DistributedSamplerWrapper(sampler, num_replicas=2, rank=0, seed=0)
    direct = WeightedDataset.for_sampler(list(range(16)), sampler)
    through = WeightedDataset.for_sampler(list(range(16)), wrapped)
    assert torch.equal(direct.weights, through.weights)
    assert not torch.equal(direct.weights, torch.ones(16))


@pytest.mark.parametrize("sampler", [
    RandomSampler(range(16)),
    BatchSampler(SequentialSampler(range(16)), 4, False),
    DistributedSamplerWrapper(RandomSampler(range(16)), num_replicas=1, rank=0, seed=0),
    [[0, 1], [2, 3]],
])
def test_for_sampler_refuses_samplers_that_are_not_pystratum_s(sampler):
    with pytest.raises(TypeError, match=r"^sampler must be a pystratum StratifiedBatchSampler "
                                        r"or StratifiedSampler .* WeightedDataset\(dataset, "
                                        r"weights\)"):
        WeightedDataset.for_sampler(list(range(16)), sampler)


def test_for_sampler_refuses_a_label_policy_as_unweighted():
    labels = np.eye(8, 2, dtype=int) | np.eye(8, 2, k=-2, dtype=int)
    sampler = StratifiedBatchSampler(labels, MultiLabel(num_batches=2), seed=1)
    with pytest.raises(ValueError, match=r"^sampler's policy MultiLabel.* has no importance "
                                         r"weights"):
        WeightedDataset.for_sampler(list(range(8)), sampler)


@pytest.mark.parametrize("weights, error, text", [
    (["a", "b", "c"], TypeError, r"^weights must be numbers, one per row of dataset \(3\)"),
    ("abc", TypeError, r"^weights must be numbers, .* got the text weights='abc'"),
    ([1.0, float("nan"), 1.0], ValueError, r"^weights must be finite and >= 0 .* weights\[1\]=nan"),
    ([1.0, -0.5, 1.0], ValueError, r"^weights must be finite and >= 0 .* weights\[1\]=-0.5"),
    (torch.tensor([1.0, 1.0, float("inf")]), ValueError, r"weights\[2\]=inf"),
    ([1.0, 2.0], ValueError, r"^weights must hold one weight per row of dataset \(3\)"),
    ([[1.0], [2.0], [3.0]], ValueError, r"^weights must hold one weight per row"),
])
def test_weights_are_finite_non_negative_numbers_one_per_row(weights, error, text):
    with pytest.raises(error, match=text):
        WeightedDataset([10, 11, 12], weights)


def test_a_dataset_without_len_is_refused_naming_dataset():
    with pytest.raises(TypeError, match=r"^dataset must have a length \(len\(dataset\)\), got "
                                        r"dataset of type NoLength"):
        WeightedDataset(NoLength(), [1.0, 1.0])
    with pytest.raises(TypeError, match=r"^dataset must have a length"):
        WeightedDataset.for_sampler(NoLength(), targets_sampler())


def test_zero_weights_stay_accepted():
    data = WeightedDataset([10, 11, 12], [0.0, 1.0, 2.5])
    assert data[0] == (10, torch.tensor(0.0)) and len(data) == 3


@pytest.mark.parametrize("length", [0, 1, 7])
def test_the_wrapper_refuses_an_inner_sampler_yielding_more_than_its_len(length):
    wrapper = DistributedSamplerWrapper(Endless(length), num_replicas=1, rank=0, seed=0)
    with pytest.raises(ValueError, match=rf"^sampler yielded more than len\(sampler\)={length} "
                                         rf"items in epoch 0"):
        list(wrapper)


def test_the_wrapper_refuses_on_every_gloo_rank_instead_of_hanging(tmp_path):
    results = run_ranks("wrapper_overlong_worker", 2, {"length": 6}, tmp_path, timeout=120)
    for result in results:
        assert result["error"].startswith("sampler yielded more than len(sampler)=6 items")


# ----------------------------------------------------------------- hostile suite

HOSTILE_WEIGHTS = st.one_of(
    st.lists(st.floats(allow_nan=True, allow_infinity=True, width=64), max_size=6),
    st.lists(st.integers(-(2**70), 2**70), max_size=6),
    st.lists(st.sampled_from(["1", "", "nan", None, b"1", True, 1j, (1,), [1, 2]]), max_size=4),
    st.sampled_from([None, "", "1.0", 3, 2.5, float("nan"), {1: 2}, set(), object()]),
)
HOSTILE_DATASETS = st.sampled_from(["list3", "list0", "nolen", "tensor3", "none", "int"])
HOSTILE_SAMPLERS = st.sampled_from(["targets", "downsample", "min", "multi", "flat", "wrapped",
                                    "wrapped_random", "random", "batch", "list", "none", "int"])


def _dataset(kind):
    return {"list3": [1, 2, 3], "list0": [], "nolen": NoLength(), "tensor3": torch.arange(3),
            "none": None, "int": 3}[kind]


def _sampler(kind):
    y = np.array([0, 0, 0, 1, 1, 1, 0, 1])
    if kind == "targets":
        return StratifiedBatchSampler(y, Targets("balanced", 2), seed=1)
    if kind == "downsample":
        return StratifiedBatchSampler(y, Downsample({0: 0.5}, MinPerStratum(1)), seed=1)
    if kind == "min":
        return StratifiedBatchSampler(y, MinPerStratum(1), seed=1)
    if kind == "multi":
        return StratifiedBatchSampler(np.eye(8, 2, dtype=int) | np.eye(8, 2, k=-2, dtype=int),
                                      MultiLabel(num_batches=2), seed=1)
    if kind == "flat":
        return StratifiedSampler(y, Targets("balanced", 2), seed=1)
    if kind == "wrapped":
        return DistributedSamplerWrapper(_sampler("targets"), num_replicas=2, rank=1, seed=0)
    if kind == "wrapped_random":
        return DistributedSamplerWrapper(RandomSampler(range(8)), num_replicas=1, rank=0, seed=0)
    return {"random": RandomSampler(range(8)),
            "batch": BatchSampler(SequentialSampler(range(8)), 2, False),
            "list": [[0, 1]], "none": None, "int": 3}[kind]


def _tally(call):
    try:
        call()
        outcome = "ok"
    except (TypeError, ValueError) as error:
        outcome = type(error).__name__
        assert str(error) and str(error).split()[0].strip("'") in (
            "weights", "dataset", "sampler", "sampler's", "dtype"), str(error)
    except ESCAPES as error:  # the failure this suite looks for
        pytest.fail(f"{type(error).__name__} escaped: {error}")
    TALLY[outcome] += 1


@settings(max_examples=150)
@given(dataset=HOSTILE_DATASETS, weights=HOSTILE_WEIGHTS)
def test_hostile_weights_and_datasets(dataset, weights):
    _tally(lambda: WeightedDataset(_dataset(dataset), weights))


@settings(max_examples=80)
@given(dataset=HOSTILE_DATASETS, sampler=HOSTILE_SAMPLERS)
def test_hostile_for_sampler(dataset, sampler):
    built = _sampler(sampler)
    _tally(lambda: WeightedDataset.for_sampler(_dataset(dataset), built))


@settings(max_examples=40)
@given(length=st.integers(0, 40), extra=st.integers(0, 3), replicas=st.integers(1, 3),
       drop_last=st.booleans())
def test_hostile_wrapper_lengths(length, extra, replicas, drop_last):
    class Lying(torch.utils.data.Sampler):
        def __iter__(self):
            return iter(range(length + extra))

        def __len__(self):
            return length

    def serve():
        wrapper = DistributedSamplerWrapper(Lying(), num_replicas=replicas, rank=replicas - 1,
                                            seed=0, drop_last=drop_last)
        served = list(wrapper)
        assert extra == 0 and len(served) == len(wrapper)

    try:
        serve()
        TALLY["ok"] += 1
    except ValueError as error:
        assert extra > 0 or (drop_last and length < replicas), error
        TALLY["ValueError"] += 1
    except ESCAPES as error:
        pytest.fail(f"{type(error).__name__} escaped: {error}")


def test_hostile_torch_faces_tally():
    """Runs after the suite (file order): every input ended in a result or a named refusal."""
    print(f"\ntorch faces, hostile inputs: {sum(TALLY.values())} tried, {dict(TALLY)}")
    assert sum(TALLY.values()) >= 200
