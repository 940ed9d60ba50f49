"""DistributedSamplerWrapper: any sampler (or batch sampler) under DDP, one order for all ranks.

The usual wrapper (catalyst's) lets every rank list its own copy of the
inner sampler and keeps positions ``rank, rank + n, ...`` of it. That is
right only if every rank's copy draws the same order; a sampler drawing from
an unseeded generator (``WeightedRandomSampler``, ``RandomSampler`` without
``generator=``) draws a different order on every rank, so ranks overlap and
miss rows. Here the order of an epoch is made the same on every rank:

* a sampler owning its randomness (a ``torch.Generator`` or a numpy
  ``Generator``/``RandomState`` among its attributes, or torch's
  ``generator=None`` attribute) is listed with those generators replaced, for
  the listing only, by fresh ones seeded from ``(seed, epoch)``; torch's,
  numpy's and Python's global generators are seeded the same way for the
  listing and restored after it; no communication;
* any other sampler is listed on rank 0 only and its order broadcast to the
  other ranks (``torch.distributed.broadcast_object_list``: every rank must
  iterate the wrapper, as DDP training loops do). Without a process group it
  is listed on every rank under the seeded global generators above (enough
  for a sampler that draws from them, or draws nothing).

Serving is :mod:`pystratum.serving`'s: the listed order is a batch source
whose "batches" are the inner sampler's items (rows, or whole batches for a
batch sampler), so the epoch rule, the equal counts on every rank
(``pystratum.serving._sharding``), ``set_epoch`` and resume are those of every
pystratum sampler.
"""

from __future__ import annotations

import random
from contextlib import contextmanager

import numpy as np
import torch
from torch.utils.data import Sampler

from ..base._validation import check_bool, check_int, show
from ..serving import EpochProgress, EpochServed
from ..serving._state import check_format
from ._distributed import (broadcast_object_from_rank0, initialised_world_size, resolve_replicas,
                           resolve_seed)
from ._epoch import EpochSetter

__all__ = ["DistributedSamplerWrapper"]

STATE_FORMAT = "pystratum.torch.DistributedSamplerWrapper/1"
_STATE_KEYS = ("format", "epoch", "items_yielded", "seed", "num_replicas", "drop_last", "length")


def _epoch_seed(seed: int, epoch: int, salt: int = 0) -> int:
    """A 63-bit seed from (seed, epoch, salt): distinct streams for distinct triples."""
    entropy = np.random.SeedSequence([int(seed) & 0xFFFFFFFFFFFFFFFF, int(epoch), int(salt)])
    return int(entropy.generate_state(1, np.uint64)[0] >> np.uint64(1))


def _owned_generators(sampler, depth: int = 3) -> list:
    """``(holder, attribute name)`` of every random generator ``sampler`` owns.

    Looked for among its attributes and those of the samplers it holds (a
    ``BatchSampler``'s ``.sampler``), ``depth`` levels down. ``generator``
    set to None counts: torch's samplers then draw a seed from torch's
    global generator, which differs across ranks.
    """
    found = []
    try:
        attributes = vars(sampler)
    except TypeError:  # no instance dict
        return found
    for name, value in attributes.items():
        if isinstance(value, (torch.Generator, np.random.Generator, np.random.RandomState)):
            found.append((sampler, name))
        elif name == "generator" and value is None:
            found.append((sampler, name))
        elif depth > 1 and isinstance(value, Sampler):
            found.extend(_owned_generators(value, depth - 1))
    return found


def _fresh_like(value, seed: int):
    if isinstance(value, np.random.RandomState):
        return np.random.RandomState(seed % (1 << 32))
    if isinstance(value, np.random.Generator):
        return np.random.default_rng(seed)
    generator = torch.Generator()  # torch.Generator, or None (torch samplers' default)
    generator.manual_seed(seed)
    return generator


@contextmanager
def _seeded_globals(seed: int):
    """torch's (CPU), numpy's and Python's global generators seeded, restored afterwards."""
    numpy_state = np.random.get_state()
    python_state = random.getstate()
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        np.random.seed(seed % (1 << 32))
        random.seed(seed)
        try:
            yield
        finally:
            np.random.set_state(numpy_state)
            random.setstate(python_state)


class _Order:
    """The inner sampler's order of epochs as a batch source (``pystratum.serving``)."""

    def __init__(self, wrapper):
        self._wrapper = wrapper
        self.num_batches = wrapper._length

    def open(self, epoch: int) -> "_OpenedOrder":
        return _OpenedOrder(self._wrapper._list_epoch(epoch))


class _OpenedOrder:
    __slots__ = ("_items", "stream_state", "rows_per_batch")

    def __init__(self, items: list):
        self._items = items
        self.stream_state = {}
        self.rows_per_batch = 1

    def batches(self, ids: np.ndarray) -> list:
        items = self._items
        return [items[i] for i in ids.tolist()]


class DistributedSamplerWrapper(EpochServed, Sampler):
    """Shards any sampler (or batch sampler) across ranks: one inner order, disjoint parts.

    ::

        inner = WeightedRandomSampler(weights, num_samples=len(weights))
        sampler = DistributedSamplerWrapper(inner, seed=0)
        loader = DataLoader(dataset, sampler=sampler, batch_size=32)
        for epoch in range(epochs):
            sampler.set_epoch(epoch)
            ...

    ``sampler`` is anything with ``__iter__`` and ``__len__``: a per-row
    sampler (its items are rows) or a batch sampler (its items are whole
    batches, and each rank gets whole batches: pass the wrapper as
    ``batch_sampler=``). The inner sampler's ``set_epoch`` is called with
    the epoch before it is listed, when it has one.

    ``num_replicas``, ``rank``: default to ``torch.distributed``'s. ``seed``:
    None draws one (rank 0's, broadcast under a process group; pass it when
    ``num_replicas > 1`` without one). ``drop_last``: as
    ``DistributedSampler``'s: False pads the short ranks with items from the
    start of the epoch's order, True leaves out the last ``len(sampler) %
    num_replicas`` items.

    Guarantees
    ----------
    * Every rank's part of epoch ``k`` comes from the same order of the inner
      sampler's items: rank ``r`` serves positions ``r, r + n, ...`` of it
      (``pystratum.serving._sharding``), so without padding the ranks' parts are
      disjoint and cover the order. How the order is made the same on every
      rank is said in the module's docstring: an inner sampler whose
      randomness is in generators it owns (or in the global generators) is
      seeded from ``(seed, epoch)``, and its order of epoch ``k`` is then
      the same after a restart; any other is listed on rank 0 and broadcast.
    * ``len(wrapper)``: items one ``iter()`` yields on this rank, the same on
      every rank (``ceil`` or, with ``drop_last``, ``floor`` of
      ``len(sampler) / num_replicas``).
    * Epochs follow the pystratum rule: one replica, each ``iter()`` is the
      next epoch; several, only ``set_epoch``/``load_state_dict`` move it.
    * ``state_dict()``/``load_state_dict()``: epoch and items yielded; the
      next ``iter()`` continues after them (exact when the epoch's order is
      reproducible, as above).
    """

    def __init__(self, sampler, *, num_replicas=None, rank=None, seed=None, drop_last=False):
        if not hasattr(sampler, "__iter__"):
            raise TypeError(
                f"sampler must be a sampler (an object with __iter__ and __len__), got "
                f"{type(sampler).__name__}: pass the sampler or batch sampler to shard.")
        try:
            length = len(sampler)
        except TypeError:
            raise TypeError(
                f"sampler must have a length (len(sampler)), got a {type(sampler).__name__} "
                f"without __len__: every rank must know how many items an epoch holds to "
                f"serve the same number.") from None
        self._length = check_int(length, "len(sampler)", minimum=0)
        self.sampler_inner = sampler
        self.drop_last = check_bool(drop_last, "drop_last")
        self.num_replicas, self.rank = resolve_replicas(num_replicas, rank)
        seed = resolve_seed(seed, self.num_replicas)
        self._seed = check_int(seed, "seed", minimum=0, maximum=(1 << 63) - 1,
                               fix="Pass seed=<int> (the same on every rank).")
        self.num_batches = self._length  # items per epoch, in the serving layer's words
        if self.drop_last and self._length < self.num_replicas:
            raise ValueError(
                f"drop_last=True leaves no item for any rank: len(sampler)={self._length} but "
                f"num_replicas={self.num_replicas}. Use drop_last=False (short ranks reuse "
                f"items from the start of the epoch) or fewer replicas.")
        self._stream = None
        self._owned = _owned_generators(sampler)
        self._progress = EpochProgress(type(self).__name__, self.num_replicas, self.rank)

    @property
    def seed(self) -> int:
        return self._seed

    @property
    def sampler(self) -> EpochSetter:
        """The ``set_epoch`` hook Lightning and accelerate look for on ``batch_sampler.sampler``."""
        return EpochSetter(self)

    @property
    def batch_size(self):
        """The inner batch sampler's ``batch_size`` (None for a per-row sampler)."""
        return getattr(self.sampler_inner, "batch_size", None)

    def __iter__(self):
        return self._epoch_pass()

    def state_dict(self) -> dict:
        """Epoch, items yielded on this rank, seed and settings (plain values)."""
        epoch, yielded, _ = self._progress.position(lambda: {})
        return {"format": STATE_FORMAT, "epoch": int(epoch), "items_yielded": int(yielded),
                "seed": self._seed, "num_replicas": self.num_replicas,
                "drop_last": self.drop_last, "length": self._length}

    def load_state_dict(self, state_dict: dict) -> None:
        """Continue from :meth:`state_dict` at the next ``iter()``; the saved seed is taken.

        The wrapper must match the saved one (num_replicas, drop_last, the
        inner sampler's length): a ValueError names the first difference.
        """
        check_format(state_dict, "DistributedSamplerWrapper", (STATE_FORMAT,),
                     {STATE_FORMAT: _STATE_KEYS})
        for key, mine in (("num_replicas", self.num_replicas), ("drop_last", self.drop_last),
                          ("length", self._length)):
            if state_dict[key] != mine:
                raise ValueError(
                    f"state_dict[{key!r}] must match this wrapper's {key}={mine!r}, got "
                    f"{show(state_dict[key])}: resume with the settings and inner sampler the "
                    f"state was saved with.")
        epoch = check_int(state_dict["epoch"], "state_dict['epoch']", minimum=0)
        yielded = check_int(state_dict["items_yielded"], "state_dict['items_yielded']",
                            minimum=0, maximum=len(self))
        seed = check_int(state_dict["seed"], "state_dict['seed']", minimum=0,
                         maximum=(1 << 63) - 1)
        self._seed = seed
        self._progress.restore(epoch, yielded)

    def __repr__(self) -> str:
        return (f"DistributedSamplerWrapper({type(self.sampler_inner).__name__}, len={len(self)}, "
                f"seed={self._seed}, epoch={self.epoch}, num_replicas={self.num_replicas}, "
                f"rank={self.rank}, drop_last={self.drop_last})")

    # ---------------------------------------------------------------- private

    def _source(self) -> _Order:
        return _Order(self)

    def _list_epoch(self, epoch: int) -> list:
        """The inner sampler's items of ``epoch``, the same list on every rank."""
        inner = self.sampler_inner
        if hasattr(inner, "set_epoch"):
            inner.set_epoch(epoch)
        world = initialised_world_size()
        broadcast = not self._owned and world is not None and world > 1
        if broadcast:
            import torch.distributed as dist

            items = None
            if dist.get_rank() == 0:
                try:
                    items = self._listed(epoch)
                except ValueError as error:  # every rank raises it, none waits for items
                    items = _ListingError(str(error))
            items = broadcast_object_from_rank0(items)
            if isinstance(items, _ListingError):
                raise ValueError(items.message)
        else:
            items = self._listed(epoch)
        if len(items) != self._length:
            raise ValueError(
                f"sampler yielded {len(items)} items in epoch {epoch} but len(sampler) was "
                f"{self._length} when the wrapper was built: every rank serves len(sampler) / "
                f"num_replicas items, so the length must not change. Build a new wrapper when "
                f"the inner sampler's length changes.")
        return items

    def _listed(self, epoch: int) -> list:
        saved = [(holder, name, getattr(holder, name)) for holder, name in self._owned]
        try:
            for salt, (holder, name, value) in enumerate(saved, start=1):
                setattr(holder, name, _fresh_like(value, _epoch_seed(self._seed, epoch, salt)))
            with _seeded_globals(_epoch_seed(self._seed, epoch)):
                items = []
                for item in self.sampler_inner:
                    # Refused at item len + 1: an inner sampler yielding without end
                    # must not be listed forever.
                    if len(items) == self._length:
                        raise ValueError(
                            f"sampler yielded more than len(sampler)={self._length} items in "
                            f"epoch {epoch}: every rank serves len(sampler) / num_replicas "
                            f"items, so the sampler must yield exactly len(sampler) items per "
                            f"iter(). Fix its __len__ or its __iter__.")
                    items.append(_plain(item))
                return items
        finally:
            for holder, name, value in saved:
                setattr(holder, name, value)


class _ListingError:
    """Rank 0's refusal of the inner sampler's listing, broadcast to every rank."""

    def __init__(self, message: str):
        self.message = message


def _plain(item):
    """A row index as an int, a batch as a list of ints (broadcastable, comparable)."""
    if isinstance(item, torch.Tensor):
        return item.tolist()
    if isinstance(item, (np.ndarray, tuple)):
        return [int(i) for i in item]
    if isinstance(item, np.integer):
        return int(item)
    return item
