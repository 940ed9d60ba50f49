"""The one timing rule the focused benchmarks share: the best of several runs.

The minimum is the run least disturbed by other jobs on a shared machine.
``clock`` is ``time.process_time`` (CPU of this process, the default: other
jobs' load does not count) or ``time.perf_counter`` (wall clock, for work in
threads or child processes).
"""

import time


def best(function, repeats: int, clock=time.process_time) -> float:
    """Seconds of the fastest of ``repeats`` calls of ``function()``."""
    times = []
    for _ in range(repeats):
        start = clock()
        function()
        times.append(clock() - start)
    return min(times)
