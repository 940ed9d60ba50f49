"""From a validated config and a metadata table to the pruned tree of nodes.

This is the only place that touches the DataFrame. Each node gets the
0-based row positions it selects (within its parent's rows); ``for_each``
templates are expanded into one clone per distinct value; empty nodes are
pruned bottom-up by their ``prune`` rule; weights and effective
probabilities are computed on the pruned tree. What comes out is plain
Python objects holding numpy integer arrays, ready for the engine.
"""

from __future__ import annotations

import numbers
from dataclasses import dataclass, field

import numpy as np

from ..base._validation import _show
from ._config import TreeConfigError, parse_weight

__all__ = ["TreeNode", "build_tree"]

_NAN = float("nan")


# slots: a for_each over a million values makes a million nodes.
@dataclass(eq=False, slots=True)
class TreeNode:
    """One node of the pruned tree.

    rows:      int64 row positions the node can yield (for an inner node: the
               union of its leaves' rows, after pruning), sorted.
    p_parent:  probability that the parent's choice picks this node (1/n for
               shuffle and sequential parents: each child is visited equally).
    effective: long-run share of all draws that come from this node's rows.
    """

    path: str
    label: str
    mode: str
    repeat: int
    prune: str
    weight_spec: object
    rows: np.ndarray
    children: list = field(default_factory=list)  # a leaf's is the shared empty tuple
    weight: float = float("nan")
    p_parent: float = 1.0
    effective: float = 1.0
    segment: float = 1.0  # expected number of draws one entry into the node yields

    @property
    def is_leaf(self) -> bool:
        return not self.children

    def walk(self):
        yield self
        for child in self.children:
            yield from child.walk()

    def leaves(self):
        return [node for node in self.walk() if node.is_leaf]


@dataclass
class BuiltTree:
    root: TreeNode
    pruned: list  # (path, reason) of every node removed from the tree
    n_rows: int


class _Empty(Exception):
    """Raised inside the build when an empty node asks to take its parent with it."""

    def __init__(self, path):
        self.path = path


def build_tree(config: dict, metadata) -> BuiltTree:
    """Select, expand, prune and weigh the tree for ``metadata`` (a pandas DataFrame)."""
    frame = _check_metadata(metadata)
    n_rows = len(frame)
    pruned = []
    try:
        root = _build(config["root"], "root", frame, np.arange(n_rows, dtype=np.int64), pruned,
                      label="root")
    except _Empty as empty:
        root = None
        pruned.append(("root", f"removed with {empty.path} (empty, prune: parent)"))
    if root is None:
        reasons = "; ".join(f"{p}: {why}" for p, why in pruned[-5:])
        raise ValueError(
            f"The tree is empty after pruning: no row of the {n_rows}-row metadata can be drawn "
            f"({reasons}). Check the conditions' columns and values against the data "
            f"(describe them with metadata[col].value_counts()).")
    _set_weights(root, frame)
    _set_probabilities(root)
    return BuiltTree(root=root, pruned=pruned, n_rows=n_rows)


# ----------------------------------------------------------------- metadata

def _check_metadata(metadata):
    try:
        import pandas as pd
    except ImportError as error:  # pragma: no cover - pandas is part of the tree extra
        raise ImportError("pystratum.tree needs pandas: pip install 'stratabatch[tree]'.") from error
    if not isinstance(metadata, pd.DataFrame):
        raise TypeError(
            f"metadata must be a pandas DataFrame with one row per example, got "
            f"metadata={_show(metadata)} of type {type(metadata).__name__}. Wrap it: "
            f"pandas.DataFrame(...).")
    if len(metadata) == 0:
        raise ValueError(
            "metadata must have at least one row, got an empty DataFrame (0 rows). Pass the "
            "table of the examples to sample from.")
    if not metadata.columns.is_unique:
        dupes = sorted({str(c) for c in metadata.columns[metadata.columns.duplicated()]})
        raise ValueError(
            f"metadata has duplicate column names {dupes}; conditions could not tell them "
            f"apart. Rename them.")
    return metadata


def _column(frame, name: str, path: str, key: str):
    if name not in frame.columns:
        columns = ", ".join(repr(str(c)) for c in list(frame.columns)[:20])
        raise TreeConfigError(
            f"{path}.{key} names column {name!r}, which metadata does not have (columns: "
            f"{columns}). Fix the column name or add the column.", f"{path}.{key}")
    return frame[name]


def _no_missing(series, rows, path: str, key: str):
    """Missing values would silently fall out of every branch: refuse them."""
    values = series.to_numpy()[rows] if len(rows) else series.to_numpy()[:0]
    import pandas as pd

    missing = np.asarray(pd.isna(values), dtype=bool)
    if missing.any():
        where = rows[missing]
        raise ValueError(
            f"{path}.{key}: column {series.name!r} has {int(missing.sum())} missing value(s) "
            f"(NaN/None) among the rows this node selects from, first at row position "
            f"{int(where[0])}. Missing values would match no condition and be dropped silently; "
            f"fill them (metadata[{series.name!r}].fillna(...)) or drop those rows first.")
    return values


# ---------------------------------------------------------------- selection

def _kind_of(values) -> str:
    """'bool', 'number', 'string' or 'other' for a column's (non-missing) values."""
    import pandas as pd

    kind = pd.api.types.infer_dtype(values, skipna=True)
    if kind == "boolean":
        return "bool"
    if kind in ("integer", "floating", "mixed-integer-float", "decimal"):
        return "number"
    if kind == "string":
        return "string"
    return "other"


def _value_kind(value) -> str:
    if isinstance(value, (bool, np.bool_)):
        return "bool"
    if isinstance(value, (numbers.Real, np.number)):
        return "number"
    if isinstance(value, str):
        return "string"
    return "other"


def _select(frame, node: dict, path: str, rows: np.ndarray) -> np.ndarray:
    """The positions among ``rows`` whose column satisfies the node's condition."""
    if "column" not in node:
        return rows
    series = _column(frame, node["column"], path, "column")
    values = _no_missing(series, rows, path, "column")
    op = node.get("op", "==")
    wanted = node["value"] if op in ("in", "not in") else [node["value"]]
    column_kind = _kind_of(values) if len(values) else "other"
    for item in wanted:
        item_kind = _value_kind(item)
        if "other" not in (column_kind, item_kind) and item_kind != column_kind:
            raise TypeError(
                f"{path}.value must be a {column_kind} like the values of column "
                f"{node['column']!r}, got {path}.value={_show(node['value'])} ({item_kind}). "
                f"Match the column's type (in YAML quote strings: value: '1'; write numbers "
                f"unquoted).")
    try:
        if op == "in":
            mask = np.isin(values, np.asarray(wanted, dtype=object)) if values.dtype == object \
                else np.isin(values, wanted)
        elif op == "not in":
            mask = ~(np.isin(values, np.asarray(wanted, dtype=object)) if values.dtype == object
                     else np.isin(values, wanted))
        else:
            import operator

            compare = {"==": operator.eq, "!=": operator.ne, "<": operator.lt,
                       "<=": operator.le, ">": operator.gt, ">=": operator.ge}[op]
            mask = np.asarray(compare(values, node["value"]), dtype=bool)
    except TypeError as error:
        raise TypeError(
            f"{path}: cannot compare column {node['column']!r} ({values.dtype}) with "
            f"{path}.value={_show(node['value'])} using op {op!r} ({error}). Use a value of the "
            f"column's type, or op '==' / 'in'.") from None
    return rows[mask]


def _label(node: dict, default: str) -> str:
    if "name" in node:
        return node["name"]
    if "column" in node:
        op = node.get("op", "==")
        return f"{node['column']} {op} {node['value']!r}"
    return default


# -------------------------------------------------------- build and prune

def _build(node: dict, path: str, frame, rows, pruned, *, label: str, selected=None):
    """The node for ``node`` at ``path`` within ``rows``, or None when pruned away.

    ``selected``: the node's rows when already known (a for_each clone).
    Raises _Empty when the node (or a descendant with prune: parent) removes
    this node's parent too.
    """
    prune = node.get("prune", "error")
    if selected is None:
        selected = _select(frame, node, path, rows)
    children = []
    for index, child in enumerate(node.get("children", ())):
        child_path = f"{path}.children[{index}]"
        if "for_each" in child:
            children.extend(_expand(child, child_path, frame, selected, pruned))
        else:
            built = _build_child(child, child_path, frame, selected, pruned,
                                 label=_label(child, f"children[{index}]"))
            if built is not None:
                children.append(built)
    has_children = bool(node.get("children"))
    if has_children:
        reachable = _union([c.rows for c in children], len(frame))
    else:
        reachable = selected
    if reachable.size == 0:
        why = ("no row matches" if not has_children or selected.size == 0
               else "every child was pruned")
        if prune == "error":
            raise ValueError(
                f"{path} ({label}) is empty: {why} (within the {rows.size} rows of its parent). "
                f"Set prune: individual on this node to drop it, prune: parent to drop its "
                f"parent too, or fix its condition.")
        pruned.append((path, f"{why} (prune: {prune})"))
        if prune == "parent":
            raise _Empty(path)
        return None
    return TreeNode(path=path, label=label, mode=node.get("mode", "replacement"),
                    repeat=int(node.get("repeat", 1)), prune=prune,
                    weight_spec=parse_weight(node.get("weight")), rows=reachable,
                    children=children or ())


def _build_child(child, path, frame, rows, pruned, *, label, selected=None):
    """``_build`` for a child, applying the upward propagation of ``prune: parent``.

    ``_build`` raising _Empty means this child is removed because a node
    below it (or the child itself) is empty with ``prune: parent``. The
    removal stops here if the child has ``prune: individual``; otherwise it
    goes on to the child's parent (re-raised), up to the root.
    """
    try:
        return _build(child, path, frame, rows, pruned, label=label, selected=selected)
    except _Empty as empty:
        if empty.path != path:
            pruned.append((path, f"removed with {empty.path} (empty, prune: parent)"))
        if child.get("prune", "error") != "individual":
            raise
        return None


def _expand(template: dict, path: str, frame, rows, pruned):
    """One clone of ``template`` per distinct value of its for_each column among ``rows``."""
    import pandas as pd

    column = template["for_each"]
    # Restrict to the template's own condition first, so values found only
    # outside it do not make clones.
    candidates = _select(frame, template, path, rows)
    values = _no_missing(_column(frame, column, path, "for_each"), candidates, path, "for_each")
    try:
        codes, uniques = pd.factorize(values, sort=True)
    except TypeError:
        codes, uniques = pd.factorize(values)  # mixed types: order of first appearance
    # Stable: each value's rows stay in ascending order, so every clone's rows are
    # a slice (a view) of one array.
    grouped = candidates[np.argsort(codes, kind="stable")]
    bounds = np.concatenate([[0], np.cumsum(np.bincount(codes, minlength=len(uniques)))])
    clones = []
    for code, value in enumerate(uniques.tolist() if hasattr(uniques, "tolist") else uniques):
        members = grouped[bounds[code]:bounds[code + 1]]
        label = f"{template['name']}[{value!r}]" if "name" in template else f"{column}={value!r}"
        built = _build_child(template, f"{path}[{column}={value!r}]", frame, rows, pruned,
                             label=label, selected=members)
        if built is not None:
            clones.append(built)
    return clones


def _union(parts, n_rows: int) -> np.ndarray:
    """Sorted union of row-position arrays (children may overlap), in O(n_rows)."""
    if not parts:
        return np.empty(0, dtype=np.int64)
    mask = np.zeros(n_rows, dtype=bool)
    for part in parts:
        mask[part] = True
    return np.flatnonzero(mask).astype(np.int64)


# ------------------------------------------------------- weights and shares

def _set_weights(node: TreeNode, frame) -> None:
    """Bottom-up: proportional weights use the pruned subtree's rows."""
    for child in node.children:
        _set_weights(child, frame)
    if not node.children:
        return
    if node.mode != "replacement":
        share = 1.0 / len(node.children)
        for child in node.children:
            child.weight = _NAN
            child.p_parent = share
        return
    weights = []
    for child in node.children:
        spec = child.weight_spec
        if spec is None:
            weight = 1.0
        elif isinstance(spec, float):
            weight = spec
        elif spec == ("count",):
            weight = float(child.rows.size)
        else:
            column = spec[1]
            series = _column(frame, column, child.path, "weight")
            values = _no_missing(series, child.rows, child.path, "weight")
            if _kind_of(values) != "number":
                raise TypeError(
                    f"{child.path}.weight=proportional({column}) needs a numeric column, but "
                    f"{column!r} holds {values.dtype} values. Use a numeric column or a "
                    f"constant weight.")
            values = values.astype(np.float64)
            if (values < 0).any():
                raise ValueError(
                    f"{child.path}.weight=proportional({column}): column {column!r} has "
                    f"negative values among the node's rows (first at row position "
                    f"{int(child.rows[np.argmax(values < 0)])}). Weights must be >= 0.")
            weight = float(values.sum())
        child.weight = weight
        weights.append(weight)
    total = float(np.sum(weights))
    if not np.isfinite(total) or total <= 0:
        raise ValueError(
            f"{node.path}: the weights of its children {[c.path for c in node.children]} sum "
            f"to {total} after pruning, so none can be drawn. Give at least one child a "
            f"positive weight.")
    for child, weight in zip(node.children, weights):
        child.p_parent = weight / total


def _set_probabilities(root: TreeNode) -> None:
    """Expected draws per entry (bottom-up), then each node's long-run share of draws."""

    def segment(node):
        if node.is_leaf:
            node.segment = float(node.repeat)
        else:
            node.segment = node.repeat * sum(c.p_parent * segment(c) for c in node.children)
        return node.segment

    def share(node, entries):
        # entries: expected entries into node per root entry.
        node.effective = entries * node.segment / root.segment
        for child in node.children:
            share(child, entries * node.repeat * child.p_parent)

    segment(root)
    share(root, 1.0)
