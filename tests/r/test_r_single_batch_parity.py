"""The single-batch guard says the same thing in Python and R (issue 19, part 3).

The same strata and policy go to the core and, through ``pystratum.r``, to
the R package; both refuse with the single-batch error class
(``SingleBatchError`` / ``pystratum_single_batch``) and, once each
language's names are swapped for the other's (policy constructors,
``True``/``TRUE``, the multi-label fix constant), with the same message.
"""

from __future__ import annotations

import re

import numpy as np
import pandas as pd
import pytest

import pystratum
import pystratum.r as pr
from pystratum.engine._single_batch import MULTI_LABEL_FIX
from pystratum.policies import ClassesPerBatch, FixedSize, MinPerStratum
from _r_helpers import r_session  # noqa: F401 (fixture)


def _indicators(n_rows=600, n_columns=6, seed=3):
    rng = np.random.default_rng(seed)
    return (rng.random((n_rows, n_columns)) < 0.15 + 0.1 * np.arange(n_columns)).astype(np.int64)


def _as_r(message: str, policy, r_policy: str, r_multi_label_fix: str) -> str:
    """The Python message in R's words."""
    message = message.replace(repr(policy), r_policy).replace(MULTI_LABEL_FIX, r_multi_label_fix)
    message = re.sub(r"MinPerStratum\((\d+)\)", r"policy_min_per_stratum(\1)", message)
    message = message.replace("FixedSize(batch_size)", "policy_fixed_size(batch_size)")
    return message.replace("allow_single_batch=True", "allow_single_batch = TRUE")


CASES = [
    pytest.param([0] * 5000 + [1] * 300 + [2], MinPerStratum(1),
                 "policy_min_per_stratum(m = 1)", id="issue-one-row-stratum"),
    pytest.param(["a"] * 40 + ["b"] * 9 + ["c"] * 5, MinPerStratum(3),
                 "policy_min_per_stratum(m = 3)", id="lower-m"),
    pytest.param(["a"] * 50 + ["b"] * 3, FixedSize(100),
                 "policy_fixed_size(batch_size = 100, min_per_stratum = 1, sizes = 'exact')",
                 id="batch-size-over-n"),
    pytest.param(_indicators(), MinPerStratum(1), "policy_min_per_stratum(m = 1)",
                 id="multi-label-matrix"),
    pytest.param(pd.DataFrame(_indicators(), columns=[f"label{j}" for j in range(6)]),
                 MinPerStratum(1), "policy_min_per_stratum(m = 1)", id="multi-label-frame"),
]


@pytest.mark.parametrize("strata, policy, r_policy", CASES)
def test_python_and_r_refuse_a_single_batch_with_the_same_message(r_session, strata, policy,
                                                                  r_policy):
    with pytest.raises(pystratum.SingleBatchError) as in_python:
        pystratum.stratified_batches(strata, policy, seed=1, rng="R")
    with pytest.raises(pystratum.SingleBatchError) as in_r:
        pr.stratified_batches(strata, policy, seed=1, rng="R")
    assert "pystratum_single_batch" in in_r.value.r_classes
    assert "pystratum_value_error" in in_r.value.r_classes
    r_fix = str(r_session.ro.r("pystratum:::multi_label_fix")[0])
    assert _as_r(str(in_python.value), policy, r_policy, r_fix) == str(in_r.value)


def test_the_multi_label_fix_names_each_languages_policy(r_session):
    assert "pystratum.policies.MultiLabel(batch_size=...)" in MULTI_LABEL_FIX
    r_fix = str(r_session.ro.r("pystratum:::multi_label_fix")[0])
    assert "policy_multi_label(batch_size = ...)" in r_fix
    assert (MULTI_LABEL_FIX.replace("pystratum.policies.MultiLabel(batch_size=...)",
                                    "policy_multi_label(batch_size = ...)") == r_fix)


def test_allowed_both_languages_give_the_same_single_batch(r_session):
    strata = ["a"] * 3 + ["b"] * 3
    policy = ClassesPerBatch(2, 3)  # one batch: both classes of 3 rows
    mine = pystratum.stratified_batches(strata, policy, seed=5, rng="index",
                                        allow_single_batch=True)
    theirs = pr.stratified_batches(strata, policy, seed=5, rng="index", allow_single_batch=True)
    assert len(mine) == 1
    assert [b.tolist() for b in mine] == [b.tolist() for b in theirs]
