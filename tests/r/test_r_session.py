"""pystratum.r._session: starting R, loading the package, install messages."""

from __future__ import annotations

import os
import subprocess
import sys

import numpy as np
import pytest

import pystratum.r as pr
from _r_helpers import describe_in_r, r_function, r_session  # noqa: F401 (fixture)


@pytest.mark.filterwarnings("ignore:The global conversion:DeprecationWarning")
def test_results_ignore_globally_activated_converters(r_session):
    from rpy2.robjects import numpy2ri

    numpy2ri.activate()
    try:
        batches = pr.stratified_batches(np.array([0, 1] * 5), 1, seed=3, rng="R")
    finally:
        numpy2ri.deactivate()
    assert len(batches) == 5 and all(isinstance(b, np.ndarray) for b in batches)



# ---------------------------------------------------------------------------
# Import behaviour and install messages (fresh interpreters).


def _run_python(code):
    env = dict(os.environ)
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          env=env, timeout=120)


def test_importing_pystratum_never_imports_rpy2():
    done = _run_python(
        "import sys, pystratum, pystratum.r\n"
        "assert 'rpy2' not in sys.modules, 'rpy2 imported eagerly'\n"
        "print('ok')"
    )
    assert done.returncode == 0 and "ok" in done.stdout, done.stderr


def test_missing_rpy2_names_the_install_command():
    done = _run_python(
        "import sys; sys.modules['rpy2'] = None\n"
        "import pystratum.r as pr\n"
        "try:\n    pr.stratified_batches([1, 2], 1)\n"
        "except ImportError as error:\n    print(error)\n"
    )
    assert "pip install 'stratabatch[r]'" in done.stdout, done.stdout + done.stderr


def test_r_that_cannot_start_names_the_install_command():
    done = _run_python(
        "import sys; import rpy2; sys.modules['rpy2.rinterface'] = None\n"
        "import pystratum.r as pr\n"
        "try:\n    pr.stratified_batches([1, 2], 1)\n"
        "except RuntimeError as error:\n    print(error)\n"
    )
    assert "apt-get install r-base-core r-base-dev" in done.stdout, done.stdout + done.stderr


def test_missing_r_package_names_the_install_command(r_session, monkeypatch):
    monkeypatch.setattr(r_session, "package_checked", False)
    monkeypatch.setattr(r_session, "has_package", lambda name: False)
    with pytest.raises(RuntimeError, match=r"bash \.ci/dev setup") as raised:
        pr.stratified_batches([1, 2], 1)
    assert ".libPaths()" in str(raised.value)


def test_starting_r_leaves_child_processes_a_working_python():
    # rpy2 prepends R's library folders (/usr/lib/x86_64-linux-gnu among them) to
    # LD_LIBRARY_PATH when it starts R; a Python started afterwards then loaded the
    # system's libpython and failed on `import ssl` (undefined symbol _PyModule_Add).
    script = (
        "import os, subprocess, sys\n"
        "before = os.environ.get('LD_LIBRARY_PATH')\n"
        "import pystratum.r as pr\n"
        "pr.stratified_batches([0, 1] * 4, 1, seed=1, rng='R')\n"
        "assert os.environ.get('LD_LIBRARY_PATH') == before, os.environ.get('LD_LIBRARY_PATH')\n"
        "child = subprocess.run([sys.executable, '-c', 'import ssl'], capture_output=True,\n"
        "                       text=True)\n"
        "assert child.returncode == 0, child.stderr\n"
        "print('ok')\n")
    env = {k: v for k, v in os.environ.items() if k != "LD_LIBRARY_PATH"}
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          env=env, timeout=300)
    assert done.returncode == 0 and done.stdout.strip() == "ok", done.stderr[-2000:]
