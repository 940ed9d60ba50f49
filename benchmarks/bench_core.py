"""Core speed: stratified_batches(rng="numpy") against a bare numpy permutation.

Run:  .venv/bin/python benchmarks/bench_core.py [N] [rng]   (rng: numpy, the default, or R)

Prints best-of-k wall and CPU times measured in this one run and their
ratio to ``numpy.random.default_rng().permutation(N)`` (target: within 1.5x),
plus peak extra memory (tracemalloc sees numpy's allocations, the result
included) in units of 8N bytes (target: at most 2). Machines here are
shared and noisy: compare ratios, not seconds; the CPU-time ratio is the
steadier one under load.
"""

import sys
import time
import tracemalloc

import numpy as np

import pystratum

REPEATS = 5


def best_time(function):
    """(best wall seconds, best CPU seconds) over REPEATS runs."""
    wall = cpu = float("inf")
    for _ in range(REPEATS):
        start, start_cpu = time.perf_counter(), time.process_time()
        function()
        wall = min(wall, time.perf_counter() - start)
        cpu = min(cpu, time.process_time() - start_cpu)
    return wall, cpu


def peak_memory(function):
    tracemalloc.start()
    function()
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    return peak


def main(n, rng_name="numpy"):
    rng = np.random.default_rng(0)
    cases = {
        "2 strata (3% positives), m=1": ((rng.random(n) < 0.03).astype(np.int64), 1),
        "2 strata (3% positives), m=10": ((rng.random(n) < 0.03).astype(np.int64), 10),
        "1000 strata, m=1": (rng.integers(0, 1000, n), 1),
        "1000 strata, m=5": (rng.integers(0, 1000, n), 5),
    }
    baseline, baseline_cpu = best_time(lambda: np.random.default_rng().permutation(n))
    print(f"N = {n:,}; rng={rng_name!r}; best of {REPEATS}")
    print(f"{'case':34s}{'wall s':>8s}{'ratio':>7s}{'CPU s':>8s}{'ratio':>7s}"
          f"{'peak mem / 8N':>15s}")
    print(f"{'numpy permutation (baseline)':34s}{baseline:8.3f}{1.0:7.2f}{baseline_cpu:8.3f}"
          f"{1.0:7.2f}"
          f"{peak_memory(lambda: np.random.default_rng().permutation(n)) / (8 * n):15.2f}")
    for label, (strata, m) in cases.items():
        seconds, cpu = best_time(lambda: pystratum.stratified_batches(strata, m, seed=1,
                                                                          rng=rng_name))
        memory = peak_memory(lambda: pystratum.stratified_batches(strata, m, seed=1,
                                                                  rng=rng_name))
        print(f"{label:34s}{seconds:8.3f}{seconds / baseline:7.2f}{cpu:8.3f}"
              f"{cpu / baseline_cpu:7.2f}{memory / (8 * n):15.2f}")


if __name__ == "__main__":
    main(int(float(sys.argv[1])) if len(sys.argv) > 1 else 10**7,
         sys.argv[2] if len(sys.argv) > 2 else "numpy")
