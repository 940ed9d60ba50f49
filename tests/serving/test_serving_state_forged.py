"""Forged and corrupted resume states, for every state reader (hostile inputs).

A valid state (saved mid-epoch) round-trips; any state with a key removed or
a value replaced by something hostile (None, bools, huge or negative ints,
floats, strings, containers, arrays, R seeds outside 32 bits) is either
refused with a TypeError/ValueError naming the key, or accepted and then
serves batches without any other exception. Never a KeyError, an
OverflowError, an IndexError or a silent reseed.
"""

import collections
import copy
import itertools

import numpy as np
import pytest
import torch
from hypothesis import given, settings, strategies as st

from _tree_data import metadata
from pystratum.negatives import NegativePairSampler
from pystratum.torch import StratifiedBatchSampler
from pystratum.tree import TreeSampler
from pystratum.tree.torch import TreeBatchSampler

LABELS = np.repeat([0, 1, 2], [30, 20, 10])
USERS = np.arange(23) % 8
ITEMS = (np.arange(23) * 7) % 40
TREE = {"epoch_length": 230, "root": {"children": [
    {"column": "active", "value": 1, "weight": 0.3, "mode": "shuffle"},
    {"column": "active", "value": 0, "weight": 0.7, "children": [
        {"for_each": "protein", "mode": "shuffle"}]},
]}}
FRAME = metadata(600)

READERS = {
    "sampler-numpy": lambda seed=3: StratifiedBatchSampler(LABELS, 2, seed=seed, rng="numpy"),
    "sampler-R": lambda seed=3: StratifiedBatchSampler(LABELS, 2, seed=seed, rng="R"),
    "sampler-torch": lambda seed=3: StratifiedBatchSampler(LABELS, 2, seed=seed, rng="torch"),
    "sampler-index": lambda seed=3: StratifiedBatchSampler(LABELS, 2, seed=seed, rng="index"),
    "sampler-unshuffled": lambda seed=None: StratifiedBatchSampler(LABELS, 2, shuffle=False),
    "negatives-numpy": lambda seed=3: NegativePairSampler(
        USERS, ITEMS, num_items=40, negatives=2, batch_size=4, seed=seed),
    "negatives-R": lambda seed=3: NegativePairSampler(
        USERS, ITEMS, num_items=40, negatives=2, batch_size=4, seed=seed, rng="R"),
    "tree": lambda seed=3: TreeBatchSampler(TreeSampler(TREE, FRAME, seed=seed), 50),
}

TRIED = collections.Counter()  # inputs per reader and outcome, for the report


def saved_state(name):
    """A state saved mid-epoch 1 (one batch yielded) by reader ``name``."""
    sampler = READERS[name]()
    list(sampler)
    iterator = iter(sampler)
    next(iterator)
    return sampler.state_dict()


STATES = {name: saved_state(name) for name in READERS}

HOSTILE = st.one_of(
    st.none(), st.booleans(),
    st.integers(-2**70, 2**70), st.sampled_from([-1, 2**31, 2**31 - 1, 2**40, 2**63, 2**64]),
    st.floats(allow_nan=True, allow_infinity=True), st.text(max_size=8),
    st.lists(st.integers(-2**40, 2**40), max_size=4),
    st.sampled_from([[2**31] * 3, [-2**31 - 1], [], [1.5], ["x"], [True]]),
    st.dictionaries(st.text(max_size=4), st.integers(), max_size=3),
    st.builds(lambda n: np.arange(n), st.integers(0, 3)),
    st.builds(lambda v: np.int64(v), st.integers(-2**63, 2**63 - 1)),
    st.builds(lambda n: torch.zeros(n, dtype=torch.uint8), st.integers(0, 3)),
    st.just(b"bytes"), st.just(object()),
)


def paths(value, prefix=()):
    """Every key path of a nested state (dicts and lists), leaves and containers alike."""
    out = [prefix] if prefix else []
    if isinstance(value, dict):
        for key, inner in value.items():
            out += paths(inner, prefix + (key,))
    elif isinstance(value, list) and len(value) <= 8:
        for index, inner in enumerate(value):
            out += paths(inner, prefix + (index,))
    elif isinstance(value, list):
        for index in (0, len(value) // 2, len(value) - 1):
            out += paths(value[index], prefix + (index,))
    return out


PATHS = {name: paths(state) for name, state in STATES.items()}


def forge(state, path, action, value):
    forged = copy.deepcopy(state)
    holder = forged
    for key in path[:-1]:
        holder = holder[key]
    if action == "delete" and isinstance(holder, dict):
        del holder[path[-1]]
    else:
        holder[path[-1]] = value
    return forged


def top_epoch(state):
    return state.get("epoch") if isinstance(state, dict) else None


def check(name, forged, path):
    sampler = READERS[name](seed=77) if name != "sampler-unshuffled" else READERS[name]()
    try:
        sampler.load_state_dict(forged)
    except (TypeError, ValueError) as error:
        message = str(error)
        top = path[0]
        # The key (or, for a setting that differs, its name) is in the message.
        assert str(top) in message, message
        assert "state_dict" in message or "Cannot resume" in message, message
        TRIED[name, "refused"] += 1
        return
    # Accepted: it must serve batches like any state (no foreign exception later).
    try:
        list(itertools.islice(iter(sampler), 3))
    except ValueError as error:
        # The one refusal a genuine state meets too: an epoch far ahead of a sequential
        # stream's position (set_epoch(k), then state_dict()) costs too much to replay.
        assert "earlier epoch(s)" in str(error) and str(top_epoch(forged)) in str(error), error
    TRIED[name, "accepted"] += 1


@pytest.mark.parametrize("name", list(READERS))
def test_a_valid_state_round_trips(name):
    state = STATES[name]
    resumed = READERS[name](seed=77) if name != "sampler-unshuffled" else READERS[name]()
    resumed.load_state_dict(copy.deepcopy(state))
    assert resumed.state_dict() == state if name != "sampler-torch" else True
    original = READERS[name]()
    list(original)
    iterator = iter(original)
    next(iterator)
    assert [_plain(b) for b in resumed] == [_plain(b) for b in iterator]


def _plain(batch):
    return batch if isinstance(batch, list) else (batch.user.tolist(), batch.item.tolist())


@pytest.mark.parametrize("name", list(READERS))
@settings(max_examples=150)
@given(data=st.data())
def test_forged_states_are_refused_naming_the_key(name, data):
    path = data.draw(st.sampled_from(PATHS[name]), label="path")
    action = data.draw(st.sampled_from(["delete", "replace", "replace"]), label="action")
    value = data.draw(HOSTILE, label="value")
    check(name, forge(STATES[name], path, action, value), path)


@pytest.mark.parametrize("name", list(READERS))
@settings(max_examples=40)
@given(data=st.data())
def test_states_of_another_type_are_refused(name, data):
    forged = data.draw(st.one_of(HOSTILE, st.lists(HOSTILE, max_size=2)), label="state")
    sampler = READERS[name]()
    with pytest.raises((TypeError, ValueError), match="state_dict"):
        sampler.load_state_dict(forged)
    TRIED[name, "refused"] += 1


@pytest.mark.parametrize("name", [n for n in READERS if n != "sampler-unshuffled"])
def test_a_none_seed_never_reseeds(name):
    """Issue 18 item 4: a None seed used to reseed the negatives (and tree) samplers from
    fresh entropy, so every "resume" served another epoch."""
    forged = copy.deepcopy(STATES[name])
    forged["seed"] = None
    if name == "tree":
        forged["stream"]["seed"] = None
    with pytest.raises(ValueError, match=r"state_dict\['(seed|stream)'\].*fresh entropy"):
        READERS[name]().load_state_dict(forged)


@pytest.mark.parametrize("name", ["sampler-numpy", "negatives-numpy", "tree"])
def test_an_epoch_beyond_set_epoch_is_refused(name):
    forged = copy.deepcopy(STATES[name])
    forged["epoch"] = 2**40
    with pytest.raises(ValueError, match=r"state_dict\['epoch'\].*2\*\*31 - 1"):
        READERS[name]().load_state_dict(forged)


@pytest.mark.parametrize("name", ["sampler-R", "negatives-R"])
@pytest.mark.parametrize("value", [2**31, -2**31 - 1, 2**40])
def test_r_seeds_outside_32_bits_name_the_key(name, value):
    forged = copy.deepcopy(STATES[name])
    forged["stream"]["random_seed"][3] = value
    with pytest.raises(ValueError, match=r"state_dict\['stream'\]\['random_seed'\].*32-bit"):
        READERS[name]().load_state_dict(forged)


def test_report_counts():
    """Not a check: prints how many forged inputs each reader saw (run with -s)."""
    for key in sorted(TRIED):
        print("forged states", *key, TRIED[key])
