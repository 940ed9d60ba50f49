"""Lazy batches of a slot policy (``ClassesPerBatch``, ``rng="index"``): batch ``b`` alone.

The materialised plan (``plan_batches(..., rng="index")``,
:func:`pystratum.engine._assemble_slots.slot_index_draws` and
:func:`~pystratum.engine._assemble_slots.assemble_slots`) builds every stratum's
epoch sequence (O(N)) and cuts it into slots. Batch ``b`` needs only its P
slots, and each slot's K rows follow from keyed bijections:

1. Per epoch, O(S): the policy's slot counts (``lazy_slots``: ``n_s`` per
   stratum, no refill list), the layout order (the keyed permutation of
   the ``S'`` served strata, stream ``S``) and the cumulative run ends of
   the strata in that order (``ends``). This is the whole precomputation.
2. Batch ``b`` holds slot positions ``q = p * B + c_b`` (``p < P``, ``c_b =
   b * g^-1 mod B``); the stratum of ``q`` is the run containing it (a
   binary search in ``ends``, O(log S)) and its slot ``j = q - run start``.
3. Ranks ``j*K .. j*K + K - 1`` of that stratum:

   * ``classes="proportional"``: a rank ``u < N_s`` is pass-0 rank ``u``,
     member ``perm_{seed,epoch,turn}(u)``; a rank ``u >= N_s`` is a refill:
     :class:`pystratum.policies.SlotRefills` gives its draw ``i`` (from
     O(S) per-stratum counts), the draw's domain and the place in it, and
     the draw's keyed bijection (stream ``S + 1 + i``) gives the pass-0 rank
     it copies;
   * ``classes="uniform"``: rank ``pass_starts[s] + u`` of the stratum's
     pass sequence (:func:`pystratum.engine._assemble_slots.pass_positions`, the
     function the materialised plan uses).

So a batch costs O(P * (K + log S)) (a pass head's reorder adds O(K^2)
per slot that starts a pass), the plan O(S) memory beyond the member lists,
and batch ``b`` equals batch ``b`` of the materialised plan row for row:
the same slots, the same keyed values, the same order (slot by slot, each
slot's K rows in epoch-sequence order).
"""

from __future__ import annotations

import numpy as np

from ..policies import check_slot_layout
from ..streams._index import permute_ranks
from ._assemble_slots import _RawPasses, pass_positions, smallest_index_dtype

__all__ = ["LazySlots"]


class LazySlots:
    """One epoch of a slot policy's lazy plan (see the module docstring).

    members: the :class:`~pystratum.strata._members.StratumMembers`.
    policy:  a policy with ``allocates_slots`` and ``lazy_slots()``.
    stream, epoch: the :class:`~pystratum.streams._index.IndexStream` and the epoch.
    pass0:   ``pass0(stratum, ranks)`` -> member positions of pass-0 ranks
             (the lazy plan's keyed bijections of the strata).
    """

    def __init__(self, members, policy, stream, epoch: int, pass0, num_batches=None):
        self.members = members
        self.stream, self.epoch = stream, int(epoch)
        plan, refills = policy.lazy_slots(members, self.epoch)
        check_slot_layout(plan, members, policy, self.epoch, num_batches=num_batches)
        self.plan, self.refills, self._pass0 = plan, refills, pass0
        self.num_batches = plan.num_batches
        self.per_batch, self.width = plan.per_batch, plan.width
        n_slots = np.asarray(plan.n_slots, dtype=np.int64)
        n_strata = n_slots.shape[0]
        turn_order = np.argsort(members.first_rows, kind="stable")
        served = turn_order[n_slots[turn_order] > 0]
        count = served.shape[0]
        layout_draw = permute_ranks(np.arange(count, dtype=np.int64), count,
                                    stream.keys(self.epoch, [n_strata])[:, 0])
        self.layout = served[layout_draw]
        runs = n_slots[self.layout]
        self.ends = np.cumsum(runs)
        self.run_first = self.ends - runs
        batches = self.num_batches
        self.inverse = pow(plan.step, -1, batches) if batches > 1 else 0
        self.pass_starts = None
        if plan.pass_starts is not None:
            turn = np.empty(n_strata, dtype=np.int64)
            turn[turn_order] = np.arange(n_strata)
            self.pass_starts = np.asarray(plan.pass_starts, dtype=np.int64)
            # rng="index": the pass orders are keyed by the seed itself
            # (engine._assemble_slots.pass_key).
            self._raw = _RawPasses(int(stream.seed),
                                   np.asarray(members.sizes, dtype=np.int64), turn)

    def columns(self, batch_ids) -> np.ndarray:
        """``c_b = b * g^-1 mod B``: batch ``b`` holds slot positions ``p * B + c_b``."""
        batch_ids = np.asarray(batch_ids, dtype=np.int64)
        if self.num_batches <= 3_037_000_499:  # b * g^-1 stays below 2**63
            return batch_ids * self.inverse % self.num_batches
        return np.asarray([b * self.inverse % self.num_batches for b in batch_ids.tolist()],
                          dtype=np.int64)

    def slots(self, batch_ids):
        """``(stratum, slot)``: int64 ``(len(batch_ids), P)``, each batch's slots in order."""
        places = np.arange(self.per_batch, dtype=np.int64) * self.num_batches
        q = places[None, :] + self.columns(batch_ids)[:, None]
        run = np.searchsorted(self.ends, q, side="right")
        return self.layout[run], q - self.run_first[run]

    def batch_strata(self, batch_ids) -> np.ndarray:
        """The stratum of every slot of the given batches, ``(len(batch_ids), P)``."""
        stratum, _ = self.slots(batch_ids)
        return stratum.astype(smallest_index_dtype(self.members.n_strata))

    def batches_of(self, batch_ids):
        """``(order, bounds)`` of the given batches (P * K rows each)."""
        batch_ids = np.asarray(batch_ids, dtype=np.int64).reshape(-1)
        stratum, slot = self.slots(batch_ids)
        k = self.width
        strata = np.repeat(stratum.reshape(-1), k)
        ranks = (np.repeat(slot.reshape(-1) * k, k)
                 + np.tile(np.arange(k, dtype=np.int64), stratum.size))
        if self.pass_starts is not None:
            positions = pass_positions(self._raw, strata, self.pass_starts[strata] + ranks, k)
        else:
            positions = self._pass0(strata, self._pass0_ranks(strata, ranks))
        order = self.members.member(strata, positions)
        bounds = np.arange(batch_ids.shape[0] + 1, dtype=np.int64) * (self.per_batch * k)
        return order, bounds

    def _pass0_ranks(self, strata, ranks) -> np.ndarray:
        """Ranks of the epoch sequences -> the pass-0 ranks they serve (refills copy one)."""
        sizes = np.asarray(self.members.sizes, dtype=np.int64)
        refill = np.flatnonzero(ranks >= sizes[strata])
        if refill.shape[0] == 0:
            return ranks
        draw, size, within = self.refills.locate(strata[refill], ranks[refill])
        n_strata = sizes.shape[0]
        unique, which = np.unique(draw, return_inverse=True)  # a draw's K values share keys
        keys = self.stream.keys(self.epoch, n_strata + 1 + unique)[:, which.reshape(-1)]
        ranks = ranks.copy()
        ranks[refill] = permute_ranks(within, size, keys)
        return ranks
