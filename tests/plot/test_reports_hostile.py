"""The per-policy reports (issue 32 item 4) as a demanding user meets them: every policy
family, one class, 10^4 classes, empty batches, labels with odd names (unicode, very long,
empty, numbers, line breaks, a leading underscore), and R's ``batch_count_table()`` on the
same plans through rpy2 (the same headline and records).

``hypothesis.event`` counts the inputs and outcomes (``--hypothesis-show-statistics``).
"""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import pytest
from hypothesis import event, given, settings
from hypothesis import strategies as st

from _r_helpers import r_function, r_session  # noqa: F401 (fixture)
from pystratum import plan_batches
from pystratum.plot import batch_counts, plot_counts, plot_distribution
from pystratum.policies import (ClassesPerBatch, Downsample, FixedSize, MinPerStratum,
                                MultiLabel, Targets)
from pystratum.r import _to_r
from pystratum.strata._labels import label_text, shown_label

import matplotlib  # noqa: E402  (the 'plot' extra is part of the test set-up)

matplotlib.use("Agg")

odd_text = st.one_of(
    st.sampled_from(["", " ", "_a", "_nolegend_", "a\nb", "c\td", "x" * 300, "1", "10", "-2",
                     "1.5", "a, b", "a/b", "\u00fc", "\u65e5\u672c", "e\u0301", "\U0001F600",
                     "NA", "None", "nan"]),
    st.text(min_size=0, max_size=6),
)
odd_label_sets = st.one_of(
    st.lists(odd_text, min_size=1, max_size=6, unique=True),
    st.lists(st.integers(-10**18, 10**18), min_size=1, max_size=6, unique=True),
    st.just([True, False]),
)
FAMILIES = {
    "min": lambda labels: MinPerStratum(1),
    "fixed": lambda labels: FixedSize(8),
    "targets": lambda labels: Targets("balanced", 6),
    "downsample": lambda labels: Downsample({labels[0]: 0.5}, MinPerStratum(1)),
    "classes": lambda labels: ClassesPerBatch(min(2, len(labels)), 2),
}


def _plan(labels, family, sizes):
    strata = np.repeat(np.array(labels, dtype=object), sizes)
    np.random.default_rng(len(sizes)).shuffle(strata)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return plan_batches(strata, FAMILIES[family](labels), seed=1,
                            allow_single_batch=True)


def _legend_texts(ax):
    legend = ax.get_legend()
    return [] if legend is None else [text.get_text() for text in legend.get_texts()]


@settings(max_examples=60)
@given(labels=odd_label_sets, family=st.sampled_from(sorted(FAMILIES)), data=st.data())
def test_every_family_reports_odd_labels_whole_and_readable(labels, family, data):
    sizes = data.draw(st.lists(st.integers(4, 12), min_size=len(labels),
                               max_size=len(labels)), "sizes")
    try:
        plan = _plan(labels, family, sizes)
    except (TypeError, ValueError) as error:
        # Labels the core refuses (e.g. a missing value's spelling) are refused by name.
        assert str(error).startswith(("strata", "shares", "keep", "batch_size")), error
        event(f"{family}: plan refused")
        return
    summary = plan.summary()
    table = plan.counts_table(max_rows=None).splitlines()
    # One line per batch and a header: no label breaks the table's lines.
    assert len(table) == plan.num_batches + 1
    figure_ax = plan.plot()
    if family == "classes":
        assert summary.family == "classes"
        assert sum(row[1] for row in summary.rows) == len(plan.strata)
        for b, line in enumerate(table[1:]):
            assert line.split(None, 1)[1] == ", ".join(shown_label(plan.strata[s])
                                                       for s in plan.batch_strata[b])
    else:
        assert [row[0] for row in summary.rows] == [label_text(s) for s in plan.strata]
        assert [row[1] for row in summary.rows] == plan.counts.sum(axis=0).tolist()
        header = table[0].split("  ")
        shown = [cell.strip() for cell in header if cell.strip()]
        # Every stratum has its own visible column (an empty label is quoted, not blank).
        assert shown == ["batch"] + [shown_label(s) for s in plan.strata] + ["total"]
        legend = _legend_texts(figure_ax)
        assert legend[:len(plan.strata)] == [shown_label(s) for s in plan.strata]
    assert figure_ax.get_title(loc="left").endswith(summary.headline)
    event(f"{family}: reported")
    event(f"labels quoted: {any(shown_label(s) != label_text(s) for s in plan.strata)}")


def test_a_stratum_named_with_a_leading_underscore_keeps_its_legend_entry():
    labels = np.repeat(["_a", "b", "_nolegend_"], 10)
    ax = plan_batches(labels, MinPerStratum(1), seed=1).plot()
    assert _legend_texts(ax) == ["_a", "_nolegend_", "b"]
    ax = plot_counts(np.array([[1, 0], [2, 2]]), ["_x", "y"])
    assert _legend_texts(ax)[:2] == ["_x", "y"]


def test_an_empty_or_multi_line_label_stays_visible_in_the_table():
    labels = np.repeat(["", "a\nb", "c"], 6)
    plan = plan_batches(labels, MinPerStratum(1), seed=1)
    lines = plan.counts_table(max_rows=None).splitlines()
    assert len(lines) == plan.num_batches + 1
    assert lines[0].split() == ["batch", "''", "'a\\nb'", "c", "total"]
    classes = plan_batches(np.repeat(["", "a, b", "c"], 4), ClassesPerBatch(2, 2), seed=1)
    for b, line in enumerate(classes.counts_table(max_rows=None).splitlines()[1:]):
        names = [classes.strata[s] for s in classes.batch_strata[b]]
        # A label holding the list's separator is quoted: two classes read as two names.
        assert line.split(None, 1)[1] == ", ".join({"": "''", "a, b": "'a, b'"}.get(n, n)
                                                   for n in names)


@settings(max_examples=40)
@given(names=st.lists(odd_text, min_size=1, max_size=4, unique=True),
       rate=st.sampled_from([0.0, 0.2, 0.6]))
def test_label_reports_of_odd_label_names(names, rate):
    values = (np.random.default_rng(len(names)).random((40, len(names))) < rate).astype(int)
    frame = pd.DataFrame(values, columns=names)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            plan = plan_batches(frame, MultiLabel(batch_size=8), seed=1)
        except (TypeError, ValueError) as error:
            assert str(error).startswith("strata"), error
            event("plan refused")
            return
    summary = plan.summary()
    assert summary.family == "labels"
    assert [row[0] for row in summary.rows] == names
    assert [row[1] for row in summary.rows] == values.sum(axis=0).tolist()
    assert len(plan.counts_table(max_rows=None).splitlines()) == plan.num_batches + 1
    legend = _legend_texts(plan.plot())
    assert legend[:len(names)] == [shown_label(n) for n in names]
    event(f"labels short: {'short' in summary.headline}")


@pytest.mark.parametrize("family", ["min", "classes", "fixed"])
def test_ten_thousand_classes_report_in_every_family(family):
    labels = np.repeat(np.arange(10**4), 4)
    policy = {"min": MinPerStratum(1), "classes": ClassesPerBatch(8, 4),
              "fixed": FixedSize(10**4)}[family]
    plan = plan_batches(labels, policy, seed=1)
    summary = plan.summary()
    if family == "classes":
        assert summary.rows == ((1, 10**4, 4),)
        assert max(len(line) for line in plan.counts_table().splitlines()) < 80
    else:
        assert len(summary.rows) == 10**4
        assert [row[1] for row in summary.rows] == [4] * 10**4
    ax = plan.plot()
    assert len(_legend_texts(ax)) <= 8  # the largest 7 and "other", never 10^4 entries


def test_empty_batches_count_as_batches_missing_every_stratum():
    labels = np.repeat(["a", "b", ""], 5)
    batches = [[0, 5, 10], [], [1, 2, 3, 4, 6], [7, 8, 9, 11, 12, 13, 14]]
    counts, names = batch_counts(labels, batches)[:2]
    assert counts.tolist() == [[1, 1, 1], [0, 0, 0], [0, 4, 1], [4, 0, 3]]
    ax = plot_counts(counts, names)
    assert ax.get_title(loc="left") == "3 of 4 batches miss a stratum"
    assert _legend_texts(ax)[:3] == ["''", "a", "b"]


# --- R's batch_count_table() on the same plans ----------------------------------------

# Strata (a vector) or, for kind "labels", a label data.frame.
R_SUMMARY = """function(kind, strata, seed) {
  policy = switch(kind,
    min = pystratum::policy_min_per_stratum(1),
    fixed = pystratum::policy_fixed_size(8),
    classes = pystratum::policy_classes_per_batch(2, 2),
    targets = pystratum::policy_targets("balanced", 8),
    labels = pystratum::policy_multi_label(batch_size = 8))
  batches = pystratum::stratified_batches(strata, policy, seed = seed, rng = "R")
  result = summary(pystratum::batch_count_table(strata, batches, policy = policy))
  list(headline = result$headline, records = lapply(result$records, function(column) {
    if (is.numeric(column)) as.integer(column) else as.character(column) }))
}"""
R_PLAIN_HEADLINE = """function(strata, batches) {
  summary(pystratum::batch_count_table(strata, batches))$headline
}"""
PY_POLICIES = {"min": MinPerStratum(1), "fixed": FixedSize(8),
               "classes": ClassesPerBatch(2, 2), "targets": Targets("balanced", 8)}
ODD_SETS = {
    "unicode": ["\u00fc", "\u65e5\u672c", "e\u0301", "\U0001F600"],
    "long": ["x" * 300, "y" * 300],
    "numeric": ["1", "10", "2", "-3"],
    "empty": ["", "a", "b"],
    "spaces": [" a", "a ", "a b"],
    "slash": ["a/b", "a", "b"],
    "one": ["only"],
}


def _assert_r_summary_is_pythons(session, kind, strata_in_r, plan):
    """R's ``summary(batch_count_table())`` of the same plan (``kind``'s policy, the plan's
    seed, ``rng = "R"``) has Python's headline and records."""
    call = r_function(session, R_SUMMARY)
    with session.calling():
        out = call(kind, strata_in_r, plan.seed)
        records = out.rx2("records")
        columns = [list(records.rx2(name)) for name in records.names]
        headline = out.rx2("headline")[0]
    summary = plan.summary()
    assert headline == summary.headline
    assert [tuple(row) for row in zip(*columns)] == [tuple(row) for row in summary.rows]


@pytest.mark.parametrize("name, kind", [(name, kind) for name in sorted(ODD_SETS)
                                         for kind in sorted(PY_POLICIES)
                                         if len(ODD_SETS[name]) > 1 or kind != "classes"])
def test_r_reports_odd_labels_with_the_same_numbers(r_session, name, kind):
    labels = ODD_SETS[name]
    strata = np.repeat(labels, 12)
    np.random.default_rng(0).shuffle(strata)
    plan = plan_batches(strata, PY_POLICIES[kind], seed=3, rng="R", allow_single_batch=True)
    _assert_r_summary_is_pythons(r_session, kind, r_session.ro.StrVector(strata.tolist()), plan)


@pytest.mark.parametrize("kind", ["min", "classes"])
def test_r_reports_ten_thousand_classes_with_the_same_numbers(r_session, kind):
    strata = np.array([f"c{i}" for i in np.repeat(np.arange(10**4), 4)])
    np.random.default_rng(1).shuffle(strata)
    plan = plan_batches(strata, PY_POLICIES[kind], seed=3, rng="R")
    _assert_r_summary_is_pythons(r_session, kind, r_session.ro.StrVector(strata.tolist()), plan)


@pytest.mark.parametrize("names", [["\u00fc", "\u65e5\u672c", "x" * 200], ["1", "2", "10"],
                                   ["a b", "a", "b"], ["only"]])
def test_r_reports_odd_label_names_with_the_same_numbers(r_session, names):
    values = (np.random.default_rng(2).random((40, len(names))) < 0.4).astype(int)
    frame = pd.DataFrame(values, columns=names)
    plan = plan_batches(frame, MultiLabel(batch_size=8), seed=3, rng="R")
    _assert_r_summary_is_pythons(r_session, "labels", _to_r.strata_to_r(r_session, frame), plan)


def test_r_counts_empty_batches_as_python_does(r_session):
    labels = np.repeat(["a", "b", ""], 5)
    batches = [[0, 5, 10], [], [1, 2, 3, 4, 6], [7, 8, 9, 11, 12, 13, 14]]
    counts, names = batch_counts(labels, batches)[:2]
    python = plot_counts(counts, names).get_title(loc="left")
    call = r_function(r_session, R_PLAIN_HEADLINE)
    ro = r_session.ro
    with r_session.calling():
        headline = call(ro.StrVector(labels.tolist()),
                        ro.ListVector({str(b): ro.IntVector([r + 1 for r in rows])
                                       for b, rows in enumerate(batches)}))[0]
    assert headline == python == "3 of 4 batches miss a stratum"


@pytest.mark.parametrize("family", ["min", "classes", "downsample"])
def test_plot_arguments_are_checked_in_every_family(family):
    plan = _plan(["a", "b", "c"], family, [6, 6, 6])
    with pytest.raises(TypeError, match=r"^ax must be None or a matplotlib Axes, got ax=5"):
        plan.plot(ax=5)
    # A classes plan draws one view of no bands, yet a wrong value is refused, not ignored.
    with pytest.raises(ValueError, match=r"^max_strata must be an integer >= 2"):
        plan.plot(max_strata=0)
    with pytest.raises(ValueError, match=r"^view must be one of"):
        plan.plot(view="x")


@pytest.mark.parametrize("max_strata", [0, 1, 1.5, "3"])
def test_the_distribution_view_called_directly_checks_max_strata(max_strata):
    # It drew the strata but one for 0 and one "other" column for 1, without a word.
    with pytest.raises(ValueError, match=r"^max_strata must be an integer >= 2, got "
                                         r"max_strata="):
        plot_distribution(np.array([[1, 2, 3], [2, 2, 2]]), ["a", "b", "c"],
                          max_strata=max_strata)
