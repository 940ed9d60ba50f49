"""The split-safe order inside a batch (batch_order, pystratum.engine._batch_order).

Properties: every guaranteed g (the chain of the batch size's prime factors,
2s first) gives each of g equal contiguous chunks floor/ceil of every
stratum's count / g; the order is a permutation of the by-stratum batch with
the same rows; the vectorised construction equals a plain recursion
(tests/_split_safe.py); R computes the same places and batches. Then what a
real DataLoader batch looks like after torch.chunk / tensor_split and
accelerate's BatchSamplerShard(split_batches=True).
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import pystratum
from pystratum.engine._batch_order import (BatchPatterns, reorder_split_safe, split_chain,
                                           split_safe_labels, split_safe_labels_many,
                                           split_safe_places)
from pystratum.policies import ClassesPerBatch, Downsample, FixedSize, MinPerStratum, Targets

from _r_helpers import r_function, r_session  # noqa: F401 (fixture)
from _split_safe import guaranteed
from _split_safe import chain_of, reference_labels

counts_strategy = st.lists(st.integers(0, 40), min_size=1, max_size=7).filter(lambda c: sum(c) > 0)


def assert_chunks_balanced(labels, counts, g):
    chunks = np.asarray(labels).reshape(g, -1)
    for s, c in enumerate(counts):
        per_chunk = (chunks == s).sum(axis=1)
        assert per_chunk.min() >= c // g and per_chunk.max() <= -(-c // g), (counts, g, s)


@given(counts_strategy)
def test_every_guaranteed_split_gives_every_chunk_floor_or_ceil_of_each_stratum(counts):
    labels = split_safe_labels(counts)
    assert np.array_equal(np.bincount(labels, minlength=len(counts)), counts)
    for g in guaranteed(sum(counts)):
        assert_chunks_balanced(labels, counts, g)


@given(counts_strategy)
def test_the_vectorised_order_equals_the_plain_recursion(counts):
    assert split_chain(sum(counts)) == chain_of(sum(counts))
    assert np.array_equal(split_safe_labels(counts), reference_labels(counts))


@given(counts_strategy)
def test_places_are_a_permutation_keeping_each_stratums_rows_in_order(counts):
    places = split_safe_places(counts)
    n = sum(counts)
    assert sorted(places.tolist()) == list(range(n))
    labels = split_safe_labels(counts)
    offsets = np.cumsum(counts) - counts
    for s, c in enumerate(counts):
        mine = places[offsets[s]:offsets[s] + c]
        assert (np.diff(mine) > 0).all() and (labels[mine] == s).all()


def test_the_chain_puts_powers_of_two_first():
    assert split_chain(24) == [2, 2, 2, 3]
    assert guaranteed(24) == [2, 4, 8, 24]
    assert split_chain(1) == [] and split_chain(13) == [13]
    # Known limit: (4, 3, 3) with g = 5 is outside n = 10's chain (2, 10): best effort only.
    assert guaranteed(10) == [2, 10]


@st.composite
def strata_and_policy(draw):
    n_strata = draw(st.integers(2, 4))
    sizes = draw(st.lists(st.integers(4, 60), min_size=n_strata, max_size=n_strata))
    y = np.repeat(np.arange(n_strata), sizes)
    np.random.default_rng(draw(st.integers(0, 99))).shuffle(y)
    kind = draw(st.sampled_from(["targets", "downsample", "min", "fixed"]))
    if kind == "targets":
        policy = Targets("balanced", draw(st.integers(n_strata, 24)))
    elif kind == "downsample":
        policy = Downsample({"0": 0.5}, Targets("balanced", draw(st.integers(n_strata, 16))))
    elif kind == "min":
        policy = MinPerStratum(draw(st.integers(1, 4)), batch_order="split_safe")
    else:
        # Feasible sizes only: every batch needs a row of the smallest stratum.
        fewest = -(-len(y) // min(sizes)) + 1
        policy = FixedSize(draw(st.integers(max(2 * n_strata, fewest), max(24, fewest))),
                           batch_order="split_safe")
    return y, policy, draw(st.sampled_from(["numpy", "R", "index"])), draw(st.integers(0, 9))


@given(strata_and_policy())
def test_plans_keep_the_assembled_rows_and_balance_every_guaranteed_split(case):
    y, policy, rng, seed = case
    params = dict(policy.params(), batch_order="assembled")
    if policy.name == "downsample":
        params["base"] = policy.base.to_dict()
    assembled = type(policy)(**params)
    split = pystratum.plan_batches(y, policy, seed=seed, rng=rng, allow_single_batch=True)
    plain = pystratum.plan_batches(y, assembled, seed=seed, rng=rng, allow_single_batch=True)
    assert split.num_batches == plain.num_batches
    for got, base in zip(split.batches, plain.batches):
        assert sorted(got.tolist()) == sorted(base.tolist())
        counts = [int((y[base] == s).sum()) for s in range(y.max() + 1)]
        labels = y[got]
        for g in guaranteed(len(got)):
            assert_chunks_balanced(labels, counts, g)
        # Within a stratum the assembled order is kept.
        for s in range(y.max() + 1):
            assert got[labels == s].tolist() == [r for r in base.tolist() if y[r] == s]
    if split.weights is not None:
        w = np.asarray(split.weights)
        lookup = dict(zip(np.concatenate(plain.batches).tolist(), np.asarray(plain.weights)))
        assert np.allclose(w, [lookup[r] for r in np.concatenate(split.batches).tolist()])


def test_defaults_follow_the_table():
    y = np.repeat([0, 1], [80, 80])
    split = pystratum.plan_batches(y, Targets("balanced", 16), seed=3, rng="numpy")
    assert y[split.batches[0]].tolist() == [0, 1] * 8
    by_stratum = pystratum.plan_batches(y, Targets("balanced", 16, batch_order="assembled"),
                                        seed=3, rng="numpy")
    assert y[by_stratum.batches[0]].tolist() == [0] * 8 + [1] * 8
    index = pystratum.plan_batches(y, MinPerStratum(8), seed=3, rng="index")
    assert not MinPerStratum(8).split_safe() and MinPerStratum(8).split_safe(index=True)
    assert y[index.batches[0]].tolist() == [0, 1] * 8
    assert ClassesPerBatch(4, 2).split_safe() and Downsample({"0": 0.5}, 2).split_safe()


def test_batch_order_is_recorded_only_when_given_and_rebuilds():
    from pystratum.policies import policy_from_params

    assert "batch_order" not in Targets("balanced", 8).params()
    policy = MinPerStratum(2, batch_order="split_safe")
    assert policy.params() == {"m": 2, "batch_order": "split_safe"}
    assert policy_from_params("min_per_stratum", policy.params()) == policy
    with pytest.raises(ValueError, match=r"^batch_order must be .*got batch_order='x'"):
        Targets("balanced", 8, batch_order="x")


def test_patterns_are_shared_by_batches_with_one_count_vector():
    counts = np.array([[3, 3, 4], [5, 5, 4]])
    patterns = BatchPatterns(counts)
    assert patterns.unique.shape[0] == 2 and patterns.start[0] == patterns.start[1]


@given(counts=st.lists(st.integers(0, 6), min_size=1, max_size=4).filter(any),
       n_batches=st.integers(1, 40), step_rows=st.sampled_from([1, 7, 64, 1 << 14]))
def test_one_shared_count_vector_is_permuted_in_place_as_the_places_say(counts, n_batches,
                                                                      step_rows):
    """permute_columns (blocks of batches, a remainder block) and place_split_safe's
    one-pattern path put row j of every batch at its place, as a plain scatter does."""
    import pystratum.engine._batch_order as batch_order

    places = split_safe_places(counts)
    width = places.shape[0]
    order = np.random.default_rng(n_batches).permutation(n_batches * width).astype(np.int64)
    expected = np.empty_like(order)
    expected[(np.arange(n_batches)[:, None] * width + places[None, :]).reshape(-1)] = order
    saved = batch_order._PERMUTE_ROWS
    batch_order._PERMUTE_ROWS = step_rows
    try:
        got = order.copy()
        batch_order.permute_columns(got, places)
        placed = batch_order.place_split_safe(order.copy(), np.arange(n_batches + 1) * width,
                                              np.repeat(np.array(counts)[:, None], n_batches, 1))
    finally:
        batch_order._PERMUTE_ROWS = saved
    np.testing.assert_array_equal(got, expected)
    np.testing.assert_array_equal(placed, expected)


@settings(max_examples=60,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(rows=st.lists(counts_strategy, min_size=1, max_size=12),
       shared=st.booleans())
def test_compiled_patterns_equal_numpy_s(compiled_paths, rows, shared):
    width = max(len(row) for row in rows)
    counts = np.array([row + [0] * (width - len(row)) for row in rows], dtype=np.int64)
    if shared:
        counts[:] = counts[0]
    compiled_paths(False)
    labels, places, start = split_safe_labels_many(counts)
    for u, row in enumerate(counts):
        assert labels[start[u]:start[u] + row.sum()].tolist() == \
            split_safe_labels(row).tolist()
        assert places[start[u]:start[u] + row.sum()].tolist() == \
            split_safe_places(row).tolist()
    compiled_paths(True)
    again = split_safe_labels_many(counts)
    assert [part.tolist() for part in again] == [labels.tolist(), places.tolist(), start.tolist()]


@settings(max_examples=60,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(n_rows=st.integers(1, 400), n_strata=st.integers(1, 300), n_cuts=st.integers(0, 8),
       seed=st.integers(0, 2**32 - 1))
def test_compiled_reorder_equals_numpy_s(compiled_paths, n_rows, n_strata, n_cuts, seed):
    rng = np.random.default_rng(seed)
    codes = rng.integers(0, n_strata, n_rows)
    first = np.array([np.flatnonzero(codes == s)[0] if (codes == s).any() else n_rows + s
                      for s in range(n_strata)])
    order = rng.permutation(n_rows)
    bounds = np.r_[0, np.sort(rng.integers(0, n_rows + 1, n_cuts)), n_rows].astype(np.int64)
    compiled_paths(False)
    expected = reorder_split_safe(order.copy(), bounds, codes, first)
    compiled_paths(True)
    assert reorder_split_safe(order.copy(), bounds, codes, first).tolist() == expected.tolist()


def test_reorder_of_any_batch_order_equals_the_reference():
    from _split_safe import reference_reorder

    rng = np.random.default_rng(5)
    codes = rng.integers(0, 3, 90)
    first = np.array([np.flatnonzero(codes == s)[0] for s in range(3)])
    order = rng.permutation(90)
    bounds = np.array([0, 30, 60, 90])
    got = reorder_split_safe(order, bounds, codes, first)
    turn = np.empty(3, dtype=np.int64)
    turn[np.argsort(first, kind="stable")] = np.arange(3)
    for b in range(3):
        batch = order[bounds[b]:bounds[b + 1]]
        grouped = batch[np.argsort(turn[codes[batch]], kind="stable")]
        assert got[bounds[b]:bounds[b + 1]].tolist() == \
            reference_reorder(grouped, codes, turn).tolist()


@given(counts_strategy)
def test_r_computes_the_same_places(r_session, counts):  # noqa: F811
    labels = r_function(r_session, "pystratum:::split_safe_labels")
    with r_session.localconverter(r_session.converter):
        got = np.asarray(labels(r_session.ro.FloatVector(counts)), dtype=np.int64) - 1
    assert np.array_equal(got, split_safe_labels(counts))


@pytest.mark.parametrize("rng", ["R", "index"])
@pytest.mark.parametrize("policy", [Targets("balanced", 12), Targets({"0": 0.25, "1": 0.5, "2": 0.25}, 20),
                                    Downsample({"0": 0.3}, Targets("balanced", 10)),
                                    MinPerStratum(3, batch_order="split_safe"),
                                    FixedSize(16, batch_order="split_safe"),
                                    FixedSize(16, batch_order="assembled")], ids=repr)
def test_r_gives_the_same_split_safe_batches(r_session, policy, rng):  # noqa: F811
    import pystratum.r as pr

    y = np.random.default_rng(11).integers(0, 3, 400)
    expected = pystratum.plan_batches(y, policy, seed=4, rng=rng).batches
    got = pr.stratified_batches(y, policy, seed=4, rng=rng)
    assert len(got) == len(expected)
    for a, b in zip(got, expected):
        np.testing.assert_array_equal(a, b)


def test_dataloader_batches_survive_torch_chunk_and_accelerate_split():
    import torch
    from pystratum.torch import StratifiedBatchSampler

    y = np.repeat([0, 1], [400, 400])
    sampler = StratifiedBatchSampler(y, Targets("balanced", 16), seed=0)
    dataset = torch.utils.data.TensorDataset(torch.as_tensor(y))
    loader = torch.utils.data.DataLoader(dataset, batch_sampler=sampler)
    for (labels,) in loader:
        for g in (2, 4, 8):
            for chunk in torch.chunk(labels, g):
                assert torch.bincount(chunk, minlength=2).tolist() == [8 // g, 8 // g]
            for chunk in torch.tensor_split(labels, g):
                assert torch.bincount(chunk, minlength=2).tolist() == [8 // g, 8 // g]
    import accelerate.data_loader as accelerate

    class Sized(list):
        """Our batches with the batch_size that split_batches=True requires of a batch sampler."""
        batch_size = 16

    for g in (2, 4):
        shards = [accelerate.BatchSamplerShard(Sized(sampler), num_processes=g, process_index=i,
                                               split_batches=True) for i in range(g)]
        for parts in zip(*shards):
            for part in parts:
                assert np.bincount(y[part], minlength=2).tolist() == [8 // g, 8 // g]
