"""The three per-call cost cases of issue 30 (item 1), one run each.

1. ``ClassesPerBatch(2, 10**4, small="repeat")`` on 3 rows, ``rng="R"``
   (39,994 one-row refills: one stream draw each);
2. ``Targets({0: .5, 1: .5}, 2)`` on 1 + 8,000 rows, ``rng="index"``
   (the one-row stratum recycled 8,000 times: one keyed pass each);
3. ``Targets("balanced", 2, epoch=2**22)`` on 2 rows, ``rng="numpy"``
   (8.4 million rows served, one draw per one-row pass: now refused).

Prints the CPU seconds of ``plan_batches`` (``time.process_time``: other
jobs' load does not count) and its outcome (rows served, or the refusal).
Run it on two commits to compare them.

Run: .venv/bin/python benchmarks/bench_call_costs.py [--cases 1,2,3]
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from pystratum import plan_batches
from pystratum.policies import ClassesPerBatch, Targets

CASES = {
    "1": (lambda: np.array([0, 1, 2]), lambda: ClassesPerBatch(2, 10**4, small="repeat"), "R"),
    "2": (lambda: np.array([0] + [1] * 8000), lambda: Targets({0: .5, 1: .5}, 2), "index"),
    "3": (lambda: np.array([0, 1]), lambda: Targets("balanced", 2, epoch=2**22), "numpy"),
}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", default="1,2,3")
    for case in parser.parse_args().cases.split(","):
        labels, policy, rng = CASES[case]
        y, policy = labels(), policy()
        start = time.process_time()
        try:
            outcome = f"{plan_batches(y, policy, seed=1, rng=rng).order.shape[0]:,} rows served"
        except ValueError as refusal:
            outcome = f"refused: {str(refusal)[:90]}..."
        seconds = time.process_time() - start
        print(f"case {case}: {policy!r} on {y.shape[0]:,} rows, rng={rng!r}: "
              f"{seconds:.2f} s CPU, {outcome}", flush=True)


if __name__ == "__main__":
    main()
