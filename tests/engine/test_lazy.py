"""The lazy plan (rng="index"): policy guarantees, random access, member lists."""

import pickle
import warnings

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats

from pystratum.streams._index import index_permutation
from pystratum.engine._lazy import LazyPlan, lazy_plan
from pystratum.strata._members import StratumMembers, members_of_codes, members_of_runs
from pystratum.strata._encode import encode_strata
from pystratum.policies import (Allocation, FixedSize, MinPerStratum, Policy,
                                StratumTooSmallWarning, strata_of_sizes)
from tests._strategies import strata_and_policy


def _check_epoch(plan, codes, policy, epoch):
    encoded = encode_strata(codes)
    batches = list(plan)
    assert len(batches) == plan.num_batches == policy.allocate(encoded, epoch).num_batches
    order = np.concatenate(batches)
    assert order.dtype == np.int64
    assert np.array_equal(np.sort(order), np.arange(codes.shape[0]))  # every row once
    counts = np.stack([np.bincount(encoded.codes[b], minlength=encoded.n_strata)
                       for b in batches])
    assert np.array_equal(counts, policy.allocate(encoded, epoch).counts)
    assert np.array_equal(plan.counts(np.arange(plan.num_batches)), counts)


@settings(max_examples=60)
@given(case=strata_and_policy(), seed=st.integers(0, 2**52 - 1), epoch=st.integers(0, 50))
def test_an_epoch_keeps_the_policy_guarantees(case, seed, epoch):
    codes, policy = case
    plan = lazy_plan(codes, policy, seed=seed, epoch=epoch, allow_single_batch=True)
    _check_epoch(plan, codes, policy, epoch)


@settings(max_examples=40)
@given(case=strata_and_policy(), seed=st.integers(0, 2**40), epoch=st.integers(0, 5),
       data=st.data())
def test_any_batch_in_any_order_equals_the_epoch(case, seed, epoch, data):
    codes, policy = case
    plan = lazy_plan(codes, policy, seed=seed, epoch=epoch, allow_single_batch=True)
    batches = list(plan)
    ids = data.draw(st.lists(st.integers(0, plan.num_batches - 1), max_size=8))
    order, bounds = plan.batches_of(ids)
    for i, b in enumerate(ids):
        assert np.array_equal(order[bounds[i]:bounds[i + 1]], batches[b])
        assert np.array_equal(plan[b], batches[b])
    assert np.array_equal(plan[-1], batches[-1])


@settings(max_examples=40)
@given(case=strata_and_policy(), seed=st.integers(0, 2**40), epoch=st.integers(0, 5))
def test_batches_follow_the_documented_construction(case, seed, epoch):
    """Batch b: strata by first appearance, stratum s's members perm_s(lo..hi-1), in the
    split-safe order (lazy plans' default batch_order)."""
    from _split_safe import reference_reorder

    codes, policy = case
    encoded = encode_strata(codes)
    plan = lazy_plan(codes, policy, seed=seed, epoch=epoch, allow_single_batch=True)
    cuts = policy.allocate(encoded, epoch).cuts
    first_rows = np.array([np.flatnonzero(encoded.codes == s)[0]
                           for s in range(encoded.n_strata)])
    turns = np.argsort(first_rows)
    turn_of = np.empty(encoded.n_strata, dtype=np.int64)
    turn_of[turns] = np.arange(encoded.n_strata)
    for b in range(plan.num_batches):
        expected = []
        for turn, s in enumerate(turns):
            members = np.flatnonzero(encoded.codes == s)
            perm = index_permutation(members.shape[0], seed, epoch, turn)
            expected.append(members[perm[cuts[s, b]:cuts[s, b + 1]]])
        # Lazy plans default to the split-safe order of these by-stratum rows.
        by_stratum = np.concatenate(expected).astype(np.int64)
        assert np.array_equal(plan[b], reference_reorder(by_stratum, encoded.codes, turn_of))


@settings(max_examples=40)
@given(sizes=st.lists(st.integers(1, 400), min_size=1, max_size=7), epoch=st.integers(0, 40),
       data=st.data())
def test_closed_form_cuts_equal_the_table(sizes, epoch, data):
    strata = strata_of_sizes(sizes)
    n_min, n_rows = min(sizes), sum(sizes)
    policies = [MinPerStratum(data.draw(st.integers(1, n_min + 3)))]
    most = n_min
    policies.append(FixedSize(data.draw(st.integers(2 * n_rows // (2 * most + 1) + 1,
                                                    n_rows + 5)), sizes="balanced"))
    for policy in policies:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", StratumTooSmallWarning)
            cuts = policy.allocate(strata, epoch).cuts
            num_batches = policy.num_batches(strata)
        assert num_batches == cuts.shape[1] - 1
        batches = np.arange(num_batches)
        lo, hi = policy.batch_cuts(strata, epoch, batches)
        assert np.array_equal(lo, cuts[:, :-1].T) and np.array_equal(hi, cuts[:, 1:].T)
        assert lo.dtype == np.int64 and hi.dtype == np.int64


class EveryOtherBatchSkipsOne(Policy):
    """A policy without a closed form: the lazy plan falls back to its table."""

    name = "test_lazy_table_only"

    def params(self):
        return {}

    def allocate(self, strata, epoch):
        sizes = strata.sizes
        num_batches = int(sizes.min())
        edges = np.arange(num_batches + 1)
        cuts = sizes[:, None] * edges[None, :] // num_batches
        cuts[:, -1] -= 1  # the last rank of every stratum goes to no batch
        cuts = np.minimum.accumulate(cuts[:, ::-1], axis=1)[:, ::-1]
        return Allocation(cuts)


def test_policies_without_a_closed_form_use_their_table_and_may_leave_rows_out():
    codes = np.random.default_rng(1).integers(0, 3, 300)
    policy = EveryOtherBatchSkipsOne()
    plan = lazy_plan(codes, policy, seed=5, epoch=1)
    cuts = policy.allocate(encode_strata(codes), 1).cuts
    order = np.concatenate(list(plan))
    assert order.shape[0] == 300 - 3 and np.unique(order).shape[0] == order.shape[0]
    counts = np.stack([np.bincount(codes[b], minlength=3) for b in plan])
    assert np.array_equal(counts, np.diff(cuts, axis=1).T)


def test_relabelling_strata_changes_nothing():
    codes = np.random.default_rng(2).integers(0, 4, 500)
    names = np.array(["d", "c", "b", "a"])[codes]
    a = lazy_plan(codes, FixedSize(40), seed=9, epoch=3)
    b = lazy_plan(names, FixedSize(40), seed=9, epoch=3)
    assert all(np.array_equal(x, y) for x, y in zip(a, b))


def test_epochs_and_seeds_give_other_batches_with_equal_counts():
    codes = np.random.default_rng(3).integers(0, 2, 400)
    plans = [lazy_plan(codes, 8, seed=s, epoch=e) for s, e in [(1, 0), (1, 1), (2, 0)]]
    assert not np.array_equal(plans[0][0], plans[1][0])
    assert not np.array_equal(plans[0][0], plans[2][0])
    assert np.array_equal(plans[0].counts(range(3)), plans[1].counts(range(3)))


def test_a_row_meets_every_batch_equally_often_across_epochs():
    """Which batch a row lands in is uniform over batches (chi-square, fixed seed)."""
    codes = np.repeat([0, 1], [90, 10])
    epochs = 1500
    tally = np.zeros(10)
    members = lazy_plan(codes, 1, seed=4).members
    for epoch in range(epochs):
        order, bounds = LazyPlan(members, MinPerStratum(1), 4, epoch).batches_of(range(10))
        tally[np.searchsorted(bounds, np.flatnonzero(order == 95)[0], side="right") - 1] += 1
    assert tally.sum() == epochs
    assert stats.chisquare(tally).pvalue > 0.001


def test_grouped_rows_are_ranges_and_give_the_same_batches():
    sizes = [70, 5, 25]
    codes = np.repeat([0, 1, 2], sizes)
    encoded = encode_strata(codes)
    members = members_of_codes(encoded.codes, encoded.sizes, encoded.labels)
    assert members.grouped and members.rows is None
    runs = members_of_runs(sizes)
    a = LazyPlan(members, FixedSize(20), 7, 2)
    b = LazyPlan(runs, FixedSize(20), 7, 2)
    assert all(np.array_equal(x, y) for x, y in zip(a, b))
    backwards = members_of_codes(encoded.codes[::-1].copy(), encoded.sizes, encoded.labels)
    assert backwards.grouped and backwards.starts.tolist() == [30, 25, 0]
    split = np.concatenate([codes, [0]])
    assert not members_of_codes(split, np.array([71, 5, 25]), (0, 1, 2)).grouped


def test_member_array_is_a_stable_grouping_across_chunks(monkeypatch):
    import pystratum.strata._members as members_module

    monkeypatch.setattr(members_module, "_CHUNK_ROWS", 7)
    codes = np.random.default_rng(5).integers(0, 4, 101).astype(np.int8)
    encoded = encode_strata(codes)
    members = members_of_codes(encoded.codes, encoded.sizes, encoded.labels)
    assert members.rows.dtype == np.int32
    for s in range(4):
        got = members.rows[members.offsets[s]:members.offsets[s + 1]]
        assert np.array_equal(got, np.flatnonzero(codes == s))
        assert members.first_rows[s] == np.flatnonzero(codes == s)[0]


def test_member_lists_saved_memory_mapped_and_pickled_by_directory(tmp_path):
    codes = np.random.default_rng(6).integers(0, 3, 1000)
    labels = np.array(["x", "y", "z"])[codes]
    direct = lazy_plan(labels, 20, seed=1)
    mapped = lazy_plan(labels, 20, seed=1, members_directory=tmp_path / "m")
    assert isinstance(mapped.members.rows, np.memmap)
    assert not mapped.members.rows.flags.writeable
    assert all(np.array_equal(x, y) for x, y in zip(direct, mapped))
    clone = pickle.loads(pickle.dumps(mapped.members))
    assert isinstance(clone.rows, np.memmap) and clone.directory == str(tmp_path / "m")
    assert len(pickle.dumps(mapped.members)) < 1000  # the path, not the rows
    assert clone.labels == ("x", "y", "z")
    saved = members_of_runs([3, 4], labels=[(1, "a"), (2, "b")]).save(tmp_path / "runs")
    assert saved.grouped and saved.labels == ((1, "a"), (2, "b"))
    with pytest.raises(TypeError, match="label .* is not a JSON value"):
        members_of_runs([3], labels=[object()]).save(tmp_path / "bad")


def test_arguments_are_checked():
    codes = np.array([0, 1] * 10)
    with pytest.raises(ValueError, match=r"seed must be an integer in \[0, 2\*\*52\)"):
        lazy_plan(codes, 2, seed=-3)
    with pytest.raises(TypeError, match="epoch must be an integer"):
        lazy_plan(codes, 2, seed=1, epoch=1.0)
    with pytest.raises(ValueError, match="strata has a missing value at row 1"):
        lazy_plan([0.0, np.nan, 1.0], 1, seed=1)
    with pytest.raises(ValueError, match=r"^policy=MinPerStratum\(m=11\) gives a single batch"):
        lazy_plan(codes, 11, seed=1)
    with pytest.warns(StratumTooSmallWarning):
        plan = lazy_plan(codes, 11, seed=1, allow_single_batch=True)
    assert plan.num_batches == 1 and np.array_equal(np.sort(plan[0]), np.arange(20))
    with pytest.raises(IndexError):
        plan[1]


def test_materialised_form_is_a_batch_plan():
    codes = np.random.default_rng(8).integers(0, 2, 300)
    plan = lazy_plan(codes, FixedSize(30), seed=12, epoch=4)
    report = plan.materialise()
    assert report.rng == "index" and report.seed == 12 and report.epoch == 4
    assert all(np.array_equal(x, y) for x, y in zip(report, plan))
    assert np.array_equal(report.counts, plan.counts(range(plan.num_batches)))
    assert "LazyPlan(num_batches=10" in repr(plan)
    assert isinstance(plan.members, StratumMembers)


def _pool_rows(plan, codes, stratum):
    """A pooled stratum's pool: the rows its first pool ranks map to."""
    pool = int(plan._pools[stratum])
    members = np.flatnonzero(codes == stratum)
    turn = int(plan._turn_of_stratum[stratum])
    return set(members[index_permutation(members.shape[0], plan.seed, plan.epoch, turn)[:pool]]
               .tolist())


@pytest.mark.parametrize("epoch", [0, 3])
def test_recycling_and_pooled_policies_keep_their_compositions(epoch):
    from pystratum.policies import Downsample, Targets

    codes = np.repeat([0, 1, 2], [300, 40, 9])
    codes = np.random.default_rng(10).permutation(codes)
    encoded = encode_strata(codes)
    for policy in [Targets("balanced", 30), Targets({0: 0.5, 1: 0.3, 2: 0.2}, 20, epoch=7),
                   Downsample({0: 0.1}, 4)]:
        plan = lazy_plan(codes, policy, seed=21, epoch=epoch)
        allocation = policy.allocate(encoded, epoch)
        batches = list(plan)
        counts = np.stack([np.bincount(codes[b], minlength=3) for b in batches])
        assert np.array_equal(counts, allocation.counts)
        pools = encoded.sizes if allocation.pool_sizes is None else allocation.pool_sizes
        served = np.concatenate(batches)
        for s in range(3):
            rows = served[codes[served] == s]
            uses = np.bincount(rows, minlength=codes.shape[0])[codes == s]
            used = int(allocation.cuts[s, -1])
            pool = int(pools[s])
            # every pool row is used floor or ceil(used / pool) times, other rows never
            assert set(rows.tolist()) <= _pool_rows(plan, codes, s) if plan._pools is not None \
                else True
            assert uses.sum() == used
            assert sorted(set(uses[uses > 0].tolist())) in (
                [used // pool], [used // pool, -(-used // pool)], [-(-used // pool)], [])
        if allocation.row_weights is not None:
            report = plan.materialise()
            expected = np.asarray(allocation.row_weights)[codes[report.order]]
            assert np.allclose(report.weights, expected)
            assert np.allclose(plan.batch_weights(0), expected[:report.bounds[1]])
        else:
            assert np.array_equal(plan.batch_weights(1), np.ones(batches[1].shape[0]))


def test_rng_index_in_the_core_is_the_lazy_plan():
    import pystratum

    codes = np.random.default_rng(11).integers(0, 3, 600)
    plan = pystratum.plan_batches(codes, FixedSize(50), seed=5, rng="index", epoch=2)
    lazy = lazy_plan(codes, FixedSize(50), seed=5, epoch=2)
    assert plan.rng == "index" and plan.seed == 5
    assert all(np.array_equal(x, y) for x, y in zip(plan, lazy))
    batches = pystratum.stratified_batches(codes, 4, seed=5, rng="index")
    assert all(np.array_equal(x, y) for x, y in zip(batches, lazy_plan(codes, 4, seed=5)))
    unshuffled = pystratum.plan_batches(codes, 4, rng="index", shuffle=False)
    assert np.array_equal(np.concatenate(list(unshuffled)).size, 600)
    with pytest.raises(ValueError, match=r"seed must be an integer in \[0, 2\*\*52\)"):
        pystratum.stratified_batches(codes, 4, seed=-1, rng="index")


@pytest.mark.parametrize("values", [
    np.array([0, 1, 1, 0, 1], dtype=np.int8),
    np.array([5, 9, 5, 7, 9, 9], dtype=np.int64),
    np.array([-2, -1, -2, -2], dtype=np.int16),
    np.array([True, False, True, True]),
    np.array([3, 3, 3], dtype=np.uint8),
    np.repeat(np.array([2, 0, 1], dtype=np.int32), [3, 4, 2]),
], ids=["int8", "gaps", "negative", "bool", "one", "grouped"])
def test_integer_labels_take_the_chunked_path_with_the_encoders_result(values, monkeypatch):
    import pystratum.strata._members as members_module
    from pystratum.strata._members import members_of_labels

    monkeypatch.setattr(members_module, "_CHUNK_ROWS", 2)
    members = members_of_labels(values)
    encoded = encode_strata(values)
    assert members.labels == encoded.labels
    assert [type(v) for v in members.labels] == [type(v) for v in encoded.labels]
    assert members.sizes.tolist() == encoded.sizes.tolist()
    for s in range(encoded.n_strata):
        expected = np.flatnonzero(encoded.codes == s)
        got = members.member(np.full(expected.shape[0], s), np.arange(expected.shape[0]))
        assert np.array_equal(got, expected) and members.first_rows[s] == expected[0]
    assert members_of_labels(np.array([0, 70_000])) is None
    assert members_of_labels(np.array(["a", "b"])) is None
    assert members_of_labels([0, 1]) is None


def test_grouped_strata_labels_name_one_stratum_each():
    from pystratum import grouped_strata

    with pytest.raises(ValueError, match=r"labels\[0\] and labels\[2\] are both 'a'"):
        grouped_strata([90, 10, 5], labels=["a", "b", "a"])
    with pytest.raises(TypeError, match=r"labels must be hashable.*labels\[1\]=\[1\]"):
        grouped_strata([90, 10], labels=["a", [1]])


@pytest.mark.parametrize("function", ["stratified_batches", "plan_batches"])
def test_member_lists_given_to_the_materialised_plan_name_the_lazy_plan(function):
    import pystratum

    members = pystratum.grouped_strata([90, 10])
    with pytest.raises(TypeError, match=r"strata is a StratumMembers.*pystratum\.lazy_plan"):
        getattr(pystratum, function)(members, 1, seed=1)
