"""The DDP worker of the message tests: several batches per DataLoader message under gloo."""

from __future__ import annotations

import numpy as np


def ddp_messages_worker(config):
    """A gloo group: each rank serves an epoch, batches_per_message > 1, through UnpackedBatches;
    then part of the next epoch, a state saved inside a message, broadcast from rank 0, and a
    fresh loader on every rank resumes from it."""
    from datetime import timedelta

    import torch.distributed as dist
    from torch.utils.data import DataLoader

    from pystratum.policies import MinPerStratum
    from pystratum.shards import ParquetShards
    from pystratum.shards.torch import ShardBatchDataset, UnpackedBatches
    from pystratum.torch import StratifiedBatchSampler

    dist.init_process_group("gloo", init_method="env://", timeout=timedelta(seconds=60))
    try:
        labels = np.asarray(config["labels"])

        def loader():
            reader = ParquetShards(config["directory"], ["row"])
            sampler = StratifiedBatchSampler(labels, MinPerStratum(config["m"]),
                                             seed=config["seed"])
            dataset = ShardBatchDataset(reader, sampler, with_rows=True,
                                        batches_per_message=config["per_message"])
            return dataset, UnpackedBatches(DataLoader(dataset, batch_size=None,
                                                       num_workers=config["num_workers"]))

        dataset, batches = loader()
        full = [rows.tolist() for rows, _ in batches]
        dataset.set_epoch(1)
        head = []
        for rows, _ in batches:
            head.append(rows.tolist())
            if len(head) == config["stop"]:
                break
        saved = [batches.state_dict()]
        dist.broadcast_object_list(saved, src=0)  # rank 0's state resumes every rank
        dataset, resumed = loader()
        resumed.load_state_dict(saved[0])
        rest = [rows.tolist() for rows, _ in resumed]
        dist.barrier()
        return {"rank": dist.get_rank(), "len": len(batches), "epoch0": full, "head": head,
                "rest": rest}
    finally:
        dist.destroy_process_group()
