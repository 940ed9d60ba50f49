"""ClassesPerBatch's compiled paths (numba, the ``fast`` extra) give numpy's batches exactly.

The keyed pieces they are made of (round keys, whole small-domain
permutations, per-run bijections, first rows) are compared value by value;
the plans batch by batch, ``classes="uniform"`` (the pass sequences with
their reordered heads, in one compiled pass) and ``"proportional"`` with
``rng="index"`` (pass 0 and refills ranked per stratum / per draw).
"""

import warnings

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import pystratum
import pystratum.kernels as kernel_gate
import pystratum.kernels._assemble as assemble_kernels
import pystratum.kernels._index as index_kernels  # the dev extra installs numba: tested
from pystratum.policies import ClassesPerBatch
from pystratum.strata._encode import first_rows_of_codes
from pystratum.streams._index import (ROUNDS, SMALL_DOMAIN, permute_ranks, permute_run_ranks,
                                      round_keys, small_domain_permutation, small_domain_tables)

SHARED_FIXTURE = [HealthCheck.function_scoped_fixture]


@pytest.fixture
def paths(monkeypatch):
    """``paths(True)``: the compiled kernels however small the call; ``paths(False)``: numpy's."""
    monkeypatch.setattr(kernel_gate, "MIN_ROWS", 1)
    monkeypatch.setattr(kernel_gate, "MIN_CALL_ROWS", 1)

    def use(compiled):
        monkeypatch.setitem(kernel_gate._LOADED, "index", index_kernels if compiled else False)
        monkeypatch.setitem(kernel_gate._LOADED, "assemble",
                            assemble_kernels if compiled else False)
    return use


def both(paths, make):
    """``make()`` on the compiled path, then on numpy's."""
    results = []
    for compiled in (True, False):
        paths(compiled)
        results.append(make())
    return results


@settings(max_examples=40, suppress_health_check=SHARED_FIXTURE)
@given(seed=st.integers(0, 2**52 - 1), epoch=st.integers(0, 2**40),
       streams=st.lists(st.integers(0, 2**52 - 1), min_size=0, max_size=30),
       per_stream=st.booleans())
def test_round_keys_are_the_same_on_both_paths(paths, seed, epoch, streams, per_stream):
    epochs = (np.arange(len(streams)) * 7919 + epoch) % 2**52 if per_stream else epoch
    compiled, plain = both(paths, lambda: round_keys(seed, epochs, streams))
    assert compiled.shape == plain.shape == (ROUNDS, len(streams))
    np.testing.assert_array_equal(compiled, plain)


@settings(max_examples=40, suppress_health_check=SHARED_FIXTURE)
@given(sizes=st.lists(st.integers(0, SMALL_DOMAIN), max_size=40), seed=st.integers(0, 2**40))
def test_small_domain_tables_are_each_domains_permutation(paths, sizes, seed):
    keys = round_keys(seed, 3, np.arange(len(sizes)))
    compiled, plain = both(paths, lambda: small_domain_tables(sizes, keys))
    for (table, offsets) in (compiled, plain):
        for i, n in enumerate(sizes):
            np.testing.assert_array_equal(table[offsets[i]:offsets[i] + n],
                                          small_domain_permutation(n, keys[:, i]))


@settings(max_examples=40, suppress_health_check=SHARED_FIXTURE)
@given(sizes=st.lists(st.one_of(st.integers(1, 2 * SMALL_DOMAIN), st.integers(1, 2**52)),
                      min_size=1, max_size=12),
       data=st.data(), seed=st.integers(0, 2**40))
def test_run_ranks_are_permute_ranks_with_a_domain_per_value(paths, sizes, data, seed):
    """Domains small and large, values of one domain anywhere in the list, some unused."""
    sizes = np.asarray(sizes, dtype=np.int64)
    run = np.asarray(data.draw(st.lists(st.integers(0, len(sizes) - 1), max_size=200)),
                     dtype=np.int64)
    rng = np.random.default_rng(seed)
    ranks = (rng.random(run.shape[0]) * sizes[run]).astype(np.int64)
    keys = round_keys(seed, 1, np.arange(sizes.shape[0]))
    expected = permute_ranks(ranks, sizes[run], keys[:, run]) if run.shape[0] else ranks
    for got in both(paths, lambda: permute_run_ranks(ranks, run, sizes, keys)):
        np.testing.assert_array_equal(got, expected)


@pytest.mark.parametrize("dtype", [np.int8, np.uint8, np.int16, np.int32, np.int64, np.uint32])
def test_first_rows_are_the_same_on_both_paths(paths, dtype):
    codes = np.random.default_rng(1).integers(0, 100, 20_000).astype(dtype)
    compiled, plain = both(paths, lambda: first_rows_of_codes(codes, 100))
    np.testing.assert_array_equal(compiled, plain)
    np.testing.assert_array_equal(plain, [np.flatnonzero(codes == c)[0] for c in range(100)])


def _plan(labels, policy, seed, rng, epoch, shuffle=True):
    """The plan, or its error's type and message (both paths must fail alike)."""
    if not shuffle:
        seed, epoch = None, 0  # row order: no seed, no epoch
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return pystratum.plan_batches(labels, policy, seed=seed, rng=rng, epoch=epoch,
                                          shuffle=shuffle, allow_single_batch=True)
    except ValueError as error:
        return type(error), str(error)


def _assert_same(compiled, plain):
    if isinstance(plain, tuple):
        assert compiled == plain
        return
    np.testing.assert_array_equal(compiled.order, plain.order)
    np.testing.assert_array_equal(compiled.bounds, plain.bounds)
    np.testing.assert_array_equal(compiled.batch_strata, plain.batch_strata)


@settings(max_examples=60, deadline=None, suppress_health_check=SHARED_FIXTURE)
@given(sizes=st.lists(st.integers(1, 150), min_size=1, max_size=40),
       p=st.integers(1, 6), k=st.integers(1, 9), small=st.sampled_from(["repeat", "drop"]),
       classes=st.sampled_from(["uniform", "proportional"]),
       rng=st.sampled_from(["index", "numpy", "R"]), epoch=st.integers(0, 5000),
       seed=st.integers(0, 2**31 - 1), shuffle=st.booleans())
def test_classes_per_batch_plans_are_the_same_on_both_paths(paths, sizes, p, k, small, classes,
                                                            rng, epoch, seed, shuffle):
    """Strata of 1-150 rows around K (small ones ranked whole, passes that begin inside a
    slot, heads whose previous tail reaches into the previous head), far epochs."""
    sizes = np.asarray(sizes)
    if np.count_nonzero(sizes >= (1 if small == "repeat" else k)) < p:
        return  # no plan: too few strata can fill a slot
    labels = np.random.default_rng(seed).permutation(np.repeat(np.arange(sizes.shape[0]), sizes))
    policy = ClassesPerBatch(p, k, classes=classes, small=small)
    epoch = epoch if rng != "R" else epoch % 4  # R reaches an epoch by drawing the earlier ones
    compiled, plain = both(paths, lambda: _plan(labels, policy, seed, rng, epoch, shuffle))
    _assert_same(compiled, plain)


@pytest.mark.parametrize("k", [2, 3, 4, 7])
def test_uniform_heads_chained_across_passes_are_the_same_on_both_paths(paths, k):
    """Strata of K .. 2K - 1 rows: a pass's previous tail reaches into the previous pass's
    reordered head; every epoch start (inside a pass, after its head, at a pass edge)."""
    sizes = np.arange(k, 2 * k).repeat(3)
    labels = np.random.default_rng(k).permutation(np.repeat(np.arange(sizes.shape[0]), sizes))
    policy = ClassesPerBatch(3, k, classes="uniform")
    for epoch in range(40):
        for rng in ("index", "numpy"):
            compiled, plain = both(paths, lambda: _plan(labels, policy, 7, rng, epoch))
            _assert_same(compiled, plain)


def test_large_plans_take_the_compiled_paths(monkeypatch):
    """From MIN_ROWS rows a uniform epoch is one compiled pass, and so is a proportional
    index plan's pass 0 (its small strata ranked once each): numpy's batches."""
    calls = []
    monkeypatch.delenv("PYSTRATUM_NUMBA", raising=False)
    monkeypatch.setitem(kernel_gate._LOADED, "index", index_kernels)
    for name in ("uniform_batches", "permuted_groups"):
        kernel = getattr(index_kernels, name)
        monkeypatch.setattr(index_kernels, name,
                            lambda *a, _k=kernel, _n=name: calls.append(_n) or _k(*a))
    sizes = np.random.default_rng(3).integers(4, 90, 3000)
    labels = np.random.default_rng(4).permutation(np.repeat(np.arange(sizes.shape[0]), sizes))
    assert labels.shape[0] >= kernel_gate.MIN_ROWS
    plans = [_plan(labels, ClassesPerBatch(16, 4, classes=classes), 5, "index", 9)
             for classes in ("uniform", "proportional")]
    assert calls == ["uniform_batches", "permuted_groups"]
    monkeypatch.setitem(kernel_gate._LOADED, "index", False)
    monkeypatch.setitem(kernel_gate._LOADED, "assemble", False)
    for classes, compiled in zip(("uniform", "proportional"), plans):
        _assert_same(compiled, _plan(labels, ClassesPerBatch(16, 4, classes=classes), 5, "index",
                                     9))
