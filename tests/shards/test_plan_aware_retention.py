"""Plan-aware retention: BatchServer.plan_run against shard_retention_profile, for every family."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from _reader_data import ArrayShards, serve_epochs_each_shard_read_once
from pystratum import plan_batches, shard_sizes
from pystratum.policies import (ClassesPerBatch, Downsample, FixedSize, MinPerStratum,
                                MultiLabel, Targets)
from pystratum.shards import BatchServer, ShardedBatches, shard_retention_profile

FAMILIES = ("MinPerStratum", "FixedSize", "Targets", "Downsample", "ClassesPerBatch",
            "MultiLabel", "row-random")


def family_plan(family: str, codes: np.ndarray, sizes: np.ndarray, window: int, seed: int):
    """A small plan of ``family`` over ``codes`` stored in shards of ``sizes`` rows."""
    shards = {"shards": shard_sizes(sizes), "window": window}
    one = {"allow_single_batch": True}
    if family == "MinPerStratum":
        return plan_batches(codes, MinPerStratum(1), seed=seed, **shards, **one)
    if family == "FixedSize":
        return plan_batches(codes, FixedSize(8), seed=seed, **shards, **one)
    if family == "Targets":  # stratum 0 (the smallest) recycled
        return plan_batches(codes, Targets({0: 0.5, 1: 0.5}, 8), seed=seed, **shards, **one)
    if family == "Downsample":
        return plan_batches(codes, Downsample({1: 0.5}, FixedSize(8)), seed=seed, **shards, **one)
    if family == "ClassesPerBatch":
        return plan_batches(codes, ClassesPerBatch(2, 2), seed=seed, **shards, **one)
    if family == "MultiLabel":
        labels = np.zeros((codes.shape[0], 3), dtype=bool)
        labels[np.arange(codes.shape[0]), codes % 3] = True
        labels[codes == 0, 1] = True
        return plan_batches(labels, MultiLabel(num_batches=3), seed=seed, **shards, **one)
    return plan_batches(codes, FixedSize(8), seed=seed, **one)  # no shards: row-random


@st.composite
def served_case(draw):
    """Two strata, 3 rows to 1 (stratum 0 the smaller), over a few shards of random sizes."""
    n_shards = draw(st.integers(2, 8))
    sizes = np.array(draw(st.lists(st.integers(4, 12), min_size=n_shards, max_size=n_shards)))
    n = int(sizes.sum())
    codes = np.ones(n, dtype=np.int64)
    codes[:max(4, n // 4)] = 0
    if draw(st.booleans()):  # strata spread over the shards (else the small one first)
        codes = np.random.default_rng(draw(st.integers(0, 99))).permutation(codes)
    return codes, sizes


def serve_planned(plan, sizes, cache_shards, retain_rows):
    server = BatchServer(ArrayShards(sizes), cache_shards=cache_shards, retain_rows=retain_rows)
    batches = plan.batches
    server.plan_run(batches)
    for batch in batches:
        assert server.serve(batch).tolist() == batch.tolist()  # exact rows, in batch order
    return server


@settings(max_examples=120)
@given(case=served_case(), family=st.sampled_from(FAMILIES), window=st.integers(1, 3),
       cache_shards=st.integers(1, 4), budget=st.sampled_from([0, 3, 10, None, "all"]),
       seed=st.integers(0, 2**16))
def test_the_profile_is_what_a_real_server_does(case, family, window, cache_shards, budget,
                                                seed):
    codes, sizes = case
    plan = family_plan(family, codes, sizes, window, seed)
    retain_rows = int(sizes.sum()) if budget == "all" else budget
    server = serve_planned(plan, sizes, cache_shards, retain_rows)
    profile = shard_retention_profile(plan, np.repeat(np.arange(sizes.shape[0]), sizes),
                                      cache_shards=cache_shards, retain_rows=retain_rows)
    stats = server.stats
    assert profile.loads == stats.loads
    assert profile.loads_per_shard.tolist() == server.cache.loads_per_shard.tolist()
    assert profile.peak_kept_rows == stats.peak_kept_rows
    assert profile.retain_refused == stats.retain_refused
    assert profile.retain_rows == server.retain_rows
    # After the run only the recycled rows stay, each released row was served for the last time.
    served = np.concatenate(plan.batches)
    assert stats.kept_rows == int(np.count_nonzero(np.bincount(served) > 1))
    if profile.retain_refused == 0:  # the theorem: within the budget, every shard read once
        assert server.cache.loads_per_shard.max() <= 1
    if budget == "all":
        assert profile.retain_refused == 0


def spread_case():
    """A 4% stratum spread over 50 shards of 100 rows: FixedSize's strata drift apart."""
    labels = (np.random.default_rng(0).random(5000) < 0.04).astype(np.int64)
    return labels, np.full(50, 100)


def test_a_drifting_stratum_no_longer_rereads_its_shards():
    labels, sizes = spread_case()
    plan = plan_batches(labels, FixedSize(64), seed=1, shards=shard_sizes(sizes), window=1)
    # An LRU cache of 2W + 2 shards alone reads shards again (the 4% stratum lags behind) ...
    alone = serve_planned(plan, sizes, 4, 0)
    assert alone.stats.loads > 50 and alone.stats.retain_refused > 0
    # ... and holding aside the few rows the lagging stratum still needs reads each once.
    planned = serve_planned(plan, sizes, 4, None)
    assert planned.cache.loads_per_shard.tolist() == [1] * 50
    assert 0 < planned.stats.peak_kept_rows <= 400  # a few shards' worth of the 4% stratum
    assert planned.stats.kept_rows == 0 and planned.stats.kept_bytes == 0  # all released


def test_rows_beyond_the_budget_are_read_again_never_refused_nor_wrong():
    labels, sizes = spread_case()
    plan = plan_batches(labels, Targets({0: 0.5, 1: 0.5}, 64), seed=1,
                        shards=shard_sizes(sizes), window=1)
    recycled = int(np.count_nonzero(np.bincount(np.concatenate(plan.batches)) > 1))
    for budget in (0, 50, 500, 400):
        server = serve_planned(plan, sizes, 4, budget)  # rows checked inside
        # Rows are held for the plan only while all held rows fit; recycled rows always are.
        assert server.stats.peak_kept_rows <= budget + recycled
        profile = shard_retention_profile(plan, np.repeat(np.arange(50), 100), cache_shards=4,
                                          retain_rows=budget)
        assert (profile.loads, profile.peak_kept_rows, profile.retain_refused) == \
            (server.stats.loads, server.stats.peak_kept_rows, server.stats.retain_refused)
        if budget < 500:
            assert server.stats.retain_refused > 0 and server.cache.loads_per_shard.max() > 1


def test_sharded_batches_plan_each_epoch_and_resume_from_the_middle():
    labels, sizes = spread_case()
    plans = lambda epoch: plan_batches(labels, FixedSize(64), seed=1, epoch=epoch,  # noqa: E731
                                       shards=shard_sizes(sizes), window=1)
    served = ShardedBatches(ArrayShards(sizes), plans, cache_shards=4)
    serve_epochs_each_shard_read_once(served, epochs=2)
    # Resumed after 30 batches: the plan starts at the first batch served.
    state = {**served.state_dict(), "epoch": 1, "batches_yielded": 30}
    resumed = ShardedBatches(ArrayShards(sizes), plans, cache_shards=4)
    resumed.load_state_dict(state)
    rest = list(resumed.run())
    assert [r.tolist() for r, _ in rest] == [b.tolist() for b in plans(1).batches[30:]]
    assert all(v.tolist() == r.tolist() for r, v in rest)
    assert resumed.server.cache.loads_per_shard.max() == 1
    assert resumed.stats.retain_refused == 0


def test_a_batch_out_of_the_runs_order_ends_the_plan_and_is_served_right():
    labels, sizes = spread_case()
    batches = plan_batches(labels, FixedSize(64), seed=1, shards=shard_sizes(sizes),
                           window=1).batches
    server = BatchServer(ArrayShards(sizes), cache_shards=2)
    server.plan_run(batches)
    for batch in batches[:40]:
        server.serve(batch)
    assert server.stats.kept_rows > 0  # rows held for later batches of the run
    assert server.serve(batches[70]).tolist() == batches[70].tolist()  # not the run's next
    assert server.stats.kept_rows == 0  # the plan's rows released (nothing recycled here)
    for batch in batches[40:]:
        assert server.serve(batch).tolist() == batch.tolist()


def test_recycled_rows_stay_across_runs_and_planned_rows_do_not():
    labels, sizes = spread_case()
    plan = plan_batches(labels, Targets({0: 0.5, 1: 0.5}, 64), seed=1,
                        shards=shard_sizes(sizes), window=1)
    reader = ArrayShards(sizes)
    server = BatchServer(reader, cache_shards=4, retain_rows=5000)
    served = np.concatenate(plan.batches)
    is_recycled = np.bincount(served) > 1
    recycled = int(np.count_nonzero(is_recycled))
    shard_of_row = np.repeat(np.arange(50), 100)
    for epoch in range(2):
        server.plan_run(plan.batches)
        before = server.cache.loads_per_shard.copy()
        loads_for_recycled_only = 0
        for batch in plan.batches:
            calls = len(reader.calls)
            assert server.serve(batch).tolist() == batch.tolist()
            # A shard read for this batch whose rows in it are all recycled was read for them.
            loads_for_recycled_only += sum(
                bool(is_recycled[batch[shard_of_row[batch] == h]].all())
                for h in reader.calls[calls:])
        assert (server.cache.loads_per_shard - before).max() == 1
        assert server.stats.kept_rows == recycled  # the recycled rows only
    # The second run found the recycled rows kept: it read no shard for them.
    assert loads_for_recycled_only == 0
    second = server.cache.loads_per_shard - before
    assert second.sum() <= 50  # shards still cached from the first run are not read


@pytest.mark.parametrize("kwargs, error, match", [
    ({"retain_rows": -1}, ValueError, r"^retain_rows must be an integer >= 0"),
    ({"retain_rows": 2.5}, TypeError, r"^retain_rows must be an integer"),
    ({"retain_rows": True}, TypeError, r"^retain_rows must be an integer"),
])
def test_a_bad_budget_is_refused_naming_retain_rows(kwargs, error, match):
    with pytest.raises(error, match=match):
        BatchServer(ArrayShards([4, 4]), **kwargs)
    with pytest.raises(error, match=match):
        ShardedBatches(ArrayShards([4, 4]), [[0, 1]], **kwargs)
    with pytest.raises(error, match=match):
        shard_retention_profile([[0, 1]], np.array([0, 0]), cache_shards=1, **kwargs)


def test_bad_profile_and_run_arguments_are_named():
    with pytest.raises(ValueError, match=r"^cache_shards must be a positive integer"):
        shard_retention_profile([[0, 1]], np.array([0, 0]), cache_shards=0)
    with pytest.raises(ValueError, match=r"^start must be an integer 0 <= start <= 1"):
        BatchServer(ArrayShards([4, 4])).plan_run([[0, 1]], start=2)
    with pytest.raises(ValueError, match=r"^batches must hold rows in \[0, 8\)"):
        BatchServer(ArrayShards([4, 4])).plan_run([[0, 9]])
    with pytest.raises(TypeError, match=r"^batches must hold integer row positions"):
        BatchServer(ArrayShards([4, 4])).plan_run([[0.5, 1]])  # no row 0.5, no silent cast
