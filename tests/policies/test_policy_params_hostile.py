"""Hostile parameters for the policies, the negatives sampler and ``log_q`` (issue 18, 5-7).

Every outcome must be a valid plan (or sampler, or log-probabilities) or a
TypeError/ValueError naming the argument: never OverflowError, IndexError,
MemoryError or KeyError, and never an allocation sized by a parameter rather
than by the input. Inputs are small (100 rows, 8 pairs), so a huge parameter
that got through would have to serve far more than the input holds: every
accepted plan is checked against the bound ``max(16 N, 2**24)`` rows, and the
explicit cases below assert the refusals themselves, not their speed.
"""

from __future__ import annotations

import math
import warnings
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from pystratum import plan_batches
from pystratum.base._validation import MAX_SERVED_ROWS
from pystratum.negatives import NegativePairSampler
from pystratum.policies import Downsample, FixedSize, MinPerStratum, Targets
from _strategies import plan_allowing_one_batch

LABELS = np.array([0] * 60 + [1] * 30 + [2] * 10)
N = LABELS.shape[0]
USERS = np.array([0, 0, 1, 2, 2, 3, 4, 4])
ITEMS = np.array([1, 4, 2, 0, 3, 4, 0, 1])

HUGE = [2**31 - 1, 2**31, 2**53, 2**53 + 1, 2**63 - 1, 2**63, 2**64, 2**70, 10**9, 10**12,
        -(2**63), -1, 0]

# Anything a caller might pass where a size is expected.
hostile = st.one_of(
    st.integers(-3, 40),
    st.sampled_from(HUGE),
    st.sampled_from([np.int8(3), np.int16(7), np.int32(5), np.int64(6), np.uint8(4),
                     np.uint64(2**64 - 1), np.int64(-2), np.float32(2.0), np.float64(3.0),
                     np.bool_(True), np.int64(2**62)]),
    st.booleans(),
    st.floats(allow_nan=True, allow_infinity=True),
    st.sampled_from([float("nan"), float("inf"), -float("inf"), 2.5, 1e300, 3.0]),
    st.text(max_size=3),
    st.sampled_from(["largest", "smallest", "balanced", "5", ""]),
    st.none(),
    st.lists(st.integers(0, 5), max_size=2),
    st.tuples(st.integers(0, 3)),
    st.dictionaries(st.integers(0, 3), st.floats(0, 1), max_size=2),
    st.sampled_from([Fraction(1, 2), complex(1, 0), b"5", object()]),
)

# (constructor slot, the argument names an error may name)
SLOTS = {
    "MinPerStratum(v)": (lambda v: MinPerStratum(v), ("min_samples_per_stratum",)),
    "FixedSize(v)": (lambda v: FixedSize(v), ("batch_size",)),
    "FixedSize(30, v)": (lambda v: FixedSize(30, v), ("min_per_stratum",)),
    "Targets('balanced', v)": (lambda v: Targets("balanced", v), ("batch_size",)),
    "Targets('balanced', 6, v)": (lambda v: Targets("balanced", 6, v), ("epoch",)),
    "Targets({0: v, 1: .5, 2: .5 - v}, 6)": (
        lambda v: Targets({0: v, 1: 0.5, 2: 0.5 - v if isinstance(v, float) else 0.5}, 6),
        ("shares",)),
    "Targets(v, 6)": (lambda v: Targets(v, 6), ("shares",)),
    "Downsample({0: v}, 2)": (lambda v: Downsample({0: v}, 2), ("keep",)),
    "Downsample(v, 2)": (lambda v: Downsample(v, 2), ("keep",)),
    "Downsample({0: .5}, v)": (lambda v: Downsample({0: 0.5}, v), ("base",)),
    "Downsample({0: .5}, Targets('balanced', v))": (
        lambda v: Downsample({0: 0.5}, Targets("balanced", v)), ("batch_size",)),
}

OUTCOMES = {"plan": 0, "refused": 0}


def _names_argument(error: Exception, names) -> bool:
    text = str(error)
    return any(f"{name}=" in text or f"{name}[" in text or f"{name} must" in text or
               f"{name} names" in text for name in names)


@given(slot=st.sampled_from(sorted(SLOTS)), value=hostile,
       rng=st.sampled_from(["numpy", "R", "index"]))
@settings(max_examples=400)
@example(slot="Targets('balanced', v)", value=2**70, rng="numpy")
@example(slot="Targets('balanced', v)", value=10**9, rng="numpy")
@example(slot="Targets('balanced', 6, v)", value=10**12, rng="numpy")
@example(slot="Targets('balanced', 6, v)", value=2**31 - 1, rng="R")
@example(slot="Downsample({0: .5}, Targets('balanced', v))", value=10**9, rng="numpy")
def test_policy_parameters_give_a_plan_or_a_named_error(slot, value, rng):
    make, names = SLOTS[slot]
    try:
        policy = make(value)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            plan = plan_allowing_one_batch(LABELS, policy, seed=1, rng=rng)
    except (TypeError, ValueError) as error:
        assert _names_argument(error, names), (slot, value, str(error))
        OUTCOMES["refused"] += 1
        return
    OUTCOMES["plan"] += 1
    rows = plan.order.shape[0]
    assert 0 < rows <= max(16 * N, MAX_SERVED_ROWS)
    assert plan.bounds[0] == 0 and plan.bounds[-1] == rows
    assert np.all(np.diff(plan.bounds) > 0)
    assert plan.order.min() >= 0 and plan.order.max() < N


@pytest.mark.parametrize("make, name, words", [
    (lambda: Targets("balanced", 2**70), "batch_size", "batch_size must be an integer 1 <= "),
    (lambda: Targets("balanced", 6, 2**70), "epoch", "epoch must be an integer 1 <= "),
    (lambda: Targets("balanced", 10**9), "batch_size",
     "batch_size=1000000000 makes an epoch of 1 batch(es) of 1,000,000,000 rows"),
    (lambda: Targets("balanced", 6, 10**12), "epoch",
     "epoch=1000000000000 makes an epoch of 1,000,000,000,000 batch(es) of 6 rows"),
    (lambda: Targets("balanced", 6, 2**31 - 1), "epoch", "about 240.0 GiB"),
])
def test_huge_target_sizes_are_refused_with_an_estimate(make, name, words):
    with pytest.raises(ValueError) as error:
        plan_batches(LABELS, make(), seed=1)
    assert str(error.value).startswith(name)
    assert words in str(error.value)
    if "makes" in words:
        assert "at most max(16 N, 2**24) = 16,777,216" in str(error.value)


def test_targets_bound_follows_the_input():
    # The same epoch size is refused on 100 rows and served when the input is that large:
    # the bound is max(16 N, 2**24) rows an epoch, not a fixed cap on big data.
    policy = Targets("balanced", 3, epoch=10)
    assert plan_batches(LABELS, policy, seed=1).num_batches == 10


def test_downsample_base_is_named():
    with pytest.raises(TypeError, match=r"^base must be a policy.*got base='fixed'"):
        Downsample({0: 0.5}, "fixed")


# --- negatives -------------------------------------------------------------------------------

NEGATIVE_SLOTS = ("negatives", "batch_size", "num_items", "num_users", "max_rounds",
                  "num_replicas", "rank")


def _sampler(**overrides):
    arguments = dict(num_items=5, negatives=2, batch_size=3, seed=1)
    arguments.update(overrides)
    return NegativePairSampler(USERS, ITEMS, **arguments)


@given(slot=st.sampled_from(NEGATIVE_SLOTS), value=hostile,
       rng=st.sampled_from(["numpy", "R"]))
@settings(max_examples=300)
@example(slot="negatives", value=10**9, rng="R")
@example(slot="negatives", value=2**70, rng="numpy")
@example(slot="num_users", value=10**12, rng="numpy")
@example(slot="batch_size", value=2**70, rng="numpy")
def test_negatives_parameters_give_batches_or_a_named_error(slot, value, rng):
    overrides = {slot: value, "rng": rng}
    if slot == "rank":
        overrides["num_replicas"] = 4
    if slot == "num_users" and value is None:
        pass
    try:
        sampler = _sampler(**overrides)
        batch = sampler.batch(0, 0)
    except (TypeError, ValueError) as error:
        names = (slot, "num_replicas") if slot == "rank" else (slot,)
        if slot == "num_items":
            names = names + ("items",)  # ids beyond a small num_items: named as the ids
        if slot == "num_users":
            names = names + ("users",)
        assert _names_argument(error, names), (slot, value, str(error))
        return
    rows = len(batch)
    assert rows == batch.num_positives * (1 + sampler.negatives)
    assert rows <= max(16 * USERS.shape[0], MAX_SERVED_ROWS)


def test_negatives_beyond_the_input_are_refused_with_an_estimate():
    with pytest.raises(ValueError, match=r"^negatives=1000000000 makes batches of 3 observed "
                                         r"pair\(s\) with 1,000,000,000 negative\(s\) each: "
                                         r"3,000,000,003 rows served.*GiB"):
        _sampler(negatives=10**9)
    sampler = _sampler(negatives=2**22, batch_size=1)  # one batch fits, the epoch does not
    with pytest.raises(ValueError, match=r"^negatives=4194304 makes an epoch of 8 observed"):
        sampler.epoch_batches(0)


def test_num_users_does_not_size_the_tables():
    sampler = _sampler(num_users=10**12)
    assert sampler.batch(0, 0).num_positives == 3
    # A user without pairs: every item free.
    assert sampler.log_q([10**12 - 1], [3])[0] == pytest.approx(-math.log(5))


# --- log_q ids -------------------------------------------------------------------------------

ids = st.one_of(
    st.integers(-3, 8), st.sampled_from([2**31, 2**63, 2**70, 10**12 - 1, 10**12]),
    st.floats(allow_nan=True, allow_infinity=True), st.booleans(),
    st.sampled_from([np.int64(2), np.uint64(2**64 - 1), np.float32(1.5), np.bool_(False),
                     "1", None, b"1"]),
)


@given(users=st.one_of(ids, st.lists(ids, max_size=3)),
       items=st.one_of(ids, st.lists(ids, max_size=3)),
       pair_with=st.sampled_from(["user", "random"]), reject=st.booleans())
@settings(max_examples=300)
@example(users=[-1], items=[0], pair_with="user", reject=True)
@example(users=[0], items=[99], pair_with="user", reject=True)
@example(users=[0.5], items=[0], pair_with="user", reject=True)
@example(users=[5], items=[0], pair_with="user", reject=True)
def test_log_q_checks_its_ids(users, items, pair_with, reject):
    sampler = _sampler(pair_with=pair_with, reject_observed=reject)
    try:
        out = sampler.log_q(users, items)
    except (TypeError, ValueError) as error:
        assert _names_argument(error, ("users", "items")), (users, items, str(error))
        return
    out = np.asarray(out)
    flat_users = np.ravel(np.asarray(users, dtype=np.float64))
    flat_items = np.ravel(np.asarray(items, dtype=np.float64))
    for array, upper in ((flat_users, sampler.num_users), (flat_items, sampler.num_items)):
        assert np.all((array >= 0) & (array < upper) & (array == np.trunc(array)))
    assert out.dtype == np.float64 and not np.isnan(out).any()


@pytest.mark.parametrize("users, items, error, words", [
    ([-1], [0], ValueError, "users must hold ids >= 0"),
    ([0], [99], ValueError, "items must hold ids in [0, num_items=5)"),
    ([5], [0], ValueError, "users must hold ids in [0, num_users=5)"),
    ([0.5], [0], TypeError, "users must hold whole-number ids"),
    ([True], [0], TypeError, "users must hold integer ids"),
    ([float("nan")], [0], ValueError, "users must not hold NaN"),
    ([2**70], [0], ValueError, "users must hold ids below 2^63"),
])
def test_log_q_refuses_bad_ids(users, items, error, words):
    with pytest.raises(error) as raised:
        _sampler().log_q(users, items)
    assert words in str(raised.value)
