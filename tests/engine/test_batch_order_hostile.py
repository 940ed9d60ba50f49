"""Hostile tests of ``batch_order`` (docs/BATCH_ORDER.md) through every face.

Hostile values in Python and R; round trips through to_dict/policy_from_params,
sampler state_dict (mid-epoch resume) and DDP sharding; extreme shapes (batches
of 1, prime sizes, one stratum, 1000 strata, N = 1) under every rng and epoch;
the numba kernels against numpy's path on adversarial counts and code dtypes;
MultiLabel's placing-label order; the CLI. Every check: the same rows per
batch as ``"assembled"``, and floor/ceil of every stratum per chunk for every
g in the chain of the batch size.
"""

from __future__ import annotations

import json

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import pystratum
from pystratum.engine._batch_order import (reorder_split_safe, split_safe_labels,
                                           split_safe_labels_many)
from pystratum.policies import (ClassesPerBatch, Downsample, FixedSize, MinPerStratum, MultiLabel,
                                Targets, policy_from_params)

from _r_helpers import r_function, r_session  # noqa: F401 (fixture)
from _split_safe import guaranteed

ORDERS = [None, "split_safe", "assembled"]


def assert_balanced(labels, g):
    """Every one of g equal chunks holds floor/ceil of each label's count / g."""
    labels = np.asarray(labels)
    chunks = labels.reshape(g, -1)
    for s in np.unique(labels):
        c = int((labels == s).sum())
        per = (chunks == s).sum(axis=1)
        assert per.min() >= c // g and per.max() <= -(-c // g), (labels.tolist(), g, s)


def with_order(policy, order):
    params = dict(policy.params())
    params.pop("batch_order", None)
    if policy.name == "downsample":
        params["base"] = policy.base.to_dict()
    if order is not None:
        params["batch_order"] = order
    return policy_from_params(policy.name, params)


def make_policies(order=None):
    return [Targets("balanced", 12, batch_order=order),
            Downsample({"0": 0.5}, Targets("balanced", 10), batch_order=order),
            ClassesPerBatch(3, 4, batch_order=order),
            MinPerStratum(2, batch_order=order),
            FixedSize(16, batch_order=order),
            MultiLabel(8, batch_order=order)]


HOSTILE = [b"split_safe", np.bytes_(b"assembled"), np.str_("bogus"), True, False, 0, 1, 0.0,
           ["split_safe"], ("assembled",), {"split_safe"}, "SPLIT_SAFE", " split_safe",
           "split_safe ", "split-safe", "", "none", "None", float("nan"), np.array(["split_safe"])]


# --- values -----------------------------------------------------------------------------------

@pytest.mark.parametrize("value", HOSTILE, ids=repr)
@pytest.mark.parametrize("make", [
    lambda v: Targets("balanced", 8, batch_order=v),
    lambda v: Downsample({"0": 0.5}, Targets("balanced", 8), batch_order=v),
    lambda v: ClassesPerBatch(2, 2, batch_order=v),
    lambda v: MinPerStratum(1, batch_order=v),
    lambda v: FixedSize(8, batch_order=v),
    lambda v: MultiLabel(8, batch_order=v),
], ids=["targets", "downsample", "cpb", "min", "fixed", "multi_label"])
def test_hostile_values_name_batch_order(make, value):
    with pytest.raises(ValueError, match="batch_order must be 'split_safe', 'assembled' or None"):
        make(value)


@pytest.mark.parametrize("value", HOSTILE[:6], ids=repr)
def test_hostile_values_through_policy_from_params(value):
    with pytest.raises(ValueError, match="batch_order"):
        policy_from_params("targets", {"shares": "balanced", "batch_size": 8,
                                       "batch_order": value})


def test_numpy_str_is_recorded_as_the_plain_str():
    # Regression: np.str_("split_safe") was stored (and recorded) as numpy's str_.
    policy = Targets("balanced", 8, batch_order=np.str_("split_safe"))
    assert type(policy.batch_order) is str
    assert type(policy.to_dict()["params"]["batch_order"]) is str
    assert policy == Targets("balanced", 8, batch_order="split_safe")


R_HOSTILE = ['charToRaw("split_safe")', "NA_character_", "NA", "TRUE", "0", "1L",
             'c("split_safe", "assembled")', '"SPLIT_SAFE"', '" split_safe"', '"split-safe"',
             '""', 'factor("split_safe")', 'list("split_safe")', "character(0)"]


@pytest.mark.parametrize("value", R_HOSTILE)
@pytest.mark.parametrize("call", [
    'policy_targets("balanced", 8, batch_order = {v})',
    'policy_downsample(c("0" = 0.5), pystratum::policy_targets("balanced", 8), batch_order = {v})',
    "policy_classes_per_batch(2, 2, batch_order = {v})",
    "policy_min_per_stratum(1, batch_order = {v})",
    "policy_fixed_size(8, batch_order = {v})",
    "policy_multi_label(8, batch_order = {v})",
], ids=["targets", "downsample", "cpb", "min", "fixed", "multi_label"])
def test_r_hostile_values_name_batch_order(r_session, call, value):  # noqa: F811
    probe = r_function(r_session, "function() tryCatch({ pystratum::" + call.format(v=value)
                       + '; "ACCEPTED" }, error = function(e) conditionMessage(e))')
    message = str(probe()[0])
    assert "batch_order must be 'split_safe', 'assembled' or None" in message, message


def test_r_named_batch_order_is_the_plain_value(r_session):  # noqa: F811
    # Regression: c(x = "split_safe") passed the check but policy_split_safe()
    # (identical()) then read it as "assembled": batches silently not split-safe.
    probe = r_function(r_session, """function() {
      y = rep(0:2, c(40, 30, 30))[c(seq(1, 100, 3), seq(2, 100, 3), seq(3, 100, 3))]
      a = pystratum::policy_fixed_size(10, batch_order = c(x = "split_safe"))
      b = pystratum::policy_fixed_size(10, batch_order = "split_safe")
      c(pystratum:::policy_split_safe(a), identical(a$params, b$params),
        identical(unclass(pystratum::stratified_batches(y, a, seed = 1)),
                  unclass(pystratum::stratified_batches(y, b, seed = 1))))
    }""")
    assert list(probe()) == [True, True, True]


# --- round trips ------------------------------------------------------------------------------

@pytest.mark.parametrize("order", ORDERS)
def test_policies_round_trip_through_to_dict_and_json(order):
    for policy in make_policies(order):
        record = json.loads(json.dumps(policy.to_dict()))
        again = policy_from_params(record["name"], record["params"])
        assert again == policy and again.batch_order == order
        assert again.split_safe() == policy.split_safe()
        assert again.split_safe(index=True) == policy.split_safe(index=True)
        assert ("batch_order" in record["params"]) == (order is not None)


def strata_for(policy, n=240, seed=0):
    rng = np.random.default_rng(seed)
    if policy.reads_label_matrix:
        return (rng.random((n, 4)) < [0.5, 0.3, 0.1, 0.05]).astype(np.int8)
    return rng.integers(0, 3, n)


@pytest.mark.parametrize("order", ["split_safe", "assembled"])
@pytest.mark.parametrize("rng", ["numpy", "torch", "index"])
@pytest.mark.parametrize("index", range(6))
def test_sampler_resumes_mid_epoch_with_the_same_remaining_batches(order, rng, index):
    from pystratum.torch import StratifiedBatchSampler

    policy = make_policies(order)[index]
    y = strata_for(policy)
    if rng == "index" and policy.reads_label_matrix:
        # MultiLabel has no lazy plan: the sampler refuses rng='index' at once.
        with pytest.raises(ValueError, match="^rng='index' cannot serve MultiLabel"):
            StratifiedBatchSampler(y, policy, seed=5, rng=rng)
        return
    reference = StratifiedBatchSampler(y, policy, seed=5, rng=rng)
    reference.set_epoch(1)
    full = [list(b) for b in reference]
    sampler = StratifiedBatchSampler(y, policy, seed=5, rng=rng)
    sampler.set_epoch(1)
    it = iter(sampler)
    head = [list(next(it)) for _ in range(len(full) // 2)]
    state = sampler.state_dict()
    fresh = StratifiedBatchSampler(y, with_order(policy, order), seed=99, rng=rng)
    fresh.load_state_dict(state)
    assert head + [list(b) for b in fresh] == full
    # A sampler of the other order refuses the state (its batches differ).
    other = "assembled" if order == "split_safe" else "split_safe"
    wrong = StratifiedBatchSampler(y, with_order(policy, other), seed=5, rng=rng)
    with pytest.raises(ValueError):
        wrong.load_state_dict(state)


@pytest.mark.parametrize("rng", ["numpy", "index"])
@pytest.mark.parametrize("replicas", [2, 3])
def test_ddp_shards_whole_split_safe_batches(rng, replicas):
    from pystratum.torch import StratifiedBatchSampler

    y = np.random.default_rng(2).integers(0, 4, 500)
    split = Targets("balanced", 24)
    plain = Targets("balanced", 24, batch_order="assembled")
    plan = pystratum.plan_batches(y, split, seed=3, rng=rng).batches
    base = pystratum.plan_batches(y, plain, seed=3, rng=rng).batches
    for rank in range(replicas):
        got = [np.asarray(b) for b in StratifiedBatchSampler(
            y, split, seed=3, rng=rng, num_replicas=replicas, rank=rank)]
        ref = [np.asarray(b) for b in StratifiedBatchSampler(
            y, plain, seed=3, rng=rng, num_replicas=replicas, rank=rank)]
        assert len(got) == len(ref)
        for a, b, whole in zip(got, ref, plan[rank::replicas]):
            assert a.tolist() == whole.tolist() and sorted(a.tolist()) == sorted(b.tolist())
            for g in guaranteed(24):
                assert_balanced(y[a], g)
    assert len(plan) == len(base)


# --- extreme shapes ---------------------------------------------------------------------------

def check_against_assembled(y, policy, rng, seed, epoch, allow_single=True):
    plain = with_order(policy, "assembled")
    got = pystratum.plan_batches(y, policy, seed=seed, rng=rng, epoch=epoch,
                                 allow_single_batch=allow_single)
    base = pystratum.plan_batches(y, plain, seed=seed, rng=rng, epoch=epoch,
                                  allow_single_batch=allow_single)
    assert got.num_batches == base.num_batches
    for a, b in zip(got.batches, base.batches):
        assert sorted(a.tolist()) == sorted(b.tolist())
        # ClassesPerBatch's split-safe order is its slot order (whole classes per chunk).
        if policy.split_safe(index=rng == "index") and policy.name != "classes_per_batch":
            for g in guaranteed(len(a)):
                assert_balanced(y[a], g)
            for s in np.unique(y[a]):
                # within a stratum, the assembled order is kept
                assert a[y[a] == s].tolist() == [r for r in b.tolist() if y[r] == s]
    return got


@settings(max_examples=25, deadline=None)
@given(n_strata=st.sampled_from([1, 2, 3, 7]), batch=st.sampled_from([1, 2, 6, 97, 194, 3 * 89]),
       extra=st.integers(0, 300), rng=st.sampled_from(["numpy", "R", "torch", "index"]),
       epoch=st.integers(0, 3), seed=st.integers(0, 50))
def test_targets_on_prime_and_unit_batch_sizes(n_strata, batch, extra, rng, epoch, seed):
    y = np.random.default_rng(seed).integers(0, n_strata, batch + extra + n_strata)
    y[:n_strata] = np.arange(n_strata)
    if batch < n_strata:
        batch = n_strata
    check_against_assembled(y, Targets("balanced", batch), rng, seed, epoch)


@pytest.mark.parametrize("rng", ["numpy", "R", "torch", "index"])
def test_a_thousand_strata_with_tiny_counts(rng):
    y = np.repeat(np.arange(1000), np.random.default_rng(1).integers(1, 4, 1000))
    np.random.default_rng(2).shuffle(y)
    for policy in (MinPerStratum(1, batch_order="split_safe"),
                   FixedSize(2 * len(y) // 2, batch_order="split_safe"),
                   Targets("balanced", 1000)):
        check_against_assembled(y, policy, rng, 4, 1)


@pytest.mark.parametrize("rng", ["numpy", "R", "torch", "index"])
@pytest.mark.parametrize("policy", [Targets("balanced", 1), MinPerStratum(1, batch_order="split_safe"),
                                    FixedSize(1, batch_order="split_safe")], ids=repr)
def test_a_single_row(rng, policy):
    got = check_against_assembled(np.array([0]), policy, rng, 0, 0)
    assert [b.tolist() for b in got.batches] == [[0]]


@pytest.mark.parametrize("rng", ["numpy", "R", "index"])
@pytest.mark.parametrize("epoch", [0, 3])
def test_downsample_over_targets_and_repeating_classes(rng, epoch):
    y = np.random.default_rng(6).integers(0, 5, 700)
    check_against_assembled(y, Downsample({"0": 0.2, "3": 0.5}, Targets("balanced", 97)),
                            rng, 2, epoch)
    small = np.r_[np.repeat(np.arange(4), 40), [4, 4]]
    policy = ClassesPerBatch(4, 6, small="repeat", batch_order="split_safe")
    got = check_against_assembled(small, policy, rng, 1, epoch)
    for batch in got.batches:
        # slot order: g = 2, 4 chunks hold whole classes
        labels = small[batch].reshape(4, 6)
        assert (labels == labels[:, :1]).all()


# --- compiled kernels vs numpy ----------------------------------------------------------------

@st.composite
def adversarial_counts(draw):
    n_rows = draw(st.integers(1, 6))
    width = draw(st.integers(1, 9))
    kind = draw(st.sampled_from(["zeros", "huge", "mixed"]))
    counts = np.array(draw(st.lists(st.lists(st.integers(0, 30), min_size=width, max_size=width),
                                    min_size=n_rows, max_size=n_rows)), dtype=np.int64)
    if kind == "zeros":
        counts[:, ::2] = 0
    elif kind == "huge":
        counts[:, draw(st.integers(0, width - 1))] = draw(st.sampled_from([997, 1024, 2 * 3 * 5 * 7 * 11]))
    if counts.sum(axis=1).min() == 0:
        counts[:, -1] += 1
    return counts


@settings(max_examples=40, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(adversarial_counts(), st.sampled_from(["int64", "int32", "fortran", "strided"]))
def test_compiled_labels_equal_numpy_s_on_adversarial_counts(compiled_paths, counts, layout):
    compiled_paths(False)
    expected = [part.tolist() for part in split_safe_labels_many(counts)]
    if layout == "int32":
        counts = counts.astype(np.int32)
    elif layout == "fortran":
        counts = np.asfortranarray(counts)
    elif layout == "strided":
        wide = np.zeros((counts.shape[0], 2 * counts.shape[1]), dtype=np.int64)
        wide[:, ::2] = counts
        counts = wide[:, ::2]
    compiled_paths(True)
    assert [part.tolist() for part in split_safe_labels_many(counts)] == expected
    labels, _, start = split_safe_labels_many(counts)
    for u, row in enumerate(np.asarray(counts)):
        mine = labels[start[u]:start[u] + row.sum()]
        for g in guaranteed(int(row.sum())):
            assert_balanced(mine, g)


@settings(max_examples=40, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(n_rows=st.integers(1, 300), n_strata=st.sampled_from([1, 2, 255, 256, 300]),
       dtype=st.sampled_from(["uint8", "int32", "int64"]), strided=st.booleans(),
       n_cuts=st.integers(0, 6), seed=st.integers(0, 2**32 - 1))
def test_compiled_reorder_equals_numpy_s_on_small_code_types(compiled_paths, n_rows, n_strata,
                                                             dtype, strided, n_cuts, seed):
    rng = np.random.default_rng(seed)
    top = min(n_strata, np.iinfo(dtype).max + 1)
    codes = rng.integers(0, top, n_rows).astype(dtype)
    first = np.array([np.flatnonzero(codes == s)[0] if (codes == s).any() else n_rows + s
                      for s in range(top)])
    order = rng.permutation(n_rows)
    if strided:
        wide = np.zeros(2 * n_rows, dtype=order.dtype)
        wide[::2] = order
        order = wide[::2]
    bounds = np.r_[0, np.sort(rng.integers(0, n_rows + 1, n_cuts)), n_rows].astype(np.int64)
    compiled_paths(False)
    expected = reorder_split_safe(np.array(order), bounds, codes, first)
    compiled_paths(True)
    got = reorder_split_safe(order, bounds, codes, first)
    assert got.tolist() == expected.tolist()
    for b in range(len(bounds) - 1):
        part = got[bounds[b]:bounds[b + 1]]
        assert sorted(part.tolist()) == sorted(order[bounds[b]:bounds[b + 1]].tolist())
        for g in guaranteed(len(part)):
            assert_balanced(codes[part], g)


@pytest.mark.parametrize("rng", ["numpy", "index"])
def test_compiled_and_numpy_plans_agree(compiled_paths, rng):
    y = np.random.default_rng(8).integers(0, 6, 3000).astype(np.uint8)
    for policy in (Targets("balanced", 97), MinPerStratum(2, batch_order="split_safe"),
                   FixedSize(120, batch_order="split_safe")):
        compiled_paths(False)
        a = pystratum.stratified_batches(y, policy, seed=1, rng=rng)
        compiled_paths(True)
        b = pystratum.stratified_batches(y, policy, seed=1, rng=rng)
        assert [x.tolist() for x in a] == [x.tolist() for x in b]


# --- MultiLabel -------------------------------------------------------------------------------

def label_matrix(kind, n, seed):
    rng = np.random.default_rng(seed)
    m = (rng.random((n, 4)) < [0.5, 0.2, 0.08, 0.3]).astype(np.int8)
    if kind == "no_labels":
        m[: n // 3] = 0
    elif kind == "all_ones":
        m[: n // 4] = 1
    elif kind == "single":
        m = m[:, :1]
        m[0, 0] = 1
    elif kind == "zero_label":
        m[:, 2] = 0
    return m


@settings(max_examples=20, deadline=None)
@given(kind=st.sampled_from(["plain", "no_labels", "all_ones", "single", "zero_label"]),
       batch=st.sampled_from([4, 8, 12, 16, 13]), n=st.integers(40, 200),
       rng=st.sampled_from(["numpy", "R", "torch"]), seed=st.integers(0, 40))
def test_multi_label_split_safe_keeps_rows_and_splits_the_rarest_label(kind, batch, n, rng, seed):
    from pystratum.policies._multi_label import placing_steps

    labels = label_matrix(kind, n, seed)
    split = MultiLabel(batch, batch_order="split_safe")
    plain = MultiLabel(batch, batch_order="assembled")
    try:
        a = pystratum.plan_batches(labels, split, seed=seed, rng=rng, allow_single_batch=True)
    except ValueError as error:
        with pytest.raises(ValueError, match=str(error)[:30].replace("(", r"\(").replace(")", r"\)")
                           .replace("[", r"\[").replace("?", r"\?").replace("*", r"\*")
                           .replace("+", r"\+").replace(".", r"\.")):
            pystratum.plan_batches(labels, plain, seed=seed, rng=rng, allow_single_batch=True)
        return
    b = pystratum.plan_batches(labels, plain, seed=seed, rng=rng, allow_single_batch=True)
    assert a.num_batches == b.num_batches
    steps = placing_steps(labels)   # from the whole matrix: the assignment's steps
    for x, z in zip(a.batches, b.batches):
        assert sorted(x.tolist()) == sorted(z.tolist())
        for g in guaranteed(len(x)):
            assert_balanced(steps[x], g)


@pytest.mark.parametrize("kind", ["plain", "no_labels", "all_ones", "single", "zero_label"])
def test_multi_label_split_safe_is_identical_in_r(r_session, kind):  # noqa: F811
    import pystratum.r as pr

    labels = label_matrix(kind, 120, 3)
    policy = MultiLabel(12, batch_order="split_safe")
    try:
        expected = pystratum.plan_batches(labels, policy, seed=7, rng="R").batches
    except ValueError:
        with pytest.raises(Exception):
            pr.stratified_batches(labels.astype(int), policy, seed=7, rng="R")
        return
    got = pr.stratified_batches(labels.astype(int), policy, seed=7, rng="R")
    assert [np.asarray(g).tolist() for g in got] == [e.tolist() for e in expected]


# --- the command line -------------------------------------------------------------------------

@pytest.fixture(scope="module")
def csv_data(tmp_path_factory):
    folder = tmp_path_factory.mktemp("hostile_order")
    rng = np.random.default_rng(0)
    y = rng.integers(0, 3, 300)
    site = rng.integers(0, 2, 300)
    labels = (rng.random((300, 3)) < [0.4, 0.2, 0.1]).astype(int)
    rows = ["y,site,a,b,c"] + [f"{y[i]},{site[i]},{labels[i, 0]},{labels[i, 1]},{labels[i, 2]}"
                               for i in range(300)]
    (folder / "d.csv").write_text("\n".join(rows) + "\n")
    return folder, y, site, labels


def cli(*args, check_code=0):
    from tests.cli.test_cli import run
    return run(*args, check_code=check_code)


@pytest.mark.parametrize("order", ["split_safe", "assembled"])
@pytest.mark.parametrize("flags, policy", [
    (["--batch-size", "30"], lambda o: FixedSize(30, batch_order=o)),
    (["--min", "3"], lambda o: MinPerStratum(3, batch_order=o)),
    (["--policy", "targets", "--param", "shares=balanced", "--param", "batch_size=18"],
     lambda o: Targets("balanced", 18, batch_order=o)),
    (["--policy", "classes_per_batch", "--param", "classes_per_batch=2", "--param", "per_class=5"],
     lambda o: ClassesPerBatch(2, 5, batch_order=o)),
    (["--policy", "min_per_stratum", "--param", "m=2"], lambda o: MinPerStratum(2, batch_order=o)),
    (["--policy", "fixed_size", "--param", "batch_size=24", "--param", "sizes=\"exact\""],
     lambda o: FixedSize(24, batch_order=o)),
], ids=["batch-size", "min", "targets", "cpb", "min_per_stratum", "fixed_size"])
def test_cli_batch_order_with_every_policy_flag(csv_data, flags, policy, order):
    folder, y, _, _ = csv_data
    done = cli("plan", folder / "d.csv", "--stratum", "y", *flags, "--batch-order", order,
               "--seed", "3", "--batches", "--format", "json")
    record = json.loads(done.stdout)
    expected_policy = policy(order)
    assert record["policy"] == expected_policy.to_dict()
    expected = pystratum.stratified_batches(y, expected_policy, seed=3)
    assert record["batches"] == [b.tolist() for b in expected]


@pytest.mark.parametrize("value", ["SPLIT_SAFE", "split-safe", "", "none"])
def test_cli_refuses_hostile_batch_orders(csv_data, value):
    folder, _, _, _ = csv_data
    done = cli("plan", folder / "d.csv", "--stratum", "y", "--min", "2", "--batch-order", value,
               check_code=2)
    assert "batch-order" in done.stderr
    via_param = cli("plan", folder / "d.csv", "--stratum", "y", "--policy", "min_per_stratum",
                    "--param", "m=2", "--param", f"batch_order={value}", check_code=None)
    assert via_param.returncode != 0 and "batch_order" in via_param.stderr


@pytest.mark.parametrize("order", ["split_safe", "assembled"])
def test_cli_multi_label_batch_order_and_crosscheck(csv_data, order):
    folder, _, _, labels = csv_data
    done = cli("plan", folder / "d.csv", "--label", "a", "--label", "b", "--label", "c",
               "--policy", "multi_label", "--batch-size", "12", "--batch-order", order,
               "--seed", "2", "--batches", "--format", "json")
    record = json.loads(done.stdout)
    policy = MultiLabel(12, batch_order=order)
    assert record["policy"] == policy.to_dict()
    expected = pystratum.stratified_batches(labels, policy, seed=2)
    assert record["batches"] == [b.tolist() for b in expected]
    crossed = cli("crosscheck", folder / "d.csv", "--label", "a", "--label", "b", "--label", "c",
                  "--policy", "multi_label", "--batch-size", "12", "--batch-order", order,
                  "--seed", "2", "--epochs", "2", check_code=None)
    assert crossed.returncode == 0 and crossed.stdout.startswith("IDENTICAL"), crossed.stderr


@pytest.mark.parametrize("flags", [["--min", "3"],
                                   ["--policy", "targets", "--param", "shares=balanced",
                                    "--param", "batch_size=18"],
                                   ["--policy", "classes_per_batch", "--param", "classes_per_batch=2",
                                    "--param", "per_class=5"]])
def test_cli_crosscheck_with_r_in_both_orders(csv_data, flags):
    folder, _, _, _ = csv_data
    for order in ("split_safe", "assembled"):
        crossed = cli("crosscheck", folder / "d.csv", "--stratum", "y", "--stratum", "site",
                      *flags, "--batch-order", order, "--seed", "5", "--epochs", "2",
                      check_code=None)
        assert crossed.returncode == 0 and crossed.stdout.startswith("IDENTICAL"), crossed.stderr


@pytest.mark.parametrize("rng", ["R", "index"])
@pytest.mark.parametrize("shuffle, epoch", [(True, 0), (True, 2), (False, 0)])
@pytest.mark.parametrize("index", range(6))
def test_r_gives_the_same_batches_in_both_orders(r_session, rng, shuffle, epoch, index):  # noqa: F811
    import pystratum.r as pr

    for order in ORDERS:
        policy = make_policies(order)[index]
        if rng == "index" and policy.reads_label_matrix:
            continue
        data = strata_for(policy, n=330, seed=index)
        seed = 5 if shuffle else None
        expected = pystratum.stratified_batches(data, policy, seed=seed, rng=rng,
                                                shuffle=shuffle, epoch=epoch)
        got = pr.stratified_batches(data.astype(int), policy, seed=seed, rng=rng,
                                    shuffle=shuffle, epoch=epoch)
        assert [np.asarray(g).tolist() for g in got] == [e.tolist() for e in expected]


def test_downsample_decides_the_order_not_its_base():
    # As documented per policy: Downsample's own batch_order decides (None: split-safe);
    # a base's batch_order is recorded in the base but not read. R does the same.
    y = np.random.default_rng(0).integers(0, 3, 300)
    inner = Downsample({"0": 0.5}, Targets("balanced", 12, batch_order="assembled"))
    outer = Downsample({"0": 0.5}, Targets("balanced", 12))
    assert inner.split_safe()
    assert [b.tolist() for b in pystratum.stratified_batches(y, inner, seed=1)] == \
        [b.tolist() for b in pystratum.stratified_batches(y, outer, seed=1)]
