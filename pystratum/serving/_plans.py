"""The stratified plans as batch sources: materialised (numpy, R, torch streams) and lazy.

Both serve lists of row indices (what ``DataLoader(batch_sampler=...)``
expects); weights are not served (``WeightedDataset`` carries them).
"""

from __future__ import annotations

import warnings

import numpy as np

from ..engine._lazy import LazyPlan
from ..engine._plan import advance_stream, label_draw_group, label_plan, plan_from_stream
from ..policies import StratumTooSmallWarning

__all__ = ["LabelPlanSource", "LabelRows", "LazyPlanSource", "PlanSource", "plan_batches",
           "split_rows"]


def split_rows(order: np.ndarray, bounds: np.ndarray) -> list:
    """Batches ``order[bounds[i]:bounds[i + 1]]`` as lists of Python ints (bulk conversion)."""
    count = bounds.shape[0] - 1
    if count <= 0:
        return []
    base = int(bounds[0])
    size = int(bounds[1]) - base
    if bounds.shape[0] > 2 and int(bounds[-1]) - base == size * count \
            and (np.diff(bounds) == size).all():
        # Equal batches (Targets, FixedSize): one reshape().tolist() builds them in C.
        return order[base:int(bounds[-1])].reshape(count, size).tolist()
    rows = order[base:int(bounds[-1])].tolist()
    edges = (bounds - base).tolist()
    return [rows[a:b] for a, b in zip(edges[:-1], edges[1:])]


def plan_batches(order: np.ndarray, bounds: np.ndarray, ids) -> list:
    """Batches ``ids`` of the plan ``(order, bounds)`` as lists of row indices."""
    ids = np.asarray(ids, dtype=np.int64)
    count = ids.shape[0]
    if count == 0:
        return []
    first, last = int(ids[0]), int(ids[-1])
    if last - first + 1 == count and (count == 1 or (np.diff(ids) == 1).all()):
        # Consecutive batches (one replica): one slice of the plan.
        return split_rows(order, bounds[first:last + 2])
    # A rank's batches: gather their rows into one array first.
    starts = bounds[ids]
    sizes = bounds[ids + 1] - starts
    edges = np.zeros(count + 1, dtype=np.int64)
    np.cumsum(sizes, out=edges[1:])
    positions = np.arange(int(edges[-1]), dtype=np.int64)
    positions += np.repeat(starts - edges[:-1], sizes)
    return split_rows(order[positions], edges)


class PlanSource:
    """The epochs of ``plan_from_stream`` (the core's batches for the same seed), as a source.

    ``open(epoch)`` moves a sequential stream (R, torch) to the start of the
    epoch and records its state (what a resume of this epoch restores); the
    plan itself is computed at the first ``batches()`` call, once per opened
    epoch.
    """

    def __init__(self, strata, policy, stream, rng: str, num_batches: int, shards=None):
        self.strata = strata
        self.policy = policy
        self.stream = stream
        self.rng = rng
        self.num_batches = num_batches
        self.rows_per_batch = max(1, strata.n_rows // max(1, num_batches))
        # A ShardOrder (pystratum.engine._plan): every epoch's group starts with the shards.
        self.shards = shards

    def plan(self, epoch: int, with_weights: bool = True):
        """The whole :class:`~pystratum.BatchPlan` of ``epoch`` (every rank's batches)."""
        with warnings.catch_warnings():
            # Already said once, when the sampler was built.
            warnings.simplefilter("ignore", StratumTooSmallWarning)
            # num_batches: the sampler promised len() at construction, for every epoch.
            return plan_from_stream(self.strata, self.policy, self.stream, epoch=epoch,
                                    rng=self.rng, num_batches=self.num_batches,
                                    with_weights=with_weights, shards=self.shards)

    def open(self, epoch: int) -> "_PlanEpoch":
        if self.stream is None:
            return _PlanEpoch(self, epoch, {})
        # The stream position before this epoch: a resume costs one permutation, not epoch + 1.
        self._advance(epoch)
        return _PlanEpoch(self, epoch, self.stream.state_dict())

    def _advance(self, epoch: int) -> None:
        advance_stream(self.stream, self.strata, self.policy, epoch,
                       None if self.shards is None else self.shards.n_shards)


class LabelRows:
    """A checked label matrix (N x L bools) and its label names, as a sampler holds it.

    ``sizes`` are the positives of each label (what the messages name),
    ``n_strata`` the number of labels.
    """

    def __init__(self, matrix: np.ndarray, names):
        self.matrix = matrix
        self.labels = tuple(names)
        self.n_rows = int(matrix.shape[0])
        self.n_strata = int(matrix.shape[1])
        self.sizes = matrix.sum(axis=0, dtype=np.int64)


class LabelPlanSource(PlanSource):
    """The epochs of a label-reading policy's plan (:func:`pystratum.engine._plan.label_plan`,
    the core's batches for the same seed), as a source: a :class:`PlanSource` whose
    ``strata`` are :class:`LabelRows`.

    Each epoch draws one group (:func:`~pystratum.engine._plan.label_draw_group`:
    rows, then batches), so ``open(epoch)`` moves a sequential stream (R, torch)
    over the skipped epochs' groups; the plan is computed at the first
    ``batches()`` call.
    """

    def plan(self, epoch: int, with_weights: bool = True):
        """The whole :class:`~pystratum.BatchPlan` of ``epoch`` (label plans carry no weights)."""
        return label_plan(self.strata.matrix, self.policy, self.stream, epoch=epoch, rng=self.rng,
                          names=self.strata.labels, shards=self.shards)

    def _advance(self, epoch: int) -> None:
        group = label_draw_group(self.strata.n_rows, self.num_batches)
        if self.shards is not None:
            group = [(self.shards.n_shards, self.shards.n_shards)] + group
        self.stream.advance_to(self.strata.n_rows, epoch, lambda k: group)


class _PlanEpoch:
    """One opened epoch of a :class:`PlanSource` (or :class:`LabelPlanSource`): random access to its batches by index."""

    def __init__(self, source: PlanSource, epoch: int, stream_state: dict):
        self._source = source
        self.epoch = epoch
        self.stream_state = stream_state
        self.rows_per_batch = source.rows_per_batch
        self._order = None
        self._bounds = None

    def batches(self, ids: np.ndarray) -> list:
        """Batches ``ids`` (global indices of the epoch) as lists of row indices."""
        if self._order is None:
            # Iteration serves indices only (WeightedDataset carries the weights).
            plan = self._source.plan(self.epoch, with_weights=False)
            self._order, self._bounds = plan.order, plan.bounds
        return plan_batches(self._order, self._bounds, ids)


class LazyPlanSource:
    """The lazy plan (``rng="index"``) as a source: only the batches asked for are computed."""

    def __init__(self, members, policy, stream, num_batches: int, shards=None):
        self.members = members
        self.policy = policy
        self.stream = stream
        self.num_batches = num_batches
        self.rows_per_batch = max(1, members.n_rows // max(1, num_batches))
        # (ShardMembers, window), grouped once: each epoch then costs its O(S * H) table.
        self.shards = shards

    def plan(self, epoch: int) -> LazyPlan:
        """The :class:`~pystratum.LazyPlan` of ``epoch``."""
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", StratumTooSmallWarning)
            return LazyPlan(self.members, self.policy, self.stream, epoch,
                            num_batches=self.num_batches, shards=self.shards)

    def open(self, epoch: int) -> "_LazyEpoch":
        return _LazyEpoch(self.plan(epoch), self.rows_per_batch)


class _LazyEpoch:
    """One opened epoch of a :class:`LazyPlanSource`; the index stream has no position."""

    def __init__(self, plan: LazyPlan, rows_per_batch: int):
        self._plan = plan
        self.stream_state = {}
        self.rows_per_batch = rows_per_batch

    def batches(self, ids: np.ndarray) -> list:
        """Batches ``ids`` (global indices of the epoch) as lists of row indices, O(rows)."""
        if len(ids) == 0:
            return []
        return split_rows(*self._plan.batches_of(ids))
