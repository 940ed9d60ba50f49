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
``pystratum._sharding``, like the stratified sampler. Whole batches rather
than every n-th draw because draws are not independent items: ``repeat``
blocks and sequential pairs are consecutive draws, and sharding whole
batches keeps them together whenever ``batch_size`` is a multiple of the
block length.
"""

from __future__ import annotations

from typing import Iterator

try:
    import torch.distributed as dist
    from torch.utils.data import Sampler
except ImportError as error:  # pragma: no cover - exercised without torch installed
    raise ImportError(
        "pystratum.tree.torch needs PyTorch: pip install 'stratabatch[torch]' (or torch itself)."
    ) from error

from .._sharding import rank_batch_count, rank_batch_indices
from .._state_record import check_envelope
from .._validation import check_bool, check_epoch, check_int
from ..torch._distributed import resolve_replicas
from ._sampler import TreeSampler

__all__ = ["TreeBatchSampler"]

_STATE_FORMAT = "pystratum.tree.TreeBatchSampler/1"
_STATE_KEYS = ("format", "batch_size", "num_replicas", "drop_last", "batches_yielded",
               "epoch_start")


class TreeBatchSampler(Sampler[list]):
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
    * With ``epoch_length`` L, an ``iter()`` is one epoch: the next L draws of
      the stream cut into ``ceil(L / batch_size)`` global batches (the last
      shorter if needed); rank ``r`` of ``n`` yields batches ``r, r + n, ...``
      (``pystratum._sharding``), so without padding the ranks' batches are
      disjoint and together are the epoch's draws. All ranks yield
      ``len(sampler)`` batches.
    * Without ``epoch_length`` an ``iter()`` never ends: rank ``r`` yields
      global batches ``r, r + n, r + 2n, ...`` of the infinite stream.
    * Batches are a pure function of (config, metadata, seed, epoch): under
      ``torch.distributed`` rank 0's stream state is broadcast once, at
      construction, so ``seed=None`` works too.
    * ``state_dict()``/``load_state_dict()`` follow torchdata's ``Stateful``
      protocol: ``StatefulDataLoader`` resumes mid-epoch exactly; every rank
      is at the same place, so rank 0's state resumes every rank.
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
        if self.epoch_length is not None:
            self.num_batches = -(-self.epoch_length // self.batch_size)
            if self.drop_last and self.num_batches < self.num_replicas:
                raise ValueError(
                    f"drop_last=True leaves no batch for any rank: an epoch of epoch_length="
                    f"{self.epoch_length} draws makes {self.num_batches} batch(es) of "
                    f"batch_size={self.batch_size} but num_replicas={self.num_replicas}. Use a "
                    f"smaller batch_size, a longer epoch_length, or drop_last=False.")
        else:
            self.num_batches = None
        self._initial = tree.state_dict()
        self._epoch_start = None  # tree state at the start of the epoch being served
        self._yielded = 0
        self._resume = None  # (tree state, batches already yielded) from load_state_dict
        self._active = None

    def _share_stream(self) -> None:
        if self.num_replicas == 1:
            return
        if dist.is_available() and dist.is_initialized():
            state = [self.tree.state_dict() if dist.get_rank() == 0 else None]
            dist.broadcast_object_list(state, src=0)
            self.tree.load_state_dict(state[0])
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
        return rank_batch_count(self.num_batches, self.num_replicas, self.drop_last)

    def __iter__(self) -> Iterator[list]:
        return self._serve()

    def set_epoch(self, epoch: int) -> None:
        """Make the next ``iter()`` serve epoch ``epoch`` (draws ``epoch * L`` onwards).

        Not needed when epochs are served in order (each ``iter()`` is the
        next epoch). Another epoch is reached by replaying the stream from
        the start, which costs generating ``epoch * L`` draws.
        """
        epoch = check_epoch(epoch)
        if self.epoch_length is None:
            raise ValueError(
                "set_epoch needs epoch_length in the tree's config; without it the stream has "
                "no epochs.")
        if self._resume is not None:
            if self._resume[0]["position"] == epoch * self.epoch_length:
                return
            self._resume = None
        if self.tree.position == epoch * self.epoch_length:
            return
        self.tree.load_state_dict(self._initial)
        self.tree.draw(epoch * self.epoch_length)

    def state_dict(self) -> dict:
        """Where the stream stands: the tree's state at the start of the epoch being
        served and the batches this rank has yielded of it (plain Python values)."""
        if self._active is not None:
            start, yielded = self._epoch_start, self._yielded
        elif self._resume is not None:
            start, yielded = self._resume
        else:
            start, yielded = self.tree.state_dict(), 0
        return {"format": _STATE_FORMAT, "batch_size": self.batch_size,
                "num_replicas": self.num_replicas, "drop_last": self.drop_last,
                "batches_yielded": int(yielded), "epoch_start": start}

    def load_state_dict(self, state_dict: dict) -> None:
        """Resume from :meth:`state_dict`: the next ``iter()`` continues that epoch."""
        check_envelope(state_dict, "TreeBatchSampler", _STATE_FORMAT, _STATE_KEYS)
        for key, mine in (("batch_size", self.batch_size), ("num_replicas", self.num_replicas),
                          ("drop_last", self.drop_last)):
            if state_dict[key] != mine:
                raise ValueError(
                    f"Cannot resume: the state was saved with {key}={state_dict[key]!r} but "
                    f"this sampler has {key}={mine!r}. Build it with the arguments of the run "
                    f"that saved it.")
        yielded = check_int(state_dict["batches_yielded"], "state_dict['batches_yielded']",
                            minimum=0)
        self.tree.load_state_dict(state_dict["epoch_start"])  # checks the tree matches
        self._resume = (state_dict["epoch_start"], yielded)
        self._active = None

    def __repr__(self) -> str:
        return (f"TreeBatchSampler(batch_size={self.batch_size}, epoch_length="
                f"{self.epoch_length}, num_replicas={self.num_replicas}, rank={self.rank}, "
                f"drop_last={self.drop_last}, tree={self.tree!r})")

    # ---------------------------------------------------------- private

    def _serve(self):
        token = object()
        if self._resume is not None:
            start_state, skip = self._resume
            self._resume = None
            self.tree.load_state_dict(start_state)
        else:
            start_state, skip = self.tree.state_dict(), 0
        self._active = token
        self._epoch_start = start_state
        self._yielded = skip
        if self.num_batches is None:
            yield from self._serve_forever(token, skip)
            return
        draws = self.tree.draw(self.epoch_length)
        items = self.tree._items(draws.indices, draws.start)
        chosen = rank_batch_indices(self.num_batches, self.num_replicas, self.rank,
                                    self.drop_last, start=skip).tolist()
        for k, b in enumerate(chosen):
            batch = items[b * self.batch_size:(b + 1) * self.batch_size]
            if self._active is token:
                self._yielded = skip + k + 1
            yield batch
        if self._active is token:
            self._active = None
            self._yielded = 0

    def _serve_forever(self, token, skip):
        # Each round is one batch per rank; rank r keeps the r-th. The tree's
        # state after a round is the resume point, so skip is always 0 here.
        size = self.batch_size
        while True:
            draws = self.tree.draw(size * self.num_replicas)
            part = slice(self.rank * size, (self.rank + 1) * size)
            batch = self.tree._items(draws.indices[part], draws.start + self.rank * size)
            if self._active is token:
                self._epoch_start = self.tree.state_dict()
            yield batch
