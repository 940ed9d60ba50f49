"""Targets and Downsample: exact compositions, recycling, pools, weights, errors, statistics."""

import json
import math
import re

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from pystratum import plan_batches, stratified_batches
from pystratum.policies import (Downsample, FixedSize, MinPerStratum, Targets, policy_from_params,
                                strata_of_sizes)
from _strategies import plan_allowing_one_batch
from pystratum.policies._shares import (extras_of_batches, label_key, share_weights, weyl_step,
                                        window_hits)

sizes_st = st.lists(st.integers(1, 60), min_size=1, max_size=5)


def labels_of(sizes, seed=0):
    """Rows of stratum s labelled s, in a shuffled order (first appearance != code order)."""
    y = np.repeat(np.arange(len(sizes)), sizes)
    return np.random.default_rng(seed).permutation(y)


def uses_per_row(plan, n):
    return np.bincount(plan.order, minlength=n)


def targets_weights(sizes, units):
    """Targets' importance weight of every stratum: (N_s / N) / (w_s / W), 0 for w_s = 0."""
    sizes, units = np.asarray(sizes, dtype=np.float64), np.asarray(units, dtype=np.float64)
    out = np.zeros_like(sizes)
    served = units > 0  # dividing by the zeros first would warn of a division by zero
    out[served] = sizes[served] * units.sum() / (sizes.sum() * units[served])
    return out


def shares_from(raw):
    total = sum(raw)
    return {s: r / total for s, r in enumerate(raw)}


# ------------------------------------------------------------------ Targets: properties

@settings(max_examples=120, deadline=None)
@given(sizes=sizes_st, data=st.data(), epoch=st.integers(0, 30))
def test_targets_every_batch_has_the_exact_composition(sizes, data, epoch):
    n_strata = len(sizes)
    raw = data.draw(st.lists(st.integers(0, 5), min_size=n_strata, max_size=n_strata)
                    .filter(lambda r: sum(r) > 0))
    positive = sum(1 for r in raw if r > 0)
    batch_size = data.draw(st.integers(positive, 40))
    mode = data.draw(st.sampled_from(["largest", "smallest", 3]))
    shares = shares_from(raw)
    y = labels_of(sizes, seed=epoch)
    policy = Targets(shares, batch_size, epoch=mode)
    try:
        plan = plan_allowing_one_batch(y, policy, seed=epoch, epoch=epoch)
    except ValueError as error:  # "smallest" with a stratum below one batch's share
        assert mode == "smallest" and "leaves no batch" in str(error)
        return
    weights = share_weights([shares[s] for s in range(n_strata)])
    total = int(weights.sum())
    low = batch_size * weights // total
    for b, rows in enumerate(plan.batches):
        counts = np.bincount(y[rows], minlength=n_strata)
        assert counts.sum() == batch_size
        assert ((counts == low) | (counts == low + 1)).all()
        assert (counts == plan.counts[b]).all()
    uses = uses_per_row(plan, len(y))
    slots = plan.counts.sum(axis=0)
    for s in range(n_strata):
        used = uses[y == s]
        assert set(used.tolist()) <= {slots[s] // sizes[s], -(-slots[s] // sizes[s])}
        if mode == "largest" and weights[s] > 0:
            assert used.min() >= 1  # every row of every positive-share stratum, every epoch
        if mode == "smallest":
            assert used.max() <= 1  # no row twice
    if mode == 3:
        assert len(plan) == 3
    # Importance weights (N_s / N) / (w_s / W), one per served row.
    sizes_arr = np.bincount(y, minlength=n_strata)
    expected = targets_weights(sizes_arr, weights)
    np.testing.assert_allclose(plan.weights, expected[y[plan.order]], rtol=1e-15)


@settings(max_examples=60, deadline=None)
@given(sizes=sizes_st, batch_size=st.integers(5, 30))
def test_targets_num_batches_is_the_same_every_epoch_and_largest_is_the_fewest(sizes,
                                                                               batch_size):
    strata = strata_of_sizes(sizes)
    policy = Targets("balanced", max(batch_size, len(sizes)))
    lengths = {policy.allocate(strata, k).num_batches for k in range(6)}
    assert len(lengths) == 1
    n = lengths.pop()
    # One batch fewer: some stratum would miss a row in some phase of the rotation.
    weights, starts, floors, rem, total, step, _ = policy._layout(strata)
    if n > 1:
        assert any((n - 1) * floors[s] + window_hits(int(starts[s]), int(rem[s]), total, step,
                                                     n - 1, fewest=True) < sizes[s]
                   for s in range(len(sizes)))


@given(total=st.integers(1, 400), data=st.data())
def test_the_rotation_gives_every_stratum_its_exact_share_over_any_period(total, data):
    step = weyl_step(total)
    assert math.gcd(step, total) == 1
    n_strata = data.draw(st.integers(1, 5))
    remainders = np.array(data.draw(st.lists(st.integers(0, total - 1), min_size=n_strata,
                                             max_size=n_strata)), dtype=np.int64)
    starts = (np.cumsum(remainders) - remainders) % total
    first = data.draw(st.integers(0, 10**9))
    extras = extras_of_batches(starts, remainders, total, step, first, total)
    assert (extras.sum(axis=1) == remainders).all()
    # And window_hits bounds every window it claims to.
    length = data.draw(st.integers(1, 2 * total))
    period = extras_of_batches(starts, remainders, total, step, 0, total).astype(np.int64)
    tiled = np.concatenate([period] * (length // total + 2), axis=1)
    for s in range(n_strata):
        windows = [tiled[s, t:t + length].sum() for t in range(total)]
        assert min(windows) == window_hits(int(starts[s]), int(remainders[s]), total, step,
                                           length, fewest=True)
        assert max(windows) == window_hits(int(starts[s]), int(remainders[s]), total, step,
                                           length, fewest=False)


def test_long_run_shares_equal_the_targets():
    shares = {0: 0.3, 1: 0.5, 2: 0.2}
    batch_size = 7  # 2.1, 3.5, 1.4 rows per batch: every stratum rounds
    policy = Targets(shares, batch_size, epoch=50)
    strata = strata_of_sizes([1000, 1000, 1000])
    counts = np.concatenate([policy.allocate(strata, k).counts for k in range(200)])
    running = np.cumsum(counts, axis=0)
    expected = np.outer(np.arange(1, counts.shape[0] + 1), [batch_size * shares[s]
                                                             for s in range(3)])
    # Exact over every W = 10**6 batches (tested above); on the way the Weyl
    # rotation keeps the running count close to the target (its discrepancy
    # grows like log n; 11.3 rows at most over these 10**4 batches).
    assert np.abs(running - expected).max() < 15
    assert np.allclose(running[-1] / running[-1].sum(), [0.3, 0.5, 0.2], atol=1e-4)


def test_targets_example_by_hand_balanced_recycles_the_minority():
    y = np.array([0] * 90 + [1] * 7 + [2] * 23)
    plan = plan_batches(y, Targets("balanced", 6), seed=1)
    assert len(plan) == 45  # 90 majority rows, 2 per batch
    uses = uses_per_row(plan, len(y))
    assert (uses[y == 0] == 1).all()
    assert set(uses[y == 1].tolist()) == {12, 13}  # 90 slots over 7 rows
    assert set(uses[y == 2].tolist()) == {3, 4}  # 90 slots over 23 rows
    for rows in plan.batches:
        assert np.bincount(y[rows], minlength=3).tolist() == [2, 2, 2]


def test_recycled_passes_are_fresh_shuffles_of_the_stratum():
    y = np.array([0] * 40 + [1] * 4)
    plan = plan_batches(y, Targets("balanced", 2), seed=3)
    minority = [row for row in plan.order if y[row] == 1]
    passes = [minority[i:i + 4] for i in range(0, 40, 4)]
    assert all(sorted(p) == [40, 41, 42, 43] for p in passes)  # each pass uses every row once
    assert len({tuple(p) for p in passes}) > 1  # in different orders


def test_shuffle_false_recycles_in_row_order():
    y = [0, 0, 0, 0, 1]
    batches = stratified_batches(y, Targets("balanced", 2), shuffle=False)
    assert [b.tolist() for b in batches] == [[0, 4], [1, 4], [2, 4], [3, 4]]


def test_a_zero_share_leaves_the_stratum_out():
    y = np.array([0] * 20 + [1] * 5 + [2] * 9)
    plan = plan_batches(y, Targets({0: 0.75, 1: 0.25, 2: 0}, 4), seed=2)
    assert not (y[plan.order] == 2).any()
    assert len(plan) == 20 // 3 + 1 or len(plan) >= 20 / 3


def test_labels_are_matched_by_text_and_recorded_as_text():
    y = np.array(["a"] * 10 + ["b"] * 30)
    policy = Targets({"a": 0.5, "b": 0.5}, 4)
    assert policy.params()["shares"] == {"a": 0.5, "b": 0.5}
    assert Targets({1: 0.5, 0: 0.5}, 4) == Targets({"1": 0.5, "0": 0.5}, 4)
    assert label_key(True) == "TRUE" and label_key(2.0) == "2" and label_key((1, "x")) == "1/x"
    plan = plan_batches(y, policy, seed=1)
    assert len(plan) == 15


@pytest.mark.parametrize("policy", [
    Targets("balanced", 6), Targets({0: 0.25, 1: 0.75}, 8, epoch="smallest"),
    Targets({"x": 1.0}, 3, epoch=4), Downsample({0: 0.5}, FixedSize(10)),
    Downsample({"a": 0.1, "b": 1}, Targets("balanced", 4)), Downsample({2: 0.3}, 3),
])
def test_sampling_policies_round_trip_through_json(policy):
    record = json.loads(json.dumps(policy.to_dict()))
    rebuilt = policy_from_params(record["name"], record["params"])
    assert rebuilt == policy and hash(rebuilt) == hash(policy)
    assert repr(policy).startswith(type(policy).__name__ + "(")


# ------------------------------------------------------------------ Downsample

@settings(max_examples=80, deadline=None)
@given(sizes=st.lists(st.integers(1, 80), min_size=2, max_size=4), data=st.data(),
       epoch=st.integers(0, 20))
def test_downsample_keeps_exact_counts_and_weights(sizes, data, epoch):
    n_strata = len(sizes)
    fraction = data.draw(st.floats(0.01, 1.0))
    base = data.draw(st.sampled_from([MinPerStratum(1), FixedSize(16), Targets("balanced", 8)]))
    if isinstance(base, Targets) and base.batch_size < n_strata:
        return
    y = labels_of(sizes, seed=epoch)
    policy = Downsample({0: fraction}, base)
    try:
        plan = plan_allowing_one_batch(y, policy, seed=epoch + 1, epoch=epoch)
    except ValueError as error:  # FixedSize's feasibility check on the kept sizes
        assert re.search(r"^batch_size=16 gives \d+ full batch\(es\)|^min_per_stratum=",
                         str(error))
        assert isinstance(base, FixedSize)
        return
    kept = max(1, math.floor(fraction * sizes[0] + 0.5))
    uses = uses_per_row(plan, len(y))
    served = uses[y == 0]
    if isinstance(base, Targets):
        assert np.count_nonzero(served) <= kept  # recycled passes reuse the kept rows only
    else:
        assert np.count_nonzero(served) == kept and served.max() == 1
        for s in range(1, n_strata):
            assert (uses[y == s] == 1).all()
    expected = np.where(y[plan.order] == 0, sizes[0] / kept, 1.0)
    if isinstance(base, Targets):  # times Targets' weights over the kept rows
        expected = expected * targets_weights([kept, *sizes[1:]], np.ones(n_strata))[
            y[plan.order]]
        np.testing.assert_allclose(plan.weights, expected, rtol=1e-15)
    else:
        assert np.array_equal(plan.weights, expected)
    assert np.array_equal(np.concatenate([plan.batch_weights(b) for b in range(len(plan))]),
                          plan.weights)


def test_downsample_example_by_hand():
    y = np.array([0] * 90 + [1] * 10)
    plan = plan_batches(y, Downsample({0: 0.2}, FixedSize(7)), seed=4)
    assert len(plan) == 4  # 28 kept rows: 18 + 10
    assert (np.bincount(y[plan.order]) == [18, 10]).all()
    assert set(plan.weights.tolist()) == {5.0, 1.0}


# ------------------------------------------------------------------ statistics

def binomial_two_sided_p(k, n, p):
    """Exact two-sided binomial p-value (sum of outcomes no more likely than k)."""
    pmf = [math.comb(n, i) * p**i * (1 - p) ** (n - i) for i in range(n + 1)]
    return min(1.0, sum(q for q in pmf if q <= pmf[k] * (1 + 1e-9)))


def test_each_kept_row_is_kept_with_its_probability():
    # keep 0.3 of 50 rows: 15 per epoch; over 300 independent epochs each row's count
    # of epochs kept is Binomial(300, 0.3). Bonferroni over the 50 rows at 1%.
    y = np.array([0] * 50 + [1] * 20)
    epochs = 300
    kept = np.zeros(70, dtype=np.int64)
    for epoch in range(epochs):
        plan = plan_batches(y, Downsample({0: 0.3}, FixedSize(10)), seed=12345, epoch=epoch)
        kept += uses_per_row(plan, 70)
    assert (kept[50:] == epochs).all()
    p_values = [binomial_two_sided_p(int(k), epochs, 0.3) for k in kept[:50]]
    assert min(p_values) > 0.01 / 50


def test_undersampled_and_recycled_rows_follow_their_probabilities():
    # balanced, B = 2 x 3 strata: 2 slots per stratum and batch, no rotation.
    # "smallest": 4 batches (8 rows / 2) -> 8 slots; stratum of 30 rows: each row in with
    # p = 8/30.
    # "largest": 15 batches -> 30 slots; stratum of 8 rows: 3 or 4 uses, 4 with p = 6/8.
    y = np.array([0] * 30 + [1] * 12 + [2] * 8)
    epochs = 250
    undersampled = np.zeros(30, dtype=np.int64)
    extra_use = np.zeros(8, dtype=np.int64)
    for epoch in range(epochs):
        small = plan_batches(y, Targets("balanced", 6, epoch="smallest"), seed=7, epoch=epoch)
        undersampled += uses_per_row(small, 50)[:30]
        large = plan_batches(y, Targets("balanced", 6), seed=7, epoch=epoch)
        uses = uses_per_row(large, 50)[42:]
        assert set(uses.tolist()) <= {3, 4}
        extra_use += uses == 4
    tests = [binomial_two_sided_p(int(k), epochs, 8 / 30) for k in undersampled]
    tests += [binomial_two_sided_p(int(k), epochs, 6 / 8) for k in extra_use]
    assert min(tests) > 0.01 / len(tests)


def test_weighted_loss_over_an_epoch_is_unbiased():
    rng = np.random.default_rng(0)
    y = np.array([0] * 400 + [1] * 40)
    loss = rng.gamma(2.0, 1.0, size=y.shape[0]) + 3 * y  # any per-row loss
    full = loss.sum()
    estimates = []
    for epoch in range(400):
        plan = plan_batches(y, Downsample({0: 0.1}, Targets("balanced", 20, epoch="smallest")),
                            seed=99, epoch=epoch)
        estimates.append(float((plan.weights * loss[plan.order]).sum()))
    estimates = np.array(estimates)
    standard_error = estimates.std(ddof=1) / np.sqrt(estimates.shape[0])
    assert abs(estimates.mean() - full) < 4 * standard_error
    unweighted = plan_batches(y, Downsample({0: 0.1}, FixedSize(20)), seed=1)
    assert loss[unweighted.order].sum() < 0.5 * full  # without weights: badly biased


# ------------------------------------------------------------------ streams

@pytest.mark.parametrize("rng", ["numpy", "R"])
def test_epochs_are_reached_directly_or_in_sequence_alike(rng):
    from pystratum.engine._plan import plan_from_stream
    from pystratum.strata._encode import encode_strata
    from pystratum.streams._base import make_stream

    y = np.array([0] * 30 + [1] * 4 + [2] * 9)
    policy = Downsample({0: 0.5}, Targets({0: 0.5, 1: 0.25, 2: 0.25}, 8))
    encoded = encode_strata(y)
    stream = make_stream(rng, 21)
    walked = [plan_from_stream(encoded, policy, stream, epoch=k, rng=rng) for k in range(4)]
    for k in (3, 1):
        direct = plan_batches(y, policy, seed=21, rng=rng, epoch=k)
        assert np.array_equal(direct.order, walked[k].order)
        assert np.array_equal(direct.weights, walked[k].weights)


def test_downsample_epochs_are_groups_of_r_sample_int_draws_stratum_by_stratum():
    """rng='R': epoch k is the (k+1)-th group of draws, here sample.int(30, 15) picking the
    kept rows of stratum 0 (first in the data), then sample.int(9) ordering stratum 1."""
    from _split_safe import reference_reorder
    from pystratum import RStream

    y = np.array([0] * 30 + [1] * 9)
    with_pool = plan_batches(y, Downsample({0: 0.5}, FixedSize(6)), seed=8, rng="R", epoch=2)
    stream = RStream(8)
    for _ in range(3):
        kept = stream.sample(30, 15) - 1
        ordered = 30 + stream.sample(9) - 1
    assert sorted(with_pool.order.tolist()) == sorted(kept.tolist() + ordered.tolist())
    c0, c1 = (int(c) for c in with_pool.counts[0])
    by_stratum = np.concatenate([kept[:c0], ordered[:c1]])
    # The default batch_order is split-safe: the same rows, interleaved by the shared rule.
    expected = reference_reorder(by_stratum, y, np.array([0, 1]))
    assert with_pool.batches[0].tolist() == expected.tolist()


# ------------------------------------------------------------------ bad input

@pytest.mark.parametrize("call, error, argument", [
    (lambda: Targets({0: -0.1, 1: 1.1}, 4), ValueError, "shares must be >= 0"),
    (lambda: Targets({0: 0.5, 1: 0.4}, 4), ValueError, "shares must add up to 1"),
    (lambda: Targets({0: 0.5, "0": 0.5}, 4), ValueError, "shares names stratum '0' twice"),
    (lambda: Targets([0.5, 0.5], 4), TypeError, "shares must be 'balanced' or a non-empty dict"),
    (lambda: Targets("even", 4), ValueError, "shares must be 'balanced'"),
    (lambda: Targets({0: 0.5, 1: 0.5}, 0), ValueError, "batch_size must be a positive integer"),
    (lambda: Targets({0: 0.5, 1: 0.5}, 1), ValueError, "batch_size must be at least the number"),
    (lambda: Targets("balanced", 4, epoch="all"), ValueError, "epoch must be 'largest'"),
    (lambda: Targets("balanced", 4, epoch=0), ValueError, "epoch must be a positive integer"),
    (lambda: Targets({0: 1e-8, 1: 1 - 1e-8}, 4), ValueError, "shares are resolved to 1e-6"),
    (lambda: Downsample({0: 0}, FixedSize(4)), ValueError, "keep fractions must be in (0, 1]"),
    (lambda: Downsample({0: 1.5}, FixedSize(4)), ValueError, "keep fractions must be in (0, 1]"),
    (lambda: Downsample([0.5], FixedSize(4)), TypeError, "keep must be a non-empty dict"),
    (lambda: Downsample({0: 0.5}, "fixed"), TypeError, "base must be a policy"),
])
def test_bad_arguments_are_refused_naming_the_argument_and_the_fix(call, error, argument):
    with pytest.raises(error, match=None) as caught:
        call()
    assert str(caught.value).startswith(argument.split(" must")[0].split(" names")[0]
                                        .split(" are")[0])
    assert argument in str(caught.value)


@pytest.mark.parametrize("policy, message", [
    (Targets({0: 0.5, 5: 0.5}, 4), "shares names strata that are not in the data: ['5']"),
    (Targets({0: 1.0}, 4), "shares must give every stratum a share, but it misses 2"),
    (Targets("balanced", 2), "batch_size must be at least the number of strata"),
    (Targets("balanced", 30, epoch="smallest"), "epoch='smallest' leaves no batch"),
    (Downsample({7: 0.5}, 1), "keep names strata that are not in the data: ['7']"),
])
def test_data_dependent_errors_name_the_argument(policy, message):
    y = [0] * 10 + [1] * 5 + [2] * 5
    with pytest.raises(ValueError) as caught:
        stratified_batches(y, policy, seed=1)
    assert message in str(caught.value)


def _batches_by_rule(y, plan, stream_draws):
    """The documented order, by a plain loop: per stratum (in order of first appearance) its
    rows in row order picked by its first draw (its pool, in pass 0's order), then the pool
    reordered by each further draw of the stratum (its extra passes); per batch the strata in
    order of first appearance, each giving its ranks cuts[s, b]..cuts[s, b+1]."""
    from _split_safe import reference_reorder
    from pystratum.strata._encode import encode_strata

    encoded = encode_strata(y)
    allocation = plan.policy.allocate(encoded, plan.epoch)
    cuts = allocation.cuts
    draws = list(stream_draws)
    turn = sorted(range(len(encoded.sizes)), key=lambda s: encoded.first_rows[s])
    sequences = {}
    for s in turn:
        if cuts[s, -1] == 0:
            sequences[s] = []
            continue
        members = [r for r in range(len(y)) if encoded.codes[r] == s]
        pool = [members[int(k)] for k in draws.pop(0)]
        sequence = list(pool)
        while len(sequence) < cuts[s, -1]:
            sequence += [pool[int(k)] for k in draws.pop(0)]
        sequences[s] = sequence[:int(cuts[s, -1])]
    assert draws == []
    batches = [[r for s in turn for r in sequences[s][cuts[s, b]:cuts[s, b + 1]]]
               for b in range(cuts.shape[1] - 1)]
    if not plan.policy.split_safe():
        return batches
    # The default batch_order of these policies: the split-safe order of each batch.
    turn_of = np.empty(len(turn), dtype=np.int64)
    turn_of[turn] = np.arange(len(turn))
    return [reference_reorder(np.asarray(b, dtype=np.int64), encoded.codes, turn_of).tolist()
            for b in batches]


@settings(max_examples=40, deadline=None)
@given(sizes=sizes_st, data=st.data(), epoch=st.integers(0, 3))
def test_sampling_batches_list_strata_in_first_appearance_order_by_their_sequences(
        sizes, data, epoch):
    import pystratum.engine._assemble as assemble
    from pystratum.streams._base import NumpyStream
    from pystratum.engine._plan import epoch_draw_sizes
    from pystratum.strata._encode import encode_strata

    y = labels_of(sizes, seed=data.draw(st.integers(0, 5)))
    # Both placements: one scatter for the whole (small) epoch, or stratum by stratum.
    small_epoch_rows = data.draw(st.sampled_from([0, 1 << 15]))
    original, assemble._SMALL_EPOCH_ROWS = assemble._SMALL_EPOCH_ROWS, small_epoch_rows
    batch_size = data.draw(st.integers(len(sizes), len(sizes) + 12))
    kind = data.draw(st.sampled_from(["targets", "downsample-fixed", "downsample-targets"]))
    mode = data.draw(st.sampled_from(["largest", "smallest", 3]))
    targets = Targets("balanced", batch_size, epoch=mode)
    keep = {0: data.draw(st.sampled_from([0.1, 0.5, 1.0]))}
    policy = {"targets": targets,
              "downsample-fixed": Downsample(keep, FixedSize(data.draw(st.integers(1, 20)))),
              "downsample-targets": Downsample(keep, targets)}[kind]
    try:
        plan = plan_batches(y, policy, seed=11, epoch=epoch)
    except ValueError:
        return  # an infeasible combination (e.g. epoch='smallest' leaving no batch)
    finally:
        assemble._SMALL_EPOCH_ROWS = original
    stream = NumpyStream(11)
    draws = stream.epoch_draws(len(y), epoch_draw_sizes(encode_strata(y), policy, epoch), epoch)
    expected = _batches_by_rule(y, plan, draws)
    assert [b.tolist() for b in plan.batches] == expected
    if plan.weights is not None:
        sizes_arr = np.bincount(y)
        kept = max(1, math.floor(keep[0] * sizes_arr[0] + 0.5))
        ones = np.ones(len(sizes_arr))
        for b, rows in enumerate(plan.batches):
            if kind == "targets":  # Targets' own weights: (N_s / N) / (1 / S)
                expected_w = targets_weights(sizes_arr, ones)[y[rows]]
            else:
                expected_w = np.where(y[rows] == 0, sizes_arr[0] / kept, 1.0)
                if kind == "downsample-targets":
                    expected_w = expected_w * targets_weights(
                        [kept, *sizes_arr[1:]], ones)[y[rows]]
            np.testing.assert_allclose(plan.batch_weights(b), expected_w, rtol=1e-15)


@pytest.mark.parametrize("policy", [
    Targets("balanced", 6),                      # every stratum 2 per batch: strided copies
    Targets({0: 0.5, 1: 0.25, 2: 0.25}, 10),     # 5 per batch first, 2/3 rotating after it
    Targets({0: 0.5, 1: 0.5, 2: 0.0}, 4),        # a stratum left out
    Targets("balanced", 9, epoch="smallest"),
    Downsample({0: 0.02}, Targets("balanced", 6)),
    Downsample({0: 0.3, 2: 0.5}, FixedSize(12)),
], ids=repr)
@pytest.mark.parametrize("small_epoch_rows", [0, 1 << 15], ids=["per-stratum", "one-scatter"])
def test_evenly_spaced_and_prefix_placements_follow_the_rule(policy, small_epoch_rows,
                                                            monkeypatch):
    """The assembly's placements (a strided copy when a stratum's blocks are evenly spaced,
    a scatter per stratum, or one scatter for a small epoch) give the rule's order."""
    import pystratum.engine._assemble as assemble
    from pystratum.engine._plan import epoch_draw_sizes
    from pystratum.streams._base import NumpyStream
    from pystratum.strata._encode import encode_strata

    monkeypatch.setattr(assemble, "_SMALL_EPOCH_ROWS", small_epoch_rows)
    y = labels_of([700, 45, 130], seed=3)
    for epoch in (0, 2):
        plan = plan_batches(y, policy, seed=4, epoch=epoch)
        draws = NumpyStream(4).epoch_draws(
            len(y), epoch_draw_sizes(encode_strata(y), policy, epoch), epoch)
        assert [b.tolist() for b in plan.batches] == _batches_by_rule(y, plan, draws)


@settings(max_examples=60, deadline=None)
@given(width=st.integers(1, 5), gap=st.integers(0, 4), n_batches=st.integers(2, 12),
       first=st.integers(0, 4), data=st.data())
def test_evenly_spaced_pieces_land_where_the_formula_says(width, gap, n_batches, first, data):
    from pystratum.engine._assemble import _even_layout, _place_run

    stride = width + gap
    start = first + np.arange(n_batches, dtype=np.int64) * gap  # start[b] + rank = position
    even = _even_layout(start, np.full(n_batches, width, dtype=np.int64))
    assert even == (first, stride, width)
    total = n_batches * width
    cuts = sorted(set(data.draw(st.lists(st.integers(1, total - 1), max_size=6))))
    order = np.full(first + (n_batches - 1) * stride + width, -1, dtype=np.int64)
    values = np.arange(total, dtype=np.int64) + 100
    for low, high in zip([0] + cuts, cuts + [total]):  # the sequence in arbitrary pieces
        _place_run(order, even, low, values[low:high])
    expected = np.full_like(order, -1)
    ranks = np.arange(total)
    expected[first + ranks // width * stride + ranks % width] = values
    np.testing.assert_array_equal(order, expected)


def _draws_by_loop(y, policy, epoch):
    """(stratum, size, take) of every draw of a sampling policy's epoch, by a plain loop."""
    from pystratum.strata._encode import encode_strata

    encoded = encode_strata(y)
    allocation = policy.allocate(encoded, epoch)
    pool = encoded.sizes if allocation.pool_sizes is None else allocation.pool_sizes
    draws = []
    for s in sorted(range(len(encoded.sizes)), key=lambda s: encoded.first_rows[s]):
        used, size = int(allocation.cuts[s, -1]), int(pool[s])
        if used == 0:
            continue
        draws.append((s, int(encoded.sizes[s]), min(size, used)))  # pass 0 picks the pool
        served = size
        while served < used:
            draws.append((s, size, min(size, used - served)))
            served += size
    return draws


@pytest.mark.parametrize("policy", [
    Targets("balanced", 9),                      # 700 rows need 78 batches of 3: 2 short passes
    Targets({0: 0.5, 1: 0.3, 2: 0.2}, 10, epoch=40),
    Targets("balanced", 9, epoch="smallest"),    # pass 0 of the 700 and 130 rows is short
    Downsample({0: 0.05}, Targets("balanced", 12)),
    Downsample({0: 0.3, 2: 0.5}, FixedSize(12)),
], ids=repr)
def test_sampling_epochs_draw_only_the_rows_they_serve(policy):
    """Stream contract of sampling policies: stratum by stratum, a draw picking the pool, then
    one per extra pass; whole ones are numpy permutations, short ones
    Generator.choice(size, take, replace=False) (R: sample.int(size, take)), all from the
    epoch's generator, so an epoch costs O(rows served) draws, not O(N)."""
    from pystratum.streams._base import NumpyStream

    y = labels_of([700, 45, 130], seed=3)
    planned = _draws_by_loop(y, policy, 1)
    assert any(take < size for _, size, take in planned)  # the case this test is about
    generator = NumpyStream(8).generator_for_epoch(1)
    draws = [generator.permutation(size) if take == size
             else generator.choice(size, take, replace=False) for _, size, take in planned]
    plan = plan_batches(y, policy, seed=8, epoch=1)
    assert [b.tolist() for b in plan.batches] == _batches_by_rule(y, plan, draws)
