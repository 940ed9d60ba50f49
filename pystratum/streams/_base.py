"""Random streams: where each epoch's permutation comes from.

Every stream answers ``permutation(n, epoch)`` with a 0-based int64
permutation of ``range(n)``; the allocation never draws random numbers
itself. Streams differ in how epochs relate:

* ``"numpy"``: epoch k uses its own generator, spawned from the seed's
  ``SeedSequence`` (child k), so any epoch costs one permutation.
* ``"R"``: R's ``set.seed(seed)`` stream; epoch k is the (k+1)-th
  ``sample(n)`` call on it, exactly as R code looping over epochs would draw.
* ``"torch"``: a private ``torch.Generator`` seeded with ``seed``; epoch k is
  the (k+1)-th ``torch.randperm(n, generator=g)`` call, which matches R
  torch's ``torch_randperm`` after ``torch_manual_seed(seed)`` for the same
  libtorch version. torch is imported only when this stream is used.
* ``"index"``: keyed bijections per (seed, epoch, stratum), any position on
  demand (``pystratum.streams._index``); its plans are lazy
  (``pystratum.engine._lazy``), so it has no ``permutation(N)`` per epoch.

Sequential streams (R, torch) remember their position after the last epoch
served, so walking epochs in order costs one epoch's draws per epoch.
Reaching epoch k from elsewhere costs drawing every epoch in between, each
with the draws its policy really makes (one permutation, or for sampling
policies pass 0 of every stratum plus one draw per extra pass of a recycled
one). A jump is priced before anything is drawn, in row draws: every draw
counts the rows it costs the stream (``draw_cost``) plus a per-call
overhead (``call_cost``: 2000 rows, so that a jump made of many small
calls is priced by what the calls cost and not only by their rows; set
from the Python twin of R's stream, whose fixed cost a call is worth
about that many row draws: benchmarks/results_focused.md; torch's calls
cost less in Python but more in R torch, so both streams use it); a jump
costing more than ``MAX_SKIPPED_DRAWS`` is refused with a ValueError
stating the cost and the fix, instead of running for minutes or forever.
The R package prices jumps by the same rule.
"""

from __future__ import annotations

import abc
import importlib
import numbers
from dataclasses import dataclass
from typing import ClassVar

import numpy as np

from .. import kernels as kernel_gate
from ..base._validation import check_epoch, check_int

__all__ = ["PERMUTATION_RNG_CHOICES", "RNG_CHOICES", "MAX_SKIPPED_DRAWS", "SkipCost",
           "EpochStream", "StatelessStream", "make_stream", "stream_class", "stream_for",
           "NumpyStream", "RSeededStream", "SequentialStream"]

# The registry: rng name -> (module, class, gives whole permutations).
# Classes are imported on first use, so rng='torch' alone imports torch.
# A new stream is one class implementing EpochStream and one row here.
_REGISTRY = {
    "numpy": ("pystratum.streams._base", "NumpyStream", True),
    "R": ("pystratum.streams._base", "RSeededStream", True),
    "torch": ("pystratum.streams._torch", "TorchStream", True),
    # Random access: plans go through pystratum.engine._lazy, not one permutation(N).
    "index": ("pystratum.streams._index", "IndexStream", False),
}
RNG_CHOICES = tuple(_REGISTRY)
# Streams that give whole permutations (what the negatives sampler draws from).
PERMUTATION_RNG_CHOICES = tuple(name for name, entry in _REGISTRY.items() if entry[2])

# Skipping epochs of a sequential stream draws their groups of draws: at
# most ~1e8 row draws (15-30 s for R's stream), never an endless hang.
MAX_SKIPPED_DRAWS = 10**8
# R's sample.int(n, k) takes its hash path (k draws, not n) above this n
# (pystratum.streams._r._HASH_MIN_N, R's own threshold).
_R_HASH_MIN_N = 10**7

_INT32_MAX = 2**31 - 1
# numpy draws a Fisher-Yates partner from 32-bit words up to this bound.
_UINT32_MAX = 2**32 - 1
# numpy's SeedSequence pool size unless one is given.
_DEFAULT_POOL_SIZE = np.random.SeedSequence(0).pool_size


def stream_for(rng: str, seed, shuffle: bool):
    """The epoch stream, or None for ``shuffle=False`` (row order), where a seed is an error."""
    if shuffle:
        return make_stream(rng, seed)
    if seed is not None:
        raise ValueError(
            f"seed={seed!r} has no effect since shuffle=False (batches then follow row "
            f"order). Leave seed=None, or set shuffle=True."
        )
    return None


def stream_class(rng: str):
    """The class registered for ``rng`` (callers validate ``rng`` against RNG_CHOICES)."""
    module_name, class_name, _ = _REGISTRY[rng]
    return getattr(importlib.import_module(module_name), class_name)


def make_stream(rng: str, seed):
    """The stream for ``rng`` and ``seed`` (validated; seed=None draws fresh entropy)."""
    return stream_class(rng)(seed)


class EpochStream(abc.ABC):
    """What every random stream provides (the registry's classes implement it).

    ``name`` is the ``rng`` value; ``seed`` what to pass again for the same
    batches. ``permutation(n, epoch)`` is epoch ``epoch``'s 0-based
    permutation of ``range(n)``; ``epoch_draws`` the epoch's group of
    partial shuffles (sampling policies draw stratum by stratum instead of
    one permutation). ``advance_to`` prepares an epoch (sequential streams
    draw the epochs before it; ``draws_of(k)`` gives epoch ``k``'s group of
    draws, by default one permutation of ``n``); ``state_dict``/
    ``load_state_dict`` save and restore where the stream stands, as plain
    values.
    """

    name: ClassVar[str]
    seed: object
    # Whether shuffle_in_place reorders an array without drawing the
    # permutation as an array of its own (the plan's leaner path).
    shuffles_in_place: ClassVar[bool] = False

    @abc.abstractmethod
    def permutation(self, n: int, epoch: int) -> np.ndarray:
        """Epoch ``epoch``'s permutation of ``range(n)``."""

    def shuffle_in_place(self, values: np.ndarray, epoch: int) -> None:
        """Reorder ``values`` (1-D) as epoch ``epoch``'s permutation orders ``range(n)``.

        Afterwards ``values[k]`` is the old ``values[permutation(n, epoch)[k]]``,
        with the same draws from the stream. This default draws the
        permutation and gathers; streams with ``shuffles_in_place`` do it
        without the copy.
        """
        values[:] = values[self.compact_permutation(values.shape[0], epoch)]

    def compact_permutation(self, n: int, epoch: int) -> np.ndarray:
        """:meth:`permutation`'s values, as int32 when ``n < 2**31`` (else int64).

        What the plan's assembly reads: half the memory of the int64
        permutation, same values and the same draws from the stream.
        Streams that can draw into int32 directly override it.
        """
        permutation = self.permutation(n, epoch)
        return permutation.astype(np.int32) if n <= _INT32_MAX else permutation

    @abc.abstractmethod
    def epoch_draws(self, n: int, draws, epoch: int, draws_of=None) -> list:
        """Epoch ``epoch``'s group of draws, one array per ``(size, take)`` in ``draws``.

        Each gives ``take <= size`` distinct values of ``range(size)`` in
        uniformly random order (a permutation when ``take == size``). How a
        stream draws a short one (``take < size``) is part of its contract:
        numpy ``Generator.choice(size, take, replace=False)`` (O(take) draws
        for a short take), R ``sample.int(size, take)``, torch the first
        ``take`` values of ``randperm(size)`` (libtorch has no cheaper draw
        that R torch shares). ``n`` (the rows) and ``draws_of`` are for
        sequential streams' :meth:`advance_to`.
        """

    def epoch_orders(self, n: int, draws, epoch: int, sources, draws_of=None) -> list:
        """:meth:`epoch_draws`, each draw with a source applied: ``source[draw]``.

        ``sources``: one 1-D array of ``size`` values per ``(size, take)`` in
        ``draws``, or None (the draw itself, indices). The same draws from
        the stream; streams that can shuffle the values themselves (numpy,
        for a whole draw) skip the gather.
        """
        drawn = self.epoch_draws(n, draws, epoch, draws_of)
        return [order if source is None else source[order]
                for order, source in zip(drawn, sources)]

    @abc.abstractmethod
    def advance_to(self, n: int, epoch: int, draws_of=None) -> None:
        """Make epoch ``epoch`` the next one to draw."""

    @abc.abstractmethod
    def state_dict(self) -> dict:
        """Where the stream stands, as plain values."""

    @abc.abstractmethod
    def load_state_dict(self, state: dict) -> None:
        """Restore what :meth:`state_dict` saved."""


class StatelessStream(EpochStream):
    """Streams whose epochs depend on (seed, epoch) alone: no position to keep."""

    def advance_to(self, n: int, epoch: int, draws_of=None) -> None:
        """Nothing to do: any epoch is computed directly."""

    def state_dict(self) -> dict:
        """Empty: draws depend on (seed, epoch) only."""
        return {}

    def load_state_dict(self, state: dict) -> None:
        """Accepts the empty state of :meth:`state_dict`."""
        if state:
            raise ValueError(
                f"rng={self.name!r} streams have no position to restore, got state with keys "
                f"{sorted(map(str, state))}; was it saved with another rng?"
            )


def fresh_int32_seed() -> int:
    """A random seed that R's ``set.seed`` and torch both accept."""
    return int(np.random.SeedSequence().generate_state(1, dtype=np.uint32)[0] & _INT32_MAX)


def _reject_bool(seed):
    if isinstance(seed, (bool, np.bool_)):
        raise TypeError(
            f"seed must be an integer (or None), got seed={seed!r} of type bool."
        )


class NumpyStream(StatelessStream):
    """Per-epoch independent numpy generators derived from one seed.

    seed: None (fresh OS entropy, reported by ``.seed`` for reuse), a
    non-negative int, a ``numpy.random.SeedSequence``, or a
    ``numpy.random.Generator`` (then permutations are drawn from that
    generator, advancing it, and ``epoch`` cannot select anything).
    """

    name = "numpy"
    shuffles_in_place = True

    def __init__(self, seed=None):
        _reject_bool(seed)
        self.generator = None
        if seed is None:
            self.seed_sequence = np.random.SeedSequence()
        elif isinstance(seed, np.random.SeedSequence):
            self.seed_sequence = seed
        elif isinstance(seed, np.random.Generator):
            self.seed_sequence = None
            self.generator = seed
        elif isinstance(seed, (numbers.Integral, np.integer)):
            seed = check_int(seed, "seed", minimum=0,
                             fix="rng='numpy' takes a non-negative seed; negative seeds "
                                 "are R's convention and work with rng='R'.")
            self.seed_sequence = np.random.SeedSequence(seed)
        else:
            raise TypeError(
                f"seed must be None, an int, a numpy.random.SeedSequence or a "
                f"numpy.random.Generator for rng='numpy', got seed={seed!r} of type "
                f"{type(seed).__name__}."
            )

    @property
    def seed(self):
        """What to pass as ``seed`` to get the same batches again (None for a Generator)."""
        sequence = self.seed_sequence
        if sequence is None:
            return None
        # The plain int only where SeedSequence(int) is this very sequence: a list or
        # array of entropy, a spawn key or another pool size need the sequence itself.
        if not sequence.spawn_key and sequence.pool_size == _DEFAULT_POOL_SIZE and \
                isinstance(sequence.entropy, (numbers.Integral, np.integer)):
            return int(sequence.entropy)
        return sequence

    def generator_for_epoch(self, epoch: int) -> np.random.Generator:
        if self.generator is not None:
            if epoch != 0:
                raise ValueError(
                    f"epoch={epoch} cannot be selected when seed is a numpy Generator: its "
                    f"draws simply advance the generator. Pass seed=<int> or a SeedSequence "
                    f"to reach any epoch directly, or leave epoch=0."
                )
            return self.generator
        parent = self.seed_sequence
        child = np.random.SeedSequence(
            parent.entropy, spawn_key=(*parent.spawn_key, epoch), pool_size=parent.pool_size
        )
        return np.random.default_rng(child)

    def permutation(self, n: int, epoch: int) -> np.ndarray:
        return self.generator_for_epoch(epoch).permutation(n)

    def shuffle_in_place(self, values: np.ndarray, epoch: int) -> None:
        """``Generator.shuffle(values)`` with the epoch's generator: ``permutation(n)``'s order.

        ``permutation(n)`` is ``arange(n)`` shuffled, and a 1-D shuffle makes
        the same swaps whatever the values, so any array is reordered as
        ``arange(n)`` would be. With numba (the ``fast`` extra) the swaps are
        made by a compiled loop that prefetches each swap's partner
        (``pystratum.kernels._assemble.shuffle_like_numpy``): the same draws
        and swaps, several times faster than numpy's loop on large arrays.
        """
        _shuffle(self.generator_for_epoch(epoch), values)

    def epoch_draws(self, n: int, draws, epoch: int, draws_of=None) -> list:
        """The epoch's partial shuffles, all from the epoch's own generator."""
        generator = self.generator_for_epoch(epoch)
        return [_draw(generator, size, take) for size, take in draws]

    def epoch_orders(self, n: int, draws, epoch: int, sources, draws_of=None) -> list:
        """:meth:`epoch_draws` applied to ``sources``: a whole draw shuffles a copy of its
        source (``permutation(size)``'s swaps reorder any values alike), no gather."""
        generator = self.generator_for_epoch(epoch)
        orders = []
        for (size, take), source in zip(draws, sources):
            if source is None:
                orders.append(_draw(generator, size, take))
            elif take == size:
                values = source.astype(np.int64)  # a copy: the source is left as it is
                _shuffle(generator, values)
                orders.append(values)
            else:
                orders.append(source[generator.choice(size, take, replace=False)])
        return orders


def _draw(generator: np.random.Generator, size: int, take: int) -> np.ndarray:
    """``take`` distinct values of ``range(size)`` in random order: the numpy stream's draw."""
    if take == size:
        return _permutation(generator, size)
    return generator.choice(size, take, replace=False)  # Floyd's sampling: O(take) draws


def _shuffle(generator: np.random.Generator, values: np.ndarray) -> None:
    """``generator.shuffle(values)``, by the compiled loop when numba is there (same swaps).

    Only from ``2**17`` values: below that numpy's loop takes a few
    milliseconds, less than importing numba would cost.
    """
    # The kernel is compiled for what the plan shuffles: 1-D int64 arrays.
    kernels = kernel_gate.compiled_for("assemble", values.shape[0]) \
        if values.dtype == np.int64 and values.ndim == 1 and values.shape[0] <= _UINT32_MAX + 1 \
        else None
    if kernels is None:
        generator.shuffle(values)
        return
    bit_generator = generator.bit_generator
    interface = bit_generator.ctypes
    with bit_generator.lock:
        kernels.shuffle_like_numpy(values, interface.next_uint32, interface.state_address)


def _permutation(generator: np.random.Generator, n: int) -> np.ndarray:
    """``generator.permutation(n)``: the same values and draws (``arange(n)`` shuffled)."""
    values = np.arange(n, dtype=np.int64)
    _shuffle(generator, values)
    return values


def check_state_keys(state, keys, rng: str) -> None:
    """A stream state must be the dict :meth:`state_dict` saved, with all its keys."""
    if not isinstance(state, dict):
        raise TypeError(
            f"the rng={rng!r} stream state must be the dict saved by state_dict(), got "
            f"{type(state).__name__}."
        )
    missing = [key for key in keys if key not in state]
    if missing:
        raise ValueError(
            f"the rng={rng!r} stream state lacks {missing} (it has {sorted(map(str, state))}); "
            f"pass a state saved by state_dict() with the same rng."
        )


@dataclass(frozen=True)
class SkipCost:
    """The price of skipping epochs: draw calls, rows drawn, and their cost in row draws.

    ``cost = rows + calls * call_cost``. ``complete`` is False when pricing
    stopped early (the limit was passed): the numbers are then lower bounds.
    """

    calls: int
    rows: int
    cost: int
    complete: bool


def skip_refusal(epoch: int, rng: str, skipped: int, n: int, start: str, cost: SkipCost,
                 call_cost: int) -> str:
    """The message refusing a jump to ``epoch`` (the R package's words, Python's fixes)."""
    least = "" if cost.complete else "at least "
    return (
        f"epoch={epoch} with rng={rng!r} means drawing the {skipped:,} earlier epoch(s) of "
        f"these {n:,} rows first (epoch k of this stream is its (k+1)-th group of draws, "
        f"counted from {start}): {least}{cost.calls:,} draw(s) of {least}{cost.rows:,} rows, "
        f"a cost of {least}{cost.cost:,} row draws (each draw counts its rows plus "
        f"{call_cost:,} for the call), over the limit of {MAX_SKIPPED_DRAWS:,}. Use "
        f"rng='numpy' or rng='index', which reach any epoch directly; or keep one sampler "
        f"and walk the epochs in order (StratifiedBatchSampler keeps its stream's position, "
        f"so each epoch costs only its own draws); or pick a smaller epoch."
    )


class SequentialStream(EpochStream):
    """Base of streams whose epoch k is the (k+1)-th draw of one generator.

    Subclasses say how to go back to the seed (``_restart``), how to draw one
    permutation (``_draw``), and how to read and set the generator's state
    (``_get_position``/``_set_position``, saved under ``_state_key``); this
    class remembers where the stream stands, so that walking epochs in order
    costs one draw each, and saves and restores it.
    """

    _state_key: ClassVar[str]
    # The overhead of one draw call, in row draws (see the module docstring).
    call_cost: ClassVar[int] = 2000

    name = "sequential"
    _n = None
    _next_epoch = 0

    def _restart(self) -> None:
        raise NotImplementedError

    def _draw(self, n: int, compact: bool = False) -> np.ndarray:
        """One permutation of ``range(n)``; ``compact``: int32 allowed (when it fits)."""
        raise NotImplementedError

    def _draw_part(self, n: int, take: int) -> np.ndarray:
        """``take`` distinct values of ``range(n)`` in random order (default: a cut permutation)."""
        permutation = self._draw(n)
        return permutation if take == n else permutation[:take]

    def _draw_parts(self, draws) -> list:
        """``[_draw_part(size, take) for size, take in draws]`` (a stream may share work)."""
        return [self._draw_part(size, take) for size, take in draws]

    def _get_position(self):
        raise NotImplementedError

    def _set_position(self, saved) -> None:
        """Restore a saved generator state (validate it: raise TypeError/ValueError)."""
        raise NotImplementedError

    def state_dict(self) -> dict:
        """Where the stream stands: the generator state before epoch ``epoch`` of ``n`` rows."""
        if self._n is None:
            return {"n": None, "epoch": 0, self._state_key: None}
        return {"n": int(self._n), "epoch": int(self._next_epoch),
                self._state_key: self._get_position()}

    def load_state_dict(self, state: dict) -> None:
        """Restore a position saved by :meth:`state_dict` (of a stream with the same seed)."""
        check_state_keys(state, ("n", "epoch", self._state_key), self.name)
        saved = state[self._state_key]
        if saved is None:
            self._restart()
            self._n = None
            self._next_epoch = 0
            return
        n = check_int(state["n"], "state['n']", minimum=0)
        epoch = check_epoch(state["epoch"], "state['epoch']")
        self._set_position(saved)
        self._n = n
        self._next_epoch = epoch

    def draw_cost(self, size: int, take: int) -> int:
        """Row draws one ``_draw_part(size, take)`` costs, its call overhead included.

        The rows the stream touches (``size`` by default: a permutation of
        ``size`` cut to ``take``) plus :attr:`call_cost`.
        """
        return size + self.call_cost

    def epoch_cost(self, draws) -> SkipCost:
        """The cost of one epoch's group of draws (``[(size, take), ...]``), as drawn."""
        rows = sum(self.draw_cost(size, take) - self.call_cost for size, take in draws)
        return SkipCost(len(draws), rows, rows + len(draws) * self.call_cost, True)

    def skip_cost(self, n: int, epoch: int, draws_of=None):
        """What reaching ``epoch`` costs from where the stream stands: ``(cost, groups)``.

        ``cost`` is a :class:`SkipCost`; ``groups`` the skipped epochs' groups
        of draws (None when the cost is over ``MAX_SKIPPED_DRAWS``). The
        epochs are priced one by one with the draws their policy makes
        (``draws_of(k)``; None: one permutation of ``n``), stopping as soon
        as the limit is passed, so pricing a refused jump stays cheap: every
        skipped epoch costs at least one call, so at most
        ``MAX_SKIPPED_DRAWS / call_cost`` epochs are ever priced.
        """
        restart = n != self._n or epoch < self._next_epoch
        first = 0 if restart else self._next_epoch
        skipped = epoch - first
        if draws_of is None:
            one = self.epoch_cost([(n, n)])
            cost = SkipCost(skipped * one.calls, skipped * one.rows, skipped * one.cost, True)
            return cost, (None if cost.cost > MAX_SKIPPED_DRAWS else [[(n, n)]] * skipped)
        # Each epoch draws at least once, at least one row: a floor known at once.
        floor = SkipCost(skipped, skipped, skipped * (1 + self.call_cost), False)
        if floor.cost > MAX_SKIPPED_DRAWS:
            return floor, None
        calls = rows = total = 0
        groups = []
        for k in range(first, epoch):
            group = draws_of(k)
            one = self.epoch_cost(group)
            calls, rows, total = calls + one.calls, rows + one.rows, total + one.cost
            if total > MAX_SKIPPED_DRAWS:
                return SkipCost(calls, rows, total, k == epoch - 1), None
            groups.append(group)
        return SkipCost(calls, rows, total, True), groups

    def advance_to(self, n: int, epoch: int, draws_of=None) -> None:
        """Draw the epochs before ``epoch`` (if needed), so epoch ``epoch`` is drawn next.

        ``draws_of(k)``: the ``(size, take)`` draws epoch ``k`` makes (see
        :meth:`epoch_draws`); None means one permutation of ``n``.

        Raises ValueError (before drawing anything) when the epochs to skip,
        counted from the current position, would cost more than
        ``MAX_SKIPPED_DRAWS`` row draws (:meth:`skip_cost`: every draw its
        rows plus the stream's per-call overhead; the R package's rule).
        """
        restart = n != self._n or epoch < self._next_epoch
        cost, groups = self.skip_cost(n, epoch, draws_of)
        if groups is None:
            start = "its seed" if restart else f"epoch {self._next_epoch}, where it stands"
            skipped = epoch if restart else epoch - self._next_epoch
            raise ValueError(skip_refusal(epoch, self.name, skipped, n, start, cost,
                                          self.call_cost))
        if restart:
            self._restart()
            self._n = n
            self._next_epoch = 0
        for group in groups:
            self._draw_parts(group)
            self._next_epoch += 1

    def permutation(self, n: int, epoch: int) -> np.ndarray:
        self.advance_to(n, epoch)
        self._next_epoch += 1
        return self._draw(n)

    def compact_permutation(self, n: int, epoch: int) -> np.ndarray:
        self.advance_to(n, epoch)
        self._next_epoch += 1
        permutation = self._draw(n, compact=True)
        # R's draws are int32 already: no copy of the epoch's permutation.
        return permutation.astype(np.int32, copy=False) if n <= _INT32_MAX else permutation

    def epoch_draws(self, n: int, draws, epoch: int, draws_of=None) -> list:
        """Epoch ``epoch``'s group of draws, one per ``(size, take)``."""
        self.advance_to(n, epoch, draws_of)
        self._next_epoch += 1
        return self._draw_parts(draws)


class RSeededStream(SequentialStream):
    """R's ``set.seed(seed)`` followed by one ``sample(n)`` per epoch.

    Reaching epoch k from the start costs k+1 permutations (R's stream has no
    skip-ahead); the position after the last served epoch is kept, so
    consecutive epochs cost one each.
    """

    name = "R"

    def __init__(self, seed=None):
        from ._r import RStream

        _reject_bool(seed)
        if seed is None:
            seed = fresh_int32_seed()
        if not isinstance(seed, (numbers.Integral, np.integer)):
            raise TypeError(
                f"seed must be an integer (or None) for rng='R', which reproduces R's "
                f"set.seed(seed); got seed={seed!r} of type {type(seed).__name__}."
            )
        self.seed = int(seed)
        self._start = RStream(self.seed)  # validates the seed the way R does
        self._stream = None

    def _restart(self) -> None:
        self._stream = self._start.copy()

    def _draw(self, n: int, compact: bool = False) -> np.ndarray:
        if compact:
            return self._stream.compact_permutation(n)
        return self._stream.permutation(n)

    def _draw_part(self, n: int, take: int) -> np.ndarray:
        # R's sample.int(n, take): `take` draws (hash path for large n), not n.
        return self._stream.partial_permutation(n, take)

    def _draw_parts(self, draws) -> list:
        # One word tap for the group: many small draws pay its set-up once.
        return self._stream.partial_permutations(draws)

    def draw_cost(self, size: int, take: int) -> int:
        """R's ``sample.int(size, take)``: ``take`` rows on its hash path, else ``size``."""
        rows = take if size > _R_HASH_MIN_N and 2 * take <= size else size
        return rows + self.call_cost

    # Saved as R's .Random.seed: plain Python ints, so torch.save /
    # torch.load(weights_only=True) and JSON keep it as is.
    _state_key = "random_seed"

    def _get_position(self):
        return np.asarray(self._stream.random_seed, dtype=np.int32).tolist()

    def _set_position(self, saved) -> None:
        stream = self._start.copy()
        stream.random_seed = np.asarray(saved, dtype=np.int32)
        self._stream = stream
