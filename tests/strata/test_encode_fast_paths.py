"""The encoder's hashed text paths give exactly the general paths' codes and labels.

Text labels at scale are hashed by pyarrow (numpy strings, object arrays of
``str``, pyarrow columns, pyarrow-backed pandas columns), object arrays of
``str`` by pandas or by the compiled reader of their text
(``kernels._pyobjects``); below a size, or without those libraries, the
general paths (sorting, a Python dict) serve. Here the size thresholds are
lowered so that small generated inputs take the hashed paths, and the
general result is the same input encoded with them switched off. Codes,
labels and code dtypes must be equal.
"""

from __future__ import annotations

import sys

import numpy as np
import pandas as pd
import pyarrow as pa
import pytest
from hypothesis import given
from hypothesis import strategies as st

from pystratum import kernels as kernel_gate
from pystratum import plan_batches
from pystratum.policies import MinPerStratum
from pystratum.strata import _encode, _object_identity
from pystratum.strata._encode import encode_strata
from _strategies import Text, equal_copy


def use_hasher(patch, hasher):
    """Python strings hashed at any size by ``hasher``: "pandas" (loaded here), "pyarrow" (as
    without pandas) or "compiled" (``kernels._pyobjects``, reading the objects' text)."""
    patch.setattr(_encode, "_HASH_MIN_ROWS", 1)
    if hasher == "compiled":
        assert kernel_gate.compiled("pyobjects") is not None
        patch.setattr(kernel_gate, "MIN_ROWS", 1)
    else:
        patch.setitem(kernel_gate._LOADED, "pyobjects", False)
    if hasher == "pyarrow":
        patch.setattr(_encode, "_loaded_pandas", lambda: None)


def encoded_both_ways(strata, monkeypatch, hasher="pandas"):
    """(hashed paths, general paths) encodings of ``strata``, hashed by ``hasher``
    (:func:`use_hasher`)."""
    with monkeypatch.context() as patch:
        use_hasher(patch, hasher)
        fast = encode_strata(strata)
    with monkeypatch.context() as patch:
        patch.setattr(_encode, "_pyarrow", lambda: None)
        patch.setattr(_encode, "_loaded_pandas", lambda: None)
        patch.setitem(kernel_gate._LOADED, "pyobjects", False)
        general = encode_strata(strata)
    return fast, general


def assert_same(fast, general):
    assert fast.labels == general.labels
    # The same objects' types too: a str subclass kept by the general path stays one.
    assert [type(label) for label in fast.labels] == [type(label) for label in general.labels]
    assert fast.codes.dtype == general.codes.dtype
    assert np.array_equal(fast.codes, general.codes)
    assert np.array_equal(fast.sizes, general.sizes)


# Texts that differ only where readers slip: NULs (numpy's 'U' drops trailing
# ones), case, accents, spaces, the empty string, non-BMP characters.
TEXT = st.text(alphabet=st.sampled_from(list("aAb é\x00\U0001f600z")), max_size=3)
LABELS = st.lists(TEXT, min_size=1, max_size=8, unique=True)


@st.composite
def text_column(draw):
    labels = draw(LABELS)
    rows = draw(st.lists(st.integers(0, len(labels) - 1), min_size=1, max_size=60))
    return [labels[k] for k in rows]


FORMS = ["numpy U", "numpy S", "object", "pyarrow", "pyarrow dictionary",
         "pyarrow chunked dictionary", "pandas string[pyarrow]", "pandas arrow dictionary",
         "dict of columns"]


def as_form(values, form):
    if form == "numpy U":
        return np.array(values, dtype=str)
    if form == "numpy S":
        return np.array([v.encode("utf-8") for v in values], dtype=bytes)
    if form == "object":
        array = np.empty(len(values), dtype=object)
        array[:] = values
        return array
    if form == "pyarrow":
        return pa.array(values, type=pa.string())
    if form == "pyarrow dictionary":
        # Unused dictionary entries too: they must not become strata.
        return pa.DictionaryArray.from_arrays(
            pa.array([sorted(set(values)).index(v) + 1 for v in values], type=pa.int32()),
            pa.array(["unused"] + sorted(set(values))))
    if form == "pyarrow chunked dictionary":
        half = len(values) // 2
        return pa.chunked_array([pa.array(values[:half], type=pa.string()).dictionary_encode(),
                                 pa.array(values[half:], type=pa.string()).dictionary_encode()],
                                type=pa.dictionary(pa.int32(), pa.string()))
    if form == "pandas string[pyarrow]":
        return pd.Series(values, dtype="string[pyarrow]")
    if form == "pandas arrow dictionary":
        return pd.Series(pd.arrays.ArrowExtensionArray(
            pa.chunked_array([pa.array(values, type=pa.string()).dictionary_encode()])))
    assert form == "dict of columns"
    return {"text": as_form(values, "pyarrow dictionary"),
            "group": np.arange(len(values)) % 3, "more": as_form(values, "object")}


HASHERS = ["pandas", "pyarrow", "compiled"]


@given(values=text_column(), form=st.sampled_from(FORMS), hasher=st.sampled_from(HASHERS))
def test_hashed_paths_equal_the_general_paths(values, form, hasher):
    with pytest.MonkeyPatch.context() as monkeypatch:
        assert_same(*encoded_both_ways(as_form(values, form), monkeypatch, hasher))


@given(values=st.lists(st.one_of(TEXT, TEXT.map(Text), st.integers(-3, 3), st.binary(max_size=2),
                                 st.just(1.0), st.booleans(), st.none(), st.just(float("nan"))),
                       min_size=1, max_size=30),
       as_list=st.booleans(), hasher=st.sampled_from(HASHERS))
def test_objects_of_any_mix_equal_the_general_path(values, as_list, hasher):
    # b"a" and "a", 1 and 1.0 and True, None, NaN, str subclasses: Python's equality decides,
    # and the labels are the objects the general path keeps.
    if as_list:
        strata = list(values)
    else:
        strata = np.empty(len(values), dtype=object)
        strata[:] = values
    with pytest.MonkeyPatch.context() as monkeypatch:
        try:
            fast, general = encoded_both_ways(strata, monkeypatch, hasher)
        except (TypeError, ValueError) as error:  # refused (missing values): both alike
            with monkeypatch.context() as patch:
                patch.setattr(_encode, "_pyarrow", lambda: None)
                patch.setattr(_encode, "_loaded_pandas", lambda: None)
                with pytest.raises(type(error), match="missing value"):
                    encode_strata(strata)
            with monkeypatch.context() as patch:
                patch.setattr(_encode, "_HASH_MIN_ROWS", 1)
                with pytest.raises(type(error), match="missing value"):
                    encode_strata(strata)
            return
    assert_same(fast, general)


@pytest.mark.parametrize("hasher", HASHERS)
@pytest.mark.parametrize("as_list", [False, True])
def test_bytes_and_str_of_the_same_text_are_two_strata(hasher, as_list, monkeypatch):
    values = ["a", b"a", "b", b"b"] * 20_000  # above the hashing threshold: the fast path
    strata = values if as_list else np.array(values, dtype=object)
    use_hasher(monkeypatch, hasher)
    encoded = encode_strata(strata)
    assert sorted(map(repr, encoded.labels)) == ["'a'", "'b'", "b'a'", "b'b'"]
    assert encoded.sizes.tolist() == [20_000] * 4


@pytest.mark.parametrize("hasher", HASHERS)
def test_a_str_subclass_coming_first_labels_its_stratum(hasher, monkeypatch):
    strata = np.array([Text("a")] + ["a", "b"] * 20_000, dtype=object)
    use_hasher(monkeypatch, hasher)
    encoded = encode_strata(strata)
    assert [type(label) for label in encoded.labels] == [Text, str]
    assert encoded.sizes.tolist() == [20_001, 20_000]


@pytest.mark.parametrize("form", ["pyarrow", "pandas string[pyarrow]", "object"])
def test_a_missing_value_is_named_as_the_general_path_names_it(form, monkeypatch):
    values = ["a", None, "b"] * 3
    strata = (pa.array(values) if form == "pyarrow" else
              pd.Series(values, dtype="string[pyarrow]") if form != "object" else
              np.array(values, dtype=object))
    monkeypatch.setattr(_encode, "_HASH_MIN_ROWS", 1)
    with pytest.raises(ValueError, match=r"has a missing value at row 1 \(0-based\)"):
        encode_strata(strata)


def test_a_pyarrow_column_is_planned_as_its_labels():
    values = np.random.default_rng(3).choice(["rare", "common", "other"], 5000,
                                             p=[0.02, 0.7, 0.28])
    column = pa.chunked_array([pa.array(values).dictionary_encode()])
    by_arrow = plan_batches(column, MinPerStratum(2), seed=4)
    by_numpy = plan_batches(values.astype(object), MinPerStratum(2), seed=4)
    assert by_arrow.strata == by_numpy.strata == ("common", "other", "rare")
    assert np.array_equal(by_arrow.order, by_numpy.order)


@given(columns=st.lists(st.sampled_from(["ints", "text", "floats", "pyarrow"]), min_size=2,
                        max_size=4),
       rows=st.integers(1, 80), seed=st.integers(0, 2**16))
def test_several_columns_are_numbered_in_their_columns_label_order(columns, rows, seed):
    """Reference: each column encoded alone; a stratum is a distinct tuple of column codes,
    numbered in lexicographic order of those codes, labelled by the columns' labels."""
    rng = np.random.default_rng(seed)
    strata = {}
    for k, kind in enumerate(columns):
        if kind == "ints":
            strata[f"c{k}"] = rng.integers(-2, 3, rows)
        elif kind == "floats":
            strata[f"c{k}"] = rng.choice([0.5, 1.0, -3.25], rows)
        else:
            text = rng.choice(["b", "a", "é", "a\x00"], rows).astype(object)
            strata[f"c{k}"] = pa.array(text) if kind == "pyarrow" else text
    alone = [encode_strata(column) for column in strata.values()]
    keys = sorted({tuple(int(e.codes[r]) for e in alone) for r in range(rows)})
    expected_labels = tuple(tuple(e.labels[c] for e, c in zip(alone, key)) for key in keys)
    number = {key: n for n, key in enumerate(keys)}
    expected_codes = [number[tuple(int(e.codes[r]) for e in alone)] for r in range(rows)]
    with pytest.MonkeyPatch.context() as monkeypatch:
        for compact in (False, True):
            if compact:  # the general path: renumber after every column
                monkeypatch.setattr(_encode, "_DENSE_RANGE_FACTOR", -10**9)
            encoded = encode_strata(strata)
            assert encoded.labels == expected_labels
            assert encoded.codes.tolist() == expected_codes


@given(values=st.lists(st.integers(-2**40, 2**40), min_size=1, max_size=40),
       unused=st.lists(st.integers(-5, 5), max_size=3, unique=True),
       chunked=st.booleans())
def test_pyarrow_integer_columns_equal_the_general_paths(values, unused, chunked):
    distinct = sorted(set(values))
    entries = [v for v in unused if v not in distinct] + distinct
    dictionary = pa.DictionaryArray.from_arrays(
        pa.array([entries.index(v) for v in values], type=pa.int32()), pa.array(entries))
    for column in (dictionary, pa.array(values)):
        column = pa.chunked_array([column]) if chunked else column
        with pytest.MonkeyPatch.context() as monkeypatch:
            assert_same(*encoded_both_ways(column, monkeypatch))


# Object arrays that repeat a few objects are numbered by identity first (their pointers
# hashed as integers), then the distinct objects by value: hostile pools of objects, each
# row one of them, must give the general path's codes, labels and errors.
STR_OBJECTS = st.one_of(TEXT, TEXT.map(equal_copy))
POOL_OBJECTS = st.one_of(
    STR_OBJECTS, TEXT.map(Text), st.binary(max_size=2), st.integers(-3, 3),
    st.sampled_from([1.0, True, None, float("nan"), pd.NA, np.nan]))


# Pools of str only (which take the identity path to its end) or of anything.
@given(pool=st.one_of(st.lists(STR_OBJECTS, min_size=1, max_size=6),
                      st.lists(POOL_OBJECTS, min_size=1, max_size=6)),
       rows=st.lists(st.integers(0, 5), min_size=1, max_size=60),
       layout=st.sampled_from(["contiguous", "every other row", "reversed", "read-only"]),
       hasher=st.sampled_from(HASHERS))
def test_repeated_objects_equal_the_general_path(pool, rows, layout, hasher):
    objects = [pool[k % len(pool)] for k in rows]
    if layout == "every other row":
        strata = np.empty(2 * len(objects), dtype=object)
        strata[::2] = objects
        strata[1::2] = "filler"
        strata = strata[::2]
    else:
        strata = np.empty(len(objects), dtype=object)
        strata[:] = objects[::-1] if layout == "reversed" else objects
        strata = strata[::-1] if layout == "reversed" else strata
        strata.flags.writeable = layout != "read-only"
    with pytest.MonkeyPatch.context() as monkeypatch:
        monkeypatch.setattr(_object_identity, "_MAX_DISTINCT_SHARE", 1.0)  # always by identity
        try:
            fast, general = encoded_both_ways(strata, monkeypatch, hasher)
        except (TypeError, ValueError) as error:  # refused: both paths alike, same message
            with monkeypatch.context() as patch:
                patch.setattr(_encode, "_pyarrow", lambda: None)
                patch.setattr(_encode, "_loaded_pandas", lambda: None)
                with pytest.raises(type(error)) as general_error:
                    encode_strata(strata)
            assert str(general_error.value) == str(error)
            return
    assert_same(fast, general)


@pytest.mark.parametrize("hasher", HASHERS)
def test_rows_repeating_a_few_str_objects_are_numbered_by_identity(hasher, monkeypatch):
    names = np.array(["b", "a", "c\x00", "é", equal_copy("ab"), "ab"], dtype=object)
    strata = names[np.random.default_rng(5).integers(0, len(names), 50_000)]
    general = encode_strata(strata.tolist())  # a list: the general path
    use_hasher(monkeypatch, hasher)
    # Hashing each row's value is not needed: only the six objects are compared.
    monkeypatch.setattr(_encode, "_factorize_objects", None)
    assert_same(encode_strata(strata), general)
    assert general.labels == ("a", "ab", "b", "c\x00", "é")


def test_fresh_objects_per_row_are_hashed_by_value(monkeypatch):
    # One object per row (numpy's astype(object)): the sample sees no repeats, so the
    # pointers are not hashed at all.
    strata = np.random.default_rng(6).choice(["x", "yy", "zzz"], 50_000).astype(object)
    monkeypatch.setattr(_encode, "_factorize_integers", None)
    assert encode_strata(strata).labels == ("x", "yy", "zzz")


def test_repeated_objects_without_a_hashing_library_take_the_general_path(monkeypatch):
    names = np.array(["b", "a", equal_copy("ab"), "ab"], dtype=object)
    strata = names[np.random.default_rng(7).integers(0, len(names), 40_000)]
    general = encode_strata(strata.tolist())
    monkeypatch.setattr(_encode, "_loaded_pandas", lambda: None)
    monkeypatch.setitem(sys.modules, "pyarrow", None)  # import pyarrow fails
    assert _encode.objects_by_identity(strata) is None
    assert_same(encode_strata(strata), general)
