"""Hostile tests of the rng="index" member lists, the leaner plan assembly and the policies.

Each property compares a fast path with the general one it replaces:
small-integer labels grouped chunk by chunk against the general encoder's
codes grouped into member lists; samplers built from labels and from member
lists against each other.
"""

import warnings

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pystratum._members import members_of_codes, members_of_labels
from pystratum._strata import encode_strata
from pystratum.torch import StratifiedBatchSampler

INT_DTYPES = [np.int8, np.int16, np.int32, np.int64, np.uint8, np.uint16, np.uint32, np.uint64]


def _members_rows(members):
    return [members.member(np.full(int(size), s), np.arange(int(size))).tolist()
            for s, size in enumerate(members.sizes)]


def _assert_same_members(fast, general):
    assert fast.labels == general.labels
    np.testing.assert_array_equal(fast.sizes, general.sizes)
    np.testing.assert_array_equal(fast.first_rows, general.first_rows)
    assert _members_rows(fast) == _members_rows(general)


@st.composite
def small_span_labels(draw):
    """Integer labels of any width within a span the chunked grouping takes, at the dtype's ends."""
    dtype = np.dtype(draw(st.sampled_from(INT_DTYPES)))
    info = np.iinfo(dtype)
    span = draw(st.integers(0, min(300, int(info.max) - int(info.min))))
    low = draw(st.sampled_from([int(info.min), int(info.max) - span, 0 if info.min == 0 else -1,
                                int(info.min) + span // 2]))
    low = max(int(info.min), min(low, int(info.max) - span))
    offsets = draw(st.lists(st.integers(0, span), min_size=1, max_size=60))
    return np.array([low + o for o in offsets], dtype=dtype)


@settings(max_examples=150)
@given(small_span_labels())
def test_small_integer_labels_group_as_the_general_encoder(values):
    fast = members_of_labels(values)
    assert fast is not None
    encoded = encode_strata(values)
    _assert_same_members(fast, members_of_codes(encoded.codes, encoded.sizes, encoded.labels))


@pytest.mark.parametrize("values", [
    np.array([-100, 100, -100, 5], dtype=np.int8),
    np.array([-128, 127, 0, 127], dtype=np.int8),
    np.array([-30000, 30000, 0, -30000], dtype=np.int16),
    np.array([2**63 + 5, 2**63 + 1, 2**63 + 5], dtype=np.uint64),
    np.array([2**64 - 1, 2**64 - 2, 2**64 - 1], dtype=np.uint64),
])
def test_index_sampler_takes_labels_at_the_ends_of_their_dtype(values):
    # Grouping subtracted the smallest label in the labels' own dtype (int8
    # wrapped round, uint64 beyond int64 overflowed): the sampler refused
    # valid labels with a bincount or OverflowError.
    labels = np.tile(values, 3)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        sampler = StratifiedBatchSampler(labels, 1, rng="index", seed=4)
        encoded = encode_strata(labels)
        reference = StratifiedBatchSampler(
            members_of_codes(encoded.codes, encoded.sizes, encoded.labels), 1, rng="index",
            seed=4)
    batches = list(sampler)
    assert sorted(r for b in batches for r in b) == list(range(labels.shape[0]))
    assert batches == list(reference)


def _reference_members(labels):
    encoded = encode_strata(labels)
    return members_of_codes(encoded.codes, encoded.sizes, encoded.labels)


@pytest.mark.parametrize("form", ["pyarrow_dictionary", "pandas_categorical"])
def test_parquet_dictionary_values_no_row_uses_are_no_strata(tmp_path, form):
    # A dictionary (or categorical's categories) may list values no row has;
    # they became strata of 0 rows, and the sampler refused the data.
    pa = pytest.importorskip("pyarrow")
    pq = pytest.importorskip("pyarrow.parquet")
    from pystratum import parquet_strata

    labels = np.array(["b", "a", "b", "c", "a", "c", "b", "a"])
    path = tmp_path / "strata.parquet"
    if form == "pyarrow_dictionary":
        dictionary = pa.array(["unused", "c", "b", "a", "never"])
        indices = pa.array([{"a": 3, "b": 2, "c": 1}[v] for v in labels], pa.int32())
        pq.write_table(pa.table({"y": pa.DictionaryArray.from_arrays(indices, dictionary)}),
                       path)
    else:
        import pandas as pd

        pd.DataFrame({"y": pd.Categorical(list(labels), categories=["c", "unused", "b", "a"])}
                     ).to_parquet(path)
    members = parquet_strata(path, "y")
    _assert_same_members(members, _reference_members(labels))
    batches = list(StratifiedBatchSampler(members, 1, rng="index", seed=3))
    assert batches == list(StratifiedBatchSampler(labels, 1, rng="index", seed=3))
