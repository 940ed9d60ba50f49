"""MultiLabel: the construction, its guarantee, repair, strict errors, hostile inputs, vectors."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from _vectors import load_cases, zero_based
from pystratum import plan_batches, stratified_batches
from pystratum.policies import (FixedSize, LabelShortfallWarning, MultiLabel,
                                MultiLabelShortfallError, SingleBatchError,
                                policy_from_params)
from pystratum.policies._multi_label import assign_batches, placing_steps
from _split_safe import chain_of, reference_reorder

IMPOSSIBLE = np.array([[1, 1, 0], [0, 1, 1], [1, 0, 1]])


def correlated(n_rows, n_labels, seed, low=0.01, high=0.4):
    """Labels sharing two latent scores (co-occurring), prevalences ``low``..``high``."""
    rng = np.random.default_rng(seed)
    latent = rng.standard_normal((n_rows, 2))
    labels = np.zeros((n_rows, n_labels), dtype=bool)
    for column, share in enumerate(np.linspace(low, high, n_labels)):
        score = latent @ rng.standard_normal(2) + rng.standard_normal(n_rows) * 0.6
        labels[:, column] = score > np.quantile(score, 1 - share)
    return labels


def condition_holds(labels, n_batches, m):
    """Per label: the documented sufficient condition (A) and (C), for guaranteed labels."""
    n_rows = labels.shape[0]
    sizes = labels.sum(axis=0)
    order = np.argsort(sizes, kind="stable")
    holds = {}
    for step, label in enumerate(order.tolist()):
        if sizes[label] < m * n_batches:
            continue
        earlier = order[:step]
        free_of_earlier = labels[:, label] & ~labels[:, earlier].any(axis=1)
        a = int(free_of_earlier.sum()) >= m * n_batches
        c = sum(int(sizes[j]) // n_batches + 1 for j in earlier) <= n_rows // n_batches - m
        holds[label] = a and c
    return holds


label_matrices = st.integers(1, 6).flatmap(lambda n_labels: st.lists(
    st.lists(st.integers(0, 1), min_size=n_labels, max_size=n_labels), min_size=1, max_size=60))


@settings(max_examples=150)
@given(rows=label_matrices, batches=st.integers(1, 12), m=st.integers(1, 3),
       seed=st.integers(0, 2**31 - 2), rng=st.sampled_from(["numpy", "R"]))
def test_rows_once_sizes_counts_and_the_guarantee(rows, batches, m, seed, rng):
    labels = np.array(rows, dtype=bool)
    n_rows = labels.shape[0]
    batches = min(batches, n_rows)
    # batches=1 is a plan too (allowed): one batch holding every row.
    plan = plan_batches(labels, MultiLabel(num_batches=batches, min_per_label=m), seed=seed,
                        rng=rng, allow_single_batch=True)
    assert sorted(plan.order.tolist()) == list(range(n_rows))
    sizes = np.diff(plan.bounds)
    assert set(sizes.tolist()) <= {n_rows // batches, -(-n_rows // batches)}
    assert (sizes[:-1] >= sizes[1:]).all()  # the larger batches first
    recount = np.array([labels[batch].sum(axis=0) for batch in plan.batches])
    assert (plan.counts == recount).all()
    # Rows keep the epoch's order inside a batch: same draws, same batches.
    again = plan_batches(labels, MultiLabel(num_batches=batches, min_per_label=m), seed=seed,
                         rng=rng, allow_single_batch=True)
    assert (again.order == plan.order).all()
    # The guarantee of the construction alone (no repair) where the condition holds.
    permutation = np.random.default_rng(seed).permutation(n_rows)
    batch_ties = np.random.default_rng(seed + 1).permutation(batches)
    bare = assign_batches(labels, permutation, batch_ties, m, repair=False)
    for label, holds in condition_holds(labels, batches, m).items():
        if holds:
            assert bare.counts[:, label].min() >= m, label


@settings(max_examples=60)
@given(sizes=st.lists(st.integers(0, 40), min_size=1, max_size=5), empty=st.integers(0, 20),
       batches=st.integers(1, 10), seed=st.integers(0, 10**6))
def test_single_label_rows_meet_the_guarantee_when_capacity_allows(sizes, empty, batches, seed):
    """Rows with one label each satisfy (A); with (C) every guaranteed label is in every batch."""
    n_labels = len(sizes)
    labels = np.zeros((sum(sizes) + empty, n_labels), dtype=bool)
    labels[np.arange(sum(sizes)), np.repeat(np.arange(n_labels), sizes)] = True
    labels = labels[np.random.default_rng(seed).permutation(labels.shape[0])]
    if labels.shape[0] == 0:
        return
    batches = min(batches, labels.shape[0])
    plan = plan_batches(labels, MultiLabel(num_batches=batches), seed=seed,
                        allow_single_batch=True)
    for label, holds in condition_holds(labels, batches, 1).items():
        if holds:
            assert plan.counts[:, label].min() >= 1
    # Where no batch fills up while labels are dealt, each label is spread within one.
    if sum(s // batches + 1 for s in sizes if s) <= labels.shape[0] // batches:
        spread = plan.counts.max(axis=0) - plan.counts.min(axis=0)
        assert (spread <= 1).all()


@pytest.mark.parametrize("seed", range(8))
def test_repair_meets_the_guarantee_on_correlated_data(seed):
    labels = correlated(4000, 10, seed, low=0.004, high=0.35)
    for batch_size, m in [(8, 1), (16, 2), (32, 3)]:
        plan = plan_batches(labels, MultiLabel(batch_size, min_per_label=m, strict=True),
                            seed=seed)
        sizes = labels.sum(axis=0)
        guaranteed = sizes >= m * plan.num_batches
        assert (plan.counts[:, guaranteed] >= m).all()


def test_repair_is_needed_and_fixes_the_shortfall():
    """A configuration where the construction alone leaves shortfalls that repair removes."""
    labels = correlated(5000, 20, 4, low=0.002, high=0.3)
    n_batches = 1250
    rng = np.random.default_rng(4)
    permutation, batch_ties = rng.permutation(5000), rng.permutation(n_batches)
    bare = assign_batches(labels, permutation, batch_ties, 1, repair=False)
    fixed = assign_batches(labels, permutation, batch_ties, 1, repair=True)
    guaranteed = labels.sum(axis=0) >= n_batches
    assert (bare.counts[:, guaranteed] == 0).sum() > 0
    assert (fixed.counts[:, guaranteed] == 0).sum() == 0
    recount = np.zeros_like(fixed.counts)
    np.add.at(recount, fixed.batch, labels[permutation].astype(np.int64))
    assert (recount == fixed.counts).all()


def test_each_epoch_is_a_new_shuffle_and_seeds_reproduce():
    labels = correlated(500, 5, 1)
    policy = MultiLabel(batch_size=50)
    for rng in ("numpy", "R"):
        first = plan_batches(labels, policy, seed=3, rng=rng, epoch=0)
        second = plan_batches(labels, policy, seed=3, rng=rng, epoch=1)
        assert not (first.order == second.order).all()
        assert (plan_batches(labels, policy, seed=3, rng=rng, epoch=1).order ==
                second.order).all()


def test_torch_stream_serves_it():
    labels = correlated(200, 4, 2)
    plan = plan_batches(labels, MultiLabel(batch_size=20), seed=5, rng="torch")
    assert sorted(plan.order.tolist()) == list(range(200))


def test_the_impossible_example_reports_its_shortfall():
    with pytest.warns(LabelShortfallWarning, match=r"'1' in 1 of 2 batches"):
        plan = plan_batches(IMPOSSIBLE, MultiLabel(num_batches=2), seed=1, rng="R")
    spread = plan.label_spread()
    assert sorted(spread) == ["0", "1", "2"]
    assert min(least for least, _ in spread.values()) == 0
    assert sorted(len(batch) for batch in plan.batches) == [1, 2]
    with pytest.raises(MultiLabelShortfallError, match=r"^min_per_label=1 is not met for "
                                                       r"label\(s\) '1' \(least 0 of 2"):
        plan_batches(IMPOSSIBLE, MultiLabel(num_batches=2, strict=True), seed=1, rng="R")
    assert issubclass(MultiLabelShortfallError, ValueError)


def test_names_from_a_data_frame_the_count_table_and_the_plot():
    import matplotlib
    import pandas

    matplotlib.use("Agg")
    frame = pandas.DataFrame(IMPOSSIBLE, columns=["a", "b", "c"])
    with pytest.warns(LabelShortfallWarning, match=r"label\(s\) 'b' in 1 of 2 batches"):
        plan = plan_batches(frame, MultiLabel(num_batches=2), seed=1, rng="R")
    assert plan.strata == ("a", "b", "c")
    assert plan.counts.shape == (2, 3)
    text = plan.counts_table()
    assert text.splitlines()[0].split() == ["batch", "a", "b", "c", "total"]
    assert [line.split()[-1] for line in text.splitlines()[1:]] == ["2", "1"]
    axes = plan.plot(title="positives per batch")
    assert len(axes.patches) == 2 * 3  # one bar per batch and label


@settings(max_examples=100)
@given(rows=label_matrices, batch_size=st.integers(1, 30), seed=st.integers(0, 2**31 - 1))
def test_split_safe_order_interleaves_placing_labels(rows, batch_size, seed):
    labels = np.array(rows, dtype=bool)
    assembled = plan_batches(labels, MultiLabel(batch_size), seed=seed,
                             allow_single_batch=True)
    split = plan_batches(labels, MultiLabel(batch_size, batch_order="split_safe"), seed=seed,
                         allow_single_batch=True)
    assert split.policy.params()["batch_order"] == "split_safe"
    np.testing.assert_array_equal(split.bounds, assembled.bounds)
    np.testing.assert_array_equal(split.label_counts, assembled.label_counts)
    steps = placing_steps(labels)
    n_labels = labels.shape[1]
    sizes = labels.sum(axis=0)
    for mine, theirs in zip(split.batches, assembled.batches):
        assert sorted(mine.tolist()) == sorted(theirs.tolist())
        # The plain recursion, placing labels in step order (rows of a step keep their order).
        grouped = theirs[np.argsort(steps[theirs], kind="stable")]
        np.testing.assert_array_equal(mine, reference_reorder(grouped, steps,
                                                              np.arange(n_labels + 1)))
        g = 1
        for p in chain_of(len(mine)):
            g *= p
            for chunk in np.split(mine, g):
                for step in range(n_labels + 1):
                    in_batch = int((steps[mine] == step).sum())
                    assert in_batch // g <= int((steps[chunk] == step).sum()) <= -(-in_batch // g)
    # Every positive of the rarest label is placed by it: its exact share in every chunk.
    if n_labels and sizes.min() > 0:
        rarest = int(np.argsort(sizes, kind="stable")[0])
        assert (steps[labels[:, rarest]] == 0).all()


def test_placing_steps_follow_the_assignment_order():
    labels = np.array([[1, 1, 0], [0, 1, 0], [0, 0, 0], [1, 0, 1], [0, 1, 1]], dtype=bool)
    # sizes (2, 3, 2): steps take label 0, then 2, then 1 (ties by column).
    assert placing_steps(labels).tolist() == [0, 2, 3, 0, 1]


def test_split_safe_order_is_an_option_not_the_default():
    labels = correlated(400, 4, 2)
    default = plan_batches(labels, MultiLabel(40), seed=5)
    assembled = plan_batches(labels, MultiLabel(40, batch_order="assembled"), seed=5)
    assert "batch_order" not in default.policy.params()
    for a, b in zip(default.batches, assembled.batches):
        np.testing.assert_array_equal(a, b)
    with pytest.raises(ValueError, match="^batch_order"):
        MultiLabel(40, batch_order="by_label")


def test_policy_round_trip_and_no_allocation():
    for policy in (MultiLabel(256), MultiLabel(num_batches=7, min_per_label=2, strict=True),
                   MultiLabel(32, batch_order="split_safe")):
        record = policy.to_dict()
        assert record["name"] == "multi_label"
        assert policy_from_params(record["name"], record["params"]) == policy
    with pytest.raises(TypeError, match="label matrix"):
        MultiLabel(8).allocate(None, 0)


def test_other_policies_still_read_2d_input_as_stratum_columns():
    labels = np.array([[0, 1], [1, 0], [0, 1], [1, 0], [0, 1], [1, 0]])
    plan = plan_batches(labels, FixedSize(2), seed=1)
    assert plan.label_counts is None and len(plan.strata) == 2  # two combinations
    assert len(stratified_batches(labels, MultiLabel(2), seed=1)) == 3


@pytest.mark.parametrize("kwargs, error, argument", [
    (dict(), TypeError, "batch_size or num_batches"),
    (dict(batch_size=4, num_batches=2), TypeError, "batch_size or num_batches"),
    (dict(batch_size=0), ValueError, "batch_size"),
    (dict(batch_size=2.5), TypeError, "batch_size"),
    (dict(num_batches=True), TypeError, "num_batches"),
    (dict(batch_size=4, min_per_label=0), ValueError, "min_per_label"),
    (dict(batch_size=4, strict="yes"), TypeError, "strict"),
    (dict(batch_size=4, batch_order="sorted"), ValueError, "batch_order"),
    (dict(batch_size=4, batch_order=1), ValueError, "batch_order"),
])
def test_hostile_parameters(kwargs, error, argument):
    with pytest.raises(error, match=f"^{argument}"):
        MultiLabel(**kwargs)


@pytest.mark.parametrize("labels, error, text", [
    (np.array([[0, 2], [1, 0]]), ValueError,
     r"^strata must hold only 0 and 1 \(or booleans\), got 2 at row 0 \(0-based\) in label '1'"),
    (np.array([[0.0, np.nan], [1, 0]]), ValueError,
     r"^strata has a missing value \(NaN\) at row 0 \(0-based\) in label '1'"),
    (np.array([[-1, 0], [1, 0]]), ValueError, r"got -1 at row 0 \(0-based\) in label '0'"),
    (np.zeros((4, 0)), ValueError, r"^strata has 0 columns"),
    (np.zeros((0, 3)), ValueError, r"^strata has 0 rows"),
    (np.array([0, 1, 1]), ValueError, r"^strata must be 2-D \(rows x labels\)"),
    (np.array([["a", "b"]]), TypeError, r"^strata must hold 0/1 numbers"),
])
def test_hostile_label_matrices(labels, error, text):
    with pytest.raises(error, match=text):
        plan_batches(labels, MultiLabel(2), seed=1)


def test_hostile_sizes_and_streams():
    with pytest.raises(ValueError, match=r"^num_batches must be at most the number of rows "
                                         r"\(3\), got num_batches=4"):
        plan_batches(IMPOSSIBLE, MultiLabel(num_batches=4), seed=1)
    with pytest.raises(ValueError, match=r"^rng='index' cannot serve MultiLabel"):
        plan_batches(IMPOSSIBLE, MultiLabel(num_batches=2), seed=1, rng="index")


def test_edge_shapes_work():
    one_label = np.array([[1], [0], [1], [1]])
    plan = plan_batches(one_label, MultiLabel(num_batches=3), seed=2)
    assert plan.counts[:, 0].min() >= 1
    nothing = np.zeros((5, 2), dtype=bool)  # no row has a label: still every row once
    plan = plan_batches(nothing, MultiLabel(num_batches=2), seed=2)
    assert sorted(plan.order.tolist()) == list(range(5)) and plan.counts.sum() == 0
    plan = plan_batches(IMPOSSIBLE, MultiLabel(batch_size=100), seed=2, allow_single_batch=True)
    assert plan.num_batches == 1
    assert plan_batches(IMPOSSIBLE, MultiLabel(num_batches=3), shuffle=False).batches[0].tolist() \
        == [0]


HEADER, CASES = load_cases("multi_label.json")


@pytest.mark.parametrize("case", CASES, ids=[case["id"] for case in CASES])
def test_golden_vectors(case):
    given = case["input"]
    labels = np.array(given["labels"], dtype=np.int64)
    params = given["policy"]["params"]
    policy = policy_from_params("multi_label", params)
    call = dict(seed=given["seed"], rng=given["rng"], epoch=given["epoch"],
                shuffle=given["shuffle"], allow_single_batch=given["allow_single_batch"])
    if "expected_error" in case:
        expected = case["expected_error"]
        kind = {"value_error": ValueError, "type_error": TypeError,
                "label_shortfall": MultiLabelShortfallError,
                "single_batch": SingleBatchError}[expected["class"]]
        with pytest.raises(kind, match=f"^{expected['argument']}"):
            plan_batches(labels, policy, **call)
        return
    with warnings.catch_warnings():
        # Some cases fall short on purpose (their label counts say where); the warning is
        # tested on its own below.
        warnings.simplefilter("ignore", LabelShortfallWarning)
        plan = plan_batches(labels, policy, **call)
    expected = zero_based(case["expected"]["batches"], HEADER["index_base"])
    assert [batch.tolist() for batch in plan.batches] == [list(b) for b in expected]
    assert plan.counts.tolist() == case["expected"]["label_counts"]


@pytest.mark.parametrize("n_labels", [8, 9, 16, 17, 33, 64, 70])
def test_many_labels_pack_into_wider_rows(n_labels):
    labels = correlated(3000, n_labels, n_labels, low=0.01, high=0.3)
    plan = plan_batches(labels, MultiLabel(batch_size=30), seed=n_labels)
    recount = np.array([labels[batch].sum(axis=0) for batch in plan.batches])
    assert (plan.counts == recount).all()
    guaranteed = labels.sum(axis=0) >= plan.num_batches
    assert (plan.counts[:, guaranteed] >= 1).all()


@pytest.mark.parametrize("policy", [MultiLabel(num_batches=1), MultiLabel(batch_size=3),
                                    MultiLabel(batch_size=100)])
def test_a_single_batch_is_refused_naming_rows_labels_and_the_fix(policy):
    for call in (plan_batches, stratified_batches):
        with pytest.raises(SingleBatchError) as caught:
            call(IMPOSSIBLE, policy, seed=2)
        assert str(caught.value) == (
            f"policy={policy!r} gives a single batch holding all 3 rows of the label matrix "
            f"(3 labels), which is not stratified batching (and a whole-dataset batch usually "
            f"exhausts GPU memory). The rarest labels: '0' in 2 rows, '1' in 2 rows, '2' in 2 "
            f"rows. Fix: pass batch_size below 3 or num_batches from 2 to 3 (each label's "
            f"positives are then spread over the batches); or pass allow_single_batch=True if "
            f"one batch per epoch is really meant.")
    assert len(stratified_batches(IMPOSSIBLE, policy, seed=2, allow_single_batch=True)) == 1
    # Two batches are not refused (the example falls short in one of them).
    with pytest.warns(LabelShortfallWarning):
        assert plan_batches(IMPOSSIBLE, MultiLabel(batch_size=2), seed=2).num_batches == 2


def test_a_shortfall_without_strict_warns_once_per_plan_naming_labels_and_batches():
    # Rows {a,b}, {b,c}, {a,c} twice in 4 batches: each label has 4 positives, one per
    # batch would do, but the two batches of one row each miss a label.
    rows = np.array([[1, 1, 0], [0, 1, 1], [1, 0, 1]] * 2)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        plan = plan_batches(rows, MultiLabel(num_batches=4), seed=1)
    shortfalls = [w for w in caught if issubclass(w.category, LabelShortfallWarning)]
    assert len(shortfalls) == 1
    spread = plan.label_spread()
    short = {name: int((plan.label_counts[:, k] < 1).sum())
             for k, name in enumerate(plan.strata) if spread[name][0] < 1}
    assert short  # the example does fall short
    message = str(shortfalls[0].message)
    assert message.startswith("min_per_label=1 is not met in epoch 0: ")
    for name, count in short.items():
        assert f"'{name}' in {count} of 4 batches" in message
    with warnings.catch_warnings(record=True) as caught:  # no shortfall: no warning
        warnings.simplefilter("always")
        plan_batches(rows, MultiLabel(num_batches=3), seed=1)
    assert not [w for w in caught if issubclass(w.category, LabelShortfallWarning)]
