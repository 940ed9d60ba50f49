"""Readers that log their loads, Parquet test data, and the DDP worker of the shard tests."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np

from pystratum.shards import ParquetShards


class LoggedParquetShards(ParquetShards):
    """ParquetShards that appends ``"<pid> <shard>"`` to ``log`` on every load (any process)."""

    def __init__(self, *args, log, **kwargs):
        super().__init__(*args, **kwargs)
        self.log = str(log)

    def load(self, shard):
        with open(self.log, "a") as handle:
            handle.write(f"{os.getpid()} {shard}\n")
        return super().load(shard)


def logged_loads(log) -> np.ndarray:
    """The shards loaded, in the order logged (all processes)."""
    path = Path(log)
    if not path.exists():
        return np.zeros(0, dtype=np.int64)
    return np.array([int(line.split()[1]) for line in path.read_text().splitlines()],
                    dtype=np.int64)


def write_shards(directory, labels, *, group_rows: int, files: int = 2) -> None:
    """``labels`` with a ``row`` column and a feature, as Parquet files of row groups."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    labels = np.asarray(labels)
    n_rows = labels.shape[0]
    table = pa.table({"row": np.arange(n_rows), "label": labels,
                      "x": np.random.default_rng(0).random(n_rows).astype(np.float32)})
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    per_file = n_rows // files
    for f in range(files):
        stop = n_rows if f == files - 1 else (f + 1) * per_file
        pq.write_table(table.slice(f * per_file, stop - f * per_file),
                       directory / f"part-{f}.parquet", row_group_size=group_rows)


def ddp_shards_worker(config):
    """A gloo group: each rank serves its contiguous run of a shard-blocked plan through a
    DataLoader (``num_workers`` workers) and trains a tiny DDP model on it."""
    from datetime import timedelta

    import torch
    import torch.distributed as dist
    from torch.nn.parallel import DistributedDataParallel
    from torch.utils.data import DataLoader

    from _reader_data import shard_blocked_plans
    from pystratum.policies import MinPerStratum
    from pystratum.shards.torch import ShardBatchDataset, table_tensors

    dist.init_process_group("gloo", init_method="env://", timeout=timedelta(seconds=60))
    try:
        rank = dist.get_rank()
        log = Path(config["log_dir"]) / f"loads-rank{rank}.log"
        reader = LoggedParquetShards(config["directory"], ["row", "label", "x"], log=log)
        labels = np.asarray(config["labels"])
        plans = shard_blocked_plans(labels, MinPerStratum(config["m"]), reader.shard_sizes,
                                    window=config["window"], seed=config["seed"])
        dataset = ShardBatchDataset(reader, plans, cache_shards=2 * config["window"] + 2,
                                    transform=table_tensors, with_rows=True,
                                    n_rows=labels.shape[0])
        loader = DataLoader(dataset, batch_size=None, num_workers=config["num_workers"])
        torch.manual_seed(0)
        model = DistributedDataParallel(torch.nn.Linear(1, 1))
        optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
        epochs = []
        for epoch in range(config["epochs"]):
            dataset.set_epoch(epoch)
            served = []
            for rows, batch in loader:
                assert batch["row"].tolist() == rows.tolist()
                loss = torch.nn.functional.binary_cross_entropy_with_logits(
                    model(batch["x"].unsqueeze(1)).squeeze(1), batch["label"].float())
                optimizer.zero_grad()
                loss.backward()
                optimizer.step()
                served.append(rows.tolist())
            epochs.append(served)
        dist.barrier()
        return {"rank": rank, "len": len(dataset), "epochs": epochs,
                "loads": logged_loads(log).tolist(),
                "weight": model.module.weight.detach().reshape(-1).tolist()}
    finally:
        dist.destroy_process_group()


def ddp_resume_worker(config):
    """A gloo group: each rank serves ``config["whole_epochs"]`` whole epochs (default none),
    then part of epoch ``config["epoch"]``; a fresh loader on every rank resumes from rank 0's
    saved state (broadcast). The loader is a StatefulDataLoader, or with
    ``config["per_message"] > 1`` a DataLoader whose workers send that many batches per
    message, read and resumed through UnpackedBatches (the stop then falls inside a message)."""
    from datetime import timedelta

    import torch.distributed as dist
    from torch.utils.data import DataLoader
    from torchdata.stateful_dataloader import StatefulDataLoader

    from _reader_data import head_rows
    from pystratum.policies import MinPerStratum
    from pystratum.shards.torch import ShardBatchDataset, UnpackedBatches
    from pystratum.torch import StratifiedBatchSampler

    dist.init_process_group("gloo", init_method="env://", timeout=timedelta(seconds=60))
    try:
        labels = np.asarray(config["labels"])
        per_message = config.get("per_message", 1)

        def loader():
            reader = ParquetShards(config["directory"], ["row"])
            sampler = StratifiedBatchSampler(labels, MinPerStratum(config["m"]), seed=config["seed"])
            dataset = ShardBatchDataset(reader, sampler, with_rows=True,
                                        batches_per_message=per_message)
            if per_message > 1:
                return dataset, UnpackedBatches(DataLoader(dataset, batch_size=None,
                                                           num_workers=config["num_workers"]))
            return dataset, StatefulDataLoader(dataset, batch_size=None,
                                               num_workers=config["num_workers"])

        dataset, first = loader()
        whole = []
        for epoch in range(config.get("whole_epochs", 0)):
            dataset.set_epoch(epoch)
            whole.append([rows.tolist() for rows, _ in first])
        dataset.set_epoch(config["epoch"])
        head = head_rows(first, config["stop"])
        saved = [first.state_dict()]
        dist.broadcast_object_list(saved, src=0)  # rank 0's state resumes every rank
        dataset, resumed = loader()
        resumed.load_state_dict(saved[0])
        rest = [rows.tolist() for rows, _ in resumed]
        dist.barrier()
        return {"rank": dist.get_rank(), "len": len(dataset), "whole": whole, "head": head,
                "rest": rest}
    finally:
        dist.destroy_process_group()
