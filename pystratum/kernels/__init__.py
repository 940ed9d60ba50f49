"""The optional compiled kernels (numba, the ``fast`` extra), behind one gate.

Four kernel modules do numpy's work as compiled loops: ``_assemble``
(the materialised plan's assembly and slot placement), ``_index`` (the
random-access stream, member lists' counting sort, lazy plans' segments)
``_pairset`` (the exact observed-pair checks of generated negatives)
and ``_shards`` (the shard-blocked order's stable sort by block).
Every caller asks this module, and only this module decides:

* whether a kernel module is there: :func:`compiled` (None without numba,
  or when the environment sets ``PYSTRATUM_NUMBA=0``);
* whether it pays for the work at hand: :func:`compiled_for` (numba's
  import costs about half a second, more than numpy's path takes below
  :data:`MIN_ROWS` rows; :data:`MIN_CALL_ROWS` for a lazy plan's single
  call).

Both paths give the same values, bit for bit; the tests compare them. This
layer imports nothing else of pystratum.
"""

from __future__ import annotations

import importlib
import os

__all__ = ["MIN_CALL_ROWS", "MIN_ROWS", "KERNELS", "compiled", "compiled_for"]

# The kernel modules by the name callers use.
KERNELS = ("assemble", "index", "pairset", "shards")
# Below this many rows (or values) numpy's path takes a few milliseconds.
MIN_ROWS = 1 << 17
# A lazy plan's call on fewer rows stays on numpy's path even in a large
# plan, so one batch never waits for numba's import.
MIN_CALL_ROWS = 1 << 12

# name -> the loaded module, or False when unavailable or switched off.
# Tests set entries to force a path (False: numpy's, as PYSTRATUM_NUMBA=0).
_LOADED: dict = {}


def _load(name: str):
    if os.environ.get("PYSTRATUM_NUMBA", "1") == "0":
        return None
    try:
        return importlib.import_module(f"{__name__}._{name}")
    except ImportError:  # numba (or llvmlite) is not installed
        return None


def compiled(name: str):
    """The kernel module ``name`` (one of :data:`KERNELS`), or None: then take numpy's path."""
    if name not in KERNELS:
        raise ValueError(f"name must be one of {KERNELS}, got name={name!r}.")
    module = _LOADED.get(name)
    if module is None:
        module = _LOADED[name] = _load(name) or False
    return module or None


def compiled_for(name: str, count: int):
    """The kernel module ``name`` for work on ``count`` rows, or None below :data:`MIN_ROWS`."""
    return compiled(name) if count >= MIN_ROWS else None
