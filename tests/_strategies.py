"""Hypothesis helpers shared by test modules."""

from __future__ import annotations

import numpy as np
from hypothesis import strategies as st


def draw_any_cuts(data, sizes, n_batches) -> np.ndarray:
    """Any valid cut table for ``sizes``: each stratum's cuts non-decreasing from 0 to a used
    count (rows beyond it left out), in int32 or int64."""
    dtype = data.draw(st.sampled_from([np.int32, np.int64]))
    cuts = np.zeros((len(sizes), n_batches + 1), dtype=dtype)
    for s, size in enumerate(sizes):
        used = data.draw(st.integers(0, size))
        inner = sorted(data.draw(st.lists(st.integers(0, used), min_size=n_batches - 1,
                                          max_size=n_batches - 1)))
        cuts[s] = [0, *inner, used]
    return cuts
