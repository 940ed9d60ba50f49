"""vignettes/tree.md runs: its python blocks are executed in order, in one namespace."""

import contextlib
import io
import re
from pathlib import Path

import pytest

VIGNETTE = Path(__file__).resolve().parent.parent / "vignettes" / "tree.md"


def python_blocks(text: str) -> list:
    return re.findall(r"^```python\n(.*?)^```", text, flags=re.S | re.M)


@pytest.mark.filterwarnings("ignore:'set_vital' is deprecated:UserWarning")
def test_the_vignette_runs_and_says_what_it_claims():
    blocks = python_blocks(VIGNETTE.read_text())
    assert len(blocks) >= 9
    namespace = {}
    out = io.StringIO()
    for number, block in enumerate(blocks):
        with contextlib.redirect_stdout(out):
            exec(compile(block, f"{VIGNETTE.name} block {number}", "exec"), namespace)
    text = out.getvalue()
    # Claims the prose makes about the printed output.
    assert "effective" in text and "0.4200" in text and "0.2800" in text
    assert "True\n" in text  # each active once per epoch; resume equals the run
    assert "root.children[0][protein='P10']" in text
    assert "root.children[1].weight is used only under a parent with mode 'replacement'" in text
    assert "16 [64, 40]" in text
