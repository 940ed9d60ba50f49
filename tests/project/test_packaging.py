"""The package as users get it: a wheel and an sdist, built offline, installed in a fresh venv.

Builds with the project's own setuptools (``--no-isolation``: nothing is
downloaded), then installs the wheel with ``--no-deps --no-index`` into a new
virtual environment whose only other packages come from the project venv
through a ``.pth`` line (numpy, for the import). The installed console script
``pystratum`` and the import must come from that venv, not from the checkout.
"""

from __future__ import annotations

import re
import subprocess
import sys
import tarfile
import venv
import zipfile
from pathlib import Path

import pytest

import pystratum
from tests._env import subprocess_environ

ROOT = Path(__file__).resolve().parents[2]
DIST = "stratabatch"


def _run(args, **kwargs):
    done = subprocess.run(args, capture_output=True, text=True, timeout=300, **kwargs)
    assert done.returncode == 0, f"{args}\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
    return done


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    if not (ROOT / "pyproject.toml").exists():
        pytest.skip("not a source tree (running from an unpacked sdist's tests is fine)")
    out = tmp_path_factory.mktemp("dist")
    # Build from a copy, so the checkout gets no build/ or egg-info litter.
    source = tmp_path_factory.mktemp("src")
    _run(["git", "-C", str(ROOT), "ls-files", "-z"], cwd=ROOT)  # a git checkout
    files = subprocess.run(["git", "-C", str(ROOT), "ls-files", "-z", "--cached", "--others",
                            "--exclude-standard"], capture_output=True, check=True).stdout
    for name in files.decode().split("\0"):
        if name and (ROOT / name).is_file():
            target = source / name
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes((ROOT / name).read_bytes())
    env = subprocess_environ(PYTHONWARNINGS="always")
    done = _run([sys.executable, "-m", "build", "--no-isolation", "--outdir", str(out),
                 str(source)], env=env)
    wheel = next(out.glob(f"{DIST}-*.whl"))
    sdist = next(out.glob(f"{DIST}-*.tar.gz"))
    return {"wheel": wheel, "sdist": sdist, "log": done.stdout + done.stderr}


def test_build_has_no_deprecation_warnings(built):
    assert not re.search(r"deprecat", built["log"], re.IGNORECASE), built["log"][-3000:]


def test_wheel_carries_types_license_and_the_command(built):
    names = zipfile.ZipFile(built["wheel"]).namelist()
    assert "pystratum/py.typed" in names
    assert any(n.endswith("licenses/LICENSE") for n in names)
    entry_points = zipfile.ZipFile(built["wheel"]).read(
        next(n for n in names if n.endswith("entry_points.txt"))).decode()
    assert "pystratum = pystratum.cli:main" in entry_points
    metadata = zipfile.ZipFile(built["wheel"]).read(
        next(n for n in names if n.endswith("METADATA"))).decode()
    assert f"Name: {DIST}" in metadata and f"Version: {pystratum.__version__}" in metadata
    assert "License-Expression: MIT" in metadata and "Project-URL: Issues" in metadata


def test_wheel_installs_and_runs_in_a_fresh_venv(built, tmp_path):
    env_dir = tmp_path / "venv"
    venv.EnvBuilder(with_pip=False).create(env_dir)
    python = env_dir / "bin" / "python"
    # No PYTHONPATH anywhere below: a checkout on it would look "already installed".
    clean = {k: v for k, v in subprocess_environ().items() if k != "PYTHONPATH"}
    _run([sys.executable, "-m", "pip", "--python", str(python), "install", "--no-deps",
          "--no-index", "--quiet", str(built["wheel"])], env=clean, cwd=tmp_path)
    site = Path(_run([str(python), "-c", "import sysconfig; print(sysconfig.get_paths()"
                      "['purelib'])"], env=clean).stdout.strip())
    # numpy from the project venv; appended after the fresh venv's own packages.
    import numpy

    (site / "zz_numpy_from_project.pth").write_text(str(Path(numpy.__file__).parents[1]) + "\n")
    done = _run([str(python), "-c", "import pystratum; print(pystratum.__file__); "
                 "print(pystratum.stratified_batches([0, 1, 0, 1], 1, seed=1)[0].tolist())"],
                cwd=tmp_path, env=clean)
    assert done.stdout.splitlines()[0].startswith(str(site))
    (tmp_path / "d.csv").write_text("label\n" + "a\nb\n" * 10)
    command = env_dir / "bin" / "pystratum"
    done = _run([str(command), "plan", "d.csv", "--stratum", "label", "--min", "2", "--seed",
                 "1"], cwd=tmp_path, env=clean)
    assert done.stdout.splitlines()[0].split() == ["batch", "a", "b", "total"]
    missing = subprocess.run([str(command), "plan", "nope.csv", "--stratum", "label", "--min",
                              "1"], cwd=tmp_path, env=clean, capture_output=True, text=True)
    assert missing.returncode == 2 and "does not exist" in missing.stderr
    assert "Traceback" not in missing.stderr


def test_sdist_tests_run(built, tmp_path):
    with tarfile.open(built["sdist"]) as archive:
        archive.extractall(tmp_path, filter="data")
    unpacked = next(tmp_path.glob(f"{DIST}-*"))
    for needed in ("LICENSE", "README.md", "tests/engine/test_core.py", "tests/vectors/batches.json",
                   "vignettes/quickstart.md", "r/DESCRIPTION"):
        assert (unpacked / needed).exists(), needed
    env = subprocess_environ(PYTHONPATH=str(unpacked), CI="true")
    done = _run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                 "tests/engine/test_core.py", "tests/policies/test_policies.py", "tests/engine/test_vectors_batches.py"],
                cwd=unpacked, env=env)
    assert " passed" in done.stdout and "failed" not in done.stdout
