"""Cost of one ClassesPerBatch(16, 4) epoch beside numpy's permutation (issue 19's target).

Run: .venv/bin/python benchmarks/bench_classes_per_batch.py [--rows 1e6] [--classes 1e4]
     [--repeats 5] [--peer]

Labels: ``--classes`` classes, sizes 4-400 with a long tail (Pareto), about
``--rows`` rows in all. Times one ``plan_batches`` epoch (numpy stream)
against ``default_rng().permutation(N)``, alternately, best of
``--repeats``, CPU seconds (``time.process_time``: ratios stay meaningful
on a loaded machine). The target is a ratio within 2. ``--peer``: also one
epoch of pytorch-metric-learning's ``MPerClassSampler(labels, 4, 64,
length_before_new_iter=N)`` with the share of rows it serves.
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from pystratum import plan_batches
from pystratum.policies import ClassesPerBatch
from _timing import best


def long_tail_labels(rows: int, classes: int, seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    sizes = np.clip(4 + rng.pareto(1.2, classes) * 30, 4, 400)
    sizes = np.maximum(4, (sizes * rows / sizes.sum()).astype(np.int64))
    return rng.permutation(np.repeat(np.arange(classes), sizes))


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rows", type=float, default=1e6)
    parser.add_argument("--classes", type=float, default=1e4)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--peer", action="store_true")
    args = parser.parse_args()
    labels = long_tail_labels(int(args.rows), int(args.classes))
    n = labels.shape[0]
    policy = ClassesPerBatch(16, 4)
    plan_batches(labels, policy, seed=0)  # warm-up (numba compilation, caches)
    epochs = iter(range(10**6))
    ours, numpy_time = [], []
    for _ in range(args.repeats):
        ours.append(best(lambda: plan_batches(labels, policy, seed=1, epoch=next(epochs)), 1))
        numpy_time.append(best(lambda: np.random.default_rng().permutation(n), 1))
    plan = plan_batches(labels, policy, seed=1)
    print(f"N={n:,} classes={int(args.classes):,} batches={plan.num_batches:,}")
    print(f"ClassesPerBatch(16, 4) epoch: {min(ours):.4f} s CPU; permutation(N): "
          f"{min(numpy_time):.4f} s; ratio {min(ours) / min(numpy_time):.2f}")
    if args.peer:
        from pytorch_metric_learning.samplers import MPerClassSampler

        sampler = MPerClassSampler(labels, 4, batch_size=64, length_before_new_iter=n)
        start = time.process_time()
        rows = np.fromiter(iter(sampler), dtype=np.int64)
        peer = time.process_time() - start
        served = np.unique(rows).shape[0] / n
        print(f"MPerClassSampler epoch: {peer:.4f} s CPU, rows served {served:.1%} (ours 100%)")


if __name__ == "__main__":
    main()
