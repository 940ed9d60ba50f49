"""The compiled random-access stream and lazy batches (numba, the ``fast`` extra):
numpy's values, bit for bit (the stream is shared with R)."""

import subprocess
import sys

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import pystratum.kernels as kernel_gate
import pystratum.engine._assemble as assemble
import pystratum.kernels._index as kernels  # the dev extra installs numba: tested, not skipped
import pystratum.streams._index as stream
import pystratum.engine._lazy as lazy
from pystratum.streams._index import MAX_INDEX, ROUNDS, permute_ranks, round_keys
from pystratum.engine._lazy import lazy_plan
from pystratum.strata._members import members_of_codes, members_of_labels
from pystratum.strata._encode import encode_strata
from pystratum.policies import Downsample, FixedSize, Targets

from tests._env import subprocess_environ
from tests._strategies import strata_and_policy


@pytest.fixture
def paths(monkeypatch):
    """``paths(True)``: everything after it goes through the compiled kernels however
    few the rows; ``paths(False)``: through numpy's path."""
    monkeypatch.setattr(kernel_gate, "MIN_ROWS", 1)
    monkeypatch.setattr(kernel_gate, "MIN_CALL_ROWS", 1)

    def use(compiled):
        monkeypatch.setitem(kernel_gate._LOADED, "index", kernels if compiled else False)
    return use


def numpy_walk(ranks, n, keys):
    """numpy's network and cycle-walking (``_walk`` without the compiled kernels)."""
    saved = kernel_gate._LOADED.get("index")
    kernel_gate._LOADED["index"] = False
    try:
        return stream._walk(np.asarray(ranks, dtype=np.int64), n, keys)
    finally:
        kernel_gate._LOADED["index"] = saved


def compiled_walk(ranks, n, keys):
    out = np.empty(len(ranks), dtype=np.int64)
    kernels.walk(np.asarray(ranks, dtype=np.int64), n, np.asarray(keys, dtype=np.uint64), out)
    return out


# Domains around powers of two: 2**w barely above n makes the walks longest.
domains = st.one_of(
    st.integers(1, 3000),
    st.integers(2, 52).flatmap(lambda w: st.sampled_from([2**w - 1, 2**w, 2**w + 1])),
    st.integers(1, MAX_INDEX),
)


def test_the_kernels_have_the_streams_constants():
    assert kernels._ROUNDS == ROUNDS
    assert kernels._SMALL_DOMAIN == stream.SMALL_DOMAIN
    assert int(kernels._HALF) == stream._HALF and kernels._M26 == stream._M26
    assert (kernels._C1, kernels._C2) == (stream._C1, stream._C2)


@settings(max_examples=120)
@given(n=domains, key_seed=st.integers(0, 2**32 - 1), count=st.integers(0, 1500))
def test_compiled_walk_gives_numpys_values(n, key_seed, count):
    """Any domain (1 .. 2**52), any keys below 2**26, ranks anywhere in [0, n)."""
    rng = np.random.default_rng(key_seed)
    keys = rng.integers(0, 2**26, ROUNDS).astype(np.uint64)
    ranks = rng.integers(0, n, count)
    ranks[:min(count, 2)] = [0, n - 1][:min(count, 2)]  # both ends
    np.testing.assert_array_equal(compiled_walk(ranks, n, keys), numpy_walk(ranks, n, keys))


@pytest.mark.parametrize("n", [1, 2, 3, 63, 64, 65, 127, 128, 129, 1000, 4097, 2**16 + 1])
def test_compiled_walk_is_numpys_bijection_on_whole_domains(n):
    keys = round_keys(n, 4, [3])[:, 0]
    values = compiled_walk(np.arange(n), n, keys)
    np.testing.assert_array_equal(np.sort(values), np.arange(n))
    np.testing.assert_array_equal(values, numpy_walk(np.arange(n), n, keys))


@pytest.mark.parametrize("n", [2**40 + 1, 2**40 + 12345, 2**52 - 1, 2**52])
def test_compiled_walk_on_huge_domains(n):
    """Half widths of 20-26 bits, values beyond 2**32: still numpy's values."""
    keys = round_keys(7, 1, [2])[:, 0]
    ranks = np.concatenate([np.arange(2000), n - 1 - np.arange(2000),
                            np.random.default_rng(n % 1000).integers(0, n, 4000)])
    values = compiled_walk(ranks, n, keys)
    assert values.min() >= 0 and values.max() < n
    np.testing.assert_array_equal(values, numpy_walk(ranks, n, keys))


@settings(max_examples=60)
@given(sizes=st.lists(domains, min_size=1, max_size=40), seed=st.integers(0, 2**32 - 1),
       shared_keys=st.booleans())
def test_compiled_walk_with_a_domain_per_value_gives_numpys_values(sizes, seed, shared_keys):
    rng = np.random.default_rng(seed)
    n = np.asarray(sizes, dtype=np.int64)
    n = np.maximum(n, stream.SMALL_DOMAIN + 1)  # small domains never reach the walk
    ranks = (rng.random(n.shape[0]) * n).astype(np.int64)
    keys = round_keys(seed, 2, [0])[:, 0] if shared_keys else \
        round_keys(seed, 2, np.arange(n.shape[0]))
    expected = numpy_walk(ranks, n, keys)
    out = np.empty(n.shape[0], dtype=np.int64)
    per_value = np.broadcast_to(keys[:, None], (ROUNDS, n.shape[0])) if shared_keys else keys
    kernels.walk_each(ranks, n, per_value, out)
    np.testing.assert_array_equal(out, expected)


# `paths` is shared by the examples on purpose: each example picks its path itself.
SHARED_FIXTURE = [HealthCheck.function_scoped_fixture]


@settings(max_examples=40, suppress_health_check=SHARED_FIXTURE)
@given(n=domains, seed=st.integers(0, 2**40), count=st.integers(0, 300))
def test_permute_ranks_is_the_same_on_both_paths(paths, n, seed, count):
    ranks = np.random.default_rng(seed).integers(0, n, count)
    keys = round_keys(seed, 0, [1])[:, 0]
    paths(True)
    compiled = permute_ranks(ranks, n, keys)
    paths(False)
    np.testing.assert_array_equal(compiled, permute_ranks(ranks, n, keys))


def _epoch(plan):
    order, bounds = plan.batches_of(np.arange(plan.num_batches))
    return order, bounds


@settings(max_examples=60, suppress_health_check=SHARED_FIXTURE)
@given(case=strata_and_policy(), seed=st.integers(0, 2**52 - 1), epoch=st.integers(0, 20),
       grouped=st.booleans())
def test_lazy_plans_are_the_same_with_and_without_the_compiled_path(paths, case, seed, epoch,
                                                                     grouped):
    """Every batch, whole epochs and single batches, member arrays and ranges, few and
    many strata (up to 12), tiny strata (the small-domain table) and large ones."""
    codes, policy = case
    if grouped:
        codes = np.sort(codes)
    results = []
    for compiled in (True, False):
        paths(compiled)
        plan = lazy_plan(codes, policy, seed=seed, epoch=epoch, allow_single_batch=True)
        order, bounds = _epoch(plan)
        single = [plan[b] for b in range(min(3, plan.num_batches))]
        results.append((order, bounds, single, plan.members.rows))
    (order, bounds, single, rows), (order_n, bounds_n, single_n, rows_n) = results
    np.testing.assert_array_equal(order, order_n)
    np.testing.assert_array_equal(bounds, bounds_n)
    for a, b in zip(single, single_n):
        np.testing.assert_array_equal(a, b)
    assert (rows is None) == (rows_n is None)
    if rows is not None:
        np.testing.assert_array_equal(rows, rows_n)


@pytest.mark.parametrize("n_strata", [2, 9, 300])
def test_large_lazy_epochs_are_the_same_on_both_paths(paths, n_strata):
    """Strata of tens of thousands of rows (many walk blocks), member array and ranges."""
    rng = np.random.default_rng(n_strata)
    codes = rng.integers(0, n_strata, 200_003)
    codes[:n_strata] = np.arange(n_strata)
    for strata in (codes, np.sort(codes)):
        epochs = []
        for compiled in (True, False):
            paths(compiled)
            plan = lazy_plan(strata, FixedSize(1000), seed=99, epoch=5)
            epochs.append(_epoch(plan))
            if compiled:
                assert plan._kernels(plan.members.n_rows) is kernels
        np.testing.assert_array_equal(epochs[0][0], epochs[1][0])
        np.testing.assert_array_equal(epochs[0][1], epochs[1][1])
        assert np.array_equal(np.sort(epochs[0][0]), np.arange(codes.shape[0]))


@pytest.mark.parametrize("policy", [Targets("balanced", 40),
                                    Downsample({0: 0.2}, Targets("balanced", 8)),
                                    Downsample({1: 0.5}, FixedSize(50))])
def test_pooled_and_recycled_lazy_plans_are_the_same_on_both_paths(paths, policy):
    strata = np.random.default_rng(2).choice([0, 1, 2, 7], p=[0.6, 0.3, 0.07, 0.03],
                                             size=30_001)
    plans = []
    for compiled in (True, False):
        paths(compiled)
        plans.append(lazy_plan(strata, policy, seed=5, epoch=2).materialise())
    np.testing.assert_array_equal(plans[0].order, plans[1].order)
    np.testing.assert_array_equal(plans[0].bounds, plans[1].bounds)
    np.testing.assert_array_equal(plans[0].weights, plans[1].weights)


@pytest.mark.parametrize("n_strata", [3, 5, 700])
def test_member_arrays_are_the_same_on_both_paths(paths, n_strata, tmp_path):
    """The compiled counting sort (many strata) writes numpy's member array, in memory
    and memory-mapped, whatever the codes' dtype."""
    rng = np.random.default_rng(n_strata)
    codes = rng.integers(0, n_strata, 50_000)
    codes[:n_strata] = np.arange(n_strata)
    for values in (codes, codes.astype(np.int16), codes.astype(np.uint16)):
        results = []
        for compiled in (True, False):
            paths(compiled)
            encoded = encode_strata(values)
            directory = tmp_path / f"{compiled}-{values.dtype}"
            results.append((members_of_labels(values).rows,
                            members_of_codes(encoded.codes, encoded.sizes, encoded.labels,
                                             directory=directory).rows))
        for compiled_rows, numpy_rows in zip(*results):
            np.testing.assert_array_equal(compiled_rows, numpy_rows)
        expected = np.argsort(codes, kind="stable")
        np.testing.assert_array_equal(results[0][0], expected)


def test_the_compiled_path_is_used_for_large_calls_only(monkeypatch):
    monkeypatch.delenv("PYSTRATUM_NUMBA", raising=False)
    monkeypatch.delitem(kernel_gate._LOADED, "index", raising=False)
    assert kernel_gate.compiled_for("index", kernel_gate.MIN_ROWS) is kernels
    assert kernel_gate.compiled_for("index", kernel_gate.MIN_ROWS - 1) is None
    plan = lazy_plan(np.arange(kernel_gate.MIN_ROWS) % 3, FixedSize(3000), seed=1)
    assert plan._kernels(kernel_gate.MIN_CALL_ROWS) is kernels
    assert plan._kernels(kernel_gate.MIN_CALL_ROWS - 1) is None  # one batch: numpy's path
    small = lazy_plan(np.arange(1000) % 3, FixedSize(3000), seed=1, allow_single_batch=True)
    assert small._kernels(10**6) is None  # a small plan never imports numba
    monkeypatch.setenv("PYSTRATUM_NUMBA", "0")
    monkeypatch.delitem(kernel_gate._LOADED, "index", raising=False)
    assert kernel_gate.compiled_for("index", 10**9) is None


def test_first_batch_and_small_plans_do_not_import_numba_and_numba_stays_optional():
    """The first batch of a large plan is computed before numba is imported (its import
    costs more than the batch); without numba the batches are the same."""
    code = ("import sys, numpy as np, pystratum\n"
            "from pystratum.policies import FixedSize\n"
            "plan = pystratum.lazy_plan(np.arange(300_000) % 7 == 0, FixedSize(1000), seed=5)\n"
            "first = plan[3]\n"
            "assert sys.modules.get('numba') is None, 'numba imported for one batch'\n"
            "print(','.join(map(str, first[:8].tolist())))\n"
            "order, _ = plan.batches_of(range(plan.num_batches))\n"
            "print(','.join(map(str, order[-8:].tolist())))\n"
            "print(sys.modules.get('numba') is not None)")
    outputs = []
    for mode in ("on", "off"):
        prefix = "" if mode == "on" else "import sys; sys.modules['numba'] = None\n"
        result = subprocess.run([sys.executable, "-c", prefix + code, mode], capture_output=True,
                                text=True, check=True, env=subprocess_environ())
        outputs.append(result.stdout.split())
    assert outputs[0][:2] == outputs[1][:2]
    # 300,000 rows are under pystratum.kernels.LOAD_ROWS: numpy's path serves the whole
    # epoch faster than numba's start-up (the kernels are compared with it above).
    assert outputs[0][2] == "False"
    assert outputs[1][2] == "False"


def test_the_golden_vectors_hold_on_the_compiled_path(paths):
    """R's stream (tests/vectors/index_stream.json) through the kernels: positions and batches."""
    import pystratum
    from _vectors import load_cases
    from pystratum.streams._index import index_permutation
    from pystratum.policies import policy_from_params

    header, cases = load_cases("index_stream.json")
    base = header["index_base"]
    paths(True)
    checked = 0
    for case in cases:
        if "n" in case:
            ranks = None if case.get("ranks") is None else \
                np.asarray(case["ranks"], np.int64) - base
            got = index_permutation(case["n"], case["seed"], case["epoch"], case["stream"],
                                    ranks=ranks)
            assert got.tolist() == [v - base for v in case["expected"]], case["id"]
            checked += 1
        elif "strata" in case:
            policy = policy_from_params(case["policy"]["name"], case["policy"]["params"])
            plan = pystratum.plan_batches(np.asarray(case["strata"]), policy, seed=case["seed"],
                                          rng="index", epoch=case["epoch"])
            expected = [[v - base for v in b] for b in case["expected"]]
            assert [b.tolist() for b in plan] == expected, case["id"]
            checked += 1
    assert checked >= 13
