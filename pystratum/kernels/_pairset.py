"""Compiled membership tests for ``_pairset.PairSet`` (optional: needs numba).

The same three levels as the numpy path (user words, the 16-bit filter,
the bucketed sorted hashes), with the same hashes and tables, so the
answers are identical: both paths are exact. What compiling buys is fusion:
numpy pays a full pass over the queries for every step, this pays one loop.

Uncached reads must not wait on one another: the users' words are
prefetched a few positives ahead, and the filter words of the queries that
pass them are read in a tight loop of independent loads (many in flight at
once) before the branches that depend on them. A loop that read a word and
branched on it right away would pay the whole memory latency for every
query, one query after another (figures: benchmarks/results_focused.md).
"""

from __future__ import annotations

import numba
import numpy as np

from ._tools import prefetch as _prefetch

_MULTIPLIER = np.uint64(0x9E3779B97F4A7C15)
_CHUNK = 4096
# Positives ahead whose user word is prefetched.
_AHEAD = 16


@numba.njit(nogil=True, boundscheck=False, cache=True, inline="always")
def _word_index(user, user_shift, last):
    """The user's word: the user itself (``user_shift`` 0; users past the table, who
    observed nothing, read the last word: a filter may pass absent pairs, never miss
    one), else its hash's top bits."""
    if user_shift == 0:
        return min(user, last)
    return np.int64((np.uint64(user) * _MULTIPLIER) >> user_shift)


@numba.njit(nogil=True, boundscheck=False, cache=True)
def _finish(queries, hashed, count, hits, found, filt, filter_shift, masks16, hashes, offsets,
            bucket_shift, words):
    """Filter then buckets for ``queries[:count]`` (their hashes in ``hashed``): appends the
    slots found to ``hits[found:]`` in order and returns the new ``found``."""
    low = np.uint64(255)
    eight = np.uint64(8)
    for c in range(count):
        words[c] = filt[np.int64((hashed[c] >> filter_shift) >> eight)]
    for c in range(count):
        mask = masks16[np.int64((hashed[c] >> filter_shift) & low)]
        if (words[c] & mask) != mask:
            continue
        h = hashed[c]
        bucket = np.int64(h >> bucket_shift)
        for q in range(offsets[bucket], offsets[bucket + 1]):
            if hashes[q] == h:
                hits[found] = queries[c]
                found += 1
                break
    return found


@numba.njit(nogil=True, boundscheck=False, cache=True)
def members(keys, hits, filt, filter_shift, masks16, hashes, offsets, bucket_shift):
    """Writes the positions i with keys[i] in the set to ``hits`` (ascending); returns their count."""
    n = keys.shape[0]
    queries = np.empty(_CHUNK, np.int64)
    hashed = np.empty(_CHUNK, np.uint64)
    words = np.empty(_CHUNK, np.uint16)
    found = 0
    for start in range(0, n, _CHUNK):
        stop = min(n, start + _CHUNK)
        for i in range(start, stop):
            queries[i - start] = i
            hashed[i - start] = np.uint64(keys[i]) * _MULTIPLIER
        found = _finish(queries, hashed, stop - start, hits, found, filt, filter_shift, masks16,
                        hashes, offsets, bucket_shift, words)
    return found


@numba.njit(nogil=True, boundscheck=False, cache=True)
def members_grouped(users, items, out, k, num_items, user_words, user_shift, masks64, mask_shift,
                    hits, filt, filter_shift, masks16, hashes, offsets, bucket_shift):
    """Writes the slots r = j*k + t with (users[j], items[r]) in the set to ``hits``
    (ascending); returns their count. Copies ``items`` (any integer dtype) to ``out``
    (int64) on the way: the batch's column, without a pass of its own."""
    n = users.shape[0]
    chunk = max(1, _CHUNK // k)
    queries = np.empty(chunk * k, np.int64)
    hashed = np.empty(chunk * k, np.uint64)
    words = np.empty(chunk * k, np.uint16)
    last = user_words.shape[0] - 1
    for j in range(min(n, _AHEAD)):  # the loop prefetches _AHEAD on: start it warm
        _prefetch(user_words, _word_index(users[j], user_shift, last))
    found = 0
    for start in range(0, n, chunk):
        stop = min(n, start + chunk)
        # Items whose two bits are set in their user's word go on (about 7% of
        # draws: a branch beats a branch-free append of every draw). The word
        # of the user _AHEAD positives on is prefetched: a plain load would
        # stall the loop on every user's uncached word.
        count = 0
        for j in range(start, stop):
            if j + _AHEAD < n:
                _prefetch(user_words, _word_index(users[j + _AHEAD], user_shift, last))
            word = user_words[_word_index(users[j], user_shift, last)]
            for r in range(j * k, j * k + k):
                item = np.int64(items[r])
                out[r] = item
                mask = masks64[np.int64((np.uint64(item) * _MULTIPLIER) >> mask_shift)]
                if (word & mask) == mask:
                    queries[count] = r
                    hashed[count] = np.uint64(users[j] * num_items + item) * _MULTIPLIER
                    count += 1
        found = _finish(queries, hashed, count, hits, found, filt, filter_shift, masks16, hashes,
                        offsets, bucket_shift, words)
    return found
