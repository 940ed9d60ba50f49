"""The epoch rule and the resume envelope, once per batch source (pystratum.serving).

Every sampler family serves through one ``EpochPass``; these properties are
run on each: the materialised plan (numpy, R and torch streams), the lazy
plan (``rng="index"``), the negative pairs and the tree. Ranks are simulated
with ``num_replicas``/``rank`` (real gloo ranks: test_torch_distributed.py,
test_tree_torch.py).
"""

import copy
import io
import itertools
import json
import pickle
import warnings

import numpy as np
import pytest
import torch

from _tree_data import metadata
from pystratum.negatives import NegativeBatch, NegativePairSampler
from pystratum.torch import StratifiedBatchSampler
from pystratum.tree import TreeSampler
from pystratum.tree.torch import TreeBatchSampler

LABELS = np.repeat([0, 1, 2], [30, 20, 10])  # MinPerStratum(2): 5 batches per epoch
rng_labels = np.random.default_rng(0)
rng_labels.shuffle(LABELS)

_pairs = np.random.default_rng(1)
USERS = _pairs.integers(0, 8, 23)
ITEMS = (_pairs.permutation(23) * 3 + USERS) % 40  # distinct (user, item) pairs
TREE_CONFIG = {"epoch_length": 230, "root": {"children": [
    {"column": "active", "value": 1, "weight": 0.3, "mode": "shuffle"},
    {"column": "active", "value": 0, "weight": 0.7, "children": [
        {"for_each": "protein", "mode": "shuffle"}]},
]}}
FRAME = metadata(600)


def plan(rng):
    def make(num_replicas=1, rank=0, drop_last=False, seed=3):
        return StratifiedBatchSampler(LABELS, 2, seed=seed, rng=rng, num_replicas=num_replicas,
                                      rank=rank, drop_last=drop_last)
    return make


def negatives(num_replicas=1, rank=0, drop_last=False, seed=3):
    return NegativePairSampler(USERS, ITEMS, num_items=40, negatives=2, batch_size=4, seed=seed,
                               num_replicas=num_replicas, rank=rank, drop_last=drop_last)


def tree(num_replicas=1, rank=0, drop_last=False, seed=3):
    return TreeBatchSampler(TreeSampler(TREE_CONFIG, FRAME, seed=seed), 50,
                            num_replicas=num_replicas, rank=rank, drop_last=drop_last)


SOURCES = {"plan-numpy": plan("numpy"), "plan-R": plan("R"), "plan-torch": plan("torch"),
           "lazy-index": plan("index"), "negatives": negatives, "tree": tree}


@pytest.fixture(params=list(SOURCES))
def make(request):
    return SOURCES[request.param]


def plain(batch):
    """A batch as comparable plain values (NegativeBatch: its rows)."""
    if isinstance(batch, NegativeBatch):
        return (batch.epoch, batch.index, batch.user.tolist(), batch.item.tolist(),
                batch.positive.tolist())
    return batch


def served(iterable, limit=None):
    return [plain(b) for b in itertools.islice(iterable, limit)]


def epoch_of(make, epoch, **ranks):
    """Epoch ``epoch`` on a fresh sampler, reached through set_epoch."""
    sampler = make(**ranks)
    sampler.set_epoch(epoch)
    return served(sampler)


RANKS = [(1, 0), (2, 0), (2, 1), (3, 2)]


@pytest.mark.parametrize("num_replicas, rank", RANKS[1:])
def test_a_peek_on_one_replica_re_serves_the_same_epoch(make, num_replicas, rank):
    reference = served(make(num_replicas, rank))
    peeked = make(num_replicas, rank)
    unused = iter(peeked)  # DataLoader makes iterators it never uses: they move nothing
    del unused
    assert served(iter(peeked), 1) == reference[:1]  # the peek
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a peek before the loop does not warn
        assert served(peeked) == reference
    # Every rank then moves on together through set_epoch.
    peeked.set_epoch(1)
    assert served(peeked) == epoch_of(make, 1, num_replicas=num_replicas, rank=rank)
    assert peeked.epoch == 1


def test_one_replica_moves_on_each_iter_and_set_epoch_jumps(make):
    sampler = make()
    epochs = [served(sampler) for _ in range(3)]
    assert epochs[0] != epochs[1] != epochs[2]
    for epoch in (2, 0, 1):
        assert epoch_of(make, epoch) == epochs[epoch]
    sampler.set_epoch(1)
    assert sampler.epoch == 1 and served(sampler) == epochs[1]
    assert served(sampler) == epochs[2]  # and on from there


@pytest.mark.parametrize("num_replicas, rank", RANKS)
@pytest.mark.parametrize("taken", [0, 1, 3])
def test_resume_mid_epoch_from_state_dict_and_from_a_pickle(make, num_replicas, rank, taken):
    sampler = make(num_replicas, rank)
    sampler.set_epoch(2)
    whole = served(_at(make, 2, num_replicas, rank))
    following = epoch_of(make, 3, num_replicas=num_replicas, rank=rank)
    iterator = iter(sampler)
    # At most len(sampler): the last batch served without StopIteration still counts as
    # in progress (a state saved then resumes into the empty rest of the epoch).
    first = served(iterator, min(taken, len(sampler)))
    state = sampler.state_dict()
    assert state["epoch"] == 2 and state["batches_yielded"] == len(first)
    for resumed in (_load(make(num_replicas, rank, seed=99), state),
                    _load(make(num_replicas, rank, seed=99), _through_torch_save(state)),
                    pickle.loads(pickle.dumps(sampler)), copy.deepcopy(sampler)):
        assert resumed.epoch == 2
        assert first + served(resumed) == whole
        resumed.set_epoch(3)
        assert served(resumed) == following
    # The original goes on as if nothing had been saved.
    assert first + served(iterator) == whole


def test_a_state_saved_between_epochs_resumes_the_next_one(make):
    sampler = make()
    served(sampler)
    state = sampler.state_dict()
    assert state["epoch"] == 1 and state["batches_yielded"] == 0
    resumed = _load(make(seed=99), state)
    assert served(resumed) == epoch_of(make, 1)


@pytest.mark.parametrize("num_replicas", [1, 2, 3, 4])
@pytest.mark.parametrize("drop_last", [False, True])
def test_ranks_yield_equal_counts_of_whole_batches(make, num_replicas, drop_last):
    whole = epoch_of(make, 1)
    if drop_last and len(whole) < num_replicas:
        with pytest.raises(ValueError, match="drop_last=True leaves no batch"):
            make(num_replicas, 0, drop_last)
        return
    ranks = [make(num_replicas, r, drop_last) for r in range(num_replicas)]
    for sampler in ranks:
        sampler.set_epoch(1)
    got = [served(sampler) for sampler in ranks]
    assert {len(g) for g in got} == {len(ranks[0])}
    count = len(ranks[0])
    # Position j of rank r holds global batch j*n + r (padded from the epoch's start).
    for r, batches in enumerate(got):
        for j, batch in enumerate(batches):
            assert batch == whole[(j * num_replicas + r) % len(whole)]
    if drop_last:
        assert count == len(whole) // num_replicas
    else:
        assert count == -(-len(whole) // num_replicas)


def test_an_unstarted_pickle_serves_what_the_original_serves(make):
    sampler = make(2, 1)
    clone = pickle.loads(pickle.dumps(sampler))
    assert served(clone) == served(sampler)
    sampler.set_epoch(4)
    clone.set_epoch(4)
    assert served(clone) == served(sampler)


def test_pass_reports_its_own_progress(make):
    sampler = make()
    iterator = iter(sampler)
    assert iterator.state_dict() == {"epoch": None, "batches_yielded": 0}
    next(iterator)
    assert iterator.state_dict() == {"epoch": 0, "batches_yielded": 1}
    assert iterator.in_progress and "epoch 0" in repr(iterator)


def _at(make, epoch, num_replicas, rank):
    sampler = make(num_replicas, rank)
    sampler.set_epoch(epoch)
    return sampler


def _load(sampler, state):
    sampler.load_state_dict(state)
    return sampler


def _through_torch_save(state):
    buffer = io.BytesIO()
    torch.save(state, buffer)
    buffer.seek(0)
    loaded = torch.load(buffer, weights_only=True)
    if "generator_state" not in json.dumps(state, default=str):
        assert json.loads(json.dumps(loaded)) == loaded  # plain values
    return loaded


# ------------------------------------------------------------- the tree, as it was

def test_tree_peek_on_one_rank_keeps_it_in_step():
    """The tree used to draw the whole epoch at the first batch, so a peek moved that rank
    on to the next epoch while the others served the first."""
    ranks = [tree(2, r) for r in range(2)]
    next(iter(ranks[0]))  # rank 0 peeks (a sanity check before the loop)
    first = [served(sampler) for sampler in ranks]
    everything = TreeSampler(TREE_CONFIG, FRAME, seed=3).draw(230).indices.tolist()
    batches = [everything[i:i + 50] for i in range(0, 230, 50)]
    assert first == [[batches[0], batches[2], batches[4]], [batches[1], batches[3], batches[0]]]


def test_endless_tree_rounds_resume_and_peek():
    config = {k: v for k, v in TREE_CONFIG.items() if k != "epoch_length"}
    stream = TreeSampler(config, FRAME, seed=3).draw(50 * 2 * 6).indices.tolist()
    rounds = [stream[i:i + 100] for i in range(0, 600, 100)]
    ranks = [TreeBatchSampler(TreeSampler(config, FRAME, seed=3), 50, num_replicas=2, rank=r)
             for r in range(2)]
    next(iter(ranks[1]))  # a peek re-serves the endless epoch from its start
    for r, sampler in enumerate(ranks):
        iterator = iter(sampler)
        got = served(iterator, 3)
        assert got == [rounds[j][r * 50:(r + 1) * 50] for j in range(3)]
        state = sampler.state_dict()
        resumed = TreeBatchSampler(TreeSampler(config, FRAME, seed=8), 50, num_replicas=2,
                                   rank=r)
        resumed.load_state_dict(state)
        assert served(iter(resumed), 3) == [rounds[j][r * 50:(r + 1) * 50] for j in (3, 4, 5)]
        assert served(iter(pickle.loads(pickle.dumps(sampler))), 1) == \
            [rounds[3][r * 50:(r + 1) * 50]]
    with pytest.raises(TypeError, match="no length"):
        len(ranks[0])
    assert not hasattr(ranks[0], "sampler")  # no set_epoch hook for Lightning to call
