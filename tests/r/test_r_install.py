"""After the README's set-up, a new shell finds the R package: R, rpy2 and the CLI.

Each test starts a fresh process with R_LIBS unset, as a user's new shell
has it, so only the libraries R searches by itself are used. A truly
missing package (a fresh process told to search an empty user library and
nothing else) gives an error that lists where R looked and says how to
install.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests._env import subprocess_environ

ROOT = Path(__file__).resolve().parents[2]


def _new_shell_env(**changes):
    env = subprocess_environ()
    for key in ("R_LIBS", "R_LIBS_SITE", "R_LIBS_USER"):
        env.pop(key, None)
    env.update(changes)
    return env


def _rscript():
    rscript = shutil.which("Rscript")
    if rscript is None:
        pytest.fail("Rscript is not on PATH: install R (bash .ci/dev setup).", pytrace=False)
    return rscript


def test_new_shell_rscript_finds_the_package_and_its_vignette(tmp_path):
    code = (
        "options(warn = 2)\n"  # vignette()'s "not found" is a warning: make it fail
        "library(pystratum)\n"
        "v = vignette('pystratum', package = 'pystratum')\n"
        "stopifnot(inherits(v, 'vignette'))\n"
        "stopifnot(nzchar(v$PDF), file.exists(file.path(v$Dir, 'doc', v$PDF)))\n"
        "cat('found', v$PDF, '\\n')\n"
    )
    done = subprocess.run([_rscript(), "-e", code], capture_output=True, text=True,
                          env=_new_shell_env(), cwd=tmp_path, timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "found pystratum.html" in done.stdout


def test_new_shell_python_finds_the_package_through_rpy2(tmp_path):
    code = (
        "import pystratum.r as pr\n"
        "assert pr.r_package_available()\n"
        "batches = pr.stratified_batches([0, 1] * 6, 1, seed=3, rng='R')\n"
        "print('batches', len(batches))\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          env=_new_shell_env(), cwd=tmp_path, timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "batches 6" in done.stdout


def test_new_shell_cli_crosscheck_finds_the_package(tmp_path):
    (tmp_path / "train.csv").write_text("label\n" + "\n".join(["0", "1", "0"] * 10) + "\n")
    done = subprocess.run(
        [sys.executable, "-m", "pystratum", "crosscheck", "train.csv", "--stratum", "label",
         "--min", "2", "--seed", "5"], capture_output=True, text=True,
        env=_new_shell_env(), cwd=tmp_path, timeout=180)
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout.startswith("IDENTICAL")


def test_missing_package_error_says_where_r_looked(tmp_path):
    empty = tmp_path / "empty-library"
    empty.mkdir()
    code = (
        "import pystratum.r as pr\n"
        "try:\n"
        "    pr.stratified_batches([0, 1], 1, seed=1, rng='R')\n"
        "except RuntimeError as error:\n"
        "    print(error)\n"
    )
    # An empty user and site library: R then searches only its own base library.
    env = _new_shell_env(R_LIBS_USER=str(empty), R_LIBS_SITE=str(empty))
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          env=env, cwd=tmp_path, timeout=120)
    message = done.stdout
    assert "The R package 'pystratum' is not installed" in message, done.stdout + done.stderr
    assert str(empty) in message  # where it looked
    assert "bash .ci/dev setup" in message  # how to install it where R finds it


def test_missing_package_crosscheck_exits_3_saying_where_r_looked(tmp_path):
    empty = tmp_path / "empty-library"
    empty.mkdir()
    (tmp_path / "train.csv").write_text("label\n0\n1\n0\n1\n")
    env = _new_shell_env(R_LIBS_USER=str(empty), R_LIBS_SITE=str(empty))
    done = subprocess.run(
        [sys.executable, "-m", "pystratum", "crosscheck", "train.csv", "--stratum", "label",
         "--min", "1", "--seed", "5"], capture_output=True, text=True, env=env, cwd=tmp_path,
        timeout=180)
    assert done.returncode == 3, done.stdout + done.stderr
    assert str(empty) in done.stderr and "bash .ci/dev setup" in done.stderr
    assert "Traceback" not in done.stderr
