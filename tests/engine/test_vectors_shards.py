"""The Python core against the shared shard-order vectors written by the R package.

Every case of ``tests/vectors/shards.json`` (R's ``stratified_batches(...,
shards =, window =)`` output, 1-based) must come out of
``pystratum.plan_batches(..., rng=, shards=, window=)`` (``"R"``, or
``"index"`` for the lazy plans) identically after the base shift, weights
included, and every expected error must be raised
with the same class and the argument's name leading the message (an error
of ``shard_sizes()`` counts: R raises it there too). The file is required: a
missing file fails here, it is not skipped.
"""

import re

import numpy as np
import pytest

import pystratum
from _vectors import (VectorFileMissing, load_cases, policy_from_case, scalar_from_json,
                      strata_from_json, zero_based)

VECTOR_FILE = "shards.json"

try:
    HEADER, CASES = load_cases(VECTOR_FILE)
    LOAD_ERROR = None
except VectorFileMissing as error:
    HEADER, CASES, LOAD_ERROR = None, [], str(error)

ERROR_CLASSES = {"type_error": TypeError, "value_error": ValueError}


def test_vector_file_is_present_and_covers_every_family():
    if LOAD_ERROR is not None:
        pytest.fail(LOAD_ERROR, pytrace=False)
    ids = [case["id"] for case in CASES]
    assert len(set(ids)) == len(ids), "case ids must be unique"
    served = {case["input"]["policy"]["name"] for case in CASES if "expected" in case}
    assert served >= {"min_per_stratum", "fixed_size", "targets", "downsample",
                      "classes_per_batch", "multi_label"}
    lazy = {case["input"]["policy"]["name"] for case in CASES
            if "expected" in case and case["input"]["rng"] == "index"}
    assert lazy >= {"min_per_stratum", "fixed_size", "targets"}
    refused = {case["expected_error"]["argument"] for case in CASES if "expected_error" in case}
    assert refused == {"shards", "window", "rng"}


def _column(spec):
    """A typed column of the file as the Python caller would pass it."""
    return strata_from_json({"columns": [spec]}, HEADER["index_base"])


def _call(case):
    """``(data, policy, keywords)``: what to pass to ``plan_batches``; the shards are built
    here, so that ``shard_sizes``'s own refusals happen inside the caller's check."""
    given = case["input"]
    if "labels" in given:
        data = np.array(given["labels"], dtype=np.int64)
    else:
        data = strata_from_json(given["strata"], HEADER["index_base"])
    shards = given["shards"]
    if shards is None:
        built = None
    elif "sizes" in shards:
        built = pystratum.shard_sizes(_column(shards["sizes"]))
    else:
        built = _column(shards["ids"])
    keywords = {name: scalar_from_json(given[name])
                for name in ("seed", "rng", "epoch", "shuffle", "window")}
    keywords["shards"] = built
    return data, policy_from_case(case), keywords


def _argument_leading(message: str):
    match = re.match(r"\s*([A-Za-z_][A-Za-z0-9_]*)", message)
    return match.group(1) if match else None


@pytest.mark.parametrize("case", CASES, ids=[str(case["id"]) for case in CASES])
def test_core_matches_vector(case):
    if "expected_error" in case:
        expected = case["expected_error"]
        with pytest.raises((TypeError, ValueError)) as raised:
            data, policy, keywords = _call(case)
            pystratum.plan_batches(data, policy, **keywords)
        assert isinstance(raised.value, ERROR_CLASSES[expected["class"]]), (
            f"{case['id']}: R raises {expected['class']}, Python raised "
            f"{type(raised.value).__name__}: {raised.value}")
        assert _argument_leading(str(raised.value)) == expected["argument"], (
            f"{case['id']}: R blames {expected['argument']!r}; Python's message does not "
            f"start with it: {raised.value}")
        return
    data, policy, keywords = _call(case)
    plan = pystratum.plan_batches(data, policy, **keywords)
    expected = zero_based(case["expected"]["batches"], HEADER["index_base"])
    assert len(plan.batches) == len(expected), (
        f"{case['id']}: {len(plan.batches)} batches, R has {len(expected)}")
    for k, (got, want) in enumerate(zip(plan.batches, expected)):
        np.testing.assert_array_equal(got, want, err_msg=f"{case['id']}: batch {k} differs")
    if "weights" in case["expected"]:
        want = [np.asarray(w, dtype=np.float64) for w in case["expected"]["weights"]]
        got = [plan.batch_weights(b) for b in range(len(plan))]
        for k, (g, w) in enumerate(zip(got, want)):
            np.testing.assert_allclose(g, w, rtol=1e-13, err_msg=f"{case['id']}: weights {k}")
    else:
        assert plan.weights is None, f"{case['id']}: Python has weights, R has none"
