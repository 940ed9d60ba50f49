"""The pystratum demo: why stratified batches, measured honestly, and the same batches in R.

Run:  python -m pystratum.demo [--output FIGURE.png] [--seeds K]
      (or: bash .ci/dev demo, which also sets everything up)

1. 20,000 generated rows with 3% positives, batches of about 100 rows: how
   many plain shuffled batches hold no positive row, against pystratum's
   ``MinPerStratum(3)`` batches (at least 3 positives in every batch; the
   smallest class sets the number of batches, here about 200).
2. Training a linear scorer with a pairwise squared-hinge ROC loss (the
   AUM family: it needs a positive and a negative in the batch). A batch
   without both classes gives no gradient: the step is wasted. Both runs
   train for the same number of *useful* gradient steps; held-out AUC (on
   20,000 fresh rows) over several seeds, wasted steps and wall time are
   reported as measured, whoever wins.
3. A PNG of per-batch composition (plain vs stratified) and held-out AUC
   learning curves.
4. With ``rng="R"`` and a seed, Python and the R package (in embedded R)
   give identical batches: checked batch by batch.

Nothing is downloaded; the whole demo takes well under a minute on 2 cores.
"""

from __future__ import annotations

import argparse
import importlib.util
import time

import numpy as np

import pystratum
from pystratum.plot import INSTALL_PLOT, batch_counts

N_ROWS = 20_000
POSITIVE_RATE = 0.03
MIN_POSITIVES = 3  # at least 3 positives per batch: ~200 batches of ~100 rows
N_FEATURES = 10
SEED = 2025
USEFUL_STEPS = 400  # about two epochs
EVAL_EVERY = 20
LEARNING_RATE = 0.05


def make_data(seed: int = SEED, n_rows: int = N_ROWS):
    """Features with a weak linear signal (best possible AUC about 0.86) and 0/1 labels."""
    rng = np.random.default_rng(seed)
    labels = (rng.random(n_rows) < POSITIVE_RATE).astype(np.int64)
    shift = np.r_[np.full(4, 0.7), np.zeros(N_FEATURES - 4)]
    features = rng.normal(size=(n_rows, N_FEATURES)) + labels[:, None] * shift
    return features.astype(np.float32), labels


def section(title: str) -> None:
    print(f"\n== {title}", flush=True)


def auc(scores, labels) -> float:
    """Area under the ROC curve by the rank-sum formula (ties get average ranks)."""
    scores = np.asarray(scores, dtype=np.float64)
    order = np.argsort(scores, kind="stable")
    ranks = np.empty(len(scores))
    ranks[order] = np.arange(1, len(scores) + 1)
    # Average ranks over ties so a constant scorer gets exactly 0.5.
    _, inverse, counts = np.unique(scores, return_inverse=True, return_counts=True)
    sums = np.bincount(inverse, weights=ranks)
    ranks = (sums / counts)[inverse]
    n_pos = labels.sum()
    n_neg = len(labels) - n_pos
    return float((ranks[labels == 1].sum() - n_pos * (n_pos + 1) / 2) / (n_pos * n_neg))


def plain_batches(n_rows: int, batch_size: int, seed: int) -> list:
    """What ``DataLoader(shuffle=True, batch_size=...)`` does: shuffle, cut every batch_size rows."""
    permutation = np.random.default_rng(seed).permutation(n_rows)
    return [permutation[i:i + batch_size] for i in range(0, n_rows, batch_size)]


def _positives_summary(positives: np.ndarray) -> str:
    values, counts = np.unique(positives, return_counts=True)
    shown = ", ".join(f"{v}: {c}" for v, c in zip(values[:8], counts[:8]))
    more = ", ..." if values.size > 8 else ""
    return f"{{{shown}{more}}}"


def compare_batches(labels):
    plan = pystratum.plan_batches(labels, pystratum.MinPerStratum(MIN_POSITIVES), seed=SEED)
    batch_size = plain_batch_size(plan)
    plain = plain_batches(len(labels), batch_size, SEED)
    plain_counts, strata = batch_counts(labels, plain)
    positive = list(strata).index(1)
    section(f"{len(labels):,} rows, {labels.sum()} positives ({labels.mean():.1%}), "
            f"batches of about {batch_size} rows")
    empty = int((plain_counts[:, positive] == 0).sum())
    print(f"plain shuffling, batch_size={batch_size}: {len(plain)} batches, {empty} without a positive "
          f"({empty / len(plain):.1%}); positives per batch -> number of batches: "
          f"{_positives_summary(plain_counts[:, positive])}")
    print(f"pystratum MinPerStratum({MIN_POSITIVES}):    {plan.num_batches} batches, 0 without a "
          f"positive; positives per batch -> number of batches: "
          f"{_positives_summary(plan.counts[:, positive])}")
    print("pystratum's count table (batches numbered from 0):")
    print(plan.counts_table(max_rows=6))
    every_row_once = np.array_equal(np.sort(plan.order), np.arange(len(labels)))
    print(f"every row exactly once per epoch: {every_row_once}")
    return plain_counts, plan, strata


def plain_batch_size(plan) -> int:
    """Plain batches as large as pystratum's (on average), so only composition differs."""
    return int(round(plan.order.shape[0] / plan.num_batches))


def train(train_set, test_set, seeds, batch_size):
    """Held-out AUC after equal numbers of useful steps, per sampler and seed."""
    import torch
    from torch.utils.data import BatchSampler, DataLoader, RandomSampler, TensorDataset

    from pystratum.torch import StratifiedBatchSampler

    torch.set_num_threads(1)  # small model: threads cost more than they give
    features, labels = train_set
    test_x = torch.from_numpy(test_set[0])
    dataset = TensorDataset(torch.from_numpy(features), torch.from_numpy(labels))
    samplers = {
        "plain": lambda seed: BatchSampler(
            RandomSampler(dataset, generator=torch.Generator().manual_seed(seed)),
            batch_size=batch_size, drop_last=False),
        "pystratum": lambda seed: StratifiedBatchSampler(labels, MIN_POSITIVES, seed=seed),
    }
    results = {name: [] for name in samplers}
    section(f"training: linear scorer, pairwise squared-hinge ROC loss, SGD lr={LEARNING_RATE}, "
            f"{USEFUL_STEPS} useful steps each, {len(seeds)} seeds")
    print("Compared at equal numbers of useful gradient steps (a batch without both classes "
          "gives no pair, no loss and no step); held-out AUC on "
          f"{len(test_set[1]):,} fresh rows.", flush=True)
    for seed in seeds:
        for name, make_sampler in samplers.items():
            torch.manual_seed(seed)  # same initial weights for both samplers
            model = torch.nn.Linear(features.shape[1], 1)
            optimizer = torch.optim.SGD(model.parameters(), lr=LEARNING_RATE)
            loader = DataLoader(dataset, batch_sampler=make_sampler(seed))
            useful = wasted = 0
            curve = []
            start = time.perf_counter()
            while useful < USEFUL_STEPS:
                for x, y in loader:
                    scores = model(x).squeeze(1)
                    positive, negative = scores[y == 1], scores[y == 0]
                    if len(positive) == 0 or len(negative) == 0:
                        wasted += 1
                        continue
                    margins = 1 - (positive[:, None] - negative[None, :])
                    loss = torch.clamp(margins, min=0).pow(2).mean()
                    optimizer.zero_grad()
                    loss.backward()
                    optimizer.step()
                    useful += 1
                    if useful % EVAL_EVERY == 0:
                        with torch.no_grad():
                            curve.append(auc(model(test_x).squeeze(1).numpy(), test_set[1]))
                    if useful == USEFUL_STEPS:
                        break
            seconds = time.perf_counter() - start
            # One evaluation is a noisy snapshot of an SGD trajectory; the mean
            # over the second half of training is what a reader can rely on.
            late = float(np.mean(curve[len(curve) // 2:]))
            results[name].append({"seed": seed, "auc": curve[-1], "late_auc": late, "curve": curve,
                                  "wasted": wasted, "steps": useful + wasted,
                                  "seconds": seconds})
    half = USEFUL_STEPS // 2
    print(f"held-out AUC: 'final' after step {USEFUL_STEPS}; 'late' = mean of the evaluations "
          f"every {EVAL_EVERY} steps from step {half + EVAL_EVERY} on (less noisy than one "
          f"snapshot); mean, sd and range over seeds.")
    for name, runs in results.items():
        aucs = np.array([r["auc"] for r in runs])
        late = np.array([r["late_auc"] for r in runs])
        wasted = np.array([r["wasted"] for r in runs])
        steps = np.array([r["steps"] for r in runs])
        seconds = np.array([r["seconds"] for r in runs])
        print(f"{name:10s} final {aucs.mean():.4f} (sd {aucs.std(ddof=1):.4f}, "
              f"{aucs.min():.4f}-{aucs.max():.4f}); late {late.mean():.4f} "
              f"(sd {late.std(ddof=1):.4f}, {late.min():.4f}-{late.max():.4f}); "
              f"batches drawn {steps.mean():.0f}, "
              f"wasted {wasted.mean():.1f} ({wasted.sum() / steps.sum():.1%}); "
              f"{seconds.mean():.2f} s per run")
    _verdict(results)
    return results


def _verdict(results) -> None:
    plain = np.array([r["late_auc"] for r in results["plain"]])
    strat = np.array([r["late_auc"] for r in results["pystratum"]])
    diff = strat - plain  # paired by seed: same initial weights
    se = diff.std(ddof=1) / np.sqrt(diff.size) if diff.size > 1 else float("inf")
    wasted = sum(r["wasted"] for r in results["plain"]) / sum(r["steps"] for r in results["plain"])
    early = EVAL_EVERY * 5
    plain_early = np.mean([r["curve"][4] for r in results["plain"]])
    strat_early = np.mean([r["curve"][4] for r in results["pystratum"]])
    print(f"verdict: per seed, pystratum minus plain late held-out AUC = {diff.mean():+.4f} "
          f"(standard error {se:.4f} over {diff.size} paired seeds; pystratum higher in "
          f"{int((diff > 0).sum())} of {diff.size}).")
    if abs(diff.mean()) <= 2 * se:
        print("  No clear difference in held-out AUC at equal useful steps: within seed-to-seed "
              "noise, pystratum does not make this model better.")
    elif diff.mean() < 0:
        print("  Plain shuffling has the higher held-out AUC here: pystratum does not win on "
              "this metric.")
    else:
        print(f"  pystratum is higher by {diff.mean():.3f} AUC: a small effect on this linear "
              f"problem (plain batches with 0 or 1 positive give few, noisy pairs).")
    print(f"  After {early} useful steps: plain {plain_early:.4f}, pystratum {strat_early:.4f}.")
    print(f"  What pystratum does save: plain shuffling wasted {wasted:.1%} of its batches "
          f"(drawn, loaded, forwarded, then dropped for lack of a pair); every pystratum batch "
          f"gave a step. At equal wall time plain shuffling gets that many fewer steps.")


def write_figure(plain_counts, plan, strata, results, output) -> None:
    if importlib.util.find_spec("matplotlib") is None:
        section(f"figure: skipped (matplotlib is not installed: {INSTALL_PLOT})")
        return
    from pystratum.plot import composition_figure

    panels = [(f"plain shuffling, batch_size={plain_batch_size(plan)}", plain_counts, strata),
              plan.report().panel(f"pystratum MinPerStratum({MIN_POSITIVES})")]
    figure = composition_figure(panels, extra_axes=1 if results else 0)
    if results:
        ax = figure.axes[-1]
        for (name, runs), colour in zip(results.items(), ["#7f7f7f", "#1f77b4"]):
            curves = np.array([r["curve"] for r in runs])
            steps = EVAL_EVERY * np.arange(1, curves.shape[1] + 1)
            ax.plot(steps, curves.mean(axis=0), color=colour, label=f"{name} (mean)")
            ax.fill_between(steps, curves.min(axis=0), curves.max(axis=0), color=colour,
                            alpha=0.2, linewidth=0, label=f"{name} (min-max over seeds)")
        ax.set_xlabel("useful gradient steps")
        ax.set_ylabel("held-out AUC")
        ax.set_title(f"held-out AUC, {len(next(iter(results.values())))} seeds", fontsize=10,
                     loc="left")
        ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize=8, frameon=False)
    figure.savefig(output, dpi=110)
    section(f"figure written to {output}")


def same_batches_in_r(labels) -> None:
    section("same seed, same batches in Python and in R (rng='R', seed=42)")
    policies = [pystratum.MinPerStratum(MIN_POSITIVES), pystratum.FixedSize(100)]
    try:
        import pystratum.r as pr

        if not pr.r_package_available():
            raise RuntimeError("the R package pystratum is not installed in R "
                               "(R CMD INSTALL r from a checkout)")
    except (ImportError, RuntimeError) as error:
        print(f"R comparison skipped: {error}")
        return
    compared = 0
    for policy in policies:
        python_batches = pystratum.stratified_batches(labels, policy, seed=42, rng="R")
        r_batches = pr.stratified_batches(labels, policy, seed=42, rng="R")
        identical = len(r_batches) == len(python_batches) and all(
            np.array_equal(a, b) for a, b in zip(r_batches, python_batches))
        compared += len(python_batches)
        print(f"{policy!r}: Python {len(python_batches)} batches, R {len(r_batches)} batches; "
              f"first batch starts {(python_batches[0][:5] + 1).tolist()} (1-based) in both; "
              f"identical: {identical}")
        if not identical:
            raise SystemExit("Python and R disagree: this is a bug, please report it.")
    print(f"verdict: all {compared} batches identical, row for row.")


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(prog="python -m pystratum.demo", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--output", default="pystratum-demo.png",
                        help="where to write the figure (PNG); default: %(default)s")
    parser.add_argument("--seeds", type=int, default=5, help="training seeds (default: 5)")
    args = parser.parse_args(argv)
    started = time.perf_counter()
    features, labels = make_data()
    test_set = make_data(SEED + 1)
    plain_counts, plan, strata = compare_batches(labels)
    results = None
    if importlib.util.find_spec("torch") is None:
        section("training: skipped (PyTorch is not installed: pip install 'stratabatch[torch]')")
    else:
        results = train((features, labels), test_set, list(range(1, args.seeds + 1)),
                        plain_batch_size(plan))
    write_figure(plain_counts, plan, strata, results, args.output)
    same_batches_in_r(labels)
    print(f"\n(demo took {time.perf_counter() - started:.0f} s)")


if __name__ == "__main__":
    main()
