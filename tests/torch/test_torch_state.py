"""pystratum.torch._state: the versioned resume format, and corrupted states refused by name."""

import copy
import io
import json
import pickle

import numpy as np
import pytest
import torch

from _torch_helpers import imbalanced_labels
from pystratum.policies import MinPerStratum, Targets
from pystratum.torch import StratifiedBatchSampler
from pystratum.torch._state import STATE_FORMAT, parse_state

M = 3


@pytest.fixture(scope="module")
def labels():
    return imbalanced_labels(400, 30, seed=2)


def mid_epoch_state(labels, rng, k=4):
    sampler = StratifiedBatchSampler(labels, M, seed=13, rng=rng)
    list(sampler)
    iterator = iter(sampler)
    for _ in range(k):
        next(iterator)
    return sampler.state_dict()


@pytest.mark.parametrize("rng", ["numpy", "R", "torch"])
def test_state_round_trips_through_parse(labels, rng):
    state = mid_epoch_state(labels, rng)
    assert state["format"] == STATE_FORMAT
    assert state["policy"] == {"name": "min_per_stratum", "params": {"m": M}}
    again = parse_state(state).to_dict()
    assert again.keys() == state.keys()
    for key in state:
        if key != "stream":
            assert again[key] == state[key], key


@pytest.mark.parametrize("rng", ["numpy", "R"])
def test_state_is_json(labels, rng):
    state = mid_epoch_state(labels, rng)
    reference = StratifiedBatchSampler(labels, M, seed=13, rng=rng)
    list(reference)
    expected = list(reference)[4:]
    fresh = StratifiedBatchSampler(labels, M, seed=1, rng=rng)
    fresh.load_state_dict(json.loads(json.dumps(state)))
    assert list(fresh) == expected


def test_format_1_states_still_resume(labels):
    """States saved before policies (format 1) resume as min_per_stratum."""
    state = mid_epoch_state(labels, "R")
    old = {key: value for key, value in state.items() if key != "policy"}
    old["format"] = "pystratum.torch.StratifiedBatchSampler/1"
    reference = StratifiedBatchSampler(labels, M, seed=13, rng="R")
    list(reference)
    expected = list(reference)[4:]
    fresh = StratifiedBatchSampler(labels, M, seed=5, rng="R")
    fresh.load_state_dict(old)
    assert list(fresh) == expected


def corrupt(state, key, value):
    state = copy.deepcopy(state)
    if value is KeyError:
        del state[key]
    else:
        state[key] = value
    return state


@pytest.mark.parametrize("key, value, error, match", [
    ("format", KeyError, ValueError, r"state_dict\['format'\] is None, expected one of"),
    ("format", "pystratum.torch.StratifiedBatchSampler/9", ValueError, "expected one of"),
    ("epoch", KeyError, ValueError, r"missing keys \['epoch'\]"),
    ("seed", KeyError, ValueError, r"missing keys \['seed'\]"),
    ("epoch", -1, ValueError, r"state_dict\['epoch'\] must be an integer >= 0, got "
                              r"state_dict\['epoch'\]=-1"),
    ("epoch", True, TypeError, r"state_dict\['epoch'\] must be an integer, got "
                               r"state_dict\['epoch'\]=True of type bool"),
    ("epoch", 1.0, TypeError, r"state_dict\['epoch'\] must be an integer"),
    ("batches_yielded", -2, ValueError, r"state_dict\['batches_yielded'\] must be an integer >= 0"),
    ("batches_yielded", "4", TypeError, r"state_dict\['batches_yielded'\] must be an integer"),
    ("num_replicas", 0, ValueError, r"state_dict\['num_replicas'\] must be a positive integer"),
    ("seed", None, ValueError, r"state_dict\['seed'\] is None.*never saw"),
    ("seed", True, TypeError, r"state_dict\['seed'\] must be an int.*got seed=True of type bool"),
    ("seed", 2.5, TypeError, r"state_dict\['seed'\] must be an int"),
    ("seed", {"entropy": 1}, ValueError, r"state_dict\['seed'\] is not a numpy SeedSequence record"),
    ("seed", {"entropy": -1, "spawn_key": [], "pool_size": 4}, ValueError, "entropy=-1"),
    ("shuffle", 1, TypeError, r"state_dict\['shuffle'\] must be True or False"),
    ("drop_last", None, TypeError, r"state_dict\['drop_last'\] must be True or False"),
    ("rng", "python", ValueError, r"state_dict\['rng'\] must be one of"),
    ("policy", "min_per_stratum", TypeError, r"state_dict\['policy'\] must be a dict"),
    ("strata_digest", 5, TypeError, r"state_dict\['strata_digest'\] must be a str"),
    ("stream", None, TypeError, r"state_dict\['stream'\] must be a dict, got NoneType"),
    ("stream", {"n": 1}, ValueError, r"state_dict\['stream'\] must be empty for 'numpy' streams"),
])
def test_corrupted_states_name_the_key(labels, key, value, error, match):
    state = StratifiedBatchSampler(labels, M, seed=1).state_dict()
    sampler = StratifiedBatchSampler(labels, M, seed=1)
    before = sampler.state_dict()
    with pytest.raises(error, match=match):
        sampler.load_state_dict(corrupt(state, key, value))
    assert sampler.state_dict() == before  # a refused state changes nothing


@pytest.mark.parametrize("rng, change, error, match", [
    ("R", {"random_seed": KeyError}, ValueError, r"misses keys \['random_seed'\]"),
    ("R", {"n": "400"}, TypeError, r"state_dict\['stream'\]\['n'\] must be an integer"),
    ("R", {"random_seed": "abc"}, TypeError, r"\['random_seed'\] must be a list of ints"),
    ("R", {"random_seed": [10403, 624, 1, 2]}, ValueError,
     r"state_dict\['stream'\] cannot be restored for rng='R': random_seed must hold 626 values"),
    ("torch", {"generator_state": torch.zeros(7, dtype=torch.uint8)}, TypeError,
     r"\['generator_state'\] must be a uint8 tensor of shape \(\d+,\).*got a torch.uint8 tensor "
     r"of shape \(7,\)"),
    ("torch", {"generator_state": [1, 2]}, TypeError, r"must be a uint8 tensor.*got list"),
    ("torch", {"epoch": -1}, ValueError, r"state_dict\['stream'\]\['epoch'\] must be an integer "
                                         r">= 0"),
])
def test_corrupted_stream_positions(labels, rng, change, error, match):
    state = mid_epoch_state(labels, rng)
    stream = dict(state["stream"])
    for key, value in change.items():
        if value is KeyError:
            del stream[key]
        else:
            stream[key] = value
    with pytest.raises(error, match=match):
        StratifiedBatchSampler(labels, M, seed=13, rng=rng).load_state_dict({**state,
                                                                             "stream": stream})


def test_unshuffled_state_refuses_a_seed(labels):
    state = StratifiedBatchSampler(labels, M, shuffle=False).state_dict()
    assert state["seed"] is None
    StratifiedBatchSampler(labels, M, shuffle=False).load_state_dict(state)
    with pytest.raises(ValueError, match=r"state_dict\['seed'\] must be None for an unshuffled"):
        StratifiedBatchSampler(labels, M, shuffle=False).load_state_dict({**state, "seed": 3})


def test_a_seed_the_stream_refuses_is_named(labels):
    state = StratifiedBatchSampler(labels, M, seed=1).state_dict()
    with pytest.raises(ValueError, match=r"state_dict\['seed'\]=-5 cannot seed rng='numpy'"):
        StratifiedBatchSampler(labels, M, seed=1).load_state_dict({**state, "seed": -5})


def test_policy_mismatch(labels):
    state = StratifiedBatchSampler(labels, M, seed=1).state_dict()
    state["policy"] = {"name": "min_per_stratum", "params": {"m": 4}}
    with pytest.raises(ValueError, match="saved with policy="):
        StratifiedBatchSampler(labels, M, seed=1).load_state_dict(state)


# ------------------------------------------------------------- copies and pickles


@pytest.mark.parametrize("rng", ["numpy", "R", "torch"])
@pytest.mark.parametrize("how", ["deepcopy", "pickle", "torch.save"])
def test_copy_mid_epoch_reports_and_serves_the_same_epoch(labels, rng, how):
    reference = StratifiedBatchSampler(labels, M, seed=6, rng=rng)
    expected = [list(reference) for _ in range(3)]
    sampler = StratifiedBatchSampler(labels, M, seed=6, rng=rng)
    iterator = iter(sampler)
    next(iterator), next(iterator)
    if how == "deepcopy":
        clone = copy.deepcopy(sampler)
    elif how == "pickle":
        clone = pickle.loads(pickle.dumps(sampler))
    else:
        buffer = io.BytesIO()
        torch.save(sampler, buffer)
        buffer.seek(0)
        clone = torch.load(buffer, weights_only=False)
    assert clone.epoch == sampler.epoch == 0
    assert clone.state_dict()["batches_yielded"] == 2
    assert clone.plan().batches[0].tolist() == expected[0][0]  # plan() follows epoch too
    assert list(clone) == expected[0][2:]
    assert clone.epoch == 1
    assert list(clone) == expected[1]
    # Between epochs a copy simply starts the next one.
    between = copy.deepcopy(clone)
    assert between.epoch == 2 and list(between) == expected[2]


@pytest.mark.parametrize("other", [2, MinPerStratum(2)])
def test_a_targets_state_in_a_min_per_stratum_sampler_names_the_policies(other):
    # The Targets state has no int m; the refusal must name the two policies, not say the
    # state was "saved with min_samples_per_stratum=None".
    y = np.array([0] * 10 + [1] * 6)
    state = StratifiedBatchSampler(y, Targets("balanced", 4), seed=1).state_dict()
    with pytest.raises(ValueError, match=r"^Cannot resume: the state was saved with "
                                         r"policy=\{'name': 'targets'.* but this sampler has "
                                         r"policy=\{'name': 'min_per_stratum'") as error:
        StratifiedBatchSampler(y, other, seed=1).load_state_dict(state)
    assert "min_samples_per_stratum=None" not in str(error.value)
