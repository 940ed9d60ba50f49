"""Hostile shard options of ``pystratum plan``: --shard-column, --shard-sizes, --window, and
a Parquet file's row groups.

Every command must end with the core's batches (the same as ``plan_batches`` with
those shards) or with exit code 2 and one line naming the option, the value and
the fix; never a traceback. ``-s`` prints the inputs tried and their outcomes.
"""

from __future__ import annotations

import contextlib
import io
import json
import re
import tempfile
from collections import Counter
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pystratum import MinPerStratum, plan_batches, shard_sizes
from pystratum.cli import main

OUTCOMES = Counter()
N = 24
LABELS = np.array(["a", "b", "c"] * (N // 3))


@pytest.fixture(scope="module", autouse=True)
def report_outcomes():
    yield
    print(f"\nCLI shard inputs tried: {sum(OUTCOMES.values())}")
    for (face, outcome), count in sorted(OUTCOMES.items()):
        print(f"  {face:16s} {outcome:10s} {count}")


def plan(face, data, *options):
    """(exit code, stdout, stderr) of ``pystratum plan`` in this process, counted."""
    out, err = io.StringIO(), io.StringIO()
    argv = ["plan", str(data), "--stratum", "label", "--min", "2", "--seed", "7", "--batches",
            "--format", "json", *options]
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            code = main(argv)
        except SystemExit as done:  # argparse's usage errors
            code = done.code
    OUTCOMES[face, "batches" if code == 0 else f"exit {code}"] += 1
    return code, out.getvalue(), err.getvalue()


def assert_refused(code, err, option):
    assert code == 2, (code, err)
    assert "Traceback" not in err
    assert option in err, err


def core_batches(shards, window=1):
    return [b.tolist() for b in plan_batches(LABELS, MinPerStratum(2), seed=7, shards=shards,
                                             window=window).batches]


CELLS = st.one_of(
    st.integers(0, 50).map(str),
    st.integers(0, 50).map(lambda v: f" {v} "),
    st.sampled_from(["-1", "-0", "+3", "1.5", "2.0", "1e3", "0x1f", "nan", "inf", "True", "x",
                     "18446744073709551615", "9223372036854775807", "9223372036854775808",
                     "99999999999999999999999", "-9223372036854775809", "1_000", "٣"]),
)


def expected_id(cell):
    """The id a cell means (docs/SHARDS.md: integer ids 0 .. 2**63 - 1), or None."""
    try:
        value = int(cell.strip())
    except ValueError:
        return None
    return value if 0 <= value < 2**63 else None


@settings(max_examples=120, suppress_health_check=[HealthCheck.too_slow])
@given(cells=st.one_of(st.lists(st.integers(0, 2**63 - 1).map(str), min_size=N, max_size=N),
                      st.lists(CELLS, min_size=N, max_size=N)), window=st.integers(1, 30))
def test_shard_column_cells_give_the_cores_batches_or_name_the_option(cells, window):
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "d.csv"
        path.write_text("label,shard\n" + "".join(f"{label},{cell}\n"
                                                  for label, cell in zip(LABELS, cells)))
        code, out, err = plan("--shard-column", path, "--shard-column", "shard",
                              "--window", str(window))
    ids = [expected_id(cell) for cell in cells]
    if any(value is None for value in ids):
        assert_refused(code, err, "--shard-column 'shard'")
        return
    assert code == 0, err
    assert json.loads(out)["batches"] == core_batches(np.asarray(ids, dtype=np.int64), window)


SIZE_TEXTS = st.one_of(
    st.lists(st.integers(0, N), min_size=0, max_size=5).map(
        lambda cuts: ",".join(map(str, np.diff([0, *sorted(cuts), N])))),
    st.lists(st.integers(0, N), min_size=1, max_size=6).map(lambda v: ",".join(map(str, v))),
    st.sampled_from([f"{N}", f"0,{N},0", f"{N // 2},{N - N // 2}", f"-1,{N + 1}", "",
                     ",", f"{N},", f"{N}.0", f"{N // 2},,{N - N // 2}",
                     f"9223372036854775807,9223372036854775807,2,{N}",
                     f"4611686018427387904,4611686018427387904,4611686018427387904,"
                     f"4611686018427387904,{N}", "99999999999999999999999", f" {N} ",
                     "0x18", "a,b"]),
)


@settings(max_examples=120, suppress_health_check=[HealthCheck.too_slow])
@given(text=SIZE_TEXTS, window=st.integers(1, 8))
def test_shard_sizes_give_the_cores_batches_or_name_the_option(text, window, tmp_path_factory):
    path = csv_file(tmp_path_factory)
    code, out, err = plan("--shard-sizes", path, f"--shard-sizes={text}", "--window", str(window))
    try:
        sizes = [int(part) for part in text.split(",")]
    except ValueError:
        sizes = None
    if sizes is None or min(sizes) < 0 or sum(sizes) != N:
        assert_refused(code, err, "--shard-sizes")
        return
    assert code == 0, err
    assert json.loads(out)["batches"] == core_batches(shard_sizes(sizes), window)


_CSV = {}


def csv_file(factory):
    if "csv" not in _CSV:
        path = factory.mktemp("cli_shards_hostile") / "d.csv"
        path.write_text("label,shard\n" + "".join(f"{label},{h}\n"
                                                  for label, h in zip(LABELS, np.arange(N) // 4)))
        _CSV["csv"] = path
    return _CSV["csv"]


@pytest.mark.parametrize("window", ["0", "-1", "2.0", "True", "", "nan", "1e3",
                                   "99999999999999999999999", "1", "6", "7", "1000"])
def test_window_option(window, tmp_path):
    path = tmp_path / "d.parquet"
    pyarrow.parquet.write_table(pa.table({"label": LABELS}), path, row_group_size=4)
    code, out, err = plan("--window", path, "--window", window)
    if not re.fullmatch(r"[0-9]+", window) or int(window) < 1:
        assert code == 2 and "--window" in err, err
        return
    assert code == 0, err
    assert json.loads(out)["batches"] == core_batches(shard_sizes([4] * 6), int(window))


def test_parquet_shard_columns_of_every_type(tmp_path):
    """Whole floats are ids (as in the core); nulls, booleans, NaN and uint64 beyond 2**63 name
    the option."""
    ids = np.arange(N) // 4
    columns = {
        "int8": (pa.array(ids.astype(np.int8)), True),
        "uint64": (pa.array(ids.astype(np.uint64)), True),
        "float": (pa.array(ids.astype(np.float64)), True),
        "dictionary": (pa.array(ids).dictionary_encode(), True),
        "null": (pa.array([None] + ids[1:].tolist(), pa.int64()), False),
        "bool": (pa.array((ids % 2).astype(bool)), False),
        "nan": (pa.array([np.nan] + ids[1:].astype(float).tolist()), False),
        "half": (pa.array([0.5] + ids[1:].astype(float).tolist()), False),
        "beyond": (pa.array([2**64 - 1] + ids[1:].tolist(), pa.uint64()), False),
        "negative": (pa.array([-1] + ids[1:].tolist()), False),
        "string": (pa.array([str(v) for v in ids]), True),
    }
    path = tmp_path / "d.parquet"
    pyarrow.parquet.write_table(pa.table({"label": LABELS, **{k: v for k, (v, _) in
                                                             columns.items()}}), path)
    for name, (_, valid) in columns.items():
        code, out, err = plan("parquet column", path, "--shard-column", name)
        if not valid:
            assert code == 2 and "Traceback" not in err, (name, err)
            assert "--shard-column" in err or f"column {name!r}" in err, (name, err)
            continue
        assert code == 0, (name, err)
        assert json.loads(out)["batches"] == core_batches(ids), name


def test_shard_ids_beyond_int64_in_a_csv_name_the_option(tmp_path):
    """Regression: ids of 2**63 or more in a CSV column raised StopIteration (a traceback)."""
    for cell in ("18446744073709551615", "99999999999999999999999", "9223372036854775808"):
        path = tmp_path / "d.csv"
        path.write_text("label,shard\n" + "".join(f"{label},{cell if i == 0 else 1}\n"
                                                  for i, label in enumerate(LABELS)))
        code, out, err = plan("--shard-column", path, "--shard-column", "shard")
        assert_refused(code, err, "--shard-column 'shard'")
        assert cell in err


def test_core_refusals_name_the_option_that_gave_the_shards(tmp_path_factory):
    """Regression: a sum that does not match or a negative size was said as ``shards``, a name
    the command line does not have."""
    path = csv_file(tmp_path_factory)
    for text in (f"{N},1", f"-1,{N + 1}"):
        code, out, err = plan("--shard-sizes", path, f"--shard-sizes={text}")
        assert_refused(code, err, f"--shard-sizes {text}")
