"""A :class:`~pystratum.tree.TreeSampler`'s stream as a batch source (torch-free).

The tree is a sequential stream: draw ``d`` can only be made after draws
``0..d-1``. With ``epoch_length`` L, epoch ``k`` is the ``k``-th block of L
draws after the tree's position when the source was built (for a fresh
tree, draws ``k*L .. (k+1)*L - 1``), cut into ``ceil(L / batch_size)``
global batches. Opening an epoch moves the tree to the epoch's first draw
(on from where it stands, or replayed from the nearest earlier state it
knows) and draws the epoch once; serving that epoch again (the epoch rule
under several replicas: a peek, a repeated ``iter()``) reuses those draws
and never moves the tree. Without ``epoch_length`` the stream is endless:
rank ``r`` of ``n`` takes global batch ``r`` of every round of ``n``
batches, drawn one round at a time, and saves where the stream stands.

Besides the tree's public API (``draw``, ``state_dict``, ``load_state_dict``,
``position``, ``aux_names``), the source builds the state of the tree's
stream at draw 0 for a seed (:func:`_start_state`), so that a resume with
another seed can still serve epochs before the one it resumed.
"""

from __future__ import annotations

import numpy as np

from ._engine import Engine
from ._sampler import _plain_engine_state

__all__ = ["TreeSource"]

# Draws skipped (replayed and dropped) per call when moving to an epoch's start:
# bounded memory however far the target is.
_SKIP_PIECE = 1 << 20


class TreeSource:
    """Batches of ``batch_size`` draws of ``tree``'s stream (see the module docstring)."""

    def __init__(self, tree, batch_size: int, num_replicas: int):
        self.tree = tree
        self.batch_size = batch_size
        self.num_replicas = num_replicas
        self.epoch_length = tree.epoch_length
        self.num_batches = (None if self.epoch_length is None
                            else -(-self.epoch_length // batch_size))
        self._origin = tree.position  # epoch 0's first draw
        # Tree states the source may replay from, by position (the start, and a resume's).
        self._anchors = {tree.position: tree.state_dict()}
        self._opened = None  # (epoch, the epoch opened last)

    # ---------------------------------------------------------- the stream's state

    def state_dict(self) -> dict:
        """The tree's state where it stands (for an epoch no pass has opened yet)."""
        return self.tree.state_dict()

    @property
    def origin(self) -> int:
        """Epoch 0's first draw (a resume on another tree needs it: see :meth:`restore`)."""
        return self._origin

    def restore(self, epoch: int, state: dict, origin: int | None = None) -> None:
        """Load a saved tree state: the stream before ``epoch`` (or, endless, where it stood).

        ``origin`` is the saving source's epoch 0 first draw (None: a state saved
        without it, this source's own is kept). Every later epoch, earlier ones
        too, is then the saving run's: the tree states this source may replay
        from are those of the restored seed only (another seed's are another
        stream), plus that seed's draw 0.
        """
        self.tree.load_state_dict(state)
        if origin is not None:
            self._origin = origin
        seed = state["seed"]
        self._anchors = {position: known for position, known in self._anchors.items()
                         if known["seed"] == seed}
        if 0 not in self._anchors:
            self._anchors[0] = _start_state(self.tree)
        self._anchors[self.tree.position] = state
        self._opened = None

    def __getstate__(self) -> dict:
        state = self.__dict__.copy()
        state["_opened"] = None  # an opened epoch's draws are recomputed on demand
        return state

    # ---------------------------------------------------------- the source

    def open(self, epoch: int):
        """Epoch ``epoch`` (finite), or the endless stream from where the rule says."""
        opened = self._opened
        if self.epoch_length is None:
            if opened is not None and opened[0] == epoch:
                # The same epoch again (several replicas): from where its first pass began.
                self.tree.load_state_dict(opened[1].stream_state)
            opened = _EndlessEpoch(self)
            self._opened = (epoch, opened)
            return opened
        if opened is not None and opened[0] == epoch:
            return opened[1]
        self._opened = None  # free the previous epoch's draws first
        self._seek(self._origin + epoch * self.epoch_length)
        stream_state = self.tree.state_dict()
        draws = self.tree.draw(self.epoch_length)
        opened = _TreeEpoch(self, draws, stream_state)
        self._opened = (epoch, opened)
        return opened

    def _seek(self, target: int) -> None:
        """Move the tree to draw number ``target`` (replaying the stream if it is past it)."""
        tree = self.tree
        if tree.position > target:
            earlier = [position for position in self._anchors if position <= target]
            if not earlier:
                raise ValueError(
                    f"cannot serve an epoch starting at draw {target}: the earliest tree state "
                    f"this sampler knows is draw {min(self._anchors)}. Build a new "
                    f"TreeBatchSampler on a tree at (or before) that draw.")
            tree.load_state_dict(self._anchors[max(earlier)])
        remaining = target - tree.position
        while remaining > 0:
            step = min(remaining, _SKIP_PIECE)
            tree.draw(step)
            remaining -= step


def _start_state(tree) -> dict:
    """The tree's state at draw 0 of its current seed's stream (the tree is not moved)."""
    state = tree.state_dict()
    state["position"] = 0
    state["engine"] = _plain_engine_state(Engine(tree.tree, tree._seed_sequence).state())
    return state


def _items(tree, indices: np.ndarray, aux: dict, lo: int, hi: int) -> list:
    """Draws ``lo..hi-1`` of a block as items: ints, or (int, {aux name: value})."""
    rows = indices[lo:hi].tolist()
    if not aux:
        return rows
    names = tree.aux_names
    columns = [aux[name][lo:hi].tolist() for name in names]
    return [(row, dict(zip(names, values))) for row, values in zip(rows, zip(*columns))]


class _TreeEpoch:
    """One epoch's draws, drawn once; global batch ``b`` is draws ``b*B .. (b+1)*B - 1``."""

    def __init__(self, source: TreeSource, draws, stream_state: dict):
        self._tree = source.tree
        self._batch_size = source.batch_size
        self._indices = draws.indices
        self._aux = draws.aux
        self.stream_state = stream_state
        self.rows_per_batch = source.batch_size

    def batches(self, ids) -> list:
        size, total = self._batch_size, self._indices.shape[0]
        return [_items(self._tree, self._indices, self._aux, b * size, min((b + 1) * size, total))
                for b in np.asarray(ids).tolist()]


class _EndlessEpoch:
    """The endless stream from the tree's position, one round of ``num_replicas`` batches
    at a time; global batch ``j*n + r`` is batch ``r`` of round ``j`` (from this start)."""

    chunk_batches = 1  # draw a round only when the loader asks for its batch

    def __init__(self, source: TreeSource):
        self._tree = source.tree
        self._batch_size = source.batch_size
        self._replicas = source.num_replicas
        self.stream_state = self._tree.state_dict()
        self._rounds = 0  # rounds drawn so far
        self._last = None  # the last round's draws

    def batches(self, ids) -> list:
        out = []
        size = self._batch_size
        for b in np.asarray(ids).tolist():
            round_, part = divmod(b, self._replicas)
            while self._rounds <= round_:
                self._last = self._tree.draw(size * self._replicas)
                self._rounds += 1
            lo = part * size
            out.append(_items(self._tree, self._last.indices, self._last.aux, lo, lo + size))
        return out

    def resume_point(self, yielded: int) -> tuple:
        """The stream where it stands (after the last round drawn), nothing yielded of it:
        a resume draws on from there."""
        return 0, self._tree.state_dict()
