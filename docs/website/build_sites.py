"""Build both documentation sites into one folder: ``python docs/website/build_sites.py [OUT]``.

The Python site (mkdocs, Material, mkdocstrings; ``mkdocs.yml``) is built
with ``--strict`` into OUT (default ``site/``), then the R package's pkgdown
site (``r/_pkgdown.yml``) into ``OUT/r/``, where the Python site's "R
package" page points; pkgdown's navbar points back. Nothing is fetched:
the pkgdown log is checked for any attempt to reach the network.
``bash .ci/dev docs`` runs this; ``tests/project/test_sites.py`` too, before
opening the sites in headless Chromium.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
# A pkgdown or downlit step that tried to reach a server (offline it fails,
# online it would make the build depend on the network).
NETWORK = re.compile(r"(?i)resolve host|cannot open url|status was|curl|trying url|https?://\S+: ")


class BuildError(RuntimeError):
    pass


def _run(command, log_name, env=None):
    done = subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True)
    log = done.stdout + done.stderr
    if done.returncode:
        raise BuildError(f"{log_name} failed (exit code {done.returncode}):\n{log[-6000:]}")
    return log


def build_python_site(out: Path, env=None) -> str:
    env = dict(os.environ if env is None else env)
    # Material and a plugin print a banner about MkDocs 2.0 on every build.
    env.update(NO_MKDOCS_2_WARNING="1", DISABLE_MKDOCS_2_WARNING="true",
               PYTHONPATH=str(ROOT) + os.pathsep + env.get("PYTHONPATH", ""))
    return _run([sys.executable, "-m", "mkdocs", "build", "--strict", "--clean",
                 "--config-file", str(ROOT / "mkdocs.yml"), "--site-dir", str(out)],
                "mkdocs build --strict", env)


def build_r_site(out: Path, env=None) -> str:
    with tempfile.TemporaryDirectory(prefix="pkgdown-") as work:
        target = Path(work) / "r"
        log = _run(["Rscript", str(ROOT / "docs" / "website" / "pkgdown_build.R"),
                    str(ROOT / "r"), str(target)], "pkgdown::build_site", env)
        tried = [line for line in log.splitlines() if NETWORK.search(line)]
        if tried:
            raise BuildError("the pkgdown build tried to reach the network:\n" + "\n".join(tried))
        # The Python site's placeholder page r/index.html gives way to pkgdown's site.
        shutil.rmtree(out / "r", ignore_errors=True)
        shutil.copytree(target, out / "r")
    return log


def build(out: Path, env=None) -> dict:
    """Build both sites into ``out`` (``env``: the subprocesses' environment); return the seconds each took."""
    out = Path(out).resolve()
    times = {}
    start = time.perf_counter()
    build_python_site(out, env)
    times["python"] = time.perf_counter() - start
    start = time.perf_counter()
    build_r_site(out, env)
    times["r"] = time.perf_counter() - start
    return times


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    out = Path(argv[0]) if argv else ROOT / "site"
    try:
        times = build(out)
    except BuildError as error:
        print(error, file=sys.stderr)
        return 1
    print(f"Python site (mkdocs --strict): {times['python']:.1f} s; R site (pkgdown): "
          f"{times['r']:.1f} s; open {out / 'index.html'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
