"""MultiLabel against plain shuffling, label combinations as strata and MultilabelStratifiedKFold.

Run from the repository root:
    python benchmarks/bench_multi_label.py [--rows 1000000] [--kfold-rows 100000]
Prints a Markdown section (the figures in benchmarks/results_focused.md). The
MultilabelStratifiedKFold row needs the ``bench`` extra (iterative-stratification);
install it with ``pip install --target DIR iterative-stratification``, remove the
top-level ``DIR/tests`` it ships (it would shadow this repository's tests/), and
put DIR on PYTHONPATH.
"""

from __future__ import annotations

import argparse
import time

import numpy as np


def correlated_labels(n_rows, n_labels=20, low=0.002, high=0.3, factors=3, seed=0):
    """(N, L) bool labels with prevalences log-spaced from ``low`` to ``high`` that co-occur.

    Each row has ``factors`` latent normal scores; label ``l`` is on when a
    label-specific mix of them plus noise passes the quantile giving its
    prevalence, so labels sharing a factor appear together (as findings of
    one disease or topics of one field do).
    """
    rng = np.random.default_rng(seed)
    latent = rng.standard_normal((n_rows, factors)).astype(np.float32)
    prevalence = np.geomspace(low, high, n_labels)
    labels = np.zeros((n_rows, n_labels), dtype=bool)
    for column in range(n_labels):
        mix = rng.standard_normal(factors).astype(np.float32)
        mix /= np.linalg.norm(mix)
        score = latent @ mix * 0.8 + rng.standard_normal(n_rows).astype(np.float32) * 0.6
        cut = np.quantile(score, 1 - prevalence[column])
        labels[:, column] = score > cut
    return labels


def batch_label_counts(labels, batches):
    batch = np.empty(labels.shape[0], dtype=np.int64)
    for b, rows in enumerate(batches):
        batch[rows] = b
    counts = np.zeros((len(batches), labels.shape[1]), dtype=np.int64)
    for column in range(labels.shape[1]):
        counts[:, column] = np.bincount(batch[labels[:, column]], minlength=len(batches))
    return counts


def figures(labels, counts):
    n_batches = counts.shape[0]
    sizes = labels.sum(axis=0)
    enough = sizes >= n_batches
    missing = (counts[:, enough] == 0)
    return {"batches missing a label (N_l >= B)": float(missing.any(axis=1).mean()),
            "zero cells (N_l >= B)": int(missing.sum()),
            "largest per-label spread": int((counts.max(axis=0) - counts.min(axis=0)).max())}


def cpu_time(function, repeat=3):
    best = None
    for _ in range(repeat):
        start = time.process_time()
        result = function()
        spent = time.process_time() - start
        best = spent if best is None else min(best, spent)
    return best, result


def shuffled_batches(n_rows, batch_size, seed):
    order = np.random.default_rng(seed).permutation(n_rows)
    return np.array_split(order, -(-n_rows // batch_size))


def combination_batches(labels, batch_size, seed):
    """Label combinations as strata, each spread proportionally (round robin) over B batches.

    pystratum's stratum policies cannot take them: with singleton combinations
    ``MinPerStratum(1)`` makes one batch and ``FixedSize`` refuses. So the
    classic proportional split: rows sorted by combination (random order
    inside), row k of that order into batch k mod B.
    """
    n_rows = labels.shape[0]
    n_batches = -(-n_rows // batch_size)
    weights = 1 << np.arange(labels.shape[1], dtype=np.int64)
    codes = labels.astype(np.int64) @ weights
    shuffled = np.random.default_rng(seed).permutation(n_rows)
    ordered = shuffled[np.argsort(codes[shuffled], kind="stable")]
    batch = np.arange(n_rows) % n_batches
    return [ordered[batch == b] for b in range(n_batches)]


def kfold_batches(labels, n_batches, seed):
    from iterstrat.ml_stratifiers import MultilabelStratifiedKFold

    folds = MultilabelStratifiedKFold(n_splits=n_batches, shuffle=True, random_state=seed)
    return [test for _, test in folds.split(np.zeros(labels.shape[0]), labels.astype(int))]


def main():
    from pystratum import plan_batches
    from pystratum.policies import MultiLabel

    parser = argparse.ArgumentParser()
    parser.add_argument("--rows", type=int, default=10**6)
    parser.add_argument("--batch-size", type=int, default=256)
    parser.add_argument("--kfold-rows", type=int, default=10**5)
    arguments = parser.parse_args()
    n_rows, batch_size = arguments.rows, arguments.batch_size
    labels = correlated_labels(n_rows)
    n_batches = -(-n_rows // batch_size)
    print(f"## MultiLabel: N = {n_rows:,}, {labels.shape[1]} labels "
          f"(prevalence {labels.mean(axis=0).min():.4f}..{labels.mean(axis=0).max():.3f}, "
          f"{labels.sum(axis=1).mean():.2f} labels per row), batch_size = {batch_size} "
          f"(B = {n_batches:,})\n")
    base, _ = cpu_time(lambda: np.random.default_rng().permutation(n_rows))
    multi, plan = cpu_time(lambda: plan_batches(labels, MultiLabel(batch_size), seed=1))
    print(f"- CPU time: permutation(N) {base * 1e3:.1f} ms, MultiLabel epoch "
          f"{multi * 1e3:.1f} ms: ratio {multi / base:.1f}x (target <= 5x)")
    split, _ = cpu_time(lambda: plan_batches(labels, MultiLabel(batch_size,
                                                                batch_order="split_safe"), seed=1))
    print(f"- batch_order='split_safe' (rows interleaved by placing label): "
          f"{split * 1e3:.1f} ms, {split / multi:.2f}x the default order's epoch")
    import tracemalloc

    tracemalloc.start()
    plan_batches(labels, MultiLabel(batch_size), seed=1)
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    print(f"- peak memory of the epoch beyond the label matrix ({labels.nbytes / 1e6:.0f} MB): "
          f"{peak / 1e6:.0f} MB, {peak / n_rows:.0f} bytes per row (the plan's int64 order "
          f"alone is 8 per row)")
    rows = [("MultiLabel", figures(labels, plan.counts)),
            ("plain shuffling", figures(labels, batch_label_counts(
                labels, shuffled_batches(n_rows, batch_size, 1)))),
            ("label combinations as strata (proportional)", figures(labels, batch_label_counts(
                labels, combination_batches(labels, batch_size, 1))))]
    print("\n| batcher | batches missing a label (N_l >= B) | zero cells | largest spread |")
    print("|---|---|---|---|")
    for name, values in rows:
        print(f"| {name} | {values['batches missing a label (N_l >= B)']:.3f} | "
              f"{values['zero cells (N_l >= B)']} | {values['largest per-label spread']} |")
    try:
        import iterstrat  # noqa: F401
    except ImportError:
        print("\niterative-stratification is not installed: no MultilabelStratifiedKFold row.")
        return
    small = labels[: arguments.kfold_rows]
    k_batches = -(-small.shape[0] // batch_size)
    ours, ours_plan = cpu_time(lambda: plan_batches(small, MultiLabel(batch_size), seed=1))
    theirs, folds = cpu_time(lambda: kfold_batches(small, k_batches, 1), repeat=1)
    a, b = figures(small, ours_plan.counts), figures(small, batch_label_counts(small, folds))
    print(f"\n### Against MultilabelStratifiedKFold(n_splits=B) at N = {small.shape[0]:,} "
          f"(B = {k_batches:,})\n")
    print("| batcher | CPU time | zero cells (N_l >= B) | largest spread |")
    print("|---|---|---|---|")
    print(f"| MultiLabel | {ours:.3f} s | {a['zero cells (N_l >= B)']} | "
          f"{a['largest per-label spread']} |")
    print(f"| MultilabelStratifiedKFold | {theirs:.1f} s | {b['zero cells (N_l >= B)']} | "
          f"{b['largest per-label spread']} |")
    print(f"\nTime ratio: {theirs / ours:.0f}x faster (target 100x).")


if __name__ == "__main__":
    main()
