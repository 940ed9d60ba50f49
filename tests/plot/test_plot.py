"""Composition figures: the count table behind them and what a reader sees."""

import warnings

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import pystratum
from pystratum.plot import batch_counts, composition_figure, plot_counts
from _strategies import plan_allowing_one_batch

# The 'plot' extra is part of the test set-up (.ci/dev): a missing matplotlib fails here.
import matplotlib  # noqa: E402

matplotlib.use("Agg")


@settings(max_examples=40)
@given(st.lists(st.integers(0, 4), min_size=2, max_size=60), st.integers(1, 3),
       st.integers(0, 2**31))
def test_batch_counts_of_a_plan_equal_its_counts(labels, m, seed):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", pystratum.StratumTooSmallWarning)
        plan = plan_allowing_one_batch(labels, m, seed=seed)
    counts, strata = batch_counts(labels, plan.batches)
    assert strata == plan.strata
    np.testing.assert_array_equal(counts, plan.counts)


def test_batch_counts_of_plain_batches():
    labels = np.array([0, 1, 0, 0, 1, 0])
    counts, strata = batch_counts(labels, [[0, 2], [1, 3, 4], [5]])
    assert strata == (0, 1)
    assert counts.tolist() == [[2, 0], [1, 2], [1, 0]]


def test_batch_counts_refuses_positions_outside_the_data():
    with pytest.raises(ValueError, match=r"row positions in 0\.\.2"):
        batch_counts([0, 1, 0], [[0, 3]])


def test_counts_table_numbers_batches_from_zero_like_plan_indexing():
    plan = pystratum.plan_batches(["a"] * 4 + ["b"] * 2, 1, seed=3)
    first_column = [line.split()[0] for line in plan.counts_table().splitlines()[1:]]
    assert first_column == ["0", "1"]
    assert plan.batch_of_row().max() == plan.num_batches - 1


def _legend_texts(ax):
    return [t.get_text() for t in ax.get_legend().get_texts()]


def test_plot_two_strata_marks_batches_missing_a_stratum():
    labels = np.array([0] * 18 + [1] * 2)
    plain = [np.arange(0, 10), np.arange(10, 20)]  # the first batch has no 1
    counts, strata = batch_counts(labels, plain)
    ax = plot_counts(counts, strata, title="plain")
    assert ax.get_title(loc="left") == "plain: 1 of 2 batches miss a stratum"
    assert _legend_texts(ax) == ["0", "1", "batch misses a stratum"]
    heights = [patch.get_height() for patch in ax.patches]
    assert heights == [10, 8, 0, 2]


def test_plan_plot_with_200_strata_lumps_the_tail_into_other():
    sizes = np.r_[np.full(7, 50), np.full(193, 2)]
    labels = np.repeat(np.arange(200), sizes)
    plan = pystratum.plan_batches(labels, 1, seed=0)
    ax = plan.plot(max_strata=8)
    names = _legend_texts(ax)
    assert names == [str(k) for k in range(7)] + ["other (193 strata)"]
    # A plan's headline is its policy's promise, kept by every batch.
    assert ax.get_title(loc="left") == ("every batch holds >= 1 row(s) of every stratum: all 2 "
                                        "batches do (fewest rows of a stratum in a batch: 1)")
    # The bars still add up to every row of each batch.
    totals = np.zeros(plan.num_batches)
    for patch in ax.patches:
        totals[int(round(patch.get_x() + patch.get_width() / 2))] += patch.get_height()
    np.testing.assert_array_equal(totals, plan.counts.sum(axis=1))


def test_plot_counts_refuses_a_table_that_does_not_fit_the_labels():
    with pytest.raises(ValueError, match="one column per label"):
        plot_counts(np.zeros((3, 2)), ("a", "b", "c"))
    with pytest.raises(ValueError, match="max_strata must be an integer >= 2"):
        plot_counts(np.zeros((3, 2)), ("a", "b"), max_strata=1)


def test_composition_figure_writes_a_png(tmp_path):
    labels = np.array([0] * 90 + [1] * 10)
    plan = pystratum.plan_batches(labels, 2, seed=1)
    output = tmp_path / "composition.png"
    figure = composition_figure([("stratified", plan.counts, plan.strata)], output)
    assert output.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert len(figure.axes) == 1
