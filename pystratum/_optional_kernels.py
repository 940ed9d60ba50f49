"""Loading the optional compiled kernels (numba, the ``fast`` extra) without requiring them."""

from __future__ import annotations

import importlib
import os

__all__ = ["load_kernels"]


def load_kernels(module: str):
    """The kernel module ``pystratum.<module>``, or None.

    None when numba is not installed or the environment sets
    ``PYSTRATUM_NUMBA=0``; callers then take their numpy path, which gives
    the same results.
    """
    if os.environ.get("PYSTRATUM_NUMBA", "1") == "0":
        return None
    try:
        return importlib.import_module(f"pystratum.{module}")
    except ImportError:
        return None
