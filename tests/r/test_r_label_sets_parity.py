"""R label sets and sizes refuse what Python refuses, in the same words (live, through rpy2).

``label_matrix_from_sets`` compares labels as Python does: ``1`` and ``"1"``
(``TRUE`` and ``"TRUE"``) are two labels with one text, ``TRUE`` and ``1`` one
label spelled two ways; both are refused in both languages. Label matrices are
sized before allocation with the same rule and words, ``ClassesPerBatch``'s
sizes have the same upper bound, and the MultiLabel repair stops past the
same budget of work. A hostile property suite draws label sets of every kind R
can hold and counts what both languages do with them.
"""

from __future__ import annotations

import collections
import re

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import pystratum
from pystratum import plan_batches
from pystratum.policies import ClassesPerBatch, MultiLabel
from pystratum.policies import _multi_label
from pystratum.r._conditions import raise_r_conditions
from pystratum.r._rvalues import field
from _r_helpers import r_session  # noqa: F401 (fixture)

ESCAPES = (OverflowError, IndexError, MemoryError, KeyError, RecursionError, AttributeError)
TALLY = collections.Counter()


def _outcome(call):
    try:
        return ("ok", call())
    except (TypeError, ValueError) as error:
        return (type(error).__name__, error)


def _r_call(session, code, *args):
    run = session.bridge("bridge_call_capturing")
    with session.calling():
        outcome = run(session.ro.r(code), session.ro.r("list")(*args))
        raise_r_conditions(outcome, stacklevel=1)
        return field(outcome, "value")


def _zero_based(message: str) -> str:
    return re.sub(r"at row (\d+) \(1-based\)",
                  lambda m: f"at row {int(m.group(1)) - 1} (0-based)", message)


def _r_row(session, row):
    """One Python row of one kind as R's atomic vector of that kind."""
    ro = session.ro
    if all(isinstance(label, bool) for label in row):
        return ro.BoolVector(row) if row else ro.StrVector([])
    if all(isinstance(label, int) and not isinstance(label, bool) for label in row):
        return ro.IntVector(row)
    if all(isinstance(label, float) for label in row):
        return ro.FloatVector(row)
    return ro.StrVector(row)


def _compare(session, sets, labels=None):
    python = _outcome(lambda: pystratum.label_matrix_from_sets(sets, labels))
    with session.calling():
        r_sets = session.ro.r("list")(*[_r_row(session, row) for row in sets])
        r_labels = session.ro.NULL if labels is None else session.ro.StrVector(labels)
    r = _outcome(lambda: _r_call(session, "pystratum::label_matrix_from_sets", r_sets, r_labels))
    assert python[0] == r[0], (sets, python, r)
    if python[0] == "ok":
        with session.calling():
            names = tuple(session.ro.r("colnames")(r[1]))
            values = np.asarray(session.ro.r("as.vector")(r[1]), dtype=bool)
        assert python[1].labels == names
        np.testing.assert_array_equal(python[1].matrix,
                                      values.reshape(len(sets), -1, order="F"))
    else:
        assert str(python[1]) == _zero_based(str(r[1])), (sets, python, r)
        assert r[1].argument in ("label_sets", "labels")
    return python[0]


@pytest.mark.parametrize("sets, message", [
    ([[1], ["1"]], "label_sets holds two labels with the text '1'"),
    ([["1"], [1]], "label_sets holds two labels with the text '1'"),
    ([[True], ["TRUE"]], "label_sets holds two labels with the text 'TRUE'"),
    ([[1.5], ["a"], ["1.5"]], "label_sets holds two labels with the text '1.5'"),
    ([[True], [1]], "label_sets holds labels that are equal in Python but read 'TRUE' and '1'"),
    ([[0], [False]], "label_sets holds labels that are equal in Python but read '0' and 'FALSE'"),
    ([[True], ["1"], [1]], "read 'TRUE' and '1'"),
])
def test_r_refuses_label_sets_python_refuses_in_the_same_words(r_session, sets, message):
    assert _compare(r_session, sets) == "ValueError"
    with pytest.raises(ValueError, match=re.escape(message)):
        pystratum.label_matrix_from_sets(sets)


@pytest.mark.parametrize("sets, labels", [
    ([[1], [2]], ["1", "2"]),        # numbers are not the texts "1", "2"
    ([["1"], ["2"]], ["1", "2"]),
    ([[True], []], ["TRUE"]),        # TRUE is not the text "TRUE"
])
def test_given_labels_match_the_sets_by_value_as_in_python(r_session, sets, labels):
    _compare(r_session, sets, labels)


def test_equal_labels_in_one_spelling_stay_one_label(r_session):
    assert _compare(r_session, [[1], [1.0], [2]]) == "ok"
    assert _compare(r_session, [[True], [False, True], []]) == "ok"


def test_label_sets_are_sized_before_allocation_in_the_same_words(r_session):
    sets = [[f"id{k}"] for k in range(20_000)]
    assert _compare(r_session, sets) == "ValueError"


def test_classes_per_batch_sizes_have_the_same_upper_bound(r_session):
    for args in ([2**53 + 2, 1], [1, 2**53 + 2]):
        python = _outcome(lambda: ClassesPerBatch(*args))
        with r_session.calling():
            r_args = [r_session.ro.FloatVector([float(value)]) for value in args]
        r = _outcome(lambda: _r_call(r_session, "pystratum::policy_classes_per_batch", *r_args))
        assert python[0] == r[0] == "ValueError"
        name = "classes_per_batch" if args[0] > 1 else "per_class"
        assert str(python[1]).startswith(name) and r[1].argument == name
    with r_session.calling():
        r_args = [r_session.ro.FloatVector([2.0]), r_session.ro.FloatVector([1.0]),
                  r_session.ro.StrVector(["uniform"]), r_session.ro.StrVector(["error"]),
                  r_session.ro.FloatVector([2.0**53 + 2])]
    r = _outcome(lambda: _r_call(r_session, "pystratum::policy_classes_per_batch", *r_args))
    python = _outcome(lambda: ClassesPerBatch(2, 1, classes="uniform", num_batches=2**53 + 2))
    assert python[0] == r[0] == "ValueError" and r[1].argument == "num_batches"


def test_the_repair_budget_refuses_alike_in_both_languages(r_session, monkeypatch):
    budget = 40_000
    monkeypatch.setattr(_multi_label, "REPAIR_WORK_MAX", budget)
    labels = np.random.default_rng(0).random((10, 300)) < 0.3
    with pytest.raises(ValueError) as python:
        plan_batches(labels, MultiLabel(batch_size=5), seed=1, rng="R")
    code = f"""function(values) {{
      ns = asNamespace("pystratum")
      old = get("REPAIR_WORK_MAX", ns)
      unlockBinding("REPAIR_WORK_MAX", ns)
      assign("REPAIR_WORK_MAX", {budget}, envir = ns)
      on.exit({{assign("REPAIR_WORK_MAX", old, envir = ns); lockBinding("REPAIR_WORK_MAX", ns)}})
      labels = matrix(as.integer(values), nrow = 10, byrow = TRUE)
      pystratum::stratified_batches(labels, pystratum::policy_multi_label(5), seed = 1)
    }}"""
    with r_session.calling():
        values = r_session.ro.IntVector(labels.astype(int).ravel().tolist())
    with pytest.raises(ValueError) as r:
        _r_call(r_session, code, values)
    assert r.value.argument == "strata"
    assert str(python.value) == str(r.value)
    assert str(python.value).startswith("strata has 300 labels in 2 batches: MultiLabel's repair")


KINDS = {
    "int": st.lists(st.sampled_from([0, 1, 2, -1, 10]), max_size=3),
    "float": st.lists(st.sampled_from([0.0, 1.0, 1.5, 2.0, -1.0, 1e-3]), max_size=3),
    "bool": st.lists(st.booleans(), max_size=2),
    "text": st.lists(st.sampled_from(["1", "0", "TRUE", "FALSE", "1.5", "a", "b", "-1", "",
                                      "\u00e9", "2"]), max_size=3),
}
hostile_rows = st.sampled_from(sorted(KINDS)).flatmap(lambda kind: KINDS[kind])


@settings(max_examples=150)
@given(sets=st.lists(hostile_rows, min_size=1, max_size=6),
       labels=st.one_of(st.none(), st.lists(st.sampled_from(["1", "0", "a", "TRUE", "2"]),
                                            min_size=1, max_size=3, unique=True)))
def test_hostile_label_sets_both_languages_agree(r_session, sets, labels):
    try:
        outcome = _compare(r_session, sets, labels if labels is None else list(labels))
    except ESCAPES as error:  # pragma: no cover - the failure this suite looks for
        pytest.fail(f"{type(error).__name__} escaped for {sets!r}: {error}")
    TALLY[outcome] += 1


def test_hostile_label_sets_tally():
    """Runs after the suite (file order): every input tried ended in a result or a refusal."""
    print(f"\nR label sets, hostile inputs: {sum(TALLY.values())} tried, {dict(TALLY)}")
    assert sum(TALLY.values()) >= 100
