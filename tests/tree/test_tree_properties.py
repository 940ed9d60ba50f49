"""Invariants of the tree sampler on random trees and tables (hypothesis).

The reference for "which rows may a leaf yield" is computed here from the
config with plain pandas masks, independently of the package's selection.
"""

import json

import numpy as np
import pandas as pd
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from pystratum.tree import TreeSampler
from pystratum.tree._engine import Engine

OPS = ["==", "!=", "<", "<=", ">", ">=", "in", "not in"]


@st.composite
def frames(draw):
    n = draw(st.integers(1, 40))
    a = draw(st.lists(st.integers(0, 3), min_size=n, max_size=n))
    b = draw(st.lists(st.integers(0, 2), min_size=n, max_size=n))
    g = draw(st.lists(st.sampled_from(["x", "y", "z"]), min_size=n, max_size=n))
    return pd.DataFrame({"a": a, "b": b, "g": g})


@st.composite
def nodes(draw, depth, parent_mode):
    node = {"prune": "individual"}
    if draw(st.booleans()):
        column = draw(st.sampled_from(["a", "b"]))
        op = draw(st.sampled_from(OPS))
        node["column"] = column
        if op in ("in", "not in"):
            node["value"] = draw(st.lists(st.integers(0, 3), min_size=1, max_size=3))
        else:
            node["value"] = draw(st.integers(0, 3))
        if op != "==" or draw(st.booleans()):
            node["op"] = op
    if depth > 0 and draw(st.booleans()) and "column" not in node:
        node["for_each"] = "g"
    node["mode"] = draw(st.sampled_from(["replacement", "shuffle", "sequential"]))
    node["repeat"] = draw(st.sampled_from([1, 1, 2, 3]))
    if parent_mode == "replacement" and draw(st.booleans()):
        node["weight"] = draw(st.sampled_from([0.5, 1, 2.5, "proportional(count)",
                                               "proportional(b)"]))
    if depth < 2 and draw(st.booleans()):
        node["children"] = draw(st.lists(nodes(depth + 1, node["mode"]), min_size=1,
                                         max_size=3))
    return node


configs = nodes(0, None).map(lambda root: {"root": root})


def reference_masks(config, frame):
    """path -> boolean mask of the rows a node selects (conditions of the whole path)."""
    masks = {}

    def condition(node):
        if "column" not in node:
            return np.ones(len(frame), dtype=bool)
        x = frame[node["column"]].to_numpy()
        op, v = node.get("op", "=="), node["value"]
        return {"==": lambda: x == v, "!=": lambda: x != v, "<": lambda: x < v,
                "<=": lambda: x <= v, ">": lambda: x > v, ">=": lambda: x >= v,
                "in": lambda: np.isin(x, v), "not in": lambda: ~np.isin(x, v)}[op]()

    def visit(node, path, mask):
        masks[path] = mask
        for i, child in enumerate(node.get("children", ())):
            child_path = f"{path}.children[{i}]"
            child_mask = mask & condition(child)
            if "for_each" in child:
                for value in sorted(set(frame["g"][child_mask])):
                    visit(child, f"{child_path}[g={value!r}]",
                          child_mask & (frame["g"].to_numpy() == value))
            else:
                visit(child, child_path, child_mask)

    visit(config["root"], "root", condition(config["root"]))
    return masks


def build(config, frame, seed):
    try:
        return TreeSampler(config, frame, seed=seed)
    except ValueError as error:
        # Random weights may all be 0, or every leaf empty: not what is tested here.
        assume("empty after pruning" not in str(error) and "sum to" not in str(error))
        raise


def tracked(sampler, n):
    """(rows, leaf ids) of the first n draws from the seed, through a fresh engine."""
    engine = Engine(sampler.tree, sampler._seed_sequence)
    rows, leaves = [], []
    total = 0
    while total < n:
        r, l = engine.chunk(track=True)
        rows.append(r)
        leaves.append(l)
        total += r.size
    return np.concatenate(rows)[:n], np.concatenate(leaves)[:n]


@settings(max_examples=60)
@given(config=configs, frame=frames(), seed=st.integers(0, 2**32))
def test_every_draw_is_a_row_its_leaf_selects(config, frame, seed):
    sampler = build(config, frame, seed)
    masks = reference_masks(config, frame)
    leaves = sampler.tree.leaves()
    for leaf in leaves:
        np.testing.assert_array_equal(leaf.rows, np.flatnonzero(masks[leaf.path]))
    rows, leaf_ids = tracked(sampler, 300)
    # The public stream is the tracked one.
    np.testing.assert_array_equal(sampler.draw(300).indices, rows)
    for row, leaf_id in zip(rows.tolist(), leaf_ids.tolist()):
        assert masks[leaves[leaf_id].path][row]


@settings(max_examples=60)
@given(config=configs, frame=frames(), seed=st.integers(0, 2**32))
def test_repeat_blocks_and_leaf_orders(config, frame, seed):
    sampler = build(config, frame, seed)
    leaves = sampler.tree.leaves()
    rows, leaf_ids = tracked(sampler, 400)
    # The stream parses into whole leaf segments: repeat(leaf) copies of one row.
    segments = {i: [] for i in range(len(leaves))}
    i = 0
    while i < rows.size:
        leaf = leaf_ids[i]
        k = leaves[leaf].repeat
        block = rows[i:i + k]
        assert (block == block[0]).all() and (leaf_ids[i:i + k] == leaf).all()
        segments[leaf].append(int(block[0]))
        i += k
    for leaf_id, chosen in segments.items():
        leaf = leaves[leaf_id]
        n = leaf.rows.size
        if leaf.mode == "sequential":
            assert chosen == leaf.rows[np.arange(len(chosen)) % n].tolist()
        elif leaf.mode == "shuffle":
            for start in range(0, len(chosen) - n + 1, n):
                assert sorted(chosen[start:start + n]) == leaf.rows.tolist()


@settings(max_examples=40)
@given(config=configs, frame=frames(), seed=st.integers(0, 2**32),
       cuts=st.lists(st.integers(0, 50), min_size=1, max_size=6),
       chunk=st.integers(1, 7))
def test_same_stream_however_it_is_cut(config, frame, seed, cuts, chunk):
    total = sum(cuts) + 20
    reference = build(config, frame, seed).draw(total).indices.tolist()
    sampler = build(config, frame, seed)
    sampler._engine.entries_per_chunk = chunk  # tiny chunks: boundaries everywhere
    pieces = []
    for k, cut in enumerate(cuts):
        if k % 3 == 0:
            pieces.extend(sampler.draw(cut).indices.tolist())
        elif k % 3 == 1:
            # A new iterator each time: starting one (or draw()) ends the previous one.
            iterator = iter(sampler)
            pieces.extend([next(iterator) for _ in range(cut)])
        else:
            batches = sampler.batches(max(cut, 1))
            pieces.extend(next(batches))
    pieces.extend(sampler.draw(total - len(pieces)).indices.tolist())
    assert pieces == reference


@settings(max_examples=40)
@given(config=configs, frame=frames(), seed=st.integers(0, 2**32),
       before=st.integers(0, 300), after=st.integers(1, 100))
def test_resume_equals_the_uninterrupted_run(config, frame, seed, before, after):
    config = dict(config, aux={"u": {"kind": "uniform", "low": 0, "high": 1},
                               "c": {"kind": "cycle", "values": ["p", "q", "r"]}})
    whole = build(config, frame, seed).draw(before + after)
    sampler = build(config, frame, seed)
    iterator = iter(sampler)
    for _ in range(before):
        next(iterator)  # stopped mid-piece: the engine is ahead of the position
    state = json.loads(json.dumps(sampler.state_dict()))
    other = build(config, frame, seed + 1)  # another seed: the state's seed wins
    other.load_state_dict(state)
    rest = other.draw(after)
    np.testing.assert_array_equal(rest.indices, whole.indices[before:])
    np.testing.assert_array_equal(rest.aux["u"], whole.aux["u"][before:])
    assert rest.aux["c"].tolist() == whole.aux["c"][before:].tolist()
    # The interrupted sampler itself continues identically too.
    np.testing.assert_array_equal(sampler.draw(after).indices, whole.indices[before:])


@settings(max_examples=30)
@given(config=configs, frame=frames(), seed=st.integers(0, 2**32))
def test_deterministic_for_a_seed(config, frame, seed):
    a = build(config, frame, seed).draw(200).indices
    b = build(config, frame, seed).draw(200).indices
    np.testing.assert_array_equal(a, b)


def test_state_of_another_tree_is_refused():
    frame = pd.DataFrame({"a": [0, 1, 2, 3]})
    config = {"root": {"children": [{"column": "a", "op": ">", "value": 0}]}}
    state = TreeSampler(config, frame, seed=1).state_dict()
    config["root"]["children"][0]["value"] = 1
    with pytest.raises(ValueError, match="saved for another tree"):
        TreeSampler(config, frame, seed=1).load_state_dict(state)
    with pytest.raises(ValueError, match="not a TreeSampler state"):
        TreeSampler(config, frame, seed=1).load_state_dict({"format": "x"})


def test_corrupted_seed_in_a_state_names_the_key():
    frame = pd.DataFrame({"a": [0, 1, 2, 3]})
    config = {"root": {"children": [{"column": "a", "op": ">", "value": 0}]}}
    state = TreeSampler(config, frame, seed=1).state_dict()
    with pytest.raises(ValueError, match=r"state_dict\['seed'\] is not a numpy SeedSequence "
                                         r"record: spawn_key=7"):
        TreeSampler(config, frame, seed=1).load_state_dict(
            {**state, "seed": {"entropy": 1, "spawn_key": 7, "pool_size": 4}})
    with pytest.raises(TypeError, match=r"state_dict\['seed'\] must be an int"):
        TreeSampler(config, frame, seed=1).load_state_dict({**state, "seed": 1.5})


def test_node_streams_are_independent_of_other_nodes():
    """Adding a sibling branch leaves a node's own choices unchanged (streams keyed by path)."""
    frame = pd.DataFrame({"a": np.arange(100) % 4})
    one = {"root": {"mode": "sequential", "children": [
        {"column": "a", "value": 0}, {"column": "a", "value": 1}]}}
    two = {"root": {"mode": "sequential", "children": [
        {"column": "a", "value": 0}, {"column": "a", "value": 1}, {"column": "a", "value": 2}]}}
    x = TreeSampler(one, frame, seed=3).draw(200).indices[0::2]
    y = TreeSampler(two, frame, seed=3).draw(300).indices[0::3]
    np.testing.assert_array_equal(x, y)


def test_a_new_iterator_ends_the_previous_one_and_positions_count_what_was_yielded():
    frame = pd.DataFrame({"a": np.arange(50) % 5})
    config = {"root": {"children": [{"column": "a", "op": ">", "value": 0}]}}
    reference = TreeSampler(config, frame, seed=2).draw(40).indices.tolist()
    sampler = TreeSampler(config, frame, seed=2)
    first = iter(sampler)
    got = [next(first) for _ in range(7)]
    assert sampler.position == 7
    second = iter(sampler)
    got += [next(second) for _ in range(5)]
    assert list(first) == []  # ended by the second iterator
    got += sampler.draw(3).indices.tolist()
    assert list(second) == []
    got += next(sampler.batches(25))
    assert got == reference
    assert sampler.position == 40
