"""Batch compositions: what every batch of an epoch must contain.

A policy turns stratum sizes into an allocation (how many rows of each
stratum each batch receives); the engine shared by every face (numpy core,
torch sampler, R package) does the rest. Pass a policy wherever
``min_samples_per_stratum`` was accepted; an int ``m`` still means
``MinPerStratum(m)``.

* :class:`MinPerStratum` ``(m)``: at least ``m`` rows of every stratum per
  batch, as many batches as that allows (R: ``policy_min_per_stratum(m)``).
* :class:`FixedSize` ``(batch_size, min_per_stratum=1, sizes="exact")``: batches of
  exactly ``batch_size`` rows but the epoch's last (the rest), each stratum
  spread evenly; ``sizes="balanced"``: ``round(N / batch_size)`` batches of
  floor or ceil of their mean size (R: ``policy_fixed_size()``).
* :class:`Targets` ``(shares, batch_size, epoch="largest")``: every batch of
  exactly ``batch_size`` rows with each stratum's target share; small strata
  recycled or large ones undersampled (R: ``policy_targets()``).
* :class:`ClassesPerBatch` ``(classes_per_batch, per_class)``: P distinct strata x
  K rows in every batch, every row served each epoch, for metric learning
  (R: ``policy_classes_per_batch()``).
* :class:`Downsample` ``(keep, base)``: a fresh random fraction of some strata
  each epoch, batched by ``base``, with importance weights
  (R: ``policy_downsample()``).

* :class:`MultiLabel` ``(batch_size, num_batches=, min_per_label=1, strict=False)``:
  rows carrying several labels (a 0/1 label matrix); every label with enough
  positives in every batch (R: ``policy_multi_label()``).

New compositions subclass :class:`Policy`; see docs/ARCHITECTURE.md.
"""

from ._base import (Allocation, Policy, SlotPlan, check_allocation, check_slot_layout,
                    policy_from_params, registered_policies, strata_of_sizes)
from ._classes_per_batch import ClassesPerBatch, SlotRefills, SmallStrataWarning
from ._downsample import Downsample
from ._fixed_size import FixedSize
from ._multi_label import LabelShortfallWarning, MultiLabel, MultiLabelShortfallError
from ._min_per_stratum import MinPerStratum, SingleBatchError, StratumTooSmallWarning, as_policy
from ._targets import Targets

__all__ = [
    "Allocation",
    "ClassesPerBatch",
    "Downsample",
    "FixedSize",
    "MinPerStratum",
    "MultiLabel",
    "MultiLabelShortfallError",
    "LabelShortfallWarning",
    "Policy",
    "SingleBatchError",
    "SlotPlan",
    "SlotRefills",
    "SmallStrataWarning",
    "StratumTooSmallWarning",
    "Targets",
    "as_policy",
    "check_allocation",
    "check_slot_layout",
    "policy_from_params",
    "registered_policies",
    "strata_of_sizes",
]
