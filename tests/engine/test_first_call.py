"""A fresh process loads only what its call needs: the first call costs what the second does.

Checked by what a fresh process has imported (no timed assertions): numba's
start-up is paid only by work of ``pystratum.kernels.LOAD_ROWS`` rows or more,
and the command line on a small CSV loads neither numba, pandas nor torch.
"""

from __future__ import annotations

import subprocess
import sys

import numpy as np

from _env import subprocess_environ
from pystratum import kernels as kernel_gate


def modules_after(code: str) -> set:
    """The heavy modules a fresh Python has imported after running ``code``."""
    probe = code + "\nimport sys\nprint('loaded:' + ','.join(m for m in ('numba', 'pandas', " \
                   "'torch', 'matplotlib') if m in sys.modules))"
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True,
                          check=True, env=subprocess_environ(PYSTRATUM_NUMBA="1"))
    last = done.stdout.strip().splitlines()[-1]
    assert last.startswith("loaded:"), done.stdout
    return set(filter(None, last[len("loaded:"):].split(",")))


def test_a_plan_of_two_million_rows_does_not_load_numba():
    assert kernel_gate.LOAD_ROWS > 2 * 10**6
    loaded = modules_after(
        "import numpy as np, pystratum\n"
        "labels = np.random.default_rng(0).integers(0, 50, 2 * 10**6)\n"
        "pystratum.plan_batches(labels, 1, seed=1)\n")
    assert loaded == set()


def test_a_plan_past_load_rows_loads_the_kernels_and_both_paths_agree():
    rows = kernel_gate.LOAD_ROWS
    code = ("import numpy as np, pystratum\n"
            f"labels = np.random.default_rng(0).integers(0, 50, {rows})\n"
            "plan = pystratum.plan_batches(labels, 1, seed=1)\n"
            "print(int(plan.order[:1000].sum()), int(plan.order[-1000:].sum()))\n")
    assert modules_after(code) == {"numba"}
    labels = np.random.default_rng(0).integers(0, 50, rows)
    plan = __import__("pystratum").plan_batches(labels, 1, seed=1)
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          check=True, env=subprocess_environ(PYSTRATUM_NUMBA="0"))
    assert done.stdout.split() == [str(int(plan.order[:1000].sum())),
                                   str(int(plan.order[-1000:].sum()))]


def test_once_loaded_the_kernels_serve_from_min_rows(monkeypatch):
    import pystratum.kernels._assemble as kernels  # numba is loaded in this process

    monkeypatch.delitem(kernel_gate._LOADED, "assemble", raising=False)
    assert kernel_gate.compiled_for("assemble", kernel_gate.MIN_ROWS) is kernels
    assert kernel_gate.compiled_for("assemble", kernel_gate.MIN_ROWS - 1) is None


def test_the_command_on_a_small_csv_loads_no_heavy_module(tmp_path):
    path = tmp_path / "d.csv"
    path.write_text("label,x\n" + "".join(f"{'ab'[i % 2]},{i}\n" for i in range(100)))
    loaded = modules_after(
        "import contextlib, io\nfrom pystratum.cli import main\n"
        "with contextlib.redirect_stdout(io.StringIO()):\n"
        f"    main(['plan', {str(path)!r}, '--stratum', 'label', '--min', '1', '--seed', '1'])\n")
    assert loaded == set()
