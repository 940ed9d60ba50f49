"""Readers whose load(shard) returns rows of other kinds from shard to shard: every batch is
served right, or refused with an error that names ``reader.load(shard)``, never numpy's own."""

from __future__ import annotations

from collections import Counter

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from _outcomes import counted_call
from pystratum.shards import BatchServer

# Each form holds the rows' positions, so that a served batch can be checked row by row.
FORMS = {
    "int64": lambda rows: np.asarray(rows, dtype=np.int64),
    "int32": lambda rows: np.asarray(rows, dtype=np.int32),
    "float64": lambda rows: np.asarray(rows, dtype=np.float64),
    "2-D": lambda rows: np.stack([rows, rows], axis=1).astype(np.int64),
    "list": lambda rows: [int(r) for r in rows],
    "tuple": lambda rows: tuple(int(r) for r in rows),
    "samples": lambda rows: [{"row": int(r), "x": 1} for r in rows],
    "samples, other keys": lambda rows: [{"row": int(r), "y": 1} for r in rows],
    "samples, keys change": lambda rows: [{"row": int(r), **({"x": 1} if i else {"y": 1})}
                                          for i, r in enumerate(rows)],
    "samples, key '1'": lambda rows: [{"row": int(r), "1": 1} for r in rows],
    "samples, key 1": lambda rows: [{"row": int(r), 1: 1} for r in rows],
    "table": lambda rows: pa.table({"row": pa.array(rows, pa.int64())}),
    "table, float": lambda rows: pa.table({"row": pa.array(rows, pa.float64())}),
    "table, extra column": lambda rows: pa.table({"row": pa.array(rows, pa.int64()),
                                                  "z": pa.array(rows, pa.int64())}),
    "dict of columns": lambda rows: {"row": np.asarray(rows)},
    "0-d array": lambda rows: np.asarray(len(rows)),
    "None": lambda rows: None,
}


class FormShards:
    """Shards of consecutive row positions, shard ``h`` returned in ``forms[h]``."""

    def __init__(self, sizes, forms):
        self.shard_sizes = np.asarray(sizes, dtype=np.int64)
        self.starts = np.cumsum(self.shard_sizes) - self.shard_sizes
        self.forms = forms

    def load(self, shard):
        start = int(self.starts[shard])
        return FORMS[self.forms[shard]](np.arange(start, start + int(self.shard_sizes[shard])))


def positions(served) -> list:
    """The row positions a served batch holds, whatever its form."""
    if isinstance(served, pa.Table):
        return [int(v) for v in served.column("row").to_pylist()]
    if isinstance(served, np.ndarray):
        return [int(v) for v in (served[:, 0] if served.ndim == 2 else served)]
    return [int(s["row"]) if isinstance(s, dict) else int(s) for s in served]


@settings(max_examples=150)
@given(forms=st.lists(st.sampled_from(sorted(FORMS)), min_size=1, max_size=4), data=st.data())
def test_hostile_loads_are_served_right_or_refused_naming_the_reader(forms, data):
    sizes = data.draw(st.lists(st.integers(1, 4), min_size=len(forms), max_size=len(forms)))
    server = BatchServer(FormShards(sizes, forms), cache_shards=data.draw(st.integers(1, 3)))
    outcomes = Counter()
    for _ in range(3):
        batch = data.draw(st.lists(st.integers(0, sum(sizes) - 1), min_size=1, max_size=8))
        status, result = counted_call(outcomes, "serve", server.serve, batch)
        if status == "ok":
            assert positions(result) == batch
        else:
            assert str(result).startswith("reader"), str(result)


@pytest.mark.parametrize("first,second,error,match", [
    ("int64", "2-D", ValueError, r"^reader.load\(1\) must return rows of one shape for every "
                                 r"shard, got rows of shape \(2,\) \(2-D array\) but "
                                 r"reader.load\(0\) returned rows of shape \(\) \(1-D array\)"),
    ("list", "int64", TypeError, r"^reader.load\(1\) must return the same type of rows as every "
                                 r"other shard, got a numpy array but reader.load\(0\) returned "
                                 r"a list"),
    ("int64", "float64", TypeError, r"^reader.load\(1\) must return rows of one dtype for every "
                                    r"shard, got float64 but reader.load\(0\) returned int64.*"
                                    r"astype\(np.int64\)"),
    ("int64", "int32", TypeError, r"^reader.load\(1\) must return rows of one dtype"),
    ("samples", "samples, other keys", ValueError,
     r"^reader.load\(1\) must return samples of one kind for every shard, got samples with keys "
     r"\['row', 'y'\] but reader.load\(0\) returned samples with keys \['row', 'x'\]"),
    # Keys 1 and "1" are different keys to a collate function: not the same kind of sample.
    ("samples, key '1'", "samples, key 1", ValueError,
     r"^reader.load\(1\) must return samples of one kind for every shard, got samples with keys "
     r"\['row', 1\] but reader.load\(0\) returned samples with keys \['1', 'row'\]"),
    ("table", "table, float", ValueError, r"^reader.load\(1\) must return tables of one schema "
                                          r"for every shard.*'row': int64 -> double"),
    ("table", "table, extra column", ValueError, r"extra \['z'\]"),
    ("int64", "dict of columns", TypeError, r"^reader.load\(1\) must return a pyarrow Table.*got "
                                            r"a dict .*pyarrow.table\(columns\)"),
    ("int64", "0-d array", ValueError, r"^reader.load\(1\) must return rows along axis 0"),
    ("samples", "samples, keys change", ValueError, r"^reader.load\(1\) must return samples of "
                                                    r"one kind, got row 1"),
])
def test_a_shard_unlike_the_first_is_refused_naming_both_and_the_fix(first, second, error, match):
    server = BatchServer(FormShards([3, 3], [first, second]), cache_shards=2)
    assert positions(server.serve([0, 2])) == [0, 2]
    with pytest.raises(error, match=match):
        server.serve([1, 4])
    with pytest.raises(error, match=match):  # nothing of the shard was kept: refused again
        server.serve([5])




class ColumnlessShards:
    """Tables of rows without a column (``table.select([])``): rows that are only a count."""

    shard_sizes = np.array([3, 4])

    def load(self, shard):
        return pa.table({"a": np.zeros(int(self.shard_sizes[shard]))}).select([])


def test_tables_without_columns_are_refused_not_served_empty():
    # pyarrow's take and concat_tables return no row of a table without columns: a batch of
    # them was served with 0 rows.
    with pytest.raises(ValueError, match=r"^reader.load\(0\) must return a table with at least "
                                         r"one column, got 3 rows and no column"):
        BatchServer(ColumnlessShards()).serve([0, 4, 6, 6])
