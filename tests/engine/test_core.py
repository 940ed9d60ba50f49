"""The numpy core: allocation invariants, exactness, inputs and validation."""

import subprocess
import sys
import warnings

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import pystratum
from pystratum import RStream, StratumTooSmallWarning, plan_batches, stratified_batches
from pystratum.policies import MinPerStratum, strata_of_sizes
from pystratum.engine._assemble import assemble_batches
from pystratum.streams._base import NumpyStream

from tests._strategies import draw_any_cuts


def reference_batches(codes, permutation, m):
    """REFERENCE.md section 1, written as plainly as possible (a loop per row)."""
    codes = np.asarray(codes)
    sizes = {s: int(np.sum(codes == s)) for s in set(codes.tolist())}
    n_min = min(sizes.values())
    num_batches = max(1, n_min // m)
    seen = dict.fromkeys(sizes, 0)
    batch_of_position = []
    for row in permutation:
        s = codes[row]
        seen[s] += 1
        i, n_s = seen[s], sizes[s]
        batch_of_position.append((i * num_batches + n_s - 1) // n_s)  # exact ceil
    batch_of_position = np.array(batch_of_position)
    return [np.asarray(permutation)[batch_of_position == b] for b in range(1, num_batches + 1)]


def assert_same_batches(actual, expected):
    assert len(actual) == len(expected)
    for a, e in zip(actual, expected):
        np.testing.assert_array_equal(a, e)


def quiet(function, *args, **kwargs):
    """``function`` allowing one batch (random strata often give one), without its warning."""
    kwargs.setdefault("allow_single_batch", True)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", StratumTooSmallWarning)
        return function(*args, **kwargs)


strata_lists = st.integers(1, 6).flatmap(
    lambda n_strata: st.lists(st.integers(0, n_strata - 1), min_size=1, max_size=300)
)


@settings(max_examples=150)
@given(strata=strata_lists, m=st.integers(1, 8), seed=st.integers(0, 2**32), epoch=st.integers(0, 3))
def test_invariants_and_reference(strata, m, seed, epoch):
    codes = np.asarray(strata)
    plan = quiet(plan_batches, codes, m, seed=seed, epoch=epoch)
    batches = plan.batches
    # Each row exactly once.
    everything = np.concatenate(batches)
    assert sorted(everything.tolist()) == list(range(len(codes)))
    sizes = np.bincount(codes)
    sizes = sizes[sizes > 0]
    n_min = int(sizes.min())
    if n_min >= m:
        assert len(batches) == n_min // m
    else:
        assert len(batches) == 1
    per_batch = np.array([[np.sum(codes[b] == s) for s in np.unique(codes)] for b in batches])
    if n_min >= m:
        assert per_batch.min() >= m  # every batch holds >= m rows of every stratum
    assert np.all(per_batch.max(axis=0) - per_batch.min(axis=0) <= 1)
    np.testing.assert_array_equal(per_batch, plan.counts)
    # Exactly the reference algorithm fed with this epoch's permutation.
    permutation = NumpyStream(seed).permutation(len(codes), epoch)
    assert_same_batches(batches, reference_batches(codes, permutation, m))
    # Same seed and epoch: same batches.
    assert_same_batches(quiet(stratified_batches, codes, m, seed=seed, epoch=epoch), batches)


@settings(max_examples=100)
@given(strata=strata_lists, m=st.integers(1, 5), seed=st.integers(0, 1000), data=st.data())
def test_relabelling_changes_nothing(strata, m, seed, data):
    codes = np.asarray(strata)
    labels = data.draw(st.lists(st.text(min_size=1, max_size=3), min_size=6, max_size=6, unique=True))
    renamed = [labels[c] for c in strata]
    as_floats = codes * -2.5 + 7
    expected = quiet(stratified_batches, codes, m, seed=seed)
    assert_same_batches(quiet(stratified_batches, renamed, m, seed=seed), expected)
    assert_same_batches(quiet(stratified_batches, as_floats, m, seed=seed), expected)
    categorical = pd.Categorical(renamed, categories=list(reversed(labels)))
    assert_same_batches(quiet(stratified_batches, categorical, m, seed=seed), expected)


@settings(max_examples=100)
@given(
    columns=st.integers(1, 200).flatmap(
        lambda n: st.tuples(
            st.lists(st.integers(0, 2), min_size=n, max_size=n),
            st.lists(st.sampled_from(["a", "b"]), min_size=n, max_size=n),
            st.lists(st.booleans(), min_size=n, max_size=n),
        )
    ),
    m=st.integers(1, 4),
    seed=st.integers(0, 1000),
)
def test_multi_column_strata_equal_their_combined_key(columns, m, seed):
    ints, strings, bools = columns
    combined = [f"{a}|{b}|{c}" for a, b, c in zip(ints, strings, bools)]
    expected = quiet(stratified_batches, combined, m, seed=seed)
    frame = pd.DataFrame({"i": ints, "s": strings, "b": bools})
    assert_same_batches(quiet(stratified_batches, frame, m, seed=seed), expected)
    assert_same_batches(quiet(stratified_batches, {"i": np.array(ints), "s": strings, "b": bools},
                              m, seed=seed), expected)
    rows = list(zip(ints, strings, bools))  # a list of row tuples, as numpy reads it
    assert_same_batches(quiet(stratified_batches, rows, m, seed=seed), expected)
    two_d = np.column_stack([np.array(ints), np.array(bools, dtype=int)])
    key2 = [f"{a}|{c}" for a, c in zip(ints, bools)]
    assert_same_batches(quiet(stratified_batches, two_d, m, seed=seed),
                        quiet(stratified_batches, key2, m, seed=seed))


@settings(max_examples=200)
@given(
    sizes=st.lists(st.integers(1, 40), min_size=1, max_size=8),
    n_batches=st.integers(1, 12),
    data=st.data(),
)
def test_both_assembly_methods_match_a_loop_for_any_cuts(sizes, n_batches, data):
    """The shared grouping step is exact for any policy's cuts, dropped rows included."""
    codes = np.repeat(np.arange(len(sizes)), sizes).astype(np.int32)
    permutation = np.random.default_rng(data.draw(st.integers(0, 2**32))).permutation(codes.size)
    cuts = np.zeros((len(sizes), n_batches + 1), dtype=np.int64)
    for s, size in enumerate(sizes):
        used = data.draw(st.integers(0, size))
        inner = sorted(data.draw(st.lists(st.integers(0, used), min_size=n_batches - 1,
                                          max_size=n_batches - 1)))
        cuts[s] = [0, *inner, used]
    seen = np.zeros(len(sizes), dtype=np.int64)
    batch_of_position = []
    for row in permutation:
        s = codes[row]
        batch_of_position.append(np.searchsorted(cuts[s], seen[s], side="right") - 1)
        seen[s] += 1
    batch_of_position = np.array(batch_of_position)
    expected = [permutation[batch_of_position == b] for b in range(n_batches)]
    import pystratum.engine._assemble as assemble

    chunk_rows = assemble._CHUNK_ROWS
    try:
        # One chunk, and chunk boundaries everywhere (cuts crossing them, strata
        # used up mid-way); int32 permutations as the plan passes them.
        for assemble._CHUNK_ROWS in (chunk_rows, data.draw(st.integers(1, 20), label="chunk")):
            for method in ("running_count", "chunked_sort"):
                for rows in (permutation, permutation.astype(np.int32)):
                    got = assemble_batches(codes, rows, cuts, method=method).batches()
                    assert_same_batches(got, expected)
    finally:
        assemble._CHUNK_ROWS = chunk_rows


def test_float_rounding_defect_is_absent():
    # (3/187)*187 == 3.0000000000000004 in floating point: a float ceil would
    # open a 4th batch with no minority row.
    strata = np.array([1] * 3 + [0] * 187)
    for seed in range(20):
        batches = stratified_batches(strata, 1, seed=seed)
        assert len(batches) == 3
        assert [int(strata[b].sum()) for b in batches] == [1, 1, 1]
    assert MinPerStratum(1).allocate(strata_of_sizes([187, 3]), 0).cuts.tolist() == [[0, 62, 124, 187], [0, 1, 2, 3]]


def test_blog_example_without_shuffle():
    # 111 rows of class M then 12 of class R, m = 1: first batch is rows 1:9 and 112.
    strata = ["M"] * 111 + ["R"] * 12
    batches = stratified_batches(strata, 1, shuffle=False)
    assert len(batches) == 12
    assert (batches[0] + 1).tolist() == list(range(1, 10)) + [112]
    assert all(np.all(np.diff(b) > 0) for b in batches)


def test_smallest_stratum_below_m_allowed_gives_one_batch_and_warns():
    strata = ["a"] * 10 + ["rare"] * 2
    with pytest.warns(StratumTooSmallWarning, match=r"'rare'.*has 2 rows.*min_samples_per_stratum=3"):
        batches = stratified_batches(strata, 3, seed=1, allow_single_batch=True)
    assert len(batches) == 1
    assert sorted(batches[0].tolist()) == list(range(12))


def test_epochs_are_new_shuffles_with_same_counts():
    strata = np.r_[np.ones(30, int), np.zeros(970, int)]
    plans = [plan_batches(strata, 2, seed=5, epoch=e) for e in range(4)]
    orders = {tuple(p.order.tolist()) for p in plans}
    assert len(orders) == 4
    for p in plans[1:]:
        np.testing.assert_array_equal(p.counts, plans[0].counts)


def test_seed_none_is_recorded_and_reusable():
    strata = np.r_[np.ones(10, int), np.zeros(90, int)]
    plan = plan_batches(strata, 1, epoch=2)
    assert isinstance(plan.seed, int)
    assert_same_batches(stratified_batches(strata, 1, seed=plan.seed, epoch=2), plan.batches)


def test_seed_sequence_and_generator():
    strata = np.r_[np.ones(10, int), np.zeros(90, int)]
    sequence = np.random.SeedSequence(123)
    assert_same_batches(stratified_batches(strata, 1, seed=sequence),
                        stratified_batches(strata, 1, seed=123))
    generator = np.random.default_rng(7)
    first = stratified_batches(strata, 1, seed=generator)
    second = stratified_batches(strata, 1, seed=generator)
    assert not all(np.array_equal(a, b) for a, b in zip(first, second))  # it advanced
    with pytest.raises(ValueError, match="epoch=1 cannot be selected when seed is a numpy Generator"):
        stratified_batches(strata, 1, seed=np.random.default_rng(7), epoch=1)


def test_r_stream_epochs_are_consecutive_samples():
    strata = np.r_[np.ones(7, int), np.zeros(60, int), np.full(20, 2)]
    stream = RStream(2024)
    for epoch in range(4):
        permutation = stream.permutation(strata.size)
        expected = reference_batches(strata, permutation, 2)
        assert_same_batches(stratified_batches(strata, 2, seed=2024, rng="R", epoch=epoch), expected)


def test_plan_report():
    strata = ["pos"] * 3 + ["neg"] * 7
    plan = plan_batches(strata, 1, seed=0)
    assert plan.strata == ("neg", "pos")
    assert plan.counts.tolist() == [[2, 1], [2, 1], [3, 1]]
    batch_of_row = plan.batch_of_row()
    for b, rows in enumerate(plan.batches):
        assert np.all(batch_of_row[rows] == b)
    table = plan.counts_table()
    assert table.splitlines()[0].split() == ["batch", "neg", "pos", "total"]
    assert "BatchPlan(num_batches=3" in repr(plan)
    np.testing.assert_array_equal(plan[-1], plan.batches[-1])


# --- inputs -------------------------------------------------------------------------------


def test_accepted_label_types_give_identical_batches():
    base = np.array([0, 1, 1, 0, 2, 2, 0, 1, 2, 0, 0, 1])
    names = np.array(["x", "y", "z"])
    expected = stratified_batches(base, 1, seed=9)
    variants = [
        base.tolist(),
        base.astype(np.int8),
        base.astype(float) / 3,
        names[base],
        names[base].astype(object),
        pd.Series(names[base]),
        pd.Series(names[base], dtype="category"),
        pd.Series(base, dtype="Int64"),
        pd.Categorical(names[base], categories=["z", "unused", "y", "x"]),
        pd.Series(names[base], dtype="string"),
    ]
    for variant in variants:
        assert_same_batches(stratified_batches(variant, 1, seed=9), expected)
    bools = base == 0
    assert_same_batches(stratified_batches(bools, 1, seed=9), stratified_batches(bools.astype(int), 1, seed=9))


def test_unused_categories_are_not_strata():
    strata = pd.Categorical(["a", "b"] * 5, categories=["a", "b", "never"])
    plan = plan_batches(strata, 1, seed=0)
    assert plan.strata == ("a", "b")
    assert plan.num_batches == 5


def test_large_sparse_integer_labels():
    strata = np.array([10**15, -(10**15), 3] * 4)
    plan = plan_batches(strata, 2, seed=1)
    assert plan.num_batches == 2
    assert plan.strata == (-(10**15), 3, 10**15)


@pytest.mark.parametrize(
    "strata, row, shown",
    [
        ([1.0, 2.0, np.nan, 1.0], 2, "nan"),
        (["a", None, "b"], 1, "None"),
        (pd.Series(["a", "b", pd.NA]), 2, "(<NA>|nan)"),  # pandas >= 3 stores NaN
        (pd.Series([1, None, 2], dtype="Int64"), 1, "(<NA>|nan)"),
        (pd.Categorical(["a", None, "b"]), 1, "missing category"),
        (pd.DataFrame({"y": [1, 2, 3], "g": ["a", "b", None]}), 2, "(None|nan)"),
    ],
)
def test_missing_values_name_the_row(strata, row, shown):
    with pytest.raises(ValueError, match=rf"missing value at row {row} \(0-based\): .*{shown}"):
        stratified_batches(strata, 1)


# --- validation -----------------------------------------------------------------------


@pytest.mark.parametrize(
    "kwargs, error, message",
    [
        ({"min_samples_per_stratum": 0}, ValueError,
         "min_samples_per_stratum must be a positive integer, got min_samples_per_stratum=0"),
        ({"min_samples_per_stratum": -3}, ValueError, "got min_samples_per_stratum=-3"),
        ({"min_samples_per_stratum": True}, TypeError,
         "min_samples_per_stratum must be an integer, got min_samples_per_stratum=True of type bool"),
        ({"min_samples_per_stratum": 2.5}, TypeError, "got min_samples_per_stratum=2.5 of type float"),
        ({"min_samples_per_stratum": "2"}, TypeError, "got min_samples_per_stratum='2' of type str"),
        ({"rng": "torchh"}, ValueError, "rng must be one of 'numpy', 'R', 'torch', 'index', got rng='torchh'"),
        ({"epoch": -1}, ValueError, "epoch must be an integer >= 0, got epoch=-1"),
        ({"epoch": 1.0}, TypeError, "epoch must be an integer, got epoch=1.0"),
        ({"shuffle": 1}, TypeError, "shuffle must be True or False, got shuffle=1"),
        ({"seed": "abc"}, TypeError, "seed must be None, an int, a numpy.random.SeedSequence"),
        ({"seed": True}, TypeError, "seed must be an integer \\(or None\\), got seed=True"),
        ({"seed": -5}, ValueError, "seed must be an integer >= 0, got seed=-5. rng='numpy' takes"),
        ({"seed": 1.5, "rng": "R"}, TypeError, "seed must be an integer \\(or None\\) for rng='R'"),
        ({"seed": 3, "shuffle": False}, ValueError,
         "seed=3 has no effect since shuffle=False"),
    ],
)
def test_bad_arguments_name_argument_value_and_fix(kwargs, error, message):
    arguments = {"min_samples_per_stratum": 1, **kwargs}
    m = arguments.pop("min_samples_per_stratum")
    with pytest.raises(error, match=message):
        stratified_batches([0, 1, 0, 1], m, **arguments)


@pytest.mark.parametrize(
    "strata, error, message",
    [
        ([], ValueError, "strata is empty \\(0 rows\\)"),
        (np.zeros((5, 0)), ValueError, "strata is a 2-D array with zero columns"),
        (pd.DataFrame(index=range(3)), ValueError, "DataFrame with zero columns"),
        (np.zeros((2, 2, 2)), ValueError, "must be 1-D .* or 2-D .*Reshape it"),
        (5, TypeError, "strata must be array-like with one label per row"),
        ("abc", TypeError, "strata must be array-like"),
        (None, TypeError, "strata must be array-like"),
        ({"a": np.array([1, 2, 3]), "b": np.array([1, 2])}, ValueError,
         "strata columns must all have the same length, but strata\\['b'\\] has 2 rows"),
    ],
)
def test_bad_strata(strata, error, message):
    with pytest.raises(error, match=message):
        stratified_batches(strata, 1)


def test_core_imports_no_framework():
    code = (
        "import sys, pystratum\n"
        "pystratum.stratified_batches([0, 1, 0, 1], 1, seed=1)\n"
        "pystratum.stratified_batches([0, 1, 0, 1], 1, seed=1, rng='R')\n"
        "heavy = [m for m in ('torch', 'pandas', 'rpy2') if m in sys.modules]\n"
        "assert not heavy, heavy\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


def test_public_names():
    assert set(pystratum.__all__) >= {"stratified_batches", "plan_batches", "RStream", "BatchPlan",
                                      "StratumTooSmallWarning"}


@settings(max_examples=150)
@given(sizes=st.lists(st.integers(1, 30), min_size=1, max_size=12), n_batches=st.integers(1, 10),
       data=st.data())
def test_batch_lookup_matches_a_search_per_rank(sizes, n_batches, data):
    """Chunk by chunk, the lookup lists the batch of every rank (pseudo-batch B for the
    rows a policy leaves out), whatever the chunks and however uneven the cuts."""
    import pystratum.engine._assemble as assemble

    cuts = draw_any_cuts(data, sizes, n_batches)
    sizes = np.asarray(sizes, dtype=np.int64)
    lookup = assemble._BatchLookup(cuts, sizes)
    seen = np.zeros(len(sizes), dtype=np.int64)
    while (seen < sizes).any():
        counts = np.array([data.draw(st.integers(0, int(left))) for left in sizes - seen])
        if counts.sum() == 0:  # the simplest draw takes every rank left at once
            counts = sizes - seen
        expected = np.concatenate([
            np.searchsorted(cuts[s], np.arange(seen[s], seen[s] + counts[s]), side="right") - 1
            for s in range(len(sizes))
        ])
        np.testing.assert_array_equal(lookup.next_batches(counts), expected)
        seen += counts


@pytest.mark.parametrize("method", ["running_count", "chunked_sort"])
@pytest.mark.parametrize("chunk_rows", [1, 7, 64])
def test_assembly_across_chunk_boundaries(monkeypatch, chunk_rows, method):
    """Both methods work chunk by chunk; small chunks put boundaries everywhere."""
    import pystratum.engine._assemble as assemble

    monkeypatch.setattr(assemble, "_CHUNK_ROWS", chunk_rows)
    rng = np.random.default_rng(chunk_rows)
    for n_strata in (1, 2, 3, 9):
        codes = np.concatenate([np.arange(n_strata), rng.integers(0, n_strata, 300)]).astype(np.int8)
        permutation = rng.permutation(codes.size)
        for m in (1, 3):
            cuts = MinPerStratum(m).allocate(strata_of_sizes(np.bincount(codes)), 0).cuts
            got = assemble_batches(codes, permutation, cuts, method=method).batches()
            assert_same_batches(got, reference_batches(codes, permutation, m))


@settings(max_examples=60)
@given(strata=st.lists(st.integers(0, 3), min_size=20, max_size=400), m=st.integers(1, 4),
       seed=st.integers(0, 2**32), rng=st.sampled_from(["numpy", "R"]))
def test_different_epochs_give_different_orders(strata, m, seed, rng):
    # With N >= 20 two uniform permutations coincide with probability <= 1/20!.
    if rng == "R":
        seed %= 2**31
    plans = [quiet(plan_batches, strata, m, seed=seed, rng=rng, epoch=e) for e in range(3)]
    assert len({tuple(p.order.tolist()) for p in plans}) == 3
    for p in plans[1:]:
        np.testing.assert_array_equal(p.counts, plans[0].counts)
