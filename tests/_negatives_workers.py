"""Worker processes of the generated-negatives DDP test (run by _torch_helpers.run_ranks)."""

from __future__ import annotations


def ddp_negatives_worker(config):
    """A 2-rank gloo group: a tiny embedding model trained with DDP on the batches of a
    NegativePairBatchSampler per stream in ``config["rngs"]`` (seed broadcast from rank 0,
    DataLoader workers); returns every batch each rank served."""
    from datetime import timedelta

    import numpy as np
    import torch
    import torch.distributed as dist
    from torch.nn.parallel import DistributedDataParallel

    from pystratum.negatives.torch import NegativePairBatchSampler, pair_loader

    dist.init_process_group("gloo", init_method="env://", timeout=timedelta(seconds=60))
    users = np.asarray(config["users"])
    items = np.asarray(config["items"])
    runs = []
    for rng in config["rngs"]:
        sampler = NegativePairBatchSampler(users, items, num_items=config["num_items"],
                                           negatives=config["negatives"],
                                           batch_size=config["batch_size"], rng=rng)
        loader = pair_loader(sampler, num_workers=config["num_workers"])
        torch.manual_seed(0)
        model = DistributedDataParallel(torch.nn.EmbeddingBag(config["num_items"] + 64, 4))
        optimizer = torch.optim.SGD(model.parameters(), lr=0.05)
        epochs = []
        for epoch in range(config["epochs"]):
            sampler.set_epoch(epoch)  # several replicas: the epoch moves only through set_epoch
            served = []
            for batch in loader:
                _train_step(model, optimizer, batch)
                served.append({"positive": batch["positive"].tolist(),
                               "user": batch["user"].tolist(), "item": batch["item"].tolist()})
            epochs.append(served)
        runs.append({"rng": rng, "seed": sampler.seed, "len": len(sampler), "epochs": epochs})
    return {"rank": dist.get_rank(), "runs": runs}


def ddp_negatives_peek_worker(config):
    """A 2-rank gloo group where rank ``peek_rank`` takes one extra batch (a sanity check)
    before the loop of epoch ``peek_epoch``; ``set_epoch`` (through the ``.sampler``
    hook Lightning calls) or not. A DDP model steps on every batch, so ranks that
    disagreed on the number of batches would hang (and fail by timeout)."""
    import warnings
    from datetime import timedelta

    import numpy as np
    import torch
    import torch.distributed as dist
    from torch.nn.parallel import DistributedDataParallel

    from pystratum.negatives.torch import NegativePairBatchSampler, pair_loader

    dist.init_process_group("gloo", init_method="env://", timeout=timedelta(seconds=60))
    # The group is left by worker_main, after the result is written.
    rank = dist.get_rank()
    sampler = NegativePairBatchSampler(np.asarray(config["users"]),
                                       np.asarray(config["items"]),
                                       num_items=config["num_items"],
                                       negatives=config["negatives"],
                                       batch_size=config["batch_size"], rng=config["rng"])
    loader = pair_loader(sampler, num_workers=config["num_workers"])
    torch.manual_seed(0)
    model = DistributedDataParallel(torch.nn.EmbeddingBag(config["num_items"] + 64, 4))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05)
    epochs, peeked = [], None
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for epoch in range(config["epochs"]):
            if config["set_epoch"]:
                sampler.sampler.set_epoch(epoch)
            if rank == config["peek_rank"] and epoch == config["peek_epoch"]:
                peeked = next(iter(loader))["positive"].tolist()
            served = []
            for batch in loader:
                _train_step(model, optimizer, batch)
                served.append({"positive": batch["positive"].tolist(),
                               "item": batch["item"].tolist()})
            epochs.append(served)
    dist.barrier()
    return {"rank": rank, "seed": sampler.seed, "len": len(sampler), "epochs": epochs,
            "peeked": peeked, "epoch_after": sampler.epoch,
            "weight": model.module.weight.detach().flatten().tolist(),
            "warnings": [str(w.message) for w in caught if "set_epoch" in str(w.message)]}


def _train_step(model, optimizer, batch):
    """One DDP step of a tiny user/item embedding model on a batch of pair_loader (a DDP
    step all-reduces, so ranks serving different numbers of batches would hang)."""
    import torch

    score = model(torch.stack([batch["user"], batch["item"] + 64], 1)).sum(1)
    loss = torch.nn.functional.binary_cross_entropy_with_logits(
        score, batch["label"], weight=batch["weight"])
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
