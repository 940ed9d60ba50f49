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
such a callable (picklable, as the trainer saves its arguments with every
checkpoint). Only the training loader is stratified: evaluation and test
loaders get the library's default batches. The trainer calls ``set_epoch``
on the batch sampler at every epoch start, which selects the pystratum epoch.
"""

from __future__ import annotations

try:  # sentence-transformers >= 5 keeps the samplers in its base package
    from sentence_transformers.base.sampler import DefaultBatchSampler
except ImportError:  # 3.4 (the first to take a function as batch_sampler) to 4.x
    from sentence_transformers.sampler import DefaultBatchSampler

from ..base._validation import check_bool, show
from ..policies import Policy
from ._common import column_labels, trainer_batch_sampler, trainer_policy

__all__ = ["BatchSamplerFactory", "StratifiedBatchSamplerST", "batch_sampler"]


def batch_sampler(policy=None, *, strata_column=None, strata=None, seed=None,
                  allow_single_batch=False):
    """What ``SentenceTransformerTrainingArguments(batch_sampler=...)`` accepts.

    ``policy``: a pystratum policy; None means ``FixedSize(batch_size)``
    with the trainer's batch size. A policy with one fixed batch size must
    equal ``per_device_train_batch_size`` (ValueError otherwise), since the
    trainer reports and schedules with it. ``strata_column``: the dataset
    column holding the strata; None takes the trainer's label column (the
    first of ``valid_label_columns``, e.g. ``"label"``, the dataset has). It
    must be that label column: the library's data collator passes every
    other column to the model as an input, so a column of strata would be
    tokenized (a ValueError naming ``strata_column`` says so). To stratify
    by anything else, leave it out of the training dataset and pass its
    values as ``strata`` (one label per training row, e.g.
    ``strata=train["topic"]`` before ``train.remove_columns("topic")``).
    ``seed``: None uses the trainer's ``args.seed``. ``allow_single_batch``:
    as ``StratifiedBatchSampler``'s (a one-batch training plan is refused
    when the training loader is built, unless True).

    Guarantee: the trainer's training batches are the epochs of
    ``StratifiedBatchSampler(dataset[strata_column], policy, seed=seed)``,
    epoch ``k`` of training being its epoch ``k``; with
    ``ClassesPerBatch(P, K)`` every batch holds K rows of each of P labels,
    which is what in-batch triplet losses (``BatchHardTripletLoss``,
    ``BatchAllTripletLoss``) need. Under several processes each process
    gets whole batches (accelerate's ``BatchSamplerShard``). Evaluation and
    test loaders are not stratified (the library's ``DefaultBatchSampler``
    with the eval batch size); a ``DatasetDict`` training set (multi-dataset
    training) is a ValueError.
    """
    if policy is not None and not isinstance(policy, Policy):
        raise TypeError(
            f"policy must be a pystratum policy (e.g. ClassesPerBatch(P, K), Targets, "
            f"FixedSize) or None, got {show(policy)}: build one from pystratum.policies.")
    if strata_column is not None and not isinstance(strata_column, str):
        raise TypeError(
            f"strata_column must be a column name (str) or None, got "
            f"strata_column={show(strata_column)}: pass the name of the dataset's label column.")

    if strata is not None:
        if strata_column is not None:
            raise TypeError(
                f"strata_column and strata must not both be given, got strata_column="
                f"{show(strata_column)} and strata of type {type(strata).__name__}: pass the "
                f"label column's name, or the strata themselves (one label per row).")
        if isinstance(strata, (str, bytes)) or not hasattr(strata, "__len__"):
            raise TypeError(
                f"strata must be one label per training row (a list, array or Series), got "
                f"strata={show(strata)}; to name a column use strata_column=.")
    return BatchSamplerFactory(policy, strata_column, seed,
                               check_bool(allow_single_batch, "allow_single_batch"),
                               strata=strata)


class BatchSamplerFactory:
    """What :func:`batch_sampler` returns: a picklable ``batch_sampler`` callable.

    A module-level class, not a closure: the trainer ``torch.save``s its
    arguments (``training_args.bin``) at every checkpoint and in
    ``save_model()``, and the arguments hold this object.

    Guarantee: the trainer's training loader gets a
    :class:`StratifiedBatchSamplerST`; its evaluation and test loaders (built
    through the same ``args.batch_sampler`` with the eval batch size, on sets
    that may lack the strata column) get the library's own
    ``DefaultBatchSampler`` over a ``RandomSampler``, what the trainer uses by
    default. A ``DatasetDict`` training set is a ValueError.
    """

    def __init__(self, policy=None, strata_column=None, seed=None, allow_single_batch=False,
                 strata=None):
        self.policy = policy
        self.strata_column = strata_column
        self.strata = strata
        self.seed = seed
        self.allow_single_batch = allow_single_batch

    def __repr__(self) -> str:
        strata = getattr(self, "strata", None)
        given = "" if strata is None else f", strata=<{len(strata)} labels>"
        return (f"batch_sampler({self.policy!r}, strata_column={self.strata_column!r}{given}, "
                f"seed={self.seed!r}, allow_single_batch={self.allow_single_batch!r})")

    def __call__(self, dataset, batch_size, drop_last, valid_label_columns=None, generator=None,
                 seed=0):
        kind, whole = _loader_kind()
        if kind in ("eval", "test"):
            from torch.utils.data import RandomSampler

            return DefaultBatchSampler(
                RandomSampler(dataset, generator=generator), batch_size=batch_size,
                drop_last=drop_last, valid_label_columns=valid_label_columns,
                generator=generator, seed=seed)
        if whole is not None and type(whole).__name__ == "DatasetDict":
            # The library's multi-dataset samplers hand each sampler's batch_size to torch's
            # BatchSampler, and stratified batches have none; one plan over one dataset is
            # what the guarantee covers.
            raise ValueError(
                f"train_dataset must be one Dataset for batch_sampler(), got a DatasetDict of "
                f"{list(whole.keys())}: concatenate its parts into one Dataset "
                f"(datasets.concatenate_datasets) with a column holding the strata, or train "
                f"without batch_sampler().")
        # seed is the trainer's args.seed; an explicit batch_sampler(seed=) wins.
        return StratifiedBatchSamplerST(
            dataset, batch_size, drop_last, valid_label_columns=valid_label_columns,
            generator=generator, seed=seed if self.seed is None else self.seed,
            policy=self.policy, strata_column=self.strata_column,
            # Factories pickled before the argument existed refuse one batch, the default.
            allow_single_batch=getattr(self, "allow_single_batch", False),
            strata=getattr(self, "strata", None))


def _loader_kind():
    """``(kind, dataset)`` of the trainer loader being built: kind "train", "eval", "test" or None.

    The trainer calls ``args.batch_sampler`` with the same arguments for every
    loader; which one is being built is only known from the caller. 5.x+ builds
    them all in ``_build_dataloader(dataset, batch_size, dataset_kind)``; 3.4
    to 4.x call it from ``get_train_dataloader`` / ``get_eval_dataloader`` /
    ``get_test_dataloader`` directly. None (called outside a trainer) is
    treated as training.
    """
    import sys

    names = {"get_train_dataloader": "train", "get_eval_dataloader": "eval",
             "get_test_dataloader": "test"}
    frame = sys._getframe(2)
    try:
        while frame is not None:
            name = frame.f_code.co_name
            if name == "_build_dataloader" and "dataset_kind" in frame.f_locals:
                return frame.f_locals["dataset_kind"], frame.f_locals.get("dataset")
            if name in names:
                local = frame.f_locals
                return names[name], local.get("train_dataset", local.get("dataset"))
            frame = frame.f_back
        return None, None
    finally:
        del frame


class StratifiedBatchSamplerST(DefaultBatchSampler):
    """A sentence-transformers ``DefaultBatchSampler`` serving a ``StratifiedBatchSampler``'s batches.

    Built by the function :func:`batch_sampler` returns; ``stratified`` is
    the pystratum batch sampler. ``batch_size`` is None (the batch size follows
    from the policy), which makes accelerate's ``BatchSamplerShard`` hand
    whole batches of any size to the processes instead of completing short
    ones with rows of other batches.
    """

    def __init__(self, dataset, batch_size, drop_last, valid_label_columns=None, generator=None,
                 seed=0, *, policy=None, strata_column=None, allow_single_batch=False,
                 strata=None):
        super().__init__(dataset, batch_size=batch_size, drop_last=drop_last,
                         valid_label_columns=valid_label_columns, generator=generator, seed=seed)
        names = list(getattr(dataset, "column_names", []))
        # The collator's label column: the first of valid_label_columns the dataset has.
        label_column = next((c for c in (valid_label_columns or []) if c in names), None)
        column = strata_column
        if strata is not None:
            labels = strata
        else:
            if column is None:
                if label_column is None:
                    raise ValueError(
                        f"strata_column must be given: the dataset has none of the trainer's "
                        f"label columns {list(valid_label_columns or [])} (its columns: "
                        f"{names}); pass batch_sampler(policy, strata_column=<the column "
                        f"holding the strata>).")
                column = label_column
            elif valid_label_columns is not None and column != label_column and column in names:
                # Inside a trainer (valid_label_columns given: its collator's) only.
                raise ValueError(
                    f"strata_column must be the trainer's label column "
                    f"({show(label_column)}), got strata_column={show(column)}: "
                    f"sentence-transformers' data collator passes every column but the label "
                    f"column to the model as an input, so {column!r} would be tokenized as "
                    f"text. Stratify by the label column (strata_column=None), or remove "
                    f"{column!r} from the training dataset and pass its values: "
                    f"batch_sampler(policy, strata=train[{column!r}]) with "
                    f"train.remove_columns({column!r}).")
            labels = column_labels(dataset, column, "strata_column")
        self.strata_column = column
        self.policy = trainer_policy(policy, batch_size, "per_device_train_batch_size")
        # num_replicas=1: accelerate shards the batches across processes itself.
        self.stratified = trainer_batch_sampler(
            labels, self.policy,
            policy_given=policy is not None, batch_size=batch_size,
            batch_size_name="per_device_train_batch_size", seed=seed,
            num_replicas=1, rank=0, drop_last=drop_last, dataset=dataset,
            allow_single_batch=allow_single_batch)
        self.batch_size = None

    def set_epoch(self, epoch: int) -> None:
        super().set_epoch(epoch)
        self.stratified.set_epoch(epoch)

    def __iter__(self):
        return iter(self.stratified)

    def __len__(self) -> int:
        return len(self.stratified)
