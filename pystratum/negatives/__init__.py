"""Generated negatives for (user, item) data: observed pairs plus k sampled unobserved pairs.

::

    from pystratum.negatives import NegativePairSampler
    sampler = NegativePairSampler(users, items, num_items=10_000, negatives=4,
                                  batch_size=256, seed=1)
    for batch in sampler:            # one epoch; the next iter() is the next epoch
                                     # (several replicas: call set_epoch(e) first)
        batch.user, batch.item, batch.label, batch.log_q, batch.weight

Only the observed pairs are stored. Each epoch serves every observed pair
exactly once (in the order of the epoch's permutation, from the engine's
streams: ``rng="numpy" | "R" | "torch"``), ``batch_size`` pairs per batch
(the last batch may be smaller), and gives every observed pair exactly
``negatives`` (k) generated pairs.

Row order of a batch with n observed pairs: rows ``0..n-1`` are the observed
pairs (in permuted order), then the ``n*k`` generated rows; the k negatives
of observed pair j are rows ``n + j*k .. n + j*k + k - 1``.

How negatives are drawn
-----------------------
``pair_with="user"`` keeps the observed pair's user and draws an item;
``pair_with="random"`` draws the user uniformly from ``[0, num_users)`` and
then the item. Items are uniform over ``[0, num_items)``, or drawn with
probability proportional to ``item_weights``. With ``reject_observed=True``
every generated pair that is an observed pair is redrawn (only the rejected
slots, in slot order, round after round), so the accepted draws are
independent draws from the proposal restricted to the unobserved pairs.

How rejection is checked, and what it costs
-------------------------------------------
Each draw is looked up among the observed pairs' keys
``user * num_items + item`` in :class:`pystratum.negatives._pairset.PairSet`, exactly,
so the draws, the accepted pairs and the streams (Python and R alike) are
those of any exact membership test. With ``pair_with="user"`` the k draws
of a positive share its user, so the first check reads one 64-bit word per
user (two bits per observed pair of that user) for all k items: about 92%
of draws (users with 10 items) are "certainly not observed" there. The
rest go through a filter of 16-bit words (two bits per observed pair,
about 99% of the remaining absent keys cleared) and then the few sorted
hashes of their bucket. A read at a random place of a table larger than
the cache costs about as much as three ``Generator.integers`` draws here,
and the user word needs one per positive instead of one per draw. The
structures take about 1x the memory of the observed pairs' own two int64
arrays. With numba installed (the ``fast`` extra) the checks run as
compiled loops over the same tables (``PYSTRATUM_NUMBA=0`` keeps numpy);
the answers, hence the batches, are identical either way.

Sampling from each user's complement instead (j uniform in
``[0, num_items - n_observed(u))``, mapped to the user's j-th unobserved
item by a search in ``user * num_items + (o_i - i)`` over the user's sorted
items o_i) gives the same distribution without redraws, but is slower in
numpy: ``Generator.integers`` with a bound per element costs several times
the scalar-bound draw, and a search per draw (even with the queries sorted
by user) costs more than a filter read (``benchmarks/results_focused.md``). It is not
used. For 10^7 pairs and k = 4 the epoch's negatives (draws and rejection)
cost about 2.6x a bare ``Generator.integers`` draw of the same count with
the compiled check and 4.2x-4.6x in numpy, with large batches (batches of
1,024 pairs: 4.6x-5.7x compiled, each batch paying its own stream and a
few numpy calls); see the results file for the figures and the whole
epoch.

Sampling probabilities (``log_q``) and importance weights (``weight``)
---------------------------------------------------------------------
``q`` is the probability of the generated pair under the distribution its
draw actually follows (after rejection), with ``w_i`` the item weights (all
1 for uniform items), ``W = sum(w)``, ``O(u)`` the items user u observed and
``U = num_users``:

=====================  ========================================  ==================================
pair_with, rejection   population the negatives stand for        q of a generated (u, i)
=====================  ========================================  ==================================
"user", on             the items u has not observed              ``w_i / (W - sum_{j in O(u)} w_j)``
"user", off            all items                                  ``w_i / W``
"random", on           all unobserved (user, item) pairs          ``w_i / (U*W - sum_{observed (v,j)} w_j)``
"random", off          all (user, item) pairs                     ``w_i / (U*W)``
=====================  ========================================  ==================================

For uniform items the first row is ``1 / (num_items - n_observed(u))``.
``weight = 1 / (k q)``. The k negatives of one observed pair are independent
draws from q, so for any loss ``l``

    E[ sum_{t=1..k} weight_t * l(x_t) ] = k * sum_x q(x) * l(x) / (k q(x)) = sum_x l(x),

the loss summed over the whole population of the table (the user's
unobserved items for ``"user"``, all unobserved pairs for ``"random"``):
the weighted sum over a pair's k negatives is an unbiased estimate of it,
and ``log_q`` is what the log-Q correction of sampled-softmax training
subtracts from the logits. Observed rows have ``log_q = 0`` and
``weight = 1``. A generated pair that can have ``q = 0`` is never drawn.

Determinism
-----------
A batch's observed pairs depend on (seed, epoch) only, its negatives on
(seed, epoch, batch) only: not on the order in which batches, workers or
ranks ask for them. Per-batch streams:

* ``rng="numpy"`` and ``rng="torch"``: ``numpy.random.default_rng`` of
  ``SeedSequence(seed)`` with spawn key ``(epoch, batch)`` (the permutation of
  ``"torch"`` comes from torch, the negatives from numpy).
* ``rng="R"``: R's ``set.seed(batch_seed(seed, epoch, batch))`` (see
  :func:`batch_seed`) followed by ``sample.int(num_users, m, replace=TRUE)``
  (``"random"`` only) and ``sample.int(num_items, m, replace=TRUE)`` for the
  m slots still to fill, round after round. Weighted items use R's
  ``runif(m)``: item = the number of entries of ``cumsum(item_weights)``
  that are ``<= u * sum``, R's ``findInterval``, so weighted draws are
  reproduced exactly too. ``pystratum::negative_pair_batches`` in R gives
  the same batches.

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
from dataclasses import dataclass
from typing import Iterator

import numpy as np

from ._pairset import PairSet
from ..serving import EpochProgress, EpochServed
from ..serving._record import same_seed, seed_to_record
from ..serving._state import check_format, differs, read_resume
from ..streams._spawned import spawned_generators
from ..streams._base import PERMUTATION_RNG_CHOICES, make_stream
from ..base._validation import (SIZE_MAX, _show, check_bool, check_choice, check_epoch, check_int,
                          check_served_size)

__all__ = ["NegativeBatch", "NegativePairSampler", "batch_seed"]

PAIR_WITH_CHOICES = ("user", "random")
DUPLICATES_CHOICES = ("error", "drop")

_STATE_FORMAT = "pystratum.negatives.NegativePairSampler/1"
# R's sample.int(n, ...) refuses n above this (its longest vector).
_R_SAMPLE_MAX = 4_500_000_000_000_000
_STATE_FIX = "pass what NegativePairSampler.state_dict() returned, unmodified"
_STATE_KEYS = ("format", "epoch", "batches_yielded", "seed", "rng", "num_replicas", "drop_last",
               "negatives", "batch_size", "num_users", "num_items", "reject_observed",
               "pair_with", "num_pairs", "pairs_digest", "stream")

# R's set.seed() takes a signed 32-bit int; the modulus is the Mersenne prime 2^31 - 1.
_SEED_MODULUS = 2**31 - 1
_SEED_SHIFT = 2**21
# Expected number of negatives per epoch that may fail every rejection round:
# above this the configuration is refused up front, naming the worst user.
_FAILURE_BUDGET = 1e-6
_MAX_KEY = 2**62


def batch_seed(seed: int, epoch: int, batch: int) -> int:
    """The ``set.seed`` value of batch ``batch`` of epoch ``epoch`` for ``rng="R"``.

    ``x = seed mod M; x = (x * 2^21 + epoch) mod M; x = (x * 2^21 + batch) mod M``
    with ``M = 2^31 - 1``. Every intermediate value is below 2^53, so R computes
    it exactly in doubles (``%%``) and the result is a valid ``set.seed`` value.
    For a fixed seed, ``(epoch, batch)`` with ``epoch < 1024`` and
    ``batch < 2^21`` map to distinct values.
    """
    x = int(seed) % _SEED_MODULUS
    x = (x * _SEED_SHIFT + int(epoch)) % _SEED_MODULUS
    return (x * _SEED_SHIFT + int(batch)) % _SEED_MODULUS


@dataclass(frozen=True, repr=False)
class NegativeBatch:
    """One batch: n observed pairs followed by their n*k generated pairs.

    positive: int64, 0-based position of the row's observed pair in the
              ``users``/``items`` given to the sampler; -1 on generated rows
              (R: NA).
    user, item: int64 ids. label: int8, 1 observed, 0 generated.
    log_q: float64, log of the generated row's sampling probability (0 on
           observed rows). weight: float64, ``1 / (k q)`` (1 on observed rows).
    """

    epoch: int
    index: int
    negatives: int
    positive: np.ndarray
    user: np.ndarray
    item: np.ndarray
    label: np.ndarray
    log_q: np.ndarray
    weight: np.ndarray

    @property
    def num_positives(self) -> int:
        return int(np.count_nonzero(self.label))

    def __len__(self) -> int:
        return int(self.user.shape[0])

    def as_dict(self) -> dict:
        return {name: getattr(self, name)
                for name in ("positive", "user", "item", "label", "log_q", "weight")}

    def __repr__(self) -> str:
        return (f"NegativeBatch(epoch={self.epoch}, index={self.index}, rows={len(self)}, "
                f"positives={self.num_positives}, negatives_per_positive={self.negatives})")


class NegativePairSampler(EpochServed):
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
        True: no generated pair is an observed pair (rejection, see the
        module docstring); ``log_q``/``weight`` describe the distribution
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

    def _set_up_probabilities(self):
        k = self.negatives
        weights = self._weights
        # Per-user tables span the users that have pairs (max(users) + 1), not
        # num_users: what the input can use, however large num_users is. Users
        # beyond have observed nothing (log_q reads them as such).
        n_observed = np.bincount(self.users)
        if weights is None:
            total = float(self.num_items)
            observed_weight = n_observed.astype(np.float64)
            pair_weight_total = float(self.num_pairs)
            self._cumulative = None
        else:
            # R's cumsum() accumulates in long double; so does this, so the
            # inverse-CDF boundaries (and hence weighted draws) agree bit for bit.
            self._cumulative = np.cumsum(weights.astype(np.longdouble)).astype(np.float64)
            total = float(self._cumulative[-1])
            observed_weight = np.bincount(self.users, weights=weights[self.items])
            pair_weight_total = float(observed_weight.sum())
        self._total_weight = total
        if self.pair_with == "user":
            free = total - observed_weight if self.reject_observed else np.full_like(
                observed_weight, total)
            if self.reject_observed:
                self._check_user_acceptance(n_observed, observed_weight, free / total)
            # Per user: log(free) and the weight exp(log free) / k of its negatives,
            # side by side (real, imag) so a batch reads both in one gather; the
            # same arithmetic per element as computing them per row.
            terms = np.empty(free.shape[0], dtype=np.complex128)
            with np.errstate(divide="ignore"):
                terms.real = np.log(free)
            terms.imag = np.exp(terms.real) / k
            self._user_terms = terms
            self._log_free = terms.real  # a view
        else:
            free = self.num_users * total - (pair_weight_total if self.reject_observed else 0.0)
            if self.reject_observed:
                acceptance = free / (self.num_users * total)
                if not acceptance > 0:
                    raise ValueError(
                        f"every (user, item) pair of positive weight is observed (num_users="
                        f"{self.num_users}, num_items={self.num_items}), so pair_with='random' "
                        f"has no unobserved pair to draw. Set reject_observed=False, or add "
                        f"users/items.")
                self._check_rounds(k * self.num_pairs * (1 - acceptance) ** self.max_rounds,
                                   "the observed pairs cover "
                                   f"{1 - acceptance:.4%} of the proposal's mass",
                                   acceptance, k * self.num_pairs)
            self._log_free = math.log(free)

    def _check_user_acceptance(self, n_observed, observed_weight, acceptance):
        users = np.flatnonzero(n_observed)
        acc = acceptance[users]
        dead = users[~(acc > 0)]
        if dead.size:
            user = int(dead[0])
            what = ("every item" if self._weights is None
                    else "every item of positive item_weights")
            raise ValueError(
                f"user {user} has observed {what} ({int(n_observed[user])} of num_items="
                f"{self.num_items}), so it has no unobserved item to draw as a negative "
                f"({dead.size} such user(s)). Drop its pairs from users/items, set "
                f"reject_observed=False, or use pair_with='random'.")
        failing = self.negatives * n_observed[users] * (1 - acc) ** self.max_rounds
        if failing.sum() > _FAILURE_BUDGET:
            worst = int(np.argmax(failing))
            user = int(users[worst])
            self._check_rounds(
                float(failing.sum()),
                f"user {user} has observed {int(n_observed[user])} of num_items="
                f"{self.num_items} items (acceptance {acc[worst]:.4%})",
                float(acc[worst]), self.negatives * int(n_observed[user]))

    def _check_rounds(self, expected_failures, who, acceptance, slots):
        if expected_failures <= _FAILURE_BUDGET:
            return
        needed = math.ceil(math.log(_FAILURE_BUDGET / max(slots, 1)) / math.log1p(-acceptance))
        raise ValueError(
            f"{who}: drawing its negatives by rejection would exceed max_rounds="
            f"{self.max_rounds} rounds for about {expected_failures:.3g} negatives per epoch. "
            f"Raise max_rounds to at least {needed}, set reject_observed=False, or drop the "
            f"users who observed (nearly) every item.")

    def _log_q(self, users, items):
        log_w = 0.0 if self._weights is None else self._log_weights[items]
        if self.pair_with == "user":
            return log_w - self._log_free[users]
        return np.broadcast_to(log_w - self._log_free, items.shape).astype(np.float64)

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

    def _batch_draws(self, epoch: int, index: int):
        """(draw_users(m), draw_items(m)) for this batch's own stream."""
        if self.rng == "R":
            from ..streams._r import RStream

            stream = RStream(batch_seed(self.seed, epoch, index))

            def draw_users(m):
                return stream.sample(self.num_users, m, replace=True) - 1

            if self._weights is None:
                def draw_items(m):
                    return stream.sample(self.num_items, m, replace=True) - 1
            else:
                def draw_items(m):
                    return self._weighted_items(stream.runif(m))
            return draw_users, draw_items
        generator = self._batch_generator(epoch, index)

        def draw_users(m):
            return generator.integers(0, self.num_users, m)

        if self._weights is None:
            # Below 2^32 numpy draws int64 and uint32 by the same 32-bit method (the same
            # stream); uint32 writes half the bytes, and the check widens them as it reads.
            dtype = np.uint32 if self.num_items <= 2**32 else np.int64

            def draw_items(m):
                return generator.integers(0, self.num_items, m, dtype=dtype)
        else:
            def draw_items(m):
                return self._weighted_items(generator.random(m))
        return draw_users, draw_items

    def _batch_generator(self, epoch: int, index: int) -> np.random.Generator:
        """``default_rng(SeedSequence(entropy, spawn_key=(*spawn_key, epoch, index)))`` of
        the seed's SeedSequence: built by ``streams._spawned`` (the same stream at a fifth of
        numpy's construction cost, which small batches pay once each)."""
        if self._spawn_cache[0] != epoch:
            parent = self._stream.seed_sequence if self.rng == "numpy" \
                else np.random.SeedSequence(self.seed)
            self._spawn_cache = (epoch, spawned_generators(parent, (epoch,)))
        return self._spawn_cache[1](index)

    def _weighted_items(self, uniforms):
        # Inverse CDF on the cumulative weights: item i when
        # cum[i-1] <= u * total < cum[i]; zero-weight items are never hit.
        return np.searchsorted(self._cumulative, uniforms * self._total_weight, side="right")

    def _make_batch(self, epoch: int, index: int, permutation: np.ndarray) -> NegativeBatch:
        k = self.negatives
        chosen = permutation[index * self.batch_size:(index + 1) * self.batch_size]
        n = chosen.shape[0]
        m = n * k
        # Rows are written in place (no concatenation): observed rows first,
        # then the n*k generated rows as views the draws and redraws fill.
        user = np.empty(n + m, dtype=np.int64)
        item = np.empty(n + m, dtype=np.int64)
        np.take(self.users, chosen, out=user[:n])
        np.take(self.items, chosen, out=item[:n])
        neg_users, neg_items = user[n:], item[n:]
        if self.pair_with == "user":
            _fill_columns(neg_users, user[:n], k)
        self._draw_negatives(epoch, index, neg_users, neg_items)
        log_q = np.empty(n + m)
        weight = np.empty(n + m)
        log_q[:n] = 0.0
        weight[:n] = 1.0
        # Same arithmetic as R (log w_i - log free, weight exp(-log_q) / k), so
        # the values agree bit for bit; per-user terms are computed once per
        # user (at construction) and copied to the k rows of each positive.
        if self.pair_with == "user":
            terms = np.take(self._user_terms, user[:n])
            _fill_columns(log_q[n:], -terms.real, k)
            if self._weights is None:
                _fill_columns(weight[n:], terms.imag, k)
            else:
                log_q[n:] += self._log_weights[neg_items]
                weight[n:] = np.exp(-log_q[n:]) / k
        elif self._weights is None:
            log_q[n:] = -self._log_free
            weight[n:] = math.exp(self._log_free) / k
        else:
            np.subtract(self._log_weights[neg_items], self._log_free, out=log_q[n:])
            weight[n:] = np.exp(-log_q[n:]) / k
        positive = np.empty(n + m, dtype=np.int64)
        positive[:n] = chosen if self._kept is None else self._kept[chosen]
        positive[n:] = -1
        label = np.empty(n + m, dtype=np.int8)
        label[:n] = 1
        label[n:] = 0
        return NegativeBatch(epoch=epoch, index=index, negatives=k, positive=positive,
                             user=user, item=item, label=label, log_q=log_q, weight=weight)

    def _draw_negatives(self, epoch, index, users, items):
        """Fill the generated rows in place from batch ``index``'s own stream.

        ``users`` holds the positives' users already for ``pair_with="user"``;
        for ``"random"`` it is drawn here, first, as in R.
        """
        draw_users, draw_items = self._batch_draws(epoch, index)
        if self.pair_with == "random":
            users[:] = draw_users(users.shape[0])
        if self.reject_observed and self.pair_with == "user":
            # The k negatives of a positive share its user: its word is read once for
            # all k, and the check copies the draws into the batch's column as it reads.
            pending = self._pairs.members_grouped(users[::self.negatives],
                                                  draw_items(items.shape[0]), out=items)
            self._reject(pending, users, items, draw_users, draw_items, epoch, index)
            return
        items[:] = draw_items(items.shape[0])
        if self.reject_observed:
            pending = self._pairs.members(users * self.num_items + items)
            self._reject(pending, users, items, draw_users, draw_items, epoch, index)

    def _reject(self, pending, users, items, draw_users, draw_items, epoch, index):
        """Redraw the observed pairs at ``pending`` in place: pending slots in slot order,
        round after round."""
        num_items = self.num_items
        rounds = 1
        while pending.size:
            if rounds >= self.max_rounds:
                user = int(users[pending[0]])
                raise RuntimeError(
                    f"user {user}: {pending.size} negative(s) of batch {index} of epoch {epoch} "
                    f"were still observed pairs after max_rounds={self.max_rounds} rejection "
                    f"rounds (user {user} has observed nearly every item). Raise max_rounds, "
                    f"set reject_observed=False, or drop that user's pairs.")
            if self.pair_with == "random":
                users[pending] = draw_users(pending.size)
            items[pending] = draw_items(pending.size)
            again = self._pairs.members(users[pending] * num_items + items[pending])
            pending = pending[again]
            rounds += 1

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


def _id_array(values, name: str) -> np.ndarray:
    """A 1-D int64 array of non-negative ids, or a TypeError/ValueError naming the entry."""
    module = type(values).__module__
    if module.startswith("pandas"):
        values = values.to_numpy(dtype=object) if values.dtype == object or \
            str(values.dtype) in ("Int64", "Int32", "Float64") else values.to_numpy()
    elif module.startswith("torch"):
        values = values.detach().cpu().numpy()
    array = np.asarray(values)
    if array.ndim != 1:
        raise ValueError(
            f"{name} must be one-dimensional (one id per observed pair), got an array of shape "
            f"{array.shape}.")
    if array.dtype == bool:
        raise TypeError(f"{name} must hold integer ids, got booleans ({name}={_show(values)}).")
    if array.dtype == object:
        for position, value in enumerate(array.tolist()):
            if value is None or (isinstance(value, float) and math.isnan(value)) or \
                    type(value).__name__ in ("NAType", "NaTType"):
                raise ValueError(
                    f"{name} must not hold missing values, got {name}[{position}]={value!r}. "
                    f"Drop the pairs with a missing id.")
            if isinstance(value, (bool, np.bool_)) or not isinstance(
                    value, (numbers.Integral, np.integer, float, np.floating)):
                raise TypeError(
                    f"{name} must hold integer ids, got {name}[{position}]={value!r} of type "
                    f"{type(value).__name__}.")
        values_list = array.tolist()
        for position, value in enumerate(values_list):
            if isinstance(value, (numbers.Integral, np.integer)) and \
                    not -2**63 <= int(value) < 2**63:
                raise ValueError(
                    f"{name} must hold ids below 2^63 (int64), got {name}[{position}]="
                    f"{_show(value)}. Remap ids to 0..n-1 first (e.g. pandas.factorize).")
        array = np.asarray(values_list, dtype=np.float64 if any(
            isinstance(v, (float, np.floating)) for v in values_list) else np.int64)
    if array.dtype.kind == "f":
        bad = np.flatnonzero(np.isnan(array))
        if bad.size:
            raise ValueError(
                f"{name} must not hold NaN, got {name}[{int(bad[0])}]=nan ({bad.size} NaN "
                f"value(s)). Drop the pairs with a missing id.")
        bad = np.flatnonzero(~np.isfinite(array) | (array != np.trunc(array)))
        if bad.size:
            raise TypeError(
                f"{name} must hold whole-number ids, got {name}[{int(bad[0])}]="
                f"{float(array[bad[0]])!r}. Map ids to integers 0..n-1 first.")
        if array.size and np.abs(array).max() >= 2.0**53:
            position = int(np.flatnonzero(np.abs(array) >= 2.0**53)[0])
            raise ValueError(
                f"{name} must hold float ids below 2^53 (exact as floats), got {name}"
                f"[{position}]={float(array[position])!r}; pass integers.")
        array = array.astype(np.int64)
    elif array.dtype.kind == "u":
        if array.size and array.max() > np.iinfo(np.int64).max:
            position = int(np.flatnonzero(array > np.iinfo(np.int64).max)[0])
            raise ValueError(
                f"{name} must hold ids below 2^63 (int64), got {name}[{position}]="
                f"{int(array[position])}. Remap ids to 0..n-1 first (e.g. pandas.factorize).")
        array = array.astype(np.int64)
    elif array.dtype.kind != "i":
        raise TypeError(
            f"{name} must hold integer ids, got dtype {array.dtype} ({name}={_show(values)}). "
            f"Map ids to integers 0..n-1 first (e.g. pandas.factorize).")
    else:
        array = array.astype(np.int64, copy=False)
    if array.size:
        low = int(array.min())
        if low < 0:
            position = int(np.flatnonzero(array < 0)[0])
            raise ValueError(
                f"{name} must hold ids >= 0 (0-based), got {name}[{position}]="
                f"{int(array[position])}. Map ids to 0..n-1 first (e.g. pandas.factorize).")
    return np.ascontiguousarray(array)


def _query_ids(values, name: str, upper: int, upper_name: str) -> np.ndarray:
    """Ids asked about (``log_q``): as :func:`_id_array`, any shape, each in ``[0, upper)``."""
    shape = np.shape(values)
    array = _id_array(np.reshape(np.asarray(values, dtype=object), -1)
                      if len(shape) != 1 else values, name)
    if array.size:
        _check_upper(array, name, upper, upper_name)
    return array.reshape(shape)


def _fill_columns(out, values, k):
    """out[j*k + t] = values[j] for every t < k (column by column: faster than a broadcast
    whose inner loop is only k long)."""
    rows = out.reshape(values.shape[0], k)
    for t in range(k):
        rows[:, t] = values


def _check_upper(array, name, upper, upper_name):
    high = int(array.max())
    if high >= upper:
        position = int(np.flatnonzero(array >= upper)[0])
        raise ValueError(
            f"{name} must hold ids in [0, {upper_name}={upper}), got {name}[{position}]="
            f"{int(array[position])}. Ids are 0-based: pass {upper_name}={high + 1} (or more), or "
            f"remap the ids.")


def _item_weights(item_weights, num_items):
    if item_weights is None:
        return None
    module = type(item_weights).__module__
    if module.startswith("torch"):
        item_weights = item_weights.detach().cpu().numpy()
    elif module.startswith("pandas"):
        item_weights = item_weights.to_numpy()
    array = np.asarray(item_weights)
    if array.dtype == bool or array.dtype.kind not in "iuf":
        raise TypeError(
            f"item_weights must be numbers (one non-negative weight per item), got dtype "
            f"{array.dtype} (item_weights={_show(item_weights)}).")
    array = array.astype(np.float64)
    if array.ndim != 1 or array.shape[0] != num_items:
        raise ValueError(
            f"item_weights must hold one weight per item (length num_items={num_items}), got "
            f"shape {array.shape}. Pass a 1-D array indexed by item id.")
    bad = np.flatnonzero(~np.isfinite(array) | (array < 0))
    if bad.size:
        raise ValueError(
            f"item_weights must be finite and >= 0, got item_weights[{int(bad[0])}]="
            f"{float(array[bad[0]])!r}. Clip or fix the weights (e.g. popularity ** 0.75).")
    if not array.sum() > 0:
        raise ValueError(
            "item_weights are all zero: no item could be drawn. Give at least one item a "
            "positive weight, or pass item_weights=None for uniform items.")
    return array


def _log_weights(weights):
    with np.errstate(divide="ignore"):
        return np.log(weights)

