"""pystratum.r._conditions: R's classed conditions as Python exceptions and warnings."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import pystratum
import pystratum.r as pr
from pystratum.r._conditions import raise_r_conditions
from _r_helpers import describe_in_r, r_function, r_session  # noqa: F401 (fixture)


def test_r_argument_errors_become_type_and_value_errors(r_session):
    # Checked in R (the Python core's type checks pass): R's classes travel along.
    with pytest.raises(ValueError, match="^seed must be") as raised:
        pr.stratified_batches([1, 2], 1, seed=3_000_000_000)
    assert raised.value.argument == "seed"
    assert "pystratum_value_error" in raised.value.r_classes
    with pytest.raises(ValueError, match="^epoch=3 has no effect since shuffle=FALSE") as raised:
        pr.stratified_batches([1, 2], 1, epoch=3, shuffle=False)
    assert raised.value.argument == "epoch"
    with pytest.raises(ValueError) as raised:
        pr.stratified_batches([1, 2], 1, seed=1, rng="numpy")
    assert raised.value.argument == "rng"
    assert "pystratum_value_error" in raised.value.r_classes
    with pytest.raises(ValueError, match="^rng must be one of") as raised:
        pr.stratified_batches([1, 2], 1, seed=1, rng=["R"])  # "R" to R, refused by the core
    assert raised.value.argument == "rng"


def test_other_r_errors_and_warnings(r_session):
    failing = r_function(r_session, "function() { warning('first'); stop('plain R failure') }")
    run = r_session.bridge("bridge_call_capturing")
    with r_session.localconverter(r_session.converter):
        outcome = run(failing, r_session.ro.r("list()"))
        with pytest.warns(pr.RWarning, match="first"):
            with pytest.raises(pr.RError, match="plain R failure") as raised:
                raise_r_conditions(outcome, stacklevel=1)
    assert isinstance(raised.value, RuntimeError)
    assert "simpleError" in raised.value.r_classes


def test_stratum_too_small_warning_is_re_emitted(r_session):
    with pytest.warns(pystratum.StratumTooSmallWarning, match="min_samples_per_stratum"):
        batches = pr.stratified_batches(["a", "b", "b", "b"], 2, seed=4, rng="R",
                                        allow_single_batch=True)
    assert len(batches) == 1 and sorted(batches[0].tolist()) == [0, 1, 2, 3]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        pr.stratified_batches(["a", "b", "b", "a"] * 2, 2, seed=4, rng="R")  # no warning at all


def test_a_single_batch_plan_is_refused_as_in_the_core(r_session):
    """R's refusal comes back as the core's: ValueError, the same argument leading both."""
    labels = [0] * 50 + [1] * 30 + [2]
    with pytest.raises(ValueError) as raised:
        pr.stratified_batches(labels, 1, seed=4, rng="R")
    assert raised.value.argument == "policy"
    assert str(raised.value).startswith("policy=policy_min_per_stratum(m = 1) gives a single "
                                        "batch holding all 81 rows")
    with pytest.raises(ValueError, match=r"^policy=MinPerStratum\(m=1\) gives a single batch"):
        pystratum.stratified_batches(labels, 1, seed=4, rng="R")
    indicators = [(1, 1, 1)] + [(0, 0, 1), (0, 1, 0), (1, 0, 0), (1, 1, 0)] * 5
    with pytest.raises(ValueError) as raised:
        pr.stratified_batches(indicators, 1, seed=4, rng="R")
    assert raised.value.argument == "strata" and "multi-label indicators" in str(raised.value)
    with pytest.raises(TypeError) as raised:
        pr.stratified_batches(labels, 1, seed=4, rng="R", allow_single_batch=1)
    assert raised.value.argument == "allow_single_batch"
    allowed = pr.stratified_batches(labels, 1, seed=4, rng="R", allow_single_batch=True)
    core = pystratum.stratified_batches(labels, 1, seed=4, rng="R", allow_single_batch=True)
    assert len(allowed) == 1 and np.array_equal(allowed[0], core[0])
