"""ClassesPerBatch (P classes x K rows): exact batches, coverage, refills, spread, draws, errors."""

import math
import warnings

import numpy as np
import pytest
from hypothesis import example, given, settings, strategies as st

import pystratum.kernels as kernel_gate
from pystratum import plan_batches, stratified_batches
from pystratum.engine._assemble_slots import partial_shuffles, slot_draws
from pystratum.policies import (ClassesPerBatch, SmallStrataWarning, policy_from_params,
                                strata_of_sizes)
from pystratum.policies._base import _largest_quotient, slot_step
from _strategies import plan_allowing_one_batch


def labels_of(sizes, seed=0):
    """Rows of stratum s labelled s, shuffled (first appearance differs from code order)."""
    y = np.repeat(np.arange(len(sizes)), sizes)
    return np.random.default_rng(seed).permutation(y)


def circular_gap(batches, n_batches):
    """Smallest circular distance between two of a stratum's batches."""
    ordered = np.sort(batches)
    if ordered.shape[0] < 2:
        return n_batches
    gaps = np.diff(np.r_[ordered, ordered[0] + n_batches])
    return int(gaps.min())


def promised_gap(n, n_batches, step):
    """d(n) = min over 1 <= k < n of the circular distance of k * g mod B (the docstring's rule)."""
    if n < 2:
        return n_batches
    k = np.arange(1, n, dtype=np.int64)
    points = k * step % n_batches
    return int(np.minimum(points, n_batches - points).min())


def check_plan(y, policy, plan):
    """Every guarantee of the class docstring, checked on one plan."""
    p, k = policy.classes_per_batch, policy.per_class
    sizes = np.bincount(y)
    n_batches = plan.num_batches
    served = sizes >= k if policy.small == "drop" else np.ones(sizes.shape[0], dtype=bool)
    own = np.where(served, np.maximum(-(-sizes // k), 1), 0)
    assert n_batches == max(-(-int(own.sum()) // p), int(own.max()))
    batch_strata = np.asarray(plan.batch_strata)
    assert batch_strata.shape == (n_batches, p)
    step = slot_step(n_batches)
    for b, batch in enumerate(plan.batches):
        assert batch.shape[0] == p * k
        slots = y[batch].reshape(p, k)
        # Slot by slot, K rows of one stratum each, P distinct strata.
        assert (slots == slots[:, :1]).all()
        assert np.array_equal(slots[:, 0], batch_strata[b])
        assert np.unique(slots[:, 0]).shape[0] == p
        repeated = np.unique(batch).shape[0] < batch.shape[0]
        if repeated:
            assert policy.small == "repeat"
            for s in np.unique(slots[:, 0][[np.unique(row).shape[0] < k for row in
                                            batch.reshape(p, k)]]):
                assert sizes[s] < k
    uses = np.bincount(plan.order, minlength=y.shape[0])
    # Coverage: every row of a served stratum at least once, none of a dropped one.
    assert (uses[served[y]] >= 1).all()
    assert (uses[~served[y]] == 0).all()
    # Only refills repeat: appearances beyond the first add up to the refills' draws.
    with warnings.catch_warnings():  # small='drop' warned when the plan was made
        warnings.simplefilter("ignore", SmallStrataWarning)
        allocation = policy.allocate(plan_strata(y), plan.epoch)
    refill_rows = int(allocation.slots.refill_takes.sum())
    assert int((uses[uses > 0] - 1).sum()) == refill_rows
    n_slots = allocation.slots.n_slots
    assert int(n_slots.sum()) == n_batches * p
    for s in np.flatnonzero(served):
        batches = np.flatnonzero((batch_strata == s).any(axis=1))
        assert batches.shape[0] == n_slots[s]  # one slot per batch, never two
        assert circular_gap(batches, n_batches) >= promised_gap(int(n_slots[s]), n_batches,
                                                               step)
    # Extra slots by water-filling, one at a time to a stratum with the fewest: when a
    # stratum got its last extra it had the fewest, so no stratum has fewer than that.
    extras = n_slots - own
    if extras.any():
        assert int(n_slots[served].min()) >= int(n_slots[extras > 0].max()) - 1
    return uses


def plan_strata(y):
    from pystratum.strata._encode import encode_strata

    return encode_strata(y)


sizes_st = st.lists(st.integers(1, 30), min_size=1, max_size=12)


def refused(y, policy, sizes, **kwargs) -> bool:
    """Whether the policy must refuse these strata; if so, checks the error plan_batches gives."""
    counts = np.asarray(sizes)
    k = policy.per_class
    can_fill = int((counts >= k).sum()) if policy.small != "repeat" else len(sizes)
    if policy.small == "error" and (counts < k).any():
        match = "needs at least .* rows of every stratum"
    elif can_fill < policy.classes_per_batch:
        match = "largest feasible classes_per_batch"
    else:
        return False
    with pytest.raises(ValueError, match=match):
        plan_batches(y, policy, **kwargs)
    return True


@settings(max_examples=150)
@given(sizes=sizes_st, p=st.integers(1, 6), k=st.integers(1, 6),
       small=st.sampled_from(["error", "drop", "repeat"]), seed=st.integers(0, 2**31 - 1),
       epoch=st.integers(0, 3), rng=st.sampled_from(["numpy", "R", "index"]))
@example(sizes=[5, 9, 12, 4, 8, 3, 20], p=3, k=4, small="repeat", seed=1, epoch=0, rng="numpy")
@example(sizes=[40, 1, 1], p=2, k=1, small="error", seed=0, epoch=1, rng="R")
def test_every_guarantee_or_a_clear_error(sizes, p, k, small, seed, epoch, rng):
    y = labels_of(sizes, seed % 7)
    policy = ClassesPerBatch(p, k, small=small)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", SmallStrataWarning)
        if refused(y, policy, sizes, seed=seed, rng=rng, epoch=epoch):
            return
        plan = plan_allowing_one_batch(y, policy, seed=seed, rng=rng, epoch=epoch)
        check_plan(y, policy, plan)
        again = plan_batches(y, policy, seed=seed, rng=rng, epoch=epoch,
                             allow_single_batch=True)
    assert np.array_equal(again.order, plan.order)


def test_each_epoch_is_a_new_shuffle_and_layout():
    y = labels_of([30, 25, 41, 18, 22, 35, 27, 19], 3)
    policy = ClassesPerBatch(3, 4)
    plans = [plan_batches(y, policy, seed=11, epoch=e) for e in range(3)]
    for plan in plans:
        check_plan(y, policy, plan)
    assert not np.array_equal(plans[0].order, plans[1].order)
    assert not np.array_equal(plans[0].batch_strata, plans[1].batch_strata)
    assert not np.array_equal(plans[1].order, plans[2].order)
    # The epoch count never changes.
    assert len({plan.num_batches for plan in plans}) == 1


def test_b_and_slots_follow_the_formula():
    # N_s = 9, 4, 13, 7 with K = 4: c = 3, 1, 4, 2, T = 10; P = 2: B = max(5, 4) = 5.
    y = labels_of([9, 4, 13, 7])
    policy = ClassesPerBatch(2, 4)
    plan = plan_batches(y, policy, seed=0)
    assert plan.num_batches == 5
    allocation = policy.allocate(plan_strata(y), 0)
    assert allocation.slots.n_slots.tolist() == [3, 1, 4, 2]  # no extras: T = B * P
    # Refills: stratum 0 (r = 1) draws 3 of 8, stratum 2 (r = 1) 3 of 12, stratum 3 (r = 3) 1 of 4.
    triples = sorted(zip(allocation.slots.refill_strata.tolist(),
                         allocation.slots.refill_sizes.tolist(),
                         allocation.slots.refill_takes.tolist()))
    assert triples == [(0, 8, 3), (2, 12, 3), (3, 4, 1)]


def test_largest_stratum_sets_b_and_extras_fill_evenly():
    # c = 10, 1, 1, 2 with K = 2, P = 2: B = 10, 20 slots for 14: 6 extras by water-filling
    # raise strata 1, 2, 3 to level 3 (5 extras), the sixth goes to one of them.
    y = labels_of([20, 2, 2, 4])
    policy = ClassesPerBatch(2, 2)
    plan = plan_batches(y, policy, seed=5)
    assert plan.num_batches == 10
    n_slots = policy.allocate(plan_strata(y), 0).slots.n_slots
    assert n_slots[0] == 10 and sorted(n_slots[1:].tolist()) == [3, 3, 4]
    check_plan(y, policy, plan)


def test_extras_rotate_with_the_epoch():
    # 3 equal strata of 1 slot, P = 2: B = 2, one extra; which stratum gets it rotates.
    y = labels_of([4, 4, 4])
    policy = ClassesPerBatch(2, 4)
    strata = plan_strata(y)
    winners = {int(np.flatnonzero(policy.allocate(strata, e).slots.n_slots == 2)[0])
               for e in range(3)}
    assert winners == {0, 1, 2}


def test_refill_rows_never_share_a_slot_with_themselves():
    # N_s = 5, K = 4: slot 2 holds one pass-0 row and 3 refills drawn from the other 4.
    y = labels_of([5, 5, 5, 5])
    policy = ClassesPerBatch(2, 4)
    for seed in range(30):
        plan = plan_batches(y, policy, seed=seed, rng="R" if seed % 2 else "numpy")
        for batch in plan.batches:
            assert np.unique(batch).shape[0] == batch.shape[0]
        check_plan(y, policy, plan)


def test_small_modes():
    y = labels_of([10, 2, 9, 3, 12])
    with pytest.raises(ValueError) as error:
        plan_batches(y, ClassesPerBatch(2, 4), seed=0)
    message = str(error.value)
    assert "2 stratum/strata have fewer" in message and "1 (2 rows)" in message \
        and "3 (3 rows)" in message and "small='drop'" in message
    with pytest.warns(SmallStrataWarning, match=r"leaves out 2 stratum/strata .* \(5 rows"):
        plan = plan_batches(y, ClassesPerBatch(2, 4, small="drop"), seed=0)
    check_plan(y, ClassesPerBatch(2, 4, small="drop"), plan)
    plan = plan_batches(y, ClassesPerBatch(2, 4, small="repeat"), seed=0)
    uses = check_plan(y, ClassesPerBatch(2, 4, small="repeat"), plan)
    assert (uses[y == 1] >= 2).all()  # 2 rows fill a slot of 4


def test_infeasible_request_states_the_largest_feasible_p_and_k():
    y = labels_of([10, 3, 9, 2])
    with pytest.raises(ValueError) as error:
        plan_batches(y, ClassesPerBatch(3, 4, small="drop"), seed=0)
    message = str(error.value)
    assert "largest feasible classes_per_batch with per_class=4 is 2" in message
    assert "largest feasible per_class with classes_per_batch=3 is 3" in message
    with pytest.raises(ValueError, match="only 4 strata"):
        plan_batches(y, ClassesPerBatch(5, 1), seed=0)


@pytest.mark.parametrize("bad, match", [
    (dict(classes_per_batch=0, per_class=2), "classes_per_batch"),
    (dict(classes_per_batch=2, per_class=0), "per_class"),
    (dict(classes_per_batch=2.0, per_class=2), "classes_per_batch"),
    (dict(classes_per_batch=2, per_class=True), "per_class"),
    (dict(classes_per_batch=2, per_class=2, classes="even"), "classes"),
    (dict(classes_per_batch=2, per_class=2, small="skip"), "small"),
])
def test_bad_parameters_name_the_argument(bad, match):
    with pytest.raises((TypeError, ValueError), match=match):
        ClassesPerBatch(**bad)


def test_round_trip_and_repr():
    policy = ClassesPerBatch(16, 4, small="drop")
    assert policy_from_params(**policy.to_dict()) == policy
    assert "classes_per_batch=16" in repr(policy)


def test_no_shuffle_is_row_order_draws():
    y = labels_of([8, 8, 8])
    plan = plan_batches(y, ClassesPerBatch(2, 4), shuffle=False)
    check_plan(y, ClassesPerBatch(2, 4), plan)


def test_counts_dense_when_small_sparse_always():
    y = labels_of([9, 4, 13, 7])
    plan = plan_batches(y, ClassesPerBatch(2, 4), seed=2)
    counts = plan.counts
    assert counts.shape == (plan.num_batches, 4)
    assert (counts.sum(axis=1) == 8).all() and ((counts == 0) | (counts == 4)).all()
    assert counts.sum(axis=0).tolist() == [4 * int((plan.batch_strata == s).sum())
                                           for s in range(4)]
    batch, stratum, rows = plan.slot_counts()
    dense = np.zeros_like(counts)
    dense[batch, stratum] = rows
    assert np.array_equal(dense, counts)
    assert "batch" in plan.counts_table()


def test_counts_refuse_a_huge_dense_table():
    # 3000 strata of 4 rows, P = 1: 3000 batches x 3000 strata = 9e6 > max(12000, 2**20).
    y = np.repeat(np.arange(3000), 4)
    plan = plan_batches(y, ClassesPerBatch(1, 4), seed=0)
    with pytest.raises(ValueError, match="batch_strata"):
        plan.counts
    batch, stratum, rows = plan.slot_counts()
    assert batch.shape == (3000,) and (rows == 4).all()
    # The classes report stays sparse: each class appears in exactly one batch.
    assert plan.report().appearances().tolist() == [1] * 3000
    assert len(plan.counts_table().splitlines()) == 12


def test_stratified_batches_and_int_labels():
    y = labels_of([6, 6, 6, 6])
    batches = stratified_batches(y, ClassesPerBatch(2, 3), seed=4)
    assert all(len(b) == 6 for b in batches)


def naive_sample_int(picks, size, take):
    """R's sample.int loop with the given picks (the reference for partial_shuffles)."""
    x = list(range(size))
    n = size
    out = []
    for t in range(take):
        j = picks[t]
        out.append(x[j])
        n -= 1
        x[j] = x[n]
    return out


@settings(max_examples=100)
@given(st.lists(st.tuples(st.integers(1, 40), st.integers(1, 40)), min_size=1, max_size=12),
       st.integers(0, 2**32 - 1))
def test_partial_shuffles_match_the_sample_int_loop(pairs, seed):
    sizes = np.asarray([max(a, b) for a, b in pairs], dtype=np.int64)
    takes = np.asarray([min(a, b) for a, b in pairs], dtype=np.int64)
    flat = partial_shuffles(np.random.default_rng(seed), sizes, takes)
    highs = np.concatenate([np.arange(s, s - t, -1) for s, t in zip(sizes, takes)])
    picks = np.random.default_rng(seed).integers(0, highs)
    at = 0
    for size, take in zip(sizes.tolist(), takes.tolist()):
        expected = naive_sample_int(picks[at:at + take].tolist(), size, take)
        assert flat[at:at + take].tolist() == expected
        assert len(set(expected)) == take
        at += take


def test_r_stream_draws_are_sample_int_calls():
    # rng="R": permutation of N, of the strata, then sample.int(size, take) per refill.
    from pystratum.streams._r import RStream

    y = labels_of([9, 4, 13, 7], 1)
    policy = ClassesPerBatch(2, 4)
    plan = plan_batches(y, policy, seed=42, rng="R")
    strata = plan_strata(y)
    draws = slot_draws(policy.allocate(strata, 0).slots, y.shape[0])
    stream = RStream(42)
    drawn = [stream.partial_permutation(size, take) for size, take in draws]
    from pystratum.engine._assemble_slots import assemble_slots

    batches, layout = assemble_slots(drawn, policy.allocate(strata, 0).slots, strata.codes,
                                     strata.sizes, strata.first_rows)
    assert np.array_equal(batches.order, plan.order)
    assert np.array_equal(layout.batch_strata, plan.batch_strata)


@given(st.integers(1, 5000))
def test_slot_step_is_coprime_with_small_quotients(n_batches):
    step = slot_step(n_batches)
    if n_batches == 1:
        assert step == 0
        return
    assert 1 <= step < n_batches and math.gcd(step, n_batches) == 1
    assert _largest_quotient(n_batches, step) <= 6


def test_spread_bound_holds_for_every_b_up_to_3000():
    # The docstring's bound: d(n) >= B / ((A + 2) n), A the largest quotient of B / g.
    for n_batches in range(3, 3001):
        step = slot_step(n_batches)
        quotient = _largest_quotient(n_batches, step)
        k = np.arange(1, n_batches, dtype=np.int64)
        points = k * step % n_batches
        gap = np.minimum.accumulate(np.minimum(points, n_batches - points))
        n = np.arange(2, n_batches + 1)
        assert (gap * n * (quotient + 2) >= n_batches).all(), n_batches


def test_strata_of_sizes_allocation_is_sparse():
    # 10**4 strata, ~16k batches: the allocation holds O(S + T), no S x B table.
    sizes = np.full(10_000, 6)
    allocation = ClassesPerBatch(16, 4).allocate(strata_of_sizes(sizes), 0)
    assert allocation.cuts is None
    assert allocation.slots.n_slots.shape == (10_000,)
    assert allocation.num_batches == 1250


def test_lazy_plans_equal_the_materialised_index_plans():
    from pystratum import lazy_plan

    y = labels_of([8, 9, 10, 11])
    plans = [plan_batches(y, ClassesPerBatch(2, 4), seed=1, rng="index", epoch=e)
             for e in range(2)]
    for epoch, plan in enumerate(plans):
        check_plan(y, ClassesPerBatch(2, 4), plan)
        lazy = lazy_plan(y, ClassesPerBatch(2, 4), seed=1, epoch=epoch)
        assert [b.tolist() for b in lazy] == [b.tolist() for b in plan.batches]
    assert not np.array_equal(plans[0].order, plans[1].order)
    with pytest.raises(ValueError, match="no rank ranges per batch.*lazy_slots"):
        ClassesPerBatch(2, 4).batch_cuts(strata_of_sizes([8, 9, 10, 11]), 0, [0])


def test_compiled_and_numpy_paths_give_the_same_batches(monkeypatch):
    # From 2**17 rows, with numba, pass 0 is placed by one compiled pass (no sort).
    import importlib

    import pystratum.engine._assemble as assemble

    kernels = importlib.import_module("pystratum.kernels._assemble")  # numba: the fast extra
    sizes = np.random.default_rng(2).integers(1, 60, 5000)
    y = labels_of(sizes.tolist(), 5)
    assert y.shape[0] >= kernel_gate.MIN_ROWS
    policy = ClassesPerBatch(8, 4, small="drop")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", SmallStrataWarning)
        for rng in ["numpy", "R"]:
            monkeypatch.setitem(kernel_gate._LOADED, "assemble", kernels)
            compiled = plan_batches(y, policy, seed=3, rng=rng, epoch=1)
            monkeypatch.setitem(kernel_gate._LOADED, "assemble", False)
            plain = plan_batches(y, policy, seed=3, rng=rng, epoch=1)
            monkeypatch.undo()
            assert np.array_equal(compiled.order, plain.order)
            check_plan(y, policy, compiled)


def run_cli(*args):
    import subprocess
    import sys
    from pathlib import Path

    root = Path(__file__).resolve().parents[2]
    import os

    env = dict(os.environ, PYTHONPATH=str(root))
    done = subprocess.run([sys.executable, "-m", "pystratum", *map(str, args)],
                          capture_output=True, text=True, env=env, timeout=120)
    assert "Traceback" not in done.stderr, done.stderr
    return done


@pytest.fixture(scope="module")
def class_csv(tmp_path_factory):
    path = tmp_path_factory.mktemp("cpb") / "d.csv"
    y = labels_of([9, 4, 13, 7, 22, 5, 16], 2)
    path.write_text("x,label\n" + "".join(f"{i},c{v}\n" for i, v in enumerate(y)))
    return path, np.asarray([f"c{v}" for v in y])


def test_cli_plans_checks_and_plots_classes_per_batch(class_csv, tmp_path):
    import json

    path, labels = class_csv
    policy = ["--policy", "classes_per_batch", "--param", "classes_per_batch=3",
              "--param", "per_class=4"]
    done = run_cli("plan", path, "--stratum", "label", *policy, "--seed", 4, "--format", "json",
                   "--batches")
    assert done.returncode == 0, done.stderr
    record = json.loads(done.stdout)
    expected = plan_batches(labels, ClassesPerBatch(3, 4), seed=4)
    assert record["batches"] == [b.tolist() for b in expected.batches]
    done = run_cli("plan", path, "--stratum", "label", *policy, "--seed", 4, "--format", "json")
    record = json.loads(done.stdout)
    assert record["batch_strata"] == [[str(expected.strata[s]) for s in row]
                                      for row in expected.batch_strata.tolist()]
    assert record["rows_per_stratum"] == 4
    done = run_cli("plan", path, "--stratum", "label", *policy, "--seed", 4)
    assert done.returncode == 0 and ("8 batches (numbered from 0) of 12-12 rows; 3 classes x 4 "
                                     "rows per batch") in done.stdout
    done = run_cli("plan", path, "--stratum", "label", *policy, "--seed", 4, "--format", "csv")
    assert done.stdout.splitlines()[0] == "batch,stratum,rows"
    assert len(done.stdout.splitlines()) == 1 + 8 * 3
    done = run_cli("check", path, "--stratum", "label", *policy)
    assert done.returncode == 0 and "8 batches of 3 strata x 4 rows" in done.stdout
    done = run_cli("check", path, "--stratum", "label", "--policy", "classes_per_batch",
                   "--param", "classes_per_batch=3", "--param", "per_class=6")
    assert done.returncode == 1 and "per_class=6 needs at least 6 rows" in done.stdout
    png = tmp_path / "f.png"
    done = run_cli("plot", path, "--stratum", "label", *policy, "--seed", 1, "--output", png)
    assert done.returncode == 0, done.stderr
    assert png.stat().st_size > 1000


def test_plan_plot_of_a_large_slot_plan_lumps_strata():
    import matplotlib  # the plot extra, installed for the tests

    matplotlib.use("Agg")
    y = np.repeat(np.arange(3000), 4)
    plan = plan_batches(y, ClassesPerBatch(1, 4), seed=0)
    axes = plan.plot()
    assert axes is not None


def test_an_epoch_far_larger_than_the_data_is_refused_before_any_table():
    # One stratum of 3e6 rows sets B = 3e6 with K = 1; P = 100 asks 3e8 rows (over 2**28).
    sizes = [3_000_000] + [4] * 99
    with pytest.raises(ValueError, match=r"^classes_per_batch=100 makes an epoch of 3,000,000 "
                                         r"batches of 100 x 1 rows.*split the largest strata"):
        ClassesPerBatch(100, 1).allocate(strata_of_sizes(sizes), 0)


ODD_VALUES = st.one_of(st.none(), st.booleans(), st.floats(allow_nan=True), st.text(max_size=4),
                       st.integers(-5, 5), st.integers(2**53, 2**64), st.lists(st.integers(),
                                                                               max_size=2))


@settings(max_examples=200)
@given(p=ODD_VALUES, k=ODD_VALUES, classes=st.one_of(ODD_VALUES, st.just("proportional")),
       small=st.one_of(ODD_VALUES, st.sampled_from(["error", "drop", "repeat"])))
def test_hostile_parameters_are_a_type_or_value_error_naming_the_argument(p, k, classes, small):
    try:
        policy = ClassesPerBatch(p, k, classes=classes, small=small)
    except (TypeError, ValueError) as error:
        assert str(error).split("=")[0].split(" ")[0] in (
            "classes_per_batch", "per_class", "classes", "small"), str(error)
        return
    assert isinstance(policy.classes_per_batch, int) and policy.classes_per_batch >= 1
    assert isinstance(policy.per_class, int) and policy.per_class >= 1
    assert policy_from_params(**policy.to_dict()) == policy
