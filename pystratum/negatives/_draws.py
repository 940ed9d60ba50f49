"""How a batch's negatives are drawn, and how observed pairs are rejected.

``pair_with="user"`` keeps the observed pair's user and draws an item;
``pair_with="random"`` draws the user uniformly from ``[0, num_users)`` and
then the item. Items are uniform over ``[0, num_items)``, or drawn with
probability proportional to ``item_weights``. With ``reject_observed=True``
every generated pair that is an observed pair is redrawn (only the rejected
slots, in slot order, round after round), so the accepted draws are
independent draws from the proposal restricted to the unobserved pairs.

How rejection is checked
------------------------
Each draw is looked up among the observed pairs' keys
``user * num_items + item`` in :class:`pystratum.negatives._pairset.PairSet`, exactly,
so the draws, the accepted pairs and the streams (Python and R alike) are
those of any exact membership test. With ``pair_with="user"`` the k draws
of a positive share its user, so the first check reads one 64-bit word per
user (two bits per observed pair of that user) for all k items, and most
draws are settled there as "certainly not observed". The rest go through a
filter of 16-bit words (two bits per observed pair) and then the few sorted
hashes of their bucket. The check is built this way because an uncached
read at a random place of a table larger than the cache, not the draw, is
what rejection costs, and the user word needs one such read per positive
instead of one per draw. The structures are sized by the number of
observed pairs, never by ``num_users * num_items``. With numba installed
(the ``fast`` extra) the checks run as compiled loops over the same tables
(``PYSTRATUM_NUMBA=0`` keeps numpy); the answers, hence the batches, are
identical either way.

Sampling from each user's complement instead (j uniform in
``[0, num_items - n_observed(u))``, mapped to the user's j-th unobserved
item by a search in ``user * num_items + (o_i - i)`` over the user's sorted
items o_i) gives the same distribution without redraws, but is slower in
numpy: ``Generator.integers`` with a bound per element costs much more than
the scalar-bound draw, and a search per draw (even with the queries sorted
by user) costs more than a filter read. It is not used. What the draws and
the check cost against a bare ``Generator.integers`` draw, compiled and in
numpy, with large and small batches: ``benchmarks/results_focused.md``
("Generated negatives").

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
"""

from __future__ import annotations

import numpy as np

from ..streams._spawned import spawned_generators

# R's set.seed() takes a signed 32-bit int; the modulus is the Mersenne prime 2^31 - 1.
_SEED_MODULUS = 2**31 - 1
_SEED_SHIFT = 2**21


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


class _Draws:
    """Each batch's own stream, its draws and the rejection rounds (a base of
    :class:`NegativePairSampler`).

    Reads the sampler's ``rng``, ``seed``, ``_stream``, ``num_users``,
    ``num_items``, ``negatives``, ``pair_with``, ``reject_observed``,
    ``max_rounds``, ``_weights``, ``_pairs`` and ``_weighted_items``; keeps
    the epoch's spawned generators in ``_spawn_cache``.
    """

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
