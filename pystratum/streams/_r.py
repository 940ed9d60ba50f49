"""R's default random stream, reproduced bit for bit in numpy.

R (>= 3.6) draws with Mersenne-Twister and samples with "Rejection":
``set.seed(s); sample(n)`` in R and ``RStream(s).sample(n)`` here give the
same values and leave the same ``.Random.seed`` behind, so a permutation
made in Python can be replayed in R and the other way round.

How R draws (facts from R's sources, re-implemented here):

* ``set.seed(s)`` takes ``s`` as an unsigned 32-bit value, applies
  ``s = 69069 * s + 1`` 50 times, then 625 more times keeping each value;
  the first kept value becomes the position (624), the other 624 the
  Mersenne-Twister key.
* Words are standard MT19937 output: numpy's ``MT19937`` bit generator
  gives the same words once loaded with the same key and position (R's
  position and numpy's ``pos`` mean the same: words used from the key).
* ``unif_rand()`` is ``word * 2**-32``, except that a zero word gives
  ``0.5 * 2.328306437080797e-10``, so values lie in (0, 1).
* ``R_unif_index(m)`` draws ``b = ceil(log2(m))`` bits from
  ``b // 16 + 1`` words (the high 16 bits of each, concatenated, masked to
  ``b`` bits) and retries until the value is below ``m``; ``m == 1`` still
  uses one word.
* ``sample.int(n, k)`` without replacement keeps ``x = 0..n-1`` and, per
  draw, does ``j = R_unif_index(m); out = x[j] + 1; x[j] = x[m - 1];
  m -= 1``. With replacement (or when ``k < 2``) every value is
  ``R_unif_index(n) + 1``. When ``n > 1e7`` and ``k <= n / 2`` without
  replacement R takes a hash path: values ``R_unif_index(n) + 1``, a value
  drawn before being drawn again.

Everything is vectorised: words come from numpy in bulk, the rejection loop
is resolved block-wise, and the swap-remove loop runs in chunks with one
random memory access per draw, like R's own loop: replaying R's stream in
Python must not cost more than drawing it in R (figures:
``benchmarks/results_focused.md``; script: ``benchmarks/bench_rstream.py``).
"""

from __future__ import annotations

import math

import numpy as np

from ..base._validation import check_bool, check_int

__all__ = ["RStream"]

_MT_N = 624
# .Random.seed[1]: Mersenne-Twister (3) + Inversion normals (400) + Rejection
# sampling (10000). Normals are never drawn here, but any other code names a
# state R would use differently, so only this one is accepted.
_KIND_CODE = 10403
_SEED_MIN = -(2**31) + 1  # -2**31 is R's NA_integer_: set.seed() rejects it
_SEED_MAX = 2**31 - 1
_U32 = 0xFFFFFFFF
# unif_rand() never returns 0: a zero word becomes half of 1 / (2**32 - 1).
_ZERO_WORD_UNIF = 0.5 * 2.328306437080797e-10
_TWO_POW_M32 = 2.0**-32
# sample.int(): R stops for n > 4.5e15 ("invalid first argument"), and takes
# its hash path for n > 1e7 with size <= n / 2 (no replacement).
_MAX_N = 4_500_000_000_000_000
_HASH_MIN_N = 10_000_000
_INT32_MAX = 2**31 - 1

# Words are generated in pieces of at most this many; a piece is also the
# most that close() regenerates to stop exactly after the last word used.
_WORD_PIECE = 1 << 20
# Below these counts plain Python loops beat numpy's per-call overhead.
_SMALL_DRAWS = 64
_SMALL_REPLAY = 1024
# Replay chunks hold _CHUNK_FACTOR * sqrt(m) steps: about 2 * _CHUNK_FACTOR**2
# of them need a one-by-one fix, balancing per-chunk overhead against Python work.
_CHUNK_FACTOR = 6


class RStream:
    """R's random stream after ``set.seed(seed)`` (Mersenne-Twister, Rejection).

    Guarantees (checked against R 4.2.2 by the test suite):

    * ``RStream(s).sample(n, size, replace)`` equals R's
      ``set.seed(s); sample.int(n, size, replace)`` (1-based values) on
      every path R takes: swap-remove, with replacement, and the hash path
      for ``n > 1e7`` with ``size <= n / 2``. ``permutation(n)`` is
      ``sample(n) - 1``; ``runif(n)`` is R's ``runif(n)``.
    * Calls on one stream continue it as consecutive calls do in R after one
      ``set.seed``: ``random_seed`` equals R's ``.Random.seed`` after the
      same calls, and assigning an R ``.Random.seed`` resumes R's stream.

    Seeds: R's ``set.seed`` converts the seed with ``as.integer``; a value
    outside ``[-2**31 + 1, 2**31 - 1]`` (``set.seed(2^31)``,
    ``set.seed(3e9)``, ``set.seed(4294967295)``, ``set.seed(-2^31)``)
    becomes ``NA`` with a warning and R stops with "supplied seed is not a
    valid integer". R does not wrap, so such seeds raise ``ValueError``
    here. Negative seeds are valid (R uses their unsigned 32-bit pattern).
    Only Python or numpy integers are accepted: R truncates ``1.7`` to 1,
    here a float is a ``TypeError``, and so is a bool.

    Copies (``copy()``, ``copy.copy``, ``copy.deepcopy``, pickling) are
    independent and cheap: the state is 626 integers.
    """

    __slots__ = ("_bitgen",)

    def __init__(self, seed):
        seed = check_int(seed, "seed", fix="Use an integer, as for R's set.seed().")
        if not _SEED_MIN <= seed <= _SEED_MAX:
            raise ValueError(
                f"seed must be in [{_SEED_MIN}, {_SEED_MAX}] (an R integer other than NA), "
                f"got seed={seed}. R's set.seed() stops with 'supplied seed is not a valid "
                f"integer' for it; use a seed in that range."
            )
        self._bitgen = _blank_bitgen()
        self._load(_scrambled_key(seed), _MT_N)

    # -- state -----------------------------------------------------------

    @classmethod
    def from_random_seed(cls, random_seed) -> RStream:
        """A stream resuming from a saved R ``.Random.seed`` (626 integers)."""
        stream = cls.__new__(cls)
        stream._bitgen = _blank_bitgen()
        stream.random_seed = random_seed
        return stream

    @property
    def random_seed(self) -> np.ndarray:
        """The state as R's ``.Random.seed``: int32 ``[10403, position, mt[0..623]]``.

        Assigning such a vector (from R, or from this property) resumes that
        stream. Positions 1..624 are accepted, the only ones R saves (624
        right after ``set.seed``, 1..624 after draws).
        """
        inner = self._bitgen.state["state"]
        out = np.empty(_MT_N + 2, dtype=np.int32)
        out[0] = _KIND_CODE
        out[1] = inner["pos"]
        out[2:] = np.asarray(inner["key"], dtype=np.uint32).view(np.int32)
        return out

    @random_seed.setter
    def random_seed(self, value) -> None:
        fix = "Pass R's .Random.seed as saved under RNGkind('Mersenne-Twister', 'Inversion', 'Rejection')."
        arr = np.asarray(value)
        if arr.dtype == np.bool_ or not np.issubdtype(arr.dtype, np.integer):
            raise TypeError(
                f"random_seed must be a vector of integers, got dtype {arr.dtype}. {fix}"
            )
        if arr.shape != (_MT_N + 2,):
            raise ValueError(
                f"random_seed must hold {_MT_N + 2} values, got shape {arr.shape}. {fix}"
            )
        if int(arr.min()) < -(2**31) or int(arr.max()) > _INT32_MAX:
            raise ValueError(f"random_seed values must be 32-bit signed integers. {fix}")
        wide = arr.astype(np.int64)
        if wide[0] != _KIND_CODE:
            raise ValueError(
                f"random_seed[0] must be {_KIND_CODE} (Mersenne-Twister, Inversion, "
                f"Rejection), got random_seed[0]={int(wide[0])}. {fix}"
            )
        pos = int(wide[1])
        if not 1 <= pos <= _MT_N:
            raise ValueError(
                f"random_seed[1] (the position) must be in 1..{_MT_N}, got random_seed[1]={pos}. "
                "R never saves other positions (it treats 0 and >= 626 as 624, and "
                "reseeds at 625)."
            )
        key = wide[2:].astype(np.int32).view(np.uint32)
        if not key.any():
            raise ValueError(
                "random_seed has an all-zero key, which R replaces by a time-based "
                f"seed: that stream cannot be reproduced. {fix}"
            )
        self._load(key, pos)

    def _load(self, key, pos: int) -> None:
        self._bitgen.state = {
            "bit_generator": "MT19937",
            "state": {"key": np.array(key, dtype=np.uint32), "pos": int(pos)},
        }

    def copy(self) -> RStream:
        """An independent stream in the same state."""
        twin = RStream.__new__(RStream)
        twin._bitgen = _blank_bitgen()
        twin._bitgen.state = self._bitgen.state
        return twin

    __copy__ = copy

    def __deepcopy__(self, memo) -> RStream:
        return self.copy()

    def __getstate__(self):
        return {"random_seed": self.random_seed}

    def __setstate__(self, state) -> None:
        self._bitgen = _blank_bitgen()
        self.random_seed = state["random_seed"]

    def __repr__(self) -> str:
        inner = self._bitgen.state["state"]
        digest = int(np.bitwise_xor.reduce(np.asarray(inner["key"], dtype=np.uint32)))
        return f"RStream(position={inner['pos']}, key_xor=0x{digest:08x})"

    # -- draws -----------------------------------------------------------

    def runif(self, n) -> np.ndarray:
        """R's ``runif(n)`` (min 0, max 1): float64 values in (0, 1)."""
        n = check_int(n, "n", minimum=0, fix="runif() takes the number of values.")
        if n > _MAX_N:
            raise ValueError(
                f"n must be at most 4.5e15 (R's longest vector), got n={n}; draw fewer values."
            )
        values = self._bitgen.random_raw(n).astype(np.float64)
        zero = values == 0.0
        values *= _TWO_POW_M32  # exact: a 32-bit integer times a power of two
        values[zero] = _ZERO_WORD_UNIF
        return values

    def permutation(self, n) -> np.ndarray:
        """0-based int64 permutation of ``range(n)``: R's ``sample(n) - 1``.

        Uses the stream exactly like R's ``sample(n)``.
        """
        n = check_int(n, "n", minimum=0, fix="Pass the number of items to permute.")
        return self._sample0(n, n, False)

    def compact_permutation(self, n) -> np.ndarray:
        """:meth:`permutation`'s values (the same draws), int32 when ``n < 2**31``.

        Half the memory of the int64 result; the plan's assembly reads it.
        """
        n = check_int(n, "n", minimum=0, fix="Pass the number of items to permute.")
        return self._sample0(n, n, False, compact=True)

    def partial_permutation(self, n, size) -> np.ndarray:
        """0-based int64 values: R's ``sample.int(n, size) - 1`` (distinct, random order).

        The first ``size`` values of a uniformly random permutation, drawn
        with R's own algorithm for ``sample.int(n, size)`` (``size`` draws;
        the hash path for ``n > 1e7`` and ``size <= n / 2``), so the stream
        moves exactly as in R.
        """
        n = check_int(n, "n", minimum=0, fix="sample.int() draws from 1..n.")
        size = check_int(size, "size", minimum=0, fix="size is the number of values to draw.")
        return self._sample0(n, size, False)

    def sample(self, n, size=None, replace=False) -> np.ndarray:
        """R's ``sample.int(n, size, replace)``: int64 values in ``1..n``.

        ``size`` defaults to ``n``. Raises ``ValueError`` where R stops:
        ``size > n`` without replacement, ``n == 0`` with ``size > 0``,
        ``n > 4.5e15``; the stream is then left untouched, as in R.
        """
        n = check_int(n, "n", minimum=0, fix="sample() draws from 1..n.")
        if size is None:
            size = n
        else:
            size = check_int(size, "size", minimum=0, fix="size is the number of values to draw.")
        out = self._sample0(n, size, check_bool(replace, "replace"))
        out += 1  # the one place values become R's 1-based ones
        return out

    def _sample0(self, n: int, size: int, replace: bool, compact: bool = False) -> np.ndarray:
        """``sample.int(n, size, replace) - 1`` for checked integers (int64; ``compact``:
        the permutation's own dtype, int32 when ``n < 2**31``)."""
        if n > _MAX_N:
            raise ValueError(
                f"n must be at most 4.5e15 (R's limit for sample.int), got n={n} "
                "(R: 'invalid first argument')."
            )
        if size > 0 and n == 0:
            raise ValueError(
                f"n must be positive when size > 0, got n=0 and size={size} "
                "(R: 'invalid first argument')."
            )
        if not replace and size > n:
            raise ValueError(
                "cannot take a sample larger than the population when 'replace = FALSE': "
                f"got size={size} > n={n}. Lower size or pass replace=True."
            )
        if size == 0:
            return np.empty(0, dtype=np.int64)
        tap = _WordTap(self._bitgen)
        try:
            out = _tapped_sample0(tap, n, size, replace, compact)
        except BaseException:
            # Leave the stream where it was (e.g. on MemoryError or ^C).
            tap.rewind()
            raise
        tap.close()
        return out

    def partial_permutations(self, draws) -> list:
        """``[partial_permutation(n, size) for n, size in draws]``: the same values and stream.

        One word tap serves the whole group, so a group of many small draws
        (a one-row stratum recycled pass after pass, refills of small
        classes) pays the tap's snapshot and rewind once, not per draw.
        Every ``(n, size)`` is checked before anything is drawn.
        """
        checked = []
        for n, size in draws:
            n = check_int(n, "n", minimum=0, fix="sample.int() draws from 1..n.")
            size = check_int(size, "size", minimum=0,
                             fix="size is the number of values to draw.")
            if n > _MAX_N or (size > 0 and n == 0) or size > n:
                raise ValueError(
                    f"n and size must describe a draw sample.int(n, size) makes without "
                    f"replacement (0 < size <= n <= 4.5e15), got n={n}, size={size}.")
            checked.append((n, size))
        tap = _WordTap(self._bitgen)
        try:
            out = [_tapped_sample0(tap, n, size, False, False) if size else
                   np.empty(0, dtype=np.int64) for n, size in checked]
        except BaseException:
            tap.rewind()
            raise
        tap.close()
        return out


def _tapped_sample0(tap, n: int, size: int, replace: bool, compact: bool) -> np.ndarray:
    """``sample.int(n, size, replace) - 1`` from ``tap``'s words (arguments checked, size > 0)."""
    if replace or size < 2:
        return _draw_fixed(tap, n, size)
    if n > _HASH_MIN_N and 2 * size <= n:
        return _draw_distinct(tap, n, size)
    return _swap_remove(_draw_shrinking(tap, n, size), n, compact=compact)


def _blank_bitgen() -> np.random.MT19937:
    """A bit generator whose state is about to be overwritten (a fixed seed
    skips the OS entropy read)."""
    return np.random.MT19937(0)


def _scrambled_key(seed: int) -> np.ndarray:
    """The Mersenne-Twister key R's ``set.seed(seed)`` makes (624 uint32)."""
    s = seed & _U32
    for _ in range(50):
        s = (69069 * s + 1) & _U32
    values = []
    for _ in range(_MT_N + 1):
        s = (69069 * s + 1) & _U32
        values.append(s)
    return np.array(values[1:], dtype=np.uint32)  # values[0] is replaced by the position


class _WordTap:
    """Hands one call the stream's 32-bit words in bulk.

    Words are generated ahead in pieces, each preceded by a snapshot of the
    generator; ``close()`` leaves the generator exactly after the last word
    taken by restoring the snapshot of the piece holding it and regenerating
    up to that word.
    """

    __slots__ = ("_bitgen", "_buf", "_off", "_taken", "_made", "_marks")

    def __init__(self, bitgen):
        self._bitgen = bitgen
        self._buf = np.empty(0, dtype=np.uint32)
        self._off = 0  # index in _buf of the next word not taken
        self._taken = 0  # words taken since the call began
        self._made = 0  # words generated since the call began
        self._marks = []  # (words made before the piece, generator state before it)

    def peek(self, count: int) -> np.ndarray:
        """The next ``count`` words (uint32), not taken yet."""
        short = self._off + count - self._buf.size
        if short > 0:
            parts = [self._buf[self._off:]]
            while short > 0:
                # Pieces grow with the call (small calls stay cheap, big ones
                # pay the snapshot and copy rarely), up to _WORD_PIECE.
                piece = min(max(short, self._made, 1024), _WORD_PIECE)
                self._marks.append((self._made, self._bitgen.state))
                parts.append(self._bitgen.random_raw(piece).astype(np.uint32))
                self._made += piece
                short -= piece
            self._buf = np.concatenate(parts)
            self._off = 0
        return self._buf[self._off:self._off + count]

    def take(self, count: int) -> None:
        self._off += count
        self._taken += count

    def close(self) -> None:
        """Leave the generator right after the last word taken."""
        self._seek(self._taken)

    def rewind(self) -> None:
        """Leave the generator where it was before the call."""
        self._seek(0)

    def _seek(self, words: int) -> None:
        if words == self._made:
            return
        for made, state in reversed(self._marks):
            if made <= words:
                self._bitgen.state = state
                if words > made:
                    self._bitgen.random_raw(words - made, output=False)
                return


def _index_bits(m: int) -> int:
    """R_unif_index's bit count ceil(log2(m)) (0 for m == 1), in exact integers."""
    return (m - 1).bit_length()


def _candidates(words: np.ndarray, bits: int) -> np.ndarray:
    """rbits(bits) for consecutive attempts, ``bits // 16 + 1`` words each.

    An attempt concatenates the high 16 bits of its words and keeps the low
    ``bits`` bits. int32 when the values fit, else int64.
    """
    per = bits // 16 + 1
    mask = (1 << bits) - 1
    if per == 1:
        return ((words >> 16) & np.uint32(mask)).view(np.int32)
    if per == 2 and bits <= 30:  # values and populations (<= 2**30) fit int32
        value = words[0::2] & np.uint32(0xFFFF0000)
        value |= words[1::2] >> 16
        value &= np.uint32(mask)
        return value.view(np.int32)
    value = np.zeros(words.size // per, dtype=np.uint64)
    for i in range(per):
        value <<= np.uint64(16)
        value |= (words[i::per] >> 16).astype(np.uint64)
    value &= np.uint64(mask)
    return value.view(np.int64)


def _draw_fixed(tap: _WordTap, n: int, count: int) -> np.ndarray:
    """``count`` draws of R_unif_index(n), as with replacement (0-based, int64)."""
    bits = _index_bits(n)
    per = bits // 16 + 1
    rate = n / 2.0**bits  # acceptance rate, above 1/2
    out = np.empty(count, dtype=np.int64)
    done = 0
    while done < count:
        want = count - done
        # A little more than expected; bounded so memory stays O(piece).
        attempts = min(int(want / rate * 1.05) + 16, _WORD_PIECE)
        cand = _candidates(tap.peek(attempts * per), bits)
        ok = cand < n
        good = cand[ok]
        if good.size >= want:
            attempts = int(np.flatnonzero(ok)[want - 1]) + 1
            good = good[:want]
        out[done:done + good.size] = good
        done += good.size
        tap.take(attempts * per)
    return out


def _draw_distinct(tap: _WordTap, n: int, size: int) -> np.ndarray:
    """R's hash path: R_unif_index(n) repeated, values drawn before drawn again.

    Returns the first ``size`` distinct values in draw order (0-based, int64).
    """
    bits = _index_bits(n)
    per = bits // 16 + 1
    rate = n / 2.0**bits
    # Expected draws for `size` distinct values out of n: n * ln(n / (n - size)).
    expected = n * math.log(n / (n - size))
    attempts = int((expected + 6 * math.sqrt(expected) + 16) / rate) + 16
    while True:
        cand = _candidates(tap.peek(attempts * per), bits)
        accepted = np.flatnonzero(cand < n)
        drawn = cand[accepted]
        first = _first_occurrences(drawn, n)
        if first.size >= size:
            break
        attempts += attempts // 4 + 1024
    tap.take((int(accepted[first[size - 1]]) + 1) * per)
    return drawn[first[:size]].astype(np.int64)


def _first_occurrences(values: np.ndarray, n: int) -> np.ndarray:
    """Indices of the first occurrence of each distinct value (in 0..n-1), increasing."""
    if n <= 16 * values.size:
        # Dense enough for a table of first positions (4 bytes per possible value).
        index_type = np.int32 if values.size <= _INT32_MAX else np.int64
        order = np.arange(values.size, dtype=index_type)
        first = np.full(n, values.size, dtype=index_type)
        np.minimum.at(first, values, order)
        return np.flatnonzero(first[values] == order)
    _, first = np.unique(values, return_index=True)
    first.sort()
    return first


def _draw_shrinking(tap: _WordTap, n: int, size: int) -> np.ndarray:
    """The swap-remove draws ``j_s = R_unif_index(n - s)``, s in range(size).

    While the population keeps one bit count every attempt uses the same
    words, so the candidates are known in advance; candidate t is accepted
    iff it is below the population at that moment, which drops by one per
    acceptance. In a block of candidates starting at population m,
    candidate t (0-based) sees a population in [m - t, m]: ``v < m - t`` is
    surely accepted and ``v >= m`` surely rejected. Blocks are sized so that
    few values fall in between; ``_settle`` decides those.
    """
    out = np.empty(size, dtype=np.int32 if n <= _INT32_MAX else np.int64)
    done = 0
    m = n
    while done < size:
        bits = _index_bits(m)
        if bits == 0:  # m == 1: one word, value 0
            tap.take(size - done)
            out[done:] = 0
            break
        per = bits // 16 + 1
        run = min(m - (1 << (bits - 1)), size - done)  # draws left at this bit count
        # Undecided candidates per block: about length**2 / 2**(bits + 1) = 512,
        # nearly all settled by _settle's vectorised rounds.
        block = min(1 << ((bits + 10) // 2), 1 << 17)
        while run > 0:
            length = min(block, 2 * run + 32)
            cand = _candidates(tap.peek(length * per), bits)
            if run <= _SMALL_DRAWS:
                got, used = _accept_loop(cand, m, run)
            else:
                got, used = _accept_block(cand, m, run)
            out[done:done + got.size] = got
            tap.take(used * per)
            done += got.size
            m -= got.size
            run -= got.size
    return out


def _accept_loop(cand: np.ndarray, m: int, want: int):
    """Accepted candidates (at most ``want``) and the number of candidates used."""
    got = []
    used = 0
    for v in cand.tolist():
        used += 1
        if v < m:
            got.append(v)
            m -= 1
            if len(got) == want:
                break
    return np.array(got, dtype=cand.dtype), used


def _accept_block(cand: np.ndarray, m: int, want: int):
    """Like ``_accept_loop``, vectorised (see ``_draw_shrinking``)."""
    sure = cand < _offsets(m, cand.size)
    unsure = np.flatnonzero(~sure & (cand < m))
    if unsure.size:
        sure[unsure[_settle(cand[unsure], np.cumsum(sure[:unsure[-1] + 1])[unsure], m)]] = True
    got = cand[sure]
    if got.size < want:
        return got, cand.size
    return got[:want], int(np.flatnonzero(sure)[want - 1]) + 1


def _settle(values: np.ndarray, sure_before: np.ndarray, m: int) -> np.ndarray:
    """Which undecided candidates are accepted (boolean mask, in their order).

    Candidate i is accepted iff ``values[i] < m - sure_before[i] - (accepted
    undecided candidates before it)``. Bounding that count by the decided
    and the still undecided ones settles nearly all of them in a few
    vectorised rounds; what is left is decided one by one.
    """
    accepted = np.zeros(values.size, dtype=bool)
    open_ = np.ones(values.size, dtype=bool)
    for _ in range(4):
        low = sure_before + (np.cumsum(accepted) - accepted)
        high = low + (np.cumsum(open_) - open_)
        take = open_ & (values < m - high)
        drop = open_ & (values >= m - low)
        if not (take.any() or drop.any()):
            break
        accepted |= take
        open_ &= ~(take | drop)
        if not open_.any():
            return accepted
    before = 0
    for i, (v, s, undecided) in enumerate(zip(values.tolist(), sure_before.tolist(), open_.tolist())):
        if undecided:
            accepted[i] = v < m - s - before
        before += bool(accepted[i])
    return accepted


_COUNTING = {}  # dtype -> arange, grown to the longest block seen (<= 2**17)


def _offsets(m: int, length: int) -> np.ndarray:
    """``m - arange(length)``: the lowest population candidate t can see."""
    dtype = np.int32 if m <= _INT32_MAX else np.int64
    base = _COUNTING.get(dtype)
    if base is None or base.size < length:
        base = _COUNTING[dtype] = np.arange(length, dtype=dtype)
    return m - base[:length]


def _swap_remove(draws: np.ndarray, n: int, compact: bool = False) -> np.ndarray:
    """R's ``out = x[j]; x[j] = x[m - 1]; m -= 1`` loop: 0-based values, int64.

    ``compact``: the values in ``draws``' own buffer and dtype (int32 when
    ``n < 2**31``), overwriting the draws: no int64 copy.
    """
    if draws.size <= _SMALL_REPLAY:
        # Few steps: a dict holds the slots written so far, whatever n is.
        _, out = _replay_steps({}, draws, n, draws, np.arange(n - draws.size, n)[::-1])
        return np.array(out, dtype=np.int64)
    return _swap_remove_chunked(draws, n, out=draws if compact else None)


def _swap_remove_chunked(draws: np.ndarray, n: int, out=None) -> np.ndarray:
    """``_swap_remove`` in chunks of steps run as whole-array operations.

    In a chunk of C steps starting at population m the top slots are
    ``[m - C, m)``. A step is clean when no other step of the chunk hits its
    slot j, j is below ``m - C`` and no step hits its top slot: it then reads
    x[j] and x[top] as they were when the chunk began, and nobody in the
    chunk reads what it writes. The other steps (about 2 C**2 / m per chunk)
    are replayed one by one in time order.
    """
    size = draws.size
    x = np.arange(n, dtype=draws.dtype)
    # out=draws: the values overwrite the draws as each chunk finishes with
    # them (they are below n, so they fit draws' dtype).
    in_place = out is draws
    if out is None:
        out = np.empty(size, dtype=np.int64)
    numbers = np.arange(min(size, 1 << 16), dtype=draws.dtype)
    start = 0
    while start < size:
        m = n - start
        chunk = min(size - start, max(256, int(_CHUNK_FACTOR * math.sqrt(m))), numbers.size)
        low = m - chunk  # the chunk's top slots are low..m-1
        j = draws[start:start + chunk]
        if in_place:
            j = j.copy()  # out[start:...] below overwrites these draws
        before_j = x[j]  # the only random reads
        before_top = x[low:m][::-1].copy()  # x[top] when the chunk begins, in step order
        # Which steps share a slot: write step numbers, read back the winners.
        stamps = numbers[:chunk]
        x[j] = stamps
        winner = x[j]
        x[j] = before_top
        out[start:start + chunk] = before_j
        repeated = np.flatnonzero(winner != stamps)
        in_top = np.flatnonzero(j >= low)
        if repeated.size or in_top.size:
            dirty = np.unique(np.concatenate((
                repeated, winner[repeated], in_top, (m - 1) - j[in_top],
            )))
            written, values = _replay_steps(
                {}, j[dirty], m, before_j[dirty], before_top[dirty], dirty,
            )
            out[start + dirty] = values
            x[list(written)] = list(written.values())
        start += chunk
    return out


def _replay_steps(written, slots, m, reads, tops, steps=None):
    """Replay steps one by one (time order) over a dict of rewritten slots.

    ``reads``/``tops`` give x[j] and x[top] as they were before the first
    step, for slots not in ``written``; ``steps`` are the steps' offsets
    from the population ``m`` (default 0, 1, 2, ...). Returns the dict and
    the values read.
    """
    slots = slots.tolist()
    reads = reads.tolist()
    tops = tops.tolist()
    steps = range(len(slots)) if steps is None else steps.tolist()
    out = []
    for step, slot, read, top in zip(steps, slots, reads, tops):
        out.append(written.get(slot, read))
        written[slot] = written.get(m - 1 - step, top)
    return written, out
