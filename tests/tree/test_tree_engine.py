"""The tree engine's streams and memory.

The stream of every node is documented in ``pystratum/tree/_engine.py``
(block ``b`` of a node's stream, by mode). Here an independent reference
draws each block whole, as documented, and walks the tree one entry at a
time; the engine, which never holds a block, must give the same draws.
"""

from __future__ import annotations

import tracemalloc

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pystratum.tree import TreeSampler
from pystratum.tree._engine import (BLOCK, NODE_STREAMS, Engine, _bounded16, _bounded16_few,
                                    child_generator, stream_key)
from tests.tree.test_tree_properties import configs, frames


class ReferenceSource:
    """A node's choices, whole blocks at a time, exactly as the engine documents them."""

    def __init__(self, node, seed_sequence):
        self.node = node
        self.seed_sequence = seed_sequence
        self.n = node.rows.size if node.is_leaf else len(node.children)
        self.dtype = (np.int16 if self.n <= 32767 else np.int32)
        self.values = np.empty(0, dtype=np.int64)
        self.block = -1
        p = [c.p_parent for c in node.children]
        self.cumulative = None
        if node.mode == "replacement" and p and not np.allclose(p, p[0]):
            self.cumulative = np.cumsum(np.asarray(p) / np.sum(p))
            self.cumulative[-1] = 1.0
        self.sequential = 0

    def next(self) -> int:
        if self.n == 1:
            return 0
        if self.node.mode == "sequential":
            value = self.sequential % self.n
            self.sequential += 1
            return value
        if self.values.size == 0:
            self.block += 1
            rng = child_generator(self.seed_sequence, NODE_STREAMS, stream_key(self.node.path),
                                  self.block)
            if self.node.mode == "shuffle":
                passes = -(-BLOCK // self.n)
                self.values = np.concatenate([rng.permutation(self.n) for _ in range(passes)])
            elif self.cumulative is None:
                self.values = rng.integers(0, self.n, BLOCK, dtype=self.dtype)
            else:
                self.values = np.searchsorted(self.cumulative, rng.random(BLOCK), side="right")
        value, self.values = int(self.values[0]), self.values[1:]
        return value


def reference_draws(tree, seed_sequence, count: int) -> list:
    sources = {}

    def source(node):
        if id(node) not in sources:
            sources[id(node)] = ReferenceSource(node, seed_sequence)
        return sources[id(node)]

    def enter(node, out):
        choice = source(node).next()
        for _ in range(node.repeat):
            if node.is_leaf:
                out.append(int(node.rows[choice]))
            else:
                enter(node.children[choice], out)

    out = []
    while len(out) < count:
        enter(tree, out)
    return out[:count]


@settings(max_examples=60)
@given(config=configs, frame=frames(), seed=st.integers(0, 2**32),
       cuts=st.lists(st.integers(0, 400), min_size=1, max_size=5))
def test_engine_draws_the_documented_streams(config, frame, seed, cuts):
    try:
        sampler = TreeSampler(config, frame, seed=seed)
    except ValueError:
        return  # an empty tree: nothing to draw
    total = sum(cuts)
    engine = Engine(sampler.tree, sampler._seed_sequence)
    got = np.concatenate([engine.take(cut) for cut in cuts] + [np.empty(0, np.int64)])
    assert got.tolist() == reference_draws(sampler.tree, sampler._seed_sequence, total)


def test_many_small_groups_draw_the_documented_streams():
    # A for_each over many values, past a block boundary of the busiest nodes.
    frame = pd.DataFrame({"g": np.repeat(np.arange(40), [1, 2, 3, 5, 7, 100, 300, 2] * 5)})
    config = {"root": {"children": [
        {"for_each": "g", "weight": "proportional(count)"},
        {"column": "g", "op": "<", "value": 8, "mode": "shuffle",
         "children": [{"for_each": "g", "mode": "shuffle"}]}]}}
    sampler = TreeSampler(config, frame, seed=11)
    engine = Engine(sampler.tree, sampler._seed_sequence)
    cuts = [1, 3, 25, 70000, 5, 150000, 2]
    got = np.concatenate([engine.take(cut) for cut in cuts])
    assert got.tolist() == reference_draws(sampler.tree, sampler._seed_sequence, sum(cuts))


@pytest.mark.parametrize("n", [2, 3, 5, 17, 100, 257, 1000, 12345, 32767])
def test_16_bit_draws_continue_numpys_call_in_any_pieces(n):
    expected = np.random.default_rng([n, 1]).integers(0, n, 5000, dtype=np.int16)
    rng = np.random.default_rng([n, 1])
    pieces, pending, spare = [], -1, None
    cuts = np.random.default_rng(n).integers(0, 60, 400)
    for k, cut in enumerate(cuts.tolist() + [5000]):
        cut = min(cut, 5000 - sum(map(len, pieces)))
        if k % 2:
            values, pending = _bounded16(rng, n, cut, pending)
        else:
            bit_generator = rng.bit_generator
            state = bit_generator.state
            values, pending, has, word = _bounded16_few(bit_generator, n, cut, pending,
                                                        state["has_uint32"], state["uinteger"])
            state = bit_generator.state
            bit_generator.state = {**state, "has_uint32": has, "uinteger": word}
        pieces.append(values)
    np.testing.assert_array_equal(np.concatenate(pieces), expected)


def test_a_node_holds_no_block_buffer():
    # 3,000 groups of 2 rows: a 65,536-choice buffer per node held 3,000 x 128 KiB
    # = 393 MB; the engine's state grows with the nodes (a few dozen bytes each).
    frame = pd.DataFrame({"user": np.repeat(np.arange(3000), 2)})
    sampler = TreeSampler({"root": {"children": [{"for_each": "user"}]}}, frame, seed=2)
    tracemalloc.start()
    try:
        engine = Engine(sampler.tree, sampler._seed_sequence)
        engine.take(200_000)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 30_000_000, f"engine peak {peak / 1e6:.1f} MB for 3,001 nodes"
