"""The compiled reader of Python ``str`` labels (``kernels._pyobjects``) numbers text as
``str.__eq__`` does, stops at anything else, and leaves the encoder's and the label-matrix
reader's results unchanged.

Python's own numbering (a dict, in order of first row) is the reference; the hostile inputs
are the ones where reading memory could slip: every character width, lone surrogates,
equal strings built apart (different bytes after the end), lengths around the word size,
many distinct texts (the table grows), and objects that are not exact ``str``.
"""

from __future__ import annotations

import ctypes
import sys

import numpy as np
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

import pystratum
from pystratum import kernels as kernel_gate
from pystratum.kernels import _pyobjects
from pystratum.strata._object_identity import object_pointers
from _strategies import Text, equal_copy

# Every code point, surrogates included (a str may hold a lone one).
ANY_TEXT = st.text(alphabet=st.characters(min_codepoint=0, max_codepoint=sys.maxunicode,
                                          exclude_categories=()), max_size=20)
# Few texts that differ only where a reader could slip: width, a byte past 8, case.
CLOSE_TEXT = st.sampled_from(["", "a", "A", "\x00", "abcdefgh", "abcdefghi", "abcdefgi",
                              "\xe9", "\u0100", "\U0001f600", "\ud800", "aaaaaaaaaaaaaaaa",
                              "aaaaaaaaaaaaaaab", "\u00e9\u00e9"])


def built_apart(text: str, junk: str) -> str:
    """An equal str, another object, whose memory past the end held ``junk`` when built."""
    return (text + junk)[:len(text)] if junk else equal_copy(text)


@st.composite
def texts(draw):
    values = draw(st.lists(st.one_of(ANY_TEXT, CLOSE_TEXT), min_size=1, max_size=40))
    junk = draw(st.sampled_from(["", "x", "zzzzzzzzzzzzzzz", "\U0001f600"]))
    return [built_apart(value, junk) if draw(st.booleans()) else value for value in values]


def numbered_by_python(values):
    """(codes, first rows): each value's number in order of first row, by ``==``."""
    code_of: dict = {}
    codes, first_rows = [], []
    for row, value in enumerate(values):
        if value not in code_of:
            code_of[value] = len(first_rows)
            first_rows.append(row)
        codes.append(code_of[value])
    return codes, first_rows


def object_array(values):
    array = np.empty(len(values), dtype=object)
    array[:] = values
    return array


def test_the_layout_is_proven_on_this_interpreter():
    # CI's CPython: the compiled path must serve there, or these tests test nothing.
    assert _pyobjects.LAYOUT is not None
    assert kernel_gate.compiled("pyobjects") is _pyobjects


@pytest.mark.parametrize("field", _pyobjects.Layout._fields)
@pytest.mark.parametrize("shift", [-8, 8, 16])
def test_a_layout_off_in_any_field_is_refused(field, shift):
    wrong = _pyobjects.LAYOUT._replace(**{field: getattr(_pyobjects.LAYOUT, field) + shift})
    assert _pyobjects.proven_layout(wrong) is None


@settings(max_examples=300)
@given(values=texts())
@example(values=["abc", "abc"[:2] + "c", "ab"])
def test_text_is_numbered_as_python_numbers_it(values):
    array = object_array(values)
    codes, first_rows = _pyobjects.str_codes(object_pointers(array))
    expected_codes, expected_firsts = numbered_by_python(values)
    assert codes.tolist() == expected_codes
    assert first_rows.tolist() == expected_firsts


def test_many_distinct_texts_grow_the_table():
    values = [f"{k:x}" for k in range(200_000)] * 2
    values = values[::2] + values[1::2]  # each text twice, far apart
    array = object_array(values)
    codes, first_rows = _pyobjects.str_codes(object_pointers(array))
    expected_codes, expected_firsts = numbered_by_python(values)
    assert codes.tolist() == expected_codes and first_rows.tolist() == expected_firsts


def test_rows_repeating_many_objects_are_numbered_as_python_numbers_them():
    # More objects than the reader remembers by address (its memo's slots collide), equal
    # texts held by different objects among them.
    pool = [f"{k % 1500:x}" for k in range(3000)]
    pool = [equal_copy(text) if k % 3 == 0 else text for k, text in enumerate(pool)]
    rows = np.random.default_rng(2).integers(0, len(pool), 60_000)
    values = [pool[k] for k in rows]
    codes, first_rows = _pyobjects.str_codes(object_pointers(object_array(values)))
    expected_codes, expected_firsts = numbered_by_python(values)
    assert codes.tolist() == expected_codes and first_rows.tolist() == expected_firsts


NOT_EXACT_STR = st.sampled_from([b"ab", None, 1, 2.5, Text("ab"), np.str_("ab"), ("ab",),
                                 bytearray(b"ab"), frozenset({"ab"})])


@given(values=texts(), odd=NOT_EXACT_STR, where=st.integers(0, 40))
def test_anything_not_exactly_a_str_stops_the_reader(values, odd, where):
    values.insert(min(where, len(values)), odd)
    array = object_array(values)
    assert _pyobjects.str_codes(object_pointers(array)) is None


def test_a_null_pointer_stops_the_reader():
    # numpy reads a NULL in an object array (left by C code) as None: never followed here.
    text = "abc"
    assert _pyobjects.str_codes(np.array([id(text), 0, id(text)], dtype=np.intp)) is None
    assert _pyobjects.str_codes(np.array([0], dtype=np.intp)) is None


def test_a_legacy_string_stops_the_reader():
    # Strings made by the old wide-character C API before it is read are not compact.
    make = getattr(ctypes.pythonapi, "PyUnicode_FromUnicode", None)
    if make is None:
        pytest.skip("this CPython has no legacy (non-compact) strings to make")
    make.restype, make.argtypes = ctypes.py_object, [ctypes.c_void_p, ctypes.c_ssize_t]
    with pytest.warns(DeprecationWarning, match="PyUnicode_FromUnicode"):
        legacy = make(None, 3)
    array = object_array(["abc", legacy, "abc"])
    assert _pyobjects.str_codes(object_pointers(array)) is None


ROW_KINDS = st.sampled_from([list, tuple])


@settings(max_examples=300)
@given(rows=st.lists(st.tuples(texts() | st.just([]), ROW_KINDS), max_size=12),
       outer=ROW_KINDS)
def test_label_lists_are_numbered_cell_by_cell_as_python_numbers_them(rows, outer):
    label_sets = outer(kind(cells) for cells, kind in rows)
    cells = [cell for row in label_sets for cell in row]
    lengths, codes, first_cells = _pyobjects.list_str_codes(label_sets)
    expected_codes, expected_firsts = numbered_by_python(cells)
    assert lengths.tolist() == [len(row) for row in label_sets]
    assert codes.tolist() == expected_codes and first_cells.tolist() == expected_firsts


@given(rows=st.lists(texts(), min_size=1, max_size=6), where=st.integers(0, 6),
       odd_row=st.sampled_from([{"ab"}, frozenset(), "ab", None, np.array(["ab"]), 3]),
       odd_cell=NOT_EXACT_STR, cell_not_row=st.booleans())
def test_a_row_or_cell_of_another_kind_stops_the_list_reader(rows, where, odd_row, odd_cell,
                                                              cell_not_row):
    where = min(where, len(rows))
    if cell_not_row:
        rows[where - 1 if where else 0].append(odd_cell)
    else:
        rows.insert(where, odd_row)
    assert _pyobjects.list_str_codes(rows) is None
    assert _pyobjects.list_str_codes(iter(rows)) is None


def test_a_plan_of_fresh_str_objects_is_the_plan_of_their_codes(monkeypatch):
    codes = np.random.default_rng(5).integers(0, 30, 300_000)  # past the gate's 2**17 rows
    names = np.array([f"group {k:02d}" for k in range(30)])
    fresh = names[codes].astype(object)  # a new str object per row
    kernel_gate.compiled("pyobjects")  # numba loaded: the gate serves this size
    served = []
    real = _pyobjects.str_codes
    monkeypatch.setattr(_pyobjects, "str_codes",
                        lambda pointers: served.append(real(pointers)) or served[-1])
    by_text = pystratum.plan_batches(fresh, pystratum.MinPerStratum(2), seed=8)
    assert len(served) == 1 and served[0] is not None  # the compiled reader numbered them
    by_code = pystratum.plan_batches(codes, pystratum.MinPerStratum(2), seed=8)
    assert by_text.strata == tuple(names)
    assert np.array_equal(by_text.order, by_code.order)
