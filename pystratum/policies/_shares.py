"""Exact integer helpers shared by the sampling policies (Targets, Downsample).

Everything here is integer arithmetic (or one documented double rounding),
so that the R package, which mirrors it in ``r/R/policy_shares.R``, gets
the same numbers on every input.
"""

from __future__ import annotations

import math
import numbers

import numpy as np

from ..strata._labels import label_key

__all__ = ["label_key", "match_keys", "share_weights", "weyl_step", "extras_of_batches",
           "window_hits"]

# Shares are turned into integer weights at this resolution.
SHARE_SCALE = 10**6
# Shares must add up to 1 within this tolerance.
SHARE_TOLERANCE = 1e-9


def labelled_numbers(mapping, argument: str, what: str):
    """``(label, key, number)`` for each item of a ``{label: number}`` dict.

    Keys are the labels' text (:func:`label_key`); a stratum named twice, or a
    value that is no real number, is an error naming ``argument`` and what
    each value is (``what``: "share", "fraction").
    """
    seen = set()
    for label, value in mapping.items():
        key = label_key(label)
        if key in seen:
            raise ValueError(f"{argument} names stratum {key!r} twice (labels are matched by "
                             f"their text: 1 and '1' are the same). Give each stratum one "
                             f"{what}.")
        seen.add(key)
        if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Real):
            raise TypeError(f"{argument} must map labels to numbers, got {argument}[{label!r}]="
                            f"{value!r} of type {type(value).__name__}.")
        yield label, key, float(value)


def label_texts(strata) -> tuple:
    """Every stratum's :func:`label_key`: what a policy's keys are matched against."""
    return tuple(label_key(label) for label in strata.labels)


class StrataCache:
    """The last value a policy computed for some strata, found again for strata alike.

    Alike: the same ``key`` (e.g. the sizes' bytes) and labels reading the same
    texts, which is what keys are matched against. Labels equal under ``==``
    can read differently (``True == 1``, but ``"TRUE"`` is not ``"1"``), so
    equal labels are not enough: a cached match must not let keys through
    that the strata's own texts refuse. The very label tuple seen last (a
    sampler's strata, epoch after epoch) is recognised without its texts.
    """

    def __init__(self):
        self._entry = None

    def get(self, strata, key):
        entry = self._entry
        if entry is None or entry[0] != key:
            return None
        if strata.labels is entry[1] or label_texts(strata) == entry[2]:
            return entry[3]
        return None

    def put(self, strata, key, value) -> None:
        self._entry = (key, strata.labels, label_texts(strata), value)


def match_keys(keys, strata, argument: str, fix: str) -> np.ndarray:
    """Index of the stratum each key names (``-1`` never: unknown keys are an error)."""
    texts = [label_key(label) for label in strata.labels]
    position = {}
    for index, text in enumerate(texts):
        if text in position:
            raise ValueError(
                f"{argument} names strata by their label text, but strata "
                f"{strata.labels[position[text]]!r} and {strata.labels[index]!r} both read "
                f"{text!r}. Give the strata distinct labels."
            )
        position[text] = index
    unknown = [key for key in keys if key not in position]
    if unknown:
        known = ", ".join(repr(t) for t in texts[:20]) + (", ..." if len(texts) > 20 else "")
        raise ValueError(
            f"{argument} names strata that are not in the data: {unknown[:10]!r}; the strata "
            f"are {known}. {fix}".rstrip()
        )
    return np.array([position[key] for key in keys], dtype=np.int64)


def share_weights(shares) -> np.ndarray:
    """Integer weights ``floor(share * 10**6 + 0.5)`` (one double rounding per share)."""
    return np.array([math.floor(share * SHARE_SCALE + 0.5) for share in shares], dtype=np.int64)


def weyl_step(total: int) -> int:
    """The smallest ``g >= max(1, floor(total * 0.618034))`` coprime to ``total``.

    Stepping by ``g`` (mod ``total``) visits every point of the circle once
    per ``total`` steps, and a step near the golden ratio spreads the visits
    evenly (a Weyl sequence).
    """
    step = max(1, total * 618034 // 1000000)
    while math.gcd(step, total) != 1:
        step += 1
    return step


def extras_of_batches(starts, remainders, total, step, first_batch, n_batches) -> np.ndarray:
    """0/1 table ``(n_strata, n_batches)``: which strata give batch ``first_batch + j`` an extra row.

    Stratum ``s`` owns the arc ``[starts[s], starts[s] + remainders[s])`` of a
    circle of circumference ``total``; batch ``J`` takes an extra from every
    stratum whose arc holds the point ``J * step mod total``.
    """
    batch = (first_batch % total + np.arange(n_batches, dtype=np.int64)) % total
    point = batch * step % total  # < total**2: total stays far below 2**31
    return ((point[None, :] - starts[:, None]) % total) < remainders[:, None]


def window_hits(start, remainder, total, step, length, *, fewest: bool) -> int:
    """Fewest (or most) extras a stratum gets in any ``length`` consecutive batches.

    The stratum's arc ``[start, start + remainder)`` is hit by batch ``J``
    when ``J * step mod total`` falls in it, i.e. at the batches
    ``J = inverse * (start + i) mod total`` (``i < remainder``), once per
    period of ``total`` batches. The count over a window changes only when
    the window passes one of those batches, so the extreme windows start
    just after (fewest) or at (most) one of them.
    """
    full, rest = divmod(length, total)
    count = full * remainder
    if remainder == 0 or rest == 0:
        return count
    inverse = pow(step, -1, total)
    hits = np.sort((inverse * ((start + np.arange(remainder, dtype=np.int64)) % total)) % total)
    doubled = np.concatenate([hits, hits + total])
    index = np.arange(remainder, dtype=np.int64)
    if fewest:
        # Window [h_i + 1, h_i + rest]: hits up to h_i + rest, minus those up to h_i.
        inside = np.searchsorted(doubled, hits + rest, side="right") - (index + 1)
        return count + int(inside.min())
    # Window [h_i, h_i + rest - 1].
    inside = np.searchsorted(doubled, hits + rest - 1, side="right") - index
    return count + int(inside.max())
