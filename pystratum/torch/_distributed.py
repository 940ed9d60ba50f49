"""Which rank this is, of how many, and the one seed every rank must share.

Defaults come from ``torch.distributed`` when a process group is
initialised, else one replica. A missing seed is drawn once: by this process
alone, or under a process group by rank 0 and broadcast, since ranks that
disagree on the seed serve overlapping batches.
"""

from __future__ import annotations

import numpy as np
import torch
import torch.distributed as dist

from ..streams._base import fresh_int32_seed
from ..base._validation import check_int

__all__ = ["initialised_world_size", "resolve_replicas", "resolve_seed", "broadcast_from_rank0",
           "broadcast_object_from_rank0"]


def initialised_world_size():
    """The process group's world size, or None without an initialised group."""
    if dist.is_available() and dist.is_initialized():
        return dist.get_world_size()
    return None


def resolve_replicas(num_replicas, rank) -> tuple[int, int]:
    """``(num_replicas, rank)``, validated; None takes the process group's value.

    Without a process group, ``num_replicas`` defaults to 1 and ``rank`` must
    be given when ``num_replicas > 1``.
    """
    world = initialised_world_size()
    if num_replicas is None:
        num_replicas = world if world is not None else 1
    num_replicas = check_int(num_replicas, "num_replicas", minimum=1)
    if rank is None:
        if world is not None:
            rank = dist.get_rank()
        elif num_replicas == 1:
            rank = 0
        else:
            raise ValueError(
                f"rank must be given with num_replicas={num_replicas} when torch.distributed is "
                f"not initialised: pass rank=<this process's rank in [0, {num_replicas})>."
            )
    rank = check_int(rank, "rank", minimum=0)
    if rank >= num_replicas:
        raise ValueError(
            f"rank must be in [0, num_replicas), got rank={rank} with "
            f"num_replicas={num_replicas}. Pass rank=<0..{num_replicas - 1}> or a larger "
            f"num_replicas."
        )
    return num_replicas, rank


def resolve_seed(seed, num_replicas: int):
    """The seed to shuffle with: ``seed`` itself, or one drawn (and shared) when it is None.

    A numpy Generator is refused: the sampler recomputes any epoch (resume,
    ``set_epoch``, other ranks), which an advancing generator cannot give.
    """
    if isinstance(seed, np.random.Generator):
        raise TypeError(
            "seed must be an int (or None, or a numpy SeedSequence with rng='numpy'), got a "
            "numpy Generator: the sampler must be able to recompute any epoch (resume, "
            "set_epoch, other ranks), which a Generator's advancing state cannot. Pass "
            "seed=<int>."
        )
    if seed is not None:
        return seed
    world = initialised_world_size()
    if world is not None and world > 1:
        return broadcast_from_rank0(fresh_int32_seed())
    if num_replicas > 1:
        raise ValueError(
            f"seed=None with num_replicas={num_replicas} and no initialised "
            f"torch.distributed process group: each rank would draw its own seed, so ranks "
            f"would disagree on the batches (rows repeated or never seen). Pass the same "
            f"seed=<int> on every rank, or initialise torch.distributed first (rank 0's "
            f"seed is then broadcast)."
        )
    return fresh_int32_seed()


def broadcast_from_rank0(value: int) -> int:
    """Rank 0's ``value`` on every rank (a collective: every rank must call it)."""
    device = torch.device("cpu")
    if dist.get_backend() == "nccl":
        device = torch.device("cuda", torch.cuda.current_device())
    tensor = torch.tensor([value], dtype=torch.int64, device=device)
    dist.broadcast(tensor, src=0)
    return int(tensor.item())


def broadcast_object_from_rank0(value):
    """Rank 0's picklable ``value`` on every rank (a collective: every rank must call it)."""
    holder = [value if dist.get_rank() == 0 else None]
    dist.broadcast_object_list(holder, src=0)
    return holder[0]
