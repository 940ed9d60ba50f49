"""``MultiLabel``: every label's positives in every batch (rows carry several labels).

The input is a label matrix (rows x labels, 0/1), not strata: the engine
(``pystratum.engine._plan``) reads a 2-D input as labels for this policy
only, draws the epoch's two permutations (of the N rows, of the B batches)
and calls :func:`assign_batches`, which is deterministic integer arithmetic
from there on, so the R twin (``r/R/policy_multi_label.R``) gives the same
batches for ``rng="R"``.

The construction is iterative stratification (Sechidis, Tsoumakas and
Vlahavas 2011) made a batcher: labels from the rarest, each label's rows
not placed yet dealt by water-filling, then the rows without a label fill
the free places, then a repair step swaps rows between batches.
"""

from __future__ import annotations

import numpy as np

from ..base._validation import check_bool, check_int, show
from ._base import Allocation, Policy, check_batch_order

__all__ = ["MultiLabel", "MultiLabelShortfallError", "LabelShortfallWarning", "shortfall_warning",
           "LabelAssignment", "assign_batches",
           "check_label_matrix", "placing_steps", "shortfall_message"]

# Above this many (level x batch) cells a label's slots are ordered by a sort
# instead of a dense mask (both give the same order).
_DENSE_FACTOR = 4


class MultiLabelShortfallError(ValueError):
    """``strict=True`` and some batch holds fewer than ``min_per_label`` positives of a label
    that has enough positives (R: class ``pystratum_label_shortfall``)."""


class LabelShortfallWarning(UserWarning):
    """``strict=False`` and some batch holds fewer than ``min_per_label`` positives of a label
    that has enough positives: the plan is served, and this warning says where it falls short."""


class MultiLabel(Policy):
    """Every label's positives in every batch, for rows that carry several labels.

    ``MultiLabel(batch_size=None, *, num_batches=None, min_per_label=1, strict=False,
    batch_order=None)``
    (R: ``policy_multi_label()``). Give exactly one of ``batch_size`` (then
    ``B = ceil(N / batch_size)``) or ``num_batches`` (``B``, at most ``N``).
    Plan it with ``plan_batches(label_matrix, MultiLabel(...), seed=, rng=)``:
    a 2-D input of 0/1 (or bool) is read as labels with this policy (rows x
    labels), never as stratum columns.

    Guarantees: every row is in exactly one batch; batch ``b`` (0-based) has
    ``N // B + (b < N % B)`` rows. Let ``N_l`` be label ``l``'s positives,
    ``m = min_per_label`` and call ``l`` *guaranteed* when ``N_l >= m * B``.
    Labels are taken rarest first (fewest positives; ties by column), each
    label's rows not yet placed dealt by water-filling (the batch with the
    fewest positives of that label and a free place first). **Sufficient
    condition**: a guaranteed label ``l`` gets at least ``m`` positives in
    every batch from the construction alone when (A) at least ``m * B`` of
    its positive rows carry no label taken before ``l`` (rarer), and (C)
    ``sum(N_j // B + 1 for j taken before l) <= N // B - m``. Rows carrying
    one label each satisfy (A) for every guaranteed label. Proof sketch:
    water-filling gives a batch at most ``N_j // B + 1`` rows of label
    ``j`` while no batch is full, so (C) keeps ``m`` places free in every
    batch when ``l`` is dealt, and (A) leaves enough unplaced positives to
    raise every batch to ``m``. Where the condition fails, a repair step
    swaps a positive row of a batch holding more than ``m`` with a row of
    the short batch, only when no guaranteed label falls below ``m`` (or
    further below) in either batch; every swap removes one missing
    positive, so it ends. A shortfall can remain: rows {a,b}, {b,c}, {a,c}
    in two batches cannot give both batches every label. The plan reports
    per label the least and most positives a batch holds
    (``BatchPlan.label_counts``, ``BatchPlan.label_spread()``);
    ``strict=True`` makes a remaining shortfall a
    :class:`MultiLabelShortfallError` naming the labels; with ``strict=False`` it is
    served with one :class:`LabelShortfallWarning` per plan (per epoch for a
    sampler) naming the labels and their short batches. Labels with fewer
    than ``m * B`` positives are spread as evenly as water-filling allows.

    Each epoch a new shuffle: the order rows are taken in is a permutation
    of the N rows, ties between batches broken by a permutation of the B
    batches, both from the epoch's stream (``rng="numpy"``, ``"R"`` (the
    R package's batches, row for row), ``"torch"``); ``rng="index"`` is
    refused. Inside a batch rows keep the permutation's order (the default,
    ``batch_order=None`` or ``"assembled"``). ``batch_order="split_safe"``
    interleaves them by each row's *placing label* (its rarest label: the
    step that placed it; rows without a label form one more group) with the
    split-safe rule of ``docs/BATCH_ORDER.md``: for every ``g`` in the
    batch size's chain, ``g`` equal contiguous chunks get ``floor`` or
    ``ceil`` of ``c / g`` rows of each placing label, so a chunk holds at
    least ``floor(c_l / g)`` positives of label ``l`` (``c_l``: the batch's
    rows placed by ``l``; every positive of the rarest label is placed by
    it). A row carries several labels, so no order gives every label its
    exact share in every chunk. Cost: O(N L) bit operations plus
    O(B log N) per label; memory O(N + L) beyond the label matrix.
    """

    name = "multi_label"

    def __init__(self, batch_size=None, *, num_batches=None, min_per_label=1, strict=False,
                 batch_order=None):
        self.batch_order = check_batch_order(batch_order)
        if (batch_size is None) == (num_batches is None):
            raise TypeError(
                f"batch_size or num_batches must be given, exactly one of them, got batch_size="
                f"{show(batch_size)} and num_batches={show(num_batches)}. E.g. "
                f"MultiLabel(batch_size=256) or MultiLabel(num_batches=100).")
        self._batch_size = None if batch_size is None else check_int(
            batch_size, "batch_size", minimum=1, fix="It is the number of rows per batch.")
        self._num_batches = None if num_batches is None else check_int(
            num_batches, "num_batches", minimum=1, fix="It is the number of batches per epoch.")
        self._min_per_label = check_int(
            min_per_label, "min_per_label", minimum=1,
            fix="It is the fewest positives of each label a batch should hold.")
        self._strict = check_bool(strict, "strict")

    batch_size = property(lambda self: self._batch_size)
    min_per_label = property(lambda self: self._min_per_label)
    strict = property(lambda self: self._strict)
    reads_label_matrix = True

    def params(self) -> dict:
        return self._with_batch_order({
            "batch_size": self._batch_size, "num_batches": self._num_batches,
            "min_per_label": self._min_per_label, "strict": self._strict})

    def batches_for(self, n_rows: int) -> int:
        """B for ``n_rows`` rows: ``ceil(N / batch_size)`` or ``num_batches`` (checked <= N)."""
        if self._batch_size is not None:
            return -(-n_rows // self._batch_size)
        if self._num_batches > n_rows:
            raise ValueError(
                f"num_batches must be at most the number of rows ({n_rows}), got "
                f"num_batches={self._num_batches}: a batch needs a row. Pass num_batches <= "
                f"{n_rows}, or batch_size=.")
        return self._num_batches

    def num_batches(self, strata) -> int:
        return self.batches_for(int(strata.n_rows))

    def allocate(self, strata, epoch) -> Allocation:
        raise TypeError(
            "policy MultiLabel has no per-stratum allocation: it reads a label matrix (rows x "
            "labels of 0/1). Pass the label matrix to plan_batches(labels, MultiLabel(...)) "
            "or stratified_batches(labels, MultiLabel(...)).")


def placing_steps(matrix) -> np.ndarray:
    """Each row's step in :func:`assign_batches` ((N,) integers): the position of its rarest label.

    Labels in order of size (fewest positives first, ties by column), as
    the assignment takes them; a row's step is the first of its labels in
    that order, ``L`` for a row without labels. It depends on the rows, not
    on the epoch. R twin: ``multi_label_placing_steps()``.
    """
    n_labels = matrix.shape[1]
    packed = _pack_rows(matrix)
    by_size = np.argsort(_label_sizes(packed, n_labels), kind="stable")
    rank = np.empty(n_labels, dtype=np.int64)
    rank[by_size] = np.arange(n_labels, dtype=np.int64)
    return _first_labels(packed, rank, n_labels)


def check_label_matrix(values, names=None):
    """``(matrix, names)``: a numpy (N, L) bool matrix and L label names (str), checked.

    Accepts bool, integer or float arrays whose entries are 0 or 1; refuses
    anything else with an error naming ``labels``, the first bad entry and
    the fix (``strata``: the argument of ``plan_batches`` it came as).
    """
    array = np.asarray(values)
    if array.ndim != 2:
        raise TypeError(
            f"strata must be a 2-D label matrix (rows x labels) of 0/1 for MultiLabel, got "
            f"an array of shape {array.shape}. Pass one column per label.")
    n_rows, n_labels = array.shape
    if n_labels == 0:
        raise ValueError(f"strata must have at least one label column, got strata of shape "
                         f"({n_rows}, 0). Pass one 0/1 column per label.")
    if n_rows == 0:
        raise ValueError(f"strata must have at least one row, got strata of shape "
                         f"(0, {n_labels}). Pass the label matrix of the data set's rows.")
    if array.dtype == np.bool_:
        matrix = array
    elif array.dtype.kind in "iuf":
        bad = ~((array == 0) | (array == 1))
        if bad.any():
            row, column = (int(k) for k in np.argwhere(bad)[0])
            raise ValueError(
                f"strata must hold only 0 and 1 (or True/False), got strata[{row}, {column}]="
                f"{show(array[row, column].item())}. Encode each label as 0/1 (missing "
                f"labels as 0).")
        matrix = array == 1
    else:
        raise TypeError(f"strata must hold 0/1 numbers or booleans, got a matrix of type "
                        f"{array.dtype}. Encode each label as 0/1.")
    if names is None:
        names = [str(k) for k in range(n_labels)]
    names = [str(name) for name in names]
    if len(names) != n_labels:
        raise ValueError(f"label names must give one name per label column ({n_labels}), got "
                         f"{len(names)}: names={show(names)}.")
    if len(set(names)) != n_labels:
        raise ValueError(f"label names must be distinct, got names={show(names)}.")
    return matrix, names


class LabelAssignment:
    """What :func:`assign_batches` computes: ``batch`` of every permuted position, counts."""

    def __init__(self, batch, counts):
        self.batch = batch      # int64 (N,): batch of the row at permuted position i
        self.counts = counts    # int64 (B, L): positives of each label per batch


_CHUNK = 1 << 16


def _row_width(n_labels):
    """Bytes per packed row: 1, 2 or 4, else a multiple of 8 (one machine word per gather)."""
    width = (n_labels + 7) // 8
    return next((w for w in (1, 2, 4) if width <= w), -(-width // 8) * 8)


def _pack_rows(matrix):
    """The rows' labels as bits: uint8 ``(N, _row_width(L))``, label ``c`` bit ``c % 8`` of
    byte ``c // 8``, zero bytes after. Chunks of rows padded to whole bytes and packed flat
    (numpy's fast path), so the temporary memory stays bounded."""
    n_rows, n_labels = matrix.shape
    width = _row_width(n_labels)
    flat = matrix.view(np.uint8) if matrix.dtype == np.bool_ else matrix.astype(np.uint8)
    if n_labels == 8 * width:
        return np.packbits(flat.reshape(-1), bitorder="little").reshape(n_rows, width)
    packed = np.empty((n_rows, width), dtype=np.uint8)
    padded = np.zeros((min(_CHUNK, n_rows), 8 * width), dtype=np.uint8)
    for start in range(0, n_rows, _CHUNK):
        stop = min(start + _CHUNK, n_rows)
        block = padded[: stop - start]
        block[:, :n_labels] = flat[start:stop]
        packed[start:stop] = np.packbits(block.reshape(-1), bitorder="little").reshape(-1, width)
    return packed


# From this many labels on, per-label work is done on unpacked row chunks (O(N L) in
# numpy) instead of per-byte tables (a Python step per label).
_WIDE_LABELS = 256
# Cells of an unpacked chunk of rows.
_CHUNK_CELLS = 1 << 22


def _unpacked_chunks(packed, n_labels):
    """``(start, bits)`` over chunks of rows: ``bits`` bool ``(rows, n_labels)``."""
    step = max(1, _CHUNK_CELLS // max(1, 8 * packed.shape[1]))
    for start in range(0, packed.shape[0], step):
        bits = np.unpackbits(packed[start:start + step], axis=1, bitorder="little")
        yield start, bits[:, :n_labels].view(np.bool_)


def _label_sizes(packed, n_labels):
    """Positives of every label, from byte histograms of the packed rows."""
    if n_labels > _WIDE_LABELS:
        sizes = np.zeros(n_labels, dtype=np.int64)
        for _, bits in _unpacked_chunks(packed, n_labels):
            sizes += bits.sum(axis=0, dtype=np.int64)
        return sizes
    values = np.arange(256)
    sizes = np.zeros(n_labels, dtype=np.int64)
    for byte in range((n_labels + 7) // 8):
        histogram = np.bincount(packed[:, byte], minlength=256)
        for bit in range(min(8, n_labels - 8 * byte)):
            sizes[8 * byte + bit] = int(histogram[((values >> bit) & 1) == 1].sum())
    return sizes


def _in_order(packed, permutation):
    """The packed rows in the epoch's order, gathered as one word per row."""
    width = packed.shape[1]
    dtype = {1: np.uint8, 2: np.uint16, 4: np.uint32}.get(width, np.uint64)
    return packed.view(dtype)[permutation].view(np.uint8)


def _has(codes, column):
    """Whether each row of ``codes`` (packed bytes) carries label ``column``."""
    return (codes[:, column >> 3] & np.uint8(1 << (column & 7))) != 0


def _first_labels(codes, rank, n_labels):
    """Each row's first label in the construction's order (its rank; ``n_labels``: none)."""
    first = np.full(codes.shape[0], n_labels, dtype=np.uint8 if n_labels < 255 else np.int32)
    if n_labels > _WIDE_LABELS:
        ranks = rank.astype(first.dtype)
        for start, bits in _unpacked_chunks(codes, n_labels):
            first[start:start + bits.shape[0]] = np.where(bits, ranks, n_labels).min(axis=1)
        return first
    values = np.arange(256)
    for byte in range((n_labels + 7) // 8):
        table = np.full(256, n_labels, dtype=first.dtype)
        for bit in range(min(8, n_labels - 8 * byte)):
            on = (values >> bit) & 1 == 1
            table[on] = np.minimum(table[on], rank[8 * byte + bit])
        np.minimum(first, table[codes[:, byte]], out=first)
    return first


def _water_fill(counts, free, take):
    """Rows of a label each batch gets: water-filling ``take`` rows onto ``counts``.

    Returns ``(x, level)``: ``x_b = min(free_b, max(0, level - counts_b))``
    with ``level`` the highest whole level whose total fits ``take``; the
    ``take - sum(x)`` rows left go one each to batches at the level with
    room (the caller picks them by the tie order). Binary search: O(B log N).
    """
    low, high = 0, int(counts.max()) + int(free.max()) + 1
    # total(high) == sum(free) >= take; find the largest level with total <= take.
    while low < high:
        middle = (low + high + 1) // 2
        if int(np.minimum(free, np.maximum(middle - counts, 0)).sum()) <= take:
            low = middle
        else:
            high = middle - 1
    return np.minimum(free, np.maximum(low - counts, 0)), low


def _slot_batches(counts, give, tie_rank, n_batches):
    """The batch of each dealt row, in dealing order: slots by (level, tie rank)."""
    total = int(give.sum())
    if total == 0:
        return np.empty(0, dtype=np.int64)
    start = counts[give > 0].min()
    stop = int((counts + give).max())
    by_tie = np.argsort(tie_rank)  # batches in tie order
    if (stop - start) * n_batches <= _DENSE_FACTOR * (total + n_batches):
        levels = np.arange(start, stop, dtype=np.int64)[:, None]
        low, high = counts[by_tie][None, :], (counts + give)[by_tie][None, :]
        cells = np.flatnonzero((levels >= low) & (levels < high))
        return by_tie[cells % n_batches]
    batch = np.repeat(np.arange(n_batches, dtype=np.int64), give)
    level = counts[batch] + (np.arange(total, dtype=np.int64) -
                             np.repeat(np.cumsum(give) - give, give))
    return batch[np.argsort(level * n_batches + tie_rank[batch], kind="stable")]


def assign_batches(matrix, permutation, batch_ties, min_per_label=1, repair=True):
    """Each row's batch for one epoch; deterministic given the two draws.

    ``matrix``: (N, L) bool; ``permutation``: the epoch's order of the N
    rows (0-based); ``batch_ties``: a permutation of the B batches (tie
    order). Returns a :class:`LabelAssignment` whose ``batch[i]`` is the
    batch of row ``permutation[i]``. The R twin follows this step by step
    (``multi_label_assign()``); see :class:`MultiLabel` for the guarantee.

    Steps: labels are taken in order of size (fewest positives first, ties
    by column); label ``l``'s step places the rows whose first label in
    that order is ``l``, in the epoch's order, one at a time onto the batch
    with the fewest positives of ``l`` so far and a free place, ties by the
    *rotated tie rank* ``(tie[b] - offset) mod B`` (``tie[b]``: position of
    ``b`` in ``batch_ties``; ``offset``: rows placed so far, mod B) -- done
    at once by water-filling (a level found by bisection, then slots sorted
    by (level, rotated rank)). Rows without a label then fill the free
    places, batches in index order, and :func:`_repair` runs. A later step
    never places a row carrying an earlier label, so label ``l``'s counts are
    final after its step.
    """
    n_rows, n_labels = matrix.shape
    n_batches = int(batch_ties.shape[0])
    capacity = np.full(n_batches, n_rows // n_batches, dtype=np.int64)
    capacity[: n_rows % n_batches] += 1
    tie = np.empty(n_batches, dtype=np.int64)
    tie[batch_ties] = np.arange(n_batches, dtype=np.int64)
    packed = _pack_rows(matrix)
    sizes = _label_sizes(packed, n_labels)
    by_size = np.argsort(sizes, kind="stable")
    rank = np.empty(n_labels, dtype=np.int64)
    rank[by_size] = np.arange(n_labels, dtype=np.int64)
    codes = _in_order(packed, permutation)               # (N, nbytes), the epoch's order
    del packed
    first = _first_labels(codes, rank, n_labels)
    grouped = np.argsort(first, kind="stable")           # positions, step by step
    starts = np.zeros(n_labels + 2, dtype=np.int64)
    np.cumsum(np.bincount(first, minlength=n_labels + 1), out=starts[1:])
    del first
    labelled = int(starts[n_labels])
    g_codes = codes[grouped[:labelled]]                  # labelled rows, grouped
    g_batch = np.empty(labelled, dtype=np.int64)
    fill = np.zeros(n_batches, dtype=np.int64)
    counts = np.zeros((n_batches, n_labels), dtype=np.int64)
    offset = 0
    # Only the steps that place rows (at most min(N, L) of them) are walked; a label whose
    # rows were all placed by rarer labels gets its counts from the final batches below.
    for step in np.flatnonzero(starts[1:n_labels + 1] > starts[:n_labels]).tolist():
        column = int(by_size[step])
        start, stop = int(starts[step]), int(starts[step + 1])
        before = g_batch[:start][_has(g_codes[:start], column)]
        placed = np.bincount(before, minlength=n_batches).astype(np.int64)
        take = stop - start
        free = capacity - fill
        give, level = _water_fill(placed, free, take)
        left = take - int(give.sum())
        rotated = (tie - offset) % n_batches
        if left:
            room = np.flatnonzero((placed + give == level) & (give < free))
            give[room[np.argsort(rotated[room])[:left]]] += 1
        g_batch[start:stop] = _slot_batches(placed, give, rotated, n_batches)
        fill += give
        offset = (offset + take) % n_batches
        placed = placed + give
        counts[:, column] = placed
    walked = np.zeros(n_labels, dtype=bool)
    walked[by_size[starts[1:n_labels + 1] > starts[:n_labels]]] = True
    if not walked.all():
        _count_positives(counts, g_codes, g_batch, np.flatnonzero(~walked), n_labels)
    batch = np.empty(n_rows, dtype=np.int64)
    batch[grouped[:labelled]] = g_batch
    # Rows without a label fill the free places, batches in index order.
    batch[grouped[labelled:]] = np.repeat(np.arange(n_batches, dtype=np.int64), capacity - fill)
    del g_codes, g_batch, grouped
    if repair:
        _repair(codes, batch, counts, sizes, min_per_label, n_batches)
    return LabelAssignment(batch, counts)


def _count_positives(counts, codes, batch, columns, n_labels):
    """``counts[:, columns]`` = positives of those labels per batch, over rows ``codes``
    (packed) placed in ``batch``: one vectorised pass over the rows' bits."""
    n_columns = columns.shape[0]
    table = np.zeros(counts.shape[0] * n_columns, dtype=np.int64)
    for start, bits in _unpacked_chunks(codes, n_labels):
        rows, cells = np.nonzero(bits[:, columns])
        np.add.at(table, batch[start + rows] * n_columns + cells, 1)
    counts[:, columns] = table.reshape(counts.shape[0], n_columns)


# The repair step may read at most this many cells of the batches' label tables (its
# work, counted as it goes; each step of its search counts REPAIR_STEP_CELLS more).
REPAIR_WORK_MAX = 2**30
REPAIR_STEP_CELLS = 1024


class RepairBudget:
    """The repair step's work, counted as it goes; past :data:`REPAIR_WORK_MAX` it stops.

    A swap reads the short batch's rows x L labels, each donor batch's rows x L
    labels, and for each positive row of a donor the short batch's candidate rows x
    the guaranteed labels (plus :data:`REPAIR_STEP_CELLS`). Past the budget a
    ValueError names ``strata``, the sizes and the fix, so a plan never takes
    minutes in its repair (the R package counts the same cells, with the same words).
    """

    def __init__(self, counts, sizes, m):
        self.counts, self.sizes, self.m = counts, sizes, m
        self.spent = 0

    def spend(self, cells: int) -> None:
        self.spent += int(cells)
        if self.spent <= REPAIR_WORK_MAX:
            return
        n_batches, n_labels = self.counts.shape
        guaranteed = self.sizes >= self.m * n_batches
        missing = int(np.maximum(self.m - self.counts[:, guaranteed], 0).sum())
        raise ValueError(
            f"strata has {n_labels:,} labels in {n_batches:,} batches: MultiLabel's repair "
            f"step read {self.spent:,} cells of the batches' label tables (more than 2**30) "
            f"and still has {missing:,} missing positives to fix. Drop labels too rare to "
            f"matter or merge them, or use fewer batches (a larger batch_size or a smaller "
            f"num_batches), or a smaller min_per_label.")


class _Bits:
    """The labels of permuted positions as a bool table, decoded from the packed bytes."""

    def __init__(self, codes, n_labels):
        self.codes, self.n_labels = codes, n_labels

    def __call__(self, positions):
        rows = self.codes[positions]
        bits = np.unpackbits(rows, axis=1, bitorder="little", count=self.n_labels)
        return bits.view(np.bool_)


def _repair(codes, batch, counts, sizes, m, n_batches):
    """Swap rows between batches until no guaranteed label is short, where a swap can.

    Guaranteed labels in the construction's order (rarest first); a label's
    short batches in index order; donors are the batches holding more than
    ``m`` of its positives (most first, ties by index), their positive rows
    in the epoch's order, each tried against the short batch's rows without
    the label, in the epoch's order; the first pair whose swap keeps every
    guaranteed label at ``m`` or above (or where it was, if below) in both
    batches is swapped. Each swap removes one missing positive and adds
    none, so the step ends. ``batch`` and ``counts`` are updated in place.
    """
    guaranteed = sizes >= m * n_batches
    if n_batches == 1 or not guaranteed.any():
        return
    columns = np.flatnonzero(guaranteed)
    if not (counts[:, columns] < m).any():
        return
    bits = _Bits(codes, counts.shape[1])
    budget = RepairBudget(counts, sizes, m)
    # Each batch's positions in ascending order (kept so by every swap): no O(N) scan.
    members = _Members(batch, n_batches)
    # Only labels short somewhere now: a swap never takes a guaranteed label below m.
    short_now = guaranteed & (counts < m).any(axis=0)
    order = np.argsort(sizes, kind="stable")
    for label in order[short_now[order]].tolist():
        for short in np.flatnonzero(counts[:, label] < m).tolist():
            while counts[short, label] < m:
                if not _one_swap(bits, batch, members, counts, columns, label, short, m,
                                 budget):
                    break


class _Members:
    """The positions of every batch, ascending, updated by swaps."""

    def __init__(self, batch, n_batches):
        self.order = np.argsort(batch, kind="stable")
        self.bounds = np.zeros(n_batches + 1, dtype=np.int64)
        np.cumsum(np.bincount(batch, minlength=n_batches), out=self.bounds[1:])

    def __getitem__(self, b):
        return self.order[self.bounds[b]:self.bounds[b + 1]]

    def swap(self, row, donor, other, short):
        """``row`` moved from ``donor`` to ``short``, ``other`` the other way."""
        for segment, old, new in ((self[donor], row, other), (self[short], other, row)):
            segment[segment == old] = new
            segment.sort()


def _one_swap(bits, batch, members, counts, columns, label, short, m, budget):
    """One swap fixing a missing positive of ``label`` in batch ``short``; False if none."""
    donors = np.flatnonzero(counts[:, label] > m)
    if donors.shape[0] == 0:
        return False
    donors = donors[np.argsort(-counts[donors, label], kind="stable")]
    in_short = members[short].copy()
    budget.spend(in_short.shape[0] * bits.n_labels)
    short_bits = bits(in_short)
    lacking = ~short_bits[:, label]
    candidates, short_bits = in_short[lacking], short_bits[lacking][:, columns]
    if candidates.shape[0] == 0:
        return False
    locked_short = counts[short, columns] <= m
    for donor in donors.tolist():
        locked_donor = counts[donor, columns] <= m
        in_donor = members[donor]
        budget.spend(in_donor.shape[0] * bits.n_labels)
        member_bits = bits(in_donor)
        givers = np.flatnonzero(member_bits[:, label])
        for k in givers.tolist():
            budget.spend(candidates.shape[0] * columns.shape[0] + REPAIR_STEP_CELLS)
            mine = member_bits[k, columns]
            # A label at or below m in a batch must not drop there.
            need_one = locked_donor & mine      # the row coming back must carry it
            need_zero = locked_short & ~mine    # the row leaving must lack it
            valid = short_bits[:, need_one].all(axis=1) & ~short_bits[:, need_zero].any(axis=1)
            hit = np.flatnonzero(valid)
            if hit.shape[0]:
                row, other = int(in_donor[k]), int(candidates[hit[0]])
                batch[row], batch[other] = short, donor
                members.swap(row, donor, other, short)
                change = member_bits[k].astype(np.int64) - \
                    bits(np.array([other], dtype=np.int64))[0].astype(np.int64)
                counts[short] += change
                counts[donor] -= change
                return True
    return False


def shortfall_message(names, counts, sizes, m):
    """The strict error's message, or None: guaranteed labels some batch holds < m of."""
    n_batches = counts.shape[0]
    least = counts.min(axis=0)
    short = [k for k in range(len(names)) if sizes[k] >= m * n_batches and least[k] < m]
    if not short:
        return None
    listed = ", ".join(f"'{names[k]}' (least {int(least[k])} of {int(sizes[k])} in "
                       f"{n_batches} batches)" for k in short)
    return (f"min_per_label={m} is not met for label(s) {listed} even after repair: some "
            f"batch holds fewer than {m} of their positives (rows carrying several of these "
            f"labels cannot be split otherwise). Pass strict=False to get the batches with "
            f"the shortfall reported (plan.label_spread()), or use fewer batches, or a "
            f"smaller min_per_label.")


def shortfall_warning(names, counts, sizes, m, epoch):
    """The ``strict=False`` warning's message, or None: each guaranteed label some batch
    holds fewer than ``m`` positives of, with the number of such batches."""
    n_batches = counts.shape[0]
    short_batches = (counts < m).sum(axis=0)
    short = [k for k in range(len(names)) if sizes[k] >= m * n_batches and short_batches[k]]
    if not short:
        return None
    listed = ", ".join(f"'{names[k]}' in {int(short_batches[k])} of {n_batches} batches"
                       for k in short)
    return (f"min_per_label={m} is not met in epoch {epoch}: batches hold fewer than {m} "
            f"positives of label(s) {listed}, though each has enough positives for every batch "
            f"(rows carrying several of these labels cannot be split otherwise). The batches "
            f"are served (strict=False); "
            f"plan.label_spread() lists every label. Use fewer batches or a smaller "
            f"min_per_label, or strict=True to refuse such a plan.")
