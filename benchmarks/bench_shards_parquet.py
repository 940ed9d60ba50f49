"""Shard-aware plans on Parquet: shard loads per epoch, DataLoader rows/s, and the peers.

Run from the repository root (PYTHONPATH at the root):

    python benchmarks/bench_shards_parquet.py [--rows 1e8] [--quick] [--out FILE]
        [--peer-path DIR] [--peer-rows 1e6] [--cache-dir DIR] [--skip loads e2e peers]

``--quick`` is 10^6 rows (10^5 for the peers). The section is printed and
written into ``--out`` (default benchmarks/results_focused.md; with the
default, also into the focused part at the end of benchmarks/results.md),
between the markers ``<!-- bench_shards_parquet -->`` and ``<!-- /bench_shards_parquet -->``
(replaced, or appended when absent), after each layout and each part, so a run
stopped early leaves what it measured. ``--skip loads peers`` runs the end-to-end
part alone and replaces only its part of the section (with its own run line);
any other ``--skip`` keeps the skipped parts' tables from the section already
there, each naming the run it came from (``--rows 1e8 --skip e2e peers``: the
loads at 10^8 rows, the other two tables kept). The section also says where
the run's time went (writing each file, building the plans, replaying them)
and its peak memory: at 10^8 rows the files take ~9 GB of disk, a plan
0.8-1.6 GB, one plan alive at a time, and the loads part ~30 min on 2 shared
cores with a peak of ~14 GB (building the ``ClassesPerBatch`` plans).

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
   LRU cache of decoded shards (``pystratum.shards.shard_load_profile``: every batch asks for the
   distinct shards of its rows). Loads per epoch are given as multiples of
   the shard count, at a cache of 2W + 2 shards (and 64 for the row-random
   plan); "cache for one pass" is the smallest LRU that loads every shard
   once per epoch. A plan the engine refuses is a row saying why, not a
   stopped run.
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

from pystratum.shards import shard_load_profile

HERE = Path(__file__).resolve().parent
FOCUSED = HERE / "results_focused.md"
REPORT = HERE / "results.md"
START, END = "<!-- bench_shards_parquet -->", "<!-- /bench_shards_parquet -->"
MINORITY_SHARE = 0.03
TAIL_STRATA = 1000
WINDOWS = (1, 4, 16)
RANDOM_CACHE = 64
FEATURES = 4
SEED = 1
MOSAIC_TIMEOUT = 1800


def load_average() -> str:
    return "load average " + ", ".join(f"{x:.1f}" for x in os.getloadavg())


def peak_rss_gb() -> float:
    """This process's peak resident memory so far, in GB (Linux reports kB, macOS bytes)."""
    import resource

    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return peak / (1e9 if sys.platform == "darwin" else 1e6)


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


def write_dataset(path: Path, labels: np.ndarray, shard_rows: int) -> bool:
    """Writes the file one row group (shard) at a time; an existing complete file is kept
    (returns False)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    n = labels.shape[0]
    if path.exists() and pq.ParquetFile(path).metadata.num_rows == n:
        return False
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
    return True


# --- shard loads: an LRU cache replayed over a plan's batches ------------------------------


def policies_for(layout: str, n: int):
    from pystratum.policies import (ClassesPerBatch, Downsample, FixedSize, MinPerStratum,
                                    Targets)

    if layout == "tail":
        return [("MinPerStratum(1)", MinPerStratum(1)),
                ("ClassesPerBatch(16, 4)", ClassesPerBatch(16, 4, small="drop"))]
    # Targets' epoch: the batches that serve the 97% once. epoch="largest" rounds up to one
    # batch more, whose few extra rows make the 97% a second pass (97 million row draws at
    # 10^8 rows to serve 64 rows): the table compares epochs that read each row once.
    epoch = (n - minority_rows(n)) // 128
    return [("MinPerStratum(8)", MinPerStratum(8)), ("FixedSize(256)", FixedSize(256)),
            (f"Targets({{0: .5, 1: .5}}, 256, epoch={epoch})",
             Targets({0: 0.5, 1: 0.5}, 256, epoch=epoch)),
            ("Downsample({0: .1}, FixedSize(256))", Downsample({0: 0.1}, FixedSize(256)))]


def shard_layout(n: int, shard_rows: int) -> tuple:
    """The files' layout: each row's shard (int32) and the shard sizes (the last may be short)."""
    n_shards = -(-n // shard_rows)
    shard_of_row = (np.arange(n, dtype=np.int64) // shard_rows).astype(np.int32)
    sizes = np.full(n_shards, shard_rows, dtype=np.int64)
    sizes[-1] = n - shard_rows * (n_shards - 1)
    return shard_of_row, sizes


def window_orders(sizes: np.ndarray, prefix: str = "") -> list:
    """``(name, plan_batches arguments, LRU size 2W + 2)`` of the shard-aware order at each W."""
    import pystratum

    return [(f"{prefix}W={w}", {"shards": pystratum.shard_sizes(sizes), "window": w}, 2 * w + 2)
            for w in WINDOWS]


def shard_load_rows(layout: str, labels: np.ndarray, shard_rows: int) -> list:
    """One row per (policy, order): the LRU figures of one epoch (epoch 0, seed SEED)."""
    import pystratum

    n = labels.shape[0]
    shard_of_row, sizes = shard_layout(n, shard_rows)
    n_shards = sizes.shape[0]
    rows = []
    for policy_name, policy in policies_for(layout, n):
        orders = [("row-random", {}, RANDOM_CACHE)] + window_orders(sizes, "shards=, ")
        for name, extra, capacity in orders:
            start = time.perf_counter()
            try:
                plan = pystratum.plan_batches(labels, policy, seed=SEED, **extra)
            except ValueError as error:  # an epoch the engine refuses is reported, not fatal
                rows.append({"layout": layout, "policy": policy_name, "order": name,
                             "refused": str(error).split(": ", 1)[-1][:300]})
                log(f"{layout} {policy_name} {name}: refused: {error}")
                continue
            planned = time.perf_counter() - start
            start = time.perf_counter()
            profile = shard_load_profile(plan, shard_of_row)
            replayed = time.perf_counter() - start
            rows.append({"layout": layout, "policy": policy_name, "order": name,
                         "capacity": capacity, "loads": profile.loads(capacity) / n_shards,
                         "loads_64": profile.loads(RANDOM_CACHE) / n_shards,
                         "one_pass_cache": profile.one_pass_cache,
                         "per_batch": profile.shards_per_batch, "batches": profile.num_batches,
                         "rows_served": int(plan.order.shape[0]), "plan_s": planned,
                         "replay_s": replayed})
            log(f"{layout} {policy_name} {name}: {rows[-1]['loads']:.2f} x shards at LRU "
                f"{capacity}, one-pass cache {profile.one_pass_cache}, plan {planned:.1f} s, "
                f"replay {replayed:.1f} s, peak RSS {peak_rss_gb():.1f} GB")
            del plan  # one plan alive at a time: at 10^8 rows each holds ~0.8-1.6 GB
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


# --- peers: Mosaic Streaming and WebDataset on per-stratum shards --------------------------


def import_streaming(peer_path):
    """mosaicml-streaming from ``peer_path`` (appended: this environment's numpy and torch win)."""
    if peer_path is not None and str(peer_path) not in sys.path:
        sys.path.append(str(peer_path))
    # Its package __init__ imports its vision datasets, which need torchvision; none is used here.
    sys.modules.setdefault("streaming.vision", types.ModuleType("streaming.vision"))
    import streaming

    return streaming


def write_mds_streams(root: Path, labels: np.ndarray, shard_rows: int, streaming) -> list:
    """One MDS directory per stratum (rows in storage order), about ``shard_rows`` rows a shard."""
    directories = []
    for stratum in (0, 1):
        directory = root / f"mds-n{labels.shape[0]}-g{shard_rows}-s{stratum}"
        directories.append(directory)
        if (directory / "index.json").exists():
            continue
        rows = np.nonzero(labels == stratum)[0]
        # 14 bytes of columns and 4 of offset per sample: size_limit gives ~shard_rows a shard
        with streaming.MDSWriter(out=str(directory.with_suffix(".partial")),
                                 columns={"id": "int64", "label": "int16", "pos": "int32"},
                                 size_limit=18 * shard_rows) as writer:
            for position, row in enumerate(rows.tolist()):
                writer.write({"id": row, "label": stratum, "pos": position})
        directory.with_suffix(".partial").rename(directory)
    return directories


def mosaic_rank(args) -> None:
    """One simulated rank (the env vars set by the parent): the samples it serves, as JSON."""
    streaming = import_streaming(args.peer_path)
    from streaming.base.util import clean_stale_shared_memory

    directories = [Path(d) for d in args.mosaic_streams]
    proportions = [float(p) for p in args.mosaic_proportions]
    import torch.distributed as dist

    # The process group is ours for the whole run: left to themselves, StreamingDataset and
    # clean_stale_shared_memory (a collective) each open one and destroy it after a barrier.
    dist.init_process_group("gloo")
    clean_stale_shared_memory()
    streams = [streaming.Stream(local=str(d), proportion=p)
               for d, p in zip(directories, proportions)]
    dataset = streaming.StreamingDataset(streams=streams, batching_method="stratified",
                                         batch_size=args.mosaic_batch, shuffle=True,
                                         shuffle_seed=SEED)
    served = [(int(sample["label"]), int(sample["pos"])) for sample in dataset]
    dist.barrier()
    dist.destroy_process_group()
    print(json.dumps({"rank": int(os.environ["RANK"]), "served": served,
                      "epoch_size": int(dataset.size)}))


def shard_of_position(directory: Path) -> np.ndarray:
    """The MDS shard of each sample position in a stream, from its index.json."""
    index = json.loads((directory / "index.json").read_text())
    counts = [shard["samples"] for shard in index["shards"]]
    return np.repeat(np.arange(len(counts)), counts)


def composition(minority_counts: np.ndarray, sizes: np.ndarray) -> dict:
    return {"batches": int(minority_counts.shape[0]),
            "missing": float(np.mean(minority_counts == 0)) if minority_counts.size else 0.0,
            "minority": (int(minority_counts.min()), float(minority_counts.mean()),
                         int(minority_counts.max())) if minority_counts.size else (0, 0, 0),
            "sizes": (int(sizes.min()), int(sizes.max())) if sizes.size else (0, 0)}


class _Plan:
    """Just enough of a plan (order, bounds) for ``shard_load_profile``."""

    def __init__(self, order, batch_size):
        self.order = np.asarray(order, dtype=np.int64)
        self.bounds = np.append(np.arange(0, self.order.shape[0], batch_size),
                                self.order.shape[0])
        self.num_batches = self.bounds.shape[0] - 1


def run_mosaic(args, labels: np.ndarray, shard_rows: int, root: Path, ranks: int = 2,
               batch_per_rank: int = 128) -> dict:
    """Mosaic Streaming's stratified batching over two ranks: per-rank composition and drops."""
    import socket

    streaming = import_streaming(args.peer_path)
    directories = write_mds_streams(root, labels, shard_rows, streaming)
    sizes = np.bincount(labels, minlength=2)
    proportions = sizes / sizes.sum()
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    command = [sys.executable, __file__, "--mosaic-rank", "--mosaic-batch", str(batch_per_rank),
               "--mosaic-streams", *map(str, directories),
               "--mosaic-proportions", *map(str, proportions)]
    if args.peer_path is not None:
        command += ["--peer-path", str(args.peer_path)]
    processes = []
    for rank in range(ranks):
        env = dict(os.environ, RANK=str(rank), WORLD_SIZE=str(ranks), LOCAL_RANK=str(rank),
                   LOCAL_WORLD_SIZE=str(ranks), MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
        processes.append(subprocess.Popen(command, env=env, stdout=subprocess.PIPE, text=True))
    try:
        outputs = [process.communicate(timeout=MOSAIC_TIMEOUT)[0] for process in processes]
    finally:
        for process in processes:
            process.kill()
    if any(process.returncode for process in processes):
        raise RuntimeError(f"a simulated rank failed (exit codes "
                           f"{[process.returncode for process in processes]})")
    results = [json.loads(output.strip().splitlines()[-1]) for output in outputs]
    shard_maps = [shard_of_position(d) for d in directories]
    offsets = np.cumsum([0] + [m.max() + 1 for m in shard_maps])
    out = {"ranks": ranks, "batch_per_rank": batch_per_rank, "per_rank": [], "n": int(sizes.sum()),
           "proportions": [float(p) for p in proportions],
           "shards": int(offsets[-1])}
    for result in sorted(results, key=lambda r: r["rank"]):
        served = np.array(result["served"], dtype=np.int64).reshape(-1, 2)
        # padding samples (-1 in its arrangement) come back as repeats: count them apart
        n_batches = served.shape[0] // batch_per_rank
        minority = (served[:n_batches * batch_per_rank, 0] == 1).reshape(n_batches, -1).sum(1)
        record = composition(minority, np.full(n_batches, batch_per_rank))
        global_shard = np.array([offsets[s] + shard_maps[s][p] for s, p in served.tolist()])
        profile = shard_load_profile(_Plan(np.arange(global_shard.shape[0]), batch_per_rank),
                                     global_shard.astype(np.int32))
        record.update({"served": int(served.shape[0]),
                       "distinct": int(np.unique(served[:, 0] * (1 << 40) + served[:, 1]).size),
                       "loads_4": profile.loads(4), "loads_64": profile.loads(RANDOM_CACHE),
                       "per_batch": profile.shards_per_batch})
        out["per_rank"].append(record)
    return out


def write_wds_shards(root: Path, labels: np.ndarray, shard_rows: int) -> list:
    """Per-stratum WebDataset tar shards of ``shard_rows`` samples (rows in storage order)."""
    import webdataset as wds

    urls = []
    for stratum in (0, 1):
        directory = root / f"wds-n{labels.shape[0]}-g{shard_rows}-s{stratum}"
        rows = np.nonzero(labels == stratum)[0]
        count = -(-rows.shape[0] // shard_rows)
        names = [str(directory / f"shard-{i:06d}.tar") for i in range(count)]
        urls.append(names)
        if (directory / "complete").exists():
            continue
        directory.mkdir(parents=True, exist_ok=True)
        with wds.ShardWriter(str(directory / "shard-%06d.tar"), maxcount=shard_rows,
                             verbose=0) as sink:
            for row in rows.tolist():
                sink.write({"__key__": f"{row:010d}", "label.cls": stratum, "id.cls": row})
        (directory / "complete").write_text("")
    return urls


def run_webdataset(labels: np.ndarray, shard_rows: int, root: Path, batch_size: int = 256) -> dict:
    """RandomMix of one WebDataset per stratum at the data's shares, cut into batches."""
    import random

    import webdataset as wds

    urls = write_wds_shards(root, labels, shard_rows)
    sizes = np.bincount(labels, minlength=2)
    random.seed(SEED)  # RandomMix draws with the random module's global generator
    sources = [wds.WebDataset(u, shardshuffle=len(u), seed=SEED, empty_check=False)
               .shuffle(1000).decode() for u in urls]
    mixed = wds.RandomMix(sources, probs=list(sizes / sizes.sum()))
    served_labels, opened = [], set()
    for sample in mixed:
        served_labels.append(int(sample["label.cls"]))
        # each source makes one pass (RandomMix stops at the first one exhausted), reading
        # each of its shards once, sequentially: the distinct urls are the shard reads
        opened.add(sample["__url__"])
    opens = len(opened)
    served = np.array(served_labels)
    n_batches = -(-served.shape[0] // batch_size)
    minority = np.add.reduceat((served == 1).astype(np.int64),
                               np.arange(0, served.shape[0], batch_size)) if served.size else served
    batch_sizes = np.diff(np.append(np.arange(0, served.shape[0], batch_size), served.shape[0]))
    record = composition(minority, batch_sizes)
    record.update({"served": int(served.shape[0]), "n": int(sizes.sum()), "shard_reads": opens,
                   "shards": sum(len(u) for u in urls), "batches": n_batches,
                   "spread_sd": float(minority.std()) if minority.size else 0.0})
    return record


def loader_rows_per_s(path: Path, plan, cache_shards: int, workers: int,
                      max_batches: int | None = None, per_message: int = 1) -> dict:
    """Wall-clock rows/s of the plan's batches through ShardBatchDataset and a DataLoader.

    The clock runs from the DataLoader's creation (workers start, footers
    are read) to the last batch, every column a tensor in this process.
    ``max_batches``: stop after that many batches (the time box).
    ``per_message``: the dataset's ``batches_per_message``; above 1 the
    batches are handed out one at a time by ``UnpackedBatches``.
    """
    from torch.utils.data import DataLoader

    from pystratum.shards import ParquetShards
    from pystratum.shards.torch import ShardBatchDataset, UnpackedBatches, table_tensors

    start = time.perf_counter()
    # G=1: tables cross from the workers (one pickled payload each) and become tensors here:
    # tensors made in a worker would cross through shared memory, one per column and batch.
    # G>1: one numpy array per column per message, made tensors here (transform=table_tensors).
    dataset = ShardBatchDataset(ParquetShards(str(path)), plan, cache_shards=cache_shards,
                                transform=table_tensors if per_message > 1 else None,
                                batches_per_message=per_message)
    # fork: the workers share the plan's arrays instead of each unpickling a copy
    loader = DataLoader(dataset, batch_size=None, num_workers=workers,
                        multiprocessing_context="fork" if workers else None)
    rows = batches = 0
    for item in (UnpackedBatches(loader) if per_message > 1 else loader):
        batch = item if per_message > 1 else table_tensors(item)
        rows += batch["label"].shape[0]
        batches += 1
        if max_batches is not None and batches >= max_batches:
            break
    seconds = time.perf_counter() - start
    del loader
    return {"rows": rows, "batches": batches, "seconds": seconds, "rows_per_s": rows / seconds}


class PreMade:
    """A pre-made message (``{name: array}``) that the DataLoader's conversion leaves alone."""

    __slots__ = ("columns", "batches")

    def __init__(self, columns, batches):
        self.columns, self.batches = columns, batches

    def __getstate__(self):
        return self.columns, self.batches

    def __setstate__(self, state):
        self.columns, self.batches = state


def loader_ceiling(path: Path, batch_rows: int, num_batches: int, workers: int,
                   per_message: int = 1) -> dict:
    """Rows/s of the same ``DataLoader`` serving one pre-made table of ``batch_rows`` rows per
    batch (no reading, no gather): the most any reader can reach through it here. With
    ``per_message`` > 1: one pre-made message of that many batches (one numpy array per
    column), cut into per-batch tensors here, as ``UnpackedBatches`` does."""
    import pyarrow as pa
    import pyarrow.parquet as pq
    import torch
    from torch.utils.data import DataLoader, IterableDataset, get_worker_info

    from pystratum.shards.torch import table_tensors

    head = pq.ParquetFile(path).read_row_group(0).slice(0, batch_rows)
    # its own buffers: a pickled slice would carry the whole row group's
    template = pa.Table.from_arrays([pa.array(column.to_numpy()) for column in head.columns],
                                    schema=head.schema)

    message = {name: np.concatenate([column.to_numpy()] * per_message)
               for name, column in zip(template.column_names, template.columns)}

    class Repeat(IterableDataset):
        def __iter__(self):
            info = get_worker_info()
            k, w = (1, 0) if info is None else (info.num_workers, info.id)
            count = num_batches * (w + 1) // k - num_batches * w // k
            if per_message > 1:
                return (PreMade(message, min(per_message, count - start))
                        for start in range(0, count, per_message))
            return (template for _ in range(count))

    start = time.perf_counter()
    rows = batches = 0
    for item in DataLoader(Repeat(), batch_size=None, num_workers=workers,
                           multiprocessing_context="fork"):
        if per_message == 1:
            rows += table_tensors(item)["label"].shape[0]
            batches += 1
            continue
        # the arrays cross pickled (as a message does), made tensors once, then sliced per batch
        columns = {name: torch.from_numpy(array.copy()) for name, array in item.columns.items()}
        for b in range(item.batches):
            batch = {name: column[b * batch_rows:(b + 1) * batch_rows]
                     for name, column in columns.items()}
            rows += batch["label"].shape[0]
            batches += 1
    seconds = time.perf_counter() - start
    return {"rows": rows, "batches": batches, "seconds": seconds, "rows_per_s": rows / seconds}


def end_to_end(path: Path, labels: np.ndarray, shard_rows: int, workers: int,
               random_batches: int, per_message=(32, 128)) -> dict:
    import pystratum
    from pystratum.policies import MinPerStratum

    n = labels.shape[0]
    sizes = np.diff(np.append(np.arange(0, n, shard_rows), n))
    log("end to end: sequential scan")
    scan = sequential_scan(path, 256)
    runs = [("sequential scan, `ParquetFile.iter_batches(256)`, 1 process, all columns to "
             "numpy", scan)]
    groups = [1] + [g for g in per_message if g > 1]
    for name, policy, window, group in [("MinPerStratum(8)", MinPerStratum(8), window, group)
                                        for group in groups for window in (1, 4)]:
        if group != 1 and not any(name.startswith("the same sequential scan, between")
                                  for name, _ in runs):
            log("end to end: sequential scan, between the G=1 and G>1 rows")
            runs.append(("the same sequential scan, between the G=1 and the G>1 rows",
                         sequential_scan(path, 256)))
        plan = pystratum.plan_batches(labels, policy, seed=SEED,
                                      shards=pystratum.shard_sizes(sizes), window=window)
        log(f"end to end: {name}, shards=, W={window}, G={group}")
        record = loader_rows_per_s(path, plan, 2 * window + 2, workers, per_message=group)
        how = ("G=1 (one batch per message, each an Arrow table, `table_tensors` here)"
               if group == 1 else
               f"G={group} (`batches_per_message={group}`, `transform=table_tensors`, "
               f"`UnpackedBatches`)")
        runs.append((f"`{name}`, `shards=`, W={window}, {how}: `ShardBatchDataset`, cache "
                     f"{2 * window + 2} shards per worker, `DataLoader({workers} workers)`, "
                     f"whole epoch ({record['batches']:,} batches)", record))
        del plan
    # The reader's own cost, no message between processes: one process reads, gathers and
    # unpacks (the work the workers share between the cores).
    plan = pystratum.plan_batches(labels, MinPerStratum(8), seed=SEED,
                                  shards=pystratum.shard_sizes(sizes), window=1)
    for group in groups[1:]:
        log(f"end to end: MinPerStratum(8), shards=, W=1, G={group}, no worker process")
        alone = loader_rows_per_s(path, plan, 4, 0, per_message=group)
        runs.append((f"`MinPerStratum(8)`, `shards=`, W=1, G={group}, the same in the main "
                     f"process (`num_workers=0`): reading (with Arrow's decoding threads, as "
                     f"the scan), gather and unpacking in one process, no message between "
                     f"processes", alone))
    del plan
    batch_rows = n // record["batches"]
    for group in groups:
        log(f"end to end: the DataLoader alone, {record['batches']:,} pre-made batches, "
            f"G={group}")
        ceiling = loader_ceiling(path, batch_rows, record["batches"], workers, group)
        what = (f"one pre-made {batch_rows}-row table per message, G=1" if group == 1 else
                f"one pre-made message of {group} batches of {batch_rows} rows (a numpy array "
                f"per column), cut into per-batch tensors here, G={group}")
        runs.append((f"`DataLoader({workers} workers)` alone: {what}, no reading and no "
                     f"gather (the ceiling for any reader through it on this machine)",
                     ceiling))
    plan = pystratum.plan_batches(labels, MinPerStratum(8), seed=SEED)
    log(f"end to end: row-random, {random_batches} batches")
    record = loader_rows_per_s(path, plan, 10, workers, max_batches=random_batches)
    epoch_s = record["seconds"] * plan.num_batches / max(1, record["batches"])
    runs.append((f"`MinPerStratum(8)` row-random (today's plan), same dataset and cache (10 "
                 f"shards per worker): **timed on its first {record['batches']} batches and "
                 f"extrapolated** to the epoch's {plan.num_batches:,} batches: "
                 f"~{epoch_s / 3600:,.1f} h", record))
    # The scan again in the middle and at the end: on a shared machine one scan can be several
    # times slower than another; the ratios are to the fastest, so a busy moment cannot
    # flatter them.
    log("end to end: sequential scan again")
    again = sequential_scan(path, 256)
    runs.append(("the same sequential scan again, after the runs above", again))
    scans = [record for name, record in runs if name.startswith(("sequential scan",
                                                                 "the same sequential scan"))]
    scan = max(scans, key=lambda record: record["rows_per_s"])
    return {"scan": scan, "runs": runs, "note": (
        f"Wall clock (the other jobs' load counts: the figures are ratios within this run, "
        f"to the fastest of the three scans). "
        f"{n:,} rows, all six columns decoded and made tensors in the main process; "
        f"G is the batches a worker sends per message: G=1 sends each batch as one Arrow "
        f"table (`table_tensors` in the loop), G>1 sends G consecutive batches of its run as "
        f"one numpy array per column, handed out one batch at a time (the same batches in "
        f"the same order as G=1) by `UnpackedBatches`. The `DataLoader` has {workers} worker "
        f"processes on {os.cpu_count()} cores, each serving one contiguous run of the "
        f"epoch's batches.")}


# --- report -------------------------------------------------------------------------------


def fmt_loads(x: float) -> str:
    return f"{x:,.0f}x" if x >= 100 else f"{x:,.2f}x"


def seconds(x: float) -> str:
    return f"{x:,.0f} s" if x >= 10 else f"{x:.1f} s"


def time_line(meta: dict, load_rows: list) -> str:
    """Where this run's time went, per layout: writing its file, building the plans, replaying
    them through the LRU; and the process's peak memory."""
    parts = []
    for layout in dict.fromkeys(r["layout"] for r in load_rows):
        rows = [r for r in load_rows if r["layout"] == layout and "refused" not in r]
        written = meta["write_s"].get(layout)
        parts.append(f"`{layout}` " + ("file reused" if written is None else
                                       f"file written in {seconds(written)}") +
                     f", {len(rows)} plans built in {seconds(sum(r['plan_s'] for r in rows))} "
                     f"and replayed in {seconds(sum(r['replay_s'] for r in rows))}")
    return (f"Time per part (wall clock, shared cores): {'; '.join(parts)}. Peak resident "
            f"memory of the run: {meta['peak_rss']:.1f} GB (one plan alive at a time).")


PEERS_HEADING = "### Peers on the same strata (2 strata, 3% / 97%)"  # as peer_lines writes it


def kept_parts(path: Path, section: str, heading_shift: int, skipped) -> str:
    """``section`` with the parts this run skipped (``--skip e2e`` / ``peers``) taken over from
    the section already in ``path``, so a partial run drops no table; a kept part that has no
    run line of its own gets one naming the run it came from."""
    text = path.read_text() if path.exists() else ""
    if START not in text or END not in text:
        return section
    old = text.split(START, 1)[1].split(END, 1)[0]
    old_run = next((line for line in old.splitlines() if line.startswith("Run: `")), "")
    old_run = old_run[len("Run: "):].split(";", 1)[0] + ")" if old_run else "an earlier run"
    subheading = "\n" + "#" * heading_shift + "### "
    if "loads" in skipped and subheading in old:
        # the title, run line and loads table stay; this run's parts follow, with its run line
        new_parts = section.split(START, 1)[1]
        cut = new_parts.find(subheading)
        new_parts = new_parts[cut:] if cut >= 0 else "\n\n" + END + new_parts.split(END, 1)[1]
        new_run = next((line for line in section.splitlines() if line.startswith("Run: `")), "")
        if cut >= 0 and new_run:
            heading, rest = new_parts.lstrip("\n").split("\n", 1)
            new_parts = (f"\n\n{heading}\n\nRun of this part alone: "
                         f"{new_run[len('Run: '):]}\n{rest}")
        section = START + old.split(subheading, 1)[0].rstrip("\n") + new_parts
    for key, heading in (("e2e", E2E_HEADING), ("peers", PEERS_HEADING)):
        heading = "#" * heading_shift + heading
        if key not in skipped or heading not in old or heading in section:
            continue
        level = heading.split(" ", 1)[0] + " "
        lines = old.split(heading, 1)[1].splitlines(keepends=True)
        stop = next((i for i, line in enumerate(lines) if line.startswith(level)), len(lines))
        part = heading + "".join(lines[:stop]).rstrip("\n")
        if "Run of this part" not in part and "Kept from" not in part:
            part = part.replace(heading, f"{heading}\n\nKept from {old_run}: not re-run with "
                                         f"the tables above (`--skip {key}`).", 1)
        # the end-to-end part goes before the peers, as a full run writes them
        later = "#" * heading_shift + PEERS_HEADING
        anchor = later if key == "e2e" and later in section else END
        head, tail = section.split(anchor, 1)
        section = head.rstrip("\n") + "\n\n" + part + "\n\n" + anchor + tail
    return section


def render(meta: dict, load_rows: list, e2e: dict | None, peers: dict | None) -> str:
    out = [START, "", "## Shard-aware plans on Parquet (`benchmarks/bench_shards_parquet.py`)", "",
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
            "(LRU size) | loads at LRU 64 | cache for one pass |",
            "|---|---|---|---|---|---|---|---|"]
    for r in load_rows:
        if "refused" in r:
            out.append(f"| {r['layout']} | `{r['policy']}` | {r['order']} | refused by the "
                       f"engine: {r['refused']} | | | | |")
            continue
        out.append(f"| {r['layout']} | `{r['policy']}` | {r['order']} | {r['batches']:,} | "
                   f"{r['per_batch'][0]:.1f} / {r['per_batch'][1]} | {fmt_loads(r['loads'])} "
                   f"({r['capacity']}) | {fmt_loads(r['loads_64'])} | {r['one_pass_cache']:,} |")
    out.append("")
    if load_rows:
        out += [time_line(meta, load_rows), ""]
    if e2e:
        out += e2e_lines(e2e)
    if peers:
        out += peer_lines(peers)
    out += ["", END]
    return "\n".join(out) + "\n"


def e2e_lines(e2e: dict) -> list:
    lines = [E2E_HEADING, ""]
    lines += [e2e.get("note", ""), "", "| reader | rows | seconds | rows/s | x the scan |",
              "|---|---|---|---|---|"]
    scan = e2e["scan"]["rows_per_s"]
    for name, record in e2e["runs"]:
        lines.append(f"| {name} | {record['rows']:,} | {record['seconds']:.1f} | "
                     f"{record['rows_per_s']:,.0f} | {record['rows_per_s'] / scan:.2f}x |")
    return lines + [""]


def peer_lines(peers: dict) -> list:
    lines = ["### Peers on the same strata (2 strata, 3% / 97%)", "", peers["note"], "",
             "| sampler | batches (rows each) | batches missing the 3% | 3% rows per batch, "
             "min / mean / max | rows served of N | shards | shard reads per epoch |",
             "|---|---|---|---|---|---|---|"]
    for name, record in peers["rows"]:
        if isinstance(record, str):
            lines.append(f"| {name} | {record} | | | | | |")
            continue
        low, mean, high = record["minority"]
        size = (f"{record['sizes'][0]}" if record["sizes"][0] == record["sizes"][1]
                else f"{record['sizes'][0]}-{record['sizes'][1]}")
        lines.append(f"| {name} | {record['batches']:,} ({size}) | {record['missing']:.1%} | "
                     f"{low} / {mean:.2f} / {high} | {record['served_share']} | "
                     f"{record['shards']:,} | {record['reads']} |")
    return lines + [""]


def peer_rows(args, n_peer: int, shard_rows: int, root: Path) -> dict:
    """The peers and pystratum on the `spread` strata at ``n_peer`` rows, one table's rows."""
    import pystratum
    from pystratum.policies import FixedSize

    labels = make_labels("spread", n_peer)
    n_shards = -(-n_peer // shard_rows)
    rows = []
    shard_of_row = (np.arange(n_peer) // shard_rows).astype(np.int32)
    for window in (1, 4):
        plan = pystratum.plan_batches(labels, FixedSize(256), seed=SEED,
                                      shards=pystratum.shard_sizes(
                                          np.diff(np.append(np.arange(0, n_peer, shard_rows),
                                                            n_peer))), window=window)
        minority = (labels[plan.order] == 1).astype(np.int64)
        counts = np.add.reduceat(minority, plan.bounds[:-1])
        record = composition(counts, np.diff(plan.bounds))
        profile = shard_load_profile(plan, shard_of_row)
        record.update({"served_share": f"{plan.order.shape[0] / n_peer:.1%}",
                       "shards": n_shards,
                       "reads": f"{profile.loads(2 * window + 2) / n_shards:.2f}x (LRU "
                                f"{2 * window + 2})"})
        rows.append((f"pystratum `FixedSize(256)`, `shards=`, W={window} (`spread` file, "
                     f"{n_shards:,} row groups)", record))
    try:
        mosaic = run_mosaic(args, labels, shard_rows, root)
        both = sum(r["distinct"] for r in mosaic["per_rank"]) / n_peer
        for rank, record in enumerate(mosaic["per_rank"]):
            record.update({"served_share": f"{record['distinct'] / n_peer:.1%} (both ranks "
                                           f"{both:.1%})",
                           "shards": mosaic["shards"],
                           "reads": f"{record['loads_4'] / mosaic['shards']:.2f}x (LRU 4), "
                                    f"{record['loads_64'] / mosaic['shards']:.2f}x (LRU 64); "
                                    f"{record['per_batch'][0]:.1f} shards per batch"})
            rows.append((f"Mosaic Streaming `batching_method=\"stratified\"`, rank {rank} of "
                         f"{mosaic['ranks']} (`batch_size={mosaic['batch_per_rank']}` per rank, "
                         f"one MDS stream per stratum, proportions = shares)", record))
    except Exception as error:  # a peer that does not run is reported, not fatal
        rows.append(("Mosaic Streaming", f"did not run: {type(error).__name__}: {error}"))
    try:
        record = run_webdataset(labels, shard_rows, root)
        record.update({"served_share": f"{record['served'] / n_peer:.1%}",
                       "reads": f"{record['shard_reads'] / record['shards']:.2f}x "
                                f"(spread of the 3% count: sd {record['spread_sd']:.2f})"})
        rows.append(("WebDataset `RandomMix` (one `WebDataset` per stratum, "
                     "`shardshuffle`, `shuffle(1000)`, probs = shares), cut into 256", record))
    except Exception as error:
        rows.append(("WebDataset RandomMix", f"did not run: {type(error).__name__}: {error}"))
    return {"rows": rows, "note": (
        f"At {n_peer:,} rows and {shard_rows:,} rows per shard (writing one MDS sample or one "
        "tar member at a time in Python makes 10^8 rows too slow here). The peers' shards hold "
        "one stratum each; pystratum reads the `spread` Parquet layout. Mosaic: two ranks "
        "simulated by two processes (RANK, WORLD_SIZE, LOCAL_RANK, LOCAL_WORLD_SIZE), each "
        "iterating its `StreamingDataset` in order; a rank's batch is its next `batch_size` "
        "samples. Shard reads: the LRU replay above over each rank's own samples (Mosaic "
        "keeps whole shards on local disk, so this counts shard openings, not downloads); "
        "WebDataset: the tar shards opened, each read sequentially.")}


def write_section(path: Path, section: str, heading_shift: int = 0, *, start: str = START,
                  end: str = END) -> None:
    """Replaces the text between the markers ``start`` and ``end`` (this script's by default) in
    ``path``, or appends the section."""
    if heading_shift:
        section = "\n".join("#" * heading_shift + line if line.startswith("#") else line
                            for line in section.splitlines()) + "\n"
    text = path.read_text() if path.exists() else ""
    if start in text and end in text:
        head, rest = text.split(start, 1)
        text = head + section.rstrip("\n") + rest.split(end, 1)[1]
    else:
        text = text.rstrip("\n") + "\n\n" + section
    path.write_text(text)


E2E_HEADING = "### End to end: rows/s on the `spread` file"


def e2e_alone(meta: dict, e2e: dict) -> str:
    """The end-to-end part on its own (``--skip loads peers``), with its own run line."""
    lines = e2e_lines(e2e)
    lines[1:1] = ["", f"Run of this part alone: `{meta['command']}` ({meta['date']}; "
                      f"{meta['load']} at the start, {meta['load_end']} at the end, on "
                      f"{meta['cores']} cores shared with other jobs); the tables above come "
                      f"from the run named at the top of this section."]
    return "\n".join(lines)


def write_part(path: Path, part: str, heading_shift: int = 0) -> None:
    """Replaces the end-to-end part inside the section of ``path`` (up to the next heading
    of its level or the section's end), keeping the rest of the section; appends the whole
    section when there is none."""
    if heading_shift:
        part = "\n".join("#" * heading_shift + line if line.startswith("#") else line
                         for line in part.splitlines())
    text = path.read_text() if path.exists() else ""
    if START not in text or END not in text:
        write_section(path, f"{START}\n\n{part.rstrip()}\n\n{END}\n", heading_shift=0)
        return
    head, rest = text.split(START, 1)
    body, tail = rest.split(END, 1)
    heading = "#" * heading_shift + E2E_HEADING
    level = heading.split(" ", 1)[0] + " "
    if heading in body:
        before, after = body.split(heading, 1)
        stop = [i for i, line in enumerate(after.splitlines(keepends=True))
                if line.startswith(level)]
        after = "".join(after.splitlines(keepends=True)[stop[0]:]) if stop else "\n"
        body = before + part.rstrip("\n") + "\n\n" + after.lstrip("\n")
    else:
        body = body.rstrip("\n") + "\n\n" + part.rstrip("\n") + "\n\n"
    path.write_text(head + START + body + END + tail)


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=float, default=None, help="default 1e8 (1e6 with --quick)")
    parser.add_argument("--quick", action="store_true",
                        help="10^6 rows and 10^5 for the peers, unless --rows / --peer-rows")
    parser.add_argument("--out", type=Path, default=FOCUSED,
                        help="results file the section goes into (default: "
                             "benchmarks/results_focused.md, and then results.md too)")
    parser.add_argument("--shard-rows", type=float, default=None,
                        help="rows per shard (row group); default rows / 1000")
    parser.add_argument("--cache-dir", type=Path,
                        default=Path(tempfile.gettempdir()) / "pystratum-bench-shards")
    parser.add_argument("--peer-rows", type=float, default=None,
                        help="rows for the peers (default 1e6, 1e5 with --quick)")
    parser.add_argument("--peer-path", type=Path, default=None)
    parser.add_argument("--workers", type=int, default=4)
    parser.add_argument("--note", default="", help="a sentence for the results (e.g. why a size)")
    parser.add_argument("--per-message", type=int, nargs="+", default=[32, 128],
                        help="batches per message (G) of the grouped end-to-end rows")
    parser.add_argument("--random-batches", type=int, default=8,
                        help="batches the row-random plan is timed on (then extrapolated)")
    parser.add_argument("--skip", nargs="*", default=[], choices=["loads", "e2e", "peers"])
    parser.add_argument("--mosaic-rank", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--mosaic-batch", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--mosaic-streams", nargs="*", help=argparse.SUPPRESS)
    parser.add_argument("--mosaic-proportions", nargs="*", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.mosaic_rank:
        mosaic_rank(args)
        return
    n = int(args.rows) if args.rows else (10**6 if args.quick else 10**8)
    shard_rows = int(args.shard_rows) if args.shard_rows else max(100, n // 1000)
    args.cache_dir.mkdir(parents=True, exist_ok=True)
    # the folders' own names stay out of the results: they are this machine's
    # and the note, printed after the run line anyway, is shown as "..."
    command = [("DIR" if previous in ("--peer-path", "--cache-dir", "--out") else
                '"..."' if previous == "--note" else word)
               for previous, word in zip([""] + list(argv or sys.argv[1:]),
                                         list(argv or sys.argv[1:]))]
    meta = {"command": "python benchmarks/bench_shards_parquet.py " + " ".join(command),
            "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), "load": load_average(),
            "cores": os.cpu_count(), "rows": n, "shard_rows": shard_rows,
            "shards": -(-n // shard_rows),
            "own_shards": -(-minority_rows(n) // shard_rows), "size_note": args.note}
    load_rows = []
    e2e = peers = None
    meta["write_s"] = {}

    def write(final: bool) -> str:
        # written after each part, so that a run stopped early leaves what it measured
        meta["load_end"] = load_average() + ("" if final else " (run still going)")
        meta["peak_rss"] = peak_rss_gb()
        section = render(meta, load_rows, e2e, peers)
        write_section(args.out, kept_parts(args.out, section, 0, args.skip))
        if args.out.resolve() == FOCUSED.resolve():
            shifted = "\n".join("#" + line if line.startswith("#") else line
                                for line in section.splitlines()) + "\n"
            write_section(REPORT, kept_parts(REPORT, shifted, 1, args.skip))
        return section

    for layout in ("spread", "own", "tail"):
        labels = make_labels(layout, n)
        log(f"writing / checking {layout} ({n:,} rows)")
        start = time.perf_counter()
        if write_dataset(dataset_path(args.cache_dir, layout, n, shard_rows), labels, shard_rows):
            meta["write_s"][layout] = time.perf_counter() - start
        if "loads" not in args.skip:
            load_rows += shard_load_rows(layout, labels, shard_rows)
            write(False)  # after each layout: a run stopped early keeps the layouts it did
        del labels
    if "peers" not in args.skip:
        n_peer = int(args.peer_rows) if args.peer_rows else (10**5 if args.quick else 10**6)
        log(f"peers at {n_peer:,} rows")
        peers = peer_rows(args, n_peer, max(100, n_peer // 1000), args.cache_dir)
        write(False)
    if "e2e" not in args.skip:
        path = dataset_path(args.cache_dir, "spread", n, shard_rows)
        e2e = end_to_end(path, make_labels("spread", n), shard_rows, args.workers,
                         args.random_batches, args.per_message)
    if {"loads", "peers"} <= set(args.skip):
        # the end-to-end part alone: it replaces its own part, the other tables stay
        meta["load_end"] = load_average()
        part = e2e_alone(meta, e2e) if e2e else ""
        if part:
            write_part(args.out, part)
            if args.out.resolve() == FOCUSED.resolve():
                write_part(REPORT, part, heading_shift=1)
        print(part)
        return
    print(write(True))


if __name__ == "__main__":
    main()
