"""Cost of the sampling policies (Targets, Downsample) beside numpy and their peers.

Run: .venv/bin/python benchmarks/bench_policies.py [--sizes 1e5 1e6 1e7] [--repeats 3]
     [--peer-max 1e5] [--dual-max 1e6] [--fixed-size]

``--fixed-size`` times only the core plans of ``FixedSize`` (exact sizes,
the default, and ``sizes="balanced"``; batch sizes 64 and 1000) against
``permutation(N)``, the issue's "exact FixedSize at 10^7 within 1.5x".

Rows, per N (labels: 3 classes, 90% / 7% / 3%):

* core: one epoch's plan (``plan_batches``) of ``Targets("balanced", 99)``
  (33 per class; the minority classes recycled, so the epoch has ~2.7 N
  slots) and ``Downsample({0: 0.1}, FixedSize(100))``, against one
  ``default_rng().permutation(N)`` (ratio = policy / permutation).
* sampler: iterating one epoch of ``StratifiedBatchSampler`` with each
  policy against ``BatchSampler(RandomSampler(range(M)), 99)`` over the same
  number M of served rows (ratio = ours / torch); for Downsample also
  against ``BatchSampler(RandomSampler(range(N), num_samples=M), 99)``,
  torch's way to serve a fresh random M of the same N rows each epoch (it
  permutes all N, as Downsample does), and with ``rng="index"`` (no
  permutation of all N rows); and against the peers:
  pytorch-metric-learning's ``MPerClassSampler(labels, 33, batch_size=99,
  length_before_new_iter=M)`` (same composition, same number of rows) and a
  restatement of LibAUC's ``DualSampler`` algorithm (``DualSamplerRestated``
  below; LibAUC does not install here) against ``Targets({1: 0.5, 0: 0.5},
  64)`` on binary labels, with ``epoch="largest"`` (every negative served)
  and with DualSampler's own epoch length. Each sampler is built before timing; one epoch
  of iteration is timed. Best of ``--repeats``, ours and the baseline timed
  alternately.

Times are CPU seconds of this process (``time.process_time``): on a shared,
loaded machine wall-clock times swing with the neighbours' load, and the
ratios (both sides measured in the same run) are what the figures compare.
"""

from __future__ import annotations

import argparse
import platform

import numpy as np
import torch
from torch.utils.data import BatchSampler, RandomSampler

from pystratum import plan_batches
from pystratum.policies import Downsample, FixedSize, MinPerStratum, Targets
from pystratum.torch import StratifiedBatchSampler
from _timing import best


def best_pair(ours, baseline, repeats):
    """Best of ``repeats`` for each, the two timed alternately (load drifts hit both alike)."""
    mine, theirs = [], []
    for _ in range(repeats):
        mine.append(best(ours, 1))
        theirs.append(best(baseline, 1))
    return min(mine), min(theirs)


def consume(iterable):
    for _ in iterable:
        pass


def labels_for(n):
    rng = np.random.default_rng(0)
    return rng.choice(3, size=n, p=[0.9, 0.07, 0.03])


class DualSamplerRestated:
    """LibAUC 2.0.1's ``DualSampler`` algorithm, restated (LibAUC cannot install here).

    What LibAUC does, step by step: at construction the positives' and the
    negatives' indices are each shuffled once (numpy's legacy global
    generator, seeded); ``num_pos = int(sampling_rate * batch_size)`` (at
    least 1), ``num_neg = batch_size - num_pos``, ``max(pos // num_pos,
    neg // num_neg)`` batches. Each ``iter()`` fills one int64 array of
    ``num_batches * batch_size`` rows in a Python loop over batches: a class
    whose pointer would run past its end takes its remaining rows, is
    reshuffled in place, and continues from the start of the new order
    (pointers carry over between epochs); then ``iter()`` returns an
    iterator over that numpy array, which a ``DataLoader(sampler=...,
    batch_size=B)`` groups with ``BatchSampler``. This restatement keeps all
    of that, with a seeded ``RandomState`` instead of the global generator
    (the same legacy shuffle).
    """

    def __init__(self, labels, batch_size, sampling_rate=0.5, seed=2023):
        labels = np.asarray(labels)
        self.random = np.random.RandomState(seed)
        self.positives = np.flatnonzero(labels > 0)
        self.negatives = np.flatnonzero(labels == 0)
        self.random.shuffle(self.positives)
        self.random.shuffle(self.negatives)
        self.batch_size = batch_size
        self.num_pos = max(1, int(sampling_rate * batch_size))
        self.num_neg = batch_size - self.num_pos
        self.num_batches = max(len(self.positives) // self.num_pos,
                               len(self.negatives) // self.num_neg)
        self.pos_ptr = self.neg_ptr = 0

    def __iter__(self):
        # One block per class, as LibAUC writes it (no helper call per batch).
        out = np.zeros(self.num_batches * self.batch_size, dtype=np.int64)
        pos, neg = self.positives, self.negatives
        num_pos, num_neg = self.num_pos, self.num_neg
        for b in range(self.num_batches):
            start = b * self.batch_size
            if self.pos_ptr + num_pos > len(pos):
                rest = pos[self.pos_ptr:]
                loops = (num_pos - len(pos) + self.pos_ptr) // len(pos)
                self.random.shuffle(pos)
                self.pos_ptr = (self.pos_ptr + num_pos) % len(pos)
                out[start:start + num_pos] = np.concatenate(
                    (rest, np.tile(pos, loops), pos[:self.pos_ptr]))
            else:
                out[start:start + num_pos] = pos[self.pos_ptr:self.pos_ptr + num_pos]
                self.pos_ptr += num_pos
            start += num_pos
            if self.neg_ptr + num_neg > len(neg):
                rest = neg[self.neg_ptr:]
                self.random.shuffle(neg)
                self.neg_ptr = (self.neg_ptr + num_neg) % len(neg)
                out[start:start + num_neg] = np.concatenate((rest, neg[:self.neg_ptr]))
            else:
                out[start:start + num_neg] = neg[self.neg_ptr:self.neg_ptr + num_neg]
                self.neg_ptr += num_neg
        return iter(out)

    def __len__(self):
        return self.num_batches * self.batch_size


def core_row(n, y, name, policy, repeats):
    """One table row: an epoch's plan of ``policy`` against ``permutation(N)``."""
    seconds, permutation = best_pair(
        lambda: plan_batches(y, policy, seed=1),
        lambda: np.random.default_rng(1).permutation(n), repeats)
    print(f"| {n:.0e} | core plan: {name} vs permutation(N) | {seconds:.3f} | "
          f"{permutation:.3f} | {seconds / permutation:.2f} |")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=float, nargs="+", default=[1e5, 1e6, 1e7])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--peer-max", type=float, default=1e6,
                        help="largest N for MPerClassSampler (pure Python, slow)")
    parser.add_argument("--dual-max", type=float, default=1e6,
                        help="largest N for the DualSampler restatement")
    parser.add_argument("--batch-order", action="store_true",
                        help="only the split-safe order's cost: Targets' epoch with "
                             "batch_order='split_safe' (the default) vs 'assembled' (by stratum), "
                             "rng numpy and index; MinPerStratum and FixedSize with the opt-in "
                             "order vs their default")
    parser.add_argument("--fixed-size", action="store_true",
                        help="only FixedSize's core plans (exact and balanced) vs permutation(N)")
    args = parser.parse_args()
    print(f"# {platform.processor() or platform.machine()}, numpy {np.__version__}, "
          f"torch {torch.__version__}")
    print("| N | what | ours (s) | baseline (s) | ratio |")
    print("|---|---|---|---|---|")
    if args.batch_order:
        for n in (int(s) for s in args.sizes):
            y = labels_for(n)
            for rng in ("numpy", "index"):
                split = Targets("balanced", 99)
                plain = Targets("balanced", 99, batch_order="assembled")
                ours, base = best_pair(lambda: plan_batches(y, split, seed=1, rng=rng),
                                       lambda: plan_batches(y, plain, seed=1, rng=rng),
                                       args.repeats)
                print(f"| {n:.0e} | Targets('balanced', 99) split_safe vs assembled, "
                      f"rng={rng!r} | {ours:.3f} | {base:.3f} | {ours / base:.2f} |", flush=True)
            # The opt-in order of the permutation-order policies: their batches have
            # many count vectors (10 strata here), so every batch is reordered.
            many = np.random.default_rng(1).choice(10, size=n, p=np.geomspace(1, 0.01, 10)
                                                   / np.geomspace(1, 0.01, 10).sum())
            for policy in (MinPerStratum(2), FixedSize(256)):
                split = type(policy)(**policy.params(), batch_order="split_safe")
                ours, base = best_pair(lambda: plan_batches(many, split, seed=1),
                                       lambda: plan_batches(many, policy, seed=1), args.repeats)
                print(f"| {n:.0e} | {policy!r} split_safe vs its default, 10 strata, "
                      f"rng='numpy' | {ours:.3f} | {base:.3f} | {ours / base:.2f} |", flush=True)
        return
    if args.fixed_size:
        for n in (int(s) for s in args.sizes):
            y = labels_for(n)
            for policy in (FixedSize(64), FixedSize(64, sizes="balanced"), FixedSize(1000),
                           FixedSize(1000, sizes="balanced")):
                core_row(n, y, repr(policy), policy, args.repeats)
        return
    for n in (int(s) for s in args.sizes):
        y = labels_for(n)
        targets = Targets("balanced", 99)
        downsample = Downsample({0: 0.1}, FixedSize(100))
        for name, policy in (("Targets('balanced', 99)", targets),
                             ("Downsample({0: 0.1}, FixedSize(100))", downsample)):
            core_row(n, y, name, policy, args.repeats)
        for name, policy in (("Targets('balanced', 99)", targets),
                             ("Downsample({0: 0.1}, FixedSize(100))", downsample)):
            sampler = StratifiedBatchSampler(y, policy, seed=1)
            served = sum(len(b) for b in sampler)
            torch_sampler = BatchSampler(RandomSampler(range(served)), 99, drop_last=False)
            ours, base = best_pair(lambda: consume(sampler), lambda: consume(torch_sampler),
                                   args.repeats)
            print(f"| {n:.0e} | sampler: {name} vs BatchSampler(RandomSampler(range(M))) | "
                  f"{ours:.3f} | {base:.3f} | {ours / base:.2f} |")
            if isinstance(policy, Downsample):
                # rng="index": no permutation of all N rows (keyed bijections per stratum).
                lazy = StratifiedBatchSampler(y, policy, seed=1, rng="index")
                ours_lazy, base = best_pair(lambda: consume(lazy),
                                            lambda: consume(torch_sampler), args.repeats)
                print(f"| {n:.0e} | sampler (rng='index'): {name} vs BatchSampler("
                      f"RandomSampler(range(M))) | {ours_lazy:.3f} | {base:.3f} | "
                      f"{ours_lazy / base:.2f} |")
                # torch's way to serve a fresh random M of the same N rows each epoch.
                subset = BatchSampler(RandomSampler(range(n), num_samples=served), 99,
                                      drop_last=False)
                ours, base = best_pair(lambda: consume(sampler), lambda: consume(subset),
                                       args.repeats)
                print(f"| {n:.0e} | sampler: {name} vs BatchSampler(RandomSampler(range(N), "
                      f"num_samples=M)) | {ours:.3f} | {base:.3f} | {ours / base:.2f} |")
            if n <= args.peer_max and isinstance(policy, Targets):
                from pytorch_metric_learning.samplers import MPerClassSampler

                peer = MPerClassSampler(y, 33, batch_size=99, length_before_new_iter=served)
                ours, peer_seconds = best_pair(
                    lambda: consume(sampler),
                    lambda: consume(BatchSampler(peer, 99, drop_last=False)), args.repeats)
                print(f"| {n:.0e} | sampler: {name} vs MPerClassSampler(m=33) | {ours:.3f} | "
                      f"{peer_seconds:.3f} | {ours / peer_seconds:.2f} |")
        if n <= args.dual_max:
            binary = (y > 0).astype(np.int64)
            dual = DualSamplerRestated(binary, 64, 0.5, seed=1)
            peer = BatchSampler(dual, 64, drop_last=False)
            # epoch="largest" serves every negative (recycling the few that do not fill a
            # last batch: one more permutation of the negatives); DualSampler's own epoch
            # is floor(negatives / 32) batches, which Targets gives with epoch=<that int>.
            for epoch in ("largest", dual.num_batches):
                policy = Targets({1: 0.5, 0: 0.5}, 64, epoch=epoch)
                sampler = StratifiedBatchSampler(binary, policy, seed=1)
                ours, peer_seconds = best_pair(lambda: consume(sampler), lambda: consume(peer),
                                               args.repeats)
                shown = repr(epoch) if isinstance(epoch, str) else f"{epoch} (DualSampler's)"
                print(f"| {n:.0e} | sampler: Targets({{1: .5, 0: .5}}, 64, epoch={shown}) vs "
                      f"DualSampler (restated) | {ours:.4f} | {peer_seconds:.4f} | "
                      f"{ours / peer_seconds:.2f} |")

if __name__ == "__main__":
    main()
