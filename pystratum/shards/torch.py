"""The DataLoader face of the shard readers: whole batches from sharded storage (imports torch).

``DataLoader(ShardBatchDataset(reader, sampler), batch_size=None,
num_workers=k)``: each item is one whole batch of the plan, its rows in the
plan's order. DataLoader workers and DDP ranks each serve one contiguous run
of the epoch's batches (:func:`pystratum.shards.run_batch_ids`), never
round-robin, so with a shard-aware plan (``shards=``, ``window=``) all ranks
and workers together read each shard about once per epoch.
"""

from __future__ import annotations

import torch
from torch.utils.data import IterableDataset, get_worker_info

from ..base._validation import check_bool
from ..torch._distributed import resolve_replicas
from ._epochs import ShardedBatches
from ._runs import EpochPlan, rank_run_length

__all__ = ["ShardBatchDataset", "table_tensors"]


def table_tensors(table) -> dict:
    """A pyarrow table's columns as tensors (``{name: tensor}``), for numeric data.

    Cheapest in the training loop, on the table a worker sent: the table
    crosses from the worker as one pickled payload, whereas tensors made in
    the worker (as a ``transform``) each travel through shared memory, a
    file descriptor per column per batch, which costs more than the whole
    batch's gather at a few hundred rows (``benchmarks/bench_shards_parquet.py``)."""
    tensors = {}
    for name, column in zip(table.column_names, table.columns):
        array = column.to_numpy(zero_copy_only=False)
        # Arrow's buffers are read-only; torch wants to own writable memory.
        tensors[name] = torch.from_numpy(array if array.flags.writeable else array.copy())
    return tensors


class ShardBatchDataset(IterableDataset):
    """An iterable dataset serving the plan's whole batches, read from ``reader``'s shards.

    reader:       a :class:`pystratum.shards.ShardReader` (e.g.
                  :class:`~pystratum.shards.ParquetShards`); rows numbered shard
                  after shard, as the plan's.
    plans:        a sampler with ``plan(epoch)`` (a
                  :class:`~pystratum.torch.StratifiedBatchSampler`: under DDP
                  every rank builds it and its seed is shared), a callable
                  ``epoch -> plan`` or one plan.
    cache_shards: decoded shards each loader worker keeps (LRU); ``2 * window
                  + 2`` reads each shard once for a shard-aware plan whose
                  strata are spread over the shards (docs/SHARDS.md).
    transform:    applied to each served batch in the worker (default: none,
                  the ``pyarrow.Table`` is sent, cheap to pickle; call
                  :func:`table_tensors` on it in the loop); ``with_rows=True`` yields ``(rows,
                  batch)``, ``rows`` the int64 tensor of row positions;
                  ``with_weights=True`` adds the plan's importance weights of
                  the rows (float64 tensor, ones without weights) last:
                  ``(batch, weights)`` or ``(rows, batch, weights)``.
    num_replicas, rank: as the samplers' (default: the process group).
    drop_last:    False: every rank serves ``ceil(B / num_replicas)`` batches,
                  the last rank's run wrapping to the epoch's first batches;
                  True: ``floor(B / num_replicas)``, the epoch's last ``B %
                  num_replicas`` batches served by no rank (a policy's short
                  remainder batch is dropped only when it is among them).
    progress:     a tqdm bar over the batches, on rank 0's first worker.

    Guarantee: every rank yields ``len(self)`` batches per epoch; rank ``r``
    serves one contiguous run of the epoch and its worker ``w`` of ``k`` one
    contiguous part of it; all batches are whole batches of the plan. The
    epoch is set with :meth:`set_epoch` (as ``DistributedSampler``'s), and
    resume uses :meth:`state_dict` / :meth:`load_state_dict`, which
    torchdata's ``StatefulDataLoader`` calls (in each worker for that
    worker's run): the resumed epoch continues after the batches served.
    """

    def __init__(self, reader, plans, *, cache_shards: int = 8, transform=None,
                 with_rows: bool = False, with_weights: bool = False, num_replicas: int | None = None,
                 rank: int | None = None, drop_last: bool = False, keep_recycled: bool = True,
                 n_rows: int | None = None, progress: bool = False):
        super().__init__()
        num_replicas, rank = resolve_replicas(num_replicas, rank)
        self.batches = ShardedBatches(reader, plans, cache_shards=cache_shards,
                                      num_replicas=num_replicas, rank=rank, drop_last=drop_last,
                                      keep_recycled=keep_recycled, n_rows=n_rows)
        if transform is not None and not callable(transform):
            raise TypeError(f"transform must be None or a callable, got transform={transform!r}.")
        self.transform = transform
        self.with_rows = check_bool(with_rows, "with_rows")
        self.with_weights = check_bool(with_weights, "with_weights")
        self.progress = check_bool(progress, "progress")
        self._num_batches = {}  # epoch -> the plan's batch count (len without re-planning)
        # The epoch in shared memory: persistent DataLoader workers keep their copy of the
        # dataset (and its kept rows) across epochs and still see set_epoch.
        self._shared_epoch = torch.zeros(1, dtype=torch.int64).share_memory_()

    @property
    def epoch(self) -> int:
        return self.batches.epoch

    @property
    def stats(self):
        """This process's cache counters (with ``num_workers=0``: the whole loader's)."""
        return self.batches.stats

    def set_epoch(self, epoch: int) -> None:
        """Serve epoch ``epoch`` next (call it before each epoch, on every rank).

        Persistent workers (``persistent_workers=True``) see it too, and keep
        the rows of recycled strata from one epoch to the next.
        """
        self.batches.set_epoch(epoch)
        self._shared_epoch[0] = self.batches.epoch

    def __len__(self) -> int:
        """Batches this rank yields per epoch (all its workers together; the same on every rank)."""
        plans = self.batches.plans
        count = getattr(plans, "num_batches", None)  # a sampler's: every epoch the same
        if not isinstance(count, int):
            epoch = self.batches.epoch
            if epoch not in self._num_batches:
                self._num_batches = {epoch: EpochPlan(plans, epoch).num_batches}
            count = self._num_batches[epoch]
        return rank_run_length(count, self.batches.num_replicas, self.batches.drop_last)

    def __iter__(self):
        info = get_worker_info()
        workers, worker = (1, 0) if info is None else (info.num_workers, info.id)
        if not self.batches.resuming:
            self.batches.set_epoch(int(self._shared_epoch[0]))
        run = self.batches.run(workers, worker)
        bar = None
        if self.progress and worker == 0 and self.batches.rank == 0:
            try:
                from tqdm.auto import tqdm
            except ImportError:  # pragma: no cover - exercised only without tqdm
                raise ImportError("progress=True needs tqdm: pip install 'stratabatch[shards]'.") \
                    from None
            bar = tqdm(total=len(run), initial=run.batches_yielded, unit="batch",
                       desc=f"epoch {run.epoch}")
        return _ServedRun(run, self.transform, self.with_rows, self.with_weights, bar)

    def state_dict(self) -> dict:
        """Where this process's run stands (see :meth:`ShardedBatches.state_dict`)."""
        return self.batches.state_dict()

    def load_state_dict(self, state_dict: dict) -> None:
        """Resume: the next ``iter()`` continues the saved epoch; changed data is refused."""
        self.batches.load_state_dict(state_dict)
        if get_worker_info() is None:
            self._shared_epoch[0] = self.batches.epoch


class _ServedRun:
    """The iterator one worker's run returns: batches converted, the progress bar moved."""

    def __init__(self, run, transform, with_rows, with_weights, bar):
        self._run = run
        self._transform = transform
        self._with_rows = with_rows
        self._with_weights = with_weights
        self._bar = bar

    def __iter__(self):
        return self

    def __next__(self):
        try:
            rows, batch = next(self._run)
        except StopIteration:
            if self._bar is not None:
                self._bar.close()
            raise
        if self._bar is not None:
            self._bar.update(1)
        if self._transform is not None:
            batch = self._transform(batch)
        item = (torch.as_tensor(rows), batch) if self._with_rows else (batch,)
        if self._with_weights:
            item += (torch.from_numpy(self._run.weights(self._run.batches_yielded - 1)),)
        return item if len(item) > 1 else batch
