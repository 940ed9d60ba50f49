"""Generated negatives: Python (rng="R") and R's negative_pair_batches give the same batches.

Two sources: the golden vectors ``tests/vectors/negative_pairs.json`` (written
by R, required: a missing file fails) and live runs of ``Rscript`` on
configurations generated here (random data sets, uniform and weighted items,
both ``pair_with`` modes, rejection on and off, several epochs). Without
Rscript or the installed R package the live test FAILS with the reason.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess

import numpy as np
import pytest

from _vectors import load_cases, scalar_from_json
from pystratum.negatives import NegativePairSampler, batch_seed

_ERRORS = {"type_error": TypeError, "value_error": ValueError}
_INPUTS = ("users", "items", "num_items", "negatives", "batch_size", "seed", "num_users",
           "epoch", "reject_observed", "pair_with", "item_weights", "duplicates", "max_rounds")

HEADER, CASES = load_cases("negative_pairs.json")


def _arguments(given):
    keywords = {name: scalar_from_json(given[name]) for name in _INPUTS if name in given}
    for name in ("users", "items", "item_weights"):
        if name in keywords:
            # JSON null is R's NA/NaN: a missing id, NaN in Python.
            values = [np.nan if v is None else v for v in given[name]]
            floating = name == "item_weights" or any(isinstance(v, float) for v in values)
            keywords[name] = np.asarray(values, dtype=np.float64 if floating else np.int64)
    epoch = keywords.pop("epoch", 0)
    users, items = keywords.pop("users"), keywords.pop("items")
    return users, items, epoch, keywords


def assert_batch_equal(batch, expected, index_base, label):
    n = batch.num_positives
    positive = [None if v is None else v - index_base for v in expected["positive"]]
    assert batch.positive[:n].tolist() == positive[:n], label
    assert all(v is None for v in positive[n:]) and (batch.positive[n:] == -1).all(), label
    for name in ("user", "item", "label"):
        assert getattr(batch, name).tolist() == expected[name], f"{label}: {name}"
    np.testing.assert_allclose(batch.log_q, expected["log_q"], rtol=1e-13, atol=1e-14,
                               err_msg=f"{label}: log_q")
    np.testing.assert_allclose(batch.weight, expected["weight"], rtol=1e-13,
                               err_msg=f"{label}: weight")


def test_vector_file_header():
    for field in ("description", "generator", "r_version", "regenerate", "rng"):
        assert isinstance(HEADER.get(field), str) and HEADER[field], field
    assert HEADER["index_base"] == 1
    ids = [case["id"] for case in CASES]
    assert len(ids) == len(set(ids)) and len(ids) >= 20
    assert sum("expected_error" in case for case in CASES) >= 10


@pytest.mark.parametrize("case", CASES, ids=[case["id"] for case in CASES])
def test_golden_vectors(case):
    users, items, epoch, keywords = _arguments(case["input"])
    if "expected_error" in case:
        expected = case["expected_error"]
        with pytest.raises(_ERRORS[expected["class"]]) as raised:
            NegativePairSampler(users, items, rng="R", **keywords)
        message = str(raised.value)
        assert re.search(rf"\b{expected['argument']}\b", message), (expected, message)
        return
    sampler = NegativePairSampler(users, items, rng="R", **keywords)
    batches = sampler.epoch_batches(epoch)
    expected = case["expected"]["batches"]
    assert len(batches) == len(expected)
    for b, (batch, want) in enumerate(zip(batches, expected)):
        assert_batch_equal(batch, want, HEADER["index_base"], f"{case['id']} batch {b}")


def test_batch_seed_formula_by_hand():
    # x = seed mod M; x = (x * 2^21 + epoch) mod M; (x * 2^21 + batch) mod M.
    m = 2**31 - 1
    assert batch_seed(0, 0, 0) == 0
    assert batch_seed(1, 0, 0) == (2**42) % m
    assert batch_seed(-1, 2, 3) == (((m - 1) * 2**21 + 2) % m * 2**21 + 3) % m
    seen = {batch_seed(42, e, b) for e in range(8) for b in range(2000)}
    assert len(seen) == 8 * 2000


# ---------------------------------------------------------------- live R


_R_SCRIPT = r"""
library(pystratum)
configs = jsonlite::fromJSON(commandArgs(TRUE)[1], simplifyVector = FALSE)
out = lapply(configs, function(cfg) {
  args = lapply(cfg, function(v) if (is.list(v)) unlist(v) else v)
  batches = do.call(negative_pair_batches, args)
  lapply(batches, function(b) as.list(b))
})
jsonlite::write_json(out, commandArgs(TRUE)[2], digits = NA, na = "null")
"""


def _live_configs():
    gen = np.random.default_rng(20251123)
    configs = []
    for c in range(24):
        num_users = int(gen.integers(1, 30))
        num_items = int(gen.integers(2, 80))
        density = float(gen.uniform(0.02, 0.5))
        observed = gen.random((num_users, num_items)) < density
        observed[np.arange(num_users), gen.integers(0, num_items, num_users)] = True
        observed[:, -1] = False  # nobody observed every item
        users, items = np.nonzero(observed)
        order = gen.permutation(users.size)
        config = {
            "users": users[order].tolist(), "items": items[order].tolist(),
            "num_items": num_items, "negatives": int(gen.integers(1, 6)),
            "batch_size": int(gen.integers(1, 40)),
            "seed": int(gen.integers(-2**31 + 1, 2**31)), "epoch": int(gen.integers(0, 3)),
            "reject_observed": bool(c % 4 != 3), "pair_with": "random" if c % 3 == 2 else "user",
            "max_rounds": 2000,
        }
        if c % 5 == 1:
            config["num_users"] = num_users + int(gen.integers(0, 5))
        if c % 2 == 1:
            weights = gen.pareto(1.0, num_items)
            weights[gen.random(num_items) < 0.1] = 0.0
            weights[-1] = 1.0
            config["item_weights"] = weights.tolist()
        configs.append(config)
    return configs


def test_live_rscript_matches_python(tmp_path):
    rscript = shutil.which("Rscript")
    if rscript is None:
        pytest.fail("Rscript is not on PATH: install R (bash .ci/dev setup) to run the "
                    "cross-language tests.", pytrace=False)
    configs = _live_configs()
    (tmp_path / "configs.json").write_text(json.dumps(configs))
    (tmp_path / "run.R").write_text(_R_SCRIPT)
    done = subprocess.run(
        [rscript, str(tmp_path / "run.R"), str(tmp_path / "configs.json"),
         str(tmp_path / "out.json")], capture_output=True, text=True, timeout=120,
        env=dict(os.environ))
    if done.returncode != 0:
        pytest.fail(f"Rscript failed (is the R package installed into R_LIBS?):\n{done.stderr}",
                    pytrace=False)
    results = json.loads((tmp_path / "out.json").read_text())
    assert len(results) == len(configs)
    for c, (config, r_batches) in enumerate(zip(configs, results)):
        keywords = dict(config)
        users, items = keywords.pop("users"), keywords.pop("items")
        epoch = keywords.pop("epoch")
        sampler = NegativePairSampler(users, items, rng="R", **keywords)
        batches = sampler.epoch_batches(epoch)
        assert len(batches) == len(r_batches), c
        for b, (batch, want) in enumerate(zip(batches, r_batches)):
            assert_batch_equal(batch, want, 1, f"config {c} batch {b}")
