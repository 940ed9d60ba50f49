"""Resume states: plain values out, validated values back in.

Every sampler's ``state_dict()`` is a versioned dict carrying its seed, and
checkpoints must hold only plain values (``torch.load(weights_only=True)``
rejects numpy objects, JSON knows no SeedSequence). One envelope check and
one seed record for all samplers, read back with the same checks, so a
corrupted state is an error naming the key and the fix, never a bare
KeyError or a silent reseed.
"""

from __future__ import annotations

import numbers

import numpy as np

__all__ = ["check_envelope", "seed_to_record", "seed_from_record", "same_seed"]

_SEED_SEQUENCE_KEYS = ["entropy", "pool_size", "spawn_key"]


def check_envelope(state_dict, owner: str, state_format: str, keys) -> None:
    """Refuse what is not a dict of ``owner``'s format holding every key in ``keys``."""
    if not isinstance(state_dict, dict):
        raise TypeError(
            f"state_dict must be the dict {owner}.state_dict() returned, got "
            f"{type(state_dict).__name__}.")
    missing = [key for key in keys if key not in state_dict]
    if state_dict.get("format") != state_format or missing:
        raise ValueError(
            f"state_dict is not a {owner} state (format {state_dict.get('format')!r}, "
            f"expected {state_format!r}; missing keys {missing}); pass what "
            f"{owner}.state_dict() returned.")


def seed_to_record(seed):
    """``seed`` as plain values: an int, None, or a SeedSequence as a dict of ints."""
    if isinstance(seed, np.random.SeedSequence):
        entropy = seed.entropy
        return {
            "entropy": int(entropy) if isinstance(entropy, (numbers.Integral, np.integer))
            else _flat_ints(entropy),
            "spawn_key": [int(v) for v in seed.spawn_key],
            "pool_size": int(seed.pool_size),
        }
    if isinstance(seed, numbers.Integral):
        return int(seed)
    return seed


def _flat_ints(entropy) -> list:
    """SeedSequence entropy given as a (nested) sequence or array, as a flat list of ints.

    numpy turns every int into its 32-bit words and joins them in order, so
    the flat list seeds the same stream.
    """
    flat = []
    for value in entropy:
        if isinstance(value, (numbers.Integral, np.integer)):
            flat.append(int(value))
        else:
            flat.extend(_flat_ints(value))
    return flat


def seed_from_record(record, *, fix: str, key: str = "state_dict['seed']"):
    """Inverse of :func:`seed_to_record` for a seed in use: an int or a SeedSequence.

    Raises TypeError/ValueError naming ``key`` and ending with ``fix`` for
    anything :func:`seed_to_record` cannot have written, and a ValueError for
    None: a sampler's seed in use is never None (it draws one at
    construction), and a None would reseed from fresh entropy, so every
    "resume" would serve an epoch the saved run never saw. (An unshuffled
    sampler, which has no seed, checks that case before calling this.)
    """
    if record is None:
        raise ValueError(
            f"{key} is None, but the state is of a shuffled sampler: resuming would reseed "
            f"from fresh entropy and serve an epoch the saved run never saw; {fix} (its "
            f"seed is the int or SeedSequence in use).")
    if isinstance(record, dict):
        return _seed_sequence(record, fix=fix, key=key)
    if isinstance(record, (bool, np.bool_)) or not isinstance(record, (numbers.Integral, np.integer)):
        raise TypeError(
            f"{key} must be an int (or the dict of a numpy SeedSequence), got "
            f"seed={record!r} of type {type(record).__name__}; {fix}."
        )
    return int(record)


def same_seed(a, b) -> bool:
    """Whether two seeds (ints, None or SeedSequences) give the same streams."""
    return seed_to_record(a) == seed_to_record(b)


def _seed_sequence(record: dict, *, fix: str, key: str) -> np.random.SeedSequence:
    problem = None
    if sorted(record) != _SEED_SEQUENCE_KEYS:
        problem = f"keys {sorted(record)}, expected {_SEED_SEQUENCE_KEYS}"
    else:
        entropy, spawn_key, pool_size = record["entropy"], record["spawn_key"], record["pool_size"]
        # An empty list is numpy's SeedSequence([]) (the stream of SeedSequence(0)).
        if not (_is_count(entropy) or (isinstance(entropy, list)
                                       and all(_is_count(v) for v in entropy))):
            problem = f"entropy={entropy!r} (a non-negative int or list of them)"
        elif not (isinstance(spawn_key, list) and all(_is_count(v) for v in spawn_key)):
            problem = f"spawn_key={spawn_key!r} (a list of non-negative ints)"
        elif not (_is_count(pool_size) and pool_size >= 4):
            problem = f"pool_size={pool_size!r} (an int >= 4)"
    if problem is not None:
        raise ValueError(f"{key} is not a numpy SeedSequence record: {problem}; {fix}.")
    return np.random.SeedSequence(record["entropy"], spawn_key=tuple(record["spawn_key"]),
                                  pool_size=record["pool_size"])


def _is_count(value) -> bool:
    return (isinstance(value, (numbers.Integral, np.integer))
            and not isinstance(value, (bool, np.bool_)) and value >= 0)
