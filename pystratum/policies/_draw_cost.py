"""The price of an epoch's repeat draws: recycled passes and refills (issue 30).

Rows served are capped (``check_served_size``); this prices the calls. An
epoch draws once per stratum it serves (pass 0: O(strata)), and then once
more per *repeat draw*: each extra pass of a recycled stratum (``Targets``,
``Downsample``; :func:`pystratum.engine._assemble.stratum_draws`; every rng)
and each ``ClassesPerBatch`` refill after a stratum's first
(:func:`pystratum.engine._assemble_slots.slot_draws`; the R and torch
streams, one call per refill: numpy draws them in one call and
``rng="index"`` keys them per value). A draw costs its
rows plus a fixed overhead per call, the epoch-jump guard's model
(:class:`pystratum.streams._base.SkipCost`: ``call_cost`` row draws a call).

The limit scales with the epoch: repeat draws may cost up to
``MAX_SKIPPED_DRAWS`` plus the rows the epoch serves, and an epoch whose
repeat draws cost more is refused before anything is drawn. A pass draws
its pool, so the rows of all repeat passes are at most the rows served plus
one partial pass per stratum: work linear in what is served is never
refused, however large the data. What stays refused is the cost that is not
bounded by what is served: many calls for few rows (a one-row stratum
recycled pass after pass, each pass paying the call overhead). The R
package prices the same draws with the same numbers and the same rule
(``check_repeat_draws()`` in ``validation.R``).
"""

from __future__ import annotations

import numpy as np

from ..streams._base import MAX_SKIPPED_DRAWS, SequentialStream, SkipCost

__all__ = ["CALL_COST", "check_recycled_passes", "check_refill_draws", "check_repeat_draws",
           "repeat_draw_cost"]

# One call's overhead, in row draws: the epoch-jump guard's (R: CALL_COST).
CALL_COST = SequentialStream.call_cost


def repeat_draw_cost(draws, sizes) -> SkipCost:
    """The repeat draws of ``draws[s]`` draws of ``sizes[s]`` rows each, per stratum.

    Every stratum's first draw is free (it is O(strata)); each further one
    counts ``sizes[s]`` rows and :data:`CALL_COST` for its call. Exact
    integers (Python ints: no overflow).
    """
    extra = np.maximum(np.asarray(draws, dtype=np.int64) - 1, 0).tolist()
    calls = sum(extra)
    rows = sum(count * size for count, size in zip(extra, np.asarray(sizes).tolist()))
    return SkipCost(calls, rows, rows + calls * CALL_COST, True)


def check_repeat_draws(policy, cost: SkipCost, served: int, what: str, fix: str) -> None:
    """Refuse an epoch whose repeat draws cost more than ``MAX_SKIPPED_DRAWS + served``.

    ``served``: the rows the epoch serves. Repeat draws within that limit are
    work linear in the epoch and pass; past it, the refusal names the policy,
    the cost, the limit and ``fix``.
    """
    served = int(served)
    limit = MAX_SKIPPED_DRAWS + served
    if cost.cost <= limit:
        return
    raise ValueError(
        f"policy={policy!r} makes {what}: {cost.calls:,} draw(s) beyond the first of each "
        f"stratum (recycled passes or refills) of {cost.rows:,} rows, a cost of {cost.cost:,} "
        f"row draws (each draw counts its rows plus {CALL_COST:,} for the call), over the "
        f"limit of {MAX_SKIPPED_DRAWS:,} plus the {served:,} rows the epoch serves "
        f"({limit:,}). {fix}"
    )


def check_recycled_passes(policy, cuts, sizes, pool_sizes, what: str) -> None:
    """:func:`check_repeat_draws` for a rank-cut allocation: ``ceil(used / pool)`` passes a stratum."""
    pool = np.asarray(sizes if pool_sizes is None else pool_sizes, dtype=np.int64)
    used = np.asarray(cuts, dtype=np.int64)[:, -1]
    passes = -(-used // np.maximum(pool, 1))
    check_repeat_draws(policy, repeat_draw_cost(passes, pool), sum(used.tolist()), what,
                       "Serve fewer rows of the smallest strata: lower the epoch's batches or "
                       "batch_size, give those strata a smaller share, or give them more rows "
                       "(each pass of a recycled stratum is one draw).")


def check_refill_draws(policy, slots, sizes) -> None:
    """:func:`check_repeat_draws` for a slot allocation's refills drawn one call each.

    Sequential streams (R, torch) make one call per refill; numpy draws them
    all in one call and ``rng="index"`` keys them per value, so only the
    former are priced (the caller knows the stream).
    """
    sizes = np.asarray(sizes, dtype=np.int64)
    counts = np.bincount(np.asarray(slots.refill_strata, dtype=np.int64),
                         minlength=sizes.shape[0])
    served = sum(np.asarray(slots.n_slots, dtype=np.int64).tolist()) * int(slots.width)
    check_repeat_draws(policy, repeat_draw_cost(counts, sizes), served,
                       f"an epoch of {slots.num_batches:,} batches",
                       "Lower per_class, pass small='drop' to leave out the strata far smaller "
                       "than per_class, give them more rows (a small stratum's slot takes one "
                       "draw per pass over its rows), or use rng='numpy' or rng='index', which "
                       "draw every refill at once.")
