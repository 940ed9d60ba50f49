"""R's torch never shares a process with PyTorch.

Official R torch builds bundle their own libtorch (R torch 0.16.3: libtorch
2.7.1); with PyTorch 2.13 in the same process ``import torch`` then fails
on an undefined libstdc++ symbol. So ``pystratum.r`` and ``pystratum
crosscheck`` run every ``rng="torch"`` call in a fresh Rscript, and asking
whether R torch is installed never loads it.

The proof uses a stand-in: an R package named ``torch`` in a temporary
library whose ``.onLoad`` writes the loading process's id to a marker file
and whose ``torch_randperm`` is a simple deterministic permutation. With it
first on embedded R's ``.libPaths()``: the in-process paths never load it,
and ``rng="torch"`` loads it only in a child process.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import pystratum.r as pr
from _r_helpers import r_function, r_session  # noqa: F401 (fixture)
from tests._env import subprocess_environ

_DESCRIPTION = """Package: torch
Version: 0.0.0.9000
Title: Stand-in for R torch in pystratum's tests
Description: Records which process loads it.
License: MIT
Encoding: UTF-8
"""

_NAMESPACE = """export(torch_randperm, as_array, torch_get_rng_state, torch_set_rng_state,
       local_torch_manual_seed, torch_manual_seed, sampler)
"""

# randperm(n): rotations of n:1 (0-based), one step further per call after a
# seed, so epochs differ and the same seed repeats: enough to see the stream
# being used, with no real libtorch.
_CODE = """
state = new.env()
state$calls = 0
.onLoad = function(libname, pkgname) {
  marker = Sys.getenv("PYSTRATUM_FAKE_TORCH_MARKER")
  if (nzchar(marker)) cat(Sys.getpid(), "\\n", file = marker, append = TRUE)
  # A child that dies while loading torch (as a broken libtorch can).
  if (nzchar(Sys.getenv("PYSTRATUM_FAKE_TORCH_DIE"))) {
    cat("libtorch could not be loaded\\n", file = stderr())
    quit(save = "no", status = 7)
  }
}
torch_manual_seed = function(seed) {
  seeds = Sys.getenv("PYSTRATUM_FAKE_TORCH_SEEDS")
  if (nzchar(seeds)) cat(format(seed, scientific = FALSE), "\n", file = seeds, append = TRUE)
  state$calls = as.numeric(seed) %% 97
  invisible(NULL)
}
local_torch_manual_seed = function(seed, .env = parent.frame()) torch_manual_seed(seed)
torch_get_rng_state = function() state$calls
torch_set_rng_state = function(value) { state$calls = value; invisible(NULL) }
torch_randperm = function(n) {
  state$calls = state$calls + 1
  shift = state$calls %% n
  rev(seq_len(n) - 1L)[(seq_len(n) + shift - 1L) %% n + 1L]
}
as_array = function(x) x
sampler = function(...) stop("the stand-in torch has no sampler")
"""


@pytest.fixture(scope="module")
def fake_torch_library(tmp_path_factory):
    root = tmp_path_factory.mktemp("fake-r-torch")
    source = root / "torch"
    (source / "R").mkdir(parents=True)
    (source / "DESCRIPTION").write_text(_DESCRIPTION)
    (source / "NAMESPACE").write_text(_NAMESPACE)
    (source / "R" / "torch.R").write_text(_CODE)
    library = root / "library"
    library.mkdir()
    r = shutil.which("R")
    if r is None:
        pytest.fail("R is not on PATH: install R (bash .ci/dev setup).", pytrace=False)
    done = subprocess.run([r, "CMD", "INSTALL", "--no-test-load", f"--library={library}",
                           str(source)], capture_output=True, text=True, timeout=300,
                          env=subprocess_environ())
    assert done.returncode == 0, done.stdout + done.stderr
    return library


@pytest.fixture
def fake_torch_first(r_session, fake_torch_library, tmp_path, monkeypatch):
    """The stand-in first on embedded R's library path (and the children's); the marker file."""
    marker = tmp_path / "loaded-by.txt"
    monkeypatch.setenv("PYSTRATUM_FAKE_TORCH_MARKER", str(marker))
    set_env = r_function(r_session,
                         "function(value) Sys.setenv(PYSTRATUM_FAKE_TORCH_MARKER = value)")
    libpaths = r_function(r_session, "function(paths) .libPaths(paths)")
    current = r_function(r_session, "function() .libPaths()")
    with r_session.calling():
        saved = list(current())
        set_env(str(marker))
        libpaths(r_session.ro.StrVector([str(fake_torch_library)] + saved))
    try:
        yield marker
    finally:
        with r_session.calling():
            libpaths(r_session.ro.StrVector(saved))


def _embedded_libraries(r_session):
    current = r_function(r_session, "function() .libPaths()")
    with r_session.calling():
        return list(current())


def _loaded_in_embedded_r(r_session):
    loaded = r_function(r_session, "function() 'torch' %in% loadedNamespaces()")
    with r_session.calling():
        return bool(loaded()[0])


def _loaders(marker: Path):
    return [int(line) for line in marker.read_text().split()] if marker.exists() else []


def test_asking_whether_r_torch_is_installed_does_not_load_it(r_session, fake_torch_first):
    assert pr.r_package_available("torch")
    assert not _loaded_in_embedded_r(r_session)
    assert _loaders(fake_torch_first) == []


def test_rng_torch_runs_r_torch_in_a_child_process(r_session, fake_torch_first):
    strata = np.repeat(["a", "b", "c"], [20, 8, 4])
    epoch_0 = pr.stratified_batches(strata, 2, seed=11, rng="torch", epoch=0)
    again = pr.stratified_batches(strata, 2, seed=11, rng="torch", epoch=0)
    epoch_1 = pr.stratified_batches(strata, 2, seed=11, rng="torch", epoch=1)
    loaders = _loaders(fake_torch_first)
    assert len(loaders) == 3 and os.getpid() not in loaders  # one child per call
    assert not _loaded_in_embedded_r(r_session)
    # The child's batches come back as the in-process ones would: a valid epoch,
    # reproducible for a seed, a new shuffle for the next epoch.
    assert len(epoch_0) == 2
    assert sorted(np.concatenate(epoch_0).tolist()) == list(range(strata.shape[0]))
    assert all(np.array_equal(x, y) for x, y in zip(epoch_0, again))
    assert not all(np.array_equal(x, y) for x, y in zip(epoch_0, epoch_1))
    # Exactly the batches R computes with the same torch in its own process.
    libraries = _embedded_libraries(r_session)
    assert epoch_0_in_plain_r(strata, libraries) == [b.tolist() for b in epoch_0]


def epoch_0_in_plain_r(strata, libraries):
    """``pystratum::stratified_batches(strata, 2, seed = 11, rng = "torch")`` in plain Rscript."""
    code = ("y = strsplit(commandArgs(TRUE)[[1]], ',')[[1]]\n"
            "b = pystratum::stratified_batches(y, 2, seed = 11, rng = 'torch')\n"
            "cat(vapply(b, function(x) paste(x - 1L, collapse = ','), ''), sep = '\\n')\n")
    env = subprocess_environ(R_LIBS=os.pathsep.join(libraries))
    done = subprocess.run([shutil.which("Rscript"), "-e", code, ",".join(strata)],
                          capture_output=True, text=True, timeout=120, env=env)
    assert done.returncode == 0, done.stderr
    return [[int(v) for v in line.split(",")] for line in done.stdout.split()]


def test_rng_torch_without_a_seed_seeds_the_child_at_random(r_session, fake_torch_first,
                                                            tmp_path, monkeypatch):
    # A fresh process starts libtorch's global generator at a fixed default
    # seed: unseeded, every call would serve the same "random" batches.
    seeds = tmp_path / "seeds.txt"
    monkeypatch.setenv("PYSTRATUM_FAKE_TORCH_SEEDS", str(seeds))
    for _ in range(3):
        batches = pr.stratified_batches(np.repeat([0, 1], [30, 6]), 2, rng="torch")
        assert sorted(np.concatenate(batches).tolist()) == list(range(36))
    drawn = seeds.read_text().split()
    assert len(drawn) == 3 and len(set(drawn)) == 3  # one fresh seed per call


def test_a_child_that_dies_is_an_error_with_its_output(r_session, fake_torch_first,
                                                       monkeypatch):
    monkeypatch.setenv("PYSTRATUM_FAKE_TORCH_DIE", "1")
    with pytest.raises(pr.RError, match="exit status 7") as raised:
        pr.stratified_batches([0, 1] * 4, 1, seed=1, rng="torch")
    assert "libtorch could not be loaded" in str(raised.value)
    assert "pystratum_subprocess_error" in raised.value.r_classes
    assert not _loaded_in_embedded_r(r_session)


def test_rng_torch_errors_come_back_from_the_child(r_session, fake_torch_first):
    import pystratum

    with pytest.warns(pystratum.StratumTooSmallWarning):
        pr.stratified_batches([0, 1, 0, 1], 5, seed=1, rng="torch", allow_single_batch=True)
    with pytest.raises(ValueError) as raised:
        pr.stratified_batches([0, 1, 0, 1], 0, seed=1, rng="torch")
    assert raised.value.argument == "min_samples_per_stratum"
    with pytest.raises(ValueError) as raised:
        pr.stratified_batches([0, 1, 0, 1], 1, seed=-1, rng="torch")
    assert raised.value.argument == "seed"
    assert not _loaded_in_embedded_r(r_session)


def test_rng_r_never_loads_r_torch(r_session, fake_torch_first):
    pr.stratified_batches([0, 1] * 5, 1, seed=2, rng="R")
    pr.stratified_batches([0, 1] * 5, 1, rng="torch", shuffle=False)
    assert _loaders(fake_torch_first) == []
    assert not _loaded_in_embedded_r(r_session)


def test_r_torch_sampler_is_refused_in_a_process_holding_pytorch(r_session, fake_torch_first):
    import torch  # noqa: F401  (PyTorch in this process)

    with pytest.raises(RuntimeError, match="PyTorch") as raised:
        pr.batch_sampler_stratified(2, seed=1)
    assert "Rscript" in str(raised.value) or "R session" in str(raised.value)
    assert _loaders(fake_torch_first) == []
    assert not _loaded_in_embedded_r(r_session)


# ---------------------------------------------------------------------------
# The CLI: without R torch, --rng torch is a missing optional package (exit 3).


def test_crosscheck_rng_torch_without_r_torch_exits_3_in_one_line(tmp_path):
    (tmp_path / "train.csv").write_text("label\n" + "\n".join(["0", "1", "0"] * 10) + "\n")
    # R torch is not installed here; so that this holds where it is, R sees
    # only a library holding the pystratum package (a link to the installed
    # one) and its own base library.
    only = tmp_path / "only-pystratum"
    only.mkdir()
    (only / "pystratum").symlink_to(_installed_pystratum())
    env = subprocess_environ(R_LIBS_USER=str(only), R_LIBS_SITE=str(only))
    env.pop("R_LIBS", None)
    done = subprocess.run(
        [sys.executable, "-m", "pystratum", "crosscheck", "train.csv", "--stratum", "label",
         "--min", "2", "--seed", "5", "--rng", "torch"], capture_output=True, text=True,
        env=env, cwd=tmp_path, timeout=300)
    assert done.returncode == 3, done.stdout + done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in done.stderr, done.stderr
    assert "torch" in lines[0] and "install.packages" in lines[0]


def _installed_pystratum() -> str:
    done = subprocess.run([shutil.which("Rscript") or "Rscript", "-e",
                           "cat(find.package('pystratum'))"],
                          capture_output=True, text=True, timeout=60, env=subprocess_environ())
    assert done.returncode == 0 and done.stdout, done.stderr
    return done.stdout.strip()
