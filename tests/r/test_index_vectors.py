"""rng="index" across languages: golden vectors written by R, and live R runs of every
policy (batches and importance weights).

tests/vectors/index_stream.json is written by
tests/vectors/generate_index_stream.R (the R package's stream) and read here
and by r/tests/testthat/test_streams_index.R.
"""

import numpy as np
import pytest

import pystratum
import pystratum.r as pr
from _r_helpers import r_session  # noqa: F401 (fixture)
from _vectors import load_cases
from pystratum.streams._index import index_permutation, round_keys
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
        n_rows = int(sizes.sum())
        if k % 4 == 1:
            policy = pystratum.MinPerStratum(int(gen.integers(1, n_min + 1)))
        elif k % 4 == 3:
            policy = pystratum.FixedSize(max(n_rows // max(1, n_min), 2 * n_rows // 3))
        elif k % 8 == 0:  # recycled small strata
            batch_size = int(gen.integers(n_strata, 4 * n_strata))
            policy = pystratum.policies.Targets("balanced", batch_size)
        else:  # a pooled stratum and importance weights
            policy = pystratum.policies.Downsample({str(labels[0]): float(gen.uniform(0.05, 1))},
                                                   pystratum.MinPerStratum(1))
        configs.append((f"live-{k}", labels, policy, int(gen.integers(0, 2**52)),
                        int(gen.integers(0, 2**31 - 1))))
    return configs


@pytest.mark.parametrize("config", _live_configs(), ids=lambda c: c[0])
def test_same_batches_as_r_live(r_session, config):
    _, labels, policy, seed, epoch = config
    # Some configurations plan one batch: allowed on both sides (the streams are the point).
    plan = pystratum.plan_batches(labels, policy, seed=seed, rng="index", epoch=epoch,
                                  allow_single_batch=True)
    r_batches, r_weights = pr.stratified_batches(labels, policy, seed=seed, rng="index",
                                                 epoch=epoch, return_weights=True,
                                                 allow_single_batch=True)
    assert [b.tolist() for b in r_batches] == [b.tolist() for b in plan]
    if plan.weights is None:
        assert r_weights is None
    else:
        assert [w.tolist() for w in r_weights] == [plan.batch_weights(b).tolist()
                                                   for b in range(len(plan))]


def test_live_configurations_cover_every_policy():
    names = {type(config[2]).__name__ for config in _live_configs()}
    assert names == {"MinPerStratum", "FixedSize", "Targets", "Downsample"}


def test_same_seed_error_as_r(r_session):
    with pytest.raises(ValueError, match=r"^seed must be an integer in \[0, 2\*\*52\)"):
        pystratum.stratified_batches([0, 1, 0, 1], 1, seed=-5, rng="index")
    with pytest.raises(ValueError, match=r"^seed must be an integer in \[0, 2\*\*52\)") as info:
        pr.stratified_batches([0, 1, 0, 1], 1, seed=-5, rng="index")
    assert info.value.argument == "seed"
