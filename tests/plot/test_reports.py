"""Reports that fit each policy family (issue 32, items 4 and 5): tables, summaries and
figures of stratum, classes-per-batch and label plans, and figures that stay fast and whole
at thousands of batches."""

from __future__ import annotations

import warnings

from hypothesis import given
from hypothesis import strategies as st

import numpy as np
import pytest

from pystratum import plan_batches
from pystratum import plot
from pystratum.plot import composition_figure, plot_counts
from pystratum.policies import ClassesPerBatch, FixedSize, MinPerStratum, MultiLabel

# The 'plot' extra is part of the test set-up (.ci/dev): a missing matplotlib fails here.
import matplotlib  # noqa: E402

matplotlib.use("Agg")


def long_tail_classes(n_classes=1500, seed=0):
    """Metric-learning labels: ``n_classes`` classes of 4 to a few hundred rows each."""
    rng = np.random.default_rng(seed)
    sizes = np.minimum(np.maximum(4, (rng.pareto(1.2, n_classes) * 4).astype(int)), 400)
    return np.repeat(np.arange(n_classes), sizes)


@pytest.fixture(scope="module")
def pk_plan():
    return plan_batches(long_tail_classes(), ClassesPerBatch(8, 4), seed=1)


def test_counts_table_of_1500_classes_names_each_batchs_p_classes(pk_plan):
    lines = pk_plan.counts_table(max_rows=6).splitlines()
    assert lines[0] == "batch  classes (4 rows each)"
    assert len(lines) == 1 + 6 + 1
    for line in lines[1:]:
        if line.strip() != "...":
            batch, classes = line.split(None, 1)
            expected = [str(s) for s in pk_plan.batch_strata[int(batch)]]
            assert classes.split(", ") == expected  # P names, not 1,500 columns
    assert max(len(line) for line in lines) < 80


def test_classes_summary_counts_how_often_each_class_appears(pk_plan):
    summary = pk_plan.summary()
    assert summary.family == "classes"
    assert summary.columns == ("batches_per_class", "classes", "rows_per_class")
    appearances = np.bincount(pk_plan.batch_strata.ravel(), minlength=1500)
    assert sum(row[1] for row in summary.rows) == 1500
    assert {row[0]: row[1] for row in summary.rows} == \
        dict(zip(*[v.tolist() for v in np.unique(appearances, return_counts=True)]))
    assert len(str(summary).splitlines()) == 2 + len(summary.rows)


def test_pk_headlines_state_p_by_k_not_a_missing_stratum(pk_plan):
    headline = pk_plan.summary().headline
    assert "miss" not in headline
    assert headline.startswith(f"every batch holds 8 distinct classes x 4 rows: all "
                               f"{pk_plan.num_batches:,} batches do; 1,500 of 1,500 classes")
    ax = pk_plan.plot()
    assert ax.get_title(loc="left") == headline
    assert "miss" not in ax.get_title(loc="left")
    assert ax.get_ylabel() == "batches a class appears in"


def test_stratum_headline_states_the_policy_promise():
    labels = np.repeat([0, 1, 2], [60, 20, 9])
    plan = plan_batches(labels, MinPerStratum(3), seed=2)
    assert plan.summary().headline == ("every batch holds >= 3 row(s) of every stratum: all 3 "
                                       "batches do (fewest rows of a stratum in a batch: 3)")
    assert plan.summary().rows == tuple(
        (str(s), int(n), int(lo), int(hi)) for s, n, lo, hi in zip(
            plan.strata, plan.counts.sum(0), plan.counts.min(0), plan.counts.max(0)))
    fixed = plan_batches(labels, FixedSize(20), seed=2)
    assert fixed.summary().headline.startswith(
        "batches of exactly 20 rows (the last batch the rest) holding >= 1 row(s) of every "
        "stratum: all 5 batches do")


def label_plan(strict=False, min_per_label=1):
    rng = np.random.default_rng(3)
    import pandas as pd

    matrix = pd.DataFrame((rng.random((200, 4)) < [0.5, 0.2, 0.06, 0.3]).astype(int),
                          columns=["politics", "sports", "science", "culture"])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return plan_batches(matrix, MultiLabel(batch_size=20, min_per_label=min_per_label,
                                               strict=strict), seed=1)


def test_label_reports_count_positives_per_label():
    plan = label_plan(min_per_label=2)
    summary = plan.summary()
    assert summary.family == "labels"
    assert summary.columns == ("label", "positives", "min_per_batch", "max_per_batch")
    assert [row[1] for row in summary.rows] == plan.label_counts.sum(axis=0).tolist()
    spread = plan.label_spread()
    assert [(row[2], row[3]) for row in summary.rows] == [spread[name] for name in plan.strata]
    short = [str(name) for name, (lo, _) in spread.items() if lo < 2]
    assert short and summary.headline.endswith(f"(short: {', '.join(short)})")
    table = plan.counts_table(max_rows=None).splitlines()
    assert table[0].split() == ["batch"] + [str(s) for s in plan.strata] + ["total"]
    assert [int(line.split()[-1]) for line in table[1:]] == np.diff(plan.bounds).tolist()


def test_label_plot_counts_positives():
    ax = label_plan().plot()
    assert ax.get_ylabel() == "positives"
    assert ax.get_legend().get_title().get_text() == "label"


@pytest.mark.parametrize("make_plan", [label_plan, lambda: plan_batches(
    np.repeat(["majority", "minority"], [90, 12]), 2, seed=1)])
def test_a_saved_plot_keeps_its_legend_and_title(tmp_path, make_plan):
    ax = make_plan().plot()
    figure = ax.figure
    output = tmp_path / "labels.png"
    figure.savefig(output)  # no bbox_inches: the layout must keep the legend inside
    figure.draw_without_rendering()
    inside = figure.bbox
    for artist in (ax.get_legend(), ax.title):
        box = artist.get_window_extent()
        assert inside.x0 <= box.x0 and box.x1 <= inside.x1 + 0.5, artist
        assert inside.y0 <= box.y0 and box.y1 <= inside.y1 + 0.5, artist


def test_a_plot_past_a_few_hundred_batches_is_the_distribution_view():
    labels = np.repeat(np.arange(12), 400)
    plan = plan_batches(labels, FixedSize(14), seed=1)
    assert plan.num_batches > plot.AGGREGATE_FROM
    ax = plan.plot(max_strata=8)
    # One box per drawn column, not one bar per batch and stratum.
    assert len(ax.patches) == 8
    assert [t.get_text() for t in ax.get_xticklabels()] == \
        [str(k) for k in range(7)] + ["other (5 strata)"]
    assert ax.get_ylabel() == "rows per batch"
    assert f"{plan.num_batches:,} batches" in ax.get_title(loc="left")
    bars = plot_counts(plan.counts[:plot.AGGREGATE_FROM], plan.strata, max_strata=8)
    assert len(bars.patches) == 8 * plot.AGGREGATE_FROM
    with pytest.raises(ValueError, match="^view must be one of"):
        plot_counts(plan.counts, plan.strata, view="heat")


def test_composition_figure_reports_progress_and_keeps_legends(tmp_path):
    labels = np.repeat(np.arange(3), [90, 30, 10])
    plan = plan_batches(labels, 2, seed=1)
    messages = []
    output = tmp_path / "f.png"
    figure = composition_figure([plan.report().panel("stratified")], output,
                                progress=messages.append)
    assert messages == [f"drawing panel 1 of 1 ({plan.num_batches:,} batches)",
                        f"writing {output}"]
    figure.draw_without_rendering()
    box = figure.axes[0].get_legend().get_window_extent()
    assert box.x1 <= figure.bbox.x1 + 0.5


def test_plain_batches_still_report_the_batches_missing_a_stratum():
    counts = np.array([[5, 0], [3, 2]])
    ax = plot_counts(counts, ("a", "b"))
    assert ax.get_title(loc="left") == "1 of 2 batches miss a stratum"


def test_plain_panels_use_the_plans_view():
    plan = label_plan()
    rng = np.random.default_rng(0)
    order = rng.permutation(len(plan.order))
    plain = np.array_split(order, plan.num_batches)
    import pandas as pd

    frame = pd.DataFrame((np.random.default_rng(3).random((200, 4)) <
                          [0.5, 0.2, 0.06, 0.3]).astype(int),
                         columns=["politics", "sports", "science", "culture"])
    panel = plan.report().plain_panel(frame, plain, "plain")
    expected = np.array([frame.to_numpy()[rows].sum(axis=0) for rows in plain])
    np.testing.assert_array_equal(panel.counts, expected)
    assert panel.value_name == "positives"
    missing = int((expected == 0).any(axis=1).sum())
    assert panel.headline == f"{missing} of {plan.num_batches} batches miss a label"
    labels = np.repeat(np.arange(6), 8)
    pk = plan_batches(labels, ClassesPerBatch(2, 4), seed=0)
    lone = pk.report().plain_panel(labels, [[0, 8, 9], [1, 2, 16, 17]], "plain")
    assert lone.appearances.tolist() == [2, 1, 1, 0, 0, 0]
    assert lone.headline == "1 of 2 batches hold a class with a single row"


# --- reports at many strata (issue 32, item 4): compact text past 20 columns ---------------

def wide_strata(n_strata=10_000, seed=4):
    """``n_strata`` strata of 3 to 8 rows each, sizes shuffled (the least served strata are
    not the first ones)."""
    rng = np.random.default_rng(seed)
    sizes = rng.integers(3, 9, size=n_strata)
    return np.array([f"s{k}" for k in np.repeat(np.arange(n_strata), sizes)])


def expected_wide_lines(plan):
    """The compact table computed here from ``plan.counts``: the 10 least served strata
    (fewest rows in a batch, ties in stratum order) with their least, median, most, total."""
    counts = plan.counts
    least = counts.min(axis=0)
    order = sorted(range(counts.shape[1]), key=lambda k: (least[k], k))[:10]
    lines = []
    for k in order:
        median = float(np.median(counts[:, k]))
        median_text = str(int(median)) if median.is_integer() else f"{median:.1f}"
        lines.append([str(plan.strata[k]), str(int(least[k])), median_text,
                      str(int(counts[:, k].max())), str(int(counts[:, k].sum()))])
    return lines


@pytest.mark.parametrize("policy", [MinPerStratum(1), FixedSize(30_000)])
def test_counts_table_past_20_strata_shows_the_least_served_strata_then_how_many_more(policy):
    plan = plan_batches(wide_strata(), policy, seed=5)
    assert plan.counts.shape[1] == 10_000  # the data keep every count
    lines = plan.counts_table().splitlines()
    assert lines[0] == (f"10,000 strata over {plan.num_batches:,} batches, more than 20 to "
                        f"show as columns: rows of each stratum in a batch, the least served "
                        f"first")
    assert lines[1].split() == ["stratum", "min", "median", "max", "rows"]
    assert [line.split() for line in lines[2:12]] == expected_wide_lines(plan)
    assert lines[12:] == ["... and 9,990 more strata"]
    assert max(len(line) for line in lines) < 140
    assert plan.counts_table(max_rows=None) == plan.counts_table()


def test_summary_past_20_strata_prints_the_least_served_records_and_keeps_every_record():
    plan = plan_batches(wide_strata(), MinPerStratum(1), seed=5)
    summary = plan.summary()
    assert len(summary.rows) == 10_000
    lines = str(summary).splitlines()
    assert lines[0] == summary.headline
    assert lines[1] == "10,000 strata, more than 20 to show: the least served first"
    assert lines[2].split() == list(summary.columns)
    least = sorted(range(10_000), key=lambda k: (summary.rows[k][2], k))[:10]
    assert [line.split() for line in lines[3:13]] == \
        [[str(v) for v in summary.rows[k]] for k in least]
    assert lines[13:] == ["... and 9,990 more strata"]


def test_tables_up_to_20_strata_keep_one_column_per_stratum():
    labels = np.repeat([f"s{k:02d}" for k in range(20)], 4)
    plan = plan_batches(labels, MinPerStratum(1), seed=1)
    table = plan.counts_table().splitlines()
    assert table[0].split() == ["batch"] + [str(s) for s in plan.strata] + ["total"]
    assert len(str(plan.summary()).splitlines()) == 2 + 20
    wider = plan_batches(np.repeat([f"s{k:02d}" for k in range(21)], 4), MinPerStratum(1),
                         seed=1)
    assert wider.counts_table().splitlines()[-1] == "... and 11 more strata"
    assert str(wider.summary()).splitlines()[-1] == "... and 11 more strata"


def wide_label_plan(n_labels=25):
    import pandas as pd

    rng = np.random.default_rng(6)
    shares = np.linspace(0.08, 0.5, n_labels)
    matrix = pd.DataFrame((rng.random((400, n_labels)) < shares).astype(int),
                          columns=[f"label{k}" for k in range(n_labels)])
    return plan_batches(matrix, MultiLabel(batch_size=40), seed=2)


def test_label_table_past_20_labels_counts_positives_per_label():
    plan = wide_label_plan()
    lines = plan.counts_table().splitlines()
    assert lines[0] == (f"25 labels over {plan.num_batches} batches, more than 20 to show as "
                        f"columns: positives of each label in a batch, the least served first")
    assert lines[1].split() == ["label", "min", "median", "max", "positives"]
    assert [line.split() for line in lines[2:12]] == expected_wide_lines(plan)
    assert lines[12:] == ["... and 15 more labels"]
    summary_lines = str(plan.summary()).splitlines()
    assert summary_lines[1] == "25 labels, more than 20 to show: the least served first"
    assert summary_lines[-1] == "... and 15 more labels"


def test_a_summary_shown_at_a_prompt_is_the_compact_text():
    plan = plan_batches(wide_strata(2_000), MinPerStratum(1), seed=5)
    summary = plan.summary()
    assert repr(summary) == str(summary)
    assert len(repr(summary).splitlines()) == 1 + 1 + 1 + 10 + 1


@given(sizes=st.lists(st.integers(2, 9), min_size=1, max_size=45),
       policy=st.sampled_from([MinPerStratum(1), MinPerStratum(2), FixedSize(25)]))
def test_a_table_has_a_column_per_stratum_up_to_20_then_the_least_served_ten(sizes, policy):
    """Whatever the strata: up to 20 a column each; past 20 the ten with the fewest rows in a
    batch (none left out has fewer), and the "more" line counts the others."""
    labels = np.repeat([f"c{k}" for k in range(len(sizes))], sizes)
    plan = plan_batches(labels, policy, seed=1, allow_single_batch=True)
    lines = plan.counts_table(max_rows=None).splitlines()
    n = len(sizes)
    if n <= 20:
        assert lines[0].split()[1:-1] == [str(s) for s in plan.strata]
        assert len(lines) == 1 + plan.num_batches
        return
    shown = [line.split()[0] for line in lines[2:-1]]
    assert len(shown) == 10 and len(set(shown)) == 10
    assert lines[-1] == f"... and {n - 10} more strata"
    least = dict(zip(map(str, plan.strata), plan.counts.min(axis=0).tolist()))
    assert max(least[s] for s in shown) <= min(v for s, v in least.items() if s not in shown)
    assert [least[s] for s in shown] == sorted(least[s] for s in shown)
