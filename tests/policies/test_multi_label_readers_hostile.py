"""Hostile property suite for the label-matrix readers behind MultiLabel.

Every container a label matrix may come in (numpy of several dtypes, masked
arrays, object arrays, lists of rows, DataFrames with numpy, nullable and
object columns, dicts of columns, tensors dense and sparse, scipy.sparse,
label sets) with hostile cells (missing kinds, out-of-range numbers, text,
extreme values) and hostile shapes goes to ``pystratum.label_matrix`` and to
``plan_batches(..., MultiLabel(...))``. Both must accept it alike (the plan
then serves every row once) or refuse it alike with the same error; no
OverflowError, IndexError, MemoryError, KeyError, RecursionError or
AttributeError may escape. The outcomes are counted.
"""

from __future__ import annotations

import collections

import numpy as np
import pandas as pd
import pytest
import scipy.sparse as sp
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

import pystratum
from pystratum import plan_batches
from pystratum.policies import MultiLabel

ESCAPES = (OverflowError, IndexError, MemoryError, KeyError, RecursionError, AttributeError)
TALLY = collections.Counter()
HOSTILE_CELLS = [float("nan"), None, pd.NA, 2, -1, 0.5, float("inf"), -float("inf"), 1e300,
                 2**64, -(2**63), "1", "", b"0", True, False, 1.0, 0.0, 1j, (1,)]
CONTAINERS = ["int64", "uint8", "float32", "bool", "object", "masked", "list", "frame_int",
              "frame_Int64", "frame_boolean", "frame_Float64", "frame_object", "dict",
              "tensor", "tensor_sparse", "scipy_csr", "scipy_coo", "sets"]


def _build(cells, container, mask):
    rows = len(cells)
    width = len(cells[0]) if rows else 0
    names = [f"l{k}" for k in range(width)]
    plain = np.empty((rows, width), dtype=object)
    for r in range(rows):
        for c in range(width):
            plain[r, c] = cells[r][c]
    if container == "object":
        return plain
    if container == "list":
        return [list(row) for row in cells]
    if container in ("int64", "uint8", "float32", "bool"):
        return np.array(cells, dtype=container)
    if container == "masked":
        return np.ma.masked_array(np.array(cells, dtype=float), mask=mask)
    if container.startswith("frame_"):
        dtype = container.split("_", 1)[1]
        return pd.DataFrame({n: pd.array(list(plain[:, k]), dtype=dtype if dtype != "int"
                                         else "int64") for k, n in enumerate(names)})
    if container == "dict":
        return {n: list(plain[:, k]) for k, n in enumerate(names)}
    if container == "tensor":
        return torch.tensor(np.array(cells, dtype=float))
    if container == "tensor_sparse":
        return torch.tensor(np.array(cells, dtype=float)).to_sparse()
    if container == "scipy_csr":
        return sp.csr_matrix(np.array(cells, dtype=float))
    if container == "scipy_coo":
        return sp.coo_matrix(np.array(cells, dtype=float))
    if container == "sets":
        return pystratum.label_matrix_from_sets(
            [[names[c] for c in range(width) if cells[r][c] == 1] for r in range(rows)],
            labels=names)
    raise AssertionError(container)


@st.composite
def hostile_inputs(draw):
    rows = draw(st.integers(0, 7))
    width = draw(st.integers(0, 4))
    cells = [[draw(st.sampled_from([0, 1])) for _ in range(width)] for _ in range(rows)]
    for _ in range(draw(st.integers(0, 2))):
        if rows and width:
            cells[draw(st.integers(0, rows - 1))][draw(st.integers(0, width - 1))] = draw(
                st.sampled_from(HOSTILE_CELLS))
    mask = np.zeros((rows, width), dtype=bool)
    if rows and width and draw(st.booleans()):
        mask[draw(st.integers(0, rows - 1)), draw(st.integers(0, width - 1))] = True
    return cells, draw(st.sampled_from(CONTAINERS)), mask


def _outcome(call):
    try:
        return "ok", call()
    except (TypeError, ValueError) as error:
        return type(error).__name__, str(error)


@settings(max_examples=400)
@given(case=hostile_inputs(), batches=st.integers(1, 4), seed=st.integers(0, 2**31 - 2))
def test_plan_and_label_matrix_accept_and_refuse_alike(case, batches, seed):
    cells, container, mask = case
    try:
        labels = _build(cells, container, mask)
    except Exception:  # noqa: BLE001 - numpy, pandas or torch refused the cells, not pystratum
        TALLY["container refused"] += 1
        return
    try:
        read = _outcome(lambda: pystratum.label_matrix(labels, name="strata"))
        planned = _outcome(lambda: plan_batches(labels, MultiLabel(num_batches=batches),
                                                seed=seed, allow_single_batch=True))
    except ESCAPES as error:  # the failure this suite looks for
        pytest.fail(f"{type(error).__name__} escaped for {container} {cells!r}: {error}")
    if read[0] == "ok" and planned[0] != "ok":
        # The reader accepted; the plan may still refuse num_batches > rows, naming it.
        assert planned[1].startswith("num_batches"), planned
        TALLY["read, plan refused num_batches"] += 1
        return
    assert read[0] == planned[0], (container, cells, read, planned)
    if read[0] == "ok":
        order = np.sort(planned[1].order)
        assert order.tolist() == list(range(read[1].matrix.shape[0]))
        assert (planned[1].label_counts.sum(axis=0) == read[1].matrix.sum(axis=0)).all()
        TALLY["accepted"] += 1
    else:
        assert read[1] == planned[1]
        assert read[1].startswith("strata")
        TALLY[f"refused ({read[0]})"] += 1


def test_label_readers_tally():
    """Runs after the suite (file order): what became of every hostile input."""
    print(f"\nlabel readers, hostile inputs: {sum(TALLY.values())} tried, {dict(TALLY)}")
    assert sum(TALLY.values()) >= 400
