"""The label-matrix sizes of issue 30, timed: each is served or refused, and how fast.

Cases: ``label_matrix(scipy.sparse.eye(10**5))`` and 200,000 distinct label
sets (refused before allocation with the GiB estimate), and ``MultiLabel``
plans of 10 rows x 10**6 labels (all ones, one label a row, sparse, and
random 0.3 whose repair would exceed its budget). Prints one line per case:
the outcome and the CPU seconds of the best of ``--repeats`` runs
(``_timing.best``). Usage: ``python benchmarks/bench_label_inputs.py``.
"""

from __future__ import annotations

import argparse

import numpy as np
import scipy.sparse as sp

from _timing import best
import pystratum
from pystratum import plan_batches
from pystratum.policies import MultiLabel


def outcome(call):
    try:
        call()
        return "served"
    except ValueError as error:
        return "refused: " + str(error)[:70] + "..."


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--repeats", type=int, default=1)
    parser.add_argument("--labels", type=int, default=10**6)
    args = parser.parse_args()
    rng = np.random.default_rng(0)
    wide = args.labels
    cases = {
        "label_matrix(sparse.eye(10**5))": lambda: pystratum.label_matrix(sp.eye(10**5)),
        "label_matrix_from_sets(200,000 distinct)": lambda: pystratum.label_matrix_from_sets(
            [[k] for k in range(200_000)]),
    }
    for name, labels in (("all ones", np.ones((10, wide), dtype=bool)),
                         ("one label a row", np.eye(10, wide, dtype=bool)),
                         ("sparse 1e-5", rng.random((10, wide)) < 1e-5),
                         ("random 0.3", rng.random((10, wide)) < 0.3)):
        cases[f"MultiLabel 10 x {wide:,} {name}"] = (
            lambda labels=labels: plan_batches(labels, MultiLabel(batch_size=5), seed=1))
    for name, call in cases.items():
        seconds = best(lambda: outcome(call), args.repeats)
        print(f"{name}: {outcome(call)} ({seconds:.2f} s CPU)", flush=True)


if __name__ == "__main__":
    main()
