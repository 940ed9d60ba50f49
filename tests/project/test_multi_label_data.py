"""The multi-label data generator of the benchmarks: prevalences, co-occurrence, determinism."""

from __future__ import annotations

from pathlib import Path

import numpy as np

import pystratum
from _scripts import load_script

ROOT = Path(__file__).resolve().parents[2]
data = load_script("benchmarks/_multi_label_data.py")


def test_prevalences_match_the_targets_for_a_fixed_seed():
    matrix, names = data.multi_label_data(200_000, 20, seed=3)
    assert matrix.shape == (200_000, 20) and matrix.dtype == bool
    assert names == tuple(f"l{k:02d}" for k in range(20))
    target = data.label_prevalences(20)
    assert np.isclose(target[0], 0.002) and np.isclose(target[-1], 0.30)
    observed = matrix.mean(axis=0)
    # 5 binomial standard errors, at least 0.0005 absolute
    tolerance = np.maximum(5 * np.sqrt(target * (1 - target) / 200_000), 5e-4)
    assert np.all(np.abs(observed - target) <= tolerance), (observed, target)
    # the result is a label matrix the core reads as it is
    assert pystratum.label_matrix(matrix).labels == tuple(str(k) for k in range(20))


def test_labels_sharing_a_factor_co_occur_more_than_independence_gives():
    matrix, _ = data.multi_label_data(100_000, 8, seed=5)
    p = matrix.mean(axis=0)
    both = (matrix[:, :, None] & matrix[:, None, :]).mean(axis=0)
    lift = both / np.outer(p, p)
    # labels 2 and 5 both load on factor 2 (label 5 on factors 2 and 0); 0 and 3 on factor 0
    assert lift[2, 5] > 1.5 and lift[0, 3] > 1.5
    rows_with_two = (matrix.sum(axis=1) >= 2).mean()
    independent = 1 - np.prod(1 - p) - sum(p[k] * np.prod(np.delete(1 - p, k)) for k in range(8))
    # about 0.113 against 0.096: seventeen standard errors (0.001) apart
    assert rows_with_two > independent + 10 * np.sqrt(independent / 100_000)


def test_the_same_seed_gives_the_same_matrix():
    first, _ = data.multi_label_data(5_000, 6, seed=9)
    again, _ = data.multi_label_data(5_000, 6, seed=9)
    np.testing.assert_array_equal(first, again)
    other, _ = data.multi_label_data(5_000, 6, seed=10)
    assert not np.array_equal(first, other)
