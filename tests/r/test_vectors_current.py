"""The committed golden vectors are what their R generators write today.

Every file in tests/vectors/*.json is written by a tests/vectors/generate_*.R
script from the installed R package (built from r/ by `bash .ci/dev setup`).
A change of the R code or of a generator that is not followed by a
regeneration leaves vectors that no longer say what R does; both languages'
tests would still read them. Each generator runs here in a scratch copy of
the repository layout and its output is compared, parsed, with the committed
file (the header's R version aside: it names the machine, not the stream).
"""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

from tests._env import subprocess_environ

ROOT = Path(__file__).resolve().parents[2]
VECTORS = ROOT / "tests" / "vectors"
GENERATORS = sorted(VECTORS.glob("generate_*.R"))
# Keys that describe where a file was written, not what it holds.
MACHINE_KEYS = {"r_version"}


def _without_machine_keys(value):
    if isinstance(value, dict):
        return {k: _without_machine_keys(v) for k, v in value.items() if k not in MACHINE_KEYS}
    if isinstance(value, list):
        return [_without_machine_keys(v) for v in value]
    return value


def _first_difference(old, new, where="$"):
    """The path of the first place two parsed JSON values differ (for the message)."""
    if type(old) is not type(new):
        return where
    if isinstance(old, dict):
        for key in sorted(set(old) | set(new)):
            if key not in old or key not in new:
                return f"{where}.{key}"
            found = _first_difference(old[key], new[key], f"{where}.{key}")
            if found:
                return found
        return None
    if isinstance(old, list):
        if len(old) != len(new):
            return f"{where} (length {len(old)} vs {len(new)})"
        for i, (a, b) in enumerate(zip(old, new)):
            found = _first_difference(a, b, f"{where}[{i}]")
            if found:
                return found
        return None
    return None if old == new else where


def test_every_vector_file_has_a_generator():
    written = {path.name for path in VECTORS.glob("*.json")}
    generated = {path.name.removeprefix("generate_").removesuffix(".R") + ".json"
                 for path in GENERATORS}
    assert written == generated


@pytest.mark.parametrize("generator", GENERATORS, ids=[path.stem for path in GENERATORS])
def test_vectors_are_what_the_generator_writes(generator, tmp_path):
    rscript = shutil.which("Rscript")
    if rscript is None:
        pytest.fail("Rscript is not on PATH: install R (bash .ci/dev setup).", pytrace=False)
    scratch = tmp_path / "tests" / "vectors"
    scratch.mkdir(parents=True)
    shutil.copy(generator, scratch / generator.name)
    done = subprocess.run([rscript, str(Path("tests") / "vectors" / generator.name)],
                          cwd=tmp_path, env=subprocess_environ(), capture_output=True,
                          text=True, timeout=600)
    assert done.returncode == 0, done.stdout + done.stderr
    name = generator.name.removeprefix("generate_").removesuffix(".R") + ".json"
    committed = _without_machine_keys(json.loads((VECTORS / name).read_text()))
    written = _without_machine_keys(json.loads((scratch / name).read_text()))
    assert committed == written, (
        f"tests/vectors/{name} is not what {generator.name} writes with the installed R "
        f"package (first difference at {_first_difference(committed, written)}). If r/ "
        f"changed on purpose: reinstall it (bash .ci/dev setup), run `Rscript "
        f"tests/vectors/{generator.name}` from the repository root and commit the file.")
