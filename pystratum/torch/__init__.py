"""PyTorch batch sampler: every batch contains every stratum, on every rank.

::

    from pystratum.torch import StratifiedBatchSampler
    sampler = StratifiedBatchSampler(train_set.targets, 10, seed=1)
    loader = DataLoader(train_set, batch_sampler=sampler)

The package's parts, each tested on its own: ``_labels`` (labels out of
tensors, datasets, callables), ``_distributed`` (rank, world size, the shared
seed), ``_epoch`` (the ``set_epoch`` hook), ``_state`` (the resume format),
``_guards`` (misuse checks) and ``_sampler`` (the coordinator);
``_flat_sampler`` (``StratifiedSampler``, the ``sampler=`` face: the batch
sampler's batches row after row) and ``_wrapper``
(``DistributedSamplerWrapper``: any sampler under DDP, one order for every rank). Serving
(the epoch rule, the pass over a rank's whole batches, resume) is the torch-free
``pystratum.serving``.
"""

from ..base._optional import require_torch

require_torch("pystratum.torch")

from ._sampler import StratifiedBatchSampler
from ._flat_sampler import StratifiedSampler
from ._weights import WeightedDataset
from ._wrapper import DistributedSamplerWrapper

__all__ = ["DistributedSamplerWrapper", "StratifiedBatchSampler", "StratifiedSampler",
           "WeightedDataset"]
