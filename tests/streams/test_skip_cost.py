"""The epoch-jump guard of sequential streams prices the draws an epoch really makes.

Reaching epoch k of rng="R" or "torch" draws every epoch before it. A
sampling policy's epoch draws pass 0 of every stratum plus one draw per
extra pass of a recycled stratum, and every call has an overhead of its
own, so the guard counts calls and rows (issue 18, item 3). Nothing here
is timed: the guard's estimate is compared with the draws the stream is
really asked for (counted by wrapping it), and refusals happen before any
draw.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pystratum import plan_batches
from pystratum.streams import _base as streams
from pystratum.engine._plan import epoch_draw_sizes, plan_from_stream
from pystratum.streams._r import RStream
from pystratum.strata._encode import encode_strata
from pystratum.streams._base import RSeededStream
from pystratum.policies import Downsample, FixedSize, MinPerStratum, Targets

CALL = streams.SequentialStream.call_cost

# The case: one row of class 1 among 20,000 of class 0, half of every batch of 2
# from each: 20,000 extra passes of the one row per epoch, 20,001 calls.
RECYCLED = np.array([0] * 20_000 + [1])
RECYCLING = Targets({0: 0.5, 1: 0.5}, 2)


def _streams():
    yield "R"
    try:
        import torch  # noqa: F401
    except ImportError:
        return
    yield "torch"


STREAMS = list(_streams())


def test_torch_is_priced_when_installed():
    # The torch stream is part of the contract wherever PyTorch is (the dev set-up has it).
    pytest.importorskip("torch", reason="rng='torch' needs PyTorch")
    assert "torch" in STREAMS


@pytest.mark.parametrize("rng", STREAMS)
@pytest.mark.parametrize("epoch", [5, 1000, 2**31 - 1])
def test_recycled_stratum_jumps_are_refused_before_drawing(rng, epoch):
    with pytest.raises(ValueError, match=rf"^epoch={epoch} with rng='{rng}' means drawing the "
                                         rf"{epoch:,} earlier epoch\(s\) of these 20,001 rows"
                                         r".*rng='numpy' or rng='index'.*keep one sampler.*"
                                         r"in order"):
        plan_batches(RECYCLED, RECYCLING, seed=3, rng=rng, epoch=epoch)


def test_the_refusal_states_the_calls_and_the_cost():
    stream = RSeededStream(3)
    encoded = encode_strata(RECYCLED)
    with pytest.raises(ValueError) as error:
        plan_from_stream(encoded, RECYCLING, stream, epoch=5, rng="R")
    message = str(error.value)
    # Priced epoch by epoch until past the limit: 3 epochs of 20,001 calls each.
    assert "at least 60,003 draw(s) of at least 120,000 rows" in message
    assert f"a cost of at least {3 * (20_001 * CALL + 40_000):,} row draws" in message
    # Nothing was drawn: the stream still stands at its seed.
    assert stream.state_dict()["random_seed"] is None


@pytest.mark.parametrize("rng", STREAMS)
def test_per_call_overhead_refuses_many_epochs_of_few_rows(rng):
    # 99,999 epochs of 20 rows cost 99,999 calls: over the limit by the calls alone.
    labels = np.array([0, 1] * 10)
    with pytest.raises(ValueError, match=r"99,999 draw\(s\) of 1,999,980 rows, a cost of "
                                         rf"{99_999 * (20 + CALL):,} row draws"):
        plan_batches(labels, 1, seed=1, rng=rng, epoch=99_999)


def test_cheap_jumps_are_accepted():
    encoded = encode_strata(RECYCLED)
    stream = RSeededStream(3)
    cost, groups = stream.skip_cost(encoded.n_rows, 2,
                                    lambda k: epoch_draw_sizes(encoded, RECYCLING, k))
    assert groups is not None and len(groups) == 2 and cost.complete
    assert cost.cost <= streams.MAX_SKIPPED_DRAWS
    cost, groups = stream.skip_cost(20, 40_000)
    assert groups is not None and cost.cost == 40_000 * (20 + CALL)


class _Recorder:
    """Records every draw the R stream makes, at the lowest level (RStream's methods)."""

    def __init__(self, monkeypatch):
        self.calls = []
        for name in ("permutation", "compact_permutation"):
            self._wrap(monkeypatch, name, lambda n: (n, n))
        self._wrap(monkeypatch, "partial_permutation", lambda n, size: (n, size))
        # A group of draws through one word tap: each draw is still one call.
        self._wrap(monkeypatch, "partial_permutations", lambda draws: list(draws), many=True)

    def _wrap(self, monkeypatch, name, shape, many=False):
        original = getattr(RStream, name)
        calls = self.calls

        def wrapper(stream, *args):
            if many:
                calls.extend(shape(*args))
            else:
                calls.append(shape(*args))
            return original(stream, *args)

        monkeypatch.setattr(RStream, name, wrapper)

    def cost(self):
        rows = sum(size for size, _ in self.calls)  # no hash path below 10**7 rows
        return len(self.calls), rows, rows + len(self.calls) * CALL


POLICIES = [
    MinPerStratum(2),
    FixedSize(30),
    Targets("balanced", 6),  # recycles the small strata
    Targets({"a": 0.2, "b": 0.3, "c": 0.5}, 10, epoch=3),
    Targets("balanced", 4, epoch="smallest"),  # undersamples: short pass-0 draws
    Downsample({"a": 0.5}, 3),
    Downsample({"a": 0.4, "c": 0.5}, Targets("balanced", 5)),
]


def _labels(sizes):
    labels = np.repeat(np.array(["a", "b", "c"])[: len(sizes)], sizes)
    return np.random.default_rng(len(labels)).permutation(labels)


@given(sizes=st.lists(st.integers(2, 40), min_size=3, max_size=3),
       policy=st.sampled_from(POLICIES), epoch=st.integers(0, 6))
@settings(max_examples=60)
def test_the_estimate_is_the_draws_the_stream_makes(sizes, policy, epoch):
    encoded = encode_strata(_labels(sizes))
    draws_of = lambda k: epoch_draw_sizes(encoded, policy, k)  # noqa: E731
    with pytest.MonkeyPatch.context() as monkeypatch:
        recorder = _Recorder(monkeypatch)
        # One epoch served: what epoch_cost says it draws.
        stream = RSeededStream(5)
        expected = stream.epoch_cost(draws_of(epoch))
        stream.advance_to(encoded.n_rows, epoch, draws_of)
        recorder.calls.clear()
        plan_from_stream(encoded, policy, stream, epoch=epoch, rng="R")
        assert recorder.cost() == (expected.calls, expected.rows, expected.cost)
        # A jump from the seed to `epoch`: what skip_cost priced is what is drawn.
        fresh = RSeededStream(5)
        cost, groups = fresh.skip_cost(encoded.n_rows, epoch, draws_of)
        assert cost.complete and len(groups) == epoch
        recorder.calls.clear()
        fresh.advance_to(encoded.n_rows, epoch, draws_of)
        assert recorder.cost() == (cost.calls, cost.rows, cost.cost)
        assert recorder.calls == [draw for group in groups for draw in group]


def test_the_recycled_epoch_is_priced_by_its_real_calls(monkeypatch):
    encoded = encode_strata(np.array([0] * 200 + [1]))
    policy = Targets({0: 0.5, 1: 0.5}, 2)
    recorder = _Recorder(monkeypatch)
    stream = RSeededStream(1)
    plan_from_stream(encoded, policy, stream, epoch=0, rng="R")
    # Pass 0 of each stratum, then 199 extra one-row passes of the one row.
    assert len(recorder.calls) == 201
    assert stream.epoch_cost(epoch_draw_sizes(encoded, policy, 1)).calls == 201


def test_torch_draws_are_counted_as_whole_permutations(monkeypatch):
    torch = pytest.importorskip("torch", reason="rng='torch' needs PyTorch")
    from pystratum.streams._torch import TorchStream

    calls = []
    original = torch.randperm

    def randperm(n, *args, **kwargs):
        calls.append(n)
        return original(n, *args, **kwargs)

    monkeypatch.setattr(torch, "randperm", randperm)
    encoded = encode_strata(_labels([30, 5, 12]))
    policy = Targets("balanced", 6, epoch="smallest")  # short draws cut from randperm(size)
    draws_of = lambda k: epoch_draw_sizes(encoded, policy, k)  # noqa: E731
    stream = TorchStream(2)
    cost, groups = stream.skip_cost(encoded.n_rows, 3, draws_of)
    stream.advance_to(encoded.n_rows, 3, draws_of)
    assert (len(calls), sum(calls)) == (cost.calls, cost.rows)
    assert cost.cost == cost.rows + CALL * cost.calls
