"""Every policy the README's table lists is importable from the top level."""

from __future__ import annotations

import pystratum
from pystratum import policies


def test_every_policy_is_exported_at_the_top_level():
    for name in ("MinPerStratum", "FixedSize", "Targets", "Downsample"):
        assert name in pystratum.__all__
        assert getattr(pystratum, name) is getattr(policies, name)


def test_top_level_policies_build_a_plan():
    labels = [0] * 30 + [1] * 10
    plan = pystratum.plan_batches(labels, pystratum.Downsample({0: 0.5}, pystratum.Targets(
        "balanced", 4)), seed=1)
    assert plan.weights is not None and len(plan) > 0
