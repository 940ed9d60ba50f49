"""A set of non-negative int64 keys with exact, vectorised membership.

Observed (user, item) pairs become keys ``user * num_items + item``; every
generated negative is checked against them, so a lookup is paid once per
negative and almost always answers "absent". All levels hash with
Fibonacci hashing, ``h = x * 2^64/phi`` (mod 2^64), and use its top bits:

0. (Grouped queries, built when ``num_items`` is given.) One 64-bit word per
   user (at most about one word per 4 keys): indexed by the user itself
   when the table has room for every user, else by a hash of the user.
   Each observed pair sets two bits of its user's word, chosen by its
   item's hash. A batch's negatives come k per positive with the
   positive's user, so the word is read once for k items; an item whose
   two bits are not both set is certainly not observed by that user, and
   most draws end there (fewer when users are hashed, since some share a
   word). This matters because a read at a random place of a structure
   larger than the cache, not the draw, is what a check costs, and the
   word is read once per positive instead of once per draw.
1. A filter of 16-bit words with about 24 bits per key (a power of two of
   words): the top bits of ``h`` choose a word, the next 8 bits one of 256
   masks with two bits set, and a key sets its mask's bits in its word. A
   query whose two bits are not both set is certainly absent; only a small
   share of absent queries pass.
2. The distinct hashes, sorted, with the offset of each bucket (top bits of
   h, between 2 and 4 hashes per bucket on average): the queries the
   filters pass are compared against their bucket's few hashes. ``h`` is a
   bijection of the key (the multiplier is odd), so equal hashes mean equal
   keys.

Every answer is exact, so which structure or code path answers cannot
change a sampled batch. With numba installed (the ``fast`` extra) the
queries go through compiled loops (``pystratum.kernels._pairset``) over the same
tables; ``PYSTRATUM_NUMBA=0`` keeps numpy. Figures (memory, share of draws
each level settles, cost against a bare draw): ``benchmarks/results_focused.md``.
"""

from __future__ import annotations

import numpy as np

from .. import kernels as kernel_gate

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
# User words: about one per user (a power of two), at most one per 4 keys. Twice as
# many (fewer users sharing a word) measured no faster.
_USER_WORDS_PER_USER = 1
_KEYS_PER_USER_WORD = 4
# Grouped queries: positives per chunk (the chunk's arrays stay in cache).
_GROUP_CHUNK = 1 << 13
# Top 12 bits of item * multiplier: which two bits of the user's word.
_ITEM_MASK_SHIFT = np.uint64(52)

def _two_bit_masks() -> np.ndarray:
    """256 masks of a 16-bit word, each with two distinct bits set."""
    index = np.arange(1 << _MASK_BITS)
    first, second = index & 15, (index >> 4) & 15
    second = np.where(second == first, (first + 1) & 15, second)
    return ((1 << first) | (1 << second)).astype(np.uint16)


_MASKS = _two_bit_masks()


def _two_bit_masks_64() -> np.ndarray:
    """4096 masks of a 64-bit word, each with two distinct bits set."""
    index = np.arange(1 << 12)
    first, second = index >> 6, index & 63
    second = np.where(second == first, (first + 1) & 63, second)
    one = np.uint64(1)
    return (np.left_shift(one, first.astype(np.uint64))
            | np.left_shift(one, second.astype(np.uint64))).astype(np.uint64)


_MASKS_64 = _two_bit_masks_64()

def _use_compiled(accelerated):
    """None: the gate's choice (:mod:`pystratum.kernels`); True: the kernels, whatever the environment."""
    if accelerated is None:
        return kernel_gate.compiled("pairset")
    if not accelerated:
        return None
    try:
        from ..kernels import _pairset as _pairset_numba
    except ImportError as error:
        raise ImportError(f"the compiled membership test needs numba ({error}): pip install "
                          f"numba, or the 'fast' extra.") from None
    return _pairset_numba


class PairSet:
    """The distinct keys of ``keys`` (non-negative int64), with ``contains(queries)``.

    ``len(set)`` is the number of distinct keys, so ``keys.size - len(set)``
    counts duplicates. ``contains`` is exact: the filters only decide which
    queries need a bucket comparison. With ``num_items`` (keys are
    ``user * num_items + item``) the set also answers grouped queries,
    ``contains_grouped(users, items)``, through one word per user.
    """

    def __init__(self, keys: np.ndarray, num_items: int | None = None):
        keys = np.asarray(keys, dtype=np.int64)
        self._num_items = None if num_items is None else int(num_items)
        if self._num_items is not None:
            self._build_user_words(keys)
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

    def _build_user_words(self, keys: np.ndarray) -> None:
        """One 64-bit word per user, two bits per key chosen by its item's hash.

        A grouped query reads its user's word once for all its items (one
        uncached read per user instead of one per item); an item whose bit
        is clear is certainly not observed by that user. Users index the
        words directly when the table has room for every user (no two users
        share a word: 7.5% of draws pass instead of 11% with users hashed
        into the same number of words); otherwise users are hashed.
        """
        num_items = self._num_items
        num_users = int(keys.max()) // num_items + 1 if keys.size else 1
        words = min(int(_USER_WORDS_PER_USER * num_users), max(1, keys.size // _KEYS_PER_USER_WORD))
        word_bits = max(1, (max(words, 2) - 1).bit_length())
        if num_users <= 1 << word_bits:
            self._user_shift = np.uint64(0)  # 0: the user is the word's index
            self._user_words = np.zeros(num_users, dtype=np.uint64)
        else:
            self._user_shift = np.uint64(64 - word_bits)
            self._user_words = np.zeros(1 << word_bits, dtype=np.uint64)
        for start in range(0, keys.size, _BUILD_CHUNK):
            chunk = keys[start:start + _BUILD_CHUNK]
            word = self._user_word_index(chunk // num_items)
            mask = _MASKS_64[self._item_mask_index(chunk % num_items)]
            # One pass per bit: repeated words in one buffered |= could lose writes.
            for b in range(64):
                bit = np.uint64(1 << b)
                self._user_words[word[(mask & bit) != 0]] |= bit

    def _user_word_index(self, users: np.ndarray) -> np.ndarray:
        if not self._user_shift:
            # Users past the table observed nothing: reading the last word may pass
            # their absent pairs to the exact levels, never miss a present one.
            return np.minimum(users, self._user_words.shape[0] - 1)
        hashed = np.multiply(users.view(np.uint64), _MULTIPLIER)
        np.right_shift(hashed, self._user_shift, out=hashed)
        return hashed.view(np.int64)

    @staticmethod
    def _item_mask_index(items: np.ndarray) -> np.ndarray:
        hashed = np.multiply(items.view(np.uint64), _MULTIPLIER)
        np.right_shift(hashed, _ITEM_MASK_SHIFT, out=hashed)
        return hashed.view(np.int64)

    def __len__(self) -> int:
        return self._size

    @property
    def nbytes(self) -> int:
        words = 0 if self._num_items is None else self._user_words.nbytes
        return int(self._hashes.nbytes + self._offsets.nbytes + self._filter.nbytes + words)

    def contains(self, queries: np.ndarray, accelerated=None) -> np.ndarray:
        """Boolean array: which queries (non-negative int64) are in the set.

        ``accelerated``: None uses the compiled kernels when numba is
        available; True requires them; False uses numpy. Same answers.
        """
        out = np.zeros(np.shape(queries)[0], dtype=bool)
        out[self.members(queries, accelerated)] = True
        return out

    def members(self, queries: np.ndarray, accelerated=None) -> np.ndarray:
        """Positions (ascending, int64) of the queries that are in the set."""
        queries = np.ascontiguousarray(queries, dtype=np.int64)
        kernels = _use_compiled(accelerated)
        if kernels is not None:
            hits = np.empty(queries.shape[0], dtype=np.int64)
            found = kernels.members(queries, hits, self._filter, self._filter_shift, _MASKS,
                                    self._hashes, self._offsets, self._bucket_shift)
            return hits[:found].copy()
        candidates = np.flatnonzero(self._filter_pass(queries))
        if candidates.size:
            candidates = candidates[self._bucket_contains(queries[candidates])]
        return candidates

    def contains_grouped(self, users: np.ndarray, items: np.ndarray,
                         accelerated=None) -> np.ndarray:
        """Boolean array: which pairs ``(users[j], items[j*k + t])`` are in the set.

        See :meth:`members_grouped`.
        """
        out = np.zeros(np.shape(items)[0], dtype=bool)
        out[self.members_grouped(users, items, accelerated)] = True
        return out

    def members_grouped(self, users: np.ndarray, items: np.ndarray,
                        accelerated=None, out=None) -> np.ndarray:
        """Slots ``r = j*k + t`` (ascending, int64) where ``(users[j], items[r])`` is in the set.

        ``items`` holds k items per entry of ``users`` (``k = items.size //
        users.size``), the layout of a batch's negatives. The answer is the
        same as ``members(repeat(users, k) * num_items + items)``; each
        user's word is read once for its k items, so only the items whose
        two bits are set in it (about (1 - exp(-2 n_u / 64))^2 of them for a
        user with n_u observed items, more for users sharing its word) go on
        to the filter and the buckets.

        ``out`` (optional, a contiguous int64 array of ``items``' length)
        receives a copy of ``items``, which may then be of any integer dtype:
        the compiled check writes it as it reads them, so the batch's column
        costs no pass of its own.
        """
        if self._num_items is None:
            raise ValueError("members_grouped needs a PairSet built with num_items.")
        users = np.ascontiguousarray(users, dtype=np.int64)
        if out is None:
            items = out = np.ascontiguousarray(items, dtype=np.int64)
        else:
            items = np.ascontiguousarray(items)
            if items.dtype.kind not in "iu" or out.dtype != np.int64 or \
                    not out.flags.c_contiguous or out.shape != items.shape:
                raise ValueError("out must be a contiguous int64 array of items' shape, and "
                                 "items integers.")
        n = users.shape[0]
        k = items.shape[0] // n if n else 0
        if n * k != items.shape[0]:
            raise ValueError(f"items must hold k items per user, got {items.shape[0]} items for "
                             f"{n} users.")
        kernels = _use_compiled(accelerated)
        if kernels is not None:
            hits = np.empty(n * k, dtype=np.int64)
            found = 0
            if n:
                found = kernels.members_grouped(
                    users, items, out, k, self._num_items, self._user_words, self._user_shift,
                    _MASKS_64, _ITEM_MASK_SHIFT, hits, self._filter, self._filter_shift, _MASKS,
                    self._hashes, self._offsets, self._bucket_shift)
            return hits[:found].copy()
        if out is not items:
            np.copyto(out, items)
            items = out
        out = np.empty(n * k, dtype=bool)
        width = min(n, _GROUP_CHUNK)
        mask = np.empty((width, k), dtype=np.uint64)
        hit = np.empty((width, k), dtype=np.uint64)
        for start in range(0, n, _GROUP_CHUNK):
            chunk = users[start:start + _GROUP_CHUNK]
            c = chunk.shape[0]
            word = np.take(self._user_words, self._user_word_index(chunk))
            m, h = mask[:c], hit[:c]
            np.multiply(items[start * k:(start + c) * k].reshape(c, k).view(np.uint64),
                        _MULTIPLIER, out=h)
            np.right_shift(h, _ITEM_MASK_SHIFT, out=h)
            np.take(_MASKS_64, h.view(np.int64), out=m)
            np.bitwise_and(m, word[:, None], out=h)
            np.equal(h, m, out=out[start * k:(start + c) * k].reshape(c, k))
        candidates = np.flatnonzero(out)
        if candidates.size:
            keys = users[candidates // k] * self._num_items
            keys += items[candidates]
            candidates = candidates[self.members(keys, accelerated=False)]
        return candidates

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
