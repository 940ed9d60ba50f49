"""RStream(seed).permutation(N) against R's own sample(N).

Run: .venv/bin/python benchmarks/bench_rstream.py [--sizes 1e6 1e7] [--repeats 3]

R is timed inside one Rscript run with ``system.time(sample(N))`` (start-up
excluded), Python with ``time.perf_counter`` around
``RStream(seed).permutation(N)``; each figure is the best of ``--repeats``
(least disturbed by other load). ratio = Python / R: the target is <= 1.0
for N = 1e7, never above 1.5. Both sides use the same seed, and the md5 of
the values is compared, so the table also says the results are identical.
Peak memory is tracemalloc's peak during one call (numpy reports its
buffers to it), in units of 8N bytes: the int64 result itself is 1.
"""

from __future__ import annotations

import argparse
import hashlib
import platform
import shutil
import subprocess
import sys
import tempfile
import time
import tracemalloc
from pathlib import Path

import numpy as np

from pystratum import RStream

SEED = 20050

R_CODE = r"""
args = commandArgs(trailingOnly = TRUE)
seed = as.integer(args[[1L]]); repeats = as.integer(args[[2L]])
RNGkind("Mersenne-Twister", "Inversion", "Rejection")
for (n in as.numeric(args[-(1:2)])) {
  best = Inf
  for (k in seq_len(repeats)) {
    set.seed(seed)
    gc()
    elapsed = system.time(x <- sample(n))[["elapsed"]]
    best = min(best, elapsed)
  }
  path = tempfile()
  con = file(path, "wb"); writeBin(as.double(x), con, size = 8L, endian = "little"); close(con)
  cat(sprintf("%.0f %.6f %s\n", n, best, unname(tools::md5sum(path))))
  unlink(path)
}
"""


def r_timings(sizes, repeats):
    rscript = shutil.which("Rscript")
    if rscript is None:
        sys.exit("Rscript is not on PATH: apt-get install r-base-core (the benchmark compares with R).")
    with tempfile.TemporaryDirectory() as folder:
        script = Path(folder) / "bench_sample.R"
        script.write_text(R_CODE)
        done = subprocess.run(
            [rscript, "--vanilla", str(script), str(SEED), str(repeats), *map(str, sizes)],
            capture_output=True, text=True,
        )
    if done.returncode != 0:
        sys.exit(f"Rscript failed:\n{done.stderr}")
    out = {}
    for line in done.stdout.split("\n"):
        if line.strip():
            n, seconds, md5 = line.split()
            out[int(float(n))] = (float(seconds), md5)
    version = subprocess.run([rscript, "--version"], capture_output=True, text=True).stdout
    return out, (version.splitlines() or ["R"])[0]


def python_timing(n, repeats):
    best = float("inf")
    for _ in range(repeats):
        start = time.perf_counter()
        values = RStream(SEED).permutation(n)
        best = min(best, time.perf_counter() - start)
    md5 = hashlib.md5((values + 1).astype("<f8").tobytes()).hexdigest()
    return best, md5


def peak_memory(n):
    tracemalloc.start()
    RStream(SEED).permutation(n)
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    return peak


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=float, nargs="+", default=[1e6, 1e7])
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    sizes = [int(size) for size in args.sizes]

    r_results, r_version = r_timings(sizes, args.repeats)
    print(f"python {platform.python_version()}, numpy {np.__version__}, {r_version}, "
          f"{platform.machine()}; best of {args.repeats}, seed {SEED}\n")
    header = (f"{'N':>10} {'R sample(N) s':>14} {'RStream s':>10} {'ratio':>6} "
              f"{'peak mem / 8N':>14} {'same as R':>10}")
    print(header)
    print("-" * len(header))
    for n in sizes:
        r_seconds, r_md5 = r_results[n]
        py_seconds, py_md5 = python_timing(n, args.repeats)
        peak = peak_memory(n) / (8 * n)
        same = "yes" if py_md5 == r_md5 else "NO"
        print(f"{n:>10,} {r_seconds:>14.3f} {py_seconds:>10.3f} {py_seconds / r_seconds:>6.2f} "
              f"{peak:>14.2f} {same:>10}")


if __name__ == "__main__":
    main()
