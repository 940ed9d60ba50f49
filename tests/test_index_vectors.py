"""rng="index" across languages: golden vectors written by R, and live R runs.

tests/vectors/index_stream.json is written by
tests/vectors/generate_index_stream.R (the R package's stream) and read here
and by r/tests/testthat/test_index_stream.R.
"""

import numpy as np
import pytest

import pystratum
import pystratum.r as pr
from _r_helpers import r_session  # noqa: F401 (fixture)
from _vectors import load_cases
from pystratum._index_stream import index_permutation, round_keys
from pystratum.policies import policy_from_params

HEADER, CASES = load_cases("index_stream.json")
BASE = HEADER["index_base"]


PERMUTATIONS = [c for c in CASES if "n" in c]
KEYS = [c for c in CASES if "streams" in c]
BATCHES = [c for c in CASES if "strata" in c]


def test_the_file_has_every_group():
    assert len(PERMUTATIONS) >= 8 and len(KEYS) >= 2 and len(BATCHES) >= 5
    assert "regenerate" in HEADER and "generator" in HEADER


@pytest.mark.parametrize("case", PERMUTATIONS, ids=[c["id"] for c in PERMUTATIONS])
def test_permutations_match_r(case):
    ranks = None if case.get("ranks") is None else np.asarray(case["ranks"], np.int64) - BASE
    got = index_permutation(case["n"], case["seed"], case["epoch"], case["stream"], ranks=ranks)
    assert got.tolist() == [v - BASE for v in case["expected"]]


@pytest.mark.parametrize("case", KEYS, ids=[c["id"] for c in KEYS])
def test_round_keys_match_r(case):
    keys = round_keys(case["seed"], case["epoch"], case["streams"])
    assert keys.T.tolist() == case["expected"]


def _policy(record):
    return policy_from_params(record["name"], record["params"])


@pytest.mark.parametrize("case", BATCHES, ids=[c["id"] for c in BATCHES])
def test_batches_match_r(case):
    strata = np.asarray(case["strata"])
    plan = pystratum.plan_batches(strata, _policy(case["policy"]), seed=case["seed"],
                                  rng="index", epoch=case["epoch"])
    assert [b.tolist() for b in plan] == [[v - BASE for v in b] for b in case["expected"]]
    if "expected_weights" in case:
        weights = [plan.weights[plan.bounds[b]:plan.bounds[b + 1]].tolist()
                   for b in range(plan.num_batches)]
        assert weights == case["expected_weights"]


def _live_configs(count=25, seed=20251123):
    gen = np.random.default_rng(seed)
    configs = []
    for k in range(count):
        n_strata = int(gen.integers(1, 12))
        sizes = gen.integers(1, 300, n_strata)
        sizes[0] = max(sizes[0], 5)
        labels = gen.permutation(np.repeat(np.arange(n_strata) * 3 + 1, sizes))
        if k % 3 == 0:
            labels = np.sort(labels)  # grouped rows: members are ranges
        n_min = int(sizes.min())
        if k % 2:
            policy = pystratum.MinPerStratum(int(gen.integers(1, n_min + 1)))
        else:
            n_rows = int(sizes.sum())
            policy = pystratum.FixedSize(max(n_rows // max(1, n_min), 2 * n_rows // 3))
        configs.append((f"live-{k}", labels, policy, int(gen.integers(0, 2**52)),
                        int(gen.integers(0, 2**31 - 1))))
    return configs


@pytest.mark.parametrize("config", _live_configs(), ids=lambda c: c[0])
def test_same_batches_as_r_live(r_session, config):
    import pystratum.r as pr

    _, labels, policy, seed, epoch = config
    python = pystratum.stratified_batches(labels, policy, seed=seed, rng="index", epoch=epoch)
    r_side = pr.stratified_batches(labels, policy, seed=seed, rng="index", epoch=epoch)
    assert [b.tolist() for b in r_side] == [b.tolist() for b in python]


def test_same_seed_error_as_r(r_session):
    import pystratum.r as pr

    for call in (pystratum.stratified_batches, pr.stratified_batches):
        with pytest.raises(ValueError, match=r"seed must be an integer in \[0, 2\*\*52\)") as info:
            call([0, 1, 0, 1], 1, seed=-5, rng="index")
        assert str(info.value).startswith("seed") or getattr(info.value, "argument", "seed") \
            == "seed"
