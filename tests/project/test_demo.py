"""The demo, run as a user runs it: a subprocess of ``python -m pystratum.demo``."""

import subprocess
import sys
from pathlib import Path

import matplotlib  # noqa: F401  (the 'plot' extra: the figure is part of what is tested)
import torch  # noqa: F401  (the 'torch' extra: the training part is part of what is tested)

import pystratum.r as pr
from tests._env import subprocess_environ

ROOT = Path(__file__).resolve().parents[2]


def test_demo_runs_and_reports_the_measured_comparison(tmp_path):
    figure = tmp_path / "demo.png"
    env = subprocess_environ(PYTHONPATH=str(ROOT))
    done = subprocess.run([sys.executable, "-m", "pystratum.demo", "--seeds", "2",
                           "--output", str(figure)], capture_output=True, text=True,
                          env=env, cwd=tmp_path, timeout=240)
    assert done.returncode == 0, done.stderr
    out = done.stdout
    assert "Traceback" not in done.stderr
    assert "without a positive" in out
    assert "held-out AUC" in out and "wasted" in out
    assert "equal numbers of useful gradient steps" in out
    assert f"figure written to {figure}" in out
    assert figure.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    # R, rpy2 and the R package are part of the test set-up: the verdict must be there.
    assert pr.r_package_available(), "the R package is not installed: R CMD INSTALL r"
    assert "verdict: all 396 batches identical" in out
