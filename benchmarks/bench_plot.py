"""Figures at scale: drawing and saving a plan's figure of 10**4 batches, per policy family.

For each family (a stratum policy, ClassesPerBatch, MultiLabel) it times
``plan.plot()`` plus ``savefig`` of the PNG (the plan is built once, outside the
timing), with the automatic view (the distribution view past
``pystratum.plot.AGGREGATE_FROM`` batches; classes: how often each class
appears) and, with ``--bars``, the one-bar-per-batch view it replaces. Wall
clock, best of ``--repeats``; ratios are within this one run.

Run: .venv/bin/python benchmarks/bench_plot.py --batches 10000 --bars
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
import warnings
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _timing import best  # noqa: E402

import matplotlib  # noqa: E402

matplotlib.use("Agg")

from pystratum import plan_batches  # noqa: E402
from pystratum.policies import ClassesPerBatch, FixedSize, MultiLabel  # noqa: E402


def plans(n_batches: int) -> dict:
    rng = np.random.default_rng(0)
    size = 256
    strata = rng.choice(np.array(["a", "b", "c", "d", "e"]), n_batches * size,
                        p=[0.5, 0.25, 0.15, 0.07, 0.03])
    classes = np.repeat(np.arange(1500), rng.multinomial(n_batches * 32 - 1500 * 4,
                                                         np.full(1500, 1 / 1500)) + 4)
    labels = (rng.random((n_batches * 64, 20)) < np.geomspace(0.5, 0.02, 20)).astype(np.int8)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return {
            "FixedSize(256), 5 strata": plan_batches(strata, FixedSize(size), seed=1),
            "ClassesPerBatch(8, 4), 1,500 classes": plan_batches(classes, ClassesPerBatch(8, 4),
                                                                 seed=1),
            "MultiLabel(64), 20 labels": plan_batches(labels, MultiLabel(batch_size=64),
                                                      seed=1),
        }


def draw(plan, view: str, output: str) -> None:
    if plan.policy.allocates_slots:
        ax = plan.plot()
    else:
        ax = plan.plot(view=view)
    ax.figure.savefig(output, dpi=110)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--batches", type=float, default=1e4)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--bars", action="store_true",
                        help="also time the one-bar-per-batch view (slow: minutes)")
    args = parser.parse_args()
    n_batches = int(args.batches)
    with tempfile.TemporaryDirectory() as folder:
        output = os.path.join(folder, "figure.png")
        print("| plan | batches | automatic view (s) | bars (s) | ratio |")
        print("|---|---|---|---|---|")
        for name, plan in plans(n_batches).items():
            auto = best(lambda: draw(plan, "auto", output), args.repeats, time.perf_counter)
            bars = ratio = "-"
            if args.bars and not plan.policy.allocates_slots:
                seconds = best(lambda: draw(plan, "bars", output), 1, time.perf_counter)
                bars, ratio = f"{seconds:.1f}", f"{seconds / auto:.0f}x"
            print(f"| {name} | {plan.num_batches:,} | {auto:.2f} | {bars} | {ratio} |",
                  flush=True)


if __name__ == "__main__":
    main()
