"""FixedSize with exact sizes: batch_size rows in every batch but a shorter last one.

The allocation's guarantees (sizes, spread, every row once, the controlled
rounding), the lazy plan's closed form, drop_last in one process and across
simulated ranks, the torch ``batch_size=`` shorthand, the CLI, and R (live,
through rpy2) giving the same batches for ``rng="R"``.
"""

from __future__ import annotations

import re
import subprocess
import sys

import numpy as np
import pytest
import torch
from hypothesis import given, settings, strategies as st
from torch.utils.data import DataLoader, TensorDataset

import pystratum
from _r_helpers import r_function, r_session  # noqa: F401 (fixture)
from _strategies import plan_allowing_one_batch
from pystratum.policies._fixed_size import _exact_feasible as feasible
from pystratum.policies import FixedSize, MinPerStratum, Targets, policy_from_params, \
    strata_of_sizes
from pystratum.torch import StratifiedBatchSampler, StratifiedSampler

stratum_sizes = st.lists(st.integers(1, 300), min_size=1, max_size=8)


def exact_feasible(sizes, batch_size, m=1):
    """Whether FixedSize(batch_size, m) accepts these sizes (the rule it applies, which
    test_exactly_the_feasible_small_inputs_are_accepted checks against brute force)."""
    return feasible(np.asarray(sizes, dtype=np.int64), batch_size, m)


# ----------------------------------------------------------------- the allocation

@settings(max_examples=400)
@given(sizes=stratum_sizes, batch_size=st.integers(1, 600), epoch=st.integers(0, 30))
def test_exact_sizes_spread_and_cover(sizes, batch_size, epoch):
    sizes = np.asarray(sizes, dtype=np.int64)
    n = int(sizes.sum())
    policy = FixedSize(batch_size)
    strata = strata_of_sizes(sizes)
    if not exact_feasible(sizes, batch_size):
        with pytest.raises(ValueError, match=r"^batch_size=\d+ gives \d+ full batch"):
            policy.allocate(strata, epoch)
        return
    allocation = policy.allocate(strata, epoch)
    cuts = np.asarray(allocation.cuts, dtype=np.int64)
    counts = allocation.counts  # (B, S)
    num_batches = -(-n // batch_size)
    assert allocation.num_batches == num_batches == policy.num_batches(strata)
    # Every row once.
    assert (cuts[:, 0] == 0).all() and (np.diff(cuts, axis=1) >= 0).all()
    assert (cuts[:, -1] == sizes).all()
    # Exact sizes: batch_size rows, the last batch the remainder (shorter unless it divides).
    totals = counts.sum(axis=1)
    assert (totals[:-1] == batch_size).all()
    assert totals[-1] == n - (num_batches - 1) * batch_size
    assert (totals[-1] < batch_size) == policy.short_last_batch(strata)
    # A controlled rounding: every count is the floor or ceiling of its share.
    share = sizes[None, :] * totals[:, None]
    assert (counts >= share // n).all() and (counts <= -(-share // n)).all()
    full = counts[:-1]
    if full.shape[0]:
        assert (full.max(axis=0) - full.min(axis=0) <= 1).all()
        assert full.min() >= 1
    # The lazy plan's closed form gives the same cuts, batch by batch, in any order.
    order = np.random.default_rng(epoch).permutation(num_batches)
    lo, hi = policy.batch_cuts(strata, epoch, order)
    np.testing.assert_array_equal(lo, cuts[:, order].T)
    np.testing.assert_array_equal(hi, cuts[:, order + 1].T)


# ----------------------------------------------- feasibility: exactly the feasible inputs

def _compositions(total, parts):
    if parts == 1:
        yield (total,)
        return
    for first in range(total + 1):
        for rest in _compositions(total - first, parts - 1):
            yield (first,) + rest


def some_allocation(sizes, batch_size, m):
    """Brute force: a count table keeping every documented guarantee of exact sizes, or None.

    Batches of ``batch_size`` rows but a last one of ``L = N - F * batch_size``
    (``F = ceil(N / batch_size) - 1``); every row once; every full batch at
    least ``m`` of every stratum; a stratum's counts over the full batches
    differ by at most one; the last batch holds the floor or the ceiling of
    ``N_s L / N`` (a full last batch counts as a full batch too).
    """
    n = sum(sizes)
    full = (n - 1) // batch_size
    last_rows = n - full * batch_size
    short = last_rows < batch_size
    rows = [c for c in _compositions(batch_size, len(sizes)) if min(c) >= m]
    for last in _compositions(last_rows, len(sizes)):
        if any(not s * last_rows // n <= x <= -(-s * last_rows // n) for s, x in zip(sizes, last)):
            continue
        if not short and min(last) < m:
            continue
        rest = [s - x for s, x in zip(sizes, last)]

        def fill(batches, left):
            if len(batches) == full:
                table = np.array(batches + ([] if short else [list(last)]), dtype=np.int64)
                ok = not any(left) and (table.size == 0 or
                                        (table.max(axis=0) - table.min(axis=0) <= 1).all())
                return batches if ok else None
            for row in rows:  # batches in non-decreasing order: each table once
                if (batches and list(row) < batches[-1]) or any(r > x for r, x in zip(row, left)):
                    continue
                found = fill(batches + [list(row)], [x - r for x, r in zip(left, row)])
                if found is not None:
                    return found
            return None

        found = fill([], rest)
        if found is not None:
            return found + [list(last)]
    return None


SMALL = [(sizes, batch_size, m) for k in (1, 2, 3) for sizes in
         __import__("itertools").product(range(1, 6), repeat=k)
         for m in (1, 2, 3) for batch_size in range(1, sum(sizes) + 2)]


def _suggestions(message):
    """The batch sizes and minimum a refusal says work: ([batch_size, ...], every_from, m)."""
    sizes = [int(x) for x in re.findall(r"batch_size=(\d+) \(the (?:smallest larger|largest "
                                        r"smaller) one that works", message)]
    every = re.search(r"batch_size >= (\d+)", message)
    minimum = re.search(r"min_per_stratum=(\d+) \(the largest that works", message)
    return sizes, int(every.group(1)), minimum and int(minimum.group(1))


def test_exactly_the_feasible_small_inputs_are_accepted():
    # Every input with up to 3 strata of up to 5 rows, every batch size up to N + 1
    # and minimum up to 3, against a brute-force search over count tables.
    refused = 0
    for sizes, batch_size, m in SMALL:
        strata = strata_of_sizes(list(sizes), tuple(f"s{k}" for k in range(len(sizes))))
        possible = some_allocation(sizes, batch_size, m) is not None
        try:
            counts = FixedSize(batch_size, m).allocate(strata, 0).counts
        except ValueError as error:
            assert not possible, f"{sizes}, batch_size={batch_size}, m={m} refused: {error}"
            assert not feasible(np.array(sizes), batch_size, m)
            refused += 1
            message = str(error)
            if min(sizes) < m:
                assert message.startswith(f"min_per_stratum={m} is more rows than stratum")
                continue
            assert message.startswith(f"batch_size={batch_size} gives ")
            works, every, minimum = _suggestions(message)
            for other in works + [every, every + 1]:
                assert exact_feasible(sizes, other, m), (message, other)
            if minimum is not None:
                assert exact_feasible(sizes, batch_size, minimum)
                assert not exact_feasible(sizes, batch_size, minimum + 1)
            continue
        assert possible, f"{sizes}, batch_size={batch_size}, m={m} accepted, no allocation exists"
        n, full = sum(sizes), (sum(sizes) - 1) // batch_size
        last_rows = n - full * batch_size
        assert counts.sum(axis=1).tolist() == [batch_size] * full + [last_rows]
        assert counts.sum(axis=0).tolist() == list(sizes)
        spread = counts if last_rows == batch_size else counts[:-1]
        assert spread.size == 0 or (spread.min() >= m and
                                    (spread.max(axis=0) - spread.min(axis=0) <= 1).all())
        share = np.array(sizes) * last_rows
        assert ((counts[-1] >= share // n) & (counts[-1] <= -(-share // n))).all()
        assert feasible(np.array(sizes), batch_size, m)  # the rule the refusals' search uses
    assert 0 < refused < len(SMALL)


def test_formerly_refused_inputs_are_served():
    # Strata [0, 1, 1, 2], batch_size 3: the full batch takes one row of each and the
    # last batch the second row of stratum 1 (the rounding in order of appearance gave
    # the last row to stratum 2, leaving it none for the full batch).
    plan = pystratum.plan_batches([0, 1, 1, 2], FixedSize(3), seed=1)
    assert plan.counts.tolist() == [[1, 1, 1], [0, 1, 0]]
    counts = FixedSize(50, 4).allocate(strata_of_sizes([5, 23, 5, 44]), 0).counts
    assert counts.sum(axis=1).tolist() == [50, 27] and counts[0].min() >= 4


@settings(max_examples=300)
@given(sizes=stratum_sizes, batch_size=st.integers(1, 400), m=st.integers(1, 6))
def test_a_refusal_states_the_rule_the_numbers_and_what_works(sizes, batch_size, m):
    sizes = np.asarray(sizes, dtype=np.int64)
    labels = tuple(f"s{k}" for k in range(len(sizes)))
    n = int(sizes.sum())
    try:
        FixedSize(batch_size, m).allocate(strata_of_sizes(sizes, labels), 0)
        return
    except ValueError as error:
        message = str(error)
    if sizes.min() < m:
        assert message.startswith(f"min_per_stratum={m} is more rows than stratum")
        assert f"lower min_per_stratum to at most {sizes.min()}" in message
        return
    full = (n - 1) // batch_size
    assert message.startswith(f"batch_size={batch_size} gives ")
    assert f"min_per_stratum={m} row(s) of every stratum" in message
    assert re.search(r"stratum 's\d+' has \d+ row\(s\), fewer than|the strata can fill at "
                     r"most \d+ of its", message)
    if n - full * batch_size < batch_size:
        assert f"/ {n} rows" in message
    works, every, minimum = _suggestions(message)
    larger = [w for w in works if w > batch_size]
    smaller = [w for w in works if w < batch_size]
    assert len(larger) <= 1 and len(smaller) <= 1 and every > batch_size
    nearest_above = larger[0] if larger else every
    assert feasible(sizes, nearest_above, m) and feasible(sizes, every, m)
    # Nearest: nothing in between works (within the search's reach).
    for other in range(batch_size + 1, min(nearest_above, batch_size + 50)):
        assert not feasible(sizes, other, m)
    if smaller:
        assert feasible(sizes, smaller[0], m)
        for other in range(smaller[0] + 1, batch_size):
            assert not feasible(sizes, other, m)
    else:
        for other in range(max(1, batch_size - 50), batch_size):
            assert not feasible(sizes, other, m)
    if minimum is not None:
        assert feasible(sizes, batch_size, minimum)
    elif m > 1:
        assert not feasible(sizes, batch_size, m - 1)


def test_by_hand():
    # 10 + 7 rows, batch_size 5: 3 full batches and one of 2 rows. The last batch's
    # shares are 10 * 2 / 17 = 1.18 and 7 * 2 / 17 = 0.82: floor(10 * 2 / 17) = 1 and
    # floor(17 * 2 / 17) - 1 = 1. The full batches share 9 and 6 rows: 3 + 2 each.
    allocation = FixedSize(5).allocate(strata_of_sizes([10, 7], ("a", "b")), 0)
    assert allocation.counts.tolist() == [[3, 2], [3, 2], [3, 2], [1, 1]]
    balanced = FixedSize(5, sizes="balanced").allocate(strata_of_sizes([10, 7]), 0)
    assert balanced.counts.tolist() == [[4, 2], [3, 3], [3, 2]]


def test_sizes_is_checked_and_recorded():
    with pytest.raises(ValueError, match=r"^sizes must be one of 'exact', 'balanced', "
                                         r"got sizes='nearest'"):
        FixedSize(8, sizes="nearest")
    with pytest.raises(ValueError, match=r"^sizes must be one of"):
        FixedSize(8, sizes=None)
    assert FixedSize(8).to_dict() == {"name": "fixed_size", "params": {
        "batch_size": 8, "min_per_stratum": 1, "sizes": "exact"}}
    assert policy_from_params("fixed_size", {"batch_size": 8, "sizes": "balanced"}) == \
        FixedSize(8, 1, "balanced") != FixedSize(8)


@settings(max_examples=60)
@given(sizes=st.lists(st.integers(1, 80), min_size=1, max_size=6), batch_size=st.integers(1, 90),
       seed=st.integers(0, 2**31), epoch=st.integers(0, 5),
       rng=st.sampled_from(["numpy", "R", "index"]))
def test_plans_hold_the_allocation(sizes, batch_size, seed, epoch, rng):
    codes = np.random.default_rng(seed).permutation(np.repeat(np.arange(len(sizes)), sizes))
    try:
        plan = plan_allowing_one_batch(codes, FixedSize(batch_size), seed=seed, epoch=epoch,
                                       rng=rng)
    except ValueError as error:
        assert str(error).startswith(f"batch_size={batch_size} ")
        assert not exact_feasible(sizes, batch_size)  # decided by the sizes alone
        return
    batches = plan.batches
    assert sorted(np.concatenate(batches).tolist()) == list(range(codes.shape[0]))
    lengths = [len(b) for b in batches]
    assert lengths[:-1] == [batch_size] * (len(batches) - 1) and lengths[-1] <= batch_size
    observed = np.array([np.bincount(codes[b], minlength=len(sizes)) for b in batches])
    np.testing.assert_array_equal(observed, plan.counts)


def test_a_huge_batch_size_is_one_short_batch_and_huge_products_stay_exact():
    labels = np.repeat([0, 1], [30, 10])
    assert pystratum.plan_batches(labels, FixedSize(2**70), seed=1,
                                  allow_single_batch=True).counts.tolist() == [[30, 10]]
    # N * L past int64: the last batch's shares in Python integers.
    sizes = [3 * 10**9, 2 * 10**9 + 7]
    n, batch_size = sum(sizes), 4 * 10**9
    last_rows = n - batch_size  # one full batch, then the rest
    last = [sizes[0] * last_rows // n, last_rows - sizes[0] * last_rows // n]
    _, hi = FixedSize(batch_size).batch_cuts(strata_of_sizes(sizes), 0, np.array([0, 1]))
    assert hi.tolist() == [[sizes[0] - last[0], sizes[1] - last[1]], sizes]
    assert int(hi[0].sum()) == batch_size


# ------------------------------------------------------------------- drop_last

LABELS = np.random.default_rng(5).permutation(np.repeat([0, 1, 2], [31, 200, 69]))  # 300 rows


def test_drop_last_in_one_process_drops_the_short_last_batch_and_other_rows_each_epoch():
    kept = StratifiedBatchSampler(LABELS, FixedSize(64), seed=3, drop_last=True)
    every = StratifiedBatchSampler(LABELS, FixedSize(64), seed=3)
    assert len(every) == 5 and len(kept) == 4
    left_out = []
    for epoch in range(3):
        all_batches, kept_batches = list(every), list(kept)
        assert kept_batches == all_batches[:4]
        assert [len(b) for b in all_batches] == [64, 64, 64, 64, 44]
        assert sorted(sum(all_batches, [])) == list(range(300))
        left_out.append(set(all_batches[4]))
    assert left_out[0] != left_out[1] != left_out[2]
    # Policies without a remainder batch drop nothing in one process.
    assert len(StratifiedBatchSampler(LABELS, 5, seed=1, drop_last=True)) == \
        len(StratifiedBatchSampler(LABELS, 5, seed=1))
    assert len(StratifiedBatchSampler(LABELS, FixedSize(60), seed=1, drop_last=True)) == 5
    assert len(StratifiedBatchSampler(LABELS, FixedSize(64, sizes="balanced"), seed=1,
                                      drop_last=True)) == 5


def test_drop_last_with_only_a_short_batch_is_an_error():
    with pytest.raises(ValueError, match=r"drop_last=True leaves no batch for any rank.*after "
                                         r"dropping its short last batch"):
        StratifiedBatchSampler(LABELS, FixedSize(400), seed=1, drop_last=True,
                               allow_single_batch=True)


@settings(max_examples=60, deadline=None)
@given(n_rows=st.integers(20, 300), batch_size=st.integers(4, 70), replicas=st.integers(1, 4),
       drop_last=st.booleans(), epoch=st.integers(0, 3), seed=st.integers(0, 2**31))
def test_every_rank_serves_as_many_batches_and_the_short_one_goes_first(
        n_rows, batch_size, replicas, drop_last, epoch, seed):
    labels = np.random.default_rng(seed).integers(0, 2, n_rows)
    labels[:2] = [0, 1]
    if not exact_feasible(np.bincount(labels), batch_size):
        return
    # One batch (batch_size >= n_rows) is opted in: drop_last and padding are the point here.
    plan = [b.tolist() for b in pystratum.plan_batches(labels, FixedSize(batch_size), seed=seed,
                                                       epoch=epoch,
                                                       allow_single_batch=True).batches]
    short = len(plan[-1]) < batch_size
    kept = plan[:-1] if drop_last and short else plan
    if drop_last and len(kept) < replicas:
        with pytest.raises(ValueError, match="drop_last=True leaves no batch"):
            StratifiedBatchSampler(labels, FixedSize(batch_size), seed=seed,
                                   num_replicas=replicas, rank=0, drop_last=drop_last,
                                   allow_single_batch=True)
        return
    served = []
    for rank in range(replicas):
        sampler = StratifiedBatchSampler(labels, FixedSize(batch_size), seed=seed,
                                         num_replicas=replicas, rank=rank, drop_last=drop_last,
                                         allow_single_batch=True)
        sampler.set_epoch(epoch)
        batches = list(sampler)
        assert len(batches) == len(sampler)
        served.append(batches)
        # The sampler= face with DataLoader(drop_last=...) builds the same batches.
        flat = StratifiedSampler(labels, FixedSize(batch_size), seed=seed,
                                 num_replicas=replicas, rank=rank, drop_last=drop_last,
                                 allow_single_batch=True)
        flat.set_epoch(epoch)
        loader = DataLoader(TensorDataset(torch.arange(n_rows)), sampler=flat,
                            batch_size=flat.batch_size, drop_last=drop_last)
        assert [index.tolist() for (index,) in loader] == batches
    assert len({len(batches) for batches in served}) == 1
    count = len(served[0])
    # Rank r serves kept batches r, r + n, ... (padding from the start without drop_last).
    for rank, batches in enumerate(served):
        assert batches == [kept[(j * replicas + rank) % len(kept)] for j in range(count)]
    if drop_last:
        assert count == len(kept) // replicas
        rows = [row for batches in served for batch in batches for row in batch]
        assert len(rows) == len(set(rows))  # disjoint
        assert all(len(batch) == batch_size for batches in served for batch in batches) \
            or not short
    else:
        assert count == -(-len(plan) // replicas)
        assert set().union(*(set(b) for batches in served for b in batches)) == set(range(n_rows))


# ------------------------------------------------------------ torch conventions

def test_batch_size_is_shorthand_for_fixed_size():
    shorthand = StratifiedBatchSampler(LABELS, batch_size=64, seed=2)
    assert shorthand.policy == FixedSize(64)
    assert list(shorthand) == list(StratifiedBatchSampler(LABELS, FixedSize(64), seed=2))
    # No public batch_size but None (accelerate would re-batch rows to it).
    assert getattr(shorthand, "batch_size", None) is None
    # The positional signature is kept: strata, then the policy.
    assert list(StratifiedBatchSampler(LABELS, 4, seed=1)) == \
        list(StratifiedBatchSampler(LABELS, MinPerStratum(4), seed=1))


@pytest.mark.parametrize("keywords, named", [
    ({"policy": FixedSize(32)}, "policy"), ({"policy": 4}, "policy"),
    ({"policy": Targets("balanced", 8)}, "policy"), ({"min_samples_per_stratum": 2},
                                                      "min_samples_per_stratum")])
def test_a_policy_and_batch_size_together_are_an_error(keywords, named):
    with pytest.raises(ValueError, match=rf"^batch_size must be None when a policy is given, "
                                         rf"got batch_size=64 with {named}="):
        StratifiedBatchSampler(LABELS, batch_size=64, seed=1, **keywords)


@pytest.mark.parametrize("value, error", [(0, ValueError), (-3, ValueError), (2.5, TypeError),
                                          (True, TypeError), ("64", TypeError)])
def test_a_bad_batch_size_is_named(value, error):
    with pytest.raises(error, match=r"^batch_size must be"):
        StratifiedBatchSampler(LABELS, batch_size=value, seed=1)


# ---------------------------------------------------------------------------- CLI

def test_cli_plan_takes_sizes_as_a_param(tmp_path):
    data = tmp_path / "rows.csv"
    data.write_text("label\n" + "\n".join(["a"] * 30 + ["b"] * 70) + "\n")

    def plan(*extra):
        return subprocess.run([sys.executable, "-m", "pystratum", "plan", str(data), "--stratum",
                               "label", "--policy", "fixed_size", "--param", "batch_size=32",
                               "--seed", "1", *extra], capture_output=True, text=True)

    exact = plan()
    assert exact.returncode == 0, exact.stderr
    assert "sizes='exact'" in exact.stdout and "4 batches" in exact.stdout
    balanced = plan("--param", "sizes=balanced")
    assert balanced.returncode == 0, balanced.stderr
    assert "sizes='balanced'" in balanced.stdout and "3 batches" in balanced.stdout
    bad = plan("--param", "sizes=nearest")
    assert bad.returncode != 0 and "sizes must be one of 'exact', 'balanced'" in bad.stderr


# --------------------------------------------------------------- R (live, rpy2)

def r_batches(session, labels, batch_size, sizes, seed, epoch):
    """R's batches (1-based), or the argument its error names."""
    call = r_function(session, """function(y, batch_size, sizes, seed, epoch) {
      out = tryCatch(pystratum::stratified_batches(y, pystratum::policy_fixed_size(batch_size,
        sizes = sizes), seed = seed, epoch = epoch, allow_single_batch = TRUE),
        pystratum_error = function(e) e)
      if (inherits(out, "pystratum_error")) return(list(error = out$argument, batches = list()))
      list(error = "", batches = lapply(out, as.integer))
    }""")
    with session.calling():
        out = call(session.ro.IntVector(labels.tolist()), batch_size, sizes, seed, epoch)
        error = str(out.rx2("error")[0])
        return error or [list(batch) for batch in out.rx2("batches")]


@settings(max_examples=40, deadline=None)
@given(sizes=st.lists(st.integers(1, 40), min_size=1, max_size=6), batch_size=st.integers(1, 60),
       kind=st.sampled_from(["exact", "balanced"]), seed=st.integers(0, 2**31 - 2),
       epoch=st.integers(0, 3))
def test_r_gives_the_core_batches_plus_one(r_session, sizes, batch_size, kind, seed, epoch):
    labels = np.random.default_rng(seed % 17).permutation(np.repeat(np.arange(len(sizes)), sizes))
    got = r_batches(r_session, labels, batch_size, kind, seed, epoch)
    try:
        plan = pystratum.plan_batches(labels, FixedSize(batch_size, sizes=kind), seed=seed,
                                      epoch=epoch, rng="R", allow_single_batch=True)
    except ValueError as error:
        assert got == "batch_size", f"Python refused ({error}), R gave {got!r}"
        return
    assert got == [(batch + 1).tolist() for batch in plan.batches]


def test_r_accepts_refuses_and_says_the_same_on_every_small_input(r_session):
    # The exhaustive small inputs above, in one call to R: the same cuts where both
    # serve, the same blamed argument and the same words where both refuse.
    call = r_function(r_session, """function(cases) {
      lapply(cases, function(case) {
        sizes = as.integer(case[[1L]])
        encoded = pystratum:::encode_strata(rep(sprintf("s%d", seq_along(sizes) - 1L), sizes))
        out = tryCatch(pystratum:::policy_allocate(pystratum::policy_fixed_size(case[[2L]],
          case[[3L]]), encoded, 0)$cuts, pystratum_error = function(e) e)
        if (inherits(out, "pystratum_error")) return(c(out$argument, conditionMessage(out)))
        paste(as.integer(out), collapse = " ")
      })
    }""")
    ro = r_session.ro
    with r_session.calling():
        cases = ro.vectors.ListVector.from_length(len(SMALL))
        for k, (sizes, batch_size, m) in enumerate(SMALL):
            cases[k] = ro.vectors.ListVector.from_length(3)
            cases[k][0], cases[k][1], cases[k][2] = ro.IntVector(sizes), batch_size, m
        answers = [tuple(str(x) for x in answer) for answer in call(cases)]
    for (sizes, batch_size, m), answer in zip(SMALL, answers):
        strata = strata_of_sizes(list(sizes), tuple(f"s{k}" for k in range(len(sizes))))
        try:
            cuts = FixedSize(batch_size, m).allocate(strata, 0).cuts
        except ValueError as error:
            argument = "min_per_stratum" if min(sizes) < m else "batch_size"
            assert answer == (argument, str(error)), (sizes, batch_size, m)
            continue
        # R's cuts are an S x (B + 1) matrix, column-major.
        assert answer == (" ".join(str(int(x)) for x in np.asarray(cuts).T.ravel()),), \
            (sizes, batch_size, m)
