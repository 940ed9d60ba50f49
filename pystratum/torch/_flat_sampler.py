"""StratifiedSampler: the ``sampler=`` face, a flat view of the batch sampler's passes.

Code that accepts only a per-row sampler plus ``batch_size`` (Hugging Face
``Trainer._get_train_sampler``, many training scripts) cuts the row stream
into batches itself: ``BatchSampler(sampler, batch_size, drop_last)``. For
a policy whose batches all hold the same number of rows, that cut falls on
the batch sampler's own boundaries, so yielding the batch sampler's batches
row after row rebuilds exactly its batches. Nothing is planned here: every
epoch, resume point and rank is the wrapped :class:`StratifiedBatchSampler`'s
(its :class:`pystratum.serving.EpochPass`); this module only flattens.

Under accelerate (``Trainer``, ``accelerate launch``, ``torchrun`` with an
accelerate-prepared loader) pass ``num_replicas=1, rank=0``: accelerate
wraps the loader's batch sampler in ``BatchSamplerShard``, which shards the
batches across processes again. Left to default, ``num_replicas`` and
``rank`` come from the initialised process group, so each process first keeps
its own share of the batches and then ``BatchSamplerShard`` keeps only its
share of that share: with 2 processes half the rows are never trained, and
nothing fails. The defaults are right for a plain DDP ``DataLoader`` that
accelerate does not prepare; no warning is given since the sampler cannot tell
the two apart.
"""

from __future__ import annotations

from itertools import chain
from operator import length_hint
from typing import Iterator

import numpy as np
from torch.utils.data import Sampler

from ..serving._sharding import rank_batch_indices
from ..base._validation import check_bool, check_int, show
from ..policies import ClassesPerBatch, Downsample, FixedSize, Policy, Targets
from ._sampler import StratifiedBatchSampler

__all__ = ["StratifiedSampler", "fixed_batch_size", "resolve_batch_policy"]

STATE_FORMAT = "pystratum.torch.StratifiedSampler/1"
_STATE_KEYS = ("format", "rows_yielded", "batch_size", "batch_sampler")


def resolve_batch_policy(policy, batch_size, owner: str):
    """The policy a sampler uses: ``policy``, or ``FixedSize(batch_size)`` when it is None.

    A policy and ``batch_size`` together are a ValueError (which would win?),
    and so is neither.
    """
    if policy is not None and batch_size is not None:
        raise ValueError(
            f"batch_size must be None when a policy is given, got batch_size={show(batch_size)} "
            f"with policy={policy!r}: the policy sets the batch size. Pass one of them "
            f"(batch_size=n alone means FixedSize(n))."
        )
    if policy is None:
        if batch_size is None:
            raise ValueError(
                f"batch_size must be given when policy is None, got batch_size=None: {owner} "
                f"needs a batch size. Pass batch_size=<rows per batch> (FixedSize) or a policy "
                f"with one fixed batch size (Targets, ClassesPerBatch)."
            )
        return FixedSize(check_int(batch_size, "batch_size", minimum=1))
    return policy


def fixed_batch_size(policy, strata) -> tuple[int | None, bool, str]:
    """``(rows, last_may_be_short, reason)`` for ``policy`` on ``strata`` (encoded).

    ``rows`` is the size of every batch of every epoch (the last one may be
    shorter only where ``last_may_be_short``), or None with ``reason``
    saying why the policy's batches have no one size. Decided from the
    policy's own guarantee, since the sizes of one epoch do not prove the
    next epoch's: Targets and ClassesPerBatch promise one size; FixedSize
    with exact sizes promises ``batch_size`` rows but the last batch; the
    balanced FixedSize (floor/ceil sizes, the big batches rotating with the
    epoch) only when its batches divide the rows evenly.
    """
    if isinstance(policy, Targets):
        return policy.batch_size, False, ""
    if isinstance(policy, ClassesPerBatch):
        return policy.classes_per_batch * policy.per_class, False, ""
    if isinstance(policy, Downsample):
        # The base batches the kept rows, whose number is the same every epoch.
        rows, short, reason = fixed_batch_size(policy.base, policy.kept_strata(strata))
        return rows, short, reason and f"its base on the kept rows: {reason}"
    if isinstance(policy, FixedSize):
        if getattr(policy, "sizes", "balanced") == "exact":
            return policy.batch_size, True, ""
        n_rows = int(np.sum(strata.sizes, dtype=np.int64))
        count = int(policy.num_batches(strata))
        if n_rows % count == 0:
            return n_rows // count, False, ""
        small = n_rows // count
        return None, False, (
            f"{policy!r} makes {count} batches of {small} and {small + 1} rows for these "
            f"{n_rows} rows (round(N / batch_size) batches of floor/ceil size, the bigger ones "
            f"moving with the epoch), and a DataLoader cutting the row stream every batch_size "
            f"rows cannot rebuild batches of two sizes")
    if isinstance(policy, Policy):
        return None, False, (
            f"{policy!r} makes batches whose size follows from the data (it can differ from "
            f"batch to batch), and a DataLoader cuts the row stream every batch_size rows")
    return None, False, f"policy={policy!r} is not a pystratum policy"


class StratifiedSampler(Sampler[int]):
    """Row indices whose every ``batch_size`` consecutive rows are one stratified batch.

    ::

        sampler = StratifiedSampler(labels, batch_size=64, seed=1)
        loader = DataLoader(dataset, sampler=sampler, batch_size=sampler.batch_size)

    Parameters are those of :class:`StratifiedBatchSampler` (same meaning,
    same defaults; a plan of one batch is refused unless
    ``allow_single_batch=True``), plus ``batch_size``: ``policy=None`` with
    ``batch_size=n`` means ``FixedSize(n)``; a policy and ``batch_size``
    together are a ValueError.

    Policies: those whose batches all have one size: ``Targets``,
    ``ClassesPerBatch``, ``FixedSize`` with exact sizes (the last batch may
    be shorter), ``FixedSize(sizes="balanced")`` where its batches divide
    ``N`` evenly, and ``Downsample`` over one of these (its base batches the
    kept rows). Others (``MinPerStratum``, any policy whose batch sizes
    follow from the data) are refused with a ValueError giving the reason:
    use :class:`StratifiedBatchSampler` as ``batch_sampler=``.

    Guarantees
    ----------
    * ``DataLoader(ds, sampler=s, batch_size=s.batch_size,
      drop_last=drop_last)`` builds exactly the batches of
      ``StratifiedBatchSampler(strata, policy, seed=, rng=, num_replicas=,
      rank=, drop_last=)``, in order, on every rank, every epoch: this
      sampler yields that batch sampler's batches (its passes, not a copy of
      its logic) row after row. ``s.batch_size`` is the policy's batch size.
    * ``len(s)`` is the number of rows one ``iter()`` yields on this rank.
    * Epochs, ``set_epoch``, DDP (whole batches per rank) and copy/pickle
      checkpoints follow the batch sampler's rules.
    * ``state_dict()`` counts rows yielded in the epoch;
      ``load_state_dict()`` makes the next ``iter()`` continue after them,
      also inside a batch (torchdata's ``StatefulDataLoader`` saves and
      restores it through its batch sampler).
    """

    def __init__(self, strata, policy=None, *, batch_size=None, seed=None, rng="numpy",
                 num_replicas=None, rank=None, drop_last=False, dataset=None,
                 allow_single_batch=False, shards=None, window=1):
        policy = resolve_batch_policy(policy, batch_size, "StratifiedSampler")
        check_bool(drop_last, "drop_last")
        self._batches = StratifiedBatchSampler(
            strata, policy, seed=seed, rng=rng, num_replicas=num_replicas, rank=rank,
            drop_last=drop_last, dataset=dataset, allow_single_batch=allow_single_batch,
            shards=shards, window=window)
        inner = self._batches
        policy = inner.policy  # an int m is MinPerStratum(m) there
        rows, _, reason = fixed_batch_size(policy, inner._strata)
        if rows is None:
            raise ValueError(
                f"policy must make batches of one fixed size for StratifiedSampler (the "
                f"sampler= face), got policy={policy!r}: {reason}. Use "
                f"DataLoader(dataset, batch_sampler=StratifiedBatchSampler(strata, policy, ...)) "
                f"for this policy, or a policy of one batch size (Targets, ClassesPerBatch, "
                f"FixedSize whose batches divide the rows evenly)."
            )
        self.batch_size = int(rows)
        self._rows = self._rank_rows(policy)
        self._pending_skip = None  # (epoch, rows into the epoch) from load_state_dict
        self._pass = None  # the live flat pass: (batch pass, rows before current, current)

    # ------------------------------------------------------------------ public

    @property
    def batch_sampler(self) -> StratifiedBatchSampler:
        """The batch sampler whose batches this sampler yields row after row."""
        return self._batches

    @property
    def policy(self):
        return self._batches.policy

    @property
    def seed(self):
        """The seed in use (pass it as ``seed=`` to get the same rows again)."""
        return self._batches.seed

    @property
    def epoch(self) -> int:
        """The epoch being served, or (between epochs) the one the next ``iter()`` serves."""
        return self._batches.epoch

    @property
    def num_replicas(self) -> int:
        return self._batches.num_replicas

    @property
    def rank(self) -> int:
        return self._batches.rank

    @property
    def drop_last(self) -> bool:
        return self._batches.drop_last

    def set_epoch(self, epoch: int) -> None:
        """As :meth:`StratifiedBatchSampler.set_epoch`; a pending mid-batch resume of
        another epoch is forgotten, as the batch sampler forgets its own."""
        self._batches.set_epoch(epoch)
        if self._pending_skip is not None and self._pending_skip[0] != self._batches.epoch:
            self._pending_skip = None

    def __len__(self) -> int:
        """Rows one ``iter()`` yields on this rank (every epoch)."""
        return self._rows

    def __iter__(self) -> Iterator[int]:
        batch_pass = self._batches._epoch_pass()
        live = _FlatPass(batch_pass, self.batch_size, self)
        self._pass = live
        # chain.from_iterable walks each batch's list iterator in C; the pass
        # object only sees whole batches, and reads the rows still unread of
        # the current one from its iterator when a state is asked for.
        return chain.from_iterable(live.batches())

    def state_dict(self) -> dict:
        """The batch sampler's state at the last whole batch, plus ``rows_yielded``
        (rows of the epoch this rank has yielded). Plain values, like the batch sampler's."""
        inner = self._batches.state_dict()
        live = self._pass
        if (live is not None and live.batch_pass.in_progress
                and inner["epoch"] == live.batch_pass.epoch
                and inner["batches_yielded"] == live.batch_pass.batches_yielded):
            rows = live.rows_yielded()
        elif self._pending_skip is not None and self._pending_skip[0] == inner["epoch"]:
            rows = self._pending_skip[1]  # restored, not iterated yet
        else:
            rows = inner["batches_yielded"] * self.batch_size
        inner["batches_yielded"] = rows // self.batch_size
        return {"format": STATE_FORMAT, "rows_yielded": int(rows),
                "batch_size": self.batch_size, "batch_sampler": inner}

    def load_state_dict(self, state_dict: dict) -> None:
        """Resume from :meth:`state_dict`: the next ``iter()`` continues after the saved
        rows (the batch sampler's checks apply to its part; a TypeError/ValueError names
        the key of a wrong value)."""
        if not isinstance(state_dict, dict):
            raise TypeError(
                f"state_dict must be a dict, got {type(state_dict).__name__}: pass the dict "
                f"StratifiedSampler.state_dict() returned, unchanged.")
        if state_dict.get("format") != STATE_FORMAT or set(state_dict) != set(_STATE_KEYS):
            raise ValueError(
                f"state_dict must be a {STATE_FORMAT} state with keys {list(_STATE_KEYS)}, got "
                f"format={show(state_dict.get('format'))} and keys {sorted(state_dict)}: pass "
                f"the dict StratifiedSampler.state_dict() returned, unchanged.")
        size = check_int(state_dict["batch_size"], "state_dict['batch_size']", minimum=1)
        if size != self.batch_size:
            raise ValueError(
                f"state_dict['batch_size'] must be this sampler's batch_size={self.batch_size}, "
                f"got {size}: resume with the policy the state was saved with.")
        rows = check_int(state_dict["rows_yielded"], "state_dict['rows_yielded']", minimum=0,
                         maximum=self._rows)
        inner = state_dict["batch_sampler"]
        if not isinstance(inner, dict) or inner.get("batches_yielded") != rows // size:
            raise ValueError(
                f"state_dict['batch_sampler'] must be the batch sampler's state at "
                f"rows_yielded // batch_size = {rows // size} batches, got "
                f"{show(inner.get('batches_yielded') if isinstance(inner, dict) else inner)}: "
                f"pass the dict StratifiedSampler.state_dict() returned, unchanged.")
        self._batches.load_state_dict(inner)
        self._pass = None
        self._pending_skip = (self._batches.epoch, rows) if rows % size else None

    def __getstate__(self) -> dict:
        # A copy or pickle continues the epoch in progress from the same row (the
        # batch sampler's own checkpoint knows whole batches only).
        state = self.__dict__.copy()
        live = self._pass
        state["_pass"] = None
        if live is not None and live.batch_pass.in_progress:
            state["_resume"] = self.state_dict()
        return state

    def __setstate__(self, state: dict) -> None:
        resume = state.pop("_resume", None)
        self.__dict__.update(state)
        if resume is not None:
            self.load_state_dict(resume)

    def __repr__(self) -> str:
        inner = self._batches
        return (f"StratifiedSampler(n_rows={inner._strata.n_rows}, policy={inner.policy!r}, "
                f"batch_size={self.batch_size}, len={len(self)}, seed={inner.seed!r}, "
                f"rng={inner.rng!r}, epoch={inner.epoch}, num_replicas={inner.num_replicas}, "
                f"rank={inner.rank}, drop_last={inner.drop_last})")

    # ---------------------------------------------------------------- private

    def _rank_rows(self, policy) -> int:
        """Rows this rank's batches hold in every epoch (sizes do not depend on the epoch
        for the policies accepted)."""
        inner = self._batches
        allocation = policy.allocate(inner._strata, 0)
        if allocation.slots is not None:
            sizes = np.full(allocation.num_batches, self.batch_size, dtype=np.int64)
        else:
            sizes = np.diff(np.asarray(allocation.cuts, dtype=np.int64), axis=1).sum(axis=0)
        ids = rank_batch_indices(inner.num_batches, inner.num_replicas, inner.rank,
                                 inner.drop_last)[:len(inner)]
        return int(sizes[ids].sum())


class _FlatPass:
    """One epoch's pass of the batch sampler, seen row by row.

    Yields each batch's list iterator (``chain.from_iterable`` then yields
    its rows); keeps the rows of the batches before the current one, so
    that rows yielded = those + the current batch's rows already read.
    """

    __slots__ = ("batch_pass", "_size", "_owner", "_before", "_current", "_current_len")

    def __init__(self, batch_pass, size: int, owner):
        self.batch_pass = batch_pass
        self._size = size
        self._owner = owner  # its _pending_skip: (epoch, rows into it) to continue inside a batch
        self._before = 0
        self._current = None
        self._current_len = 0

    def rows_yielded(self) -> int:
        if self._current is None:
            return self.batch_pass.batches_yielded * self._size
        return self._before + self._current_len - length_hint(self._current)

    def batches(self):
        size = self._size
        short = None
        for batch in self.batch_pass:
            count = len(batch)
            if short is not None:
                raise RuntimeError(
                    f"StratifiedSampler: the batch sampler served a batch of {short} rows "
                    f"before the last one, but batch_size={size}; a DataLoader would cut these "
                    f"rows into other batches (a policy whose sizes changed after the check at "
                    f"construction). Please report it.")
            if count != size:
                short = count
            if self._current is None:
                # The first batch of the pass: where the epoch starts on this rank.
                self._before = (self.batch_pass.batches_yielded - 1) * size
            else:
                self._before += self._current_len
            rows = iter(batch)
            if self._current is None and self._owner._pending_skip is not None:
                # Read at the first batch, not at iter(): DataLoader makes iterators it
                # never uses, and those must not consume the resume.
                skip, self._owner._pending_skip = self._owner._pending_skip, None
                if skip[0] == self.batch_pass.epoch and skip[1] // size == \
                        self.batch_pass.batches_yielded - 1:
                    for _ in range(skip[1] % size):
                        next(rows)
            self._current = rows
            self._current_len = count
            yield rows
