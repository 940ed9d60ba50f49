"""The Python core against the shared batch vectors written by the R package.

Every case of ``tests/vectors/batches.json`` (R's ``stratified_batches``
output, 1-based) must come out of ``pystratum.stratified_batches(...,
rng="R")`` identically after the base shift, and every expected error must
be raised with the same class and the argument's name leading the message.
The file is required: a missing file fails here, it is not skipped.
"""

import re
import warnings

import numpy as np
import pytest

import pystratum
from _vectors import (VectorFileMissing, arguments_from_case, load_cases, policy_from_case,
                      zero_based)

VECTOR_FILE = "batches.json"

try:
    HEADER, CASES = load_cases(VECTOR_FILE)
    LOAD_ERROR = None
except VectorFileMissing as error:
    HEADER, CASES, LOAD_ERROR = None, [], str(error)

ERROR_CLASSES = {"type_error": TypeError, "value_error": ValueError,
                 "single_batch": pystratum.SingleBatchError}


def test_vector_file_is_present_and_not_empty():
    if LOAD_ERROR is not None:
        pytest.fail(LOAD_ERROR, pytrace=False)
    assert CASES, f"{VECTOR_FILE} holds no cases"
    ids = [case["id"] for case in CASES]
    assert len(set(ids)) == len(ids), "case ids must be unique"


def _argument_leading(message: str):
    match = re.match(r"\s*([A-Za-z_][A-Za-z0-9_]*)", message)
    return match.group(1) if match else None


@pytest.mark.parametrize("case", CASES, ids=[str(case["id"]) for case in CASES])
def test_core_matches_vector(case):
    index_base = HEADER["index_base"]
    strata, keywords = arguments_from_case(case, index_base)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        if "expected_error" in case:
            expected = case["expected_error"]
            error_class = ERROR_CLASSES[expected["class"]]
            with pytest.raises((TypeError, ValueError)) as raised:
                pystratum.stratified_batches(strata, policy_from_case(case), **keywords)
            assert type(raised.value) is error_class or isinstance(raised.value, error_class), (
                f"{case['id']}: R raises {expected['class']}, Python raised "
                f"{type(raised.value).__name__}: {raised.value}"
            )
            assert _argument_leading(str(raised.value)) == expected["argument"], (
                f"{case['id']}: R blames {expected['argument']!r}; Python's message does not "
                f"start with it: {raised.value}"
            )
            return
        plan = pystratum.plan_batches(strata, policy_from_case(case), **keywords)
        batches = plan.batches
    expected = zero_based(case["expected"]["batches"], index_base)
    if "weights" in case["expected"]:
        want = [np.asarray(w, dtype=np.float64) for w in case["expected"]["weights"]]
        got = [plan.batch_weights(b) for b in range(len(plan))]
        assert len(got) == len(want)
        for k, (g, w) in enumerate(zip(got, want)):
            np.testing.assert_allclose(g, w, rtol=1e-13, err_msg=f"{case['id']}: weights {k}")
    else:
        assert plan.weights is None, f"{case['id']}: Python has weights, R has none"
    assert len(batches) == len(expected), (
        f"{case['id']}: {len(batches)} batches, R has {len(expected)}"
    )
    for k, (got, want) in enumerate(zip(batches, expected)):
        np.testing.assert_array_equal(got, want, err_msg=f"{case['id']}: batch {k} differs")
    too_small = [w for w in caught if issubclass(w.category, pystratum.StratumTooSmallWarning)]
    if case.get("warning") == "stratum_too_small":
        assert too_small, f"{case['id']}: R warns stratum_too_small, Python did not"
    else:
        assert not too_small, f"{case['id']}: Python warned, R did not: {too_small[0].message}"
