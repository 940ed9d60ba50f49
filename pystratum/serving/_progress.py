"""Which epoch a sampler serves next, and from which batch: the epoch rule, once.

Every sampler that DataLoader iterates once per epoch (the stratified batch
sampler, the negative-pair sampler) follows the same rule:

- one replica: each ``iter()`` serves the next epoch; ``set_epoch`` is optional;
- several replicas: only ``set_epoch`` and ``load_state_dict`` move the epoch,
  so an extra ``iter()`` on one rank (a peek, a sanity check) cannot put it out
  of step with the other ranks; serving a finished epoch again without
  ``set_epoch`` warns once (a forgotten ``set_epoch``);
- after ``load_state_dict`` (or in a copy or pickle taken mid-epoch), the next
  ``iter()`` continues the saved epoch from the saved batch; ``set_epoch`` with
  that epoch keeps the position, any other epoch starts fresh.

The pass that started last holds the position inside its epoch. A pass is any
object with ``epoch``, ``batches_yielded``, ``in_progress``, ``exhausted`` and
``stream_state`` (the stream's state before its epoch); one that has a
``resume_point()`` method gives ``(batches_yielded, stream_state)`` to save
through it instead (an endless stream saves where it stands, not where its
pass began). :class:`pystratum.serving.EpochPass` is the pass of every sampler.

:class:`EpochServed` gives such a sampler its public face of the rule
(``epoch``, ``len()``, ``set_epoch``) and its copy/pickle checkpoint, once.
"""

from __future__ import annotations

import warnings
from typing import Callable

from ._sharding import rank_batch_count
from ..base._validation import check_epoch
from ._pass import EpochPass

__all__ = ["EpochProgress", "EpochServed"]


class EpochProgress:
    """The epoch position of one sampler on one rank (torch-free)."""


    def __init__(self, owner: str, num_replicas: int, rank: int):
        self._owner = owner  # the sampler's class name, for the warning
        self.num_replicas = num_replicas
        self.rank = rank
        self._next_epoch = 0
        self._resume = None  # (epoch, batches already yielded) from restore() or a copy
        self._active = None  # the pass that started last
        self._explicit = False  # set_epoch/restore since the last epoch began
        # set_epoch since the active pass began: the next pass starts afresh, so the
        # active one no longer holds the position (even with batches left to yield).
        self._left = False
        self._warned = False

    def _in_progress(self):
        """The active pass, if it still holds the position (started, not ended, not left)."""
        active = self._active
        if active is not None and active.in_progress and not self._left:
            return active
        return None

    @property
    def epoch(self) -> int:
        """The epoch being served, or (between epochs) the one the next pass serves."""
        active = self._in_progress()
        if active is not None:
            return active.epoch
        return self._resume[0] if self._resume is not None else self._next_epoch

    def set_epoch(self, epoch: int) -> None:
        """The next pass serves ``epoch`` (already validated by the caller)."""
        self._explicit = True
        if self._resume is not None and self._resume[0] == epoch:
            return
        self._resume = None
        self._next_epoch = epoch
        self._left = True

    def restore(self, epoch: int, batches_yielded: int) -> None:
        """The next pass continues ``epoch`` after ``batches_yielded`` batches."""
        self._resume = (epoch, batches_yielded)
        self._next_epoch = epoch
        self._active = None
        self._explicit = True

    def begin(self, epoch_pass) -> tuple[int, int]:
        """Called by ``epoch_pass`` at its first batch: (epoch, first batch) it serves."""
        if self._resume is not None:
            epoch, start = self._resume
            self._resume = None
        else:
            epoch, start = self._next_epoch, 0
            last = self._active
            # An epoch served to its end starting again without set_epoch is the
            # symptom of a forgotten set_epoch (a peek before the loop is not).
            if (self.num_replicas > 1 and not self._explicit and last is not None
                    and last.exhausted and last.epoch == epoch):
                self._warn_epoch_repeated(epoch)
        self._next_epoch = epoch + 1 if self.num_replicas == 1 else epoch
        self._explicit = False
        self._active = epoch_pass
        self._left = False
        return epoch, start

    def position(self, stream_state: Callable[[], dict]) -> tuple[int, int, dict]:
        """(epoch, batches yielded, stream state before that epoch) to save.

        ``stream_state()`` gives the stream's current state, used when no pass
        of the saved epoch has drawn from it yet.
        """
        active = self._in_progress()
        if active is not None:
            return (active.epoch, *_resume_point(active))
        active = self._active
        epoch, yielded = self._resume if self._resume is not None else (self._next_epoch, 0)
        if active is not None and active.epoch == epoch and self._resume is None:
            return epoch, yielded, active.stream_state  # the epoch is served again
        return epoch, yielded, stream_state()

    def checkpoint(self) -> tuple["EpochProgress", dict | None]:
        """A detached copy for a copied or pickled sampler, and the stream state to restore.

        An epoch in progress is continued by the copy from the same batch (the
        live pass is not copied); the stream state is the one before that epoch
        (None when no epoch is in progress: the stream is copied as it stands).
        """
        copy = EpochProgress.__new__(EpochProgress)
        copy.__dict__.update(self.__dict__)
        copy._active = None
        active = self._in_progress()
        if active is not None:
            yielded, stream_state = _resume_point(active)
            copy._resume = (active.epoch, yielded)
            copy._next_epoch = active.epoch
            return copy, stream_state
        return copy, None

    def _warn_epoch_repeated(self, epoch: int) -> None:
        if self._warned:
            return
        self._warned = True
        warnings.warn(
            f"{self._owner} (rank {self.rank} of num_replicas={self.num_replicas}) serves epoch {epoch} again: with several replicas the epoch "
            f"changes only through set_epoch(), so that an extra iter() on one rank (a peek, a "
            f"sanity check) cannot move it out of step with the other ranks. Call "
            f"sampler.set_epoch(epoch) before each epoch, as with DistributedSampler. "
            f"(Shown once.)",
            UserWarning,
            stacklevel=5,
        )


def _resume_point(active) -> tuple:
    """(batches yielded, stream state) to save for the pass ``active``."""
    point = getattr(active, "resume_point", None)
    if point is not None:
        return point()
    return active.batches_yielded, active.stream_state


class EpochServed:
    """Base of a sampler driven by an :class:`EpochProgress` (torch-free).

    The sampler sets ``_progress``, ``_stream`` (None when unshuffled),
    ``num_batches``, ``num_replicas``, ``rank`` and ``drop_last``, and
    ``_source()``, the batch source its passes serve (see
    :mod:`pystratum.serving`); :meth:`_epoch_pass` is then its ``iter()``.
    """

    def _epoch_pass(self) -> EpochPass:
        """One pass over this rank's batches of the epoch the rule picks (lazy: nothing
        happens before its first batch)."""
        return EpochPass(self._progress, self._source(), num_replicas=self.num_replicas,
                         rank=self.rank, drop_last=self.drop_last)

    def _restore_stream(self, epoch: int, stream_state: dict) -> None:
        """Put the stream where it stood before ``epoch`` (a copy or pickle resumes there)."""
        if self._stream is not None:
            self._stream.load_state_dict(stream_state)

    @property
    def epoch(self) -> int:
        """The epoch being served, or (between epochs) the one the next ``iter()`` serves."""
        return self._progress.epoch

    def __len__(self) -> int:
        """Batches one ``iter()`` yields on this rank (every epoch, every rank)."""
        return rank_batch_count(self.num_batches, self.num_replicas, self.drop_last)

    def set_epoch(self, epoch: int) -> None:
        """Make the next ``iter()`` serve epoch ``epoch`` (as ``DistributedSampler.set_epoch``).

        One replica: optional (each ``iter()`` moves to the next epoch).
        Several replicas: the only way the epoch changes; call it before every
        epoch. After ``load_state_dict``, ``set_epoch`` with the restored
        epoch keeps the mid-epoch position; any other epoch starts it fresh.
        """
        self._progress.set_epoch(check_epoch(epoch))

    def __getstate__(self) -> dict:
        # A copy or pickle is a checkpoint: an epoch in progress is continued
        # from the same batch by the copy (the live pass is not copied).
        state = self.__dict__.copy()
        state["_progress"], state["_resume_stream_state"] = self._progress.checkpoint()
        return state

    def __setstate__(self, state: dict) -> None:
        stream_state = state.pop("_resume_stream_state", None)
        self.__dict__.update(state)
        if stream_state is not None:
            self._restore_stream(self._progress.epoch, stream_state)
