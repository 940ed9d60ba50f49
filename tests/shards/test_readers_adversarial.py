"""The shard readers as a demanding user meets them: odd Parquet files, forged resume states,
odd worker and rank counts, readers of the wrong shape, sparse shard ids.

Every property has two outcomes only: the right rows in the batch's order (checked against
pyarrow reading the whole data and taking the rows), or a TypeError/ValueError whose message
starts with the argument's name. ``hypothesis.event`` counts the inputs and outcomes (run with
``--hypothesis-show-statistics`` to see them).
"""

from __future__ import annotations

import itertools
import operator

import fsspec
import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import assume, event, example, given, settings
from hypothesis import strategies as st

from _reader_data import ArrayShards
from pystratum import plan_batches
from pystratum.policies import MinPerStratum
from pystratum.shards import (BatchServer, ParquetShards, ShardCache, ShardedBatches,
                              check_shard_sizes, shard_load_profile)
from pystratum.shards._reader import RowOps

_DATASET_IDS = itertools.count()


def _table(n_rows: int, start: int, kinds) -> pa.Table:
    """Rows ``start .. start + n_rows - 1``: the row number and columns of ``kinds``."""
    rows = np.arange(start, start + n_rows)
    columns = {"row": pa.array(rows, pa.int64())}
    if "nested" in kinds:
        columns["nested"] = pa.array([{"x": int(r), "tags": [int(r)] * int(r % 3)} for r in rows],
                                     pa.struct([("x", pa.int64()),
                                                ("tags", pa.list_(pa.int64()))]))
    if "dictionary" in kinds:
        columns["word"] = pa.array([f"w{r % 4}" for r in rows], pa.string()).dictionary_encode()
    if "text" in kinds:
        columns["text"] = pa.array(["" if r % 5 == 0 else "\u00fc" * int(r % 3) for r in rows],
                                   pa.string())
    return pa.table(columns)


def _write_file(fs, path: str, groups, start: int, kinds) -> None:
    """One Parquet file whose row groups hold ``groups`` rows (0-row groups included)."""
    schema = _table(0, 0, kinds).schema
    with fs.open(path, "wb") as handle, pq.ParquetWriter(handle, schema) as writer:
        for n in groups:
            writer.write_table(_table(n, start, kinds), row_group_size=max(n, 1))
            start += n


parquet_layouts = st.lists(st.lists(st.integers(0, 5), min_size=0, max_size=4),
                           min_size=1, max_size=4).filter(lambda files: sum(map(sum, files)) > 0)
column_kinds = st.sets(st.sampled_from(["nested", "dictionary", "text"]))


@settings(max_examples=60)
@given(layout=parquet_layouts, kinds=column_kinds, data=st.data())
def test_parquet_rows_are_served_as_pyarrow_reads_them(layout, kinds, data):
    fs = fsspec.filesystem("memory")
    root = f"/adversarial-{next(_DATASET_IDS)}"
    start = 0
    for f, groups in enumerate(layout):
        _write_file(fs, f"{root}/part-{f}.parquet", groups, start, kinds)
        start += sum(groups)
    names = ["row", *sorted({"nested": "nested", "dictionary": "word", "text": "text"}[k]
                            for k in kinds)]
    columns = data.draw(st.one_of(st.none(), st.lists(st.sampled_from(names), min_size=1,
                                                       unique=True)), "columns")
    shard_by = data.draw(st.sampled_from(["row_group", "file"]), "shard_by")
    cache = data.draw(st.sampled_from([1, 2, 3, 10**9]), "cache_shards")
    reader = ParquetShards(f"memory://{root}/", columns, shard_by=shard_by)
    whole = pa.concat_tables([pq.read_table(fs.open(f"{root}/part-{f}.parquet"),
                                            columns=columns)
                              for f in range(len(layout))])
    assert int(reader.shard_sizes.sum()) == whole.num_rows == start
    server = BatchServer(reader, cache_shards=cache)
    event(f"empty row groups: {sum(n == 0 for g in layout for n in g) > 0}")
    event(f"empty files: {sum(sum(g) == 0 for g in layout) > 0}")
    event(f"cache_shards: {cache}")
    event(f"columns of kinds: {sorted(kinds)}")
    for _ in range(3):
        batch = data.draw(st.lists(st.integers(0, start - 1), min_size=1, max_size=9), "batch")
        served = server.serve(batch)
        assert served.to_pylist() == whole.take(batch).to_pylist()
        assert served.schema.equals(whole.schema)
    assert server.stats.peak_shards <= cache
    event("outcome: rows as pyarrow reads them")


def test_files_of_different_schemas_are_refused_at_construction(tmp_path):
    pq.write_table(pa.table({"a": [1, 2]}), tmp_path / "0.parquet")
    pq.write_table(pa.table({"a": [1.5], "b": ["x"]}), tmp_path / "1.parquet")
    with pytest.raises(ValueError, match=r"^source must hold Parquet files of one schema .*"
                                         r"'a': int64 -> double; extra \['b'\]\. Pass columns="):
        ParquetShards(str(tmp_path))
    with pytest.raises(ValueError, match=r"^source must hold Parquet files of one schema"):
        ParquetShards(str(tmp_path), columns=["a"])
    # Dictionary-encoded in one file only: the served type would change from batch to batch.
    pq.write_table(pa.table({"w": pa.array(["u", "v"]).dictionary_encode()}),
                   tmp_path / "2.parquet")
    pq.write_table(pa.table({"w": ["v"]}), tmp_path / "3.parquet")
    with pytest.raises(ValueError, match=r"'w': dictionary<values=string"):
        ParquetShards([str(tmp_path / "2.parquet"), str(tmp_path / "3.parquet")])


def test_files_sharing_the_projected_columns_are_served(tmp_path):
    pq.write_table(pa.table({"a": [0, 1], "b": [0.5, 1.5]}), tmp_path / "0.parquet")
    pq.write_table(pa.table({"a": [2], "c": ["x"]}), tmp_path / "1.parquet")
    reader = ParquetShards(str(tmp_path), columns=["a"])
    assert BatchServer(reader).serve([2, 0, 2]).column("a").to_pylist() == [2, 0, 2]


@pytest.mark.parametrize("columns, error, match", [
    (3, TypeError, r"^columns must be None, a column name or a list of them, got columns=3\."),
    ({"a": 1}, TypeError, r"^columns must be None, a column name or a list"),
    (["a", "a"], ValueError, r"^columns names \['a'\] more than once"),
    (["nested.x"], ValueError, r"^columns \['nested.x'\] not found"),
])
def test_bad_column_choices_name_the_argument(tmp_path, columns, error, match):
    pq.write_table(pa.table({"a": [1], "nested": [{"x": 1}]}), tmp_path / "0.parquet")
    with pytest.raises(error, match=match):
        ParquetShards(str(tmp_path), columns=columns)


# --- resume states, forged or corrupted -------------------------------------------------

any_value = st.one_of(
    st.none(), st.booleans(), st.integers(), st.integers(-2, 12),
    st.floats(allow_nan=True), st.text(max_size=4),
    st.sampled_from([np.int64(1), np.uint64(2**63), np.bool_(False), np.float64(1.0), [], {},
                     [1], {"rows": 12}, (1,), "pystratum.shards/1", 2**31 - 1, 2**31, 2**64]),
    st.lists(st.integers(), max_size=3),
    st.dictionaries(st.text(max_size=3), st.integers(), max_size=3),
)
_READER_SIZES = [3, 4, 5]
_BATCHES = [[0, 1], [2, 3], [4, 5, 6], [7], [8, 9, 10, 11]]


def _forgeable_state(parquet_reader=None):
    reader = parquet_reader or ArrayShards(_READER_SIZES)
    batches = ShardedBatches(reader, _BATCHES)
    run = batches.run()
    next(run)
    return reader, batches.state_dict()


@settings(max_examples=300)
@given(key=st.sampled_from(["format", "epoch", "batches_yielded", "num_workers",
                            "num_replicas", "drop_last", "data", "data.rows", "data.shards",
                            "data.shard_sizes", "data.reader", "extra", "missing"]),
       value=any_value)
@example(key="batches_yielded", value=[1])  # a per-worker count list, accepted since format 2
@example(key="batches_yielded", value=np.int64(1))  # a numpy integer count
def test_a_forged_resume_state_resumes_correctly_or_names_the_key(key, value):
    reader, state = _forgeable_state()
    state = dict(state, data=dict(state["data"]))
    if key == "missing":
        del state[value if isinstance(value, str) and value in state else "epoch"]
    elif key.startswith("data."):
        state["data"][key[5:]] = value
    else:
        state[key] = value
    resumed = ShardedBatches(reader, _BATCHES)
    try:
        resumed.load_state_dict(state)
        served = [(rows.tolist(), got.tolist()) for rows, got in resumed.run()]
    except (TypeError, ValueError) as error:
        event(f"{key}: refused ({type(error).__name__})")
        assert str(error).startswith(("state_dict", "num_workers must be the one")), str(error)
        return
    event(f"{key}: accepted")
    yielded = state["batches_yielded"]
    # any integer (numpy's too), or, since the state's format 2, one count per worker in a
    # list or tuple: here a single worker
    skip = operator.index(yielded[0] if isinstance(yielded, (list, tuple)) else yielded)
    assert served == [(b, b) for b in _BATCHES[skip:]]


@settings(max_examples=120)
@given(value=any_value, where=st.sampled_from(["files", "files[0]", "files[0][1]", "columns",
                                                "shard_by", "whole"]))
def test_a_corrupted_parquet_fingerprint_is_refused_naming_the_data(tmp_path_factory, value,
                                                                      where):
    directory = tmp_path_factory.mktemp("fingerprint")
    pq.write_table(pa.table({"a": np.arange(12)}), directory / "0.parquet", row_group_size=4)
    reader, state = _forgeable_state(ParquetShards(str(directory)))
    forged = dict(state["data"]["reader"])
    if where == "whole":
        forged = value
    elif where == "files":
        forged["files"] = value
    elif where == "files[0]":
        forged["files"] = [value]
    elif where == "files[0][1]":
        path, _, digest = forged["files"][0]
        forged["files"] = [[path, value, digest]]
    else:
        forged[where] = value
    assume(repr(forged) != repr(state["data"]["reader"]))
    state = dict(state, data=dict(state["data"], reader=forged))
    with pytest.raises(ValueError, match=r"^state_dict\['data'\] does not match the data"):
        ShardedBatches(reader, _BATCHES).load_state_dict(state)
    event(f"{where}: refused")


def test_a_resume_state_whose_data_is_not_a_dict_is_refused_naming_it():
    reader, state = _forgeable_state()
    for value in (None, 1, "x", []):
        with pytest.raises(TypeError, match=r"^state_dict\['data'\] must be the dict"):
            ShardedBatches(reader, _BATCHES).load_state_dict(dict(state, data=value))


def test_a_resume_state_keeps_the_types_of_its_settings():
    reader, state = _forgeable_state()
    with pytest.raises(ValueError, match=r"^state_dict\['num_replicas'\] must be 1"):
        ShardedBatches(reader, _BATCHES).load_state_dict(dict(state, num_replicas=True))
    with pytest.raises(ValueError, match=r"^state_dict\['drop_last'\] must be False"):
        ShardedBatches(reader, _BATCHES).load_state_dict(dict(state, drop_last=0))
    # numpy's own booleans are booleans (a state built from numpy values).
    resumed = ShardedBatches(reader, _BATCHES)
    resumed.load_state_dict(dict(state, drop_last=np.bool_(False), num_replicas=np.int64(1)))
    assert [rows.tolist() for rows, _ in resumed.run()] == _BATCHES[1:]


@settings(max_examples=200)
@given(epoch=st.one_of(st.integers(), st.floats(), st.none(), st.booleans(),
                       st.sampled_from([np.uint64(2**64 - 1), np.int64(-1), 2**31 - 1, 2**31])))
def test_set_epoch_beyond_the_int_range_names_the_argument(epoch):
    batches = ShardedBatches(ArrayShards(_READER_SIZES), _BATCHES)
    try:
        batches.set_epoch(epoch)
    except (TypeError, ValueError) as error:
        assert str(error).startswith("epoch must be")
        event("refused")
        return
    assert batches.epoch == int(epoch) and 0 <= int(epoch) <= 2**31 - 1
    event("accepted")


# --- ranks and workers of odd counts ----------------------------------------------------

@settings(max_examples=150)
@given(num_batches=st.integers(1, 9), replicas=st.integers(1, 5), workers=st.integers(1, 6),
       drop_last=st.booleans(), cache=st.sampled_from([1, 2, 10**6]))
def test_odd_rank_and_worker_counts_serve_whole_batches_in_plan_order(num_batches, replicas,
                                                                      workers, drop_last,
                                                                      cache):
    rng = np.random.default_rng(num_batches * 100 + replicas * 10 + workers)
    values = rng.permutation(12) * 7
    plan = [rng.integers(0, 12, size=rng.integers(1, 6)).tolist() for _ in range(num_batches)]
    served = []
    for rank in range(replicas):
        batches = ShardedBatches(ArrayShards(_READER_SIZES, values), plan, cache_shards=cache,
                                 num_replicas=replicas, rank=rank, drop_last=drop_last)
        lengths = []
        for worker in range(workers):
            run = [(rows.tolist(), got.tolist()) for rows, got in batches.run(workers, worker)]
            lengths.append(len(run))
            served += run
        event(f"idle workers: {min(lengths) == 0}")
    per_rank = num_batches // replicas if drop_last else -(-num_batches // replicas)
    expected = [plan[p % num_batches] for p in range(replicas * per_rank)]
    assert [rows for rows, _ in served] == expected
    assert all(got == values[rows].tolist() for rows, got in served)
    event(f"more workers than batches: {workers > num_batches}")


@pytest.mark.parametrize("num_workers, worker, error, match", [
    (0, 0, ValueError, r"^num_workers must be a positive integer, got num_workers=0"),
    (-1, 0, ValueError, r"^num_workers must be a positive integer"),
    (1.5, 0, TypeError, r"^num_workers must be an integer"),
    (2, 5, ValueError, r"^worker must be an integer 0 <= worker <= 1, got worker=5"),
    (2, -1, ValueError, r"^worker must be an integer >= 0"),
    (True, 0, TypeError, r"^num_workers must be an integer"),
])
def test_a_run_of_an_impossible_worker_names_the_argument(num_workers, worker, error, match):
    with pytest.raises(error, match=match):
        ShardedBatches(ArrayShards(_READER_SIZES), _BATCHES).run(num_workers, worker)


# --- readers that return the wrong thing -------------------------------------------------

class OddReader:
    """Shard 1 decodes to ``bad``; the others to numpy rows."""

    def __init__(self, bad, sizes=(2, 2, 2)):
        self.shard_sizes = list(sizes)
        self.bad = bad

    def load(self, shard):
        if shard == 1:
            return self.bad
        return np.arange(2) + 2 * shard


odd_decodings = st.one_of(
    st.none(), st.integers(), st.text(max_size=3), st.dictionaries(st.text(max_size=2),
                                                                  st.integers(), max_size=2),
    st.sampled_from([np.array(5), np.zeros(3), np.zeros((1, 2)), [1], [1, 2, 3],
                     pa.table({"a": [1]}), object(), b"ab", {1, 2}]),
)


@settings(max_examples=100)
@given(bad=odd_decodings, cache=st.sampled_from([1, 2, 10**6]))
def test_a_reader_decoding_a_wrong_shape_or_type_is_refused(bad, cache):
    server = BatchServer(OddReader(bad), cache_shards=cache)
    assert server.serve([0, 5]).tolist() == [0, 5]
    with pytest.raises((TypeError, ValueError), match=r"^reader.load"):
        server.serve([3])
    event(f"refused: {type(bad).__name__}")


@settings(max_examples=100)
@given(sizes=st.one_of(
    st.lists(st.integers(-3, 2**63), min_size=0, max_size=4),
    st.lists(st.floats(), min_size=1, max_size=3),
    st.sampled_from([None, 3, "3", [[1, 2]], [True, False], np.array([2**64 - 1], np.uint64),
                     [2**62, 2**62], [2**63 - 1, 1]])))
def test_odd_shard_sizes_are_refused_or_served(sizes):
    class Reader:
        shard_sizes = sizes

        def load(self, shard):
            return np.zeros(int(check_shard_sizes(sizes)[shard]), dtype=np.int8)

    try:
        server = BatchServer(Reader())
    except (TypeError, ValueError) as error:
        assert str(error).startswith("reader.shard_sizes must"), str(error)
        event("refused")
        return
    event("accepted")
    assert server.n_rows == sum(int(n) for n in check_shard_sizes(sizes)) > 0


def test_shard_sizes_summing_past_the_int64_range_are_refused():
    with pytest.raises(ValueError, match=r"^shard_sizes must sum to fewer than 2\*\*63 rows"):
        check_shard_sizes([2**62, 2**62])
    with pytest.raises(ValueError, match=r"^shard_sizes must hold fewer than 2\*\*63 rows"):
        check_shard_sizes(np.array([2**64 - 1], dtype=np.uint64))
    with pytest.raises(TypeError, match=r"^shard_sizes must hold integers"):
        check_shard_sizes([1e30, 2.0])  # whole, but past int64: it would wrap


@pytest.mark.parametrize("capacity", [1, 2, 10**12])
def test_the_cache_of_any_capacity_serves_recycled_rows_over_epochs(capacity):
    values = np.arange(12) * 3
    plan = [[0, 0, 11], [11, 0, 5], [5, 5, 5], [11], [1, 2, 3]]
    batches = ShardedBatches(ArrayShards(_READER_SIZES, values), plan, cache_shards=capacity)
    for epoch in range(3):
        batches.set_epoch(epoch)
        assert [got.tolist() for _, got in batches.run()] == [values[b].tolist() for b in plan]
    assert batches.stats.kept_rows == 3  # rows 0, 5 and 11
    assert batches.stats.peak_shards <= capacity
    with pytest.raises(ValueError, match=r"^cache_shards must be a positive integer"):
        ShardCache(ArrayShards(_READER_SIZES), np.array(_READER_SIZES), RowOps(None), 0)


# --- shard_load_profile ---------------------------------------------------------------

def _replayed_loads(batches, shard_of_row, capacity):
    """Loads of an LRU cache of ``capacity`` serving ``batches`` with kept recycled rows."""
    seen, cache, loads = set(), [], 0
    for batch in batches:
        shards = sorted({int(shard_of_row[r]) for r in batch if r not in seen})
        seen.update(batch)
        for shard in shards:
            if shard in cache:
                cache.remove(shard)
            else:
                loads += 1
                if len(cache) == capacity:
                    cache.pop(0)
            cache.append(shard)
    return loads


@settings(max_examples=150)
@given(batches=st.lists(st.lists(st.integers(0, 11), min_size=1, max_size=6), min_size=1,
                        max_size=8),
       ids=st.lists(st.integers(0, 2**63 - 1), min_size=12, max_size=12),
       dtype=st.sampled_from([np.int64, np.uint64]))
def test_load_profile_of_sparse_huge_shard_ids_equals_a_replayed_cache(batches, ids, dtype):
    shard_of_row = np.asarray(ids, dtype=np.uint64).astype(dtype)
    profile = shard_load_profile(batches, shard_of_row)
    for capacity in (1, 2, 3, 12, 10**9):
        assert profile.loads(capacity) == _replayed_loads(batches, ids, capacity)
    assert profile.num_batches == len(batches)
    event(f"distinct shards: {len(set(ids))}")


def test_load_profile_takes_a_list_of_batches_as_the_plan_it_equals():
    labels = np.repeat([0, 1, 2], 8)
    plan = plan_batches(labels, MinPerStratum(2), seed=1)
    shard_of_row = np.repeat(np.arange(6), 4)
    from_list = shard_load_profile(plan.batches, shard_of_row)
    from_plan = shard_load_profile(plan, shard_of_row)
    assert [from_list.loads(c) for c in (1, 2, 6)] == [from_plan.loads(c) for c in (1, 2, 6)]


@pytest.mark.parametrize("plan, shard_of_row, kept_rows, error, match", [
    (5, [0], True, TypeError, r"^plan must be a BatchPlan or a list of batches"),
    ([[0.5]], [0], True, TypeError, r"^plan must be a BatchPlan or a list of batches"),
    ([[-1]], [0], True, ValueError, r"^plan must hold row positions >= 0"),
    ([[0]], np.array([2**64 - 1], np.uint64), True, ValueError,
     r"^shard_of_row must hold shard indices below 2\*\*63"),
    ([[0]], [0], 1, TypeError, r"^kept_rows must be True or False"),
])
def test_load_profile_names_the_bad_argument(plan, shard_of_row, kept_rows, error, match):
    with pytest.raises(error, match=match):
        shard_load_profile(plan, np.asarray(shard_of_row), kept_rows=kept_rows)


def test_load_profile_of_huge_shard_ids_needs_no_memory_for_the_gaps():
    shard_of_row = np.repeat(np.arange(6), 4) * 10**17
    profile = shard_load_profile([[0, 4, 8], [12, 16, 20], [1, 23]], shard_of_row)
    assert profile.first_reads == 6 and profile.loads(1) == 8



@pytest.mark.parametrize("shard, error, match", [
    (-1, ValueError, r"^shard must be an integer >= 0, got shard=-1\. Pass a shard index in 0\.\.2"),
    (3, ValueError, r"^shard must be an integer 0 <= shard <= 2, got shard=3"),
    (1.0, TypeError, r"^shard must be an integer, got shard=1\.0"),
    (True, TypeError, r"^shard must be an integer"),
])
def test_a_shard_index_outside_the_reader_is_refused_naming_it(tmp_path, shard, error, match):
    # load(-1) used to read the last shard: a silent wrong answer to a direct caller.
    pq.write_table(pa.table({"x": np.arange(9)}), tmp_path / "a.parquet", row_group_size=3)
    reader = ParquetShards(str(tmp_path / "a.parquet"))
    assert reader.load(np.int64(2)).column("x").to_pylist() == [6, 7, 8]
    with pytest.raises(error, match=match):
        reader.load(shard)
