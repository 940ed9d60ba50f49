"""``EpochSetter``: the ``batch_sampler.sampler.set_epoch`` hook of the pystratum batch samplers.

The pass over a rank's batches of one epoch (what ``iter(sampler)`` returns)
is :class:`pystratum.serving.EpochPass`, shared by every sampler family.
"""

from __future__ import annotations

from ..serving import EpochPass

__all__ = ["EpochPass", "EpochSetter"]


class EpochSetter:
    """``batch_sampler.sampler`` of a pystratum batch sampler: only forwards ``set_epoch``.

    Lightning and accelerate call ``set_epoch`` on ``loader.batch_sampler.sampler``
    (never on the batch sampler itself) at the start of every epoch; this object
    lets that call reach the sampler, which needs it under ``num_replicas > 1``.
    """

    __slots__ = ("_owner",)

    def __init__(self, owner):
        self._owner = owner

    def set_epoch(self, epoch: int) -> None:
        self._owner.set_epoch(epoch)

    def __repr__(self) -> str:
        return f"<set_epoch hook of a pystratum {type(self._owner).__name__}>"
