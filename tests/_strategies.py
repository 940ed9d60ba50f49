"""Hypothesis helpers shared by test modules."""

from __future__ import annotations

import numpy as np
from hypothesis import strategies as st

from pystratum.policies import FixedSize, MinPerStratum


def draw_any_cuts(data, sizes, n_batches) -> np.ndarray:
    """Any valid cut table for ``sizes``: each stratum's cuts non-decreasing from 0 to a used
    count (rows beyond it left out), in int32 or int64."""
    dtype = data.draw(st.sampled_from([np.int32, np.int64]))
    cuts = np.zeros((len(sizes), n_batches + 1), dtype=dtype)
    for s, size in enumerate(sizes):
        used = data.draw(st.integers(0, size))
        inner = sorted(data.draw(st.lists(st.integers(0, used), min_size=n_batches - 1,
                                          max_size=n_batches - 1)))
        cuts[s] = [0, *inner, used]
    return cuts


@st.composite
def strata_and_policy(draw):
    # Up to 12 strata: both the per-stratum (<= 8) and the per-row paths.
    n_strata = draw(st.integers(1, 12))
    sizes = draw(st.lists(st.integers(1, 90), min_size=n_strata, max_size=n_strata))
    codes = np.repeat(np.arange(n_strata), sizes)
    order = draw(st.sampled_from(["shuffled", "grouped", "reversed"]))
    if order == "shuffled":
        codes = np.random.default_rng(draw(st.integers(0, 2**32 - 1))).permutation(codes)
    elif order == "reversed":
        codes = codes[::-1].copy()
    n_min, n_rows = min(sizes), sum(sizes)
    if draw(st.booleans()):
        policy = MinPerStratum(draw(st.integers(1, n_min)))
    else:
        m = draw(st.integers(1, 2))
        most = n_min // m
        if most == 0:
            policy = MinPerStratum(1)
        else:
            # a batch size FixedSize accepts: at most `most` batches (balanced sizes;
            # exact sizes' closed form: tests/policies/test_fixed_size_exact.py)
            policy = FixedSize(draw(st.integers(2 * n_rows // (2 * most + 1) + 1, n_rows + 5)), m,
                               sizes="balanced")
    return codes, policy


def plan_allowing_one_batch(labels, policy, **kwargs):
    """``plan_batches(..., allow_single_batch=True)``; when that plan is one batch, also check
    that without the opt-in the same call is refused with ``SingleBatchError``.

    For property tests whose strategies reach one-batch plans: the case is kept (its
    guarantees still checked on the allowed plan) and the guard is asserted, not filtered.
    """
    import pytest

    from pystratum import SingleBatchError, plan_batches

    plan = plan_batches(labels, policy, allow_single_batch=True, **kwargs)
    if plan.num_batches == 1:
        with pytest.raises(SingleBatchError):
            plan_batches(labels, policy, **kwargs)
    return plan


class Text(str):
    """A str subclass: equal to its str, but a label of its own type where it comes first."""


def equal_copy(text: str) -> str:
    """An equal str that is another object (CPython shares only the empty and 1-char ones)."""
    return (text + "!")[:-1]
