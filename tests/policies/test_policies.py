"""Policies: the seam every composition goes through, and the FixedSize composition."""

import json
import re
import warnings

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import pystratum
from pystratum.policies import (Allocation, FixedSize, MinPerStratum, Policy, as_policy,
                                policy_from_params, registered_policies, strata_of_sizes)
from pystratum.policies._fixed_size import fixed_size_num_batches
from _strategies import plan_allowing_one_batch

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
        with pytest.raises(pystratum.SingleBatchError, match=r"^policy=EveryRowItsOwnBatch"):
            pystratum.stratified_batches([0, 1, 1, 0, 2], EveryRowItsOwnBatchPerStratum(), seed=1)
        batches = pystratum.stratified_batches([0, 1, 1, 0, 2], EveryRowItsOwnBatchPerStratum(),
                                               seed=1, allow_single_batch=True)
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


def test_a_policy_class_instead_of_an_instance_says_to_call_it():
    with pytest.raises(TypeError, match=r"^min_samples_per_stratum must be an integer.*the class "
                                        r"FixedSize itself: call it"):
        pystratum.stratified_batches([0, 1] * 5, FixedSize, seed=1)


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
    assert "FixedSize(batch_size=20, min_per_stratum=1, sizes='exact')" in repr(plan)
    assert pystratum.plan_batches([0, 1] * 5, 2, seed=1).min_samples_per_stratum == 2


# ----------------------------------------------------------------- FixedSize

@settings(max_examples=300)
@given(sizes=stratum_sizes, batch_size=st.integers(1, 500), epoch=st.integers(0, 50))
def test_fixed_size_guarantees(sizes, batch_size, epoch):
    sizes = np.asarray(sizes, dtype=np.int64)
    n = int(sizes.sum())
    num_batches = fixed_size_num_batches(n, batch_size)
    policy = FixedSize(batch_size, sizes="balanced")
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
    policy = FixedSize(batch_size, sizes="balanced")
    num_batches = fixed_size_num_batches(int(sizes.sum()), batch_size)
    if sizes.min() < num_batches:
        return
    totals = sum(policy.allocate(strata_of_sizes(sizes), epoch).counts.sum(axis=1)
                 for epoch in range(num_batches))
    # Over B consecutive epochs every batch position gets the same number of rows.
    assert len(set(totals.tolist())) == 1


def test_fixed_size_example_by_hand():
    # 10 + 7 rows, batch_size 5 -> round(17 / 5) = 3 batches of 6, 6, 5 (extras 1 and 1).
    allocation = FixedSize(5, sizes="balanced").allocate(strata_of_sizes([10, 7], ("a", "b")), 0)
    assert allocation.counts.tolist() == [[4, 2], [3, 3], [3, 2]]
    # Epoch 1 starts the extras where epoch 0 stopped (batch 2).
    assert FixedSize(5, sizes="balanced").allocate(strata_of_sizes([10, 7], ("a", "b")), 1).counts.tolist() == [[3, 3], [3, 2], [4, 2]]


@pytest.mark.parametrize("n, batch_size, expected", [(100, 30, 3), (100, 40, 3), (100, 200, 1),
                                                     (100, 201, 1), (5, 2, 3), (7, 2, 4)])
def test_num_batches_rounds_halves_up(n, batch_size, expected):
    assert fixed_size_num_batches(n, batch_size) == expected


@given(sizes=stratum_sizes, batch_size=st.integers(1, 100), m=st.integers(1, 5))
def test_infeasible_fixed_size_names_the_stratum_and_a_batch_size_that_works(sizes, batch_size, m):
    sizes = np.asarray(sizes, dtype=np.int64)
    labels = tuple(f"s{k}" for k in range(len(sizes)))
    try:
        FixedSize(batch_size, m, "balanced").allocate(strata_of_sizes(sizes, labels), 0)
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
    counts = FixedSize(suggested, m, "balanced").allocate(strata_of_sizes(sizes, labels), 0).counts
    assert counts.min() >= m
    if suggested > 1:
        with pytest.raises(ValueError):
            FixedSize(suggested - 1, m, "balanced").allocate(strata_of_sizes(sizes, labels), 0)


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
        assert len(pystratum.stratified_batches(np.arange(50), 1, seed=1,
                                                allow_single_batch=True)) == 1


# ------------------------------------------- hostile parameters, faulty policies

@pytest.fixture
def registry():
    """The policy registry, restored after a test that defines policies."""
    from pystratum.policies import _base

    saved = dict(_base._REGISTRY)
    yield _base._REGISTRY
    _base._REGISTRY.clear()
    _base._REGISTRY.update(saved)


INT_KINDS = [int, np.int8, np.int16, np.int32, np.int64, np.uint8, np.uint16, np.uint32,
             np.uint64]


@pytest.mark.parametrize("kind", INT_KINDS, ids=[k.__name__ for k in INT_KINDS])
def test_every_integer_kind_gives_the_same_plain_policy(kind):
    for policy, plain in [(FixedSize(kind(7), kind(2)), FixedSize(7, 2)),
                          (MinPerStratum(kind(3)), MinPerStratum(3))]:
        assert policy == plain and hash(policy) == hash(plain)
        assert all(type(v) is int for k, v in policy.params().items() if k != "sizes")
        assert json.loads(json.dumps(policy.to_dict())) == plain.to_dict()


@pytest.mark.parametrize("value, error", [
    (np.uint64(2**64 - 1), None), (2**70, None), (True, TypeError), (np.bool_(True), TypeError),
    (5.0, TypeError), (np.float64(5), TypeError), (None, TypeError), ("5", TypeError),
    (np.array(5), TypeError), (np.array([5]), TypeError), (-1, ValueError), (0, ValueError),
    (np.int8(-1), ValueError)])
def test_fixed_size_parameters_of_every_odd_type(value, error):
    for keywords, argument in [({"batch_size": value}, "batch_size"),
                               ({"batch_size": 5, "min_per_stratum": value}, "min_per_stratum")]:
        if error is None:
            policy = FixedSize(**keywords)
            assert json.loads(json.dumps(policy.to_dict()))["params"][argument] == int(value)
        else:
            with pytest.raises(error, match=rf"^{argument} must be .*got {argument}="):
                FixedSize(**keywords)


def test_a_huge_batch_size_is_one_batch_and_a_huge_minimum_a_clear_error():
    labels = np.repeat([0, 1], [30, 10])
    plan = plan_allowing_one_batch(labels, FixedSize(2**70), seed=1)
    assert plan.num_batches == 1 and plan.counts.tolist() == [[30, 10]]
    with pytest.raises(ValueError, match=r"lower min_per_stratum to at most 10"):
        pystratum.plan_batches(labels, FixedSize(1, np.uint64(2**64 - 1)), seed=1)


@pytest.mark.parametrize("batch_size, expected", [(1, [1] * 6), (6, [6]), (7, [6]), (10**9, [6])])
def test_one_stratum_and_batch_sizes_from_one_to_beyond_n(batch_size, expected):
    plan = plan_allowing_one_batch(["x"] * 6, FixedSize(batch_size), seed=4)
    assert [len(b) for b in plan.batches] == expected
    assert sorted(np.concatenate(plan.batches).tolist()) == list(range(6))


def test_strata_of_one_row_take_one_batch_only():
    plan = plan_allowing_one_batch(["a", "b", "c", "a", "b", "c"], FixedSize(6), seed=1)
    assert plan.num_batches == 1
    with pytest.raises(ValueError, match=r"stratum 'a' has only 1 rows.*batch_size >= 4 "):
        pystratum.plan_batches(["a", "b", "c", "b", "c"], FixedSize(2, sizes="balanced"), seed=1)
    with pytest.raises(ValueError, match=r"stratum .a. has 1 row\(s\), fewer than 1 x 2 full.*Use batch_size=3 "):
        pystratum.plan_batches(["a", "b", "c", "b", "c"], FixedSize(2), seed=1)


def test_policy_parameters_are_read_only():
    policy = FixedSize(5)
    with pytest.raises(AttributeError):
        policy.batch_size = 0
    with pytest.raises(AttributeError):
        MinPerStratum(2).m = 0
    assert policy == FixedSize(5)


@pytest.mark.parametrize("policy", [MinPerStratum(3), FixedSize(64, 2),
                                    FixedSize(np.uint64(2**63 + 5))])
def test_policies_and_plans_survive_pickle_and_deepcopy(policy):
    import copy
    import pickle

    for clone in (pickle.loads(pickle.dumps(policy)), copy.deepcopy(policy)):
        assert clone == policy and hash(clone) == hash(policy)
    plan = pystratum.plan_batches(np.repeat([0, 1], [300, 200]), FixedSize(64), seed=3)
    clone = pickle.loads(pickle.dumps(plan))
    assert clone.policy == plan.policy and clone.order.tolist() == plan.order.tolist()


def test_policy_from_params_with_junk():
    with pytest.raises(ValueError, match=r"^policy name must be one of"):
        policy_from_params(None, {})
    with pytest.raises(ValueError, match=r"^policy name must be one of"):
        policy_from_params(["fixed_size"], {})
    with pytest.raises(TypeError, match=r"missing a required argument: 'batch_size'"):
        policy_from_params("fixed_size", {})
    with pytest.raises(TypeError, match=r"keywords must be strings"):
        policy_from_params("fixed_size", {1: 3})
    with pytest.raises(TypeError, match=r"^batch_size must be an integer"):
        policy_from_params("fixed_size", {"batch_size": 3.0})
    from types import MappingProxyType

    assert policy_from_params("fixed_size", MappingProxyType({"batch_size": 3})) == FixedSize(3)


def test_strata_of_sizes_refuses_what_no_data_set_has():
    for sizes in ([], [[1, 2]], [1.5, 2], "12"):
        with pytest.raises(TypeError, match=r"^sizes must be"):
            strata_of_sizes(sizes)
    with pytest.raises(ValueError, match=r"^sizes must be >= 1"):
        strata_of_sizes([0, 5])
    with pytest.raises(ValueError, match=r"^labels must give one label per stratum"):
        strata_of_sizes([1, 2], labels=("a",))


def _policy_returning(allocate, name="test_faulty", **namespace):
    def params(self):
        return {}

    cls = type("Faulty", (Policy,), {"name": name, "params": params,
                                     "allocate": lambda self, strata, epoch: allocate(
                                         strata.sizes, epoch), **namespace})
    return cls()


def _cuts(*columns):
    return np.stack(columns, axis=1)


FAULTY_ALLOCATIONS = {
    "not-an-allocation": (lambda s, e: (_cuts(0 * s, s),), TypeError, "must return a "),
    "none": (lambda s, e: None, TypeError, "must return a "),
    "list-cuts": (lambda s, e: Allocation([[0, x] for x in s]), TypeError, "type list"),
    "float-cuts": (lambda s, e: Allocation(_cuts(0 * s, s).astype(float)), TypeError, "float64"),
    "bool-cuts": (lambda s, e: Allocation(_cuts(0 * s, s) > 0), TypeError, "bool"),
    "1-d": (lambda s, e: Allocation(s), TypeError, r"shape \(3,\)"),
    "too-few-strata": (lambda s, e: Allocation(_cuts(0 * s, s)[:-1]), TypeError, r"shape \(2, 2\)"),
    "no-batch": (lambda s, e: Allocation(_cuts(0 * s)), TypeError, r"B >= 1"),
    "first-not-zero": (lambda s, e: Allocation(_cuts(0 * s + 1, s)), ValueError, "start at 1"),
    "negative": (lambda s, e: Allocation(_cuts(0 * s - 1, s)), ValueError, "start at -1"),
    "decreasing": (lambda s, e: Allocation(_cuts(0 * s, s, s - 2)), ValueError, "decrease"),
    "beyond-size": (lambda s, e: Allocation(_cuts(0 * s, s + 1)), ValueError, "only 10 rows"),
    "empty-batch": (lambda s, e: Allocation(_cuts(0 * s, 0 * s, s)), ValueError, "batch 0 no row"),
    "weights-shape": (lambda s, e: Allocation(_cuts(0 * s, s), np.ones(1)), TypeError,
                      "row_weights of shape"),
    "weights-negative": (lambda s, e: Allocation(_cuts(0 * s, s), -np.ones(3)), ValueError,
                         "finite and >= 0"),
    "weights-nan": (lambda s, e: Allocation(_cuts(0 * s, s), np.full(3, np.nan)), ValueError,
                    "finite and >= 0"),
    "pool-zero": (lambda s, e: Allocation(_cuts(0 * s, 0 * s + 1), pool_sizes=0 * s), ValueError,
                  r"pool_sizes\[0\]=0"),
    "pool-beyond-size": (lambda s, e: Allocation(_cuts(0 * s, s), pool_sizes=s + 1), ValueError,
                         r"pool_sizes\[0\]=11"),
    "pool-float": (lambda s, e: Allocation(_cuts(0 * s, s), pool_sizes=s / 1), TypeError,
                   "pool_sizes of shape"),
    # Past the pool without may_recycle(): the assembly would not draw the extra passes.
    "beyond-pool": (lambda s, e: Allocation(_cuts(0 * s, s), pool_sizes=s // 2), ValueError,
                    "only 5 rows in its pool.*may_recycle"),
}


@pytest.mark.parametrize("case", list(FAULTY_ALLOCATIONS), ids=list(FAULTY_ALLOCATIONS))
def test_a_faulty_allocation_is_an_error_naming_the_policy(registry, case):
    allocate, error, needle = FAULTY_ALLOCATIONS[case]
    policy = _policy_returning(allocate)
    with pytest.raises(error, match=r"^policy Faulty: allocate\(strata, epoch=2\)") as caught:
        pystratum.stratified_batches(np.repeat([0, 1, 2], [10, 6, 4]), policy, seed=1, epoch=2)
    assert re.search(needle, str(caught.value)), str(caught.value)


def test_a_recycling_policy_may_cut_past_its_strata(registry):
    policy = _policy_returning(lambda s, e: Allocation(_cuts(0 * s, s, 2 * s)),
                               may_recycle=lambda self: True)
    plan = pystratum.plan_batches(np.repeat([0, 1, 2], [10, 6, 4]), policy, seed=1)
    assert plan.counts.tolist() == [[10, 6, 4], [10, 6, 4]]
    assert sorted(np.concatenate(plan.batches).tolist()) == sorted(list(range(20)) * 2)


def test_cuts_of_any_integer_dtype_are_used_exactly(registry):
    # int8 cuts with a stratum of 200 rows: the assembly must not wrap them.
    sizes = [200, 100]
    labels = np.repeat([0, 1], sizes)
    for dtype in (np.int8, np.uint8, np.uint64, np.int16):
        policy = _policy_returning(lambda s, e: Allocation(_cuts(0 * s, (s // 2).clip(max=100),
                                                                 s // 2 + 20).astype(dtype)))
        plan = pystratum.plan_batches(labels, policy, seed=1)
        assert plan.counts.tolist() == [[100, 50], [20, 20]]
        assert len(np.unique(np.concatenate(plan.batches))) == 190
        registry.pop("test_faulty")


def test_a_policy_whose_number_of_batches_moves_with_the_epoch_is_caught(registry):
    from pystratum.engine._plan import plan_from_stream
    from pystratum.strata._encode import encode_strata
    from pystratum.streams._base import stream_for

    policy = _policy_returning(lambda s, e: Allocation(np.stack(
        [s * k // (e + 1) for k in range(e + 2)], axis=1)))
    encoded = encode_strata(np.repeat([0, 1], [10, 6]))
    stream = stream_for("numpy", 1, True)
    plan_from_stream(encoded, policy, stream, epoch=0, rng="numpy", num_batches=1)
    with pytest.raises(ValueError, match=r"^policy Faulty: .*2 batches, but epoch 0 has 1"):
        plan_from_stream(encoded, policy, stream, epoch=1, rng="numpy", num_batches=1)


def test_subclasses_must_name_themselves(registry):
    with pytest.raises(TypeError, match=r"must set name = .*rebuilt as FixedSize"):
        class Tweaked(FixedSize):
            pass
    for bad in (123, "", "two words", None.__class__):
        with pytest.raises(TypeError, match=r"name must be a str that is an identifier"):
            type("BadName", (Policy,), {"name": bad, "params": lambda self: {},
                                        "allocate": lambda self, strata, epoch: None})

    class StillAbstract(Policy):  # no name needed: nothing can be built from it
        def params(self):
            return {}

    with pytest.raises(ValueError, match=r"'fixed_size' is already registered by "
                                         r"pystratum.policies._fixed_size.FixedSize"):
        class Impostor(Policy):
            name = "fixed_size"

            def params(self):
                return {}

            def allocate(self, strata, epoch):
                return None


def test_defining_the_same_class_again_replaces_it(registry):
    # A notebook cell run twice, or importlib.reload, defines the class anew.
    classes = []
    for _ in range(2):
        class Again(MinPerStratum):
            name = "test_again"

        classes.append(Again)
    assert registered_policies()["test_again"] is classes[1]
    assert policy_from_params("test_again", {"m": 2}).__class__ is classes[1]


def test_params_that_json_cannot_hold_are_an_error_naming_the_class(registry):
    class Sloppy(FixedSize):
        name = "test_sloppy"

        def params(self):
            return {"batch_size": np.int64(self.batch_size), "min_per_stratum": 1}

    with pytest.raises(TypeError, match=r"^Sloppy.params\(\) must return a dict of plain JSON"):
        Sloppy(4).to_dict()


# ---------------------------------------------- FixedSize through the whole core

column_forms = st.sampled_from(["ints", "strings", "series", "categorical", "frame2", "dict2", "rows2"])


def _strata_in_form(codes, form):
    import pandas as pd

    if form == "ints":
        return codes * 7 - 3
    if form == "strings":
        return np.array([f"s{c}" for c in codes], dtype=object)
    if form == "series":
        return pd.Series(codes.astype(float) / 2)
    if form == "categorical":
        return pd.Categorical([f"c{c}" for c in codes], categories=[f"c{c}" for c in
                                                                   sorted(set(codes))][::-1])
    # Two columns whose combinations are exactly the strata.
    first, second = codes // 3, np.array(["u", "v", "w"], dtype=object)[codes % 3]
    if form == "frame2":
        return pd.DataFrame({"a": first, "b": second})
    if form == "dict2":
        return {"a": first, "b": second}
    return list(zip(first.tolist(), second.tolist()))  # rows2: a list of row tuples


@settings(max_examples=60)
@given(sizes=st.lists(st.integers(1, 60), min_size=1, max_size=7), batch_size=st.integers(1, 120),
       epoch=st.integers(0, 40), seed=st.integers(0, 2**31), form=column_forms, data=st.data())
def test_fixed_size_through_the_core_in_every_column_form(sizes, batch_size, epoch, seed, form,
                                                          data):
    codes = np.repeat(np.arange(len(sizes)), sizes)
    codes = codes[np.random.default_rng(seed).permutation(codes.shape[0])]
    policy = FixedSize(batch_size, sizes="balanced")
    num_batches = fixed_size_num_batches(codes.shape[0], batch_size)
    strata = _strata_in_form(codes, form)
    if min(sizes) < num_batches:
        with pytest.raises(ValueError, match=r"^batch_size="):
            pystratum.plan_batches(strata, policy, seed=seed, epoch=epoch)
        return
    plan = plan_allowing_one_batch(strata, policy, seed=seed, epoch=epoch)
    batches = plan.batches
    # Every row exactly once.
    assert sorted(np.concatenate(batches).tolist()) == list(range(codes.shape[0]))
    # Per-batch stratum counts are the allocation's counts (strata in the plan's label order).
    from pystratum.strata._encode import encode_strata

    plan_codes = encode_strata(strata).codes  # columns of plan.counts
    observed = np.array([np.bincount(plan_codes[b], minlength=len(sizes)) for b in batches])
    np.testing.assert_array_equal(observed, plan.counts)
    assert set(observed.sum(axis=1).tolist()) <= {codes.shape[0] // num_batches,
                                                  -(-codes.shape[0] // num_batches)}
    assert (observed.max(axis=0) - observed.min(axis=0) <= 1).all()
    # Relabelling (a permutation of the codes) and another column form change nothing.
    relabel = np.array(data.draw(st.permutations(range(len(sizes)))))
    other = _strata_in_form(relabel[codes], data.draw(column_forms))
    again = pystratum.plan_batches(other, policy, seed=seed, epoch=epoch, allow_single_batch=True)
    assert [b.tolist() for b in again.batches] == [b.tolist() for b in batches]
    # The rotation is periodic in the epoch: epoch k and k + B share counts.
    shifted = policy.allocate(strata_of_sizes(sizes), epoch + num_batches)
    np.testing.assert_array_equal(shifted.counts, policy.allocate(strata_of_sizes(sizes),
                                                                  epoch).counts)
