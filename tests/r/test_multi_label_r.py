"""MultiLabel in R (live, through rpy2): the same batches and label counts as the core."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from _r_helpers import r_function, r_session  # noqa: F401 (fixture)
from pystratum import plan_batches
from pystratum.policies import (LabelShortfallWarning, MultiLabel, MultiLabelShortfallError,
                                SingleBatchError)

R_CALL = """function(values, n_rows, batch_size, num_batches, m, strict, seed, epoch, shuffle,
                    batch_order) {
  labels = matrix(as.integer(values), nrow = n_rows, byrow = TRUE)
  if (batch_size == 0) batch_size = NULL
  if (num_batches == 0) num_batches = NULL
  policy = pystratum::policy_multi_label(batch_size, num_batches, min_per_label = m,
    strict = strict, batch_order = if (nzchar(batch_order)) batch_order else NULL)
  warned = FALSE
  out = tryCatch(withCallingHandlers(pystratum::stratified_batches(labels, policy,
    seed = if (shuffle) seed else NULL, epoch = epoch, shuffle = shuffle),
    pystratum_label_shortfall_warning = function(w) {
      warned <<- TRUE
      invokeRestart("muffleWarning")
    }),
    pystratum_error = function(e) list(error = class(e)[[1L]], argument = e$argument))
  if (!is.null(out$error)) return(out)
  list(batches = lapply(out, as.integer), counts = as.integer(t(attr(out, "label_counts"))),
    warned = warned)
}"""


def r_plan(session, labels, batch_size, num_batches, m, strict, seed, epoch, shuffle,
           batch_order=None):
    call = r_function(session, R_CALL)
    with session.calling():
        out = call(session.ro.IntVector(labels.astype(int).ravel().tolist()), labels.shape[0],
                   batch_size or 0, num_batches or 0, m, strict, seed, epoch, shuffle,
                   batch_order or "")
        names = list(out.names)
        if "error" in names:
            return {"error": out.rx2("error")[0], "argument": out.rx2("argument")[0]}
        return {"batches": [list(batch) for batch in out.rx2("batches")],
                "counts": list(out.rx2("counts")), "warned": bool(out.rx2("warned")[0])}


def correlated(n_rows, n_labels, seed):
    rng = np.random.default_rng(seed)
    latent = rng.standard_normal((n_rows, 2))
    shares = rng.uniform(0.02, 0.5, n_labels)
    score = latent @ rng.standard_normal((2, n_labels)) + rng.standard_normal(
        (n_rows, n_labels)) * 0.7
    cuts = np.array([np.quantile(score[:, k], 1 - shares[k]) for k in range(n_labels)])
    return score > cuts


@settings(max_examples=40, deadline=None)
@given(n_rows=st.integers(1, 120), n_labels=st.integers(1, 7), data_seed=st.integers(0, 999),
       size=st.integers(1, 40), by_count=st.booleans(), m=st.integers(1, 3),
       strict=st.booleans(), seed=st.integers(-2**31 + 1, 2**31 - 1), epoch=st.integers(0, 3),
       shuffle=st.booleans(), batch_order=st.sampled_from([None, "split_safe", "assembled"]))
def test_r_gives_the_core_batches_plus_one(r_session, n_rows, n_labels, data_seed, size,
                                           by_count, m, strict, seed, epoch, shuffle,
                                           batch_order):
    labels = correlated(n_rows, n_labels, data_seed)
    batch_size, num_batches = (None, size) if by_count else (size, None)
    if not shuffle:
        epoch = 0
    expected = r_plan(r_session, labels, batch_size, num_batches, m, strict, seed, epoch,
                      shuffle, batch_order)
    policy = MultiLabel(batch_size, num_batches=num_batches, min_per_label=m, strict=strict,
                        batch_order=batch_order)
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always", LabelShortfallWarning)
            plan = plan_batches(labels, policy, seed=seed if shuffle else None, rng="R",
                                epoch=epoch, shuffle=shuffle)
    except SingleBatchError as error:  # both languages refuse a one-batch plan alike
        assert expected == {"error": "pystratum_single_batch", "argument": "policy"}
        assert str(error).startswith("policy=")
        return
    except MultiLabelShortfallError as error:
        assert expected == {"error": "pystratum_label_shortfall", "argument": "min_per_label"}
        assert str(error).startswith("min_per_label=")
        return
    except ValueError as error:
        assert expected["error"] == "pystratum_value_error"
        assert str(error).startswith(expected["argument"])
        return
    assert "error" not in expected, expected
    assert expected["batches"] == [(batch + 1).tolist() for batch in plan.batches]
    assert expected["counts"] == plan.counts.ravel().tolist()
    # A shortfall warns in both languages alike (strict=False).
    assert expected["warned"] == any(issubclass(w.category, LabelShortfallWarning)
                                     for w in caught)


def test_r_strict_message_is_python_s(r_session):
    labels = np.array([[1, 1, 0], [0, 1, 1], [1, 0, 1]])
    call = r_function(r_session, """function(values) {
      labels = matrix(as.integer(values), 3, byrow = TRUE)
      tryCatch(pystratum::stratified_batches(labels,
        pystratum::policy_multi_label(num_batches = 2, strict = TRUE), seed = 1),
        pystratum_error = conditionMessage)
    }""")
    with r_session.calling():
        message = call(r_session.ro.IntVector(labels.ravel().tolist()))[0]
    with pytest.raises(MultiLabelShortfallError) as error:
        plan_batches(labels, MultiLabel(num_batches=2, strict=True), seed=1, rng="R")
    # Unnamed columns are "0".."L-1" in both languages (one reader, label_matrix()).
    assert message == str(error.value)


def test_r_shortfall_warning_is_python_s(r_session):
    labels = np.array([[1, 1, 0], [0, 1, 1], [1, 0, 1]])
    call = r_function(r_session, """function(values) {
      labels = matrix(as.integer(values), 3, byrow = TRUE)
      tryCatch(pystratum::stratified_batches(labels,
        pystratum::policy_multi_label(num_batches = 2), seed = 1),
        pystratum_label_shortfall_warning = conditionMessage)
    }""")
    with r_session.calling():
        message = call(r_session.ro.IntVector(labels.ravel().tolist()))[0]
    with pytest.warns(LabelShortfallWarning) as caught:
        plan_batches(labels, MultiLabel(num_batches=2), seed=1, rng="R")
    # Label names differ by convention (R numbers columns from 1, Python from 0).
    assert message.replace("'2'", "'1'") == str(caught[0].message)


def test_the_bindings_pass_a_label_matrix_and_the_policy(r_session):
    import pystratum.r as pr

    labels = correlated(60, 4, 0)
    served = pr.stratified_batches(labels.astype(int), MultiLabel(batch_size=10), seed=3,
                                   rng="R")
    plan = plan_batches(labels, MultiLabel(batch_size=10), seed=3, rng="R")
    assert [np.asarray(batch).tolist() for batch in served] == \
        [batch.tolist() for batch in plan.batches]


@pytest.mark.parametrize("params, r_policy", [
    ({"num_batches": 1}, "policy_multi_label(batch_size = NULL, num_batches = 1, "
                         "min_per_label = 1, strict = FALSE)"),
    ({"batch_size": 40}, "policy_multi_label(batch_size = 40, num_batches = NULL, "
                         "min_per_label = 1, strict = FALSE)"),
])
def test_r_refuses_a_single_batch_with_python_s_message(r_session, params, r_policy):
    import pandas as pd

    import pystratum.r as pr

    labels = pd.DataFrame(correlated(30, 4, 1).astype(int), columns=["a", "b", "c", "d"])
    policy = MultiLabel(**params)
    with pytest.raises(SingleBatchError) as in_python:
        plan_batches(labels, policy, seed=1, rng="R")
    with pytest.raises(SingleBatchError) as in_r:
        pr.stratified_batches(labels, policy, seed=1, rng="R")
    assert "pystratum_single_batch" in in_r.value.r_classes
    expected = str(in_python.value).replace(repr(policy), r_policy).replace(
        "allow_single_batch=True", "allow_single_batch = TRUE")
    assert str(in_r.value) == expected
    assert "30 rows of the label matrix (4 labels)" in expected
    # Allowed, both languages give the same single batch.
    mine = plan_batches(labels, policy, seed=1, rng="R", allow_single_batch=True).batches
    theirs = pr.stratified_batches(labels, policy, seed=1, rng="R", allow_single_batch=True)
    assert [np.asarray(b).tolist() for b in theirs] == [b.tolist() for b in mine]


@pytest.mark.parametrize("shape", ["all ones", "one label a row", "sparse", "rarer covers"])
def test_many_labels_over_few_rows_give_the_core_batches(r_session, shape):
    """10 rows x 3,000 labels: R walks only the steps that place rows (as the core) and
    counts the other labels at once; the same batches and label counts."""
    rng = np.random.default_rng(3)
    labels = {"all ones": np.ones((10, 3000), dtype=bool),
              "one label a row": np.eye(10, 3000, dtype=bool),
              "sparse": rng.random((10, 3000)) < 0.002,
              # Column 0 on every row is the rarest-first step for no row: it is covered.
              "rarer covers": np.c_[np.ones((10, 1), dtype=bool), np.eye(10, 2999, dtype=bool)]
              }[shape]
    for seed, epoch in ((1, 0), (8, 3)):
        expected = r_plan(r_session, labels, 5, None, 1, False, seed, epoch, True)
        plan = plan_batches(labels, MultiLabel(5), seed=seed, rng="R", epoch=epoch)
        assert expected["batches"] == [(batch + 1).tolist() for batch in plan.batches]
        assert expected["counts"] == plan.counts.ravel().tolist()
