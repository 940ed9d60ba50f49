"""Label matrices in both languages: the same matrix and names, or the same error in the same words.

Hypothesis draws 0/1 matrices with hostile cells (NaN, 2, -1, 0.5, +-inf,
1e300, 1e14) at random places; each goes to ``pystratum.label_matrix`` and,
as a double matrix and as a data.frame, to R's ``label_matrix()``. Both
accept with the same cells and names, or both refuse with the same class,
the same argument and the same message once R's 1-based row is written
0-based. ``label_matrix_from_sets`` is compared the same way.
"""

from __future__ import annotations

import re

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import pystratum
from pystratum.r._conditions import raise_r_conditions
from pystratum.r._rvalues import field
from _r_helpers import r_session  # noqa: F401 (fixture)

HOSTILE = [float("nan"), 2.0, -1.0, 0.5, float("inf"), float("-inf"), 1e300, 1e14, 3.0]


def _call_r(session, function, *args):
    """``pystratum::<function>(args)``: the value, or R's condition as the bindings raise it."""
    run = session.bridge("bridge_call_capturing")
    ro = session.ro
    with session.calling():
        outcome = run(ro.r(f"pystratum::{function}"), ro.r("list")(*args))
        raise_r_conditions(outcome, stacklevel=1)
        return field(outcome, "value")


def _r_matrix(session, array, names=None):
    ro = session.ro
    with session.calling():
        matrix = ro.r.matrix(ro.FloatVector(array.ravel(order="F")), nrow=array.shape[0])
        if names is not None:
            matrix = ro.r("function(m, n) { colnames(m) = n; m }")(matrix, ro.StrVector(names))
        return matrix


def _r_frame(session, array, names):
    ro = session.ro
    with session.calling():
        columns = {name: ro.FloatVector(array[:, k]) for k, name in enumerate(names)}
        return ro.r("function(...) data.frame(..., check.names = FALSE)")(**columns)


def _zero_based(message: str) -> str:
    """R's message with its 1-based row written 0-based, and R's spelling of the same fix."""
    return re.sub(r"at row (\d+) \(1-based\)",
                  lambda m: f"at row {int(m.group(1)) - 1} (0-based)", message)


def _outcome(call):
    try:
        return ("ok", call())
    except (TypeError, ValueError) as error:
        return (type(error).__name__, error)


def _r_value(session, value):
    with session.calling():
        as_list = session.ro.r("function(m) list(values = as.vector(m), "
                               "names = as.character(colnames(m)), nrow = nrow(m))")(value)
        values = np.asarray(as_list.rx2("values"), dtype=bool)
        nrow = int(as_list.rx2("nrow")[0])
        names = tuple(as_list.rx2("names"))
    return values.reshape(nrow, -1, order="F"), names


@st.composite
def hostile_matrices(draw):
    rows = draw(st.integers(1, 6))
    cols = draw(st.integers(1, 4))
    array = np.array(draw(st.lists(st.sampled_from([0.0, 1.0]), min_size=rows * cols,
                                   max_size=rows * cols)), dtype=np.float64).reshape(rows, cols)
    for _ in range(draw(st.integers(0, 3))):
        array[draw(st.integers(0, rows - 1)), draw(st.integers(0, cols - 1))] = draw(
            st.sampled_from(HOSTILE))
    named = draw(st.booleans())
    names = [f"l{k}" for k in range(cols)] if named else None
    return array, names


@settings(max_examples=60)
@given(hostile_matrices(), st.booleans())
def test_python_and_r_read_the_same_matrices_and_refuse_the_same_cells(r_session, case, frame):
    array, names = case
    if frame:
        names = names or [str(k) for k in range(array.shape[1])]
        import pandas as pd

        python = _outcome(lambda: pystratum.label_matrix(pd.DataFrame(array, columns=names)))
        r_input = _r_frame(r_session, array, names)
    else:
        python = _outcome(lambda: pystratum.label_matrix(array) if names is None else
                          pystratum.label_matrix(dict(zip(names, array.T))))
        r_input = _r_matrix(r_session, array, names)
    r = _outcome(lambda: _call_r(r_session, "label_matrix", r_input))
    assert python[0] == r[0], (python, r)
    if python[0] == "ok":
        matrix, r_names = _r_value(r_session, r[1])
        np.testing.assert_array_equal(python[1].matrix, matrix)
        assert python[1].labels == r_names
    else:
        assert r[1].argument == "labels"
        assert str(python[1]) == _zero_based(str(r[1]))


def test_shape_errors_match(r_session):
    empty = np.zeros((0, 2))
    python = _outcome(lambda: pystratum.label_matrix(empty))
    r = _outcome(lambda: _call_r(r_session, "label_matrix", _r_matrix(r_session, empty)))
    assert python[0] == r[0] == "ValueError" and str(python[1]) == str(r[1])
    python = _outcome(lambda: pystratum.label_matrix(np.array([0.0, 1.0])))
    with r_session.calling():
        vector = r_session.ro.FloatVector([0.0, 1.0])
    r = _outcome(lambda: _call_r(r_session, "label_matrix", vector))
    assert python[0] == r[0] == "ValueError"
    assert str(python[1]).startswith("labels must be 2-D (rows x labels), got ")
    assert str(r[1]).startswith("labels must be 2-D (rows x labels), got ")
    assert "(1-D)" in str(python[1]) and "(1-D)" in str(r[1])


@settings(max_examples=40)
@given(st.lists(st.lists(st.sampled_from(["a", "b", "B", "c d", "\u00e9", "z", "10", "9"]),
                         max_size=4), min_size=1, max_size=6),
       st.one_of(st.none(), st.lists(st.sampled_from(["a", "b", "z", "9"]), min_size=1,
                                     max_size=4, unique=True)))
def test_label_sets_give_the_same_matrix_names_and_errors(r_session, sets, labels):
    python = _outcome(lambda: pystratum.label_matrix_from_sets(sets, labels))
    ro = r_session.ro
    with r_session.calling():
        r_sets = ro.r("list")(*[ro.StrVector(row) for row in sets])
        r_labels = ro.NULL if labels is None else ro.StrVector(labels)
    r = _outcome(lambda: _call_r(r_session, "label_matrix_from_sets", r_sets, r_labels))
    assert python[0] == r[0], (python, r)
    if python[0] == "ok":
        matrix, names = _r_value(r_session, r[1])
        np.testing.assert_array_equal(python[1].matrix, matrix)
        assert python[1].labels == names
    else:
        assert str(python[1]) == _zero_based(str(r[1]))
        assert r[1].argument == "label_sets"


@pytest.mark.parametrize("python_call,r_code", [
    (lambda: pystratum.label_matrix_from_sets([[], []]),
     "pystratum::label_matrix_from_sets(list(character(0), character(0)))"),
    (lambda: pystratum.label_matrix_from_sets([["a"]], ["a", "a"]),
     "pystratum::label_matrix_from_sets(list('a'), c('a', 'a'))"),
])
def test_label_set_argument_errors_match(r_session, python_call, r_code):
    python = _outcome(python_call)
    with r_session.calling():
        function = r_session.ro.r(f"function() {r_code}")
    r = _outcome(lambda: _call_r_function(r_session, function))
    assert python[0] == r[0] == "ValueError"
    assert str(python[1]) == str(r[1])


def test_a_missing_row_is_refused_in_both_languages(r_session):
    python = _outcome(lambda: pystratum.label_matrix_from_sets([["a"], None]))
    with r_session.calling():
        function = r_session.ro.r("function() pystratum::label_matrix_from_sets(list('a', NULL))")
    r = _outcome(lambda: _call_r_function(r_session, function))
    assert python[0] == r[0] == "TypeError"
    assert "at row 1 (0-based)" in str(python[1]) and "at row 2 (1-based)" in str(r[1])
    assert "row without labels" in str(python[1]) and "row without labels" in str(r[1])


def _call_r_function(session, function):
    run = session.bridge("bridge_call_capturing")
    with session.calling():
        outcome = run(function, session.ro.r("list()"))
        raise_r_conditions(outcome, stacklevel=1)
        return field(outcome, "value")
