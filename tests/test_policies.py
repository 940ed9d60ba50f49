"""Policies: the seam every composition goes through, and the FixedSize composition."""

import json
import warnings

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import pystratum
from pystratum.policies import (Allocation, FixedSize, MinPerStratum, Policy, as_policy,
                                policy_from_params, registered_policies, strata_of_sizes)
from pystratum.policies._fixed_size import fixed_size_num_batches

stratum_sizes = st.lists(st.integers(1, 400), min_size=1, max_size=8)


def _check_cuts(allocation: Allocation, sizes):
    cuts = np.asarray(allocation.cuts, dtype=np.int64)
    assert cuts.shape[0] == len(sizes)
    assert (cuts[:, 0] == 0).all()
    assert (np.diff(cuts, axis=1) >= 0).all()
    assert (cuts[:, -1] <= np.asarray(sizes)).all()


# ---------------------------------------------------------------- the protocol

@pytest.mark.parametrize("policy", [MinPerStratum(3), FixedSize(64), FixedSize(10, 2)])
def test_params_round_trip_through_json(policy):
    record = json.loads(json.dumps(policy.to_dict()))
    rebuilt = policy_from_params(record["name"], record["params"])
    assert rebuilt == policy and type(rebuilt) is type(policy)
    assert hash(rebuilt) == hash(policy)
    assert repr(policy).startswith(type(policy).__name__ + "(")


def test_registry_lists_the_policies_by_name():
    registry = registered_policies()
    assert registry["min_per_stratum"] is MinPerStratum
    assert registry["fixed_size"] is FixedSize


def test_a_new_policy_registers_itself_and_runs_through_the_core():
    class EveryRowItsOwnBatchPerStratum(Policy):  # one batch per stratum row rank: a toy composition
        name = "test_all_in_one"

        def params(self):
            return {}

        def allocate(self, strata, epoch):
            sizes = strata.sizes
            return Allocation(np.stack([np.zeros_like(sizes), sizes], axis=1))

    try:
        assert policy_from_params("test_all_in_one", {}) == EveryRowItsOwnBatchPerStratum()
        batches = pystratum.stratified_batches([0, 1, 1, 0, 2], EveryRowItsOwnBatchPerStratum(),
                                               seed=1)
        assert len(batches) == 1 and sorted(batches[0].tolist()) == [0, 1, 2, 3, 4]
    finally:
        from pystratum.policies import _base
        _base._REGISTRY.pop("test_all_in_one")


def test_unknown_names_and_bad_params_are_refused_with_the_fix():
    with pytest.raises(ValueError, match=r"policy name must be one of .*'fixed_size'"):
        policy_from_params("fixed", {"batch_size": 3})
    with pytest.raises(TypeError, match=r"do not fit 'fixed_size'"):
        policy_from_params("fixed_size", {"size": 3})
    with pytest.raises(TypeError, match=r"params must be a dict"):
        policy_from_params("fixed_size", [3])


@pytest.mark.parametrize("value", [None, 2.0, "2", True, [2]])
def test_anything_but_an_int_or_a_policy_is_refused_as_min_samples_per_stratum(value):
    with pytest.raises(TypeError, match=r"^min_samples_per_stratum must be an integer.*policy"):
        as_policy(value)


def test_an_int_is_shorthand_for_min_per_stratum_everywhere():
    labels = np.repeat([0, 1, 2], [30, 7, 12])
    for shorthand in (3, np.int16(3)):
        assert as_policy(shorthand) == MinPerStratum(3)
    a = pystratum.stratified_batches(labels, 3, seed=5)
    b = pystratum.stratified_batches(labels, MinPerStratum(3), seed=5)
    c = pystratum.stratified_batches(labels, min_samples_per_stratum=3, seed=5)
    for x, y, z in zip(a, b, c):
        np.testing.assert_array_equal(x, y)
        np.testing.assert_array_equal(x, z)
    with pytest.raises(TypeError, match="not both"):
        pystratum.stratified_batches(labels, 3, min_samples_per_stratum=3)


def test_plan_records_its_policy():
    plan = pystratum.plan_batches(np.repeat([0, 1], [50, 50]), FixedSize(20), seed=1)
    assert plan.policy == FixedSize(20) and plan.min_samples_per_stratum is None
    assert "FixedSize(batch_size=20, min_per_stratum=1)" in repr(plan)
    assert pystratum.plan_batches([0, 1] * 5, 2, seed=1).min_samples_per_stratum == 2


# ----------------------------------------------------------------- FixedSize

@settings(max_examples=300)
@given(sizes=stratum_sizes, batch_size=st.integers(1, 500), epoch=st.integers(0, 50))
def test_fixed_size_guarantees(sizes, batch_size, epoch):
    sizes = np.asarray(sizes, dtype=np.int64)
    n = int(sizes.sum())
    num_batches = fixed_size_num_batches(n, batch_size)
    policy = FixedSize(batch_size)
    if sizes.min() < num_batches:
        with pytest.raises(ValueError, match="batch_size"):
            policy.allocate(strata_of_sizes(sizes), epoch)
        return
    allocation = policy.allocate(strata_of_sizes(sizes), epoch)
    _check_cuts(allocation, sizes)
    counts = allocation.counts
    assert allocation.num_batches == num_batches == max(1, round(n / batch_size + 1e-12))
    # Every row once: the cuts end at the stratum sizes.
    assert (np.asarray(allocation.cuts)[:, -1] == sizes).all()
    totals = counts.sum(axis=1)
    assert set(totals.tolist()) <= {n // num_batches, -(-n // num_batches)}
    assert (counts.max(axis=0) - counts.min(axis=0) <= 1).all()
    assert (counts >= 1).all()


@given(sizes=stratum_sizes, batch_size=st.integers(1, 200))
def test_fixed_size_extras_rotate_so_no_batch_is_always_the_big_one(sizes, batch_size):
    sizes = np.asarray(sizes, dtype=np.int64)
    policy = FixedSize(batch_size)
    num_batches = fixed_size_num_batches(int(sizes.sum()), batch_size)
    if sizes.min() < num_batches:
        return
    totals = sum(policy.allocate(strata_of_sizes(sizes), epoch).counts.sum(axis=1)
                 for epoch in range(num_batches))
    # Over B consecutive epochs every batch position gets the same number of rows.
    assert len(set(totals.tolist())) == 1


def test_fixed_size_example_by_hand():
    # 10 + 7 rows, batch_size 5 -> round(17 / 5) = 3 batches of 6, 6, 5 (extras 1 and 1).
    allocation = FixedSize(5).allocate(strata_of_sizes([10, 7], ("a", "b")), 0)
    assert allocation.counts.tolist() == [[4, 2], [3, 3], [3, 2]]
    # Epoch 1 starts the extras where epoch 0 stopped (batch 2).
    assert FixedSize(5).allocate(strata_of_sizes([10, 7], ("a", "b")), 1).counts.tolist() == [[3, 3], [3, 2], [4, 2]]


@pytest.mark.parametrize("n, batch_size, expected", [(100, 30, 3), (100, 40, 3), (100, 200, 1),
                                                     (100, 201, 1), (5, 2, 3), (7, 2, 4)])
def test_num_batches_rounds_halves_up(n, batch_size, expected):
    assert fixed_size_num_batches(n, batch_size) == expected


@given(sizes=stratum_sizes, batch_size=st.integers(1, 100), m=st.integers(1, 5))
def test_infeasible_fixed_size_names_the_stratum_and_a_batch_size_that_works(sizes, batch_size, m):
    sizes = np.asarray(sizes, dtype=np.int64)
    labels = tuple(f"s{k}" for k in range(len(sizes)))
    try:
        FixedSize(batch_size, m).allocate(strata_of_sizes(sizes, labels), 0)
        return
    except ValueError as error:
        message = str(error)
    smallest = int(np.argmin(sizes))
    assert message.startswith(f"batch_size={batch_size} ")
    assert repr(labels[smallest]) in message and f"only {sizes.min()} rows" in message
    if sizes.min() < m:
        assert "lower min_per_stratum" in message
        return
    suggested = int(message.split("batch_size >= ")[1].split(" ")[0])
    # The suggestion works, and one less does not: it is the smallest feasible size.
    counts = FixedSize(suggested, m).allocate(strata_of_sizes(sizes, labels), 0).counts
    assert counts.min() >= m
    if suggested > 1:
        with pytest.raises(ValueError):
            FixedSize(suggested - 1, m).allocate(strata_of_sizes(sizes, labels), 0)


@pytest.mark.parametrize("kwargs, argument", [({"batch_size": 0}, "batch_size"),
                                              ({"batch_size": 2.0}, "batch_size"),
                                              ({"batch_size": True}, "batch_size"),
                                              ({"batch_size": 4, "min_per_stratum": 0},
                                               "min_per_stratum")])
def test_fixed_size_arguments_are_checked(kwargs, argument):
    with pytest.raises((TypeError, ValueError), match=f"^{argument} must be"):
        FixedSize(**kwargs)


def test_fixed_size_takes_strata_in_order_of_first_appearance_not_label_order():
    # Same rows, labels swapped: the batches must not change (only the partition matters).
    rows = np.repeat([0, 1, 0, 1], [10, 7, 5, 3])
    a = pystratum.stratified_batches(rows, FixedSize(5), seed=2, epoch=1)
    b = pystratum.stratified_batches(1 - rows, FixedSize(5), seed=2, epoch=1)
    c = pystratum.stratified_batches(np.where(rows == 0, "z", "a"), FixedSize(5), seed=2, epoch=1)
    for x, y, z in zip(a, b, c):
        np.testing.assert_array_equal(x, y)
        np.testing.assert_array_equal(x, z)


def test_fixed_size_batches_through_the_core():
    labels = np.repeat(["pos", "neg"], [30, 970])
    plan = pystratum.plan_batches(labels, FixedSize(100), seed=3)
    assert plan.num_batches == 10
    seen = np.concatenate(plan.batches)
    assert sorted(seen.tolist()) == list(range(1000))
    for batch in plan.batches:
        assert len(batch) == 100
        assert (labels[batch] == "pos").sum() == 3


# -------------------------------------------------------- guard: not group labels

def test_about_one_row_per_stratum_is_refused():
    with pytest.raises(ValueError, match=r"^strata has 600 distinct strata for 600 rows.*qcut"):
        pystratum.stratified_batches(np.arange(600), 1, seed=1)
    # Small data with few rows per stratum stays allowed.
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert len(pystratum.stratified_batches(np.arange(50), 1, seed=1)) == 1
