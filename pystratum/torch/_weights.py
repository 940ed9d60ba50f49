"""Importance weights to the loss: a dataset wrapper returning ``(*item, weight)``."""

from __future__ import annotations

import numpy as np
import torch
from torch.utils.data import Dataset

from ..engine._plan import row_weights

__all__ = ["WeightedDataset"]


class WeightedDataset(Dataset):
    """``dataset[i]`` followed by row ``i``'s importance weight (a 0-d tensor, float32 by default).

    Use it with a sampler whose policy has weights
    (:class:`pystratum.policies.Targets`, :class:`pystratum.policies.Downsample`)::

        sampler = StratifiedBatchSampler(y, Targets("balanced", 64))
        loader = DataLoader(WeightedDataset.for_sampler(train_set, sampler),
                            batch_sampler=sampler)
        for x, y, w in loader:
            loss = (w * loss_fn(model(x), y, reduction="none")).mean()

    ``Targets``' weights make that weighted mean estimate the mean loss on
    the data's own class distribution; ``Downsample``'s (``N_s / kept_s``)
    make the weighted sum over an epoch estimate the full data's loss sum.
    The policies' weights depend on a row's stratum only, never on the epoch,
    so one per-row table serves every epoch and rank. Guarantee: item ``i``
    is ``(*dataset[i], weights[i])`` (a non-tuple item ``x`` gives ``(x,
    weight)``), so the default collate stacks the weights into a tensor
    aligned with the batch. ``dtype``: the weights' torch dtype (float32 by
    default, so a float32 loss is not upcast).
    """

    def __init__(self, dataset, weights, *, dtype=torch.float32):
        dtype = _check_dtype(dtype)
        weights = np.asarray(weights, dtype=np.float64)
        if weights.ndim != 1 or weights.shape[0] != len(dataset):
            raise ValueError(
                f"weights must hold one weight per row of dataset ({len(dataset)}), got an "
                f"array of shape {weights.shape}. Use WeightedDataset.for_sampler(dataset, "
                f"sampler) to take them from the sampler's policy."
            )
        self.dataset = dataset
        self.weights = torch.from_numpy(weights).to(dtype)

    @classmethod
    def for_sampler(cls, dataset, sampler, *, dtype=torch.float32) -> "WeightedDataset":
        """The wrapper with the weights of ``sampler``'s strata and policy.

        ``sampler``: a :class:`StratifiedBatchSampler` or :class:`StratifiedSampler`.
        A policy without importance weights (``MinPerStratum``, ``FixedSize``:
        every row would weigh 1) is a ValueError naming it: weights of 1 would
        hide a sampler that was meant to carry them.
        """
        inner = getattr(sampler, "batch_sampler", sampler)  # the sampler= face's batches
        policy = inner.policy
        allocation = policy.allocate(inner._strata, 0)  # weights never depend on the epoch
        if allocation.slots is not None or allocation.row_weights is None:
            raise ValueError(
                f"sampler's policy {policy!r} has no importance weights: every row would "
                f"weigh 1.0, and WeightedDataset would change nothing. Use a policy that "
                f"re-samples and weighs (Targets, Downsample), or pass the dataset to the "
                f"DataLoader unwrapped.")
        return cls(dataset, row_weights(inner._strata, policy), dtype=dtype)

    def __len__(self) -> int:
        return len(self.dataset)

    def __getitem__(self, index):
        item = self.dataset[index]
        weight = self.weights[index]
        if isinstance(item, tuple):
            return (*item, weight)
        return item, weight


def _check_dtype(dtype):
    if not isinstance(dtype, torch.dtype) or not dtype.is_floating_point:
        raise TypeError(f"dtype must be a floating torch.dtype (torch.float32, torch.float64, "
                        f"...), got dtype={dtype!r}.")
    return dtype
