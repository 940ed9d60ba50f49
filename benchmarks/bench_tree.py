"""Throughput of pystratum.tree.TreeSampler on a 10^6-row table with a 3-level tree.

Run: .venv/bin/python benchmarks/bench_tree.py [--rows 1e6] [--draws 4e6] [--repeats 3]

The tree: root (replacement) -> actives 30% (shuffle) / inactives 70%
(replacement) -> measured 60% / synthetic 40% -> for_each protein (20
proteins, equal weight, leaves in shuffle mode). What is timed, best of
``--repeats``: ``draw(n)`` (int64 arrays, the bulk path), iterating the
sampler (Python ints one by one, what a torch ``Sampler`` does),
``batches(256)`` (lists, what a batch sampler does), and the same iteration
with one auxiliary value per draw (an eighth of the draws). Construction (the only DataFrame work)
is timed once.
"""

from __future__ import annotations

import argparse
import itertools
import platform
import time

import numpy as np
import pandas as pd

from pystratum.tree import TreeSampler

CONFIG = {
    "root": {"mode": "replacement", "children": [
        {"name": "actives", "column": "active", "value": 1, "weight": 0.3, "mode": "shuffle"},
        {"name": "inactives", "column": "active", "value": 0, "weight": 0.7, "children": [
            {"column": "source", "value": "measured", "weight": 0.6,
             "children": [{"for_each": "protein", "mode": "shuffle"}]},
            {"column": "source", "value": "synthetic", "weight": 0.4,
             "children": [{"for_each": "protein", "mode": "shuffle"}]},
        ]},
    ]},
}


def metadata(n_rows: int, seed: int = 0) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    return pd.DataFrame({
        "active": (rng.random(n_rows) < 0.05).astype(np.int64),
        "source": rng.choice(["measured", "synthetic"], n_rows),
        "protein": rng.choice([f"P{i:02d}" for i in range(20)], n_rows),
    })


def best(fn, repeats: int) -> float:
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return min(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=float, default=1e6)
    parser.add_argument("--draws", type=float, default=4e6)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    n_rows, n_draws = int(args.rows), int(args.draws)
    frame = metadata(n_rows)

    start = time.perf_counter()
    sampler = TreeSampler(CONFIG, frame, seed=1)
    build = time.perf_counter() - start
    with_aux = TreeSampler({**CONFIG, "aux": {"angle": {"kind": "uniform", "low": 0,
                                                         "high": 360}}}, frame, seed=1)

    def iterate(s, n=n_draws):
        for _ in itertools.islice(iter(s), n):
            pass

    def batches():
        for _ in itertools.islice(sampler.batches(256), n_draws // 256):
            pass

    print(f"python {platform.python_version()}, numpy {np.__version__}, pandas {pd.__version__},"
          f" {platform.machine()}; {n_rows} rows, {len(sampler.tree.leaves())} leaves, "
          f"{n_draws} draws, best of {args.repeats}\n")
    print(f"construction (config, selection, pruning, weights): {build:.2f} s\n")
    rows = [
        ("draw(n) -> int64 array", best(lambda: sampler.draw(n_draws), args.repeats)),
        ("iterate: Python ints", best(lambda: iterate(sampler), args.repeats)),
        ("batches(256): lists", best(batches, args.repeats)),
    ]
    n_aux = n_draws // 8  # a dict per draw is slow: fewer draws keep the run short
    aux_seconds = best(lambda: iterate(with_aux, n_aux), 1)
    header = f"{'what':<40} {'seconds':>8} {'indices/s':>12}"
    print(header)
    print("-" * len(header))
    for what, seconds in rows:
        print(f"{what:<40} {seconds:>8.3f} {n_draws / seconds:>12,.0f}")
    print(f"{'iterate with 1 aux value: (int, dict)':<40} {aux_seconds:>8.3f} "
          f"{n_aux / aux_seconds:>12,.0f}   ({n_aux} draws)")


if __name__ == "__main__":
    main()
