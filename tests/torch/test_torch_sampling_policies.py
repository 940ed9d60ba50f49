"""Targets and Downsample through torch: sampler, weights to the loss, resume, DDP, peers."""

import itertools

import numpy as np
import pytest
import torch
from torch.utils.data import DataLoader, TensorDataset

from _torch_helpers import run_ranks
from pystratum import plan_batches
from pystratum.serving._sharding import rank_batch_indices
from pystratum.policies import Downsample, FixedSize, Targets
from pystratum.torch import StratifiedBatchSampler, WeightedDataset


LABELS = np.array([0] * 200 + [1] * 13 + [2] * 37)
np.random.default_rng(3).shuffle(LABELS)

POLICIES = {
    "targets_balanced": Targets("balanced", 12),
    "targets_shares": Targets({0: 0.5, 1: 0.2, 2: 0.3}, 10),
    "downsample_targets": Downsample({0: 0.25}, Targets("balanced", 9)),
    "downsample_fixed": Downsample({0: 0.1, 2: 0.5}, FixedSize(8)),
}


@pytest.mark.parametrize("rng", ["numpy", "R", "torch"])
@pytest.mark.parametrize("name", sorted(POLICIES))
def test_sampler_serves_the_core_plans_epoch_after_epoch(name, rng):
    policy = POLICIES[name]
    sampler = StratifiedBatchSampler(LABELS, policy, seed=4, rng=rng)
    for epoch in range(3):
        sampler.set_epoch(epoch)
        served = [list(b) for b in sampler]
        expected = plan_batches(LABELS, policy, seed=4, rng=rng, epoch=epoch)
        assert served == [b.tolist() for b in expected.batches]
        assert len(sampler) == len(expected)


def test_weighted_dataset_carries_the_plan_weights_to_the_batch():
    policy = POLICIES["downsample_fixed"]
    sampler = StratifiedBatchSampler(LABELS, policy, seed=1)
    dataset = WeightedDataset.for_sampler(
        TensorDataset(torch.arange(len(LABELS)), torch.as_tensor(LABELS)), sampler)
    loader = DataLoader(dataset, batch_sampler=sampler)
    plan = plan_batches(LABELS, policy, seed=1)
    for b, (index, label, weight) in enumerate(loader):
        assert index.tolist() == plan[b].tolist()
        assert weight.dtype == torch.float32  # float32 by default: no upcast of the loss
        np.testing.assert_array_equal(weight.numpy(), plan.batch_weights(b).astype(np.float32))
    plain = WeightedDataset(list(range(5)), np.ones(5))
    assert plain[2][0] == 2 and float(plain[2][1]) == 1.0
    with pytest.raises(ValueError, match="weights must hold one weight per row"):
        WeightedDataset(list(range(5)), np.ones(4))


@pytest.mark.parametrize("rng", ["numpy", "R"])
@pytest.mark.parametrize("name", ["targets_shares", "downsample_targets"])
def test_stateful_dataloader_resumes_mid_epoch(name, rng):
    from torchdata.stateful_dataloader import StatefulDataLoader

    policy = POLICIES[name]
    dataset = TensorDataset(torch.arange(len(LABELS)))

    def loader():
        sampler = StratifiedBatchSampler(LABELS, policy, seed=9, rng=rng)
        return StatefulDataLoader(dataset, batch_sampler=sampler)

    reference = loader()
    expected = [[index.tolist() for (index,) in reference] for _ in range(3)]
    first = loader()
    for _ in range(1):  # epoch 0 whole, then stop inside epoch 1
        list(first)
    iterator = iter(first)
    head = [index.tolist() for (index,) in itertools.islice(iterator, 5)]
    state = first.state_dict()
    resumed = loader()
    resumed.load_state_dict(state)
    tail = [index.tolist() for (index,) in resumed]
    assert head + tail == expected[1]
    assert [index.tolist() for (index,) in resumed] == expected[2]


@pytest.mark.parametrize("world", [2, 3])
def test_ddp_every_rank_gets_exact_compositions_and_weights(tmp_path, world):
    policy = POLICIES["downsample_targets"]
    config = {"labels": LABELS.tolist(), "policy": policy.to_dict(), "seed": 5, "rng": "R",
              "epochs": 2}
    results = run_ranks("ddp_policy_worker", world, config, tmp_path)
    lengths = {r["length"] for r in results}
    assert len(lengths) == 1
    for epoch in range(2):
        plan = plan_batches(LABELS, policy, seed=5, rng="R", epoch=epoch)
        for result in results:
            chosen = rank_batch_indices(len(plan), world, result["rank"], False)
            assert result["epochs"][epoch] == [plan[b].tolist() for b in chosen]
            for b, rows, weights in zip(chosen, result["epochs"][epoch],
                                        result["weights"][epoch]):
                assert np.bincount(LABELS[rows], minlength=3).tolist() == [3, 3, 3]
                # N_s / kept_s times Targets' (kept_s / 100) / (1 / 3): N_s * 3 / 100.
                assert weights == plan.batch_weights(b).astype(np.float32).tolist()
                np.testing.assert_allclose(weights, [np.bincount(LABELS)[r] * 3 / 100
                                                     for r in LABELS[rows]], rtol=1e-6)


# ------------------------------------------------------------------ peers

def test_same_composition_as_pytorch_metric_learning_mperclasssampler():
    from pytorch_metric_learning.samplers import MPerClassSampler

    m, n_classes = 4, 3
    torch.manual_seed(0)
    peer = MPerClassSampler(LABELS, m, batch_size=m * n_classes, length_before_new_iter=240)
    rows = list(iter(peer))
    peer_batches = [rows[i:i + m * n_classes] for i in range(0, len(rows), m * n_classes)]
    ours = plan_batches(LABELS, Targets("balanced", m * n_classes), seed=0)
    for batch in peer_batches:
        assert np.bincount(LABELS[batch], minlength=3).tolist() == [m] * n_classes
    for batch in ours:
        assert np.bincount(LABELS[batch], minlength=3).tolist() == [m] * n_classes


def dual_sampler_restated(labels, batch_size, sampling_rate, rng):
    """LibAUC ``DualSampler``'s documented composition, restated (the package cannot install).

    LibAUC 2.0.1 documents: ``num_pos = int(sampling_rate * batch_size)`` (at
    least 1) positives then ``batch_size - num_pos`` negatives per batch,
    ``max(pos // num_pos, neg // num_neg)`` batches, each class walked in a
    shuffled order and reshuffled when it runs out (positives recycled).
    """
    positives, negatives = np.flatnonzero(labels == 1), np.flatnonzero(labels == 0)
    num_pos = max(1, int(sampling_rate * batch_size))
    num_neg = batch_size - num_pos
    num_batches = max(len(positives) // num_pos, len(negatives) // num_neg)

    def stream(rows):
        while True:
            yield from rng.permutation(rows)

    pos, neg = stream(positives), stream(negatives)
    return [[next(pos) for _ in range(num_pos)] + [next(neg) for _ in range(num_neg)]
            for _ in range(num_batches)]


def test_same_composition_as_libauc_dualsampler_restated():
    binary = (LABELS == 1).astype(np.int64)
    peer = dual_sampler_restated(binary, 16, 0.25, np.random.default_rng(0))
    ours = plan_batches(binary, Targets({1: 0.25, 0: 0.75}, 16), seed=0)
    for batch in peer:
        assert np.bincount(binary[batch], minlength=2).tolist() == [12, 4]
    for batch in ours:
        assert np.bincount(binary[batch], minlength=2).tolist() == [12, 4]
    # DualSampler's epoch: floor(237 / 12) = 19 batches; ours covers every negative: 20.
    assert len(peer) == 19 and len(ours) == 20
