"""``pystratum plan`` with shards: --shard-column, --shard-sizes, --window (Parquet row groups)."""

from __future__ import annotations

import csv
import json

import numpy as np
import pyarrow as pa
import pyarrow.parquet
import pytest

from pystratum import FixedSize, MinPerStratum, plan_batches, shard_sizes
from tests.cli.test_cli import run


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    folder = tmp_path_factory.mktemp("cli_shards")
    rng = np.random.default_rng(2)
    label = np.where(rng.random(400) < 0.1, "pos", "neg")
    label[:4] = "pos"
    shard = np.repeat(np.arange(8) * 3, 50)
    with open(folder / "d.csv", "w", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(["label", "shard"])
        writer.writerows(zip(label, shard))
    pyarrow.parquet.write_table(pa.table({"label": label, "shard": shard}), folder / "d.parquet",
                                row_group_size=50)
    return folder, label, shard


def batches_of(done):
    return json.loads(done.stdout)["batches"]


def test_shard_column_gives_the_cores_batches(files):
    folder, label, shard = files
    done = run("plan", folder / "d.csv", "--stratum", "label", "--min", "2", "--seed", "3",
               "--shard-column", "shard", "--window", "2", "--batches", "--format", "json",
               check_code=0)
    expected = plan_batches(label, MinPerStratum(2), seed=3, shards=shard, window=2).batches
    assert batches_of(done) == [b.tolist() for b in expected]


def test_parquet_row_groups_are_the_shards_given_a_window(files):
    folder, label, shard = files
    done = run("plan", folder / "d.parquet", "--stratum", "label", "--batch-size", "40",
               "--seed", "3", "--window", "3", "--batches", "--format", "json", check_code=0)
    expected = plan_batches(label, FixedSize(40), seed=3, shards=shard_sizes([50] * 8),
                            window=3).batches
    assert batches_of(done) == [b.tolist() for b in expected]
    # Without shard options the plan has no shards (unchanged).
    plain = run("plan", folder / "d.parquet", "--stratum", "label", "--batch-size", "40",
                "--seed", "3", "--batches", "--format", "json", check_code=0)
    assert batches_of(plain) == [b.tolist() for b in
                                 plan_batches(label, FixedSize(40), seed=3).batches]


def test_shard_sizes_option(files):
    folder, label, _ = files
    done = run("plan", folder / "d.csv", "--stratum", "label", "--min", "2", "--seed", "1",
               "--shard-sizes", "100,0,300", "--batches", "--format", "json", check_code=0)
    expected = plan_batches(label, MinPerStratum(2), seed=1, shards=shard_sizes([100, 0, 300]))
    assert batches_of(done) == [b.tolist() for b in expected.batches]


@pytest.mark.parametrize("extra, message", [
    (["--window", "2"], "--window needs shards"),
    (["--shard-sizes", "1,x"], "--shard-sizes must be whole numbers"),
    (["--shard-sizes", "100,100"], "shards must cover every row"),
    (["--shard-column", "label"], "--shard-column 'label' must hold integer shard ids"),
    (["--shard-column", "nope"], "nope"),
    (["--shard-column", "shard", "--shard-sizes", "400"], "give one of them"),
])
def test_bad_shard_options_are_one_line_errors(files, extra, message):
    folder, _, _ = files
    done = run("plan", folder / "d.csv", "--stratum", "label", "--min", "2", "--seed", "1",
               *extra, check_code=2)
    assert message in done.stderr
    assert done.stderr.count("\n") == 1


def test_window_zero_is_refused_by_the_parser(files):
    folder, _, _ = files
    done = run("plan", folder / "d.csv", "--stratum", "label", "--min", "2", "--shard-column",
               "shard", "--window", "0", check_code=2)
    assert "argument --window: expected a positive whole number, got '0'" in done.stderr
