"""What a plan reports, one report per policy family, each stating its own policy's promise.

* ``"strata"`` (:class:`StratumReport`): stratum policies (MinPerStratum, FixedSize,
  Targets, Downsample): rows of every stratum in every batch.
* ``"classes"`` (:class:`ClassesReport`): slot policies (ClassesPerBatch): which P
  classes each batch holds (K rows each) and how often each class appears; never a
  batches x classes table.
* ``"labels"`` (:class:`LabelReport`): label-matrix policies (MultiLabel): positives
  of every label in every batch (a row counts once per label it carries).

:func:`report_of` is the one dispatch: it reads the policy's family from the
flags every policy already carries (``reads_label_matrix``, ``allocates_slots``),
and every face (``BatchPlan.counts_table``/``summary``/``plot``, the CLI) asks it.
The R package's ``batch_count_table()`` keeps the same three families with the
same numbers.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..base._validation import check_int
from ..strata._labels import label_text, shown_label

__all__ = ["report_family", "report_of", "PlanSummary", "StratumReport", "ClassesReport",
           "LabelReport", "WIDE_FROM", "STRATA_SHOWN"]

# Past WIDE_FROM strata (labels) a printed table or summary no longer gives each its
# own column (line): it shows the STRATA_SHOWN least served (fewest rows in a batch
# first), then "... and N more strata". The data keep every count (plan.counts,
# PlanSummary.rows). R's print methods follow the same rule with the same words.
WIDE_FROM = 20
STRATA_SHOWN = 10


def report_family(policy) -> str:
    """``"labels"``, ``"classes"`` or ``"strata"``: which report fits ``policy``'s promise."""
    if policy.reads_label_matrix:
        return "labels"
    if policy.allocates_slots:
        return "classes"
    return "strata"


def report_of(plan):
    """The report of ``plan``'s policy family (see the module docstring)."""
    return _REPORTS[report_family(plan.policy)](plan)


@dataclass(frozen=True, repr=False)
class PlanSummary:
    """A plan's summary: the family, the headline (the promise and how the plan keeps
    it) and one record per stratum, class or label.

    ``columns`` names the fields of each record in ``rows`` (every record, however
    many); ``str()`` and ``repr()`` print both as a table under the headline, compact
    past ``WIDE_FROM`` strata or labels (the least served first, then "... and N more
    strata"), so a summary shown at a prompt stays short; a stratum (label) is shown as
    a table cell shows it (``shown_label``: an empty or multi-line label quoted).
    """

    family: str
    headline: str
    columns: tuple
    rows: tuple
    #: The records' plural noun ("strata", "labels") when there is one record per stratum
    #: or label (then ``str()`` is compact past ``WIDE_FROM`` of them); None: never compact.
    noun: str | None = None

    def __str__(self) -> str:
        rows, lines = self.rows, [self.headline]
        compact = self.noun is not None and len(rows) > WIDE_FROM
        if compact:
            least = [row[self.columns.index("min_per_batch")] for row in rows]
            rows = [rows[k] for k in _least_served(least)]
            lines.append(f"{len(self.rows):,} {self.noun}, more than {WIDE_FROM} to show: "
                         f"the least served first")
        cells = [[str(v) for v in row] for row in rows]
        if self.noun is not None:  # the stratum (label) column: quoted where odd, as a table
            for row in cells:
                row[0] = shown_label(row[0])
        lines.append(_text_table(list(self.columns), cells))
        if compact:
            lines.append(_more_line(len(self.rows) - len(rows), self.noun))
        return "\n".join(lines)

    __repr__ = __str__


def _shown_batches(n: int, max_rows):
    """Batches a text table shows: all, or the first and last around ``None`` (``...``)."""
    shown = list(range(n))
    if max_rows is not None and n > max_rows:
        shown = shown[: max_rows // 2] + [None] + shown[-(max_rows - max_rows // 2):]
    return shown


def _check_max_rows(max_rows):
    if max_rows is None:
        return None
    return check_int(max_rows, "max_rows", minimum=1,
                     fix="It is how many batch rows to show; None shows all.")


def _text_table(header, rows) -> str:
    widths = [max(len(r[k]) for r in [header] + rows) for k in range(len(header))]
    return "\n".join("  ".join(cell.rjust(w) for cell, w in zip(row, widths))
                     for row in [header] + rows)


def _more_line(n: int, noun: str) -> str:
    return f"... and {n:,} more {noun}"


def _least_served(least) -> list:
    """The ``STRATA_SHOWN`` strata (labels) with the fewest in a batch, fewest first, ties
    in stratum order: what a compact table or summary shows (R: ``least_served()``)."""
    return np.argsort(np.asarray(least), kind="stable")[:STRATA_SHOWN].tolist()


def _median_text(value) -> str:
    """A median of counts as text: a whole number, or one ending in .5 (R prints it alike)."""
    return str(int(value)) if value == int(value) else f"{value:.1f}"


def _wide_table(plan, counts, noun, value_name) -> str:
    """Past ``WIDE_FROM`` columns: one line per stratum (label), its count in a batch
    (least, median, most) and its total, the ``STRATA_SHOWN`` least served first (fewest
    in a batch; ties in stratum order), then how many more there are."""
    singular = "stratum" if noun == "strata" else "label"
    shown = _least_served(counts.min(axis=0))
    # Median, most and total of the shown columns only: the others are not printed.
    kept = counts[:, shown]
    rows = [[shown_label(plan.strata[k]), str(int(least)), _median_text(median),
             str(int(most)), str(int(total))]
            for k, least, median, most, total in zip(shown, kept.min(axis=0),
                                                     np.median(kept, axis=0), kept.max(axis=0),
                                                     kept.sum(axis=0))]
    return "\n".join([
        f"{counts.shape[1]:,} {noun} over {counts.shape[0]:,} batches, more than {WIDE_FROM} "
        f"to show as columns: {value_name} of each {singular} in a batch, the least served "
        f"first",
        _text_table([singular, "min", "median", "max", value_name], rows),
        _more_line(counts.shape[1] - len(rows), noun)])


def _count_table(plan, counts, totals, max_rows) -> str:
    """Batches x columns of ``counts`` with a ``total`` column, batches from 0 (``max_rows``
    already checked by the caller)."""
    header = ["batch"] + [shown_label(label) for label in plan.strata] + ["total"]
    rows = []
    for b in _shown_batches(plan.num_batches, max_rows):
        if b is None:
            rows.append(["..."] * len(header))
        else:
            rows.append([str(b)] + [str(int(c)) for c in counts[b]] + [str(int(totals[b]))])
    return _text_table(header, rows)


def json_label(label):
    """A label as a JSON value (tuples as lists, numpy scalars as Python ones)."""
    if isinstance(label, tuple):
        return [json_label(v) for v in label]
    if isinstance(label, np.generic):
        return label.item()
    return label if isinstance(label, (str, int, float, bool)) else str(label)


def _share_of(k: int, n: int) -> str:
    return f"all {n:,}" if k == n else f"{k:,} of {n:,}"


# --- stratum policies -------------------------------------------------------------------

def _stratum_promise(record: dict):
    """``(floor, words)``: the rows per stratum per batch a stratum policy promises (None:
    no floor) and the promise in words, read from the policy's record (name, params)."""
    name, params = record["name"], record["params"]
    if name == "min_per_stratum":
        return params["m"], f"every batch holds >= {params['m']} row(s) of every stratum"
    if name == "fixed_size":
        floor, size = params["min_per_stratum"], params["batch_size"]
        rows = (f"exactly {size} rows (the last batch the rest)" if params["sizes"] == "exact"
                else f"floor or ceil of N / ceil(N / {size}) rows")
        return floor, f"batches of {rows} holding >= {floor} row(s) of every stratum"
    if name == "targets":
        return None, (f"batches of {params['batch_size']} rows in the target shares "
                      f"({'balanced' if params['shares'] == 'balanced' else 'as given'})")
    if name == "downsample":
        floor, words = _stratum_promise(params["base"])
        return floor, f"downsampled rows (weights N_s / kept_s), then: {words}"
    return None, f"the batches of {name}"


class StratumReport:
    """Stratum policies: the batches x strata count table; the headline checks the
    promised floor of rows per stratum per batch."""

    family = "strata"
    value_name = "rows"
    noun = "strata"

    def __init__(self, plan):
        self.plan = plan

    @property
    def counts(self) -> np.ndarray:
        return self.plan.counts

    def promise(self):
        return _stratum_promise(self.plan.policy.to_dict())

    def headline(self) -> str:
        counts, n = self.counts, self.plan.num_batches
        floor, words = self.promise()
        least = int(counts.min()) if counts.size else 0
        if floor is None:
            return f"{words}: fewest rows of a stratum in a batch: {least}"
        kept = int(np.count_nonzero(counts.min(axis=1) >= floor)) if counts.size else n
        return f"{words}: {_share_of(kept, n)} batches do (fewest rows of a stratum in a " \
               f"batch: {least})"

    def overview(self) -> str:
        """One line of what the table holds (the CLI prints it under the table)."""
        return (f"{len(self.plan.strata)} strata; smallest count of a stratum in a batch: "
                f"{int(self.counts.min()) if self.counts.size else 0}")

    def totals(self) -> np.ndarray:
        """The ``total`` column: the rows of each batch."""
        return self.counts.sum(axis=1)

    def table(self, max_rows=10) -> str:
        """The batches x strata table; past ``WIDE_FROM`` strata the compact form
        (:func:`_wide_table`: ``max_rows`` then does not apply, there are no batch rows)."""
        max_rows = _check_max_rows(max_rows)
        counts = self.counts
        if counts.shape[1] > WIDE_FROM and counts.shape[0] > 0:
            return _wide_table(self.plan, counts, self.noun, self.value_name)
        return _count_table(self.plan, counts, self.totals(), max_rows)

    def records(self):
        """``(header, rows)``: the table for CSV, every batch (numbered from 0)."""
        header = ["batch"] + [label_text(label) for label in self.plan.strata] + ["total"]
        rows = ([b] + counts + [total] for b, (counts, total) in
                enumerate(zip(self.counts.tolist(), self.totals().tolist())))
        return header, rows

    def json_fields(self) -> dict:
        """The table for JSON: ``counts``, batches x columns."""
        return {"counts": self.counts.tolist()}

    def summary(self) -> PlanSummary:
        counts = self.counts
        rows = tuple((label_text(label), int(total), int(lo), int(hi)) for label, total, lo, hi
                     in zip(self.plan.strata, counts.sum(axis=0), counts.min(axis=0),
                            counts.max(axis=0)))
        return PlanSummary(self.family, self.headline(),
                           ("stratum", "rows", "min_per_batch", "max_per_batch"), rows,
                           noun=self.noun)

    def panel(self, title=None):
        """What :func:`pystratum.plot.draw_panel` draws for this plan."""
        from ..plot import Panel

        return Panel(title=title, counts=self.counts, labels=self.plan.strata,
                     headline=self.headline(), value_name=self.value_name,
                     floor=self.promise()[0])

    def plain_panel(self, strata, batches, title=None):
        """The same view of other ``batches`` of ``strata`` (e.g. plain shuffling), to
        compare: the batches missing a stratum, since no promise binds them."""
        from ..plot import Panel, batch_counts

        counts, labels = batch_counts(strata, batches)
        return Panel(title=title, counts=counts, labels=labels)


# How many labels a label plan's overview names (the rarest per batch first).
_LABELS_SHOWN = 8


# --- label policies ---------------------------------------------------------------------

class LabelReport(StratumReport):
    """Label-matrix policies (MultiLabel): positives of every label in every batch.

    The ``total`` column of the table is the batch's rows (a row may carry several
    labels, so it is not the sum of the label columns).
    """

    family = "labels"
    value_name = "positives"
    noun = "labels"

    def promise(self):
        params = self.plan.policy.params()
        floor = params["min_per_label"]
        strict = "" if params["strict"] else " (best effort: strict=False)"
        return floor, f"every batch holds >= {floor} positive(s) of every label{strict}"

    def headline(self) -> str:
        counts, n = self.counts, self.plan.num_batches
        floor, words = self.promise()
        short = counts < floor
        kept = n - int(np.count_nonzero(short.any(axis=1)))
        text = f"{words}: {_share_of(kept, n)} batches do"
        if kept < n:
            names = [label_text(self.plan.strata[k]) for k in np.flatnonzero(short.any(axis=0))]
            text += f" (short: {', '.join(names[:8])}{', ...' if len(names) > 8 else ''})"
        return text

    def overview(self) -> str:
        """Labels, and each label's least-most positives in a batch, the least served
        labels first (at most ``_LABELS_SHOWN`` named)."""
        spread = self.plan.label_spread()
        names = sorted(spread, key=lambda name: spread[name])  # stable: ties keep label order
        shown = ", ".join(f"{label_text(name)!r} {spread[name][0]}-{spread[name][1]}"
                          for name in names[:_LABELS_SHOWN])
        more = "" if len(names) <= _LABELS_SHOWN else \
            f", ... ({len(names) - _LABELS_SHOWN} more)"
        least = min(lo for lo, _ in spread.values()) if spread else 0
        return (f"{len(names)} labels; positives of a label in a batch (least-most): {shown}"
                f"{more}; fewest of any label in a batch: {least}")

    def totals(self) -> np.ndarray:
        """The ``total`` column: the rows of each batch (not the sum of its positives)."""
        return np.diff(self.plan.bounds)

    def plain_panel(self, strata, batches, title=None):
        """Positives of each label in other ``batches`` of the label matrix ``strata``."""
        from ..plot import Panel
        from ..strata._label_matrix import label_matrix

        matrix = label_matrix(strata).matrix
        counts = np.array([matrix[np.asarray(rows, dtype=np.int64)].sum(axis=0)
                           for rows in batches], dtype=np.int64).reshape(len(batches), -1)
        missing = int(np.count_nonzero((counts == 0).any(axis=1)))
        return Panel(title=title, counts=counts, labels=self.plan.strata,
                     headline=f"{missing} of {len(batches)} batches miss a label",
                     value_name=self.value_name)

    def summary(self) -> PlanSummary:
        base = super().summary()
        return PlanSummary(self.family, base.headline,
                           ("label", "positives", "min_per_batch", "max_per_batch"), base.rows,
                           noun=self.noun)


# --- slot policies ----------------------------------------------------------------------

class ClassesReport:
    """Slot policies (ClassesPerBatch): which P classes each batch holds (K rows each)
    and how often each class appears in the epoch; sizes stay O(B x P), never B x S."""

    family = "classes"

    def __init__(self, plan):
        self.plan = plan

    def appearances(self) -> np.ndarray:
        """int64 ``(n_strata,)``: the batches each class appears in (slots per class:
        a class is never twice in one batch)."""
        return np.bincount(self.plan.batch_strata.ravel(),
                           minlength=len(self.plan.strata)).astype(np.int64)

    def headline(self) -> str:
        plan = self.plan
        p, k = plan.batch_strata.shape[1], plan.policy.per_class
        ordered = np.sort(plan.batch_strata, axis=1)
        kept = int(np.count_nonzero(~(ordered[:, 1:] == ordered[:, :-1]).any(axis=1)))
        seen = self.appearances()
        served = seen[seen > 0]
        spread = f"{int(served.min())}-{int(served.max())}" if served.size else "0"
        return (f"every batch holds {p} distinct classes x {k} rows: "
                f"{_share_of(kept, plan.num_batches)} batches do; {served.size:,} of "
                f"{len(plan.strata):,} classes served, each in {spread} batches")

    def overview(self) -> str:
        plan = self.plan
        served = int(np.count_nonzero(self.appearances()))
        return (f"{plan.batch_strata.shape[1]} classes x {plan.policy.per_class} rows per "
                f"batch; {served:,} of {len(plan.strata):,} classes served")

    def table(self, max_rows=10) -> str:
        """Batch by batch, the P classes it holds (K rows each): P names per line."""
        plan = self.plan
        rows = []
        for b in _shown_batches(plan.num_batches, _check_max_rows(max_rows)):
            if b is None:
                rows.append(["...", ""])
            else:
                rows.append([str(b), ", ".join(shown_label(plan.strata[s])
                                                for s in plan.batch_strata[b].tolist())])
        header = ["batch", f"classes ({plan.policy.per_class} rows each)"]
        widths = [max(len(r[0]) for r in [header] + rows)]
        return "\n".join(f"{row[0].rjust(widths[0])}  {row[1]}" for row in [header] + rows)

    def records(self):
        """``(header, rows)`` for CSV: one line per (batch, class) in slot order."""
        plan, width = self.plan, self.plan.policy.per_class
        rows = ([b, label_text(plan.strata[s]), width]
                for b, slots in enumerate(plan.batch_strata.tolist()) for s in slots)
        return ["batch", "stratum", "rows"], rows

    def json_fields(self) -> dict:
        """For JSON: the classes of every batch (K rows each), never a dense table."""
        return {"batch_strata": [[json_label(self.plan.strata[s]) for s in slots]
                                 for slots in self.plan.batch_strata.tolist()],
                "rows_per_stratum": self.plan.policy.per_class}

    def summary(self) -> PlanSummary:
        """One record per number of appearances: how many classes appear in that many
        batches (a compact histogram; 1,500 classes fit in a few lines)."""
        seen = self.appearances()
        times, classes = np.unique(seen, return_counts=True)
        rows = tuple((int(t), int(c), int(t) * self.plan.policy.per_class)
                     for t, c in zip(times, classes))
        return PlanSummary(self.family, self.headline(),
                           ("batches_per_class", "classes", "rows_per_class"), rows)

    def panel(self, title=None):
        from ..plot import Panel

        return Panel(title=title, appearances=self.appearances(), labels=self.plan.strata,
                     headline=self.headline())

    def plain_panel(self, strata, batches, title=None):
        """How often each class appears in other ``batches`` of ``strata``, and how many of
        them hold a class with a single row (no positive pair for a P x K loss)."""
        from ..plot import Panel
        from ..strata._encode import encode_strata

        encoded = encode_strata(strata)
        sizes = np.array([len(rows) for rows in batches], dtype=np.int64)
        batch = np.repeat(np.arange(len(batches), dtype=np.int64), sizes)
        codes = encoded.codes[np.concatenate([np.asarray(r, dtype=np.int64) for r in batches])
                              ] if len(batches) else np.zeros(0, np.int64)
        pairs, rows = np.unique(batch * encoded.n_strata + codes, return_counts=True)
        lone = np.unique(pairs[rows == 1] // encoded.n_strata).shape[0]
        appearances = np.bincount(pairs % encoded.n_strata, minlength=encoded.n_strata)
        return Panel(title=title, appearances=appearances, labels=encoded.labels,
                     headline=f"{lone} of {len(batches)} batches hold a class with a single row")


_REPORTS = {"strata": StratumReport, "classes": ClassesReport, "labels": LabelReport}
