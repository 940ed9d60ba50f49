"""The serving layer: how every sampler family serves its epochs (no torch, pandas or rpy2).

A sampler is "check arguments, build a batch source"; the rest is here, once:

* a **batch source** (:class:`BatchSource`) has ``num_batches`` (global
  batches per epoch; None for an endless stream) and ``open(epoch)``, which
  returns an **opened epoch** with ``stream_state`` (the random stream's
  state before the epoch: what a resume of it restores) and
  ``batches(ids)``: the batches with those global indices, in order (lists
  of rows, or the family's batch type). Random access by index, as grain's
  samplers: which rank or worker asks for a batch never changes it. An
  opened epoch may set ``rows_per_batch`` or ``chunk_batches`` (how many
  batches one ``batches()`` call should cover) and ``resume_point(yielded)``
  (an endless stream saving where it stands).
* :class:`EpochPass` (what ``iter(sampler)`` returns) owns the lazy start,
  the epoch rule through :class:`EpochProgress`, rank sharding of whole
  batches (``pystratum.serving._sharding``), chunked conversion, the count of
  batches yielded and the resume point: progress lives in an iterator object
  with its own ``state_dict()``, as torchdata's iterators.
* :class:`EpochServed` is the samplers' base: ``epoch``, ``len()``,
  ``set_epoch`` and copy/pickle checkpoints.
* :mod:`._state` reads the resume envelope every family's state shares
  (epoch, batches yielded, seed, stream position), refusing forged values
  with a TypeError/ValueError naming the key and never reseeding.

Sources: :class:`PlanSource` (materialised plans: numpy, R, torch streams),
:class:`LabelPlanSource` (label-matrix plans: ``MultiLabel``),
:class:`LazyPlanSource` (``rng="index"``), the negative pairs
(``pystratum.negatives``) and the tree (``pystratum.tree._source``).
"""

from __future__ import annotations

from typing import Protocol

import numpy as np

from ._pass import CHUNK_ROWS, EpochPass
from ._plans import LabelPlanSource, LabelRows, LazyPlanSource, PlanSource
from ._progress import EpochProgress, EpochServed
from ._state import Resume, check_format, read_resume, read_seed, read_stream

__all__ = ["BatchSource", "CHUNK_ROWS", "EpochPass", "EpochProgress", "EpochServed",
           "LabelPlanSource", "LabelRows", "LazyPlanSource", "OpenedEpoch", "PlanSource", "Resume", "check_format",
           "read_resume", "read_seed", "read_stream"]


class OpenedEpoch(Protocol):
    """One epoch of a source, ready to serve batches by global index."""

    stream_state: dict

    def batches(self, ids: np.ndarray) -> list:
        """The batches with global indices ``ids`` (int64, in serving order)."""


class BatchSource(Protocol):
    """What a sampler hands to :class:`EpochPass`."""

    num_batches: int | None

    def open(self, epoch: int) -> OpenedEpoch:
        """Epoch ``epoch``, its stream positioned (a sequential stream is advanced here)."""
