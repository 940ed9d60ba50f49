"""pystratum.r._from_r: an mlr3 task's stratum columns as a pandas DataFrame.

mlr3 is not installable here, so tasks are a minimal R6 stand-in with the
fields pystratum.r uses (``col_roles$stratum``, non-contiguous ``row_ids``,
``data(rows, cols)`` returning rows in the requested order).
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

import pystratum
import pystratum.r as pr
from _r_helpers import describe_in_r, r_function, r_session  # noqa: F401 (fixture)


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
    # Eight rows: one batch, allowed on both sides.
    ours = pystratum.stratified_batches(strata, 1, seed=8, rng="R", allow_single_batch=True)
    in_r = r_function(r_session, """function(task) pystratum::stratified_batches(
        task$data(rows = task$row_ids, cols = task$col_roles$stratum), 1, seed = 8,
        allow_single_batch = TRUE)""")
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

    with pytest.raises(ValueError, match="gives a single batch holding all 8 rows"):
        pr.sampler_from_r_task(tasks["one"], 2, seed=5, rng="R")
    sampler = pr.sampler_from_r_task(tasks["one"], 2, seed=5, rng="R", allow_single_batch=True)
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
    expected = pystratum.stratified_batches(labels, 2, seed=5, rng="R", allow_single_batch=True)
    assert len(sampler) == len(expected)




def test_strata_from_task_date_and_posixct_columns(r_session):
    # Issue 7 item 9: a Date column used to give a pandas length error.
    make = r_function(r_session, """function() list(
      col_roles = list(stratum = c("day", "when")), row_ids = c(2L, 1L, 3L),
      data = function(rows, cols) data.frame(
        day = as.Date(c(0, 1, 0), origin = "1970-01-01"),
        when = as.POSIXct(c(0, 0.5, 0), origin = "1970-01-01", tz = "UTC"),
        raw = as.raw(1:3))[rows, cols, drop = FALSE])""")
    with r_session.calling():
        task = make()
    strata = pr.strata_from_r_task(task)
    assert strata["day"].tolist() == [pd.Timestamp("1970-01-02"), pd.Timestamp("1970-01-01"),
                                      pd.Timestamp("1970-01-01")]
    assert strata["when"].tolist() == [pd.Timestamp("1970-01-01 00:00:00.5"),
                                       pd.Timestamp("1970-01-01"), pd.Timestamp("1970-01-01")]
    assert len(pystratum.stratified_batches(strata, 1, seed=1, allow_single_batch=True)) == 1
    with r_session.calling():
        r_session.ro.r("function(t) t")(task)  # the object stays usable
    raw_task = r_function(r_session, """function() list(
      col_roles = list(stratum = "raw"), row_ids = 1:2,
      data = function(rows, cols) data.frame(raw = as.raw(1:2))[rows, cols, drop = FALSE])""")
    with r_session.calling():
        raw_task = raw_task()
    with pytest.raises(TypeError, match="as.character"):
        pr.strata_from_r_task(raw_task)
