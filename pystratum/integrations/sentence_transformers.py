"""Stratified batches for sentence-transformers' trainer.

::

    from pystratum.integrations.sentence_transformers import batch_sampler
    from pystratum.policies import ClassesPerBatch

    args = SentenceTransformerTrainingArguments(
        output_dir="out", per_device_train_batch_size=32,
        batch_sampler=batch_sampler(ClassesPerBatch(8, 4)))   # P x K for triplet mining

``SentenceTransformerTrainingArguments(batch_sampler=...)`` takes a function
of ``(dataset, batch_size, drop_last, valid_label_columns, generator,
seed)`` returning a ``DefaultBatchSampler``; :func:`batch_sampler` returns
such a function. The trainer calls ``set_epoch`` on the batch sampler at
every epoch start, which selects the pystratum epoch.
"""

from __future__ import annotations

try:  # sentence-transformers >= 5 keeps the samplers in its base package
    from sentence_transformers.base.sampler import DefaultBatchSampler
except ImportError:  # 3.4 (the first to take a function as batch_sampler) to 4.x
    from sentence_transformers.sampler import DefaultBatchSampler

from .._validation import show
from ..policies import Policy
from ..torch import StratifiedBatchSampler
from ._common import column_labels, trainer_policy

__all__ = ["StratifiedBatchSamplerST", "batch_sampler"]


def batch_sampler(policy=None, *, strata_column=None, seed=None):
    """What ``SentenceTransformerTrainingArguments(batch_sampler=...)`` accepts.

    ``policy``: a pystratum policy; None means ``FixedSize(batch_size)``
    with the trainer's batch size. A policy with one fixed batch size must
    equal ``per_device_train_batch_size`` (ValueError otherwise), since the
    trainer reports and schedules with it. ``strata_column``: the dataset
    column holding the strata; None takes the trainer's label column (the
    first of ``valid_label_columns``, e.g. ``"label"``, the dataset has).
    ``seed``: None uses the trainer's ``args.seed``.

    Guarantee: the trainer's training batches are the epochs of
    ``StratifiedBatchSampler(dataset[strata_column], policy, seed=seed)``,
    epoch ``k`` of training being its epoch ``k``; with
    ``ClassesPerBatch(P, K)`` every batch holds K rows of each of P labels,
    which is what in-batch triplet losses (``BatchHardTripletLoss``,
    ``BatchAllTripletLoss``) need. Under several processes each process
    gets whole batches (accelerate's ``BatchSamplerShard``).
    """
    if policy is not None and not isinstance(policy, Policy):
        raise TypeError(
            f"policy must be a pystratum policy (e.g. ClassesPerBatch(P, K), Targets, "
            f"FixedSize) or None, got {show(policy)}: build one from pystratum.policies.")
    if strata_column is not None and not isinstance(strata_column, str):
        raise TypeError(
            f"strata_column must be a column name (str) or None, got "
            f"strata_column={show(strata_column)}: pass the name of the dataset's label column.")

    fixed_seed = seed

    def make(dataset, batch_size, drop_last, valid_label_columns=None, generator=None, seed=0):
        # seed is the trainer's args.seed; an explicit batch_sampler(seed=) wins.
        return StratifiedBatchSamplerST(
            dataset, batch_size, drop_last, valid_label_columns=valid_label_columns,
            generator=generator, seed=seed if fixed_seed is None else fixed_seed, policy=policy,
            strata_column=strata_column)

    return make


class StratifiedBatchSamplerST(DefaultBatchSampler):
    """A sentence-transformers ``DefaultBatchSampler`` serving a ``StratifiedBatchSampler``'s batches.

    Built by the function :func:`batch_sampler` returns; ``stratified`` is
    the pystratum batch sampler. ``batch_size`` is None (the batch size follows
    from the policy), which makes accelerate's ``BatchSamplerShard`` hand
    whole batches of any size to the processes instead of completing short
    ones with rows of other batches.
    """

    def __init__(self, dataset, batch_size, drop_last, valid_label_columns=None, generator=None,
                 seed=0, *, policy=None, strata_column=None):
        super().__init__(dataset, batch_size=batch_size, drop_last=drop_last,
                         valid_label_columns=valid_label_columns, generator=generator, seed=seed)
        column = strata_column
        if column is None:
            names = list(getattr(dataset, "column_names", []))
            found = [c for c in (valid_label_columns or []) if c in names]
            if not found:
                raise ValueError(
                    f"strata_column must be given: the dataset has none of the trainer's label "
                    f"columns {list(valid_label_columns or [])} (its columns: {names}); pass "
                    f"batch_sampler(policy, strata_column=<the column holding the strata>).")
            column = found[0]
        self.strata_column = column
        self.policy = trainer_policy(policy, batch_size, "per_device_train_batch_size")
        # num_replicas=1: accelerate shards the batches across processes itself.
        self.stratified = StratifiedBatchSampler(
            column_labels(dataset, column, "strata_column"), self.policy, seed=seed,
            num_replicas=1, rank=0, drop_last=drop_last, dataset=dataset)
        self.batch_size = None

    def set_epoch(self, epoch: int) -> None:
        super().set_epoch(epoch)
        self.stratified.set_epoch(epoch)

    def __iter__(self):
        return iter(self.stratified)

    def __len__(self) -> int:
        return len(self.stratified)
