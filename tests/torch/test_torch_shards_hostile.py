"""Hostile use of the torch samplers with shards= and window= (docs/SHARDS.md).

Hostile shard inputs at construction, forged and corrupted resume states that
carry a shard fingerprint, resumes across layouts given in another form,
set_epoch jumps, ranks (num_replicas/rank) and the flat sampler. Every
outcome is the core's sharded batches or a TypeError/ValueError naming the
argument or the state key. ``-s`` prints the inputs tried and their outcomes.
"""

from __future__ import annotations

import copy
import functools
import re
import warnings
from collections import Counter

import numpy as np
import pandas as pd
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from pystratum import (FixedSize, MinPerStratum, StratumTooSmallWarning, Targets, plan_batches,
                       shard_sizes)
from pystratum.torch import StratifiedBatchSampler, StratifiedSampler
from _outcomes import counted_call


OUTCOMES = Counter()
CODES = np.arange(60) % 3
IDS = np.arange(60) // 6  # 10 shards of 6 rows, stored in order


@pytest.fixture(scope="module", autouse=True)
def report_outcomes():
    yield
    print(f"\ntorch shard inputs tried: {sum(OUTCOMES.values())}")
    for (face, outcome), count in sorted(OUTCOMES.items()):
        print(f"  {face:24s} {outcome:12s} {count}")


call = functools.partial(counted_call, OUTCOMES)  # ("ok", result) or ("error", error), counted


def as_lists(batches):
    return [list(map(int, b)) for b in batches]


def core(epoch, rng, shards=IDS, window=2, policy=None):
    return as_lists(plan_batches(CODES, policy or MinPerStratum(2), seed=1, rng=rng, epoch=epoch,
                                 shards=shards, window=window).batches)


HOSTILE_SHARDS = [
    (IDS.astype(bool), "shards"), (np.where(IDS == 0, np.nan, IDS), "shards"),
    (IDS[:-1], "shards"), (IDS.reshape(6, 10), "shards"), (-IDS - 1, "shards"),
    (IDS.astype(np.uint64) + np.uint64(2**63), "shards"), ([str(v) for v in IDS], "shards"),
    (pd.array([None] + IDS[1:].tolist(), dtype="Int64"), "shards"),
    (torch.tensor(IDS).bool(), "shards"), (np.int64(3), "shards"), ((v for v in IDS), "shards"),
    (shard_sizes([6] * 9), "shards"), (shard_sizes([2**62] * 4), "shards"),
    (np.ma.masked_array(IDS, mask=[True] + [False] * 59), "shards"),
]


@pytest.mark.parametrize("cls", [StratifiedBatchSampler, StratifiedSampler])
@pytest.mark.parametrize("rng", ["numpy", "R", "torch", "index"])
@pytest.mark.parametrize("shards,name", HOSTILE_SHARDS, ids=[f"hostile{i}" for i in
                                                             range(len(HOSTILE_SHARDS))])
def test_hostile_shards_are_refused_at_construction(cls, rng, shards, name):
    outcome, error = call(cls.__name__, cls, CODES, FixedSize(6), seed=1, rng=rng,
                          shards=shards)
    assert outcome == "error"
    assert re.match(rf"{name}\b", str(error)), str(error)


@pytest.mark.parametrize("rng", ["numpy", "R", "torch", "index"])
@pytest.mark.parametrize("form", ["ids", "tensor", "float", "relabelled", "sizes"])
def test_valid_forms_serve_the_cores_batches(rng, form):
    shards = {"ids": IDS, "tensor": torch.tensor(IDS), "float": IDS.astype(np.float32),
              "relabelled": IDS * 10**12 + 5, "sizes": shard_sizes([6] * 10)}[form]
    outcome, sampler = call("StratifiedBatchSampler", StratifiedBatchSampler, CODES,
                            MinPerStratum(2), seed=1, rng=rng, shards=shards, window=2)
    assert outcome == "ok", sampler
    for epoch in range(2):
        assert as_lists(sampler) == core(epoch, rng)


def forged(state, key, value):
    state = copy.deepcopy(state)
    if value is KeyError:
        state.pop(key)
    else:
        state[key] = value
    return state


FORGERIES = [("shards", None), ("shards", ""), ("shards", 5), ("shards", b"x"),
             ("shards", "0" * 32), ("shards", ["x"]), ("shards", KeyError), ("window", 0),
             ("window", -1), ("window", True), ("window", 2.0), ("window", "2"), ("window", None),
             ("window", 1), ("window", 3), ("window", 2**70), ("window", [2]),
             ("window", KeyError)]


@pytest.mark.parametrize("rng", ["numpy", "R", "torch", "index"])
def test_forged_and_corrupted_shard_states_are_refused_naming_the_key(rng):
    sampler = StratifiedBatchSampler(CODES, MinPerStratum(2), seed=1, rng=rng, shards=IDS,
                                     window=2)
    served = iter(sampler)
    next(served)
    state = sampler.state_dict()
    fingerprint = state["shards"]
    for key, value in FORGERIES + [("shards", fingerprint.upper())]:
        fresh = StratifiedBatchSampler(CODES, MinPerStratum(2), seed=1, rng=rng, shards=IDS,
                                       window=2)
        outcome, error = call("load_state_dict", fresh.load_state_dict, forged(state, key, value))
        assert outcome == "error", (key, value)
        assert f"{key}" in str(error), str(error)
    # Another layout, another window, or no shards: refused, naming what differs.
    for kwargs, key in [(dict(shards=IDS[::-1].copy(), window=2), "shards"),
                        (dict(shards=IDS, window=3), "window"), (dict(), "shards"),
                        (dict(shards=shard_sizes([6] * 9 + [3, 3]), window=2), "shards")]:
        other = StratifiedBatchSampler(CODES, MinPerStratum(2), seed=1, rng=rng, **kwargs)
        outcome, error = call("load_state_dict", other.load_state_dict, state)
        assert outcome == "error" and f"{key}=" in str(error), str(error)
    # The same layout given in another form (sizes, relabelled ids) resumes.
    rest = as_lists(served)
    for shards in (shard_sizes([6] * 10), IDS * 3 + 1, torch.tensor(IDS)):
        same = StratifiedBatchSampler(CODES, MinPerStratum(2), seed=1, rng=rng, shards=shards,
                                      window=2)
        outcome, _ = call("load_state_dict", same.load_state_dict, state)
        assert outcome == "ok"
        assert as_lists(same) == rest


@settings(max_examples=40)
@given(rng=st.sampled_from(["numpy", "R", "torch", "index"]), window=st.integers(1, 12),
       epoch=st.integers(0, 6), replicas=st.integers(1, 4), stop=st.integers(0, 6),
       seed=st.integers(0, 2**20), policy=st.sampled_from(["min", "fixed", "targets"]))
def test_ranks_and_resumes_serve_the_cores_sharded_epoch(rng, window, epoch, replicas, stop,
                                                         seed, policy):
    codes = np.random.default_rng(seed).integers(0, 3, 90)
    ids = np.random.default_rng(seed + 1).integers(0, 15, 90) * 2
    policy = {"min": MinPerStratum(2), "fixed": FixedSize(9),
              "targets": Targets({0: .4, 1: .3, 2: .3}, 10)}[policy]
    kwargs = dict(seed=seed, rng=rng, shards=ids, window=window)
    if rng == "index" and isinstance(policy, Targets):
        outcome, error = call("ranks", StratifiedBatchSampler, codes, policy, **kwargs)
        assert outcome == "error" and str(error).startswith("shards ")
        return
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", StratumTooSmallWarning)
        expected = as_lists(plan_batches(codes, policy, epoch=epoch, allow_single_batch=True,
                                         **kwargs).batches)
    served = []
    for rank in range(replicas):
        outcome, sampler = call("ranks", StratifiedBatchSampler, codes, policy,
                                num_replicas=replicas, rank=rank, allow_single_batch=True,
                                **kwargs)
        assert outcome == "ok", sampler
        sampler.set_epoch(epoch)
        part = iter(sampler)
        head = [list(next(part)) for _ in range(min(stop, len(sampler)))]
        state = sampler.state_dict()
        resumed = StratifiedBatchSampler(codes, policy, num_replicas=replicas, rank=rank,
                                         allow_single_batch=True, **kwargs)
        outcome, _ = call("ranks resume", resumed.load_state_dict, state)
        assert outcome == "ok"
        tail = as_lists(resumed)
        assert tail == as_lists(part)
        served += head + tail
    # Every batch of the epoch on some rank (ranks reuse whole batches to even out).
    assert {tuple(b) for b in served} == {tuple(b) for b in expected}


@pytest.mark.parametrize("rng", ["numpy", "R", "torch", "index"])
def test_flat_sampler_and_set_epoch_jumps(rng):
    flat = StratifiedSampler(CODES, FixedSize(6), seed=1, rng=rng, shards=IDS, window=1)
    assert list(flat) == [r for b in core(0, rng, window=1, policy=FixedSize(6)) for r in b]
    for epoch, ok in [(5, True), (2**31 - 1, True), (2**31, False), (-1, False), (True, False),
                      (2.0, False)]:
        outcome, error = call("set_epoch", flat.set_epoch, epoch)
        assert (outcome == "ok") == ok, (epoch, error)
        if outcome == "error":
            assert "epoch" in str(error)
    # The far epoch: sequential streams refuse to replay 2**31 - 1 epochs (shard draws
    # included) when iterated, naming the epoch; the others serve it directly.
    flat.set_epoch(2**31 - 1)
    outcome, error = call("far epoch", list, flat)
    assert (outcome == "ok") == (rng in ("numpy", "index")), error
    if outcome == "error":
        assert "epoch=2147483647" in str(error)
    flat.set_epoch(5)
    assert list(flat) == [r for b in core(5, rng, window=1, policy=FixedSize(6)) for r in b]


def test_lazy_sampler_with_many_strata_over_many_shards():
    """rng='index' keeps (stratum, shard) pairs, not an S x H table: 2,000 strata over
    20,000 one-row shards build and serve at once."""
    codes = np.arange(20_000) % 2_000
    outcome, sampler = call("StratifiedBatchSampler", StratifiedBatchSampler, codes,
                            MinPerStratum(1), seed=3, rng="index", shards=np.arange(20_000),
                            allow_single_batch=True)
    assert outcome == "ok", sampler
    first = next(iter(sampler))
    assert np.bincount(codes[first], minlength=2_000).min() == 1


def test_state_dict_hashes_the_shard_layout_once(monkeypatch):
    """Regression: every state_dict() (each checkpoint) rehashed the rows' shard indices,
    O(N) per checkpoint (about a second at 10**8 rows); the strata digest was already kept."""
    import pystratum.strata._shards as shards_module

    digests = Counter()
    real = shards_module.hashlib.blake2b

    def counted(*args, **kwargs):
        digests["blake2b"] += 1
        return real(*args, **kwargs)

    sampler = StratifiedBatchSampler(CODES, MinPerStratum(2), seed=1, shards=IDS[::-1].copy())
    first = sampler.state_dict()["shards"]  # digests made once here
    monkeypatch.setattr(shards_module.hashlib, "blake2b", counted)
    states = [sampler.state_dict()["shards"] for _ in range(5)]
    OUTCOMES["state_dict", "accepted"] += 6
    assert set(states) == {first}
    assert digests["blake2b"] == 0
