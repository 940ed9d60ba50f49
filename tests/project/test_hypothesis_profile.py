"""The README's test command gives the same verdict for a user as for CI.

tests/conftest.py loads one derandomised hypothesis profile whether or not
the CI variable is set; ``HYPOTHESIS_PROFILE=explore`` is the separate, long,
random search. These tests run pytest in subprocesses with each environment
and compare the settings the tests actually ran with.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from hypothesis import settings

from tests._env import subprocess_environ

ROOT = Path(__file__).resolve().parents[2]
MARK = "PYSTRATUM-PROFILE"


def test_report_loaded_profile():
    """Prints the loaded profile (read by the subprocess runs below) and checks it."""
    current = settings.default
    print(f"{MARK} derandomize={current.derandomize} max_examples={current.max_examples}")
    expected = os.environ.get("HYPOTHESIS_PROFILE") or "ci"
    assert current.derandomize is (expected == "ci")


def _profile_seen(**changes):
    env = subprocess_environ()
    for key in ("CI", "HYPOTHESIS_PROFILE"):
        env.pop(key, None)
    env.update(changes)
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-s", "-p", "no:cacheprovider",
         f"{Path(__file__).relative_to(ROOT)}::test_report_loaded_profile"],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    lines = [line for line in done.stdout.splitlines() if line.startswith(MARK)]
    assert len(lines) == 1, done.stdout
    return lines[0]


def test_user_and_ci_run_the_same_derandomised_profile():
    user = _profile_seen()
    ci = _profile_seen(CI="true")
    assert user == ci
    assert "derandomize=True" in user


def test_explore_profile_is_random_and_longer():
    explore = _profile_seen(HYPOTHESIS_PROFILE="explore")
    assert "derandomize=False" in explore
    assert "max_examples=1000" in explore
