"""One pass over a rank's batches of one epoch, with its own progress (torchdata style).

``StratifiedBatchSampler.__iter__`` returns an :class:`EpochIterator`. The
iterator does nothing until its first batch is asked for (DataLoader creates
iterators it never uses; those must not consume an epoch); then it asks its
``begin`` callback which epoch it serves and from which batch, and keeps its
own count of batches yielded. The sampler only remembers which iterator
started last, so progress is never split between flags on the sampler and a
suspended generator.

The iterator reports its progress (:meth:`EpochIterator.state_dict`) but has
no ``load_state_dict``: resuming goes through the sampler's state alone.
(torchdata restores an iterator that has both methods after ``iter()``, and
an iterator saved after its epoch ended would then pull the resumed loader
back into the finished epoch.)
"""

from __future__ import annotations

import bisect
from dataclasses import dataclass
from typing import Callable

import numpy as np

__all__ = ["EpochBatches", "EpochIterator", "EpochSetter"]

# Batches are converted to Python lists a chunk at a time: one ``tolist()``
# per ~64k rows keeps conversion in bulk without holding a whole epoch (tens
# of bytes per row) as Python ints.
CHUNK_ROWS = 1 << 16


@dataclass(frozen=True)
class EpochBatches:
    """What an iterator serves: batches ``start..`` of ``order``/``bounds`` (this rank's).

    ``stream_state`` is the random stream's position before the epoch (what a
    resume of this epoch restores).
    """

    epoch: int
    start: int
    order: np.ndarray | None
    bounds: np.ndarray | None
    stream_state: dict
    # Lazy plans (rng="index"): batches first..stop-1 of this rank on demand,
    # as (order, bounds), instead of order/bounds; ``count`` batches in all.
    source: Callable | None = None
    count: int = 0
    rows_per_batch: int = 1


class EpochIterator:
    """Yields one epoch's batches as lists of ints, from ``begin(self).start`` on."""

    def __init__(self, begin: Callable[["EpochIterator"], EpochBatches],
                 chunk_rows: int = CHUNK_ROWS):
        self._begin = begin
        self._chunk_rows = chunk_rows
        self.epoch = None
        self.batches_yielded = 0
        self.stream_state = None
        self.started = False
        self.exhausted = False
        self._order = None
        self._edges = None
        self._source = None
        self._n_batches = 0
        self._chunk = []
        self._chunk_start = 0
        self._chunk_stop = 0
        self._uniform = 0  # the common size of every batch, 0 if sizes differ

    @property
    def in_progress(self) -> bool:
        """Started and not yet ended by StopIteration (a last batch served still counts)."""
        return self.started and not self.exhausted

    def state_dict(self) -> dict:
        """``{"epoch", "batches_yielded"}``: the epoch (None before the first batch) and position."""
        return {"epoch": self.epoch, "batches_yielded": self.batches_yielded}

    def __iter__(self):
        return self

    def __next__(self) -> list:
        k = self.batches_yielded
        if k >= self._chunk_stop:
            if not self.started:
                self._start()
                k = self.batches_yielded
            if k >= self._n_batches:
                self._finish()
                raise StopIteration
            self._load_chunk(k)
        batch = self._chunk[k - self._chunk_start]
        self.batches_yielded = k + 1
        return batch

    def _start(self) -> None:
        self.started = True
        batches = self._begin(self)
        self.epoch = batches.epoch
        self.stream_state = batches.stream_state
        self.batches_yielded = batches.start
        self._source = batches.source
        if self._source is not None:
            self._n_batches = batches.count
            self._step = max(1, self._chunk_rows // max(1, batches.rows_per_batch))
            return
        self._order = batches.order
        self._edges = batches.bounds.tolist()
        self._n_batches = len(self._edges) - 1
        sizes = np.diff(batches.bounds)
        if sizes.shape[0] and sizes.min() == sizes.max():
            # Equal batches (Targets): one reshape().tolist() builds a chunk's lists in C.
            self._uniform = int(sizes[0])

    def _load_chunk(self, k: int) -> None:
        if self._source is not None:
            # Only the batches about to be served are computed (O(1) resume).
            stop = min(self._n_batches, k + self._step)
            order, bounds = self._source(k, stop)
            rows = order.tolist()
            edges = bounds.tolist()
            self._chunk = [rows[a:b] for a, b in zip(edges[:-1], edges[1:])]
            self._chunk_start = k
            self._chunk_stop = stop
            return
        edges = self._edges
        # Batches k..stop-1 span at most chunk_rows rows (at least one batch).
        stop = max(k + 1, bisect.bisect_right(edges, edges[k] + self._chunk_rows) - 1)
        base = edges[k]
        if self._uniform:
            self._chunk = self._order[base:edges[stop]].reshape(-1, self._uniform).tolist()
        else:
            rows = self._order[base:edges[stop]].tolist()
            self._chunk = [rows[edges[j] - base:edges[j + 1] - base] for j in range(k, stop)]
        self._chunk_start = k
        self._chunk_stop = stop

    def _finish(self) -> None:
        self.exhausted = True
        # The sampler keeps a reference to its last iterator: drop the epoch's arrays.
        self._order = None
        self._source = None
        self._chunk = []
        self._chunk_start = self._chunk_stop = 0

    def __repr__(self) -> str:
        where = ("not started" if not self.started else
                 f"epoch {self.epoch}, {self.batches_yielded}/{self._n_batches} batches"
                 + (", ended" if self.exhausted else ""))
        return f"<pystratum EpochIterator: {where}>"


class EpochSetter:
    """``batch_sampler.sampler`` of a pystratum batch sampler: only forwards ``set_epoch``.

    Lightning and accelerate call ``set_epoch`` on ``loader.batch_sampler.sampler``
    (never on the batch sampler itself) at the start of every epoch; this object
    lets that call reach the sampler, which needs it under ``num_replicas > 1``.
    """

    __slots__ = ("_owner",)

    def __init__(self, owner):
        self._owner = owner

    def set_epoch(self, epoch: int) -> None:
        self._owner.set_epoch(epoch)

    def __repr__(self) -> str:
        return f"<set_epoch hook of a pystratum {type(self._owner).__name__}>"
