"""What the trainer integrations share: labels out of a dataset column, the policy's size."""

from __future__ import annotations

import numpy as np

from ..base._validation import show
from ..policies import ClassesPerBatch, FixedSize, Policy, Targets, as_policy

__all__ = ["column_labels", "declared_batch_size", "trainer_policy", "served_sizes",
           "trainer_batch_sampler"]


def declared_batch_size(policy) -> int | None:
    """The batch size a policy is built with (None: the size follows from the data).

    ``FixedSize(n)``, ``Targets(..., n)``: ``n``; ``ClassesPerBatch(P, K)``:
    ``P * K``; ``MinPerStratum``, ``Downsample`` and other policies: None.
    """
    if isinstance(policy, (FixedSize, Targets)):
        return policy.batch_size
    if isinstance(policy, ClassesPerBatch):
        return policy.classes_per_batch * policy.per_class
    return None


def trainer_policy(policy, batch_size: int, batch_size_name: str):
    """``policy`` (``FixedSize(batch_size)`` when None), checked against the trainer's batch size.

    A policy with one fixed batch size must ask for ``batch_size`` rows (the
    trainer's own setting, named ``batch_size_name`` in the error): two
    different sizes in one configuration is a ValueError, not a silent winner.
    """
    if policy is None:
        return FixedSize(batch_size)
    if not isinstance(policy, Policy):
        policy = as_policy(policy)
    size = declared_batch_size(policy)
    if size is not None and size != batch_size:
        raise ValueError(
            f"{batch_size_name} must equal the batch size of policy={policy!r} ({size} rows), "
            f"got {batch_size_name}={show(batch_size)}: set {batch_size_name}={size}, or build "
            f"the policy with {batch_size} rows per batch.")
    return policy


def column_labels(dataset, strata, argument: str = "strata"):
    """One label per row: ``dataset[strata]`` for a column name, else ``strata`` itself."""
    if not isinstance(strata, str):
        return strata
    names = getattr(dataset, "column_names", None)
    if names is None:
        raise TypeError(
            f"{argument} must be labels (one per row) when the dataset has no named columns, "
            f"got {argument}={show(strata)} for a {type(dataset).__name__}: pass the labels "
            f"themselves, e.g. {argument}=train_labels.")
    if strata not in names:
        raise ValueError(
            f"{argument} must name a column of the training dataset, got {argument}="
            f"{show(strata)}; its columns are {list(names)}.")
    return np.asarray(dataset[strata])


def served_sizes(sampler) -> tuple[int, int, int]:
    """``(batches, smallest, largest)`` of the sampler's epoch 0 (for the log)."""
    sizes = np.diff(sampler.plan(0).bounds)
    return int(sizes.shape[0]), int(sizes.min()), int(sizes.max())


def trainer_batch_sampler(labels, policy, *, policy_given: bool, batch_size: int,
                          batch_size_name: str, **kwargs):
    """``StratifiedBatchSampler(labels, policy, **kwargs)``, its refusals naming the trainer's
    own argument where the policy is ``FixedSize(batch_size)`` built from it.

    A user who set only ``per_device_train_batch_size`` never wrote ``FixedSize`` or its
    ``batch_size``: the message must name the setting they can change.
    """
    from ..torch import StratifiedBatchSampler

    try:
        return StratifiedBatchSampler(labels, policy, **kwargs)
    except ValueError as error:
        # Only refusals of the batch size itself (they name FixedSize's batch_size); the
        # labels' own errors (wrong length, missing values) name strata as they are.
        if policy_given or "batch_size" not in str(error):
            raise
        raise ValueError(
            f"{batch_size_name}={show(batch_size)} cannot be served on this training set "
            f"(policy=None means FixedSize({batch_size_name})): {error} Set a smaller "
            f"{batch_size_name}, or pass a policy.") from None
