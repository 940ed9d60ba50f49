"""Cost of the sampling policies (Targets, Downsample) beside numpy and their peers.

Run: .venv/bin/python benchmarks/bench_policies.py [--sizes 1e5 1e6 1e7] [--repeats 2]

Rows, per N (labels: 3 classes, 90% / 7% / 3%):

* core: one epoch's plan (``plan_batches``) of ``Targets("balanced", 99)``
  (33 per class; the minority classes recycled, so the epoch has ~2.7 N
  slots) and ``Downsample({0: 0.1}, FixedSize(100))``, against one
  ``default_rng().permutation(N)`` (ratio = policy / permutation).
* sampler: iterating one epoch of ``StratifiedBatchSampler`` with each
  policy against ``BatchSampler(RandomSampler(range(M)), 99)`` over the same
  number M of served rows (ratio = ours / torch), and against the peers:
  pytorch-metric-learning's ``MPerClassSampler(labels, 33, batch_size=99,
  length_before_new_iter=M)`` (same composition, same number of rows) and a
  restatement of LibAUC's ``DualSampler`` composition (LibAUC does not
  install here; see tests/test_torch_sampling_policies.py) against
  ``Targets({1: 0.5, 0: 0.5}, 64)`` on binary labels. Best of ``--repeats``.

Times are CPU seconds of this process (``time.process_time``): on a shared,
loaded machine wall-clock times swing with the neighbours' load, and the
ratios (both sides measured in the same run) are what the figures compare.
"""

from __future__ import annotations

import argparse
import platform
import time

import numpy as np
import torch
from torch.utils.data import BatchSampler, RandomSampler

from pystratum import plan_batches
from pystratum.policies import Downsample, FixedSize, Targets
from pystratum.torch import StratifiedBatchSampler


def best(function, repeats):
    times = []
    for _ in range(repeats):
        start = time.process_time()
        function()
        times.append(time.process_time() - start)
    return min(times)


def consume(iterable):
    for _ in iterable:
        pass


def labels_for(n):
    rng = np.random.default_rng(0)
    return rng.choice(3, size=n, p=[0.9, 0.07, 0.03])


def dual_sampler_restated(labels, batch_size, rng):
    """LibAUC DualSampler's documented composition (see the tests), as a flat index list."""
    positives, negatives = np.flatnonzero(labels == 1), np.flatnonzero(labels == 0)
    num_pos = batch_size // 2
    num_neg = batch_size - num_pos
    num_batches = max(len(positives) // num_pos, len(negatives) // num_neg)
    out = np.empty(num_batches * batch_size, dtype=np.int64)
    pos, neg = rng.permutation(positives), rng.permutation(negatives)
    pos_at = neg_at = 0
    for b in range(num_batches):
        start = b * batch_size
        for pool, count, offset, name in ((positives, num_pos, 0, "pos"),
                                          (negatives, num_neg, num_pos, "neg")):
            current = pos if name == "pos" else neg
            at = pos_at if name == "pos" else neg_at
            if at + count > len(pool):
                current = np.concatenate([current[at:], rng.permutation(pool)])
                at = 0
            out[start + offset:start + offset + count] = current[at:at + count]
            if name == "pos":
                pos, pos_at = current, at + count
            else:
                neg, neg_at = current, at + count
    return out.tolist()


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=float, nargs="+", default=[1e5, 1e6, 1e7])
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--peer-max", type=float, default=1e6,
                        help="largest N for the (pure-Python) peers")
    args = parser.parse_args()
    print(f"# {platform.processor() or platform.machine()}, numpy {np.__version__}, "
          f"torch {torch.__version__}")
    print("| N | what | ours (s) | baseline (s) | ratio |")
    print("|---|---|---|---|---|")
    for n in (int(s) for s in args.sizes):
        y = labels_for(n)
        targets = Targets("balanced", 99)
        downsample = Downsample({0: 0.1}, FixedSize(100))
        permutation = best(lambda: np.random.default_rng(1).permutation(n), args.repeats)
        for name, policy in (("Targets('balanced', 99)", targets),
                             ("Downsample({0: 0.1}, FixedSize(100))", downsample)):
            seconds = best(lambda: plan_batches(y, policy, seed=1), args.repeats)
            print(f"| {n:.0e} | core plan: {name} vs permutation(N) | {seconds:.3f} | "
                  f"{permutation:.3f} | {seconds / permutation:.2f} |")
        for name, policy in (("Targets('balanced', 99)", targets),
                             ("Downsample({0: 0.1}, FixedSize(100))", downsample)):
            sampler = StratifiedBatchSampler(y, policy, seed=1)
            served = sum(len(b) for b in sampler)
            ours = best(lambda: consume(sampler), args.repeats)
            torch_sampler = BatchSampler(RandomSampler(range(served)), 99, drop_last=False)
            base = best(lambda: consume(torch_sampler), args.repeats)
            print(f"| {n:.0e} | sampler: {name} vs BatchSampler(RandomSampler) | {ours:.3f} | "
                  f"{base:.3f} | {ours / base:.2f} |")
            if n <= args.peer_max and isinstance(policy, Targets):
                from pytorch_metric_learning.samplers import MPerClassSampler

                peer = MPerClassSampler(y, 33, batch_size=99, length_before_new_iter=served)
                peer_seconds = best(lambda: consume(BatchSampler(peer, 99, drop_last=False)),
                                    args.repeats)
                print(f"| {n:.0e} | sampler: {name} vs MPerClassSampler(m=33) | {ours:.3f} | "
                      f"{peer_seconds:.3f} | {ours / peer_seconds:.2f} |")
        if n <= args.peer_max:
            binary = (y > 0).astype(np.int64)
            sampler = StratifiedBatchSampler(binary, Targets({1: 0.5, 0: 0.5}, 64), seed=1)
            ours = best(lambda: consume(sampler), args.repeats)
            peer_seconds = best(lambda: consume(
                BatchSampler(dual_sampler_restated(binary, 64, np.random.default_rng(1)), 64,
                             drop_last=False)), args.repeats)
            print(f"| {n:.0e} | sampler: Targets({{1: .5, 0: .5}}, 64) vs DualSampler "
                  f"(restated) | {ours:.3f} | {peer_seconds:.3f} | {ours / peer_seconds:.2f} |")


if __name__ == "__main__":
    main()
