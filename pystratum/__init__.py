"""pystratum: mini-batches that contain every stratum.

Every batch holds at least ``min_samples_per_stratum`` rows of every stratum,
every row appears once per epoch, each epoch is a new shuffle, and the same
seed gives the same batches in Python and in R.

The core (this namespace) needs numpy only. Framework layers live in
``pystratum.torch`` (PyTorch samplers) and ``pystratum.r`` (rpy2 bindings to
the R package).
"""

from . import policies
from ._plan import BatchPlan, plan_batches, stratified_batches
from ._rstream import RStream
from .policies import FixedSize, MinPerStratum, StratumTooSmallWarning

__all__ = [
    "BatchPlan",
    "FixedSize",
    "MinPerStratum",
    "RStream",
    "StratumTooSmallWarning",
    "plan_batches",
    "policies",
    "stratified_batches",
]

__version__ = "0.1.0"
