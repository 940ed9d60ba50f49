"""Several batches per DataLoader message (``batches_per_message``): the same batches, in the same
order, as one batch per message; resume at any batch; real loaders, workers and DDP (gloo)."""

from __future__ import annotations

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from torch.utils.data import DataLoader
from torchdata.stateful_dataloader import StatefulDataLoader

from _reader_data import head_rows, interleave, labels_10_percent
from _reader_workers import LoggedParquetShards, logged_loads, write_shards
from _torch_helpers import run_ranks
from pystratum.policies import MinPerStratum
from pystratum.shards import run_batch_ids
from pystratum.shards._messages import handout_order, worker_run_lengths
from pystratum.shards.torch import ShardBatchDataset, UnpackedBatches, table_tensors
from pystratum.torch import StratifiedBatchSampler

# Three workers on purpose (an odd count gives runs of unequal length); torch warns that a
# 2-core machine suggests at most 2.
pytestmark = pytest.mark.filterwarnings(
    "ignore:This DataLoader will create 3 worker processes:UserWarning")

N_ROWS, GROUP_ROWS = 4000, 100  # 40 shards (2 files of 20 row groups)


@pytest.fixture(scope="module")
def parquet_dir(tmp_path_factory):
    directory = tmp_path_factory.mktemp("messages") / "data"
    write_shards(directory, labels_10_percent(), group_rows=GROUP_ROWS)
    return directory


def same_item(a, b):
    """Equal items of the loader: tensors equal with their dtype, tables equal, lists alike."""
    assert type(a) is type(b), (type(a), type(b))
    if isinstance(a, (list, tuple)):
        assert len(a) == len(b)
        for x, y in zip(a, b):
            same_item(x, y)
    elif isinstance(a, dict):
        assert list(a) == list(b)
        for key in a:
            same_item(a[key], b[key])
    elif isinstance(a, torch.Tensor):
        assert a.dtype == b.dtype and torch.equal(a, b)
    else:
        assert a.equals(b) and a.schema.equals(b.schema)


def dataset(parquet_dir, log, per_message=1, seed=3, **kwargs):
    sampler = StratifiedBatchSampler(labels_10_percent(), MinPerStratum(4), seed=seed)
    reader = LoggedParquetShards(parquet_dir, ["row", "label"], log=log)
    return ShardBatchDataset(reader, sampler, batches_per_message=per_message, **kwargs)


@pytest.mark.parametrize("num_workers", [0, 3])
@pytest.mark.parametrize("options", [{}, {"with_rows": True, "with_weights": True},
                                     {"transform": table_tensors},
                                     {"transform": table_tensors, "with_rows": True}])
def test_messages_of_several_batches_hand_out_the_batches_and_order_of_one_per_message(
        parquet_dir, tmp_path, num_workers, options):
    one = dataset(parquet_dir, tmp_path / "one.log", **options)
    expected = list(DataLoader(one, batch_size=None, num_workers=num_workers))
    for per_message in (2, 7, 1000):
        grouped = dataset(parquet_dir, tmp_path / f"g{per_message}.log", per_message, **options)
        loader = DataLoader(grouped, batch_size=None, num_workers=num_workers)
        got = list(UnpackedBatches(loader))
        assert len(got) == len(expected) == len(UnpackedBatches(loader))
        for a, b in zip(expected, got):
            same_item(a, b)
        # batch by batch in each worker: the shard cache reads exactly what it reads for G=1
        assert sorted(logged_loads(tmp_path / f"g{per_message}.log").tolist()) == \
            sorted(logged_loads(tmp_path / "one.log").tolist())


@settings(max_examples=60)
@given(per_rank=st.integers(0, 40), workers=st.integers(1, 6), data=st.data())
def test_the_handout_order_is_the_loaders_turn_order_and_continues_after_any_stop(
        per_rank, workers, data):
    lengths = worker_run_lengths(per_rank, workers)
    assert lengths == [len(run_batch_ids(per_rank, 1, 0, False, workers, w))
                       for w in range(workers)]
    runs = [[(w, j) for j in range(n)] for w, n in enumerate(lengths)]
    full = interleave(runs) if per_rank else []
    order = list(handout_order(lengths, [0] * workers))
    counters = [0] * workers
    served = []
    for w in order:
        served.append((w, counters[w]))
        counters[w] += 1
    assert served == full
    stop = data.draw(st.integers(0, len(full)))
    starts = [sum(1 for w, _ in full[:stop] if w == v) for v in range(workers)]
    rest = list(handout_order(lengths, starts))
    assert rest == [w for w, _ in full[stop:]]


@pytest.mark.parametrize("num_workers,per_message,stop", [(0, 4, 6), (2, 4, 9), (3, 5, 1),
                                                          (2, 3, 11)])
def test_a_state_saved_inside_a_message_resumes_at_the_next_batch(
        parquet_dir, tmp_path, num_workers, per_message, stop):
    def make():
        grouped = dataset(parquet_dir, tmp_path / "loads.log", per_message, seed=9,
                          with_rows=True)
        return grouped, UnpackedBatches(DataLoader(grouped, batch_size=None,
                                                   num_workers=num_workers))

    grouped, batches = make()
    grouped.set_epoch(1)
    full = [rows.tolist() for rows, _ in batches]
    grouped, batches = make()
    grouped.set_epoch(1)
    head = head_rows(batches, stop)
    state = batches.state_dict()
    assert state["epoch"] == 1 and sum(state["batches_yielded"]) == stop
    # the stop falls inside a message of some worker
    assert any(count % per_message for count in state["batches_yielded"])
    grouped, batches = make()
    batches.load_state_dict(state)
    rest = [rows.tolist() for rows, _ in batches]
    assert head + rest == full
    # the resume is used once: the next epoch starts afresh
    grouped.set_epoch(1)
    assert [rows.tolist() for rows, _ in batches] == full


def test_a_loader_workers_state_counted_in_messages_is_refused(parquet_dir, tmp_path):
    grouped = dataset(parquet_dir, tmp_path / "loads.log", 4, with_rows=True)
    loader = StatefulDataLoader(grouped, batch_size=None, num_workers=2)
    messages = iter(loader)
    next(messages)
    state = loader.state_dict()
    fresh = StatefulDataLoader(dataset(parquet_dir, tmp_path / "loads.log", 4, with_rows=True),
                               batch_size=None, num_workers=2)
    fresh.load_state_dict(state)
    with pytest.raises(ValueError, match=r"state_dict\['batches_per_message'\] must be 1, got 4"):
        next(iter(fresh))


def test_persistent_workers_follow_set_epoch_with_several_batches_per_message(
        parquet_dir, tmp_path):
    grouped = dataset(parquet_dir, tmp_path / "loads.log", 5, with_rows=True)
    batches = UnpackedBatches(DataLoader(grouped, batch_size=None, num_workers=2,
                                         persistent_workers=True))
    sampler = grouped.batches.plans
    for epoch in range(2):
        grouped.set_epoch(epoch)
        plan = [b.tolist() for b in sampler.plan(epoch)]
        runs = [[plan[i] for i in run_batch_ids(len(plan), 1, 0, False, 2, w)]
                for w in range(2)]
        assert [rows.tolist() for rows, _ in batches] == interleave(runs)


def test_the_progress_bar_counts_batches_not_messages(parquet_dir, tmp_path, capsys):
    grouped = dataset(parquet_dir, tmp_path / "loads.log", 4, progress=True)
    served = sum(1 for _ in UnpackedBatches(DataLoader(grouped, batch_size=None)))
    err = capsys.readouterr().err
    assert served > 4 and f"{served}/{served}" in err and "epoch 0: 100%" in err


def test_a_numpy_reader_s_batches_come_as_the_loader_converts_them(tmp_path):
    from _reader_data import ArrayShards

    reader = ArrayShards([3, 5, 4, 6])
    plan = [[0, 9], [4, 4, 17], [2], [10, 11, 12, 13], [7, 1]]
    expected = list(DataLoader(ShardBatchDataset(reader, plan, with_rows=True),
                               batch_size=None, num_workers=2))
    got = list(UnpackedBatches(DataLoader(ShardBatchDataset(reader, plan, with_rows=True,
                                                            batches_per_message=2),
                                          batch_size=None, num_workers=2)))
    assert len(got) == len(expected)
    for a, b in zip(expected, got):
        same_item(a, b)


@pytest.mark.parametrize("value,error", [(0, ValueError), (True, TypeError), (1.5, TypeError),
                                         ("2", TypeError)])
def test_bad_batches_per_message_is_refused_naming_it(parquet_dir, tmp_path, value, error):
    with pytest.raises(error, match=r"^batches_per_message must be"):
        dataset(parquet_dir, tmp_path / "loads.log", value)


def test_loaders_that_cannot_be_unpacked_are_refused(parquet_dir, tmp_path):
    grouped = dataset(parquet_dir, tmp_path / "loads.log", 3)
    with pytest.raises(TypeError, match=r"^loader must be a DataLoader over a ShardBatchDataset"):
        UnpackedBatches(DataLoader(list(range(4)), batch_size=None))
    with pytest.raises(ValueError, match=r"^loader must keep the default collate_fn"):
        UnpackedBatches(DataLoader(grouped, batch_size=None, collate_fn=lambda item: item))
    with pytest.raises(ValueError, match=r"^loader must be built with batch_size=None"):
        UnpackedBatches(DataLoader(grouped, batch_size=2))
    with pytest.raises(ValueError, match=r"^loader must be built with pin_memory=False"):
        UnpackedBatches(DataLoader(grouped, batch_size=None, pin_memory=True))
    with pytest.raises(ValueError, match=r"^loader's dataset must send several batches per "
                                         r"message, got batches_per_message=1"):
        UnpackedBatches(DataLoader(dataset(parquet_dir, tmp_path / "loads.log"), batch_size=None))


def test_ddp_ranks_unpack_their_contiguous_runs_and_resume_inside_a_message(tmp_path):
    labels = labels_10_percent()
    write_shards(tmp_path / "data", labels, group_rows=GROUP_ROWS)
    config = {"directory": str(tmp_path / "data"), "labels": labels.tolist(), "m": 4, "seed": 6,
              "per_message": 3, "whole_epochs": 1, "epoch": 1, "stop": 8, "num_workers": 2}
    results = run_ranks("_reader_workers:ddp_resume_worker", 2, config, tmp_path, timeout=180)
    sampler = StratifiedBatchSampler(labels, MinPerStratum(4), seed=6)
    for epoch, key in ((0, "whole"), (1, None)):
        plan = [b.tolist() for b in sampler.plan(epoch)]
        per_rank = -(-len(plan) // 2)
        for rank, result in enumerate(results):
            assert result["len"] == per_rank
            runs = [[plan[i] for i in run_batch_ids(len(plan), 2, rank, False, 2, w)]
                    for w in range(2)]
            if key:
                assert result[key] == [interleave(runs)]
            else:
                assert len(result["head"]) == 8
                assert result["head"] + result["rest"] == interleave(runs)


@settings(max_examples=40)
@given(sizes=st.lists(st.integers(1, 6), min_size=2, max_size=6), data=st.data())
def test_any_stop_in_any_message_resumes_at_the_next_batch(sizes, data):
    from _reader_data import ArrayShards

    reader = ArrayShards(sizes)
    n_rows = sum(sizes)
    batches = data.draw(st.lists(st.lists(st.integers(0, n_rows - 1), min_size=1, max_size=5),
                                 min_size=1, max_size=12))
    per_message = data.draw(st.integers(2, 5))
    stop = data.draw(st.integers(0, len(batches)))

    def unpacked():
        grouped = ShardBatchDataset(reader, batches, with_rows=True,
                                    batches_per_message=per_message)
        return UnpackedBatches(DataLoader(grouped, batch_size=None))

    first = unpacked()
    iterator = iter(first)
    head = []
    for _ in range(stop):
        rows, served = next(iterator)
        assert rows.tolist() == served.tolist() == batches[len(head)]
        head.append(rows.tolist())
    state = first.state_dict()
    assert state["batches_yielded"] == [stop]
    resumed = unpacked()
    resumed.load_state_dict(state)
    assert head + [rows.tolist() for rows, _ in resumed] == batches


@pytest.mark.parametrize("with_rows", [False, True])
def test_row_positions_travel_only_when_the_dataset_yields_them(parquet_dir, tmp_path, with_rows):
    grouped = dataset(parquet_dir, tmp_path / "loads.log", 4, with_rows=with_rows)
    message = next(iter(grouped))  # what a loader worker sends
    plan = [b.tolist() for b in grouped.batches.plans.plan(0)]
    assert len(message) == 4
    if with_rows:
        assert message.rows.tolist() == [row for batch in plan[:4] for row in batch]
    else:
        assert message.rows is None  # not joined, pickled nor split for nothing
