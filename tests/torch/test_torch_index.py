"""The torch sampler with rng="index": rank-local lazy batches, resume, DDP (gloo)."""

import io
import itertools

import numpy as np
import pytest
import torch
from torch.utils.data import DataLoader, TensorDataset
from torchdata.stateful_dataloader import StatefulDataLoader

from _torch_helpers import assert_every_batch_holds, imbalanced_labels, run_ranks
from pystratum import grouped_strata, lazy_plan, parquet_strata
from pystratum.serving._sharding import rank_batch_indices
from pystratum.policies import FixedSize
from pystratum.torch import StratifiedBatchSampler

N_ROWS = 600
N_POSITIVE = 30


@pytest.fixture(scope="module")
def labels():
    return imbalanced_labels(N_ROWS, N_POSITIVE, seed=3)


@pytest.mark.parametrize("policy", [3, FixedSize(40)], ids=["min", "fixed"])
def test_one_replica_serves_the_lazy_plan_epoch_after_epoch(labels, policy):
    sampler = StratifiedBatchSampler(labels, policy, seed=9, rng="index")
    for epoch in range(2):
        served = list(sampler)
        expected = [b.tolist() for b in lazy_plan(labels, policy, seed=9, epoch=epoch)]
        assert served == expected
        assert sorted(itertools.chain.from_iterable(served)) == list(range(N_ROWS))
    assert [b.tolist() for b in sampler.plan(1)] == served


@pytest.mark.parametrize("drop_last", [False, True])
def test_each_rank_computes_its_own_whole_batches(labels, drop_last, monkeypatch):
    plan = lazy_plan(labels, 4, seed=2, epoch=0)  # 7 batches
    asked = []
    original = type(plan).batches_of

    def spy(self, ids):
        asked.extend(np.asarray(ids).tolist())
        return original(self, ids)

    monkeypatch.setattr(type(plan), "batches_of", spy)
    served = []
    for rank in range(3):
        asked.clear()
        sampler = StratifiedBatchSampler(labels, 4, seed=2, rng="index", num_replicas=3,
                                         rank=rank, drop_last=drop_last)
        batches = list(sampler)
        chosen = rank_batch_indices(7, 3, rank, drop_last).tolist()
        assert asked == chosen  # only this rank's batches were computed
        assert batches == [plan[b].tolist() for b in chosen]
        assert_every_batch_holds(batches, labels, 4)
        served.append(batches)
    assert len({len(s) for s in served}) == 1


def test_resume_mid_epoch_computes_only_the_rest(labels, monkeypatch):
    sampler = StratifiedBatchSampler(labels, 3, seed=5, rng="index")
    sampler.set_epoch(4)
    iterator = iter(sampler)
    head = [next(iterator) for _ in range(6)]
    state = sampler.state_dict()
    assert state["epoch"] == 4 and state["batches_yielded"] == 6
    rest = list(iterator)
    resumed = StratifiedBatchSampler(labels, 3, seed=5, rng="index")
    resumed.load_state_dict(state)
    asked = []
    from pystratum.engine._lazy import LazyPlan

    original = LazyPlan.batches_of

    def spy(self, ids):
        asked.extend(np.asarray(ids).tolist())
        return original(self, ids)

    monkeypatch.setattr(LazyPlan, "batches_of", spy)
    assert list(resumed) == rest
    assert min(asked) == 6  # the first six batches were never recomputed
    assert head + rest == [b.tolist() for b in lazy_plan(labels, 3, seed=5, epoch=4)]


def test_stateful_dataloader_resumes_exactly(labels):
    dataset = TensorDataset(torch.arange(N_ROWS), torch.as_tensor(labels))

    def loader():
        sampler = StratifiedBatchSampler(labels, 3, seed=17, rng="index")
        return StatefulDataLoader(dataset, batch_sampler=sampler)

    full = loader()
    reference = [[i.tolist() for i, _ in full] for _ in range(2)]
    first = loader()
    iterator = iter(first)
    head = [i.tolist() for i, _ in itertools.islice(iterator, 4)]
    state = first.state_dict()
    second = loader()
    second.load_state_dict(state)
    tail = [i.tolist() for i, _ in second]
    assert head + tail == reference[0]
    assert [i.tolist() for i, _ in second] == reference[1]


def test_ddp_two_gloo_ranks(tmp_path, labels):
    toy_labels = imbalanced_labels(N_ROWS, N_POSITIVE)
    # The second run reads its strata from Parquet files (member lists, no labels).
    parquet = _write_parquet(tmp_path / "data", toy_labels)
    runs = [{"m": 3, "seed": 21, "rng": "index", "drop_last": False, "num_workers": 0,
             "epochs": 2},
            {"m": 3, "seed": 21, "rng": "index", "drop_last": False, "num_workers": 2,
             "epochs": 2, "parquet": str(parquet)}]
    config = {"n_rows": N_ROWS, "n_positive": N_POSITIVE, "runs": runs}
    per_rank = run_ranks("ddp_worker", 2, config, tmp_path, timeout=120)
    for run in range(2):
        results = [r["runs"][run] for r in per_rank]
        for epoch in range(2):
            plan = [b.tolist() for b in lazy_plan(toy_labels, 3, seed=21, epoch=epoch)]
            served = [r["epochs"][epoch] for r in results]
            assert len(served[0]) == len(served[1]) == 5
            for rank, batches in enumerate(served):
                assert batches == [plan[(2 * j + rank) % len(plan)] for j in range(5)]
                assert_every_batch_holds(batches, toy_labels, 3)
            together = sorted(itertools.chain.from_iterable(served[0] + served[1]))
            assert together == list(range(N_ROWS))
        weights = np.array([r["weight"] for r in results])
        np.testing.assert_allclose(weights[0], weights[1], rtol=1e-6)


def roundtrip(state):
    """What a checkpoint does to the state: torch.save, then torch.load(weights_only=True)."""
    buffer = io.BytesIO()
    torch.save(state, buffer)
    buffer.seek(0)
    return torch.load(buffer, weights_only=True)


# ---------------------------------------------------------------------------
# Member lists instead of labels: parquet_strata / grouped_strata.

def _write_parquet(directory, labels, parts=3):
    """``labels`` (and a feature column) as ``parts`` Parquet files, names in row order."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    directory.mkdir(parents=True, exist_ok=True)
    for i, part in enumerate(np.array_split(np.arange(labels.shape[0]), parts)):
        table = pa.table({"feature": part.astype(np.float64), "label": labels[part]})
        pq.write_table(table, directory / f"part-{i:03d}.parquet", row_group_size=50)
    return directory


@pytest.fixture
def no_label_arrays(monkeypatch):
    """Fail if the sampler encodes labels into per-row codes or reads labels at all."""
    from pystratum.torch import _sampler

    def refuse(*args, **kwargs):
        raise AssertionError("the rng='index' sampler built a per-row code array")

    monkeypatch.setattr(_sampler, "encode_strata", refuse)
    return monkeypatch


@pytest.mark.parametrize("policy", [3, FixedSize(40)], ids=["min", "fixed"])
def test_parquet_members_serve_the_labels_batches_through_a_dataloader(
        tmp_path, labels, policy, no_label_arrays):
    from pystratum.torch import _sampler

    no_label_arrays.setattr(_sampler, "labels_from", lambda *a: pytest.fail("labels read"))
    members = parquet_strata(_write_parquet(tmp_path / "data", labels), "label",
                             members_directory=tmp_path / "members")
    sampler = StratifiedBatchSampler(members, policy, seed=9, rng="index")
    dataset = TensorDataset(torch.arange(N_ROWS), torch.as_tensor(labels))
    loader = DataLoader(dataset, batch_sampler=sampler, num_workers=2)
    for epoch in range(2):
        served = [index.tolist() for index, _ in loader]
        expected = [b.tolist() for b in lazy_plan(labels, policy, seed=9, epoch=epoch)]
        assert served == expected
        assert sorted(itertools.chain.from_iterable(served)) == list(range(N_ROWS))
        if isinstance(policy, int):
            assert_every_batch_holds(served, labels, policy)


def test_int_labels_are_grouped_without_a_code_array(labels, no_label_arrays):
    sampler = StratifiedBatchSampler(labels, 3, seed=9, rng="index")
    assert sampler._members is not None and not sampler._members.grouped
    assert list(sampler) == [b.tolist() for b in lazy_plan(labels, 3, seed=9, epoch=0)]


def test_grouped_rows_need_only_their_run_lengths(no_label_arrays):
    sizes = [570, 30]
    grouped = grouped_strata(sizes, labels=["neg", "pos"])
    labels = np.repeat([0, 1], sizes)
    sampler = StratifiedBatchSampler(grouped, FixedSize(40), seed=4, rng="index",
                                     num_replicas=2, rank=1)
    served = list(sampler)
    plan = lazy_plan(grouped, FixedSize(40), seed=4, epoch=0)
    chosen = rank_batch_indices(len(plan), 2, 1, False).tolist()
    assert served == [plan[b].tolist() for b in chosen]
    for batch in served:
        assert np.bincount(labels[batch], minlength=2).tolist() == [38, 2]
    assert sampler.plan(0).strata == ("neg", "pos")


def test_state_saved_from_labels_resumes_the_parquet_sampler(tmp_path, labels):
    members = parquet_strata(_write_parquet(tmp_path / "data", labels), "label")
    reference = StratifiedBatchSampler(labels, 3, seed=5, rng="index")
    reference.set_epoch(2)
    iterator = iter(reference)
    head = [next(iterator) for _ in range(4)]
    state = roundtrip(reference.state_dict())
    resumed = StratifiedBatchSampler(members, 3, seed=1, rng="index")
    resumed.load_state_dict(state)
    assert head + list(resumed) == [b.tolist() for b in lazy_plan(labels, 3, seed=5, epoch=2)]
    # Other rows in the same strata sizes: refused, naming the digest.
    other = parquet_strata(_write_parquet(tmp_path / "other",
                                          np.random.default_rng(1).permutation(labels)), "label")
    with pytest.raises(ValueError, match="saved with strata_digest="):
        StratifiedBatchSampler(other, 3, seed=5, rng="index").load_state_dict(state)


def test_pickled_sampler_over_mapped_members_continues(tmp_path, labels):
    import pickle

    members = parquet_strata(_write_parquet(tmp_path / "data", labels), "label",
                             members_directory=tmp_path / "members")
    sampler = StratifiedBatchSampler(members, 3, seed=2, rng="index")
    expected = [b.tolist() for b in lazy_plan(labels, 3, seed=2, epoch=0)]
    iterator = iter(sampler)
    head = [next(iterator) for _ in range(3)]
    copy = pickle.loads(pickle.dumps(sampler))
    assert copy._members.directory == str(tmp_path / "members")  # mapped, not copied
    assert head + list(copy) == expected


def test_weighted_dataset_from_members_matches_the_labels(labels):
    from pystratum.policies import Downsample, Targets
    from pystratum.torch import WeightedDataset

    policy = Downsample({0: 0.25}, Targets("balanced", 10))
    dataset = TensorDataset(torch.arange(N_ROWS))
    from_labels = WeightedDataset.for_sampler(
        dataset, StratifiedBatchSampler(labels, policy, seed=3, rng="numpy"))
    members = grouped_strata([N_ROWS - N_POSITIVE, N_POSITIVE])
    grouped_labels = np.repeat([0, 1], [N_ROWS - N_POSITIVE, N_POSITIVE])
    from_members = WeightedDataset.for_sampler(
        dataset, StratifiedBatchSampler(members, policy, seed=3, rng="index"))
    expected = from_labels.weights.numpy()[np.argsort(labels, kind="stable")]
    np.testing.assert_array_equal(from_members.weights.numpy(), expected)
    assert np.unique(from_members.weights.numpy()[grouped_labels == 1]).shape[0] == 1


@pytest.mark.parametrize("rng, shuffle", [("numpy", True), ("R", True), ("index", False)])
def test_members_are_refused_outside_the_shuffled_index_stream(rng, shuffle):
    grouped = grouped_strata([50, 10])
    with pytest.raises(ValueError, match=r"StratumMembers.*rng='index'"):
        StratifiedBatchSampler(grouped, 2, seed=None if not shuffle else 1, rng=rng,
                               shuffle=shuffle)
