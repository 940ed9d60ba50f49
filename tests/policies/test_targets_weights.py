"""Importance weights of Targets plans, and WeightedDataset's refusal of policies without them.

``w_s = (N_s / N) / (served_s / served)``, ``served_s / served`` the stratum's
long-run share of the rows served (``w_s / W`` of the policy's integer
weights), so a weighted mean over the rows served estimates the mean loss on
the data's own class distribution. Python and R give identical weights.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch
from hypothesis import given, settings, strategies as st
from torch.utils.data import DataLoader, TensorDataset

import pystratum
from _r_helpers import r_function, r_session  # noqa: F401 (fixture)
from pystratum.policies import Downsample, FixedSize, MinPerStratum, Targets
from pystratum.torch import StratifiedBatchSampler, StratifiedSampler, WeightedDataset

Y = np.repeat([0, 1], [970, 30])  # 3% positives


def expected_weights(sizes, shares):
    """(N_s / N) / share_s, shares as the policy's integer weights at 1e-6 resolution."""
    sizes = np.asarray(sizes, dtype=np.float64)
    units = np.floor(np.asarray(shares, dtype=np.float64) * 1e6 + 0.5)
    out = np.zeros_like(sizes)
    positive = units > 0
    out[positive] = (sizes[positive] * units.sum()) / (sizes.sum() * units[positive])
    return out


def test_balanced_targets_carry_the_weights_the_issue_asks_for():
    plan = pystratum.plan_batches(Y, Targets("balanced", 64), seed=1)
    assert plan.weights is not None and plan.weights.dtype == np.float64
    assert plan.weights.shape == plan.order.shape
    by_stratum = {0: 0.97 / 0.5, 1: 0.03 / 0.5}
    np.testing.assert_allclose(plan.weights, [by_stratum[y] for y in Y[plan.order]], rtol=1e-15)
    for b in range(len(plan)):
        rows = plan[b]
        np.testing.assert_array_equal(plan.batch_weights(b), plan.weights[
            plan.bounds[b]:plan.bounds[b + 1]])
        # Every batch is 32 + 32: the weighted mean of "is positive" is the data's 3%.
        weights = plan.batch_weights(b)
        assert abs((weights * (Y[rows] == 1)).sum() / len(rows) - 0.03) < 1e-12


@settings(max_examples=200)
@given(sizes=st.lists(st.integers(1, 500), min_size=1, max_size=6), data=st.data(),
       batch_size=st.integers(1, 64), epoch_mode=st.sampled_from(["largest", "smallest", 7]))
def test_weights_undo_the_served_shares(sizes, data, batch_size, epoch_mode):
    n_strata = len(sizes)
    raw = data.draw(st.lists(st.integers(0, 20), min_size=n_strata, max_size=n_strata))
    if sum(raw) == 0 or sum(1 for r in raw if r) > batch_size:
        return
    shares = {k: r / sum(raw) for k, r in enumerate(raw)}
    shares[max(shares, key=shares.get)] += 1 - sum(shares.values())
    labels = np.repeat(np.arange(n_strata), sizes)
    try:
        plan = pystratum.plan_batches(labels, Targets(shares, batch_size, epoch_mode), seed=3)
    except ValueError:
        return  # infeasible or too large an epoch for the input: other suites cover these
    weights = plan.weights
    per_stratum = np.zeros(n_strata)
    per_stratum[labels[plan.order]] = weights
    want = expected_weights(sizes, [shares[k] for k in range(n_strata)])
    served = np.bincount(labels[plan.order], minlength=n_strata) > 0
    np.testing.assert_allclose(per_stratum[served], want[served], rtol=1e-15)
    # Served share times weight gives back each stratum's share of the data.
    units = np.floor(np.array([shares[k] for k in range(n_strata)]) * 1e6 + 0.5)
    positive = units > 0
    np.testing.assert_allclose((units / units.sum() * want)[positive],
                               (np.asarray(sizes) / sum(sizes))[positive], rtol=1e-12)
    assert (want[~positive] == 0).all()
    # The same in every epoch (WeightedDataset keeps one table).
    again = pystratum.plan_batches(labels, Targets(shares, batch_size, epoch_mode), seed=3,
                                   epoch=2)
    per_epoch = np.zeros(n_strata)
    per_epoch[labels[again.order]] = again.weights
    np.testing.assert_array_equal(per_epoch[served], per_stratum[served])


def test_downsample_over_targets_weights_the_kept_rows_back_to_the_data():
    # Keep 10% of stratum 0 (97 rows), then serve balanced batches of the kept rows.
    plan = pystratum.plan_batches(Y, Downsample({0: 0.1}, Targets("balanced", 20)), seed=2)
    per_stratum = {int(Y[r]): w for r, w in zip(plan.order, plan.weights)}
    # Downsample's N_s / kept_s times Targets' weights on the kept rows (97 + 30).
    sizes, kept = {0: 970, 1: 30}, {0: 97, 1: 30}
    for s in (0, 1):
        want = (sizes[s] / kept[s]) * (kept[s] / 127) / 0.5
        assert per_stratum[s] == pytest.approx(want, rel=1e-14)


# ------------------------------------------------------------- WeightedDataset

DATA = TensorDataset(torch.arange(len(Y), dtype=torch.float32), torch.as_tensor(Y))


@pytest.mark.parametrize("policy", [MinPerStratum(3), FixedSize(64), 5],
                         ids=["min_per_stratum", "fixed_size", "int"])
def test_a_policy_without_weights_is_refused_naming_it(policy):
    sampler = StratifiedBatchSampler(Y, policy, seed=1)
    with pytest.raises(ValueError, match=r"^sampler's policy (MinPerStratum|FixedSize)\(.*\) has "
                                         r"no importance weights"):
        WeightedDataset.for_sampler(DATA, sampler)


def test_weights_are_float32_unless_asked_and_match_the_plan():
    sampler = StratifiedBatchSampler(Y, Targets("balanced", 64), seed=4)
    wrapped = WeightedDataset.for_sampler(DATA, sampler)
    item = wrapped[0]
    assert item[-1].dtype == torch.float32 and item[-1].shape == ()
    loader = DataLoader(wrapped, batch_sampler=sampler)
    plan = sampler.plan(0)
    for b, (x, y, w) in enumerate(loader):
        assert w.dtype == torch.float32
        np.testing.assert_allclose(w.numpy(), plan.batch_weights(b).astype(np.float32))
        loss = torch.nn.functional.binary_cross_entropy_with_logits(
            x * 0, y.float(), reduction="none")
        assert (w * loss).dtype == torch.float32  # no upcast of a float32 loss
        if b == 2:
            break
    double = WeightedDataset.for_sampler(DATA, sampler, dtype=torch.float64)
    assert double[0][-1].dtype == torch.float64
    with pytest.raises(TypeError, match=r"^dtype must be a floating torch.dtype"):
        WeightedDataset.for_sampler(DATA, sampler, dtype=torch.int64)
    with pytest.raises(TypeError, match=r"^dtype must be a floating torch.dtype"):
        WeightedDataset(DATA, np.ones(len(Y)), dtype="float32")


def test_the_sampler_face_gives_the_same_weights():
    flat = StratifiedSampler(Y, Targets("balanced", 64), seed=4)
    wrapped = WeightedDataset.for_sampler(DATA, flat)
    batch_face = WeightedDataset.for_sampler(DATA, flat.batch_sampler)
    assert torch.equal(wrapped.weights, batch_face.weights)
    with pytest.raises(ValueError, match=r"^sampler's policy FixedSize"):
        WeightedDataset.for_sampler(DATA, StratifiedSampler(Y, batch_size=64, seed=1))


# ----------------------------------------------------------------- R, live

@settings(max_examples=30, deadline=None)
@given(sizes=st.lists(st.integers(1, 60), min_size=2, max_size=5), batch_size=st.integers(2, 20),
       seed=st.integers(0, 2**31 - 2), epoch=st.integers(0, 2), balanced=st.booleans())
def test_r_gives_the_same_weights(r_session, sizes, batch_size, seed, epoch, balanced):
    labels = np.random.default_rng(seed % 11).permutation(np.repeat(np.arange(len(sizes)),
                                                                    sizes))
    if balanced:
        shares = "balanced"
    else:
        raw = np.arange(1, len(sizes) + 1, dtype=np.float64)
        shares = {int(k): float(v) for k, v in enumerate(raw / raw.sum())}
    try:
        plan = pystratum.plan_batches(labels, Targets(shares, batch_size), seed=seed,
                                      epoch=epoch, rng="R")
    except ValueError:
        return
    call = r_function(r_session, """function(y, shares, batch_size, seed, epoch) {
      if (!identical(shares, "balanced")) shares = as.list(shares)
      out = pystratum::stratified_batches(y, pystratum::policy_targets(shares, batch_size),
        seed = seed, epoch = epoch)
      list(batches = lapply(out, as.integer), weights = attr(out, "weights"))
    }""")
    with r_session.calling():
        r_shares = "balanced" if balanced else r_session.ro.ListVector(
            {str(k): v for k, v in shares.items()})
        out = call(r_session.ro.IntVector(labels.tolist()), r_shares, batch_size, seed, epoch)
        r_batches = [list(b) for b in out.rx2("batches")]
        r_weights = [np.asarray(w, dtype=np.float64) for w in out.rx2("weights")]
    assert r_batches == [(b + 1).tolist() for b in plan.batches]
    assert len(r_weights) == len(plan)
    for b, weights in enumerate(r_weights):
        np.testing.assert_array_equal(weights, plan.batch_weights(b))
