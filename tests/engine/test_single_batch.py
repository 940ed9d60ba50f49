"""No silent one-batch epochs (issue 19, part 3): the single-batch guard of the core.

A plan of one batch (every row in it) is a ``SingleBatchError`` (a
ValueError) unless
``allow_single_batch=True``; the message leads with the argument it blames
(``policy``, or ``strata`` for several 0/1 columns), names the smallest
strata and the fix. The vector cases ``error_single_batch_*`` check that R
refuses the same inputs with the same class and argument.
"""

import re
import warnings

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import pystratum
from pystratum import lazy_plan, plan_batches, stratified_batches
from pystratum.policies import FixedSize, MinPerStratum, StratumTooSmallWarning

ISSUE_LABELS = [0] * 5000 + [1] * 300 + [2]


def _indicator_matrix(n_rows=3000, n_columns=8, seed=0):
    """A 0/1 multi-label target: label j present with probability 0.1 + 0.05 j."""
    rng = np.random.default_rng(seed)
    return (rng.random((n_rows, n_columns)) < 0.1 + 0.05 * np.arange(n_columns)).astype(np.int64)


@pytest.mark.parametrize("rng, shuffle", [("numpy", True), ("R", True), ("torch", True),
                                          ("index", True), ("numpy", False)])
def test_the_issue_example_is_refused_on_every_stream(rng, shuffle):
    seed = 1 if shuffle else None
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # refused without a warning first
        with pytest.raises(ValueError) as raised:
            stratified_batches(ISSUE_LABELS, MinPerStratum(1), seed=seed, rng=rng,
                               shuffle=shuffle)
    message = str(raised.value)
    assert message.startswith("policy=MinPerStratum(m=1) gives a single batch holding all "
                              "5301 rows")
    assert "The smallest strata: 2 with 1 row, 1 with 300 rows, 0 with 5000 rows." in message
    assert "merge or drop the one-row strata" in message
    assert "allow_single_batch=True" in message


def test_allowed_the_plan_is_one_batch_of_every_row():
    batches = stratified_batches(ISSUE_LABELS, 1, seed=1, allow_single_batch=True)
    assert len(batches) == 1 and np.array_equal(np.sort(batches[0]), np.arange(5301))
    plan = lazy_plan(ISSUE_LABELS, 1, seed=1, allow_single_batch=True)
    assert plan.num_batches == 1 and np.array_equal(np.sort(plan[0]), np.arange(5301))


def test_lazy_plan_and_plan_batches_refuse_alike():
    with pytest.raises(ValueError, match=r"^policy=MinPerStratum\(m=1\) gives a single batch"):
        lazy_plan(ISSUE_LABELS, 1, seed=1)
    with pytest.raises(ValueError, match=r"^policy=MinPerStratum\(m=1\) gives a single batch"):
        plan_batches(ISSUE_LABELS, min_samples_per_stratum=1, seed=1)


def test_one_error_class_exported_beside_the_warning():
    assert issubclass(pystratum.SingleBatchError, ValueError)
    assert pystratum.policies.SingleBatchError is pystratum.SingleBatchError
    assert "SingleBatchError" in pystratum.__all__ and "SingleBatchError" in \
        pystratum.policies.__all__
    for call in (stratified_batches, plan_batches, lazy_plan):
        with pytest.raises(pystratum.SingleBatchError):
            call(ISSUE_LABELS, MinPerStratum(1), seed=1)


@pytest.mark.parametrize("policy, n_rows", [(FixedSize(60), 53), (FixedSize(53), 53),
                                            (MinPerStratum(4), 53)])
def test_every_way_to_one_batch_is_refused(policy, n_rows):
    """batch_size >= N, a stratum below m: whatever the cause, one batch is refused."""
    strata = ["a"] * 50 + ["b"] * 3
    with pytest.raises(pystratum.SingleBatchError, match=f"holding all {n_rows} rows"):
        stratified_batches(strata, policy, seed=1)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", StratumTooSmallWarning)
        assert len(stratified_batches(strata, policy, seed=1, allow_single_batch=True)) == 1


def test_a_2d_torch_tensor_of_indicators_is_named_multi_label():
    import torch
    with pytest.raises(pystratum.SingleBatchError, match="look like multi-label indicators"):
        stratified_batches(torch.as_tensor(_indicator_matrix()), 1, seed=1)


def test_allow_single_batch_must_be_a_bool():
    for call in (stratified_batches, lazy_plan):
        with pytest.raises(TypeError, match="allow_single_batch"):
            call(ISSUE_LABELS, 1, seed=1, allow_single_batch="yes")


def test_too_small_warning_gives_way_to_the_error_and_comes_back_when_allowed():
    strata = ["a"] * 10 + ["rare"] * 3
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with pytest.raises(ValueError, match=r"'rare' with 3 rows.*MinPerStratum\(1\) gives at "
                                             r"least 2 batches"):
            stratified_batches(strata, 5, seed=1)
    with pytest.warns(StratumTooSmallWarning, match="'rare'"):
        assert len(stratified_batches(strata, 5, seed=1, allow_single_batch=True)) == 1


def test_fixed_size_at_least_the_data_names_a_smaller_batch_size():
    strata = ["pos"] * 7 + ["neg"] * 20
    for sizes in ("exact", "balanced"):
        with pytest.raises(ValueError, match=r"^policy=FixedSize\(batch_size=1000.*use a smaller "
                                             r"batch_size \(below 14 for 2 batches\)"):
            stratified_batches(strata, FixedSize(1000, sizes=sizes), seed=3)
        assert len(stratified_batches(strata, FixedSize(13, sizes=sizes), seed=3)) >= 2


def _multi_label_forms(matrix):
    names = [f"label_{j}" for j in range(matrix.shape[1])]
    return {
        "2-D array": matrix,
        "boolean 2-D array": matrix.astype(bool),
        "DataFrame of bools": pd.DataFrame(matrix.astype(bool), columns=names),
        "float DataFrame": pd.DataFrame(matrix.astype(float), columns=names),
        "dict of columns": {name: matrix[:, j] for j, name in enumerate(names)},
        "list of rows": [tuple(row) for row in matrix.tolist()],
    }


@pytest.mark.parametrize("form", list(_multi_label_forms(_indicator_matrix(10, 2))))
def test_indicator_columns_say_each_combination_became_a_stratum(form):
    matrix = _indicator_matrix()
    strata = _multi_label_forms(matrix)[form]
    _, sizes = np.unique(matrix, axis=0, return_counts=True)
    with pytest.raises(ValueError) as raised:
        stratified_batches(strata, 1, seed=1)
    message = str(raised.value)
    assert message.startswith("strata has 8 columns of 0/1 values, which look like multi-label "
                              "indicators: each combination of the columns became a stratum")
    assert (f"({sizes.shape[0]} strata, {int((sizes < 2).sum())} of them with fewer than 2 "
            f"rows, too few for two batches of MinPerStratum(m=1))") in message
    assert "all 3000 rows" in message
    assert "pystratum.policies.MultiLabel(batch_size=...)" in message
    assert "stratify by one label column (e.g. the rarest label) or by fewer columns" in message
    assert isinstance(raised.value, pystratum.SingleBatchError)
    assert len(stratified_batches(strata, 1, seed=1, allow_single_batch=True)) == 1


def test_one_indicator_column_or_columns_that_are_not_indicators_blame_the_policy():
    matrix = _indicator_matrix()
    # The rarest label alone: two strata of hundreds of rows, many batches.
    rarest = int(np.argmin(matrix.sum(axis=0)))
    assert len(stratified_batches(matrix[:, rarest], 1, seed=1)) == int(matrix[:, rarest].sum())
    frame = pd.DataFrame({"y": ["a", "b"] * 10 + ["a"], "site": [1] * 10 + [2] * 10 + [3]})
    with pytest.raises(ValueError, match=r"^policy=MinPerStratum\(m=1\) gives a single batch "
                                         r"holding all 21 rows.*\('a', 3\) with 1 row"):
        stratified_batches(frame, 1, seed=1)


def test_indicator_columns_with_enough_rows_per_combination_pass():
    strata = np.array([[0, 1], [1, 0], [1, 1], [0, 0]] * 5)
    assert len(stratified_batches(strata, 1, seed=2)) == 5


# --- the property ------------------------------------------------------------------------------

@st.composite
def strata_and_any_policy(draw):
    n_strata = draw(st.integers(1, 6))
    sizes = draw(st.lists(st.integers(1, 40), min_size=n_strata, max_size=n_strata))
    codes = np.random.default_rng(draw(st.integers(0, 2**32 - 1))).permutation(
        np.repeat(np.arange(n_strata), sizes))
    labels = np.array(draw(st.lists(st.text(min_size=1, max_size=3), min_size=n_strata,
                                    max_size=n_strata, unique=True)), dtype=object)[codes]
    if draw(st.booleans()):
        policy = MinPerStratum(draw(st.integers(1, 12)))
    else:
        policy = FixedSize(draw(st.integers(1, sum(sizes) + 5)),
                           draw(st.integers(1, 2)), sizes=draw(st.sampled_from(["exact",
                                                                                 "balanced"])))
    return labels, policy


@settings(max_examples=150)
@given(case=strata_and_any_policy(), seed=st.integers(0, 2**31 - 1),
       rng=st.sampled_from(["numpy", "R", "index"]))
def test_a_plan_has_two_batches_or_says_why_and_how_to_fix_it(case, seed, rng):
    """Any strata, any policy: >= 2 batches, or the single-batch error naming the smallest
    stratum (unless allowed: then one batch of every row); following the error's advice for
    MinPerStratum gives >= 2 batches whenever it names an m."""
    labels, policy = case
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", StratumTooSmallWarning)
        try:
            allowed = plan_batches(labels, policy, seed=seed, rng=rng, allow_single_batch=True)
        except ValueError as error:  # the policy's own refusal (FixedSize infeasible)
            with pytest.raises(ValueError, match=re.escape(str(error)[:40])):
                plan_batches(labels, policy, seed=seed, rng=rng)
            return
        if allowed.num_batches >= 2:
            again = plan_batches(labels, policy, seed=seed, rng=rng)
            assert all(np.array_equal(a, b) for a, b in zip(again.batches, allowed.batches))
            return
        assert np.array_equal(np.sort(allowed.batches[0]), np.arange(len(labels)))
        with pytest.raises(ValueError) as raised:
            plan_batches(labels, policy, seed=seed, rng=rng)
    message = str(raised.value)
    assert message.startswith(f"policy={policy!r} gives a single batch holding all "
                              f"{len(labels)} rows")
    values, sizes = np.unique(labels, return_counts=True)
    smallest = int(sizes.min())
    assert f"with {smallest} row" in message
    assert any(f"{value!r} with {smallest} row" in message for value in values[sizes == smallest])
    assert "allow_single_batch=True" in message
    advised = re.search(r"MinPerStratum\((\d+)\) gives at least 2 batches", message)
    if advised:
        assert plan_batches(labels, int(advised.group(1)), seed=seed, rng=rng).num_batches >= 2


def test_the_multi_label_fix_is_one_constant():
    """Naming the planned multi-label policy later is a change of this one line (and R's)."""
    from pystratum.engine import _single_batch

    assert _single_batch.MULTI_LABEL_FIX in str(
        pytest.raises(ValueError, stratified_batches, _indicator_matrix(), 1, seed=1).value)
    assert pystratum.stratified_batches.__doc__.count("allow_single_batch") >= 2
