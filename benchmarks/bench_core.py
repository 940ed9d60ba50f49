"""Core speed: stratified_batches(rng="numpy") against a bare numpy permutation.

Run:  .venv/bin/python benchmarks/bench_core.py [N]

Prints best-of-k wall times measured in this one run and their ratio to
``numpy.random.default_rng().permutation(N)`` (targets: <= 2.0x, never above
3.0x), plus peak extra memory (tracemalloc sees numpy's allocations) in units
of 8N bytes (target <= 4). Machines here are noisy: compare ratios, not seconds.
"""

import sys
import time
import tracemalloc

import numpy as np

import pystratum

REPEATS = 5


def best_time(function):
    best = float("inf")
    for _ in range(REPEATS):
        start = time.perf_counter()
        function()
        best = min(best, time.perf_counter() - start)
    return best


def peak_memory(function):
    tracemalloc.start()
    function()
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    return peak


def main(n):
    rng = np.random.default_rng(0)
    cases = {
        "2 strata (3% positives), m=1": ((rng.random(n) < 0.03).astype(np.int64), 1),
        "2 strata (3% positives), m=10": ((rng.random(n) < 0.03).astype(np.int64), 10),
        "1000 strata, m=1": (rng.integers(0, 1000, n), 1),
        "1000 strata, m=5": (rng.integers(0, 1000, n), 5),
    }
    baseline = best_time(lambda: np.random.default_rng().permutation(n))
    print(f"N = {n:,}; best of {REPEATS}")
    print(f"{'case':34s}{'seconds':>9s}{'ratio':>8s}{'peak mem / 8N':>15s}")
    print(f"{'numpy permutation (baseline)':34s}{baseline:9.3f}{1.0:8.2f}"
          f"{peak_memory(lambda: np.random.default_rng().permutation(n)) / (8 * n):15.2f}")
    for label, (strata, m) in cases.items():
        seconds = best_time(lambda: pystratum.stratified_batches(strata, m, seed=1))
        memory = peak_memory(lambda: pystratum.stratified_batches(strata, m, seed=1))
        print(f"{label:34s}{seconds:9.3f}{seconds / baseline:8.2f}{memory / (8 * n):15.2f}")


if __name__ == "__main__":
    main(int(float(sys.argv[1])) if len(sys.argv) > 1 else 10**7)
