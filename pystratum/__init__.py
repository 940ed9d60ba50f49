"""pystratum: mini-batches that contain every stratum.

Every batch holds what its policy promises (``MinPerStratum(m)``, or just
``m``: at least ``m`` rows of every stratum; see :mod:`pystratum.policies`),
every row appears once per epoch (``MinPerStratum``, ``FixedSize``; the
sampling policies ``Targets`` and ``Downsample`` recycle or leave out rows on
purpose), each epoch is a new shuffle, and with ``rng="R"`` (or
``rng="index"``) and a seed the batches equal the R package's for the same
seed (0-based here, 1-based in R). The default ``rng="numpy"`` is Python
only.

Install: ``pip install stratabatch`` (the distribution name; the import name
is ``pystratum``).

The core (this namespace) needs numpy only (``parquet_strata``: pyarrow).
Lazy plans (``rng="index"``, :func:`lazy_plan`) compute any batch on demand
from member lists (:class:`StratumMembers`, :func:`grouped_strata`,
:func:`parquet_strata`). Multi-label input is a label matrix, rows x labels of
0/1 (:func:`label_matrix`, :func:`label_matrix_from_sets`). Framework layers live in ``pystratum.torch``
(PyTorch samplers) and ``pystratum.r`` (rpy2 bindings to the R package);
``pystratum.negatives`` generates negative pairs for (user, item) data and
``pystratum.tree`` builds samplers from YAML sampling trees.
"""

from . import policies
from .engine._lazy import LazyPlan, lazy_plan
from .strata._label_matrix import LabelMatrix, label_matrix, label_matrix_from_sets
from .strata._members import StratumMembers, grouped_strata
from .strata._parquet import parquet_strata
from .strata._shards import shard_sizes
from .engine._plan import BatchPlan, plan_batches, stratified_batches
from .streams._r import RStream
from .policies import (ClassesPerBatch, Downsample, FixedSize, MinPerStratum,
                       SingleBatchError, StratumTooSmallWarning, Targets)

__all__ = [
    "BatchPlan",
    "ClassesPerBatch",
    "Downsample",
    "FixedSize",
    "LabelMatrix",
    "LazyPlan",
    "MinPerStratum",
    "RStream",
    "SingleBatchError",
    "StratumMembers",
    "StratumTooSmallWarning",
    "Targets",
    "grouped_strata",
    "label_matrix",
    "label_matrix_from_sets",
    "lazy_plan",
    "parquet_strata",
    "plan_batches",
    "policies",
    "shard_sizes",
    "stratified_batches",
]

__version__ = "0.1.0"
