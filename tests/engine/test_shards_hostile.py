"""Hostile inputs for the shard-blocked order (docs/SHARDS.md) through the core.

What a careless or adversarial user passes as ``shards=`` and ``window=``:
shard ids of every dtype and container (bool, integral and non-integral
floats, NaN/inf, uint64 beyond 2**63, Python ints beyond int64, objects,
pandas nullable arrays with NA, categoricals, torch tensors, strings, masked
arrays, timedelta64, 2-D, 0-d, generators), shard sizes with zeros,
negatives, wrong sums and sums that wrap int64, single shards, H = N,
H > 2**16 and H far above N, windows of every type and size, every policy
and every rng, shuffle=False, far epochs, and lazy plans. Each input must
get either

* a correct plan: the same batches count and per-batch counts (and weights)
  as without shards, the same rows over the epoch, every stratum sweeping its
  shards forward (``window=1``), and with ``shuffle=False`` each stratum's
  rows sorted stably by (block, row); or
* a TypeError/ValueError naming the argument, with the value and a fix.

Anything else (OverflowError, IndexError, MemoryError, a crash, a hang) fails.
The oracle is written from docs/SHARDS.md, independently of the code.
``-s`` prints the inputs tried and their outcomes per face at the end.
"""

from __future__ import annotations

import re
import subprocess
import functools
import sys
import tracemalloc
from collections import Counter

import numpy as np
import pandas as pd
import pytest
import torch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pystratum import (ClassesPerBatch, Downsample, FixedSize, MinPerStratum, Targets,
                       lazy_plan, plan_batches, shard_sizes, stratified_batches)
from pystratum.policies import MultiLabel
from _outcomes import counted_call

from test_shards import ref_index_plan  # docs/SHARDS.md's lazy definition by plain loops

OUTCOMES = Counter()  # (face, outcome) -> inputs
KINDS = Counter()     # input kind -> inputs


@pytest.fixture(scope="module", autouse=True)
def report_outcomes():
    yield
    print(f"\nshard hostile inputs tried: {sum(OUTCOMES.values())}")
    for (face, outcome), count in sorted(OUTCOMES.items()):
        print(f"  {face:28s} {outcome:12s} {count}")
    print("  input kinds: " + ", ".join(f"{k} {v}" for k, v in sorted(KINDS.items())))


FIX_WORDS = ("pass", "use", "leave", "fill", "drop", "give", "number", "pick")


def assert_actionable(error, name):
    """A TypeError/ValueError whose message names ``name`` and says what to do."""
    assert isinstance(error, (TypeError, ValueError)), repr(error)
    message = str(error)
    assert re.search(rf"(?<![A-Za-z_]){re.escape(name)}(?![A-Za-z_])", message), message
    assert any(word in message.lower() for word in FIX_WORDS), f"no fix in: {message}"


call = functools.partial(counted_call, OUTCOMES)  # ("ok", result) or ("error", error), counted


# --- the oracle: which rows share a shard, from the documented contract ---------------------

def expected_index(kind, ids):
    """Shard index per row (rank of the id among distinct ids), or None: must be refused."""
    if ids is None:
        return None
    distinct = sorted(set(ids))
    rank = {value: h for h, value in enumerate(distinct)}
    return np.asarray([rank[v] for v in ids], dtype=np.int64)


@st.composite
def hostile_ids(draw, n):
    """(kind, value passed as shards=, plain ids or None when it must be refused)."""
    base = draw(st.lists(st.integers(0, 9), min_size=n, max_size=n))
    ids = np.asarray(base, dtype=np.int64)
    kind = draw(st.sampled_from([
        "int64", "int8", "uint16", "uint64", "float64", "float32", "float16", "list", "tuple",
        "range_like", "pd_Int64", "pd_Series", "categorical", "torch_int", "torch_float",
        "sparse_big", "int64_max", "bool", "torch_bool", "pd_boolean", "nan", "inf", "half",
        "negative", "uint64_beyond", "python_beyond", "object", "strings", "pd_Int64_NA",
        "masked", "timedelta", "two_d", "zero_d", "generator", "wrong_length", "float_2_53",
        "list_of_np_bool", "complex", "none"]))
    KINDS[kind] += 1
    at = draw(st.integers(0, n - 1))
    if kind in ("int64", "int8", "uint16", "uint64", "float64", "float32", "float16"):
        return kind, ids.astype(kind), base
    if kind == "list":
        return kind, base, base
    if kind == "tuple":
        return kind, tuple(base), base
    if kind == "range_like":
        return kind, range(n), list(range(n))
    if kind == "pd_Int64":
        return kind, pd.array(base, dtype="Int64"), base
    if kind == "pd_Series":
        return kind, pd.Series(base), base
    if kind == "categorical":
        return kind, pd.Categorical(base), base
    if kind == "torch_int":
        return kind, torch.tensor(base), base
    if kind == "torch_float":
        return kind, torch.tensor(base, dtype=torch.float64), base
    if kind == "sparse_big":
        return kind, ids * 10**15 + 7, [v * 10**15 + 7 for v in base]
    if kind == "int64_max":
        values = list(base)
        values[at] = 2**63 - 1
        return kind, np.asarray(values, dtype=np.int64), values
    refused = None
    if kind == "bool":
        return kind, ids % 2 == 0, refused
    if kind == "torch_bool":
        return kind, torch.tensor(ids % 2 == 0), refused
    if kind == "pd_boolean":
        return kind, pd.array((ids % 2 == 0).tolist(), dtype="boolean"), refused
    if kind in ("nan", "inf", "half", "float_2_53"):
        values = ids.astype(np.float64)
        values[at] = {"nan": np.nan, "inf": -np.inf if at % 2 else np.inf, "half": 2.5,
                      "float_2_53": 2.0**53}[kind]
        return kind, values, refused
    if kind == "negative":
        values = ids.copy()
        values[at] = -draw(st.integers(1, 2**63))
        return kind, values, refused
    if kind == "uint64_beyond":
        values = ids.astype(np.uint64)
        values[at] = np.uint64(draw(st.integers(2**63, 2**64 - 1)))
        return kind, values, refused
    if kind == "python_beyond":
        values = list(base)
        values[at] = draw(st.sampled_from([2**63, 2**64, 2**70, -2**70]))
        return kind, values, refused
    if kind == "object":
        return kind, ids.astype(object), "either"
    if kind == "strings":
        return kind, [str(v) for v in base], refused
    if kind == "pd_Int64_NA":
        values = list(base)
        values[at] = None
        return kind, pd.array(values, dtype="Int64"), refused
    if kind == "masked":
        mask = np.zeros(n, dtype=bool)
        mask[at] = True
        return kind, np.ma.masked_array(ids, mask=mask), refused
    if kind == "timedelta":
        return kind, ids.astype("timedelta64[s]"), refused
    if kind == "two_d":
        return kind, ids.reshape(-1, 1), refused
    if kind == "zero_d":
        return kind, draw(st.sampled_from([np.int64(3), np.array(3), 3, 3.0])), refused
    if kind == "generator":
        return kind, (int(v) for v in base), refused
    if kind == "wrong_length":
        return kind, ids[:-1] if draw(st.booleans()) else np.r_[ids, 0], refused
    if kind == "list_of_np_bool":
        return kind, [np.bool_(v % 2) for v in base], refused
    if kind == "complex":
        return kind, ids.astype(complex), refused
    return kind, [None] * n, refused


def policies(codes):
    labels = np.unique(codes).tolist()
    n_min = int(np.bincount(codes).min())
    return {
        "min": MinPerStratum(max(1, n_min // 3)),
        "min_assembled": MinPerStratum(max(1, n_min // 3), batch_order="assembled"),
        "fixed": FixedSize(max(2 * len(labels), len(codes) // 4)),
        "targets": Targets({v: 1 / len(labels) for v in labels}, max(8, len(labels))),
        "downsample": Downsample({labels[0]: 0.5}, MinPerStratum(1)),
        "classes": ClassesPerBatch(min(2, len(labels)), 2, small="repeat"),
    }


SINGLE_PASS = ("min", "min_assembled", "fixed")


def batch_counts(plan, codes):
    return [np.bincount(codes[b], minlength=int(codes.max()) + 1).tolist() for b in plan.batches]


def check_plan(plan, bare, codes, index, name, window):
    """``plan`` (with shards) keeps every guarantee of ``bare`` (the same call without shards)."""
    assert plan.num_batches == bare.num_batches
    if name == "classes":
        # The layout draw comes after the shard draw: another random layout, with the same
        # shape (P classes of K rows a batch) and the same slots per class over the epoch.
        np.testing.assert_array_equal(plan.counts.sum(axis=0), bare.counts.sum(axis=0))
        assert sorted(sorted(row) for row in plan.counts.tolist()) == \
            sorted(sorted(row) for row in bare.counts.tolist())
        return
    np.testing.assert_array_equal(plan.counts, bare.counts)
    assert batch_counts(plan, codes) == batch_counts(bare, codes)
    if bare.weights is not None:  # weights are a function of the row's stratum
        for b in range(plan.num_batches):
            np.testing.assert_allclose(np.sort(plan.batch_weights(b)),
                                       np.sort(bare.batch_weights(b)))
    if name == "downsample":  # a pool (drawn after the shard order: another random subset)
        served = np.concatenate(plan.batches)
        assert len(set(served.tolist())) == served.shape[0]
    if name in SINGLE_PASS:  # each row once
        served = np.concatenate(plan.batches)
        assert len(set(served.tolist())) == served.shape[0] == codes.shape[0]
        if window == 1:
            assert_sweeps_forward(plan, codes, index)


def assert_sweeps_forward(plan, codes, index):
    """With W = 1 a block is a shard: a stratum leaves a shard for good (Lemma 1)."""
    for s in np.unique(codes).tolist():
        first, last = {}, {}
        for b, batch in enumerate(plan.batches):
            for h in set(index[batch[codes[batch] == s]].tolist()):
                first.setdefault(h, b)
                last[h] = b
        spans = sorted((first[h], last[h]) for h in first)
        for (_, end), (begin, _) in zip(spans, spans[1:]):
            assert end <= begin, (s, spans)


# --- shard ids of every dtype and container -------------------------------------------------

@st.composite
def codes_and_ids(draw):
    n = draw(st.integers(8, 60))
    n_strata = draw(st.integers(1, 3))
    codes = np.asarray(draw(st.lists(st.integers(0, n_strata - 1), min_size=n, max_size=n)))
    codes[:n_strata] = np.arange(n_strata)  # every stratum present
    return codes, draw(hostile_ids(n))


@settings(max_examples=400, suppress_health_check=[HealthCheck.too_slow,
                                                   HealthCheck.data_too_large])
@given(case=codes_and_ids(), seed=st.integers(0, 2**31 - 1),
       rng=st.sampled_from(["numpy", "R", "torch"]), window=st.integers(1, 4),
       name=st.sampled_from(["min", "min_assembled", "fixed", "targets", "downsample", "classes"]))
def test_shard_ids_of_every_kind_give_a_correct_plan_or_an_error_naming_shards(case, seed, rng,
                                                                                window, name):
    codes, (kind, shards, plain) = case
    policy = policies(codes)[name]
    outcome, result = call("plan_batches(ids)", plan_batches, codes, policy, seed=seed, rng=rng,
                           shards=shards, window=window, allow_single_batch=True)
    if plain is None:
        assert outcome == "error", f"{kind} accepted as shard ids"
        assert_actionable(result, "shards")
        return
    bare_outcome, bare = call("plan_batches(no shards)", plan_batches, codes, policy, seed=seed,
                              rng=rng, allow_single_batch=True)
    if bare_outcome == "error":  # the policy does not fit the data: shards change nothing
        assert outcome == "error" and str(result) == str(bare), (result, bare)
        return
    if outcome == "error":
        assert plain == "either", f"valid {kind} ids refused: {result}"
        assert_actionable(result, "shards")
        return
    if plain == "either":
        plain = [int(v) for v in shards]
    check_plan(result, bare, codes, expected_index(kind, plain), name, window)
    # The same shards given as plain int64 ids: the same plan.
    again = plan_batches(codes, policy, seed=seed, rng=rng, shards=np.asarray(plain),
                         window=window, allow_single_batch=True)
    assert [b.tolist() for b in again.batches] == [b.tolist() for b in result.batches]


def test_masked_and_missing_ids_are_refused_not_read_as_their_filler():
    """Regression: np.asarray drops a mask, so a masked id was read as whatever it hid."""
    codes = np.array([0, 1] * 6)
    ids = np.ma.masked_array(np.arange(12) // 3, mask=[True] + [False] * 11)
    for shards in (ids, pd.array([None] + list(range(11)), dtype="Int64")):
        outcome, error = call("plan_batches(ids)", plan_batches, codes, 2, seed=1, shards=shards)
        assert outcome == "error"
        assert_actionable(error, "shards")
        assert "shards[0]" in str(error)


def test_timedelta_ids_are_refused():
    """Regression: numpy counts timedelta64 among the integers, so durations were shard ids."""
    codes = np.array([0, 1] * 6)
    outcome, error = call("plan_batches(ids)", plan_batches, codes, 2, seed=1,
                          shards=(np.arange(12) // 3).astype("timedelta64[s]"))
    assert outcome == "error" and isinstance(error, TypeError)
    assert_actionable(error, "shards")


@pytest.mark.parametrize("big", [2**63, 2**64 - 1, 2**70, -(2**70)])
def test_python_ints_beyond_int64_are_said_as_ints(big):
    """Regression: a list holding a Python int beyond int64 became floats or objects in numpy,
    and the message spoke of floats ("below 2**53 when given as floats") or of dtype object."""
    for shards in ([big] + [0] * 11, ([0] * 11 + [big])):
        outcome, error = call("plan_batches(ids)", plan_batches, np.arange(12) % 2, 2, seed=1,
                              shards=shards)
        assert outcome == "error" and isinstance(error, ValueError)
        assert_actionable(error, "shards")
        assert f"={big}." in str(error) and "float" not in str(error)


# --- shard sizes ----------------------------------------------------------------------------

@st.composite
def hostile_sizes(draw, n):
    """(kind, sizes, valid): sizes for n rows, valid when they must be accepted."""
    kind = draw(st.sampled_from(["exact", "zeros", "single", "many_zeros", "short", "long",
                                 "negative", "wrapping", "huge", "float_whole", "float_half",
                                 "bool", "empty", "nested", "scalar", "uint64"]))
    KINDS["sizes:" + kind] += 1
    cuts = sorted(draw(st.lists(st.integers(0, n), min_size=0, max_size=6)))
    exact = np.diff([0, *cuts, n]).tolist()
    if kind == "exact":
        return kind, exact, True
    if kind == "zeros":
        return kind, [0, *exact, 0, 0], True
    if kind == "single":
        return kind, [n], True
    if kind == "many_zeros":  # H > 2**16 shards for a handful of rows
        return kind, [0] * draw(st.sampled_from([70_000, 200_000])) + [n], True
    if kind == "uint64":
        return kind, np.asarray(exact, dtype=np.uint64), True
    if kind == "float_whole":
        return kind, np.asarray(exact, dtype=np.float64), True
    if kind == "short":
        return kind, exact[:-1] + [exact[-1] - 1] if exact[-1] else exact + [0, -1], False
    if kind == "long":
        return kind, exact + [draw(st.integers(1, 5))], False
    if kind == "negative":
        return kind, [-1, n + 1], False
    if kind == "wrapping":  # int64 sums that wrap to exactly n
        return kind, draw(st.sampled_from([[2**63 - 1, 2**63 - 1, 2, n], [2**62] * 4 + [n],
                                           [2**63 - 1, 2**63 - 1, 2 + n]])), False
    if kind == "huge":
        return kind, [2**64 + n], False
    if kind == "float_half":
        return kind, [0.5, n - 0.5], False
    if kind == "bool":
        return kind, [True] * n, False
    if kind == "empty":
        return kind, [], False
    if kind == "nested":
        return kind, [exact], False
    return kind, n, False


@settings(max_examples=200, suppress_health_check=[HealthCheck.too_slow,
                                                   HealthCheck.data_too_large])
@given(n=st.integers(6, 40), data=st.data(), seed=st.integers(0, 2**31 - 1),
       rng=st.sampled_from(["numpy", "R", "torch"]), window=st.integers(1, 3),
       name=st.sampled_from(["min", "min_assembled", "fixed", "targets", "downsample"]))
def test_shard_sizes_give_a_correct_plan_or_an_error_naming_shards(n, data, seed, rng, window,
                                                                   name):
    kind, sizes, valid = data.draw(hostile_sizes(n))
    codes = np.arange(n) % 2
    outcome, made = call("shard_sizes", shard_sizes, sizes)
    if outcome == "ok":
        outcome, result = call("plan_batches(sizes)", plan_batches, codes, policies(codes)[name],
                               seed=seed, rng=rng, shards=made, window=window,
                               allow_single_batch=True)
    else:
        result = made
    if not valid:
        assert outcome == "error", f"sizes {kind} accepted"
        assert_actionable(result, "shards")
        return
    bare_outcome, bare = call("plan_batches(no shards)", plan_batches, codes,
                              policies(codes)[name], seed=seed, rng=rng, allow_single_batch=True)
    if bare_outcome == "error":  # the policy does not fit the data: shards change nothing
        assert outcome == "error" and str(result) == str(bare), (result, bare)
        return
    assert outcome == "ok", f"valid sizes {kind} refused: {result}"
    index = np.repeat(np.arange(len(sizes)), np.asarray(sizes, dtype=np.int64))
    check_plan(result, bare, codes, index, name, window)


def test_sizes_whose_int64_sum_wraps_are_refused_with_their_true_sum():
    """Regression: [2**62] * 4 summed to 0 in int64; sizes whose wrapped sum equalled the
    rows went on to np.repeat with sizes near 2**63 and crashed the interpreter."""
    outcome, error = call("plan_batches(sizes)", plan_batches, np.arange(20) % 2, 2, seed=1,
                          shards=shard_sizes([2**62] * 4))
    assert outcome == "error"
    assert_actionable(error, "shards")
    assert f"{2**64:,}" in str(error)
    code = ("import numpy as np, pystratum as p\n"
            "try:\n"
            "    p.plan_batches(np.arange(20) % 2, 2, seed=1,"
            " shards=p.shard_sizes([2**63 - 1, 2**63 - 1, 2, 20]))\n"
            "except ValueError as e:\n"
            "    print('refused:', e)\n")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 0, (done.returncode, done.stderr[-2000:])
    assert done.stdout.startswith("refused: shards must cover every row"), done.stdout


def test_shard_sizes_keep_their_own_copy_of_the_checked_sizes():
    """Regression: shard_sizes kept the caller's int64 array, so sizes changed after the check
    (a reused buffer) reached np.repeat: "repeats may not contain negative values"."""
    codes = np.arange(20) % 2
    sizes = np.array([10, 10])
    shards = shard_sizes(sizes)
    sizes[:] = [-5, 25]
    outcome, plan = call("plan_batches(sizes)", plan_batches, codes, 2, seed=1, shards=shards)
    assert outcome == "ok", plan
    expected = plan_batches(codes, 2, seed=1, shards=shard_sizes([10, 10]))
    assert [b.tolist() for b in plan.batches] == [b.tolist() for b in expected.batches]
    assert not shards.sizes.flags.writeable


# --- window ---------------------------------------------------------------------------------

WINDOWS = [(1, True), (2, True), (3, True), (10**6, True), (2**63, True), (2**64, True),
           (10**30, True), (np.int64(2), True), (np.uint64(2**64 - 1), True), (np.int8(1), True),
           (0, False), (-1, False), (-(2**63), False), (True, False), (False, False),
           (2.0, False), (np.float64(2.0), False), (float("inf"), False), (float("nan"), False),
           ("2", False), (None, False), (np.array(2), False), (np.array([2]), False),
           ([2], False), (2 + 0j, False), (np.bool_(True), False)]


@pytest.mark.parametrize("window,valid", WINDOWS, ids=[repr(w) for w, _ in WINDOWS])
@pytest.mark.parametrize("rng", ["numpy", "R", "torch", "index"])
def test_windows_of_every_type_and_size(window, valid, rng):
    codes = np.arange(48) % 3
    ids = np.arange(48) // 4  # 12 shards: most windows are larger than H
    outcome, result = call("window", plan_batches, codes, MinPerStratum(2), seed=5, rng=rng,
                           shards=ids, window=window)
    if not valid:
        assert outcome == "error"
        assert_actionable(result, "window")
        return
    assert outcome == "ok", result
    bare = plan_batches(codes, MinPerStratum(2), seed=5, rng=rng)
    check_plan(result, bare, codes, ids, "min", int(window))
    if int(window) >= 12:  # one block: every window of H or more is the same order
        same = plan_batches(codes, MinPerStratum(2), seed=5, rng=rng, shards=ids, window=12)
        assert [b.tolist() for b in same.batches] == [b.tolist() for b in result.batches]


# --- layouts x policies x rngs --------------------------------------------------------------

LAYOUTS = {
    "one_shard": lambda n: np.zeros(n, dtype=np.int64),
    "H_equals_N": lambda n: np.arange(n)[::-1].copy(),
    "H_over_2_16": lambda n: shard_sizes([0] * 70_000 + [n]),
    "zeros_between": lambda n: shard_sizes([0, n // 2, 0, 0, n - n // 2, 0]),
    "sparse_ids": lambda n: (np.arange(n) % 5) * 10**17,
}


@pytest.mark.parametrize("layout", sorted(LAYOUTS))
@pytest.mark.parametrize("rng", ["numpy", "R", "torch"])
@pytest.mark.parametrize("name", ["min", "min_assembled", "fixed", "targets", "downsample",
                                  "classes"])
def test_extreme_layouts_with_every_policy_and_rng(layout, rng, name):
    codes = np.random.default_rng(3).integers(0, 3, 60)
    shards = LAYOUTS[layout](60)
    index = (np.repeat(np.arange(len(shards)), shards.sizes) if hasattr(shards, "sizes")
             else np.unique(shards, return_inverse=True)[1].reshape(-1))
    policy = policies(codes)[name]
    for epoch in (0, 3):
        outcome, result = call("layouts", plan_batches, codes, policy, seed=11, rng=rng,
                               epoch=epoch, shards=shards, window=1, allow_single_batch=True)
        assert outcome == "ok", result
        bare = plan_batches(codes, policy, seed=11, rng=rng, epoch=epoch, allow_single_batch=True)
        check_plan(result, bare, codes, index, name, 1)


@pytest.mark.parametrize("window", [1, 2, 5])
@pytest.mark.parametrize("name", ["min_assembled", "fixed"])
def test_shuffle_false_sorts_each_stratum_stably_by_block_then_row(window, name):
    """No shuffle: the identity shard order, so a stratum's rows come by (shard // W, row)."""
    codes = np.random.default_rng(4).integers(0, 3, 90)
    ids = np.random.default_rng(5).integers(0, 13, 90) * 3  # labels, not contiguous
    index = np.unique(ids, return_inverse=True)[1].reshape(-1)
    policy = policies(codes)[name]
    if name == "fixed":
        policy = FixedSize(15, batch_order="assembled")
    outcome, plan = call("shuffle=False", plan_batches, codes, policy, shuffle=False, shards=ids,
                         window=window)
    assert outcome == "ok", plan
    served = np.concatenate(plan.batches)
    for s in range(3):
        rows = served[codes[served] == s]
        expected = sorted(np.flatnonzero(codes == s).tolist(),
                          key=lambda row: (index[row] // window, row))
        assert rows.tolist() == expected


@pytest.mark.parametrize("rng", ["R", "torch"])
def test_far_epochs_count_the_shard_draw_in_the_skip_cost(rng):
    """A tiny N with H far above it: skipping epochs costs H per epoch, and the guard says so
    before drawing (the same epoch without shards is cheap and accepted)."""
    codes = np.arange(40) % 2
    shards = shard_sizes([0] * 2_000_000 + [40])
    plan_batches(codes, 2, seed=1, rng=rng, epoch=2_000)  # cheap without shards
    outcome, error = call("far epochs", plan_batches, codes, 2, seed=1, rng=rng, epoch=2_000,
                          shards=shards)
    assert outcome == "error" and "epoch=2000" in str(error)
    assert "over the limit" in str(error)
    assert_actionable(error, "epoch")


def test_multi_label_and_single_batch_and_refusals():
    labels = np.eye(3, dtype=int)[np.arange(30) % 3]
    ids = np.arange(30) // 5
    for rng in ("numpy", "R", "torch"):
        outcome, plan = call("multi_label", plan_batches, labels, MultiLabel(6), seed=2, rng=rng,
                             shards=ids)
        assert outcome == "ok", plan
        bare = plan_batches(labels, MultiLabel(6), seed=2, rng=rng)
        assert plan.num_batches == bare.num_batches
        np.testing.assert_array_equal(plan.label_counts.sum(axis=0), bare.label_counts.sum(axis=0))
        assert sorted(np.concatenate(plan.batches).tolist()) == list(range(30))
    for call_args in (dict(rng="index"), dict(rng="index", policy=ClassesPerBatch(2, 2))):
        policy = call_args.pop("policy", MultiLabel(6))
        strata = labels if isinstance(policy, MultiLabel) else np.arange(30) % 3
        outcome, error = call("refusals", plan_batches, strata, policy, seed=2, shards=ids,
                              **call_args)
        assert outcome == "error"
    # One batch: the single-batch guard speaks, shards or not.
    outcome, error = call("single batch", stratified_batches, np.arange(10) % 2, 5, seed=1,
                          shards=np.zeros(10, dtype=int))
    assert outcome == "error" and "allow_single_batch" in str(error)
    outcome, plan = call("single batch", stratified_batches, np.arange(10) % 2, 5, seed=1,
                         shards=np.zeros(10, dtype=int), allow_single_batch=True)
    assert outcome == "ok" and len(plan) == 1


# --- lazy plans (rng="index") ---------------------------------------------------------------

@settings(max_examples=60)
@given(n=st.integers(5, 200), n_strata=st.integers(1, 6), n_ids=st.integers(1, 300),
       window=st.integers(1, 400), seed=st.integers(0, 2**40), epoch=st.integers(0, 2**31 - 1),
       assembled=st.booleans())
def test_lazy_plans_keep_counts_and_rows(n, n_strata, n_ids, window, seed, epoch, assembled):
    draw = np.random.default_rng(seed)
    codes = draw.integers(0, n_strata, n)
    codes[: min(n, n_strata)] = np.arange(min(n, n_strata))
    ids = draw.integers(0, n_ids, n) * 7
    policy = MinPerStratum(1, batch_order="assembled" if assembled else None)
    outcome, plan = call("lazy_plan", lazy_plan, codes, policy, seed=seed, epoch=epoch,
                         shards=ids, window=window, allow_single_batch=True)
    assert outcome == "ok", plan
    bare = lazy_plan(codes, policy, seed=seed, epoch=epoch, allow_single_batch=True)
    served = [plan[b] for b in range(len(plan))]
    assert [np.bincount(codes[b], minlength=n_strata).tolist() for b in served] == \
        [np.bincount(codes[bare[b]], minlength=n_strata).tolist() for b in range(len(bare))]
    assert sorted(np.concatenate(served).tolist()) == list(range(n))
    if window == 1:
        class Batches:
            batches = served
        assert_sweeps_forward(Batches, codes, np.unique(ids, return_inverse=True)[1].reshape(-1))


def test_lazy_plan_memory_does_not_grow_with_strata_times_shards():
    """Regression: the lazy shard order kept S x H tables (counts, starts, running counts):
    1,000 strata over 20,000 one-row shards took about 800 MB and seconds for 20,000 rows.
    The (stratum, shard) pairs that hold rows are at most N."""
    codes = np.arange(20_000) % 1_000
    tracemalloc.start()
    try:
        plan = lazy_plan(codes, MinPerStratum(1), seed=1, shards=np.arange(20_000),
                         allow_single_batch=True)
        first = plan[0]
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    OUTCOMES["lazy_plan(S x H)", "accepted"] += 1
    assert np.bincount(codes[first], minlength=1_000).min() >= 1
    assert peak < 60 * 2**20, f"peak {peak / 2**20:.0f} MB"


def test_lazy_plans_refuse_pools_naming_shards():
    codes = np.arange(30) % 3
    for policy in (Downsample({0: 0.5}, MinPerStratum(1)), Targets({0: 0.8, 1: 0.1, 2: 0.1}, 10),
                   ClassesPerBatch(2, 2)):
        outcome, error = call("lazy_plan", lazy_plan, codes, policy, seed=1,
                              shards=np.arange(30) // 3)
        assert outcome == "error"
        assert_actionable(error, "shards")


@settings(max_examples=40)
@given(n=st.integers(2, 120), n_strata=st.integers(1, 12), n_shards=st.integers(1, 40),
       empty=st.integers(0, 5), window=st.integers(1, 50), seed=st.integers(0, 2**40),
       epoch=st.integers(0, 3))
def test_lazy_plans_with_many_strata_and_empty_shards_follow_the_definition(
        n, n_strata, n_shards, empty, window, seed, epoch):
    """The (stratum, shard) pair form of the lazy order is docs/SHARDS.md's definition: many
    strata, empty shards (shard_sizes with zeros) and windows beyond H included."""
    draw = np.random.default_rng(seed)
    codes = draw.integers(0, n_strata, n)
    codes[: min(n, n_strata)] = np.arange(min(n, n_strata))
    cuts = np.sort(draw.integers(0, n + 1, n_shards - 1))
    sizes = np.diff(np.r_[0, cuts, n]).tolist()
    for _ in range(empty):
        sizes.insert(int(draw.integers(0, len(sizes) + 1)), 0)
    shards = shard_sizes(sizes)
    policy = MinPerStratum(1, batch_order="assembled")
    outcome, lazy = call("lazy_plan", lazy_plan, codes, policy, seed=seed, epoch=epoch,
                         shards=shards, window=window, allow_single_batch=True)
    assert outcome == "ok", lazy
    expected = ref_index_plan(codes, policy, shards, window, seed, epoch)
    assert [lazy[b].tolist() for b in reversed(range(len(lazy)))] == expected[::-1]


@pytest.mark.parametrize("layout", sorted(LAYOUTS))
@pytest.mark.parametrize("rng", ["numpy", "R", "torch"])
@pytest.mark.parametrize("window", [1, 3])
def test_recycled_strata_serve_their_pool_once_per_pass(layout, rng, window):
    """Targets recycling two small strata: every pass of a stratum (pool-sized runs of its
    rank order) is its pool once, and with W = 1 each pass takes a shard's rows in one run."""
    codes = np.r_[np.zeros(50, int), np.ones(6, int), np.full(4, 2)]
    np.random.default_rng(0).shuffle(codes)
    shards = LAYOUTS[layout](60)
    policy = Targets({0: .4, 1: .3, 2: .3}, 10, batch_order="assembled")
    outcome, plan = call("recycled", plan_batches, codes, policy, seed=2, rng=rng,
                         shards=shards, window=window)
    assert outcome == "ok", plan
    bare = plan_batches(codes, policy, seed=2, rng=rng)
    index = (np.repeat(np.arange(len(shards)), shards.sizes) if hasattr(shards, "sizes")
             else np.unique(shards, return_inverse=True)[1].reshape(-1))
    check_plan(plan, bare, codes, index, "targets", window)
    served = np.concatenate(plan.batches)
    for s, pool in ((1, 6), (2, 4)):
        sequence = served[codes[served] == s]
        assert sequence.shape[0] > pool  # recycled
        passes = [sequence[i:i + pool] for i in range(0, sequence.shape[0] - pool + 1, pool)]
        for part in passes:
            assert sorted(part.tolist()) == sorted(np.flatnonzero(codes == s).tolist())
            if window == 1:  # sorted by block = by shard: a shard's rows are one run
                shard_runs = [h for i, h in enumerate(index[part].tolist())
                              if i == 0 or h != index[part[i - 1]]]
                assert len(shard_runs) == len(set(shard_runs)), index[part].tolist()
