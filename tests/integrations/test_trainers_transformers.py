"""StratifiedTrainer with the real transformers (the hf extra): the batches each training
step actually ran on, one process and two, and after a resume from a checkpoint."""

from __future__ import annotations

import logging
import os

import numpy as np
import pytest

os.environ.setdefault("HF_HUB_OFFLINE", "1")  # nothing is downloaded: models come from configs

from transformers import TrainingArguments  # noqa: E402

from _torch_helpers import hf_rows_dataset, hf_tiny_classifier, run_ranks  # noqa: E402
from pystratum.integrations.transformers import StratifiedTrainer  # noqa: E402
from pystratum.policies import MinPerStratum, Targets  # noqa: E402
from pystratum.torch import StratifiedBatchSampler  # noqa: E402

LABELS = np.random.default_rng(1).permutation(np.repeat([0, 1], [40, 8]))  # 48 rows, 17% ones


def arguments(tmp_path, batch_size=8, epochs=2, **kwargs):
    kwargs.setdefault("save_strategy", "no")
    return TrainingArguments(
        output_dir=str(tmp_path / "out"), per_device_train_batch_size=batch_size,
        num_train_epochs=epochs, use_cpu=True, report_to=[], logging_strategy="no",
        disable_tqdm=True, seed=7, **kwargs)


def planned(policy, epochs, seed=7):
    sampler = StratifiedBatchSampler(LABELS, policy, seed=seed)
    return [[list(map(int, b)) for b in sampler.plan(e).batches] for e in range(epochs)]


def test_default_policy_is_fixed_size_of_the_per_device_batch(tmp_path):
    model, seen = hf_tiny_classifier(len(LABELS))
    trainer = StratifiedTrainer(model=model, args=arguments(tmp_path),
                                train_dataset=hf_rows_dataset(LABELS), strata="group")
    trainer.train()
    from pystratum.policies import FixedSize

    assert trainer.policy == FixedSize(8)
    expected = planned(FixedSize(8), 2)
    assert seen == expected[0] + expected[1]  # every step, both epochs, in order
    for batch in seen:  # the composition: 8 rows, the minority 1 or 2 of them
        assert len(batch) == 8 and 1 <= LABELS[batch].sum() <= 2


def test_targets_with_labels_given_as_an_array(tmp_path):
    policy = Targets({0: 0.5, 1: 0.5}, 8)
    model, seen = hf_tiny_classifier(len(LABELS))
    trainer = StratifiedTrainer(model=model, args=arguments(tmp_path, epochs=1),
                                train_dataset=hf_rows_dataset(LABELS), strata=LABELS,
                                policy=policy)
    trainer.train()
    assert seen == planned(policy, 1)[0]
    assert all(LABELS[batch].sum() == 4 for batch in seen)  # half minority, every step


def test_a_fixed_size_policy_must_match_per_device_train_batch_size(tmp_path):
    model, _ = hf_tiny_classifier(len(LABELS))
    with pytest.raises(ValueError, match=r"^per_device_train_batch_size must equal the batch "
                                         r"size of policy=Targets.*\(16 rows\), got "
                                         r"per_device_train_batch_size=8"):
        StratifiedTrainer(model=model, args=arguments(tmp_path),
                          train_dataset=hf_rows_dataset(LABELS), strata="group",
                          policy=Targets({0: 0.5, 1: 0.5}, 16))


def test_a_policy_sized_by_the_data_logs_the_sizes_it_serves(tmp_path, caplog):
    model, seen = hf_tiny_classifier(len(LABELS))
    trainer = StratifiedTrainer(model=model, args=arguments(tmp_path, batch_size=3, epochs=1),
                                train_dataset=hf_rows_dataset(LABELS), strata="group",
                                policy=MinPerStratum(2))
    with caplog.at_level(logging.WARNING, logger="pystratum.integrations.transformers"):
        trainer.train()
    assert "MinPerStratum(m=2) serves 4 batches of 12 rows per epoch" in caplog.text
    assert "per_device_train_batch_size=3 is not used" in caplog.text
    assert seen == planned(MinPerStratum(2), 1)[0]
    assert all(LABELS[batch].sum() == 2 for batch in seen)


def test_a_missing_column_is_named(tmp_path):
    model, _ = hf_tiny_classifier(len(LABELS))
    with pytest.raises(ValueError, match=r"^strata must name a column of the training dataset, "
                                         r"got strata='grup'"):  # at construction
        StratifiedTrainer(model=model, args=arguments(tmp_path),
                          train_dataset=hf_rows_dataset(LABELS), strata="grup")


def test_an_infeasible_per_device_batch_size_is_refused_at_construction_naming_it(tmp_path):
    # 48 rows in batches of 64: one batch, refused before train(), naming the
    # trainer's own setting (the user never wrote FixedSize or its batch_size).
    model, _ = hf_tiny_classifier(len(LABELS))
    with pytest.raises(ValueError, match=r"^per_device_train_batch_size=64 cannot be served on "
                                         r"this training set .* smaller "
                                         r"per_device_train_batch_size"):
        StratifiedTrainer(model=model, args=arguments(tmp_path, batch_size=64),
                          train_dataset=hf_rows_dataset(LABELS), strata="group")


@pytest.mark.parametrize("checkpoint", [4, 9])  # mid-epoch 0, mid-epoch 1
def test_resuming_from_a_checkpoint_serves_the_remaining_batches(tmp_path, checkpoint):
    model, full = hf_tiny_classifier(len(LABELS))
    trainer = StratifiedTrainer(
        model=model, args=arguments(tmp_path, save_strategy="steps", save_steps=checkpoint),
        train_dataset=hf_rows_dataset(LABELS), strata="group")
    trainer.train()
    assert len(full) == 12
    model, resumed = hf_tiny_classifier(len(LABELS), seed=1)
    trainer = StratifiedTrainer(
        model=model, args=arguments(tmp_path, save_strategy="no"),
        train_dataset=hf_rows_dataset(LABELS), strata="group")
    trainer.train(resume_from_checkpoint=str(tmp_path / "out" / f"checkpoint-{checkpoint}"))
    assert resumed == full[checkpoint:]


def test_two_processes_each_train_on_whole_stratified_batches_and_resume(tmp_path):
    # 6 batches per epoch, 3 steps per process and epoch; the checkpoint at step 4 is in the
    # second epoch, where set_epoch must reach the sampler through accelerate's skipping.
    config = {"labels": LABELS.tolist(), "batch_size": 8, "epochs": 2, "seed": 7,
              "output_dir": str(tmp_path / "out"), "resume_at": 4}
    results = run_ranks("hf_trainer_worker", 2, config, tmp_path, timeout=500,
                        extra_env={"HF_HUB_OFFLINE": "1"})
    assert [r["world"] for r in results] == [2, 2]
    from pystratum.policies import FixedSize

    expected = planned(FixedSize(8), 2)
    for rank, result in enumerate(results):
        # Process r trains on batches r, r + 2, r + 4 of every epoch, whole.
        assert result["steps"] == expected[0][rank::2] + expected[1][rank::2]
        assert result["resumed"] == result["steps"][4:]


class DictRows:
    """A plain torch-style dataset of dicts (no named columns)."""

    def __init__(self, labels):
        self.labels = labels

    def __len__(self):
        return len(self.labels)

    def __getitem__(self, row):
        import torch

        return {"input_ids": torch.tensor([1, row + 2]),
                "labels": torch.tensor(int(self.labels[row]))}


def test_a_torch_dataset_takes_the_labels_as_an_array(tmp_path):
    model, seen = hf_tiny_classifier(len(LABELS))
    trainer = StratifiedTrainer(model=model, args=arguments(tmp_path, epochs=1),
                                train_dataset=DictRows(LABELS), strata=LABELS)
    trainer.train()
    from pystratum.policies import FixedSize

    assert seen == planned(FixedSize(8), 1)[0]
    # Refused at construction, before any training.
    with pytest.raises(TypeError, match=r"^strata must be labels \(one per row\) when the "
                                        r"dataset has no named columns, got strata='labels'"):
        StratifiedTrainer(model=model, args=arguments(tmp_path, epochs=1),
                          train_dataset=DictRows(LABELS), strata="labels")
    with pytest.raises(ValueError, match=r"^strata has 47 labels but the dataset has 48 rows"):
        StratifiedTrainer(model=model, args=arguments(tmp_path, epochs=1),
                          train_dataset=DictRows(LABELS), strata=LABELS[:-1])


def test_the_documented_sampler_recipe_under_accelerate_covers_every_row():
    # StratifiedSampler inside Trainer._get_train_sampler: accelerate shards the loader's
    # batches across processes (BatchSamplerShard), so the sampler must not shard too
    # (num_replicas=1, rank=0, as the docs say); the defaults of a 2-process group lose half.
    from accelerate.data_loader import BatchSamplerShard
    from torch.utils.data import BatchSampler

    from pystratum.torch import StratifiedSampler

    labels = np.arange(64) % 2

    def trained(num_replicas):
        rows = []
        for rank in range(2):
            sampler = StratifiedSampler(labels, batch_size=8, seed=1,
                                        num_replicas=num_replicas, rank=rank % num_replicas)
            shard = BatchSamplerShard(BatchSampler(sampler, 8, False), num_processes=2,
                                      process_index=rank)
            rows += [row for batch in shard for row in batch]
        return rows

    assert sorted(trained(1)) == list(range(64))  # the recipe: every row once
    assert len(set(trained(2))) == 32  # sharded twice: half the rows never trained


def test_the_loader_keeps_the_trainers_worker_settings(tmp_path):
    # What Trainer._get_dataloader passes to DataLoader besides the sampler must reach the
    # stratified loader too: the workers' start method and seeding, the in-order delivery.
    from transformers import Trainer

    args = arguments(tmp_path, dataloader_num_workers=2,
                     dataloader_multiprocessing_context="spawn", dataloader_in_order=False)
    model, _ = hf_tiny_classifier(len(LABELS))
    ours = StratifiedTrainer(model=model, args=args, train_dataset=hf_rows_dataset(LABELS),
                             strata="group").get_train_dataloader()
    theirs = Trainer(model=model, args=args,
                     train_dataset=hf_rows_dataset(LABELS)).get_train_dataloader()
    assert ours.multiprocessing_context is theirs.multiprocessing_context is not None
    assert ours.in_order is theirs.in_order is False
    mine, default = ours.worker_init_fn, theirs.worker_init_fn
    assert (mine.func, mine.args, mine.keywords) == (default.func, default.args, default.keywords)


@pytest.mark.parametrize("strategy", ["sequential", "group_by_length"])
def test_a_train_sampling_strategy_it_replaces_is_warned_about(tmp_path, caplog, strategy):
    model, _ = hf_tiny_classifier(len(LABELS))
    with caplog.at_level(logging.WARNING, logger="pystratum.integrations.transformers"):
        StratifiedTrainer(model=model, args=arguments(tmp_path, train_sampling_strategy=strategy),
                          train_dataset=hf_rows_dataset(LABELS), strata="group")
    assert f"train_sampling_strategy={strategy!r} is not used" in caplog.text
    caplog.clear()
    with caplog.at_level(logging.WARNING, logger="pystratum.integrations.transformers"):
        StratifiedTrainer(model=model, args=arguments(tmp_path),
                          train_dataset=hf_rows_dataset(LABELS), strata="group")
    assert "is not used" not in caplog.text  # the default "random" is what stratifying replaces
