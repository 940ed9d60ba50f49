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

Streams. A node's choices come in blocks; block ``b`` of the node with path
``P`` is drawn from ``SeedSequence(seed entropy, spawn_key=(..., 0, hash(P),
b))``, the same construction as ``SeedSequence.spawn``: nodes are
independent, a node's stream depends only on the seed and its path, and a
source's state is two integers (block, position). Block ``b`` holds, by
mode (``n`` choices, ``BLOCK`` = 65,536):

* replacement, equal weights: ``rng.integers(0, n, BLOCK, dtype)`` with the
  smallest of int16/int32/int64 that holds ``n``;
* replacement, weights ``p``: ``BLOCK`` uniforms ``rng.random(BLOCK)``, each
  mapped to the child whose cumulative share first exceeds it;
* shuffle: ``ceil(BLOCK / n)`` consecutive ``rng.permutation(n)``;
* sequential: no stream, ``0, 1, ..., n - 1, 0, 1, ...``.

Memory. A block is never held whole: a node draws exactly the choices it
is asked for, continuing its block's generator, whose state the engine
keeps in flat arrays (a few dozen bytes per node; a shuffled node with many
children also keeps its current permutation). So memory grows with the
nodes and rows, and a ``for_each`` over a million values costs a few
hundred megabytes, not a 128 KiB buffer per node. The values are those of
the block drawn in one call (the continuation reproduces numpy's call,
including its 16-bit draws taken two per 32-bit word).
"""

from __future__ import annotations

import hashlib
import numpy as np

# Draws one entry into the root may yield: a segment is built whole in memory
# (8 bytes per draw); the config check bounds the product of the repeats.
from ._config import MAX_SEGMENT

__all__ = ["Engine", "stream_key", "BLOCK", "MAX_SEGMENT", "check_engine_state"]

BLOCK = 1 << 16          # choices per block of a node's stream
CHUNK = 1 << 16          # root entries per chunk (divided by the longest segment)
NODE_STREAMS, AUX_STREAMS = 0, 1
# Shuffled nodes with at most this many choices redraw their current
# permutation from the saved state instead of keeping it (cheaper than an array).
_SMALL_PASS = 64
_REPLACEMENT, _WEIGHTED, _SHUFFLE, _SEQUENTIAL = 0, 1, 2, 3
_MODES = {"replacement": _REPLACEMENT, "shuffle": _SHUFFLE, "sequential": _SEQUENTIAL}
_M64 = (1 << 64) - 1


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


_INT16_MAX, _INT32_MAX = int(np.iinfo(np.int16).max), int(np.iinfo(np.int32).max)


def _index_dtype(n: int):
    # Small codes let numpy's stable argsort use radix sort.
    if n <= _INT16_MAX:
        return np.int16
    if n <= _INT32_MAX:
        return np.int32
    return np.int64


def _bounded16(rng: np.random.Generator, n: int, k: int, pending: int):
    """The next ``k`` values of ``rng.integers(0, n, size, dtype=np.int16)`` (2 <= n <= 32767).

    numpy draws such a call's values from 16-bit halves of 32-bit words (low
    half first), keeping a value when the low 16 bits of ``half * n`` are at
    least ``65536 % n`` (Lemire's method) and returning the high 16 bits. The
    half left over at the end of a piece is ``pending`` (-1: none), so pieces
    continue one call exactly. Returns (values, new pending).
    """
    threshold = (65536 - n) % n
    parts = []
    need = k
    if pending >= 0 and need:
        product = pending * n
        pending = -1
        if product & 0xFFFF >= threshold:
            parts.append(np.array([product >> 16], dtype=np.int16))
            need -= 1
    while need:
        # ceil(need / 2) words give at most need + 1 halves: at most one is left over.
        words = rng.integers(0, 1 << 32, (need + 1) // 2, dtype=np.uint32)
        halves = np.empty(2 * words.shape[0], dtype=np.uint32)
        halves[0::2] = words & 0xFFFF
        halves[1::2] = words >> 16
        product = halves * np.uint32(n)
        kept = np.flatnonzero((product & 0xFFFF) >= threshold)
        if kept.shape[0] >= need:
            last = int(kept[need - 1])
            if last + 1 < halves.shape[0]:
                pending = int(halves[last + 1])
            kept = kept[:need]
        parts.append((product[kept] >> 16).astype(np.int16))
        need -= kept.shape[0]
    if not parts:
        return np.empty(0, dtype=np.int16), pending
    return (parts[0] if len(parts) == 1 else np.concatenate(parts)), pending


# Up to this many 16-bit draws a Python loop over raw words beats the array path.
_FEW = 24


def _bounded16_few(bit_generator, n: int, k: int, pending: int, has_spare: int, spare: int):
    """:func:`_bounded16` for small ``k``, one raw 64-bit output at a time.

    A PCG64 hands out 32-bit words as the low then the high half of a 64-bit
    output, keeping the high half (``has_spare``, ``spare``) for the next
    request; this loop does the same, so it leaves the state numpy would.
    Returns (values, pending, has_spare, spare).
    """
    threshold = (65536 - n) % n
    out = []
    while len(out) < k:
        if pending >= 0:
            half, pending = pending, -1
        else:
            if has_spare:
                word, has_spare = spare, 0
            else:
                raw = int(bit_generator.random_raw())
                word, spare, has_spare = raw & 0xFFFFFFFF, raw >> 32, 1
            half, pending = word & 0xFFFF, word >> 16
        product = half * n
        if product & 0xFFFF >= threshold:
            out.append(product >> 16)
    return np.array(out, dtype=np.int16), pending, has_spare, spare


def check_engine_state(state, sizes: np.ndarray, name: str, most_offset: int):
    """``(sources as an (n, 2) int64 array, offset)`` of a saved engine state, checked.

    ``sizes``: per node, as :meth:`Engine._sizes` gives them. A forged or
    corrupted state raises TypeError or ValueError naming ``name``, never an
    internal error and never a position the node's stream cannot have.
    """
    fix = "pass what TreeSampler.state_dict() returned, unmodified"
    if not isinstance(state, dict) or set(state) != {"sources", "offset"}:
        shown = sorted(map(str, state)) if isinstance(state, dict) else type(state).__name__
        raise (ValueError if isinstance(state, dict) else TypeError)(
            f"{name} must be a dict with keys 'offset' and 'sources', got {shown}; {fix}.")
    offset = state["offset"]
    if isinstance(offset, bool) or not isinstance(offset, (int, np.integer)) or offset < 0:
        raise (ValueError if isinstance(offset, (int, np.integer)) and not isinstance(
            offset, bool) else TypeError)(
            f"{name}['offset'] must be an int >= 0, got {offset!r}; {fix}.")
    if offset > most_offset:
        raise ValueError(f"{name}['offset']={offset} is more than this tree's chunk and "
                         f"piece of draws can hold (at most {most_offset}); {fix}.")
    sources = state["sources"]
    if not isinstance(sources, (list, tuple, np.ndarray)):
        raise TypeError(f"{name}['sources'] must be a list of [block, position] pairs, got "
                        f"{type(sources).__name__}; {fix}.")
    if len(sources) != sizes.shape[0]:
        raise ValueError(
            f"the saved engine state has {len(sources)} node streams but this tree has "
            f"{sizes.shape[0]}; was it saved for another config or metadata?")
    try:
        array = np.asarray(sources) if len(sources) else np.empty((0, 2), dtype=np.int64)
    except (ValueError, TypeError, OverflowError):
        array = None
    if (array is None or array.ndim != 2 or array.shape[1:] != (2,)
            or array.dtype.kind not in "iu"):
        raise TypeError(f"{name}['sources'] must hold one [block, position] pair of ints per "
                        f"node (ints within 64 bits, no bools or floats); {fix}.")
    array = array.astype(np.int64)
    block, pos = array[:, 0], array[:, 1]
    limit = np.where(sizes > 0, sizes, np.abs(sizes) - 1)  # largest valid position
    stream = sizes > 0
    bad = ((block < -1) | (block > (1 << 62)) | (pos < 0) | (pos > limit)
           | (stream & (block == -1) & (pos != 0)) | (~stream & (block != -1)))
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        raise ValueError(f"{name}['sources'][{i}]={array[i].tolist()} is not a position of "
                         f"that node's stream; {fix}.")
    return array, int(offset)


class Engine:
    """Yields the tree's stream of row positions, exactly resumable.

    ``state()`` is the sources' states at the start of the pending chunk plus
    how many draws of it were taken (``sources``: an (nodes, 2) int64 array,
    shared: do not modify); ``load(state)`` restores it. Sources are numbered
    in post-order (children before their parent); ``leaves`` in tree order.
    """

    def __init__(self, root, seed_sequence: np.random.SeedSequence):
        self.seed_sequence = seed_sequence
        self.leaves = []
        size = sum(1 for _ in root.walk())
        # Filled in place: Python lists of a million ints would double the peak.
        self._n = np.zeros(size, dtype=np.int64)
        self._repeat = np.zeros(size, dtype=np.int64)
        self._mode = np.zeros(size, dtype=np.int8)
        self._key = np.zeros(size, dtype=np.uint64)  # spawn-key components (63 bits)
        self._rows = [None] * size
        self._start = np.zeros(size, dtype=np.int64)
        self._count = np.zeros(size, dtype=np.int64)
        self._children = np.zeros(max(size - 1, 0), dtype=np.int64)
        self._leaf_id = np.full(size, -1, dtype=np.int32)
        self._cumulative = {}
        self._compiled = self._children_filled = 0
        self._root, self.longest = self._compile(root)
        if self.longest > MAX_SEGMENT:  # the config check refuses such trees first
            raise ValueError(f"one entry into the root yields up to {self.longest} draws, "
                             f"more than {MAX_SEGMENT}; lower the repeats.")

        self._block = np.full(size, -1, dtype=np.int64)
        self._pos = np.zeros(size, dtype=np.int64)
        # A node's generator between takes, valid when _live: PCG64 state and
        # increment (128 bits each, as high and low words), its buffered
        # 32-bit half (has_uint32, uinteger), and a pending 16-bit half.
        self._live = np.zeros(size, dtype=bool)
        self._bits = np.zeros((size, 4), dtype=np.uint64)
        self._extra = np.zeros((size, 3), dtype=np.int64)
        self._passes = {}  # shuffled nodes with > _SMALL_PASS choices: current permutation
        self._bit_generator = np.random.PCG64(0)
        self._generator = np.random.Generator(self._bit_generator)
        self.entries_per_chunk = max(1, CHUNK // self.longest)
        self._pending = np.empty(0, dtype=np.int64)
        self._offset = 0
        self._snapshot = self._source_states()

    def _compile(self, node) -> tuple:
        """Number ``node``'s subtree in post-order and fill its arrays: (index, the
        longest segment one entry yields). Depth is bounded by the config check,
        so the recursion is too."""
        if node.is_leaf:
            compiled = []
            leaf_id = len(self.leaves)
            self.leaves.append(node)
            longest = node.repeat
            size = node.rows.shape[0]
        else:
            compiled = [self._compile(child) for child in node.children]
            leaf_id = -1
            longest = node.repeat * max(child_longest for _, child_longest in compiled)
            size = len(node.children)
        index = self._compiled
        self._compiled += 1
        code = _MODES[node.mode]
        if code == _REPLACEMENT and not node.is_leaf:
            p = np.asarray([child.p_parent for child in node.children], dtype=np.float64)
            if not np.allclose(p, p[0]):
                share = np.cumsum(p / p.sum())
                share[-1] = 1.0  # u < 1 always lands on a child
                self._cumulative[index] = share
                code = _WEIGHTED
        self._n[index] = size
        self._repeat[index] = node.repeat
        self._mode[index] = code
        self._key[index] = stream_key(node.path)
        if node.is_leaf:
            self._rows[index] = np.asarray(node.rows, dtype=np.int64)
        self._leaf_id[index] = leaf_id
        # Children of a node are numbered before it, so their slots are filled in
        # the order their parents are numbered: a running position.
        start = self._children_filled
        self._start[index] = start
        self._count[index] = len(compiled)
        for offset, (child, _) in enumerate(compiled):
            self._children[start + offset] = child
        self._children_filled = start + len(compiled)
        return index, longest

    @property
    def num_sources(self) -> int:
        return int(self._n.shape[0])

    def _sizes(self) -> np.ndarray:
        """What a node's saved [block, position] may be.

        Streamed nodes (replacement, shuffle with n > 1): the block length.
        Sequential nodes with n > 1: ``-n`` (position in 0 .. n - 1, block -1).
        Nodes with one choice: ``-1`` (state stays [-1, 0]).
        """
        n = self._n
        sizes = np.where(self._mode == _SHUFFLE, -(-BLOCK // n) * n, BLOCK)
        sizes = np.where(self._mode == _SEQUENTIAL, -n, sizes)
        return np.where(n == 1, -1, sizes)

    # ------------------------------------------------------------ state

    def _source_states(self) -> np.ndarray:
        return np.stack([self._block, self._pos], axis=1)

    def state(self) -> dict:
        return {"sources": self._snapshot, "offset": int(self._offset)}

    def load(self, state: dict, name: str = "state") -> None:
        """Restore ``state``; a state this tree cannot have raises (and changes nothing)."""
        # A saved offset counts draws from the snapshot's chunk on, possibly past it
        # (an iterator's piece spans chunks); never by more than a chunk and a piece.
        most = max(CHUNK, self.longest) + (1 << 20)
        sources, offset = check_engine_state(state, self._sizes(), name, most)
        self._block[:] = sources[:, 0]
        self._pos[:] = sources[:, 1]
        self._live[:] = False
        self._passes.clear()
        self._snapshot = self._source_states()
        self._pending = np.empty(0, dtype=np.int64)
        self._offset = 0
        self.take(offset)

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
        rows, leaves, _ = self._produce(self._root, self.entries_per_chunk, track)
        return rows, leaves

    def _produce(self, i: int, m: int, track: bool):
        """(rows, leaf ids, segment lengths or None if all 1) of ``m`` entries into node ``i``."""
        k = int(self._repeat[i])
        choices = self._take(i, m)
        leaf_rows = self._rows[i]
        if leaf_rows is not None:
            rows = leaf_rows[choices]
            leaves = np.full(m, self._leaf_id[i], dtype=np.int32) if track else None
            if k == 1:
                return rows, leaves, None
            return (np.repeat(rows, k), None if leaves is None else np.repeat(leaves, k),
                    np.full(m, k, dtype=np.int64))
        sub = np.repeat(choices, k) if k > 1 else choices
        n_sub = sub.shape[0]
        start, count = int(self._start[i]), int(self._count[i])
        if count == 1:
            rows, leaves, lengths = self._produce(int(self._children[start]), n_sub, track)
        else:
            counts = np.bincount(sub, minlength=count)
            used = np.flatnonzero(counts)
            sizes = counts[used].tolist()
            made = [self._produce(child, size, track)
                    for child, size in zip(self._children[start + used].tolist(), sizes)]
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

    # ------------------------------------------------------------ node streams

    def _take(self, i: int, m: int) -> np.ndarray:
        """The next ``m`` choices of node ``i``."""
        n = int(self._n[i])
        dtype = _index_dtype(n)
        if n == 1:
            return np.zeros(m, dtype=dtype)
        mode = self._mode[i]
        if mode == _SEQUENTIAL:
            pos = int(self._pos[i])
            out = (np.arange(pos, pos + m, dtype=np.int64) % n).astype(dtype)
            self._pos[i] = (pos + m) % n
            return out
        if mode == _SHUFFLE:
            return self._take_shuffled(i, n, m, dtype)
        return self._take_replacement(i, n, m, dtype, mode)

    def _fresh(self, i: int, block: int) -> np.random.Generator:
        return child_generator(self.seed_sequence, NODE_STREAMS, int(self._key[i]), block)

    def _restore(self, i: int) -> np.random.Generator:
        hi, lo, inc_hi, inc_lo = self._bits[i].tolist()
        has_uint32, uinteger, _ = self._extra[i].tolist()
        self._bit_generator.state = {
            "bit_generator": "PCG64",
            "state": {"state": (hi << 64) | lo, "inc": (inc_hi << 64) | inc_lo},
            "has_uint32": has_uint32, "uinteger": uinteger}
        return self._generator

    def _save(self, i: int, generator: np.random.Generator, pending: int = -1,
              spare=None) -> None:
        """Keep node ``i``'s generator; ``spare``: (has_uint32, uinteger) when kept outside it."""
        state = generator.bit_generator.state
        value, inc = state["state"]["state"], state["state"]["inc"]
        self._bits[i] = (value >> 64, value & _M64, inc >> 64, inc & _M64)
        if spare is None:
            spare = (state["has_uint32"], state["uinteger"])
        self._extra[i] = (spare[0], spare[1], pending)
        self._live[i] = True

    def _draw(self, i, generator, n, k, dtype, mode, pending):
        """``k`` choices of a replacement node from its block's generator: (values, pending).

        ``generator``'s bit generator holds the whole state (see _take_replacement
        for the small-draw path that keeps the spare half outside it).
        """
        if mode == _WEIGHTED:
            cumulative = self._cumulative[i]
            u = generator.random(k)
            if n > 16:
                return np.searchsorted(cumulative, u, side="right").astype(dtype), pending
            # Few children: n - 1 comparisons per draw beat a binary search's overhead.
            # Same result: the number of cumulative bounds <= u.
            choice = np.zeros(k, dtype=dtype)
            for bound in cumulative[:-1]:
                choice += u >= bound
            return choice, pending
        if dtype == np.int16:
            return _bounded16(generator, n, k, pending)
        # 32-bit draws: numpy keeps the spare half in the generator state itself.
        return generator.integers(0, n, k, dtype=dtype), pending

    def _take_replacement(self, i, n, m, dtype, mode) -> np.ndarray:
        block, pos = int(self._block[i]), int(self._pos[i])
        if m <= _FEW and dtype == np.int16 and mode == _REPLACEMENT:
            # Many nodes, few draws each (a for_each over many values): no array work.
            if block < 0 or pos >= BLOCK:
                block, pos = block + 1, 0
                generator = self._fresh(i, block)
                has_spare, spare, pending = 0, 0, -1
            elif self._live[i] and pos + m <= BLOCK:
                generator = self._restore(i)
                has_spare, spare, pending = self._extra[i].tolist()
            else:
                generator = None
            if generator is not None and pos + m <= BLOCK:
                values, pending, has_spare, spare = _bounded16_few(
                    generator.bit_generator, n, m, pending, has_spare, spare)
                self._block[i], self._pos[i] = block, pos + m
                self._save(i, generator, pending, (has_spare, spare))
                return values
            block, pos = int(self._block[i]), int(self._pos[i])
        generator, pending = None, -1
        parts = []
        while m > 0:
            if block < 0 or pos >= BLOCK:
                block, pos = block + 1, 0
                generator, pending = self._fresh(i, block), -1
            elif generator is None:
                if self._live[i]:
                    generator, pending = self._restore(i), int(self._extra[i, 2])
                else:  # after load(): replay the block up to the position
                    generator = self._fresh(i, block)
                    _, pending = self._draw(i, generator, n, pos, dtype, mode, -1)
            k = min(m, BLOCK - pos)
            values, pending = self._draw(i, generator, n, k, dtype, mode, pending)
            parts.append(values)
            pos += k
            m -= k
        self._block[i], self._pos[i] = block, pos
        if generator is not None:
            self._save(i, generator, pending)
        if not parts:
            return np.empty(0, dtype=dtype)
        return parts[0] if len(parts) == 1 else np.concatenate(parts)

    def _take_shuffled(self, i, n, m, dtype) -> np.ndarray:
        """Choices of a shuffled node: consecutive permutations, ``ceil(BLOCK / n)`` a block.

        Between takes the saved generator is the one after the current
        permutation when it is kept (``n > _SMALL_PASS``), else the one before
        it (it is drawn again on the next take); at a permutation boundary,
        the one before the next permutation.
        """
        size = -(-BLOCK // n) * n
        block, pos = int(self._block[i]), int(self._pos[i])
        generator, current, before = None, None, None
        parts = []
        while m > 0:
            if block < 0 or pos >= size:
                block, pos = block + 1, 0
                generator, current = self._fresh(i, block), None
            elif generator is None:
                if self._live[i]:
                    generator = self._restore(i)
                    if pos % n:
                        current = self._passes.get(i)
                        if current is None:
                            before = generator.bit_generator.state
                            current = generator.permutation(n).astype(dtype)
                else:  # after load(): replay the block up to the position
                    generator = self._fresh(i, block)
                    if pos // n:
                        base = np.broadcast_to(np.arange(n, dtype=dtype), (pos // n, n))
                        generator.permuted(base, axis=1)
                    if pos % n:
                        before = generator.bit_generator.state
                        current = generator.permutation(n).astype(dtype)
            offset = pos % n
            if offset:
                k = min(m, n - offset)
                parts.append(current[offset:offset + k])
            else:
                whole = min(m // n, (size - pos) // n)
                if whole:
                    base = np.broadcast_to(np.arange(n, dtype=dtype), (whole, n))
                    parts.append(generator.permuted(base, axis=1).ravel())
                    k = whole * n
                else:
                    before = generator.bit_generator.state
                    current = generator.permutation(n).astype(dtype)
                    k = min(m, n)
                    parts.append(current[:k])
            pos += k
            m -= k
        self._block[i], self._pos[i] = block, pos
        if generator is not None:
            if pos % n and n <= _SMALL_PASS:
                self._bit_generator.state = before
                self._save(i, self._generator)
            else:
                self._save(i, generator)
            if pos % n and n > _SMALL_PASS:
                self._passes[i] = current
            else:
                self._passes.pop(i, None)
        if not parts:
            return np.empty(0, dtype=dtype)
        return parts[0] if len(parts) == 1 else np.concatenate(parts)
