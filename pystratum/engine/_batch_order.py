"""The split-safe order inside a batch (``batch_order="split_safe"``).

A batch's rows are interleaved by stratum so that cutting it into ``g``
equal contiguous chunks (``nn.DataParallel``, accelerate's
``split_batches=True``, micro-batches, gradient accumulation) gives every
chunk ``floor`` or ``ceil`` of ``c_s / g`` rows of each stratum ``s`` (``c_s``:
its rows in the batch).

Construction, for a batch of ``n`` rows: the *chain* is ``n``'s prime
factors, the 2s first, then the others in increasing order
(``n = 24``: 2, 2, 2, 3). The batch is cut into ``p1`` parts of equal size,
each stratum giving ``c_s // p1`` rows to every part; the remainders
(``c_s mod p1`` rows per stratum) are laid out one after the other, strata in
batch order, and remainder unit ``u`` goes to part ``u mod p1`` (no stratum
gives a part two of them, every part gets the same number). Each part is
cut the same way by ``p2``, and so on. Inside a leaf the strata come in
batch order. Guarantee: every ``g`` in ``p1, p1 p2, p1 p2 p3, ..., n`` (for
``n = 24``: 2, 4, 8, 24) gives every chunk ``floor``/``ceil`` of ``c_s / g``
rows of every stratum (floor of floor and ceil of ceil of nested divisions
are the floor and ceil of the product). Other divisors of ``n`` (``n = 24,
g = 3``) get this construction as a best effort, without a guarantee:
"every prefix balanced" orders are not enough either (counts (4, 3, 3),
``n = 10``, ``g = 5`` has no such order from prefixes alone).

The order depends only on the batch's counts (strata in batch order), not
on the rows: a stratum's ``k``-th row in the assembled order takes the
stratum's ``k``-th place, so within a stratum rows keep the (random, from the
seed) order the assembly gives them and no random number is drawn. R's
``split_safe_places()`` (``r/R/batch_order.R``) computes the same places.
"""

from __future__ import annotations

import numpy as np

from .. import kernels as kernel_gate

__all__ = ["permute_columns", "place_split_safe", "reorder_split_safe", "split_chain",
           "split_safe_labels", "split_safe_labels_many", "split_safe_places", "BatchPatterns"]

def split_chain(n: int) -> list:
    """The prime factors of ``n``, the 2s first, then the others increasing (``[]`` for 1)."""
    chain, rest, p = [], int(n), 2
    while rest > 1 and p * p <= rest:
        while rest % p == 0:
            chain.append(p)
            rest //= p
        p += 1 if p == 2 else 2
    if rest > 1:
        chain.append(rest)
    return chain


def split_safe_labels(counts) -> np.ndarray:
    """The stratum (index into ``counts``) at every place of a batch with these counts.

    ``counts``: rows of each stratum in the batch, strata in batch order.
    See the module docstring for the construction and its guarantee.
    """
    return split_safe_labels_many(np.asarray(counts, dtype=np.int64)[None, :])[0]


def split_safe_labels_many(counts) -> tuple:
    """:func:`split_safe_labels` and :func:`split_safe_places` of every row of ``counts``
    (``(U, S)``) at once.

    Returns ``(labels, places, start)``: row ``u``'s labels are
    ``labels[start[u]:start[u] + counts[u].sum()]``, its places the same
    slice of ``places``. The same construction,
    run for all rows of one batch size together (entries keyed by (row,
    part)), so an epoch whose batches have thousands of distinct count
    vectors (``MultiLabel``, ``MinPerStratum`` with many strata) costs a few
    vector passes per prime factor instead of a Python loop per batch.
    """
    counts = np.asarray(counts, dtype=np.int64)
    totals = counts.sum(axis=1)
    start = np.zeros(counts.shape[0], dtype=np.int64)
    np.cumsum(totals[:-1], out=start[1:])
    labels = np.empty(int(totals.sum()), dtype=np.int64)
    kernels = kernel_gate.compiled_for("assemble", labels.shape[0])
    if kernels is not None:
        places = np.empty_like(labels)
        kernels.split_safe_labels_rows(np.ascontiguousarray(counts), start, labels, places)
        return labels, places, start
    for n in np.unique(totals).tolist():
        if n == 0:
            continue
        rows = np.flatnonzero(totals == n)
        row, stratum = np.nonzero(counts[rows])    # row-major: by row, then stratum
        count = counts[rows][row, stratum]
        group = row.astype(np.int64)               # row * (parts so far) + part
        for p in split_chain(n):
            quotient, remainder = np.divmod(count, p)
            new_group = np.r_[True, group[1:] != group[:-1]]
            running = np.cumsum(remainder) - remainder
            unit = running - np.maximum.accumulate(np.where(new_group, running, 0))
            child = np.arange(p, dtype=np.int64)
            extra = ((child[None, :] - unit[:, None]) % p) < remainder[:, None]
            child_count = (quotient[:, None] + extra).reshape(-1)
            child_group = (group[:, None] * p + child[None, :]).reshape(-1)
            keep = child_count > 0
            # Stable: strata stay in order within a (row, part); the keys come
            # nearly sorted (runs per group), which timsort takes in about one pass.
            order = np.argsort(child_group[keep], kind="stable")
            group = child_group[keep][order]
            stratum = np.repeat(stratum, p)[keep][order]
            count = child_count[keep][order]
        at = (start[rows][:, None] + np.arange(n, dtype=np.int64)[None, :]).reshape(-1)
        labels[at] = np.repeat(stratum, count)
    # Each row's places: a stable sort of its labels, all rows at once.
    row = np.repeat(np.arange(counts.shape[0], dtype=np.int64), totals)
    places = np.argsort(row * max(counts.shape[1], 1) + labels, kind="stable")
    places -= np.repeat(start, totals)
    return labels, places, start


def split_safe_places(counts) -> np.ndarray:
    """Place in the batch of each row of the by-stratum order (strata in batch order).

    Row ``offset_s + k`` (the ``k``-th row of stratum ``s``) goes to the
    ``k``-th place holding ``s`` in :func:`split_safe_labels`.
    """
    return split_safe_labels_many(np.asarray(counts, dtype=np.int64)[None, :])[1]


class BatchPatterns:
    """The split-safe places of every batch of an epoch, one pattern per distinct count vector.

    ``counts``: ``(S, B)`` rows of each stratum in each batch, strata in batch
    order (rows of the table). ``flat[start[b] + j]`` is the place in batch
    ``b`` of its ``j``-th row in by-stratum order; ``labels`` the same for the
    stratum at each place.
    """

    def __init__(self, counts):
        counts = np.asarray(counts, dtype=np.int64)
        n_batches = counts.shape[1]
        if n_batches == 0:
            self.flat = self.labels = np.zeros(0, dtype=np.int64)
            self.start = np.zeros(0, dtype=np.int64)
            self.unique = np.zeros((0, counts.shape[0]), dtype=np.int64)
            self.which = np.zeros(0, dtype=np.int64)
            return
        unique, which = _distinct_rows(counts.T)
        labels, places, pattern_start = split_safe_labels_many(unique)
        self.unique = unique
        self.which = np.asarray(which, dtype=np.int64).reshape(-1)
        self.flat = places
        self.labels = labels
        self.start = pattern_start[self.which]

    def positions(self, bounds) -> np.ndarray:
        """Output position of every row of the by-stratum order (batches one after the other)."""
        sizes = np.diff(bounds)
        within = np.arange(int(bounds[-1] - bounds[0]), dtype=np.int64)
        within -= np.repeat(bounds[:-1] - bounds[0], sizes)
        return np.repeat(bounds[:-1], sizes) + self.flat[np.repeat(self.start, sizes) + within]

    def stratum_at(self, bounds) -> np.ndarray:
        """The stratum (row of ``counts``) at every output position."""
        if self.unique.shape[0] == 1:
            return np.tile(self.labels, self.which.shape[0])
        sizes = np.diff(bounds)
        within = np.arange(int(bounds[-1] - bounds[0]), dtype=np.int64)
        within -= np.repeat(bounds[:-1] - bounds[0], sizes)
        return self.labels[np.repeat(self.start, sizes) + within]


def _distinct_rows(rows):
    """``(unique, which)`` as ``np.unique(rows, axis=0, return_inverse=True)``, fast when few.

    Batches of one epoch mostly share one or two count vectors: one is
    checked at once, a few are found by comparing with the first row still
    unmatched; beyond a few, ``np.unique`` takes the rest.
    """
    if rows.shape[0] and (rows == rows[:1]).all():
        return np.array(rows[:1], dtype=np.int64), np.zeros(rows.shape[0], dtype=np.int64)
    which = np.full(rows.shape[0], -1, dtype=np.int64)
    found = []
    for _ in range(4):
        left = np.flatnonzero(which < 0)
        if left.shape[0] == 0:
            break
        row = rows[left[0]]
        hit = left[(rows[left] == row).all(axis=1)]
        which[hit] = len(found)
        found.append(row)
    left = np.flatnonzero(which < 0)
    if left.shape[0]:
        rest, inverse = np.unique(rows[left], axis=0, return_inverse=True)
        which[left] = len(found) + np.asarray(inverse).reshape(-1)
        found.extend(rest)
    return np.array(found, dtype=np.int64).reshape(len(found), rows.shape[1]), which


def place_split_safe(order, bounds, counts) -> np.ndarray:
    """``order`` (batches stratum by stratum, ``counts`` ``(S, B)``) in the split-safe order.

    ``order`` is consumed: when every batch has the same counts the result
    is ``order`` itself, permuted in place (:func:`permute_columns`).
    """
    patterns = BatchPatterns(counts)
    if patterns.unique.shape[0] == 1:
        permute_columns(order, patterns.flat)
        return order
    out = np.empty_like(order)
    out[patterns.positions(bounds)] = order
    return out


# Batches permuted per step of :func:`permute_columns`: about this many rows,
# so the step's rows stay in cache between the gather and the copy back.
_PERMUTE_ROWS = 1 << 14


def permute_columns(order, places) -> None:
    """``order`` seen as batches of ``len(places)`` rows: row ``j`` of each moves to ``places[j]``.

    In place, a few batches at a time (one gather into a cache-sized buffer
    and a copy back): the split-safe order of an epoch whose batches share
    one count vector, at the cost of about one pass over the rows.
    """
    width = int(places.shape[0])
    if width == 0 or order.shape[0] == 0:
        return
    inverse = np.empty(width, dtype=np.intp)
    inverse[places] = np.arange(width, dtype=np.intp)
    n_batches = order.shape[0] // width
    step = min(max(1, _PERMUTE_ROWS // width), n_batches)
    # One flat gather per step (a 1-D take is faster than a take along axis 1).
    index = (np.arange(step, dtype=np.intp)[:, None] * width + inverse[None, :]).reshape(-1)
    buffer = np.empty(index.shape[0], dtype=order.dtype)
    block = step * width
    whole = n_batches // step * block
    for first in range(0, whole, block):
        part = order[first:first + block]
        np.take(part, index, out=buffer)
        part[...] = buffer
    if whole < order.shape[0]:
        part = order[whole:]
        part[...] = part[index[:part.shape[0]]]


def reorder_split_safe(order, bounds, codes, first_rows) -> np.ndarray:
    """Batches in any order inside a batch -> the split-safe order (a pass over the rows).

    For policies whose assembly keeps the permutation's order
    (``MinPerStratum``/``FixedSize`` with ``batch_order="split_safe"``): a
    stable sort by (batch, stratum's turn of first appearance) groups each
    batch by stratum, rows of a stratum in the order they had, then
    :func:`place_split_safe`.
    """
    first_rows = np.asarray(first_rows)
    n_strata = first_rows.shape[0]
    turn = np.empty(n_strata, dtype=np.int64)
    turn[np.argsort(first_rows, kind="stable")] = np.arange(n_strata)
    kernels = kernel_gate.compiled_for("assemble", order.shape[0])
    if kernels is not None:
        # The smallest integer type: the random gather by row stays in cache.
        small = np.min_scalar_type(max(n_strata - 1, 0))
        stratum_of = turn.astype(small)[np.asarray(codes)]
        in_order = np.empty(order.shape[0], dtype=small)
        bounds = np.asarray(bounds, dtype=np.int64)
        counts = kernels.batch_stratum_counts(order, bounds, stratum_of, n_strata, in_order)
        patterns = BatchPatterns(counts.T)
        out = np.empty_like(order)
        kernels.move_split_safe(order, bounds, in_order, counts, patterns.flat, patterns.start,
                                out)
        return out
    sizes = np.diff(bounds)
    batch = np.repeat(np.arange(sizes.shape[0], dtype=np.int64), sizes)
    key = batch * n_strata + turn[np.asarray(codes)[order]]
    by_stratum = np.argsort(key, kind="stable")
    counts = np.bincount(key, minlength=n_strata * sizes.shape[0]).reshape(-1, n_strata).T
    return place_split_safe(order[by_stratum], bounds, counts)
