"""batch_sampler() with the real sentence-transformers trainer (the hf extra): a
StaticEmbedding model over a generated word-level vocabulary (no download); the rows of every
training step, read from the model's input, are the stratified batches."""

from __future__ import annotations

import os

import numpy as np
import pytest

os.environ.setdefault("HF_HUB_OFFLINE", "1")

import datasets  # noqa: E402
from sentence_transformers import SentenceTransformer  # noqa: E402
from sentence_transformers import SentenceTransformerTrainer  # noqa: E402
from sentence_transformers import SentenceTransformerTrainingArguments  # noqa: E402
from sentence_transformers.base.sampler import DefaultBatchSampler  # noqa: E402
from sentence_transformers.sentence_transformer import losses  # noqa: E402
from sentence_transformers.sentence_transformer.modules import StaticEmbedding  # noqa: E402
from tokenizers import Tokenizer  # noqa: E402
from tokenizers.models import WordLevel  # noqa: E402
from tokenizers.pre_tokenizers import Whitespace  # noqa: E402

from pystratum.integrations.sentence_transformers import batch_sampler  # noqa: E402
from pystratum.policies import ClassesPerBatch, MinPerStratum, Targets  # noqa: E402
from pystratum.torch import StratifiedBatchSampler  # noqa: E402

# 6 classes of 8, 8, 8, 6, 6, 4 rows; row r is the one-word sentence "w<r>".
LABELS = np.random.default_rng(2).permutation(np.repeat(np.arange(6), [8, 8, 8, 6, 6, 4]))


def tiny_model():
    import torch

    vocab = {"[UNK]": len(LABELS)} | {f"w{r}": r for r in range(len(LABELS))}
    tokenizer = Tokenizer(WordLevel(vocab, unk_token="[UNK]"))
    tokenizer.pre_tokenizer = Whitespace()
    torch.manual_seed(0)
    model = SentenceTransformer(modules=[StaticEmbedding(tokenizer, embedding_dim=8)],
                                device="cpu")
    seen = []

    def record(module, args):
        if module.training:
            seen.append(args[0]["input_ids"].tolist())

    model[0].register_forward_pre_hook(record)
    return model, seen


def train(tmp_path, sampler, *, batch_size=8, epochs=2, labels=LABELS):
    model, seen = tiny_model()
    dataset = datasets.Dataset.from_dict({"sentence": [f"w{r}" for r in range(len(labels))],
                                          "label": [int(v) for v in labels]})
    args = SentenceTransformerTrainingArguments(
        output_dir=str(tmp_path / "out"), per_device_train_batch_size=batch_size,
        num_train_epochs=epochs, use_cpu=True, report_to=[], save_strategy="no",
        logging_strategy="no", disable_tqdm=True, seed=5, batch_sampler=sampler)
    trainer = SentenceTransformerTrainer(model=model, args=args, train_dataset=dataset,
                                         loss=losses.BatchAllTripletLoss(model))
    trainer.train()
    return seen


def planned(policy, epochs, seed=5):
    sampler = StratifiedBatchSampler(LABELS, policy, seed=seed)
    return [list(map(int, b)) for e in range(epochs) for b in sampler.plan(e).batches]


def test_classes_per_batch_gives_p_x_k_batches_for_triplet_mining(tmp_path):
    seen = train(tmp_path, batch_sampler(ClassesPerBatch(2, 4)))
    assert seen == planned(ClassesPerBatch(2, 4), 2)  # both epochs: set_epoch reached it
    for batch in seen:
        counts = np.bincount(LABELS[batch], minlength=6)
        assert sorted(counts[counts > 0].tolist()) == [4, 4]  # P = 2 labels x K = 4 rows


def test_a_policy_sized_by_the_data_ignores_the_batch_size(tmp_path):
    seen = train(tmp_path, batch_sampler(MinPerStratum(1), strata_column="label"),
                 batch_size=3, epochs=1)
    assert seen == planned(MinPerStratum(1), 1)
    assert all(set(LABELS[batch].tolist()) == set(range(6)) for batch in seen)


def test_what_the_arguments_accept_and_refuse(tmp_path):
    make = batch_sampler(Targets({c: 1 / 6 for c in range(6)}, 12), seed=3)
    dataset = datasets.Dataset.from_dict({"label": LABELS.tolist(), "x": LABELS.tolist()})
    sampler = make(dataset, batch_size=12, drop_last=False, valid_label_columns=["label"],
                   generator=None, seed=0)
    assert isinstance(sampler, DefaultBatchSampler) and sampler.stratified.seed == 3
    sampler.set_epoch(1)
    assert list(sampler) == [list(map(int, b)) for b in StratifiedBatchSampler(
        LABELS, Targets({c: 1 / 6 for c in range(6)}, 12), seed=3).plan(1).batches]
    with pytest.raises(ValueError, match=r"^per_device_train_batch_size must equal the batch "
                                         r"size of policy=Targets.*\(12 rows\), got "
                                         r"per_device_train_batch_size=8"):
        make(dataset, batch_size=8, drop_last=False, valid_label_columns=["label"])
    with pytest.raises(ValueError, match=r"^strata_column must be given: the dataset has none "
                                         r"of the trainer's label columns \['score'\]"):
        batch_sampler()(dataset, batch_size=8, drop_last=False, valid_label_columns=["score"])
    with pytest.raises(ValueError, match=r"^strata_column must name a column of the training "
                                         r"dataset, got strata_column='y'"):
        batch_sampler(strata_column="y")(dataset, batch_size=8, drop_last=False)
    with pytest.raises(TypeError, match=r"^policy must be a pystratum policy"):
        batch_sampler(4)
    with pytest.raises(TypeError, match=r"^strata_column must be a column name"):
        batch_sampler(strata_column=["label"])


def test_checkpoints_and_save_model_pickle_the_batch_sampler(tmp_path):
    # The trainer torch.saves its args (training_args.bin) at every checkpoint and in
    # save_model(); the args hold what batch_sampler() returned, so it must pickle.
    import pickle

    made = batch_sampler(ClassesPerBatch(2, 4), strata_column="label", seed=7)
    again = pickle.loads(pickle.dumps(made))
    assert (again.policy, again.strata_column, again.seed) == (made.policy, "label", 7)
    model, seen = tiny_model()
    dataset = datasets.Dataset.from_dict({"sentence": [f"w{r}" for r in range(len(LABELS))],
                                          "label": [int(v) for v in LABELS]})
    args = SentenceTransformerTrainingArguments(
        output_dir=str(tmp_path / "out"), per_device_train_batch_size=8, num_train_epochs=1,
        use_cpu=True, report_to=[], save_strategy="steps", save_steps=2, logging_strategy="no",
        disable_tqdm=True, seed=5, batch_sampler=batch_sampler(ClassesPerBatch(2, 4)))
    trainer = SentenceTransformerTrainer(model=model, args=args, train_dataset=dataset,
                                         loss=losses.BatchAllTripletLoss(model))
    trainer.train()
    trainer.save_model(str(tmp_path / "final"))
    assert seen == planned(ClassesPerBatch(2, 4), 1)
    assert (tmp_path / "out" / "checkpoint-2" / "training_args.bin").exists()
    assert (tmp_path / "final" / "training_args.bin").exists()


def test_only_the_training_loader_is_stratified(tmp_path):
    # Evaluation goes through the same args.batch_sampler with the eval batch size and an
    # eval set that may lack the strata column: it gets the library's plain batches.
    model, seen = tiny_model()
    n = len(LABELS)
    train_set = datasets.Dataset.from_dict({"anchor": [f"w{r}" for r in range(n)],
                                            "positive": [f"w{(r + 1) % n}" for r in range(n)],
                                            "label": [int(v) for v in LABELS]})
    eval_set = datasets.Dataset.from_dict({"anchor": [f"w{r}" for r in range(10)],
                                           "positive": [f"w{r + 1}" for r in range(10)]})
    args = SentenceTransformerTrainingArguments(
        output_dir=str(tmp_path / "out"), per_device_train_batch_size=8,
        per_device_eval_batch_size=16, num_train_epochs=1, use_cpu=True, report_to=[],
        save_strategy="no", logging_strategy="no", eval_strategy="epoch", disable_tqdm=True,
        seed=5, batch_sampler=batch_sampler(ClassesPerBatch(2, 4)))
    trainer = SentenceTransformerTrainer(
        model=model, args=args, train_dataset=train_set, eval_dataset=eval_set,
        loss=losses.MultipleNegativesRankingLoss(model))
    trainer.train()
    assert seen[0::2] == planned(ClassesPerBatch(2, 4), 1)  # the anchors' forward pass
    loader = trainer.get_eval_dataloader(eval_set)
    inner = getattr(loader.batch_sampler, "batch_sampler", loader.batch_sampler)
    assert type(inner) is DefaultBatchSampler and inner.batch_size == 16
    assert sorted(sum((list(b) for b in loader.batch_sampler), [])) == list(range(10))


def test_a_dataset_dict_train_set_is_refused(tmp_path):
    model, _ = tiny_model()
    one = datasets.Dataset.from_dict({"sentence": [f"w{r}" for r in range(len(LABELS))],
                                      "label": [int(v) for v in LABELS]})
    args = SentenceTransformerTrainingArguments(
        output_dir=str(tmp_path / "out"), per_device_train_batch_size=8, num_train_epochs=1,
        use_cpu=True, report_to=[], save_strategy="no", logging_strategy="no",
        disable_tqdm=True, seed=5, batch_sampler=batch_sampler(ClassesPerBatch(2, 4)))
    trainer = SentenceTransformerTrainer(
        model=model, args=args, train_dataset=datasets.DatasetDict({"a": one, "b": one}),
        loss=losses.BatchAllTripletLoss(model))
    with pytest.raises(ValueError, match=r"^train_dataset must be one Dataset for "
                                         r"batch_sampler\(\), got a DatasetDict"):
        trainer.train()


TOPICS = np.arange(len(LABELS)) % 3  # a second grouping, not the label


def _topic_dataset(with_topic=True):
    columns = {"sentence": [f"w{r}" for r in range(len(LABELS))],
               "label": [int(v) for v in LABELS]}
    if with_topic:
        columns["topic"] = [int(t) for t in TOPICS]
    return datasets.Dataset.from_dict(columns)


def _topic_trainer(tmp_path, dataset, sampler):
    model, seen = tiny_model()
    args = SentenceTransformerTrainingArguments(
        output_dir=str(tmp_path / "out"), per_device_train_batch_size=9, num_train_epochs=1,
        use_cpu=True, report_to=[], save_strategy="no", logging_strategy="no",
        disable_tqdm=True, seed=5, batch_sampler=sampler)
    trainer = SentenceTransformerTrainer(model=model, args=args, train_dataset=dataset,
                                         loss=losses.BatchAllTripletLoss(model))
    return trainer, seen


def test_a_strata_column_that_is_not_the_label_is_refused_before_the_model_sees_it(tmp_path):
    # The collator feeds every column but the label to the model: a strata column would be
    # tokenized. The training loader refuses it, naming strata_column and the way out.
    trainer, seen = _topic_trainer(tmp_path, _topic_dataset(),
                                   batch_sampler(MinPerStratum(3), strata_column="topic"))
    with pytest.raises(ValueError, match=r"^strata_column must be the trainer's label column "
                                         r"\('label'\), got strata_column='topic': .* "
                                         r"batch_sampler\(policy, strata=train\['topic'\]\)"):
        trainer.train()
    assert seen == []


def test_strata_given_as_values_stratify_a_dataset_without_that_column(tmp_path):
    dataset = _topic_dataset()
    strata = dataset["topic"]
    trainer, seen = _topic_trainer(tmp_path, dataset.remove_columns("topic"),
                                   batch_sampler(MinPerStratum(3), strata=strata))
    trainer.train()
    sampler = StratifiedBatchSampler(TOPICS, MinPerStratum(3), seed=5)
    assert seen == [list(map(int, b)) for b in sampler.plan(0).batches]
    assert all(np.bincount(TOPICS[batch], minlength=3).min() >= 3 for batch in seen)


def test_strata_and_strata_column_are_one_or_the_other():
    with pytest.raises(TypeError, match=r"^strata_column and strata must not both be given"):
        batch_sampler(strata_column="label", strata=[0, 1])
    with pytest.raises(TypeError, match=r"^strata must be one label per training row"):
        batch_sampler(strata="topic")


def test_an_infeasible_per_device_batch_size_names_the_trainers_argument():
    # 40 rows in batches of 64: one batch, refused naming the setting the user wrote.
    dataset = datasets.Dataset.from_dict({"label": LABELS.tolist()})
    with pytest.raises(ValueError, match=r"^per_device_train_batch_size=64 cannot be served on "
                                         r"this training set .* smaller "
                                         r"per_device_train_batch_size"):
        batch_sampler()(dataset, batch_size=64, drop_last=False, valid_label_columns=["label"])
