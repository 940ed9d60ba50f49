"""One pass over a rank's batches of one epoch, for every sampler family (torchdata style).

A sampler's ``iter()`` returns an :class:`EpochPass`. The pass does nothing
until its first batch is asked for (DataLoader creates iterators it never
uses; those must not consume an epoch). Then it asks the sampler's
:class:`~pystratum.serving.EpochProgress` which epoch it serves and from
which batch (the epoch rule), opens that epoch of its batch source, takes
this rank's whole batches (``pystratum.serving._sharding``), asks the source for
them a chunk at a time and counts what it yields. The sampler only
remembers which pass started last, so progress lives in the pass (an
iterator object with its own ``state_dict``), never in flags on the sampler
or in a suspended generator.

The pass reports its progress (:meth:`EpochPass.state_dict`) but has no
``load_state_dict``: resuming goes through the sampler's state alone.
(torchdata restores an iterator that has both methods after ``iter()``, and
an iterator saved after its epoch ended would then pull the resumed loader
back into the finished epoch.)
"""

from __future__ import annotations

import numpy as np

from ._sharding import rank_batch_count, rank_batch_indices

__all__ = ["CHUNK_ROWS", "EpochPass"]

# Batches are asked of the source a chunk at a time: about 64k rows per call
# keeps conversion to Python lists in bulk without holding a whole epoch
# (tens of bytes per row) as Python objects.
CHUNK_ROWS = 1 << 16


class EpochPass:
    """Yields this rank's batches of one epoch, from the batch the epoch rule says on.

    ``source`` is a batch source (:class:`pystratum.serving.BatchSource`):
    ``num_batches`` (None: endless) and ``open(epoch)``. Rank ``rank`` of
    ``num_replicas`` serves global batches ``rank, rank + num_replicas, ...``
    (``drop_last`` as in ``pystratum.serving._sharding``: with ``short_last`` the
    epoch's short last batch is dropped before the batches are shared); an
    endless source is never padded.
    """

    def __init__(self, progress, source, *, num_replicas: int = 1, rank: int = 0,
                 drop_last: bool = False, chunk_rows: int = CHUNK_ROWS,
                 short_last: bool = False):
        self._progress = progress
        self._source = source
        self._num_replicas = num_replicas
        self._rank = rank
        self._drop_last = drop_last
        self._short_last = short_last
        self._chunk_rows = chunk_rows
        self.epoch = None
        self.batches_yielded = 0
        self.started = False
        self.exhausted = False
        self._opened = None
        self._stream_state = None
        self._count = None  # batches this rank serves per epoch (None: endless)
        self._step = 1
        self._chunk = []
        self._chunk_start = 0
        self._chunk_stop = 0

    @property
    def in_progress(self) -> bool:
        """Started and not yet ended by StopIteration (a last batch served still counts)."""
        return self.started and not self.exhausted

    @property
    def stream_state(self):
        """The random stream's state before this pass's epoch (None before the first batch)."""
        return self._stream_state

    def resume_point(self) -> tuple:
        """``(batches_yielded, stream_state)`` a resume of this pass starts from.

        An endless source may say where its stream stands now (it then
        resumes from there with nothing yielded); otherwise the epoch's start
        and the batches yielded.
        """
        point = getattr(self._opened, "resume_point", None)
        if point is not None and not self.exhausted:
            return point(self.batches_yielded)
        return self.batches_yielded, self._stream_state

    def state_dict(self) -> dict:
        """``{"epoch", "batches_yielded"}``: the epoch (None before the first batch) and position."""
        return {"epoch": self.epoch, "batches_yielded": self.batches_yielded}

    def __iter__(self):
        return self

    def __next__(self):
        k = self.batches_yielded
        if k >= self._chunk_stop:
            if not self.started:
                self._start()
                k = self.batches_yielded
            if self._count is not None and k >= self._count:
                self._finish()
                raise StopIteration
            self._load_chunk(k)
        batch = self._chunk[k - self._chunk_start]
        self.batches_yielded = k + 1
        return batch

    def _start(self) -> None:
        self.started = True
        epoch, start = self._progress.begin(self)
        self.epoch = epoch
        self.batches_yielded = start
        num_batches = self._source.num_batches
        if num_batches is not None:
            self._count = rank_batch_count(num_batches, self._num_replicas, self._drop_last,
                                           self._short_last)
        opened = self._source.open(epoch)
        self._opened = opened
        self._stream_state = opened.stream_state
        step = getattr(opened, "chunk_batches", None)
        if step is None:
            step = self._chunk_rows // max(1, int(getattr(opened, "rows_per_batch", 1)))
        self._step = max(1, int(step))

    def _load_chunk(self, k: int) -> None:
        stop = k + self._step
        if self._count is None:
            # Endless: rank r takes global batches r, r + n, ... (no padding).
            ids = np.arange(k, stop, dtype=np.int64) * self._num_replicas + self._rank
        else:
            stop = min(stop, self._count)
            ids = rank_batch_indices(self._source.num_batches, self._num_replicas, self._rank,
                                     self._drop_last, start=k, stop=stop,
                                     short_last=self._short_last)
        self._chunk = self._opened.batches(ids)
        self._chunk_start = k
        self._chunk_stop = stop

    def _finish(self) -> None:
        self.exhausted = True
        # The sampler keeps a reference to its last pass: drop the epoch's arrays.
        self._opened = None
        self._chunk = []
        self._chunk_start = self._chunk_stop = 0

    def __repr__(self) -> str:
        total = "" if self._count is None else f"/{self._count}"
        where = ("not started" if not self.started else
                 f"epoch {self.epoch}, {self.batches_yielded}{total} batches"
                 + (", ended" if self.exhausted else ""))
        return f"<pystratum EpochPass: {where}>"
