"""pystratum.r: conversions, index bases, error and warning mapping, mlr3 tasks.

Needs R, rpy2 and the R package (CI installs them): without them these tests
FAIL with the install command. mlr3 is not installable here, so tasks are a
minimal R6 stand-in with the fields pystratum.r uses (``col_roles$stratum``,
non-contiguous ``row_ids``, ``data(rows, cols)`` returning rows in the
requested order).
"""

from __future__ import annotations

import os
import subprocess
import sys
import warnings

import numpy as np
import pandas as pd
import pytest

import pystratum
import pystratum.r as pr


@pytest.fixture(scope="module")
def r_session():
    try:
        return pr._session()
    except (ImportError, RuntimeError) as error:
        pytest.fail(f"pystratum.r tests need R, rpy2 and the R package: {error}", pytrace=False)


def r_function(session, code):
    with session.localconverter(session.converter):
        return session.ro.r(code)


def describe_in_r(session, value):
    """What R sees for a Python value passed as strata: class, type, levels, names, values."""
    describe = r_function(session, """function(x) {
      cols = if (is.data.frame(x)) as.list(x) else list(x)
      list(class = class(x), names = if (is.data.frame(x)) names(x) else character(0),
           nrow = if (is.data.frame(x)) nrow(x) else length(x),
           types = vapply(cols, typeof, ""), classes = vapply(cols, function(c) class(c)[1], ""),
           levels = lapply(cols, function(c) if (is.factor(c)) levels(c) else character(0)),
           text = lapply(cols, function(c) as.character(c)),
           codes = lapply(cols, function(c) if (is.factor(c)) as.integer(c) else integer(0)))
    }""")
    with session.localconverter(session.converter):
        out = describe(pr._strata_to_r(session.ri, value))
        return {name: out.rx2(name) for name in out.names}


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


def test_two_dimensional_inputs_become_data_frames(r_session):
    seen = describe_in_r(r_session, np.array([[1, 2], [3, 4], [5, 6]]))
    assert list(seen["names"]) == ["V1", "V2"] and int(seen["nrow"][0]) == 3
    seen = describe_in_r(r_session, [np.array(["a", "b"]), np.array([1, 2])])
    assert list(seen["classes"]) == ["character", "integer"]
    zero_columns = describe_in_r(r_session, pd.DataFrame(index=range(4)))
    assert list(zero_columns["class"]) == ["data.frame"] and int(zero_columns["nrow"][0]) == 4


def test_batches_are_zero_based_int64(r_session):
    # REFERENCE.md section 1: 111 "M" then 12 "R", m = 1, no shuffle: the first
    # batch is R rows 1:9 and 112, i.e. Python positions 0..8 and 111.
    strata = ["M"] * 111 + ["R"] * 12
    batches = pr.stratified_batches(strata, 1, shuffle=False)
    assert len(batches) == 12
    assert all(b.dtype == np.int64 for b in batches)
    np.testing.assert_array_equal(batches[0], np.r_[0:9, 111])
    direct = r_function(
        r_session, "function(y) pystratum::stratified_batches(y, 1, shuffle = FALSE)")
    with r_session.localconverter(r_session.converter):
        r_first = np.asarray(direct(r_session.ri.StrSexpVector(strata))[0])
    np.testing.assert_array_equal(batches[0] + 1, r_first)
    assert sorted(np.concatenate(batches).tolist()) == list(range(123))


def test_same_batches_as_core_through_each_container(r_session):
    labels = np.repeat(["a", "b", "c"], [40, 25, 9])
    for strata in (labels, list(labels), pd.Series(labels), pd.Categorical(labels),
                   pd.DataFrame({"y": labels}), [labels]):
        got = pr.stratified_batches(strata, 3, seed=-17, epoch=1)
        expected = pystratum.stratified_batches(labels, 3, seed=-17, epoch=1, rng="R")
        assert len(got) == len(expected) == 3
        for g, e in zip(got, expected):
            np.testing.assert_array_equal(g, e)


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
    with pytest.raises(TypeError, match="date-time"):
        pr.stratified_batches(pd.to_datetime(["2020-01-01", "2020-01-02"]).to_numpy(), 1, seed=1)
    with pytest.raises(ValueError, match="NUL"):
        pr.stratified_batches(["a\x00b", "c"], 1, seed=1)
    with pytest.raises(ValueError, match="distinct"):
        pr.stratified_batches(pd.Categorical([1, "1"]), 1, seed=1)
    with pytest.raises(TypeError, match="cannot be passed to R") as raised:
        pr.stratified_batches([1, 2], object())
    assert raised.value.argument == "min_samples_per_stratum"


# ---------------------------------------------------------------------------
# R's conditions in Python.


def test_r_argument_errors_become_type_and_value_errors(r_session):
    with pytest.raises(ValueError, match="^min_samples_per_stratum must be") as raised:
        pr.stratified_batches([1, 2], 0)
    assert raised.value.argument == "min_samples_per_stratum"
    assert "pystratum_value_error" in raised.value.r_classes
    with pytest.raises(TypeError, match="^epoch must be") as raised:
        pr.stratified_batches([1, 2], 1, seed=1, epoch=1.5)
    assert raised.value.argument == "epoch"
    with pytest.raises(ValueError) as raised:
        pr.stratified_batches([1, 2], 1, seed=1, rng="numpy")
    assert raised.value.argument == "rng"


def test_other_r_errors_and_warnings(r_session):
    failing = r_function(r_session, "function() { warning('first'); stop('plain R failure') }")
    run = r_session.helper("call_capturing")
    with r_session.localconverter(r_session.converter):
        outcome = run(failing, r_session.ro.r("list()"))
        with pytest.warns(pr.RWarning, match="first"):
            with pytest.raises(pr.RError, match="plain R failure") as raised:
                pr._raise_r_conditions(outcome, stacklevel=1)
    assert isinstance(raised.value, RuntimeError)
    assert "simpleError" in raised.value.r_classes


def test_stratum_too_small_warning_is_re_emitted(r_session):
    with pytest.warns(pystratum.StratumTooSmallWarning, match="min_samples_per_stratum"):
        batches = pr.stratified_batches(["a", "b", "b", "b"], 2, seed=4)
    assert len(batches) == 1 and sorted(batches[0].tolist()) == [0, 1, 2, 3]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        pr.stratified_batches(["a", "b", "b", "a"], 2, seed=4)  # no warning at all


@pytest.mark.filterwarnings("ignore:The global conversion:DeprecationWarning")
def test_results_ignore_globally_activated_converters(r_session):
    from rpy2.robjects import numpy2ri

    numpy2ri.activate()
    try:
        batches = pr.stratified_batches(np.array([0, 1] * 5), 1, seed=3)
    finally:
        numpy2ri.deactivate()
    assert len(batches) == 5 and all(isinstance(b, np.ndarray) for b in batches)


# ---------------------------------------------------------------------------
# R's torch sampler.


def test_batch_sampler_needs_r_torch(r_session):
    if pr.r_package_available("torch"):
        sampler = pr.batch_sampler_stratified(2, seed=1)
        assert sampler is not None
        return
    with pytest.raises(pr.RError, match="torch") as raised:
        pr.batch_sampler_stratified(2, seed=1)
    assert "install.packages" in str(raised.value)


def test_batch_sampler_validates_arguments_in_r(r_session):
    with pytest.raises((TypeError, ValueError)) as raised:
        pr.batch_sampler_stratified(0)
    assert raised.value.argument == "min_samples_per_stratum"


# ---------------------------------------------------------------------------
# mlr3 tasks (an R6 stand-in: mlr3 is not installable here).

FAKE_TASK = r"""
local({
  FakeTask = R6::R6Class("FakeTask",
    public = list(
      col_roles = NULL,
      backend = NULL,
      row_ids = NULL,
      initialize = function(backend, row_ids, stratum) {
        self$backend = backend
        self$row_ids = row_ids
        self$col_roles = list(feature = setdiff(names(backend), c("..row_id", stratum)),
                              target = character(0), stratum = stratum)
      },
      # Like mlr3's Task$data(): rows are row ids, returned in the order asked.
      data = function(rows = NULL, cols = NULL) {
        if (is.null(rows)) rows = self$row_ids
        if (is.null(cols)) cols = setdiff(names(self$backend), "..row_id")
        self$backend[match(rows, self$backend$..row_id), cols, drop = FALSE]
      }
    )
  )
  # Backend rows stored in an order unrelated to row_ids; ids non-contiguous.
  backend = data.frame(
    ..row_id = c(50L, 3L, 17L, 8L, 99L, 23L, 4L, 61L),
    y = factor(c("neg", "pos", "neg", "neg", "pos", "neg", "pos", "neg"), levels = c("pos", "neg")),
    site = c(2L, 1L, 1L, 2L, 2L, 1L, 2L, 1L),
    flag = c(TRUE, FALSE, TRUE, TRUE, FALSE, FALSE, TRUE, TRUE),
    x = seq(0.5, 4, by = 0.5)
  )
  row_ids = c(3L, 4L, 8L, 17L, 23L, 50L, 61L, 99L)
  list(
    two = FakeTask$new(backend, row_ids, c("y", "site")),
    one = FakeTask$new(backend, row_ids, "y"),
    none = FakeTask$new(backend, row_ids, character(0)),
    subset = FakeTask$new(backend, c(99L, 3L, 50L, 61L), "flag"),
    with_na = FakeTask$new(transform(backend, site = replace(site, 3L, NA)), row_ids, "site")
  )
})
"""


@pytest.fixture(scope="module")
def tasks(r_session):
    if not r_session.has_package("R6"):
        pytest.fail("the fake mlr3 task needs R's R6 package: apt-get install r-cran-r6",
                    pytrace=False)
    with r_session.localconverter(r_session.converter):
        made = r_session.ro.r(FAKE_TASK)
        return {name: made.rx2(name) for name in made.names}


def test_strata_from_task_follow_row_ids_order(tasks):
    strata = pr.strata_from_r_task(tasks["two"])
    # row_ids 3, 4, 8, 17, 23, 50, 61, 99 looked up in the backend:
    assert list(strata.columns) == ["y", "site"]
    assert list(strata["y"]) == ["pos", "pos", "neg", "neg", "neg", "neg", "neg", "pos"]
    assert list(strata["y"].cat.categories) == ["pos", "neg"]
    assert list(strata["site"]) == [1, 2, 2, 1, 1, 2, 1, 2]
    assert strata["site"].dtype == np.int64
    assert list(strata.index) == list(range(8))
    subset = pr.strata_from_r_task(tasks["subset"])
    assert list(subset["flag"]) == [False, False, True, True]  # ids 99, 3, 50, 61


def test_strata_from_task_give_the_batches_r_gives_for_the_task_data(r_session, tasks):
    strata = pr.strata_from_r_task(tasks["two"])
    ours = pystratum.stratified_batches(strata, 1, seed=8, rng="R")
    in_r = r_function(r_session, """function(task) pystratum::stratified_batches(
        task$data(rows = task$row_ids, cols = task$col_roles$stratum), 1, seed = 8)""")
    with r_session.localconverter(r_session.converter):
        r_batches = [np.asarray(b) - 1 for b in in_r(tasks["two"])]
    assert len(ours) == len(r_batches)
    for a, b in zip(ours, r_batches):
        np.testing.assert_array_equal(a, b)


def test_strata_from_task_errors(r_session, tasks):
    with pytest.raises(TypeError, match="rpy2 object"):
        pr.strata_from_r_task("task")
    with r_session.localconverter(r_session.converter):
        not_a_task = r_session.ro.r("list(col_roles = list(stratum = 'y'), row_ids = 1:3)")
    with pytest.raises(pr.RError):
        pr.strata_from_r_task(not_a_task)  # no data() method
    with pytest.raises(ValueError, match="col_roles\\$stratum is empty"):
        pr.strata_from_r_task(tasks["none"])
    with pytest.raises(ValueError, match="missing value \\(NA\\) at position 3"):
        # site NA at backend row 3 (row id 17) = position 3 in row_ids order.
        pr.strata_from_r_task(tasks["with_na"])


def test_sampler_from_task_drives_a_dataloader(tasks):
    import torch
    from torch.utils.data import DataLoader, TensorDataset

    sampler = pr.sampler_from_r_task(tasks["one"], 2, seed=5, rng="R")
    labels = pr.strata_from_r_task(tasks["one"])["y"].to_numpy()
    dataset = TensorDataset(torch.arange(len(labels)))
    loader = DataLoader(dataset, batch_sampler=sampler)
    seen = []
    for (rows,) in loader:
        rows = rows.numpy()
        seen.extend(rows.tolist())
        counts = pd.Series(labels[rows]).value_counts()
        assert counts.get("pos", 0) >= 1 and counts.get("neg", 0) >= 2
    assert sorted(seen) == list(range(8))
    expected = pystratum.stratified_batches(labels, 2, seed=5, rng="R")
    assert len(sampler) == len(expected)


# ---------------------------------------------------------------------------
# Import behaviour and install messages (fresh interpreters).


def _run_python(code):
    env = dict(os.environ)
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          env=env, timeout=120)


def test_importing_pystratum_never_imports_rpy2():
    done = _run_python(
        "import sys, pystratum, pystratum.r\n"
        "assert 'rpy2' not in sys.modules, 'rpy2 imported eagerly'\n"
        "print('ok')"
    )
    assert done.returncode == 0 and "ok" in done.stdout, done.stderr


def test_missing_rpy2_names_the_install_command():
    done = _run_python(
        "import sys; sys.modules['rpy2'] = None\n"
        "import pystratum.r as pr\n"
        "try:\n    pr.stratified_batches([1, 2], 1)\n"
        "except ImportError as error:\n    print(error)\n"
    )
    assert "pip install 'pystratum[r]'" in done.stdout, done.stdout + done.stderr


def test_r_that_cannot_start_names_the_install_command():
    done = _run_python(
        "import sys; import rpy2; sys.modules['rpy2.rinterface'] = None\n"
        "import pystratum.r as pr\n"
        "try:\n    pr.stratified_batches([1, 2], 1)\n"
        "except RuntimeError as error:\n    print(error)\n"
    )
    assert "apt-get install r-base-core r-base-dev" in done.stdout, done.stdout + done.stderr


def test_missing_r_package_names_the_install_command(r_session, monkeypatch):
    monkeypatch.setattr(r_session, "package_checked", False)
    monkeypatch.setattr(r_session, "has_package", lambda name: False)
    with pytest.raises(RuntimeError, match="R CMD INSTALL r"):
        pr.stratified_batches([1, 2], 1)
