"""The optional compiled kernels (numba, the ``fast`` extra), behind one gate.

Five kernel modules do numpy's (or Python's) work as compiled loops:
``_assemble`` (the materialised plan's assembly and slot placement, and
the label matrix of numbered label sets),
``_index`` (the random-access stream, member lists' counting sort, lazy
plans' segments), ``_pairset`` (the exact observed-pair checks of generated
negatives), ``_pyobjects`` (Python ``str`` labels and label lists numbered
by value, read from CPython's objects) and ``_shards`` (the shard-blocked
order's stable sort by block).
Every caller asks this module, and only this module decides:

* whether a kernel module is there: :func:`compiled` (None without numba,
  or when the environment sets ``PYSTRATUM_NUMBA=0``);
* whether it pays for the work at hand: :func:`compiled_for` (numba's
  import costs about half a second, more than numpy's path takes below
  :data:`MIN_ROWS` rows, and it is loaded only for :data:`LOAD_ROWS` rows;
  :data:`MIN_CALL_ROWS` for a lazy plan's single call).

Both paths give the same values, bit for bit; the tests compare them. This
layer imports nothing else of pystratum.
"""

from __future__ import annotations

import importlib
import os
import sys

__all__ = ["LOAD_ROWS", "MIN_CALL_ROWS", "MIN_ROWS", "KERNELS", "compiled", "compiled_for"]

# The kernel modules by the name callers use.
KERNELS = ("assemble", "index", "pairset", "pyobjects", "shards")
# Below this many rows (or values) numpy's path takes a few milliseconds.
MIN_ROWS = 1 << 17
# numba's start-up (its import and the cached kernels' first dispatch, about 0.45 s
# of CPU) is paid only by work this large: numpy's path on 2 * 10**6 int labels
# takes 0.15 s, about what the compiled path does once loaded (0.09-0.13 s).
LOAD_ROWS = 1 << 22
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
    except ImportError:  # numba (or llvmlite) is not installed, or _pyobjects' layout unproven
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
    """The kernel module ``name`` for work on ``count`` rows, or None below :data:`MIN_ROWS`.

    Before numba is loaded, only work of :data:`LOAD_ROWS` rows or more loads it:
    its start-up costs more than numpy's whole path on fewer rows, so a process
    planning a few million rows once (the command line) never pays it, and its
    first call costs what its second does.
    """
    if count < MIN_ROWS:
        return None
    if name not in _LOADED and count < LOAD_ROWS and "numba" not in sys.modules:
        return None
    return compiled(name)
