"""PyTorch face of the tree sampler: a batch sampler for DataLoader, DDP and resume.

::

    from pystratum.tree import TreeSampler
    from pystratum.tree.torch import TreeBatchSampler
    tree = TreeSampler("tree.yaml", metadata, seed=1)
    loader = DataLoader(dataset, batch_sampler=TreeBatchSampler(tree, 256))

A ``TreeSampler`` is itself usable as ``DataLoader(dataset, sampler=tree,
batch_size=...)`` on one process (it yields row positions). Under DDP use
:class:`TreeBatchSampler`: every rank generates the same stream from the
seed (no communication; generation runs at millions of draws per second)
and takes whole batches round-robin with the rank functions of
``pystratum.serving._sharding``, like the stratified sampler. The sampler checks its
arguments and hands the tree's stream, as a batch source
(:mod:`pystratum.tree._source`), to the serving layer's ``EpochPass``: the
epoch rule, sharding, progress and resume are every sampler's. Whole batches rather
than every n-th draw because draws are not independent items: ``repeat``
blocks and sequential pairs are consecutive draws, and sharding whole
batches keeps them together whenever ``batch_size`` is a multiple of the
block length.
"""

from __future__ import annotations

from typing import Iterator

from ..base._optional import require_torch

require_torch("pystratum.tree.torch")
from torch.utils.data import Sampler  # noqa: E402 (after the guard)

from ..serving._record import seed_to_record
from ..base._validation import check_bool, check_int
from ..serving import EpochProgress, EpochServed
from ..serving._state import check_format, differs, read_resume
from ..torch._distributed import broadcast_object_from_rank0, initialised_world_size, resolve_replicas
from ..torch._epoch import EpochSetter
from ._sampler import TreeSampler
from ._source import TreeSource

__all__ = ["TreeBatchSampler"]

_STATE_FORMAT = "pystratum.tree.TreeBatchSampler/2"
_FORMAT_1 = "pystratum.tree.TreeBatchSampler/1"
_SETTINGS = ("batch_size", "num_replicas", "drop_last")
_STATE_KEYS = {
    _STATE_FORMAT: ("format", "epoch", "batches_yielded", "seed", "stream") + _SETTINGS
    + ("epoch_length",),
    _FORMAT_1: ("format", "batches_yielded", "epoch_start") + _SETTINGS,
}
_STATE_FIX = "pass what TreeBatchSampler.state_dict() returned, unmodified"


class TreeBatchSampler(EpochServed, Sampler[list]):
    """Batches of a :class:`~pystratum.tree.TreeSampler`'s stream, sharded across ranks.

    Parameters
    ----------
    tree : TreeSampler
        The stream to cut; the batch sampler owns its position from now on
        (do not iterate the tree elsewhere).
    batch_size : int
        Draws per global batch.
    num_replicas, rank : int, optional
        Default to ``torch.distributed``'s world size and rank when it is
        initialised, else 1 and 0.
    drop_last : bool
        With an ``epoch_length`` whose batches do not split evenly across
        ranks: False (default) pads the short ranks with whole batches from
        the start of the epoch; True drops the remainder batches.

    Guarantees
    ----------
    * With ``epoch_length`` L, epoch ``k`` is the ``k``-th block of L draws of
      the stream (from the tree's position when this sampler was built: for a
      fresh tree, draws ``k*L`` onwards), cut into ``ceil(L / batch_size)``
      global batches (the last shorter if needed); rank ``r`` of ``n`` yields
      batches ``r, r + n, ...`` (``pystratum.serving._sharding``), so without padding
      the ranks' batches are disjoint and together are the epoch's draws. All
      ranks yield ``len(sampler)`` batches.
    * Epochs follow the rule of every pystratum sampler. One replica: each
      ``iter()`` serves the next epoch. Several replicas: the epoch changes
      only through ``set_epoch(k)`` (or ``load_state_dict``), as with
      ``DistributedSampler``; another ``iter()`` in the same epoch serves that
      epoch again, so an extra ``iter()`` on one rank (a peek) never moves it
      out of step with the others. Call ``set_epoch`` before every epoch (or
      let Lightning/accelerate call it through ``.sampler``).
    * Without ``epoch_length`` the stream is one endless epoch: rank ``r``
      yields global batches ``r, r + n, r + 2n, ...``; one replica's next
      ``iter()`` continues the stream, several replicas' re-serves it from
      where that epoch began (``set_epoch`` needs ``epoch_length``).
    * Batches are a pure function of (config, metadata, seed, epoch): under
      ``torch.distributed`` rank 0's stream state is broadcast once, at
      construction, so ``seed=None`` works too.
    * ``state_dict()``/``load_state_dict()`` follow torchdata's ``Stateful``
      protocol: ``StatefulDataLoader`` resumes mid-epoch exactly; every rank
      is at the same place, so rank 0's state resumes every rank. A copy or
      pickle of the sampler continues the epoch in progress from the same
      batch.
    """

    def __init__(self, tree, batch_size, *, num_replicas=None, rank=None, drop_last=False):
        if not isinstance(tree, TreeSampler):
            raise TypeError(
                f"tree must be a pystratum.tree.TreeSampler, got {type(tree).__name__}. Build "
                f"it first: TreeSampler(config, metadata, seed=...).")
        self.tree = tree
        self.batch_size = check_int(batch_size, "batch_size", minimum=1)
        self.drop_last = check_bool(drop_last, "drop_last")
        self.num_replicas, self.rank = resolve_replicas(num_replicas, rank)
        self._share_stream()
        self.epoch_length = tree.epoch_length
        self._stream = TreeSource(tree, self.batch_size, self.num_replicas)
        self.num_batches = self._stream.num_batches
        if (self.num_batches is not None and self.drop_last
                and self.num_batches < self.num_replicas):
            raise ValueError(
                f"drop_last=True leaves no batch for any rank: an epoch of epoch_length="
                f"{self.epoch_length} draws makes {self.num_batches} batch(es) of "
                f"batch_size={self.batch_size} but num_replicas={self.num_replicas}. Use a "
                f"smaller batch_size, a longer epoch_length, or drop_last=False.")
        self._progress = EpochProgress(type(self).__name__, self.num_replicas, self.rank)

    def _share_stream(self) -> None:
        if self.num_replicas == 1:
            return
        world = initialised_world_size()
        if world is not None:
            self.tree.load_state_dict(broadcast_object_from_rank0(self.tree.state_dict()))
        elif self.tree._fresh_seed:
            raise ValueError(
                f"seed must be given when num_replicas={self.num_replicas} and "
                f"torch.distributed is not initialised: every rank must draw the same stream. "
                f"Build the tree with TreeSampler(config, metadata, seed=<int>) on every rank, "
                f"or initialise torch.distributed first (rank 0's stream is then broadcast).")

    # ----------------------------------------------------------- public

    def __len__(self) -> int:
        """Batches one ``iter()`` yields on this rank (the same on every rank)."""
        if self.num_batches is None:
            raise TypeError(
                "TreeBatchSampler has no length: the tree's config sets no epoch_length, so "
                "iteration never ends. Set epoch_length: <draws per epoch> in the config.")
        return super().__len__()

    def __iter__(self) -> Iterator[list]:
        return self._epoch_pass()

    @property
    def sampler(self) -> EpochSetter:
        """A ``set_epoch`` hook where Lightning and accelerate look for one (with
        ``epoch_length`` only: an endless stream has no epochs to set)."""
        if self.epoch_length is None:
            raise AttributeError("an endless TreeBatchSampler has no set_epoch hook")
        return EpochSetter(self)

    def set_epoch(self, epoch: int) -> None:
        """Make the next ``iter()`` serve epoch ``epoch`` (draws ``epoch * L`` onwards).

        Not needed on one replica when epochs are served in order (each
        ``iter()`` is the next epoch). An earlier epoch is reached by replaying
        the stream from the start, which costs generating ``epoch * L`` draws.
        """
        if self.epoch_length is None:
            raise ValueError(
                "set_epoch needs epoch_length in the tree's config; without it the stream has "
                "no epochs.")
        super().set_epoch(epoch)

    def state_dict(self) -> dict:
        """Where the stream stands: the epoch, the tree's state before it and the batches
        this rank has yielded of it (plain Python values)."""
        epoch, yielded, stream = self._progress.position(self._stream.state_dict)
        return {"format": _STATE_FORMAT, "epoch": int(epoch), "batches_yielded": int(yielded),
                "seed": seed_to_record(self.tree.seed), "batch_size": self.batch_size,
                "num_replicas": self.num_replicas, "drop_last": self.drop_last,
                "epoch_length": self.epoch_length, "stream": stream,
                # Epoch 0's first draw: a resume on a tree built at another position
                # (or with another seed) serves the saved run's epochs from it.
                "origin": None if self.epoch_length is None else int(self._stream.origin)}

    def load_state_dict(self, state_dict: dict) -> None:
        """Resume from :meth:`state_dict`: the next ``iter()`` continues that epoch.

        The tree (config and metadata) and the arguments must be the saved
        run's; the saved seed replaces the tree's. A corrupted state is a
        TypeError/ValueError naming the key.
        """
        form = check_format(state_dict, "TreeBatchSampler", tuple(_STATE_KEYS), _STATE_KEYS)
        state = dict(state_dict)
        if form == _FORMAT_1:
            # Format 1 kept the tree's state at the epoch's start; its seed is inside.
            stream = state["epoch_start"]
            position = stream.get("position") if isinstance(stream, dict) else None
            epoch = (position // self.epoch_length if isinstance(position, int)
                     and position >= 0 and self.epoch_length else 0)
            state.update(epoch=epoch, stream=stream,
                         seed=stream.get("seed") if isinstance(stream, dict) else None,
                         epoch_length=self.epoch_length)
        mine = {"batch_size": self.batch_size, "num_replicas": self.num_replicas,
                "drop_last": self.drop_last, "epoch_length": self.epoch_length}
        for key, value in mine.items():
            saved = state[key]
            if differs(saved, value):
                raise ValueError(
                    f"Cannot resume: the state was saved with {key}={_short(saved)} but this "
                    f"sampler has {key}={value!r}. Build it with the tree and arguments of the "
                    f"run that saved it.")
        length = None if self.num_batches is None else len(self)
        resume = read_resume(state, fix=_STATE_FIX, length=length)
        stream = resume.stream
        if "seed" not in stream or differs(stream["seed"], state["seed"]):
            raise ValueError(
                f"state_dict['seed']={_short(state['seed'])} is not the seed of "
                f"state_dict['stream'] ({_short(stream.get('seed'))}); {_STATE_FIX}.")
        origin = state.get("origin")  # absent from states saved before it was kept
        if origin is not None and self.epoch_length is not None:
            origin = check_int(origin, "state_dict['origin']", minimum=0)
        else:
            origin = None
        try:
            self._stream.restore(resume.epoch, stream, origin)
        except (TypeError, ValueError, KeyError, IndexError, AttributeError,
                OverflowError) as error:
            raise ValueError(
                f"state_dict['stream'] is not a state of this tree ({error}); {_STATE_FIX}."
            ) from None
        self._progress.restore(resume.epoch, resume.batches_yielded)

    def __repr__(self) -> str:
        return (f"TreeBatchSampler(batch_size={self.batch_size}, epoch_length="
                f"{self.epoch_length}, num_replicas={self.num_replicas}, rank={self.rank}, "
                f"drop_last={self.drop_last}, epoch={self.epoch}, tree={self.tree!r})")

    # ---------------------------------------------------------- private

    def _source(self) -> TreeSource:
        return self._stream

    def _restore_stream(self, epoch: int, stream_state: dict) -> None:
        self._stream.restore(epoch, stream_state)


def _short(value) -> str:
    text = repr(value)
    return text if len(text) <= 80 else f"{text[:77]}..."
