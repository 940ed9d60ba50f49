"""Per-batch composition figures: stacked counts of every stratum in every batch.

Needs matplotlib (``pip install 'stratabatch[plot]'``), imported only when a
figure is drawn, so ``import pystratum`` stays numpy-only.

* :func:`batch_counts` - the batches x strata count table of *any* list of
  batches (plain shuffled ones too), to compare them with a plan.
* :func:`plot_counts` - one panel of stacked bars; with many strata the
  largest are drawn and the rest are summed into one "other" band; batches
  that miss a stratum are marked under the axis.
* :func:`plot_distribution` - the aggregate view for many batches: per
  column (stratum or label), the spread of its per-batch counts (min-max,
  quartiles, median); :func:`plot_counts` switches to it past
  ``AGGREGATE_FROM`` batches (``view="auto"``), so a figure of 10**4 batches
  draws a few artists instead of one bar per batch and stratum.
* :func:`plot_appearances` - classes-per-batch plans: how many classes appear
  in how many batches (no batches x classes table).
* :func:`composition_figure` - several panels one above the other, count
  panels on one y-scale, saved to a PNG (used by the demo and ``pystratum
  plot``); every figure is laid out so that saving it keeps its legend.

``BatchPlan.plot()`` draws the panel of the plan's report
(``pystratum.engine._report``: one per policy family).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..strata._encode import encode_strata
from ..strata._labels import shown_label

__all__ = ["batch_counts", "plot_counts", "plot_distribution", "plot_appearances", "Panel",
           "draw_panel", "composition_figure", "INSTALL_PLOT", "AGGREGATE_FROM"]

INSTALL_PLOT = "pip install 'stratabatch[plot]'"

# Enough distinct colours for a legend a reader can still match to bars.
DEFAULT_MAX_STRATA = 8
_MISSING_COLOUR = "black"
_OTHER_COLOUR = "#bbbbbb"
# Past this many batches one bar per batch is a smear of sub-pixel bars that takes
# minutes to draw (7,813 batches: 94-161 s); the aggregate view takes a fraction of a second.
AGGREGATE_FROM = 300
VIEWS = ("auto", "bars", "distribution")
_MISSING_NAME = "batch misses a stratum"


def _matplotlib():
    try:
        import matplotlib
    except ImportError:
        raise ImportError(f"Plotting needs matplotlib: {INSTALL_PLOT} (or matplotlib "
                          f"itself).") from None
    return matplotlib


def batch_counts(strata, batches) -> tuple:
    """``(counts, labels)``: rows of each stratum in each of ``batches``.

    ``counts`` is an int64 array ``(len(batches), n_strata)``; ``labels`` the
    stratum labels in the order of :func:`pystratum.plan_batches`. Works on
    any batches of 0-based row positions, e.g. a plain ``BatchSampler``'s.
    """
    encoded = encode_strata(strata)
    batches = [np.asarray(b, dtype=np.int64) for b in batches]
    sizes = np.array([b.shape[0] for b in batches], dtype=np.int64)
    if len(batches) == 0:
        return np.zeros((0, encoded.n_strata), dtype=np.int64), encoded.labels
    rows = np.concatenate(batches)
    if rows.size and (rows.min() < 0 or rows.max() >= encoded.n_rows):
        raise ValueError(f"batches must hold row positions in 0..{encoded.n_rows - 1}, got "
                         f"values from {rows.min()} to {rows.max()}.")
    batch_ids = np.repeat(np.arange(len(batches), dtype=np.int64), sizes)
    flat = batch_ids * encoded.n_strata + encoded.codes[rows].astype(np.int64)
    counts = np.bincount(flat, minlength=len(batches) * encoded.n_strata)
    return counts.reshape(len(batches), encoded.n_strata), encoded.labels


def _lump(counts: np.ndarray, labels, max_strata: int):
    """The ``max_strata - 1`` largest strata (by total rows) and one "other" column."""
    if counts.shape[1] <= max_strata:
        return counts, [shown_label(label) for label in labels], None
    keep = np.argsort(-counts.sum(axis=0), kind="stable")[: max_strata - 1]
    keep = np.sort(keep)  # the legend keeps the strata's own order
    rest = np.setdiff1d(np.arange(counts.shape[1]), keep)
    lumped = np.column_stack([counts[:, keep], counts[:, rest].sum(axis=1)])
    names = [shown_label(labels[k]) for k in keep] + [f"other ({rest.size} strata)"]
    return lumped, names, rest.size


def _new_axes(figsize=(9, 3.2)):
    """Axes on a Figure laid out so that ``savefig`` keeps legends outside the axes."""
    from matplotlib.figure import Figure

    return Figure(figsize=figsize, layout="constrained").subplots()


def _axes_or_new(ax):
    """``ax`` if it is a matplotlib Axes, a new one for None; anything else is refused here
    rather than failing deep inside matplotlib."""
    if ax is None:
        return _new_axes()
    from matplotlib.axes import Axes

    if not isinstance(ax, Axes):
        raise TypeError(f"ax must be None or a matplotlib Axes, got ax={ax!r} of type "
                        f"{type(ax).__name__}: pass fig.subplots() or leave ax out for a new "
                        f"figure.")
    return ax


def _check_max_strata(max_strata) -> int:
    if not isinstance(max_strata, int) or max_strata < 2:
        raise ValueError(f"max_strata must be an integer >= 2, got max_strata={max_strata!r}.")
    return max_strata


def _check_view(view) -> str:
    if view not in VIEWS:
        raise ValueError(f"view must be one of {', '.join(map(repr, VIEWS))}, got "
                         f"view={view!r}: 'auto' draws bars up to {AGGREGATE_FROM} batches and "
                         f"the distribution view past that.")
    return view


def plot_counts(counts, labels, *, ax=None, title=None, max_strata: int = DEFAULT_MAX_STRATA,
                mark_missing: bool = True, legend: bool = True, headline=None,
                value_name: str = "rows", view: str = "auto", floor=None):
    """Stacked bars: one bar per batch, one band per stratum; returns the Axes.

    With more than ``max_strata`` strata the ``max_strata - 1`` largest are
    drawn and the others summed into one grey "other" band. ``headline`` (a
    plan's report gives its policy's promise) follows ``title``; without it,
    and with ``mark_missing``, a black triangle above a bar marks a batch that
    misses at least one stratum (any stratum, not only the drawn ones) and the
    title says how many do (for plain batches, to compare). ``value_name``
    labels the y axis (``"rows"``; ``"positives"`` for label counts, where a
    row counts once per label). ``view="auto"`` draws :func:`plot_distribution`
    past ``AGGREGATE_FROM`` batches (``"bars"``/``"distribution"`` force one).
    Without ``ax`` the Axes is on a new Figure laid out to keep the legend
    when saved.
    """
    _matplotlib()
    counts = np.asarray(counts)
    if counts.ndim != 2 or counts.shape[1] != len(labels):
        raise ValueError(f"counts must be a (num_batches, n_strata) table with one column per "
                         f"label, got shape {counts.shape} for {len(labels)} labels.")
    _check_max_strata(max_strata)
    if _check_view(view) == "distribution" or (view == "auto" and
                                               counts.shape[0] > AGGREGATE_FROM):
        return plot_distribution(counts, labels, ax=ax, title=title, max_strata=max_strata,
                                 headline=headline if headline is not None
                                 else (_missing_headline(counts) if mark_missing else None),
                                 value_name=value_name, floor=floor)
    ax = _axes_or_new(ax)
    import matplotlib

    drawn, names, n_other = _lump(counts, labels, max_strata)
    n_batches = drawn.shape[0]
    x = np.arange(n_batches)
    width = 1.0 if n_batches > 60 else 0.85
    palette = matplotlib.colormaps["tab10"]
    bottom = np.zeros(n_batches)
    handles = []
    for k, name in enumerate(names):
        colour = _OTHER_COLOUR if (n_other and k == len(names) - 1) else palette(k % 10)
        handles.append(ax.bar(x, drawn[:, k], bottom=bottom, width=width, color=colour,
                              label=name, linewidth=0))
        bottom += drawn[:, k]
    names = list(names)
    heading = title or ""
    if headline is None and mark_missing and n_batches:
        missing = (counts == 0).any(axis=1) if counts.shape[1] else np.zeros(n_batches, bool)
        if missing.any():
            # A marker above the bar: visible even where the missing band
            # would only have been a sliver, and in no stratum's colour.
            handles += ax.plot(x[missing], bottom[missing] + 0.04 * max(bottom.max(), 1), "v",
                               color=_MISSING_COLOUR, markersize=5, linestyle="none",
                               label=_MISSING_NAME)
            names.append(_MISSING_NAME)
        headline = _missing_headline(counts)
    if headline:
        heading = f"{heading}: {headline}" if heading else headline
    if heading:
        ax.set_title(heading, fontsize=10, loc="left", wrap=True)
    ax.set_xlim(-0.5 - (0 if width == 1.0 else 0.2), n_batches - 0.5)
    ax.set_ylim(0, max(bottom.max(), 1) * 1.12)
    ax.set_xlabel("batch (0-based)")
    ax.set_ylabel(value_name)
    if legend:
        # Our own handles, not ax.get_legend_handles_labels(): matplotlib drops every label
        # that starts with "_", so a stratum named "_x" would vanish from the legend.
        # Strata first, in their order; the missing-stratum marker last.
        ax.legend(handles, names, loc="upper left",
                  bbox_to_anchor=(1.01, 1.0), fontsize=8, frameon=False,
                  title="label" if value_name == "positives" else "stratum", title_fontsize=8)
    return ax


def _missing_headline(counts) -> str:
    missing = int(np.count_nonzero((counts == 0).any(axis=1))) if counts.shape[1] else 0
    return f"{missing} of {counts.shape[0]} batches miss a stratum"


def plot_distribution(counts, labels, *, ax=None, title=None,
                      max_strata: int = DEFAULT_MAX_STRATA, headline=None,
                      value_name: str = "rows", floor=None):
    """The aggregate view of a batches x columns table; returns the Axes.

    One column per stratum (the ``max_strata - 1`` largest and "other", as in
    :func:`plot_counts`): a line from its smallest to its largest count in a
    batch, a box over the middle half of the batches, a tick at the median.
    ``floor`` (a policy's promised count per batch) is a dashed line. The cost
    is one pass over the table and a few artists per column, whatever the
    number of batches.
    """
    _matplotlib()
    counts = np.asarray(counts)
    if counts.ndim != 2 or counts.shape[1] != len(labels):
        raise ValueError(f"counts must be a (num_batches, n_strata) table with one column per "
                         f"label, got shape {counts.shape} for {len(labels)} labels.")
    # Checked here too, not only in plot_counts: called directly, max_strata=0 would keep
    # all but one stratum and 1 would lump every stratum into "other".
    _check_max_strata(max_strata)
    ax = _axes_or_new(ax)
    import matplotlib

    drawn, names, n_other = _lump(counts, labels, max_strata)
    x = np.arange(drawn.shape[1])
    palette = matplotlib.colormaps["tab10"]
    colours = [_OTHER_COLOUR if (n_other and k == len(names) - 1) else palette(k % 10)
               for k in range(len(names))]
    if drawn.shape[0]:
        low, q1, median, q3, high = np.percentile(drawn, [0, 25, 50, 75, 100], axis=0)
        ax.vlines(x, low, high, colors=colours, linewidth=1.5)
        ax.bar(x, np.maximum(q3 - q1, 0.02 * max(high.max(), 1)), bottom=q1, width=0.5,
               color=colours, alpha=0.6, linewidth=0)
        ax.hlines(median, x - 0.25, x + 0.25, colors="black", linewidth=1.5)
        top = max(high.max(), 1)
    else:
        top = 1
    if floor is not None:
        ax.axhline(floor, color="black", linestyle="--", linewidth=0.8)
    heading = title or ""
    detail = f"{drawn.shape[0]:,} batches, spread of each column's counts per batch"
    if headline:
        heading = f"{heading}: {headline}" if heading else headline
    ax.set_title(f"{heading}\n{detail}" if heading else detail, fontsize=10, loc="left",
                 wrap=True)
    ax.set_xticks(x, names, rotation=30 if len(names) > 4 else 0, ha="right" if
                  len(names) > 4 else "center", fontsize=8)
    ax.set_xlim(-0.6, len(names) - 0.4)
    ax.set_ylim(0, top * 1.12)
    ax.set_ylabel(f"{value_name} per batch")
    return ax


def plot_appearances(appearances, labels=None, *, ax=None, title=None, headline=None):
    """Classes-per-batch plans: how often each class appears; returns the Axes.

    ``appearances`` holds, per class, the batches it appears in. The classes
    are drawn most frequent first, one step each (a log scale when the counts
    span more than a factor 20), so 1,500 long-tailed classes stay one
    readable line; the few most frequent are named when ``labels`` are given.
    """
    _matplotlib()
    appearances = np.asarray(appearances, dtype=np.int64)
    ax = _axes_or_new(ax)
    ranked = np.sort(appearances)[::-1]
    order = np.argsort(-appearances, kind="stable")
    ax.step(np.arange(1, ranked.shape[0] + 1), ranked, where="mid", color="#4c72b0")
    heading = title or ""
    if headline:
        heading = f"{heading}: {headline}" if heading else headline
    if heading:
        ax.set_title(heading, fontsize=10, loc="left", wrap=True)
    ax.set_xlabel("classes, most frequent first")
    ax.set_ylabel("batches a class appears in")
    served = ranked[ranked > 0]
    if served.size and served.max() > 20 * served.min():
        ax.set_yscale("log")
    else:
        ax.set_ylim(0, max(ranked.max(initial=0), 1) * 1.12)
    if labels is not None and ranked.size:
        named = ", ".join(f"{shown_label(labels[k])} ({int(appearances[k])})"
                          for k in order[:3].tolist())
        ax.text(0.99, 0.95, f"most frequent: {named}", transform=ax.transAxes, ha="right",
                va="top", fontsize=8)
    ax.set_xlim(0.5, max(ranked.shape[0], 1) + 0.5)
    return ax


@dataclass(frozen=True, eq=False)
class Panel:
    """One panel of a figure: a count table (``counts``, ``labels``) or a classes
    view (``appearances``), with the heading a plan's report gives it."""

    title: object = None
    counts: object = None
    labels: object = None
    appearances: object = None
    headline: object = None
    value_name: str = "rows"
    floor: object = None

    @property
    def num_batches(self) -> int:
        return 0 if self.counts is None else int(np.asarray(self.counts).shape[0])


def draw_panel(panel, ax, *, max_strata: int = DEFAULT_MAX_STRATA, view: str = "auto"):
    """Draws ``panel`` (a :class:`Panel`, or a ``(title, counts, labels)`` tuple of
    plain batches) on ``ax``; returns the Axes."""
    if not isinstance(panel, Panel):
        title, counts, labels = panel
        panel = Panel(title=title, counts=counts, labels=labels)
    if panel.appearances is not None:
        # A classes panel draws no bands and has one view, but a wrong argument is still
        # wrong: refused as for the other families, not ignored.
        _check_max_strata(max_strata)
        _check_view(view)
        return plot_appearances(panel.appearances, panel.labels, ax=ax, title=panel.title,
                                headline=panel.headline)
    return plot_counts(panel.counts, panel.labels, ax=ax, title=panel.title,
                       max_strata=max_strata, headline=panel.headline,
                       value_name=panel.value_name, view=view, floor=panel.floor)


def composition_figure(panels, output=None, *, max_strata: int = DEFAULT_MAX_STRATA,
                       width: float = 10.0, extra_axes: int = 0, progress=None):
    """A figure with one panel per entry of ``panels``, one above the other.

    A panel is a :class:`Panel` (``plan.report().panel(title)``) or a ``(title,
    counts, labels)`` tuple (e.g. :func:`batch_counts` of plain batches). Bar
    panels share the y-scale so batch sizes compare at a glance; past
    ``AGGREGATE_FROM`` batches a panel is the distribution view. With
    ``output`` the figure is written there (PNG by extension, legends and
    titles inside the image) and closed. ``extra_axes`` adds empty axes at the
    bottom for the caller (the demo's learning curves). ``progress``: a
    callable given a message before each panel and the write (the CLI prints
    them on stderr). Returns the matplotlib Figure (and no pyplot state is
    touched, so this is safe in scripts and servers alike).
    """
    _matplotlib()
    from matplotlib.figure import Figure

    panels = [p if isinstance(p, Panel) else Panel(title=p[0], counts=p[1], labels=p[2])
              for p in panels]
    n = len(panels) + extra_axes
    figure = Figure(figsize=(width, 2.8 * n + 0.4), layout="constrained")
    axes = figure.subplots(n, 1, squeeze=False)[:, 0]
    bars = [p for p in panels if p.appearances is None and 0 < p.num_batches <= AGGREGATE_FROM]
    top = max((np.asarray(p.counts).sum(axis=1).max() for p in bars), default=0)
    for k, (ax, panel) in enumerate(zip(axes, panels)):
        if progress is not None:
            progress(f"drawing panel {k + 1} of {len(panels)} ({panel.num_batches:,} batches)"
                     if panel.appearances is None else
                     f"drawing panel {k + 1} of {len(panels)} (classes per batch)")
        draw_panel(panel, ax, max_strata=max_strata)
        if any(panel is bar for bar in bars) and top:
            ax.set_ylim(0, top * 1.12)
    if output is not None:
        if progress is not None:
            progress(f"writing {output}")
        figure.savefig(output, dpi=110)
    return figure
