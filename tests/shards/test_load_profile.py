"""shard_load_profile: what an LRU cache of every size loads, against a replayed cache."""

from collections import OrderedDict

import numpy as np
import pytest
from hypothesis import given, strategies as st

import pystratum
from pystratum import kernels
from pystratum.policies import MinPerStratum, Targets
from pystratum.shards import shard_load_profile


def replayed_lru_loads(plan, shard_of_row, capacity, kept_rows=True):
    """Shard loads of an LRU cache of ``capacity`` shards, batch by batch (the slow way)."""
    cache, loads, served = OrderedDict(), 0, set()
    for b in range(plan.num_batches):
        rows = plan.order[plan.bounds[b]:plan.bounds[b + 1]].tolist()
        if kept_rows:
            rows = [r for r in rows if r not in served]
            served.update(rows)
        for shard in np.unique(shard_of_row[rows]).tolist():
            if shard in cache:
                cache.move_to_end(shard)
                continue
            loads += 1
            cache[shard] = True
            if len(cache) > capacity:
                cache.popitem(last=False)
    return loads


class Plan:
    def __init__(self, order, bounds):
        self.order, self.bounds = np.asarray(order), np.asarray(bounds)
        self.num_batches = len(bounds) - 1


@pytest.fixture(params=["compiled", "plain"])
def path(request, monkeypatch):
    if request.param == "plain":
        monkeypatch.setitem(kernels._LOADED, "shards", False)
    else:
        if kernels.compiled("shards") is None:
            pytest.fail("numba is part of the test extras: the compiled path must be tested")
        monkeypatch.setattr(kernels, "MIN_ROWS", 0)
        monkeypatch.setattr(kernels, "LOAD_ROWS", 0)
    return request.param


def test_loads_at_every_cache_size_equal_a_replayed_lru_cache(path):
    labels = np.random.default_rng(0).permutation(np.r_[np.zeros(180), np.ones(5820)]).astype(int)
    shard_of_row = (np.arange(6000) // 100).astype(np.int32)
    plans = [pystratum.plan_batches(labels, MinPerStratum(8), seed=3),
             pystratum.plan_batches(labels, MinPerStratum(8), seed=3,
                                    shards=pystratum.shard_sizes(np.full(60, 100)), window=2),
             pystratum.plan_batches(labels, Targets({0: .5, 1: .5}, 64), seed=3,
                                    shards=pystratum.shard_sizes(np.full(60, 100)), window=2)]
    for plan in plans:
        for kept in (True, False):
            profile = shard_load_profile(plan, shard_of_row, kept_rows=kept)
            for capacity in (1, 2, 4, 6, 10, 30, 59, 60, 100):
                assert profile.loads(capacity) == replayed_lru_loads(plan, shard_of_row, capacity,
                                                                     kept)
            need = profile.one_pass_cache
            assert profile.loads(need) == profile.first_reads
            assert need == 1 or profile.loads(need - 1) > profile.first_reads


@given(st.lists(st.lists(st.integers(0, 11), min_size=1, max_size=6), min_size=1, max_size=25),
       st.integers(1, 14), st.booleans())
def test_any_batches_any_cache(batches, capacity, kept):
    order = np.concatenate([np.asarray(b) for b in batches])
    bounds = np.r_[0, np.cumsum([len(b) for b in batches])]
    plan = Plan(order, bounds)
    shard_of_row = np.arange(12) // 3  # 4 shards of 3 rows
    profile = shard_load_profile(plan, shard_of_row, kept_rows=kept)
    assert profile.loads(capacity) == replayed_lru_loads(plan, shard_of_row, capacity, kept)
    distinct = [np.unique(shard_of_row[b]).shape[0] for b in batches]
    assert profile.shards_per_batch[1] <= max(distinct)


def test_a_row_served_again_reads_no_shard():
    # rows 0..3 in shard 0, 4..7 in shard 1; rows 0 and 1 served again in batch 2
    plan = Plan([0, 4, 1, 5, 0, 1, 2, 3], [0, 2, 4, 6, 8])
    profile = shard_load_profile(plan, np.array([0, 0, 0, 0, 1, 1, 1, 1]))
    assert profile.loads(1) == 5 and profile.loads(2) == 2
    # read again, batch 2 asks for shard 0 while the cache of one holds shard 1
    replayed = shard_load_profile(plan, np.array([0, 0, 0, 0, 1, 1, 1, 1]), kept_rows=False)
    assert replayed.loads(1) == 5 and replayed.shards_per_batch == (1.5, 2)
    assert profile.shards_per_batch == (1.25, 2)  # batch 2 reads nothing


@pytest.mark.parametrize("bad, match", [
    (np.array([0.5, 1.0]), r"^shard_of_row must be a 1-D integer array"),
    (np.array([[0, 1]]), r"^shard_of_row must be a 1-D integer array"),
    (np.array([0]), r"^shard_of_row must hold a shard for every row the plan serves"),
    (np.array([0, -1]), r"^shard_of_row must hold shard indices >= 0"),
])
def test_bad_shard_maps_are_refused_naming_the_argument(bad, match):
    with pytest.raises((TypeError, ValueError), match=match):
        shard_load_profile(Plan([0, 1], [0, 1, 2]), bad)


@pytest.mark.parametrize("capacity", [0, -1, True, 1.5, "4"])
def test_a_cache_size_is_a_whole_number_of_shards(capacity):
    profile = shard_load_profile(Plan([0, 1], [0, 1, 2]), np.array([0, 1]))
    with pytest.raises(ValueError, match=r"^cache_shards must be a whole number >= 1"):
        profile.loads(capacity)


@given(st.lists(st.integers(0, 40), min_size=1, max_size=60),
       st.sampled_from([np.int32, np.int64, np.uint16, np.uint64]), st.integers(0, 2))
def test_fast_renumbering_and_distinct_keys_equal_numpy_unique(ids, dtype, spread):
    # the profile's own O(n) renumbering and sort-and-mask distinct give np.unique's values,
    # on both paths (ids below twice the row count, and sparse ids far above it)
    from pystratum.shards._profile import _renumbered, _sorted_distinct

    shard_of_row = np.asarray(ids, dtype=np.int64) * (1, 7, 10**6)[spread]
    shard_of_row = shard_of_row.astype(dtype)
    expected = np.unique(shard_of_row.astype(np.int64), return_inverse=True)[1].reshape(-1)
    got = _renumbered(shard_of_row)
    assert got.dtype == np.int64 and np.array_equal(got, expected)
    keys = np.asarray(ids, dtype=np.int64) * 1000 + np.arange(len(ids)) % 3
    assert np.array_equal(_sorted_distinct(keys), np.unique(keys))


def test_sparse_shard_ids_give_the_loads_of_their_dense_renumbering(path):
    labels = np.random.default_rng(1).permutation(np.r_[np.zeros(300), np.ones(2700)]).astype(int)
    dense = (np.arange(3000) // 100).astype(np.int64)
    plan = pystratum.plan_batches(labels, MinPerStratum(8), seed=5,
                                  shards=pystratum.shard_sizes(np.full(30, 100)), window=2)
    reference = shard_load_profile(plan, dense)
    for sparse in (dense * 3 + 5, dense * 10**12):
        profile = shard_load_profile(plan, sparse)
        assert profile.first_reads == reference.first_reads
        assert profile.one_pass_cache == reference.one_pass_cache
        assert [profile.loads(c) for c in (1, 2, 4, 31)] == \
            [reference.loads(c) for c in (1, 2, 4, 31)]
