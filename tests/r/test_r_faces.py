"""pystratum.r has R's batch_count_table and negative_pair_batches, in Python's conventions.

Both return what the Python side returns for the same thing: a count table
numbered from 0 (as ``BatchPlan.counts``), and ``NegativeBatch`` objects
equal to ``NegativePairSampler(..., rng="R")``'s.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

import pystratum
import pystratum.r as pr
from pystratum.negatives import NegativePairSampler
from _r_helpers import r_session  # noqa: F401 (fixture)


def test_batch_count_table_equals_the_plan_counts(r_session):
    labels = np.repeat(["a", "b", "c"], [50, 20, 7])
    plan = pystratum.plan_batches(labels, 2, seed=9, rng="R")
    table = pr.batch_count_table(labels, plan.batches)
    assert isinstance(table, pd.DataFrame)
    assert table.index.tolist() == list(range(len(plan)))  # batches from 0, as in Python
    assert table.index.name == "batch" and table.columns.tolist() == ["a", "b", "c"]
    np.testing.assert_array_equal(table.to_numpy(), plan.counts)
    assert table.to_numpy().dtype == np.int64


def test_batch_count_table_of_plain_batches_and_several_columns(r_session):
    strata = pd.DataFrame({"y": [0, 1] * 6, "g": ["x"] * 6 + ["z"] * 6})
    batches = [np.array([0, 1, 2]), np.array([], dtype=np.int64), np.arange(3, 12)]
    table = pr.batch_count_table(strata, batches)
    assert table.shape == (3, 4)
    assert table.sum(axis=1).tolist() == [3, 0, 9]
    assert sorted(table.columns.tolist()) == ["0/x", "0/z", "1/x", "1/z"]
    assert table.loc[2, "1/z"] == 3 and table.loc[0, "0/x"] == 2


@pytest.mark.parametrize("batches,message", [
    ([np.array([0, 12])], r"batches must hold row positions in 0\.\.11 \(0-based"),
    ([np.array([-1, 0])], r"batches must hold row positions in 0\.\.11 \(0-based"),
])
def test_batch_count_table_positions_are_0_based_in_python(r_session, batches, message):
    with pytest.raises(ValueError, match=message) as raised:
        pr.batch_count_table([0, 1] * 6, batches)
    assert raised.value.argument == "batches"


@pytest.mark.parametrize("batches", [np.arange(4), [[0.5, 1]], [["a"]], "0,1", [[True, False]]])
def test_batch_count_table_refuses_what_is_not_batches(r_session, batches):
    with pytest.raises(TypeError, match="batches must be a list of 1-D integer arrays") as raised:
        pr.batch_count_table([0, 1] * 6, batches)
    assert raised.value.argument == "batches"


def _pairs():
    gen = np.random.default_rng(3)
    observed = gen.random((12, 30)) < 0.2
    observed[:, -1] = False
    users, items = np.nonzero(observed)
    order = gen.permutation(users.size)
    return users[order], items[order]


@pytest.mark.parametrize("options", [
    dict(),
    dict(pair_with="random", epoch=2),
    dict(item_weights=np.linspace(0.0, 3.0, 30) + 0.5, reject_observed=False),
])
def test_negative_pair_batches_equal_the_python_sampler(r_session, options):
    users, items = _pairs()
    options = dict(options)
    epoch = options.pop("epoch", 0)
    common = dict(num_items=30, negatives=3, batch_size=16, seed=77, **options)
    got = pr.negative_pair_batches(users, items, epoch=epoch, **common)
    sampler = NegativePairSampler(users, items, rng="R", **common)
    expected = sampler.epoch_batches(epoch)
    assert len(got) == len(expected) > 1
    for mine, theirs in zip(got, expected):
        assert (mine.epoch, mine.index, mine.negatives) == (theirs.epoch, theirs.index,
                                                             theirs.negatives)
        for name, values in theirs.as_dict().items():
            np.testing.assert_array_equal(getattr(mine, name), values, err_msg=name)
            assert getattr(mine, name).dtype == values.dtype, name


def test_negative_pair_batches_errors_name_the_argument(r_session):
    users, items = _pairs()
    with pytest.raises(ValueError) as raised:
        pr.negative_pair_batches(users, items, num_items=30, negatives=0, batch_size=4, seed=1)
    assert raised.value.argument == "negatives"
    with pytest.raises(ValueError) as raised:
        pr.negative_pair_batches(users, items, num_items=30, negatives=2, batch_size=4, seed=1,
                                 rng="numpy")
    assert raised.value.argument == "rng"


def test_negative_pair_batches_refuses_what_the_python_sampler_refuses(r_session):
    users, items = _pairs()
    with pytest.raises(TypeError) as raised:
        pr.negative_pair_batches(users, items, num_items=30, negatives=2, batch_size=4, seed=1,
                                 epoch=1.0)
    assert raised.value.argument == "epoch"
    with pytest.raises(TypeError):
        NegativePairSampler(users, items, num_items=30, negatives=2, batch_size=4, seed=1,
                            rng="R").epoch_batches(1.0)
