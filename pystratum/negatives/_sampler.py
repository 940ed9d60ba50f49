"""The sampler: arguments, epochs, replicas, resume, and its batch source.

:class:`NegativePairSampler` checks its arguments, keeps the observed pairs
(in a :class:`~pystratum.negatives._pairset.PairSet` for rejection) and
serves epochs through :mod:`pystratum.serving`; ``_PairSource`` is its batch
source, batch ``i`` of an epoch built on demand. What a batch holds and how
it is drawn live in ``_batch``, ``_draws`` and ``_proposal``, bases of the
sampler that read its attributes.

Under data parallelism (``num_replicas > 1``) every rank computes the
epoch's permutation and draws negatives for its own batches only (rank r
serves batches ``r, r + n, ...``, see ``pystratum.serving._sharding``), and the
epoch follows the engine's rule: only ``set_epoch`` (or
``load_state_dict``) changes it, so ``iter()`` on one rank alone (a peek)
serves the same epoch again instead of moving that rank ahead; an epoch
served to its end that restarts without ``set_epoch`` warns once.
"""

from __future__ import annotations

import hashlib
import math
import numbers
from typing import Iterator

import numpy as np

from ._batch import NegativeBatch, _BatchRows
from ._draws import _Draws
from ._ids import _check_upper, _id_array, _query_ids
from ._pairset import PairSet
from ._proposal import _Proposal, _item_weights, _log_weights
from ..serving import EpochProgress, EpochServed
from ..serving._record import same_seed, seed_to_record
from ..serving._state import check_format, differs, read_resume
from ..streams._base import PERMUTATION_RNG_CHOICES, make_stream
from ..base._validation import (SIZE_MAX, check_bool, check_choice, check_epoch, check_int,
                          check_served_size)

__all__ = ["NegativePairSampler"]

PAIR_WITH_CHOICES = ("user", "random")
DUPLICATES_CHOICES = ("error", "drop")

_STATE_FORMAT = "pystratum.negatives.NegativePairSampler/1"
# R's sample.int(n, ...) refuses n above this (its longest vector).
_R_SAMPLE_MAX = 4_500_000_000_000_000
_STATE_FIX = "pass what NegativePairSampler.state_dict() returned, unmodified"
_STATE_KEYS = ("format", "epoch", "batches_yielded", "seed", "rng", "num_replicas", "drop_last",
               "negatives", "batch_size", "num_users", "num_items", "reject_observed",
               "pair_with", "num_pairs", "pairs_digest", "stream")
_MAX_KEY = 2**62


class NegativePairSampler(_Proposal, _Draws, _BatchRows, EpochServed):
    """Batches of observed (user, item) pairs, each with exactly k generated negatives.

    Parameters
    ----------
    users, items
        The observed pairs: integer arrays (lists, numpy arrays, pandas
        Series) of equal length P; ids are 0-based, users in
        ``[0, num_users)``, items in ``[0, num_items)``.
    num_items : int
        Number of items (ids ``0..num_items-1``).
    negatives : int
        k >= 1 generated pairs per observed pair.
    batch_size : int
        Observed pairs per batch; a batch holds ``batch_size * (1 + k)`` rows
        (the epoch's last batch may hold fewer observed pairs).
    num_users : int, optional
        Number of users; defaults to ``max(users) + 1``. ``pair_with="random"``
        draws users from ``[0, num_users)``.
    seed, rng
        As in the rest of the engine: ``rng="numpy"`` (seed an int >= 0 or a
        SeedSequence), ``"R"`` (R's ``set.seed``; same batches as
        ``pystratum::negative_pair_batches`` in R) or ``"torch"`` (the
        permutation from ``torch.randperm``). None draws a fresh seed, kept
        as ``sampler.seed``.
    reject_observed : bool
        True: no generated pair is an observed pair (rejection, see
        :mod:`pystratum.negatives._draws`); ``log_q``/``weight`` describe the distribution
        after rejection.
    pair_with : {"user", "random"}
        Keep the positive's user, or draw the user too.
    item_weights : array of num_items non-negative floats, optional
        Draw items proportionally to these (e.g. popularity ** 0.75).
    duplicates : {"error", "drop"}
        An observed pair listed twice is an error, or every occurrence but
        the first is dropped (``positive`` keeps pointing into the given
        arrays).
    max_rounds : int
        Rejection rounds before giving up; a configuration where any of an
        epoch's negatives would need more (with probability above 1e-6) is
        refused at construction, naming the user.
    num_replicas, rank, drop_last
        Data-parallel sharding of whole batches (rank r serves batches
        ``r, r + num_replicas, ...``; ``drop_last=False`` pads short ranks
        with batches from the start of the epoch, True drops the remainder).

    Guarantees
    ----------
    * Each epoch serves every observed pair exactly once (one replica), in a
      new shuffle; every observed pair has exactly k negatives in its batch.
    * ``pair_with="user"``: a negative has its positive's user.
    * ``reject_observed=True``: no generated pair is observed.
    * A batch is a pure function of (seed, epoch, batch index).
    * Epochs. One replica: each ``iter()`` starts the next epoch. Several
      replicas: the epoch changes only through ``set_epoch(k)`` (or
      ``load_state_dict``), as with ``DistributedSampler``; another
      ``iter()`` in the same epoch serves that epoch again, so an extra
      ``iter()`` on one rank (a peek) never moves it out of step with the
      others. An epoch served to its end that starts again without
      ``set_epoch`` warns once (``set_epoch`` was probably forgotten).
    * ``state_dict()``/``load_state_dict()`` resume mid-epoch exactly; a copy
      or pickle of the sampler continues the epoch in progress from the
      same batch.
    """

    def __init__(self, users, items, *, num_items, negatives, batch_size, num_users=None,
                 seed=None, rng="numpy", reject_observed=True, pair_with="user",
                 item_weights=None, duplicates="error", max_rounds=100, num_replicas=1,
                 rank=0, drop_last=False):
        self.num_items = check_int(num_items, "num_items", minimum=1)
        self.negatives = check_int(
            negatives, "negatives", minimum=1, maximum=SIZE_MAX,
            fix="Each observed pair needs at least one generated negative; without negatives "
                "use an ordinary shuffled batch sampler.")
        self.batch_size = check_int(batch_size, "batch_size", minimum=1, maximum=SIZE_MAX)
        if num_users is not None:
            num_users = check_int(num_users, "num_users", minimum=1)
        self.rng = check_choice(rng, "rng", PERMUTATION_RNG_CHOICES)
        self.reject_observed = check_bool(reject_observed, "reject_observed")
        self.pair_with = check_choice(pair_with, "pair_with", PAIR_WITH_CHOICES)
        self.duplicates = check_choice(duplicates, "duplicates", DUPLICATES_CHOICES)
        self.max_rounds = check_int(max_rounds, "max_rounds", minimum=1)
        self.num_replicas = check_int(num_replicas, "num_replicas", minimum=1)
        self.rank = check_int(rank, "rank", minimum=0)
        if self.rank >= self.num_replicas:
            raise ValueError(
                f"rank must be in [0, num_replicas), got rank={self.rank} with "
                f"num_replicas={self.num_replicas}. Pass rank=<0..{self.num_replicas - 1}>.")
        self.drop_last = check_bool(drop_last, "drop_last")
        self._stream = self._make_stream(seed)

        users = _id_array(users, "users")
        items = _id_array(items, "items")
        if users.shape[0] != items.shape[0]:
            raise ValueError(
                f"users and items must have the same length (one entry per observed pair), got "
                f"len(users)={users.shape[0]} and len(items)={items.shape[0]}.")
        if users.shape[0] == 0:
            raise ValueError("users and items are empty: pass at least one observed pair.")
        _check_upper(items, "items", self.num_items, "num_items")
        if num_users is None:
            num_users = int(users.max()) + 1
        else:
            _check_upper(users, "users", num_users, "num_users")
        self.num_users = num_users
        if self.rng == "R":
            for name, value in (("num_items", self.num_items), ("num_users", num_users)):
                if value > _R_SAMPLE_MAX:
                    raise ValueError(
                        f"{name} must be at most 4.5e15 with rng='R' (R's sample.int draws "
                        f"from at most 4.5e15 values), got {name}={value}. Remap ids to a "
                        f"smaller range.")
        if self.num_users * self.num_items > _MAX_KEY:
            raise ValueError(
                f"num_users * num_items must be at most 2^62 (pairs are keyed as "
                f"user * num_items + item in int64), got num_users={self.num_users}, "
                f"num_items={self.num_items}. Remap ids to a smaller range.")
        self._weights = _item_weights(item_weights, self.num_items)
        self._log_weights = None if self._weights is None else _log_weights(self._weights)

        keys = users * self.num_items
        keys += items
        self._pairs = PairSet(keys, num_items=self.num_items)
        self._kept = None  # positions kept after dropping duplicates (None: all)
        n_duplicates = keys.shape[0] - len(self._pairs)
        if n_duplicates:
            _, first = np.unique(keys, return_index=True)
            if self.duplicates == "error":
                is_first = np.zeros(keys.shape[0], dtype=bool)
                is_first[first] = True
                position = int(np.flatnonzero(~is_first)[0])
                earlier = int(np.flatnonzero(keys[:position] == keys[position])[0])
                raise ValueError(
                    f"users/items hold {n_duplicates} duplicate observed pair(s): e.g. position "
                    f"{position} repeats (user {int(users[position])}, item "
                    f"{int(items[position])}) of position {earlier}. Pass duplicates='drop' to "
                    f"keep the first occurrence of each pair, or deduplicate the data.")
            self._kept = np.sort(first)
            users = users[self._kept]
            items = items[self._kept]
        del keys
        self.users = users
        self.items = items
        self.num_pairs = int(users.shape[0])
        self.num_batches = -(-self.num_pairs // self.batch_size)
        # A batch is built at once: bounded by the input before any draw.
        pairs = min(self.batch_size, self.num_pairs)
        check_served_size(pairs * (1 + self.negatives), 0, self.num_pairs, "negatives",
                          self.negatives, f"batches of {pairs:,} observed pair(s) with "
                          f"{self.negatives:,} negative(s) each", "Lower negatives or batch_size.")
        if self.drop_last and self.num_batches < self.num_replicas:
            raise ValueError(
                f"drop_last=True leaves no batch for any rank: {self.num_batches} batch(es) per "
                f"epoch but num_replicas={self.num_replicas}. Lower batch_size, use fewer "
                f"replicas, or set drop_last=False.")
        self._set_up_probabilities()

        self._progress = EpochProgress(type(self).__name__, self.num_replicas, self.rank)
        # (epoch, stream state before it, its permutation): computed once per epoch.
        self._epoch_cache = (None, None, None)
        # (epoch, index -> that batch's Generator), see _batch_generator.
        self._spawn_cache = (None, None)
        self._digest = None

    # ------------------------------------------------------------------ public

    @property
    def seed(self):
        """The seed in use: pass it as ``seed=`` to get the same batches again."""
        return self._stream.seed

    def __iter__(self) -> Iterator[NegativeBatch]:
        """One epoch's batches for this rank (which epoch: see the class docstring)."""
        return self._epoch_pass()

    def batch(self, epoch: int, index: int) -> NegativeBatch:
        """Batch ``index`` (0-based, of all ranks' batches) of epoch ``epoch``; progress unchanged."""
        epoch = check_epoch(epoch)
        index = check_int(index, "index", minimum=0)
        if index >= self.num_batches:
            raise ValueError(
                f"index must be below num_batches={self.num_batches}, got index={index}.")
        return self._make_batch(epoch, index, self._epoch_permutation(epoch))

    def epoch_batches(self, epoch: int) -> list:
        """All batches of ``epoch`` (every rank's), in order; progress unchanged."""
        epoch = check_epoch(epoch)
        # The whole epoch at once (as R's negative_pair_batches() builds it): bounded too.
        check_served_size(self.num_pairs * (1 + self.negatives), 0, self.num_pairs, "negatives",
                          self.negatives, f"an epoch of {self.num_pairs:,} observed pair(s) with "
                          f"{self.negatives:,} negative(s) each",
                          "Lower negatives, or iterate the sampler (it builds one batch at a "
                          "time).")
        permutation = self._epoch_permutation(epoch)
        return [self._make_batch(epoch, b, permutation) for b in range(self.num_batches)]

    def log_q(self, users, items) -> np.ndarray:
        """log q of generated pairs (users, items) under this sampler's negative distribution.

        -inf where the pair cannot be drawn (observed pairs with rejection on,
        zero-weight items).
        """
        users = _query_ids(users, "users", self.num_users, "num_users")
        items = _query_ids(items, "items", self.num_items, "num_items")
        try:
            users, items = np.broadcast_arrays(users, items)
        except ValueError:
            raise ValueError(
                f"users and items must have the same shape (one user per item), got "
                f"{users.shape} and {items.shape}.") from None
        shape = users.shape
        users, items = users.reshape(-1), items.reshape(-1)
        inside = users < self._log_free.shape[0] if self.pair_with == "user" else None
        if inside is not None and not inside.all():
            # Users without observed pairs: every item is free, as in the tables' own rows.
            known = np.where(inside, users, 0)
            out = self._log_q(known, items)
            log_w = 0.0 if self._weights is None else self._log_weights[items]
            out = np.where(inside, out, log_w - math.log(self._total_weight))
        else:
            out = self._log_q(users, items)
        if self.reject_observed:
            out = np.where(self._pairs.contains(users * self.num_items + items), -np.inf, out)
        return np.asarray(out, dtype=np.float64).reshape(shape)

    def state_dict(self) -> dict:
        """Progress to resume from (plain Python values; ``torch.load(weights_only=True)`` safe)."""
        epoch, yielded, stream_state = self._progress.position(self._stream.state_dict)
        return {
            "format": _STATE_FORMAT,
            "epoch": int(epoch),
            "batches_yielded": int(yielded),
            "seed": seed_to_record(self.seed),
            "rng": self.rng,
            "num_replicas": self.num_replicas,
            "drop_last": self.drop_last,
            "negatives": self.negatives,
            "batch_size": self.batch_size,
            "num_users": self.num_users,
            "num_items": self.num_items,
            "reject_observed": self.reject_observed,
            "pair_with": self.pair_with,
            "num_pairs": self.num_pairs,
            "pairs_digest": self._pairs_digest(),
            "stream": stream_state,
        }

    def load_state_dict(self, state_dict: dict) -> None:
        """Resume from :meth:`state_dict`: the next ``iter()`` continues that epoch.

        The saved seed replaces this sampler's; everything else (pairs, item
        weights, k, batch_size, rng, replicas, ...) must match, else ValueError.
        """
        check_format(state_dict, "NegativePairSampler", (_STATE_FORMAT,),
                     {_STATE_FORMAT: _STATE_KEYS})
        for key in ("rng", "num_replicas", "drop_last", "negatives", "batch_size", "num_users",
                    "num_items", "reject_observed", "pair_with", "num_pairs"):
            mine = getattr(self, key)
            if differs(state_dict[key], mine):
                raise ValueError(
                    f"Cannot resume: the state was saved with {key}={_short(state_dict[key])} "
                    f"but this sampler has {key}={mine!r}. Build the sampler with the same "
                    f"pairs and arguments as the run that saved it.")
        if differs(state_dict["pairs_digest"], self._pairs_digest()):
            raise ValueError(
                "Cannot resume: the state was saved for other observed pairs or item weights "
                "(pairs_digest differs). Build the sampler from the same users, items and "
                "item_weights as the run that saved it.")
        # The envelope every sampler shares: epoch, batches yielded, seed (never None:
        # no reseed from fresh entropy), the stream's position for this rng.
        resume = read_resume(state_dict, fix=_STATE_FIX, length=len(self), rng=self.rng)
        epoch, yielded = resume.epoch, resume.batches_yielded
        try:
            stream = (self._stream if same_seed(resume.seed, self.seed)
                      else self._make_stream(resume.seed))
        except (TypeError, ValueError) as error:
            raise ValueError(
                f"state_dict['seed']={_short(state_dict['seed'])} cannot seed rng={self.rng!r}: "
                f"{error}") from None
        try:
            stream.load_state_dict(resume.stream)
        except (KeyError, TypeError, ValueError, RuntimeError, OverflowError) as error:
            raise ValueError(
                f"state_dict['stream'] is not a valid rng={self.rng!r} stream state ({error}); "
                f"pass what state_dict() returned, unmodified.") from None
        self._stream = stream
        self._epoch_cache = (None, None, None)
        self._spawn_cache = (None, None)
        self._progress.restore(epoch, yielded)

    def __getstate__(self) -> dict:
        state = super().__getstate__()
        state["_epoch_cache"] = (None, None, None)  # recomputed on demand
        state["_spawn_cache"] = (None, None)
        return state

    def __repr__(self) -> str:
        return (f"NegativePairSampler(num_pairs={self.num_pairs}, num_users={self.num_users}, "
                f"num_items={self.num_items}, negatives={self.negatives}, batch_size="
                f"{self.batch_size}, num_batches={self.num_batches}, rng={self.rng!r}, "
                f"seed={self.seed!r}, reject_observed={self.reject_observed}, pair_with="
                f"{self.pair_with!r}, weighted={self._weights is not None}, epoch={self.epoch}, "
                f"num_replicas={self.num_replicas}, rank={self.rank})")

    # ---------------------------------------------------------------- private

    def _make_stream(self, seed):
        if isinstance(seed, np.random.Generator):
            raise TypeError(
                "seed must be an int (or None, or a numpy SeedSequence with rng='numpy'), got a "
                "numpy Generator: any batch must be recomputable from (seed, epoch, batch), "
                "which a Generator's advancing state cannot give. Pass seed=<int>.")
        if self.rng == "torch" and seed is not None and not isinstance(seed, (bool, np.bool_)) \
                and isinstance(seed, (numbers.Integral, np.integer)) and seed < 0:
            raise ValueError(
                f"seed must be a non-negative integer for rng='torch' (negatives are drawn from "
                f"numpy's SeedSequence(seed)), got seed={seed}.")
        return make_stream(self.rng, seed)

    def _pairs_digest(self) -> str:
        if self._digest is None:
            digest = hashlib.blake2b(digest_size=16)
            digest.update(np.int64(self.num_items).tobytes())
            digest.update(self.users.tobytes())
            digest.update(self.items.tobytes())
            if self._weights is not None:
                digest.update(self._weights.tobytes())
            self._digest = digest.hexdigest()
        return self._digest

    def _epoch_permutation(self, epoch: int) -> np.ndarray:
        return self._epoch_start(epoch)[1]

    def _epoch_start(self, epoch: int):
        """(stream state before ``epoch``, its permutation), computed once per epoch.

        Serving an epoch again (the set_epoch rule, a peek) must not rewind a
        sequential stream (R's, torch's): that would redraw every earlier epoch.
        """
        if self._epoch_cache[0] != epoch:
            self._epoch_cache = (None, None, None)  # free the old permutation first
            self._stream.advance_to(self.num_pairs, epoch)
            state = self._stream.state_dict()
            permutation = self._stream.permutation(self.num_pairs, epoch)
            self._epoch_cache = (epoch, state, permutation)
        return self._epoch_cache[1], self._epoch_cache[2]

    def _source(self) -> "_PairSource":
        return _PairSource(self)


class _PairSource:
    """The sampler's epochs as a batch source (:mod:`pystratum.serving`): batches are
    built one at a time, each a function of (seed, epoch, batch index)."""

    def __init__(self, sampler: NegativePairSampler):
        self._sampler = sampler
        self.num_batches = sampler.num_batches

    def open(self, epoch: int) -> "_PairEpoch":
        # The stream position before this epoch and its permutation (once per epoch):
        # state_dict() saves that position, so a resume costs one permutation.
        stream_state, permutation = self._sampler._epoch_start(epoch)
        return _PairEpoch(self._sampler, epoch, stream_state, permutation)


class _PairEpoch:
    """One opened epoch: batch ``index`` on demand (random access by index)."""

    chunk_batches = 1  # a batch is drawn only when the loader asks for it

    def __init__(self, sampler, epoch, stream_state, permutation):
        self._sampler = sampler
        self.epoch = epoch
        self.stream_state = stream_state
        self._permutation = permutation

    def batches(self, ids) -> list:
        return [self._sampler._make_batch(self.epoch, int(index), self._permutation)
                for index in ids]


# -------------------------------------------------------------------- helpers

def _short(value) -> str:
    text = repr(value)
    return text if len(text) <= 80 else f"{text[:77]}..."
