"""Epochs of batches served from shards: runs per rank and worker, progress and resume state.

Torch-free: :mod:`pystratum.shards.torch` wraps it for a ``DataLoader``.
As the samplers (``pystratum.serving``), progress lives in the run being
served (an iterator object); the server only remembers its last run, and
resuming goes through :meth:`ShardedBatches.load_state_dict`, which the
next run applies (torchdata's ``StatefulDataLoader`` calls it before
``iter()``, in each worker for that worker's state).
"""

from __future__ import annotations

import hashlib
import json
import numbers

import numpy as np

from ..base._validation import check_bool, check_epoch, check_int, show
from ._runs import EpochPlan, run_batch_ids
from ._serve import BatchServer

__all__ = ["STATE_FORMAT", "EpochRun", "ShardedBatches", "data_fingerprint"]

STATE_FORMAT = "pystratum.shards/2"
# Format 1 recorded Parquet files by their absolute paths; format 2 by their paths under the
# dataset's root, so that a state moved with its data to another directory still resumes.
_OLD_FORMATS = {"pystratum.shards/1": "it recorded the Parquet files by absolute paths"}
_FIX = "pass a state_dict() saved by the same reader over the same data, unchanged"


def data_fingerprint(reader, sizes: np.ndarray) -> dict:
    """What a resume state records of the data: rows, shards, a digest of the sizes, and the
    reader's own ``fingerprint()`` (e.g. Parquet files, row groups and metadata) if it has one."""
    record = {"rows": int(sizes.sum()), "shards": int(sizes.shape[0]),
              "shard_sizes": hashlib.sha256(sizes.astype("<i8").tobytes()).hexdigest()[:16]}
    own = getattr(reader, "fingerprint", None)
    if callable(own):
        record["reader"] = own()
    return record


def _describe_change(saved: dict, now: dict, reader) -> str | None:
    """None when the data is the same, else what changed, in words."""
    # default=repr: a forged record holding non-JSON values still compares (and differs).
    if json.dumps(saved, sort_keys=True, default=repr) == json.dumps(now, sort_keys=True,
                                                                     default=repr):
        return None
    explain = getattr(reader, "describe_change", None)
    if callable(explain) and isinstance(saved.get("reader"), dict) and "reader" in now:
        text = explain(saved["reader"], now["reader"])
        if text:
            return text
    parts = [f"{key} {saved.get(key)!r} -> {now.get(key)!r}" for key in ("rows", "shards",
             "shard_sizes") if saved.get(key) != now.get(key)]
    return "; ".join(parts) or "the reader's fingerprint differs"


class ShardedBatches:
    """Serves the batches of ``plans`` from ``reader``, each rank and worker a contiguous run.

    plans:  a sampler with ``plan(epoch)`` (e.g.
            :class:`pystratum.torch.StratifiedBatchSampler`: its plan is the
            whole epoch whatever its ``num_replicas``, and the runs are
            handed out here), a callable ``epoch -> plan`` or one plan (a
            ``BatchPlan`` or a list of batches) for every epoch.
    n_rows: the rows the plan was built for; checked against the reader's
            rows (default: not checked, but every served row is range-checked).
    keep_recycled, retain_rows: with ``keep_recycled`` (the default) each run
            is planned (:meth:`BatchServer.plan_run`): rows a policy recycles
            are kept aside, and rows an evicted shard still owes the run are
            held aside within ``retain_rows`` (default: a full cache's rows),
            so a shard is read at most once per run while they fit.

    Guarantee: each rank serves ``rank_run_length`` batches per epoch (the
    same on every rank); the batches of all ranks and workers are whole
    batches of the plan, in plan order within a run, disjoint and (without
    padding) covering the epoch; every batch's rows come in the plan's order.
    """

    def __init__(self, reader, plans, *, cache_shards: int = 8, num_replicas: int = 1,
                 rank: int = 0, drop_last: bool = False, keep_recycled: bool = True,
                 n_rows: int | None = None, retain_rows: int | None = None):
        self.server = BatchServer(reader, cache_shards=cache_shards, retain_rows=retain_rows)
        self.plans = plans
        self.num_replicas = check_int(num_replicas, "num_replicas", minimum=1)
        self.rank = check_int(rank, "rank", minimum=0, maximum=self.num_replicas - 1)
        self.drop_last = check_bool(drop_last, "drop_last")
        self.keep_recycled = check_bool(keep_recycled, "keep_recycled")
        if n_rows is not None:
            n_rows = check_int(n_rows, "n_rows", minimum=1)
            if n_rows != self.server.n_rows:
                raise ValueError(
                    f"n_rows must equal the reader's rows, got n_rows={n_rows} but the reader's "
                    f"shard_sizes sum to {self.server.n_rows} ({self.server.sizes.shape[0]} "
                    f"shards): the plan and the data differ. Build the plan from the data the "
                    f"reader reads, in its row order.")
        self.fingerprint = data_fingerprint(reader, self.server.sizes)
        self.epoch = 0
        self._pending = None  # (epoch, batches_yielded) from load_state_dict
        self._last_run = None

    @property
    def stats(self):
        """The cache's counters (:class:`~pystratum.shards.CacheStats`)."""
        return self.server.stats

    @property
    def resuming(self) -> bool:
        """Whether a loaded state waits for the next run."""
        return self._pending is not None

    def set_epoch(self, epoch: int) -> None:
        """Serve epoch ``epoch`` next. A resume loaded for another epoch is dropped."""
        epoch = check_epoch(epoch)
        if self._pending is not None and self._pending[0] != epoch:
            self._pending = None
        self.epoch = epoch

    def run(self, num_workers: int = 1, worker: int = 0) -> "EpochRun":
        """The run of batches worker ``worker`` of ``num_workers`` serves this epoch (an iterator)."""
        num_workers = check_int(num_workers, "num_workers", minimum=1)
        worker = check_int(worker, "worker", minimum=0, maximum=num_workers - 1,
                           fix="Workers are numbered 0 .. num_workers - 1.")
        pending, self._pending = self._pending, None
        if pending is not None:
            self.epoch = pending[0]
            if pending[2] is not None and pending[2] != num_workers:
                raise ValueError(
                    f"num_workers must be the one the resume state was saved with, got "
                    f"num_workers={num_workers} but state_dict['num_workers']={pending[2]}: "
                    f"resume with the same DataLoader num_workers.")
        skip = 0 if pending is None else pending[1]
        if isinstance(skip, list):  # one count per worker (saved batch by batch as handed out)
            skip = skip[worker]
        run = EpochRun(self, self.epoch, num_workers, worker, skip)
        self._last_run = run
        return run

    @property
    def pending_resume(self):
        """The loaded resume ``(epoch, batches_yielded, num_workers)`` the next run applies, or
        None."""
        return self._pending

    def take_resume(self):
        """The loaded resume ``(epoch, batches_yielded, num_workers)`` or None, forgotten here.

        For the process that hands a resume to loader workers (each worker
        applies its copy): once they have it, the next epoch starts afresh."""
        pending, self._pending = self._pending, None
        return pending

    def state_dict(self) -> dict:
        """Where the last run stands: epoch, batches it yielded, the run's shape, the data.

        Plain Python values. Called in a DataLoader worker (torchdata does),
        it describes that worker's run.
        """
        run = self._last_run
        if run is None or (self._pending is not None):
            epoch, yielded, workers = self._pending or (self.epoch, 0, None)
        else:
            epoch, yielded, workers = run.epoch, run.batches_yielded, run.num_workers
        return {"format": STATE_FORMAT, "epoch": epoch, "batches_yielded": yielded,
                "num_workers": workers, "num_replicas": self.num_replicas,
                "drop_last": self.drop_last, "data": self.fingerprint}

    def load_state_dict(self, state_dict: dict) -> None:
        """Resume from :meth:`state_dict`: the next run continues that epoch after the batches
        already yielded. Refused (ValueError naming the key) when the data changed since the
        state was saved (rows, shard sizes, or the reader's fingerprint such as Parquet
        metadata), or when the number of ranks or ``drop_last`` differs."""
        if not isinstance(state_dict, dict):
            raise TypeError(f"state_dict must be a dict from state_dict(), got "
                            f"{type(state_dict).__name__}.")
        missing = sorted({"format", "epoch", "batches_yielded", "num_workers", "num_replicas",
                          "drop_last", "data"} - set(state_dict))
        if missing:
            raise ValueError(f"state_dict lacks {missing}; {_FIX}.")
        if state_dict["format"] != STATE_FORMAT:
            why = _OLD_FORMATS.get(state_dict["format"]) if isinstance(state_dict["format"],
                                                                       str) else None
            raise ValueError(f"state_dict['format'] must be {STATE_FORMAT!r}, got "
                             f"{show(state_dict['format'])}"
                             + (f" (saved by an earlier pystratum: {why}); start the epoch "
                                f"again." if why else f"; {_FIX}."))
        epoch = check_epoch(state_dict["epoch"], "state_dict['epoch']")
        workers = state_dict["num_workers"]
        if workers is not None:
            workers = check_int(workers, "state_dict['num_workers']", minimum=1)
        yielded = state_dict["batches_yielded"]
        if isinstance(yielded, (list, tuple)):
            if workers is None or len(yielded) != workers:
                raise ValueError(
                    f"state_dict['batches_yielded'] must be one count per worker when it is a "
                    f"list, got {len(yielded)} count(s) for state_dict['num_workers']="
                    f"{workers}; {_FIX}.")
            yielded = [check_int(count, f"state_dict['batches_yielded'][{w}]", minimum=0)
                       for w, count in enumerate(yielded)]
        else:
            yielded = check_int(yielded, "state_dict['batches_yielded']", minimum=0)
        for key, mine in (("num_replicas", self.num_replicas), ("drop_last", self.drop_last)):
            value = state_dict[key]
            # The saved type must be the setting's own: True is not 1 replica, 0 not False.
            is_flag = isinstance(value, (bool, np.bool_))
            right_type = is_flag if key == "drop_last" else \
                (isinstance(value, numbers.Integral) and not is_flag)
            if not right_type or value != mine:
                raise ValueError(f"state_dict['{key}'] must be {mine!r} (this reader's), got "
                                 f"{show(value)}: resume with the settings it was saved with.")
        if not isinstance(state_dict["data"], dict):
            raise TypeError(f"state_dict['data'] must be the dict state_dict() records of the "
                            f"data, got {show(state_dict['data'])} of type "
                            f"{type(state_dict['data']).__name__}; {_FIX}.")
        change = _describe_change(state_dict["data"], self.fingerprint, self.server.reader)
        if change is not None:
            raise ValueError(f"state_dict['data'] does not match the data as it is now: {change}. "
                             f"The data changed since the state was saved; a resume would serve "
                             f"other rows. Restore the data, or start the epoch again.")
        self._pending = (epoch, yielded, workers)
        self.epoch = epoch


class EpochRun:
    """One worker's contiguous run of one epoch: nothing happens before the first batch."""

    def __init__(self, owner: ShardedBatches, epoch: int, num_workers: int, worker: int,
                 skip: int):
        self._owner = owner
        self.epoch = epoch
        self.num_workers = num_workers
        self.worker = worker
        self.batches_yielded = skip
        self._batches = None
        self._weights = None
        self._ids = None

    def __iter__(self):
        return self

    def __len__(self) -> int:
        self._open()
        return int(self._ids.shape[0])

    def _open(self) -> None:
        if self._ids is not None:
            return
        owner = self._owner
        plan = EpochPlan(owner.plans, self.epoch)
        ids = run_batch_ids(plan.num_batches, owner.num_replicas, owner.rank, owner.drop_last,
                            self.num_workers, self.worker)
        if self.batches_yielded > ids.shape[0]:
            raise ValueError(
                f"state_dict['batches_yielded'] must be at most this run's {ids.shape[0]} "
                f"batches, got {self.batches_yielded}; {_FIX}.")
        # Only this run's batches: a lazy plan computes no other, a worker holds no other.
        batches, self._weights = plan.take(ids)
        if batches:  # refuse a plan from other data before anything is read
            owner.server.locator.locate(np.concatenate(batches), "plans' batches")
        # The data as the reader found it, checked once per run (each epoch, each resume, each
        # worker) before any row, cached or kept rows included, is served: not on every load.
        owner.server.check_unchanged()
        self._batches = batches
        self._ids = ids
        if owner.keep_recycled:  # and, from the run's plan, the rows evicted shards still owe
            owner.server.plan_run(batches, start=self.batches_yielded)

    def rows(self, k: int) -> np.ndarray:
        """Row positions of this run's ``k``-th batch."""
        self._open()
        return self._batches[k]

    def weights(self, k: int) -> np.ndarray:
        """Importance weights of the rows of this run's ``k``-th batch (float64; ones when the
        plan has none, e.g. ``Downsample`` gives ``N_s / k_s``), aligned with :meth:`rows`."""
        self._open()
        if self._weights is None:
            return np.ones(self._batches[k].shape[0])
        return self._weights[k]

    def __next__(self):
        self._open()
        k = self.batches_yielded
        if k >= self._ids.shape[0]:
            raise StopIteration
        rows = self._batches[k]
        served = self._owner.server.serve(rows)
        self.batches_yielded = k + 1
        return rows, served

