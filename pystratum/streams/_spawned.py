"""``default_rng(SeedSequence(entropy, spawn_key=(*key, index)))`` for many indices, cheaply.

The negatives of batch b of epoch e come from
``numpy.random.default_rng(SeedSequence(entropy, spawn_key=(*spawn_key, e, b),
pool_size=pool_size))``. Building that SeedSequence and PCG64 costs about
20 microseconds per batch in numpy (Python-level coercion of the key, the
pool mixing, ``generate_state``), as much as drawing 4,000 integers: with
small batches it was a third of the epoch's negatives. All but the last
key word is the same for every batch of an epoch, so this module runs
numpy's documented SeedSequence algorithm (NEP 19; the mixing of
``numpy/random/bit_generator.pyx``) once up to that word, finishes it per
batch in a few integer operations, applies PCG64's seeding
(``pcg64_set_seed``) and sets the resulting state on one reusable PCG64.

The streams are numpy's own: NumPy guarantees SeedSequence and PCG64
streams stay the same across versions, the tests compare this with
``default_rng(SeedSequence(...))`` on many keys, and
:func:`spawned_generators` checks the first index against numpy itself
every time it is set up and otherwise uses numpy's own construction for
every batch.
"""

from __future__ import annotations

import threading

import numpy as np

__all__ = ["spawned_generators"]

_MASK32 = 0xFFFFFFFF
_MASK128 = (1 << 128) - 1
_INIT_A = 0x43B0D7E5
_MULT_A = 0x931E8875
_INIT_B = 0x8B51F9DD
_MULT_B = 0x58F38DED
_MIX_MULT_L = 0xCA01F9DD
_MIX_MULT_R = 0x4973F715
_XSHIFT = 16
_PCG_MULTIPLIER = 0x2360ED051FC65DA44385DF649FCCF645
# Indices whose seeds are computed together.
_BLOCK = 1024

_local = threading.local()


def _words(value: int) -> list:
    """numpy's coercion of a non-negative int to uint32 words (least significant first)."""
    if value == 0:
        return [0]
    out = []
    while value > 0:
        out.append(value & _MASK32)
        value >>= 32
    return out


class _Mixer:
    """SeedSequence's pool mixing, word by word (the hash constant advances with each)."""

    def __init__(self, pool_size: int):
        self.pool = [0] * pool_size
        self.hash_const = _INIT_A

    def hashmix(self, value: int) -> int:
        value ^= self.hash_const
        self.hash_const = (self.hash_const * _MULT_A) & _MASK32
        value = (value * self.hash_const) & _MASK32
        return value ^ (value >> _XSHIFT)

    def start(self, entropy: list) -> None:
        """The first pool_size words (zeros past the entropy), then all-to-all mixing."""
        pool = self.pool
        for i in range(len(pool)):
            pool[i] = self.hashmix(entropy[i] if i < len(entropy) else 0)
        for src in range(len(pool)):
            for dst in range(len(pool)):
                if src != dst:
                    pool[dst] = _mix(pool[dst], self.hashmix(pool[src]))

    def add(self, word: int) -> None:
        """One word past the pool size, mixed into every pool word."""
        pool = self.pool
        for dst in range(len(pool)):
            pool[dst] = _mix(pool[dst], self.hashmix(word))


def _mix(x: int, y: int) -> int:
    result = (_MIX_MULT_L * x - _MIX_MULT_R * y) & _MASK32
    return result ^ (result >> _XSHIFT)


def _seed_words(pool: list) -> list:
    """``generate_state(4, uint64)`` of pools given word by word (each a uint32 array, one
    entry per index): four uint64 arrays."""
    hash_const = _INIT_B
    words = []
    for i in range(8):
        value = pool[i % len(pool)] ^ np.uint32(hash_const)
        hash_const = (hash_const * _MULT_B) & _MASK32
        value *= np.uint32(hash_const)
        value ^= value >> np.uint32(_XSHIFT)
        words.append(value.astype(np.uint64))
    # uint32 words little-endian into uint64
    return [words[2 * i] | (words[2 * i + 1] << np.uint64(32)) for i in range(4)]


def _pcg64_state(seed_high: int, seed_low: int, inc_high: int, inc_low: int) -> dict:
    """PCG64's seeding (``pcg64_set_seed``): state 0, step, add the seed, step."""
    inc = ((((inc_high << 64) | inc_low) << 1) | 1) & _MASK128
    state = (((inc + ((seed_high << 64) | seed_low)) & _MASK128) * _PCG_MULTIPLIER + inc) \
        & _MASK128
    return {"bit_generator": "PCG64", "state": {"state": state, "inc": inc},
            "has_uint32": 0, "uinteger": 0}


def _numpy_generator(entropy, key, pool_size):
    sequence = np.random.SeedSequence(entropy, spawn_key=key, pool_size=pool_size)
    return np.random.default_rng(sequence)


class _Spawned:
    """Seeds computed a block of indices at a time (numpy arrays), states set per index."""

    def __init__(self, prefix_mixer: _Mixer):
        self._mixer = prefix_mixer
        # (block, seeds), replaced as one tuple: a thread reading it while another
        # computes the next block still sees a matching pair.
        self._cached = None

    def _compute(self, block: int) -> list:
        # Callers send indices above 2**32 - 1 to numpy's own construction, and
        # blocks never straddle 2**32 (_BLOCK divides it).
        index = np.arange(block * _BLOCK, (block + 1) * _BLOCK, dtype=np.uint64).astype(np.uint32)
        pool = [np.full(index.shape[0], word, dtype=np.uint32) for word in self._mixer.pool]
        hash_const = self._mixer.hash_const
        for dst in range(len(pool)):  # the index word, mixed into every pool word
            value = index ^ np.uint32(hash_const)
            hash_const = (hash_const * _MULT_A) & _MASK32
            value *= np.uint32(hash_const)
            value ^= value >> np.uint32(_XSHIFT)
            mixed = pool[dst] * np.uint32(_MIX_MULT_L)
            mixed -= value * np.uint32(_MIX_MULT_R)
            mixed ^= mixed >> np.uint32(_XSHIFT)
            pool[dst] = mixed
        return list(zip(*(column.tolist() for column in _seed_words(pool))))

    def __call__(self, index: int):
        block = index // _BLOCK
        cached = self._cached
        if cached is None or cached[0] != block:
            cached = self._cached = (block, self._compute(block))
        generator = getattr(_local, "generator", None)
        if generator is None:
            generator = _local.generator = np.random.Generator(np.random.PCG64(0))
        generator.bit_generator.state = _pcg64_state(*cached[1][index - block * _BLOCK])
        return generator


def spawned_generators(parent: np.random.SeedSequence, prefix: tuple):
    """``generator(index)``: ``default_rng(SeedSequence(parent.entropy, spawn_key=
    (*parent.spawn_key, *prefix, index), pool_size=parent.pool_size))``, the same stream.

    The generator returned for one index is valid until the next call from the same
    thread (one PCG64 per thread is reseeded each time): draw from it before asking
    for the next index. Indices are expected mostly in increasing order (seeds are
    computed for a block of them at once).
    """
    entropy, pool_size = parent.entropy, parent.pool_size
    key = (*parent.spawn_key, *prefix)

    def slow(index):
        return _numpy_generator(entropy, (*key, index), pool_size)

    try:
        run = _coerce(entropy)
        spawn = [w for part in key for w in _words(int(part))]
    except (TypeError, ValueError):
        return slow
    if pool_size < 1:
        return slow
    # Entropy padded to the pool size (spawned sequences always are), then the key.
    assembled = run + [0] * max(0, pool_size - len(run)) + spawn
    prefix_mixer = _Mixer(pool_size)
    prefix_mixer.start(assembled)
    for word in assembled[pool_size:]:
        prefix_mixer.add(word)
    spawned = _Spawned(prefix_mixer)

    def fast(index):
        if not 0 <= index <= _MASK32:  # more than one key word: numpy's own
            return slow(index)
        return spawned(index)

    if fast(0).bit_generator.state != slow(0).bit_generator.state:
        return slow  # numpy changed its seeding (it promises not to): use numpy's own
    return fast


def _coerce(entropy) -> list:
    """numpy's coercion of SeedSequence entropy (an int or a sequence of ints) to words."""
    if isinstance(entropy, (int, np.integer)):
        return _words(int(entropy))
    words = []
    for part in entropy:
        if not isinstance(part, (int, np.integer)):
            raise TypeError(part)
        words.extend(_words(int(part)))
    return words
