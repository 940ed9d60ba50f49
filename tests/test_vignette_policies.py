"""The sampling-policies vignette runs: its Python blocks, in order, in one namespace."""

import pathlib
import re

VIGNETTE = pathlib.Path(__file__).resolve().parent.parent / "vignettes" / "policies.md"


def test_policies_vignette_runs_and_its_checks_hold():
    blocks = re.findall(r"```python\n(.*?)```", VIGNETTE.read_text(), flags=re.S)
    assert len(blocks) >= 5
    namespace = {}
    for block in blocks:
        exec(compile(block, str(VIGNETTE), "exec"), namespace)  # noqa: S102 - our own docs
