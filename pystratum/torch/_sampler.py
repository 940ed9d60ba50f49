"""StratifiedBatchSampler: the coordinator of the torch layer.

It validates arguments and builds a batch source: labels
(:mod:`._labels`), ranks and the shared seed (:mod:`._distributed`), the
epoch plan (the numpy core, as :class:`pystratum.serving.PlanSource` or
:class:`~pystratum.serving.LazyPlanSource`), the resume state
(:mod:`._state`) and the misuse checks (:mod:`._guards`). Serving (the epoch
rule, sharding, the pass over a rank's batches) is :mod:`pystratum.serving`'s. Batches come from
:func:`pystratum.engine._plan.plan_from_stream`, so they are the batches
``pystratum.plan_batches`` (and the R package) give for the same seed.
"""

from __future__ import annotations

import hashlib
import sys
import warnings
from typing import Iterator

import numpy as np
from torch.utils.data import Sampler

from ..engine._lazy import LazyPlan
from ..engine._plan import (BatchPlan, ShardOrder, check_shard_arguments, check_strata_are_groups,
                            label_draws, read_label_matrix, resolve_policy)
from ..engine._shards import ShardMembers
from ..strata._shards import read_shards
from ..engine._single_batch import check_several_batches, check_several_label_batches
from ..strata._members import StratumMembers, members_digest, members_of_codes, members_of_labels
from ..serving._sharding import kept_batches, rank_batch_count
from ..serving import (EpochPass, EpochProgress, EpochServed, LabelPlanSource, LabelRows,
                       LazyPlanSource, PlanSource)
from ..strata._encode import encode_strata, first_rows_of_codes
from ..streams._base import RNG_CHOICES, make_stream, stream_for
from ..base._validation import check_bool, check_choice, check_epoch, check_int, show
from ..policies import (FixedSize, MinPerStratum, StratumTooSmallWarning, check_allocation,
                        check_slot_layout)
from ._distributed import resolve_replicas, resolve_seed
from ._epoch import EpochSetter
from ._guards import check_dataset_length, check_iterating_caller
from ._labels import label_input, labels_from
from ._state import SamplerState, check_resumable, parse_state, same_seed

__all__ = ["StratifiedBatchSampler"]

def _policy_of(policy, min_samples_per_stratum, batch_size):
    """``policy`` (or ``min_samples_per_stratum``), or ``FixedSize(batch_size)``.

    ``batch_size`` with a policy (or ``min_samples_per_stratum``) is a
    ValueError: the policy sets the batch size, and one of the two would be
    ignored.
    """
    if batch_size is None:
        return resolve_policy(policy, min_samples_per_stratum)
    given = policy if policy is not None else min_samples_per_stratum
    if given is not None:
        name = "policy" if policy is not None else "min_samples_per_stratum"
        raise ValueError(
            f"batch_size must be None when a policy is given, got batch_size={show(batch_size)} "
            f"with {name}={given!r}: the policy sets the batch size. Pass one of them "
            f"(batch_size=n alone means FixedSize(n)).")
    return FixedSize(check_int(batch_size, "batch_size", minimum=1))


class StratifiedBatchSampler(EpochServed, Sampler[list[int]]):
    """Mini-batches whose stratum composition a policy guarantees, on every rank.

    Use it as ``DataLoader(dataset, batch_sampler=sampler)`` (not ``sampler=``,
    which is refused with a TypeError when the first epoch starts).

    Parameters
    ----------
    strata
        One label per row of the dataset, in anything the core accepts (list,
        numpy array, pandas Series/DataFrame, 2-D array for multi-column
        strata) or a torch tensor (any device but ``meta``; sparse,
        non-contiguous, bfloat16/float16 and complex tensors are read
        exactly); or a dataset exposing ``.targets`` or ``.labels``
        (torchvision style), or a ``Subset`` of one; or a callable taking no
        argument that returns such labels. A list of tensors with a shape
        is refused as ambiguous (rows or columns?); a ``TensorDataset`` is
        refused (pass its label tensor, and ``dataset=``). With
        ``rng="index"`` also a :class:`pystratum.StratumMembers` (from
        :func:`pystratum.parquet_strata` or :func:`pystratum.grouped_strata`):
        then no per-row label or code array is ever built, which is what
        lets a rank start on 10^9 rows kept in Parquet. Small-integer label
        arrays with ``rng="index"`` are grouped chunk by chunk too. With
        :class:`pystratum.policies.MultiLabel` a label matrix instead (rows
        x labels of 0/1: a 2-D array or tensor, a DataFrame, scipy.sparse,
        or a dataset whose ``.targets`` is 2-D); its batches are
        ``plan_batches(labels, policy, seed=, rng=, epoch=k)``'s, served,
        sharded and resumed as every policy's (``rng="index"`` is refused).
    policy : int or pystratum.policies.Policy
        The composition of every batch. An int ``m`` means
        ``MinPerStratum(m)``: at least ``m`` rows of every stratum per batch,
        ``max(1, N_min // m)`` batches per epoch (``N_min`` the smallest
        stratum's size); ``min_samples_per_stratum=m`` is accepted as a
        keyword too. ``FixedSize(batch_size)`` gives batches of exactly
        ``batch_size`` rows but a shorter last one, every stratum spread
        evenly. ``None`` with ``batch_size=n``: ``FixedSize(n)``.
    batch_size : int, optional
        Torch's convention: ``StratifiedBatchSampler(strata, batch_size=64)``
        is ``StratifiedBatchSampler(strata, FixedSize(64))``. Giving it with
        a policy (or ``min_samples_per_stratum``) is a ValueError. The
        sampler keeps no ``batch_size`` attribute (accelerate would read it
        and re-batch rows across processes).
    shuffle : bool
        False serves rows in order (the same batches every epoch).
    seed : None, int (or numpy SeedSequence with ``rng="numpy"``)
        None draws a fresh seed once, at construction, and keeps it (read it
        back as ``sampler.seed``). Under ``torch.distributed`` rank 0's fresh
        seed is broadcast to every rank, which needs every rank to build its
        sampler (as DDP code does anyway); without an initialised process
        group and ``num_replicas > 1``, pass ``seed=``.
    rng : {"numpy", "R", "torch", "index"}
        Where each epoch's permutation comes from. ``"R"``: epoch k is the
        (k+1)-th ``sample(N)`` after R's ``set.seed(seed)``. ``"torch"``: a
        private ``torch.Generator`` seeded with ``seed``; epoch k is its
        (k+1)-th ``torch.randperm(N)``, which is R torch's ``torch_randperm``
        after ``torch_manual_seed(seed)`` when both use the same libtorch
        version. The global random state is never used or changed.
        ``"index"``: the lazy plan (:func:`pystratum.lazy_plan`); each rank
        computes only its own batches, each when the DataLoader reaches it
        (O(N / num_replicas) work per epoch and rank, O(1) to resume); rows
        inside a batch come stratum by stratum.
    num_replicas, rank : int, optional
        Default to ``torch.distributed``'s world size and rank when it is
        initialised, else 1 and 0. Every rank computes the same plan from
        (seed, epoch), without communication, and takes whole batches
        round-robin (``batches[rank::num_replicas]``).
    drop_last : bool
        True has two effects, in this order. (1) A short last batch (exact
        ``FixedSize`` sizes when ``batch_size`` does not divide the rows,
        also as ``Downsample``'s base on the kept rows;
        ``policy.short_last_batch(strata)``) is left out, as
        ``torch.utils.data.BatchSampler(drop_last=True)`` leaves it out: its
        rows miss this epoch (other rows each epoch, since batches are
        reshuffled). In one process that is all it does; other policies'
        batches have no remainder batch and nothing is dropped. (2) With
        several replicas, the batches left are shared whole: ``floor(B' /
        num_replicas)`` per rank, the last ``B' % num_replicas`` served by no
        rank (``DistributedSampler``'s "trim the remainder across ranks").
        False (default): every batch is served, the short one too (on one
        rank), and short ranks are padded with whole batches reused from the
        start of the epoch. Every rank yields the same number of batches
        either way (DDP needs it).
    dataset : optional
        The dataset the indices are for; if given, the number of labels must
        equal ``len(dataset)`` (checked here). Without it the check happens
        when a DataLoader starts the first epoch.
    shards : None, 1-D array of int shard ids (one per row), or :func:`pystratum.shard_sizes`
        Where every row is stored: the shard-blocked order of
        ``pystratum.plan_batches(..., shards=, window=)`` (docs/SHARDS.md), so
        a batch reads a few shards and a small cache reads each shard about
        once per epoch; the batches' composition is unchanged. Recorded in
        ``state_dict()`` as a fingerprint of the layout: a state saved with
        other shards (or another ``window``) is refused, naming ``shards``.
    window : int
        Shards per block (default 1; see docs/SHARDS.md, "What W trades").
    allow_single_batch : bool
        A plan of one batch per epoch (every row in it: a stratum too small
        for two batches, a batch size at least the data's, several 0/1
        columns whose combinations leave one-row strata) is a ValueError at
        construction, naming the smallest strata and the fix, unless this is
        True (a whole-dataset batch usually exhausts GPU memory). The count
        is the plan's batches before sharding: 2 batches on 2 ranks (one
        each) are fine; 1 batch is refused whatever ``num_replicas``. For
        ``MultiLabel`` (batch_size at least the rows, or ``num_batches=1``)
        the error names the rows and the rarest labels.

    Guarantees
    ----------
    * Every batch has the policy's composition; for ``MinPerStratum(m)``
      at least ``m`` rows of every stratum. The plan has at least 2 batches
      per epoch (before sharding), or construction fails, unless
      ``allow_single_batch=True`` (then a stratum smaller than ``m`` gives one
      batch holding every row and a ``StratumTooSmallWarning`` says so).
    * ``len(sampler)`` is exactly the number of batches one ``iter()`` yields on
      this rank, every epoch; all ranks yield the same number.
    * Epochs. One replica: each ``iter()`` starts the next epoch (a new
      shuffle with the same per-batch stratum counts). Several replicas: the
      epoch changes only through ``set_epoch(k)``, as with
      ``DistributedSampler``; another ``iter()`` in the same epoch serves
      that epoch again, so an extra ``iter()`` on one rank (a peek) never
      moves it out of step with the others. An epoch served to its end that
      starts again without ``set_epoch`` warns once (``set_epoch`` was
      probably forgotten). ``set_epoch(k)`` selects epoch k for the next ``iter()`` in
      both cases. Batches are a pure function of (seed, epoch, rank).
    * ``state_dict()``/``load_state_dict()`` follow torchdata's ``Stateful``
      protocol: ``StatefulDataLoader`` resumes mid-epoch exactly. A copy or
      pickle of the sampler is such a checkpoint: it continues the epoch in
      progress from the same batch, and reports that epoch.
    """

    def __init__(self, strata, policy=None, *, shuffle=True, seed=None, rng="numpy",
                 num_replicas=None, rank=None, drop_last=False, dataset=None,
                 allow_single_batch=False, min_samples_per_stratum=None, batch_size=None,
                 shards=None, window=1):
        # No batch_size attribute is kept: accelerate reads batch_sampler.batch_size
        # and, with several processes, would refill or cut batches to that size.
        self.policy = _policy_of(policy, min_samples_per_stratum, batch_size)
        self.rng = check_choice(rng, "rng", RNG_CHOICES)
        self.shuffle = check_bool(shuffle, "shuffle")
        self.drop_last = check_bool(drop_last, "drop_last")
        self.allow_single_batch = check_bool(allow_single_batch, "allow_single_batch")
        self.num_replicas, self.rank = resolve_replicas(num_replicas, rank)
        self.window = check_shard_arguments(shards, window, self.policy, self.rng)
        self._shards = None
        self._lazy_shards = None
        # Scalar arguments first (as the core does), the O(N) strata after.
        # The core's check rejects a seed with shuffle=False; a missing seed is
        # resolved (drawn, or broadcast from rank 0) only when there is shuffling.
        self._stream = stream_for(
            self.rng, resolve_seed(seed, self.num_replicas) if self.shuffle else seed,
            self.shuffle)

        # rng="index" (shuffled) works from member lists alone: a StratumMembers
        # (parquet_strata, grouped_strata) is used as it is, small-integer
        # labels are grouped chunk by chunk; no per-row code array is kept.
        lazy = self.rng == "index" and self.shuffle
        self._members = None
        # A label-reading policy (MultiLabel) gets a label matrix and its own source.
        self._label_rows = None
        if getattr(self.policy, "reads_label_matrix", False):
            self._init_label_plan(strata, dataset, lazy)
            self._read_shards(shards)
            return
        # Errors about the data's length speak of member lists, not labels.
        self._from_members = isinstance(strata, StratumMembers)
        if self._from_members:
            if not lazy:
                raise ValueError(
                    f"strata is a StratumMembers (member lists, e.g. from parquet_strata or "
                    f"grouped_strata), which only the lazy plan reads, but rng={self.rng!r} and "
                    f"shuffle={self.shuffle!r}. Pass rng='index' (and shuffle=True), or pass "
                    f"the labels themselves (one per row) for the other streams."
                )
            known_dataset = None
            self._members = strata
        else:
            labels, known_dataset = labels_from(strata)
            if lazy:
                self._members = members_of_labels(labels)
            if self._members is None:
                encoded = encode_strata(labels)
                del labels
                check_strata_are_groups(encoded)
                if lazy:
                    self._members = members_of_codes(encoded.codes, encoded.sizes,
                                                     encoded.labels)
                    del encoded
                else:
                    self._strata = encoded
        if self._members is not None:
            check_strata_are_groups(self._members)
            self._strata = self._members
        n_rows = self._strata.n_rows
        for data in (known_dataset, dataset):
            if data is not None:
                check_dataset_length(data, n_rows, members=self._from_members)
        self._read_shards(shards)

        # Warn once, here, pointing at the caller's line; epochs do not repeat it.
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always", StratumTooSmallWarning)
            if lazy and self.policy.allocates_slots:
                # O(S), no refill list; a slot policy without lazy_slots() is refused
                # here, before the caller's DDP and model set-up, not at the first batch.
                num_batches = check_slot_layout(self.policy.lazy_slots(self._strata, 0)[0],
                                                self._strata, self.policy, 0).num_batches
            else:
                num_batches = check_allocation(self.policy.allocate(self._strata, 0),
                                               self._strata, self.policy, 0).num_batches
        # Counted before sharding: the plan's batches of all ranks (pystratum.engine._single_batch).
        check_several_batches(self._strata, self.policy, num_batches, self.allow_single_batch)
        for warning in caught:
            warnings.warn(warning.message, warning.category, stacklevel=2)
        self.num_batches = int(num_batches)
        # drop_last=True leaves out a short last batch (BatchSampler's meaning) before
        # the batches are shared across ranks (pystratum.serving._sharding).
        self._short_last = bool(self.policy.short_last_batch(self._strata))
        kept = kept_batches(self.num_batches, self.drop_last, self._short_last)
        if self.drop_last and kept < self.num_replicas:
            dropped = (" after dropping its short last batch"
                       if kept < self.num_batches else "")
            raise ValueError(
                f"drop_last=True leaves no batch for any rank: the plan has "
                f"{self.num_batches} batch(es) per epoch{dropped} ({self.policy!r}, smallest "
                f"stratum {int(self._strata.sizes.min())} rows) but num_replicas="
                f"{self.num_replicas}. Use a policy giving more batches (a smaller m or "
                f"batch_size), fewer replicas, or drop_last=False (ranks then reuse whole "
                f"batches)."
            )
        if self._lazy_shards is not None:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", StratumTooSmallWarning)
                # Pools or recycling cannot take the keyed shard order: refused here, not later.
                LazyPlan(self._members, self.policy, self._stream, 0,
                         num_batches=self.num_batches, shards=self._lazy_shards)
        self._digest = None
        self._progress = EpochProgress(type(self).__name__, self.num_replicas, self.rank)

    def _read_shards(self, shards) -> None:
        """``shards=`` read once for the rows (docs/SHARDS.md), its fingerprint for resumes."""
        if shards is None:
            return
        layout = read_shards(shards, self._strata.n_rows)
        self._shards = ShardOrder(layout, self.window)
        if self._members is not None:
            self._lazy_shards = (ShardMembers.of(self._members, layout), self.window)

    def _init_label_plan(self, strata, dataset, lazy) -> None:
        """``__init__`` for a label-reading policy: the label matrix, its batch count, the
        single-batch guard and ``drop_last``'s check; served by :class:`LabelPlanSource`."""
        if lazy:
            label_draws(self._stream, 0, 0, 0)  # rng="index": the core's refusal
        if isinstance(strata, StratumMembers):
            raise TypeError(
                f"strata is a StratumMembers (member lists), but policy={self.policy!r} reads a "
                f"label matrix (rows x labels of 0/1); pass the label matrix (a 2-D array or "
                f"tensor, a DataFrame, or a dataset whose .targets is 2-D).")
        self._from_members = False
        labels, known_dataset = labels_from(strata)
        matrix, names = read_label_matrix(label_input(self.policy, labels))
        del labels
        self._strata = self._label_rows = LabelRows(matrix, names)
        n_rows = self._strata.n_rows
        for data in (known_dataset, dataset):
            if data is not None:
                check_dataset_length(data, n_rows, label_matrix=True)
        self.num_batches = int(self.policy.batches_for(n_rows))
        check_several_label_batches(self._strata, self.policy, self.num_batches,
                                    self.allow_single_batch)
        self._short_last = False  # batch sizes follow the labels: no remainder batch
        if self.drop_last and self.num_batches < self.num_replicas:
            raise ValueError(
                f"drop_last=True leaves no batch for any rank: the plan has "
                f"{self.num_batches} batch(es) per epoch ({self.policy!r}, {n_rows} rows) but "
                f"num_replicas={self.num_replicas}. Use a smaller batch_size (or more "
                f"num_batches), fewer replicas, or drop_last=False (ranks then reuse whole "
                f"batches).")
        self._digest = None
        self._progress = EpochProgress(type(self).__name__, self.num_replicas, self.rank)

    # ------------------------------------------------------------------ public

    @property
    def min_samples_per_stratum(self):
        """``m`` of a ``MinPerStratum`` policy (None for other policies)."""
        return self.policy.m if isinstance(self.policy, MinPerStratum) else None

    @property
    def seed(self):
        """The seed in use: pass it as ``seed=`` to get the same batches again (None unshuffled)."""
        return None if self._stream is None else self._stream.seed

    @property
    def sampler(self) -> EpochSetter:
        """A ``set_epoch`` hook where Lightning and accelerate look for one.

        They call ``loader.batch_sampler.sampler.set_epoch(epoch)`` at each
        epoch start; this forwards it to :meth:`set_epoch`.
        """
        return EpochSetter(self)

    def __len__(self) -> int:
        """Batches one ``iter()`` yields on this rank (every epoch, every rank)."""
        return rank_batch_count(self.num_batches, self.num_replicas, self.drop_last,
                                self._short_last)

    def _epoch_pass(self) -> EpochPass:
        # As EpochServed's, plus the short last batch that drop_last leaves out.
        return EpochPass(self._progress, self._source(), num_replicas=self.num_replicas,
                         rank=self.rank, drop_last=self.drop_last,
                         short_last=self._short_last)

    def __iter__(self) -> Iterator[list[int]]:
        # The frame that called iter() tells whether DataLoader uses us as a
        # per-row sampler (sampler= instead of batch_sampler=) and which
        # dataset the indices are for.
        check_iterating_caller(self, sys._getframe(1), self._strata.n_rows)
        return self._epoch_pass()

    def plan(self, epoch: int | None = None) -> BatchPlan:
        """The core's :class:`~pystratum.BatchPlan` of an epoch (all ranks' batches).

        Default: the epoch being served or about to be. Inspection only; the
        sampler's own progress is not changed.
        """
        epoch = self.epoch if epoch is None else check_epoch(epoch)
        source = self._source()
        if self._members is not None:
            return source.plan(epoch).materialise()
        return source.plan(epoch)

    def state_dict(self) -> dict:
        """Progress to resume from: epoch, batches yielded on this rank, seed, stream position.

        Plain Python values (and a uint8 tensor for ``rng="torch"``), so
        ``torch.save``/``torch.load(weights_only=True)`` round-trip it. Every
        rank yields the same number of batches, so rank 0's state resumes
        every rank. The format is versioned (``state["format"]``).
        """
        epoch, yielded, stream_state = self._progress.position(
            lambda: {} if self._stream is None else self._stream.state_dict())
        return self._state(epoch, yielded, stream_state).to_dict()

    def load_state_dict(self, state_dict: dict) -> None:
        """Resume from :meth:`state_dict`: the next ``iter()`` continues that epoch.

        The saved seed replaces this sampler's seed. The sampler must
        otherwise match the saved one (same strata, policy, rng, shuffle,
        num_replicas, drop_last); a mismatch raises ValueError, and so does a
        corrupted state (TypeError for a wrong type), naming the key.
        """
        saved = parse_state(state_dict)
        check_resumable(saved, self._state(0, 0, {}), len(self))
        stream = None
        if self.shuffle:
            stream = self._stream if same_seed(saved.seed, self.seed) else None
            if stream is None:
                try:
                    stream = make_stream(self.rng, saved.seed)
                except (TypeError, ValueError) as error:
                    raise ValueError(
                        f"state_dict['seed']={saved.seed!r} cannot seed rng={self.rng!r}: "
                        f"{error}"
                    ) from None
            try:
                stream.load_state_dict(saved.stream)
            except (TypeError, ValueError, RuntimeError, KeyError) as error:
                raise ValueError(
                    f"state_dict['stream'] cannot be restored for rng={self.rng!r}: {error}. "
                    f"Pass the dict StratifiedBatchSampler.state_dict() returned, unchanged."
                ) from None
        self._stream = stream
        self._progress.restore(saved.epoch, saved.batches_yielded)

    def __repr__(self) -> str:
        return (
            f"StratifiedBatchSampler(n_rows={self._strata.n_rows}, n_strata="
            f"{self._strata.n_strata}, policy={self.policy!r}"
            + (f", min_samples_per_stratum={self.min_samples_per_stratum}"
               if self.min_samples_per_stratum is not None else "")
            + f", num_batches={self.num_batches}, len={len(self)}, shuffle={self.shuffle}, "
            f"seed={self.seed!r}, rng={self.rng!r}, epoch={self.epoch}, num_replicas="
            f"{self.num_replicas}, rank={self.rank}, drop_last={self.drop_last})"
        )

    # ---------------------------------------------------------------- private

    def _state(self, epoch: int, yielded: int, stream_state: dict) -> SamplerState:
        return SamplerState(
            epoch=int(epoch), batches_yielded=int(yielded), seed=self.seed, rng=self.rng,
            shuffle=self.shuffle, num_replicas=self.num_replicas, drop_last=self.drop_last,
            min_samples_per_stratum=self.min_samples_per_stratum,
            policy=self.policy.to_dict(),
            n_rows=self._strata.n_rows, num_batches=self.num_batches,
            strata_digest=self._strata_digest(), stream=stream_state,
            allow_single_batch=self.allow_single_batch,
            shards=None if self._shards is None else self._shards.layout.fingerprint(),
            window=None if self._shards is None else self.window,
        )

    def _source(self):
        """This sampler's epochs as a batch source (built per pass: a resume may swap the stream)."""
        if self._label_rows is not None:
            return LabelPlanSource(self._label_rows, self.policy, self._stream, self.rng,
                                   self.num_batches, shards=self._shards)
        if self._members is not None:
            return LazyPlanSource(self._members, self.policy, self._stream, self.num_batches,
                                  shards=self._lazy_shards)
        return PlanSource(self._strata, self.policy, self._stream, self.rng, self.num_batches,
                          shards=self._shards)

    def _strata_digest(self) -> str:
        """A fingerprint of the partition of rows into strata (labels' names do not matter).

        Saved in the state so that resuming with other data fails loudly
        instead of serving the old epoch's row numbers for new rows.
        """
        if self._digest is None and self._label_rows is not None:
            # The label matrix, bit-packed, with its shape: other labels fail to resume.
            matrix = self._label_rows.matrix
            self._digest = hashlib.blake2b(
                np.asarray(matrix.shape, np.int64).tobytes()
                + np.packbits(matrix, axis=1).tobytes(), digest_size=16).hexdigest()
        if self._digest is None and self._members is not None:
            self._digest = members_digest(self._members)
        if self._digest is None:
            codes = self._strata.codes
            n_strata = self._strata.n_strata
            # Number strata by first appearance: renaming labels keeps the digest.
            first_row = first_rows_of_codes(codes, n_strata)
            dtype = np.uint8 if n_strata <= 256 else np.uint16 if n_strata <= 65536 else np.int32
            canonical = np.empty(n_strata, dtype=dtype)
            canonical[np.argsort(first_row, kind="stable")] = np.arange(n_strata, dtype=dtype)
            self._digest = hashlib.blake2b(canonical[codes].tobytes(), digest_size=16).hexdigest()
        return self._digest
