"""exp and log as R computes them: the C library's, element by element.

R's ``exp()`` and ``log()`` call the C library's functions. numpy's vectorised
``np.exp``/``np.log`` (SIMD kernels) may differ from them by one unit in the
last place (seen with numpy 2.4 against R 4.2: one weight in 64). The
negative pairs' ``log_q`` and ``weight`` must equal R's bit for bit, so they
are computed with :func:`math.exp` / :func:`math.log`, which call the C
library's functions as R does.
"""

from __future__ import annotations

import math

import numpy as np

__all__ = ["libm_exp", "libm_log"]


def libm_exp(values) -> np.ndarray:
    """``exp`` of every value, as the C library (and so R) computes it."""
    values = np.asarray(values, dtype=np.float64)
    return np.fromiter(map(math.exp, values.ravel().tolist()), dtype=np.float64,
                       count=values.size).reshape(values.shape)


def libm_log(values) -> np.ndarray:
    """``log`` of every value (``-inf`` at 0), as the C library (and so R) computes it."""
    values = np.asarray(values, dtype=np.float64)
    return np.fromiter((math.log(v) if v > 0 else -math.inf for v in values.ravel().tolist()),
                       dtype=np.float64, count=values.size).reshape(values.shape)
