"""Per-call costs (issue 30, item 1): an epoch's work is O(rows served + strata + batches).

The guards price rows; the code must not pay per stream call, per pass or
per refill beyond a bounded constant, or the request is refused before any
drawing. Nothing here is timed: the tests count calls with wrappers, or
assert the refusal.
"""

import warnings

import numpy as np
import pytest

import pystratum.streams._index as index_stream
from pystratum import plan_batches
from pystratum.policies import Targets


class CallCounter:
    """Wraps ``module.name`` for one test and counts its calls."""

    def __init__(self, monkeypatch, module, name):
        self.calls = 0
        original = getattr(module, name)

        def counted(*args, **kwargs):
            self.calls += 1
            return original(*args, **kwargs)

        monkeypatch.setattr(module, name, counted)


def test_index_recycled_passes_derive_their_keys_in_one_call(monkeypatch):
    # 1 + 8,000 rows: the one-row stratum is recycled 8,000 times (8,000 passes).
    # Each pass's round keys came from its own cipher call (about 3 ms each).
    keys = CallCounter(monkeypatch, index_stream, "round_keys")
    y = np.array([0] + [1] * 8000)
    plan = plan_batches(y, Targets({0: .5, 1: .5}, 2), seed=1, rng="index")
    assert plan.num_batches == 8000
    assert (plan.counts == 1).all()
    assert keys.calls <= 4
