"""Shard loads per epoch of the readers (pystratum.shards) through a real DataLoader.

Writes Parquet files (row groups of ``--shard-rows`` rows are the shards;
a 5% stratum spread over all of them) to a temporary folder, then serves
two epochs of each policy through ``ShardBatchDataset`` and a
``DataLoader`` with 0 and 2 workers (persistent), each worker an LRU cache
of ``2 * window + 2`` decoded shards: the plan row-random, then shard-aware
(``shards=``, ``window=``). Every ``ParquetShards.load`` is counted, in all
worker processes. Prints a Markdown table.

Run: ``python benchmarks/bench_shard_readers.py`` (about two minutes), e.g.
``--rows 200000 --shard-rows 1000 --window 4`` for a larger case.
"""

from __future__ import annotations

import argparse
import os
import tempfile
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
from torch.utils.data import DataLoader

import pystratum
from pystratum.policies import FixedSize, MinPerStratum, Targets
from pystratum.shards import ParquetShards
from pystratum.shards.torch import ShardBatchDataset


class CountedShards(ParquetShards):
    """ParquetShards whose loads are appended to a file, so worker processes count too."""

    def __init__(self, *args, log, **kwargs):
        super().__init__(*args, **kwargs)
        self.log = str(log)

    def load(self, shard):
        with open(self.log, "a") as handle:
            handle.write(f"{shard}\n")
        return super().load(shard)


def count_lines(path) -> int:
    return len(Path(path).read_text().splitlines()) if Path(path).exists() else 0


def write_data(folder: Path, rows: int, shard_rows: int, seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    labels = (rng.random(rows) < 0.05).astype(np.int64)
    table = pa.table({"label": labels, "x": rng.normal(size=rows).astype(np.float32)})
    half = rows // 2
    pq.write_table(table.slice(0, half), folder / "part-0.parquet", row_group_size=shard_rows)
    pq.write_table(table.slice(half), folder / "part-1.parquet", row_group_size=shard_rows)
    return labels


def epoch_loads(folder, labels, policy, window, workers, epochs, log):
    reader = CountedShards(folder, ["label", "x"], log=log)
    shards = {} if window is None else {"shards": pystratum.shard_sizes(reader.shard_sizes),
                                        "window": window}

    def plans(epoch):
        return pystratum.plan_batches(labels, policy, seed=1, epoch=epoch, **shards)

    cache = 2 * (window or 1) + 2
    dataset = ShardBatchDataset(reader, plans, cache_shards=cache)
    loader = DataLoader(dataset, batch_size=None, num_workers=workers,
                        persistent_workers=workers > 0)
    loads = []
    for epoch in range(epochs):
        dataset.set_epoch(epoch)
        before = count_lines(log)
        batches = sum(1 for _ in loader)
        loads.append(count_lines(log) - before)
    return batches, loads, len(reader.shard_sizes)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=20_000)
    parser.add_argument("--shard-rows", type=int, default=500)
    parser.add_argument("--window", type=int, default=2)
    parser.add_argument("--epochs", type=int, default=2)
    args = parser.parse_args()
    policies = (MinPerStratum(8), FixedSize(256), Targets({0: 0.5, 1: 0.5}, 256))
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp) / "data"
        folder.mkdir()
        labels = write_data(folder, args.rows, args.shard_rows)
        print(f"{args.rows:,} rows, shards of {args.shard_rows} rows, window {args.window}, "
              f"cache {2 * args.window + 2} shards per worker\n")
        print("| policy | batches | workers | row-random loads per epoch | shard-aware loads "
              "per epoch |")
        print("|---|---|---|---|---|")
        for policy in policies:
            for workers in (0, 2):
                cells = []
                for window in (None, args.window):
                    log = Path(tmp) / f"loads-{os.getpid()}-{policy.name}-{workers}-{window}.log"
                    batches, loads, n_shards = epoch_loads(folder, labels, policy, window,
                                                           workers, args.epochs, log)
                    cells.append(", ".join(str(n) for n in loads))
                print(f"| {policy.name} | {batches} | {workers} | {cells[0]} | {cells[1]} |")
        print(f"\n{n_shards} shards; loads listed epoch by epoch.")


if __name__ == "__main__":
    main()
