"""ClassesPerBatch's lazy plan (rng="index"): batch b alone equals the materialised batch b."""

import warnings

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import pystratum
from _vectors import arguments_from_case, load_cases, policy_from_case, zero_based
from pystratum import grouped_strata, lazy_plan, plan_batches
from pystratum.policies import ClassesPerBatch, SlotRefills, SmallStrataWarning
from pystratum.strata._encode import encode_strata


def _labels(sizes, seed):
    return np.random.default_rng(seed).permutation(np.repeat(np.arange(len(sizes)), sizes))


@st.composite
def _cases(draw):
    sizes = draw(st.lists(st.integers(1, 150), min_size=1, max_size=12))
    per_class = draw(st.integers(1, 9))
    small = draw(st.sampled_from(["repeat", "drop", "error"]))
    if small == "error":
        sizes = [max(size, per_class) for size in sizes]
    servable = len(sizes) if small != "drop" else sum(size >= per_class for size in sizes)
    if servable == 0:
        sizes = sizes + [per_class]
        servable = 1
    classes_per_batch = draw(st.integers(1, servable))
    classes = draw(st.sampled_from(["proportional", "uniform"]))
    num_batches = None
    if classes == "uniform" and draw(st.booleans()):
        num_batches = draw(st.integers(1, 40))
    policy = ClassesPerBatch(classes_per_batch, per_class, classes=classes, small=small,
                             num_batches=num_batches)
    return sizes, policy


def _plans(y, policy, seed, epoch):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", SmallStrataWarning)
        try:
            expected = plan_batches(y, policy, seed=seed, rng="index", epoch=epoch)
        except ValueError as error:  # infeasible: the lazy plan says the same
            with pytest.raises(ValueError) as raised:
                lazy_plan(y, policy, seed=seed, epoch=epoch)
            assert str(raised.value) == str(error)
            return None, None
        return expected, lazy_plan(y, policy, seed=seed, epoch=epoch)


@settings(max_examples=120)
@given(case=_cases(), shuffle_seed=st.integers(0, 2**32 - 1), seed=st.integers(0, 2**52 - 1),
       epoch=st.integers(0, 2**40), data=st.data())
def test_every_lazy_batch_equals_the_materialised_batch(case, shuffle_seed, seed, epoch, data):
    sizes, policy = case
    y = _labels(sizes, shuffle_seed)
    expected, plan = _plans(y, policy, seed, epoch)
    if expected is None:
        return
    assert len(plan) == len(expected)
    for b in range(len(plan)):
        np.testing.assert_array_equal(plan[b], expected[b])
    # Any batches, in any order, repeats included.
    ids = data.draw(st.lists(st.integers(0, len(plan) - 1), max_size=10))
    order, bounds = plan.batches_of(ids)
    for i, b in enumerate(ids):
        np.testing.assert_array_equal(order[bounds[i]:bounds[i + 1]], expected[b])
        np.testing.assert_array_equal(plan.batch_strata([b])[0], expected.batch_strata[b])
    whole = plan.materialise()
    np.testing.assert_array_equal(whole.order, expected.order)
    np.testing.assert_array_equal(whole.bounds, expected.bounds)
    np.testing.assert_array_equal(whole.batch_strata, expected.batch_strata)
    np.testing.assert_array_equal(whole.counts, expected.counts)
    np.testing.assert_array_equal(plan.counts(np.arange(len(plan))), expected.counts)
    assert plan.batch_weights(0).tolist() == [1.0] * (policy.classes_per_batch *
                                                      policy.per_class)


@settings(max_examples=40)
@given(case=_cases(), seed=st.integers(0, 2**40), epoch=st.integers(0, 30))
def test_member_lists_of_runs_give_the_batches_of_their_labels(case, seed, epoch):
    # grouped_strata: stratum s is one run of rows, no member array at all.
    sizes, policy = case
    y = np.repeat(np.arange(len(sizes)), sizes)
    expected, _ = _plans(y, policy, seed, epoch)
    if expected is None:
        return
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", SmallStrataWarning)
        plan = lazy_plan(grouped_strata(sizes), policy, seed=seed, epoch=epoch)
    for b in range(len(plan)):
        np.testing.assert_array_equal(plan[b], expected[b])


@settings(max_examples=60)
@given(case=_cases(), epoch=st.integers(0, 10**6))
def test_slot_refills_locate_the_listed_refill_draws(case, epoch):
    """SlotRefills (O(S)) names, for every refill rank, the entry of allocate()'s refill list."""
    sizes, policy = case
    if policy.classes != "proportional":
        return
    strata = encode_strata(_labels(sizes, 0))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", SmallStrataWarning)
        try:
            slots = policy.allocate(strata, epoch).slots
        except ValueError:
            return
        plan, refills = policy.lazy_slots(strata, epoch)
    assert isinstance(refills, SlotRefills) and refills.total == slots.refill_strata.shape[0]
    assert plan.refill_strata.shape == (0,)
    np.testing.assert_array_equal(plan.n_slots, slots.n_slots)
    assert (plan.num_batches, plan.step) == (slots.num_batches, slots.step)
    k = policy.per_class
    for s, n in enumerate(strata.sizes.tolist()):
        ranks = np.arange(n, int(slots.n_slots[s]) * k)
        if ranks.shape[0] == 0:
            continue
        draw, size, within = refills.locate(np.full(ranks.shape[0], s), ranks)
        assert (slots.refill_strata[draw] == s).all()
        np.testing.assert_array_equal(size, slots.refill_sizes[draw])
        assert ((within >= 0) & (within < slots.refill_takes[draw])).all()
        # Each draw's values fill consecutive ranks, draw after draw.
        assert (np.diff(draw) >= 0).all()
        starts = np.flatnonzero(np.r_[True, np.diff(draw) > 0])
        np.testing.assert_array_equal(within[starts], 0)
        lengths = np.diff(np.r_[starts, ranks.shape[0]])
        np.testing.assert_array_equal(lengths, slots.refill_takes[draw[starts]])


def test_the_vectors_written_by_r_come_out_of_the_lazy_plan():
    # R's stratified_batches(..., rng = "index") for ClassesPerBatch, batch by batch.
    header, cases = load_cases("batches.json")
    chosen = [case for case in cases if case["id"].startswith("classes_per_batch")
              and "index" in case["id"]]
    assert len(chosen) >= 3
    for case in chosen:
        strata, keywords = arguments_from_case(case, header["index_base"])
        assert keywords["rng"] == "index"
        plan = lazy_plan(strata, policy_from_case(case), seed=keywords["seed"],
                         epoch=keywords.get("epoch", 0))
        expected = zero_based(case["expected"]["batches"], header["index_base"])
        assert len(plan) == len(expected)
        for b, want in enumerate(expected):
            np.testing.assert_array_equal(plan[b], want, err_msg=f"{case['id']}: batch {b}")


def test_a_billion_rows_plan_a_batch_from_per_stratum_counts():
    # One stratum of ~10**9 rows sets B = 2.5 * 10**8: the refill list would hold
    # ~3.75 * 10**9 entries; the lazy plan keeps O(S) numbers and computes any batch.
    sizes = [10**9 - 3000] + [100] * 30
    members = grouped_strata(sizes)
    for classes in ("proportional", "uniform"):
        policy = ClassesPerBatch(16, 4, classes=classes)
        plan = lazy_plan(members, policy, seed=11, epoch=7)
        slots = plan._slots
        assert slots.ends.shape[0] == len(sizes)
        if classes == "proportional":
            assert slots.refills.first.shape == (len(sizes),)
            assert slots.plan.refill_strata.shape == (0,)
        for b in (0, 1, len(plan) // 2, len(plan) - 1):
            rows = plan[b]
            strata = np.searchsorted(np.cumsum(sizes), rows, side="right").reshape(16, 4)
            assert (strata == strata[:, :1]).all() and len(set(strata[:, 0].tolist())) == 16
            assert np.unique(rows).shape[0] == 64
            np.testing.assert_array_equal(strata[:, 0], plan.batch_strata([b])[0])


def test_the_core_and_the_lazy_plan_agree_through_stratified_batches():
    y = _labels([9, 4, 13, 7, 22, 5, 16, 11, 8, 30], 3)
    for policy in (ClassesPerBatch(3, 4), ClassesPerBatch(3, 4, classes="uniform")):
        for epoch in range(4):
            batches = pystratum.stratified_batches(y, policy, seed=8, rng="index", epoch=epoch)
            plan = lazy_plan(y, policy, seed=8, epoch=epoch)
            assert [b.tolist() for b in batches] == [b.tolist() for b in plan]


def test_rank_ranges_are_refused_with_what_to_use_instead():
    plan = lazy_plan(_labels([8, 9, 10, 11], 0), ClassesPerBatch(2, 4), seed=1)
    with pytest.raises(ValueError, match="no rank ranges per batch.*batch_strata"):
        plan.cuts([0])
    other = lazy_plan(_labels([8, 9, 10, 11], 0), 2, seed=1)
    with pytest.raises(ValueError, match="batch_strata is defined for slot policies"):
        other.batch_strata([0])
