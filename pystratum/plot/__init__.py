"""Per-batch composition figures: stacked counts of every stratum in every batch.

Needs matplotlib (``pip install 'stratabatch[plot]'``), imported only when a
figure is drawn, so ``import pystratum`` stays numpy-only.

* :func:`batch_counts` - the batches x strata count table of *any* list of
  batches (plain shuffled ones too), to compare them with a plan.
* :func:`plot_counts` - one panel of stacked bars; with many strata the
  largest are drawn and the rest are summed into one "other" band; batches
  that miss a stratum are marked under the axis.
* :func:`composition_figure` - several panels one above the other, on one
  y-scale, saved to a PNG (used by the demo and ``pystratum plot``).

``BatchPlan.plot()`` is :func:`plot_counts` on the plan's own table.
"""

from __future__ import annotations

import numpy as np

from ..strata._encode import encode_strata
from ..strata._labels import label_text

__all__ = ["batch_counts", "plot_counts", "composition_figure", "INSTALL_PLOT"]

INSTALL_PLOT = "pip install 'stratabatch[plot]'"

# Enough distinct colours for a legend a reader can still match to bars.
DEFAULT_MAX_STRATA = 8
_MISSING_COLOUR = "black"
_OTHER_COLOUR = "#bbbbbb"


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
        return counts, [label_text(label) for label in labels], None
    keep = np.argsort(-counts.sum(axis=0), kind="stable")[: max_strata - 1]
    keep = np.sort(keep)  # the legend keeps the strata's own order
    rest = np.setdiff1d(np.arange(counts.shape[1]), keep)
    lumped = np.column_stack([counts[:, keep], counts[:, rest].sum(axis=1)])
    names = [label_text(labels[k]) for k in keep] + [f"other ({rest.size} strata)"]
    return lumped, names, rest.size


def plot_counts(counts, labels, *, ax=None, title=None, max_strata: int = DEFAULT_MAX_STRATA,
                mark_missing: bool = True, legend: bool = True):
    """Stacked bars: one bar per batch, one band per stratum; returns the Axes.

    With more than ``max_strata`` strata the ``max_strata - 1`` largest are
    drawn and the others summed into one grey "other" band. A black triangle
    above a bar marks a batch that misses at least one stratum (any stratum, not
    only the drawn ones); the title says how many do.
    """
    _matplotlib()
    counts = np.asarray(counts)
    if counts.ndim != 2 or counts.shape[1] != len(labels):
        raise ValueError(f"counts must be a (num_batches, n_strata) table with one column per "
                         f"label, got shape {counts.shape} for {len(labels)} labels.")
    if not isinstance(max_strata, int) or max_strata < 2:
        raise ValueError(f"max_strata must be an integer >= 2, got max_strata={max_strata!r}.")
    if ax is None:
        import matplotlib.pyplot as plt

        _, ax = plt.subplots(figsize=(9, 3.2))
    import matplotlib

    drawn, names, n_other = _lump(counts, labels, max_strata)
    n_batches = drawn.shape[0]
    x = np.arange(n_batches)
    width = 1.0 if n_batches > 60 else 0.85
    palette = matplotlib.colormaps["tab10"]
    bottom = np.zeros(n_batches)
    for k, name in enumerate(names):
        colour = _OTHER_COLOUR if (n_other and k == len(names) - 1) else palette(k % 10)
        ax.bar(x, drawn[:, k], bottom=bottom, width=width, color=colour, label=name,
               linewidth=0)
        bottom += drawn[:, k]
    missing = (counts == 0).any(axis=1) if counts.shape[1] else np.zeros(n_batches, bool)
    heading = title or ""
    if mark_missing and n_batches:
        if missing.any():
            # A marker above the bar: visible even where the missing band
            # would only have been a sliver, and in no stratum's colour.
            ax.plot(x[missing], bottom[missing] + 0.04 * max(bottom.max(), 1), "v",
                    color=_MISSING_COLOUR, markersize=5, linestyle="none",
                    label="batch misses a stratum")
        share = f"{int(missing.sum())} of {n_batches} batches miss a stratum"
        heading = f"{heading}: {share}" if heading else share
    if heading:
        ax.set_title(heading, fontsize=10, loc="left")
    ax.set_xlim(-0.5 - (0 if width == 1.0 else 0.2), n_batches - 0.5)
    ax.set_ylim(0, max(bottom.max(), 1) * 1.12)
    ax.set_xlabel("batch (0-based)")
    ax.set_ylabel("rows")
    if legend:
        handles, names = ax.get_legend_handles_labels()
        # Strata first, in their order; the missing-stratum marker last.
        order = sorted(range(len(names)), key=lambda k: names[k] == "batch misses a stratum")
        ax.legend([handles[k] for k in order], [names[k] for k in order], loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize=8, frameon=False,
                  title="stratum", title_fontsize=8)
    return ax


def composition_figure(panels, output=None, *, max_strata: int = DEFAULT_MAX_STRATA,
                       width: float = 10.0, extra_axes: int = 0):
    """A figure with one :func:`plot_counts` panel per ``(title, counts, labels)``.

    Panels share the y-scale so batch sizes compare at a glance. With
    ``output`` the figure is written there (PNG by extension) and closed.
    ``extra_axes`` adds empty axes at the bottom for the caller (the demo's
    learning curves). Returns the matplotlib Figure (and no pyplot state is
    touched, so this is safe in scripts and servers alike).
    """
    _matplotlib()
    from matplotlib.figure import Figure

    n = len(panels) + extra_axes
    figure = Figure(figsize=(width, 2.6 * n + 0.4), layout="constrained")
    axes = figure.subplots(n, 1, squeeze=False)[:, 0]
    top = max((np.asarray(c).sum(axis=1).max() if len(c) else 0) for _, c, _ in panels)
    for ax, (title, counts, labels) in zip(axes, panels):
        plot_counts(counts, labels, ax=ax, title=title, max_strata=max_strata)
        ax.set_ylim(0, top * 1.12 if top else 1)
    if output is not None:
        figure.savefig(output, dpi=110)
    return figure
