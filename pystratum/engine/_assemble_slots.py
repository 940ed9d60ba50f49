"""Slot assembly: a slot allocation's draws and batches (``ClassesPerBatch``).

A slot policy gives each served stratum ``n_slots[s]`` slots of ``K`` rows;
an epoch's batches are the strata's epoch sequences (pass 0 in permuted
order, then refills or further passes) cut into slots and laid into
batches (:func:`slot_layout`). This module specifies the draw order
(:func:`slot_draws`, :func:`slot_epoch_draws`, :func:`slot_index_draws`,
and :func:`pass_sequence` for ``classes="uniform"``, whose pass orders are
keyed by (seed, pass, stratum)); R's ``assemble.R`` follows it and the
golden vectors pin it. Rank-cut assembly (every other policy) lives in
:mod:`pystratum.engine._assemble`.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .. import kernels as kernel_gate
from ..strata._encode import smallest_code_dtype
from ._assemble import _PACKED_MAX_ROWS, BatchOrder

__all__ = ["SlotLayout", "assemble_slots", "partial_shuffles", "pass_key", "pass_positions",
           "pass_sequence", "slot_draws", "slot_epoch_draws", "slot_index_draws", "slot_layout",
           "smallest_index_dtype"]


def slot_draws(slots, n_rows: int) -> list:
    """``[(size, take), ...]``: a slot allocation's draws of one epoch, in draw order.

    The permutation of all ``n_rows`` rows (pass 0 of every stratum), the
    layout order (a permutation of the strata with slots), then one draw per
    refill (``SlotPlan.refill_*``). See :class:`pystratum.policies.ClassesPerBatch`.
    """
    served = int(np.count_nonzero(slots.n_slots))
    if slots.pass_starts is not None:
        return [(served, served)]  # the layout order: the pass orders are keyed
    return [(n_rows, n_rows), (served, served)] + list(
        zip(slots.refill_sizes.tolist(), slots.refill_takes.tolist()))


def slot_epoch_draws(stream, n_rows: int, draws, epoch: int, draws_of=None) -> list:
    """The epoch's draws of a slot allocation (:func:`slot_draws`), one array each.

    Sequential streams (R, torch) make one stream draw per entry (R:
    ``sample.int(size, take)``). The numpy stream draws from the epoch's
    generator: ``permutation(N)``, ``permutation(S')``, then every refill
    from one ``integers(0, highs)`` call resolved as partial Fisher-Yates
    shuffles (:func:`partial_shuffles`), so ten thousand refills cost one
    call, not ten thousand.
    """
    generator_for_epoch = getattr(stream, "generator_for_epoch", None)
    if generator_for_epoch is None:
        return stream.epoch_draws(n_rows, draws, epoch, draws_of)
    from ..streams._base import _permutation

    generator = generator_for_epoch(epoch)
    first = [_permutation(generator, size) for size, _ in draws[:2]]
    sizes = np.asarray([size for size, _ in draws[2:]], dtype=np.int64)
    takes = np.asarray([take for _, take in draws[2:]], dtype=np.int64)
    # The refills as one flat array (entry after entry): what assemble_slots reads.
    return first + ([partial_shuffles(generator, sizes, takes)] if sizes.shape[0] else [])


def slot_index_draws(encoded, slots, seed: int, epoch: int) -> list:
    """A slot allocation's draws for ``rng="index"``: keyed bijections, no stream.

    The same three parts as :func:`slot_draws`, each a keyed bijection
    (``pystratum.streams._index``; R's ``index_permute_ranks`` gives the
    same values): pass 0 of the stratum with turn ``t`` (order of first
    appearance) lists its rows (in row order) permuted by stream ``t``, as
    every ``rng="index"`` plan does; the layout order is the permutation of
    ``range(S')`` by stream ``S``; refill ``i`` (draw order, from 0) takes
    the first ``take`` values of the permutation of ``range(size)`` by
    stream ``S + 1 + i``. Materialised: O(N) per epoch.
    """
    from ..streams._index import permute_ranks, permute_run_ranks, round_keys

    sizes = np.asarray(encoded.sizes, dtype=np.int64)
    n_strata = sizes.shape[0]
    served = int(np.count_nonzero(slots.n_slots))
    if slots.pass_starts is not None:  # the layout order alone
        return [permute_ranks(np.arange(served, dtype=np.int64), served,
                              round_keys(seed, epoch, [n_strata])[:, 0])]
    turn = np.empty(n_strata, dtype=np.int64)
    turn[np.argsort(encoded.first_rows, kind="stable")] = np.arange(n_strata)
    keys = round_keys(seed, epoch, turn, work=int(sizes.sum()))
    offsets = np.cumsum(sizes) - sizes
    grouped = encoded.grouped_rows
    # Pass 0, strata in code order: assemble_slots groups it stably by stratum.
    order = np.empty(int(sizes.sum()), dtype=np.int64)
    kernels = kernel_gate.compiled_for("index", order.shape[0])
    if kernels is not None:
        kernels.permuted_groups(np.ascontiguousarray(grouped), offsets, sizes,
                                np.ascontiguousarray(keys), order)
    else:
        _permuted_groups(grouped, offsets, sizes, keys, order)
    layout = permute_ranks(np.arange(served, dtype=np.int64), served,
                           round_keys(seed, epoch, [n_strata])[:, 0])
    takes = np.asarray(slots.refill_takes, dtype=np.int64)
    if takes.shape[0] == 0:
        return [order, layout]
    entry = np.repeat(np.arange(takes.shape[0], dtype=np.int64), takes)
    within = np.arange(entry.shape[0], dtype=np.int64) - np.repeat(np.cumsum(takes) - takes,
                                                                    takes)
    refill_keys = round_keys(seed, epoch, n_strata + 1 + np.arange(takes.shape[0]),
                             work=entry.shape[0])
    picks = permute_run_ranks(within, entry, slots.refill_sizes, refill_keys)
    return [order, layout, picks]


def _permuted_groups(grouped, offsets, sizes, keys, order):
    """``order[offsets[s] + r] = grouped[offsets[s] + perm_s(r)]`` (keys ``keys[:, s]``), numpy's path."""
    from ..streams._index import permute_run_ranks

    n_strata = sizes.shape[0]
    for first in range(0, n_strata, _INDEX_BLOCK_STRATA):
        block = np.arange(first, min(first + _INDEX_BLOCK_STRATA, n_strata))
        run = np.repeat(block - first, sizes[block])
        start = int(offsets[first])
        base = offsets[block][run]
        rank = np.arange(run.shape[0], dtype=np.int64) - (base - start)
        position = permute_run_ranks(rank, run, sizes[block], keys[:, block])
        order[start:start + run.shape[0]] = grouped[position + base]


# Strata whose pass 0 _permuted_groups computes at once (bounds the per-row key table).
_INDEX_BLOCK_STRATA = 4096


def partial_shuffles(generator, sizes, takes) -> np.ndarray:
    """``takes[i]`` distinct values of ``range(sizes[i])`` per entry, from one ``integers`` call.

    Returned flat, entry after entry.

    ``highs`` lists ``size, size - 1, ..., size - take + 1`` entry by entry;
    ``j = generator.integers(0, highs)``; entry ``i`` is R's ``sample.int``
    loop on a virtual array ``x = 0..size-1``: step ``t`` takes ``x[j_t]``
    and moves ``x[size - 1 - t]`` into its place. Entries of at most
    ``_STEPWISE_MAX_TAKE`` values are vectorised over entries, one step at a
    time (a step reads the earlier steps' moves); longer entries replay the
    loop one entry at a time (``pystratum.streams._r``'s swap-remove
    replay, O(take) or O(size) each), so the cost is O(total + entries), never
    O(max(take)^2) numpy calls.
    """
    count = sizes.shape[0]
    if count == 0:
        return np.empty(0, dtype=np.int64)
    from ..streams._r import _swap_remove

    total = int(takes.sum())
    first = np.cumsum(takes) - takes
    step_of = np.arange(total, dtype=np.int64) - np.repeat(first, takes)
    highs = np.repeat(sizes, takes) - step_of
    picks = generator.integers(0, highs)
    values = np.empty(total, dtype=np.int64)
    short = takes <= _STEPWISE_MAX_TAKE
    if short.any():
        _stepwise_shuffles(picks, values, sizes[short], takes[short], first[short])
    for entry in np.flatnonzero(~short).tolist():
        at, take = int(first[entry]), int(takes[entry])
        values[at:at + take] = _swap_remove(picks[at:at + take], int(sizes[entry]))
    return values


# Entries taking at most this many values are resolved together, step by step:
# O(_STEPWISE_MAX_TAKE^2) numpy calls over all of them, whatever their number.
_STEPWISE_MAX_TAKE = 16


def _stepwise_shuffles(picks, values, sizes, takes, first) -> None:
    """:func:`partial_shuffles`' loop for entries ``first`` (short takes), vectorised over entries."""
    count = sizes.shape[0]
    longest = int(takes.max())
    moved_at = np.full((longest, count), -1, dtype=np.int64)  # position written at step t
    moved_value = np.zeros((longest, count), dtype=np.int64)

    def read(entries, positions, steps):
        value = positions.copy()
        for t in range(steps):  # later moves override earlier ones
            hit = moved_at[t, entries] == positions
            value[hit] = moved_value[t, entries[hit]]
        return value

    for t in range(longest):
        entries = np.flatnonzero(takes > t)
        at = first[entries] + t
        position = picks[at]
        values[at] = read(entries, position, t)
        moved_at[t, entries] = position
        moved_value[t, entries] = read(entries, sizes[entries] - 1 - t, t)


@dataclass(frozen=True)
class SlotLayout:
    """Where a slot allocation's slots go in one epoch.

    run_start: int64 ``(S,)``: stratum ``s``'s slot ``j`` is slot position
               ``run_start[s] + j`` (strata laid out one after the other in
               the epoch's layout order).
    batch_strata: ``(B, P)``: the stratum of every slot of every batch, in order.
    columns:   int64 ``(B,)``: batch ``b`` holds slot positions ``p * B + columns[b]``.
    """

    run_start: np.ndarray
    batch_strata: np.ndarray
    columns: np.ndarray


def slot_layout(slots, first_rows, layout_draw) -> SlotLayout:
    """The epoch's layout: slot position ``q`` goes to batch ``(q mod B) * g mod B``, place ``q // B``."""
    n_slots = np.asarray(slots.n_slots, dtype=np.int64)
    turn = np.argsort(first_rows, kind="stable")
    served = turn[n_slots[turn] > 0]
    layout = served[np.asarray(layout_draw, dtype=np.int64)]
    runs = n_slots[layout]
    run_start = np.zeros(n_slots.shape[0], dtype=np.int64)
    run_start[layout] = np.cumsum(runs) - runs
    batches, per_batch = slots.num_batches, slots.per_batch
    # Slot position q = place * B + i is slot `place` of batch i * g mod B.
    inverse = pow(slots.step, -1, batches) if batches > 1 else 0
    columns = np.arange(batches, dtype=np.int64) * inverse % batches
    strata = np.repeat(layout.astype(smallest_index_dtype(n_slots.shape[0])), runs)
    batch_strata = strata.reshape(per_batch, batches)[:, columns].T.copy()
    return SlotLayout(run_start, batch_strata, columns)


def smallest_index_dtype(count: int):
    """int32 when indices below ``count`` fit, else int64."""
    return np.int32 if count <= np.iinfo(np.int32).max else np.int64


def assemble_slots(drawn, slots, codes, sizes, first_rows, passes=None) -> tuple:
    """Batches of a slot allocation: ``(BatchOrder, SlotLayout)``.

    ``drawn``: the arrays of :func:`slot_epoch_draws` (permutation of the
    rows, layout order, refills: one array each, or all in one flat array). Stratum ``s``'s epoch sequence (its rows in
    the permutation's order, then its refills, each refill indexing those
    rows) is cut into slots of K; slot ``j`` is slot position ``run_start[s]
    + j`` and goes to batch ``(q mod B) * g mod B`` as its ``(q // B)``-th
    slot. Vectorised: O(N + B*P*K) time and memory, no O(S x B) table.

    With ``slots.pass_starts`` (``classes="uniform"``) ``drawn`` is the
    layout order alone and ``passes = (grouped_rows, key)`` gives the pass
    sequences (:func:`pass_sequence`).
    """
    if slots.pass_starts is not None:
        layout = slot_layout(slots, first_rows, drawn[0])
        return _uniform_batches(passes[0], sizes, first_rows, slots, layout, passes[1]), layout
    permutation, layout_draw, *refills = drawn
    sizes = np.asarray(sizes, dtype=np.int64)
    layout = slot_layout(slots, first_rows, layout_draw)
    width, per_batch, batches = slots.width, slots.per_batch, slots.num_batches
    n_slots = np.asarray(slots.n_slots, dtype=np.int64)
    served = n_slots > 0
    # The epoch sequences, strata in layout order: rank u of s at K * run_start[s] + u, so
    # slot position q is sequence[q*K:(q+1)*K].
    base = np.where(served, width * layout.run_start, -1)
    sequence = np.empty(batches * per_batch * width, dtype=np.int64)
    permutation = np.asarray(permutation)
    n = permutation.shape[0]
    kernels = kernel_gate.compiled_for("assemble", n) if n <= _PACKED_MAX_ROWS else None
    if kernels is not None:
        # One pass: each row's rank by a running count per stratum (a counting sort).
        kernels.place_slot_rows(permutation, codes, base, sequence)
    else:
        # Rows of each stratum in permuted order: a stable sort by stratum.
        codes = codes.astype(smallest_code_dtype(sizes.shape[0]), copy=False)
        grouped = permutation[np.argsort(codes[permutation], kind="stable")]
        destination = np.repeat(base - (np.cumsum(sizes) - sizes), sizes)
        destination += np.arange(n, dtype=np.int64)
        if served.all():
            sequence[destination] = grouped
        else:
            keep = np.repeat(served, sizes)
            sequence[destination[keep]] = grouped[keep]
    if refills:
        strata = np.asarray(slots.refill_strata, dtype=np.int64)
        takes = np.asarray(slots.refill_takes, dtype=np.int64)
        picks = np.concatenate(refills).astype(np.int64, copy=False)
        # Each refill's first rank: after the stratum's rows and its earlier refills.
        by_stratum = np.argsort(strata, kind="stable")
        before = np.empty_like(takes)
        ends = np.cumsum(takes[by_stratum])
        group_first = np.r_[0, ends[:-1]]
        is_new = np.r_[True, strata[by_stratum][1:] != strata[by_stratum][:-1]]
        before[by_stratum] = group_first - np.maximum.accumulate(np.where(is_new, group_first, 0))
        owner_base = np.repeat(base[strata], takes)
        within = np.arange(picks.shape[0], dtype=np.int64) - np.repeat(np.cumsum(takes) - takes,
                                                                        takes)
        # A pick is a pass-0 rank of the stratum, already in its sequence: copy that row.
        sequence[owner_base + np.repeat(sizes[strata] + before, takes) + within] = \
            sequence[owner_base + picks]
    return _gather_slots(sequence, slots, layout, n), layout


def _gather_slots(sequence, slots, layout, n_rows) -> BatchOrder:
    """The batches of the slots' epoch sequences (strata in layout order, slot after slot)."""
    width, per_batch, batches = slots.width, slots.per_batch, slots.num_batches
    kernels = kernel_gate.compiled_for("assemble", n_rows) if n_rows <= _PACKED_MAX_ROWS \
        else None
    # Slot position q = place * B + i goes to batch i * g mod B: gather the K-row blocks.
    columns = layout.columns
    if kernels is not None:
        order = np.empty(sequence.shape[0], dtype=np.int64)
        kernels.gather_slot_blocks(sequence, columns, per_batch, width, order)
    else:
        order = np.empty((batches, per_batch, width), dtype=np.int64)
        np.take(sequence.reshape(per_batch, batches, width), columns, axis=1,
                out=order.transpose(1, 0, 2))
        order = order.reshape(-1)
    bounds = np.arange(batches + 1, dtype=np.int64) * (per_batch * width)
    return BatchOrder(order=order, bounds=bounds)


def pass_key(stream):
    """The key of ``classes="uniform"``'s pass orders for ``stream`` (None: no shuffle).

    ``rng="index"``: its seed; R and torch: ``seed mod 2**52``; numpy: the
    seed sequence's ``generate_state(1, uint64)[0] >> 12`` (a Generator:
    its bit generator's seed sequence).
    """
    if stream is None:
        return None
    if getattr(stream, "name", None) == "index":
        return int(stream.seed)
    sequence = getattr(stream, "seed_sequence", None)
    if sequence is None and getattr(stream, "generator", None) is not None:
        sequence = getattr(stream.generator.bit_generator, "seed_seq", None)
        if not isinstance(sequence, np.random.SeedSequence):
            return int(stream.generator.integers(2**52))
    if sequence is not None:
        return int(sequence.generate_state(1, np.uint64)[0]) >> 12
    return int(stream.seed) % 2**52


def _uniform_batches(grouped, sizes, first_rows, slots, layout, key) -> BatchOrder:
    """``classes="uniform"``'s batches: :func:`pass_sequence` cut into the layout's slots.

    With numba (the ``fast`` extra) one compiled pass over the strata
    (``pystratum.kernels._index.uniform_batches``) gives the same rows.
    """
    width, per_batch, batches = slots.width, slots.per_batch, slots.num_batches
    counts = np.asarray(slots.n_slots, dtype=np.int64) * width
    kernels = kernel_gate.compiled_for("index", int(counts.sum()))
    if kernels is None:
        sequence = pass_sequence(grouped, sizes, first_rows, slots, layout.run_start, key)
        return _gather_slots(sequence, slots, layout, sequence.shape[0])
    sizes = np.asarray(sizes, dtype=np.int64)
    turn = np.empty(sizes.shape[0], dtype=np.int64)
    turn[np.argsort(first_rows, kind="stable")] = np.arange(sizes.shape[0])
    batch_of = np.empty(batches, dtype=np.int64)  # slot position q goes to batch_of[q mod B]
    batch_of[layout.columns] = np.arange(batches, dtype=np.int64)
    order = np.empty(batches * per_batch * width, dtype=np.int64)
    kernels.uniform_batches(np.ascontiguousarray(grouped), np.cumsum(sizes) - sizes, sizes, turn,
                            counts, np.asarray(slots.pass_starts, dtype=np.int64),
                            np.asarray(layout.run_start, dtype=np.int64), width, key is not None,
                            0 if key is None else int(key), batch_of, per_batch, order)
    bounds = np.arange(batches + 1, dtype=np.int64) * (per_batch * width)
    return BatchOrder(order=order, bounds=bounds)


def pass_sequence(grouped, sizes, first_rows, slots, run_start, key) -> np.ndarray:
    """The epoch sequences of ``classes="uniform"``, strata in layout order (rows, int64).

    Stratum ``s`` serves ranks ``pass_starts[s] ..`` of its pass sequence
    (``n_slots[s] * K`` of them) at ``K * run_start[s] ..``; rank ``u`` is
    position ``u mod N_s`` of pass ``u // N_s``. A pass's raw order is the
    keyed bijection ``permute_ranks(position, N_s, round_keys(key, pass,
    turn))`` of the stratum's rows in row order (``key=None``: row order);
    the first ``K`` positions of a pass that starts inside a slot are then
    reordered (:func:`_pass_heads`) so that the slot repeats no row.
    """
    sizes = np.asarray(sizes, dtype=np.int64)
    width = slots.width
    n_slots = np.asarray(slots.n_slots, dtype=np.int64)
    n_strata = sizes.shape[0]
    turn = np.empty(n_strata, dtype=np.int64)
    turn[np.argsort(first_rows, kind="stable")] = np.arange(n_strata)
    offsets = np.cumsum(sizes) - sizes
    counts = n_slots * width
    stratum = np.repeat(np.arange(n_strata, dtype=np.int64), counts)
    within = np.arange(stratum.shape[0], dtype=np.int64) - np.repeat(np.cumsum(counts) - counts,
                                                                      counts)
    rank = np.asarray(slots.pass_starts, dtype=np.int64)[stratum] + within
    served = pass_positions(_RawPasses(key, sizes, turn), stratum, rank, width)
    sequence = np.empty(stratum.shape[0], dtype=np.int64)
    sequence[width * run_start[stratum] + within] = grouped[offsets[stratum] + served]
    return sequence


def pass_positions(raw, stratum, rank, width) -> np.ndarray:
    """Member positions of ranks ``rank`` of strata ``stratum`` in their pass sequences.

    Rank ``u`` is position ``u mod N_s`` of pass ``u // N_s``: the raw
    pass order (``raw``, a :class:`_RawPasses`), except positions ``< K``
    of a pass that begins inside a slot (``N_s >= K``), which take the
    reordered head (:func:`_pass_heads`). Entries of one (stratum, pass)
    should be consecutive (their keys are made once per run). Used by
    :func:`pass_sequence` (a whole epoch) and by the lazy plan (a few
    slots at a time), so both give the same rows.
    """
    size = raw.sizes[stratum]
    passes, position = np.divmod(rank, size)
    served = raw.positions(stratum, passes, position)
    # Positions < K of a pass that begins inside a slot (N_s >= K): the reordered head.
    fixed = np.flatnonzero((position < width) & (passes >= 1) & (size >= width) &
                           (passes * size % width != 0))
    if fixed.shape[0]:
        pair = stratum[fixed] * (int(passes.max()) + 1) + passes[fixed]
        _, first, which = np.unique(pair, return_index=True, return_inverse=True)
        heads = _pass_heads(raw, stratum[fixed][first], passes[fixed][first], width)
        served[fixed] = heads[which.reshape(-1), position[fixed]]
    return served


class _RawPasses:
    """Raw pass orders: position ``i`` of pass ``p`` of stratum ``s`` -> a position in ``s``."""

    def __init__(self, key, sizes, turn):
        self.key, self.sizes, self.turn = key, sizes, turn

    def positions(self, stratum, passes, position) -> np.ndarray:
        """Raw positions; consecutive entries of one (stratum, pass) share its keys.

        Each run of one (stratum, pass) gets its round keys once; a small
        domain (``N_s <= SMALL_DOMAIN``) is ranked once per run, not once per
        value (:func:`pystratum.streams._index.permute_run_ranks`). The values
        are ``permute_ranks``'s.
        """
        if self.key is None:
            return np.asarray(position, dtype=np.int64).copy()
        from ..streams._index import permute_run_ranks, round_keys

        count = stratum.shape[0]
        if count == 0:
            return np.empty(0, dtype=np.int64)
        new = np.r_[True, (stratum[1:] != stratum[:-1]) | (passes[1:] != passes[:-1])]
        first = np.flatnonzero(new)
        run = np.cumsum(new) - 1
        keys = round_keys(self.key, passes[first], self.turn[stratum[first]])
        return permute_run_ranks(position, run, self.sizes[stratum[first]], keys)


def _pass_heads(raw, stratum, passes, width) -> np.ndarray:
    """Served positions ``0 .. K-1`` of passes ``passes`` of strata ``stratum``, ``(m, K)``.

    Pass ``p >= 1`` of a stratum with ``N >= K`` rows whose start lies inside
    a slot (``t = p * N mod K > 0`` rows of pass ``p - 1`` in that slot):
    its first K raw positions, reordered so that the first ``K - t`` of them
    not among pass ``p - 1``'s last ``t`` served positions come first, the
    others after them in raw order. Pass ``p - 1``'s served tail reaches
    into its own head only when ``N - t < K``: that recursion ends within
    ``K / gcd(N, K)`` passes (a pass starting on a slot edge is raw).
    """
    m = stratum.shape[0]
    column = np.arange(width, dtype=np.int64)
    size = raw.sizes[stratum]
    block = raw.positions(np.repeat(stratum, width), np.repeat(passes, width),
                          np.tile(column, m)).reshape(m, width)
    tail = passes * size % width
    need = np.flatnonzero((passes >= 1) & (size >= width) & (tail > 0))
    if need.shape[0] == 0:
        return block
    s, p, t, n = stratum[need], passes[need], tail[need], size[need]
    # Pass p - 1's last t served positions (columns >= t unused).
    at = n[:, None] - t[:, None] + column[None, :width - 1]
    used = column[None, :width - 1] < t[:, None]
    at = np.where(used, at, n[:, None] - 1)
    previous = raw.positions(np.repeat(s, width - 1), np.repeat(p - 1, width - 1),
                             at.reshape(-1)).reshape(need.shape[0], width - 1)
    inside = np.flatnonzero((at < width).any(axis=1))
    if inside.shape[0]:
        heads = _pass_heads(raw, s[inside], p[inside] - 1, width)
        rows = np.repeat(np.arange(inside.shape[0]), width - 1).reshape(-1, width - 1)
        mask = at[inside] < width
        previous[inside] = np.where(mask, heads[rows, np.minimum(at[inside], width - 1)],
                                    previous[inside])
    clash = ((block[need][:, :, None] == previous[:, None, :]) & used[:, None, :]).any(axis=2)
    free = ~clash
    front = free & (np.cumsum(free, axis=1) <= (width - t)[:, None])
    order = np.argsort(np.where(front, column, width + column), axis=1, kind="stable")
    block[need] = np.take_along_axis(block[need], order, axis=1)
    return block
