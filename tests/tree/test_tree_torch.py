"""The tree sampler in PyTorch: DataLoader (sampler and batch sampler), aux values through
workers, StatefulDataLoader resume, and real DDP (gloo) ranks."""

import io
import itertools

import numpy as np
import pytest
import torch
from torch.utils.data import DataLoader, Dataset, TensorDataset

from _torch_helpers import run_ranks
from _tree_data import metadata
from pystratum.tree import TreeSampler
from pystratum.tree.torch import TreeBatchSampler

from torchdata.stateful_dataloader import StatefulDataLoader


CONFIG = {"epoch_length": 250, "root": {"children": [
    {"column": "active", "value": 1, "weight": 0.3, "mode": "shuffle"},
    {"column": "active", "value": 0, "weight": 0.7, "children": [
        {"for_each": "protein", "mode": "shuffle"}]},
]}}


@pytest.fixture(scope="module")
def frame():
    return metadata(2000)


@pytest.fixture(scope="module")
def dataset(frame):
    return TensorDataset(torch.arange(len(frame)))


def stream(frame, n, seed=4, config=CONFIG):
    return TreeSampler(config, frame, seed=seed).draw(n).indices.tolist()


def test_tree_sampler_as_a_dataloader_sampler(frame, dataset):
    tree = TreeSampler(CONFIG, frame, seed=4)
    loader = DataLoader(dataset, sampler=tree, batch_size=16)
    assert len(loader) == 16  # ceil(250 / 16)
    epochs = [[i for (batch,) in loader for i in batch.tolist()] for _ in range(2)]
    assert epochs[0] + epochs[1] == stream(frame, 500)


@pytest.mark.parametrize("num_workers", [0, 2])
def test_batch_sampler_in_a_dataloader(frame, dataset, num_workers):
    tree = TreeSampler(CONFIG, frame, seed=4)
    sampler = TreeBatchSampler(tree, 32)
    loader = DataLoader(dataset, batch_sampler=sampler, num_workers=num_workers)
    assert len(loader) == len(sampler) == 8
    first = [batch.tolist() for (batch,) in loader]
    second = [batch.tolist() for (batch,) in loader]
    assert [len(b) for b in first] == [32] * 7 + [26]
    expected = stream(frame, 500)
    assert sum(first, []) == expected[:250] and sum(second, []) == expected[250:]


def test_aux_values_reach_the_workers_with_their_rows(frame):
    config = dict(CONFIG, aux={"angle": {"kind": "uniform", "low": 0, "high": 360},
                               "flip": {"kind": "choice", "values": [True, False]}})

    class Augmented(Dataset):
        def __len__(self):
            return len(frame)

        def __getitem__(self, item):
            index, aux = item
            return index, aux["angle"], aux["flip"]

    tree = TreeSampler(config, frame, seed=8)
    loader = DataLoader(Augmented(), batch_sampler=TreeBatchSampler(tree, 50), num_workers=2)
    got = [(i.tolist(), a.tolist(), f.tolist()) for i, a, f in loader]
    draws = TreeSampler(config, frame, seed=8).draw(250)
    assert sum((g[0] for g in got), []) == draws.indices.tolist()
    np.testing.assert_allclose(sum((g[1] for g in got), []), draws.aux["angle"])
    assert sum((g[2] for g in got), []) == draws.aux["flip"].tolist()
    assert 0 <= min(draws.aux["angle"]) and max(draws.aux["angle"]) < 360


def roundtrip(state):
    buffer = io.BytesIO()
    torch.save(state, buffer)
    buffer.seek(0)
    return torch.load(buffer, weights_only=True)


@pytest.mark.parametrize("num_workers", [0, 2])
def test_stateful_dataloader_resumes_mid_epoch(frame, dataset, num_workers):
    def make():
        tree = TreeSampler(CONFIG, frame, seed=21)
        return StatefulDataLoader(dataset, batch_sampler=TreeBatchSampler(tree, 20),
                                  num_workers=num_workers)

    uninterrupted = make()
    whole = [[b.tolist() for (b,) in uninterrupted] for _ in range(2)]
    loader = make()
    iterator = iter(loader)
    first = [b.tolist() for _, (b,) in zip(range(5), iterator)]
    state = roundtrip(loader.state_dict())
    resumed = make()
    resumed.load_state_dict(state)
    rest = [b.tolist() for (b,) in resumed]
    assert first + rest == whole[0]
    assert [b.tolist() for (b,) in resumed] == whole[1]


def test_infinite_stream_batches_and_resume(frame):
    config = {k: v for k, v in CONFIG.items() if k != "epoch_length"}
    expected = stream(frame, 6 * 40, config=config)
    sampler = TreeBatchSampler(TreeSampler(config, frame, seed=4), 40)
    with pytest.raises(TypeError, match="no length"):
        len(sampler)
    got = list(itertools.islice(iter(sampler), 3))
    state = sampler.state_dict()
    again = TreeBatchSampler(TreeSampler(config, frame, seed=99), 40)
    again.load_state_dict(state)
    got += list(itertools.islice(iter(again), 3))
    assert sum(got, []) == expected


def test_ranks_without_a_process_group(frame):
    # Two ranks simulated in one process: disjoint whole batches, padded evenly.
    tree_config = dict(CONFIG, epoch_length=230)  # 5 batches of 50 (last 30) over 2 ranks
    ranks = [list(TreeBatchSampler(TreeSampler(tree_config, frame, seed=4), 50,
                                   num_replicas=2, rank=r)) for r in range(2)]
    everything = stream(frame, 230, config=tree_config)
    batches = [everything[i:i + 50] for i in range(0, 230, 50)]
    assert ranks[0] == [batches[0], batches[2], batches[4]]
    assert ranks[1] == [batches[1], batches[3], batches[0]]  # padded with the first batch
    dropped = [list(TreeBatchSampler(TreeSampler(tree_config, frame, seed=4), 50,
                                     num_replicas=2, rank=r, drop_last=True)) for r in range(2)]
    assert dropped == [[batches[0], batches[2]], [batches[1], batches[3]]]
    with pytest.raises(ValueError, match="seed must be given when num_replicas=2"):
        TreeBatchSampler(TreeSampler(tree_config, frame), 50, num_replicas=2, rank=0)


def test_set_epoch_replays_the_stream(frame):
    sampler = TreeBatchSampler(TreeSampler(CONFIG, frame, seed=4), 50)
    sampler.set_epoch(1)
    assert sum(list(sampler), []) == stream(frame, 500)[250:]
    sampler.set_epoch(0)
    assert sum(list(sampler), []) == stream(frame, 250)


def test_batch_sampler_argument_errors(frame):
    tree = TreeSampler(CONFIG, frame, seed=4)
    with pytest.raises(TypeError, match="tree must be a pystratum.tree.TreeSampler"):
        TreeBatchSampler(CONFIG, 10)
    with pytest.raises(ValueError, match="batch_size must be a positive integer"):
        TreeBatchSampler(tree, 0)
    with pytest.raises(ValueError, match="drop_last=True leaves no batch"):
        TreeBatchSampler(tree, 250, num_replicas=2, rank=0, drop_last=True)


def test_ddp_ranks_take_disjoint_whole_batches(tmp_path):
    """Two real gloo ranks; seed=None (rank 0's stream broadcast) and a given seed with
    drop_last, in one launch (starting processes is the expensive part)."""
    tree = dict(CONFIG, epoch_length=230)  # 5 batches of 50 (the last 30) over 2 ranks
    runs = [{"seed": None, "drop_last": False}, {"seed": 7, "drop_last": True}]
    config = {"n_rows": 2000, "tree": tree, "batch_size": 50, "num_workers": 0, "epochs": 2,
              "runs": runs}
    results = run_ranks("tree_ddp_worker", 2, config, tmp_path)
    from pystratum.serving._record import seed_from_record

    for k, run in enumerate(runs):
        ranks = [r["runs"][k] for r in results]
        seeds = {str(r["seed_state"]) for r in ranks}
        assert len(seeds) == 1, f"ranks drew different streams: {seeds}"
        seed_used = seed_from_record(ranks[0]["seed_state"], fix="")
        if run["seed"] is not None:
            assert seed_used == run["seed"]
        everything = TreeSampler(tree, metadata(2000), seed=seed_used).draw(460).indices.tolist()
        for epoch in range(2):
            draws = everything[epoch * 230:(epoch + 1) * 230]
            batches = [draws[i:i + 50] for i in range(0, 230, 50)]
            served = [r["epochs"][epoch] for r in ranks]
            assert len(served[0]) == len(served[1]) == ranks[0]["len"]
            if run["drop_last"]:
                assert served == [[batches[0], batches[2]], [batches[1], batches[3]]]
            else:
                assert served == [[batches[0], batches[2], batches[4]],
                                  [batches[1], batches[3], batches[0]]]
        weights = np.array([r["weight"] for r in ranks])
        np.testing.assert_allclose(weights[0], weights[1], rtol=1e-6)


# A resume into a sampler built with another seed, or on a tree at another position,
# must serve every later epoch (set_epoch back included) of the saved run's stream.
_RESUME_CONFIG = {"epoch_length": 50, "root": {"children": [{"for_each": "protein"}]}}


def _epochs(sampler, n):
    return [list(iter(sampler)) for _ in range(n)]


@pytest.mark.parametrize("seed", [1, 99, None])
def test_resume_with_another_seed_serves_the_saved_runs_epochs(seed):
    md = metadata(300)
    full = _epochs(TreeBatchSampler(TreeSampler(_RESUME_CONFIG, md, seed=1), 8), 4)
    saver = TreeBatchSampler(TreeSampler(_RESUME_CONFIG, md, seed=1), 8)
    _epochs(saver, 2)
    it = iter(saver)
    next(it), next(it)
    state = saver.state_dict()
    resumed = TreeBatchSampler(TreeSampler(_RESUME_CONFIG, md, seed=seed), 8)
    resumed.load_state_dict(state)
    assert _epochs(resumed, 2) == [full[2][2:], full[3]]
    resumed.set_epoch(0)
    assert list(iter(resumed)) == full[0]
    resumed.set_epoch(1)
    assert list(iter(resumed)) == full[1]
    assert resumed.state_dict()["seed"] == 1


@pytest.mark.parametrize("fresh", [True, False])
def test_resume_of_a_run_whose_tree_had_drawn_keeps_its_epochs(fresh):
    md = metadata(300)

    def used():  # the tree was used before (a preview of a few draws)
        tree = TreeSampler(_RESUME_CONFIG, md, seed=1)
        tree.draw(7)
        return TreeBatchSampler(tree, 8)

    full = _epochs(used(), 3)
    saver = used()
    _epochs(saver, 1)
    next(iter(saver))
    state = saver.state_dict()
    resumed = TreeBatchSampler(TreeSampler(_RESUME_CONFIG, md, seed=1), 8) if fresh else used()
    resumed.load_state_dict(state)
    assert _epochs(resumed, 2) == [full[1][1:], full[2]]
    resumed.set_epoch(0)
    assert list(iter(resumed)) == full[0]


def test_state_saved_before_any_pass_of_a_set_epoch_resumes_that_epoch():
    md = metadata(300)
    full = _epochs(TreeBatchSampler(TreeSampler(_RESUME_CONFIG, md, seed=1), 8), 4)
    saver = TreeBatchSampler(TreeSampler(_RESUME_CONFIG, md, seed=1), 8)
    saver.set_epoch(3)  # nothing drawn yet: the saved stream is the tree where it stands
    resumed = TreeBatchSampler(TreeSampler(_RESUME_CONFIG, md, seed=5), 8)
    resumed.load_state_dict(saver.state_dict())
    assert list(iter(resumed)) == full[3]
    resumed.set_epoch(1)
    assert list(iter(resumed)) == full[1]


@pytest.mark.parametrize("origin", [-1, "7", 2.5])
def test_a_corrupted_origin_is_refused(origin):
    md = metadata(300)
    state = TreeBatchSampler(TreeSampler(_RESUME_CONFIG, md, seed=1), 8).state_dict()
    state["origin"] = origin
    with pytest.raises((TypeError, ValueError), match=r"state_dict\['origin'\]"):
        TreeBatchSampler(TreeSampler(_RESUME_CONFIG, md, seed=1), 8).load_state_dict(state)


from hypothesis import given, settings, strategies as st  # noqa: E402


@settings(max_examples=25, deadline=None)
@given(pre_drawn=st.integers(0, 60), seed=st.one_of(st.none(), st.integers(0, 2**32)),
       saved_epoch=st.integers(0, 3), yielded=st.integers(0, 7), later=st.integers(0, 4))
def test_resume_replays_the_saved_runs_epochs_property(pre_drawn, seed, saved_epoch, yielded,
                                                       later):
    # Any tree position at build time, any seed in the resuming sampler, any save point:
    # the resumed epoch's rest and any later set_epoch are the saved run's batches.
    md = _PROPERTY_FRAME

    def build(tree_seed, drawn):
        tree = TreeSampler(_RESUME_CONFIG, md, seed=tree_seed)
        tree.draw(drawn)
        return TreeBatchSampler(tree, 8)

    reference = build(1, pre_drawn)
    full = []
    for epoch in range(5):
        reference.set_epoch(epoch)
        full.append(list(iter(reference)))
    saver = build(1, pre_drawn)
    saver.set_epoch(saved_epoch)
    it = iter(saver)
    for _ in range(yielded):
        next(it)
    resumed = build(seed, 0)
    resumed.load_state_dict(saver.state_dict())
    assert list(iter(resumed)) == full[saved_epoch][yielded:]
    resumed.set_epoch(later)
    assert list(iter(resumed)) == full[later]


_PROPERTY_FRAME = metadata(300)
