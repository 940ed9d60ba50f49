"""Regression tests for issue 7 ("bad input never gives a wrong batch"), Python core.

One test (or a few) per item of the issue, named after the item; the
generated hostile inputs live in test_hostile_core.py.
"""

import time
import warnings

import numpy as np
import pandas as pd
import pytest

import pystratum
import pystratum.streams._base as streams
from pystratum import StratumTooSmallWarning, plan_batches, stratified_batches
from pystratum.strata._encode import encode_strata
from pystratum.streams._base import RSeededStream


def quiet(function, *args, **kwargs):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", StratumTooSmallWarning)
        return function(*args, **kwargs)


def same_batches(a, b):
    return len(a) == len(b) and all(np.array_equal(x, y) for x, y in zip(a, b))


def partition(codes):
    """Rows grouped by code, as a set of frozensets (independent of numbering)."""
    groups = {}
    for row, code in enumerate(np.asarray(codes).tolist()):
        groups.setdefault(code, []).append(row)
    return {frozenset(rows) for rows in groups.values()}


LABELS = [0, 1] * 10
GROUPS = [0, 0, 1, 1, 2] * 4


# --- item 1: rows silently dropped -----------------------------------------------------------


def test_item1_a_list_of_row_tuples_is_read_as_rows():
    rows = [(y, g) for y, g in zip(LABELS, GROUPS)]
    batches = stratified_batches(rows, 1, seed=1)
    assert sorted(np.concatenate(batches).tolist()) == list(range(20))  # not rows {0, 1}
    expected = stratified_batches(np.column_stack([LABELS, GROUPS]), 1, seed=1)
    assert same_batches(batches, expected)
    assert same_batches(stratified_batches([list(r) for r in rows], 1, seed=1), expected)


def test_item1_row_columns_keep_their_python_values():
    # numpy would read (0, 'a') rows as strings: 0 -> '0'. Labels stay what was passed.
    plan = plan_batches([(0, "a"), (1, "b")] * 3, 1, seed=1)
    assert plan.strata == ((0, "a"), (1, "b"))
    # 0 and '0' in one column are different labels.
    assert len(plan_batches([(0, "a"), ("0", "a")] * 3, 1, seed=1).strata) == 2


def test_item1_a_dict_names_columns_explicitly():
    frame = pd.DataFrame({"y": LABELS, "g": GROUPS})
    expected = stratified_batches(frame, 1, seed=3)
    for columns in ({"y": LABELS, "g": GROUPS}, {"y": np.array(LABELS), "g": pd.Series(GROUPS)}):
        assert same_batches(stratified_batches(columns, 1, seed=3), expected)
    assert plan_batches({"y": [0, 1] * 2, "g": ["a"] * 4}, 1, seed=1).strata == ((0, "a"), (1, "a"))


@pytest.mark.parametrize("items, fix", [
    ([np.array([y]) for y in LABELS], "np.concatenate"),              # labels gathered one by one
    ([np.array(LABELS), np.array(GROUPS)], r"dict \{'name': column"),  # the old "list of columns"
    ((pd.Series(LABELS), pd.Series(GROUPS)), "DataFrame"),
    ([0, np.array([1, 2])], "np.column_stack"),
])
def test_item1_a_list_of_arrays_is_ambiguous(items, fix):
    with pytest.raises(TypeError, match=rf"^strata is a (list|tuple) of arrays .*ambiguous.*{fix}"):
        stratified_batches(items, 1)


@pytest.mark.parametrize("rows, message", [
    ([[1, 2], [3]], r"strata is a list of rows of unequal length \(ragged\): strata\[0\] has 2 "
                    r"values but strata\[1\] has 1"),
    ([(1, 2), 3], r"strata mixes rows and single labels"),
    ([[[1, 2]], [[3, 4]]], r"strata must be 1-D or 2-D, but strata\[0\]\[0\]=\[1, 2\] is itself"),
    ([(), ()], r"strata is a list of empty rows"),
])
def test_item1_ragged_and_nested_lists_are_clear_errors(rows, message):
    with pytest.raises(ValueError, match=message):
        stratified_batches(rows, 1)


# --- item 2: distinct strata merged ------------------------------------------------------------


def test_item2_whole_floats_beyond_2_53_are_not_merged():
    plan = plan_batches([1e19, 2e19, 3e19] * 4, 2, seed=1)
    assert plan.num_batches == 2 and len(plan.strata) == 3
    assert plan.strata == (1e19, 2e19, 3e19)
    for batch in plan.batches:
        assert len(set(np.asarray([1e19, 2e19, 3e19] * 4)[batch].tolist())) == 3
    # 2**53 + 1 (an int) is not 2.0**53 (a float) under ==, so not the same stratum.
    assert len(plan_batches([2**53 + 1, 2.0**53] * 2, 1, seed=1).strata) == 2
    # numpy would turn 2**63 and -1 into floats.
    assert plan_batches([2**63, -1] * 2, 1, seed=1).strata == (-1, 2**63)


@pytest.mark.parametrize("values", [["a", "a\x00"], [b"a", b"a\x00"], ["", "\x00", "\x00\x00"]])
def test_item2_strings_differing_in_trailing_nul_are_distinct(values):
    assert len(plan_batches(values * 3, 1, seed=1).strata) == len(values)


def test_item2_unorderable_labels_are_grouped_by_equality():
    labels = [frozenset({1}), frozenset({2}), frozenset({1, 2}), frozenset({2, 1})] * 3
    encoded = encode_strata(labels)
    assert encoded.n_strata == 3
    assert partition(encoded.codes) == partition([0, 1, 2, 2] * 3)
    mixed = [1, "a", 1.5, b"a", "a", 1, True] * 2  # True == 1: one stratum, as under ==
    assert encode_strata(mixed).n_strata == 4


# --- item 5: masked arrays ----------------------------------------------------------------------


def test_item5_masked_entries_are_missing_values():
    masked = np.ma.masked_array([0, 1, 0, 1], mask=[0, 0, 1, 0])
    with pytest.raises(ValueError, match=r"^strata has a missing value at row 2 \(0-based\): masked"):
        stratified_batches(masked, 1)
    table = np.ma.masked_array([[0, 1], [1, 0], [0, 0]], mask=[[0, 0], [0, 1], [0, 0]])
    with pytest.raises(ValueError, match=r"^strata\[:, 1\] has a missing value at row 1"):
        stratified_batches(table, 1)
    with pytest.raises(ValueError, match=r"^strata has a missing value at row 1 .*masked"):
        stratified_batches([0, np.ma.masked, 1], 1)
    unmasked = np.ma.masked_array([0, 1, 0, 1], mask=False)
    assert same_batches(stratified_batches(unmasked, 1, seed=2),
                        stratified_batches([0, 1, 0, 1], 1, seed=2))


# --- item 7: hang ----------------------------------------------------------------------------


@pytest.mark.parametrize("rng", ["numpy", "R", "torch"])
@pytest.mark.parametrize("epoch", [2**31, 10**12])
def test_item7_epochs_are_r_integers(rng, epoch):
    with pytest.raises(ValueError, match=rf"^epoch must be an integer 0 <= epoch <= 2147483647, "
                                         rf"got epoch={epoch}"):
        stratified_batches(LABELS, 1, seed=1, rng=rng, epoch=epoch)


@pytest.mark.parametrize("rng", ["R", "torch"])
def test_item7_unaffordable_epoch_jumps_are_refused_at_once(rng):
    start = time.perf_counter()
    with pytest.raises(ValueError, match=rf"^epoch=1000000 with rng='{rng}' means drawing "
                                         r"the 1,000,000 earlier epoch\(s\) of these 20 rows.*"
                                         r"rng='numpy'.*in order.*smaller epoch"):
        stratified_batches(LABELS, 1, seed=1, rng=rng, epoch=10**6)
    assert time.perf_counter() - start < 5
    # The most a jump may cost: 10**8 row draws, each draw its rows plus 2000 for the call.
    assert streams.MAX_SKIPPED_DRAWS == 10**8 and streams.SequentialStream.call_cost == 2000


def test_item7_numpy_reaches_the_largest_epoch_directly():
    plan = plan_batches(LABELS, 1, seed=1, epoch=2**31 - 1)
    assert plan.epoch == 2**31 - 1


def test_item7_the_skip_is_counted_from_where_the_stream_stands(monkeypatch):
    monkeypatch.setattr(streams, "MAX_SKIPPED_DRAWS", 10100)  # 5 epochs of 20 rows + 2000 a call
    stream = RSeededStream(11)
    for epoch in range(12):  # in order: one permutation each, however far
        stream.permutation(20, epoch)
    stream.permutation(20, 17)  # 5 skipped from epoch 12
    with pytest.raises(ValueError, match=r"6 earlier epoch\(s\) of these 20 rows .*from epoch 18"):
        stream.permutation(20, 24)
    with pytest.raises(ValueError, match=r"from its seed"):
        stream.permutation(20, 6)  # going back restarts from the seed: 6 to skip
    stream.permutation(20, 5)
    # The refused calls drew nothing: the stream is where a fresh one would be.
    fresh = RSeededStream(11)
    for epoch in range(6):
        fresh.permutation(20, epoch)
    np.testing.assert_array_equal(stream.permutation(20, 6), fresh.permutation(20, 6))


# --- item 8: crashes on valid labels ----------------------------------------------------------


@pytest.mark.parametrize("dtype, low, high", [
    (np.int8, -100, 100), (np.int8, -128, 127), (np.int16, -30000, 30000),
    (np.int32, -(2**31), 2**31 - 1), (np.uint8, 0, 255), (np.uint16, 3, 65535),
    (np.uint64, 2**64 - 3, 2**64 - 1), (np.int64, -(2**63), 2**63 - 1),
])
def test_item8_narrow_integer_labels_spanning_their_range(dtype, low, high):
    # Enough rows that the linear-time (bincount) path is taken where the span allows.
    labels = np.array([low, high, low, high] * 20000, dtype=dtype)
    plan = plan_batches(labels, 1, seed=1)
    assert plan.strata == (low, high)
    assert plan.num_batches == 40000
    codes = encode_strata(labels).codes
    assert partition(codes) == partition(labels.tolist())


def test_item8_multi_column_strata_with_a_complex_column():
    frame = pd.DataFrame({"z": [1j, 2j, 1 + 0j] * 4, "g": [1, 1, 2, 2] * 3})
    plan = plan_batches(frame, 1, seed=1)
    assert len(plan.strata) == 6
    assert sorted(map(str, plan.strata)) == sorted(map(str, {tuple(r) for r in
                                                             frame.itertuples(index=False)}))
    assert plan_batches({"z": [1j, "a", 1j, "a"], "g": [0, 0, 1, 1]}, 1, seed=1,
                        allow_single_batch=True).num_batches == 1


# --- item 9: errors a user can act on --------------------------------------------------------


@pytest.mark.parametrize("strata, error, message", [
    ((y for y in LABELS), TypeError, r"^strata is a generator object: an iterator.*strata=list"),
    (iter(LABELS), TypeError, r"^strata is a list_iterator object: an iterator"),
    ({0, 1}, TypeError, r"^strata is a set, which has no row order"),
    (frozenset({0, 1}), TypeError, r"^strata is a frozenset, which has no row order"),
    ({0: 1, 1: 2}, TypeError, r"^strata\[0\] must be one column of labels .*got strata\[0\]=1 "
                              r"of type int\. A dict maps each column name to a whole column"),
    ({"y": [[0, 1], [1, 0]]}, ValueError, r"^strata\['y'\] must be 1-D"),
    ({}, ValueError, r"^strata is a dict with zero columns"),
    ({"y": LABELS, "g": GROUPS[:5]}, ValueError, r"^strata columns must all have the same length"),
    (np.array(3), TypeError, r"^strata must hold one label per row, got a 0-d array"),
    (np.zeros((2, 2, 2)), ValueError, r"^strata must be 1-D .* or 2-D .*got an array with shape "
                                      r"\(2, 2, 2\)"),
    ({"y": np.array(3)}, TypeError, r"^strata\['y'\] must hold one label per row, got a 0-d array"),
    (b"ab", TypeError, r"^strata must be array-like with one label per row"),
    (object(), TypeError, r"^strata must be array-like with one label per row"),
    ([[1], {2}], ValueError, r"^strata mixes rows and single labels"),
    (np.array([[1, 2], [3]], dtype=object), TypeError,
     r"^strata holds an unhashable value at row 0 \(0-based\): \[1, 2\] of type list"),
])
def test_item9_errors_name_the_argument_and_the_fix(strata, error, message):
    with pytest.raises(error, match=message):
        stratified_batches(strata, 1)


@pytest.mark.filterwarnings("ignore::PendingDeprecationWarning")  # np.matrix itself warns
def test_item9_np_matrix_is_the_2d_array_it_is():
    matrix = np.matrix([[0, 1], [1, 0], [0, 0], [1, 1]] * 3)
    assert same_batches(stratified_batches(matrix, 1, seed=4),
                        stratified_batches(np.asarray(matrix), 1, seed=4))
    column = np.matrix(LABELS).T  # one column of labels, n x 1
    assert same_batches(stratified_batches(column, 1, seed=4), stratified_batches(LABELS, 1, seed=4))


def test_item9_torch_seed_out_of_range_names_seed():
    with pytest.raises(ValueError, match=r"^seed must be a whole number between 0 and 2\*\*53 for "
                                         r"rng='torch', got seed=18446744073709551616"):
        stratified_batches(LABELS, 1, rng="torch", seed=2**64)


def test_item9_plan_slices_negative_indices_and_bad_index_types():
    plan = plan_batches(LABELS, 1, seed=1)
    batches = plan.batches
    assert same_batches(plan[1:3], batches[1:3])
    assert same_batches(plan[::-2], batches[::-2])
    assert plan[5:2] == []
    np.testing.assert_array_equal(plan[-1], batches[-1])
    np.testing.assert_array_equal(plan[np.int64(-10)], batches[0])
    for bad in ("1", 1.0, True, None, (0, 1)):
        with pytest.raises(TypeError, match=r"^batch must be an integer or a slice, got batch="):
            plan[bad]
    for bad in (10, -11):
        with pytest.raises(IndexError, match=rf"^batch={bad} is out of range for a plan with 10 "):
            plan[bad]
    with pytest.raises(ValueError, match=r"^batch=slice\(None, None, 0\) is not a valid slice"):
        plan[::0]


# --- item 10: inconsistencies -------------------------------------------------------------------


@pytest.mark.parametrize("seed", [-1, 2**63, 2**64 - 1, 2**53 + 1])
def test_item10_torch_seeds_are_what_r_takes(seed):
    with pytest.raises(ValueError, match=rf"^seed must be a whole number between 0 and 2\*\*53 .*"
                                         rf"got seed={seed}\. R torch"):
        stratified_batches(LABELS, 1, rng="torch", seed=seed)


def test_item10_torch_seed_range_ends_are_accepted():
    for seed in (0, 2**53):
        assert plan_batches(LABELS, 1, rng="torch", seed=seed).seed == seed


@pytest.mark.parametrize("max_rows, error, message", [
    (0, ValueError, "max_rows must be a positive integer, got max_rows=0"),
    (-2, ValueError, "max_rows must be a positive integer, got max_rows=-2"),
    (True, TypeError, "max_rows must be an integer, got max_rows=True"),
    (2.5, TypeError, "max_rows must be an integer, got max_rows=2.5"),
])
def test_item10_counts_table_max_rows(max_rows, error, message):
    plan = plan_batches(LABELS, 1, seed=1)
    with pytest.raises(error, match=f"^{message}"):
        plan.counts_table(max_rows=max_rows)


def test_item10_counts_table_shows_at_most_max_rows_batches():
    plan = plan_batches(LABELS, 1, seed=1)  # 10 batches
    for max_rows in (1, 2, 3, 9):
        lines = plan.counts_table(max_rows=max_rows).splitlines()
        batch_rows = [line for line in lines[1:] if "..." not in line]
        assert len(batch_rows) == max_rows and len(lines) == max_rows + 2
    assert len(plan.counts_table(max_rows=None).splitlines()) == 11
    assert len(plan.counts_table(max_rows=10).splitlines()) == 11


@pytest.mark.parametrize("function", [stratified_batches, plan_batches])
def test_item10_epoch_without_shuffle_is_an_error_like_a_seed(function):
    with pytest.raises(ValueError, match=r"^epoch=3 has no effect since shuffle=False .*Leave "
                                         r"epoch=0, or set shuffle=True"):
        function(LABELS, 1, shuffle=False, epoch=3)
    assert len(function(LABELS, 1, shuffle=False, epoch=0)) == 10


def test_public_core_names_unchanged():
    assert {"stratified_batches", "plan_batches", "RStream", "BatchPlan"} <= set(pystratum.__all__)


def test_item7_every_face_caps_the_epoch_at_r_integers():
    """Epochs above 2**31 - 1 are refused wherever an epoch is chosen, naming the argument."""
    import pytest

    from pystratum.negatives import NegativePairSampler
    from pystratum.torch import StratifiedBatchSampler

    sampler = StratifiedBatchSampler([0, 1] * 10, 2, seed=1)
    with pytest.raises(ValueError, match="^epoch must be"):
        sampler.set_epoch(2**31)
    with pytest.raises(ValueError, match="^epoch must be"):
        sampler.plan(2**31)
    pairs = NegativePairSampler([0, 1, 2], [1, 2, 0], num_items=5, negatives=1, batch_size=2,
                                seed=1)
    with pytest.raises(ValueError, match="^epoch must be"):
        pairs.set_epoch(2**31)
