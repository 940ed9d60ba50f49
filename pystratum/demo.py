"""The pystratum demo: why stratified batches, and the same batches in R.

Run:  python -m pystratum.demo      (or: bash .ci/dev demo, which also sets up)

1. On data with 3% positives, plain shuffled batches often hold no positive
   row; pystratum's batches always hold every class.
2. A pairwise (ROC-style) loss is undefined on a batch without both classes:
   training with a torch DataLoader wastes those steps with plain batches,
   none with pystratum's sampler.
3. With rng="R" and a seed, Python and R (the pystratum R package, run in
   embedded R) give identical batches.
"""

from __future__ import annotations

import importlib.util

import numpy as np

import pystratum

N_ROWS = 20_000
POSITIVE_RATE = 0.03
SEED = 2025


def make_data(seed: int = SEED):
    rng = np.random.default_rng(seed)
    labels = (rng.random(N_ROWS) < POSITIVE_RATE).astype(np.int64)
    features = rng.normal(size=(N_ROWS, 5)) + labels[:, None] * 0.8
    return features.astype(np.float32), labels


def section(title: str) -> None:
    print(f"\n== {title}")


def compare_batches(labels) -> None:
    plan = pystratum.plan_batches(labels, 1, seed=SEED)
    batch_size = int(np.ceil(len(labels) / plan.num_batches))
    plain = np.array_split(np.random.default_rng(SEED).permutation(len(labels)), plan.num_batches)
    plain_without_positive = sum(int(labels[b].sum() == 0) for b in plain)
    section(f"{len(labels):,} rows, {labels.sum()} positives ({labels.mean():.1%})")
    print(f"plain shuffled batches of ~{batch_size} rows: {plain_without_positive} of "
          f"{len(plain)} hold no positive row ({plain_without_positive / len(plain):.0%})")
    positives = plan.counts[:, list(plan.strata).index(1)]
    print(f"pystratum.plan_batches(labels, min_samples_per_stratum=1): {plan.num_batches} batches, "
          f"positives per batch {positives.min()}..{positives.max()}, every row once: "
          f"{np.array_equal(np.sort(plan.order), np.arange(len(labels)))}")
    print(plan.counts_table(max_rows=6))


def train(features, labels) -> None:
    if importlib.util.find_spec("torch") is None:
        section("training: skipped (PyTorch is not installed: pip install 'pystratum[torch]')")
        return
    import torch
    from torch.utils.data import BatchSampler, DataLoader, RandomSampler, TensorDataset

    from pystratum.torch import StratifiedBatchSampler

    dataset = TensorDataset(torch.from_numpy(features), torch.from_numpy(labels))
    stratified = StratifiedBatchSampler(labels, 1, seed=SEED)
    plain = BatchSampler(RandomSampler(dataset, generator=torch.Generator().manual_seed(SEED)),
                         batch_size=int(np.ceil(len(labels) / len(stratified))), drop_last=False)
    section("training a linear scorer with a pairwise squared-hinge loss (2 epochs)")
    for name, batch_sampler in [("plain RandomSampler batches", plain),
                                ("pystratum StratifiedBatchSampler", stratified)]:
        torch.manual_seed(SEED)
        model = torch.nn.Linear(features.shape[1], 1)
        optimizer = torch.optim.SGD(model.parameters(), lr=0.05)
        loader = DataLoader(dataset, batch_sampler=batch_sampler)
        steps = wasted = 0
        for _epoch in range(2):
            for x, y in loader:
                steps += 1
                scores = model(x).squeeze(1)
                positive, negative = scores[y == 1], scores[y == 0]
                if len(positive) == 0 or len(negative) == 0:
                    wasted += 1  # no pair: the loss is undefined, the step is lost
                    continue
                margins = 1 - (positive[:, None] - negative[None, :])
                loss = torch.clamp(margins, min=0).pow(2).mean()
                optimizer.zero_grad()
                loss.backward()
                optimizer.step()
        with torch.no_grad():
            auc = _auc(model(torch.from_numpy(features)).squeeze(1).numpy(), labels)
        print(f"{name:34s} steps {steps:5d}, wasted {wasted:5d} ({wasted / steps:.0%}), "
              f"train AUC {auc:.3f}")


def _auc(scores, labels) -> float:
    order = np.argsort(scores, kind="stable")
    ranks = np.empty(len(scores))
    ranks[order] = np.arange(1, len(scores) + 1)
    n_pos = labels.sum()
    n_neg = len(labels) - n_pos
    return float((ranks[labels == 1].sum() - n_pos * (n_pos + 1) / 2) / (n_pos * n_neg))


def same_batches_in_r(labels) -> None:
    section("same seed, same batches in Python and R (rng='R', seed=42)")
    python_batches = pystratum.stratified_batches(labels, 10, seed=42, rng="R")
    print(f"Python: {len(python_batches)} batches; first batch starts "
          f"{(python_batches[0][:6] + 1).tolist()} (1-based)")
    try:
        import pystratum.r as pr

        r_batches = pr.stratified_batches(labels, 10, seed=42, rng="R")
    except (ImportError, RuntimeError) as error:
        print(f"R comparison skipped: {error}")
        return
    identical = len(r_batches) == len(python_batches) and all(
        np.array_equal(a, b) for a, b in zip(r_batches, python_batches)
    )
    print(f"R:      {len(r_batches)} batches; first batch starts "
          f"{(r_batches[0][:6] + 1).tolist()} (1-based)")
    print(f"identical batch assignment: {identical}")
    if not identical:
        raise SystemExit("Python and R disagree: this is a bug, please report it.")


def main() -> None:
    features, labels = make_data()
    compare_batches(labels)
    train(features, labels)
    same_batches_in_r(labels)


if __name__ == "__main__":
    main()
