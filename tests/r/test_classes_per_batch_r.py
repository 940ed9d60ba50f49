"""ClassesPerBatch in R (live, through rpy2): the same batches as the core for rng="R"."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from _r_helpers import r_function, r_session  # noqa: F401 (fixture)
from pystratum import plan_batches
from pystratum.policies import ClassesPerBatch, SmallStrataWarning


def r_batches(session, labels, p, k, small, seed, epoch, rng="R", classes="proportional",
              num_batches=None):
    call = r_function(session, """function(y, p, k, small, seed, epoch, rng, classes, length) {
      if (length == 0) length = NULL
      out = suppressWarnings(pystratum::stratified_batches(y,
        pystratum::policy_classes_per_batch(p, k, classes = classes, small = small,
          num_batches = length), seed = seed, epoch = epoch, rng = rng,
        allow_single_batch = TRUE))
      lapply(out, as.integer)
    }""")
    with session.calling():
        out = call(session.ro.IntVector(labels.tolist()), p, k, small, seed, epoch, rng, classes,
                   num_batches or 0)
        return [list(batch) for batch in out]


@settings(max_examples=40)
@given(sizes=st.lists(st.integers(1, 25), min_size=2, max_size=10), p=st.integers(1, 4),
       k=st.integers(1, 5), small=st.sampled_from(["drop", "repeat"]),
       seed=st.integers(0, 2**31 - 2), epoch=st.integers(0, 2),
       rng=st.sampled_from(["R", "index"]))
def test_r_gives_the_core_batches_plus_one(r_session, sizes, p, k, small, seed, epoch, rng):
    check_against_r(r_session, sizes, ClassesPerBatch(p, k, small=small), seed, epoch, rng)


def check_against_r(session, sizes, policy, seed, epoch, rng):
    """R's batches (from live R) are the core's plus one, when the strata can be served."""
    labels = np.random.default_rng(seed % 13).permutation(np.repeat(np.arange(len(sizes)), sizes))
    k = policy.per_class
    can_fill = len(sizes) if policy.small == "repeat" else sum(s >= k for s in sizes)
    if can_fill < policy.classes_per_batch:
        return
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", SmallStrataWarning)
        # One-batch plans are compared too (opted in on both sides).
        plan = plan_batches(labels, policy, seed=seed, rng=rng, epoch=epoch,
                            allow_single_batch=True)
    assert r_batches(session, labels, policy.classes_per_batch, k, policy.small, seed, epoch,
                     rng, policy.classes, policy.epoch_batches) == \
        [(batch + 1).tolist() for batch in plan.batches]


@settings(max_examples=40)
@given(sizes=st.lists(st.integers(1, 25), min_size=2, max_size=10), p=st.integers(1, 4),
       k=st.integers(1, 5), small=st.sampled_from(["drop", "repeat"]),
       seed=st.integers(0, 2**31 - 2), epoch=st.integers(0, 6),
       rng=st.sampled_from(["R", "index"]), length=st.sampled_from([None, 3, 17]))
def test_r_gives_the_core_uniform_batches_plus_one(r_session, sizes, p, k, small, seed, epoch,
                                                   rng, length):
    """classes='uniform': the passes, their reordered heads and the layout agree with R."""
    check_against_r(r_session, sizes, ClassesPerBatch(p, k, classes="uniform", small=small,
                                                      num_batches=length), seed, epoch, rng)


def test_r_refuses_like_python(r_session):
    call = r_function(r_session, """function() tryCatch(pystratum::stratified_batches(
      c(1, 1, 2, 2, 2, 3), pystratum::policy_classes_per_batch(2, 3), seed = 1),
      error = function(e) conditionMessage(e))""")
    with r_session.calling():
        message = str(call()[0])
    assert "2 stratum/strata have fewer" in message and "small='drop'" in message
    with pytest.raises(ValueError, match="2 stratum/strata have fewer"):
        plan_batches([1, 1, 2, 2, 2, 3], ClassesPerBatch(2, 3), seed=1, rng="R")


@pytest.mark.parametrize("p, k, small, length", [
    (0, 2, "error", None), (2, -1, "error", None), (2.5, 2, "error", None),
    (2, 2, "skip", None), ("2", 2, "error", None), (True, 2, "drop", None),
    (2, 2, "error", 0), (2, 2, "error", 2.5), (2, 2, "error", "3")])
def test_bad_parameters_fail_alike_in_r(r_session, p, k, small, length):
    with pytest.raises((TypeError, ValueError)) as raised:
        ClassesPerBatch(p, k, small=small, classes="uniform", num_batches=length)
    call = r_function(r_session, """function(p, k, small, length) tryCatch({
        if (identical(length, "none")) length = NULL
        pystratum::policy_classes_per_batch(p, k, classes = "uniform", small = small,
          num_batches = length); c("none", "")
      }, pystratum_error = function(e) c(class(e)[[1L]], e$argument))""")
    with r_session.calling():
        kind, argument = list(call(p, k, small, "none" if length is None else length))
    assert kind == {"TypeError": "pystratum_type_error",
                    "ValueError": "pystratum_value_error"}[type(raised.value).__name__]
    assert str(raised.value).startswith(argument)


@pytest.mark.parametrize("policy", [ClassesPerBatch(2, 4),
                                    ClassesPerBatch(2, 4, classes="uniform", num_batches=9)])
def test_pystratum_r_binding_gives_the_core_batches(r_session, policy):
    import pystratum.r as pr

    labels = np.random.default_rng(1).permutation(np.repeat(np.arange(6), [9, 5, 12, 8, 7, 10]))
    for epoch in range(3):
        ours = plan_batches(labels, policy, seed=5, rng="R", epoch=epoch).batches
        theirs = pr.stratified_batches(labels, policy, seed=5, rng="R", epoch=epoch)
        assert [b.tolist() for b in theirs] == [b.tolist() for b in ours]
