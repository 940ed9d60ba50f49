"""Metadata tables and configs shared by the tree tests (the vignette builds its own)."""

from __future__ import annotations

import math
from statistics import NormalDist

import numpy as np
import pandas as pd

PROTEINS = [f"P{i:02d}" for i in range(12)]
NO_ACTIVES = ("P10", "P11")  # proteins without any active row (pruned in case 6)


def metadata(n_rows: int = 6000, seed: int = 0) -> pd.DataFrame:
    """Actives ~8%, two sources, 12 proteins (two without actives), a potency column."""
    rng = np.random.default_rng(seed)
    protein = rng.choice(PROTEINS, n_rows)
    active = (rng.random(n_rows) < 0.08).astype(np.int64)
    active[np.isin(protein, NO_ACTIVES)] = 0
    return pd.DataFrame({
        "protein": protein,
        "active": active,
        "source": rng.choice(["measured", "synthetic"], n_rows),
        "potency": np.round(rng.gamma(2.0, 1.5, n_rows), 3),
    })


def assert_shares(counts: dict, expected: dict, n: int, *, alpha: float = 1e-3, block: int = 1):
    """Each observed share agrees with its expected probability (two-sided binomial z-test,
    Bonferroni over the cells, family-wise level ``alpha``).

    ``block``: draws come in blocks of this many identical-category draws
    (repeat), so the test counts blocks. Shuffle/sequential modes make counts
    less variable than binomial, so the test is conservative for them.
    """
    z_crit = NormalDist().inv_cdf(1 - alpha / (2 * len(expected)))
    trials = n // block
    for key, p in expected.items():
        observed = counts.get(key, 0) / block
        sd = math.sqrt(trials * p * (1 - p))
        z = (observed - trials * p) / sd if sd else float("inf") * (observed != trials * p)
        assert abs(z) <= z_crit, (
            f"{key}: {observed:.0f} of {trials} (share {observed / trials:.4f}), expected "
            f"{p:.4f}; z={z:.2f} beyond +-{z_crit:.2f}")


def assert_uniform(counts: np.ndarray, *, alpha: float = 1e-3):
    """Chi-square goodness of fit to the uniform distribution (Wilson-Hilferty normal
    approximation of the chi-square tail, fine for >= 10 cells)."""
    counts = np.asarray(counts, dtype=np.float64)
    k = counts.size - 1
    expected = counts.sum() / counts.size
    statistic = float(((counts - expected) ** 2 / expected).sum())
    z = ((statistic / k) ** (1 / 3) - (1 - 2 / (9 * k))) / math.sqrt(2 / (9 * k))
    z_crit = NormalDist().inv_cdf(1 - alpha)
    assert z <= z_crit, f"chi-square {statistic:.1f} on {k} df (z={z:.2f} > {z_crit:.2f})"
