"""Label matrices are sized before they are allocated, and wide ones plan in numpy steps.

A compact input (scipy.sparse, a sparse tensor, label sets) may grow into a
dense matrix of at most ``max(2**28, 16 x the labels it lists)`` cells;
beyond, a ValueError names the argument and the GiB estimate before any
allocation. ``MultiLabel`` walks only the steps that place rows (at most
``min(N, L)``), so 10 rows x 10**6 labels are planned in numpy passes, and
its repair step stops with a ValueError past a counted budget of work.
"""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

import pystratum
from pystratum import plan_batches
from pystratum.policies import MultiLabel
from pystratum.policies import _multi_label

GIB = r"about [0-9.,]+ GiB at one byte a cell"


def test_sparse_identity_of_10_5_is_refused_with_the_gib_estimate():
    with pytest.raises(ValueError, match=r"^labels makes a label matrix of 100,000 rows x "
                                         r"100,000 labels from a sparse matrix listing 100,000 "
                                         r"labels: 10,000,000,000 cells, about 9.3 GiB"):
        pystratum.label_matrix(sp.eye(10**5, format="csr"))


@pytest.mark.parametrize("fmt", ["coo", "csr", "csc", "dok", "lil"])
def test_every_sparse_format_is_sized_first(fmt):
    with pytest.raises(ValueError, match=GIB):
        pystratum.label_matrix(sp.eye(20_000, format=fmt))


def test_a_sparse_tensor_is_sized_before_it_is_made_dense():
    n = 20_000
    index = torch.arange(n).repeat(2, 1)
    tensor = torch.sparse_coo_tensor(index, torch.ones(n, dtype=torch.int8), (n, n),
                                     check_invariants=True)
    with pytest.raises(ValueError, match=r"^labels makes a label matrix .* from a sparse "
                                         r"tensor listing 20,000 labels"):
        pystratum.label_matrix(tensor)


def test_distinct_label_sets_are_sized_before_the_matrix():
    rows = [[f"id{k}"] for k in range(20_000)]
    with pytest.raises(ValueError, match=r"^label_sets makes a label matrix of 20,000 rows x "
                                         r"20,000 labels from label sets listing 20,000 labels: "
                                         r"400,000,000 cells, about 0.4 GiB"):
        pystratum.label_matrix_from_sets(rows)


@pytest.mark.parametrize("listed, accepted", [(400, True), (399, False)])
def test_the_limit_is_16_times_the_listed_labels_at_the_boundary(monkeypatch, listed, accepted):
    from pystratum.strata import _label_matrix

    monkeypatch.setattr(_label_matrix, "LABEL_CELLS_MAX", 100)
    cells = np.zeros(100 * 64, dtype=np.int8)
    cells[:listed] = 1  # 100 x 64 = 6,400 cells = 16 x 400
    matrix = sp.csr_matrix(cells.reshape(100, 64))
    if accepted:
        assert pystratum.label_matrix(matrix).matrix.sum() == listed
    else:
        with pytest.raises(ValueError, match=r"at most max\(2\*\*28, 16 x the labels listed\) "
                                             r"= 6,384 cells"):
            pystratum.label_matrix(matrix)


def test_ten_rows_by_a_million_labels_walk_only_the_placing_steps(monkeypatch):
    walked = []  # one label test per step walked (the per-label Python loop of old)
    real = _multi_label._has
    monkeypatch.setattr(_multi_label, "_has", lambda *args: walked.append(1) or real(*args))
    labels = np.ones((10, 10**6), dtype=bool)
    labels[:, ::7] = False
    plan = plan_batches(labels, MultiLabel(batch_size=5), seed=1)
    assert len(walked) <= 10  # at most min(N, L) steps place rows
    assert plan.num_batches == 2 and plan.counts.shape == (2, 10**6)
    assert (plan.counts.sum(axis=0) == labels.sum(axis=0)).all()


@settings(max_examples=60)
@given(n_rows=st.integers(1, 40), n_labels=st.integers(1, 40), density=st.floats(0, 1),
       seed=st.integers(0, 2**31 - 2), batches=st.integers(1, 8), m=st.integers(1, 2))
def test_the_wide_numpy_path_gives_the_same_assignment(n_rows, n_labels, density, seed,
                                                       batches, m):
    rng = np.random.default_rng(seed)
    labels = rng.random((n_rows, n_labels)) < density
    batches = min(batches, n_rows)
    permutation, ties = rng.permutation(n_rows), rng.permutation(batches)
    narrow = _multi_label.assign_batches(labels, permutation, ties, m)
    saved = _multi_label._WIDE_LABELS
    _multi_label._WIDE_LABELS = 0  # every label count takes the unpacked-chunk path
    try:
        wide = _multi_label.assign_batches(labels, permutation, ties, m)
        steps = _multi_label.placing_steps(labels)
    finally:
        _multi_label._WIDE_LABELS = saved
    assert (wide.batch == narrow.batch).all() and (wide.counts == narrow.counts).all()
    assert (steps == _multi_label.placing_steps(labels)).all()
    assert (narrow.counts == np.array([labels[permutation][narrow.batch == b].sum(axis=0)
                                       for b in range(batches)]).reshape(batches, -1)).all()


def test_the_repair_stops_past_its_budget_naming_strata(monkeypatch):
    monkeypatch.setattr(_multi_label, "REPAIR_WORK_MAX", 50_000)
    labels = np.random.default_rng(0).random((10, 2_000)) < 0.3
    with pytest.raises(ValueError, match=r"^strata has 2,000 labels in 2 batches: MultiLabel's "
                                         r"repair step read [0-9,]+ cells .* and still has "
                                         r"[0-9,]+ missing positives to fix\. Drop labels"):
        plan_batches(labels, MultiLabel(batch_size=5), seed=1)
