"""Worker processes of the shard tests (started by ``_torch_helpers.run_ranks``)."""

from __future__ import annotations

import numpy as np


def ddp_shards_worker(config):
    """Plain DDP (gloo): a sharded sampler through a DataLoader on every rank."""
    from datetime import timedelta

    import torch
    import torch.distributed as dist
    from torch.utils.data import DataLoader, TensorDataset

    from pystratum import shard_sizes
    from pystratum.policies import policy_from_params
    from pystratum.torch import StratifiedBatchSampler

    dist.init_process_group("gloo", init_method="env://", timeout=timedelta(seconds=60))
    try:
        labels = np.asarray(config["labels"])
        policy = policy_from_params(config["policy"]["name"], config["policy"]["params"])
        sampler = StratifiedBatchSampler(labels, policy, seed=config["seed"], rng=config["rng"],
                                         shards=shard_sizes(config["shard_sizes"]),
                                         window=config["window"])
        loader = DataLoader(TensorDataset(torch.arange(len(labels))), batch_sampler=sampler)
        epochs = []
        for epoch in range(config["epochs"]):
            sampler.set_epoch(epoch)
            epochs.append([index.tolist() for (index,) in loader])
        dist.barrier()
        return {"rank": dist.get_rank(), "epochs": epochs, "length": len(sampler)}
    finally:
        dist.destroy_process_group()
