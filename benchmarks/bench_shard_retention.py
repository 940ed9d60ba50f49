"""Plan-aware retention: shard loads per epoch and the rows held aside, for every policy.

Run from the repository root (PYTHONPATH at the root):

    python benchmarks/bench_shard_retention.py [--rows 1e7] [--out FILE] [--no-random]

The data are those of ``benchmarks/bench_shards_parquet.py`` (its functions,
imported: ``spread``, ``own`` and ``tail`` labels, 1,000 shards of ``rows /
1000`` rows, the same policies and seed); nothing is read or written but the
results: every figure is a replay of one epoch's batches through the reader's
own rules (``pystratum.shards.shard_retention_profile``, which the tests hold
equal to a real ``BatchServer``). For each policy and layout, with
``shards=`` at W = 1, 4, 16 and an LRU cache of 2W + 2 shards:

* loads per epoch (multiples of the shard count) with the cache alone (rows
  a policy recycles kept, as the reader always does; no plan-aware retention,
  ``retain_rows=0``);
* with plan-aware retention within the default budget (as many rows as the
  cache holds, 2W + 2 shards' rows): loads and the peak of rows held aside;
* with an unbounded budget: loads (at most 1x, by the theorem in
  docs/SHARDS.md) and the peak of rows held aside, also as a share of N.

The row-random plan (no ``shards=``) is added with a cache of 64 shards
(``--no-random`` leaves it out): it shows how large the peak gets when the
order has no locality. The section is printed and written into ``--out``
(default benchmarks/results_focused.md; with the default, also into the
focused part of benchmarks/results.md) between ``<!-- bench_shard_retention -->``
and ``<!-- /bench_shard_retention -->`` (replaced, or appended when absent).
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from bench_shards_parquet import (RANDOM_CACHE, SEED, load_average, log,  # noqa: E402
                                  make_labels, policies_for, shard_layout,
                                  window_orders, write_section)

import pystratum  # noqa: E402
from pystratum.shards import shard_retention_profile  # noqa: E402

FOCUSED = HERE / "results_focused.md"
REPORT = HERE / "results.md"
START, END = "<!-- bench_shard_retention -->", "<!-- /bench_shard_retention -->"
LAYOUTS = ("spread", "own", "tail")


def plan_rows(layout: str, labels: np.ndarray, shard_rows: int, with_random: bool) -> list:
    """One row per (policy, order): the three replays of one epoch (epoch 0, seed SEED)."""
    n = labels.shape[0]
    shard_of_row, sizes = shard_layout(n, shard_rows)
    n_shards = sizes.shape[0]
    rows = []
    for policy_name, policy in policies_for(layout, n):
        orders = window_orders(sizes)
        if with_random:
            orders.append(("row-random", {}, RANDOM_CACHE))
        for order, extra, cache in orders:
            plan = pystratum.plan_batches(labels, policy, seed=SEED, **extra)
            start = time.perf_counter()
            alone = shard_retention_profile(plan, shard_of_row, cache_shards=cache,
                                            retain_rows=0)
            default = shard_retention_profile(plan, shard_of_row, cache_shards=cache)
            unbounded = shard_retention_profile(plan, shard_of_row, cache_shards=cache,
                                                retain_rows=n)
            seconds = time.perf_counter() - start
            rows.append({"layout": layout, "policy": policy_name, "order": order,
                         "cache": cache, "batches": alone.num_batches,
                         "alone": alone.loads / n_shards,
                         "recycled": alone.peak_kept_rows,
                         "default": default.loads / n_shards,
                         "default_peak": default.peak_kept_rows,
                         "default_budget": default.retain_rows,
                         "unbounded": unbounded.loads / n_shards,
                         "unbounded_max": unbounded.max_loads_per_shard,
                         "unbounded_peak": unbounded.peak_kept_rows,
                         "seconds": seconds})
            log(f"{layout} {policy_name} {order}: alone {rows[-1]['alone']:.2f}x, default "
                f"{rows[-1]['default']:.2f}x (peak {default.peak_kept_rows:,}), unbounded "
                f"{rows[-1]['unbounded']:.2f}x (peak {unbounded.peak_kept_rows:,}); "
                f"replays {seconds:.1f} s")
            del plan
    return rows


def fmt_loads(x: float) -> str:
    return f"{x:,.0f}x" if x >= 100 else f"{x:,.2f}x"


def render(meta: dict, rows: list) -> str:
    n = meta["rows"]
    out = [START, "", "## Plan-aware retention: each shard read once per epoch "
           "(`benchmarks/bench_shard_retention.py`)", "",
           f"Run: `{meta['command']}` ({meta['date']}; {meta['load']} at the start, "
           f"{meta['load_end']} at the end, on {meta['cores']} cores shared with other jobs).", "",
           f"Data: those of `bench_shards_parquet.py` (its functions, imported), {n:,} rows in "
           f"{meta['shards']:,} shards of {meta['shard_rows']:,} rows: `spread` 2 strata at "
           f"3% / 97% in random order, `own` the same with the 3% in its own shards, `tail` "
           f"1,000 strata with sizes ~ 1/k. One epoch (seed {SEED}) replayed through the "
           f"reader's rules (`shard_retention_profile`, equal to a real `BatchServer` in the "
           f"tests), no I/O. Loads are multiples of the shard count; the cache is 2W + 2 "
           f"shards with `shards=` and {RANDOM_CACHE} for the row-random plan. *Cache alone*: "
           f"the rows a policy recycles kept (as the reader always does, whatever the budget; "
           f"their number in brackets), nothing else held aside. "
           f"*Default budget*: plan-aware retention within as many rows as the cache holds "
           f"(cache size x {meta['shard_rows']:,} rows). *Unbounded*: every row an evicted "
           f"shard still owes the epoch held aside; peak rows held aside at once (recycled "
           f"rows included), and as a share of N.", "",
           "| data | policy | order (LRU) | batches | loads, cache alone (recycled rows kept) | "
           "loads, default budget (peak rows held) | loads, unbounded (most per shard) | "
           "peak rows held, unbounded | share of N |",
           "|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        out.append(f"| {r['layout']} | `{r['policy']}` | {r['order']} ({r['cache']}) | "
                   f"{r['batches']:,} | {fmt_loads(r['alone'])} ({r['recycled']:,}) | "
                   f"{fmt_loads(r['default'])} "
                   f"({r['default_peak']:,}) | {fmt_loads(r['unbounded'])} "
                   f"({r['unbounded_max']}) | {r['unbounded_peak']:,} | "
                   f"{r['unbounded_peak'] / n:.2%} |")
    out += ["", END]
    return "\n".join(out) + "\n"


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=float, default=1e7, help="rows (default 1e7)")
    parser.add_argument("--shard-rows", type=float, default=None,
                        help="rows per shard; default rows / 1000")
    parser.add_argument("--out", type=Path, default=FOCUSED,
                        help="results file the section goes into (default: "
                             "benchmarks/results_focused.md, and then results.md too)")
    parser.add_argument("--no-random", action="store_true",
                        help="leave out the row-random plan")
    args = parser.parse_args(argv)
    n = int(args.rows)
    shard_rows = int(args.shard_rows) if args.shard_rows else max(100, n // 1000)
    words = list(argv if argv is not None else sys.argv[1:])
    command = [("FILE" if previous == "--out" else word)
               for previous, word in zip([""] + words, words)]
    meta = {"command": " ".join(["python benchmarks/bench_shard_retention.py", *command]),
            "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), "load": load_average(),
            "cores": os.cpu_count(), "rows": n, "shard_rows": shard_rows,
            "shards": -(-n // shard_rows)}
    rows = []
    for layout in LAYOUTS:
        labels = make_labels(layout, n)
        rows += plan_rows(layout, labels, shard_rows, not args.no_random)
        del labels
    meta["load_end"] = load_average()
    section = render(meta, rows)
    write_section(args.out, section, start=START, end=END)
    if args.out.resolve() == FOCUSED.resolve():
        write_section(REPORT, section, heading_shift=1, start=START, end=END)
    print(section)


if __name__ == "__main__":
    main()
