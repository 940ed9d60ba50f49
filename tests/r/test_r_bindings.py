"""pystratum.r's public wrappers: batches, index bases, the same results as the core.

Needs R, rpy2 and the R package (CI installs them): without them these tests
FAIL with the install command.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

import pystratum
import pystratum.r as pr
from _r_helpers import describe_in_r, r_function, r_session  # noqa: F401 (fixture)


def test_batches_are_zero_based_int64(r_session):
    # REFERENCE.md section 1: 111 "M" then 12 "R", m = 1, no shuffle: the first
    # batch is R rows 1:9 and 112, i.e. Python positions 0..8 and 111.
    strata = ["M"] * 111 + ["R"] * 12
    batches = pr.stratified_batches(strata, 1, shuffle=False)
    assert len(batches) == 12
    assert all(b.dtype == np.int64 for b in batches)
    np.testing.assert_array_equal(batches[0], np.r_[0:9, 111])
    direct = r_function(
        r_session, "function(y) pystratum::stratified_batches(y, 1, shuffle = FALSE)")
    with r_session.localconverter(r_session.converter):
        r_first = np.asarray(direct(r_session.ri.StrSexpVector(strata))[0])
    np.testing.assert_array_equal(batches[0] + 1, r_first)
    assert sorted(np.concatenate(batches).tolist()) == list(range(123))


def test_same_batches_as_core_through_each_container(r_session):
    labels = np.repeat(["a", "b", "c"], [40, 25, 9])
    for strata in (labels, list(labels), pd.Series(labels), pd.Categorical(labels),
                   pd.DataFrame({"y": labels}), {"y": labels}):
        got = pr.stratified_batches(strata, 3, seed=-17, epoch=1, rng="R")
        expected = pystratum.stratified_batches(labels, 3, seed=-17, epoch=1, rng="R")
        assert len(got) == len(expected) == 3
        for g, e in zip(got, expected):
            np.testing.assert_array_equal(g, e)



# ---------------------------------------------------------------------------
# R's torch sampler.


# The R sampler loads R's torch into the calling process, which must not hold
# PyTorch (the two libtorch builds clash): where R torch is installed these
# run in a fresh Python that never imports PyTorch; here (no R torch) they
# check the errors in this process, where no R torch can be loaded.


def _without_pytorch(code):
    """Runs ``code`` in a fresh Python that never imports PyTorch; its stdout."""
    import subprocess
    import sys

    from tests._env import subprocess_environ

    guard = "import sys; sys.modules['torch'] = None\nimport pystratum.r as pr\n"
    done = subprocess.run([sys.executable, "-c", guard + code], capture_output=True,
                          text=True, timeout=300, env=subprocess_environ())
    assert done.returncode == 0, done.stdout + done.stderr
    return done.stdout


def test_batch_sampler_needs_r_torch(r_session):
    if pr.r_package_available("torch"):
        out = _without_pytorch("print(pr.batch_sampler_stratified(2, seed=1) is not None)")
        assert out.strip() == "True"
        return
    with pytest.raises(pr.RError, match="torch") as raised:
        pr.batch_sampler_stratified(2, seed=1)
    assert "install.packages" in str(raised.value)


_VALIDATES = """
import pytest
with pytest.raises((TypeError, ValueError)) as raised:
    pr.batch_sampler_stratified(0)
assert raised.value.argument == "min_samples_per_stratum"
with pytest.raises(TypeError, match="not both"):
    pr.batch_sampler_stratified(2, min_samples_per_stratum=2)
print("ok")
"""


def test_batch_sampler_validates_arguments_in_r(r_session):
    if pr.r_package_available("torch"):
        assert _without_pytorch(_VALIDATES).strip() == "ok"
        return
    exec(_VALIDATES, {"pr": pr})


def test_batch_sampler_takes_a_policy_object(r_session):
    import pystratum

    policy = pystratum.FixedSize(64, min_per_stratum=2)
    if pr.r_package_available("torch"):
        out = _without_pytorch(
            "import pystratum\npolicy = pystratum.FixedSize(64, min_per_stratum=2)\n"
            "print(pr.batch_sampler_stratified(policy, seed=1) is not None)\n"
            "try:\n    pr.batch_sampler_stratified(policy, seed=1, rng='python')\n"
            "except ValueError as error:\n    print(error.argument)\n")
        assert out.split() == ["True", "rng"]
        return
    # R rebuilds the policy, validates every argument, and only then needs torch.
    with pytest.raises(pr.RError, match="torch"):
        pr.batch_sampler_stratified(policy, seed=1)
    with pytest.raises(ValueError) as raised:
        pr.batch_sampler_stratified(policy, seed=1, rng="python")
    assert raised.value.argument == "rng"


def test_a_policy_r_does_not_know_is_a_python_error_naming_it(r_session, capfd):
    from pystratum.policies import Allocation, Policy, _base

    class PythonOnly(Policy):
        name = "test_python_only"

        def params(self):
            return {"k": 2}

        def allocate(self, strata, epoch):
            return Allocation(np.stack([np.zeros_like(strata.sizes), strata.sizes], axis=1))

    try:
        for call in (lambda: pr.stratified_batches(["a", "b"] * 5, PythonOnly(), seed=1),
                     lambda: pr.batch_sampler_stratified(PythonOnly(), seed=1)):
            with pytest.raises(ValueError, match=r"^policy PythonOnly\(k=2\) cannot be rebuilt "
                                                 r"by the R package.*'test_python_only'") as raised:
                call()
            assert raised.value.argument == "policy"
        # Captured: nothing is printed on R's console.
        assert "Error" not in capfd.readouterr().err
    finally:
        _base._REGISTRY.pop("test_python_only")


def test_sampling_policies_reach_r_with_their_dict_parameters(r_session):
    """shares, keep and a nested base record become named R lists policy_from_params reads."""
    from pystratum.policies import Downsample, Targets

    strata = np.repeat(["pos", "neg", "mid"], [6, 60, 14])
    policies = [Targets({"pos": 0.5, "neg": 0.25, "mid": 0.25}, 8),
                Downsample({"neg": 0.1}, Targets("balanced", 6, epoch="smallest")),
                Downsample({"neg": 0.5, "mid": 1}, pystratum.FixedSize(20))]
    for policy in policies:
        r_batches, r_weights = pr.stratified_batches(strata, policy, seed=4, epoch=1, rng="R",
                                                     return_weights=True)
        plan = pystratum.plan_batches(strata, policy, seed=4, epoch=1, rng="R")
        assert len(r_batches) == len(plan)
        for b, batch in enumerate(r_batches):
            np.testing.assert_array_equal(batch, plan[b])
            if plan.weights is None:
                assert r_weights is None
            else:
                np.testing.assert_array_equal(r_weights[b], plan.batch_weights(b))
    # Downsampled rows carry N_s / k_s = 60 / 6 in R too, times Targets' weights over the
    # 26 kept rows (k_s / 26) / (1 / 3): N_s * 3 / 26 in all.
    _, weights = pr.stratified_batches(strata, policies[1], seed=4, rng="R",
                                       return_weights=True)
    np.testing.assert_allclose(sorted(set(np.concatenate(weights).tolist())),
                               [6 * 3 / 26, 14 * 3 / 26, 60 * 3 / 26], rtol=1e-15)


# ---------------------------------------------------------------------------
# The stream default: R's "R" here, the core's "numpy" there.


def test_a_seed_without_rng_warns_that_the_core_default_differs(r_session):
    labels = np.repeat([0, 1], [40, 10])
    with pytest.warns(pr.StreamDefaultWarning) as caught:
        got = pr.stratified_batches(labels, 2, seed=42)
    message = str(caught[0].message)
    assert "rng='R'" in message and "rng='numpy'" in message and "seed=42" in message
    assert caught[0].filename == __file__  # points at the caller's line
    with_r = pystratum.stratified_batches(labels, 2, seed=42, rng="R")
    assert all(np.array_equal(g, e) for g, e in zip(got, with_r)) and len(got) == len(with_r)
    numpy_default = pystratum.stratified_batches(labels, 2, seed=42)
    assert not all(np.array_equal(g, e) for g, e in zip(got, numpy_default))


def test_an_explicit_rng_or_no_seed_does_not_warn(r_session):
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        pr.stratified_batches([0, 1] * 6, 1, seed=42, rng="R")
        pr.stratified_batches([0, 1] * 6, 1)
        pr.stratified_batches([0, 1] * 6, 1, shuffle=False)


def test_return_weights_is_none_without_weights_and_must_be_a_bool(r_session):
    batches, weights = pr.stratified_batches(["a", "b"] * 10, 2, seed=1, rng="R",
                                             return_weights=True)
    assert weights is None and len(batches) == 5
    with pytest.raises(TypeError, match="^return_weights must be True or False") as raised:
        pr.stratified_batches(["a", "b"] * 10, 2, seed=1, return_weights=1)
    assert raised.value.argument == "return_weights"


def test_an_empty_label_in_shares_is_refused_naming_the_policy(r_session):
    from pystratum.policies import Targets

    with pytest.raises(ValueError, match=r"^policy cannot be passed to R: its parameter "
                                         r".shares. names a stratum by the empty label") as raised:
        pr.stratified_batches(["", "a"] * 10, Targets({"": 0.5, "a": 0.5}, 4), seed=1)
    assert raised.value.argument == "policy"
