"""The compiled sampler: integer arrays and per-node streams, no DataFrame.

Model. Every node has a *choice source*: the sequence of its choices (a
child, or for a leaf a row) in the order of its mode. Drawing means
entering the root; entering a node picks its next choice and enters that
child ``repeat`` times (a leaf yields its chosen row ``repeat`` times).
So an entry yields a *segment* of draws, and the stream is the
concatenation of the root's segments.

Bulk evaluation. To make ``m`` entries into a node, the engine takes ``m``
choices at once, counts how many entries each child receives, makes those
recursively (each child's entries consumed in order), and interleaves the
children's segments back into entry order with one stable sort and one
gather. Every node's choices are consumed in the same order however the
stream is cut into chunks, so the stream does not depend on chunk sizes.

Streams. A source refills its buffer a block at a time; block ``b`` of the
node with path ``P`` comes from ``SeedSequence(seed entropy, spawn_key=(...,
0, hash(P), b))``, the same construction as ``SeedSequence.spawn``: nodes
are independent, a node's stream depends only on the seed and its path,
and a source's state is two integers (block, position).
"""

from __future__ import annotations

import hashlib

import numpy as np

__all__ = ["ChoiceSource", "Engine", "stream_key", "BLOCK"]

BLOCK = 1 << 16          # choices per buffer refill
CHUNK = 1 << 16          # root entries per chunk (divided by the longest segment)
NODE_STREAMS, AUX_STREAMS = 0, 1


def stream_key(text: str) -> int:
    """A stable 63-bit integer for a node path or an aux name (spawn-key component)."""
    return int.from_bytes(hashlib.blake2b(text.encode("utf-8"), digest_size=8).digest(),
                          "little") >> 1


def child_generator(seed_sequence: np.random.SeedSequence, *key) -> np.random.Generator:
    """The generator of ``seed_sequence``'s descendant with spawn key suffix ``key``."""
    child = np.random.SeedSequence(seed_sequence.entropy,
                                   spawn_key=(*seed_sequence.spawn_key, *key),
                                   pool_size=seed_sequence.pool_size)
    return np.random.default_rng(child)


def _index_dtype(n: int):
    # Small codes let numpy's stable argsort use radix sort.
    if n <= np.iinfo(np.int16).max:
        return np.int16
    if n <= np.iinfo(np.int32).max:
        return np.int32
    return np.int64


class ChoiceSource:
    """A node's choices among ``n`` options in its mode, refilled a block at a time.

    replacement: independent draws with probabilities ``p`` (None: uniform).
    shuffle:     consecutive random permutations of ``range(n)``.
    sequential:  ``0, 1, ..., n-1, 0, 1, ...``.
    """

    def __init__(self, mode: str, n: int, p, seed_sequence, key: int):
        self.mode = mode
        self.n = int(n)
        self.dtype = _index_dtype(self.n)
        self.cumulative = None
        if mode == "replacement" and p is not None:
            p = np.asarray(p, dtype=np.float64)
            if not np.allclose(p, p[0]):
                cumulative = np.cumsum(p / p.sum())
                cumulative[-1] = 1.0  # u < 1 always lands on a child
                self.cumulative = cumulative
        self.seed_sequence = seed_sequence
        self.key = key
        self.block = -1
        self.pos = 0
        self._buffer = None
        self._buffer_block = None

    def _fill(self, block: int) -> np.ndarray:
        rng = child_generator(self.seed_sequence, NODE_STREAMS, self.key, block)
        n = self.n
        if self.mode == "replacement":
            if self.cumulative is None:
                return rng.integers(0, n, BLOCK, dtype=self.dtype)
            u = rng.random(BLOCK)
            if n > 16:
                return np.searchsorted(self.cumulative, u, side="right").astype(self.dtype)
            # Few children: n - 1 comparisons per draw beat a binary search's overhead.
            # Same result: the number of cumulative bounds <= u.
            choice = np.zeros(BLOCK, dtype=self.dtype)
            for bound in self.cumulative[:-1]:
                choice += u >= bound
            return choice
        passes = -(-BLOCK // n)
        if passes == 1:
            return rng.permutation(n).astype(self.dtype)
        base = np.broadcast_to(np.arange(n, dtype=self.dtype), (passes, n))
        return rng.permuted(base, axis=1).ravel()

    def take(self, m: int) -> np.ndarray:
        """The next ``m`` choices."""
        if self.n == 1:
            return np.zeros(m, dtype=self.dtype)
        if self.mode == "sequential":
            out = (np.arange(self.pos, self.pos + m, dtype=np.int64) % self.n).astype(self.dtype)
            self.pos = (self.pos + m) % self.n
            return out
        parts = []
        while m > 0:
            if self.block < 0 or self.pos >= self._buffer_size():
                self.block += 1
                self.pos = 0
            buffer = self._current()
            k = min(m, buffer.shape[0] - self.pos)
            parts.append(buffer[self.pos:self.pos + k])
            self.pos += k
            m -= k
        if len(parts) == 1:
            return parts[0]
        return np.concatenate(parts) if parts else np.empty(0, dtype=self.dtype)

    def _buffer_size(self) -> int:
        if self.mode == "replacement":
            return BLOCK
        return -(-BLOCK // self.n) * self.n

    def _current(self) -> np.ndarray:
        if self._buffer_block != self.block:
            self._buffer = self._fill(self.block)
            self._buffer_block = self.block
        return self._buffer

    def state(self) -> list:
        return [int(self.block), int(self.pos)]

    def load(self, state) -> None:
        self.block, self.pos = int(state[0]), int(state[1])


class _Compiled:
    __slots__ = ("source", "repeat", "children", "rows", "leaf_id", "longest")


class Engine:
    """Yields the tree's stream of row positions, exactly resumable.

    ``state()`` is the sources' states at the start of the pending chunk plus
    how many draws of it were taken; ``load(state)`` restores it.
    """

    def __init__(self, root, seed_sequence: np.random.SeedSequence):
        self.sources = []
        self.leaves = []
        self.root = self._compile(root, seed_sequence)
        self.entries_per_chunk = max(1, CHUNK // self.root.longest)
        self._pending = np.empty(0, dtype=np.int64)
        self._offset = 0
        self._snapshot = self._source_states()

    def _compile(self, node, seed_sequence):
        compiled = _Compiled()
        compiled.repeat = node.repeat
        if node.is_leaf:
            n = node.rows.size
            p = None
            compiled.children = None
            compiled.rows = node.rows.astype(np.int64)
            compiled.leaf_id = len(self.leaves)
            compiled.longest = node.repeat
            self.leaves.append(node)
        else:
            n = len(node.children)
            p = [child.p_parent for child in node.children]
            compiled.rows = None
            compiled.leaf_id = -1
            compiled.children = [self._compile(child, seed_sequence) for child in node.children]
            compiled.longest = node.repeat * max(c.longest for c in compiled.children)
        compiled.source = ChoiceSource(node.mode, n, p, seed_sequence, stream_key(node.path))
        self.sources.append(compiled.source)
        return compiled

    # ------------------------------------------------------------ state

    def _source_states(self) -> list:
        return [source.state() for source in self.sources]

    def state(self) -> dict:
        return {"sources": [list(s) for s in self._snapshot], "offset": int(self._offset)}

    def load(self, state: dict) -> None:
        sources = state["sources"]
        if len(sources) != len(self.sources):
            raise ValueError(
                f"the saved engine state has {len(sources)} node streams but this tree has "
                f"{len(self.sources)}; was it saved for another config or metadata?")
        for source, saved in zip(self.sources, sources):
            source.load(saved)
        self._snapshot = self._source_states()
        self._pending = np.empty(0, dtype=np.int64)
        self._offset = 0
        self.take(int(state["offset"]))

    # ------------------------------------------------------------ drawing

    def take(self, n: int) -> np.ndarray:
        """The next ``n`` row positions of the stream (int64)."""
        parts = []
        while n > 0:
            available = self._pending.shape[0] - self._offset
            if available == 0:
                self._snapshot = self._source_states()
                self._pending = self.chunk()[0]
                self._offset = 0
                available = self._pending.shape[0]
            k = min(n, available)
            parts.append(self._pending[self._offset:self._offset + k])
            self._offset += k
            n -= k
        if not parts:
            return np.empty(0, dtype=np.int64)
        return parts[0] if len(parts) == 1 else np.concatenate(parts)

    def chunk(self, track: bool = False):
        """(rows, leaf ids or None) of the next ``entries_per_chunk`` root entries."""
        rows, leaves, _ = _produce(self.root, self.entries_per_chunk, track)
        return rows, leaves


def _produce(node, m: int, track: bool):
    """(rows, leaf ids, segment lengths or None if all 1) of ``m`` entries into ``node``."""
    k = node.repeat
    choices = node.source.take(m)
    if node.children is None:
        rows = node.rows[choices]
        leaves = np.full(m, node.leaf_id, dtype=np.int32) if track else None
        if k == 1:
            return rows, leaves, None
        return (np.repeat(rows, k), None if leaves is None else np.repeat(leaves, k),
                np.full(m, k, dtype=np.int64))
    sub = np.repeat(choices, k) if k > 1 else choices
    n_sub = sub.shape[0]
    children = node.children
    if len(children) == 1:
        rows, leaves, lengths = _produce(children[0], n_sub, track)
    else:
        counts = np.bincount(sub, minlength=len(children)).tolist()
        made = [_produce(child, count, track) for child, count in zip(children, counts) if count]
        sizes = [count for count in counts if count]
        order = np.argsort(sub, kind="stable")
        cat_rows = np.concatenate([part[0] for part in made])
        cat_leaves = np.concatenate([part[1] for part in made]) if track else None
        if all(part[2] is None for part in made):
            rows = np.empty_like(cat_rows)
            rows[order] = cat_rows
            leaves = None
            if track:
                leaves = np.empty_like(cat_leaves)
                leaves[order] = cat_leaves
            lengths = None
        else:
            cat_lengths = np.concatenate([
                part[2] if part[2] is not None else np.ones(size, dtype=np.int64)
                for part, size in zip(made, sizes)])
            # seg[j]: which concatenated segment sub-entry j receives.
            seg = np.empty(n_sub, dtype=np.int64)
            seg[order] = np.arange(n_sub, dtype=np.int64)
            cat_starts = np.cumsum(cat_lengths) - cat_lengths
            lengths = cat_lengths[seg]
            out_starts = np.cumsum(lengths) - lengths
            gather = np.repeat(cat_starts[seg] - out_starts, lengths)
            gather += np.arange(gather.shape[0], dtype=np.int64)
            rows = cat_rows[gather]
            leaves = cat_leaves[gather] if track else None
    if lengths is None:
        return rows, leaves, (None if k == 1 else np.full(m, k, dtype=np.int64))
    if k > 1:
        lengths = lengths.reshape(m, k).sum(axis=1)
    return rows, leaves, lengths
