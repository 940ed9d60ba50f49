"""``TreeSampler``: the public face of the tree package (no torch needed)."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from typing import Iterator

import numpy as np

from ..serving._record import check_envelope, same_seed, seed_from_record, seed_to_record
from ..streams._base import NumpyStream
from ..base._validation import _show, check_int
from ._aux import AuxGenerator
from ._config import load_config
from ._engine import Engine
from ._nodes import build_tree

__all__ = ["TreeSampler", "TreeDraws"]

_STATE_FORMAT = "pystratum.tree.TreeSampler/1"
_STATE_FIX = "pass what TreeSampler.state_dict() returned, unmodified"
_STATE_KEYS = ("format", "seed", "tree_digest", "position", "engine")
# Draws converted to Python values per step of iteration: bulk ``tolist()``
# without holding a whole epoch as Python objects.
_PIECE = 1 << 14


def _plain_engine_state(state: dict) -> dict:
    """The engine's state as plain Python values (JSON and ``weights_only`` keep them)."""
    return {"sources": np.asarray(state["sources"]).tolist(), "offset": int(state["offset"])}


@dataclass(frozen=True)
class TreeDraws:
    """Consecutive draws of the stream: ``indices`` (int64 row positions) and
    ``aux`` (name -> array of the auxiliary values, one per draw), starting at
    draw number ``start`` of the stream."""

    indices: np.ndarray
    aux: dict
    start: int

    def __len__(self) -> int:
        return int(self.indices.shape[0])


class TreeSampler:
    """Row positions drawn by a declarative sampling tree over a metadata table.

    Parameters
    ----------
    config : dict, str or path
        The tree: a dict, YAML text, or the path of a YAML file (see
        ``vignettes/tree.md`` for the node keys: ``column``/``op``/``value``,
        ``mode``, ``weight``, ``for_each``, ``repeat``, ``prune``,
        ``children``; top-level ``root``, ``epoch_length``, ``aux``).
    metadata : pandas.DataFrame
        One row per example; indices are 0-based row *positions* (the frame's
        index labels play no part).
    seed : None, int >= 0 or numpy.random.SeedSequence
        None draws fresh entropy once (read it back as ``.seed``; pass it to
        get the same stream again). Each node and each auxiliary generator
        draws from its own stream spawned from the seed's SeedSequence.

    Guarantees
    ----------
    * Every draw is a row its leaf selects (every condition on its path holds).
    * The stream is a pure function of (config, metadata, seed); iterating,
      ``draw(n)`` and ``batches(b)`` cut the same stream differently.
    * Iteration yields forever, or with ``epoch_length`` the rest of the
      current epoch (epochs are consecutive blocks of ``epoch_length``
      draws; each ``iter()`` continues the stream, so a shuffled leaf goes on
      through its order across epochs). Starting a new iterator ends the
      previous one.
    * ``state_dict()``/``load_state_dict()`` resume exactly: the draws after a
      resume are the draws the uninterrupted run would have made.
    * Long-run frequencies are the ``effective`` shares ``describe()`` shows.

    Auxiliary values: with ``aux`` in the config, iteration and ``batches``
    yield ``(row, {name: value})`` pairs (a dataset's ``__getitem__`` gets
    them as they are) and ``draw(n).aux`` holds them as arrays; a draw's
    values depend only on (seed, name, draw number).

    PyTorch: usable as ``DataLoader(dataset, sampler=tree_sampler,
    batch_size=...)`` on one process; for batches under DDP and
    ``StatefulDataLoader`` use :class:`pystratum.tree.torch.TreeBatchSampler`.
    """

    def __init__(self, config, metadata, *, seed=None):
        self.config = load_config(config)
        self._set_seed(seed)
        built = build_tree(self.config, metadata)
        self.tree = built.root
        self.pruned = list(built.pruned)
        self.n_rows = built.n_rows
        self.epoch_length = self.config["epoch_length"]
        self._build_streams()
        self._served = 0
        self._active = None
        self._digest = None

    # ----------------------------------------------------------- set-up

    def _set_seed(self, seed) -> None:
        if isinstance(seed, np.random.Generator):
            raise TypeError(
                f"seed must be None, an int >= 0 or a numpy.random.SeedSequence, got "
                f"seed={_show(seed)} of type Generator. Each node spawns its own stream from a "
                f"SeedSequence, which a Generator cannot provide reproducibly; pass an int.")
        stream = NumpyStream(seed)  # the project's seed checks and messages
        self._fresh_seed = seed is None
        self._seed_sequence = stream.seed_sequence
        self._seed = stream.seed

    def _build_streams(self) -> None:
        self._engine = Engine(self.tree, self._seed_sequence)
        self._aux = [AuxGenerator(name, spec, self._seed_sequence)
                     for name, spec in self.config["aux"].items()]

    # ----------------------------------------------------------- public

    @property
    def seed(self):
        """The seed in use: pass it as ``seed=`` to get the same stream again."""
        return self._seed

    @property
    def aux_names(self) -> tuple:
        """Names of the declared auxiliary generators, in config order."""
        return tuple(generator.name for generator in self._aux)

    @property
    def position(self) -> int:
        """Number of draws served so far (the next draw's number in the stream)."""
        return self._position

    @property
    def epoch(self) -> int:
        """The epoch the next draw belongs to (0 without ``epoch_length``)."""
        return self._position // self.epoch_length if self.epoch_length else 0

    def __len__(self) -> int:
        """``epoch_length``: draws one epoch yields."""
        if self.epoch_length is None:
            raise TypeError(
                "TreeSampler has no length: the config sets no epoch_length, so iteration "
                "yields forever. Set epoch_length: <draws per epoch> in the config, or stop "
                "the loop yourself.")
        return self.epoch_length

    def __iter__(self) -> Iterator:
        """Row positions (ints), or ``(position, {aux name: value})`` when the config has aux.

        With ``epoch_length``: the rest of the current epoch; else forever.
        """
        return self._serve()

    def draw(self, n: int) -> TreeDraws:
        """The next ``n`` draws as arrays (the fast path: no Python objects per draw)."""
        n = check_int(n, "n", minimum=0)
        self._active = None  # any running iterator ends here
        self._close_piece()
        start = self._position
        indices = self._take(n)
        return TreeDraws(indices=indices, aux=self._aux_values(start, n), start=start)

    def batches(self, batch_size: int) -> Iterator[list]:
        """The stream in lists of ``batch_size`` items (as iteration yields them).

        With ``epoch_length``: the rest of the current epoch, the last batch
        shorter if ``batch_size`` does not divide it; else forever.
        """
        batch_size = check_int(batch_size, "batch_size", minimum=1)
        return self._serve_batches(batch_size)

    def describe(self, simulate: int = 100_000) -> str:
        """The pruned tree as text: each node's mode, rows, weight, probability given its
        parent and effective long-run share of draws; pruned nodes; auxiliary values;
        and, for ``simulate > 0``, the leaves' shares in ``simulate`` draws simulated
        from the seed (this sampler's own position is not touched)."""
        from ._describe import describe

        simulate = check_int(simulate, "simulate", minimum=0)
        return describe(self, simulate)

    def state_dict(self) -> dict:
        """Where the stream stands: seed, draws served, node stream positions.

        Plain Python values (JSON and ``torch.load(weights_only=True)`` keep them).
        """
        return {
            "format": _STATE_FORMAT,
            "seed": seed_to_record(self._seed),
            "tree_digest": self.tree_digest(),
            "position": int(self._position),
            "engine": _plain_engine_state(self._exact_engine_state()),
        }

    def load_state_dict(self, state_dict: dict) -> None:
        """Continue from :meth:`state_dict`: the next draw is the one the saved run
        would have made next. The saved seed replaces this sampler's; the tree
        (config and metadata) must be the saved one's."""
        check_envelope(state_dict, "TreeSampler", _STATE_FORMAT, _STATE_KEYS)
        if state_dict["tree_digest"] != self.tree_digest():
            raise ValueError(
                "Cannot resume: the state was saved for another tree (config or metadata "
                "differ: tree_digest does not match). Build the sampler with the config and "
                "metadata of the run that saved it.")
        position = check_int(state_dict["position"], "state_dict['position']", minimum=0)
        seed = seed_from_record(state_dict["seed"], fix=_STATE_FIX)
        engine = self._engine
        if not same_seed(seed, self._seed):
            engine = Engine(self.tree, NumpyStream(seed).seed_sequence)
        # A state the tree cannot have raises here, before anything changes.
        engine.load(state_dict["engine"], "state_dict['engine']")
        if engine is not self._engine:
            self._set_seed(seed)
            self._build_streams()
            self._engine = engine
        self._close_piece()
        self._served = position
        self._engine_position = position
        self._active = None

    def tree_digest(self) -> str:
        """A fingerprint of the pruned tree (structure, modes, weights, rows)."""
        if self._digest is None:
            digest = hashlib.blake2b(digest_size=16)
            for node in self.tree.walk():
                digest.update(f"{node.path}|{node.mode}|{node.repeat}|{node.p_parent!r}|"
                              f"{len(node.children)}|".encode())
                if node.is_leaf:
                    digest.update(np.ascontiguousarray(node.rows, dtype=np.int64).tobytes())
            digest.update(repr(sorted(self.config["aux"].items(), key=str)).encode())
            self._digest = digest.hexdigest()
        return self._digest

    def __repr__(self) -> str:
        leaves = len(self.tree.leaves())
        return (f"TreeSampler(n_rows={self.n_rows}, leaves={leaves}, pruned={len(self.pruned)}, "
                f"epoch_length={self.epoch_length}, aux={list(self.aux_names)}, "
                f"seed={self.seed!r}, position={self._position})")

    # ---------------------------------------------------------- private

    # Progress. ``_served`` counts draws handed out, except while an iterator
    # yields from a piece (a list of up to _PIECE items made at once): then the
    # position is the piece's start plus what its list iterator has given out,
    # so iteration itself does no bookkeeping per item.
    _engine_position = 0  # draws the engine has produced (>= _position mid-piece)
    _piece_state = None   # engine state when the engine was at _piece_position
    _piece_position = 0
    _piece_size = 0
    _piece_items = None
    _piece_iter = None

    @property
    def _position(self) -> int:
        iterator = self._piece_iter
        if iterator is None:
            return self._served
        return self._piece_position + self._piece_size - iterator.__length_hint__()

    def _close_piece(self) -> None:
        """Fix the position and end the open piece (its iterator yields nothing more)."""
        if self._piece_iter is not None:
            self._served = self._position
            self._piece_items.clear()
            self._piece_items = self._piece_iter = None

    def _exact_engine_state(self) -> dict:
        """The engine state at ``_position`` (an iterator may have taken draws beyond it)."""
        position = self._position
        if self._engine_position == position:
            return self._engine.state()
        state = dict(self._piece_state)
        state["offset"] = state["offset"] + (position - self._piece_position)
        return state

    def _sync(self) -> None:
        """Bring the engine back to ``_position`` if an abandoned iterator ran ahead."""
        if self._engine_position != self._position:
            self._engine.load(self._exact_engine_state())
            self._engine_position = self._position

    def _take(self, n: int) -> np.ndarray:
        """Advance by ``n`` draws (the position counts them at once)."""
        self._close_piece()
        self._sync()
        indices = self._engine.take(n)
        self._served += n
        self._engine_position = self._served
        return indices

    def _aux_values(self, start: int, n: int) -> dict:
        return {generator.name: generator.values(start, n) for generator in self._aux}

    def _items(self, indices: np.ndarray, start: int) -> list:
        """Python items: ints, or (int, {aux name: value}) when the config declares aux."""
        items = indices.tolist()
        if not self._aux:
            return items
        names = self.aux_names
        columns = [generator.values(start, len(items)).tolist() for generator in self._aux]
        return [(index, dict(zip(names, values))) for index, values in zip(items, zip(*columns))]

    def _remaining_in_epoch(self):
        if self.epoch_length is None:
            return None
        return self.epoch_length - self._position % self.epoch_length

    def _serve(self):
        token = object()
        self._active = token
        self._close_piece()  # a previous iterator ends here
        remaining = self._remaining_in_epoch()
        while remaining is None or remaining > 0:
            if self._active is not token:
                return
            self._close_piece()
            self._sync()
            size = _PIECE if remaining is None else min(_PIECE, remaining)
            start = self._served
            self._piece_state = self._engine.state()
            self._piece_position = start
            indices = self._engine.take(size)
            self._engine_position = start + size
            items = self._items(indices, start)
            self._piece_items, self._piece_size = items, size
            self._piece_iter = iterator = iter(items)
            yield from iterator
            if remaining is not None:
                remaining -= size
        if self._active is token:
            self._close_piece()
            self._active = None

    def _serve_batches(self, batch_size: int):
        token = object()
        self._active = token
        self._close_piece()
        remaining = self._remaining_in_epoch()
        while remaining is None or remaining > 0:
            if self._active is not token:
                return
            size = batch_size if remaining is None else min(batch_size, remaining)
            start = self._position
            items = self._items(self._take(size), start)
            if remaining is not None:
                remaining -= size
            yield items
        if self._active is token:
            self._active = None

