"""A set of non-negative int64 keys with vectorised membership (pure numpy).

Observed (user, item) pairs become keys ``user * num_items + item``; every
generated negative is checked against them, so a lookup is paid once per
negative and almost always answers "absent". Both levels hash a key with
Fibonacci hashing, ``h = key * 2^64/phi`` (mod 2^64), and use its top bits:

1. A filter of 16-bit words with about 24 bits per key (2^24 words, 32
   MiB, for 10^7 keys): the top bits of ``h`` choose a word, the next 8 bits
   one of 256 masks with two bits set, and a key sets its mask's bits in its
   word. A query whose two bits are not both set is certainly absent; about
   1% of absent queries pass (one bit per key would pass 4%). Testing is
   one read in a table a fifth the size of the observed pairs, with no
   probe loop.
2. The distinct hashes, sorted, with the offset of each bucket (top bits of
   h, about 2.4 hashes per bucket): the queries the filter passes are
   compared against their bucket's few hashes. ``h`` is a bijection of the
   key (the multiplier is odd), so equal hashes mean equal keys.

For 4 * 10^6 queries among 10^7 keys this takes about half the CPU time of
the open-addressing table it replaces (which probed every query), in 140
MiB instead of 256 MiB (``benchmarks/bench_negatives.py``; ``searchsorted``
on sorted keys is about 20 times slower still).
"""

from __future__ import annotations

import numpy as np

__all__ = ["PairSet"]

# Fibonacci hashing: the top bits of key * 2^64/phi spread consecutive keys.
_MULTIPLIER = np.uint64(0x9E3779B97F4A7C15)
# Queries are filtered a chunk at a time so the working arrays stay in cache.
_CHUNK = 1 << 15
_BUILD_CHUNK = 1 << 20
# Candidates compared a block at a time: block * window width stays below this.
_WINDOW_ELEMENTS = 1 << 18
# Filter bits per key (rounded up to a power of two of 16-bit words).
_FILTER_BITS_PER_KEY = 24
_FILTER_MAX_WORD_BITS = 30
_MASK_BITS = 8
# Distinct hashes per bucket on average are between 2 and 4.
_KEYS_PER_BUCKET = 4

def _two_bit_masks() -> np.ndarray:
    """256 masks of a 16-bit word, each with two distinct bits set."""
    index = np.arange(1 << _MASK_BITS)
    first, second = index & 15, (index >> 4) & 15
    second = np.where(second == first, (first + 1) & 15, second)
    return ((1 << first) | (1 << second)).astype(np.uint16)


_MASKS = _two_bit_masks()


class PairSet:
    """The distinct keys of ``keys`` (non-negative int64), with ``contains(queries)``.

    ``len(set)`` is the number of distinct keys, so ``keys.size - len(set)``
    counts duplicates. ``contains`` is exact: the filter only decides which
    queries need a bucket comparison.
    """

    def __init__(self, keys: np.ndarray):
        keys = np.asarray(keys, dtype=np.int64)
        hashed = keys.view(np.uint64) * _MULTIPLIER
        hashed.sort()
        if hashed.size > 1:
            distinct = np.empty(hashed.size, dtype=bool)
            distinct[0] = True
            np.not_equal(hashed[1:], hashed[:-1], out=distinct[1:])
            if not distinct.all():
                hashed = hashed[distinct]
            del distinct
        self._size = int(hashed.size)
        size = max(self._size, 1)

        bucket_bits = max(1, (size // _KEYS_PER_BUCKET).bit_length())
        self._bucket_shift = np.uint64(64 - bucket_bits)
        counts = np.bincount((hashed >> self._bucket_shift).view(np.int64),
                             minlength=1 << bucket_bits)
        self._offsets = np.zeros((1 << bucket_bits) + 1, dtype=np.int64)
        np.cumsum(counts, out=self._offsets[1:])
        widest = int(counts.max())
        del counts
        # Padded (with zeros) by the widest bucket, in place: no second copy.
        hashed.resize(self._size + widest, refcheck=False)
        self._hashes = hashed

        word_bits = min(_FILTER_MAX_WORD_BITS,
                        max(2, (_FILTER_BITS_PER_KEY * size // 16).bit_length()))
        # Top word_bits bits of h: the word; the next _MASK_BITS bits: the mask.
        self._filter_shift = np.uint64(64 - word_bits - _MASK_BITS)
        self._filter = np.zeros(1 << word_bits, dtype=np.uint16)
        for start in range(0, self._size, _BUILD_CHUNK):
            position = hashed[start:min(self._size, start + _BUILD_CHUNK)] >> self._filter_shift
            mask = _MASKS[(position & np.uint64((1 << _MASK_BITS) - 1)).view(np.int64)]
            word = (position >> np.uint64(_MASK_BITS)).view(np.int64)
            # One pass per bit of a word: within a pass every write to a word
            # sets the same bit, so repeated words cannot lose a write (which
            # they could in one buffered ``|=`` of different masks).
            for b in range(16):
                bit = np.uint16(1 << b)
                self._filter[word[(mask & bit) != 0]] |= bit

    def __len__(self) -> int:
        return self._size

    @property
    def nbytes(self) -> int:
        return int(self._hashes.nbytes + self._offsets.nbytes + self._filter.nbytes)

    def contains(self, queries: np.ndarray) -> np.ndarray:
        """Boolean array: which queries (non-negative int64) are in the set."""
        queries = np.ascontiguousarray(queries, dtype=np.int64)
        out = self._filter_pass(queries)
        candidates = np.flatnonzero(out)
        if candidates.size:
            out[candidates] = self._bucket_contains(queries[candidates])
        return out

    def _filter_pass(self, queries: np.ndarray) -> np.ndarray:
        """False where a query is certainly absent (a bit of its mask is clear)."""
        count = queries.shape[0]
        out = np.empty(count, dtype=bool)
        width = min(count, _CHUNK)
        # Scratch buffers reused across chunks: no allocation per chunk.
        position = np.empty(width, dtype=np.uint64)
        scratch = np.empty(width, dtype=np.uint64)
        word = np.empty(width, dtype=np.uint16)
        mask = np.empty(width, dtype=np.uint16)
        low = np.uint64((1 << _MASK_BITS) - 1)
        for start in range(0, count, _CHUNK):
            chunk = queries[start:start + _CHUNK]
            n = chunk.shape[0]
            p, s, w, m = position[:n], scratch[:n], word[:n], mask[:n]
            np.multiply(chunk.view(np.uint64), _MULTIPLIER, out=p)
            np.right_shift(p, self._filter_shift, out=p)
            np.right_shift(p, np.uint64(_MASK_BITS), out=s)
            np.take(self._filter, s.view(np.int64), out=w)
            np.bitwise_and(p, low, out=s)
            np.take(_MASKS, s.view(np.int64), out=m)
            np.bitwise_and(w, m, out=w)
            np.equal(w, m, out=out[start:start + n])
        return out

    def _bucket_contains(self, queries: np.ndarray) -> np.ndarray:
        """Exact membership: each query against every hash of its bucket at once.

        The filter passes few queries (about 1% of absent ones), so comparing
        a window as wide as the widest bucket among them costs little and
        takes a fixed handful of numpy calls (a lane-by-lane loop would take
        a dozen passes, which dominates small batches).
        """
        out = np.zeros(queries.shape[0], dtype=bool)
        hashed = queries.view(np.uint64) * _MULTIPLIER
        bucket = (hashed >> self._bucket_shift).view(np.int64)
        first = self._offsets[bucket]
        count = self._offsets[bucket + 1] - first
        width = int(count.max()) if count.size else 0
        if not width:
            return out
        lanes = np.arange(width, dtype=np.int64)
        block = max(1, _WINDOW_ELEMENTS // width)
        for start in range(0, queries.shape[0], block):
            stop = start + block
            # The hashes are padded by the widest bucket: no window reads past the end.
            window = self._hashes[first[start:stop, None] + lanes]
            hit = window == hashed[start:stop, None]
            hit &= lanes < count[start:stop, None]
            out[start:stop] = hit.any(axis=1)
        return out
