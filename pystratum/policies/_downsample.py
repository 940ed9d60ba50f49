"""``Downsample(keep, base)``: a fresh random subset of some strata each epoch, with weights."""

from __future__ import annotations

import math
from collections.abc import Mapping

import numpy as np

from ..base._validation import _show
from ._base import Allocation, Policy, check_batch_order, policy_from_params
from ._min_per_stratum import as_policy
from ._shares import StrataCache, labelled_numbers, match_keys

__all__ = ["Downsample"]


class _KeptStrata:
    """The strata as the base policy sees them: same labels and order, kept sizes."""

    def __init__(self, strata, kept):
        self._strata = strata
        self.sizes = kept
        self.labels = strata.labels

    @property
    def first_rows(self):
        return self._strata.first_rows


class Downsample(Policy):
    """Keep a fraction of some strata each epoch, then batch with ``base``; weights undo it.

    keep: dict ``{label: fraction}``, fractions in (0, 1]; strata not named
          keep every row.
    base: the policy that batches the kept rows (a Policy, an int ``m`` for
          ``MinPerStratum(m)``, or a ``{"name", "params"}`` record).

    Stratum ``s`` named in ``keep`` keeps ``k_s = max(1, floor(keep_s * N_s +
    0.5))`` rows (halves up, one double rounding, as in R): a fresh uniformly
    random subset each epoch, in random order, drawn as a partial shuffle of
    the stratum's rows (numpy ``Generator.choice(N_s, k_s, replace=False)``,
    R ``sample.int(N_s, k_s)``), so an epoch costs about one random draw per
    kept row, not a permutation of all rows. ``base`` allocates over the kept sizes
    (if it recycles a stratum, the extra passes reuse the kept rows). Every
    kept row of a downsampled stratum carries the importance weight ``N_s /
    k_s``, every other row 1, each times the base's own weight (1 for
    ``MinPerStratum``/``FixedSize``; ``Targets``' ``w_s`` for a ``Targets``
    base, which undoes its shares too): the weighted sum of any per-row loss
    over an epoch is then an unbiased estimate of its sum over all rows. ``BatchPlan.weights`` and the torch wrapper
    ``pystratum.torch.WeightedDataset`` hand the weights to the loss.

    Rows left out of an epoch are never placed; inside a batch rows come
    stratum by stratum (see ``Targets``).

    ``shuffle=False`` (no stream): the kept rows are each downsampled
    stratum's first ``k_s`` rows in row order, the same every epoch. They are
    not a random subset, so the weights ``N_s / k_s`` make the weighted loss
    an unbiased estimate only when the row order is itself random (data
    shuffled beforehand); use ``shuffle=True`` for the guarantee above.

    Parameters are recorded with labels as text (see ``Targets``):
    ``{"keep": {"0": 0.1}, "base": {"name": ..., "params": ...}}``.
    """

    name = "downsample"

    split_safe_by_default = True

    def __init__(self, keep, base, *, batch_order=None):
        self.batch_order = check_batch_order(batch_order)
        self.keep = _check_keep(keep)
        if isinstance(base, Mapping):
            if set(base) != {"name", "params"}:
                raise TypeError(f"base must be a policy, an int or a record {{'name': ..., "
                                f"'params': ...}}, got base={base!r}.")
            base = policy_from_params(base["name"], base["params"])
        try:
            self.base = as_policy(base)
        except (TypeError, ValueError) as error:
            # as_policy blames its shorthand's name; here the argument is `base`.
            raise type(error)(
                f"base must be a policy, an int m (MinPerStratum(m)) or a record {{'name': ..., "
                f"'params': ...}}, got base={_show(base)} of type {type(base).__name__}: "
                f"{error}") from None
        self._cached_kept = StrataCache()

    def params(self) -> dict:
        return self._with_batch_order({"keep": dict(self.keep), "base": self.base.to_dict()})

    def may_recycle(self) -> bool:
        return self.base.may_recycle()

    def kept_strata(self, strata):
        """The strata as ``base`` sees them: the same labels and order, the kept sizes."""
        return _KeptStrata(strata, self._kept(strata))

    def short_last_batch(self, strata) -> bool:
        """The base's answer on the kept rows (their number is the same every epoch), so
        ``drop_last=True`` drops ``Downsample(keep, FixedSize(n))``'s short last batch."""
        return self.base.short_last_batch(self.kept_strata(strata))

    def allocate(self, strata, epoch) -> Allocation:
        sizes = strata.sizes
        kept = self._kept(strata)
        inner = self.base.allocate(_KeptStrata(strata, kept), epoch)
        pool = kept if inner.pool_sizes is None else inner.pool_sizes
        weights = sizes / kept
        if inner.row_weights is not None:
            weights = weights * inner.row_weights
        return Allocation(inner.cuts, row_weights=weights, pool_sizes=pool)


    def _kept(self, strata) -> np.ndarray:
        """Rows kept per stratum (the same every epoch: cached for the last strata seen)."""
        key = strata.sizes.tobytes()
        cached = self._cached_kept.get(strata, key)
        if cached is not None:
            return cached
        sizes = strata.sizes
        keys = list(self.keep)
        index = match_keys(keys, strata, "keep",
                           "Name strata by their label (as text for JSON: 1 -> '1').")
        fractions = np.array([self.keep[key] for key in keys], dtype=np.float64)
        kept = sizes.copy()
        kept[index] = np.maximum(1, np.floor(fractions * sizes[index] + 0.5)).astype(np.int64)
        kept.flags.writeable = False
        self._cached_kept.put(strata, key, kept)
        return kept


def _check_keep(keep):
    if not isinstance(keep, Mapping) or not keep:
        raise TypeError(
            f"keep must be a non-empty dict {{label: fraction}}, got keep={keep!r} of type "
            f"{type(keep).__name__}."
        )
    result = {}
    for label, key, fraction in labelled_numbers(keep, "keep", "fraction"):
        if not (math.isfinite(fraction) and 0 < fraction <= 1):
            raise ValueError(f"keep fractions must be in (0, 1], got keep[{label!r}]="
                             f"{fraction!r}. Use 1 to keep every row of a stratum.")
        result[key] = fraction
    return result
