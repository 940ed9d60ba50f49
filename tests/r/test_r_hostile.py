"""Hostile strata through pystratum.r, compared with the Python core (issue 7).

Hypothesis generates bad or unusual inputs (dtypes, containers, shapes,
missing-value kinds, extreme values, encodings) and passes each one to both
``pystratum.stratified_batches(..., rng="R")`` and
``pystratum.r.stratified_batches`` (R, through rpy2). Allowed outcomes:

* both return batches: they are identical;
* both raise: the same exception type, and the bindings name ``strata``;
* only the bindings raise: a TypeError/ValueError naming ``strata`` whose
  message says what R cannot hold (R integers are 32-bit, R strings are
  UTF-8 text without NUL, one R vector holds one type).

The core accepting what the bindings' R code would refuse, or the reverse
without a reason, is a failure. The suite runs a derandomised slice (the "ci"
profile, for users and CI alike); for a longer random search run
``HYPOTHESIS_PROFILE=explore PYSTRATUM_HOSTILE_EXAMPLES=2000 pytest tests/r/test_r_hostile.py``.
"""

from __future__ import annotations

import collections
import os
import warnings

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import pystratum
import pystratum.r as pr
from _r_helpers import r_session  # noqa: F401 (fixture)

EXAMPLES = int(os.environ.get("PYSTRATUM_HOSTILE_EXAMPLES", "150"))
OUTCOMES: collections.Counter = collections.Counter()

# What the bindings may refuse although the core accepts: values R cannot hold.
R_LIMITS = ("R cannot hold", "R integers are signed 32-bit", "R strings", "one R vector",
            "R vectors have a single type", "not UTF-8", "not valid Unicode", "2**53",
            "R factor levels")

# Labels R holds exactly as the core sees them, and labels it cannot.
SCALARS = st.one_of(
    st.integers(-3, 3),
    st.sampled_from([2**31 - 1, -(2**31 - 1), 2**31, -(2**31), 2**53 + 1, 2**70]),
    st.sampled_from([0.0, -0.0, 0.5, 1e15, 1e300, float("inf"), float("-inf"), float("nan")]),
    st.sampled_from(["", "a", "b", "\u00e9", "e\u0301", "\u65e5", "a\x00", "\ud800", "NA"]),
    st.sampled_from([b"a", b"\xff", b"\xc3\xa9"]),
    st.booleans(),
    st.none(),
)


def _column(draw, n):
    kind = draw(st.sampled_from(["ints", "floats", "strings", "bools", "mixed", "int64",
                                 "uint64", "float32", "categorical", "Int64", "bytes",
                                 "datetime", "complex"]))
    small = st.integers(0, 2)
    if kind == "ints":
        return [draw(small) for _ in range(n)]
    if kind == "floats":
        values = st.sampled_from([0.0, -0.0, 1.5, float("inf"), float("-inf"), 1e15])
        return np.array([draw(values) for _ in range(n)] if n else [], dtype=float)
    if kind == "strings":
        return [draw(st.sampled_from(["a", "b", "\u00e9"])) for _ in range(n)]
    if kind == "bools":
        return np.array([draw(st.booleans()) for _ in range(n)], dtype=bool)
    if kind == "mixed":
        return np.array([draw(SCALARS) for _ in range(n)], dtype=object)
    if kind == "int64":
        values = st.sampled_from([0, 1, -(2**31 - 1), 2**31 - 1, 2**31, -(2**40)])
        return np.array([draw(values) for _ in range(n)], dtype=np.int64)
    if kind == "uint64":
        values = st.sampled_from([0, 1, 2**32, 2**64 - 1])
        return np.array([draw(values) for _ in range(n)], dtype=np.uint64)
    if kind == "float32":
        return np.array([draw(small) for _ in range(n)], dtype=np.float32)
    if kind == "categorical":
        return pd.Categorical([draw(st.sampled_from(["x", "y", None])) for _ in range(n)],
                              categories=["y", "x", "unused"])
    if kind == "Int64":
        return pd.array([draw(st.sampled_from([1, 2, None])) for _ in range(n)], dtype="Int64")
    if kind == "bytes":
        return np.array([draw(st.sampled_from([b"a", b"b", b"\xff"])) for _ in range(n)],
                        dtype="S1")
    if kind == "datetime":
        days = [draw(small) for _ in range(n)]
        return np.array(days, dtype="datetime64[D]")
    return np.array([complex(draw(small), draw(small)) for _ in range(n)], dtype=complex)


@st.composite
def hostile_strata(draw):
    n = draw(st.integers(0, 12))
    form = draw(st.sampled_from(["column", "column", "series", "tuple", "frame", "two_d",
                                 "scalar", "nested", "rows", "dict", "generator", "set",
                                 "array_3d"]))
    if form == "scalar":
        return draw(SCALARS)
    if form == "nested":
        return [[draw(st.integers(0, 1))] * draw(st.integers(1, 2)) for _ in range(n)]
    if form == "rows":
        return [(draw(st.integers(0, 1)), draw(st.sampled_from(["a", "b"]))) for _ in range(n)]
    if form == "dict":
        return {"a": [draw(st.integers(0, 1)) for _ in range(n)],
                "b": [draw(st.integers(0, 1)) for _ in range(n)]}
    if form == "generator":
        return (k % 2 for k in range(n))
    if form == "set":
        return set(range(n))
    if form == "array_3d":
        return np.zeros((n, 1, 2))
    column = _column(draw, n)
    if form == "series":
        return pd.Series(column)
    if form == "tuple":
        return tuple(np.asarray(column, dtype=object).tolist())
    if form == "frame":
        return pd.DataFrame({"y": column, "g": [k % 2 for k in range(n)]})
    if form == "two_d":
        return np.column_stack([np.asarray([k % 2 for k in range(n)]),
                                np.asarray([draw(st.integers(0, 1)) for _ in range(n)])])
    return column


def _outcome(function, strata, m, seed, **kwargs):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            # One batch allowed: hostile strata often make one (the guard has its own tests).
            return [b.tolist() for b in function(strata, m, seed=seed, allow_single_batch=True,
                                                 **kwargs)], None
        except (TypeError, ValueError) as error:
            return None, error


@settings(max_examples=EXAMPLES, suppress_health_check=[HealthCheck.too_slow,
                                                        HealthCheck.function_scoped_fixture])
@given(strata=hostile_strata(), m=st.integers(1, 3), seed=st.integers(-5, 5))
def test_bindings_agree_with_the_core_on_hostile_strata(r_session, strata, m, seed):  # noqa: F811
    if isinstance(strata, type(x for x in ())):
        # One-shot iterators are consumed by the first call: give each its own.
        n = len(list(strata))
        core_strata, r_strata = (k % 2 for k in range(n)), (k % 2 for k in range(n))
    else:
        core_strata = r_strata = strata
    core, core_error = _outcome(pystratum.stratified_batches, core_strata, m, seed, rng="R")
    ours, our_error = _outcome(pr.stratified_batches, r_strata, m, seed, rng="R")
    shown = f"strata={strata!r} m={m} seed={seed}"
    if core_error is None and our_error is None:
        OUTCOMES["same batches"] += 1
        assert ours == core, shown
        return
    if our_error is not None:
        assert getattr(our_error, "argument", None) == "strata", (shown, our_error)
    if core_error is not None and our_error is not None:
        OUTCOMES["same error type"] += 1
        assert type(our_error) is type(core_error), (shown, core_error, our_error)
        assert str(core_error).startswith("strata"), (shown, core_error)
        return
    assert core_error is None, f"{shown}: the core refused ({core_error}) but R accepted"
    OUTCOMES["R cannot hold"] += 1
    assert any(reason in str(our_error) for reason in R_LIMITS), (shown, our_error)


def test_hostile_outcomes_cover_every_kind():
    """Guards the generator: runs after the property (file order) and reports the tally."""
    if sum(OUTCOMES.values()) == 0:
        pytest.skip("run together with test_bindings_agree_with_the_core_on_hostile_strata")
    print(f"\nhostile strata through pystratum.r: {dict(OUTCOMES)}")
    assert OUTCOMES["same batches"] > 0 and OUTCOMES["same error type"] > 0
    assert OUTCOMES["R cannot hold"] > 0
