"""The package as users get it: a wheel and an sdist, built offline, checked by twine,
installed in a fresh venv.

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
import tomllib
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


def _tracked_files():
    listed = subprocess.run(["git", "-C", str(ROOT), "ls-files", "-z"], capture_output=True,
                            check=True).stdout.decode().split("\0")
    return {name for name in listed if name and (ROOT / name).is_file()}


def test_no_tracked_file_is_a_symbolic_link():
    # A link records a path of the machine it was made on (a worktree's .venv linked to
    # another checkout's was once committed); the sdist and other machines cannot follow it.
    listed = subprocess.run(["git", "-C", str(ROOT), "ls-files", "-s", "-z"],
                            capture_output=True, check=True).stdout.decode().split("\0")
    links = [entry.split("\t", 1)[1] for entry in listed if entry.startswith("120000 ")]
    assert links == [], f"tracked symbolic links: {links}; git rm --cached them"


def test_twine_check_passes_on_wheel_and_sdist(built):
    # --strict: warnings (e.g. a README PyPI cannot render) fail too.
    done = _run([sys.executable, "-m", "twine", "check", "--strict", str(built["wheel"]),
                 str(built["sdist"])], env=subprocess_environ())
    assert done.stdout.count("PASSED") == 2, done.stdout


def test_sdist_holds_every_tracked_file_but_git_metadata(built):
    """The tests, their golden vectors, the documents they run and the R package ride along."""
    with tarfile.open(built["sdist"]) as archive:
        names = {name.split("/", 1)[1] for name in archive.getnames() if "/" in name}
    tracked = _tracked_files() - {".gitignore"}
    assert not tracked - names, sorted(tracked - names)[:20]
    vectors = {n for n in tracked if n.startswith("tests/vectors/")}
    assert any(n.endswith(".json") for n in vectors) and vectors <= names
    assert {n for n in tracked if n.startswith("tests/") and n.endswith(".py")} <= names
    assert "pyproject.toml" in names and "r/DESCRIPTION" in names and ".ci/dev" in names


def test_wheel_is_pure_with_every_subpackage_and_no_tests(built):
    assert built["wheel"].name.endswith("-py3-none-any.whl")  # numba kernels are jit, not built
    names = zipfile.ZipFile(built["wheel"]).namelist()
    packages = {str(init.parent.relative_to(ROOT)) for init in
                (ROOT / "pystratum").rglob("__init__.py") if "__pycache__" not in init.parts}
    # The layers docs/ARCHITECTURE.md names, so a lost __init__.py cannot hide a layer.
    layers = {"kernels", "base", "streams", "strata", "policies", "plot", "engine", "serving",
              "torch", "tree", "negatives", "r", "integrations", "cli"}
    assert {f"pystratum/{layer}" for layer in layers} <= packages
    for package in sorted(packages):
        modules = {p.relative_to(ROOT).as_posix() for p in (ROOT / package).glob("*.py")}
        assert modules <= set(names), (package, sorted(modules - set(names)))
    assert not [n for n in names if n.startswith(("tests/", "test/")) or "/tests/" in n]
    assert all(n.startswith(("pystratum/", "stratabatch-")) for n in names), names


def test_metadata_has_urls_classifiers_and_the_packaging_tools_in_dev():
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    assert {"Homepage", "Documentation", "Repository", "Issues"} <= set(project["urls"])
    classifiers = project["classifiers"]
    assert "Programming Language :: Python :: 3 :: Only" in classifiers
    assert any(c.startswith("Development Status ::") for c in classifiers)
    dev = {re.split(r"[<>=\[ ]", requirement)[0] for requirement in
           project["optional-dependencies"]["dev"]}
    assert {"build", "twine"} <= dev


def test_build_has_no_deprecation_warnings(built):
    assert not re.search(r"deprecat", built["log"], re.IGNORECASE), built["log"][-3000:]


def test_wheel_carries_types_license_and_the_command(built):
    names = zipfile.ZipFile(built["wheel"]).namelist()
    assert "pystratum/py.typed" in names
    assert any(n.endswith("licenses/LICENSE") for n in names)
    entry_points = zipfile.ZipFile(built["wheel"]).read(
        next(n for n in names if n.endswith("entry_points.txt"))).decode()
    assert "pystratum = pystratum.cli:run" in entry_points
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
