"""Hostile inputs for the sampling policies' stratum-by-stratum draws, the compiled paths
and the negatives' per-batch generators: every path that must agree, compared.

* A plain reference of a sampling policy's epoch (Targets, Downsample), written from the
  documented draw order with numpy's own ``default_rng`` of the epoch's spawned
  ``SeedSequence`` (or torch's own generator), against ``plan_batches`` on the compiled
  and the numpy path, for odd shares (zeros), tiny keep fractions (``k_s = 1``),
  ``epoch='smallest'``/int, strata of one row, many strata, labels of several dtypes.
* The torch sampler against ``plan_batches`` across epochs: ``set_epoch`` jumps, mid-epoch
  ``state_dict``/``load_state_dict`` resumes, several replicas, numpy/R/torch streams.
* Python ``rng='R'`` against the R package in embedded R for the same odd policies.
* ``_spawned_pcg64`` against ``default_rng(SeedSequence(...))`` for odd seeds: huge
  entropy, entropy lists and arrays, spawn keys, pool sizes, prefixes past 2**32, indices
  across blocks and at 2**32; the negatives' batches against that reconstruction.
"""

from __future__ import annotations

import contextlib
import copy
import pickle
import warnings

import numpy as np
import pytest
from hypothesis import HealthCheck, assume, event, given, settings
from hypothesis import strategies as st

import pystratum.kernels as kernel_gate
import pystratum
import pystratum.engine._assemble as assemble
import pystratum.kernels._assemble as kernels
from pystratum.strata._encode import encode_strata
from pystratum.policies import Downsample, FixedSize, Targets

from _split_safe import reference_reorder
from _r_helpers import r_session  # noqa: F401 (fixture)

# ---------------------------------------------------------------------------
# Strata and sampling policies.

LABEL_KINDS = ("int", "negint", "str", "float", "object", "bool")


def _labels(kind, n_strata):
    if kind == "bool":  # two strata at most; more fall back to ints
        return np.array([True, False])[:n_strata] if n_strata <= 2 else _labels("int", n_strata)
    if kind == "int":
        return np.arange(n_strata, dtype=np.int64) * 3 + 1
    if kind == "negint":
        return -np.arange(n_strata, dtype=np.int64) * 7 - 2**40
    if kind == "str":
        return np.array([f"s{k:03d}" if k % 2 else f"Z{k}" for k in range(n_strata)])
    if kind == "float":
        return np.arange(n_strata) * 0.25 - 1.5
    return np.array([(f"x{k}" if k % 2 else k) for k in range(n_strata)], dtype=object)


def _python_label(value):
    return value.item() if isinstance(value, np.generic) else value


@st.composite
def sampling_cases(draw, max_strata=8, max_size=40, kinds=LABEL_KINDS):
    """(strata, policy): 1-D labels of one kind, strata of 1..max_size rows (ones included)
    in any row order, and a Targets or Downsample policy with odd parameters."""
    n_strata = draw(st.integers(1, max_strata))
    sizes = draw(st.lists(st.one_of(st.just(1), st.integers(1, max_size)),
                          min_size=n_strata, max_size=n_strata))
    kind = draw(st.sampled_from(kinds))
    labels = _labels(kind, n_strata)
    codes = np.repeat(np.arange(n_strata), sizes)
    order_seed = draw(st.integers(0, 2**32 - 1))
    if draw(st.booleans()):
        codes = codes[np.random.default_rng(order_seed).permutation(codes.shape[0])]
    strata = labels[codes]
    keys = [_python_label(v) for v in labels]

    def targets():
        if draw(st.booleans()):
            positive = n_strata
            shares = "balanced"
        else:
            weights = draw(st.lists(st.sampled_from([0, 0, 1, 2, 3, 7, 100, 999]),
                                    min_size=n_strata, max_size=n_strata))
            assume(sum(weights) > 0)
            total = sum(weights)
            shares = {key: w / total for key, w in zip(keys, weights)}
            positive = sum(w > 0 for w in weights)
        batch_size = draw(st.integers(positive, positive + 25))
        epoch = draw(st.one_of(st.sampled_from(["largest", "smallest"]), st.integers(1, 6)))
        return Targets(shares, batch_size, epoch)

    if draw(st.booleans()):
        return strata, targets()
    named = draw(st.lists(st.integers(0, n_strata - 1), min_size=1, max_size=n_strata,
                          unique=True))
    fractions = st.one_of(st.sampled_from([1.0, 0.5, 1e-300, 0.3333, 0.05]),
                          st.floats(1e-9, 1.0))
    keep = {keys[k]: draw(fractions) for k in named}
    base = draw(st.sampled_from(["int", "fixed", "targets"]))
    if base == "int":
        base = draw(st.integers(1, 3))
    elif base == "fixed":
        base = FixedSize(draw(st.integers(1, 30)))
    else:
        base = targets()
    return strata, Downsample(keep, base)


def _plan(strata, policy, **kwargs):
    """plan_batches, or the error it raised (the same error is expected on every path).

    One batch is allowed, as the samplers here allow it (the guard has its own tests).
    """
    kwargs.setdefault("allow_single_batch", True)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", pystratum.StratumTooSmallWarning)
        try:
            return pystratum.plan_batches(strata, policy, **kwargs)
        except ValueError as error:
            return error


def _allocation(strata, policy, epoch):
    encoded = encode_strata(strata)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", pystratum.StratumTooSmallWarning)
        return encoded, policy.allocate(encoded, epoch)


def _turn(codes, n_strata):
    first = np.full(n_strata, codes.shape[0])
    np.minimum.at(first, codes, np.arange(codes.shape[0]))
    return np.argsort(first, kind="stable")


def _draw_plan(encoded, allocation):
    """[(stratum, size, take)] of one epoch, written from the policies' docstrings."""
    cuts = np.asarray(allocation.cuts, dtype=np.int64)
    sizes = encoded.sizes
    pool = sizes if allocation.pool_sizes is None else np.asarray(allocation.pool_sizes)
    out = []
    for s in _turn(encoded.codes, encoded.n_strata).tolist():
        used, kept = int(cuts[s, -1]), int(pool[s])
        if used == 0:
            continue
        out.append((s, int(sizes[s]), min(kept, used)))
        at = kept
        while at < used:
            out.append((s, kept, min(kept, used - at)))
            at += kept
    return out


def _reference_batches(encoded, allocation, draws, split_safe=True):
    """Batches from one epoch's draws (``draws[i]`` for ``_draw_plan(...)[i]``): each
    stratum's sequence is its pool (its rows, increasing, picked by its first draw), then
    the pool reordered by each further draw, cut at its last rank; batch b lists the strata
    in order of first appearance, ranks cuts[s, b]..cuts[s, b + 1] - 1 of each; then (the
    default batch_order of these policies) the split-safe order of tests/_split_safe.py."""
    cuts = np.asarray(allocation.cuts, dtype=np.int64)
    sequences = {}
    for (s, _, _), drawn in zip(_draw_plan(encoded, allocation), draws):
        if s not in sequences:
            rows = np.flatnonzero(encoded.codes == s)
            sequences[s] = [rows[np.asarray(drawn, dtype=np.int64)]]
        else:
            sequences[s].append(sequences[s][0][np.asarray(drawn, dtype=np.int64)])
    turn = _turn(encoded.codes, encoded.n_strata).tolist()
    flat = {s: np.concatenate(parts)[:cuts[s, -1]] for s, parts in sequences.items()}
    batches = []
    for b in range(cuts.shape[1] - 1):
        batches.append(np.concatenate(
            [flat[s][cuts[s, b]:cuts[s, b + 1]] for s in turn if s in flat] or
            [np.empty(0, np.int64)]).astype(np.int64))
    if split_safe:
        turn_of_code = np.empty(len(turn), dtype=np.int64)
        turn_of_code[turn] = np.arange(len(turn))
        batches = [reference_reorder(b, encoded.codes, turn_of_code) for b in batches]
    return batches


def _numpy_draws(generator, plan):
    return [generator.permutation(size) if take == size
            else generator.choice(size, take, replace=False) for _, size, take in plan]


def _reference_weights(encoded, allocation, batches):
    if allocation.row_weights is None:
        return None
    weights = np.asarray(allocation.row_weights, dtype=np.float64)
    return np.concatenate([weights[encoded.codes[b]] for b in batches])


def _assert_plan_is(plan, batches, weights=None, where=""):
    assert plan.num_batches == len(batches), where
    for b, (got, expected) in enumerate(zip(plan.batches, batches)):
        np.testing.assert_array_equal(got, expected, err_msg=f"{where} batch {b}")
    if weights is not None:
        np.testing.assert_array_equal(plan.weights, weights, err_msg=where)


@contextlib.contextmanager
def numba_path(compiled):
    """Inside: every size goes through the compiled kernels (``compiled=True``), or numpy's
    path as with PYSTRATUM_NUMBA=0."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setitem(kernel_gate._LOADED, "assemble", kernels if compiled else False)
        patch.setattr(kernel_gate, "MIN_ROWS", 1 if compiled else 1 << 17)
        yield


seed_sequences = st.builds(
    lambda entropy, key, pool: np.random.SeedSequence(entropy, spawn_key=key, pool_size=pool),
    st.one_of(st.integers(0, 2**300), st.lists(st.integers(0, 2**70), max_size=9)),
    st.lists(st.integers(0, 2**66), max_size=3).map(tuple),
    st.integers(4, 9))


@settings(max_examples=120, suppress_health_check=[HealthCheck.filter_too_much,
                                                   HealthCheck.too_slow])
@given(case=sampling_cases(), seed=st.one_of(st.integers(0, 2**128), seed_sequences),
       epoch=st.one_of(st.integers(0, 5), st.just(2**31 - 1)), data=st.data())
def test_numpy_sampling_epochs_are_the_documented_draws_compiled_or_not(case,
                                                                       seed, epoch, data):
    """Epoch k = the documented draws from default_rng(SeedSequence(entropy, spawn_key=(*key,
    k))), on the compiled and the numpy path alike."""
    strata, policy = case
    where = f"{policy!r} seed={seed!r} epoch={epoch}"
    with numba_path(True):
        compiled = _plan(strata, policy, seed=seed, epoch=epoch)
    with numba_path(False):
        plain = _plan(strata, policy, seed=seed, epoch=epoch)
    if isinstance(plain, ValueError):
        assert isinstance(compiled, ValueError) and str(compiled) == str(plain)
        event("refused")
        return
    encoded, allocation = _allocation(strata, policy, epoch)
    parent = seed if isinstance(seed, np.random.SeedSequence) else np.random.SeedSequence(seed)
    # spawn() names child k by the key (*key, k): an independent spelling of the stream.
    fresh = np.random.SeedSequence(parent.entropy, spawn_key=parent.spawn_key,
                                   pool_size=parent.pool_size)
    child = fresh.spawn(epoch + 1)[epoch] if epoch < 10 else np.random.SeedSequence(
        parent.entropy, spawn_key=(*parent.spawn_key, epoch), pool_size=parent.pool_size)
    draws = _numpy_draws(np.random.default_rng(child), _draw_plan(encoded, allocation))
    batches = _reference_batches(encoded, allocation, draws)
    weights = _reference_weights(encoded, allocation, batches)
    _assert_plan_is(compiled, batches, weights, "compiled " + where)
    _assert_plan_is(plain, batches, weights, "numpy " + where)


@settings(max_examples=40)
@given(case=sampling_cases())
def test_unshuffled_sampling_epochs_take_each_stratums_first_rows(case):
    """shuffle=False: every draw is the identity (a stratum's first rows, in row order)."""
    strata, policy = case
    with numba_path(True):
        plan = _plan(strata, policy, shuffle=False)
    if isinstance(plan, ValueError):
        event("refused")
        return
    encoded, allocation = _allocation(strata, policy, 0)
    draws = [np.arange(take) for _, _, take in _draw_plan(encoded, allocation)]
    batches = _reference_batches(encoded, allocation, draws)
    _assert_plan_is(plan, batches, _reference_weights(encoded, allocation, batches))


def _torch_reference(strata, policy, seed, epoch):
    """Epoch ``epoch`` of rng='torch': the (epoch+1)-th group of draws of one generator,
    every draw ``randperm(size)`` cut to its take, each skipped epoch with its own sizes."""
    import torch

    generator = torch.Generator()
    generator.manual_seed(seed)
    for k in range(epoch + 1):
        encoded, allocation = _allocation(strata, policy, k)
        draws = [torch.randperm(size, generator=generator).numpy()[:take]
                 for _, size, take in _draw_plan(encoded, allocation)]
    return _reference_batches(encoded, allocation, draws)


@settings(max_examples=40, suppress_health_check=[HealthCheck.filter_too_much])
@given(case=sampling_cases(max_strata=6, max_size=30), seed=st.integers(0, 2**53),
       epoch=st.integers(0, 4))
def test_torch_sampling_epochs_are_cut_randperms_of_one_generator(case, seed, epoch):
    strata, policy = case
    with numba_path(True):
        plan = _plan(strata, policy, seed=seed, rng="torch", epoch=epoch)
    if isinstance(plan, ValueError):
        event("refused")
        return
    _assert_plan_is(plan, _torch_reference(strata, policy, seed, epoch),
                    where=f"{policy!r} seed={seed} epoch={epoch}")


def _sampler(strata, policy, **kwargs):
    from pystratum.torch import StratifiedBatchSampler

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", pystratum.StratumTooSmallWarning)
        return StratifiedBatchSampler(strata, policy, allow_single_batch=True, **kwargs)


@settings(max_examples=30, suppress_health_check=[HealthCheck.filter_too_much,
                                                  HealthCheck.too_slow])
@given(case=sampling_cases(max_strata=5, max_size=25), rng=st.sampled_from(["numpy", "R", "torch"]),
       seed=st.integers(0, 2**31 - 1), replicas=st.integers(1, 3), drop_last=st.booleans(),
       data=st.data())
def test_sampler_serves_the_plans_through_epoch_jumps_and_mid_epoch_resumes(
        case, rng, seed, replicas, drop_last, data):
    """Every rank, epochs in any order (set_epoch jumps back and forth), each epoch cut at
    any batch, saved, resumed in a new sampler built with another seed: the rank's share of
    plan_batches(epoch), in order."""
    from pystratum.serving._sharding import rank_batch_indices

    strata, policy = case
    try:
        samplers = [_sampler(strata, policy, seed=seed, rng=rng, num_replicas=replicas,
                             rank=rank, drop_last=drop_last) for rank in range(replicas)]
    except ValueError:
        event("refused")
        return
    epochs = data.draw(st.lists(st.integers(0, 5), min_size=1, max_size=4), label="epochs")
    plans = {}
    for epoch in epochs:
        if epoch not in plans:
            plans[epoch] = _plan(strata, policy, seed=seed, rng=rng, epoch=epoch).batches
        for rank, sampler in enumerate(samplers):
            chosen = rank_batch_indices(sampler.num_batches, replicas, rank, drop_last)
            sampler.set_epoch(epoch)
            iterator = iter(sampler)
            cut = data.draw(st.integers(0, len(sampler)), label="cut")
            served = [next(iterator) for _ in range(cut)]
            state = sampler.state_dict()
            resumed = _sampler(strata, policy, seed=(seed + 1) % 2**31, rng=rng,
                               num_replicas=replicas, rank=rank, drop_last=drop_last)
            resumed.load_state_dict(copy.deepcopy(state))
            served += list(resumed)
            assert len(served) == len(chosen) == len(sampler)
            for got, index in zip(served, chosen.tolist()):
                assert got == plans[epoch][index].tolist(), (epoch, rank, index, cut)


@pytest.mark.parametrize("rng", ["numpy", "R"])
@pytest.mark.parametrize("cut", [1, 3])  # mid-epoch; every batch yielded, not yet ended
@pytest.mark.parametrize("then", [0, 4])  # the same epoch again, another one
def test_state_after_set_epoch_describes_what_the_sampler_serves_next(rng, cut, then):
    """set_epoch(k) makes the next iter() serve epoch k from its first batch: the state
    saved then, the epoch reported and a copy must say so too, not the pass left behind."""
    strata = np.repeat([0, 1, 2], [9, 6, 30])
    sampler = _sampler(strata, Targets("balanced", 6, epoch=3), seed=3, rng=rng)
    iterator = iter(sampler)
    for _ in range(cut):
        next(iterator)
    sampler.set_epoch(then)
    state, twin = sampler.state_dict(), pickle.loads(pickle.dumps(sampler))
    assert sampler.epoch == twin.epoch == state["epoch"] == then
    assert state["batches_yielded"] == 0
    resumed = _sampler(strata, Targets("balanced", 6, epoch=3), seed=8, rng=rng)
    resumed.load_state_dict(state)
    expected = [b.tolist() for b in _plan(strata, Targets("balanced", 6, epoch=3), seed=3,
                                          rng=rng, epoch=then).batches]
    assert list(sampler) == list(twin) == list(resumed) == expected


@settings(max_examples=60, suppress_health_check=[HealthCheck.filter_too_much,
                                                  HealthCheck.too_slow])
@given(case=sampling_cases(max_strata=12, max_size=30, kinds=("int", "str", "float", "bool")),
       seed=st.integers(-2**31 + 1, 2**31 - 1), epoch=st.integers(0, 4))
def test_r_stream_sampling_epochs_equal_the_r_packages(r_session, case, seed, epoch):
    """rng='R' against pystratum::stratified_batches in embedded R: the same batches (R's
    sample.int draws, skipped epochs replayed with their own sizes), the same weights, or
    the same refusal."""
    import pystratum.r as pr

    strata, policy = case
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", pystratum.StratumTooSmallWarning)
        try:
            r_batches, r_weights = pr.stratified_batches(strata, policy, seed=seed, rng="R",
                                                         epoch=epoch, return_weights=True,
                                                         allow_single_batch=True)
        except ValueError:
            r_batches = None
    plan = _plan(strata, policy, seed=seed, rng="R", epoch=epoch)
    where = f"{policy!r} seed={seed} epoch={epoch}"
    if r_batches is None or isinstance(plan, ValueError):
        assert r_batches is None and isinstance(plan, ValueError), (where, plan)
        event("refused")
        return
    _assert_plan_is(plan, r_batches, np.concatenate(r_weights) if r_weights else None, where)


# ---------------------------------------------------------------------------
# Negatives: numpy's spawned streams, rebuilt cheaply, and the membership check.

entropies = st.one_of(
    st.integers(0, 2**300),
    st.lists(st.integers(0, 2**80), max_size=10),
    st.lists(st.integers(0, 2**32 - 1), max_size=10).map(lambda v: np.array(v, dtype=np.uint32)),
    st.lists(st.integers(0, 2**64 - 1), max_size=6).map(lambda v: np.array(v, dtype=np.uint64)))
keys = st.lists(st.integers(0, 2**100), max_size=4).map(tuple)


@settings(max_examples=150)
@given(entropy=entropies, key=keys, prefix=keys, pool_size=st.integers(4, 12),
       indices=st.lists(st.one_of(st.integers(0, 5000), st.integers(2**32 - 3, 2**32 + 3),
                                  st.integers(0, 2**40)), min_size=1, max_size=6))
def test_spawned_generators_are_numpys_spawned_streams_for_any_seed(entropy, key, prefix,
                                                                     pool_size, indices):
    """Huge and multi-word entropy, uint32/uint64 entropy arrays, long spawn keys and
    prefixes with words past 2**32, pool sizes above 4, indices across blocks and at the
    single-word limit: the state and the draws of numpy's own construction."""
    from pystratum.streams._spawned import spawned_generators

    parent = np.random.SeedSequence(entropy, spawn_key=key, pool_size=pool_size)
    generator_of = spawned_generators(parent, prefix)
    for index in indices:
        ours = generator_of(index)
        numpys = np.random.default_rng(np.random.SeedSequence(
            entropy, spawn_key=(*key, *prefix, index), pool_size=pool_size))
        assert ours.bit_generator.state == numpys.bit_generator.state, index
        assert ours.integers(0, 2**32, 5, dtype=np.uint32).tolist() == \
            numpys.integers(0, 2**32, 5).tolist()


def _pairs(data, num_users, num_items, count):
    users = data.draw(st.lists(st.integers(0, num_users - 1), min_size=count, max_size=count))
    items = data.draw(st.lists(st.integers(0, num_items - 1), min_size=count, max_size=count))
    return np.array(users, dtype=np.int64), np.array(items, dtype=np.int64)


@settings(max_examples=80)
@given(num_items=st.sampled_from([1, 2, 3, 64, 2**31 - 1, 2**32 - 1, 2**32, 2**32 + 1, 2**40]),
       num_users=st.integers(1, 300), k=st.integers(1, 5), data=st.data())
def test_pair_set_answers_grouped_and_plain_queries_as_a_python_set(num_items, num_users, k,
                                                                    data):
    """Users indexing their word directly or hashed, users past every observed one, items at
    the ends of their range given as int64 or uint32: both paths, exact answers."""
    from pystratum.negatives._pairset import PairSet

    users, items = _pairs(data, num_users, num_items, data.draw(st.integers(0, 400)))
    observed = set(zip(users.tolist(), items.tolist()))
    pairs = PairSet(users * num_items + items, num_items=num_items)
    n = data.draw(st.integers(1, 60))
    query_users = np.array(data.draw(st.lists(st.integers(0, 2 * num_users + 5), min_size=n,
                                              max_size=n)), dtype=np.int64)
    query_items = np.array(data.draw(st.lists(
        st.one_of(st.integers(0, num_items - 1), st.just(num_items - 1), st.just(0)),
        min_size=n * k, max_size=n * k)), dtype=np.int64)
    # Half the queries are observed pairs.
    for j in range(0, n, 2):
        if users.size:
            pick = data.draw(st.integers(0, users.size - 1))
            query_users[j] = users[pick]
            query_items[j * k:(j + 1) * k][data.draw(st.integers(0, k - 1))] = items[pick]
    repeated = np.repeat(query_users, k)
    expected = np.array([(int(u), int(i)) in observed
                         for u, i in zip(repeated, query_items)], dtype=bool)
    forms = [query_items]
    if num_items <= 2**32:
        forms.append(query_items.astype(np.uint32))
    for accelerated in (True, False):
        got = pairs.contains(repeated * num_items + query_items, accelerated=accelerated)
        np.testing.assert_array_equal(got, expected)
        for form in forms:
            out = np.full(n * k, -7, dtype=np.int64)
            hits = pairs.members_grouped(query_users, form, accelerated=accelerated, out=out)
            np.testing.assert_array_equal(hits, np.flatnonzero(expected))
            np.testing.assert_array_equal(out, query_items)


def _reconstructed_negatives(sampler, parent, epoch, index, batch, observed):
    """The batch's generated rows as its documented stream draws them, with numpy's own
    default_rng(SeedSequence(entropy, spawn_key=(*key, epoch, index), pool_size))."""
    generator = np.random.default_rng(np.random.SeedSequence(
        parent.entropy, spawn_key=(*parent.spawn_key, epoch, index), pool_size=parent.pool_size))
    k = sampler.negatives
    n = int((batch.label == 1).sum())
    if sampler.pair_with == "random":
        users = generator.integers(0, sampler.num_users, n * k)
    else:
        users = np.repeat(batch.user[:n], k)
    items = generator.integers(0, sampler.num_items, n * k)
    if sampler.reject_observed:
        pending = np.flatnonzero([(u, i) in observed for u, i in zip(users.tolist(),
                                                                       items.tolist())])
        while pending.size:
            if sampler.pair_with == "random":
                users[pending] = generator.integers(0, sampler.num_users, pending.size)
            items[pending] = generator.integers(0, sampler.num_items, pending.size)
            again = [(u, i) in observed for u, i in zip(users[pending].tolist(),
                                                        items[pending].tolist())]
            pending = pending[np.array(again, dtype=bool)]
    return users, items


@settings(max_examples=60, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.one_of(st.integers(0, 2**128), seed_sequences), rng=st.sampled_from(
           ["numpy", "torch"]),
       num_items=st.sampled_from([5, 1000, 2**32 - 1, 2**32, 2**32 + 1]),
       pair_with=st.sampled_from(["user", "random"]), reject=st.booleans(),
       epoch=st.one_of(st.integers(0, 3), st.just(2**31 - 1)), negatives=st.integers(1, 4),
       data=st.data())
def test_negatives_are_numpys_spawned_draws_for_odd_seeds(seed, rng, num_items, pair_with,
                                                           reject, epoch, negatives, data):
    from pystratum.negatives import NegativePairSampler

    if rng == "torch":
        if isinstance(seed, np.random.SeedSequence):
            seed = int(seed.generate_state(1)[0])
        seed %= 2**53
        epoch %= 4  # its permutation is the (epoch+1)-th: no jump to 2**31 - 1
    num_users = data.draw(st.integers(1, 40), label="num_users")
    users, items = _pairs(data, num_users, num_items, data.draw(st.integers(1, 60)))
    keep = np.unique(users * num_items + items, return_index=True)[1]
    users, items = users[np.sort(keep)], items[np.sort(keep)]
    observed = set(zip(users.tolist(), items.tolist()))
    try:
        sampler = NegativePairSampler(users, items, num_items=num_items, num_users=num_users,
                                      negatives=negatives, batch_size=data.draw(st.integers(1, 9)),
                                      seed=seed, rng=rng, pair_with=pair_with,
                                      reject_observed=reject)
    except ValueError as error:  # a user who observed (nearly) every item
        assert "max_rounds" in str(error) or "observed" in str(error), str(error)
        return
    parent = seed if isinstance(seed, np.random.SeedSequence) else np.random.SeedSequence(seed)
    batches = sampler.epoch_batches(epoch)
    for index in sorted(set(data.draw(st.lists(st.integers(0, len(batches) - 1), min_size=1,
                                               max_size=3)))):
        batch = batches[index]
        assert sampler.batch(epoch, index).item.tolist() == batch.item.tolist()
        n = int((batch.label == 1).sum())
        want_users, want_items = _reconstructed_negatives(sampler, parent, epoch, index, batch,
                                                          observed)
        assert batch.user[n:].tolist() == want_users.tolist(), index
        assert batch.item[n:].tolist() == want_items.tolist(), index


@pytest.mark.parametrize("rng", ["numpy", "R", "torch"])
@pytest.mark.parametrize("duplicate", [lambda s: pickle.loads(pickle.dumps(s)),
                                       copy.deepcopy, copy.copy], ids=["pickle", "deepcopy",
                                                                       "copy"])
def test_copies_taken_mid_epoch_with_the_grouping_cached_serve_the_plans(rng, duplicate):
    """A sampler whose strata cached their grouping (grouped_rows, offsets) copied in the
    middle of epoch 1: the copy ends that epoch and serves the next ones as plan_batches,
    and so does the original."""
    strata = np.random.default_rng(5).choice(["a", "b", "c", "d"], p=[0.7, 0.2, 0.09, 0.01],
                                             size=3000)
    policy = Downsample({"a": 0.05}, Targets("balanced", 16))
    sampler = _sampler(strata, policy, seed=12, rng=rng)
    list(sampler)
    iterator = iter(sampler)
    head = [next(iterator) for _ in range(3)]
    assert "grouped_rows" in vars(sampler._strata)
    twin = duplicate(sampler)
    rest = list(twin)
    expected = [[b.tolist() for b in _plan(strata, policy, seed=12, rng=rng, epoch=e).batches]
                for e in (1, 2, 3)]
    assert head + rest == expected[0]
    assert list(iterator) == rest
    assert list(twin) == list(sampler) == expected[1]
    assert list(twin) == expected[2]


@settings(max_examples=50, suppress_health_check=[HealthCheck.filter_too_much])
@given(case=sampling_cases(max_strata=6, max_size=40), seed=st.integers(0, 2**32),
       epoch=st.integers(0, 3), chunk=st.sampled_from([1, 2, 3, 5, 16]))
def test_sampling_epochs_scattered_in_small_chunks_are_the_reference(case, seed, epoch, chunk):
    """The scatter of uneven strata goes a group of batches at a time (about _CHUNK_ROWS
    ranks each): tiny chunks split groups at every batch, and the batches stay the same."""
    strata, policy = case
    with numba_path(False), pytest.MonkeyPatch.context() as patch:
        patch.setattr(assemble, "_CHUNK_ROWS", chunk)
        # Not placed by the small epochs' one scatter: group by group.
        patch.setattr(assemble, "_SMALL_EPOCH_ROWS", -1)
        plan = _plan(strata, policy, seed=seed, epoch=epoch)
    if isinstance(plan, ValueError):
        event("refused")
        return
    encoded, allocation = _allocation(strata, policy, epoch)
    child = np.random.SeedSequence(seed, spawn_key=(epoch,))
    draws = _numpy_draws(np.random.default_rng(child), _draw_plan(encoded, allocation))
    _assert_plan_is(plan, _reference_batches(encoded, allocation, draws))


ODD_SEED_SEQUENCES = [
    lambda: np.random.SeedSequence(5, pool_size=8),  # an int's entropy, another pool size
    lambda: np.random.SeedSequence([1, 2]),  # list entropy
    lambda: np.random.SeedSequence(np.array([1, 2**40], dtype=np.uint64)),
    lambda: np.random.SeedSequence(np.array([7, 9], dtype=np.uint32), pool_size=5),
    lambda: np.random.SeedSequence([]),
    lambda: np.random.SeedSequence([3], spawn_key=(2**40,), pool_size=6),
]


@pytest.mark.parametrize("make_seed", ODD_SEED_SEQUENCES)
def test_the_seed_reported_reproduces_the_batches_for_any_seed_sequence(make_seed):
    """plan.seed and sampler.seed are 'what to pass as seed to get the same batches again',
    and a state_dict resumes the same epoch: also for a SeedSequence whose entropy is a
    list or an array, or whose pool size is not numpy's default."""
    from pystratum.negatives import NegativePairSampler

    strata = np.repeat([0, 1, 2], [12, 30, 7])
    policy = Targets("balanced", 6)
    plan = _plan(strata, policy, seed=make_seed(), epoch=3)
    again = _plan(strata, policy, seed=plan.seed, epoch=3)
    np.testing.assert_array_equal(again.order, plan.order)

    sampler = _sampler(strata, policy, seed=make_seed())
    iterator = iter(sampler)
    next(iterator)
    resumed = _sampler(strata, policy, seed=1)
    resumed.load_state_dict(sampler.state_dict())
    assert list(resumed) == list(iterator)
    assert [b.tolist() for b in _plan(strata, policy, seed=sampler.seed, epoch=1).batches] == \
        list(sampler)

    users, items = np.arange(40) % 7, np.arange(40) * 3 % 50
    negatives = NegativePairSampler(users, items, num_items=50, negatives=2, batch_size=8,
                                    seed=make_seed())
    served = iter(negatives)
    next(served)
    other = NegativePairSampler(users, items, num_items=50, negatives=2, batch_size=8, seed=1)
    other.load_state_dict(negatives.state_dict())
    assert [b.item.tolist() for b in other] == [b.item.tolist() for b in served]


@settings(max_examples=60, suppress_health_check=[HealthCheck.filter_too_much])
@given(case=sampling_cases(max_strata=6, max_size=30),
       rng=st.sampled_from(["numpy", "R", "torch", "index"]), seed=st.integers(0, 2**31 - 1),
       epoch=st.integers(0, 3))
def test_the_count_table_is_what_every_batch_holds(case, rng, seed, epoch):
    """BatchPlan.counts (now built from the cuts, the lazy plan's too) against the strata of
    the rows each batch really holds, on every stream."""
    strata, policy = case
    with numba_path(True):
        plan = _plan(strata, policy, seed=seed, rng=rng, epoch=epoch)
    if isinstance(plan, ValueError):
        event("refused")
        return
    codes = {label: k for k, label in enumerate(plan.strata)}
    row_codes = np.array([codes[_python_label(v)] for v in strata])
    held = np.array([np.bincount(row_codes[b], minlength=len(plan.strata))
                     for b in plan.batches]).reshape(plan.num_batches, len(plan.strata))
    np.testing.assert_array_equal(plan.counts, held)
    np.testing.assert_array_equal(np.diff(plan.bounds), held.sum(axis=1))


@pytest.mark.parametrize("make_policy", [lambda: Downsample({1: 0.5}, 2),
                                         lambda: Targets({1: 0.25, 0: 0.75}, 4)],
                         ids=["downsample", "targets"])
def test_a_policy_refuses_keys_the_strata_do_not_name_whatever_it_saw_before(make_policy):
    """Labels equal under == can read differently (True == 1, but 'TRUE' is not '1'): a
    policy object used on 0/1 strata first must still refuse the key 1 for boolean strata,
    as a fresh one does (its per-strata cache must not decide)."""
    ints = np.repeat([0, 1], [20, 20])
    used = make_policy()
    pystratum.plan_batches(ints, used, seed=1)
    for policy in (make_policy(), used):
        with pytest.raises(ValueError, match="not in the data"):
            pystratum.plan_batches(ints.astype(bool), policy, seed=1)
