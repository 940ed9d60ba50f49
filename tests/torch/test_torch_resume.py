"""Mid-epoch resume: torchdata's StatefulDataLoader and plain fast-forwarding."""

import io
import itertools

import numpy as np
import pytest
import torch
from torch.utils.data import DataLoader, TensorDataset

from _torch_helpers import imbalanced_labels
from pystratum.torch import StratifiedBatchSampler

from torchdata.stateful_dataloader import StatefulDataLoader

N_ROWS = 1000
M = 3  # 30 positives -> 10 batches per epoch


@pytest.fixture(scope="module")
def labels():
    return imbalanced_labels(N_ROWS, 30, seed=5)


@pytest.fixture(scope="module")
def dataset(labels):
    return TensorDataset(torch.arange(N_ROWS), torch.as_tensor(labels))


def make_loader(dataset, labels, *, rng="numpy", num_workers=0, seed=17, **sampler_kwargs):
    sampler = StratifiedBatchSampler(labels, M, seed=seed, rng=rng, **sampler_kwargs)
    return StatefulDataLoader(dataset, batch_sampler=sampler, num_workers=num_workers), sampler


def take(iterator, count):
    return [index.tolist() for index, _ in itertools.islice(iterator, count)]


def epochs(loader, count):
    return [[index.tolist() for index, _ in loader] for _ in range(count)]


def sampler_state_in(loader_state):
    """The sampler's part of a StatefulDataLoader state (one process, or the worker snapshot)."""
    if "_snapshot" in loader_state:
        loader_state = loader_state["_snapshot"]["_main_snapshot"]
    return loader_state["_index_sampler_state"]


def roundtrip(state):
    """What a checkpoint does to the state: torch.save, then torch.load(weights_only=True)."""
    buffer = io.BytesIO()
    torch.save(state, buffer)
    buffer.seek(0)
    return torch.load(buffer, weights_only=True)


@pytest.mark.parametrize("rng", ["numpy", "R", "torch"])
@pytest.mark.parametrize("num_workers", [0, 2])
def test_stateful_dataloader_resumes_mid_epoch(dataset, labels, rng, num_workers):
    reference, _ = make_loader(dataset, labels, rng=rng)
    expected = epochs(reference, 3)  # uninterrupted run

    # Epoch 0: stop after k batches, save, restore into a fresh loader and sampler.
    loader, _ = make_loader(dataset, labels, rng=rng, num_workers=num_workers)
    iterator = iter(loader)
    k = 4
    assert take(iterator, k) == expected[0][:k]
    state = roundtrip(loader.state_dict())
    del iterator, loader

    resumed, sampler = make_loader(dataset, labels, rng=rng, num_workers=num_workers, seed=999)
    resumed.load_state_dict(state)
    rest = [index.tolist() for index, _ in resumed]
    assert rest == expected[0][k:]
    assert sampler.seed == 17  # the saved seed replaced the new sampler's
    # ...and across the epoch boundary: the next epochs are the uninterrupted run's.
    assert epochs(resumed, 2) == expected[1:3]


@pytest.mark.parametrize("num_workers", [0, 2])
def test_resume_in_a_later_epoch(dataset, labels, num_workers):
    reference, _ = make_loader(dataset, labels, rng="R")
    expected = epochs(reference, 4)
    loader, _ = make_loader(dataset, labels, rng="R", num_workers=num_workers)
    assert epochs(loader, 2) == expected[:2]
    iterator = iter(loader)
    assert take(iterator, 7) == expected[2][:7]
    state = roundtrip(loader.state_dict())
    sampler_state = sampler_state_in(state)
    assert (sampler_state["epoch"], sampler_state["batches_yielded"]) == (2, 7)
    # The R stream position before epoch 2 is saved: resuming costs one permutation.
    assert sampler_state["stream"]["epoch"] == 2
    del iterator, loader

    resumed, _ = make_loader(dataset, labels, rng="R", num_workers=num_workers)
    resumed.load_state_dict(state)
    assert [index.tolist() for index, _ in resumed] == expected[2][7:]
    assert epochs(resumed, 1) == expected[3:4]


@pytest.mark.parametrize("num_workers", [0, 2])
def test_resume_at_the_end_of_an_epoch(dataset, labels, num_workers):
    reference, _ = make_loader(dataset, labels)
    expected = epochs(reference, 3)
    n = len(expected[0])

    # Saved after the last batch, before the loader noticed the end.
    loader, _ = make_loader(dataset, labels, num_workers=num_workers)
    iterator = iter(loader)
    assert take(iterator, n) == expected[0]
    state = loader.state_dict()
    resumed, _ = make_loader(dataset, labels, num_workers=num_workers)
    resumed.load_state_dict(state)
    assert [index.tolist() for index, _ in resumed] == []  # the rest of epoch 0: nothing
    assert epochs(resumed, 2) == expected[1:3]

    # Saved after the epoch ended (StopIteration seen).
    loader, _ = make_loader(dataset, labels, num_workers=num_workers)
    assert epochs(loader, 1) == expected[:1]
    state = loader.state_dict()
    resumed, _ = make_loader(dataset, labels, num_workers=num_workers)
    resumed.load_state_dict(state)
    assert epochs(resumed, 2) == expected[1:3]


def test_resume_before_the_first_batch(dataset, labels):
    reference, _ = make_loader(dataset, labels)
    expected = epochs(reference, 2)
    loader, _ = make_loader(dataset, labels)
    state = loader.state_dict()
    resumed, _ = make_loader(dataset, labels, seed=5)
    resumed.load_state_dict(state)
    assert epochs(resumed, 2) == expected


def test_sampler_state_directly(labels):
    """The sampler on its own: state_dict / load_state_dict / iter."""
    reference = StratifiedBatchSampler(labels, M, seed=3, rng="torch")
    expected = [list(reference) for _ in range(3)]
    sampler = StratifiedBatchSampler(labels, M, seed=3, rng="torch")
    list(sampler)
    iterator = iter(sampler)
    for _ in range(6):
        next(iterator)
    state = roundtrip(sampler.state_dict())
    assert (state["epoch"], state["batches_yielded"]) == (1, 6)
    assert state["stream"]["generator_state"].dtype == torch.uint8
    fresh = StratifiedBatchSampler(labels, M, seed=3, rng="torch")
    fresh.load_state_dict(state)
    assert fresh.epoch == 1
    assert fresh.state_dict()["batches_yielded"] == 6  # a pending resume is reported as is
    fresh.set_epoch(1)  # the restored epoch: keeps the position
    assert list(fresh) == expected[1][6:]
    assert list(fresh) == expected[2]
    other = StratifiedBatchSampler(labels, M, seed=3, rng="torch")
    other.load_state_dict(state)
    other.set_epoch(2)  # another epoch: starts it from its first batch
    assert list(other) == expected[2]


def test_distributed_resume_from_rank0_state(labels):
    """Ranks yield equal counts, so rank 0's checkpoint resumes every rank."""
    def sampler(rank):
        return StratifiedBatchSampler(labels, M, seed=8, num_replicas=3, rank=rank)

    expected = {r: list(sampler(r)) for r in range(3)}
    rank0 = sampler(0)
    iterator = iter(rank0)
    next(iterator), next(iterator)
    state = rank0.state_dict()
    for rank in range(3):
        resumed = sampler(rank)
        resumed.load_state_dict(state)
        assert list(resumed) == expected[rank][2:]


def test_plain_fast_forward_is_exact(dataset, labels):
    """Without a Stateful loader: set the epoch, skip k batches (e.g. islice)."""
    reference = StratifiedBatchSampler(labels, M, seed=21)
    expected = [list(reference) for _ in range(3)]
    sampler = StratifiedBatchSampler(labels, M, seed=21)
    sampler.set_epoch(1)
    loader = DataLoader(dataset, batch_sampler=sampler)
    skipped = [index.tolist() for index, _ in itertools.islice(loader, 4, None)]
    assert skipped == expected[1][4:]
    # StatefulDataLoader's own fallback (islice over the sampler) agrees too.
    fresh = StratifiedBatchSampler(labels, M, seed=21)
    fresh.set_epoch(2)
    assert list(itertools.islice(fresh, 3, None)) == expected[2][3:]


@pytest.mark.parametrize("change, match", [
    ({"num_replicas": 2, "rank": 0},
     "saved with num_replicas=1 but this sampler has num_replicas=2"),
    ({"rng": "R"}, "saved with rng='numpy' but this sampler has rng='R'"),
    ({"drop_last": True}, "drop_last"),
])
def test_load_state_mismatch(labels, change, match):
    state = StratifiedBatchSampler(labels, M, seed=1).state_dict()
    kwargs = {"seed": 1, **change}
    with pytest.raises(ValueError, match=match):
        StratifiedBatchSampler(labels, M, **kwargs).load_state_dict(state)


def test_load_state_errors(labels):
    sampler = StratifiedBatchSampler(labels, M, seed=1)
    with pytest.raises(ValueError, match="not a StratifiedBatchSampler state"):
        sampler.load_state_dict({"yielded": 3})
    with pytest.raises(ValueError, match="saved with min_samples_per_stratum=3 but this "
                                         "sampler has min_samples_per_stratum=6"):
        StratifiedBatchSampler(labels, 6, seed=1).load_state_dict(sampler.state_dict())
    fewer_positives = labels.copy()
    fewer_positives[np.flatnonzero(labels)[:15]] = 0  # other strata, same length
    with pytest.raises(ValueError, match="saved with num_batches=10 but this sampler has "
                                         "num_batches=5"):
        StratifiedBatchSampler(fewer_positives, M, seed=1).load_state_dict(sampler.state_dict())
    state = sampler.state_dict()
    state["batches_yielded"] = 11
    with pytest.raises(ValueError, match=r"at most len\(sampler\)=10, got batches_yielded=11"):
        sampler.load_state_dict(state)
    other_rows = np.concatenate([labels, [0]])
    with pytest.raises(ValueError, match="saved with n_rows=1000"):
        StratifiedBatchSampler(other_rows, M, seed=1).load_state_dict(state)


def test_seed_sequence_state_roundtrip(labels):
    seed = np.random.SeedSequence(42).spawn(2)[1]
    reference = StratifiedBatchSampler(labels, M, seed=seed)
    expected = list(reference)
    state = roundtrip(StratifiedBatchSampler(labels, M, seed=seed).state_dict())
    fresh = StratifiedBatchSampler(labels, M, seed=7)
    fresh.load_state_dict(state)
    assert list(fresh) == expected


def test_resume_checks_the_strata_not_their_names(labels):
    state = StratifiedBatchSampler(labels, M, seed=1).state_dict()
    renamed = np.where(labels == 1, "positive", "negative")  # same partition of rows
    StratifiedBatchSampler(renamed, M, seed=1).load_state_dict(state)
    shuffled = np.random.default_rng(0).permutation(labels)  # same counts, other rows
    with pytest.raises(ValueError, match="saved with strata_digest="):
        StratifiedBatchSampler(shuffled, M, seed=1).load_state_dict(state)


@pytest.mark.parametrize("rng", ["numpy", "R", "torch"])
def test_pickled_sampler_continues(labels, rng):
    """Spawned processes (ddp_spawn, multiprocessing) receive the sampler pickled."""
    import pickle

    sampler = StratifiedBatchSampler(labels, M, seed=2, rng=rng)
    reference = StratifiedBatchSampler(labels, M, seed=2, rng=rng)
    expected = [list(reference) for _ in range(3)]
    assert list(sampler) == expected[0]
    iterator = iter(sampler)
    next(iterator)
    copy = pickle.loads(pickle.dumps(sampler))
    assert copy.state_dict()["batches_yielded"] == 1
    # The copy is a checkpoint: it reports the epoch in progress and continues it.
    assert copy.epoch == sampler.epoch == 1
    assert list(copy) == expected[1][1:]
    assert list(copy) == expected[2]  # then a new iter() starts the next epoch
    assert list(iterator) == expected[1][1:]  # the original is untouched
    assert list(sampler) == expected[2]


# Lightning's advice (workers, logging) and its own deprecations, not ours.
@pytest.mark.filterwarnings("ignore::UserWarning", "ignore::FutureWarning",
                            "ignore::DeprecationWarning")
def test_lightning_checkpoint_resumes_mid_epoch(tmp_path):
    """Lightning (>= 2.3) saves a StatefulDataLoader's state in its checkpoints."""
    import lightning as L
    labels = imbalanced_labels(300, 30, seed=1)
    data = TensorDataset(torch.arange(300), torch.randn(300, 4),
                         torch.as_tensor(labels, dtype=torch.float32))

    class Tiny(L.LightningModule):
        def __init__(self):
            super().__init__()
            self.layer = torch.nn.Linear(4, 1)
            self.seen = []

        def training_step(self, batch, batch_idx):
            index, features, target = batch
            self.seen.append(index.tolist())
            return torch.nn.functional.binary_cross_entropy_with_logits(
                self.layer(features).squeeze(1), target)

        def configure_optimizers(self):
            return torch.optim.SGD(self.parameters(), lr=0.1)

        def train_dataloader(self):
            sampler = StratifiedBatchSampler(labels, M, seed=4)  # 10 batches per epoch
            return StatefulDataLoader(data, batch_sampler=sampler)

    class Interrupt(Exception):
        pass

    class CheckpointThenCrash(L.Callback):
        def on_train_batch_end(self, trainer, *args):
            if trainer.global_step == 14:  # epoch 1, batch 4
                trainer.save_checkpoint(tmp_path / "mid.ckpt")
                raise Interrupt

    options = dict(accelerator="cpu", devices=1, max_epochs=3, logger=False,
                   enable_checkpointing=False, enable_progress_bar=False,
                   enable_model_summary=False, default_root_dir=tmp_path)
    uninterrupted = Tiny()
    L.Trainer(**options).fit(uninterrupted)
    first = Tiny()
    with pytest.raises(Interrupt):
        L.Trainer(callbacks=[CheckpointThenCrash()], **options).fit(first)
    resumed = Tiny()
    L.Trainer(**options).fit(resumed, ckpt_path=tmp_path / "mid.ckpt")
    assert len(first.seen) == 14
    assert first.seen + resumed.seen == uninterrupted.seen


def test_lightning_refuses_to_inject_a_distributed_sampler():
    """With use_distributed_sampler=True Lightning would re-build the batch sampler: it
    raises (pointing to use_distributed_sampler=False) instead of breaking the batches."""
    from lightning.pytorch.utilities.data import _update_dataloader
    from torch.utils.data import DistributedSampler

    labels = imbalanced_labels(300, 30, seed=1)
    data = TensorDataset(torch.arange(300))
    loader = DataLoader(data, batch_sampler=StratifiedBatchSampler(labels, M, seed=1))
    with pytest.raises(TypeError, match="use_distributed_sampler=False"):
        _update_dataloader(loader, DistributedSampler(data, num_replicas=2, rank=0, seed=1))
