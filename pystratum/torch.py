"""PyTorch batch sampler: every batch contains every stratum, on every rank.

::

    from pystratum.torch import StratifiedBatchSampler
    sampler = StratifiedBatchSampler(train_set.targets, 10, seed=1)
    loader = DataLoader(train_set, batch_sampler=sampler)

The sampler only validates, keeps state (epoch, rank, stream position,
batches yielded) and converts; the batches themselves come from the numpy
core (:func:`pystratum._plan.plan_from_stream`), so they are the batches
``pystratum.plan_batches`` (and the R package) give for the same seed.
"""

from __future__ import annotations

import bisect
import hashlib
import numbers
import warnings
from typing import Iterator

import numpy as np

try:
    import torch
    import torch.distributed as dist
    from torch.utils.data import Sampler
except ImportError as error:  # pragma: no cover - exercised without torch installed
    raise ImportError(
        "pystratum.torch needs PyTorch: pip install 'pystratum[torch]' (or torch itself)."
    ) from error

from ._plan import BatchPlan, plan_from_stream
from ._sharding import rank_batch_count, rank_batch_indices
from ._strata import encode_strata, first_rows_of_codes
from ._streams import RNG_CHOICES, fresh_int32_seed, make_stream, stream_for
from ._validation import check_bool, check_choice, check_int
from .policies import MinPerStratum, StratumTooSmallWarning

__all__ = ["StratifiedBatchSampler"]

_STATE_FORMAT = "pystratum.torch.StratifiedBatchSampler/1"
_STATE_KEYS = ("format", "epoch", "batches_yielded", "seed", "rng", "shuffle", "num_replicas",
               "drop_last", "min_samples_per_stratum", "n_rows", "num_batches", "strata_digest",
               "stream")

# Batches are converted to Python lists a chunk at a time: one ``tolist()``
# per ~64k rows keeps conversion in bulk without holding a whole epoch (tens
# of bytes per row) as Python ints.
_CHUNK_ROWS = 1 << 16


class StratifiedBatchSampler(Sampler[list[int]]):
    """Mini-batches that each hold at least ``min_samples_per_stratum`` rows of every stratum.

    Use it as ``DataLoader(dataset, batch_sampler=sampler)``.

    Parameters
    ----------
    strata
        One label per row of the dataset, in anything the core accepts (list,
        numpy array, pandas Series/DataFrame, 2-D array or list of columns
        for multi-column strata) or a torch tensor; or a dataset exposing
        ``.targets`` or ``.labels`` (torchvision style); or a callable taking
        no argument that returns such labels.
    min_samples_per_stratum : int
        ``m``: the fewest rows of each stratum a batch holds. The epoch has
        ``max(1, N_min // m)`` batches, ``N_min`` the smallest stratum's size.
    shuffle : bool
        False serves rows in order (the same batches every epoch).
    seed : None, int (or numpy SeedSequence with ``rng="numpy"``)
        None draws a fresh seed once, at construction, and keeps it (read it
        back as ``sampler.seed``). Under ``torch.distributed`` rank 0's fresh
        seed is broadcast to every rank, which needs every rank to build its
        sampler (as DDP code does anyway); without an initialised process
        group and ``num_replicas > 1``, pass ``seed=``.
    rng : {"numpy", "R", "torch"}
        Where each epoch's permutation comes from. ``"R"``: epoch k is the
        (k+1)-th ``sample(N)`` after R's ``set.seed(seed)``. ``"torch"``: a
        private ``torch.Generator`` seeded with ``seed``; epoch k is its
        (k+1)-th ``torch.randperm(N)``, which is R torch's ``torch_randperm``
        after ``torch_manual_seed(seed)`` when both use the same libtorch
        version. The global random state is never used or changed.
    num_replicas, rank : int, optional
        Default to ``torch.distributed``'s world size and rank when it is
        initialised, else 1 and 0. Every rank computes the same plan from
        (seed, epoch), without communication, and takes whole batches
        round-robin (``batches[rank::num_replicas]``).
    drop_last : bool
        With several replicas and a number of batches that is not a multiple
        of ``num_replicas``: False (default) pads the short ranks with whole
        batches reused from the start of the epoch; True drops the remainder.
        On one replica nothing is ever dropped.
    dataset : optional
        The dataset the indices are for; if given, the number of labels must
        equal ``len(dataset)``.

    Guarantees
    ----------
    * Every batch holds at least ``m`` rows of every stratum (when the smallest
      stratum has at least ``m`` rows; otherwise one batch holds every row
      and a ``StratumTooSmallWarning`` says so).
    * ``len(sampler)`` is exactly the number of batches one ``iter()`` yields on
      this rank, every epoch; all ranks yield the same number.
    * Each ``iter()`` starts the next epoch (a new shuffle with the same
      per-batch stratum counts); ``set_epoch(k)`` selects epoch k for the
      next ``iter()``. Batches are a pure function of (seed, epoch, rank).
    * ``state_dict()``/``load_state_dict()`` follow torchdata's ``Stateful``
      protocol: ``StatefulDataLoader`` resumes mid-epoch exactly.
    """

    def __init__(self, strata, min_samples_per_stratum, *, shuffle=True, seed=None,
                 rng="numpy", num_replicas=None, rank=None, drop_last=False, dataset=None):
        self.min_samples_per_stratum = check_int(
            min_samples_per_stratum, "min_samples_per_stratum", minimum=1
        )
        self._policy = MinPerStratum(self.min_samples_per_stratum)
        self.rng = check_choice(rng, "rng", RNG_CHOICES)
        self.shuffle = check_bool(shuffle, "shuffle")
        self.drop_last = check_bool(drop_last, "drop_last")
        self.num_replicas, self.rank = _resolve_replicas(num_replicas, rank)
        # Scalar arguments first (as the core does), the O(N) strata after.
        # The core's check rejects a seed with shuffle=False; a missing seed is
        # resolved (drawn, or broadcast from rank 0) only when there is shuffling.
        self._stream = stream_for(self.rng, self._resolve_seed(seed) if self.shuffle else seed,
                                  self.shuffle)

        labels, known_dataset = _labels_from(strata)
        self._encoded = encode_strata(labels)
        n_rows = self._encoded.n_rows
        for data in (known_dataset, dataset):
            if data is not None:
                _check_dataset_length(data, n_rows)

        # Warn once, here, pointing at the caller's line; epochs do not repeat it.
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always", StratumTooSmallWarning)
            cuts = self._policy.allocate(self._encoded, 0).cuts
        for warning in caught:
            warnings.warn(warning.message, warning.category, stacklevel=2)
        self.num_batches = int(cuts.shape[1] - 1)
        if self.drop_last and self.num_batches < self.num_replicas:
            raise ValueError(
                f"drop_last=True leaves no batch for any rank: the plan has "
                f"{self.num_batches} batch(es) per epoch (smallest stratum "
                f"{int(self._encoded.sizes.min())} rows // min_samples_per_stratum="
                f"{self.min_samples_per_stratum}) but num_replicas={self.num_replicas}. "
                f"Lower min_samples_per_stratum, use fewer replicas, or set drop_last=False "
                f"(ranks then reuse whole batches)."
            )

        self._next_epoch = 0
        self._current_epoch = None  # epoch being served, None between epochs
        self._yielded = 0  # batches of the current epoch yielded on this rank
        self._resume = None  # (epoch, batches already yielded) from load_state_dict
        self._active = None  # token of the iterator whose progress is tracked
        self._epoch_stream_state = {}
        self._digest = None

    # ------------------------------------------------------------------ public

    @property
    def seed(self):
        """The seed in use: pass it as ``seed=`` to get the same batches again (None unshuffled)."""
        return None if self._stream is None else self._stream.seed

    @property
    def epoch(self) -> int:
        """The epoch being served, or (between epochs) the one the next ``iter()`` serves."""
        if self._current_epoch is not None:
            return self._current_epoch
        return self._resume[0] if self._resume is not None else self._next_epoch

    def __len__(self) -> int:
        """Batches one ``iter()`` yields on this rank (every epoch, every rank)."""
        return rank_batch_count(self.num_batches, self.num_replicas, self.drop_last)

    def set_epoch(self, epoch: int) -> None:
        """Make the next ``iter()`` serve epoch ``epoch`` (as ``DistributedSampler.set_epoch``).

        Not needed for sequential training (each ``iter()`` moves to the next
        epoch). After ``load_state_dict``, ``set_epoch`` with the restored
        epoch keeps the mid-epoch position; any other epoch starts it fresh.
        """
        epoch = check_int(epoch, "epoch", minimum=0)
        if self._resume is not None and self._resume[0] == epoch:
            return
        self._resume = None
        self._next_epoch = epoch

    def __iter__(self) -> Iterator[list[int]]:
        # A generator: nothing happens until the first batch is asked for, so
        # iterators that DataLoader creates and drops unused consume no epoch.
        return self._serve_epoch()

    def plan(self, epoch: int | None = None) -> BatchPlan:
        """The core's :class:`~pystratum.BatchPlan` of an epoch (all ranks' batches).

        Default: the epoch being served or about to be. Inspection only; the
        sampler's own progress is not changed.
        """
        epoch = self.epoch if epoch is None else check_int(epoch, "epoch", minimum=0)
        return self._plan(epoch)

    def state_dict(self) -> dict:
        """Progress to resume from: epoch, batches yielded on this rank, seed, stream position.

        Plain Python values (and a uint8 tensor for ``rng="torch"``), so
        ``torch.save``/``torch.load(weights_only=True)`` round-trip it. Every
        rank yields the same number of batches, so rank 0's state resumes
        every rank.
        """
        if self._current_epoch is not None:
            epoch, yielded = self._current_epoch, self._yielded
            stream_state = self._epoch_stream_state
        else:
            epoch, yielded = self._resume if self._resume is not None else (self._next_epoch, 0)
            stream_state = {} if self._stream is None else self._stream.state_dict()
        return {
            "format": _STATE_FORMAT,
            "epoch": int(epoch),
            "batches_yielded": int(yielded),
            "seed": _seed_to_state(self.seed),
            "rng": self.rng,
            "shuffle": self.shuffle,
            "num_replicas": self.num_replicas,
            "drop_last": self.drop_last,
            "min_samples_per_stratum": self.min_samples_per_stratum,
            "n_rows": self._encoded.n_rows,
            "num_batches": self.num_batches,
            "strata_digest": self._strata_digest(),
            "stream": stream_state,
        }

    def load_state_dict(self, state_dict: dict) -> None:
        """Resume from :meth:`state_dict`: the next ``iter()`` continues that epoch.

        The saved seed replaces this sampler's seed. The sampler must
        otherwise match the saved one (same strata, m, rng, shuffle,
        num_replicas, drop_last); a mismatch raises ValueError.
        """
        if not isinstance(state_dict, dict):
            raise TypeError(
                f"state_dict must be the dict StratifiedBatchSampler.state_dict() returned, got "
                f"{type(state_dict).__name__}."
            )
        missing = [key for key in _STATE_KEYS if key not in state_dict]
        if state_dict.get("format") != _STATE_FORMAT or missing:
            raise ValueError(
                f"state_dict is not a StratifiedBatchSampler state (format "
                f"{state_dict.get('format')!r}, expected {_STATE_FORMAT!r}; missing keys "
                f"{missing}); pass what StratifiedBatchSampler.state_dict() returned."
            )
        for key, mine in (("rng", self.rng), ("shuffle", self.shuffle),
                          ("num_replicas", self.num_replicas), ("drop_last", self.drop_last),
                          ("min_samples_per_stratum", self.min_samples_per_stratum),
                          ("n_rows", self._encoded.n_rows), ("num_batches", self.num_batches),
                          ("strata_digest", self._strata_digest())):
            if state_dict[key] != mine:
                raise ValueError(
                    f"Cannot resume: the state was saved with {key}={state_dict[key]!r} but this "
                    f"sampler has {key}={mine!r}. Build the sampler with the same strata and "
                    f"arguments (and the same number of replicas) as the run that saved it."
                )
        epoch = check_int(state_dict["epoch"], "state_dict['epoch']", minimum=0)
        yielded = check_int(state_dict["batches_yielded"], "state_dict['batches_yielded']",
                            minimum=0)
        if yielded > len(self):
            raise ValueError(
                f"state_dict['batches_yielded'] must be at most len(sampler)={len(self)}, got "
                f"batches_yielded={yielded}; was the state saved by another sampler?"
            )
        if self.shuffle:
            seed = _seed_from_state(state_dict["seed"])
            if not _same_seed(seed, self.seed):
                self._stream = make_stream(self.rng, seed)
            self._stream.load_state_dict(state_dict["stream"])
        self._resume = (epoch, yielded)
        self._next_epoch = epoch
        self._current_epoch = None
        self._yielded = 0
        self._active = None

    def __repr__(self) -> str:
        return (
            f"StratifiedBatchSampler(n_rows={self._encoded.n_rows}, n_strata="
            f"{self._encoded.n_strata}, min_samples_per_stratum={self.min_samples_per_stratum}, "
            f"num_batches={self.num_batches}, len={len(self)}, shuffle={self.shuffle}, "
            f"seed={self.seed!r}, rng={self.rng!r}, epoch={self.epoch}, num_replicas="
            f"{self.num_replicas}, rank={self.rank}, drop_last={self.drop_last})"
        )

    # ---------------------------------------------------------------- private

    def _strata_digest(self) -> str:
        """A fingerprint of the partition of rows into strata (labels' names do not matter).

        Saved in the state so that resuming with other data fails loudly
        instead of serving the old epoch's row numbers for new rows.
        """
        if self._digest is None:
            codes = self._encoded.codes
            n_strata = self._encoded.n_strata
            # Number strata by first appearance: renaming labels keeps the digest.
            first_row = first_rows_of_codes(codes, n_strata)
            dtype = np.uint8 if n_strata <= 256 else np.uint16 if n_strata <= 65536 else np.int32
            canonical = np.empty(n_strata, dtype=dtype)
            canonical[np.argsort(first_row, kind="stable")] = np.arange(n_strata, dtype=dtype)
            self._digest = hashlib.blake2b(canonical[codes].tobytes(), digest_size=16).hexdigest()
        return self._digest

    def _resolve_seed(self, seed):
        if isinstance(seed, np.random.Generator):
            raise TypeError(
                "seed must be an int (or None, or a numpy SeedSequence with rng='numpy'), got a "
                "numpy Generator: the sampler must be able to recompute any epoch (resume, "
                "set_epoch, other ranks), which a Generator's advancing state cannot. Pass "
                "seed=<int>."
            )
        if seed is not None:
            return seed
        world = _initialised_world_size()
        if world is not None and world > 1:
            # Every rank must use one seed: rank 0 draws it and broadcasts it.
            return _broadcast_from_rank0(fresh_int32_seed())
        if self.num_replicas > 1:
            raise ValueError(
                f"seed=None with num_replicas={self.num_replicas} and no initialised "
                f"torch.distributed process group: each rank would draw its own seed, so ranks "
                f"would disagree on the batches (rows repeated or never seen). Pass the same "
                f"seed=<int> on every rank, or initialise torch.distributed first (rank 0's "
                f"seed is then broadcast)."
            )
        return fresh_int32_seed()

    def _plan(self, epoch: int) -> BatchPlan:
        with warnings.catch_warnings():
            # Already said once, at construction.
            warnings.simplefilter("ignore", StratumTooSmallWarning)
            return plan_from_stream(self._encoded, self._policy, self._stream,
                                    epoch=epoch, rng=self.rng)

    def _rank_batches(self, epoch: int):
        """This rank's batches of ``epoch`` as (order, bounds) int64 arrays."""
        if self._stream is not None:
            # Record the stream position before this epoch: state_dict() saves
            # it so a resume costs one permutation, not epoch + 1.
            self._stream.advance_to(self._encoded.n_rows, epoch)
            self._epoch_stream_state = self._stream.state_dict()
        else:
            self._epoch_stream_state = {}
        plan = self._plan(epoch)
        order, bounds = plan.order, plan.bounds
        n_replicas = self.num_replicas
        if n_replicas == 1:
            return order, bounds
        chosen = rank_batch_indices(self.num_batches, n_replicas, self.rank, self.drop_last)
        take = chosen.shape[0]
        starts = bounds[:-1][chosen]
        sizes = bounds[1:][chosen] - starts
        rank_bounds = np.zeros(take + 1, dtype=np.int64)
        np.cumsum(sizes, out=rank_bounds[1:])
        positions = np.arange(int(rank_bounds[-1]), dtype=np.int64)
        positions += np.repeat(starts - rank_bounds[:-1], sizes)
        return order[positions], rank_bounds

    def _serve_epoch(self):
        if self._resume is not None:
            epoch, start = self._resume
            self._resume = None
        else:
            epoch, start = self._next_epoch, 0
        token = object()
        self._active = token
        self._current_epoch = epoch
        self._next_epoch = epoch + 1
        self._yielded = start
        if start >= len(self):
            # Resumed after the epoch's last batch: the rest of the epoch is empty.
            self._current_epoch = None
            self._yielded = 0
            self._active = None
            return
        order, bounds = self._rank_batches(epoch)
        edges = bounds.tolist()
        n_batches = len(edges) - 1
        b = start
        while b < n_batches:
            # Batches b..stop-1 span at most _CHUNK_ROWS rows (at least one batch).
            stop = max(b + 1, bisect.bisect_right(edges, edges[b] + _CHUNK_ROWS) - 1)
            base = edges[b]
            rows = order[base:edges[stop]].tolist()
            for k in range(b, stop):
                batch = rows[edges[k] - base:edges[k + 1] - base]
                if self._active is token:
                    self._yielded = k + 1
                yield batch
            b = stop
        if self._active is token:
            self._current_epoch = None
            self._yielded = 0
            self._active = None


# -------------------------------------------------------------------- helpers

def _labels_from(strata):
    """(labels the core accepts, the dataset if ``strata`` was one)."""
    if callable(strata) and not _is_data(strata):
        strata = strata()
        if callable(strata) and not _is_data(strata):
            raise TypeError(
                "strata was a callable returning another callable; it must return the labels "
                "(one per row)."
            )
        return _labels_from(strata)[0], None
    if isinstance(strata, torch.Tensor):
        return _tensor_to_numpy(strata), None
    if isinstance(strata, (list, tuple)) and strata and all(
        isinstance(item, torch.Tensor) and item.dim() == 1 for item in strata
    ):
        return [_tensor_to_numpy(item) for item in strata], None
    if not _is_data(strata) and (
        isinstance(strata, torch.utils.data.Dataset)
        or hasattr(strata, "targets") or hasattr(strata, "labels")
    ):
        for attribute in ("targets", "labels"):
            labels = getattr(strata, attribute, None)
            if labels is not None:
                return _labels_from(labels)[0], strata
        raise TypeError(
            f"strata is a dataset ({type(strata).__name__}) without .targets or .labels; pass "
            f"its labels instead (one per row, e.g. a list or array), or a callable returning "
            f"them."
        )
    return strata, None


def _is_data(obj) -> bool:
    """Array-likes (which may have a ``.labels`` column or attribute) are labels, not datasets."""
    if isinstance(obj, (np.ndarray, list, tuple, torch.Tensor)):
        return True
    module = type(obj).__module__
    return module.startswith("pandas") or module.startswith("numpy")


def _tensor_to_numpy(tensor):
    return tensor.detach().cpu().numpy()


def _check_dataset_length(dataset, n_rows):
    try:
        n_data = len(dataset)
    except TypeError:
        return  # an iterable without a length: nothing to compare
    if n_data != n_rows:
        raise ValueError(
            f"strata has {n_rows} labels but the dataset has {n_data} rows: pass one label per "
            f"row of the dataset, in the dataset's order (for a Subset, the labels of its "
            f"indices)."
        )


def _initialised_world_size():
    if dist.is_available() and dist.is_initialized():
        return dist.get_world_size()
    return None


def _resolve_replicas(num_replicas, rank):
    world = _initialised_world_size()
    if num_replicas is None:
        num_replicas = world if world is not None else 1
    num_replicas = check_int(num_replicas, "num_replicas", minimum=1)
    if rank is None:
        if world is not None:
            rank = dist.get_rank()
        elif num_replicas == 1:
            rank = 0
        else:
            raise ValueError(
                f"rank must be given with num_replicas={num_replicas} when torch.distributed is "
                f"not initialised: pass rank=<this process's rank in [0, {num_replicas})>."
            )
    rank = check_int(rank, "rank", minimum=0)
    if rank >= num_replicas:
        raise ValueError(
            f"rank must be in [0, num_replicas), got rank={rank} with "
            f"num_replicas={num_replicas}. Pass rank=<0..{num_replicas - 1}> or a larger "
            f"num_replicas."
        )
    return num_replicas, rank


def _broadcast_from_rank0(value: int) -> int:
    device = torch.device("cpu")
    if dist.get_backend() == "nccl":
        device = torch.device("cuda", torch.cuda.current_device())
    tensor = torch.tensor([value], dtype=torch.int64, device=device)
    dist.broadcast(tensor, src=0)
    return int(tensor.item())


def _seed_to_state(seed):
    """Seeds as plain values (``torch.load(weights_only=True)`` rejects numpy objects)."""
    if isinstance(seed, np.random.SeedSequence):
        entropy = seed.entropy
        return {
            "entropy": [int(v) for v in entropy] if isinstance(entropy, (list, tuple, np.ndarray))
            else int(entropy),
            "spawn_key": [int(v) for v in seed.spawn_key],
            "pool_size": int(seed.pool_size),
        }
    if isinstance(seed, numbers.Integral):
        return int(seed)
    return seed


def _seed_from_state(seed):
    if isinstance(seed, dict):
        return np.random.SeedSequence(seed["entropy"], spawn_key=tuple(seed["spawn_key"]),
                                      pool_size=seed["pool_size"])
    return seed


def _same_seed(a, b) -> bool:
    return _seed_to_state(a) == _seed_to_state(b)
