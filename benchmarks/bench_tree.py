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

Memory case (``--groups G``, e.g. ``--groups 1e6``): ``for_each`` over a
column with G values of 2 rows each (``for_each: user_id``), one leaf per
value. Reported: construction time and peak memory (the process's peak
resident size, so run it alone), the engine's bytes per node (its
per-node arrays and generator states after ``--draws`` draws, traced by
tracemalloc; the leaves' row arrays belong to the tree and are not
counted) and the whole sampler's traced bytes per node, and the draw rate.
"""

from __future__ import annotations

import argparse
import itertools
import platform
import time

import numpy as np
import pandas as pd

from pystratum.tree import TreeSampler
from _timing import best as best_of

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


def best(function, repeats: int) -> float:
    return best_of(function, repeats, clock=time.perf_counter)


def groups_case(groups: int, n_draws: int) -> None:
    """for_each over ``groups`` values of 2 rows: memory per node and peak memory."""
    import resource
    import tracemalloc

    from pystratum.tree._engine import Engine

    frame = pd.DataFrame({"user_id": np.repeat(np.arange(groups, dtype=np.int64), 2)})
    config = {"root": {"children": [{"for_each": "user_id"}]}}
    start = time.perf_counter()
    sampler = TreeSampler(config, frame, seed=1)
    build = time.perf_counter() - start
    nodes = sum(1 for _ in sampler.tree.walk())
    rss_build = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # KiB -> MiB
    start = time.perf_counter()
    sampler.draw(n_draws)
    draw_seconds = time.perf_counter() - start
    rss_draw = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    tracemalloc.start()
    engine = Engine(sampler.tree, sampler._seed_sequence)
    engine.take(n_draws)
    engine_bytes, engine_peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    del engine
    small = max(1, min(groups, 100_000))  # the whole build traced on at most 10^5 groups
    small_frame = frame.iloc[:2 * small]
    tracemalloc.start()
    traced = TreeSampler(config, small_frame, seed=1)
    sampler_bytes, sampler_peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    small_nodes = sum(1 for _ in traced.tree.walk())
    print(f"python {platform.python_version()}, numpy {np.__version__}, pandas {pd.__version__},"
          f" {platform.machine()}")
    print(f"for_each over {groups:,} groups of 2 rows: {nodes:,} nodes, {2 * groups:,} rows")
    print(f"construction: {build:.1f} s; peak resident memory {rss_build:,.0f} MiB after "
          f"construction, {rss_draw:,.0f} MiB after {n_draws:,} draws "
          f"({n_draws / draw_seconds:,.0f} draws/s; a leaf's first draw seeds its stream)")
    print(f"engine: {engine_bytes / nodes:,.0f} bytes per node held after the draws "
          f"(peak {engine_peak / nodes:,.0f}), row arrays not counted")
    print(f"whole sampler (traced, {small:,} groups): {sampler_bytes / small_nodes:,.0f} bytes "
          f"per node held, peak {sampler_peak / small_nodes:,.0f} during construction "
          f"(tree nodes, paths, labels, row arrays and the engine)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=float, default=1e6)
    parser.add_argument("--draws", type=float, default=4e6)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--groups", type=float, default=0,
                        help="run the memory case: for_each over this many 2-row groups")
    args = parser.parse_args()
    if args.groups:
        groups_case(int(args.groups), int(args.draws))
        return
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
