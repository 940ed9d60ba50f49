"""The resume envelope every sampler's state shares, read defensively, once.

A sampler's ``state_dict()`` is a versioned dict of plain values: its own
settings (compared on resume) plus the envelope every family has:

* ``epoch``: the epoch being served (0 .. 2**31 - 1, as ``set_epoch``);
* ``batches_yielded``: batches this rank has yielded of it (at most ``len()``);
* ``seed``: the seed in use (an int or a SeedSequence record; never None
  for a shuffled sampler, which would reseed from fresh entropy and serve
  an epoch the saved run never saw);
* ``stream``: the random stream's position before the epoch.

:func:`read_resume` checks the envelope and returns a :class:`Resume`; every
bad value is a TypeError/ValueError naming its key and the fix, never a
KeyError, an OverflowError or a silent reseed. The seed record itself
(int, SeedSequence) is :mod:`pystratum.serving._record`'s.
"""

from __future__ import annotations

import numbers
from dataclasses import dataclass

import numpy as np

from ._record import seed_from_record
from ..base._validation import check_epoch, check_int

__all__ = ["Resume", "check_format", "differs", "read_resume", "read_seed", "read_stream"]

_INT32_MIN, _INT32_MAX = -2**31, 2**31 - 1


@dataclass(frozen=True)
class Resume:
    """The envelope of a validated state."""

    epoch: int
    batches_yielded: int
    seed: object
    stream: dict


def check_format(state, owner: str, formats, keys_of: dict) -> str:
    """Refuse what is not a dict of one of ``formats`` holding every key ``keys_of[format]``.

    Returns the format. TypeError for a non-dict; ValueError naming the
    format or the missing keys.
    """
    if not isinstance(state, dict):
        raise TypeError(
            f"state_dict must be the dict {owner}.state_dict() returned, got "
            f"{type(state).__name__}.")
    form = state.get("format")
    if not isinstance(form, str) or form not in formats:
        raise ValueError(
            f"state_dict is not a {owner} state: state_dict['format'] is {_short(form)}, "
            f"expected one of {list(formats)}; pass what {owner}.state_dict() returned.")
    missing = [key for key in keys_of[form] if key not in state]
    if missing:
        raise ValueError(
            f"state_dict is not a complete {owner} state (format {form!r}): missing keys "
            f"{missing}; pass what {owner}.state_dict() returned.")
    return form


def read_resume(state: dict, *, fix: str, length: int | None, shuffle: bool = True,
                rng: str | None = None, stream_key: str = "stream") -> Resume:
    """The envelope of ``state`` (already through :func:`check_format`).

    ``length``: the most batches a rank yields per epoch (None: endless);
    ``rng``: the stream whose position ``state[stream_key]`` holds (None: no
    check of its inside, the owner restores it and translates its errors).
    """
    epoch = check_epoch(state["epoch"], "state_dict['epoch']")
    yielded = check_int(state["batches_yielded"], "state_dict['batches_yielded']", minimum=0,
                        fix=f"{fix[:1].upper()}{fix[1:]}.")
    if length is not None and yielded > length:
        raise ValueError(
            f"state_dict['batches_yielded'] must be at most len(sampler)={length}, got "
            f"batches_yielded={yielded}; was the state saved by another sampler?")
    seed = read_seed(state["seed"], shuffle, fix=fix)
    stream = state[stream_key]
    if rng is not None or not isinstance(stream, dict):
        stream = read_stream(stream, rng if shuffle else None, fix=fix, key=stream_key)
    return Resume(epoch=epoch, batches_yielded=yielded, seed=seed, stream=stream)


def read_seed(record, shuffle: bool, *, fix: str, key: str = "state_dict['seed']"):
    """The saved seed: None only for an unshuffled sampler (else a ValueError: no reseed)."""
    if not shuffle:
        if record is not None:
            raise ValueError(
                f"{key} must be None for an unshuffled sampler (shuffle=False), got "
                f"seed={_short(record)}; {fix}.")
        return None
    # seed_from_record refuses None: resuming must never reseed from fresh entropy.
    return seed_from_record(record, fix=fix, key=key)


def read_stream(stream, rng: str | None, *, fix: str, key: str = "stream") -> dict:
    """Check a stream position's shape for ``rng`` (None: unshuffled, no stream).

    The R stream's ``random_seed`` must be a list of 32-bit ints (R's
    ``.Random.seed``); the torch generator state must be a uint8 tensor
    (its exact size is torch's to check: the owner translates that error).
    """
    name = f"state_dict[{key!r}]"
    if not isinstance(stream, dict):
        raise TypeError(f"{name} must be a dict, got {type(stream).__name__}; {fix}.")
    if rng in (None, "numpy", "index"):
        if stream:
            raise ValueError(
                f"{name} must be empty for "
                f"{'an unshuffled sampler' if rng is None else repr(rng) + ' streams'} "
                f"(they have no position), got keys {sorted(map(str, stream))}; was it saved "
                f"with another rng? {fix[:1].upper()}{fix[1:]}.")
        return {}
    position_key = "random_seed" if rng == "R" else "generator_state"
    missing = [k for k in ("n", "epoch", position_key) if k not in stream]
    if missing:
        raise ValueError(f"{name} of rng={rng!r} misses keys {missing}; {fix}.")
    unknown = sorted(str(k) for k in stream if k not in ("n", "epoch", position_key))
    if unknown:
        raise ValueError(f"{name} of rng={rng!r} has unknown keys {unknown}; {fix}.")
    position = stream[position_key]
    where = f"{name}[{position_key!r}]"
    if position is None:
        return dict(stream)  # the stream has not drawn yet: n/epoch are not used
    check_int(stream["n"], f"{name}['n']", minimum=0, fix=f"{fix[:1].upper()}{fix[1:]}.")
    check_epoch(stream["epoch"], f"{name}['epoch']")
    if rng == "R":
        if not (isinstance(position, (list, tuple)) and position and all(
                isinstance(v, (numbers.Integral, np.integer))
                and not isinstance(v, (bool, np.bool_)) for v in position)):
            raise TypeError(
                f"{where} must be a list of ints (R's .Random.seed), got "
                f"{_short(position)}; {fix}.")
        outside = [int(v) for v in position if not _INT32_MIN <= int(v) <= _INT32_MAX]
        if outside:
            raise ValueError(
                f"{where} must hold 32-bit ints (R's .Random.seed), got {outside[0]} "
                f"(outside [-2**31, 2**31 - 1]); {fix}.")
    elif rng == "torch":
        if not (type(position).__module__.startswith("torch")
                and str(getattr(position, "dtype", "")) == "torch.uint8"
                and len(getattr(position, "shape", ())) == 1):
            raise TypeError(
                f"{where} must be a uint8 tensor of one dimension (what "
                f"torch.Generator.get_state() returns), got {type(position).__name__}; {fix}.")
    return dict(stream)


def differs(saved, mine) -> bool:
    """Whether a saved setting differs from the sampler's own (a forged value never raises:
    an array, a tensor or an object whose comparison fails is simply not this setting)."""
    try:
        return type(saved) is not type(mine) or bool(saved != mine)
    except Exception:
        return True


def _short(value) -> str:
    """``value`` for a message, at most ~80 characters (forged states can be huge)."""
    text = repr(value)
    return text if len(text) <= 80 else f"{text[:77]}..."
