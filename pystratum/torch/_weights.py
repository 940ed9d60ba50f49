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
        n_rows = _dataset_length(dataset)
        weights = _check_weights(weights, n_rows)
        self.dataset = dataset
        self.weights = torch.from_numpy(weights).to(dtype)

    @classmethod
    def for_sampler(cls, dataset, sampler, *, dtype=torch.float32) -> "WeightedDataset":
        """The wrapper with the weights of ``sampler``'s strata and policy.

        ``sampler``: a :class:`StratifiedBatchSampler` or :class:`StratifiedSampler`,
        or a :class:`DistributedSamplerWrapper` around one (the weights are
        the inner sampler's). Any other sampler is a TypeError naming
        ``sampler`` (it has no strata or policy to weigh by: pass the weights
        with ``WeightedDataset(dataset, weights)``). A policy without
        importance weights (``MinPerStratum``, ``FixedSize``, ``MultiLabel``:
        every row would weigh 1) is a ValueError naming it: weights of 1 would
        hide a sampler that was meant to carry them.
        """
        inner = _pystratum_sampler(sampler)
        policy = inner.policy
        if getattr(policy, "reads_label_matrix", False):
            allocation = None  # label policies serve every row once, unweighted
        else:
            allocation = policy.allocate(inner._strata, 0)  # weights never depend on the epoch
        if allocation is None or allocation.slots is not None or allocation.row_weights is None:
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


def _pystratum_sampler(sampler):
    """The stratified sampler that holds the strata and policy: ``sampler`` itself, the
    ``sampler=`` face's batch sampler, or the one a ``DistributedSamplerWrapper`` shards."""
    seen = sampler
    for _ in range(8):  # wrappers of wrappers, never a cycle
        if hasattr(seen, "policy") and hasattr(seen, "_strata"):
            return seen
        inner = getattr(seen, "sampler_inner", None)  # DistributedSamplerWrapper
        if inner is None:
            inner = getattr(seen, "batch_sampler", None)  # StratifiedSampler
        if inner is None or inner is seen:
            break
        seen = inner
    raise TypeError(
        f"sampler must be a pystratum StratifiedBatchSampler or StratifiedSampler (or a "
        f"DistributedSamplerWrapper around one), got sampler={type(sampler).__name__}: only "
        f"those know each row's stratum and the policy's weights. For another sampler pass "
        f"the weights yourself: WeightedDataset(dataset, weights).")


def _dataset_length(dataset) -> int:
    try:
        return int(len(dataset))
    except TypeError:
        raise TypeError(
            f"dataset must have a length (len(dataset)), got dataset of type "
            f"{type(dataset).__name__} without __len__: each row gets one weight, so the "
            f"rows must be counted. Wrap an iterable dataset in a map-style Dataset.") from None


def _check_weights(weights, n_rows: int) -> np.ndarray:
    """One finite, non-negative float64 weight per row, or the error naming ``weights``."""
    if isinstance(weights, (str, bytes)):
        raise TypeError(f"weights must be numbers, one per row of dataset ({n_rows}), got the "
                        f"text weights={weights!r}. Pass a list, array or tensor of floats.")
    if isinstance(weights, torch.Tensor):
        weights = weights.detach().cpu().double().numpy()
    try:
        values = np.asarray(weights, dtype=np.float64)
    except (TypeError, ValueError) as error:
        raise TypeError(
            f"weights must be numbers, one per row of dataset ({n_rows}), got weights of type "
            f"{type(weights).__name__} that cannot be read as floats ({error}). Pass a list, "
            f"array or tensor of floats.") from None
    if values.ndim != 1 or values.shape[0] != n_rows:
        raise ValueError(
            f"weights must hold one weight per row of dataset ({n_rows}), got an array of "
            f"shape {values.shape}. Use WeightedDataset.for_sampler(dataset, sampler) to take "
            f"them from the sampler's policy.")
    bad = ~np.isfinite(values) | (values < 0)
    if bad.any():
        row = int(np.flatnonzero(bad)[0])
        raise ValueError(
            f"weights must be finite and >= 0 (an importance weight per row), got "
            f"weights[{row}]={float(values[row])!r}. A NaN or negative weight would turn the loss "
            f"into NaN or reward errors; fix the weights (0 leaves a row out of the loss).")
    return values


def _check_dtype(dtype):
    if not isinstance(dtype, torch.dtype) or not dtype.is_floating_point:
        raise TypeError(f"dtype must be a floating torch.dtype (torch.float32, torch.float64, "
                        f"...), got dtype={dtype!r}.")
    return dtype
