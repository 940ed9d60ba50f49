"""The random-access stream (``rng="index"``): a keyed bijection on ``[0, n)``.

Any position of a shuffle of ``[0, n)`` is computed on its own, in O(1)
time and memory, so a plan never has to hold an N-row permutation: the
``r``-th row of stratum ``s`` in epoch ``k`` is the stratum's member number
``perm_{seed, k, s}(r)``.

Construction (the one TensorFlow's ``index_shuffle``, Google's Grain and
the ``smallperm`` crate follow; the cipher itself is ours):

* A Feistel network (Luby & Rackoff, "How to construct pseudorandom
  permutations from pseudorandom functions", SIAM J. Comput. 17(2), 1988)
  over ``w = bit_length(n - 1)`` bits: ``x = L * 2**q + R`` with
  ``L < 2**p``, ``R < 2**q``, ``p = w // 2``, ``q = w - p``. A round maps
  ``(L, R)`` to ``(R, L xor F_i(R))`` where ``F_i`` has ``p`` output bits; the
  halves swap widths, so after the even number of rounds (``ROUNDS = 6``)
  they are back to ``(p, q)``. Any round function gives a permutation of
  ``[0, 2**w)``.
* Cycle-walking (Black & Rogaway, "Ciphers with arbitrary finite domains",
  CT-RSA 2002): encrypt again while the value is ``>= n``. Since
  ``2**w < 2n`` a walk takes fewer than two steps on average, and the result
  is a permutation of ``[0, n)``.
* Round function: ``F_i(R) = mix(R xor k_i) >> (26 - p)``, the top ``p`` bits of
  a 26-bit multiply-xorshift hash ``mix(v) = ((v * C1 mod 2**26) xor
  (.. >> 13)) * C2 mod 2**26`` of the input and the round key ``k_i < 2**26``.
  Taking the top bits keeps the round function non-linear in the key even
  when a half has one or two bits (tiny strata).
* Small domains (``n <= 64``): a Feistel network over a few bits mixes
  too slowly (its orders of 5 or 6 values fail a chi-square test against
  all ``n!`` orders, even with 16 rounds), so there ``perm`` is the order of
  ``0..n-1`` under the keyed network over 52 bits (``p = q = 26``, a
  permutation of ``[0, 2**52)``: no ties). Still O(1) per position (at most
  64 values are ranked).
* Keys: ``P`` is the same network over 52 bits with fixed round keys (hex
  digits of pi). The state ``P(P(P(seed) xor epoch) xor stream)`` absorbs
  the seed, the epoch and the stream number (the stratum's turn), and round
  key ``i`` is the top 26 bits of ``P(state xor i)``.

Every intermediate is a whole number below ``2**52`` (halves have at most 26
bits, products are 26 x 26 bits), so the R package computes the same stream
exactly with doubles; ``n``, the seed, the epoch and the stream number must
be below ``2**52``. This is a statistical shuffle, not cryptography: see
``tests/streams/test_index_stream.py`` for the uniformity, independence and
all-orders chi-square tests it passes.

With numba installed (the ``fast`` extra) calls on
``pystratum.kernels.MIN_ROWS`` values or more run compiled (``pystratum.kernels._index``: the rounds fused
per value), with the same values bit for bit; ``PYSTRATUM_NUMBA=0`` keeps
numpy.
"""

from __future__ import annotations

import numbers

import numpy as np

from .. import kernels as kernel_gate
from ._base import StatelessStream
from ..base._validation import check_int

__all__ = ["MAX_INDEX", "ROUNDS", "SMALL_DOMAIN", "IndexStream", "index_permutation",
           "permute_ranks", "permute_run_ranks", "round_keys", "small_domain_tables"]

ROUNDS = 6
# Largest n, seed, epoch and stream number: R holds every value exactly as a double.
MAX_INDEX = 2**52

_HALF = 26
_M26 = np.uint64(2**_HALF - 1)
_SHIFT13 = np.uint64(13)
_C1 = np.uint64(41475559)  # odd; about 2**26 / golden ratio
_C2 = np.uint64(49390517)  # odd
# Round keys of the key-schedule network P: 26-bit words of pi's hex digits.
_FIXED_KEYS = (4156040, 27461843, 52005422, 57701188, 604194, 27210192)
# Domains up to this size are shuffled by ranking keyed values (below);
# a Feistel network over 6 bits or fewer mixes too slowly (its orders of
# 5 or 6 values fail a chi-square test against all n! orders).
SMALL_DOMAIN = 64
# Values handled per step: keeps the temporaries of the rounds in cache.
_CHUNK = 1 << 16

def _widths(n):
    """Feistel half widths ``(p, q)`` of the domain ``[0, 2**w)`` covering ``[0, n)``."""
    w = max(2, int(n - 1).bit_length())
    return w // 2, w - w // 2


def _encrypt(x, p, q, keys):
    """One pass of the network: ``x < 2**(p+q)`` (uint64 array) -> same domain.

    ``p``, ``q`` are ints or uint64 arrays shaped like ``x`` (one domain per
    value); ``keys`` is a sequence of ``ROUNDS`` round keys, each a uint64 or
    an array shaped like ``x``.
    """
    p = np.uint64(p) if np.isscalar(p) else p
    q = np.uint64(q) if np.isscalar(q) else q
    left = x >> q
    right = x & ((np.uint64(1) << q) - np.uint64(1))
    f = np.empty_like(x)
    shifted = np.empty_like(x)
    top_shift = np.uint64(_HALF) - p
    other_shift = np.uint64(_HALF) - q
    for i in range(ROUNDS):
        np.bitwise_xor(right, keys[i], out=f)
        f *= _C1
        f &= _M26
        np.right_shift(f, _SHIFT13, out=shifted)
        f ^= shifted
        f *= _C2
        f &= _M26
        f >>= top_shift
        f ^= left
        # (L, R) <- (R, L xor F(R)); the halves swap widths.
        left, right, f = right, f, left
        top_shift, other_shift = other_shift, top_shift
    # An even number of rounds: the halves have their first widths again.
    left <<= q
    left |= right
    return left


def _as_key_rows(keys):
    keys = np.asarray(keys, dtype=np.uint64)
    return [np.uint64(k) for k in keys] if keys.ndim == 1 else [row for row in keys]


def permute_ranks(ranks, n, keys) -> np.ndarray:
    """``perm(ranks)`` for the bijection on ``[0, n)`` with round keys ``keys``.

    ranks: integer array, every value in ``[0, n)``.
    n:     int (one domain), or an array shaped like ``ranks`` (a domain per value).
    keys:  ``(ROUNDS,)`` round keys, or ``(ROUNDS, len(ranks))`` (keys per value).
    Returns int64 values in ``[0, n)``; equal ranks (and keys, n) give equal values,
    distinct ranks of one domain give distinct values.
    """
    ranks = np.asarray(ranks)
    keys = np.asarray(keys, dtype=np.uint64)
    if np.ndim(n) == 0:
        n = int(n)
        if n <= SMALL_DOMAIN:
            return small_domain_permutation(n, keys)[ranks]
        return _walk(ranks, n, keys)
    n = np.asarray(n, dtype=np.int64)
    out = np.empty(ranks.shape[0], dtype=np.int64)
    small = n <= SMALL_DOMAIN
    if small.any():
        where = np.flatnonzero(small)
        out[where] = _small_domain_values(ranks[where], n[where],
                                          keys if keys.ndim == 1 else keys[:, where])
        where = np.flatnonzero(~small)
        out[where] = _walk(ranks[where], n[where], keys if keys.ndim == 1 else keys[:, where])
    else:
        out[:] = _walk(ranks, n, keys)
    return out


def small_domain_permutation(n: int, keys) -> np.ndarray:
    """The whole permutation of a domain of at most ``SMALL_DOMAIN`` values.

    ``perm = argsort(P_k(0), ..., P_k(n - 1))``: the order of ``0..n-1``
    under the keyed 52-bit network, a permutation of ``[0, 2**52)``, so the
    values are distinct and no tie is ever broken.
    """
    values = _encrypt(np.arange(n, dtype=np.uint64), _HALF, _HALF, _as_key_rows(keys))
    return np.argsort(values, kind="stable").astype(np.int64)


def small_domain_tables(sizes, keys, work=None):
    """Whole permutations of small domains, each ranked once: ``(table, offsets)``.

    sizes: int (m,), each at most ``SMALL_DOMAIN``; keys: ``(ROUNDS, m)``.
    ``table[offsets[i] + r]`` is ``perm_i(r)``, ``small_domain_permutation``'s
    value, domains one after the other: O(sum of sizes) time and memory,
    where :func:`permute_ranks` with a domain per value ranks all
    candidates again for every value. ``work`` as in :func:`round_keys`
    (default: the table's size).
    """
    sizes = np.asarray(sizes, dtype=np.int64)
    keys = np.asarray(keys, dtype=np.uint64)
    offsets = np.cumsum(sizes) - sizes
    table = np.empty(int(sizes.sum()), dtype=np.int64)
    kernels = kernel_gate.compiled_for("index", table.shape[0] if work is None else work)
    if kernels is not None:
        kernels.small_tables(sizes, np.ascontiguousarray(keys), offsets, table)
        return table, offsets
    for n in np.unique(sizes).tolist():  # domains of one size together
        where = np.flatnonzero(sizes == n)
        candidates = np.tile(np.arange(n, dtype=np.uint64), where.shape[0])
        values = _encrypt(candidates, _HALF, _HALF, [np.repeat(row, n) for row in keys[:, where]])
        order = np.argsort(values.reshape(where.shape[0], n), axis=1, kind="stable")
        table[(offsets[where][:, None] + np.arange(n)).reshape(-1)] = order.reshape(-1)
    return table, offsets


def permute_run_ranks(ranks, run, sizes, keys) -> np.ndarray:
    """``permute_ranks`` of ``ranks[i]`` on ``[0, sizes[run[i]])`` with keys ``keys[:, run[i]]``.

    ranks, run: int arrays shaped alike (``run`` numbers the domains);
    sizes: int (m,); keys: ``(ROUNDS, m)``. The same values as
    ``permute_ranks(ranks, sizes[run], keys[:, run])``, but each small
    domain (``SMALL_DOMAIN`` or fewer values) is ranked once
    (:func:`small_domain_tables`), not once per value, and no key table per
    value is made (numpy's path: a chunk at a time).
    """
    ranks = np.asarray(ranks, dtype=np.int64)
    run = np.asarray(run, dtype=np.int64)
    sizes = np.asarray(sizes, dtype=np.int64)
    keys = np.asarray(keys, dtype=np.uint64)
    out = np.empty(ranks.shape[0], dtype=np.int64)
    small = sizes <= SMALL_DOMAIN
    on_small = small[run]
    # Compiled where the walks would be (permute_ranks): a lazy plan's blocks of batches
    # of small strata never wait for numba's import.
    walks = ranks.shape[0] - int(np.count_nonzero(on_small))
    kernels = kernel_gate.compiled_for("index", walks)
    # Only the small domains that some value uses are ranked.
    used = np.zeros(sizes.shape[0], dtype=bool)
    used[run[on_small]] = True
    ranked = np.flatnonzero(used)
    table, offsets = small_domain_tables(sizes[ranked], keys[:, ranked], work=walks)
    start_of = np.zeros(sizes.shape[0], dtype=np.int64)
    start_of[ranked] = offsets
    if kernels is not None:
        kernels.walk_runs(ranks, run, sizes, np.ascontiguousarray(keys), start_of, table, out)
        return out
    where = np.flatnonzero(on_small)
    out[where] = table[start_of[run[where]] + ranks[where]]
    large = np.flatnonzero(~on_small)
    for start in range(0, large.shape[0], _RUN_CHUNK):
        part = large[start:start + _RUN_CHUNK]
        out[part] = _walk(ranks[part], sizes[run[part]], keys[:, run[part]])
    return out


# Values whose per-value keys permute_run_ranks makes at once (6 x 8 bytes each).
_RUN_CHUNK = 1 << 17


def _small_domain_values(ranks, n, keys):
    """Small domains, one per value: rank each value's candidates ``0..n-1``."""
    count = ranks.shape[0]
    width = int(n.max())  # candidates beyond a value's own n rank last
    candidates = np.tile(np.arange(width, dtype=np.uint64), count)
    key_rows = [np.uint64(k) for k in keys] if keys.ndim == 1 else \
        [np.repeat(row, width) for row in keys]
    values = _encrypt(candidates, _HALF, _HALF, key_rows).reshape(count, width)
    values[np.arange(width)[None, :] >= n[:, None]] = np.uint64(MAX_INDEX)
    order = np.argsort(values, axis=1, kind="stable")
    return order[np.arange(count), ranks].astype(np.int64)


def _walk(ranks, n, keys):
    """Feistel network plus cycle-walking, in cache-sized chunks."""
    out = np.empty(ranks.shape[0], dtype=np.int64)
    scalar_n = np.ndim(n) == 0
    kernels = kernel_gate.compiled_for("index", ranks.shape[0])
    if kernels is not None:
        ranks = np.ascontiguousarray(ranks, dtype=np.int64)
        if scalar_n:
            kernels.walk(ranks, n, np.ascontiguousarray(keys, dtype=np.uint64), out)
        else:
            if keys.ndim == 1:
                keys = np.broadcast_to(keys[:, None], (ROUNDS, ranks.shape[0]))
            kernels.walk_each(ranks, np.ascontiguousarray(n, dtype=np.int64),
                              np.ascontiguousarray(keys, dtype=np.uint64), out)
        return out
    for start in range(0, ranks.shape[0], _CHUNK):
        stop = min(start + _CHUNK, ranks.shape[0])
        x = ranks[start:stop].astype(np.uint64)
        if scalar_n:
            p, q = _widths(n)
            bound = np.uint64(n)
            chunk_keys = _as_key_rows(keys)
        else:
            bound = n[start:stop].astype(np.uint64)
            w = _bit_lengths(bound - np.uint64(1))
            p = w >> np.uint64(1)
            q = w - p
            chunk_keys = _as_key_rows(keys if keys.ndim == 1 else keys[:, start:stop])
        y = _encrypt(x, p, q, chunk_keys)
        outside = np.flatnonzero(y >= bound)
        while outside.shape[0]:
            # Cycle-walking: values outside [0, n) are encrypted again.
            if scalar_n:
                y[outside] = _encrypt(y[outside], p, q, chunk_keys)
                outside = outside[y[outside] >= bound]
            else:
                sub_keys = [k if np.ndim(k) == 0 else k[outside] for k in chunk_keys]
                y[outside] = _encrypt(y[outside], p[outside], q[outside], sub_keys)
                outside = outside[y[outside] >= bound[outside]]
        out[start:stop] = y
    return out


def _bit_lengths(values):
    """bit_length of every uint64 below 2**52 (exact: float64 holds them)."""
    result = np.zeros(values.shape[0], dtype=np.uint64)
    nonzero = values > 0
    # frexp's exponent of a positive whole number v < 2**53 is v.bit_length().
    result[nonzero] = np.frexp(values[nonzero].astype(np.float64))[1].astype(np.uint64)
    return result


def _schedule_pass(state):
    """``P``: the network over 52 bits with the fixed keys (no cycle-walking)."""
    return _encrypt(state, _HALF, _HALF, [np.uint64(k) for k in _FIXED_KEYS])


def round_keys(seed: int, epoch, streams, work=None) -> np.ndarray:
    """Round keys ``(ROUNDS, len(streams))`` (uint64, each < 2**26) for stream numbers ``streams``.

    ``epoch`` is one epoch, or an array shaped like ``streams`` (a key set per pair).
    ``work``: the number of values the keys will serve (default: the
    number of keys); it decides whether the compiled path pays
    (``kernels.compiled_for``), which gives the same keys.
    """
    streams = np.asarray(streams, dtype=np.uint64).reshape(-1)
    kernels = kernel_gate.compiled_for("index", streams.shape[0] if work is None else work)
    if kernels is not None:
        keys = np.empty((ROUNDS, streams.shape[0]), dtype=np.uint64)
        epochs = np.broadcast_to(np.asarray(epoch, dtype=np.uint64), streams.shape)
        kernels.round_keys_each(np.uint64(seed), np.ascontiguousarray(epochs),
                                np.ascontiguousarray(streams), keys)
        return keys
    state = _schedule_pass(np.full(streams.shape[0], seed, dtype=np.uint64))
    state = _schedule_pass(state ^ np.asarray(epoch, dtype=np.uint64))
    state = _schedule_pass(state ^ streams)
    keys = np.empty((ROUNDS, streams.shape[0]), dtype=np.uint64)
    for i in range(ROUNDS):
        keys[i] = _schedule_pass(state ^ np.uint64(i)) >> np.uint64(_HALF)
    return keys


def index_permutation(n: int, seed: int, epoch: int = 0, stream: int = 0, ranks=None):
    """Positions ``perm(ranks)`` of the keyed shuffle of ``[0, n)`` (all of it if ranks is None).

    Guarantee: for fixed ``(n, seed, epoch, stream)`` the map is a bijection
    of ``[0, n)``; any subset of positions costs O(len(ranks)) time and
    O(1) memory beyond the output; R's ``pystratum:::index_permutation``
    gives the same values (plus one).
    """
    n = check_int(n, "n", minimum=1)
    if n > MAX_INDEX:
        raise ValueError(f"n must be at most 2**52 for rng='index', got n={n}.")
    keys = round_keys(seed, epoch, [stream])[:, 0]
    if ranks is None:
        ranks = np.arange(n, dtype=np.int64)
    return permute_ranks(ranks, n, keys)


def check_index_seed(seed) -> int:
    """A seed for ``rng="index"``: a whole number in ``[0, 2**52)``; None draws one."""
    from ._base import fresh_int32_seed

    if seed is None:
        return fresh_int32_seed()
    if isinstance(seed, (bool, np.bool_)) or not isinstance(seed, (numbers.Integral, np.integer)):
        raise TypeError(
            f"seed must be an integer (or None) for rng='index', got seed={seed!r} of type "
            f"{type(seed).__name__}."
        )
    seed = int(seed)
    if not 0 <= seed < MAX_INDEX:
        raise ValueError(
            f"seed must be an integer in [0, 2**52) for rng='index' (R holds it exactly), "
            f"got seed={seed}. Use a smaller non-negative seed."
        )
    return seed


class IndexStream(StatelessStream):
    """``rng="index"``: per-(epoch, stratum) keyed bijections, any position on demand.

    ``permutation(n, epoch)`` (stream number 0) exists so that the stream
    also serves as a plain shuffle; stratified plans use
    :func:`round_keys` with one stream number per stratum (its turn).
    """

    name = "index"

    def __init__(self, seed=None):
        self.seed = check_index_seed(seed)

    def keys(self, epoch: int, streams) -> np.ndarray:
        epoch = check_int(epoch, "epoch", minimum=0)
        if epoch >= MAX_INDEX:
            raise ValueError(f"epoch must be below 2**52 for rng='index', got epoch={epoch}.")
        return round_keys(self.seed, epoch, streams)

    def permutation(self, n: int, epoch: int) -> np.ndarray:
        return index_permutation(n, self.seed, epoch)

    def epoch_draws(self, n: int, draws, epoch: int, draws_of=None) -> list:
        """Not a permutation stream: its plans are computed lazily, batch by batch."""
        raise ValueError(
            "rng='index' draws no whole permutations per epoch: its plans are computed lazily "
            "(pystratum.engine._lazy), so this code path needs rng='numpy', 'R' or 'torch'."
        )
