"""PyTorch face of the generated-negatives sampler (imports torch; nothing else imports it).

::

    from pystratum.negatives.torch import NegativePairBatchSampler, pair_loader
    sampler = NegativePairBatchSampler(users, items, num_items=n_items, negatives=4,
                                       batch_size=256, seed=1)
    loader = pair_loader(sampler, user_features=U, item_features=V, num_workers=2)
    for batch in loader:   # dict of tensors: user, item, label, log_q, weight, positive,
        ...                # user_features, item_features (when tables are given)

The batch sampler yields :class:`~pystratum.negatives.NegativeBatch` objects
(each a pure function of seed, epoch and batch index), so which DataLoader
worker or rank handles a batch never changes it. :class:`PairFeatureDataset`
turns a batch's ids into tensors, gathering rows of the user and item
feature tables.
"""

from __future__ import annotations

import sys

import numpy as np

from ..base._optional import require_torch

torch = require_torch("pystratum.negatives.torch")
from torch.utils.data import DataLoader, Dataset, Sampler  # noqa: E402 (after the guard)
from torch.utils.data.dataloader import _BaseDataLoaderIter  # noqa: E402

from . import NegativeBatch, NegativePairSampler
from ..torch._distributed import resolve_replicas, resolve_seed
from ..torch._epoch import EpochSetter

__all__ = ["NegativePairBatchSampler", "PairFeatureDataset", "collate_pairs", "pair_loader"]


class NegativePairBatchSampler(NegativePairSampler, Sampler):
    """:class:`~pystratum.negatives.NegativePairSampler` as a DataLoader ``batch_sampler``.

    It yields :class:`~pystratum.negatives.NegativeBatch` objects (observed
    pairs plus their generated negatives), not row indices, so the loader's
    dataset must fetch a whole batch: use :func:`pair_loader` (dicts of
    tensors, feature tables gathered), or ``DataLoader(dataset,
    batch_sampler=sampler, collate_fn=...)`` with a dataset that defines
    ``__getitems__(batch)`` (as :class:`PairFeatureDataset` does). A
    DataLoader over a dataset of rows (no ``__getitems__``), or the sampler
    passed as ``sampler=``, is refused with a TypeError when its loop starts.

    Same arguments and guarantees; additionally ``users``/``items`` may be
    tensors, ``num_replicas``/``rank`` default to ``torch.distributed``'s
    world size and rank, and ``seed=None`` under an initialised process group
    uses rank 0's fresh seed on every rank (broadcast; every rank must build
    its sampler, as DDP code does). Each rank draws negatives only for its
    own batches; all ranks yield ``len(sampler)`` batches. With several
    replicas the epoch changes only through ``set_epoch`` (the engine's rule,
    see :class:`~pystratum.negatives.NegativePairSampler`): call it before
    every epoch, or let Lightning/accelerate call it through ``.sampler``.
    """

    def __init__(self, users, items, *, num_items, negatives, batch_size, num_users=None,
                 seed=None, rng="numpy", reject_observed=True, pair_with="user",
                 item_weights=None, duplicates="error", max_rounds=100, num_replicas=None,
                 rank=None, drop_last=False):
        num_replicas, rank = resolve_replicas(num_replicas, rank)
        # None: a fresh seed, rank 0's on every rank under torch.distributed.
        seed = resolve_seed(seed, num_replicas)
        NegativePairSampler.__init__(
            self, users, items, num_items=num_items, negatives=negatives,
            batch_size=batch_size, num_users=num_users, seed=seed, rng=rng,
            reject_observed=reject_observed, pair_with=pair_with, item_weights=item_weights,
            duplicates=duplicates, max_rounds=max_rounds, num_replicas=num_replicas, rank=rank,
            drop_last=drop_last)

    def __iter__(self):
        # DataLoader calls iter() on its batch sampler when a loop starts: the place to
        # see a dataset that cannot fetch a NegativeBatch. The error is raised at the first
        # batch, which DataLoader asks for in the main process before any fetch (raised
        # inside iter(), a loader with workers would fail again while cleaning up).
        problem = _loader_problem(self, sys._getframe(1))
        if problem is not None:
            return _Refused(problem)
        return NegativePairSampler.__iter__(self)

    @property
    def sampler(self) -> EpochSetter:
        """A ``set_epoch`` hook where Lightning and accelerate look for one.

        They call ``loader.batch_sampler.sampler.set_epoch(epoch)`` at each
        epoch start; this forwards it to :meth:`set_epoch`.
        """
        return EpochSetter(self)


class PairFeatureDataset(Dataset):
    """Turns a :class:`NegativeBatch` into a dict of tensors (DataLoader's fetch step).

    ``user_features`` / ``item_features``: optional tables with one row per
    id (numpy arrays, pandas DataFrames of numbers, or tensors); the batch
    gets ``user_features = table[user]`` and ``item_features = table[item]``.
    Ids index rows directly, so row ``i`` must describe id ``i``.
    """

    def __init__(self, user_features=None, item_features=None):
        self.user_features = _table(user_features, "user_features")
        self.item_features = _table(item_features, "item_features")

    def check_covers(self, sampler: NegativePairSampler) -> None:
        """ValueError unless the tables have a row for every id the sampler can produce."""
        for table, name, needed, what in (
                (self.user_features, "user_features", sampler.num_users, "num_users"),
                (self.item_features, "item_features", sampler.num_items, "num_items")):
            if table is not None and table.shape[0] < needed:
                raise ValueError(
                    f"{name} must have a row per id (at least {what}={needed} rows), got "
                    f"{table.shape[0]} rows. Row i must hold the features of id i.")

    def __getitems__(self, batch):
        if not isinstance(batch, NegativeBatch):
            raise TypeError(
                f"PairFeatureDataset fetches NegativeBatch objects from a "
                f"NegativePairBatchSampler (DataLoader(dataset, batch_sampler=sampler, "
                f"collate_fn=collate_pairs)), got {type(batch).__name__}.")
        user = torch.from_numpy(batch.user)
        item = torch.from_numpy(batch.item)
        out = {
            "user": user,
            "item": item,
            "label": torch.from_numpy(batch.label.astype(np.float32)),
            "log_q": torch.from_numpy(batch.log_q.astype(np.float32)),
            "weight": torch.from_numpy(batch.weight.astype(np.float32)),
            "positive": torch.from_numpy(batch.positive),
        }
        if self.user_features is not None:
            out["user_features"] = self.user_features[user]
        if self.item_features is not None:
            out["item_features"] = self.item_features[item]
        return out

    def __getitem__(self, index):
        raise TypeError(
            "PairFeatureDataset has no rows of its own: use it with a NegativePairBatchSampler "
            "as batch_sampler (see pystratum.negatives.torch.pair_loader).")


def collate_pairs(fetched):
    """The DataLoader ``collate_fn`` for :class:`PairFeatureDataset`: the dict is the batch."""
    return fetched


def pair_loader(sampler: NegativePairSampler, user_features=None, item_features=None,
                **loader_kwargs) -> DataLoader:
    """A DataLoader yielding dicts of tensors for ``sampler``'s batches (workers allowed)."""
    for key in ("batch_size", "shuffle", "sampler", "batch_sampler", "drop_last", "collate_fn"):
        if key in loader_kwargs:
            raise TypeError(
                f"pair_loader sets {key} itself (the batches come from the sampler); remove "
                f"{key}={loader_kwargs[key]!r}.")
    dataset = PairFeatureDataset(user_features, item_features)
    dataset.check_covers(sampler)
    return DataLoader(dataset, batch_sampler=sampler, collate_fn=collate_pairs, **loader_kwargs)


class _Refused:
    """An iterator whose first batch is the TypeError saying why the loader cannot work."""

    def __init__(self, message: str):
        self._message = message

    def __iter__(self):
        return self

    def __next__(self):
        raise TypeError(self._message)


def _loader_problem(sampler, frame):
    """Why a DataLoader would hand NegativeBatch objects to a dataset of rows (or None)."""
    caller = frame.f_locals.get("self") if frame is not None else None
    if caller is None or caller is sampler:
        return None
    fix = ("Use pair_loader(sampler, user_features=..., item_features=...) from "
           "pystratum.negatives.torch (a DataLoader of dicts of tensors), or a dataset with "
           "__getitems__(batch) such as PairFeatureDataset, with collate_fn=collate_pairs.")
    if isinstance(caller, _BaseDataLoaderIter):
        dataset = caller._dataset
        if getattr(caller, "_index_sampler", None) is sampler \
                and not callable(getattr(dataset, "__getitems__", None)):
            return (
                f"NegativePairBatchSampler yields NegativeBatch objects (observed pairs with "
                f"their generated negatives), not row indices, but the DataLoader's dataset "
                f"({type(dataset).__name__}) fetches rows one index at a time. {fix} For "
                f"example: loader = pair_loader(sampler, num_workers=2).")
        return None
    try:
        holds_us = caller.__dict__.get("sampler") is sampler
    except AttributeError:  # no instance dict (slots): not a wrapper we know
        return None
    if holds_us:
        return (
            f"NegativePairBatchSampler is a batch sampler (it yields whole NegativeBatch "
            f"objects) but a {type(caller).__name__} iterates it as a per-row sampler, as "
            f"DataLoader(dataset, sampler=sampler) does. {fix} For example: loader = "
            f"pair_loader(sampler, num_workers=2).")
    return None


def _table(table, name):
    if table is None:
        return None
    if isinstance(table, torch.Tensor):
        tensor = table.detach()
    else:
        if type(table).__module__.startswith("pandas"):
            table = table.to_numpy()
        array = np.asarray(table)
        if array.dtype == object or array.dtype.kind not in "biuf":
            raise TypeError(
                f"{name} must hold numbers (one row per id), got dtype {array.dtype}. Encode "
                f"categorical columns first.")
        tensor = torch.from_numpy(np.ascontiguousarray(array))
    if tensor.dim() == 0:
        raise ValueError(f"{name} must have one row per id, got a scalar.")
    return tensor
