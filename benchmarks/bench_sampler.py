"""Per-epoch cost of iterating StratifiedBatchSampler vs torch's BatchSampler(RandomSampler).

Run: .venv/bin/python benchmarks/bench_sampler.py [--sizes 1e6 1e7] [--repeats 3]

What is timed, per epoch: consuming every batch of one ``iter()``. For the
stratified sampler that includes the epoch's plan (permutation, allocation,
conversion to Python lists), since it happens inside ``iter()``. The
baseline is ``BatchSampler(RandomSampler(range(N)), batch_size=B,
drop_last=False)`` with ``B`` the stratified plan's mean batch size. The
figure reported is the best of ``--repeats`` epochs (least disturbed by
other load); ratio = stratified / baseline (<= 1.0 means no extra overhead).
"""

from __future__ import annotations

import argparse
import platform
import time
import warnings

import numpy as np
import torch
from torch.utils.data import BatchSampler, RandomSampler

from pystratum.torch import StratifiedBatchSampler


def epoch_seconds(sampler, repeats: int) -> float:
    best = float("inf")
    for _ in range(repeats):
        start = time.perf_counter()
        for _batch in sampler:
            pass
        best = min(best, time.perf_counter() - start)
    return best


def labels_for(n_rows: int, positive_fraction: float, seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    labels = np.zeros(n_rows, dtype=np.int64)
    labels[rng.choice(n_rows, int(n_rows * positive_fraction), replace=False)] = 1
    return labels


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=float, nargs="+", default=[1e6, 1e7])
    parser.add_argument("--batch-sizes", type=int, nargs="+", default=[100, 1000])
    parser.add_argument("--rngs", nargs="+", default=["numpy", "torch", "R"])
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    torch.set_num_threads(1)

    print(f"python {platform.python_version()}, torch {torch.__version__}, numpy {np.__version__}, "
          f"{platform.machine()}; best of {args.repeats} epochs, 3% positives (2 strata)\n")
    header = (f"{'N':>10} {'rng':>6} {'batches':>8} {'mean B':>7} {'stratified s':>13} "
              f"{'baseline s':>11} {'ratio':>6}")
    print(header)
    print("-" * len(header))
    for size in args.sizes:
        n_rows = int(size)
        labels = labels_for(n_rows, 0.03)
        n_positive = int(labels.sum())
        baseline_cache = {}
        for batch_size in args.batch_sizes:
            # m so that the plan's mean batch size is about batch_size.
            m = max(1, round(n_positive * batch_size / n_rows))
            for rng in args.rngs:
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    sampler = StratifiedBatchSampler(labels, m, seed=1, rng=rng)
                mean_batch = n_rows / len(sampler)
                ours = epoch_seconds(sampler, args.repeats)
                key = round(mean_batch)
                if key not in baseline_cache:
                    baseline = BatchSampler(RandomSampler(range(n_rows)), batch_size=key,
                                            drop_last=False)
                    baseline_cache[key] = epoch_seconds(baseline, args.repeats)
                theirs = baseline_cache[key]
                print(f"{n_rows:>10} {rng:>6} {len(sampler):>8} {mean_batch:>7.0f} "
                      f"{ours:>13.3f} {theirs:>11.3f} {ours / theirs:>6.2f}", flush=True)


if __name__ == "__main__":
    main()
