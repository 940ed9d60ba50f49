"""pystratum.r._to_r: Python values as R values, or an error saying why R cannot hold them."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

import pystratum
import pystratum.r as pr
from _r_helpers import describe_in_r, r_function, r_session  # noqa: F401 (fixture)


# ---------------------------------------------------------------------------
# Conversions.


def test_categorical_becomes_factor_with_same_levels(r_session):
    strata = pd.Categorical(["b", "a", "b", "c"], categories=["c", "b", "a", "unused"])
    seen = describe_in_r(r_session, strata)
    assert list(seen["class"]) == ["factor"]
    assert list(seen["levels"][0]) == ["c", "b", "a", "unused"]
    # pandas codes 0-based (b=1), R codes 1-based (b=2).
    assert list(seen["codes"][0]) == [2, 3, 2, 1]
    assert list(seen["text"][0]) == ["b", "a", "b", "c"]
    ordered = describe_in_r(r_session, pd.Categorical(["x", "y"], ordered=True))
    assert list(ordered["class"]) == ["ordered", "factor"]


@pytest.mark.parametrize("values,r_type", [
    (np.array([True, False, True]), "logical"),
    ([True, False], "logical"),
    (np.array([3, -7, 2**31 - 1], dtype=np.int64), "integer"),
    (np.array([1, 2], dtype=np.uint8), "integer"),
    ([1, 2, 3], "integer"),
    (np.array([0.5, 1.5]), "double"),
    (["a", "é", "日本", ""], "character"),
    (np.array(["x", "y"]), "character"),
    (pd.Series(["u", "v"], dtype="string"), "character"),
    (pd.Series([1, 2], dtype="Int64"), "integer"),
])
def test_column_types(r_session, values, r_type):
    seen = describe_in_r(r_session, values)
    assert list(seen["types"]) == [r_type]
    expected = [str(v).upper() if isinstance(v, (bool, np.bool_)) else
                (f"{v:g}" if isinstance(v, float) else str(v)) for v in list(values)]
    assert list(seen["text"][0]) == expected


def test_dataframe_becomes_data_frame(r_session):
    frame = pd.DataFrame({
        "y": pd.Categorical(["pos", "neg", "neg"]),
        "site": [1, 2, 1],
        "flag": [True, False, True],
        "name": ["a", "b", "c"],
    })
    seen = describe_in_r(r_session, frame)
    assert list(seen["class"]) == ["data.frame"]
    assert list(seen["names"]) == ["y", "site", "flag", "name"]
    assert int(seen["nrow"][0]) == 3
    assert list(seen["classes"]) == ["factor", "integer", "logical", "character"]



# ---------------------------------------------------------------------------
# Values R cannot hold.


@pytest.mark.parametrize("value", [2**31, -(2**31), 2**40])
def test_integer_labels_beyond_32_bits_fail_with_the_reason(r_session, value):
    with pytest.raises(ValueError, match="signed 32-bit") as raised:
        pr.stratified_batches(np.array([1, value, 1], dtype=np.int64), 1, seed=1)
    assert "row 1" in str(raised.value) and str(value) in str(raised.value)
    assert raised.value.argument == "strata"
    with pytest.raises(ValueError, match="NA_integer_"):
        pr.stratified_batches([1, value], 1, seed=1)  # Python ints, object path


def test_scalar_beyond_double_precision_fails_here(r_session):
    with pytest.raises(ValueError, match="2\\*\\*53") as raised:
        pr.stratified_batches([1, 2], 1, seed=2**53 + 1)
    assert raised.value.argument == "seed"


def test_seed_beyond_32_bits_reaches_r_as_a_double(r_session):
    # Not refused here: R gets 3e9 exactly as an R user would type it and says why.
    with pytest.raises(ValueError) as raised:
        pr.stratified_batches([1, 2], 1, seed=3_000_000_000)
    assert raised.value.argument == "seed"
    assert "3000000000" in str(raised.value) and "set.seed" in str(raised.value)


@pytest.mark.parametrize("strata", [
    np.array([1.0, np.nan, 2.0]),
    ["a", None, "b"],
    np.array(["a", np.nan, "b"], dtype=object),
    pd.Categorical(["a", None, "b"]),
    pd.Series([1, None, 2], dtype="Int64"),
    pd.DataFrame({"x": [1, 2, 3], "y": ["a", None, "b"]}),
])
def test_missing_labels_fail_saying_missing(r_session, strata):
    with pytest.raises(ValueError, match="missing value at row 1") as raised:
        pr.stratified_batches(strata, 1, seed=1)
    assert raised.value.argument == "strata"


def test_mixed_types_and_unconvertible_values(r_session):
    with pytest.raises(TypeError, match="single type"):
        pr.stratified_batches(np.array([1, "a"], dtype=object), 1, seed=1)
    with pytest.raises(ValueError, match="NUL"):
        pr.stratified_batches(["a\x00b", "c"], 1, seed=1)
    with pytest.raises(ValueError, match="distinct"):
        pr.stratified_batches(pd.Categorical([1, "1"]), 1, seed=1)
    with pytest.raises(ValueError, match="^rng must be one of") as raised:
        pr.stratified_batches([1, 2], 1, rng=object())  # the core's check, as in the core
    assert raised.value.argument == "rng"




# ---------------------------------------------------------------------------
# Forms and types: exactly the core's (issue 7 items 1, 4, 9).


def test_two_dimensional_inputs_become_data_frames(r_session):
    seen = describe_in_r(r_session, np.array([[1, 2], [3, 4], [5, 6]]))
    assert list(seen["names"]) == ["V1", "V2"] and int(seen["nrow"][0]) == 3
    single = describe_in_r(r_session, np.array([[1], [2], [3]]))
    assert list(single["class"]) == ["data.frame"] and int(single["nrow"][0]) == 3


def test_strata_forms_are_the_cores(r_session):
    # The core's splitter decides: whatever it refuses is refused here with
    # the same exception type and message, before R runs.
    for bad in ("Class", 3, 2.5, None, b"y", pd.DataFrame(index=range(4)),
                np.zeros((2, 2, 2))):
        with pytest.raises((TypeError, ValueError)) as in_core:
            pystratum.stratified_batches(bad, 1, seed=1, rng="R")
        with pytest.raises(type(in_core.value)) as here:
            pr.stratified_batches(bad, 1, seed=1)
        assert str(here.value) == str(in_core.value)
        assert here.value.argument == "strata"


def test_numpy_date_times_reach_r_as_text_that_keeps_them_apart(r_session):
    # Nanoseconds apart: R doubles of seconds could not keep them apart.
    times = np.array(["2020-01-01T00:00:00.000000001", "2020-01-01T00:00:00.000000002"] * 3,
                     dtype="datetime64[ns]")
    seen = describe_in_r(r_session, times)
    assert list(seen["types"]) == ["character"]
    assert len(set(seen["text"][0])) == 2
    got = pr.stratified_batches(times, 1, seed=2, rng="R")
    expected = pystratum.stratified_batches(times, 1, seed=2, rng="R")
    assert [b.tolist() for b in got] == [b.tolist() for b in expected]
    durations = np.array([1, 2, 1, 2], dtype="timedelta64[s]")
    assert len(pr.stratified_batches(durations, 1, seed=2, rng="R")) == 2
    with pytest.raises(ValueError, match="missing value at row 1") as raised:
        pr.stratified_batches(np.array(["2020-01-01", "NaT"], dtype="datetime64[D]"), 1)
    assert raised.value.argument == "strata"


def test_text_r_cannot_hold_names_strata_the_row_and_the_fix(r_session):
    for labels in (np.array([b"a", b"\xff"]), np.array([b"a", b"\xff"], dtype=object)):
        with pytest.raises(ValueError, match="not UTF-8 at row 1") as raised:
            pr.stratified_batches(labels, 1, seed=1)
        assert raised.value.argument == "strata" and "decode" in str(raised.value).lower()
    with pytest.raises(ValueError, match="not valid Unicode at row 0") as raised:
        pr.stratified_batches(["\ud800", "a"], 1, seed=1)
    assert raised.value.argument == "strata" and "surrogate" in str(raised.value)
    with pytest.raises(ValueError, match="not valid Unicode at row 1") as raised:
        pr.stratified_batches(np.array(["a", "\udcff"], dtype=object), 1, seed=1)
    assert raised.value.argument == "strata"
    with pytest.raises(ValueError, match="not valid Unicode") as raised:
        pr.stratified_batches(["a", "b"], 1, rng="\ud800")
    assert raised.value.argument == "rng"
    # UTF-8 bytes are text: the same batches as the same strings.
    utf8 = pr.stratified_batches(np.array([b"\xc3\xa9", b"a"] * 2), 1, seed=3, rng="R")
    text = pr.stratified_batches(["\u00e9", "a"] * 2, 1, seed=3, rng="R")
    assert [b.tolist() for b in utf8] == [b.tolist() for b in text]


def test_huge_integers_among_floats_are_not_merged(r_session):
    labels = np.array([2**53, 2**53 + 1, 0.5] * 2, dtype=object)
    with pytest.raises(ValueError, match=r"2\*\*53") as raised:
        pr.stratified_batches(labels, 1, seed=1)
    assert raised.value.argument == "strata"


@pytest.mark.parametrize("name,value", [
    ("epoch", 1.0), ("min_samples_per_stratum", 2.0), ("seed", 3.0), ("shuffle", 1),
    ("min_samples_per_stratum", True),
])
def test_python_types_the_core_refuses_are_refused_here(r_session, name, value):
    # R would take a whole double (in R, epoch = 1 is a double); the core does not.
    arguments = {"strata": [1, 2], "min_samples_per_stratum": 1, "seed": 1, name: value}
    with pytest.raises(TypeError) as in_core:
        pystratum.stratified_batches(rng="R", **arguments)
    with pytest.raises(TypeError) as here:
        pr.stratified_batches(**arguments)
    assert str(here.value).startswith(f"{name} must be") and str(in_core.value).startswith(
        f"{name} must be")
    assert here.value.argument == name
