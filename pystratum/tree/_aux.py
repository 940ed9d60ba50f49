"""Auxiliary values: one value per draw, decided with the draw, from their own streams.

Augmentation parameters (a rotation angle, a crop choice) drawn here are a
pure function of (seed, aux name, draw position): the main process decides
them together with the row positions, so DataLoader workers only apply
them and results do not depend on which worker served which row.

``uniform``/``normal``/``choice`` draw from the generator of block
``position // BLOCK`` of the stream keyed by the aux name (a spawn key of
the seed's SeedSequence, like the node streams); ``cycle`` repeats its
values in order, ``values[position % len(values)]``.
"""

from __future__ import annotations

import numpy as np

from ._engine import AUX_STREAMS, BLOCK, child_generator, stream_key

__all__ = ["AuxGenerator"]


def _values_array(values: list) -> np.ndarray:
    kinds = {type(v) for v in values}
    if len(kinds) > 1 and not kinds <= {int, float}:
        return np.array(values, dtype=object)  # keep mixed values as they are
    return np.asarray(values)


class AuxGenerator:
    """The values of one declared auxiliary generator, addressable by draw position."""

    def __init__(self, name: str, spec: dict, seed_sequence: np.random.SeedSequence):
        self.name = name
        self.kind = spec["kind"]
        self.spec = dict(spec)
        self.seed_sequence = seed_sequence
        self.key = stream_key(name)
        self._values = _values_array(spec["values"]) if "values" in spec else None
        self._cumulative = None
        if self.kind == "choice" and "p" in spec:
            p = np.asarray(spec["p"], dtype=np.float64)
            cumulative = np.cumsum(p / p.sum())
            cumulative[-1] = 1.0
            self._cumulative = cumulative
        self._block = None
        self._block_values = None

    def describe(self) -> str:
        detail = ", ".join(f"{k}={v!r}" for k, v in self.spec.items() if k != "kind")
        return f"{self.name}: {self.kind}({detail})"

    def values(self, start: int, n: int) -> np.ndarray:
        """Values of draws ``start .. start + n - 1``."""
        if self.kind == "cycle":
            return self._values[np.arange(start, start + n, dtype=np.int64) % len(self._values)]
        parts = []
        position = start
        end = start + n
        while position < end:
            block, offset = divmod(position, BLOCK)
            values = self._block_of(block)
            k = min(end - position, BLOCK - offset)
            parts.append(values[offset:offset + k])
            position += k
        if not parts:
            return self._block_of(0)[:0]
        return parts[0] if len(parts) == 1 else np.concatenate(parts)

    def _block_of(self, block: int) -> np.ndarray:
        if self._block != block:
            rng = child_generator(self.seed_sequence, AUX_STREAMS, self.key, block)
            spec = self.spec
            if self.kind == "uniform":
                values = rng.uniform(spec["low"], spec["high"], BLOCK)
            elif self.kind == "normal":
                values = rng.normal(spec["mean"], spec["std"], BLOCK)
            else:
                if self._cumulative is None:
                    picks = rng.integers(0, len(self._values), BLOCK)
                else:
                    picks = np.searchsorted(self._cumulative, rng.random(BLOCK), side="right")
                values = self._values[picks]
            self._block, self._block_values = block, values
        return self._block_values
