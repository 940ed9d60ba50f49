"""Compiled random-access stream and lazy batches (optional: needs numba, the ``fast`` extra).

The same values as the numpy path (:mod:`pystratum.streams._index`, :mod:`pystratum.engine._lazy`),
computed without its intermediate arrays: the numpy path makes about ten
passes over a chunk per Feistel round and gathers rows in separate passes;
here each value goes through all rounds, the cycle-walk and the member
lookup while it is in a register.

Exactness: every operation is the numpy code's uint64 operation on the same
operands (halves below 2**26, products below 2**52, so nothing wraps); the
only addition is a mask ``& (2**26 - 1)`` on each round's input
``right xor key``, which is below 2**26 anyway (it tells the compiler the
product fits 26 x 26 bits, so the multiplies vectorise). Tests compare both
paths value by value.

Why blocks: the rounds of a run of consecutive ranks vectorise (SIMD), the
cycle-walk does not (a value re-enters the network a data-dependent number
of times), so a block of ranks is encrypted in one vectorised loop and
only the values that land outside ``[0, n)`` walk on, one by one.
"""

from __future__ import annotations

import numba
import numpy as np

__all__ = ["walk", "walk_each", "fill_segments", "write_members"]

_ROUNDS = 6  # pystratum.streams._index.ROUNDS (checked by the tests)
_HALF = np.uint64(26)
_M26 = np.uint64(2**26 - 1)
_SHIFT13 = np.uint64(13)
_C1 = np.uint64(41475559)
_C2 = np.uint64(49390517)
_ONE = np.uint64(1)
_ZERO = np.uint64(0)
# Small domains go through the per-plan table (pystratum.streams._index.SMALL_DOMAIN).
_SMALL_DOMAIN = 64
# Values encrypted per vectorised step (a few KiB: stays in L1).
_BLOCK = 512


@numba.njit(nogil=True, inline="always")
def _widths(n):
    """``(p, q)`` as ``pystratum.streams._index._widths`` (uint64 results)."""
    w = 0
    v = n - _ONE  # uint64 throughout: numba turns uint64 - int64 into a float
    while v > _ZERO:
        w += 1
        v >>= _ONE
    w = max(2, w)
    p = w // 2
    return np.uint64(p), np.uint64(w - p)


@numba.njit(nogil=True, inline="always")
def _round(left, right, key, shift):
    """One Feistel round: ``(right, left ^ F(right, key) >> shift)`` as the numpy code computes it."""
    f = ((((right ^ key) & _M26) * _C1) & _M26)
    f = (((f ^ (f >> _SHIFT13)) * _C2) & _M26) >> shift
    return right, f ^ left


@numba.njit(nogil=True, inline="always")
def _encrypt(x, p, q, k0, k1, k2, k3, k4, k5):
    """One pass of the network (``pystratum.streams._index._encrypt``) on one uint64."""
    left = x >> q
    right = x & ((_ONE << q) - _ONE)
    top = _HALF - p
    other = _HALF - q
    # Six rounds, inlined: the keys stay in registers.
    left, right = _round(left, right, k0, top)
    left, right = _round(left, right, k1, other)
    left, right = _round(left, right, k2, top)
    left, right = _round(left, right, k3, other)
    left, right = _round(left, right, k4, top)
    left, right = _round(left, right, k5, other)
    return (left << q) | right


@numba.njit(nogil=True, inline="always")
def _finish_walks(buffer, count, n, p, q, k0, k1, k2, k3, k4, k5, pending, values):
    """Cycle-walking of ``buffer[:count]`` (already encrypted once) until all are below ``n``.

    The values still outside are packed into ``values`` (their places in
    ``pending``), encrypted there in one vectorised loop, written back and
    packed again: branch-free, about 1 / (1 - n / 2**w) passes over a
    shrinking set.
    """
    m = 0
    for j in range(count):
        y = buffer[j]
        pending[m] = j
        values[m] = y
        m += np.int64(y >= n)
    while m > 0:
        for i in range(m):
            values[i] = _encrypt(values[i], p, q, k0, k1, k2, k3, k4, k5)
        still = 0
        for i in range(m):
            y = values[i]
            j = pending[i]
            buffer[j] = y
            pending[still] = j
            values[still] = y
            still += np.int64(y >= n)
        m = still


@numba.njit(nogil=True, inline="always")
def _walk_block(first, count, n, p, q, k0, k1, k2, k3, k4, k5, buffer, pending, values):
    """``buffer[:count]`` = the bijection's values of ranks ``first .. first + count - 1``."""
    for j in range(count):
        buffer[j] = _encrypt(np.uint64(first + j), p, q, k0, k1, k2, k3, k4, k5)
    _finish_walks(buffer, count, n, p, q, k0, k1, k2, k3, k4, k5, pending, values)


@numba.njit(nogil=True, boundscheck=False, cache=True)
def walk(ranks, n, keys, out):
    """``out[i] = perm(ranks[i])`` on ``[0, n)`` (``streams._index._walk``), ``1 <= n <= 2**52``.

    keys: uint64 ``(ROUNDS,)``. (The stream walks only domains above
    ``SMALL_DOMAIN``; smaller ones are ranked whole.)
    """
    n = np.uint64(n)
    p, q = _widths(n)
    k0, k1, k2, k3, k4, k5 = keys[0], keys[1], keys[2], keys[3], keys[4], keys[5]
    buffer = np.empty(_BLOCK, np.uint64)
    pending = np.empty(_BLOCK, np.int64)
    values = np.empty(_BLOCK, np.uint64)
    total = ranks.shape[0]
    for start in range(0, total, _BLOCK):
        count = min(_BLOCK, total - start)
        for j in range(count):
            buffer[j] = _encrypt(np.uint64(ranks[start + j]), p, q, k0, k1, k2, k3, k4, k5)
        _finish_walks(buffer, count, n, p, q, k0, k1, k2, k3, k4, k5, pending, values)
        for j in range(count):
            out[start + j] = np.int64(buffer[j])


@numba.njit(nogil=True, boundscheck=False, cache=True)
def walk_each(ranks, n, keys, out):
    """``walk`` with a domain and keys per value: ``n`` int64 ``(m,)``, keys ``(ROUNDS, m)``."""
    for i in range(ranks.shape[0]):
        size = np.uint64(n[i])
        p, q = _widths(size)
        y = _encrypt(np.uint64(ranks[i]), p, q, keys[0, i], keys[1, i], keys[2, i],
                     keys[3, i], keys[4, i], keys[5, i])
        while y >= size:
            y = _encrypt(y, p, q, keys[0, i], keys[1, i], keys[2, i], keys[3, i], keys[4, i],
                         keys[5, i])
        out[i] = np.int64(y)


@numba.njit(nogil=True, boundscheck=False, cache=True)
def fill_segments(order, lo, counts, seg_out, turn_order, sizes, keys, small_table,
                  small_offsets, rows, base, grouped):
    """The lazy plan's rows of whole (batch, stratum) segments, straight into ``order``.

    Segment ``(b, t)`` (``lo``, ``counts``, ``seg_out``: ``(B, S)``, strata
    in turn order) holds ranks ``lo[b, t] ..`` of stratum
    ``s = turn_order[t]`` and goes to ``order[seg_out[b, t]:]``. A rank's
    member number is the small-domain table's entry (``sizes[s] <=
    SMALL_DOMAIN``) or the stratum's bijection (keys ``keys[:, s]``); its
    row is ``base[s] + member`` for grouped rows (``base`` the starts), else
    ``rows[base[s] + member]`` (``base`` the member offsets).
    """
    buffer = np.empty(_BLOCK, np.uint64)
    pending = np.empty(_BLOCK, np.int64)
    values = np.empty(_BLOCK, np.uint64)
    n_batches, n_strata = lo.shape
    for t in range(n_strata):
        s = turn_order[t]
        size = sizes[s]
        n = np.uint64(size)
        p, q = _widths(n)
        k0, k1, k2, k3, k4, k5 = keys[0, s], keys[1, s], keys[2, s], keys[3, s], keys[4, s], \
            keys[5, s]
        first_row = base[s]
        small = size <= _SMALL_DOMAIN
        table_start = small_offsets[s]
        for b in range(n_batches):
            count = counts[b, t]
            first = lo[b, t]
            place = seg_out[b, t]
            if small:
                for j in range(count):
                    member = small_table[table_start + first + j]
                    if grouped:
                        order[place + j] = first_row + member
                    else:
                        order[place + j] = rows[first_row + member]
                continue
            for start in range(0, count, _BLOCK):
                step = min(_BLOCK, count - start)
                _walk_block(first + start, step, n, p, q, k0, k1, k2, k3, k4, k5, buffer, pending,
                            values)
                out = place + start
                if grouped:
                    for j in range(step):
                        order[out + j] = first_row + np.int64(buffer[j])
                else:
                    for j in range(step):
                        order[out + j] = rows[first_row + np.int64(buffer[j])]


@numba.njit(nogil=True, boundscheck=False, cache=True)
def write_members(codes, start, write, rows):
    """Rows ``start + i`` of a chunk of codes appended to their stratum's members.

    ``write[s]``: where stratum ``s``'s next member goes (advanced); rows of a
    stratum stay in increasing order (a stable counting sort, chunk by chunk).
    """
    for i in range(codes.shape[0]):
        code = codes[i]
        slot = write[code]
        rows[slot] = start + i
        write[code] = slot + 1
