"""Compiled assembly of a materialised plan (optional: needs numba, the ``fast`` extra).

The same batches as the numpy path (:func:`pystratum.engine._assemble.assemble_batches`),
computed inside one int64 array that ends up as the plan's order, so the
epoch needs no permutation copy, no gathered codes and no separate result:

1. ``pack_rows``: entry ``row`` holds ``code << 32 | row`` (rows and codes
   below 2**31).
2. The epoch's permutation moves the entries: ``shuffle_like_numpy`` makes
   exactly the swaps of ``numpy.random.Generator.shuffle`` (hence of
   ``permutation``) with the generator's own draws, or ``pack_permuted``
   packs another stream's permutation.
3. ``place_ranks``: one pass in permuted order ranks each row within its
   stratum, finds its batch in the cuts and replaces the code by the row's
   output position (batch start + rows of that batch before it): the
   reference algorithm's ``split(row, batch)``.
4. ``move_to_places``: every entry moves to its output position in place,
   and the position bits are cleared, leaving the int64 row positions.

Why it is fast: Fisher-Yates swaps and the final moves are random accesses
over the whole array. The shuffle knows its swap partners before it needs
them (the draws do not depend on the data), so it prefetches them a few
dozen swaps ahead instead of waiting on one cache miss at a time (numpy's
loop waits). The final moves go in two steps that each stay local: a
distribution into buckets of 2**14 positions (about a thousand write
points at a time, all cached) and then exact places inside each bucket,
which fits in the L2 cache. A single pass of random writes was measured
slower than numpy's chunked sorts; this layout is not.
"""

from __future__ import annotations

import numba
import numpy as np

from ._tools import prefetch

__all__ = ["pack_rows", "pack_permuted", "shuffle_like_numpy", "place_ranks",
           "move_to_places", "place_slot_rows", "gather_slot_blocks", "split_safe_labels_rows",
           "batch_stratum_counts", "move_split_safe", "fill_label_rows"]

_LOW = 0xFFFFFFFF
# Swaps whose partner is prefetched ahead of use (a power of two for the ring
# of pending draws must be larger).
_AHEAD = 32
_RING = 64
# Entries read ahead in pack_permuted (random reads of the codes).
_GATHER_AHEAD = 16
# Final places are settled in buckets of 2**_LEAF_BITS positions (128 KiB,
# L2-resident); a distribution step splits a range at most 2**_FAN_BITS ways.
_LEAF_BITS = 14
_FAN_BITS = 10


@numba.njit(nogil=True, boundscheck=False, cache=True)
def pack_rows(codes, packed):
    """``packed[row] = codes[row] << 32 | row``."""
    for row in range(packed.shape[0]):
        packed[row] = (np.int64(codes[row]) << 32) | row


@numba.njit(nogil=True, boundscheck=False, cache=True)
def pack_permuted(permutation, codes, packed):
    """``packed[j] = codes[row] << 32 | row`` for ``row = permutation[j]``."""
    n = packed.shape[0]
    for j in range(n):
        if j + _GATHER_AHEAD < n:
            prefetch(codes, np.int64(permutation[j + _GATHER_AHEAD]))
        row = np.int64(permutation[j])
        packed[j] = (np.int64(codes[row]) << 32) | row


@numba.njit(nogil=True, boundscheck=False, cache=True)
def _interval(next_uint32, state, most):
    """A uniform integer in ``0..most`` (``most < 2**32``) as numpy's ``random_interval`` draws it.

    The smallest all-ones mask covering ``most``, 32-bit words until one
    masked word is at most ``most``: the same words consumed, the same value.
    """
    mask = most
    mask |= mask >> 1
    mask |= mask >> 2
    mask |= mask >> 4
    mask |= mask >> 8
    mask |= mask >> 16
    while True:
        value = np.int64(next_uint32(state)) & mask
        if value <= most:
            return value


@numba.njit(nogil=True, boundscheck=False, cache=True)
def shuffle_like_numpy(values, next_uint32, state):
    """Shuffle ``values`` in place with the swaps of ``Generator.shuffle`` (1-D, ``n <= 2**32``).

    ``next_uint32``/``state``: the generator's ``bit_generator.ctypes``
    function and state address (the caller holds the bit generator's lock).
    For ``i = n-1 .. 1``: ``j = random_interval(i)``, swap ``values[i]`` and
    ``values[j]``, as numpy does; the draws run ``_AHEAD`` swaps ahead so
    that ``values[j]`` is prefetched before it is needed.
    """
    n = values.shape[0]
    pending = np.empty(_RING, np.int64)
    drawn = n - 1  # the next i whose partner is drawn
    for i in range(n - 1, 0, -1):
        while drawn > 0 and drawn >= i - _AHEAD:
            j = _interval(next_uint32, state, np.int64(drawn))
            pending[drawn & (_RING - 1)] = j
            prefetch(values, j)
            drawn -= 1
        j = pending[i & (_RING - 1)]
        value = values[j]
        values[j] = values[i]
        values[i] = value


@numba.njit(nogil=True, boundscheck=False, cache=True)
def place_ranks(packed, cuts, bounds):
    """Replace each entry's code by its output position, walking entries in order.

    ``cuts``: ``(S, B + 1)``; ``bounds``: ``B + 2`` batch starts, the last
    batch ``B`` being the pseudo-batch of rows left out (ranks at or past
    ``cuts[s, B]``). Ranks of a stratum arrive in increasing order, so each
    stratum's current batch only moves forward.
    """
    n_strata = cuts.shape[0]
    last = cuts.shape[1] - 1
    seen = np.zeros(n_strata, np.int64)
    current = np.zeros(n_strata, np.int64)
    fill = bounds.astype(np.int64)
    for j in range(packed.shape[0]):
        entry = packed[j]
        s = entry >> 32
        rank = seen[s]
        seen[s] = rank + 1
        b = current[s]
        while b < last and cuts[s, b + 1] <= rank:
            b += 1
        current[s] = b
        position = fill[b]
        fill[b] = position + 1
        packed[j] = (position << 32) | (entry & _LOW)


@numba.njit(nogil=True, boundscheck=False, cache=True)
def _distribute(packed, low, high, shift):
    """Move the entries of ``packed[low:high]`` (positions in that range) into their buckets.

    Bucket ``k`` holds positions ``k << shift .. (k + 1) << shift``; the
    positions being a permutation, each bucket's range receives exactly its
    entries. Each entry is swapped straight into the next free slot of its
    bucket (in place, one move per entry).
    """
    first = low >> shift
    n_buckets = ((high - 1) >> shift) - first + 1
    free = np.empty(n_buckets, np.int64)
    end = np.empty(n_buckets, np.int64)
    for k in range(n_buckets):
        free[k] = max(low, (first + k) << shift)
        end[k] = min(high, (first + k + 1) << shift)
    for k in range(n_buckets):
        while free[k] < end[k]:
            entry = packed[free[k]]
            target = ((entry >> 32) >> shift) - first
            while target != k:
                slot = free[target]
                displaced = packed[slot]
                packed[slot] = entry
                free[target] = slot + 1
                entry = displaced
                target = ((entry >> 32) >> shift) - first
            packed[free[k]] = entry
            free[k] += 1


@numba.njit(nogil=True, boundscheck=False, cache=True)
def _settle(packed, low, high):
    """Entries of ``packed[low:high]`` (positions in that range) to their exact places, rows only.

    Cycle by cycle; a placed row is stored complemented (negative) until the
    range is done, so that a later start can tell it from an entry that
    still has to move (whose position bits may be zero too).
    """
    for i in range(low, high):
        entry = packed[i]
        if entry < 0:
            continue
        target = entry >> 32
        while target != i:
            displaced = packed[target]
            packed[target] = ~(entry & _LOW)
            entry = displaced
            target = entry >> 32
        packed[i] = ~(entry & _LOW)
    for i in range(low, high):
        packed[i] = ~packed[i]


@numba.njit(nogil=True, boundscheck=False, cache=True)
def move_to_places(packed, leaf_bits=_LEAF_BITS, fan_bits=_FAN_BITS):
    """Each ``position << 32 | row`` entry to ``packed[position] = row`` (positions a permutation).

    Level by level, each range is split into at most ``2**fan_bits``
    buckets, down to buckets of ``2**leaf_bits`` positions; then every entry
    goes to its exact place inside its bucket. (Tests pass small values to
    reach several levels with few rows.)
    """
    n = packed.shape[0]
    bits = 0
    while (np.int64(1) << bits) < n:
        bits += 1
    shift = bits
    while shift > leaf_bits:
        step = max(leaf_bits, shift - fan_bits)
        width = np.int64(1) << shift
        for low in range(0, n, width):
            _distribute(packed, low, min(n, low + width), step)
        shift = step
    width = np.int64(1) << leaf_bits
    for low in range(0, n, width):
        _settle(packed, low, min(n, low + width))



@numba.njit(nogil=True, boundscheck=False, cache=True)
def place_slot_rows(permutation, codes, base, sequence):
    """Pass 0 of a slot allocation: ``sequence[base[s] + u] = row`` for the row of rank ``u``.

    Walking the permutation, a running count per stratum gives each row its
    rank ``u`` within its stratum ``s``; strata with ``base[s] < 0`` are left
    out. A counting sort in one pass: each stratum's run is written in
    order, so the writes stay in about one cache line per stratum (random
    writes over the whole output were measured twice as slow).
    """
    seen = base.copy()
    for i in range(permutation.shape[0]):
        row = permutation[i]
        s = codes[row]
        at = seen[s]
        if at < 0:
            continue
        sequence[at] = row
        seen[s] = at + 1


@numba.njit(nogil=True, boundscheck=False, cache=True)
def gather_slot_blocks(sequence, columns, per_batch, width, order):
    """``order[b, p, :] = sequence[p, columns[b], :]`` (shapes ``(B, P, K)`` and ``(P, B, K)``).

    The slot layout's last step: K-row blocks read in batch order, each
    prefetched a few batches ahead (the reads jump across the sequence; the
    writes are in order).
    """
    n_batches = columns.shape[0]
    at = 0
    for b in range(n_batches):
        if b + _SLOT_AHEAD < n_batches:
            ahead = columns[b + _SLOT_AHEAD]
            for p in range(per_batch):
                prefetch(sequence, (p * n_batches + ahead) * width)
        column = columns[b]
        for p in range(per_batch):
            start = (p * n_batches + column) * width
            for r in range(width):
                order[at] = sequence[start + r]
                at += 1


# Batches whose slot blocks gather_slot_blocks prefetches ahead of use.
_SLOT_AHEAD = 4


@numba.njit(nogil=True, boundscheck=False, cache=True)
def split_safe_labels_rows(counts, start, labels, places):
    """``split_safe_labels(counts[u])`` into ``labels[start[u]:]`` for every row ``u``,
    and ``split_safe_places(counts[u])`` (the labels' stable argsort) into ``places``.

    The construction of :mod:`pystratum.engine._batch_order`, one pattern at
    a time: a part's children are written child by child, entries in order,
    which is the (part, stratum) order the numpy path gets by a stable sort.
    """
    offset = np.empty(counts.shape[1], dtype=np.int64)
    n_patterns, n_strata = counts.shape
    for u in range(n_patterns):
        n = 0
        for s in range(n_strata):
            n += counts[u, s]
        if n == 0:
            continue
        part = np.empty(n, dtype=np.int64)
        stratum = np.empty(n, dtype=np.int64)
        count = np.empty(n, dtype=np.int64)
        next_part = np.empty(n, dtype=np.int64)
        next_stratum = np.empty(n, dtype=np.int64)
        next_count = np.empty(n, dtype=np.int64)
        quotient = np.empty(n, dtype=np.int64)
        remainder = np.empty(n, dtype=np.int64)
        first_unit = np.empty(n, dtype=np.int64)
        m = 0
        for s in range(n_strata):
            if counts[u, s] > 0:
                part[m] = 0
                stratum[m] = s
                count[m] = counts[u, s]
                m += 1
        rest = n
        p = 2
        while rest > 1:
            # n's prime factors, the 2s first, then the others increasing.
            while p * p <= rest and rest % p != 0:
                p = 3 if p == 2 else p + 2
            if rest % p != 0:
                p = rest
            rest //= p
            k = 0
            i = 0
            while i < m:
                j = i
                while j < m and part[j] == part[i]:
                    j += 1
                # Once per entry: quotient, remainder and its first remainder unit mod p.
                unit = 0
                for e in range(i, j):
                    quotient[e] = count[e] // p
                    remainder[e] = count[e] - quotient[e] * p
                    first_unit[e] = unit
                    unit += remainder[e]
                    if unit >= p:
                        unit -= p
                for c in range(p):
                    for e in range(i, j):
                        d = c - first_unit[e]
                        if d < 0:
                            d += p
                        child_count = quotient[e] + (1 if d < remainder[e] else 0)
                        if child_count > 0:
                            next_part[k] = part[e] * p + c
                            next_stratum[k] = stratum[e]
                            next_count[k] = child_count
                            k += 1
                i = j
            part, next_part = next_part, part
            stratum, next_stratum = next_stratum, stratum
            count, next_count = next_count, count
            m = k
        at = start[u]
        for e in range(m):
            for _ in range(count[e]):
                labels[at] = stratum[e]
                at += 1
        # Places: the k-th place of stratum s takes the stratum's k-th row.
        acc = start[u]
        for s in range(n_strata):
            offset[s] = acc
            acc += counts[u, s]
        for t in range(n):
            s = labels[start[u] + t]
            places[offset[s]] = t
            offset[s] += 1


@numba.njit(nogil=True, boundscheck=False, cache=True)
def batch_stratum_counts(order, bounds, stratum_of, n_strata, stratum_in_order):
    """``(B, S)`` rows of each stratum (``stratum_of[row]``) in each batch of ``order``.

    Also writes ``stratum_in_order[i] = stratum_of[order[i]]``: the one
    random gather of the reorder, so :func:`move_split_safe` reads in order.
    """
    n_batches = bounds.shape[0] - 1
    counts = np.zeros((n_batches, n_strata), dtype=np.int64)
    for b in range(n_batches):
        for i in range(bounds[b], bounds[b + 1]):
            s = stratum_of[order[i]]
            stratum_in_order[i] = s
            counts[b, s] += 1
    return counts


@numba.njit(nogil=True, boundscheck=False, cache=True)
def move_split_safe(order, bounds, stratum_in_order, counts, flat, start, out):
    """``out``: every batch of ``order`` in the split-safe order, in one pass.

    The ``k``-th row of stratum ``s`` in a batch (in ``order``'s order) is row
    ``offset_s + k`` of the by-stratum order (strata by number) and goes to
    ``flat[start[b] + offset_s + k]`` of its batch: the numpy path's stable
    sort and scatter, as a counting pass (the writes stay inside the batch).
    """
    n_batches, n_strata = counts.shape
    seen = np.empty(n_strata, dtype=np.int64)
    for b in range(n_batches):
        acc = 0
        for s in range(n_strata):
            seen[s] = acc
            acc += counts[b, s]
        low = bounds[b]
        base = start[b]
        for i in range(low, bounds[b + 1]):
            s = stratum_in_order[i]
            j = seen[s]
            seen[s] = j + 1
            out[low + flat[base + j]] = order[i]


@numba.njit(nogil=True, boundscheck=False, cache=True)
def fill_label_rows(out, lengths, codes, columns):
    """``out[r, columns[codes[c]]] = True`` for each cell ``c`` of row ``r`` (rows hold
    ``lengths`` cells, in order): a label matrix filled in one pass over the numbered
    cells, with no per-cell index arrays."""
    cell = 0
    for r in range(lengths.shape[0]):
        for _ in range(lengths[r]):
            out[r, columns[codes[cell]]] = True
            cell += 1
