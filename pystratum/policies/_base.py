"""The policy protocol: stratum sizes in, an allocation (per-stratum rank cuts) out.

A policy decides *how many* rows of each stratum each batch receives; it
never sees rows or random numbers. The shared assembly step
(``pystratum._assemble``) then takes the epoch's permutation, ranks every
row within its stratum and sends the row of rank ``r`` of stratum ``s`` to
batch ``b`` when ``cuts[s, b] <= r < cuts[s, b + 1]``. So a new composition
is one new ``Policy`` subclass, and every face (core, torch sampler, R
package) serves it without change.

Policies are registered by ``name`` so that plans, sampler states and the
golden vectors record them as ``{"name": ..., "params": ...}`` and
:func:`policy_from_params` rebuilds them.
"""

from __future__ import annotations

import abc
import inspect
import json
from dataclasses import dataclass
from typing import ClassVar

import numpy as np

from .._validation import check_int

__all__ = ["Allocation", "Policy", "as_policy", "policy_from_params", "registered_policies",
           "strata_of_sizes"]

_REGISTRY: dict = {}


@dataclass(frozen=True)
class Allocation:
    """What a policy decides for one epoch.

    cuts:        int array ``(n_strata, num_batches + 1)``, non-decreasing along
                 each row, ``cuts[:, 0] == 0``: ranks ``cuts[s, b] <= r <
                 cuts[s, b + 1]`` of stratum ``s`` go to batch ``b``; ranks
                 ``>= cuts[s, -1]`` to no batch.
    row_weights: None, or float64 ``(n_strata,)``: the weight every served row
                 of stratum ``s`` carries (importance weights of sampling
                 policies; None means 1 for every row).
    pool_sizes:  None (every row), or int ``(n_strata,)``: stratum ``s`` draws
                 from its first ``pool_s <= size_s`` rows in the epoch's
                 permutation (its ranks ``pool_s..size_s - 1`` go to no batch).

    Rank ``r`` of stratum ``s`` is row ``r % pool_s`` of pass ``r // pool_s``.
    Pass 0 is the pool in the epoch's permuted order; a cut beyond the pool
    (``cuts[s, -1] > pool_s``) *recycles* the stratum: pass ``p >= 1`` lists
    the pool's rows (in pass 0's order) reordered by a fresh permutation of
    ``range(pool_s)`` drawn from the epoch's stream after the main one (see
    ``pystratum._plan.plan_from_stream`` for the order of draws).
    """

    cuts: np.ndarray
    row_weights: np.ndarray | None = None
    pool_sizes: np.ndarray | None = None

    @property
    def num_batches(self) -> int:
        return int(self.cuts.shape[1] - 1)

    @property
    def counts(self) -> np.ndarray:
        """Rows of each stratum in each batch, shape ``(num_batches, n_strata)``."""
        return np.diff(self.cuts, axis=1).T


class Policy(abc.ABC):
    """Base of every batch composition.

    Subclasses set ``name`` (registered on definition), validate their
    parameters in ``__init__``, return them from :meth:`params` (plain JSON
    values, so ``policy_from_params(p.name, p.params()) == p``), and implement
    :meth:`allocate`. ``allocate`` must give the same ``num_batches`` for
    every epoch (``len(sampler)`` relies on it); counts may vary by epoch.
    """

    name: ClassVar[str]

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        name = cls.__dict__.get("name")
        if name is not None:
            if name in _REGISTRY and _REGISTRY[name] is not cls:
                raise ValueError(f"policy name {name!r} is already registered by "
                                 f"{_REGISTRY[name].__name__}")
            _REGISTRY[name] = cls

    @abc.abstractmethod
    def params(self) -> dict:
        """The constructor's keyword arguments, as plain JSON values."""

    @abc.abstractmethod
    def allocate(self, strata, epoch: int) -> Allocation:
        """The allocation of one epoch.

        ``strata`` describes the strata, not the rows: ``.sizes`` (int64, every
        entry >= 1), ``.labels`` (for messages) and ``.first_rows`` (the first
        row of each stratum; computed on first use, so only policies that
        need an order of strata pay for it). ``pystratum._strata.EncodedStrata``
        is one; :func:`strata_of_sizes` makes one from sizes alone.
        """

    def may_recycle(self) -> bool:
        """Whether some epoch may serve a row twice (then epochs draw extra permutations).

        Policies that never do keep drawing exactly one permutation per epoch.
        """
        return False

    def to_dict(self) -> dict:
        """``{"name": ..., "params": ...}``: what plans, states and vectors record."""
        return {"name": self.name, "params": self.params()}

    def __eq__(self, other):
        if not isinstance(other, Policy):
            return NotImplemented
        return self.to_dict() == other.to_dict()

    def __hash__(self):
        return hash(json.dumps(self.to_dict(), sort_keys=True))

    def __repr__(self) -> str:
        arguments = ", ".join(f"{key}={value!r}" for key, value in self.params().items())
        return f"{type(self).__name__}({arguments})"


@dataclass(frozen=True)
class StrataOfSizes:
    """Strata known by their sizes only, appearing in the order given."""

    sizes: np.ndarray
    labels: tuple
    first_rows: np.ndarray


def strata_of_sizes(sizes, labels=None) -> StrataOfSizes:
    """Strata of the given sizes whose rows come stratum by stratum (for tests and tools)."""
    sizes = np.asarray(sizes, dtype=np.int64)
    if labels is None:
        labels = tuple(range(sizes.shape[0]))
    first_rows = np.concatenate([[0], np.cumsum(sizes)[:-1]]).astype(np.int64)
    return StrataOfSizes(sizes, tuple(labels), first_rows)


def registered_policies() -> dict:
    """``{name: class}`` of every policy defined so far."""
    return dict(_REGISTRY)


def policy_from_params(name, params) -> Policy:
    """Rebuild a policy from what :meth:`Policy.to_dict` recorded."""
    if not isinstance(name, str) or name not in _REGISTRY:
        known = ", ".join(repr(k) for k in sorted(_REGISTRY))
        raise ValueError(f"policy name must be one of {known}, got name={name!r}.")
    if not isinstance(params, dict):
        raise TypeError(f"policy params must be a dict of keyword arguments, got "
                        f"params={params!r} of type {type(params).__name__}.")
    policy_class = _REGISTRY[name]
    try:
        inspect.signature(policy_class).bind(**params)
    except TypeError as error:
        raise TypeError(f"policy params {params!r} do not fit {name!r} "
                        f"({policy_class.__name__}): {error}.") from None
    return policy_class(**params)


def as_policy(policy) -> Policy:
    """A policy object, or an int as shorthand for ``MinPerStratum(m)``.

    Anything else is refused as the shorthand's argument,
    ``min_samples_per_stratum``, which is what the R package blames too.
    """
    if isinstance(policy, Policy):
        return policy
    from ._min_per_stratum import MinPerStratum

    check_int(policy, "min_samples_per_stratum", minimum=1,
              fix="Pass an int (at least m rows of every stratum per batch) or a policy "
                  "object such as pystratum.policies.FixedSize(batch_size=64).")
    return MinPerStratum(policy)


def small_cuts(cuts: np.ndarray, sizes: np.ndarray) -> np.ndarray:
    """Cuts as int32 when every stratum fits: with many strata the table holds ~N entries."""
    return cuts.astype(np.int32) if sizes.max() <= np.iinfo(np.int32).max else cuts
