"""pystratum.torch._guards: the mistakes new users make get an error that says the fix."""

import numpy as np
import pytest
import torch
from torch.utils.data import BatchSampler, DataLoader, TensorDataset

from _torch_helpers import imbalanced_labels
from pystratum import StratumTooSmallWarning
from pystratum.torch import StratifiedBatchSampler

from torchdata.stateful_dataloader import StatefulDataLoader

pytestmark = pytest.mark.filterwarnings("ignore:'set_vital' is deprecated:UserWarning")


@pytest.fixture(scope="module")
def labels():
    return imbalanced_labels(500, 20, seed=1)


def test_single_whole_dataset_batch_needs_opting_in(labels):
    with pytest.raises(ValueError, match=r"would serve all 500 rows as one batch: The smallest "
                                         r"stratum \(1\) has 20 rows, fewer than "
                                         r"min_samples_per_stratum=25.*at most 20.*GPU memory.*"
                                         r"allow_single_batch=True"):
        StratifiedBatchSampler(labels, 25, seed=1)
    with pytest.warns(StratumTooSmallWarning):
        sampler = StratifiedBatchSampler(labels, 25, seed=1, allow_single_batch=True)
    assert [len(b) for b in sampler] == [500]
    # One batch because N_min // m == 1 keeps the guarantee: no error.
    assert len(StratifiedBatchSampler(labels, 20, seed=1)) == 1
    with pytest.raises(TypeError, match="allow_single_batch must be True or False"):
        StratifiedBatchSampler(labels, 2, allow_single_batch=1)


# torchdata's multi-worker iterator fails in __del__ after any error raised while it is
# being built ("no attribute '_shutdown'"); that is torchdata's, not ours.
@pytest.mark.parametrize("loader_class, num_workers", [
    (DataLoader, 0), (DataLoader, 1), (StatefulDataLoader, 0),
    pytest.param(StatefulDataLoader, 1, marks=pytest.mark.filterwarnings(
        "ignore::pytest.PytestUnraisableExceptionWarning")),
])
def test_sampler_instead_of_batch_sampler(labels, loader_class, num_workers):
    """DataLoader(sampler=...) wraps the batch sampler in BatchSampler(sampler, batch_size=1)."""
    dataset = TensorDataset(torch.arange(500), torch.randn(500, 3))
    loader = loader_class(dataset, sampler=StratifiedBatchSampler(labels, 2, seed=1),
                          num_workers=num_workers)
    with pytest.raises(TypeError, match=r"iterates it as a per-row sampler: this happens with "
                                        r"DataLoader\(dataset, sampler=sampler\)\. Pass it as "
                                        r"DataLoader\(dataset, batch_sampler=sampler\)"):
        next(iter(loader))
    # What the message says to do works.
    good = loader_class(dataset, batch_sampler=StratifiedBatchSampler(labels, 2, seed=1),
                        num_workers=num_workers)
    assert len(next(iter(good))[0]) == 50


def test_wrapped_in_a_batch_sampler_by_hand(labels):
    wrapped = BatchSampler(StratifiedBatchSampler(labels, 2, seed=1), batch_size=8,
                           drop_last=False)
    with pytest.raises(TypeError, match="BatchSampler iterates it as a per-row sampler"):
        next(iter(wrapped))


def test_batch_size_none_serves_whole_batches(labels):
    """DataLoader(sampler=..., batch_size=None) indexes the dataset with each batch: allowed."""
    dataset = TensorDataset(torch.arange(500))
    sampler = StratifiedBatchSampler(labels, 2, seed=1)
    loader = DataLoader(dataset, sampler=sampler, batch_size=None)
    expected = list(StratifiedBatchSampler(labels, 2, seed=1))
    assert [index.tolist() for (index,) in loader] == expected


@pytest.mark.parametrize("n_data", [499, 501])
def test_labels_and_dataset_of_different_lengths(labels, n_data):
    """Without dataset=, the DataLoader's dataset is checked when the first epoch starts."""
    dataset = TensorDataset(torch.arange(n_data))
    sampler = StratifiedBatchSampler(labels, 2, seed=1)
    loader = DataLoader(dataset, batch_sampler=sampler)
    with pytest.raises(ValueError, match=rf"strata has 500 labels but the DataLoader's dataset "
                                         rf"has {n_data} rows"):
        next(iter(loader))
    with pytest.raises(ValueError, match=rf"strata has 500 labels but the dataset has {n_data}"):
        StratifiedBatchSampler(labels, 2, seed=1, dataset=dataset)
    # Matching lengths pass, with any number of workers.
    ok = DataLoader(TensorDataset(torch.arange(500)), batch_sampler=sampler, num_workers=1)
    assert sum(len(index) for (index,) in ok) == 500


def test_iterating_the_sampler_directly_is_unaffected(labels):
    sampler = StratifiedBatchSampler(labels, 2, seed=1)
    batches = [b for b in sampler]
    assert sorted(np.concatenate(batches).tolist()) == list(range(500))
