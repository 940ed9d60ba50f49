"""MultiLabel reads its input through the one label-matrix reader, on every face.

``plan_batches``/``stratified_batches`` with ``MultiLabel`` and the torch
sampler must accept and refuse exactly what ``pystratum.label_matrix`` does:
a masked cell is a missing value (never a positive), nullable pandas columns
and object 0/1 columns are read by value.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from pystratum import label_matrix, plan_batches, stratified_batches
from pystratum.policies import MultiLabel

PLAIN = np.array([[1, 0], [0, 1], [1, 1], [0, 0], [1, 0], [0, 1], [1, 1], [0, 1]])


def batches_of(labels, **kwargs):
    return [b.tolist() for b in stratified_batches(labels, MultiLabel(num_batches=2), seed=5,
                                                   **kwargs)]


def test_masked_cell_is_refused_as_missing_not_read_as_a_positive():
    masked = np.ma.masked_array(PLAIN, mask=np.zeros_like(PLAIN, dtype=bool))
    masked.mask[3, 1] = True  # the data under the mask is 0 here ...
    masked.data[3, 1] = 1     # ... and 1 there: read unmasked it would be a positive
    with pytest.raises(ValueError, match=r"^strata has a missing value \(masked\) at row 3 "
                                         r"\(0-based\) in label '1'"):
        plan_batches(masked, MultiLabel(num_batches=2), seed=5)
    with pytest.raises(ValueError, match=r"^strata has a missing value \(masked\)"):
        stratified_batches(masked, MultiLabel(num_batches=2), seed=5)


def test_masked_array_without_masked_cells_plans_like_the_plain_matrix():
    masked = np.ma.masked_array(PLAIN, mask=False)
    assert batches_of(masked) == batches_of(PLAIN)


@pytest.mark.parametrize("dtype", ["Int64", "boolean", "Float64", "object", "int8", "bool"])
def test_dataframe_columns_of_every_documented_dtype_plan_by_value(dtype):
    values = PLAIN.astype(bool) if dtype in ("boolean", "bool") else PLAIN
    frame = pd.DataFrame({"a": pd.array(values[:, 0].tolist(), dtype=dtype),
                          "b": pd.array(values[:, 1].tolist(), dtype=dtype)})
    plan = plan_batches(frame, MultiLabel(num_batches=2), seed=5)
    assert plan.strata == ("a", "b")
    assert [b.tolist() for b in plan.batches] == batches_of(PLAIN)


def test_nullable_missing_cell_is_refused_naming_strata_and_the_cell():
    frame = pd.DataFrame({"a": pd.array([1, 0, None, 1], dtype="Int64"),
                          "b": pd.array([0, 1, 1, 0], dtype="Int64")})
    with pytest.raises(ValueError, match=r"^strata has a missing value \(NA\) at row 2 "
                                         r"\(0-based\) in label 'a'"):
        plan_batches(frame, MultiLabel(num_batches=2), seed=5)


@pytest.mark.parametrize("labels", [
    np.ma.masked_array(PLAIN, mask=PLAIN == 0),
    pd.DataFrame({"a": pd.array([1, None, 0], dtype="boolean"), "b": [0, 1, 1]}),
    pd.DataFrame({"a": np.array([1, 0, "1"], dtype=object), "b": [0, 1, 1]}),
    pd.DataFrame({"a": np.array([1, 0, 2], dtype=object), "b": [0, 1, 1]}),
    np.array([[0, 2], [1, 0]]),
    np.array([[0.0, np.nan], [1, 0]]),
    np.array([0, 1, 1]),
])
def test_plan_refuses_exactly_what_label_matrix_refuses_with_its_words(labels):
    with pytest.raises((TypeError, ValueError)) as expected:
        label_matrix(labels, name="strata")
    with pytest.raises(type(expected.value)) as got:
        plan_batches(labels, MultiLabel(num_batches=2), seed=5, allow_single_batch=True)
    assert str(got.value) == str(expected.value)


def test_torch_sampler_reads_masked_and_nullable_input_as_the_core_does():
    from pystratum.torch import StratifiedBatchSampler as torch_sampler
    frame = pd.DataFrame({"a": pd.array(PLAIN[:, 0].tolist(), dtype="Int64"),
                          "b": pd.array(PLAIN[:, 1].tolist(), dtype="Float64")})
    sampler = torch_sampler(frame, MultiLabel(num_batches=2), seed=5)
    assert [list(b) for b in sampler] == batches_of(PLAIN)
    masked = np.ma.masked_array(PLAIN, mask=PLAIN == 0)
    with pytest.raises(ValueError, match=r"^strata has a missing value \(masked\)"):
        torch_sampler(masked, MultiLabel(num_batches=2), seed=5)
