"""Group a permutation's rows into batches, given a policy's rank cuts.

The result is what the reference algorithm produces: walk the rows in
permuted order, rank each row within its stratum, look its batch up in the
cuts, then list batches in order with rows in permuted order inside a batch
(R's ``split(row, batch)``). It is computed without a Python loop per row:

* few strata: per-stratum running counts give each row its output position
  directly (rows of batch ``b`` before position ``j`` = per-stratum counts
  before ``j``, clipped to that stratum's cut range of batch ``b``);
* many strata: a stable sort by stratum gives ranks and a stable sort by
  batch gives places inside batches.

Both walk the permutation chunk by chunk (counts carried over from earlier
chunks; the permutation may be int32, ``EpochStream.compact_permutation``)
and read each rank's batch off the cuts with :class:`_BatchLookup`, so
memory beyond the int64 result is O(chunk + S). Both are exact integer
computations; tests compare them with a plain loop.

From ``2**17`` rows on, with numba installed (the ``fast`` extra), the plan
uses :func:`assemble_in_place` instead: the same batches, computed inside
the one int64 array that becomes the result (the epoch's shuffle included;
``pystratum.kernels._assemble``), which is several times faster and needs no
memory beyond the result but O(S + B).

Policies with pools or recycling (``Targets``, ``Downsample``) use
:func:`assemble_by_stratum` instead: batches stratum by stratum, each row
placed at its output position directly (an evenly spaced stratum through a
strided 2-D view). Slot policies (``ClassesPerBatch``) are assembled in
:mod:`pystratum.engine._assemble_slots`.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .. import kernels as kernel_gate
from ..strata._encode import smallest_code_dtype
from ._batch_order import BatchPatterns, permute_columns

__all__ = ["BatchOrder", "assemble_batches", "assemble_in_place", "assemble_by_stratum",
           "block_weights", "in_place_kernels", "stratum_draws"]


# Up to this many strata the running-count method is faster: its cost grows
# with the number of strata, the chunked-sort method's does not.
_RUNNING_COUNT_MAX_STRATA = 3

# The in-place assembly packs a row and a code (later an output position)
# into one int64: 31 bits each.
_PACKED_MAX_ROWS = 2**31 - 1
def in_place_kernels(n_rows: int, n_strata: int):
    """The kernels :func:`assemble_in_place` should use for this epoch, or None (numpy's path).

    None below :data:`pystratum.kernels.MIN_ROWS` rows (numpy's path is
    cheaper than numba's import there) and beyond 31 bits of rows or strata.
    """
    if n_rows > _PACKED_MAX_ROWS or n_strata > _PACKED_MAX_ROWS:
        return None
    return kernel_gate.compiled_for("assemble", n_rows)


@dataclass(frozen=True)
class BatchOrder:
    """Batches as one flat array: batch ``b`` is ``order[bounds[b]:bounds[b + 1]]``."""

    order: np.ndarray
    bounds: np.ndarray

    @property
    def num_batches(self) -> int:
        return int(self.bounds.shape[0] - 1)

    def batches(self) -> list:
        """The batches as a list of views into ``order``."""
        edges = self.bounds.tolist()
        order = self.order
        return [order[start:stop] for start, stop in zip(edges[:-1], edges[1:])]


def assemble_batches(codes, permutation, rank_cuts, *, sizes=None,
                     method: str | None = None) -> BatchOrder:
    """Rows of ``permutation`` grouped into batches according to ``rank_cuts``.

    codes:       int array (N,), stratum code per row, ``0..S-1``.
    permutation: int array (N,), a permutation of ``0..N-1`` (row positions);
                 int32 halves the memory read (the values are what count).
    rank_cuts:   int array (S, B+1), see ``pystratum.policies.Allocation``.
    sizes:       rows per stratum, if the caller has them already.
    method:      force "running_count" or "chunked_sort" (tests); default picks by S.

    Memory beyond the int64 result: O(chunk + S) (the cut table is read in
    place, never copied or expanded to one entry per rank).
    """
    n_strata = rank_cuts.shape[0]
    n_batches = rank_cuts.shape[1] - 1
    if sizes is None:
        sizes = np.bincount(codes, minlength=n_strata)
    sizes = np.asarray(sizes, dtype=np.int64)
    # A trailing pseudo-batch (number B) collects rows the policy leaves out,
    # so both methods only ever see "every row has a batch".
    bounds = np.empty(n_batches + 2, dtype=np.int64)
    rank_cuts.sum(axis=0, dtype=np.int64, out=bounds[:-1])
    bounds[-1] = sizes.sum()
    lookup = _BatchLookup(rank_cuts, sizes)
    # 8/16-bit codes: less memory traffic, and numpy's stable argsort is a radix sort.
    codes = codes.astype(smallest_code_dtype(n_strata), copy=False)
    if method is None:
        method = "running_count" if n_strata <= _RUNNING_COUNT_MAX_STRATA else "chunked_sort"
    if method == "running_count":
        order = _by_running_counts(codes, permutation, lookup)
    elif method == "chunked_sort":
        order = _by_chunked_sorts(codes, permutation, lookup, bounds)
    else:
        raise ValueError(f"unknown method {method!r}")
    used = int(bounds[n_batches])
    return BatchOrder(order=order[:used], bounds=bounds[: n_batches + 1])


def assemble_in_place(codes, rank_cuts, stream, epoch: int, kernels) -> BatchOrder:
    """:func:`assemble_batches` of the epoch's permutation, built in one int64 array.

    The same batches as ``assemble_batches(codes, stream.permutation(n,
    epoch), rank_cuts)`` (``stream=None``: row order), through the compiled
    ``kernels`` (:func:`in_place_kernels`; see ``pystratum.kernels._assemble``
    for the steps). The array that holds row and code during the shuffle
    becomes the result, so memory beyond the int64 result is O(S + B)
    (streams without an in-place shuffle add their int32 permutation while
    it is read). See :func:`in_place_kernels` for when it is used.
    """
    n = codes.shape[0]
    n_batches = rank_cuts.shape[1] - 1
    # Batch starts (rows of every stratum before batch b), then the
    # pseudo-batch B of rows the policy leaves out, up to N.
    starts = np.empty(n_batches + 2, dtype=np.int64)
    rank_cuts.sum(axis=0, dtype=np.int64, out=starts[:-1])
    starts[-1] = n
    if stream is not None and not stream.shuffles_in_place:
        # Drawn first: the stream's own temporaries are gone before the result exists.
        permutation = stream.compact_permutation(n, epoch)
        packed = np.empty(n, dtype=np.int64)
        kernels.pack_permuted(permutation, codes, packed)
        del permutation
    else:
        packed = np.empty(n, dtype=np.int64)
        kernels.pack_rows(codes, packed)
        if stream is not None:
            stream.shuffle_in_place(packed, epoch)
    kernels.place_ranks(packed, np.ascontiguousarray(rank_cuts), starts)
    kernels.move_to_places(packed)
    return BatchOrder(order=packed[:int(starts[n_batches])], bounds=starts[:n_batches + 1])


class _BatchLookup:
    """The batch of every rank a chunk of rows brings, stratum by stratum.

    Ranks of a stratum arrive in increasing order (chunk after chunk), so
    the lookup keeps, per stratum, the next rank and its batch. For a chunk
    with ``counts[s]`` new ranks of stratum ``s`` it finds the batch of the
    rank after the chunk (a vectorised binary search over the strata's cut
    rows) and lists the batches in between by ``np.repeat`` over the cuts,
    clipped to the chunk's ranks: O(chunk + S) memory and time, where a
    table of the batch of every rank would take 4 bytes per row. Batch
    ``B`` (one past the last) is the pseudo-batch of rows left out.
    """

    def __init__(self, rank_cuts, sizes):
        self.cuts = rank_cuts
        self.sizes = sizes
        self.n_batches = rank_cuts.shape[1] - 1
        n_strata = rank_cuts.shape[0]
        self.strata = np.arange(n_strata)
        self._flat = rank_cuts.reshape(-1)  # a view: row s starts at s * (B + 1)
        self._row_start = self.strata * (self.n_batches + 1)
        self.seen = np.zeros(n_strata, dtype=np.int64)  # next rank of each stratum
        self.current = self._batch_of(self.seen, np.zeros(n_strata, dtype=np.int64))

    def _batch_of(self, ranks, low):
        """Batch of rank ``ranks[s]`` of every stratum, at least ``low[s]``.

        A rank equal to the stratum's size (none left) gets ``B + 1``.
        Otherwise the answer is the last ``b <= B`` with ``cuts[s, b] <= rank``.
        """
        n_strata = ranks.shape[0]
        done = ranks >= self.sizes
        if n_strata <= _SEARCH_EACH_MAX_STRATA:
            found = np.empty(n_strata, dtype=np.int64)
            for s in range(n_strata):
                if done[s]:
                    found[s] = self.n_batches + 1
                else:
                    row = self.cuts[s, int(low[s]):]
                    found[s] = int(low[s]) + int(np.searchsorted(row, ranks[s], side="right")) - 1
            return found
        # Vectorised binary search over the strata's cut rows.
        # Invariant: cuts[s, low] <= rank < cuts[s, high] (high = B + 1: past the row).
        last = self.n_batches
        low = low.copy()
        high = np.where(done, low + 1, last + 1)
        flat, row_start = self._flat, self._row_start
        # Cuts are about proportional for the usual policies, so the rank's
        # share of the stratum guesses the batch; a bracket of a few batches
        # around the guess, where it holds, leaves a few steps to search.
        guess = np.minimum(ranks, self.sizes - 1) * last // self.sizes
        guess_low = np.clip(guess - 2, low, last)
        guess_high = np.minimum(guess + 3, last + 1)
        holds = (flat[row_start + guess_low] <= ranks) & (guess_high > guess_low) & ~done
        holds &= (guess_high == last + 1) | (flat[row_start + np.minimum(guess_high, last)] > ranks)
        low[holds] = guess_low[holds]
        high[holds] = guess_high[holds]
        while True:
            open_ = np.flatnonzero(high - low > 1)
            if open_.shape[0] == 0:
                break
            mid = (low[open_] + high[open_]) >> 1
            below = flat[row_start[open_] + mid] <= ranks[open_]
            low[open_[below]] = mid[below]
            high[open_[~below]] = mid[~below]
        low[done] = self.n_batches + 1
        return low

    def next_batches(self, counts) -> np.ndarray:
        """Batches of the next ``counts[s]`` ranks of each stratum, strata in code order."""
        first = self.seen
        stop = first + counts
        first_batch = self.current
        stop_batch = self._batch_of(stop, first_batch)
        # Stratum s needs its cuts first_batch..stop_batch + 1, clipped to
        # [first, stop): only the outer two can lie outside (cuts never
        # decrease), so they are set to first and stop.
        # A stratum used up (stop_batch = B + 1) ends with the pseudo-batch B.
        last_batch = np.minimum(stop_batch, self.n_batches)
        n_edges = np.where(counts > 0, last_batch - first_batch + 2, 0)
        edge_start = np.cumsum(n_edges) - n_edges
        total = int(edge_start[-1] + n_edges[-1])
        shift = np.repeat(first_batch - edge_start, n_edges)
        edge_batch = np.arange(total, dtype=np.int64)
        edge_batch += shift
        index = np.repeat(self._row_start, n_edges)
        index += np.minimum(edge_batch, self.n_batches)
        values = self._flat[index].astype(np.int64, copy=False)
        active = np.flatnonzero(n_edges)
        values[edge_start[active]] = first[active]
        values[edge_start[active] + n_edges[active] - 1] = stop[active]
        sizes = np.diff(values)
        sizes[edge_start[active[1:]] - 1] = 0  # across two strata: no ranks
        self.seen = stop
        self.current = stop_batch
        return np.repeat(edge_batch[:-1], sizes)


# Up to this many strata the lookup searches each stratum's cut row in turn.
_SEARCH_EACH_MAX_STRATA = 8

# Rows handled per step of both methods: big enough that numpy's per-call
# overhead vanishes, small enough that the temporaries stay in cache and
# peak memory does not grow with N.
_CHUNK_ROWS = 1 << 17


def _chunk_rows(permutation, start):
    """Rows ``start..`` of the permutation as intp (numpy indexes fastest with intp)."""
    return permutation[start:start + _CHUNK_ROWS].astype(np.intp, copy=False)


def _by_running_counts(row_codes, permutation, lookup):
    n = permutation.shape[0]
    sizes = lookup.sizes
    n_strata = sizes.shape[0]
    low, high = [], []
    for s in range(n_strata):
        edges = np.empty(lookup.n_batches + 2, dtype=np.intp)
        edges[:-1] = lookup.cuts[s]
        edges[-1] = sizes[s]
        low.append(edges[:-1])
        high.append(edges[1:])
    seen = np.zeros(n_strata, dtype=np.intp)  # rows of each stratum in earlier chunks
    counts = np.zeros(n_strata, dtype=np.int64)
    order = np.empty(n, dtype=np.int64)
    for start in range(0, n, _CHUNK_ROWS):
        rows = _chunk_rows(permutation, start)
        codes = row_codes[rows]  # gathered per chunk: no N-sized copy
        # before[s][j] = rows of stratum s at positions < j (whole epoch).
        before, masks = [], []
        for s in range(n_strata):
            is_s = codes == s
            if n_strata == 2 and s == 1:
                # Two strata: rows before j of stratum 1 = rows before j - those of stratum 0.
                running = np.arange(start, start + codes.shape[0], dtype=np.intp)
                running -= before[0]
                counts[1] = codes.shape[0] - counts[0]
            else:
                running = np.cumsum(is_s, dtype=np.intp)
                counts[s] = running[-1] if running.shape[0] else 0
                running -= is_s
                running += seen[s]
            before.append(running)
            masks.append(is_s)
        # The chunk's batch table, stratum by stratum: a row of stratum s with
        # rank r is entry offset[s] + r - seen[s].
        table = lookup.next_batches(counts)
        offset = np.cumsum(counts) - counts - seen
        table_index = before[0] + offset[0]
        for s in range(1, n_strata):
            np.add(before[s], offset[s], out=table_index, where=masks[s])
        seen += counts
        batch = table[table_index]
        for s in range(n_strata):
            np.maximum(before[s], low[s][batch], out=before[s])
            np.minimum(before[s], high[s][batch], out=before[s])
        out_position = before[0]
        for s in range(1, n_strata):
            out_position += before[s]
        order[out_position] = rows
    return order


def _by_chunked_sorts(row_codes, permutation, lookup, bounds):
    """Any number of strata: two running counts (per stratum, per batch) over chunks.

    In a chunk, a stable sort by stratum lines the rows up stratum by
    stratum in rank order, which is the order the lookup lists their
    batches in; a stable sort by batch gives each row its place among the
    rows of its batch, hence its output position. Sorting chunk by chunk
    keeps the sorts in cache; numpy sorts 8/16-bit keys by radix.
    """
    n = permutation.shape[0]
    n_strata = lookup.sizes.shape[0]
    batch_start = bounds.astype(np.intp)
    seen_in_batch = np.zeros(bounds.shape[0], dtype=np.intp)
    order = np.empty(n, dtype=np.int64)
    for start in range(0, n, _CHUNK_ROWS):
        rows = _chunk_rows(permutation, start)
        codes = row_codes[rows]  # gathered per chunk: no N-sized copy
        size = codes.shape[0]
        places = np.arange(size, dtype=np.intp)
        # Rank within stratum -> batch of every row of the chunk.
        by_stratum = np.argsort(codes, kind="stable")
        per_stratum = np.bincount(codes, minlength=n_strata)
        batch = np.empty(size, dtype=np.intp)
        batch[by_stratum] = lookup.next_batches(per_stratum)
        # Place within batch -> output position.
        lowest = int(batch.min())
        local = batch - lowest
        by_batch = _stable_argsort_radix(local.astype(_unsigned_key_dtype(int(local.max()))))
        sorted_local = local[by_batch]
        per_batch = np.bincount(sorted_local)
        first_in_chunk = np.cumsum(per_batch) - per_batch
        out_position = places - first_in_chunk[sorted_local]
        out_position += (batch_start[lowest:lowest + per_batch.shape[0]]
                         + seen_in_batch[lowest:lowest + per_batch.shape[0]])[sorted_local]
        seen_in_batch[lowest:lowest + per_batch.shape[0]] += per_batch
        order[out_position] = rows[by_batch]
    return order


def _unsigned_key_dtype(max_key: int):
    if max_key < 256:
        return np.uint8
    if max_key < 65536:
        return np.uint16
    return np.uint32


def _stable_argsort_radix(keys):
    """Stable argsort of unsigned keys using 16-bit radix passes (LSD)."""
    if keys.dtype.itemsize <= 2:
        return np.argsort(keys, kind="stable")
    low_first = np.argsort((keys & 0xFFFF).astype(np.uint16), kind="stable")
    high_in_low_order = (keys[low_first] >> 16).astype(np.uint16)
    return low_first[np.argsort(high_in_low_order, kind="stable")]


def stratum_draws(allocation, sizes, first_rows) -> list:
    """``[(stratum, size, take), ...]``: a sampling policy's draws of one epoch, in draw order.

    Every stratum that serves rows (strata in order of first appearance in
    the data, ``first_rows``) draws its *pass 0*: ``take = min(pool_s,
    used_s)`` of its ``size = N_s`` rows, which are its pool in pass 0's
    order (a fresh uniformly random subset and order each epoch). A stratum
    whose cuts reach beyond its pool is recycled and then draws its extra
    passes, ``ceil(used / pool) - 1`` of them: the whole pool
    (``take == pool``, a fresh permutation), except that the last pass is
    cut short to the ``used - p * pool`` ranks it serves. Each draw is a
    partial shuffle (``EpochStream.epoch_draws``), so an epoch draws about
    as many random numbers as it serves rows, not ``N``.
    """
    pool = sizes if allocation.pool_sizes is None else allocation.pool_sizes
    used = allocation.cuts[:, -1].astype(np.int64)
    pool = np.asarray(pool, dtype=np.int64)
    sizes = np.asarray(sizes, dtype=np.int64)
    draws = []
    for s in np.argsort(first_rows, kind="stable").tolist():
        if used[s] == 0:
            continue
        size, kept, total = int(sizes[s]), int(pool[s]), int(used[s])
        draws.append((s, size, min(kept, total)))
        draws.extend((s, kept, min(kept, total - at)) for at in range(kept, total, kept))
    return draws


def assemble_by_stratum(stream_draws, allocation, draws, first_rows,
                        split_safe: bool = False) -> BatchOrder:
    """Batches of a sampling policy's epoch (pools, recycling), each batch stratum by stratum.

    ``draws`` says what each of ``stream_draws`` is (:func:`stratum_draws`):
    a stratum's first one holds its pool's rows in pass 0's order (its rows
    picked by the draw, ``EpochStream.epoch_orders``), the others index the
    pool (its extra passes). Stratum ``s``'s *epoch sequence* is its pool,
    then the pool reordered by each of its extra passes, cut at ``cuts[s,
    -1]``; ranks ``cuts[s, b]..cuts[s, b + 1] - 1`` of it fill batch ``b``.
    Inside a batch the strata come in order of first appearance in the data
    (``first_rows``: independent of how labels sort, so the same in R), each
    stratum's rows in sequence order. Every row lands at its output position
    directly (``bounds[b]`` + the rows of earlier strata in batch ``b`` + its
    rank past ``cuts[s, b]``), so the cost is linear in the rows served;
    rows outside a pool are never touched. R's ``assemble_epoch()`` builds
    the same order.

    ``split_safe=True``: the split-safe order instead
    (:mod:`pystratum.engine._batch_order`); within a stratum the rows keep
    the order above. When every batch has the same counts (the usual
    ``Targets`` epoch) the batches are built by stratum, then each batch's
    rows are permuted to their places, a cache-sized block of batches at a
    time (:func:`permute_columns`: about one more pass over the rows);
    otherwise every row goes straight to its place (one pattern per distinct
    count vector, looked up as rows are placed).
    """
    cuts = np.asarray(allocation.cuts, dtype=np.int64)
    n_strata, n_batches = cuts.shape[0], cuts.shape[1] - 1
    used = cuts[:, -1]
    counts = np.diff(cuts, axis=1)
    bounds = np.zeros(n_batches + 1, dtype=np.int64)
    np.cumsum(counts.sum(axis=0), out=bounds[1:])
    # Output position of rank r of stratum s in batch b: start[s, b] + r.
    turn = np.argsort(first_rows, kind="stable")
    in_turn = counts[turn]
    offset = np.empty_like(counts)
    offset[turn] = np.cumsum(in_turn, axis=0) - in_turn
    start = bounds[None, :-1] + offset - cuts[:, :-1]
    remap = _SplitSafeRemap(counts[turn], bounds) if split_safe else None
    if remap is not None and remap.patterns.unique.shape[0] == 1:
        # Every batch has the same counts: by stratum first (contiguous runs), then one
        # permutation of each batch's places, a cache-sized block of batches at a time.
        places, remap = remap.patterns.flat, None
    else:
        places = None
    orders_of = [[] for _ in range(n_strata)]
    for (s, _, _), drawn in zip(draws, stream_draws):
        orders_of[s].append(drawn)
    order = np.empty(int(bounds[-1]), dtype=np.int64)
    # In a small epoch the strata without an even layout are placed by one
    # scatter: per-stratum work would be mostly call overhead.
    small = order.shape[0] <= _SMALL_EPOCH_ROWS
    scattered = []
    for s in range(n_strata):
        total = int(used[s])
        if total == 0:
            continue
        rows, *passes = orders_of[s]
        pool_size = rows.shape[0]
        even = _even_layout(start[s], counts[s])
        if even is not None and remap is not None:
            even = None  # several count vectors: the places differ between batches
        if even is not None:
            # Each piece of the epoch sequence goes straight to its place.
            _place_run(order, even, 0, rows)
            for at, pass_order in zip(range(pool_size, total, pool_size), passes):
                _place_run(order, even, at, rows[pass_order])
            continue
        sequence = rows
        if passes:
            # The stratum's epoch sequence, cut at its last rank.
            sequence = np.empty(total, dtype=rows.dtype)
            sequence[:pool_size] = rows
            for at, pass_order in zip(range(pool_size, total, pool_size), passes):
                np.take(rows, pass_order, out=sequence[at:at + pass_order.shape[0]])
        if small:
            scattered.append((s, sequence))
        else:
            _scatter_blocks(order, sequence, start[s], cuts[s], remap)
    if scattered:
        strata = [s for s, _ in scattered]
        blocks = counts[strata].ravel()  # stratum by stratum, batches in order: ranks 0, 1, ...
        ranks = np.arange(blocks.sum(), dtype=np.int64)
        ranks -= np.repeat(np.cumsum(used[strata]) - used[strata], used[strata])
        destination = np.repeat(start[strata].ravel(), blocks) + ranks
        if remap is not None:
            batch = np.tile(np.arange(n_batches, dtype=np.int64), len(strata))
            destination = remap.places(destination, np.repeat(batch, blocks))
        order[destination] = np.concatenate([sequence for _, sequence in scattered])
    if places is not None:
        permute_columns(order, places)
    return BatchOrder(order=order, bounds=bounds)


# Epochs up to this many rows served are placed by one scatter (assemble_by_stratum).
_SMALL_EPOCH_ROWS = 1 << 15


class _SplitSafeRemap:
    """By-stratum output positions -> split-safe ones (:class:`BatchPatterns` of the batches)."""

    def __init__(self, counts_in_turn, bounds):
        self.patterns = BatchPatterns(counts_in_turn)
        self.bounds = bounds
        # Position d of batch b in by-stratum order is entry d + shift[b] of the patterns.
        self.shift = self.patterns.start - bounds[:-1]

    def places(self, destination, batch):
        """Split-safe positions of by-stratum positions ``destination`` in batches ``batch``."""
        return self.bounds[batch] + self.patterns.flat[destination + self.shift[batch]]


def _even_layout(start, counts):
    """``(first, stride, width)`` when a stratum's blocks are evenly spaced, else None.

    With ``width`` ranks in every batch and batch starts ``start[b]`` an
    arithmetic progression (Targets with shares that divide the batch size),
    rank ``r`` goes to ``first + (r // width) * stride + r % width``: rows
    of a 2-D view of ``order``, filled piece by piece by :func:`_place_run`
    (no epoch sequence is built).
    """
    n_batches = start.shape[0]
    width = int(counts[0])
    if n_batches < 2 or width == 0 or (counts != width).any():
        return None
    step = int(start[1] - start[0])
    if (np.diff(start) != step).any():
        return None
    return int(start[0]), step + width, width


def _place_run(order, even, rank, values):
    """Ranks ``rank .. rank + len(values) - 1`` of an evenly spaced stratum into ``order``."""
    first, stride, width = even
    count = values.shape[0]
    batch, column = divmod(rank, width)
    done = 0
    if column:
        # The end of a batch the previous piece began.
        done = min(width - column, count)
        at = first + batch * stride + column
        order[at:at + done] = values[:done]
        batch += 1
    whole = (count - done) // width
    if whole:
        # Whole batches as rows of a 2-D view, the last one on its own (a whole
        # stride after it may run past the end of ``order``).
        body = whole - 1
        at = first + batch * stride
        if body:
            view = order[at:at + body * stride].reshape(body, stride)
            view[:, :width] = values[done:done + body * width].reshape(body, width)
        at += body * stride
        done += body * width
        order[at:at + width] = values[done:done + width]
        done += width
        batch += whole
    if done < count:
        at = first + batch * stride
        order[at:at + count - done] = values[done:]


def _scatter_blocks(order, sequence, start, cuts, remap=None):
    """``order[start[b] + r] = sequence[r]`` for the ranks ``r`` of every batch ``b``.

    A group of batches at a time, about ``_CHUNK_ROWS`` ranks each, so the
    index temporaries stay in cache.
    """
    total = sequence.shape[0]
    n_batches = start.shape[0]
    counts = np.diff(cuts)
    # First batch of each group: the batch holding rank k * _CHUNK_ROWS.
    firsts = np.searchsorted(cuts[1:], np.arange(0, total, _CHUNK_ROWS, dtype=np.int64),
                             side="right")
    firsts = np.unique(np.concatenate([firsts, [n_batches]]))
    for first, stop in zip(firsts[:-1].tolist(), firsts[1:].tolist()):
        low, high = int(cuts[first]), int(cuts[stop])
        if high == low:
            continue
        destination = np.repeat(start[first:stop], counts[first:stop])
        destination += np.arange(low, high, dtype=np.int64)
        if remap is not None:
            batch = np.repeat(np.arange(first, stop, dtype=np.int64), counts[first:stop])
            destination = remap.places(destination, batch)
        order[destination] = sequence[low:high]


def block_weights(row_weights, cuts, first_rows, split_safe: bool = False) -> np.ndarray:
    """Weights aligned with :func:`assemble_by_stratum`'s order (a stratum's rows share one)."""
    turn = np.argsort(first_rows, kind="stable")
    counts = np.diff(np.asarray(cuts, dtype=np.int64), axis=1)[turn]
    weights = np.asarray(row_weights, dtype=np.float64)[turn]
    if split_safe:
        patterns = BatchPatterns(counts)
        if patterns.unique.shape[0] == 1:
            return np.tile(weights[patterns.labels], counts.shape[1])
        sizes = counts.sum(axis=0)
        within = np.arange(int(sizes.sum()), dtype=np.int64) - np.repeat(np.cumsum(sizes) - sizes,
                                                                          sizes)
        return weights[patterns.labels[np.repeat(patterns.start, sizes) + within]]
    return np.repeat(np.tile(weights, counts.shape[1]), counts.T.ravel())
