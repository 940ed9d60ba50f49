"""ClassesPerBatch(16, 4) epochs beside numpy's permutation and the peers' P x K samplers.

Run: .venv/bin/python benchmarks/bench_classes_per_batch.py [--rows 1e6] [--classes 1e4]
     [--repeats 5] [--peer] [--mode proportional|uniform] [--rng numpy|index]

Labels: ``--classes`` classes, sizes drawn 4-400 with a long tail (Pareto),
then scaled (at least 4) to about ``--rows`` rows in all; the first line
printed gives the sizes' range. Times one ``plan_batches`` epoch (numpy stream)
against ``default_rng().permutation(N)``, alternately, best of
``--repeats``, CPU seconds (``time.process_time``: ratios stay meaningful
on a loaded machine). The target is a ratio within 2. ``--mode uniform``:
``ClassesPerBatch(16, 4, classes="uniform")``, its epochs taken far into
training (epoch 1000 on), where a class of 4 rows is in its 25,000th pass,
so that the closed-form pass offsets and reordered pass heads are timed;
``--rng``: the stream of our epochs.

``--peer``: also one epoch of each peer over the same rows, timed once (CPU
seconds, construction included), and the composition of every sampler's
epoch (:func:`audit`):

* pytorch-metric-learning ``MPerClassSampler(labels, m=4, batch_size=64,
  length_before_new_iter=N)``, its flat list cut into batches of 64 as a
  ``DataLoader(batch_size=64)`` would;
* sentence-transformers' GROUP_BY_LABEL batch sampler
  (``GroupByLabelBatchSampler(dataset, batch_size=64, drop_last=False,
  valid_label_columns=["label"], generator=, seed=0)``, the constructor of
  the installed version) over a ``datasets.Dataset`` of the labels, when
  the ``hf`` extra is installed (otherwise the line says it is not).
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from pystratum import plan_batches
from pystratum.policies import ClassesPerBatch
from _timing import best

P, K = 16, 4


def long_tail_labels(rows: int, classes: int, seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    sizes = np.clip(4 + rng.pareto(1.2, classes) * 30, 4, 400)
    sizes = np.maximum(4, (sizes * rows / sizes.sum()).astype(np.int64))
    return rng.permutation(np.repeat(np.arange(classes), sizes))


def audit(labels: np.ndarray, batches, classes_per_batch: int) -> dict:
    """What an epoch of ``batches`` (index sequences into ``labels``) gives a P x K loss.

    rows_served: share of the N rows in at least one batch; rows_left_out:
    their complement, in rows. classes: the fewest and most distinct
    classes in a batch; few_classes: batches with fewer than
    ``classes_per_batch`` of them. no_positive: batches holding a
    row whose class has no *other* row in the batch (batch-hard mining has
    no positive for it). repeated: batches holding a row twice. overlap:
    the most classes two consecutive batches share. appearances: min,
    median and max over the classes of the number of batches a class is in.
    """
    n, n_classes = labels.shape[0], int(labels.max()) + 1
    sizes = np.fromiter((len(b) for b in batches), dtype=np.int64, count=len(batches))
    rows = np.concatenate([np.asarray(b, dtype=np.int64) for b in batches])
    batch = np.repeat(np.arange(len(batches), dtype=np.int64), sizes)
    distinct_rows = np.unique(batch * n + rows)
    repeated = np.bincount(batch, minlength=len(batches)) > np.bincount(
        distinct_rows // n, minlength=len(batches))
    # (batch, class) pairs over distinct rows, with the rows each pair holds.
    pairs, per_pair = np.unique((distinct_rows // n) * n_classes + labels[distinct_rows % n],
                                return_counts=True)
    pair_batch, pair_class = pairs // n_classes, pairs % n_classes
    classes_in = np.bincount(pair_batch, minlength=len(batches))
    lone = np.bincount(pair_batch[per_pair == 1], minlength=len(batches)) > 0
    shared = np.isin(pairs + n_classes, pairs)  # the class is in the next batch too
    appearances = np.bincount(pair_class, minlength=n_classes)
    served = np.unique(rows).shape[0]
    return {"batches": len(batches), "rows_served": served / n, "rows_left_out": n - served,
            "classes": (int(classes_in.min()), int(classes_in.max())),
            "few_classes": int((classes_in < classes_per_batch).sum()),
            "no_positive": int(lone.sum()), "repeated": int(repeated.sum()),
            "overlap": int(np.bincount(pair_batch[shared], minlength=1).max()),
            "appearances": (int(appearances.min()), float(np.median(appearances)),
                            int(appearances.max()))}


def _cut(flat, size: int) -> list:
    flat = np.asarray(flat, dtype=np.int64)
    return [flat[i:i + size] for i in range(0, flat.shape[0], size)]


def mper_class_epoch(labels: np.ndarray):
    """A function making MPerClassSampler's epoch (imports done: they are no part of it)."""
    from pytorch_metric_learning.samplers import MPerClassSampler

    def epoch():
        sampler = MPerClassSampler(labels, K, batch_size=P * K,
                                   length_before_new_iter=labels.size)
        return _cut(list(iter(sampler)), P * K)
    return epoch


def group_by_label_epoch(labels: np.ndarray):
    """A function making GROUP_BY_LABEL's epoch (dataset built), or why it cannot run here."""
    try:
        import datasets
        import torch
        try:
            from sentence_transformers.base.sampler import GroupByLabelBatchSampler
        except ImportError:  # before sentence-transformers 6
            from sentence_transformers.sampler import GroupByLabelBatchSampler
    except ImportError as error:
        return f"not installed ({error.name}; the hf extra)"
    dataset = datasets.Dataset.from_dict({"label": labels})

    def epoch():
        sampler = GroupByLabelBatchSampler(dataset, batch_size=P * K, drop_last=False,
                                           valid_label_columns=["label"],
                                           generator=torch.Generator(), seed=0)
        return list(iter(sampler))
    return epoch


def _timed(make):
    start = time.process_time()
    result = make()
    return result, time.process_time() - start


def _line(name: str, seconds: float, ours: float, report: dict) -> str:
    low, median, high = report["appearances"]
    fewest, most = report["classes"]
    return (f"{name}: {seconds:.3f} s CPU ({seconds / ours:.0f}x ours), {report['batches']:,} "
            f"batches of {fewest}-{most} classes, rows served {report['rows_served']:.1%} "
            f"({report['rows_left_out']:,} left out), batches with < {P} classes "
            f"{report['few_classes']:,}, with an anchor without a positive "
            f"{report['no_positive']:,}, with a row twice "
            f"{report['repeated']:,}; most classes shared by consecutive batches "
            f"{report['overlap']}; batches per class min/median/max {low}/{median:g}/{high}")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rows", type=float, default=1e6)
    parser.add_argument("--classes", type=float, default=1e4)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--peer", action="store_true")
    parser.add_argument("--mode", choices=["proportional", "uniform"], default="proportional")
    parser.add_argument("--rng", choices=["numpy", "index"], default="numpy")
    args = parser.parse_args()
    labels = long_tail_labels(int(args.rows), int(args.classes))
    n = labels.shape[0]
    policy = ClassesPerBatch(P, K, classes=args.mode)
    plan_batches(labels, policy, seed=0, rng=args.rng)  # warm-up (numba compilation, caches)
    epochs = iter(range(1000 if args.mode == "uniform" else 0, 10**6))
    ours, numpy_time = [], []
    for _ in range(args.repeats):
        ours.append(best(lambda: plan_batches(labels, policy, seed=1, rng=args.rng,
                                              epoch=next(epochs)), 1))
        numpy_time.append(best(lambda: np.random.default_rng().permutation(n), 1))
    plan = plan_batches(labels, policy, seed=1, rng=args.rng)
    sizes = np.bincount(labels)
    print(f"N={n:,} classes={int(args.classes):,} (sizes min/median/max {sizes.min()}/"
          f"{np.median(sizes):g}/{sizes.max()}) batches={plan.num_batches:,}")
    print(f"{policy!r} epoch (rng={args.rng!r}): {min(ours):.4f} s CPU; permutation(N): "
          f"{min(numpy_time):.4f} s; ratio {min(ours) / min(numpy_time):.2f}")
    if args.peer:
        print(_line(f"ClassesPerBatch({P}, {K}, classes={args.mode!r})", min(ours), min(ours),
                    audit(labels, list(plan), P)))
        batches, seconds = _timed(mper_class_epoch(labels))
        print(_line(f"MPerClassSampler(m={K}, batch_size={P * K}, length_before_new_iter=N)",
                    seconds, min(ours), audit(labels, batches, P)))
        name = f"GroupByLabelBatchSampler(batch_size={P * K})"
        epoch = group_by_label_epoch(labels)
        if isinstance(epoch, str):
            print(f"{name}: {epoch}")
        else:
            batches, seconds = _timed(epoch)
            print(_line(name, seconds, min(ours), audit(labels, batches, P)))


if __name__ == "__main__":
    main()
