"""Label matrices (``pystratum.label_matrix``, ``label_matrix_from_sets``) against hostile input.

Hypothesis draws a 0/1 matrix, a container (numpy of every dtype, masked
arrays, object arrays, lists of rows, pandas DataFrames with numpy and
nullable dtypes, dicts of columns, torch tensors, scipy.sparse formats) and
hostile cells (missing kinds, out-of-range and extreme values, text). The
reference is plain Python over the cells: the result is the cells equal to
1, or the error names the argument, the first bad cell (missing cells
before other values; lowest row, then lowest column), its value and the fix.
"""

from __future__ import annotations

import enum
import math

import numpy as np
import pandas as pd
import pytest
import scipy.sparse as sp
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

import pystratum
from pystratum.strata._label_matrix import value_text
from _strategies import Text, equal_copy

NUMERIC_DTYPES = ["bool", "int8", "uint8", "int16", "uint16", "int32", "uint32", "int64",
                  "uint64", "float16", "float32", "float64"]
MISSING = [float("nan"), None, pd.NA]
BAD = [2, -1, 0.5, float("inf"), float("-inf"), 1e300, 255, -(2**63), 2**64 - 1, 1e-300]


def reference(cells, names):
    """``(matrix, None)`` or ``(None, (kind, row, name, value))`` by the documented rule."""
    rows, cols = len(cells), len(names)
    for row in range(rows):
        for col in range(cols):
            value = cells[row][col]
            if value is None or value is pd.NA or (isinstance(value, float) and math.isnan(value)):
                return None, ("missing", row, names[col], value)
    for row in range(rows):
        for col in range(cols):
            value = cells[row][col]
            if isinstance(value, str):
                return None, ("text", row, names[col], value)
            if value not in (0, 1):
                return None, ("value", row, names[col], value)
    return np.array([[cells[r][c] == 1 for c in range(cols)] for r in range(rows)],
                    dtype=bool).reshape(rows, cols), None


def assert_outcome(call, cells, names, name="labels"):
    expected, problem = reference(cells, names)
    if problem is None:
        result = call()
        assert result.matrix.dtype == bool and result.matrix.flags.c_contiguous
        np.testing.assert_array_equal(result.matrix, expected)
        assert result.labels == tuple(names)
        return
    kind, row, label, value = problem
    error = TypeError if kind == "text" else ValueError
    with pytest.raises(error) as raised:
        call()
    message = str(raised.value)
    assert message.startswith(f"{name} ")
    assert f"at row {row} (0-based) in label '{label}'" in message
    if kind == "missing":
        assert "has a missing value" in message and "fill it" in message
    elif kind == "value":
        assert f"got {value_text(value)} at row" in message and "Recode it first" in message
    else:
        assert f"got the text {value!r}" in message


@st.composite
def cell_tables(draw, hostile):
    rows = draw(st.integers(1, 7))
    cols = draw(st.integers(1, 4))
    cells = [[draw(st.sampled_from([0, 1])) for _ in range(cols)] for _ in range(rows)]
    for _ in range(draw(st.integers(0, 3))):
        cells[draw(st.integers(0, rows - 1))][draw(st.integers(0, cols - 1))] = draw(
            st.sampled_from(hostile))
    return cells


@settings(max_examples=150)
@given(cell_tables([2, -1, 255, 7]), st.sampled_from(NUMERIC_DTYPES))
def test_numpy_dtypes(cells, dtype):
    if dtype == "bool":
        cells = [[bool(v) for v in row] for row in cells]
    elif dtype.startswith("uint"):
        cells = [[v % 256 if v >= 0 else 255 for v in row] for row in cells]
    array = np.array(cells, dtype=dtype)
    cells = array.tolist()
    names = [str(k) for k in range(array.shape[1])]
    assert_outcome(lambda: pystratum.label_matrix(array), cells, names)


@settings(max_examples=150)
@given(cell_tables([float("nan"), 0.5, float("inf"), float("-inf"), 1e300, 2.0, -0.0, 1e-300]),
       st.sampled_from(["float16", "float32", "float64"]))
def test_float_extremes_and_nan(cells, dtype):
    with np.errstate(over="ignore"):  # 1e300 is inf in float16/32: read what numpy holds
        array = np.array(cells, dtype=dtype)
    cells = array.tolist()
    names = [str(k) for k in range(array.shape[1])]
    assert_outcome(lambda: pystratum.label_matrix(array), cells, names)


@settings(max_examples=150)
@given(cell_tables(MISSING + BAD + ["1", "x", True, False, np.int64(1), np.float32(0)]),
       st.sampled_from(["object", "list", "tuple"]))
def test_python_values_in_object_arrays_and_row_lists(cells, container):
    names = [str(k) for k in range(len(cells[0]))]
    if container == "object":
        value = np.empty((len(cells), len(names)), dtype=object)
        for r, row in enumerate(cells):
            value[r, :] = row
    elif container == "list":
        value = [list(row) for row in cells]
    else:
        value = tuple(tuple(row) for row in cells)
    if container != "object" and not any(isinstance(v, str) or v is None or v is pd.NA
                                         for row in cells for v in row):
        # numpy reads a list of numbers as one numeric dtype; the reference reads the same
        cells = np.array(value).tolist()
    assert_outcome(lambda: pystratum.label_matrix(value), cells, names)


@settings(max_examples=150)
@given(cell_tables([2, -1, 0.5, float("nan"), None, pd.NA, "1", 1e300]),
       st.sampled_from(["frame", "nullable", "dict"]))
def test_dataframes_and_dicts(cells, form):
    names = [f"label {k}" for k in range(len(cells[0]))]
    columns = {name: [row[k] for row in cells] for k, name in enumerate(names)}
    if form == "nullable":
        def nullable(column):
            if any(isinstance(v, str) for v in column):
                return pd.array(column, dtype=object)
            if all(v is None or v is pd.NA or v in (0, 1, 2, -1) for v in column
                   if not (isinstance(v, float) and math.isnan(v))):
                return pd.array([pd.NA if v is None or (isinstance(v, float) and math.isnan(v))
                                 else v for v in column], dtype="Int64")
            return pd.array(column, dtype="Float64")
        frame = pd.DataFrame({name: nullable(column) for name, column in columns.items()})
        cells = [[None if v is pd.NA else v for v in row]
                 for row in frame.astype(object).itertuples(index=False)]
        value = frame
    elif form == "frame":
        value = pd.DataFrame(columns)
        cells = [[None if v is pd.NA else v for v in row]
                 for row in value.astype(object).itertuples(index=False)]
    else:
        value = {name: np.array(column, dtype=object) for name, column in columns.items()}
    assert_outcome(lambda: pystratum.label_matrix(value), cells, names)


@settings(max_examples=60)
@given(cell_tables([2, -1, 0.5, float("nan")]),
       st.sampled_from([torch.bool, torch.uint8, torch.int64, torch.float32, torch.bfloat16,
                        torch.float64]),
       st.booleans())
def test_torch_tensors(cells, dtype, sparse):
    tensor = torch.tensor(cells, dtype=torch.float64).to(dtype)
    if sparse:
        tensor = tensor.to_sparse()
    cells = tensor.to_dense().to(torch.float64).tolist() if dtype != torch.bool else \
        tensor.to_dense().tolist()
    names = [str(k) for k in range(len(cells[0]))]
    assert_outcome(lambda: pystratum.label_matrix(tensor), cells, names)


@settings(max_examples=100)
@given(cell_tables([2.0, -1.0, 0.5, float("nan"), float("inf")]),
       st.sampled_from(["csr", "csc", "coo", "lil", "dok", "csr_array"]),
       st.booleans())
def test_scipy_sparse(cells, form, explicit_zero):
    dense = np.array(cells, dtype=np.float64)
    matrix = sp.csr_array(dense) if form == "csr_array" else getattr(sp, f"{form}_matrix")(dense)
    if explicit_zero and form in ("csr", "csc", "csr_array"):
        matrix = matrix.copy()
        matrix.data[matrix.data == 1] = 1.0  # stored ones stay; add a stored zero below
        coo = sp.coo_matrix(matrix)
        data = np.append(coo.data, 0.0)
        matrix = sp.csr_matrix((data, (np.append(coo.row, 0), np.append(coo.col, 0))),
                               shape=dense.shape)
        matrix.sum_duplicates()
        cells = matrix.toarray().tolist()
    names = [str(k) for k in range(dense.shape[1])]
    assert_outcome(lambda: pystratum.label_matrix(matrix), cells, names)


def test_masked_entries_are_missing():
    array = np.ma.array([[0, 1], [1, 5]], mask=[[False, False], [False, True]])
    with pytest.raises(ValueError, match=r"missing value \(masked\) at row 1 \(0-based\) in "
                                         r"label '1'"):
        pystratum.label_matrix(array)
    assert pystratum.label_matrix(np.ma.array([[0, 1]], mask=False)).matrix.tolist() == [
        [False, True]]


@pytest.mark.parametrize("shape", [(0, 3), (0, 0), (4, 0)])
def test_empty_shapes(shape):
    words = "0 rows" if shape[0] == 0 else "0 columns"
    for value in (np.zeros(shape), pd.DataFrame(np.zeros(shape)), sp.csr_matrix(shape),
                  torch.zeros(shape)):
        with pytest.raises(ValueError, match=f"^labels has {words}"):
            pystratum.label_matrix(value)


@pytest.mark.parametrize("value", [np.array([0, 1, 1]), [0, 1, 1], torch.tensor([0, 1]),
                                   pd.Series([0, 1]), np.zeros((2, 2, 2))])
def test_not_two_dimensional(value):
    with pytest.raises(ValueError, match=r"^labels must be 2-D \(rows x labels\)"):
        pystratum.label_matrix(value)
    if getattr(value, "ndim", 1) == 1:
        with pytest.raises(ValueError, match=r"\(1-D\)\. For one label"):
            pystratum.label_matrix(value)


@pytest.mark.parametrize("value", [None, 1, "ab", b"x", {1, 0}, iter([[0, 1]]), 2.5])
def test_refused_types_name_the_argument(value):
    with pytest.raises(TypeError, match="^targets must be a label matrix"):
        pystratum.label_matrix(value, name="targets")


def test_other_dtypes_are_type_errors():
    for value in (np.array([["0", "1"]]), np.array([[1 + 0j, 0]]),
                  np.array([["2020-01-01"]], dtype="datetime64[D]")):
        with pytest.raises(TypeError, match="^labels must hold 0/1 numbers or booleans"):
            pystratum.label_matrix(value)


def test_duplicate_column_names_are_refused():
    frame = pd.DataFrame([[0, 1]], columns=["a", "a"])
    with pytest.raises(ValueError, match="two columns named 'a' \\(positions 0 and 1"):
        pystratum.label_matrix(frame)
    with pytest.raises(ValueError, match="names one label twice"):
        pystratum.label_matrix({1: [0], "1": [1]})


def test_a_label_matrix_passes_through_and_unpacks():
    result = pystratum.label_matrix([[1, 0], [0, 0]])
    assert pystratum.label_matrix(result) is result
    matrix, names = result
    assert names == ("0", "1") and matrix.tolist() == [[True, False], [False, False]]


# ---- label sets per row ---------------------------------------------------------------

LABELS = st.one_of(st.sampled_from(["a", "b", "B", "", "\u00e9", "z z"]), st.integers(-2, 12),
                   st.booleans())


@settings(max_examples=150)
@given(st.lists(st.lists(LABELS, max_size=4), min_size=1, max_size=8), st.booleans())
def test_label_sets_reference(rows, as_sets):
    from pystratum.strata._labels import label_key

    value = [set(row) if as_sets else row for row in rows]
    rows = [list(row) for row in value]  # a Python set already merged 0 and False
    found = {label for row in rows for label in row}
    texts = {}
    for label in found:
        texts.setdefault(label_key(label), []).append(label)
    if not found:
        with pytest.raises(ValueError, match="holds no label in any of its"):
            pystratum.label_matrix_from_sets(value)
        return
    spellings = {}
    for label in (x for row in rows for x in row):
        spellings.setdefault(label, set()).add(label_key(label))
    if any(len(group) > 1 for group in spellings.values()):  # 0 and False: equal, two texts
        with pytest.raises(ValueError, match="equal in Python but read"):
            pystratum.label_matrix_from_sets(value)
        return
    result = pystratum.label_matrix_from_sets(value)
    order = sorted(texts)
    assert result.labels == tuple(order)
    for r, row in enumerate(rows):
        assert result.matrix[r].tolist() == [any(label_key(x) == text for x in row)
                                             for text in order]


def test_label_sets_with_given_labels():
    result = pystratum.label_matrix_from_sets([["b"], [], ("c", "b")], labels=["c", "b", "x"])
    assert result.labels == ("c", "b", "x")
    assert result.matrix.tolist() == [[False, True, False], [False, False, False],
                                      [True, True, False]]
    with pytest.raises(ValueError, match=r"^label_sets has the label 'q' at row 1 \(0-based\), "
                                         r"which labels does not list"):
        pystratum.label_matrix_from_sets([["b"], ["z", "q"]], labels=["b"])
    with pytest.raises(ValueError, match="^labels holds two labels with the text '1'"):
        pystratum.label_matrix_from_sets([[1]], labels=[1, "1"])
    with pytest.raises(ValueError, match="^labels is empty"):
        pystratum.label_matrix_from_sets([[1]], labels=[])
    assert pystratum.label_matrix_from_sets(pd.Series([["a"], []])).matrix.tolist() == [[True],
                                                                                         [False]]


@pytest.mark.parametrize("rows,error,words", [
    ([], ValueError, "has 0 rows"),
    (["ab"], TypeError, r"got 'ab' at row 0 \(0-based\)\. Pass \['ab'\] for one label"),
    ([None], TypeError, r"Pass an empty set\(\) for a row without labels"),
    ([["a"], 3], TypeError, r"got 3 at row 1"),
    ([[["a"]]], TypeError, "unhashable label at row 0"),
    ([["a", None]], ValueError, r"missing label \(None\) at row 0"),
    ([[float("nan")]], ValueError, r"missing label \(NaN\) at row 0"),
    ([[1, "1"]], ValueError, "two labels with the text '1'"),
])
def test_label_sets_refused(rows, error, words):
    with pytest.raises(error, match=words):
        pystratum.label_matrix_from_sets(rows)


@pytest.mark.parametrize("value", [None, "abc", {"a": ["x"]}, iter([["a"]]), 3])
def test_label_sets_container_refused(value):
    with pytest.raises(TypeError, match="^label_sets must be a list with one set of labels"):
        pystratum.label_matrix_from_sets(value)


# Cells that slip: equal in Python but written apart (0, False, 0.0, -0.0), one text from two
# types (1, 1.0, "1"), missing ones, tuples (equal, written apart: (0,) and (False,)).
MIXED_LABELS = st.one_of(LABELS, st.sampled_from([0.0, -0.0, 1.0, 2.5, float("nan"), None, "1",
                                                  "0", (0,), (False,), "FALSE"]))


def rows_one_at_a_time(label_sets, labels=None):
    """label_matrix_from_sets with its one-pass path for plain rows switched off."""
    from pystratum.strata import _label_matrix

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(_label_matrix, "_matrix_of_plain_sets", lambda *args: None)
        return pystratum.label_matrix_from_sets(label_sets, labels)


def assert_as_row_by_row(label_sets, given_labels, **patches):
    """label_matrix_from_sets, with ``patches`` set on ``_label_matrix``, gives the row-by-row
    path's labels, matrix and dtype, or its refusal (same type, same message; then None)."""
    from pystratum.strata import _label_matrix

    try:
        expected = rows_one_at_a_time(label_sets, given_labels)
    except (TypeError, ValueError) as error:
        expected = error
    with pytest.MonkeyPatch.context() as patch:
        for name, value in patches.items():
            patch.setattr(_label_matrix, name, value)
        try:
            result = pystratum.label_matrix_from_sets(label_sets, given_labels)
        except (TypeError, ValueError) as error:
            assert type(error) is type(expected) and str(error) == str(expected)
            return None
    assert not isinstance(expected, Exception), expected
    assert result.labels == expected.labels
    assert result.matrix.dtype == expected.matrix.dtype
    assert np.array_equal(result.matrix, expected.matrix)
    return result


@settings(max_examples=200)
@given(rows=st.lists(st.tuples(st.lists(MIXED_LABELS, max_size=4),
                               st.sampled_from([list, tuple, set, frozenset])),
                     min_size=1, max_size=8),
       given_labels=st.one_of(st.none(), st.lists(MIXED_LABELS, max_size=6)))
def test_label_sets_in_one_pass_equal_the_row_by_row_path(rows, given_labels):
    label_sets = []
    for cells, kind in rows:
        try:
            label_sets.append(kind(cells))
        except TypeError:
            label_sets.append(list(cells))
    assert_as_row_by_row(label_sets, given_labels)


def test_label_sets_past_the_cell_limit_are_refused_as_row_by_row(monkeypatch):
    from pystratum.strata import _label_matrix

    monkeypatch.setattr(_label_matrix, "LABEL_CELLS_MAX", 8)
    # 3 rows x 4 labels = 12 cells; "a" twice in a row lists it once: 5 listed, limit 80.
    label_sets = [["a", "a", "b"], ["c"], ["d", "a"]]
    assert np.array_equal(pystratum.label_matrix_from_sets(label_sets).matrix,
                          rows_one_at_a_time(label_sets).matrix)
    monkeypatch.setattr(_label_matrix, "LABEL_GROWTH_MAX", 2)  # limit 10 < 12 cells
    with pytest.raises(ValueError) as expected:
        rows_one_at_a_time(label_sets)
    with pytest.raises(ValueError, match="listing 5 labels") as raised:
        pystratum.label_matrix_from_sets(label_sets)
    assert str(raised.value) == str(expected.value)


def test_labels_given_as_an_iterator_are_read_once():
    with pytest.raises(ValueError, match=r"the label 'q' at row 1 \(0-based\)"):
        pystratum.label_matrix_from_sets([["b"], ["q"]], labels=iter(["b"]))
    assert pystratum.label_matrix_from_sets([["b"], []], labels=iter(["b"])).matrix.tolist() == \
        [[True], [False]]


# Rows drawn from a small pool of objects, so that cells repeat objects and are read by
# identity (pointers hashed, then the distinct objects compared): equal texts held by
# different objects, str subclasses and every hostile cell above among them.
POOL_LABELS = st.one_of(MIXED_LABELS, st.sampled_from(["ab", "z z", "tag"]).map(equal_copy),
                        st.sampled_from(["ab", "a"]).map(Text))


@settings(max_examples=200)
@given(pool=st.one_of(st.lists(st.sampled_from(["ab", "z z", "tag"]).map(equal_copy),
                               min_size=1, max_size=5),
                      st.lists(POOL_LABELS, min_size=1, max_size=5)),
       rows=st.lists(st.tuples(st.lists(st.integers(0, 4), max_size=4),
                               st.sampled_from([list, tuple, set, frozenset])),
                     min_size=1, max_size=8),
       given_labels=st.one_of(st.none(), st.lists(POOL_LABELS, max_size=6)))
def test_label_sets_read_by_identity_equal_the_row_by_row_path(pool, rows, given_labels):
    label_sets = []
    for picks, kind in rows:
        cells = [pool[k % len(pool)] for k in picks]
        try:
            label_sets.append(kind(cells))
        except TypeError:
            label_sets.append(cells)
    # Always by identity.
    assert_as_row_by_row(label_sets, given_labels, objects_repeat=lambda ids: True)


def test_label_sets_repeating_a_few_objects_are_read_by_identity(monkeypatch):
    from pystratum.strata import _label_matrix

    names = ["tag0", "tag1", equal_copy("tag1"), 7, "x y"]
    picks = np.random.default_rng(8).random((20_000, len(names))) < 0.3
    label_sets = [[names[k] for k in np.flatnonzero(row)] for row in picks]
    served = []
    real = _label_matrix.objects_by_identity

    def counted(cells, **options):
        served.append(real(cells, **options))
        return served[-1]

    monkeypatch.setattr(_label_matrix, "objects_by_identity", counted)
    result = pystratum.label_matrix_from_sets(label_sets)
    expected = rows_one_at_a_time(label_sets)
    assert len(served) == 1 and served[0] is not None
    assert len(served[0][1]) == len(names)  # five objects, four labels: "tag1" twice
    assert result.labels == expected.labels == ("7", "tag0", "tag1", "x y")
    assert np.array_equal(result.matrix, expected.matrix)


def test_label_sets_of_fresh_objects_are_not_read_by_identity(monkeypatch):
    from pystratum.strata import _label_matrix

    # Each cell its own object (split text): the sample sees no repeats, no pointer is hashed.
    label_sets = [f"a;b{k % 3};c".split(";") for k in range(20_000)]
    monkeypatch.setattr(_label_matrix, "objects_by_identity", None)
    assert pystratum.label_matrix_from_sets(label_sets).labels == ("a", "b0", "b1", "b2", "c")


def test_labels_given_as_an_array_or_index_are_read_in_one_pass(monkeypatch):
    from pystratum.strata import _label_matrix

    label_sets = [["b", "a"], [], ["c"]] * 10
    expected = rows_one_at_a_time(label_sets, ["c", "a", "b"])
    real = _label_matrix._matrix_of_plain_sets
    served = []
    monkeypatch.setattr(_label_matrix, "_matrix_of_plain_sets",
                        lambda *args: served.append(real(*args)) or served[-1])
    for labels in (np.array(["c", "a", "b"], dtype=object), pd.Index(["c", "a", "b"]),
                   ("c", "a", "b"), iter(["c", "a", "b"])):
        served.clear()
        result = pystratum.label_matrix_from_sets(label_sets, labels)
        assert served[0] is not None, type(labels)  # the one-pass path, not row by row
        assert result.labels == expected.labels
        assert np.array_equal(result.matrix, expected.matrix)


class Colour(str, enum.Enum):
    """A str subclass pyarrow reads by its value ("red") while str() writes "Colour.RED"."""

    RED = "red"


# Cells pyarrow converts to text although they are no plain str (bytes and its kin, str
# subclasses, numpy text), or refuses (None, numbers, containers, a lone surrogate).
NOT_PLAIN_STR = st.sampled_from([b"ab", bytearray(b"red"), memoryview(b"tag"), np.str_("ab"),
                                 np.bytes_(b"ab"), Text("ab"), Colour.RED, "\ud800", None, 1,
                                 True, 2.5, float("nan"), ("ab",), "red"])
FRESH_TEXT = st.sampled_from(["ab", "z z", "red", "", "\u00e9", "Colour.RED"]).map(equal_copy)
MOSTLY_FRESH_TEXT = st.one_of(FRESH_TEXT, FRESH_TEXT, FRESH_TEXT, NOT_PLAIN_STR)


@settings(max_examples=300)
@given(rows=st.lists(st.tuples(st.lists(MOSTLY_FRESH_TEXT, max_size=4),
                               st.sampled_from([list, tuple, set, frozenset, np.array])),
                     min_size=1, max_size=8),
       odd_row=st.sampled_from([None, "ab", {"ab": 1}, [["ab"]], ()]),
       with_odd_row=st.booleans(),
       given_labels=st.one_of(st.none(), st.lists(st.one_of(FRESH_TEXT, NOT_PLAIN_STR),
                                                  max_size=6)))
def test_label_sets_read_by_pyarrow_equal_the_row_by_row_path(rows, odd_row, with_odd_row,
                                                              given_labels):
    """Fresh str cells go through pyarrow (taken at any size here); anything else pyarrow
    would read as text or refuse falls back, with the row-by-row path's matrix, labels,
    label order and refusals."""
    from pystratum.strata import _label_matrix

    label_sets = []
    for cells, kind in rows:
        try:
            label_sets.append(kind(cells) if kind is not np.array else np.array(cells,
                                                                                 dtype=object))
        except TypeError:
            label_sets.append(list(cells))
    if with_odd_row:
        label_sets.append(odd_row)
    served = []
    real = _label_matrix._str_cells_by_arrow
    # pyarrow at any size, never by identity.
    if assert_as_row_by_row(
            label_sets, given_labels, _ARROW_MIN_ROWS=0, objects_repeat=lambda ids: False,
            _str_cells_by_arrow=lambda rows: served.append(real(rows)) or served[-1]) is None:
        return
    plain = all(type(entry) in (list, tuple, set) for entry in label_sets) and \
        {type(cell) for entry in label_sets for cell in entry} == {str} and \
        "\ud800" not in {cell for entry in label_sets for cell in entry}
    assert served == [] if not all(type(entry) in (list, tuple, set, frozenset)
                                   for entry in label_sets) else len(served) == 1
    if served:
        assert (served[0] is not None) == (plain and not any(type(entry) is frozenset
                                                             for entry in label_sets))


ROW_TYPES = st.sampled_from([list, tuple, set])


@settings(max_examples=300)
@given(rows=st.lists(st.tuples(st.lists(MOSTLY_FRESH_TEXT, max_size=4), ROW_TYPES),
                     min_size=1, max_size=8),
       given_labels=st.one_of(st.none(), st.lists(st.one_of(FRESH_TEXT, NOT_PLAIN_STR),
                                                  max_size=6)))
def test_label_lists_read_by_the_compiled_reader_equal_the_row_by_row_path(rows, given_labels):
    """Lists and tuples of exact str cells are read from the objects by
    ``kernels._pyobjects`` (taken at any size here); anything else falls back, with the
    row-by-row path's matrix, labels, label order and refusals."""
    from pystratum import kernels as kernel_gate
    from pystratum.kernels import _pyobjects

    label_sets = []
    for cells, kind in rows:
        try:
            label_sets.append(kind(cells))
        except TypeError:  # unhashable in a set
            label_sets.append(list(cells))
    served = []
    real = _pyobjects.list_str_codes
    with pytest.MonkeyPatch.context() as patch:
        assert kernel_gate.compiled("pyobjects") is _pyobjects
        patch.setattr(kernel_gate, "MIN_ROWS", 1)
        patch.setattr(_pyobjects, "list_str_codes",
                      lambda rows: served.append(real(rows)) or served[-1])
        assert_as_row_by_row(label_sets, given_labels)
    plain = all(type(entry) in (list, tuple) for entry in label_sets) and \
        all(type(cell) is str for entry in label_sets for cell in entry)
    assert len(served) == 1 and (served[0] is not None) == plain


def test_label_sets_of_fresh_str_are_read_by_pyarrow(monkeypatch):
    from pystratum.strata import _label_matrix

    # Split text: a fresh str object per cell, as str.split or a JSON reader gives them.
    label_sets = [f"tag{k % 7};x;tag{k % 3}".split(";") for k in range(40_000)]
    served = []
    real = _label_matrix._str_cells_by_arrow
    monkeypatch.setattr(_label_matrix, "_str_cells_by_arrow",
                        lambda rows: served.append(real(rows)) or served[-1])
    result = pystratum.label_matrix_from_sets(label_sets)
    expected = rows_one_at_a_time(label_sets)
    assert len(served) == 1 and served[0] is not None
    assert result.labels == expected.labels == ("tag0", "tag1", "tag2", "tag3", "tag4", "tag5",
                                                "tag6", "x")
    assert np.array_equal(result.matrix, expected.matrix)
    # One cell pyarrow would read as the text "x" (bytes, an Enum by value): today's path.
    for odd in (b"x", Colour.RED):
        label_sets[-1] = label_sets[-1] + [odd]
        served.clear()
        result = pystratum.label_matrix_from_sets(label_sets)
        expected = rows_one_at_a_time(label_sets)
        assert served == [None]
        assert result.labels == expected.labels and str(odd) in result.labels
        assert np.array_equal(result.matrix, expected.matrix)
