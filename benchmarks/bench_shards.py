"""What the window W trades: shard loads per epoch and shards per batch (docs/SHARDS.md).

Writes ``docs/figures/shards_window.png`` and prints a table. Data: 2*10**5
rows in 200 shards of 1,000 rows (shard_sizes), batches of about 256, an LRU
cache of decoded shards replayed over the plan's batches in order
(``pystratum.shards.shard_load_profile``). Two
layouts: strata spread over all shards (a 3% and a 97% stratum, rows
shuffled), and the 3% stratum living in its own 6 shards. Also the
sort's cost: the stable sort by block against ``permutation(N)`` at 10**7
rows (``--sort-rows``).

Run: ``python benchmarks/bench_shards.py`` (about a minute), or
``python benchmarks/bench_shards.py --sort-rows 10000000`` for the sort ratio alone.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import numpy as np

import pystratum
from pystratum import ClassesPerBatch, FixedSize, MinPerStratum, Targets, shard_sizes
from pystratum.policies import MultiLabel
from pystratum.shards import shard_load_profile

ROWS, SHARDS = 200_000, 200
WINDOWS = (1, 2, 4, 8, 16, 32, 64, 200)
FIGURE = Path(__file__).resolve().parents[1] / "docs" / "figures" / "shards_window.png"


def layouts():
    rng = np.random.default_rng(0)
    row_shard = np.repeat(np.arange(SHARDS), ROWS // SHARDS)
    spread = rng.permutation(np.r_[np.zeros(6_000, dtype=np.int64),
                                   np.ones(ROWS - 6_000, dtype=np.int64)])
    own = (row_shard >= 6).astype(np.int64)  # the 3% stratum fills shards 0..5
    classes = rng.integers(0, 1_000, ROWS)
    return {"spread": spread, "own shards": own}, classes, row_shard


def policies():
    return {
        "MinPerStratum(8)": MinPerStratum(8),
        "FixedSize(256)": FixedSize(256),
        "Targets(.5/.5, 256)": Targets({0: .5, 1: .5}, 256),
    }


def measure():
    strata_of, classes, row_shard = layouts()
    # 8 labels, prevalences 1%-30%, independent: a few hundred distinct label sets.
    prevalence = np.array([0.01, 0.02, 0.03, 0.05, 0.1, 0.15, 0.2, 0.3])
    labels = np.random.default_rng(1).random((ROWS, prevalence.shape[0])) < prevalence
    sizes = shard_sizes([ROWS // SHARDS] * SHARDS)
    rows = []
    for layout, strata in strata_of.items():
        cases = [(name, strata, policy) for name, policy in policies().items()]
        if layout == "spread":
            cases.append(("ClassesPerBatch(32, 8)", classes, ClassesPerBatch(32, 8)))
            cases.append(("MultiLabel(256)", labels, MultiLabel(batch_size=256)))
        for name, data, policy in cases:
            for window in (None,) + WINDOWS:
                plan = pystratum.plan_batches(data, policy, seed=1,
                                              shards=None if window is None else sizes,
                                              window=1 if window is None else window)
                # Rows a policy recycles count as reads here (no kept rows): the plan alone.
                profile = shard_load_profile(plan, row_shard, kept_rows=False)
                mean, most = profile.shards_per_batch
                rows.append(dict(layout=layout, policy=name, window=window,
                                 per_batch_mean=mean, per_batch_max=most,
                                 loads_64=profile.loads(64) / SHARDS,
                                 once=profile.one_pass_cache,
                                 loads_2w2=(profile.loads(2 * window + 2) / SHARDS
                                            if window else float("nan")),
                                 loads_3w=(profile.loads(3 * window) / SHARDS
                                           if window else float("nan"))))
                print(f"{layout:10s} {name:24s} W={str(window):5s} shards/batch "
                      f"{rows[-1]['per_batch_mean']:7.1f} (max {rows[-1]['per_batch_max']:4d})  "
                      f"loads/H: cache 64 {rows[-1]['loads_64']:8.2f}  cache 2W+2 "
                      f"{rows[-1]['loads_2w2']:8.2f}  cache 3W {rows[-1]['loads_3w']:8.2f}  "
                      f"once from cache {rows[-1]['once']:4d}",
                      flush=True)
    return rows


def figure(rows):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 3, figsize=(15, 4.4))
    for layout, style in (("spread", "-"), ("own shards", "--")):
        for name in list(policies()) + ["ClassesPerBatch(32, 8)", "MultiLabel(256)"]:
            mine = [r for r in rows if r["layout"] == layout and r["policy"] == name
                    and r["window"] is not None]
            if not mine:
                continue
            windows = [r["window"] for r in mine]
            label = f"{name}, {layout}"
            axes[0].plot(windows, [r["per_batch_mean"] for r in mine], style, marker="o",
                         label=label)
            axes[1].plot(windows, [r["once"] for r in mine], style, marker="o", label=label)
            axes[2].plot(windows, [r["loads_64"] for r in mine], style, marker="o", label=label)
    axes[1].plot(WINDOWS, [3 * w for w in WINDOWS], ":", color="grey", label="3W")
    axes[0].set(xscale="log", yscale="log", xlabel="window W (shards per block)",
                ylabel="distinct shards per batch (mean)", title="Shards a batch reads")
    axes[1].set(xscale="log", yscale="log", xlabel="window W (shards per block)",
                ylabel="LRU cache (shards)", title="Smallest LRU cache reading each shard once")
    axes[2].set(xscale="log", yscale="log", xlabel="window W (shards per block)",
                ylabel="shard loads per epoch / shards", title="Loads with an LRU cache of 64")
    axes[1].legend(fontsize=7)
    fig.suptitle(f"{ROWS:,} rows in {SHARDS} shards, batches of ~256 (row-random order: "
                 f"~{[r for r in rows if r['window'] is None][0]['per_batch_mean']:.0f} "
                 f"shards per batch)", fontsize=9)
    fig.tight_layout()
    fig.savefig(FIGURE, dpi=110)
    print(f"wrote {FIGURE}")


def sort_ratio(n):
    """The stable sort by block against ``permutation(N)``: the compiled counting sort
    (numba; warmed up first, so numba's import is not counted) and numpy's radix path."""
    from pystratum import kernels as kernel_gate
    from pystratum.engine._shards import ShardBlocks

    rng = np.random.default_rng(0)
    index = np.repeat(np.arange(1_000, dtype=np.uint16), n // 1_000)
    blocks = ShardBlocks(index, 1_000, 4, rng.permutation(1_000))
    blocks.order(rng.permutation(kernel_gate.MIN_ROWS))  # numba's import and cache load
    start = time.perf_counter()
    permutation = rng.permutation(n)
    drawn = time.perf_counter() - start
    timed = {}
    for path in ("compiled", "numpy"):
        if path == "numpy":
            kernel_gate._LOADED["shards"] = False
        start = time.perf_counter()
        blocks.order(permutation)
        timed[path] = time.perf_counter() - start
    for path, seconds in timed.items():
        print(f"N={n:,}: permutation(N) {drawn:.3f} s, stable sort by block, {path} path "
              f"(1,000 shards, W=4, 250 blocks) {seconds:.3f} s, ratio {seconds / drawn:.2f}")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sort-rows", type=int, default=None)
    args = parser.parse_args()
    if args.sort_rows:
        sort_ratio(args.sort_rows)
        return
    rows = measure()
    figure(rows)


if __name__ == "__main__":
    main()
