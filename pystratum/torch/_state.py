"""The sampler's resume state: a versioned dict of plain values, read defensively.

A state is what ``StratifiedBatchSampler.state_dict()`` returns and what
checkpoints (``torch.save``, ``torch.load(weights_only=True)``, JSON for all
but ``rng="torch"``) carry. Reading one either gives a :class:`SamplerState`
whose every field has the right type and range, or raises a TypeError /
ValueError naming the key and the fix; never a bare KeyError, a torch
internal error, or a silent reseed from fresh entropy.

Format 2 records the batch policy by name and parameters; format 1 (before
policies) is still read, as the ``min_per_stratum`` policy.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from ..serving._record import same_seed, seed_to_record
from ..streams._base import RNG_CHOICES
from ..base._validation import check_bool, check_choice, check_epoch, check_int
from ..serving._state import check_format, differs, read_seed, read_stream

__all__ = ["STATE_FORMAT", "SamplerState", "parse_state", "same_seed", "check_resumable"]

STATE_FORMAT = "pystratum.torch.StratifiedBatchSampler/2"
_FORMAT_1 = "pystratum.torch.StratifiedBatchSampler/1"
_FORMATS = (STATE_FORMAT, _FORMAT_1)

_KEYS_1 = ("format", "epoch", "batches_yielded", "seed", "rng", "shuffle", "num_replicas",
           "drop_last", "min_samples_per_stratum", "n_rows", "num_batches", "strata_digest",
           "stream")
_KEYS_2 = _KEYS_1 + ("policy",)

# Settings a resumed sampler must share with the saved one, in the order they
# are compared (the first difference is the one reported).
_MUST_MATCH = ("rng", "shuffle", "num_replicas", "drop_last", "min_samples_per_stratum",
               "policy", "n_rows", "num_batches", "strata_digest", "shards", "window")

_FIX = "pass the dict StratifiedBatchSampler.state_dict() returned, unchanged"
_FIX_SENTENCE = "Pass the dict StratifiedBatchSampler.state_dict() returned, unchanged."


@dataclass(frozen=True)
class SamplerState:
    """A validated state. ``seed`` is an int or SeedSequence (None only unshuffled)."""

    epoch: int
    batches_yielded: int
    seed: object
    rng: str
    shuffle: bool
    num_replicas: int
    drop_last: bool
    min_samples_per_stratum: int | None
    policy: dict
    n_rows: int
    num_batches: int
    strata_digest: str
    stream: dict
    # Recorded so that a sampler rebuilt from a saved state gets the same guard
    # (pystratum.engine._single_batch); None: a state saved before it was recorded.
    allow_single_batch: bool | None = None
    # The shard layout's fingerprint and the window (docs/SHARDS.md); None: no shards
    # (also a state saved before shards existed).
    shards: str | None = None
    window: int | None = None

    def to_dict(self) -> dict:
        """The state as plain values (``torch.load(weights_only=True)`` reads it back)."""
        return {
            "format": STATE_FORMAT,
            "epoch": self.epoch,
            "batches_yielded": self.batches_yielded,
            "seed": seed_to_record(self.seed),
            "rng": self.rng,
            "shuffle": self.shuffle,
            "num_replicas": self.num_replicas,
            "drop_last": self.drop_last,
            "min_samples_per_stratum": self.min_samples_per_stratum,
            "policy": {"name": self.policy["name"], "params": dict(self.policy["params"])},
            "n_rows": self.n_rows,
            "num_batches": self.num_batches,
            "strata_digest": self.strata_digest,
            "stream": self.stream,
            "allow_single_batch": self.allow_single_batch,
            "shards": self.shards,
            "window": self.window,
        }


def parse_state(state) -> SamplerState:
    """Validate a saved state (any supported format) into a :class:`SamplerState`."""
    form = check_format(state, "StratifiedBatchSampler", _FORMATS,
                        {STATE_FORMAT: _KEYS_2, _FORMAT_1: _KEYS_1})

    def integer(key, minimum=0):
        return check_int(state[key], f"state_dict[{key!r}]", minimum=minimum, fix=_FIX_SENTENCE)

    def flag(key):
        try:
            return check_bool(state[key], f"state_dict[{key!r}]")
        except TypeError as error:
            raise TypeError(f"{error} {_FIX_SENTENCE}") from None

    rng = check_choice(state["rng"], "state_dict['rng']", RNG_CHOICES)
    shuffle = flag("shuffle")
    m = state["min_samples_per_stratum"]
    if form == _FORMAT_1 or m is not None:
        m = integer("min_samples_per_stratum", minimum=1)
    policy = (_policy_record(state["policy"]) if form == STATE_FORMAT
              else {"name": "min_per_stratum", "params": {"m": m}})
    digest = state["strata_digest"]
    if not isinstance(digest, str):
        raise TypeError(
            f"state_dict['strata_digest'] must be a str, got {type(digest).__name__}; {_FIX}."
        )
    return SamplerState(
        # The envelope every sampler shares (pystratum.serving._state): the epoch capped
        # as set_epoch caps it, the seed never None when shuffled, the stream's shape.
        epoch=check_epoch(state["epoch"], "state_dict['epoch']"),
        batches_yielded=integer("batches_yielded"),
        seed=read_seed(state["seed"], shuffle, fix=_FIX),
        rng=rng,
        shuffle=shuffle,
        num_replicas=integer("num_replicas", minimum=1),
        drop_last=flag("drop_last"),
        min_samples_per_stratum=m,
        policy=policy,
        n_rows=integer("n_rows", minimum=1),
        num_batches=integer("num_batches", minimum=1),
        strata_digest=digest,
        stream=_stream_state(state["stream"], rng if shuffle else None),
        # Optional: states saved before the single-batch guard do not hold it.
        allow_single_batch=(None if state.get("allow_single_batch") is None
                            else flag("allow_single_batch")),
        shards=_shards_record(state.get("shards")),
        window=(None if state.get("window") is None else integer("window", minimum=1)),
    )


def _shards_record(value):
    """The saved shard fingerprint: None (no shards) or a str."""
    if value is not None and not isinstance(value, str):
        raise TypeError(
            f"state_dict['shards'] must be None or a str (the shard layout's fingerprint), got "
            f"{type(value).__name__}; {_FIX}.")
    return value


def check_resumable(saved: SamplerState, mine: SamplerState, length: int) -> None:
    """Raise ValueError unless ``saved`` can resume a sampler whose own state is ``mine``."""
    for key in _MUST_MATCH:
        theirs, ours = getattr(saved, key), getattr(mine, key)
        if differs(theirs, ours):
            raise ValueError(
                f"Cannot resume: the state was saved with {key}={theirs!r} but this "
                f"sampler has {key}={ours!r}. Build the sampler with the same strata and "
                f"arguments (and the same number of replicas) as the run that saved it."
            )
    if saved.batches_yielded > length:
        raise ValueError(
            f"state_dict['batches_yielded'] must be at most len(sampler)={length}, got "
            f"batches_yielded={saved.batches_yielded}; was the state saved by another sampler?"
        )


def _policy_record(policy) -> dict:
    if not (isinstance(policy, dict) and isinstance(policy.get("name"), str)
            and isinstance(policy.get("params"), dict)):
        raise TypeError(
            f"state_dict['policy'] must be a dict {{'name': str, 'params': dict}}, got "
            f"{policy!r}; {_FIX}."
        )
    return {"name": policy["name"], "params": dict(policy["params"])}


def _stream_state(stream, rng) -> dict:
    """Check the stream position's shape for ``rng`` (None: unshuffled, no stream).

    The shared reader checks keys and types; here the torch generator state's
    exact size, which needs torch.
    """
    stream = read_stream(stream, rng, fix=_FIX)
    if rng == "torch" and stream.get("generator_state") is not None:
        position = stream["generator_state"]
        expected = torch.Generator().get_state()
        if not (isinstance(position, torch.Tensor) and position.dtype == torch.uint8
                and position.shape == expected.shape):
            shown = (f"a {position.dtype} tensor of shape {tuple(position.shape)}"
                     if isinstance(position, torch.Tensor) else type(position).__name__)
            raise TypeError(
                f"state_dict['stream']['generator_state'] must be a uint8 tensor of shape "
                f"{tuple(expected.shape)} (what torch.Generator.get_state() returns), got "
                f"{shown}; {_FIX}."
            )
    return stream
