"""Generated negatives (pystratum.negatives): invariants, statistics, probabilities, resume, errors.

Statistical tests use fixed seeds, so they are deterministic; their
thresholds (chi-square p-value above 1e-4, mean within 4.5 standard errors)
would flag a wrong distribution or a biased weight at these sample sizes.
"""

from __future__ import annotations

import math
import pickle

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import pystratum.kernels as kernel_gate
from pystratum.negatives import NegativeBatch, NegativePairSampler


def implicit_data(num_users, num_items, density, seed, full_item=False):
    """Observed pairs of a random implicit-feedback matrix (every user has >= 1 item)."""
    gen = np.random.default_rng(seed)
    observed = gen.random((num_users, num_items)) < density
    observed[np.arange(num_users), gen.integers(0, num_items, num_users)] = True
    if not full_item:
        observed[:, -1] = False  # nobody observed every item
    users, items = np.nonzero(observed)
    order = gen.permutation(users.size)
    return users[order], items[order], observed


def chi_square_p(observed_counts, expected_counts):
    """Upper tail of the chi-square statistic (Wilson-Hilferty approximation, no scipy)."""
    observed_counts = np.asarray(observed_counts, dtype=float)
    expected_counts = np.asarray(expected_counts, dtype=float)
    statistic = float(((observed_counts - expected_counts) ** 2 / expected_counts).sum())
    df = observed_counts.size - 1
    z = ((statistic / df) ** (1 / 3) - (1 - 2 / (9 * df))) / math.sqrt(2 / (9 * df))
    return 0.5 * math.erfc(z / math.sqrt(2))


def check_epoch(sampler, batches, observed):
    """Coverage, exact counts, row layout, rejection, user kept, probabilities formula."""
    k = sampler.negatives
    positives = np.concatenate([b.positive[:b.num_positives] for b in batches])
    np.testing.assert_array_equal(np.sort(positives), np.arange(sampler.num_pairs))
    n_observed = observed.sum(axis=1) if observed is not None else None
    for b in batches:
        n = b.num_positives
        assert len(b) == n * (1 + k)
        assert 1 <= n <= sampler.batch_size
        np.testing.assert_array_equal(b.label, np.r_[np.ones(n), np.zeros(n * k)])
        assert (b.positive[n:] == -1).all()
        np.testing.assert_array_equal(b.user[:n], sampler.users[b.positive[:n]])
        np.testing.assert_array_equal(b.item[:n], sampler.items[b.positive[:n]])
        neg_u, neg_i = b.user[n:], b.item[n:]
        assert ((0 <= neg_i) & (neg_i < sampler.num_items)).all()
        assert ((0 <= neg_u) & (neg_u < sampler.num_users)).all()
        if sampler.pair_with == "user":
            np.testing.assert_array_equal(neg_u, np.repeat(b.user[:n], k))
        if sampler.reject_observed and observed is not None:
            assert not observed[neg_u, neg_i].any()
        np.testing.assert_array_equal(b.log_q[:n], 0.0)
        np.testing.assert_array_equal(b.weight[:n], 1.0)
        # Bit for bit the C library's exp, as R computes it (numpy's SIMD exp may be an ulp off).
        np.testing.assert_array_equal(b.weight[n:], [math.exp(-v) / k for v in b.log_q[n:]])
        if observed is not None and sampler._weights is None:
            if sampler.pair_with == "user":
                free = sampler.num_items - (n_observed[neg_u] if sampler.reject_observed else 0)
            else:
                free = observed.shape[0] * sampler.num_items - (
                    sampler.num_pairs if sampler.reject_observed else 0)
            np.testing.assert_allclose(b.log_q[n:], -np.log(free), rtol=1e-12)


# ------------------------------------------------------------------- invariants


@settings(max_examples=40)
@given(
    num_users=st.integers(1, 12), num_items=st.integers(2, 15),
    density=st.floats(0.05, 0.8), data_seed=st.integers(0, 10**6),
    k=st.integers(1, 5), batch_size=st.integers(1, 20), seed=st.integers(0, 2**31 - 1),
    rng=st.sampled_from(["numpy", "R"]), pair_with=st.sampled_from(["user", "random"]),
    reject=st.booleans(), epoch=st.integers(0, 2),
)
def test_epoch_invariants(num_users, num_items, density, data_seed, k, batch_size, seed, rng,
                          pair_with, reject, epoch):
    users, items, observed = implicit_data(num_users, num_items, density, data_seed)
    sampler = NegativePairSampler(users, items, num_items=num_items, negatives=k,
                                  batch_size=batch_size, num_users=num_users, seed=seed, rng=rng,
                                  pair_with=pair_with, reject_observed=reject, max_rounds=3000)
    sampler.set_epoch(epoch)
    batches = list(sampler)
    assert len(batches) == len(sampler) == -(-users.size // batch_size)
    check_epoch(sampler, batches, observed)
    # A batch is a function of (seed, epoch, index): asked for alone, in any order, it is equal.
    for b in reversed(batches):
        again = sampler.batch(epoch, b.index)
        for name, value in b.as_dict().items():
            np.testing.assert_array_equal(value, getattr(again, name))


@pytest.mark.parametrize("rng", ["numpy", "R", "torch"])
def test_ranks_split_the_epoch_and_agree_with_one_process(rng):
    users, items, observed = implicit_data(30, 40, 0.2, 1)
    kw = dict(num_items=40, negatives=3, batch_size=16, seed=5, rng=rng)
    whole = NegativePairSampler(users, items, **kw)
    expected = whole.epoch_batches(1)
    served = {}
    for rank in range(3):
        part = NegativePairSampler(users, items, num_replicas=3, rank=rank, **kw)
        part.set_epoch(1)
        got = list(part)
        assert len(got) == len(part) == -(-whole.num_batches // 3)
        for b in got:
            np.testing.assert_array_equal(b.item, expected[b.index].item)
            served.setdefault(b.index, rank)
    assert sorted(served) == list(range(whole.num_batches))
    check_epoch(whole, expected, observed)


def test_epochs_are_new_shuffles_with_new_negatives():
    users, items, _ = implicit_data(20, 30, 0.2, 2)
    sampler = NegativePairSampler(users, items, num_items=30, negatives=2, batch_size=10, seed=3)
    first, second = list(sampler), list(sampler)
    assert first[0].epoch == 0 and second[0].epoch == 1
    assert not np.array_equal(np.concatenate([b.positive for b in first]),
                              np.concatenate([b.positive for b in second]))
    assert sampler.epoch == 2


def test_pandas_and_float_ids_and_duplicates_drop_keep_positions():
    frame = pd.DataFrame({"u": [3, 0, 3, 1, 0, 3], "i": [2.0, 1.0, 2.0, 0.0, 4.0, 1.0]})
    with pytest.raises(ValueError, match=r"1 duplicate observed pair.*position 2 repeats "
                                         r"\(user 3, item 2\) of position 0.*duplicates='drop'"):
        NegativePairSampler(frame.u, frame.i, num_items=5, negatives=1, batch_size=2, seed=0)
    sampler = NegativePairSampler(frame.u, frame.i, num_items=5, negatives=1, batch_size=2,
                                  seed=0, duplicates="drop")
    assert sampler.num_pairs == 5 and sampler.num_users == 4
    positions = np.concatenate([b.positive[:b.num_positives] for b in sampler])
    np.testing.assert_array_equal(np.sort(positions), [0, 1, 3, 4, 5])
    for b in sampler.epoch_batches(0):
        n = b.num_positives
        np.testing.assert_array_equal(b.user[:n], frame.u.to_numpy()[b.positive[:n]])
        np.testing.assert_array_equal(b.item[:n], frame.i.to_numpy()[b.positive[:n]])


@pytest.mark.parametrize("rng", ["numpy", "R"])
def test_several_replicas_move_epochs_only_through_set_epoch(rng):
    """num_replicas > 1: iter() re-serves the epoch; a peek does not move it; a finished
    epoch restarted without set_epoch warns once; set_epoch / load_state_dict move it."""
    import warnings

    users, items, _ = implicit_data(20, 30, 0.2, 21)
    kw = dict(num_items=30, negatives=2, batch_size=7, seed=8, rng=rng)
    whole = NegativePairSampler(users, items, **kw)
    part = NegativePairSampler(users, items, num_replicas=2, rank=1, **kw)

    def same(got, epoch):
        want = whole.epoch_batches(epoch)
        assert [b.epoch for b in got] == [epoch] * len(got)
        for j, b in enumerate(got):
            w = want[(2 * j + 1) % len(want)]
            np.testing.assert_array_equal(b.positive, w.positive)
            np.testing.assert_array_equal(b.item, w.item)

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        peek = next(iter(part))  # a peek before the epoch's loop
        first = list(part)
    same([peek], 0)
    same(first, 0)
    assert part.epoch == 0
    with pytest.warns(UserWarning, match=r"rank 1 of num_replicas=2\) serves epoch 0 again"):
        again = list(part)
    same(again, 0)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # shown once
        list(part)
        part.set_epoch(3)
        same(list(part), 3)
        assert part.epoch == 3
        list(part)  # set_epoch was used up by the previous pass, but the warning was shown
    it = iter(part)
    head = [next(it) for _ in range(2)]
    state = part.state_dict()
    assert (state["epoch"], state["batches_yielded"]) == (3, 2)
    copy = pickle.loads(pickle.dumps(part))  # a copy mid-epoch continues from the same batch
    restored = NegativePairSampler(users, items, num_replicas=2, rank=1, **kw)
    restored.load_state_dict(state)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        tail = list(restored)
        assert [b.index for b in list(copy)] == [b.index for b in tail]
    same(head + tail, 3)
    assert restored.epoch == 3


def test_one_replica_iter_still_moves_to_the_next_epoch():
    users, items, _ = implicit_data(10, 12, 0.3, 22)
    sampler = NegativePairSampler(users, items, num_items=12, negatives=1, batch_size=5, seed=2)
    next(iter(sampler))  # a started pass is an epoch on one replica
    assert [b.epoch for b in sampler] == [1] * len(sampler)
    assert sampler.epoch == 2


# ----------------------------------------------------------------- statistics


@pytest.mark.parametrize("weighted", [False, True])
@pytest.mark.parametrize("rng", ["numpy", "R"])
def test_item_frequencies_after_rejection_match_q(weighted, rng):
    """pair_with='user': for each user, its negatives' items follow w_i over its unobserved items."""
    users, items, observed = implicit_data(6, 25, 0.3, 3)
    weights = np.random.default_rng(4).pareto(1.5, 25) + 0.05 if weighted else None
    counts = np.zeros(observed.shape)
    sampler = NegativePairSampler(users, items, num_items=25, negatives=40, batch_size=64,
                                  seed=11, rng=rng, item_weights=weights)
    for _ in range(15):
        for b in sampler:
            n = b.num_positives
            np.add.at(counts, (b.user[n:], b.item[n:]), 1)
    assert counts[observed].sum() == 0
    w = np.ones(25) if weights is None else weights
    for u in range(6):
        free = ~observed[u]
        expected = counts[u].sum() * w[free] / w[free].sum()
        assert chi_square_p(counts[u, free], expected) > 1e-4, u


def test_random_pairs_are_uniform_over_unobserved_pairs():
    users, items, observed = implicit_data(5, 8, 0.4, 5)
    counts = np.zeros(observed.shape)
    sampler = NegativePairSampler(users, items, num_items=8, negatives=50, batch_size=100,
                                  seed=2, pair_with="random")
    for _ in range(40):
        for b in sampler:
            n = b.num_positives
            np.add.at(counts, (b.user[n:], b.item[n:]), 1)
    assert counts[observed].sum() == 0
    free = ~observed
    expected = np.full(free.sum(), counts.sum() / free.sum())
    assert chi_square_p(counts[free], expected) > 1e-4


@pytest.mark.parametrize("pair_with", ["user", "random"])
@pytest.mark.parametrize("weighted", [False, True])
@pytest.mark.parametrize("reject", [True, False])
def test_exp_log_q_is_a_distribution_over_the_population(pair_with, weighted, reject):
    """Exhaustively on small data: sum of exp(log_q) over the population is 1, and the
    log_q a batch reports is the sampler's log_q of that pair."""
    users, items, observed = implicit_data(7, 9, 0.35, 6)
    weights = np.r_[np.random.default_rng(7).random(8) + 0.1, 0.0] if weighted else None
    sampler = NegativePairSampler(users, items, num_items=9, negatives=3, batch_size=5, seed=1,
                                  pair_with=pair_with, item_weights=weights,
                                  reject_observed=reject)
    grid_u, grid_i = np.meshgrid(np.arange(7), np.arange(9), indexing="ij")
    q = np.exp(sampler.log_q(grid_u.ravel(), grid_i.ravel())).reshape(7, 9)
    if reject:
        assert (q[observed] == 0).all()
    if weighted:
        assert (q[:, -1] == 0).all()
    if pair_with == "user":
        np.testing.assert_allclose(q.sum(axis=1), 1.0, rtol=1e-12)
    else:
        assert math.isclose(q.sum(), 1.0, rel_tol=1e-12)
    for b in sampler:
        n = b.num_positives
        np.testing.assert_allclose(b.log_q[n:], sampler.log_q(b.user[n:], b.item[n:]),
                                   rtol=1e-12)


@pytest.mark.parametrize("pair_with,weighted,reject", [
    ("user", False, True), ("user", True, True), ("random", False, True),
    ("random", True, False), ("user", False, False)])
def test_importance_weighted_loss_is_unbiased(pair_with, weighted, reject):
    """Mean over seeds of sum_t weight_t * loss(x_t) over a pair's k negatives equals the
    loss summed over the population (exact all-pairs sum)."""
    users, items, observed = implicit_data(4, 7, 0.3, 8)
    loss = np.random.default_rng(9).gamma(2.0, 1.0, observed.shape)
    weights = np.random.default_rng(10).random(7) + 0.2 if weighted else None
    population = ~observed if reject else np.ones_like(observed)
    if pair_with == "user":
        exact = (loss * population).sum(axis=1)[users]  # per observed pair
    else:
        exact = np.full(users.size, (loss * population).sum())
    k = 2
    estimates = []
    for seed in range(300):
        sampler = NegativePairSampler(users, items, num_items=7, negatives=k,
                                      batch_size=users.size, seed=seed, pair_with=pair_with,
                                      item_weights=weights, reject_observed=reject)
        b = sampler.batch(0, 0)
        n = b.num_positives
        per_pair = (b.weight[n:] * loss[b.user[n:], b.item[n:]]).reshape(n, k).sum(axis=1)
        estimate = np.empty(n)
        estimate[b.positive[:n]] = per_pair
        estimates.append(estimate)
    estimates = np.array(estimates)
    mean = estimates.mean(axis=0)
    standard_error = estimates.std(axis=0, ddof=1) / math.sqrt(len(estimates))
    z = (mean - exact) / standard_error
    assert np.abs(z).max() < 4.5, z
    # The raw proposal's weight would be biased under rejection: the check has power.
    if reject and pair_with == "user" and not weighted:
        biased = mean * (7 - observed.sum(axis=1)[users]) / 7
        assert np.abs((biased - exact) / standard_error).max() > 4.5


# ---------------------------------------------------------------------- resume


@pytest.mark.parametrize("rng", ["numpy", "R", "torch"])
def test_resume_mid_epoch_is_exact(rng):
    users, items, _ = implicit_data(25, 30, 0.25, 11)
    kw = dict(num_items=30, negatives=2, batch_size=9, seed=4, rng=rng)
    reference = NegativePairSampler(users, items, **kw)
    list(reference)
    expected = list(reference)  # epoch 1
    sampler = NegativePairSampler(users, items, **kw)
    list(sampler)
    it = iter(sampler)
    head = [next(it) for _ in range(3)]
    state = pickle.loads(pickle.dumps(sampler.state_dict()))
    restored = NegativePairSampler(users, items, **{**kw, "seed": 99})
    restored.load_state_dict(state)
    assert restored.seed == 4 and restored.epoch == 1
    tail = list(restored)
    assert [b.index for b in head + tail] == list(range(len(expected)))
    for got, want in zip(head + tail, expected):
        np.testing.assert_array_equal(got.positive, want.positive)
        np.testing.assert_array_equal(got.item, want.item)
    assert restored.epoch == 2


def test_corrupted_or_foreign_state_is_refused():
    users, items, _ = implicit_data(10, 12, 0.3, 12)
    kw = dict(num_items=12, negatives=2, batch_size=4, seed=1, rng="R")
    sampler = NegativePairSampler(users, items, **kw)
    next(iter(sampler))
    state = sampler.state_dict()
    fresh = NegativePairSampler(users, items, **kw)
    with pytest.raises(TypeError, match="state_dict must be the dict"):
        fresh.load_state_dict([1, 2])
    with pytest.raises(ValueError, match=r"missing keys \['pairs_digest'\]"):
        fresh.load_state_dict({k: v for k, v in state.items() if k != "pairs_digest"})
    with pytest.raises(ValueError, match="saved with negatives=2 but this sampler has "
                                         "negatives=3"):
        NegativePairSampler(users, items, **{**kw, "negatives": 3}).load_state_dict(state)
    with pytest.raises(ValueError, match="pairs_digest differs"):
        # The same pairs in another order: positions would point at other pairs.
        NegativePairSampler(users[::-1], items[::-1], **kw).load_state_dict(state)
    with pytest.raises(ValueError, match="batches_yielded'] must be at most"):
        fresh.load_state_dict({**state, "batches_yielded": 10**6})
    with pytest.raises(ValueError, match=r"state_dict\['epoch'\] must be an integer >= 0"):
        fresh.load_state_dict({**state, "epoch": -1})
    with pytest.raises(ValueError, match=r"not a valid rng='R' stream state"):
        fresh.load_state_dict({**state, "stream": {"n": 3, "epoch": 0, "random_seed": [1, 2]}})
    with pytest.raises(TypeError, match=r"state_dict\['seed'\] must be an int"):
        fresh.load_state_dict({**state, "seed": "abc"})
    with pytest.raises(ValueError, match=r"state_dict\['seed'\] is not a numpy SeedSequence "
                                         r"record: keys \['entropy'\]"):
        fresh.load_state_dict({**state, "seed": {"entropy": 1}})


# ---------------------------------------------------------------------- errors


def _build(users=(0, 1, 2), items=(0, 1, 2), **overrides):
    kw = dict(num_items=4, negatives=1, batch_size=2, seed=0)
    kw.update(overrides)
    return NegativePairSampler(list(users) if isinstance(users, tuple) else users,
                               list(items) if isinstance(items, tuple) else items, **kw)


@pytest.mark.parametrize("call,error,pattern", [
    (lambda: _build(negatives=0), ValueError,
     r"negatives must be a positive integer, got negatives=0\. Each observed pair needs"),
    (lambda: _build(negatives=True), TypeError, r"negatives must be an integer"),
    (lambda: _build(batch_size=0), ValueError, r"batch_size must be a positive integer"),
    (lambda: _build(items=(0, 1, 4)), ValueError,
     r"items must hold ids in \[0, num_items=4\), got items\[2\]=4\. .*pass num_items=5"),
    (lambda: _build(users=(0, -1, 2)), ValueError,
     r"users must hold ids >= 0 \(0-based\), got users\[1\]=-1"),
    (lambda: _build(users=(0, 1, 2), num_users=2), ValueError,
     r"users must hold ids in \[0, num_users=2\), got users\[2\]=2"),
    (lambda: _build(items=(0, 1.5, 2)), TypeError,
     r"items must hold whole-number ids, got items\[1\]=1\.5"),
    (lambda: _build(users=np.array([0, np.nan, 2])), ValueError,
     r"users must not hold NaN, got users\[1\]=nan"),
    (lambda: _build(users=pd.Series([0, None, 2], dtype="Int64")), ValueError,
     r"users must not hold missing values, got users\[1\]"),
    (lambda: _build(users=["a", "b", "c"]), TypeError, r"users must hold integer ids"),
    (lambda: _build(users=(True, False, True)), TypeError, r"users must hold integer ids"),
    (lambda: _build(users=(0, 1)), ValueError,
     r"users and items must have the same length .* len\(users\)=2 and len\(items\)=3"),
    (lambda: _build(users=(), items=()), ValueError, r"users and items are empty"),
    (lambda: _build(users=(0, 0, 1), items=(1, 1, 2)), ValueError,
     r"1 duplicate observed pair"),
    (lambda: _build(item_weights=[1, -1, 1, 1]), ValueError,
     r"item_weights must be finite and >= 0, got item_weights\[1\]=-1\.0"),
    (lambda: _build(item_weights=[0, 0, 0, 0]), ValueError, r"item_weights are all zero"),
    (lambda: _build(item_weights=[1, 1]), ValueError,
     r"item_weights must hold one weight per item \(length num_items=4\), got shape \(2,\)"),
    (lambda: _build(item_weights=[1, np.nan, 1, 1]), ValueError, r"item_weights\[1\]=nan"),
    (lambda: _build(users=(0, 0, 0, 0), items=(0, 1, 2, 3)), ValueError,
     r"user 0 has observed every item \(4 of num_items=4\)"),
    (lambda: _build(users=(0, 0, 0), items=(0, 1, 2), num_items=4, max_rounds=3), ValueError,
     r"user 0 has observed 3 of num_items=4 items .*Raise max_rounds to at least"),
    (lambda: _build(users=(0, 1), items=(0, 0), num_items=1, pair_with="random"), ValueError,
     r"every \(user, item\) pair of positive weight is observed"),
    (lambda: _build(pair_with="item"), ValueError, r"pair_with must be one of 'user', 'random'"),
    (lambda: _build(rng="R", seed=np.random.default_rng(1)), TypeError, r"numpy Generator"),
    (lambda: _build(rng="torch", seed=-3), ValueError, r"non-negative integer for rng='torch'"),
    (lambda: _build(duplicates="keep"), ValueError, r"duplicates must be one of"),
    (lambda: _build(num_replicas=2, rank=2), ValueError, r"rank must be in \[0, num_replicas\)"),
])
def test_bad_input_is_named(call, error, pattern):
    with pytest.raises(error, match=pattern):
        call()


def test_rejection_running_out_of_rounds_names_the_user():
    sampler = _build(users=(0, 0, 0, 1), items=(0, 1, 2, 0), num_items=4, negatives=20,
                     max_rounds=200)
    sampler.max_rounds = 1  # what an unlucky draw would meet: every round used up
    with pytest.raises(RuntimeError, match=r"user [01]: \d+ negative\(s\) of batch 0 of epoch 0 "
                                           r"were still observed pairs after max_rounds=1"):
        sampler.batch(0, 0)


def test_batch_repr_and_type():
    batch = _build().batch(0, 1)
    assert isinstance(batch, NegativeBatch)
    assert repr(batch) == ("NegativeBatch(epoch=0, index=1, rows=2, positives=1, "
                           "negatives_per_positive=1)")


@settings(max_examples=60)
@given(keys=st.lists(st.integers(0, 2**40), max_size=300),
       queries=st.lists(st.integers(0, 2**40), max_size=100), crowd=st.booleans())
def test_pair_set_membership_equals_a_python_set(keys, queries, crowd):
    from pystratum.negatives._pairset import PairSet

    if crowd:  # keys sharing home slots: long probe runs, duplicates
        keys = keys + [k * 2**30 for k in range(50)] + keys[:20]
    pairs = PairSet(np.asarray(keys, dtype=np.int64))
    assert len(pairs) == len(set(keys))
    probe = np.asarray(queries + keys[:50], dtype=np.int64)
    np.testing.assert_array_equal(pairs.contains(probe), [q in set(keys) for q in probe.tolist()])


@settings(max_examples=30)
@given(prefix_bits=st.integers(8, 24), count=st.integers(1, 200), seed=st.integers(0, 2**32 - 1))
def test_pair_set_crowded_buckets_and_filter_bits(prefix_bits, count, seed):
    """Keys whose hashes share their top bits land in one bucket and on few filter bits:
    the lane-by-lane bucket comparison must still be exact, hits and near misses."""
    from pystratum.negatives._pairset import _MULTIPLIER, PairSet

    gen = np.random.default_rng(seed)
    inverse = pow(int(_MULTIPLIER), -1, 2**64)
    low = gen.integers(0, 2**(64 - prefix_bits), 3 * count, dtype=np.uint64)
    hashed = (np.uint64(gen.integers(0, 2**prefix_bits)) << np.uint64(64 - prefix_bits)) | low
    keys = (hashed * np.uint64(inverse)).view(np.int64)
    keys = keys[keys >= 0]  # keys are non-negative
    stored, absent = keys[:count], keys[count:]
    pairs = PairSet(np.r_[stored, stored[:5]])
    assert len(pairs) == np.unique(stored).size
    queries = np.r_[stored, absent, stored[::-1]]
    members = set(stored.tolist())
    np.testing.assert_array_equal(pairs.contains(queries),
                                  [q in members for q in queries.tolist()])


@settings(max_examples=40)
@given(num_users=st.integers(1, 300), num_items=st.integers(1, 10**6),
       count=st.integers(0, 400), k=st.integers(1, 6), seed=st.integers(0, 2**32 - 1),
       heavy=st.booleans())
def test_pair_set_grouped_members_equal_a_python_set_in_numpy_and_compiled(
        num_users, num_items, count, k, seed, heavy):
    """members_grouped (user words, filter, buckets) and members give the exact answer,
    through numpy and through the compiled kernels alike; heavy users fill their word."""
    import numba  # noqa: F401  (the dev extra installs it: the compiled path is tested)

    from pystratum.negatives._pairset import PairSet

    gen = np.random.default_rng(seed)
    users = gen.integers(0, num_users, count)
    items = gen.integers(0, num_items, count)
    if heavy:  # one user observing many items: every bit of its word set
        users = np.r_[users, np.zeros(200, dtype=np.int64)]
        items = np.r_[items, gen.integers(0, num_items, 200)]
    keys = users * num_items + items
    pairs = PairSet(keys, num_items=num_items)
    members = set(keys.tolist())
    assert len(pairs) == len(members)
    n = 150
    query_users = gen.integers(0, num_users, n)
    query_items = gen.integers(0, num_items, n * k)
    if users.size:  # half the rows' first item an observed pair of that row's user
        chosen = gen.integers(0, users.size, n)
        query_users[::2] = users[chosen[::2]]
        query_items.reshape(n, k)[::2, 0] = items[chosen[::2]]
    query_keys = np.repeat(query_users, k) * num_items + query_items
    expected = np.flatnonzero([q in members for q in query_keys.tolist()])
    for accelerated in (False, True):
        np.testing.assert_array_equal(
            pairs.members_grouped(query_users, query_items, accelerated=accelerated), expected)
        np.testing.assert_array_equal(pairs.members(query_keys, accelerated=accelerated),
                                      expected)
        contained = pairs.contains_grouped(query_users, query_items, accelerated=accelerated)
        np.testing.assert_array_equal(np.flatnonzero(contained), expected)


@pytest.mark.parametrize("num_users, direct", [(50, True), (5000, False)])
def test_pair_set_user_words_indexed_by_user_or_hashed_answer_exactly(num_users, direct):
    """Users index their words directly when the table has room for all of them, else are
    hashed; either way (and for users past the table, who observed nothing) the grouped
    answer is exact, in numpy and compiled."""
    import numba  # noqa: F401  (the dev extra installs it: the compiled path is tested)

    from pystratum.negatives._pairset import PairSet

    gen = np.random.default_rng(7)
    num_items, k = 40, 3
    users = gen.integers(0, num_users, 2000)
    items = gen.integers(0, num_items, 2000)
    keys = users * num_items + items
    pairs = PairSet(keys, num_items=num_items)
    assert (int(pairs._user_shift) == 0) == direct
    query_users = np.r_[users[:300], num_users + np.arange(50)]  # the last 50 observed nothing
    query_items = gen.integers(0, num_items, query_users.size * k)
    query_items[::k][:300] = items[:300]
    members = set(keys.tolist())
    query_keys = np.repeat(query_users, k) * num_items + query_items
    expected = np.flatnonzero([q in members for q in query_keys.tolist()])
    assert expected.size >= 300
    for accelerated in (False, True):
        np.testing.assert_array_equal(
            pairs.members_grouped(query_users, query_items, accelerated=accelerated), expected)
        # out=: the items (any integer dtype) are copied into the int64 column on the way
        out = np.full(query_items.size, -1, dtype=np.int64)
        np.testing.assert_array_equal(pairs.members_grouped(
            query_users, query_items.astype(np.uint32), accelerated=accelerated, out=out),
            expected)
        np.testing.assert_array_equal(out, query_items)


@pytest.mark.parametrize("pair_with", ["user", "random"])
@pytest.mark.parametrize("rng", ["numpy", "R"])
def test_compiled_and_numpy_membership_give_the_same_batches(monkeypatch, pair_with, rng):
    """The compiled kernels only answer membership, exactly: every batch is the same."""
    import pystratum.negatives._pairset as pairset
    import pystratum.kernels._pairset as kernels  # the dev extra installs numba

    # Whatever PYSTRATUM_NUMBA says in this run: first compiled, then numpy.
    monkeypatch.setitem(kernel_gate._LOADED, "pairset", kernels)
    users, items, observed = implicit_data(60, 80, 0.3, 7)
    kw = dict(num_items=80, negatives=4, batch_size=64, seed=11, rng=rng, pair_with=pair_with)
    compiled = NegativePairSampler(users, items, **kw).epoch_batches(2)
    monkeypatch.setitem(kernel_gate._LOADED, "pairset", False)  # as with PYSTRATUM_NUMBA=0
    assert kernel_gate.compiled("pairset") is None
    plain = NegativePairSampler(users, items, **kw)
    expected = plain.epoch_batches(2)
    for got, want in zip(compiled, expected, strict=True):
        for name, value in want.as_dict().items():
            np.testing.assert_array_equal(getattr(got, name), value)
    check_epoch(plain, expected, observed)


def test_without_numba_the_numpy_path_serves_the_same_batches(monkeypatch):
    """numba is optional: where it cannot be imported the sampler uses numpy, same rows."""
    import hashlib
    import subprocess
    import sys

    import pystratum.negatives._pairset as pairset
    import pystratum.kernels._pairset as kernels  # the dev extra installs numba

    monkeypatch.setitem(kernel_gate._LOADED, "pairset", kernels)  # this process: the compiled path
    users, items, _ = implicit_data(50, 70, 0.3, 3)
    batches = NegativePairSampler(users, items, num_items=70, negatives=3, batch_size=40,
                                  seed=2).epoch_batches(1)
    digest = hashlib.sha256(b"".join(v.tobytes() for b in batches
                                     for v in b.as_dict().values())).hexdigest()
    code = ("import sys, hashlib, numpy as np; sys.modules['numba'] = None; "
            "import pystratum.negatives._pairset as p; from pystratum.negatives import "
            "NegativePairSampler; import pystratum.kernels as g; assert g.compiled('pairset') is None; "
            f"u = np.array({users.tolist()}); i = np.array({items.tolist()}); "
            "b = NegativePairSampler(u, i, num_items=70, negatives=3, batch_size=40, "
            "seed=2).epoch_batches(1); print(hashlib.sha256(b''.join(v.tobytes() for x in b "
            "for v in x.as_dict().values())).hexdigest())")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          check=True)
    assert done.stdout.strip() == digest


def test_the_core_does_not_import_torch():
    import subprocess
    import sys

    code = ("import sys, numpy as np; from pystratum.negatives import NegativePairSampler; "
            "s = NegativePairSampler([0, 1], [1, 0], num_items=3, negatives=2, batch_size=1, "
            "seed=1, rng='R'); list(s); print('torch' in sys.modules)")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          check=True)
    assert done.stdout.strip() == "False"


def _numpy_batch_generator(parent, prefix, index):
    return np.random.default_rng(np.random.SeedSequence(
        parent.entropy, spawn_key=(*parent.spawn_key, *prefix, index), pool_size=parent.pool_size))


@settings(max_examples=40)
@given(entropy=st.one_of(st.integers(0, 2**130), st.lists(st.integers(0, 2**70), min_size=1,
                                                          max_size=9)),
       parent_key=st.lists(st.integers(0, 2**40), max_size=3),
       pool_size=st.integers(4, 9), prefix=st.lists(st.integers(0, 2**34), max_size=2),
       indices=st.lists(st.one_of(st.integers(0, 3000), st.integers(2**32 - 2, 2**33)),
                        min_size=1, max_size=6))
def test_spawned_generators_are_numpys_spawned_streams(entropy, parent_key, pool_size, prefix,
                                                      indices):
    """The per-batch Generators (seeded a block of indices at a time) draw exactly what
    default_rng(SeedSequence(entropy, spawn_key=(*key, *prefix, index))) draws, for any
    entropy, key, pool size and index (in any order, across blocks, past 2^32)."""
    from pystratum.streams._spawned import spawned_generators

    parent = np.random.SeedSequence(entropy, spawn_key=tuple(parent_key), pool_size=pool_size)
    generator_of = spawned_generators(parent, tuple(prefix))
    for index in indices:
        ours = generator_of(index)
        assert ours.bit_generator.state == \
            _numpy_batch_generator(parent, prefix, index).bit_generator.state
        np.testing.assert_array_equal(
            ours.integers(0, 1000, 9),
            _numpy_batch_generator(parent, prefix, index).integers(0, 1000, 9))


def test_spawned_generators_fall_back_to_numpy_when_the_seeding_differs(monkeypatch):
    """Set-up compares index 0 with numpy's own construction; if they ever differ (numpy
    changed its seeding), every batch gets numpy's own Generator, so streams stay numpy's."""
    import pystratum.streams._spawned as spawned

    parent = np.random.SeedSequence(5)
    wrong = spawned._pcg64_state

    def off_by_one(*seeds):
        state = wrong(*seeds)
        state["state"]["state"] ^= 1
        return state

    monkeypatch.setattr(spawned, "_pcg64_state", off_by_one)
    generator_of = spawned.spawned_generators(parent, (2,))
    for index in (0, 1, 5000):
        np.testing.assert_array_equal(
            generator_of(index).integers(0, 10**6, 20),
            _numpy_batch_generator(parent, (2,), index).integers(0, 10**6, 20))


@pytest.mark.parametrize("pair_with", ["user", "random"])
@pytest.mark.parametrize("reject", [True, False])
def test_weight_is_the_c_librarys_exp_of_log_q(pair_with, reject):
    # R's exp() and log() are the C library's; numpy's SIMD np.exp and np.log differ from them
    # by an ulp on a few percent of values, so R's and Python's weights would differ. Many
    # distinct weights give such values (with np.exp this test fails, on this seed's data).
    users, items, observed = implicit_data(40, 300, 0.1, 11)
    weights = np.random.default_rng(12).uniform(0.01, 50.0, 300)
    for item_weights in (weights, None):
        sampler = NegativePairSampler(users, items, num_items=300, negatives=4, batch_size=64,
                                      num_users=40, seed=3, rng="R", pair_with=pair_with,
                                      reject_observed=reject, item_weights=item_weights)
        for b in sampler.epoch_batches(0):
            n = b.num_positives
            assert b.weight[n:].tolist() == [math.exp(-v) / 4 for v in b.log_q[n:].tolist()]
