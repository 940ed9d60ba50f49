"""Importance weights to the loss: a dataset wrapper returning ``(*item, weight)``."""

from __future__ import annotations

import numpy as np
import torch
from torch.utils.data import Dataset

from .._plan import row_weights

__all__ = ["WeightedDataset"]


class WeightedDataset(Dataset):
    """``dataset[i]`` followed by row ``i``'s importance weight (a float64 0-d tensor).

    Use it with a sampler whose policy has weights
    (:class:`pystratum.policies.Downsample`)::

        sampler = StratifiedBatchSampler(y, Downsample({0: 0.1}, Targets("balanced", 64)))
        loader = DataLoader(WeightedDataset.for_sampler(train_set, sampler),
                            batch_sampler=sampler)
        for x, y, w in loader:
            loss = (w * loss_fn(model(x), y, reduction="none")).sum() / len(train_set)

    The policies' weights depend on a row's stratum only, never on the epoch,
    so one per-row table serves every epoch and rank. Guarantee: item ``i``
    is ``(*dataset[i], weights[i])`` (a non-tuple item ``x`` gives ``(x,
    weight)``), so the default collate stacks the weights into a tensor
    aligned with the batch.
    """

    def __init__(self, dataset, weights):
        weights = np.asarray(weights, dtype=np.float64)
        if weights.ndim != 1 or weights.shape[0] != len(dataset):
            raise ValueError(
                f"weights must hold one weight per row of dataset ({len(dataset)}), got an "
                f"array of shape {weights.shape}. Use WeightedDataset.for_sampler(dataset, "
                f"sampler) to take them from the sampler's policy."
            )
        self.dataset = dataset
        self.weights = torch.from_numpy(weights)

    @classmethod
    def for_sampler(cls, dataset, sampler) -> "WeightedDataset":
        """The wrapper with the weights of ``sampler``'s strata and policy (ones if it has none)."""
        return cls(dataset, row_weights(sampler._strata, sampler.policy))

    def __len__(self) -> int:
        return len(self.dataset)

    def __getitem__(self, index):
        item = self.dataset[index]
        weight = self.weights[index]
        if isinstance(item, tuple):
            return (*item, weight)
        return item, weight
