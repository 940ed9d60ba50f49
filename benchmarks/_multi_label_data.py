"""Generated multi-label data for the MultiLabel benchmarks and vignette.

A latent-factor (multivariate probit) model: every row has ``factors``
standard normal factors z; label l's score is ``w_l . z + sqrt(1 - |w_l|^2) e_l``
(standard normal), and the row has label l when the score exceeds the
normal quantile ``1 - p_l``. So each label's prevalence is exactly ``p_l`` in
expectation, whatever the loadings, and labels loading on a common factor
co-occur more often than independence would give (chest X-ray findings,
document topics). Prevalences run log-evenly from ``smallest`` to
``largest`` (0.2% to 30% by default), label ``l00`` the rarest.

Usage: ``matrix, names = multi_label_data(10**6, 20, seed=1)``.
"""

from __future__ import annotations

from statistics import NormalDist

import numpy as np

__all__ = ["label_prevalences", "multi_label_data"]


def label_prevalences(labels: int, smallest: float = 0.002, largest: float = 0.30) -> np.ndarray:
    """The target prevalence of each label: log-evenly spaced, rarest first."""
    if labels == 1:
        return np.array([smallest])
    return np.geomspace(smallest, largest, labels)


def multi_label_data(rows: int, labels: int, *, seed: int, factors: int = 3,
                     loading: float = 0.7, smallest: float = 0.002, largest: float = 0.30,
                     chunk: int = 1 << 18):
    """``(bool matrix (rows, labels), names)`` drawn from the latent-factor model.

    Guarantees: the same arguments give the same matrix (one
    ``numpy.random.default_rng(seed)`` stream, drawn chunk by chunk so that
    10^6 x 20 needs about 20 MB for the result plus one chunk's scores);
    label ``l``'s expected prevalence is ``label_prevalences(...)[l]``; label
    ``l`` loads on factor ``l % factors`` (and, for every other label, also
    on factor ``(l + 1) % factors``), with total loading ``loading``, so
    labels sharing a factor are positively correlated.
    """
    if not 0 <= loading < 1:
        raise ValueError(f"loading must be in [0, 1), got loading={loading!r}.")
    prevalence = label_prevalences(labels, smallest, largest)
    thresholds = np.array([NormalDist().inv_cdf(1 - p) for p in prevalence])
    weights = np.zeros((factors, labels))
    for label in range(labels):
        if label % 2 and factors > 1:
            share = loading / np.sqrt(2)
            weights[label % factors, label] = share
            weights[(label + 1) % factors, label] = share
        else:
            weights[label % factors, label] = loading
    noise = np.sqrt(1 - (weights ** 2).sum(axis=0))
    rng = np.random.default_rng(seed)
    out = np.empty((rows, labels), dtype=bool)
    for start in range(0, rows, chunk):
        stop = min(rows, start + chunk)
        z = rng.standard_normal((stop - start, factors))
        scores = z @ weights + rng.standard_normal((stop - start, labels)) * noise
        np.greater(scores, thresholds, out=out[start:stop])
    names = tuple(f"l{label:02d}" for label in range(labels))
    return out, names
