"""Shared test configuration: one hypothesis profile for everyone.

The suite's verdict must not depend on who runs it: a user running the
README's test command and CI load the same derandomised profile ("ci"), with
or without the CI variable set, so a red build is red everywhere and
reproducible. Searching for new cases is a separate, deliberate run:
``HYPOTHESIS_PROFILE=explore`` (random examples, ten times as many); a
failure it finds is pinned with ``@example`` before it is fixed.
"""

import os

from hypothesis import HealthCheck, settings

DEFAULT_PROFILE = "ci"
_COMMON = dict(deadline=None, print_blob=True, suppress_health_check=[HealthCheck.too_slow])

settings.register_profile("ci", derandomize=True, **_COMMON)
settings.register_profile("explore", derandomize=False, max_examples=1000, **_COMMON)
# The former name of a random run with the default example counts.
settings.register_profile("dev", derandomize=False, **_COMMON)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE") or DEFAULT_PROFILE)
