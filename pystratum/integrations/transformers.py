"""``StratifiedTrainer``: a Hugging Face ``Trainer`` that trains on stratified batches.

::

    from pystratum.integrations.transformers import StratifiedTrainer

    trainer = StratifiedTrainer(model=model, args=args, train_dataset=train,
                                strata="label")          # or an array of labels
    trainer.train()

The training loader is ``DataLoader(dataset, batch_sampler=StratifiedBatchSampler(...))``
built the way ``Trainer`` builds its own (the same collator, unused columns
removed, workers, pinning), then passed through ``accelerator.prepare``.
Under several processes (``accelerate launch``, ``torchrun``) every process
plans the same epoch from (seed, epoch) and accelerate's
``BatchSamplerShard`` hands whole batches to the processes in turn, so each
process trains on whole stratified batches. Resuming from a checkpoint
skips the batches already trained (``skip_first_batches``); the batches are
a function of (seed, epoch), so the rest are those of an uninterrupted run.
"""

from __future__ import annotations

import logging

from transformers import Trainer, TrainerCallback

from ..streams._base import RNG_CHOICES
from ..base._validation import check_bool, check_choice
from ..torch import StratifiedBatchSampler
from ._common import (column_labels, declared_batch_size, served_sizes, trainer_batch_sampler,
                      trainer_policy)

__all__ = ["StratifiedTrainer"]

logger = logging.getLogger(__name__)


class _EpochCallback(TrainerCallback):
    """Sets the sampler's epoch at every epoch start, whatever wraps the loader.

    ``Trainer`` calls ``set_epoch`` through the prepared loader, but after a
    resume under several processes the loader is ``SkipBatchSampler(
    BatchSamplerShard(sampler))`` and the call does not reach the sampler.
    ``state.epoch`` is ``epoch + step / steps_in_epoch`` (exactly ``epoch + 1``
    after an epoch's last step), so its integer part is the epoch starting.
    """

    def __init__(self, trainer):
        self._trainer = trainer

    def on_epoch_begin(self, args, state, control, **kwargs):
        sampler = self._trainer.stratified_sampler
        if sampler is not None:
            sampler.set_epoch(int(state.epoch or 0))


class StratifiedTrainer(Trainer):
    """A ``transformers.Trainer`` whose training batches come from a pystratum policy.

    Takes ``Trainer``'s own arguments (passed through) and the keyword-only
    ones below.

    Parameters
    ----------
    strata : str or array-like
        The name of a column of ``train_dataset`` (a ``datasets.Dataset``),
        or one label per training row (anything ``StratifiedBatchSampler``
        accepts). Keyword-only.
    policy : pystratum.policies.Policy, optional
        None: ``FixedSize(per_device_train_batch_size)``. A policy with one
        fixed batch size (``FixedSize``, ``Targets``, ``ClassesPerBatch``):
        ``per_device_train_batch_size`` must equal it (ValueError otherwise).
        A policy whose batch size follows from the data (``MinPerStratum``,
        ``Downsample``): ``per_device_train_batch_size`` is not used, and the
        trainer logs (logger ``pystratum.integrations.transformers``, level
        WARNING) the number and sizes of the batches it serves.
    seed : int, optional
        The batches' seed; None uses ``args.seed`` (so every process, and a
        resumed run, plan the same epochs).
    rng : {"numpy", "R", "torch", "index"}
        As ``StratifiedBatchSampler``'s.
    allow_single_batch : bool
        As ``StratifiedBatchSampler``'s: a training plan of one batch is a
        ValueError when the training loader is built, unless True.

    Guarantees
    ----------
    * Every training step's batch is one batch of
      ``StratifiedBatchSampler(strata, policy, seed=seed, rng=rng)``'s epoch
      (epoch ``k`` of training is the sampler's epoch ``k``); with one
      process, the epoch's batches in order; with ``n`` processes, process
      ``r`` gets batches ``r, r + n, ...`` whole (accelerate's
      ``BatchSamplerShard``; a short tail is completed with whole batches
      from the epoch's start, or dropped with ``dataloader_drop_last``).
    * Resuming from a checkpoint (``train(resume_from_checkpoint=...)``)
      serves the batches an uninterrupted run would have served after it.
    * The training loader takes ``Trainer``'s worker settings
      (``dataloader_num_workers``, ``_pin_memory``, ``_persistent_workers``,
      ``_prefetch_factor``, ``_multiprocessing_context``, ``_in_order`` and its
      per-rank ``worker_init_fn``). ``train_sampling_strategy`` (or
      ``group_by_length``) other than the default is replaced by the policy,
      with a WARNING saying so.
    * ``split_batches=True`` in accelerate's configuration would cut each
      batch across processes (and its composition with it); accelerate
      refuses it here, as the sampler declares no fixed batch size.
    """

    def __init__(self, *args, strata, policy=None, seed=None, rng="numpy",
                 allow_single_batch=False, **kwargs):
        super().__init__(*args, **kwargs)
        self.allow_single_batch = check_bool(allow_single_batch, "allow_single_batch")
        self.strata = strata
        self.stratified_rng = check_choice(rng, "rng", RNG_CHOICES)
        self.stratified_seed = seed
        self.policy = trainer_policy(policy, self.args.per_device_train_batch_size,
                                     "per_device_train_batch_size")
        self._policy_given = policy is not None
        self.stratified_sampler = None
        self.add_callback(_EpochCallback(self))
        if self.train_dataset is not None:
            # Refuse an infeasible plan now, naming the trainer's setting, not at train().
            self._stratified_batch_sampler(log=False)
        replaced = _replaced_sampling(self.args)
        if replaced is not None:
            logger.warning(
                "StratifiedTrainer: %s is not used: the training batches are the policy's "
                "stratified batches (%r); leave the training sampler at its default.",
                replaced, self.policy)

    def _stratified_batch_sampler(self, log=True) -> StratifiedBatchSampler:
        labels = column_labels(self.train_dataset, self.strata)
        seed = self.args.seed if self.stratified_seed is None else self.stratified_seed
        # num_replicas=1: accelerate shards the batches across processes itself
        # (whole batches in turn); every process plans the same epochs from the seed.
        sampler = trainer_batch_sampler(
            labels, self.policy, policy_given=self._policy_given,
            batch_size=self.args.per_device_train_batch_size,
            batch_size_name="per_device_train_batch_size",
            seed=seed, rng=self.stratified_rng, num_replicas=1, rank=0,
            drop_last=self.args.dataloader_drop_last, dataset=self.train_dataset,
            allow_single_batch=self.allow_single_batch)
        if log and declared_batch_size(self.policy) is None:
            count, smallest, largest = served_sizes(sampler)
            sizes = f"{smallest}" if smallest == largest else f"{smallest} to {largest}"
            logger.warning(
                "StratifiedTrainer: %r serves %d batches of %s rows per epoch (the batch size "
                "follows from the data); per_device_train_batch_size=%d is not used.",
                self.policy, count, sizes, self.args.per_device_train_batch_size)
        return sampler

    def get_train_dataloader(self):
        """The training loader: the stratified batch sampler, prepared by accelerate."""
        if self.train_dataset is None:
            raise ValueError("Trainer: training requires a train_dataset.")
        from torch.utils.data import DataLoader

        dataset = self.train_dataset
        collator = self.data_collator
        if _is_hf_dataset(dataset):
            dataset = self._remove_unused_columns(dataset, description="training")
        else:
            collator = self._get_collator_with_removed_columns(collator, description="training")
        sampler = self._stratified_batch_sampler()
        self.stratified_sampler = sampler
        args = self.args
        params = {"batch_sampler": sampler, "collate_fn": collator,
                  "num_workers": args.dataloader_num_workers,
                  "pin_memory": args.dataloader_pin_memory,
                  "persistent_workers": args.dataloader_persistent_workers,
                  "worker_init_fn": _worker_init_fn(args)}
        if args.dataloader_num_workers > 0:
            params["prefetch_factor"] = args.dataloader_prefetch_factor
        # What Trainer._get_dataloader passes too, where this transformers version has it.
        for name in ("multiprocessing_context", "in_order"):
            if hasattr(args, f"dataloader_{name}"):
                params[name] = getattr(args, f"dataloader_{name}")
        return self.accelerator.prepare(DataLoader(dataset, **params))


def _worker_init_fn(args):
    """The ``worker_init_fn`` ``Trainer`` gives its training loader (workers seeded per rank)."""
    import inspect
    from functools import partial

    from transformers.trainer_utils import seed_worker

    if "rank" in inspect.signature(seed_worker).parameters:
        return partial(seed_worker, num_workers=args.dataloader_num_workers,
                       rank=args.process_index)
    return seed_worker  # older transformers seed workers without the rank


def _replaced_sampling(args) -> str | None:
    """The training-sampler setting of ``args`` the stratified batches replace, if any."""
    strategy = getattr(args, "train_sampling_strategy", "random")
    if strategy not in (None, "random"):
        return f"train_sampling_strategy={strategy!r}"
    if getattr(args, "group_by_length", False):  # transformers < 5 spells it so
        return "group_by_length=True"
    return None


def _is_hf_dataset(dataset) -> bool:
    try:
        import datasets
    except ImportError:  # a torch dataset then (datasets is in the hf extra)
        return False
    return isinstance(dataset, datasets.Dataset)
