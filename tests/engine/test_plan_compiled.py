"""The compiled in-place assembly (numba, the ``fast`` extra): the numpy path's batches, exactly."""

import subprocess
import sys
import warnings

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import pystratum.kernels as kernel_gate
import pystratum
import pystratum.engine._assemble as assemble
import pystratum.kernels._assemble as kernels  # the dev extra installs numba: tested, not skipped
from pystratum.strata._encode import encode_strata
from pystratum.streams._base import NumpyStream, StatelessStream, make_stream
from pystratum.policies import Allocation, FixedSize, Policy

from tests._strategies import draw_any_cuts

BIT_GENERATORS = [np.random.PCG64, np.random.PCG64DXSM, np.random.MT19937, np.random.Philox,
                  np.random.SFC64]


@pytest.fixture
def compiled(monkeypatch):
    """This test's plans go through the compiled kernels, whatever PYSTRATUM_NUMBA says,
    however few rows they have."""
    monkeypatch.setitem(kernel_gate._LOADED, "assemble", kernels)
    monkeypatch.setattr(kernel_gate, "MIN_ROWS", 1)


def shuffle_compiled(generator, values):
    interface = generator.bit_generator.ctypes
    kernels.shuffle_like_numpy(values, interface.next_uint32, interface.state_address)


@pytest.mark.parametrize("bit_generator", BIT_GENERATORS)
@pytest.mark.parametrize("n", [0, 1, 2, 3, 5, 64, 65, 1000, 100_003])
def test_compiled_shuffle_makes_numpys_swaps_with_numpys_draws(bit_generator, n):
    """Same order as Generator.permutation(n) and the generator left where numpy leaves it,
    for every bit generator (their 32-bit words differ) and any dtype."""
    for dtype in (np.int64, np.int32):
        numpy_generator = np.random.Generator(bit_generator(n + 17))
        ours = np.random.Generator(bit_generator(n + 17))
        expected = numpy_generator.permutation(n)
        values = np.arange(n, dtype=dtype)
        shuffle_compiled(ours, values)
        np.testing.assert_array_equal(values, expected)
        # Both generators have consumed the same words (an odd 32-bit word included).
        assert ours.integers(0, 2**62, 3).tolist() == numpy_generator.integers(0, 2**62, 3).tolist()


@settings(max_examples=40)
@given(n=st.integers(0, 3000), seed=st.integers(0, 2**63))
def test_compiled_shuffle_reorders_any_values_as_the_permutation(n, seed):
    """values[k] becomes values[permutation[k]]: the swaps do not depend on the values."""
    values = np.random.default_rng(seed ^ 1).integers(-2**62, 2**62, n)
    expected = values[np.random.default_rng(seed).permutation(n)]
    shuffle_compiled(np.random.default_rng(seed), values)
    np.testing.assert_array_equal(values, expected)


@pytest.mark.parametrize("seed", [3, np.random.SeedSequence(8), None])
def test_numpy_stream_shuffles_in_place_as_its_permutation(compiled, seed):
    stream = NumpyStream(seed)
    for epoch in (0, 4):
        values = np.arange(20_000, dtype=np.int64) * 3
        stream.shuffle_in_place(values, epoch)
        np.testing.assert_array_equal(values, stream.permutation(20_000, epoch) * 3)
    # A Generator as seed: advanced by the shuffle exactly as by permutation().
    ours, theirs = np.random.default_rng(5), np.random.default_rng(5)
    values = np.arange(999)
    NumpyStream(ours).shuffle_in_place(values, 0)
    np.testing.assert_array_equal(values, theirs.permutation(999))
    assert ours.random() == theirs.random()


@pytest.mark.parametrize("rng", ["R", "torch"])
def test_other_streams_reorder_values_by_their_permutation(rng):
    values = np.arange(5000, dtype=np.int64) + 7
    make_stream(rng, 11).shuffle_in_place(values, 1)
    np.testing.assert_array_equal(values, make_stream(rng, 11).permutation(5000, 1) + 7)


@pytest.mark.parametrize("bits", [(1, 1), (2, 3), (3, 2), (14, 10)])
@pytest.mark.parametrize("n", [1, 2, 3, 7, 8, 9, 255, 256, 257, 5000])
def test_entries_move_to_their_positions(bits, n):
    """Small buckets and fans reach several distribution levels with few rows."""
    rng = np.random.default_rng(n)
    positions = rng.permutation(n)
    rows = rng.integers(0, 2**31 - 1, n)
    packed = (positions.astype(np.int64) << 32) | rows
    kernels.move_to_places(packed, *bits)
    expected = np.empty(n, dtype=np.int64)
    expected[positions] = rows
    np.testing.assert_array_equal(packed, expected)


class FixedPermutationStream(StatelessStream):
    """A test stream whose every epoch is one given permutation."""

    name = "fixed"

    def __init__(self, permutation, in_place):
        self.seed = None
        self.fixed = permutation
        self.shuffles_in_place = in_place

    def permutation(self, n, epoch):
        assert n == self.fixed.shape[0]
        return self.fixed.copy()

    def epoch_draws(self, n, draws, epoch, draws_of=None):
        raise AssertionError("policies that neither pool nor recycle draw one permutation")


@settings(max_examples=60)
@given(sizes=st.lists(st.integers(1, 30), min_size=1, max_size=6), n_batches=st.integers(1, 6),
       data=st.data())
def test_in_place_assembly_matches_a_loop_for_any_cuts(sizes, n_batches, data):
    """Any policy's cuts, rows left out included, from a shuffling stream, a drawn permutation
    or row order."""
    codes = np.repeat(np.arange(len(sizes)), sizes).astype(np.int16)
    codes = codes[np.random.default_rng(data.draw(st.integers(0, 2**32))).permutation(codes.size)]
    cuts = draw_any_cuts(data, sizes, n_batches)
    seed = data.draw(st.integers(0, 2**32))
    numpy_stream = NumpyStream(seed)
    permutation = numpy_stream.permutation(codes.size, 2)
    expected = assemble.assemble_batches(codes, permutation, cuts)
    streams = [(numpy_stream, 2), (FixedPermutationStream(permutation, False), 0),
               (FixedPermutationStream(permutation, True), 0)]
    for stream, epoch in streams:
        got = assemble.assemble_in_place(codes, cuts, stream, epoch, kernels)
        np.testing.assert_array_equal(got.order, expected.order)
        np.testing.assert_array_equal(got.bounds, expected.bounds)
    in_row_order = assemble.assemble_batches(codes, np.arange(codes.size), cuts)
    got = assemble.assemble_in_place(codes, cuts, None, 0, kernels)
    np.testing.assert_array_equal(got.order, in_row_order.order)


class EveryOtherRow(Policy):
    """Two batches holding the first half of every stratum's ranks (rows left out)."""

    name = "test_every_other_row"

    def params(self):
        return {}

    def allocate(self, strata, epoch):
        half = np.asarray(strata.sizes) // 2
        return Allocation(np.stack([np.zeros_like(half), half // 2, half], axis=1))


@pytest.mark.parametrize("rng", ["numpy", "R", "torch"])
def test_plans_are_the_same_with_and_without_the_compiled_path(monkeypatch, compiled, rng):
    strata = np.random.default_rng(2).choice([0, 1, 2, 7], p=[0.6, 0.3, 0.07, 0.03], size=30_001)
    labels = np.array(["x", "y", "z"])[np.random.default_rng(3).integers(0, 3, 30_001)]
    cases = [(strata, 1), (strata, 9), (strata, FixedSize(64)), (labels, 100),
             (strata, EveryOtherRow())]
    for data, policy in cases:
        for epoch in (0, 3):
            monkeypatch.setitem(kernel_gate._LOADED, "assemble", kernels)
            compiled = pystratum.plan_batches(data, policy, seed=21, rng=rng, epoch=epoch)
            monkeypatch.setitem(kernel_gate._LOADED, "assemble", False)  # as with PYSTRATUM_NUMBA=0
            assert kernel_gate.compiled("assemble") is None
            plain = pystratum.plan_batches(data, policy, seed=21, rng=rng, epoch=epoch)
            np.testing.assert_array_equal(compiled.order, plain.order)
            np.testing.assert_array_equal(compiled.bounds, plain.bounds)
            np.testing.assert_array_equal(compiled.counts, plain.counts)
            assert compiled.order.dtype == plain.order.dtype == np.int64
            assert compiled.counts.dtype == plain.counts.dtype
    monkeypatch.setitem(kernel_gate._LOADED, "assemble", kernels)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        compiled = pystratum.plan_batches(strata, 1, shuffle=False)
    monkeypatch.setitem(kernel_gate._LOADED, "assemble", False)
    plain = pystratum.plan_batches(strata, 1, shuffle=False)
    np.testing.assert_array_equal(compiled.order, plain.order)


def test_counts_are_the_allocations_from_the_cuts(compiled):
    strata = np.random.default_rng(4).integers(0, 30, 5000)
    plan = pystratum.plan_batches(strata, FixedSize(50), seed=1, epoch=2)
    allocation = FixedSize(50).allocate(encode_strata(strata), 2)
    np.testing.assert_array_equal(plan.cuts, allocation.cuts)
    np.testing.assert_array_equal(plan.counts, allocation.counts)
    assert plan.counts.dtype == allocation.counts.dtype == np.int32
    np.testing.assert_array_equal(plan.counts.sum(axis=1), np.diff(plan.bounds))


def test_without_numba_the_plan_uses_numpy():
    """numba is optional: where it cannot be imported the plan is assembled by numpy."""
    code = ("import sys; sys.modules['numba'] = None\n"
            "import numpy as np, pystratum, pystratum.kernels as g, pystratum.engine._assemble as a\n"
            "assert g.compiled('assemble') is None and a.in_place_kernels(10**6, 3) is None\n"
            "p = pystratum.plan_batches(np.arange(4000) % 3, 2, seed=5)\n"
            "print(','.join(map(str, p.order[:8].tolist())))")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                            check=True)
    expected = pystratum.plan_batches(np.arange(4000) % 3, 2, seed=5).order[:8]
    assert result.stdout.strip() == ",".join(map(str, expected.tolist()))


def test_large_epochs_take_the_compiled_path_unless_switched_off(monkeypatch):
    monkeypatch.delenv("PYSTRATUM_NUMBA", raising=False)
    monkeypatch.delitem(kernel_gate._LOADED, "assemble", raising=False)
    assert assemble.in_place_kernels(kernel_gate.MIN_ROWS, 2) is kernels
    assert assemble.in_place_kernels(kernel_gate.MIN_ROWS - 1, 2) is None  # numpy's
    assert assemble.in_place_kernels(2**31, 2) is None  # rows beyond 31 bits
    monkeypatch.setenv("PYSTRATUM_NUMBA", "0")
    monkeypatch.delitem(kernel_gate._LOADED, "assemble", raising=False)
    assert assemble.in_place_kernels(10**6, 2) is None


@pytest.mark.parametrize("size", [1, 2, 1000, 70_001])
def test_numpy_stream_whole_draws_are_numpys_permutations_compiled_or_not(compiled, size):
    """A sampling policy's whole draw (a permutation of a stratum or of a pool) is
    Generator.permutation(size) on both paths, and leaves the generator where numpy does."""
    from pystratum.streams._base import _permutation

    ours, numpys = np.random.default_rng(size), np.random.default_rng(size)
    np.testing.assert_array_equal(_permutation(ours, size), numpys.permutation(size))
    assert ours.bit_generator.state == numpys.bit_generator.state


def test_sampling_plans_are_the_same_with_and_without_the_compiled_path(monkeypatch, compiled):
    from pystratum.policies import Downsample, Targets

    strata = np.random.default_rng(2).choice([0, 1, 2, 7], p=[0.6, 0.3, 0.07, 0.03], size=30_001)
    for policy in (Targets("balanced", 40), Downsample({0: 0.2}, Targets("balanced", 8)),
                   Downsample({1: 0.5}, FixedSize(50))):
        monkeypatch.setitem(kernel_gate._LOADED, "assemble", kernels)
        compiled_plan = pystratum.plan_batches(strata, policy, seed=5, epoch=2)
        monkeypatch.setitem(kernel_gate._LOADED, "assemble", False)
        plain = pystratum.plan_batches(strata, policy, seed=5, epoch=2)
        np.testing.assert_array_equal(compiled_plan.order, plain.order)
        if plain.weights is not None:
            np.testing.assert_array_equal(compiled_plan.weights, plain.weights)


@pytest.mark.parametrize("n_strata", [1, 3, 300, 70_000])
def test_compiled_grouping_is_the_stable_sort(compiled, n_strata, monkeypatch):
    import pystratum.kernels._index as index_kernels
    import pystratum.streams._index as index_stream

    monkeypatch.setitem(kernel_gate._LOADED, "index", index_kernels)  # the counting sort, surely
    codes = np.random.default_rng(n_strata).integers(0, n_strata, 200_001)
    encoded = encode_strata(codes)
    rows = encoded.grouped_rows
    assert rows.dtype == np.int32
    np.testing.assert_array_equal(rows, np.argsort(encoded.codes, kind="stable"))
