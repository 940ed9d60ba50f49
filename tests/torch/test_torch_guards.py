"""pystratum.torch._guards: the mistakes new users make get an error that says the fix."""

import numpy as np
import pytest
import torch
from torch.utils.data import BatchSampler, DataLoader, TensorDataset

from _torch_helpers import imbalanced_labels
from pystratum import StratumTooSmallWarning
from pystratum.torch import StratifiedBatchSampler

from torchdata.stateful_dataloader import StatefulDataLoader


@pytest.fixture(scope="module")
def labels():
    return imbalanced_labels(500, 20, seed=1)


def test_single_whole_dataset_batch_needs_opting_in(labels):
    with pytest.raises(ValueError, match=r"^policy=MinPerStratum\(m=25\) gives a single batch "
                                         r"holding all 500 rows.*GPU memory.*The smallest strata: "
                                         r"1 with 20 rows, 0 with 480 rows.*MinPerStratum\(10\) "
                                         r"gives at least 2 batches.*allow_single_batch=True"):
        StratifiedBatchSampler(labels, 25, seed=1)
    with pytest.warns(StratumTooSmallWarning):
        sampler = StratifiedBatchSampler(labels, 25, seed=1, allow_single_batch=True)
    assert [len(b) for b in sampler] == [500]
    # One batch because N_min // m == 1 (no stratum below m) is refused too (issue 19).
    with pytest.raises(ValueError, match=r"^policy=MinPerStratum\(m=20\) gives a single batch"):
        StratifiedBatchSampler(labels, 20, seed=1)
    assert len(StratifiedBatchSampler(labels, 20, seed=1, allow_single_batch=True)) == 1
    assert len(StratifiedBatchSampler(labels, 10, seed=1)) == 2
    with pytest.raises(TypeError, match="allow_single_batch must be True or False"):
        StratifiedBatchSampler(labels, 2, allow_single_batch=1)


@pytest.mark.parametrize("rng", ["numpy", "R", "torch", "index"])
def test_every_stream_and_face_refuses_a_single_batch(labels, rng):
    """batch_size= (FixedSize), the flat sampler and rng='index' (member lists) alike."""
    from pystratum.torch import StratifiedSampler

    with pytest.raises(ValueError, match=r"^policy=FixedSize\(batch_size=500.*smaller batch_size"):
        StratifiedBatchSampler(labels, batch_size=500, seed=1, rng=rng)
    if rng != "index":
        with pytest.raises(ValueError, match=r"^policy=FixedSize\(batch_size=500"):
            StratifiedSampler(labels, batch_size=500, seed=1, rng=rng)
        flat = StratifiedSampler(labels, batch_size=500, seed=1, rng=rng, allow_single_batch=True)
        assert len(flat) == 500
    assert len(StratifiedBatchSampler(labels, batch_size=500, seed=1, rng=rng,
                                      allow_single_batch=True)) == 1


def test_the_count_is_taken_before_sharding(labels):
    """Two batches on two ranks (one each) are a plan of two batches: accepted. One batch is
    refused whatever the number of ranks (padding would serve it whole on every rank)."""
    ranks = [StratifiedBatchSampler(labels, 10, seed=1, num_replicas=2, rank=r) for r in (0, 1)]
    assert [len(s) for s in ranks] == [1, 1]
    served = [list(s) for s in ranks]
    assert sorted(sum((b for rank in served for b in rank), [])) == list(range(500))
    with pytest.raises(ValueError, match="gives a single batch holding all 500 rows"):
        StratifiedBatchSampler(labels, 20, seed=1, num_replicas=2, rank=0)


def test_multi_label_indicator_columns_are_refused_with_their_own_message():
    rng = np.random.default_rng(3)
    targets = torch.from_numpy((rng.random((3000, 8)) < 0.2).astype(np.int64))
    with pytest.raises(ValueError, match=r"^strata has 8 columns of 0/1 values, which look like "
                                         r"multi-label indicators"):
        StratifiedBatchSampler(targets, 1, seed=1)
    column = targets[:, 0]
    assert len(StratifiedBatchSampler(column, 1, seed=1)) == int((column == 1).sum())


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


def test_the_state_records_allow_single_batch_and_older_states_still_load():
    labels = [0] * 40 + [1] * 3
    with pytest.warns(StratumTooSmallWarning, match="returning a single batch"):
        allowed = StratifiedBatchSampler(labels, 5, seed=2, allow_single_batch=True)
    assert len(allowed) == 1
    state = allowed.state_dict()
    assert state["allow_single_batch"] is True
    with pytest.warns(StratumTooSmallWarning, match="returning a single batch"):
        rebuilt = StratifiedBatchSampler(labels, 5, seed=2, allow_single_batch=True)
    rebuilt.load_state_dict(state)
    assert list(rebuilt) == list(allowed)
    # A state saved before the key existed (same format) loads unchanged.
    many = StratifiedBatchSampler(labels, 1, seed=2)
    older = many.state_dict()
    assert older.pop("allow_single_batch") is False
    again = StratifiedBatchSampler(labels, 1, seed=2)
    again.load_state_dict(older)
    assert list(again) == list(many)
