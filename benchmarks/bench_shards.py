"""Shard-aware plans on Parquet: shard loads per epoch, DataLoader rows/s, and the peers.

Run from the repository root (PYTHONPATH at the root):

    python benchmarks/bench_shards.py [--rows 1e8] [--quick] [--out FILE]
        [--peer-path DIR] [--peer-rows 1e6] [--cache-dir DIR]

``--quick`` is 10^6 rows (10^5 for the peers). The section is printed and
written into ``--out`` (default benchmarks/results_focused.md; with the
default, also into the focused part at the end of benchmarks/results.md),
between the markers ``<!-- bench_shards -->`` and ``<!-- /bench_shards -->``
(replaced, or appended when absent).

1. **Data.** Three Parquet files, one row group per shard (``--shard-rows``,
   default ``rows / 1000``), written row group by row group (the table is
   never whole in memory) into ``--cache-dir`` (default
   ``<system temp>/pystratum-bench-shards``) and reused by later runs:
   ``spread`` (2 strata, 3% / 97%, rows in random order, so every shard holds
   both), ``own`` (the same strata, the 3% living in their own shards) and
   ``tail`` (1,000 strata, sizes ~ 1/k, random order). Columns: ``label``
   (int16), ``id`` (int64, the row's position) and four float32 features.
2. **Shard loads** (no I/O): each policy's epoch, row-random (today's plan)
   and with ``shards=shard_sizes(...)`` at W = 1, 4, 16, replayed through an
   LRU cache of decoded shards (:func:`lru_profile`: every batch asks for the
   distinct shards of its rows). Loads per epoch are given as multiples of
   the shard count, at a cache of 2W + 2 shards (and 64 for the row-random
   plan); "cache for one pass" is the smallest LRU that loads every shard
   once per epoch.
3. **End to end**, wall-clock rows/s on the ``spread`` file: a sequential
   scan (``pyarrow.parquet.ParquetFile.iter_batches``, one process), the
   shard-aware plan through the readers' torch dataset and a
   ``DataLoader`` with 4 workers, and the row-random plan through the same
   dataset and cache, timed on ``--random-batches`` batches only and
   extrapolated (it reads most shards for every batch, by design).
4. **Peers** on the same strata at ``--peer-rows`` (writing per-sample MDS
   and tar files in Python is too slow for 10^8 rows here): Mosaic
   Streaming's ``batching_method="stratified"`` (one MDS stream per
   stratum, 2 ranks simulated by two processes with RANK / WORLD_SIZE /
   LOCAL_RANK / LOCAL_WORLD_SIZE, as its launcher sets them) and WebDataset
   ``RandomMix`` over per-stratum tar shards. ``mosaicml-streaming`` pins an
   older numpy and pulls torchvision, so it is installed apart
   (``pip install --target DIR --no-deps mosaicml-streaming xxhash zstd
   python-snappy brotli``) and ``--peer-path DIR`` is appended to sys.path
   (after the environment's own packages). Its package ``__init__`` imports
   its vision datasets, which need torchvision (no CPU build on PyPI): the
   script puts an empty ``streaming.vision`` module in their place.

The machine's load average is printed with every part: on a shared
machine, compare the ratios of one run, not the seconds.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
import types
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
FOCUSED = HERE / "results_focused.md"
REPORT = HERE / "results.md"
START, END = "<!-- bench_shards -->", "<!-- /bench_shards -->"
MINORITY_SHARE = 0.03
TAIL_STRATA = 1000
WINDOWS = (1, 4, 16)
RANDOM_CACHE = 64
FEATURES = 4
SEED = 1


def load_average() -> str:
    return "load average " + ", ".join(f"{x:.1f}" for x in os.getloadavg())


def log(message: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}, {load_average()}] {message}", file=sys.stderr,
          flush=True)


# --- data ---------------------------------------------------------------------------------


def minority_rows(n: int) -> int:
    return round(MINORITY_SHARE * n)


def tail_sizes(n: int) -> np.ndarray:
    """1,000 stratum sizes ~ 1/k summing to n (every stratum at least one row)."""
    shares = 1.0 / np.arange(1, TAIL_STRATA + 1)
    sizes = np.maximum(1, np.floor(shares / shares.sum() * n)).astype(np.int64)
    sizes[0] += n - sizes.sum()
    return sizes


def make_labels(layout: str, n: int) -> np.ndarray:
    """The label of every row in storage order (int16), the same on every call."""
    if layout == "tail":
        labels = np.repeat(np.arange(TAIL_STRATA, dtype=np.int16), tail_sizes(n))
        return np.random.default_rng(0).permutation(labels)
    labels = np.zeros(n, dtype=np.int16)
    labels[n - minority_rows(n):] = 1
    if layout == "spread":
        return np.random.default_rng(0).permutation(labels)
    return labels  # "own": the minority fills the last shards, alone


def dataset_path(cache_dir: Path, layout: str, n: int, shard_rows: int) -> Path:
    return cache_dir / f"{layout}-n{n}-g{shard_rows}.parquet"


def write_dataset(path: Path, labels: np.ndarray, shard_rows: int) -> None:
    """Writes the file one row group (shard) at a time; an existing complete file is kept."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    n = labels.shape[0]
    if path.exists() and pq.ParquetFile(path).metadata.num_rows == n:
        return
    schema = pa.schema([("label", pa.int16()), ("id", pa.int64())] +
                       [(f"x{j}", pa.float32()) for j in range(FEATURES)])
    partial = path.with_suffix(".partial")
    with pq.ParquetWriter(partial, schema, compression="snappy") as writer:
        for shard, start in enumerate(range(0, n, shard_rows)):
            stop = min(n, start + shard_rows)
            features = np.random.default_rng([SEED, shard]).standard_normal(
                (FEATURES, stop - start), dtype=np.float32)
            columns = [pa.array(labels[start:stop]), pa.array(np.arange(start, stop))]
            columns += [pa.array(column) for column in features]
            writer.write_table(pa.Table.from_arrays(columns, schema=schema),
                               row_group_size=shard_rows)
    partial.rename(path)  # only a complete file gets the name a later run reuses


# --- shard loads: an LRU cache replayed over a plan's batches ------------------------------


def _reuse_histogram(shards: np.ndarray, n_shards: int):
    """(first accesses, hist): hist[d] = re-accesses with d distinct other shards since the last.

    An LRU cache of C shards hits exactly the re-accesses with d < C
    (Mattson's stack distance), so one pass gives the loads for every size.
    The distinct shards in between are counted with a Fenwick tree over
    time holding a 1 at each shard's latest access.
    """
    total = shards.shape[0]
    tree = np.zeros(total + 1, dtype=np.int64)
    last = np.full(n_shards, -1, dtype=np.int64)
    hist = np.zeros(n_shards + 1, dtype=np.int64)
    first = 0
    for t in range(total):
        shard = shards[t]
        previous = last[shard]
        if previous < 0:
            first += 1
        else:
            # markers at times previous+1 .. t-1: prefix(t) - prefix(previous + 1)
            between, i = 0, t
            while i > 0:
                between += tree[i]
                i -= i & -i
            i = previous + 1
            while i > 0:
                between -= tree[i]
                i -= i & -i
            hist[between] += 1
            i = previous + 1
            while i <= total:
                tree[i] -= 1
                i += i & -i
        i = t + 1
        while i <= total:
            tree[i] += 1
            i += i & -i
        last[shard] = t
    return first, hist


try:  # the `fast` extra; without it the same loop runs in Python (slow past 10^6 rows)
    import numba

    _reuse_histogram = numba.njit(cache=False)(_reuse_histogram)
except ImportError:  # pragma: no cover
    pass


def batch_shard_accesses(order: np.ndarray, bounds: np.ndarray, shard_of_row: np.ndarray,
                         n_shards: int, chunk_rows: int = 1 << 24):
    """(batch, shard) of every distinct shard each batch reads, batch by batch, shards ascending."""
    batches, shards = [], []
    n_batches = bounds.shape[0] - 1
    first = 0
    while first < n_batches:
        last = int(np.searchsorted(bounds, bounds[first] + chunk_rows, side="right")) - 1
        last = min(n_batches, max(last, first + 1))
        rows = order[bounds[first]:bounds[last]]
        batch = np.repeat(np.arange(first, last, dtype=np.int64),
                          np.diff(bounds[first:last + 1]))
        keys = np.unique(batch * n_shards + shard_of_row[rows])
        batches.append(keys // n_shards)
        shards.append((keys % n_shards).astype(np.int32))
        first = last
    return np.concatenate(batches), np.concatenate(shards)


def lru_profile(plan, shard_of_row: np.ndarray, n_shards: int) -> dict:
    """How an LRU cache of decoded shards serves ``plan``'s batches in order.

    ``loads(C)``: shard loads per epoch with a cache of C shards;
    ``one_pass_cache``: the smallest C that loads every shard read at most
    once; ``per_batch``: (mean, max) distinct shards a batch reads.
    """
    batch, shards = batch_shard_accesses(plan.order, plan.bounds, shard_of_row, n_shards)
    first, hist = _reuse_histogram(shards, n_shards)
    # loads(C) = first + re-accesses at distance >= C
    tail = np.concatenate([np.cumsum(hist[::-1])[::-1], [0]])
    reused = np.nonzero(hist)[0]
    per_batch = np.bincount(batch, minlength=plan.num_batches)
    return {"first": int(first), "tail": tail, "n_shards": n_shards,
            "one_pass_cache": int(reused.max()) + 1 if reused.size else 1,
            "per_batch": (float(per_batch.mean()), int(per_batch.max())),
            "batches": plan.num_batches}


def loads(profile: dict, capacity: int) -> int:
    tail = profile["tail"]
    return profile["first"] + int(tail[min(capacity, tail.shape[0] - 1)])


def policies_for(layout: str, shard_rows: int):
    from pystratum.policies import (ClassesPerBatch, Downsample, FixedSize, MinPerStratum,
                                    Targets)

    if layout == "tail":
        return [MinPerStratum(1), ClassesPerBatch(16, 4)]
    return [MinPerStratum(8), FixedSize(256), Targets({0: 0.5, 1: 0.5}, 256),
            Downsample({0: 0.1}, FixedSize(256))]


def shard_load_rows(layout: str, labels: np.ndarray, shard_rows: int) -> list:
    """One row per (policy, order): the LRU figures of one epoch (epoch 0, seed SEED)."""
    import pystratum

    n = labels.shape[0]
    n_shards = -(-n // shard_rows)
    shard_of_row = (np.arange(n, dtype=np.int64) // shard_rows).astype(np.int32)
    sizes = np.full(n_shards, shard_rows, dtype=np.int64)
    sizes[-1] = n - shard_rows * (n_shards - 1)
    rows = []
    for policy in policies_for(layout, shard_rows):
        orders = [("row-random", {}, RANDOM_CACHE)]
        orders += [(f"shards=, W={w}", {"shards": pystratum.shard_sizes(sizes), "window": w},
                    2 * w + 2) for w in WINDOWS]
        for name, extra, capacity in orders:
            start = time.perf_counter()
            plan = pystratum.plan_batches(labels, policy, seed=SEED, **extra)
            planned = time.perf_counter() - start
            profile = lru_profile(plan, shard_of_row, n_shards)
            rows.append({"layout": layout, "policy": repr(policy), "order": name,
                         "capacity": capacity, "loads": loads(profile, capacity) / n_shards,
                         "loads_64": loads(profile, RANDOM_CACHE) / n_shards,
                         "one_pass_cache": profile["one_pass_cache"],
                         "per_batch": profile["per_batch"], "batches": profile["batches"],
                         "rows_served": int(plan.order.shape[0]), "plan_s": planned})
            log(f"{layout} {policy!r} {name}: {rows[-1]['loads']:.2f} x shards at LRU "
                f"{capacity}, one-pass cache {profile['one_pass_cache']}, plan {planned:.1f} s")
            del plan
    return rows


# --- end to end ---------------------------------------------------------------------------


def sequential_scan(path: Path, batch_size: int) -> dict:
    """Rows/s of one pass over the file in storage order, every column decoded to numpy."""
    import pyarrow.parquet as pq

    start = time.perf_counter()
    rows = 0
    for record_batch in pq.ParquetFile(path).iter_batches(batch_size=batch_size):
        columns = [column.to_numpy() for column in record_batch.columns]
        rows += columns[0].shape[0]
    seconds = time.perf_counter() - start
    return {"rows": rows, "seconds": seconds, "rows_per_s": rows / seconds}


# --- report -------------------------------------------------------------------------------


def fmt_loads(x: float) -> str:
    return f"{x:,.0f}x" if x >= 100 else f"{x:,.2f}x"


def render(meta: dict, load_rows: list, e2e: dict | None, peers: dict | None) -> str:
    out = [START, "", "## Shard-aware plans on Parquet (`benchmarks/bench_shards.py`)", "",
           f"Run: `{meta['command']}` ({meta['date']}; {meta['load']} at the start, "
           f"{meta['load_end']} at the end, on {meta['cores']} cores shared with other jobs). "
           f"{meta['size_note']}", ""]
    out += [f"Data: {meta['rows']:,} rows in {meta['shards']:,} shards (Parquet row groups of "
            f"{meta['shard_rows']:,} rows): `spread` 2 strata at 3% / 97% in random order, "
            f"`own` the same with the 3% in its own {meta['own_shards']} shards, `tail` "
            f"1,000 strata with sizes ~ 1/k. Loads per epoch are multiples of the shard count, "
            f"from an LRU replay of the plan's batches (no I/O), with a cache of 2W + 2 shards "
            f"for `shards=` and {RANDOM_CACHE} for the row-random plan; the last column is the "
            f"smallest LRU that loads each shard once.", ""]
    out += ["| data | policy | order | batches | shards per batch, mean / max | loads per epoch "
            "(LRU size) | loads at LRU 64 | cache for one pass |", "|---|---|---|---|---|---|---|---|"]
    for r in load_rows:
        out.append(f"| {r['layout']} | `{r['policy']}` | {r['order']} | {r['batches']:,} | "
                   f"{r['per_batch'][0]:.1f} / {r['per_batch'][1]} | {fmt_loads(r['loads'])} "
                   f"({r['capacity']}) | {fmt_loads(r['loads_64'])} | {r['one_pass_cache']:,} |")
    out.append("")
    if e2e:
        out += e2e_lines(e2e)
    if peers:
        out += peer_lines(peers)
    out += ["", END]
    return "\n".join(out) + "\n"


def e2e_lines(e2e: dict) -> list:
    lines = ["### End to end: rows/s on the `spread` file", ""]
    lines += [e2e.get("note", ""), "", "| reader | rows | seconds | rows/s | x the scan |",
              "|---|---|---|---|---|"]
    scan = e2e["scan"]["rows_per_s"]
    for name, record in e2e["runs"]:
        lines.append(f"| {name} | {record['rows']:,} | {record['seconds']:.1f} | "
                     f"{record['rows_per_s']:,.0f} | {record['rows_per_s'] / scan:.2f}x |")
    return lines + [""]


def peer_lines(peers: dict) -> list:
    return ["### Peers", "", *peers.get("lines", []), ""]


def write_section(path: Path, section: str, heading_shift: int = 0) -> None:
    """Replaces the text between the markers in ``path``, or appends the section."""
    if heading_shift:
        section = "\n".join("#" * heading_shift + line if line.startswith("#") else line
                            for line in section.splitlines()) + "\n"
    text = path.read_text() if path.exists() else ""
    if START in text and END in text:
        head, rest = text.split(START, 1)
        text = head + section.rstrip("\n") + rest.split(END, 1)[1]
    else:
        text = text.rstrip("\n") + "\n\n" + section
    path.write_text(text)


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=float, default=1e8)
    parser.add_argument("--quick", action="store_true", help="10^6 rows, 10^5 for the peers")
    parser.add_argument("--out", type=Path, default=FOCUSED,
                        help="results file the section goes into (default: "
                             "benchmarks/results_focused.md, and then results.md too)")
    parser.add_argument("--shard-rows", type=float, default=None,
                        help="rows per shard (row group); default rows / 1000")
    parser.add_argument("--cache-dir", type=Path,
                        default=Path(tempfile.gettempdir()) / "pystratum-bench-shards")
    parser.add_argument("--peer-rows", type=float, default=1e6)
    parser.add_argument("--peer-path", type=Path, default=None)
    parser.add_argument("--skip", nargs="*", default=[], choices=["loads", "e2e", "peers"])
    args = parser.parse_args(argv)
    n = 10**6 if args.quick else int(args.rows)
    shard_rows = int(args.shard_rows) if args.shard_rows else max(100, n // 1000)
    args.cache_dir.mkdir(parents=True, exist_ok=True)
    meta = {"command": "python benchmarks/bench_shards.py " + " ".join(argv or sys.argv[1:]),
            "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), "load": load_average(),
            "cores": os.cpu_count(), "rows": n, "shard_rows": shard_rows,
            "shards": -(-n // shard_rows),
            "own_shards": -(-minority_rows(n) // shard_rows), "size_note": ""}
    load_rows = []
    for layout in ("spread", "own", "tail"):
        labels = make_labels(layout, n)
        log(f"writing / checking {layout} ({n:,} rows)")
        write_dataset(dataset_path(args.cache_dir, layout, n, shard_rows), labels, shard_rows)
        if "loads" not in args.skip:
            load_rows += shard_load_rows(layout, labels, shard_rows)
        del labels
    e2e = None
    if "e2e" not in args.skip:
        path = dataset_path(args.cache_dir, "spread", n, shard_rows)
        e2e = {"scan": sequential_scan(path, 256), "runs": []}
        e2e["runs"].append(("sequential scan, `iter_batches(256)`, 1 process", e2e["scan"]))
    peers = None
    meta["load_end"] = load_average()
    section = render(meta, load_rows, e2e, peers)
    print(section)
    write_section(args.out, section)
    if args.out.resolve() == FOCUSED.resolve():
        write_section(REPORT, section, heading_shift=1)


if __name__ == "__main__":
    main()
