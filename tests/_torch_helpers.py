"""Shared helpers for the torch tests: data, invariant checks, multi-process runs."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
import warnings
from pathlib import Path

import numpy as np

TESTS = Path(__file__).resolve().parent
REPO = TESTS.parent


def imbalanced_labels(n_rows: int, n_positive: int, seed: int = 0) -> np.ndarray:
    """0/1 labels with ``n_positive`` ones scattered at random positions."""
    labels = np.zeros(n_rows, dtype=np.int64)
    labels[np.random.default_rng(seed).choice(n_rows, n_positive, replace=False)] = 1
    return labels


def stratum_counts(batch, labels, n_strata: int) -> np.ndarray:
    return np.bincount(np.asarray(labels)[np.asarray(batch, dtype=np.int64)], minlength=n_strata)


def assert_every_batch_holds(batches, labels, m: int) -> None:
    """Every batch holds at least ``m`` rows of every stratum present in ``labels``."""
    labels = np.asarray(labels)
    n_strata = int(labels.max()) + 1
    for b, batch in enumerate(batches):
        counts = stratum_counts(batch, labels, n_strata)
        assert counts.min() >= m, f"batch {b} has stratum counts {counts.tolist()} (m={m})"


def assert_one_epoch(batches, n_rows: int) -> None:
    """The batches hold every row exactly once."""
    rows = np.concatenate([np.asarray(b, dtype=np.int64) for b in batches])
    assert rows.shape[0] == n_rows, f"{rows.shape[0]} rows served, expected {n_rows}"
    np.testing.assert_array_equal(np.sort(rows), np.arange(n_rows))


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def run_ranks(worker: str, world_size: int, config: dict, tmp_path: Path, *,
              timeout: float = 120.0, extra_env: dict | None = None) -> list:
    """Run the function ``worker`` of this module as ``world_size`` processes, torchrun style.

    Each process gets RANK, LOCAL_RANK, WORLD_SIZE, MASTER_ADDR=127.0.0.1 and
    a free MASTER_PORT, and writes ``rank<r>.json`` in ``tmp_path``. The run
    fails (and every child is killed) if any process exits non-zero or the
    whole run exceeds ``timeout`` seconds, so a hang shows up as a failure.
    Returns the parsed per-rank JSON results in rank order.
    """
    port = free_port()
    config_path = tmp_path / "config.json"
    config_path.write_text(json.dumps(config))
    procs = []
    logs = []
    from _env import subprocess_environ  # tests/ is on the path where run_ranks runs

    for rank in range(world_size):
        # As the test process started: embedded R (rpy2 tests in the same
        # session) changes LD_LIBRARY_PATH, and pyarrow then fails to import.
        env = subprocess_environ()
        env.update({
            "RANK": str(rank), "LOCAL_RANK": str(rank), "WORLD_SIZE": str(world_size),
            "LOCAL_WORLD_SIZE": str(world_size), "NODE_RANK": "0",
            "MASTER_ADDR": "127.0.0.1", "MASTER_PORT": str(port),
            "OMP_NUM_THREADS": "1", "PYTHONPATH": os.pathsep.join(
                [str(TESTS), _package_root()] + [p for p in [os.environ.get("PYTHONPATH")] if p]),
        })
        env.update(extra_env or {})
        log = open(tmp_path / f"rank{rank}.log", "w+")
        logs.append(log)
        procs.append(subprocess.Popen(
            [sys.executable, "-c", "import _torch_helpers as h; h.worker_main()", worker,
             str(config_path), str(tmp_path)],
            env=env, stdout=log, stderr=subprocess.STDOUT, cwd=str(tmp_path),
        ))
    deadline = time.monotonic() + timeout
    try:
        while any(p.poll() is None for p in procs):
            if time.monotonic() > deadline:
                raise AssertionError(
                    f"{worker} with {world_size} processes did not finish within {timeout} s "
                    f"(a rank hung?)\n" + _tails(logs)
                )
            if any(p.poll() not in (None, 0)
                   and not _aborted_in_teardown(p.poll(), rank, tmp_path, logs[rank])
                   for rank, p in enumerate(procs)):
                break  # one rank failed: the others may wait for it forever
            time.sleep(0.1)
        codes = [p.poll() for p in procs]
        failed = [rank for rank, code in enumerate(codes)
                  if code != 0 and not _aborted_in_teardown(code, rank, tmp_path, logs[rank])]
        if failed:
            raise AssertionError(f"{worker}: exit codes {codes}\n" + _tails(logs))
        for rank, code in enumerate(codes):
            if code != 0:
                warnings.warn(f"rank {rank} aborted in torch.distributed's teardown "
                              f"({_TEARDOWN_ABORT!r}) after writing its result; the result is "
                              f"checked as usual")
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
        for p in procs:
            p.wait()
        for log in logs:
            log.close()
    return [json.loads((tmp_path / f"rank{rank}.json").read_text()) for rank in range(world_size)]


# What libtorch prints when a gloo thread is still joinable as the process
# exits: a known teardown race of torch.distributed, not ours.
_TEARDOWN_ABORT = "terminate called without an active exception"


def _aborted_in_teardown(code, rank, tmp_path, log) -> bool:
    """Whether a rank was killed by SIGABRT in gloo's teardown after writing its whole result:
    such a rank counts as finished (run_ranks warns), its result checked like any other. Any
    other non-zero exit, or an abort before the result was written, is a failure."""
    if code != -signal.SIGABRT:
        return False
    try:
        json.loads((tmp_path / f"rank{rank}.json").read_text())
    except (OSError, ValueError):
        return False
    log.flush()
    log.seek(0)
    return _TEARDOWN_ABORT in log.read()


def _package_root() -> str:
    """Where the parent imports pystratum from, so children test the same code."""
    import pystratum

    return str(Path(pystratum.__file__).absolute().parent.parent)


def _tails(logs) -> str:
    parts = []
    for rank, log in enumerate(logs):
        log.flush()
        log.seek(0)
        text = log.read()
        parts.append(f"--- rank {rank} ---\n{text[-3000:]}")
    return "\n".join(parts)


# ---------------------------------------------------------------------------
# Worker processes (started by run_ranks; each returns its JSON-able result).

def worker_main() -> None:
    name, config_path, out_dir = sys.argv[1:4]
    config = json.loads(Path(config_path).read_text())
    # "module:function" runs a worker defined in another test helper module.
    module, _, function = name.rpartition(":")
    if module:
        import importlib

        result = getattr(importlib.import_module(module), function)(config)
    else:
        result = globals()[name](config)
    rank = int(os.environ["RANK"])
    Path(out_dir, f"rank{rank}.json").write_text(json.dumps(result))
    # Frameworks (Lightning) may leave the process group alive; a gloo group
    # torn down at interpreter exit while a peer still talks to it can abort
    # the process ("terminate called without an active exception"). Leave
    # together, then close it.
    import torch.distributed as dist

    if dist.is_available() and dist.is_initialized():
        import gc

        gc.collect()  # DDP reducers and loaders of the worker go before their group
        dist.barrier()
        dist.destroy_process_group()


def _toy_data(config):
    import torch
    from torch.utils.data import TensorDataset

    labels = imbalanced_labels(config["n_rows"], config["n_positive"],
                               seed=config.get("data_seed", 0))
    features = torch.randn(len(labels), 4, generator=torch.Generator().manual_seed(0))
    dataset = TensorDataset(torch.arange(len(labels)), features,
                            torch.as_tensor(labels, dtype=torch.float32))
    return labels, dataset


def _train_step(model, optimizer, features, target):
    import torch

    loss = torch.nn.functional.binary_cross_entropy_with_logits(model(features).squeeze(1), target)
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()


def ddp_worker(config):
    """Plain torch DDP (gloo): for each of ``config["runs"]``, a tiny model trained for
    ``epochs`` epochs through a DataLoader with its own sampler settings."""
    from datetime import timedelta

    import torch
    import torch.distributed as dist
    from torch.nn.parallel import DistributedDataParallel
    from torch.utils.data import DataLoader

    from pystratum.torch import StratifiedBatchSampler

    dist.init_process_group("gloo", init_method="env://", timeout=timedelta(seconds=60))
    try:
        labels, dataset = _toy_data(config)
        results = []
        for run in config["runs"]:
            strata = labels
            if run.get("parquet"):
                # Member lists read from the files (rng="index"): no label array.
                from pystratum import parquet_strata

                strata = parquet_strata(run["parquet"], "label", batch_rows=64)
            # num_replicas and rank come from the process group.
            sampler = StratifiedBatchSampler(strata, run["m"], seed=run["seed"], rng=run["rng"],
                                             drop_last=run["drop_last"])
            loader = DataLoader(dataset, batch_sampler=sampler, num_workers=run["num_workers"])
            torch.manual_seed(0)
            model = DistributedDataParallel(torch.nn.Linear(4, 1))
            optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
            epochs = []
            for epoch in range(run["epochs"]):
                sampler.set_epoch(epoch)  # several replicas: the epoch moves only through it
                seen = []
                for index, features, target in loader:
                    _train_step(model, optimizer, features, target)
                    seen.append(index.tolist())
                epochs.append(seen)
            dist.barrier()
            results.append({
                "rank": dist.get_rank(), "num_replicas": sampler.num_replicas,
                "seed": sampler.seed, "len_sampler": len(sampler), "len_loader": len(loader),
                "epochs": epochs, "weight": model.module.weight.detach().reshape(-1).tolist(),
            })
        return {"runs": results}
    finally:
        dist.destroy_process_group()


def ddp_peek_worker(config):
    """Plain DDP (gloo) where rank ``peek_rank`` takes one extra batch (a sanity check)
    before the loop of epoch ``peek_epoch``; ``set_epoch`` called or not."""
    import warnings
    from datetime import timedelta

    import torch.distributed as dist
    from torch.utils.data import DataLoader

    from pystratum.torch import StratifiedBatchSampler

    dist.init_process_group("gloo", init_method="env://", timeout=timedelta(seconds=60))
    try:
        labels, dataset = _toy_data(config)
        sampler = StratifiedBatchSampler(labels, config["m"], seed=config["seed"])
        loader = DataLoader(dataset, batch_sampler=sampler, num_workers=config["num_workers"])
        rank = dist.get_rank()
        epochs, peeked = [], None
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            for epoch in range(config["epochs"]):
                if config["set_epoch"]:
                    sampler.set_epoch(epoch)
                if rank == config["peek_rank"] and epoch == config["peek_epoch"]:
                    peeked = next(iter(loader))[0].tolist()
                epochs.append([index.tolist() for index, _, _ in loader])
        dist.barrier()
        return {"rank": rank, "seed": sampler.seed, "epochs": epochs, "peeked": peeked,
                "weight": [0.0],
                "warnings": [str(w.message) for w in caught if "set_epoch" in str(w.message)]}
    finally:
        dist.destroy_process_group()


def ddp_fixed_size_worker(config):
    """Plain DDP (gloo) with a FixedSize policy; set_epoch before every epoch."""
    from datetime import timedelta

    import torch
    import torch.distributed as dist
    from torch.utils.data import DataLoader, TensorDataset

    from pystratum.policies import FixedSize
    from pystratum.torch import StratifiedBatchSampler

    dist.init_process_group("gloo", init_method="env://", timeout=timedelta(seconds=60))
    try:
        labels = imbalanced_labels(config["n_rows"], config["n_positive"],
                                   seed=config["data_seed"])
        dataset = TensorDataset(torch.arange(len(labels)))
        sampler = StratifiedBatchSampler(labels, FixedSize(config["batch_size"]),
                                         seed=config["seed"])
        epochs = _epochs_served(sampler, DataLoader(dataset, batch_sampler=sampler),
                                config["epochs"])
        dist.barrier()
        return {"rank": dist.get_rank(), "epochs": epochs}
    finally:
        dist.destroy_process_group()


def _epochs_served(sampler, loader, count):
    """The row indices ``loader`` yields in epochs ``0 .. count - 1`` (set_epoch before each)."""
    epochs = []
    for epoch in range(count):
        sampler.set_epoch(epoch)
        epochs.append([index.tolist() for (index,) in loader])
    return epochs


def multi_label_matrix(n_rows: int, n_labels: int, seed: int) -> np.ndarray:
    """An (N, L) 0/1 label matrix, label j positive with probability 0.05 * (j + 1)."""
    rates = 0.05 * (np.arange(n_labels) + 1)
    return (np.random.default_rng(seed).random((n_rows, n_labels)) < rates).astype(np.int64)


def ddp_multi_label_worker(config):
    """Plain DDP (gloo) with a MultiLabel policy on a dataset's 2-D .targets; set_epoch each epoch."""
    from datetime import timedelta

    import torch
    import torch.distributed as dist
    from torch.utils.data import DataLoader, TensorDataset

    from pystratum.policies import MultiLabel
    from pystratum.torch import StratifiedBatchSampler

    dist.init_process_group("gloo", init_method="env://", timeout=timedelta(seconds=60))
    try:
        matrix = multi_label_matrix(config["n_rows"], config["n_labels"], config["data_seed"])
        dataset = TensorDataset(torch.arange(len(matrix)))
        dataset.targets = torch.as_tensor(matrix)
        sampler = StratifiedBatchSampler(dataset, MultiLabel(batch_size=config["batch_size"]),
                                         seed=config["seed"], rng=config["rng"])
        epochs = _epochs_served(sampler, DataLoader(dataset, batch_sampler=sampler),
                                config["epochs"])
        dist.barrier()
        return {"rank": dist.get_rank(), "epochs": epochs, "len": len(sampler)}
    finally:
        dist.destroy_process_group()


def lightning_worker(config):
    """Lightning DDP (use_distributed_sampler=False), processes launched externally.

    Lightning sees LOCAL_RANK in the environment and joins the processes
    started by run_ranks instead of starting its own.
    """
    import warnings

    import lightning as L
    import torch
    from torch.utils.data import DataLoader

    from pystratum.torch import StratifiedBatchSampler

    warnings.filterwarnings("ignore")  # Lightning's advice about num_workers etc.
    labels, dataset = _toy_data(config)

    class Tiny(L.LightningModule):
        def __init__(self):
            super().__init__()
            self.layer = torch.nn.Linear(4, 1)
            self.seen = {}

        def training_step(self, batch, batch_idx):
            index, features, target = batch
            self.seen.setdefault(self.current_epoch, []).append(index.tolist())
            return torch.nn.functional.binary_cross_entropy_with_logits(
                self.layer(features).squeeze(1), target)

        def configure_optimizers(self):
            return torch.optim.SGD(self.parameters(), lr=0.1)

        def train_dataloader(self):
            # Built after Lightning set up the process group: num_replicas/rank/seed from it.
            self.sampler = StratifiedBatchSampler(labels, config["m"], seed=config["seed"])
            return DataLoader(dataset, batch_sampler=self.sampler)

    module = Tiny()
    trainer = L.Trainer(
        accelerator="cpu", devices=int(os.environ["WORLD_SIZE"]), num_nodes=1, strategy="ddp",
        max_epochs=config["epochs"], use_distributed_sampler=False, logger=False,
        enable_checkpointing=False, enable_progress_bar=False, enable_model_summary=False,
    )
    trainer.fit(module)
    return {
        "rank": trainer.global_rank, "num_replicas": module.sampler.num_replicas,
        "seed": module.sampler.seed, "len_sampler": len(module.sampler),
        "epochs": [module.seen[e] for e in sorted(module.seen)],
        "weight": module.layer.weight.detach().reshape(-1).tolist(),
    }


def accelerate_worker(config):
    """accelerate on CPU processes: it shards whole batches (split_batches=False)."""
    import torch
    from accelerate import Accelerator
    from accelerate.utils import DataLoaderConfiguration
    from torch.utils.data import DataLoader

    from pystratum.torch import StratifiedBatchSampler

    accelerator = Accelerator(cpu=True, dataloader_config=DataLoaderConfiguration(
        split_batches=False, even_batches=True))
    labels, dataset = _toy_data(config)
    # accelerate shards the batches itself: the sampler plans the whole epoch
    # (num_replicas=1); seed=None would still be broadcast from rank 0.
    sampler = StratifiedBatchSampler(labels, config["m"], seed=config["seed"],
                                     num_replicas=1, rank=0)
    loader = DataLoader(dataset, batch_sampler=sampler)
    torch.manual_seed(0)
    model = torch.nn.Linear(4, 1)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    model, optimizer, loader = accelerator.prepare(model, optimizer, loader)
    epochs = []
    for _ in range(config["epochs"]):
        seen = []
        for index, features, target in loader:
            loss = torch.nn.functional.binary_cross_entropy_with_logits(
                model(features).squeeze(1), target)
            optimizer.zero_grad()
            accelerator.backward(loss)
            optimizer.step()
            seen.append(index.tolist())
        epochs.append(seen)
    accelerator.wait_for_everyone()
    result = {
        "rank": accelerator.process_index, "num_processes": accelerator.num_processes,
        "seed": sampler.seed, "len_loader": len(loader), "epochs": epochs,
        "weight": accelerator.unwrap_model(model).weight.detach().reshape(-1).tolist(),
    }
    accelerator.end_training()
    return result


def torch_rng_worker(config):
    """Batches of rng='torch' in a fresh process (nothing else touched torch's state)."""
    from pystratum.torch import StratifiedBatchSampler

    labels = imbalanced_labels(config["n_rows"], config["n_positive"], seed=config["data_seed"])
    sampler = StratifiedBatchSampler(labels, config["m"], seed=config["seed"], rng="torch")
    return {"epochs": [list(sampler) for _ in range(config["epochs"])]}


def ddp_policy_worker(config):
    """Plain DDP (gloo) with any policy given as a record; weights carried by WeightedDataset."""
    from datetime import timedelta

    import torch
    import torch.distributed as dist
    from torch.utils.data import DataLoader, TensorDataset

    from pystratum.policies import policy_from_params
    from pystratum.torch import StratifiedBatchSampler, WeightedDataset

    dist.init_process_group("gloo", init_method="env://", timeout=timedelta(seconds=60))
    try:
        labels = np.asarray(config["labels"])
        policy = policy_from_params(config["policy"]["name"], config["policy"]["params"])
        sampler = StratifiedBatchSampler(labels, policy, seed=config["seed"], rng=config["rng"])
        rows = TensorDataset(torch.arange(len(labels)))
        try:
            dataset = WeightedDataset.for_sampler(rows, sampler)
        except ValueError:  # a policy without weights (ClassesPerBatch): every row weighs 1
            dataset = WeightedDataset(rows, np.ones(len(labels)))
        loader = DataLoader(dataset, batch_sampler=sampler)
        epochs, weights = [], []
        for epoch in range(config["epochs"]):
            sampler.set_epoch(epoch)
            batches = [(index.tolist(), weight.tolist()) for index, weight in loader]
            epochs.append([b for b, _ in batches])
            weights.append([w for _, w in batches])
        dist.barrier()
        return {"rank": dist.get_rank(), "epochs": epochs, "weights": weights,
                "length": len(sampler)}
    finally:
        dist.destroy_process_group()


def tree_ddp_worker(config):
    """TreeBatchSampler under plain torch DDP (gloo): for each of ``config["runs"]``, the
    batches each rank trains on."""
    from datetime import timedelta

    import torch
    import torch.distributed as dist
    from torch.nn.parallel import DistributedDataParallel
    from torch.utils.data import DataLoader, TensorDataset

    from _tree_data import metadata
    from pystratum.tree import TreeSampler
    from pystratum.tree.torch import TreeBatchSampler

    dist.init_process_group("gloo", init_method="env://", timeout=timedelta(seconds=60))
    try:
        frame = metadata(config["n_rows"])
        features = torch.randn(len(frame), 4, generator=torch.Generator().manual_seed(0))
        dataset = TensorDataset(torch.arange(len(frame)), features)
        results = []
        for run in config["runs"]:
            # seed=None on purpose when asked: rank 0's stream is broadcast.
            tree = TreeSampler(config["tree"], frame, seed=run["seed"])
            sampler = TreeBatchSampler(tree, config["batch_size"], drop_last=run["drop_last"])
            loader = DataLoader(dataset, batch_sampler=sampler,
                                num_workers=config["num_workers"])
            torch.manual_seed(0)
            model = DistributedDataParallel(torch.nn.Linear(4, 1))
            optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
            epochs = []
            for epoch in range(config["epochs"]):
                # Several replicas: the epoch changes only through set_epoch (the rule
                # every pystratum sampler follows, as DistributedSampler).
                sampler.set_epoch(epoch)
                seen = []
                for index, x in loader:
                    loss = model(x).pow(2).mean()
                    optimizer.zero_grad()
                    loss.backward()
                    optimizer.step()
                    seen.append(index.tolist())
                epochs.append(seen)
            dist.barrier()
            results.append({"len": len(sampler), "epochs": epochs,
                            "seed_state": tree.state_dict()["seed"],
                            "weight": model.module.weight.detach().reshape(-1).tolist()})
        return {"rank": dist.get_rank(), "runs": results}
    finally:
        dist.destroy_process_group()


def teardown_abort_worker(config):
    """Aborts the process the way gloo's teardown race does: after the result is written
    (``config["after_result"]``), or before."""
    import atexit

    def abort():
        sys.stderr.write(_TEARDOWN_ABORT + "\n")
        sys.stderr.flush()
        os.abort()

    rank = int(os.environ["RANK"])
    time.sleep(0.5 * rank)  # rank 0 aborts while rank 1 is still running
    if config["after_result"]:
        atexit.register(abort)  # runs after worker_main has written the result
    else:
        abort()
    return {"rank": rank}


def wrapper_overlap_worker(config):
    """Two ways to shard a randomly drawing sampler over gloo ranks whose global torch
    seeds differ (seed + rank, as many scripts do): the list-it-on-every-rank pattern
    (each rank lists its own copy and keeps positions rank::n) and
    pystratum.torch.DistributedSamplerWrapper; also a sampler drawing from a generator the
    wrapper cannot see (a random.Random), whose order rank 0 broadcasts."""
    import random
    from datetime import timedelta

    import torch
    import torch.distributed as dist
    from torch.utils.data import BatchSampler, DataLoader, RandomSampler, TensorDataset
    from torch.utils.data import WeightedRandomSampler

    from pystratum.torch import DistributedSamplerWrapper

    class OwnRandomSampler(torch.utils.data.Sampler):
        def __init__(self, n, seed):
            self.n, self.rnd = n, random.Random(seed)

        def __iter__(self):
            return iter(self.rnd.sample(range(self.n), self.n))

        def __len__(self):
            return self.n

    dist.init_process_group("gloo", init_method="env://", timeout=timedelta(seconds=60))
    try:
        rank, world = dist.get_rank(), dist.get_world_size()
        torch.manual_seed(1000 + rank)
        n = config["n_rows"]
        dataset = TensorDataset(torch.arange(n))
        result = {"rank": rank}
        inner = RandomSampler(range(n))
        listed = list(inner)  # the pattern: every rank lists its own copy
        result["pattern"] = listed[rank::world]
        weighted = WeightedRandomSampler(torch.ones(n), num_samples=n, replacement=False)
        result["pattern_weighted"] = list(weighted)[rank::world]
        epochs = {}
        for name, make in (("random", lambda: RandomSampler(range(n))),
                           ("weighted", lambda: WeightedRandomSampler(torch.ones(n), n,
                                                                      replacement=False)),
                           ("own", lambda: OwnRandomSampler(n, seed=rank))):
            sampler = DistributedSamplerWrapper(make(), seed=config["seed"])
            loader = DataLoader(dataset, sampler=sampler, batch_size=config["batch_size"])
            seen = []
            for epoch in range(2):
                sampler.set_epoch(epoch)
                seen.append([row for (index,) in loader for row in index.tolist()])
            epochs[name] = {"epochs": seen, "len": len(sampler)}
        # A batch sampler: whole batches per rank.
        batch_sampler = DistributedSamplerWrapper(
            BatchSampler(RandomSampler(range(n)), config["batch_size"], drop_last=False),
            seed=config["seed"])
        batch_sampler.set_epoch(0)
        loader = DataLoader(dataset, batch_sampler=batch_sampler)
        epochs["batches"] = {"epochs": [[index.tolist() for (index,) in loader]],
                             "len": len(batch_sampler)}
        result["wrapper"] = epochs
        dist.barrier()
        return result
    finally:
        dist.destroy_process_group()


# ---------------------------------------------------------------------------
# Hugging Face trainers (the hf extra): tiny models built from configs, no download.

def hf_tiny_classifier(n_rows: int, seed: int = 0):
    """A one-layer BERT classifier with random weights over tokens ``2 .. n_rows + 1`` (row
    ``r`` is the sequence ``[1, r + 2]``), and a list its forward pre-hook fills with the rows
    of every batch it is called on."""
    import torch
    from transformers import BertConfig, BertForSequenceClassification

    torch.manual_seed(seed)
    model = BertForSequenceClassification(BertConfig(
        vocab_size=n_rows + 2, hidden_size=8, num_hidden_layers=1, num_attention_heads=1,
        intermediate_size=8, max_position_embeddings=4, num_labels=2))
    seen = []

    def record(module, args, kwargs):
        if module.training:
            seen.append((kwargs["input_ids"][:, 1] - 2).tolist())

    model.register_forward_pre_hook(record, with_kwargs=True)
    return model, seen


def hf_rows_dataset(labels):
    """A ``datasets.Dataset`` of rows ``[1, r + 2]`` with ``labels`` and a ``group`` column."""
    import datasets

    labels = [int(v) for v in labels]
    return datasets.Dataset.from_dict({"input_ids": [[1, r + 2] for r in range(len(labels))],
                                       "labels": labels, "group": labels})


def hf_trainer_worker(config):
    """StratifiedTrainer under accelerate's multi-process CPU state (gloo), launched like
    torchrun: the rows of every training step on this process; with ``resume_at``, also a
    run resumed from the checkpoint saved at that step (steps after it)."""
    import warnings

    from transformers import TrainingArguments

    from pystratum.integrations.transformers import StratifiedTrainer

    warnings.filterwarnings("ignore")
    labels = np.asarray(config["labels"])

    def run(save_steps=None, resume=None):
        model, seen = hf_tiny_classifier(len(labels))
        args = TrainingArguments(
            output_dir=config["output_dir"], per_device_train_batch_size=config["batch_size"],
            num_train_epochs=config["epochs"], use_cpu=True, report_to=[],
            save_strategy="no" if save_steps is None else "steps", save_steps=save_steps or 500,
            logging_strategy="no", disable_tqdm=True, seed=config["seed"], ddp_backend="gloo")
        trainer = StratifiedTrainer(model=model, args=args, train_dataset=hf_rows_dataset(labels),
                                    strata="group")
        trainer.train(resume_from_checkpoint=resume)
        return trainer, seen

    trainer, seen = run(save_steps=config.get("resume_at"))
    result = {"rank": trainer.args.process_index, "world": trainer.args.world_size,
              "steps": seen}
    if config.get("resume_at"):
        _, resumed = run(resume=str(Path(config["output_dir"]) /
                                    f"checkpoint-{config['resume_at']}"))
        result["resumed"] = resumed
    return result


def wrapper_overlong_worker(config):
    """A DistributedSamplerWrapper over an inner sampler that yields without end, on gloo
    ranks: rank 0 lists it and refuses at item len + 1; every rank must raise the same
    ValueError rather than wait for a broadcast that never comes."""
    from datetime import timedelta

    import torch
    import torch.distributed as dist

    from pystratum.torch import DistributedSamplerWrapper

    class Endless(torch.utils.data.Sampler):
        def __iter__(self):
            row = 0
            while True:
                yield row % 5
                row += 1

        def __len__(self):
            return config["length"]

    dist.init_process_group("gloo", init_method="env://", timeout=timedelta(seconds=60))
    try:
        wrapper = DistributedSamplerWrapper(Endless(), seed=1)
        wrapper.set_epoch(0)
        try:
            list(wrapper)
            return {"error": None}
        except ValueError as error:
            return {"error": str(error)}
    finally:
        dist.destroy_process_group()
