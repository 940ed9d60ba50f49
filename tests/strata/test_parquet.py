"""Strata read from Parquet datasets chunk by chunk (pyarrow.dataset)."""

import fsspec
import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from pystratum import lazy_plan, parquet_strata
from pystratum.strata._encode import encode_strata


def _write(directory, parts, row_group_size=7):
    """One Parquet file per part (several row groups each); names sort in part order."""
    directory.mkdir(parents=True, exist_ok=True)
    for i, part in enumerate(parts):
        pq.write_table(pa.table(part), directory / f"part-{i:03d}.parquet",
                       row_group_size=row_group_size)
    return directory


def _members_equal_in_memory(members, labels_column):
    encoded = encode_strata(labels_column)
    assert members.labels == encoded.labels
    assert members.sizes.tolist() == encoded.sizes.tolist()
    for s in range(encoded.n_strata):
        expected = np.flatnonzero(encoded.codes == s)
        got = members.member(np.full(expected.shape[0], s), np.arange(expected.shape[0]))
        assert np.array_equal(got, expected)
        assert members.first_rows[s] == expected[0]


def test_multi_file_dataset_read_in_small_record_batches(tmp_path):
    rng = np.random.default_rng(0)
    labels = rng.choice(["neg", "pos", "maybe"], p=[0.8, 0.15, 0.05], size=230)
    parts = [{"y": labels[a:b], "feature": rng.random(b - a)}
             for a, b in [(0, 50), (50, 51), (51, 230)]]
    path = _write(tmp_path / "data", parts)
    members = parquet_strata(path, "y", batch_rows=16)
    assert not members.grouped
    _members_equal_in_memory(members, labels)
    # The lazy plan over it keeps its guarantees.
    plan = lazy_plan(members, 3, seed=4)
    order = np.concatenate(list(plan))
    assert np.array_equal(np.sort(order), np.arange(230))


def test_grouped_rows_give_ranges(tmp_path):
    parts = [{"y": np.repeat([1], 40)}, {"y": np.repeat([0], 25)}, {"y": np.repeat([0], 5)}]
    members = parquet_strata(_write(tmp_path / "g", parts), "y", batch_rows=8)
    assert members.grouped and members.rows is None
    assert members.labels == (0, 1) and members.starts.tolist() == [40, 0]
    _members_equal_in_memory(members, np.repeat([1, 0], [40, 30]))


def test_several_columns_make_tuple_strata(tmp_path):
    rng = np.random.default_rng(1)
    a = rng.integers(0, 3, 120)
    b = rng.choice([True, False], 120)
    path = _write(tmp_path / "m", [{"a": a[:60], "b": b[:60], "x": a[:60] * 2.0},
                                   {"a": a[60:], "b": b[60:], "x": a[60:] * 2.0}])
    members = parquet_strata(path, ["a", "b"], batch_rows=9)
    _members_equal_in_memory(members, {"a": a, "b": b})


def test_missing_values_name_the_column_and_row(tmp_path):
    path = _write(tmp_path / "n", [{"y": [1, 2, 3]}, {"y": pa.array([4, None, 6])}])
    with pytest.raises(ValueError, match=r"strata\['y'\] has a missing value at row 4 "
                                         r"\(0-based\): null"):
        parquet_strata(path, "y", batch_rows=2)
    path = _write(tmp_path / "f", [{"z": [0.0, 1.0, 0.0, float("nan")]}])
    with pytest.raises(ValueError, match=r"strata\['z'\] has a missing value at row 3"):
        parquet_strata(path, "z")


def test_fsspec_urls_and_file_lists(tmp_path):
    fs = fsspec.filesystem("memory")
    labels = np.array([3, 1, 3, 3, 2, 1, 3])
    for i, (a, b) in enumerate([(0, 3), (3, 7)]):
        with fs.open(f"/h12test/part-{i}.parquet", "wb") as handle:
            pq.write_table(pa.table({"y": labels[a:b]}), handle)
    try:
        members = parquet_strata("memory://h12test", "y")
        _members_equal_in_memory(members, labels)
        # A list keeps the caller's order of files.
        swapped = parquet_strata(["memory://h12test/part-1.parquet",
                                  "memory://h12test/part-0.parquet"], "y")
        _members_equal_in_memory(swapped, np.concatenate([labels[3:], labels[:3]]))
    finally:
        fs.rm("/h12test", recursive=True)


def test_member_array_written_to_a_directory_is_memory_mapped(tmp_path):
    labels = np.tile([0, 1, 1], 30)
    members = parquet_strata(_write(tmp_path / "d", [{"y": labels}]), "y",
                             members_directory=tmp_path / "members")
    assert isinstance(members.rows, np.memmap)
    _members_equal_in_memory(members, labels)


def test_bad_arguments(tmp_path):
    path = _write(tmp_path / "b", [{"y": [0, 1]}])
    with pytest.raises(ValueError, match=r"columns \['label'\] not found .* \['y'\]"):
        parquet_strata(path, "label")
    with pytest.raises(TypeError, match="columns must be a column name"):
        parquet_strata(path, 3)
    with pytest.raises(TypeError, match="source must be a path"):
        parquet_strata(42, "y")


def test_a_repeated_column_is_refused(tmp_path):
    path = _write(tmp_path / "r", [{"y": [0, 1, 0, 1]}])
    with pytest.raises(ValueError, match=r"columns lists \['y'\] more than once"):
        parquet_strata(path, ["y", "y"])
