"""Compiled random-access stream and lazy batches (optional: needs numba, the ``fast`` extra).

The same values as the numpy path (:mod:`pystratum.streams._index`,
:mod:`pystratum.engine._lazy`, and ``ClassesPerBatch(classes="uniform")``'s
keyed pass orders in :mod:`pystratum.engine._assemble_slots`, here
:func:`uniform_batches`), computed without its intermediate arrays: the
numpy path makes about ten passes over a chunk per Feistel round and
gathers rows in separate passes; here each value goes through all rounds,
the cycle-walk and the member lookup while it is in a register.

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

__all__ = ["walk", "walk_each", "walk_runs", "small_tables", "round_keys_each",
           "uniform_batches", "permuted_groups", "first_rows",
           "fill_segments", "write_members"]

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
# The key schedule's fixed round keys (pystratum.streams._index._FIXED_KEYS).
_FIXED_KEYS = (np.uint64(4156040), np.uint64(27461843), np.uint64(52005422),
               np.uint64(57701188), np.uint64(604194), np.uint64(27210192))
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
def walk_runs(ranks, run, sizes, keys, table_start, table, out):
    """``streams._index.permute_run_ranks``: value ``i`` on domain ``run[i]``.

    Domain ``r`` has ``sizes[r]`` values and keys ``keys[:, r]``; a small
    one (``<= SMALL_DOMAIN``) is read off its whole permutation
    (``table[table_start[r]:]``, :func:`small_tables`), a large one walked.
    """
    for i in range(ranks.shape[0]):
        r = run[i]
        size = sizes[r]
        if size <= _SMALL_DOMAIN:
            out[i] = table[table_start[r] + ranks[i]]
            continue
        n = np.uint64(size)
        p, q = _widths(n)
        k0, k1, k2, k3, k4, k5 = keys[0, r], keys[1, r], keys[2, r], keys[3, r], keys[4, r], \
            keys[5, r]
        y = _encrypt(np.uint64(ranks[i]), p, q, k0, k1, k2, k3, k4, k5)
        while y >= n:
            y = _encrypt(y, p, q, k0, k1, k2, k3, k4, k5)
        out[i] = np.int64(y)


@numba.njit(nogil=True, inline="always")
def _rank_small(n, k0, k1, k2, k3, k4, k5, values, table, start):
    """``table[start + r]`` = ``perm(r)`` of a domain of ``n <= SMALL_DOMAIN`` values.

    The permutation is the order of ``0 .. n-1`` under the keyed 52-bit
    network (``streams._index.small_domain_permutation``). The encrypted
    values are distinct, so each value's rank is the number of smaller ones
    (branch-free, O(n^2) for n <= 64).
    """
    for j in range(n):
        values[j] = _encrypt(np.uint64(j), _HALF, _HALF, k0, k1, k2, k3, k4, k5)
    for j in range(n):
        v = values[j]
        rank = 0
        for m in range(n):
            rank += np.int64(values[m] < v)
        table[start + rank] = j


@numba.njit(nogil=True, boundscheck=False, cache=True)
def small_tables(sizes, keys, offsets, table):
    """Whole small-domain permutations: ``table[offsets[i] + r]`` = ``perm_i(r)``.

    Domain ``i`` has ``sizes[i] <= SMALL_DOMAIN`` values and round keys
    ``keys[:, i]`` (:func:`_rank_small`).
    """
    values = np.empty(_SMALL_DOMAIN, np.uint64)
    for i in range(sizes.shape[0]):
        _rank_small(sizes[i], keys[0, i], keys[1, i], keys[2, i], keys[3, i], keys[4, i],
                    keys[5, i], values, table, offsets[i])


@numba.njit(nogil=True, inline="always")
def _schedule(x):
    """The key schedule's network ``P`` (``streams._index._schedule_pass``) on one uint64."""
    return _encrypt(x, _HALF, _HALF, _FIXED_KEYS[0], _FIXED_KEYS[1], _FIXED_KEYS[2],
                    _FIXED_KEYS[3], _FIXED_KEYS[4], _FIXED_KEYS[5])


@numba.njit(nogil=True, boundscheck=False, cache=True)
def round_keys_each(seed, epochs, streams, out):
    """``out[:, i]``: the round keys of (``epochs[i]``, ``streams[i]``) (``streams._index.round_keys``)."""
    state0 = _schedule(np.uint64(seed))
    for i in range(streams.shape[0]):
        state = _schedule(_schedule(state0 ^ np.uint64(epochs[i])) ^ np.uint64(streams[i]))
        for r in range(_ROUNDS):
            out[r, i] = _schedule(state ^ np.uint64(r)) >> _HALF


@numba.njit(nogil=True, inline="always")
def _pass_keys(state0, passes, turn):
    """``round_keys(key, passes, [turn])``'s six keys, ``state0`` the key's ``P(key)``."""
    state = _schedule(_schedule(state0 ^ np.uint64(passes)) ^ np.uint64(turn))
    return (_schedule(state) >> _HALF, _schedule(state ^ np.uint64(1)) >> _HALF,
            _schedule(state ^ np.uint64(2)) >> _HALF, _schedule(state ^ np.uint64(3)) >> _HALF,
            _schedule(state ^ np.uint64(4)) >> _HALF, _schedule(state ^ np.uint64(5)) >> _HALF)


@numba.njit(nogil=True, boundscheck=False)
def _key_table(state0, passes, turns):
    """``(ROUNDS, m)``: :func:`_pass_keys` of every (``passes[i]``, ``turns[i]``), vectorised."""
    table = np.empty((_ROUNDS, passes.shape[0]), np.uint64)
    for i in range(passes.shape[0]):
        state = _schedule(_schedule(state0 ^ passes[i]) ^ turns[i])
        for r in range(_ROUNDS):
            table[r, i] = _schedule(state ^ np.uint64(r)) >> _HALF
    return table


@numba.njit(nogil=True, inline="always")
def _keys_of(ring, passes):
    """Pass ``passes``' keys from a stratum's key ring ``(state0, turn, table, low, high, at)``:
    the table's column for passes ``low .. high``, else computed."""
    state0, turn, table, low, high, at = ring
    if low <= passes <= high:
        i = at + passes - low
        return table[0, i], table[1, i], table[2, i], table[3, i], table[4, i], table[5, i]
    return _pass_keys(state0, passes, turn)


@numba.njit(nogil=True)
def _scratch():
    """Work arrays of :func:`_raw_run`: values, a small table, walk positions and values."""
    return (np.empty(max(_BLOCK, _SMALL_DOMAIN), np.uint64), np.empty(_SMALL_DOMAIN, np.int64),
            np.empty(_BLOCK, np.int64), np.empty(_BLOCK, np.uint64))


@numba.njit(nogil=True)
def _raw_run(shuffled, ring, n, passes, first, count, out, scratch):
    """``out[:count]``: raw positions ``first ..`` of pass ``passes`` of a stratum of ``n`` rows.

    ``engine._assemble_slots._RawPasses``: the keyed bijection of round keys
    ``(key, pass, turn)`` (``ring``: :func:`_keys_of`; a small domain ranked
    whole), or row order when not ``shuffled``. ``scratch``: :func:`_scratch`'s
    work arrays.
    """
    values, table, pending, walking = scratch
    if not shuffled:
        for j in range(count):
            out[j] = first + j
        return
    k0, k1, k2, k3, k4, k5 = _keys_of(ring, passes)
    if n <= _SMALL_DOMAIN:
        _rank_small(n, k0, k1, k2, k3, k4, k5, values, table, 0)
        for j in range(count):
            out[j] = table[first + j]
        return
    size = np.uint64(n)
    p, q = _widths(size)
    buffer = values[:_BLOCK]
    for start in range(0, count, _BLOCK):
        step = min(_BLOCK, count - start)
        _walk_block(first + start, step, size, p, q, k0, k1, k2, k3, k4, k5, buffer, pending,
                    walking)
        for j in range(step):
            out[start + j] = np.int64(buffer[j])


@numba.njit(nogil=True, inline="always")
def _reorder_head(head, tail, width, t, back):
    """``engine._assemble_slots._pass_heads``' reorder of a raw head (``width`` positions) in place.

    The first ``width - t`` of them not among ``tail[:t]`` (the previous
    pass's last ``t`` served positions) come first, the others after them,
    each group in raw order.
    """
    front = 0
    behind = 0
    for j in range(width):
        v = head[j]
        clash = False
        for c in range(t):
            clash |= tail[c] == v
        if not clash and front < width - t:
            head[front] = v  # front <= j: an entry already read
            front += 1
        else:
            back[behind] = v
            behind += 1
    for j in range(behind):
        head[front + j] = back[j]


@numba.njit(nogil=True)
def _served_head(shuffled, ring, n, width, passes, head, previous, tail, back, scratch):
    """``head[:width]``: served positions ``0 .. K-1`` of pass ``passes`` (``n >= K``).

    ``engine._assemble_slots._pass_heads`` without recursion: the passes whose
    previous tail reaches into their own reordered head (``n - t < K``) are
    followed back to one that does not, then the heads are built forward.
    """
    first = passes
    while first >= 1 and first * n % width != 0 and n - first * n % width < width:
        first -= 1
    for r in range(first, passes + 1):
        _raw_run(shuffled, ring, n, r, 0, width, head, scratch)
        t = r * n % width
        if r >= 1 and t != 0:
            _raw_run(shuffled, ring, n, r - 1, n - t, t, tail, scratch)
            for c in range(t):
                if n - t + c < width:  # inside the previous pass's reordered head
                    tail[c] = previous[n - t + c]
            _reorder_head(head, tail, width, t, back)
        for j in range(width):
            previous[j] = head[j]


@numba.njit(nogil=True, boundscheck=False, cache=True)
def uniform_batches(grouped, offsets, sizes, turn, counts, starts, run_start, width, shuffled, key,
                    batch_of, per_batch, order):
    """``classes="uniform"``'s batches: ``engine._assemble_slots.pass_sequence``, then the slot layout.

    Stratum ``s`` serves ranks ``starts[s] .. starts[s] + counts[s] - 1`` of
    its pass sequence: position ``u mod n`` of pass ``u // n`` (raw order,
    :func:`_raw_run`), except positions ``< K`` of a pass that begins inside
    a slot, which take the reordered head (:func:`_served_head`); row
    ``grouped[offsets[s] + position]``. A small stratum's pass is ranked
    once and its served order kept for the next pass's head. Its slot ``j``
    (K rows) is slot position ``q = run_start[s] + j``: place ``q // B`` of
    batch ``batch_of[q mod B]`` in ``order`` (``engine._assemble_slots._gather_slots``).
    """
    state0 = _schedule(np.uint64(key))
    scratch = _scratch()
    current = np.empty(_SMALL_DOMAIN, np.int64)
    served = np.empty(_SMALL_DOMAIN, np.int64)  # the previous pass's served order (small)
    head = np.empty(width, np.int64)
    previous = np.empty(width, np.int64)
    tail = np.empty(width, np.int64)
    back = np.empty(width, np.int64)
    sequence = np.empty(counts.max() if counts.shape[0] else 0, np.int64)  # one stratum's ranks
    batches = batch_of.shape[0]
    # The round keys of every pass served (and the one before), computed in one vectorised loop.
    low = np.zeros(sizes.shape[0], np.int64)
    high = np.full(sizes.shape[0], -1, np.int64)
    key_at = np.zeros(sizes.shape[0], np.int64)
    total = 0
    for s in range(sizes.shape[0]):
        if counts[s] > 0 and shuffled:
            low[s] = max(starts[s] // sizes[s] - 1, 0)
            high[s] = (starts[s] + counts[s] - 1) // sizes[s]
            key_at[s] = total
            total += high[s] - low[s] + 1
    key_passes = np.empty(total, np.uint64)
    key_turns = np.empty(total, np.uint64)
    for s in range(sizes.shape[0]):
        for i in range(high[s] - low[s] + 1):
            key_passes[key_at[s] + i] = low[s] + i
            key_turns[key_at[s] + i] = turn[s]
    keys = _key_table(state0, key_passes, key_turns)
    for s in range(sizes.shape[0]):
        count = counts[s]
        if count == 0:
            continue
        n = sizes[s]
        u = starts[s]
        end = u + count
        at = 0
        base = offsets[s]
        ring = (state0, turn[s], keys, low[s], high[s], key_at[s])
        before = -1  # the pass whose served order `served` holds
        while u < end:
            passes = u // n
            position = u - passes * n
            m = min(end - u, n - position)
            t = passes * n % width
            reordered = passes >= 1 and n >= width and t != 0  # the pass's head is reordered
            fix = reordered and position < width  # ... and served here
            if n <= _SMALL_DOMAIN:
                _raw_run(shuffled, ring, n, passes, 0, n, current, scratch)
                if fix:
                    if before == passes - 1:
                        for c in range(t):
                            tail[c] = served[n - t + c]
                        _reorder_head(current, tail, width, t, back)
                    elif n - t >= width:  # the previous pass's tail is in its raw order
                        _raw_run(shuffled, ring, n, passes - 1, n - t, t, tail, scratch)
                        _reorder_head(current, tail, width, t, back)
                    else:
                        _served_head(shuffled, ring, n, width, passes, head, previous, tail,
                                     back, scratch)
                        for j in range(width):
                            current[j] = head[j]
                for j in range(m):
                    sequence[at + j] = grouped[base + current[position + j]]
                for j in range(n):
                    served[j] = current[j]
                before = -1 if reordered and not fix else passes  # a raw head: not served
            else:
                _raw_run(shuffled, ring, n, passes, position, m, sequence[at:], scratch)
                if fix:
                    _served_head(shuffled, ring, n, width, passes, head, previous, tail, back,
                                 scratch)
                    for j in range(min(m, width - position)):
                        sequence[at + j] = head[position + j]
                for j in range(m):
                    sequence[at + j] = grouped[base + sequence[at + j]]
            u += m
            at += m
        # The stratum's slots to their batches: slot position q = place * B + column.
        column = run_start[s] % batches
        place = run_start[s] // batches
        for j in range(0, count, width):
            out = (batch_of[column] * per_batch + place) * width
            for r in range(width):
                order[out + r] = sequence[j + r]
            column += 1
            if column == batches:
                column = 0
                place += 1


@numba.njit(nogil=True, boundscheck=False, cache=True)
def permuted_groups(grouped, offsets, sizes, keys, order):
    """``order[offsets[s] + r] = grouped[offsets[s] + perm_s(r)]``: every stratum's rows permuted.

    ``perm_s`` is the keyed bijection on ``[0, sizes[s])`` with round keys
    ``keys[:, s]`` (a small domain ranked whole): pass 0 of
    ``engine._assemble_slots.slot_index_draws``.
    """
    scratch = _scratch()
    for s in range(sizes.shape[0]):
        start = offsets[s]
        n = sizes[s]
        ring = (np.uint64(0), 0, keys, 0, 0, s)  # pass "0" reads column s of the keys
        _raw_run(True, ring, n, 0, 0, n, order[start:start + n], scratch)
        for j in range(n):
            order[start + j] = grouped[start + order[start + j]]


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
def first_rows(codes, out):
    """``out[c]``: the first row of code ``c`` (``out`` holds ``len(codes)`` beforehand)."""
    for i in range(codes.shape[0] - 1, -1, -1):
        out[codes[i]] = i  # the last write, the first row, stays


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
