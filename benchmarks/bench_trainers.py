"""The sampler= face and the trainer integrations: what they cost over the plain paths.

Run: .venv/bin/python benchmarks/bench_trainers.py [--rows 1e6] [--repeats 5] [--skip-trainers]

1. ``StratifiedSampler`` through ``DataLoader(sampler=s, batch_size=s.batch_size)``
   vs ``DataLoader(batch_sampler=StratifiedBatchSampler(...))``, one epoch of the
   same batches (FixedSize(64), 3% positives), two ways:
   * sampler only: ``BatchSampler(s, batch_size)`` (what DataLoader wraps a sampler
     in) vs the batch sampler's epoch, no dataset: the flattening's own cost;
   * DataLoader over a ``TensorDataset`` (index + 4 features): what a user sees.
2. Per training step, on the same tiny model and data: the HF ``Trainer``'s own
   loader vs ``StratifiedTrainer``, and the sentence-transformers trainer's default
   batch sampler vs ``batch_sampler(FixedSize(...))``. Time of ``train()`` divided
   by its steps.

Every figure is the best of ``--repeats`` runs (least disturbed by other load);
ratio = pystratum / baseline.
"""

from __future__ import annotations

import argparse
import os
import platform
import tempfile
import time
import warnings

import numpy as np
import torch
from torch.utils.data import BatchSampler, DataLoader, TensorDataset

from pystratum.policies import FixedSize
from pystratum.torch import StratifiedBatchSampler, StratifiedSampler
from _timing import best as best_of


def labels_for(n_rows: int, positive_fraction: float = 0.03, seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    labels = np.zeros(n_rows, dtype=np.int64)
    labels[rng.choice(n_rows, int(n_rows * positive_fraction), replace=False)] = 1
    return labels


def best(function, repeats: int) -> float:
    return best_of(function, repeats, clock=time.perf_counter)


def consume(iterable) -> None:
    for _ in iterable:
        pass


def sampler_face(n_rows: int, batch_size: int, repeats: int) -> None:
    n_rows = n_rows // batch_size * batch_size  # even FixedSize batches (the sampler= face)
    labels = labels_for(n_rows)
    policy = FixedSize(batch_size)
    flat = StratifiedSampler(labels, policy, seed=1)
    batches = StratifiedBatchSampler(labels, policy, seed=1)
    # Same batches: checked once, outside the timing.
    assert [b for b in BatchSampler(flat, flat.batch_size, False)] == list(batches)
    rows = best(lambda: consume(BatchSampler(flat, flat.batch_size, False)), repeats)
    base = best(lambda: consume(batches), repeats)
    print(f"sampler only      N={n_rows:>9,} B={batch_size}: StratifiedSampler via BatchSampler "
          f"{rows:.3f} s, StratifiedBatchSampler {base:.3f} s, ratio {rows / base:.2f}")
    dataset = TensorDataset(torch.arange(n_rows), torch.randn(n_rows, 4))
    flat_loader = DataLoader(dataset, sampler=flat, batch_size=flat.batch_size)
    batch_loader = DataLoader(dataset, batch_sampler=batches)
    rows = best(lambda: consume(flat_loader), repeats)
    base = best(lambda: consume(batch_loader), repeats)
    print(f"DataLoader        N={n_rows:>9,} B={batch_size}: sampler= {rows:.3f} s, "
          f"batch_sampler= {base:.3f} s, ratio {rows / base:.2f}")


def hf_step_seconds(stratified: bool, n_rows: int, batch_size: int) -> float:
    import datasets
    from transformers import (BertConfig, BertForSequenceClassification, Trainer,
                              TrainingArguments)

    from pystratum.integrations.transformers import StratifiedTrainer

    labels = labels_for(n_rows, 0.1)
    data = datasets.Dataset.from_dict({"input_ids": [[1, r % 500 + 2] for r in range(n_rows)],
                                       "labels": labels.tolist()})
    torch.manual_seed(0)
    model = BertForSequenceClassification(BertConfig(
        vocab_size=502, hidden_size=16, num_hidden_layers=1, num_attention_heads=2,
        intermediate_size=16, max_position_embeddings=4, num_labels=2))
    with tempfile.TemporaryDirectory() as out:
        args = TrainingArguments(output_dir=out, per_device_train_batch_size=batch_size,
                                 num_train_epochs=1, use_cpu=True, report_to=[],
                                 save_strategy="no", logging_strategy="no", disable_tqdm=True)
        if stratified:
            trainer = StratifiedTrainer(model=model, args=args, train_dataset=data,
                                        strata="labels")
        else:
            trainer = Trainer(model=model, args=args, train_dataset=data)
        start = time.perf_counter()
        output = trainer.train()
        return (time.perf_counter() - start) / output.global_step


def st_step_seconds(stratified: bool, n_rows: int, batch_size: int) -> float:
    import datasets
    from sentence_transformers import (SentenceTransformer, SentenceTransformerTrainer,
                                       SentenceTransformerTrainingArguments)
    from sentence_transformers.sentence_transformer import losses
    from sentence_transformers.sentence_transformer.modules import StaticEmbedding
    from tokenizers import Tokenizer
    from tokenizers.models import WordLevel
    from tokenizers.pre_tokenizers import Whitespace

    from pystratum.integrations.sentence_transformers import batch_sampler

    labels = labels_for(n_rows, 0.1)
    tokenizer = Tokenizer(WordLevel({"[UNK]": 500} | {f"w{i}": i for i in range(500)},
                                    unk_token="[UNK]"))
    tokenizer.pre_tokenizer = Whitespace()
    torch.manual_seed(0)
    model = SentenceTransformer(modules=[StaticEmbedding(tokenizer, embedding_dim=16)],
                                device="cpu")
    data = datasets.Dataset.from_dict({"sentence": [f"w{r % 500}" for r in range(n_rows)],
                                       "label": labels.tolist()})
    with tempfile.TemporaryDirectory() as out:
        extra = {"batch_sampler": batch_sampler(strata_column="label")} if stratified else {}
        args = SentenceTransformerTrainingArguments(
            output_dir=out, per_device_train_batch_size=batch_size, num_train_epochs=1,
            use_cpu=True, report_to=[], save_strategy="no", logging_strategy="no",
            disable_tqdm=True, **extra)
        trainer = SentenceTransformerTrainer(model=model, args=args, train_dataset=data,
                                             loss=losses.BatchAllTripletLoss(model))
        start = time.perf_counter()
        output = trainer.train()
        return (time.perf_counter() - start) / output.global_step


def trainers(n_rows: int, batch_size: int, repeats: int) -> None:
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    warnings.filterwarnings("ignore")
    for name, step in (("HF Trainer", hf_step_seconds), ("sentence-transformers", st_step_seconds)):
        # Alternate the two, so slow phases of other load hit both alike.
        plain, ours = [], []
        for _ in range(repeats):
            plain.append(step(False, n_rows, batch_size))
            ours.append(step(True, n_rows, batch_size))
        print(f"{name:<22} {n_rows} rows, batch {batch_size}: default loader "
              f"{min(plain) * 1e3:.2f} ms/step, pystratum {min(ours) * 1e3:.2f} ms/step, "
              f"ratio {min(ours) / min(plain):.3f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=float, default=1e6)
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--trainer-rows", type=int, default=4096)
    parser.add_argument("--skip-trainers", action="store_true")
    args = parser.parse_args()
    torch.set_num_threads(1)
    print(f"python {platform.python_version()}, torch {torch.__version__}, numpy "
          f"{np.__version__}, {platform.machine()}; best of {args.repeats}\n")
    sampler_face(int(args.rows), args.batch_size, args.repeats)
    if not args.skip_trainers:
        trainers(args.trainer_rows, 32, args.repeats)


if __name__ == "__main__":
    main()
