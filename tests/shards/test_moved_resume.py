"""A resume state names the Parquet files under the dataset's root, not by absolute paths: moved
with its data it still resumes; changed data is still refused."""

from __future__ import annotations

import json
import shutil

import numpy as np
import pyarrow.parquet as pq
import pytest

from _reader_workers import write_shards
from pystratum import plan_batches
from pystratum.policies import MinPerStratum
from pystratum.shards import STATE_FORMAT, ParquetShards, ShardedBatches


def labels_for(n_rows):
    return (np.random.default_rng(3).random(n_rows) < 0.2).astype(np.int64)


def served(directory, labels):
    return ShardedBatches(ParquetShards(directory, ["row"]),
                          lambda epoch: plan_batches(labels, MinPerStratum(3), seed=4,
                                                     epoch=epoch))


@pytest.mark.parametrize("layout", ["flat", "nested"])
def test_a_state_moved_with_its_data_resumes_and_holds_no_absolute_path(tmp_path, layout):
    labels = labels_for(600)
    old = tmp_path / "old" / "dataset"
    write_shards(old, labels, group_rows=50)
    if layout == "nested":  # files in sub-folders: named by their path under the root
        (old / "2024").mkdir()
        (old / "part-1.parquet").rename(old / "2024" / "part-1.parquet")
    first = served(old, labels)
    run = first.run()
    head = [rows.tolist() for rows, _ in (next(run) for _ in range(4))]
    state = json.loads(json.dumps(first.state_dict()))  # as written to disk and read back
    assert str(tmp_path) not in json.dumps(state)
    new = tmp_path / "elsewhere" / "copy"
    shutil.copytree(old, new)
    shutil.rmtree(tmp_path / "old")
    again = served(new, labels)
    again.load_state_dict(state)
    full = [b.tolist() for b in plan_batches(labels, MinPerStratum(3), seed=4).batches]
    assert head + [rows.tolist() for rows, _ in again.run()] == full


def test_a_moved_dataset_that_changed_is_still_refused_naming_the_file(tmp_path):
    labels = labels_for(600)
    write_shards(tmp_path / "a", labels, group_rows=50)
    first = served(tmp_path / "a", labels)
    next(first.run())
    state = first.state_dict()
    shutil.copytree(tmp_path / "a", tmp_path / "b")
    part = tmp_path / "b" / "part-1.parquet"
    pq.write_table(pq.read_table(part), part, row_group_size=60)
    with pytest.raises(ValueError, match=r"state_dict\['data'\] does not match the data as it is "
                                         r"now: 'part-1.parquet': row groups of 6 x 50 rows -> "
                                         r"row groups of 5 x 60 rows"):
        served(tmp_path / "b", labels).load_state_dict(state)


def test_a_state_of_the_earlier_format_is_refused_saying_why(tmp_path):
    labels = labels_for(200)
    write_shards(tmp_path / "a", labels, group_rows=50)
    first = served(tmp_path / "a", labels)
    state = dict(first.state_dict(), format="pystratum.shards/1")
    assert STATE_FORMAT != "pystratum.shards/1"
    with pytest.raises(ValueError, match=r"^state_dict\['format'\] must be 'pystratum.shards/2', "
                                         r"got 'pystratum.shards/1' \(saved by an earlier "
                                         r"pystratum: it recorded the Parquet files by absolute "
                                         r"paths\); start the epoch again"):
        served(tmp_path / "a", labels).load_state_dict(state)
