"""Generated negatives through real torch components: DataLoader (with workers), feature
tables, StatefulDataLoader resume, and a real 2-rank gloo process group on 127.0.0.1."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
import torch
from torch.utils.data import DataLoader

from _torch_helpers import run_ranks
from pystratum.negatives import NegativePairSampler
from pystratum.negatives.torch import (NegativePairBatchSampler, PairFeatureDataset,
                                       collate_pairs, pair_loader)


def data(seed=0, num_users=40, num_items=30):
    gen = np.random.default_rng(seed)
    observed = gen.random((num_users, num_items)) < 0.2
    observed[np.arange(num_users), gen.integers(0, num_items - 1, num_users)] = True
    observed[:, -1] = False
    users, items = np.nonzero(observed)
    order = gen.permutation(users.size)
    return users[order], items[order], observed


def as_lists(batch):
    return {key: value.tolist() for key, value in batch.items()}


def check_round_robin(per_rank, expected, length):
    """Two ranks each served ``length`` batches; rank r the batches r, r + 2, ... of
    ``expected`` (the core's epoch), the last ones padded from the epoch's start."""
    assert len(per_rank[0]) == len(per_rank[1]) == length
    for rank, served in enumerate(per_rank):
        for j, batch in enumerate(served):
            want = expected[(j * 2 + rank) % len(expected)]
            assert batch["positive"] == want.positive.tolist()
            assert batch["item"] == want.item.tolist()


@pytest.mark.parametrize("num_workers", [0, 2])
def test_dataloader_batches_equal_the_core_with_feature_tables(num_workers):
    users, items, observed = data()
    user_table = np.random.default_rng(1).random((40, 3)).astype(np.float32)
    item_table = pd.DataFrame({"a": np.arange(30.0), "b": -np.arange(30.0)})
    sampler = NegativePairBatchSampler(torch.as_tensor(users), torch.as_tensor(items),
                                       num_items=30, negatives=3, batch_size=16, seed=7)
    loader = pair_loader(sampler, user_features=torch.as_tensor(user_table),
                         item_features=item_table, num_workers=num_workers)
    core = NegativePairSampler(users, items, num_items=30, negatives=3, batch_size=16, seed=7)
    for epoch in range(2):
        got = list(loader)
        want = core.epoch_batches(epoch)
        assert len(got) == len(want) == len(sampler)
        for g, w in zip(got, want):
            assert g["user"].dtype == torch.int64 and g["label"].dtype == torch.float32
            for name in ("user", "item", "positive"):
                assert g[name].tolist() == getattr(w, name).tolist()
            np.testing.assert_allclose(g["weight"].numpy(), w.weight, rtol=1e-6)
            np.testing.assert_allclose(g["log_q"].numpy(), w.log_q, rtol=1e-6)
            np.testing.assert_array_equal(g["user_features"].numpy(), user_table[w.user])
            np.testing.assert_array_equal(g["item_features"].numpy()[:, 0], w.item)
            n = w.num_positives
            assert not observed[w.user[n:], w.item[n:]].any()


def test_same_batches_whatever_the_number_of_workers():
    users, items, _ = data(2)
    runs = []
    for workers in (0, 1, 2):
        sampler = NegativePairBatchSampler(users, items, num_items=30, negatives=2,
                                           batch_size=8, seed=3, rng="R")
        runs.append([as_lists(b) for b in pair_loader(sampler, num_workers=workers)])
    assert runs[0] == runs[1] == runs[2]


def test_feature_tables_are_checked():
    users, items, _ = data()
    sampler = NegativePairBatchSampler(users, items, num_items=30, negatives=1, batch_size=8,
                                       seed=1)
    with pytest.raises(ValueError, match=r"item_features must have a row per id \(at least "
                                         r"num_items=30 rows\), got 29 rows"):
        pair_loader(sampler, item_features=np.zeros((29, 2)))
    with pytest.raises(TypeError, match="user_features must hold numbers"):
        pair_loader(sampler, user_features=np.array([["a"]] * 40, dtype=object))
    with pytest.raises(TypeError, match="pair_loader sets batch_size itself"):
        pair_loader(sampler, batch_size=4)
    with pytest.raises(TypeError, match="no rows of its own"):
        PairFeatureDataset()[0]


def test_stateful_dataloader_resumes_mid_epoch():
    from torchdata.stateful_dataloader import StatefulDataLoader

    users, items, _ = data(3)

    def loader(seed):
        sampler = NegativePairBatchSampler(users, items, num_items=30, negatives=2,
                                           batch_size=6, seed=seed, rng="R")
        return StatefulDataLoader(PairFeatureDataset(), batch_sampler=sampler,
                                  collate_fn=collate_pairs)

    full = [as_lists(b) for b in loader(5)]
    first = loader(5)
    it = iter(first)
    head = [as_lists(next(it)) for _ in range(4)]
    state = first.state_dict()
    second = loader(123)  # the saved seed wins
    second.load_state_dict(state)
    tail = [as_lists(b) for b in second]
    assert head + tail == full


def test_plain_dataloader_rejects_a_dataset_row_access():
    users, items, _ = data()
    sampler = NegativePairBatchSampler(users, items, num_items=30, negatives=1, batch_size=8,
                                       seed=1)
    with pytest.raises(TypeError, match="fetches NegativeBatch objects"):
        PairFeatureDataset().__getitems__([0, 1])
    assert len(list(DataLoader(PairFeatureDataset(), batch_sampler=sampler,
                               collate_fn=collate_pairs))) == len(sampler)


def test_seed_none_needs_a_process_group_with_several_replicas():
    users, items, _ = data()
    with pytest.raises(ValueError, match="seed=None with num_replicas=2"):
        NegativePairBatchSampler(users, items, num_items=30, negatives=1, batch_size=8,
                                 num_replicas=2, rank=0)


def test_two_rank_gloo_group(tmp_path):
    """One process group, two samplers (rng numpy and R), DataLoader workers, 2 epochs."""
    users, items, observed = data(4)
    config = {"users": users.tolist(), "items": items.tolist(), "num_items": 30,
              "negatives": 2, "batch_size": 10, "rngs": ["numpy", "R"], "num_workers": 1,
              "epochs": 2}
    results = run_ranks("_negatives_workers:ddp_negatives_worker", 2, config, tmp_path)
    for run, rng in enumerate(config["rngs"]):
        ranks = [r["runs"][run] for r in results]
        seed = ranks[0]["seed"]
        assert ranks[1]["seed"] == seed  # rank 0's fresh seed was broadcast
        core = NegativePairSampler(users, items, num_items=30, negatives=2, batch_size=10,
                                   seed=seed, rng=rng)
        for epoch in range(2):
            expected = core.epoch_batches(epoch)
            per_rank = [r["epochs"][epoch] for r in ranks]
            check_round_robin(per_rank, expected, ranks[0]["len"])
            positives = [p for served in per_rank for b in served for p in b["positive"]
                         if p >= 0]
            assert set(positives) == set(range(users.size))
            for served in per_rank:
                for b in served:
                    u, i = np.asarray(b["user"]), np.asarray(b["item"])
                    n = sum(p >= 0 for p in b["positive"])
                    assert not observed[u[n:], i[n:]].any()


@pytest.mark.parametrize("set_epoch, num_workers, rng", [(True, 0, "numpy"), (False, 1, "R")],
                         ids=["set_epoch", "no-set_epoch-worker"])
def test_ddp_peek_on_one_rank_keeps_ranks_in_step(tmp_path, set_epoch, num_workers, rng):
    """One extra iter() on rank 1 (a peeked batch) must not move rank 1 to another epoch:
    under DDP the epoch changes only through set_epoch (the engine's rule)."""
    users, items, _ = data(5)
    config = {"users": users.tolist(), "items": items.tolist(), "num_items": 30,
              "negatives": 2, "batch_size": 12, "rng": rng, "num_workers": num_workers,
              "epochs": 2, "set_epoch": set_epoch, "peek_rank": 1,
              "peek_epoch": 1 if set_epoch else 0}
    results = run_ranks("_negatives_workers:ddp_negatives_peek_worker", 2, config, tmp_path)
    seed = results[0]["seed"]
    assert results[1]["seed"] == seed
    core = NegativePairSampler(users, items, num_items=30, negatives=2, batch_size=12,
                               seed=seed, rng=rng)
    # Without set_epoch both passes serve epoch 0 (as DistributedSampler would).
    served_epochs = [0, 1] if set_epoch else [0, 0]
    for run, epoch in enumerate(served_epochs):
        expected = core.epoch_batches(epoch)
        per_rank = [r["epochs"][run] for r in results]
        check_round_robin(per_rank, expected, results[0]["len"])
    peek_epoch = config["peek_epoch"]
    assert results[1]["peeked"] == results[1]["epochs"][peek_epoch][0]["positive"]
    assert results[0]["peeked"] is None
    assert [r["epoch_after"] for r in results] == [served_epochs[-1]] * 2
    # Every rank took the same optimizer steps: the DDP replicas agree.
    np.testing.assert_allclose(results[0]["weight"], results[1]["weight"], rtol=1e-6)
    if set_epoch:
        assert [r["warnings"] for r in results] == [[], []]  # a peek alone does not warn
    else:
        # The second full pass of epoch 0 warns once on each rank that set_epoch is missing.
        for r in results:
            assert len(r["warnings"]) == 1 and "serves epoch 0 again" in r["warnings"][0]


def test_set_epoch_hook_where_lightning_looks():
    users, items, _ = data()
    sampler = NegativePairBatchSampler(users, items, num_items=30, negatives=1, batch_size=8,
                                       seed=1, num_replicas=2, rank=1)
    sampler.sampler.set_epoch(3)
    assert sampler.epoch == 3
    assert [b.epoch for b in sampler] == [3] * len(sampler)
    assert "NegativePairBatchSampler" in repr(sampler.sampler)


def test_a_dataloader_over_a_row_dataset_is_refused_pointing_to_pair_loader():
    """Issue 18 item 14: DataLoader(dataset, batch_sampler=sampler) over a dataset of rows
    failed inside torch ("'NegativeBatch' object is not iterable"); it is refused when the
    loop starts, before any worker, naming pair_loader."""
    users, items, _ = data()
    sampler = NegativePairBatchSampler(users, items, num_items=30, negatives=1, batch_size=8,
                                       seed=1)
    rows = torch.utils.data.TensorDataset(torch.arange(len(users)))
    for loader in (DataLoader(rows, batch_sampler=sampler),
                   DataLoader(rows, batch_sampler=sampler, num_workers=2),
                   DataLoader(rows, sampler=sampler, batch_size=4)):
        with pytest.raises(TypeError, match=r"NegativeBatch.*pair_loader\(sampler"):
            next(iter(loader))
    # A dataset that fetches whole batches (__getitems__) is what the sampler is for.

    class Whole(torch.utils.data.Dataset):
        def __getitems__(self, batch):
            return {"n": len(batch), "epoch": batch.epoch}

    got = list(DataLoader(Whole(), batch_sampler=sampler, collate_fn=lambda fetched: fetched))
    assert [g["n"] for g in got] == [len(b) for b in sampler.epoch_batches(0)]
