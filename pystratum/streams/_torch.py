"""torch's random stream, imported only when ``rng="torch"`` is asked for."""

from __future__ import annotations

import numbers

import numpy as np

from ..base._optional import require_torch

torch = require_torch("rng='torch'")

from ._base import SequentialStream, fresh_int32_seed

__all__ = ["TorchStream", "TORCH_SEED_MAX"]

# R torch's torch_manual_seed() takes a double: whole numbers are exact only up
# to 2**53, so larger (or negative) seeds cannot name the same stream in R.
TORCH_SEED_MAX = 2**53


class TorchStream(SequentialStream):
    """A private ``torch.Generator`` seeded with ``seed``; epoch k is its (k+1)-th randperm.

    ``torch.randperm(n, generator=g)`` after ``g.manual_seed(seed)`` equals R
    torch's ``torch_randperm(n) + 1`` after ``torch_manual_seed(seed)`` when
    both run the same libtorch version (checked for PyTorch 2.13 against R
    torch 0.16.3 / libtorch 2.7.1); another version may change the stream.
    The global torch generator is never touched.
    """

    name = "torch"

    def __init__(self, seed=None):
        if isinstance(seed, (bool, np.bool_)) or not (
            seed is None or isinstance(seed, (numbers.Integral, np.integer))
        ):
            raise TypeError(
                f"seed must be an integer (or None) for rng='torch', got seed={seed!r} "
                f"of type {type(seed).__name__}."
            )
        self.seed = fresh_int32_seed() if seed is None else int(seed)
        if not 0 <= self.seed <= TORCH_SEED_MAX:
            raise ValueError(
                f"seed must be a whole number between 0 and 2**53 for rng='torch', got "
                f"seed={self.seed}. R torch's torch_manual_seed() holds the seed as a double, "
                f"exact only up to 2**53, so only these seeds give the same stream in both "
                f"languages; use a seed in [0, {TORCH_SEED_MAX}]."
            )
        generator = torch.Generator()
        generator.manual_seed(self.seed)
        self._initial_state = generator.get_state()
        self._generator = generator

    def _restart(self) -> None:
        self._generator.set_state(self._initial_state)

    def _draw(self, n: int, compact: bool = False) -> np.ndarray:
        return torch.randperm(n, generator=self._generator).numpy().astype(np.int64, copy=False)

    # Saved as the uint8 tensor torch.Generator.get_state returns, which
    # torch.save / torch.load(weights_only=True) keep as is.
    _state_key = "generator_state"

    def _get_position(self):
        return self._generator.get_state()

    def _set_position(self, saved) -> None:
        if not isinstance(saved, torch.Tensor) or saved.dtype != torch.uint8:
            raise TypeError(
                f"state['generator_state'] must be the uint8 tensor saved by state_dict(), got "
                f"{type(saved).__name__}."
            )
        self._generator.set_state(saved.cpu())
