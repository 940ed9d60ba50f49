"""The reports of both languages (live R through rpy2): one per policy family, same numbers.

Python's ``BatchPlan.summary()`` and R's ``summary(batch_count_table(strata, batches,
policy))`` give the same headline (the policy's promise and how many batches keep
it) and the same records, for the same plan (``rng="R"``, same seed).
"""

from __future__ import annotations

import numpy as np
import pytest

from _r_helpers import r_function, r_session  # noqa: F401 (fixture)
from pystratum import plan_batches
from pystratum.engine._report import STRATA_SHOWN, WIDE_FROM
from pystratum.policies import ClassesPerBatch, FixedSize, MinPerStratum, MultiLabel, Targets

R_SUMMARY = """function(kind, codes, values, n_rows, seed) {
  policy = switch(kind,
    min = pystratum::policy_min_per_stratum(2),
    fixed = pystratum::policy_fixed_size(20),
    classes = pystratum::policy_classes_per_batch(3, 2),
    targets = pystratum::policy_targets("balanced", 9),
    labels = pystratum::policy_multi_label(batch_size = 9, min_per_label = 2))
  strata = if (kind == "labels") {
    as.data.frame(matrix(as.integer(values), nrow = n_rows, byrow = TRUE,
                         dimnames = list(NULL, c("a", "b", "c"))))
  } else {
    paste0("s", codes)
  }
  batches = pystratum::stratified_batches(strata, policy, seed = seed, rng = "R")
  result = summary(pystratum::batch_count_table(strata, batches, policy = policy))
  list(headline = result$headline, records = lapply(result$records, function(column) {
    if (is.numeric(column)) as.integer(column) else as.character(column) }))
}"""

CASES = {
    "min": MinPerStratum(2),
    "fixed": FixedSize(20),
    "classes": ClassesPerBatch(3, 2),
    "targets": Targets("balanced", 9),
    "labels": MultiLabel(batch_size=9, min_per_label=2),
}


def r_summary(session, kind, codes, values, n_rows, seed):
    call = r_function(session, R_SUMMARY)
    with session.calling():
        out = call(kind, session.ro.IntVector(codes.tolist()),
                   session.ro.IntVector(values.ravel().tolist()), n_rows, seed)
        records = out.rx2("records")
        columns = [list(records.rx2(name)) for name in records.names]
        return out.rx2("headline")[0], [tuple(row) for row in zip(*columns)]


@pytest.mark.parametrize("kind", sorted(CASES))
@pytest.mark.parametrize("seed", [1, 7, 2024])
def test_both_languages_report_the_same_headline_and_records(r_session, kind, seed):
    rng = np.random.default_rng(seed)
    codes = np.repeat(np.arange(9), rng.integers(6, 14, size=9))
    rng.shuffle(codes)
    values = (rng.random((80, 3)) < [0.5, 0.25, 0.12]).astype(np.int64)
    if kind == "labels":
        import pandas as pd

        strata = pd.DataFrame(values, columns=["a", "b", "c"])
    else:
        strata = np.array([f"s{c}" for c in codes])
    plan = plan_batches(strata, CASES[kind], seed=seed, rng="R")
    summary = plan.summary()
    headline, records = r_summary(r_session, kind, codes, values, values.shape[0], seed)
    assert headline == summary.headline
    assert records == [tuple(row) for row in summary.rows]


R_WIDE_TEXT = """function(kind, codes, values, n_rows, n_labels, seed) {
  policy = if (kind == "labels") pystratum::policy_multi_label(batch_size = 40) else
    pystratum::policy_min_per_stratum(1)
  strata = if (kind == "labels") {
    as.data.frame(matrix(as.integer(values), nrow = n_rows, byrow = TRUE,
                         dimnames = list(NULL, paste0("label", seq_len(n_labels) - 1L))))
  } else {
    paste0("s", codes)
  }
  batches = pystratum::stratified_batches(strata, policy, seed = seed, rng = "R")
  table = pystratum::batch_count_table(strata, batches, policy = policy)
  c(paste(utils::capture.output(print(table)), collapse = "\\n"),
    paste(utils::capture.output(print(summary(table))), collapse = "\\n"))
}"""


@pytest.mark.parametrize("kind", ["strata", "labels"])
def test_both_languages_print_the_same_compact_report_past_20_columns(r_session, kind):
    """Issue 32, item 4: past 20 strata (labels) both languages print the same lines:
    the least served strata, then "... and N more strata"."""
    rng = np.random.default_rng(8)
    codes = np.repeat(np.arange(300), rng.integers(3, 9, size=300))
    rng.shuffle(codes)
    n_labels = 25
    values = (rng.random((400, n_labels)) < np.linspace(0.08, 0.5, n_labels)).astype(np.int64)
    if kind == "labels":
        import pandas as pd

        strata = pd.DataFrame(values, columns=[f"label{k}" for k in range(n_labels)])
        policy = MultiLabel(batch_size=40)
    else:
        strata = np.array([f"s{c}" for c in codes])
        policy = MinPerStratum(1)
    plan = plan_batches(strata, policy, seed=3, rng="R")
    call = r_function(r_session, R_WIDE_TEXT)
    with r_session.calling():
        table, summary = list(call(kind, r_session.ro.IntVector(codes.tolist()),
                                   r_session.ro.IntVector(values.ravel().tolist()),
                                   values.shape[0], n_labels, 3))
    assert table == plan.counts_table()
    assert summary == str(plan.summary())
    noun = "labels" if kind == "labels" else "strata"
    assert table.splitlines()[-1] == f"... and {plan.counts.shape[1] - 10:,} more {noun}"


@pytest.mark.parametrize("extra", [0, 1])
def test_both_languages_turn_compact_past_the_same_number_of_strata(r_session, extra):
    """The two constants agree by value, not by comment: R's ``wide_from`` and
    ``strata_shown`` are Python's ``WIDE_FROM`` and ``STRATA_SHOWN``, and at exactly
    ``WIDE_FROM`` strata both print a column (a summary line) per stratum, one more and
    both print the same compact lines."""
    constants = r_function(r_session, "function() c(pystratum:::wide_from, "
                                      "pystratum:::strata_shown)")
    with r_session.calling():
        assert list(constants()) == [WIDE_FROM, STRATA_SHOWN]
    n_strata = WIDE_FROM + extra
    codes = np.repeat(np.arange(n_strata), 4)
    np.random.default_rng(9).shuffle(codes)
    plan = plan_batches(np.array([f"s{c}" for c in codes]), MinPerStratum(1), seed=3, rng="R")
    call = r_function(r_session, R_WIDE_TEXT)
    with r_session.calling():
        table, summary = list(call("strata", r_session.ro.IntVector(codes.tolist()),
                                   r_session.ro.IntVector([]), 0, 0, 3))
    if extra:
        assert table == plan.counts_table()
        assert summary == str(plan.summary())
        assert table.splitlines()[-1] == f"... and {n_strata - STRATA_SHOWN} more strata"
    else:
        # R's own matrix and data.frame prints: every stratum in the header, a line each.
        assert all(f"s{k}" in table for k in range(n_strata)) and "more strata" not in table
        assert len(summary.splitlines()) == len(str(plan.summary()).splitlines()) == 2 + n_strata


R_ODD_WIDE_TEXT = """function(strata, seed) {
  batches = pystratum::stratified_batches(strata, 1, seed = seed, rng = "R")
  table = pystratum::batch_count_table(strata, batches, policy = 1)
  c(paste(utils::capture.output(print(table)), collapse = "\\n"),
    paste(utils::capture.output(print(summary(table))), collapse = "\\n"))
}"""


def test_both_languages_quote_odd_labels_alike_in_the_compact_report(r_session):
    """An empty label, a line break, a tab, spaces at an end, the ", " of a list: quoted in
    both languages' compact table and summary, so each shown stratum is one line (R
    printed them raw: a blank cell and a broken line; Python's summary too)."""
    odd = ["", "a\nb", "c\td", " a", "a, b"]
    labels = odd + [f"s{k}" for k in range(20)]
    strata = np.repeat(np.array(labels, dtype=object), 4)
    np.random.default_rng(10).shuffle(strata)
    plan = plan_batches(strata, MinPerStratum(1), seed=3, rng="R")
    call = r_function(r_session, R_ODD_WIDE_TEXT)
    with r_session.calling():
        table, summary = list(call(r_session.ro.StrVector(strata.tolist()), 3))
    assert table == plan.counts_table()
    assert summary == str(plan.summary())
    quoted = ["''", "'a\\nb'", "'c\\td'", "' a'", "'a, b'"]
    shown = [line.rsplit(None, 4)[0].strip() for line in table.splitlines()[2:12]]
    assert set(quoted) <= set(shown)
    assert len(table.splitlines()) == 2 + 10 + 1
    assert len(summary.splitlines()) == 1 + 2 + 10 + 1
