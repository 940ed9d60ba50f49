"""The DataLoader face of the shard readers: whole batches from sharded storage (imports torch).

``DataLoader(ShardBatchDataset(reader, sampler), batch_size=None,
num_workers=k)``: each item is one whole batch of the plan, its rows in the
plan's order. DataLoader workers and DDP ranks each serve one contiguous run
of the epoch's batches (:func:`pystratum.shards.run_batch_ids`), never
round-robin, so with a shard-aware plan (``shards=``, ``window=``) all ranks
and workers together read each shard about once per epoch.

With ``batches_per_message=G`` each worker sends ``G`` consecutive batches
of its run as one message (a ``DataLoader`` pays about as much per message
as a worker pays to gather a few hundred rows); :class:`UnpackedBatches`
around the ``DataLoader`` hands them out one at a time, exactly the batches
and the order of ``G=1``, and saves resume states at any batch.
"""

from __future__ import annotations

import numpy as np
import torch
from torch.utils.data import IterableDataset, get_worker_info
from torch.utils.data._utils.collate import default_convert

from ..base._validation import check_bool, check_int, show
from ..torch._distributed import resolve_replicas
from ._epochs import ShardedBatches
from ._messages import BatchMessage, handout_order, pack_batches, worker_run_lengths
from ._reader import NumericColumns
from ._runs import EpochPlan, rank_run_length

__all__ = ["ShardBatchDataset", "UnpackedBatches", "table_tensors"]


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
    keep_recycled, retain_rows: plan-aware retention in each worker, as
                  :class:`~pystratum.shards.ShardedBatches`' (rows an evicted
                  shard still owes the worker's run held aside, up to
                  ``retain_rows`` rows; default: a full cache's rows).
    batches_per_message: ``G`` consecutive batches of a worker's run sent
                  as one ``DataLoader`` item (default 1: one batch per item).
                  Iterate ``UnpackedBatches(loader)`` to get them one at a
                  time, the same batches in the same order as ``G=1``, and
                  save and load resume states through it. Numeric Arrow
                  batches travel as one numpy array per column; with
                  ``transform=table_tensors`` the tensors are then made in
                  the main process, as views of the message's arrays
                  (cheaper than tensors sent one by one). Other transforms
                  run in the worker on each batch, as with ``G=1``.

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
                 n_rows: int | None = None, progress: bool = False,
                 batches_per_message: int = 1, retain_rows: int | None = None):
        super().__init__()
        num_replicas, rank = resolve_replicas(num_replicas, rank)
        self.batches = ShardedBatches(reader, plans, cache_shards=cache_shards,
                                      num_replicas=num_replicas, rank=rank, drop_last=drop_last,
                                      keep_recycled=keep_recycled, n_rows=n_rows,
                                      retain_rows=retain_rows)
        if transform is not None and not callable(transform):
            raise TypeError(f"transform must be None or a callable, got transform={transform!r}.")
        self.transform = transform
        self.with_rows = check_bool(with_rows, "with_rows")
        self.with_weights = check_bool(with_weights, "with_weights")
        self.progress = check_bool(progress, "progress")
        self.batches_per_message = check_int(batches_per_message, "batches_per_message",
                                             minimum=1)
        if self.batches_per_message > 1:  # messages join numeric columns: no table per batch
            self.batches.server.ops.tables = False
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
        return (_MessageRun if self.batches_per_message > 1 else _ServedRun)(run, self, bar)

    def state_dict(self) -> dict:
        """Where this process's run stands (see :meth:`ShardedBatches.state_dict`).

        With ``batches_per_message > 1`` this counts whole messages sent, not
        batches used: save :meth:`UnpackedBatches.state_dict` instead (a
        state counted in messages is refused on load)."""
        return dict(self.batches.state_dict(), batches_per_message=self.batches_per_message)

    def load_state_dict(self, state_dict: dict) -> None:
        """Resume: the next ``iter()`` continues the saved epoch; changed data is refused."""
        if isinstance(state_dict, dict):
            per_message = state_dict.get("batches_per_message", 1)
            if per_message != 1:
                raise ValueError(
                    f"state_dict['batches_per_message'] must be 1, got {show(per_message)}: the "
                    f"state was saved in a loader worker that sends several batches per message, "
                    f"so it counts messages sent, not batches used, and would skip the batches "
                    f"of the last message not yet used. Save and load the state with "
                    f"UnpackedBatches(loader).state_dict() / load_state_dict().")
            state_dict = {k: v for k, v in state_dict.items() if k != "batches_per_message"}
        self.batches.load_state_dict(state_dict)
        if get_worker_info() is None:
            self._shared_epoch[0] = self.batches.epoch


class _RunItems:
    """The iterator one worker's run returns: the dataset's items (``_next_item()`` gives one
    and the batches it holds), the progress bar moved by batches and closed at the end."""

    def __init__(self, run, dataset, bar):
        self._run = run
        self._dataset = dataset
        self._bar = bar

    def __iter__(self):
        return self

    def __next__(self):
        try:
            item, batches = self._next_item()
        except StopIteration:
            if self._bar is not None:
                self._bar.close()
            raise
        if self._bar is not None:
            self._bar.update(batches)
        return item


class _ServedRun(_RunItems):
    """One batch per item: the batch converted, with its rows and weights when asked."""

    def _next_item(self):
        run, dataset = self._run, self._dataset
        rows, batch = next(run)
        if dataset.transform is not None:
            batch = dataset.transform(batch)
        item = (torch.as_tensor(rows), batch) if dataset.with_rows else (batch,)
        if dataset.with_weights:
            item += (torch.from_numpy(run.weights(run.batches_yielded - 1)),)
        return (item if len(item) > 1 else batch), 1


class _MessageRun(_RunItems):
    """``batches_per_message > 1``: a :class:`~pystratum.shards._messages.BatchMessage` per
    ``G`` consecutive batches."""

    def _next_item(self):
        run, dataset = self._run, self._dataset
        first = run.batches_yielded
        rows, served, weights = [], [], [] if dataset.with_weights else None
        for _ in range(dataset.batches_per_message):
            try:
                batch_rows, batch = next(run)  # batch by batch: the cache sees what G=1 does
            except StopIteration:
                break
            rows.append(batch_rows)
            served.append(batch)
            if weights is not None:
                weights.append(run.weights(run.batches_yielded - 1))
        if not rows:
            raise StopIteration
        transform = dataset.transform
        tensors = transform is table_tensors
        if transform is not None and not tensors:
            served = [transform(_table(batch)) for batch in served]
        message = pack_batches(run.worker, first, rows, served, weights,
                               columns_only=transform is not None, with_rows=dataset.with_rows)
        if tensors and message.kind == "items":  # not numeric columns: transformed here
            message.payload = [table_tensors(_table(batch)) for batch in message.payload]
        return message, len(rows)


def _table(batch):
    """A served batch as the reader decodes it (numeric columns as a ``pyarrow.Table``)."""
    return batch.table() if isinstance(batch, NumericColumns) else batch


class UnpackedBatches:
    """The batches of a ``DataLoader`` over a ``ShardBatchDataset(..., batches_per_message=G)``,
    one at a time.

    Guarantee: the same items in the same order as the same loader with
    ``batches_per_message=1`` (each batch, with its rows and weights when
    the dataset adds them, as the loader's default conversion gives it),
    whatever ``G``, the workers, the rank or the epoch. :meth:`state_dict`
    counts the batches handed out of each worker's run, so a state saved
    after batch ``k`` of a message resumes at batch ``k + 1``:
    :meth:`load_state_dict` then makes the next ``iter()`` continue exactly
    there (workers start with the loader's iterator, as with
    ``persistent_workers=False``). Batches of numeric columns are views of
    their message's arrays (one message's memory lives while one of its
    batches does).
    """

    def __init__(self, loader):
        dataset = getattr(loader, "dataset", None)
        if not isinstance(dataset, ShardBatchDataset):
            raise TypeError(f"loader must be a DataLoader over a ShardBatchDataset, got "
                            f"loader={show(loader)} of type {type(loader).__name__}.")
        if dataset.batches_per_message == 1:
            raise ValueError("loader's dataset must send several batches per message, got "
                             "batches_per_message=1: iterate the DataLoader itself (its items "
                             "are the batches), or pass batches_per_message > 1.")
        if getattr(loader, "batch_size", None) is not None:
            raise ValueError(f"loader must be built with batch_size=None (each item is a whole "
                             f"batch of the plan), got batch_size={loader.batch_size}.")
        if loader.collate_fn is not default_convert:
            raise ValueError("loader must keep the default collate_fn: with batches_per_message "
                             "> 1 it would receive messages, not batches. Apply it to each "
                             "batch UnpackedBatches yields, or pass it as transform=.")
        if getattr(loader, "pin_memory", False):
            raise ValueError("loader must be built with pin_memory=False: messages are not "
                             "pinned batch by batch; call .pin_memory() on the batches "
                             "UnpackedBatches yields.")
        self.loader = loader
        self.dataset = dataset
        self._handed = None   # per worker: batches of its run handed out this epoch
        self._epoch = None
        self._workers = max(int(loader.num_workers), 1)

    def __len__(self) -> int:
        """Batches per epoch on this rank (the dataset's length)."""
        return len(self.dataset)

    def __iter__(self):
        dataset = self.dataset
        resume = dataset.batches.pending_resume
        if resume is None:
            epoch, starts = dataset.epoch, [0] * self._workers
        else:
            epoch, skip, saved_workers = resume
            if saved_workers is not None and saved_workers != self._workers:
                raise ValueError(
                    f"num_workers must be the one the resume state was saved with, got the "
                    f"loader's num_workers={self.loader.num_workers} but "
                    f"state_dict['num_workers']={saved_workers}: resume with the same "
                    f"DataLoader num_workers.")
            starts = list(skip) if isinstance(skip, list) else [skip] * self._workers
        lengths = worker_run_lengths(len(dataset), self._workers)
        # The workers get the resume with their copy of the dataset, made here; this process
        # then forgets it, so that the next epoch starts afresh.
        messages = iter(self.loader)
        dataset.batches.take_resume()
        self._epoch, self._handed = epoch, list(starts)
        return self._generate(messages, lengths, starts)

    def _generate(self, messages, lengths, starts):
        waiting = [[] for _ in range(self._workers)]  # per worker: (message, next batch index)
        tensors = self.dataset.transform is table_tensors
        for worker in handout_order(lengths, starts):
            queue = waiting[worker]
            while not queue or queue[0][1] >= len(queue[0][0]):
                if queue:
                    queue.pop(0)
                    continue
                message = next(messages, None)
                if not isinstance(message, BatchMessage):
                    raise RuntimeError(
                        f"the loader ended or sent {type(message).__name__} before worker "
                        f"{worker}'s batch {self._handed[worker]}: UnpackedBatches needs the "
                        f"dataset's batches_per_message > 1 and an untouched DataLoader.")
                expected = self._handed[message.worker] + sum(
                    len(m) - i for m, i in waiting[message.worker])
                if message.first != expected:
                    raise RuntimeError(
                        f"worker {message.worker} sent batches from {message.first} on, "
                        f"expected {expected}: the loader's workers and this iterator disagree "
                        f"on the resume point. Load resume states through UnpackedBatches.")
                waiting[message.worker].append([_Unpacked(message, tensors), 0])
            entry = queue[0]
            item = entry[0].item(entry[1], self.dataset)
            entry[1] += 1
            self._handed[worker] += 1
            yield item

    def _state(self, epoch, handed) -> dict:
        state = self.dataset.batches.state_dict()
        state.update(epoch=epoch, batches_yielded=list(handed), num_workers=self._workers)
        return state

    def state_dict(self) -> dict:
        """Where the epoch stands, batch by batch: the batches handed out of each worker's run
        (plain Python values; the data recorded as :meth:`ShardBatchDataset.state_dict`)."""
        if self._handed is None:
            return dict(self.dataset.state_dict(), batches_per_message=1)
        return dict(self._state(self._epoch, self._handed), batches_per_message=1)

    def load_state_dict(self, state_dict: dict) -> None:
        """Resume: the next ``iter()`` continues after the last batch handed out when the state
        was saved. Changed data, ranks or settings are refused (as the dataset's)."""
        self.dataset.load_state_dict(state_dict)
        self._handed = None


class _Unpacked:
    """A received message, its arrays made tensors (or its columns one table) once and cut into
    per-batch views."""

    __slots__ = ("message", "rows", "weights", "columns", "payload")

    def __init__(self, message, tensors):
        self.message = message
        sizes = np.diff(message.bounds).tolist()
        # one split per array: a view per batch, cheaper than slicing batch by batch
        self.rows = None if message.rows is None else _tensor(message.rows).split(sizes)
        self.weights = None if message.weights is None else _tensor(message.weights).split(sizes)
        self.columns = None
        self.payload = message.payload
        if message.kind == "columns":
            if tensors:
                self.columns = [(name, _tensor(array).split(sizes))
                                for name, array in zip(message.schema.names, message.payload)]
            else:  # one table over the message's arrays, no copy; batches are slices of it
                import pyarrow as pa

                self.payload = pa.Table.from_arrays(message.payload, schema=message.schema)

    def __len__(self) -> int:
        return len(self.message)

    def batch(self, i: int):
        """Batch ``i`` as the reader serves it (a ``pyarrow.Table`` for Arrow data): the same
        rows, columns and types as one batch per message gives."""
        if self.columns is not None:
            return {name: views[i] for name, views in self.columns}
        if self.message.kind == "items":
            return self.payload[i]
        start, stop = int(self.message.bounds[i]), int(self.message.bounds[i + 1])
        if self.message.kind in ("columns", "table"):
            return self.payload.slice(start, stop - start)
        return self.payload[start:stop]

    def item(self, i, dataset):
        """Batch ``i`` as the loader's default conversion gives it with one batch per message
        (a tuple becomes a list; tensors, tables and dicts of tensors stay)."""
        batch = self.batch(i)
        if dataset.with_rows or dataset.with_weights:
            item = [self.rows[i], batch] if dataset.with_rows else [batch]
            if dataset.with_weights:
                item.append(self.weights[i])
            return item if self.columns is not None else default_convert(tuple(item))
        return batch if self.columns is not None else default_convert(batch)


def _tensor(array: np.ndarray) -> torch.Tensor:
    # Arrays unpickled from a message are read-only; torch wants writable memory it owns.
    return torch.from_numpy(array if array.flags.writeable else array.copy())
