"""The stream protocol and registry: every rng is one registered EpochStream class."""

import subprocess
import sys

import numpy as np
import pytest

from pystratum.streams import _base as _streams
from pystratum.streams._base import (PERMUTATION_RNG_CHOICES, RNG_CHOICES, EpochStream,
                                SequentialStream, make_stream, stream_class)

SEEDS = {"numpy": 7, "R": -12345, "torch": 99, "index": 5}


@pytest.mark.parametrize("rng", RNG_CHOICES)
def test_every_registered_stream_implements_the_protocol(rng):
    stream = make_stream(rng, SEEDS[rng])
    assert isinstance(stream, EpochStream)
    assert stream.name == rng and stream_class(rng) is type(stream)
    assert stream.seed is not None
    permutation = stream.permutation(50, 2)
    assert sorted(np.asarray(permutation).tolist()) == list(range(50))


def test_permutation_streams_are_those_with_whole_epoch_draws():
    assert PERMUTATION_RNG_CHOICES == ("numpy", "R", "torch")
    for rng in PERMUTATION_RNG_CHOICES:
        draws = make_stream(rng, SEEDS[rng]).epoch_draws(20, [(20, 20), (5, 5), (9, 4)], 1)
        assert [sorted(d.tolist()) for d in draws[:2]] == [list(range(k)) for k in (20, 5)]
        # A short draw: 4 distinct values of range(9).
        assert len(set(draws[2].tolist())) == 4 and set(draws[2].tolist()) <= set(range(9))
    with pytest.raises(ValueError, match="rng='index' draws no whole permutations"):
        make_stream("index", 1).epoch_draws(20, [], 0)


@pytest.mark.parametrize("rng", ["R", "torch"])
def test_sequential_streams_save_and_restore_their_position(rng):
    stream = make_stream(rng, SEEDS[rng])
    stream.permutation(30, 0)
    saved = stream.state_dict()
    assert set(saved) == {"n", "epoch", type(stream)._state_key}
    expected = [stream.permutation(30, k).tolist() for k in (1, 2)]
    restored = make_stream(rng, SEEDS[rng])
    restored.load_state_dict(saved)
    assert [restored.permutation(30, k).tolist() for k in (1, 2)] == expected
    # A state saved before any draw restarts the stream at its seed.
    fresh = make_stream(rng, SEEDS[rng])
    fresh.load_state_dict(make_stream(rng, SEEDS[rng]).state_dict())
    assert fresh.permutation(30, 0).tolist() == make_stream(rng, SEEDS[rng]).permutation(30, 0).tolist()


@pytest.mark.parametrize("rng", ["R", "torch"])
def test_corrupted_sequential_states_name_the_key(rng):
    stream = make_stream(rng, SEEDS[rng])
    with pytest.raises(ValueError, match="lacks"):
        stream.load_state_dict({"n": 3})
    with pytest.raises(TypeError, match="must be the dict"):
        stream.load_state_dict([1, 2])
    key = type(stream)._state_key
    with pytest.raises((TypeError, ValueError)):
        stream.load_state_dict({"n": -1, "epoch": 0, key: make_stream(rng, 1).state_dict()[key]
                                or [0] * 626})


@pytest.mark.parametrize("rng", ["numpy", "index"])
def test_stateless_streams_refuse_a_position(rng):
    stream = make_stream(rng, SEEDS[rng])
    assert stream.state_dict() == {}
    stream.load_state_dict({})
    with pytest.raises(ValueError, match=f"rng={rng!r} streams have no position"):
        stream.load_state_dict({"n": 3})


def test_sequential_streams_share_one_base():
    assert issubclass(stream_class("R"), SequentialStream)
    assert issubclass(stream_class("torch"), SequentialStream)


def test_choosing_a_stream_imports_only_what_it_needs():
    code = ("import sys, pystratum; pystratum.stratified_batches([0, 1] * 20, 2, seed=1, rng='R');"
            "print('torch' in sys.modules)")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          check=True)
    assert done.stdout.strip() == "False"


def test_the_registry_is_the_only_list_of_rng_names():
    assert RNG_CHOICES == tuple(_streams._REGISTRY)


@pytest.mark.parametrize("rng", PERMUTATION_RNG_CHOICES)
@pytest.mark.parametrize("n", [0, 1, 7, 1500, 250_000])
def test_compact_permutations_are_the_same_draws_in_half_the_memory(rng, n):
    """What the plan reads (int32 below 2**31 rows) equals permutation(n, epoch), epoch after
    epoch, and leaves sequential streams where permutation() leaves them."""
    wide, compact = make_stream(rng, 11), make_stream(rng, 11)
    for epoch in range(3):
        expected = wide.permutation(n, epoch)
        got = compact.compact_permutation(n, epoch)
        assert got.dtype == np.int32
        np.testing.assert_array_equal(got, expected)
    assert compact.state_dict().keys() == wide.state_dict().keys()
    np.testing.assert_array_equal(compact.permutation(n, 3), wide.permutation(n, 3))


def test_r_swap_remove_in_place_gives_the_same_values():
    from pystratum.streams import _r as _rstream

    rng = np.random.default_rng(4)
    n = 50_000
    draws = (rng.random(n) * np.arange(n, 0, -1)).astype(np.int32)
    expected = _rstream._swap_remove_chunked(draws, n)
    assert expected.dtype == np.int64
    again = draws.copy()
    got = _rstream._swap_remove_chunked(again, n, out=again)
    assert got is again and got.dtype == np.int32
    np.testing.assert_array_equal(got, expected)
