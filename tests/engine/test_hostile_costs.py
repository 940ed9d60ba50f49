"""Per-call costs (issue 30, item 1): an epoch's work is O(rows served + strata + batches).

The guards price rows; the code must not pay per stream call, per pass or
per refill beyond a bounded constant, or the request is refused before any
drawing. Nothing here is timed: the tests count calls with wrappers, or
assert the refusal.
"""

import sys
import warnings

import numpy as np
import pytest

import pystratum.streams._index as index_stream
from pystratum import plan_batches
from pystratum.engine._assemble_slots import partial_shuffles
from pystratum.policies import ClassesPerBatch, Targets


class CallCounter:
    """Wraps ``module.name`` for one test and counts its calls."""

    def __init__(self, monkeypatch, module, name):
        self.calls = 0
        original = getattr(module, name)

        def counted(*args, **kwargs):
            self.calls += 1
            return original(*args, **kwargs)

        monkeypatch.setattr(module, name, counted)


class OverBudget(Exception):
    """More Python and C calls than the budget: the work grows with something it must not."""


class CallBudget:
    """Counts every Python and C function call inside the block; raises past ``limit``.

    A cost that grows per row, per pass or per refill in Python is stopped
    at once (instead of hanging), and the count shows the work done.
    """

    def __init__(self, limit):
        self.limit = limit
        self.calls = 0

    def _count(self, frame, event, arg):
        if event in ("call", "c_call"):
            self.calls += 1
            if self.calls > self.limit:
                raise OverBudget(f"over {self.limit:,} calls")

    def __enter__(self):
        self._previous = sys.getprofile()
        sys.setprofile(self._count)
        return self

    def __exit__(self, *exc):
        sys.setprofile(self._previous)
        return False


def test_partial_shuffles_cost_no_step_loop_per_value_taken():
    # One refill of 10,000 values (an extra slot of per_class=10**4) replayed the
    # sample.int loop as ~take^2 / 2 numpy calls: minutes for ClassesPerBatch(2, 10**4).
    sizes = np.asarray([30000, 10000, 7], dtype=np.int64)
    takes = np.asarray([10000, 10000, 3], dtype=np.int64)
    with CallBudget(20000) as budget:
        values = partial_shuffles(np.random.default_rng(1), sizes, takes)
    assert budget.calls < 20000
    assert [np.unique(part).shape[0] for part in np.split(values, [10000, 20000])] == \
        [10000, 10000, 3]
    y = np.repeat([0, 1], [3 * 10**4, 10**4])
    with CallBudget(20000):
        plan = plan_batches(y, ClassesPerBatch(2, 10**4), seed=1)
    assert (plan.counts == 10**4).sum() == 2 * plan.num_batches


def test_index_recycled_passes_derive_their_keys_in_one_call(monkeypatch):
    # 1 + 8,000 rows: the one-row stratum is recycled 8,000 times (8,000 passes).
    # Each pass's round keys came from its own cipher call (about 3 ms each).
    keys = CallCounter(monkeypatch, index_stream, "round_keys")
    y = np.array([0] + [1] * 8000)
    plan = plan_batches(y, Targets({0: .5, 1: .5}, 2), seed=1, rng="index")
    assert plan.num_batches == 8000
    assert (plan.counts == 1).all()
    assert keys.calls <= 4
