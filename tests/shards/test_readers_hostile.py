"""Bad input to the shard readers: clear errors naming the argument, and nothing wrong served."""

from __future__ import annotations

import copy

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from _reader_data import ArrayShards
from _reader_workers import write_shards
from pystratum import plan_batches, shard_sizes
from pystratum.policies import MinPerStratum, Targets
from pystratum.shards import BatchServer, ParquetShards, ShardedBatches


class ShortShard(ArrayShards):
    """Returns one row too few (or too many) for one shard."""

    def __init__(self, sizes, bad, delta=-1):
        super().__init__(sizes)
        self.bad, self.delta = bad, delta

    def load(self, shard):
        rows = super().load(shard)
        if shard == self.bad:
            return rows[:-1] if self.delta < 0 else np.concatenate([rows, rows[:1]])
        return rows


@pytest.mark.parametrize("delta", [-1, 1])
def test_a_reader_returning_the_wrong_row_count_is_refused(delta):
    server = BatchServer(ShortShard([4, 4, 4], bad=1, delta=delta), cache_shards=2)
    assert server.serve([0, 8]).tolist() == [0, 8]
    got = 3 if delta < 0 else 5
    with pytest.raises(ValueError, match=rf"reader.load\(1\) must return shard_sizes\[1\]=4 rows, "
                                         rf"got {got}"):
        server.serve([5, 0])
    # Nothing of the bad shard was cached: asking again fails again instead of serving it.
    with pytest.raises(ValueError, match=r"reader.load\(1\)"):
        server.serve([4])


@settings(max_examples=40)
@given(sizes=st.lists(st.integers(1, 6), min_size=2, max_size=8), data=st.data())
def test_a_wrong_shard_never_reaches_a_batch(sizes, data):
    bad = data.draw(st.integers(0, len(sizes) - 1))
    reader = ShortShard(sizes, bad=bad, delta=data.draw(st.sampled_from([-1, 1])))
    server = BatchServer(reader, cache_shards=data.draw(st.integers(1, 3)))
    start = sum(sizes[:bad])
    for _ in range(4):
        batch = data.draw(st.lists(st.integers(0, sum(sizes) - 1), min_size=1, max_size=12))
        touches_bad = any(start <= row < start + sizes[bad] for row in batch)
        if touches_bad:
            with pytest.raises(ValueError, match=rf"reader.load\({bad}\) must return"):
                server.serve(batch)
        else:
            assert server.serve(batch).tolist() == batch


def test_empty_shards_keep_their_place_and_are_never_read(tmp_path):
    table = pa.table({"row": np.arange(9), "label": np.arange(9) % 2})
    with pq.ParquetWriter(tmp_path / "gaps.parquet", table.schema) as writer:
        for start, stop in ((0, 3), (3, 3), (3, 7), (7, 7), (7, 9)):
            writer.write_table(table.slice(start, stop - start))
    reader = ParquetShards(tmp_path / "gaps.parquet")
    assert reader.shard_sizes.tolist() == [3, 0, 4, 0, 2]
    plans = lambda epoch: plan_batches(np.arange(9) % 2, MinPerStratum(1), seed=2, epoch=epoch,
                                       shards=shard_sizes(reader.shard_sizes), window=1)
    served = ShardedBatches(reader, plans, cache_shards=2)
    rows = [table_rows for _, table in served.run()
            for table_rows in table.column("row").to_pylist()]
    assert sorted(rows) == list(range(9))
    assert served.server.cache.loads_per_shard[[1, 3]].tolist() == [0, 0]


@pytest.mark.parametrize("sizes, error, match", [
    ([3, -1, 2], ValueError, r"reader.shard_sizes must be >= 0 everywhere, got "
                             r"reader.shard_sizes\[1\]=-1"),
    ([0, 0], ValueError, "reader.shard_sizes must hold at least one row"),
    ([], ValueError, "reader.shard_sizes must be a non-empty 1-D sequence"),
    ([[1, 2]], ValueError, "reader.shard_sizes must be a non-empty 1-D sequence"),
    ([1.5, 2], TypeError, "reader.shard_sizes must hold integers"),
    (["a"], TypeError, "reader.shard_sizes must hold integers"),
])
def test_bad_shard_sizes_are_refused(sizes, error, match):
    reader = ArrayShards([1])
    reader.shard_sizes = sizes
    with pytest.raises(error, match=match):
        BatchServer(reader)


def test_objects_that_are_no_readers_are_refused():
    with pytest.raises(TypeError, match="reader must have shard_sizes and a load"):
        BatchServer([1, 2, 3])
    with pytest.raises(ValueError, match="cache_shards must be a positive integer"):
        BatchServer(ArrayShards([2]), cache_shards=0)

    class Opaque(ArrayShards):
        def load(self, shard):
            return {"rows": super().load(shard)}

    with pytest.raises(TypeError, match=r"reader.load\(0\) must return a pyarrow Table"):
        BatchServer(Opaque([2, 2])).serve([0, 3])


def test_a_plan_for_other_data_is_refused_naming_the_sizes():
    reader = ArrayShards([10, 10])
    with pytest.raises(ValueError, match=r"n_rows must equal the reader's rows, got n_rows=25 "
                                         r"but the reader's shard_sizes sum to 20"):
        ShardedBatches(reader, [[0, 1]], n_rows=25)
    served = ShardedBatches(reader, lambda epoch: plan_batches(np.arange(25) % 2, 2, seed=1))
    with pytest.raises(ValueError, match=r"plans' batches must hold rows in \[0, 20\), got row "
                                         r"2\d: the plan's rows do not match the reader's shards "
                                         r"\(20 rows in 2 shards\)"):
        next(served.run())
    assert served.stats.loads == 0  # refused before anything was read
    with pytest.raises(ValueError, match="batch 1 of epoch 0 has shape"):
        next(ShardedBatches(reader, [[0, 1], []]).run())
    with pytest.raises(TypeError, match="plans must be a sampler with plan"):
        next(ShardedBatches(reader, 7).run())


# --- data changed between epochs or before a resume ------------------------------------------

def labels_for(n_rows):
    return (np.arange(n_rows) % 7 == 0).astype(np.int64)


def test_a_parquet_file_changed_between_epochs_is_refused_naming_it(tmp_path):
    labels = labels_for(600)
    write_shards(tmp_path / "d", labels, group_rows=50)
    reader = ParquetShards(tmp_path / "d", ["row"])
    served = ShardedBatches(reader, lambda e: plan_batches(labels, 3, seed=1, epoch=e),
                            cache_shards=1)
    assert sum(1 for _ in served.run()) > 0
    # Rewritten with other row groups (same rows): the plan's offsets no longer hold.
    write_shards(tmp_path / "d", labels, group_rows=40)
    served.set_epoch(1)
    with pytest.raises(ValueError, match=r"the Parquet file '.*part-\d.parquet' changed since "
                                         r"the reader read its footer \(row groups of 6 x 50 rows then, row groups of 7 x 40, 20 "):
        list(served.run())


def reverse_values(part):
    """Rewrites a file with the same row groups (same row counts) but other rows."""
    table = pq.read_table(part)
    pq.write_table(table.set_column(0, "row", pa.array(table.column("row").to_numpy()[::-1])),
                   part, row_group_size=50)


def test_a_changed_file_is_refused_in_the_next_epoch_even_when_every_shard_is_cached(tmp_path):
    # Same row counts, so no load's row count check can notice; every shard stays in the cache,
    # so the next epoch would read nothing: only the check at the start of the epoch refuses.
    labels = labels_for(600)
    write_shards(tmp_path / "d", labels, group_rows=50)
    reader = ParquetShards(tmp_path / "d", ["row"])
    served = ShardedBatches(reader, lambda e: plan_batches(labels, 3, seed=1, epoch=e),
                            cache_shards=reader.shard_sizes.shape[0])
    assert sum(1 for _ in served.run()) > 0
    reverse_values(tmp_path / "d" / "part-1.parquet")
    served.set_epoch(1)
    run = served.run()
    with pytest.raises(ValueError, match=r"the Parquet file '.*part-1.parquet' changed since "
                                         r"the reader read its footer"):
        next(run)
    assert run.batches_yielded == 0


def test_a_file_changed_after_a_resume_was_accepted_is_refused_before_any_row(tmp_path):
    labels = labels_for(600)
    write_shards(tmp_path / "d", labels, group_rows=50)
    served = resumable(tmp_path, labels)
    run = served.run()
    for _ in range(3):
        next(run)
    state = served.state_dict()
    again = resumable(tmp_path, labels)
    again.load_state_dict(copy.deepcopy(state))  # the data as saved: accepted
    reverse_values(tmp_path / "d" / "part-1.parquet")  # ...and changed before the run starts
    resumed = again.run()
    with pytest.raises(ValueError, match=r"the Parquet file '.*part-1.parquet' changed since "
                                         r"the reader read its footer"):
        next(resumed)
    assert again.stats.loads == 0 and resumed.batches_yielded == 3


def resumable(tmp_path, labels):
    reader = ParquetShards(tmp_path / "d", ["row"])
    return ShardedBatches(reader, lambda e: plan_batches(labels, Targets("balanced", 16), seed=4,
                                                         epoch=e), cache_shards=2)


@pytest.mark.parametrize("change, match", [
    ("regroup", r"part-1.parquet': row groups of 6 x 50 rows -> row groups of 5 x 60 rows"),
    ("values", r"part-1.parquet': same row counts, other metadata"),
    ("remove", r"rows 600 -> 300|file\(s\) removed: \['.*part-1.parquet'\]"),
])
def test_a_resume_refuses_data_changed_since_the_state_was_saved(tmp_path, change, match):
    labels = labels_for(600)
    write_shards(tmp_path / "d", labels, group_rows=50)
    served = resumable(tmp_path, labels)
    run = served.run()
    head = [rows.tolist() for rows, _ in (next(run) for _ in range(3))]
    state = served.state_dict()
    # Unchanged data: the resume serves the rest of the epoch.
    again = resumable(tmp_path, labels)
    again.load_state_dict(copy.deepcopy(state))
    full = [b.tolist() for b in plan_batches(labels, Targets("balanced", 16), seed=4).batches]
    assert head + [rows.tolist() for rows, _ in again.run()] == full
    part = tmp_path / "d" / "part-1.parquet"
    table = pq.read_table(part)
    if change == "regroup":
        pq.write_table(table, part, row_group_size=60)
    elif change == "values":
        pq.write_table(table.set_column(0, "row", pa.array(table.column("row").to_numpy()[::-1])),
                       part, row_group_size=50)
    else:
        part.unlink()
    changed = ParquetShards(tmp_path / "d", ["row"])
    fresh = ShardedBatches(changed, lambda e: plan_batches(labels[:changed.shard_sizes.sum()],
                                                           Targets("balanced", 16), seed=4))
    with pytest.raises(ValueError, match=r"state_dict\['data'\] does not match the data as it "
                                         r"is now: .*" + match):
        fresh.load_state_dict(state)


def forged_states():
    reader = ArrayShards([8, 8])
    served = ShardedBatches(reader, lambda e: plan_batches(np.arange(16) % 2, 2, seed=1, epoch=e))
    run = served.run()
    next(run)
    return served, served.state_dict()


@pytest.mark.parametrize("key, value, error, match", [
    ("format", "pystratum.shards/0", ValueError, r"state_dict\['format'\] must be"),
    ("epoch", -1, ValueError, r"state_dict\['epoch'\] must be"),
    ("epoch", "1", TypeError, r"state_dict\['epoch'\] must be an integer"),
    ("batches_yielded", -2, ValueError, r"state_dict\['batches_yielded'\] must be"),
    ("batches_yielded", 1.0, TypeError, r"state_dict\['batches_yielded'\] must be an integer"),
    ("num_workers", 0, ValueError, r"state_dict\['num_workers'\] must be"),
    ("num_replicas", 2, ValueError, r"state_dict\['num_replicas'\] must be 1"),
    ("drop_last", True, ValueError, r"state_dict\['drop_last'\] must be False"),
    ("data", {"rows": 17}, ValueError, r"state_dict\['data'\] does not match .*rows 17 -> 16"),
])
def test_forged_states_are_refused_naming_the_key(key, value, error, match):
    served, state = forged_states()
    state[key] = value
    with pytest.raises(error, match=match):
        served.load_state_dict(state)


def test_a_state_past_the_run_or_for_other_workers_is_refused_at_the_next_run():
    served, state = forged_states()
    state["batches_yielded"] = 99
    served.load_state_dict(state)
    with pytest.raises(ValueError, match=r"state_dict\['batches_yielded'\] must be at most this "
                                         r"run's 4 batches, got 99"):
        next(served.run())
    served, state = forged_states()
    served.load_state_dict(state)
    with pytest.raises(ValueError, match=r"num_workers must be the one the resume state was "
                                         r"saved with, got num_workers=2"):
        served.run(num_workers=2, worker=0)
    with pytest.raises(ValueError, match="state_dict lacks"):
        served.load_state_dict({"format": "pystratum.shards/1"})


@settings(max_examples=40)
@given(sizes=st.lists(st.integers(0, 30), min_size=1, max_size=10).filter(lambda s: sum(s) >= 8),
       replicas=st.integers(1, 3), workers=st.integers(1, 3), drop_last=st.booleans(),
       data=st.data())
def test_runs_and_resumes_serve_every_batch_once_whatever_the_stop(sizes, replicas, workers,
                                                                   drop_last, data):
    labels = np.arange(sum(sizes)) % 2
    plans = lambda epoch: plan_batches(labels, 2, seed=epoch, epoch=epoch,
                                       allow_single_batch=True)
    plan = [b.tolist() for b in plans(0)]
    served = []
    for rank in range(replicas):
        for worker in range(workers):
            reader = ArrayShards(sizes)
            first = ShardedBatches(reader, plans, num_replicas=replicas, rank=rank,
                                   drop_last=drop_last, cache_shards=2)
            run = first.run(workers, worker)
            stop = data.draw(st.integers(0, len(run)))
            head = [rows.tolist() for rows, _ in (next(run) for _ in range(stop))]
            resumed = ShardedBatches(reader, plans, num_replicas=replicas, rank=rank,
                                     drop_last=drop_last, cache_shards=2)
            resumed.load_state_dict(first.state_dict())
            tail = []
            for rows, values in resumed.run(workers, worker):
                assert values.tolist() == rows.tolist()
                tail.append(rows.tolist())
            served.append(head + tail)
    per_rank = [sum(len(served[r * workers + w]) for w in range(workers))
                for r in range(replicas)]
    assert len(set(per_rank)) == 1  # every rank the same number of batches
    flat = [batch for run in served for batch in run]
    if drop_last:
        assert flat == plan[:len(flat)] and len(flat) == len(plan) // replicas * replicas
    else:
        assert flat[:len(plan)] == plan  # contiguous runs, in plan order; then padding
        assert flat[len(plan):] == plan[:len(flat) - len(plan)]


@settings(max_examples=60)
@given(sizes=st.lists(st.integers(0, 6), min_size=1, max_size=8).filter(lambda s: sum(s) > 0),
       data=st.data(), capacity=st.integers(1, 3))
def test_kept_rows_never_serve_a_wrong_row_as_the_recycled_set_changes(sizes, data, capacity):
    # Each epoch recycles another set of rows (some kept before, some new, some released).
    n = sum(sizes)
    epochs = data.draw(st.lists(st.lists(st.lists(st.integers(0, n - 1), min_size=1,
                                                  max_size=6), min_size=1, max_size=6),
                                min_size=1, max_size=4))
    reader = ArrayShards(sizes, values=np.arange(n) * 7 + 1)
    served = ShardedBatches(reader, lambda epoch: epochs[epoch], cache_shards=capacity)
    for epoch, batches in enumerate(epochs):
        served.set_epoch(epoch)
        for rows, values in served.run():
            assert values.tolist() == (rows * 7 + 1).tolist()
        recycled = {r for r, c in zip(*np.unique(np.concatenate(batches), return_counts=True))
                    if c > 1}
        assert served.stats.kept_rows <= len(recycled)  # never more than this epoch recycles
