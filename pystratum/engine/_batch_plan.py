"""The plan object: an epoch's batches with the counts, weights and settings that made them."""

from __future__ import annotations

import numbers
import operator
from dataclasses import dataclass
from functools import cached_property

import numpy as np

from ..base._validation import show
from ._assemble import BatchOrder
from ..policies import MinPerStratum, Policy

__all__ = ["BatchPlan"]


@dataclass(frozen=True, repr=False)
class BatchPlan:
    """One epoch's batches, with what is needed to report and reproduce them.

    order:   int64 row positions (0-based), batches concatenated.
    bounds:  batch ``b`` is ``order[bounds[b]:bounds[b + 1]]``.
    strata:  the stratum labels (tuples for multi-column strata).
    cuts:    the policy's rank cuts, integer table (n_strata, num_batches + 1):
             ranks ``cuts[s, b] <= r < cuts[s, b + 1]`` of stratum ``s`` (in
             the epoch's order) are in batch ``b`` (see
             :class:`pystratum.policies.Allocation`).
    counts:  integer table (num_batches, n_strata): rows of each stratum per
             batch, the differences of ``cuts`` (built on first use: with
             many strata and batches it holds about one entry per row).
    seed:    pass it again (same ``rng``, ``epoch``) to get the same batches.
    policy:  the composition (a :class:`pystratum.policies.Policy`).
    weights: None when the policy has no importance weights (every row 1),
             else float64 aligned with ``order``: the weight of each served
             row (see :class:`pystratum.policies.Downsample`).
    label_counts: label plans (:class:`pystratum.policies.MultiLabel`) only, else
             None: int64 ``(num_batches, n_labels)``, positives of each label
             per batch (``strata`` are then the label names; ``cuts`` None).
    batch_strata: slot policies (:class:`pystratum.policies.ClassesPerBatch`)
             only, else None: int ``(num_batches, P)``, the stratum code of
             every slot of every batch (each slot ``K`` rows). ``cuts`` is
             then None: the sparse plan never builds an S x B table.
    """

    order: np.ndarray
    bounds: np.ndarray
    strata: tuple
    cuts: np.ndarray
    seed: object
    rng: str
    epoch: int
    shuffle: bool
    policy: Policy
    weights: np.ndarray | None = None
    batch_strata: np.ndarray | None = None
    label_counts: np.ndarray | None = None

    @cached_property
    def counts(self) -> np.ndarray:
        """Rows of each stratum in each batch, shape ``(num_batches, n_strata)``, the cuts' dtype.

        Slot plans (``batch_strata`` set) build the dense table only up to
        ``max(N, 2**20)`` entries; beyond that (10**4 classes and 10**4
        batches would be 10**8 entries) it is a ValueError pointing to
        ``batch_strata`` and :meth:`slot_counts`, the sparse views.
        Label plans (:class:`pystratum.policies.MultiLabel`): ``label_counts``,
        the positives of each label (``strata`` are the label names) per batch.
        """
        if self.label_counts is not None:
            return self.label_counts
        if self.batch_strata is None:
            return np.diff(self.cuts, axis=1).T
        n_batches, n_strata = self.num_batches, len(self.strata)
        limit = max(self.order.shape[0], 1 << 20)
        if n_batches * n_strata > limit:
            raise ValueError(
                f"plan.counts would be a dense {n_batches:,} x {n_strata:,} table "
                f"({n_batches * n_strata:,} entries, over the limit of {limit:,}) for a "
                f"{self.policy!r} plan. Use plan.batch_strata (the stratum of every slot of "
                f"every batch) or plan.slot_counts() (stratum, batch, rows triples).")
        counts = np.zeros((n_batches, n_strata), dtype=np.int64)
        width = self.policy.per_class
        np.add.at(counts, (np.repeat(np.arange(n_batches), self.batch_strata.shape[1]),
                           self.batch_strata.ravel()), width)
        return counts

    def slot_counts(self) -> tuple:
        """``(batch, stratum, rows)`` int64 arrays: the nonzero entries of :attr:`counts`.

        Sparse (one entry per slot for slot plans), so it works at any size.
        """
        if self.batch_strata is not None:
            n_batches, per_batch = self.batch_strata.shape
            return (np.repeat(np.arange(n_batches, dtype=np.int64), per_batch),
                    self.batch_strata.ravel().astype(np.int64),
                    np.full(n_batches * per_batch, self.policy.per_class, dtype=np.int64))
        batch, stratum = np.nonzero(self.counts)
        return (batch.astype(np.int64), stratum.astype(np.int64),
                self.counts[batch, stratum].astype(np.int64))

    def label_spread(self) -> dict:
        """Label plans: ``{label: (least, most)}`` positives any batch holds (else ValueError)."""
        if self.label_counts is None:
            raise ValueError("label_spread() is for MultiLabel plans (a label matrix); this plan "
                             f"has policy {self.policy!r}: use plan.counts.")
        least, most = self.label_counts.min(axis=0), self.label_counts.max(axis=0)
        return {name: (int(lo), int(hi)) for name, lo, hi in zip(self.strata, least, most)}

    @property
    def min_samples_per_stratum(self):
        """``m`` of a :class:`~pystratum.policies.MinPerStratum` plan, else None."""
        return self.policy.m if isinstance(self.policy, MinPerStratum) else None

    @property
    def num_batches(self) -> int:
        return int(self.bounds.shape[0] - 1)

    def __len__(self) -> int:
        return self.num_batches

    @property
    def batches(self) -> list:
        """List of int64 arrays of row positions, one per batch (views of ``order``)."""
        return BatchOrder(self.order, self.bounds).batches()

    def __iter__(self):
        return iter(self.batches)

    def batch_weights(self, batch: int) -> np.ndarray:
        """The weights of batch ``batch``'s rows (ones when the policy has none)."""
        batch = self._batch_index(batch)
        if self.weights is None:
            return np.ones(int(self.bounds[batch + 1] - self.bounds[batch]), dtype=np.float64)
        return self.weights[self.bounds[batch]:self.bounds[batch + 1]]

    def __getitem__(self, batch):
        """``plan[b]``: batch ``b`` (0-based; negative counts from the end) as an int64
        array; ``plan[a:b]``: a list of such arrays."""
        if isinstance(batch, slice):
            try:
                chosen = range(self.num_batches)[batch]
            except (TypeError, ValueError) as error:  # a zero step, non-integer bounds
                raise type(error)(
                    f"batch={show(batch)} is not a valid slice of the plan's "
                    f"{self.num_batches} batch(es): {error}. Use integers for start, stop and "
                    f"a non-zero step."
                ) from None
            return [self[b] for b in chosen]
        index = self._batch_index(batch)
        return self.order[self.bounds[index]:self.bounds[index + 1]]

    def _batch_index(self, batch) -> int:
        """``batch`` as an index in ``0..num_batches-1``, or an error naming ``batch``."""
        n = self.num_batches
        if isinstance(batch, (bool, np.bool_)) or not isinstance(batch, (numbers.Integral,
                                                                         np.integer)):
            raise TypeError(
                f"batch must be an integer or a slice, got batch={show(batch)} of type "
                f"{type(batch).__name__}: plan[b] is batch b (0-based, negative counts from "
                f"the end), plan[a:b] a list of batches."
            )
        index = operator.index(batch)
        if not -n <= index < n:
            raise IndexError(
                f"batch={index} is out of range for a plan with {n} batch(es); use 0..{n - 1} "
                f"or -{n}..-1."
            )
        return index % n

    def batch_of_row(self) -> np.ndarray:
        """int64 array with the 0-based batch of each row position."""
        result = np.full(self.order.shape[0], -1, dtype=np.int64)
        sizes = np.diff(self.bounds)
        result[self.order] = np.repeat(np.arange(self.num_batches, dtype=np.int64), sizes)
        return result

    def report(self):
        """The report that fits this plan's policy family (one dispatch, every face asks it).

        Stratum policies: the batches x strata count table. ``ClassesPerBatch``:
        the P classes of each batch (K rows each) and how often each class
        appears, never a batches x classes table. ``MultiLabel``: positives of
        every label per batch. Each report's headline states its policy's
        promise and how many batches keep it.
        """
        from ._report import report_of

        return report_of(self)

    def summary(self):
        """The plan's :class:`~pystratum.engine._report.PlanSummary`: the headline (the
        policy's promise, kept by how many batches) and one record per stratum (rows,
        least and most in a batch), per label (positives) or, for ``ClassesPerBatch``,
        per number of batches a class appears in. ``print()`` shows it as text."""
        return self.report().summary()

    def counts_table(self, max_rows: int | None = 10) -> str:
        """The plan's per-batch table as text (like the blog's ``dcast``), in its family's form.

        Stratum policies: batches x strata counts with a ``total`` column.
        ``MultiLabel``: positives of each label per batch; ``total`` is the
        batch's rows (a row may carry several labels). ``ClassesPerBatch``: one
        line per batch naming its P classes (K rows each), so 1,500 classes
        never make 1,500 columns. Batches are numbered from 0, as in
        ``plan[b]`` and :meth:`batch_of_row` (Python is 0-based throughout; the
        R package numbers from 1). ``max_rows``: at most this many batch rows
        (an int >= 1), the first and last ones around a ``...`` row; None shows
        every batch.

        Past ``WIDE_FROM`` (20) strata or labels the text no longer has a column
        each: one line per stratum (label) with its least, median and most in a
        batch and its total, the 10 least served first, then "... and N more
        strata"; :attr:`counts` keeps every count. ``print(plan.summary())`` is
        compact past the same number (its ``rows`` keep every record).
        """
        return self.report().table(max_rows)

    def plot(self, ax=None, *, title=None, max_strata: int = 8, view: str = "auto"):
        """This plan's figure, as its report draws it (needs matplotlib); returns the Axes.

        Stratum and label plans: one stacked bar per batch (0-based), one band
        per stratum or label (with more than ``max_strata`` the largest
        ``max_strata - 1`` are drawn and the rest summed into "other"); past
        ``pystratum.plot.AGGREGATE_FROM`` batches (``view="auto"``) the spread of
        each column's per-batch counts instead. ``ClassesPerBatch`` plans: how
        many classes appear in how many batches. The title states the policy's
        promise. Without ``ax``, a new Figure laid out so that ``savefig`` keeps
        the legend. See :func:`pystratum.plot.plot_counts`.
        """
        from ..plot import draw_panel

        return draw_panel(self.report().panel(title), ax, max_strata=max_strata, view=view)

    def __repr__(self) -> str:
        return (
            f"BatchPlan(num_batches={self.num_batches}, n_rows={self.order.shape[0]}, "
            f"n_strata={len(self.strata)}, policy={self.policy!r}, rng={self.rng!r}, "
            f"seed={self.seed!r}, "
            f"epoch={self.epoch}, shuffle={self.shuffle})"
        )
