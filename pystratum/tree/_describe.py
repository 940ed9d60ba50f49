"""``TreeSampler.describe()``: what a config means, before training on it."""

from __future__ import annotations

import math

import numpy as np

from ._engine import Engine

__all__ = ["describe", "simulate_leaf_shares"]


def simulate_leaf_shares(sampler, n: int) -> np.ndarray:
    """Share of each leaf (engine leaf order) in the first ``n`` draws from the seed.

    A fresh engine: the sampler's own stream position is not touched.
    """
    engine = Engine(sampler.tree, sampler._seed_sequence)
    counts = np.zeros(len(engine.leaves), dtype=np.int64)
    drawn = 0
    while drawn < n:
        _, leaves = engine.chunk(track=True)
        leaves = leaves[: n - drawn]
        counts += np.bincount(leaves, minlength=counts.shape[0])
        drawn += leaves.shape[0]
    return counts / max(n, 1)


def _number(value: float) -> str:
    """Weights and probabilities, short: '-' for none, integers without decimals."""
    if math.isnan(value):
        return "-"
    if value == int(value) and abs(value) < 1e15:
        return str(int(value))
    return f"{value:.4g}"


def describe(sampler, simulate: int) -> str:
    tree = sampler.tree
    header = ["node", "mode", "repeat", "rows", "weight", "p(parent)", "effective"]
    table = []

    def visit(node, prefix, last, depth):
        branch = "" if depth == 0 else prefix + ("`- " if last else "|- ")
        table.append([f"{branch}{node.label}", node.mode if not node.is_leaf else
                      f"{node.mode} (rows)", str(node.repeat), str(node.rows.size),
                      _number(node.weight), _number(node.p_parent), f"{node.effective:.4f}"])
        child_prefix = "" if depth == 0 else prefix + ("   " if last else "|  ")
        for i, child in enumerate(node.children):
            visit(child, child_prefix, i == len(node.children) - 1, depth + 1)

    visit(tree, "", True, 0)
    lines = [
        f"TreeSampler over {sampler.n_rows} rows; seed={sampler.seed!r}; epoch_length="
        f"{sampler.epoch_length}",
        "effective = long-run share of draws from the node's rows (repeats included)",
        "",
    ]
    lines += _format(header, table)
    if sampler.pruned:
        lines += ["", f"pruned ({len(sampler.pruned)}):"]
        lines += [f"  {path}: {why}" for path, why in sampler.pruned[:20]]
        if len(sampler.pruned) > 20:
            lines.append(f"  ... and {len(sampler.pruned) - 20} more")
    if sampler._aux:
        lines += ["", "auxiliary values (one per draw):"]
        lines += [f"  {generator.describe()}" for generator in sampler._aux]
    if simulate:
        leaves = tree.leaves()
        shares = simulate_leaf_shares(sampler, simulate)
        lines += ["", f"long-run frequencies: {simulate} draws simulated from the seed"]
        rows = []
        for leaf, share in zip(leaves, shares):
            sd = math.sqrt(leaf.effective * (1 - leaf.effective) / simulate)
            rows.append([leaf.path, leaf.label, f"{leaf.effective:.4f}", f"{share:.4f}",
                         f"{sd:.4f}"])
        shown = rows if len(rows) <= 30 else rows[:15] + [["..."] * 5] + rows[-15:]
        lines += _format(["leaf", "label", "expected", "simulated", "+-1sd (iid)"], shown)
    return "\n".join(lines)


def _format(header, rows):
    widths = [max(len(r[k]) for r in [header] + rows) for k in range(len(header))]
    out = ["  ".join(cell.ljust(w) if k == 0 or k == 1 else cell.rjust(w)
                     for k, (cell, w) in enumerate(zip(row, widths))).rstrip()
           for row in [header] + rows]
    return out
