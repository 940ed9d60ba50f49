"""An environment for subprocesses that embedded R has not changed.

Starting R in-process (rpy2, e.g. tests/r/test_cross_language.py) sets
``R_HOME`` and prepends R's library folders to ``LD_LIBRARY_PATH``. A Python
subprocess started with that environment can load the system's libpython
instead of the interpreter's own and fail on a compiled module (seen:
``_ssl ... undefined symbol: _PyModule_Add`` when pyarrow imports ssl). So
subprocesses get these two variables as the test process had them at
start (read from /proc/self/environ where there is one).
"""

from __future__ import annotations

import os

_R_SET = ("LD_LIBRARY_PATH", "R_HOME")


def _initial_environment():
    try:
        with open("/proc/self/environ", "rb") as handle:
            items = handle.read().split(b"\0")
    except OSError:
        return None
    return dict(item.decode(errors="surrogateescape").split("=", 1)
                for item in items if b"=" in item)


_INITIAL = _initial_environment()


def subprocess_environ(**extra) -> dict:
    env = dict(os.environ)
    if _INITIAL is not None:
        for key in _R_SET:
            if key in _INITIAL:
                env[key] = _INITIAL[key]
            else:
                env.pop(key, None)
    env.update(extra)
    return env
