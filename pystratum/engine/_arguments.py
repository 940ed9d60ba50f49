"""Argument checks the materialised and the lazy plan share."""

from __future__ import annotations

from ..policies import Policy, as_policy
from ..strata._encode import EncodedStrata

__all__ = ["check_strata_are_groups", "resolve_policy"]

# Below this many strata, few rows per stratum is plausible (small data);
# above it, about one row per stratum means a feature column was passed.
_GROUP_CHECK_MIN_STRATA = 100


def resolve_policy(policy, min_samples_per_stratum) -> Policy:
    """The policy of a call that takes ``policy`` or the older ``min_samples_per_stratum``."""
    if min_samples_per_stratum is not None:
        if policy is not None:
            raise TypeError(
                f"Pass either policy or min_samples_per_stratum, not both: got policy="
                f"{policy!r} and min_samples_per_stratum={min_samples_per_stratum!r}. "
                f"An int policy means min_samples_per_stratum."
            )
        policy = min_samples_per_stratum
    # A missing policy is refused as the shorthand's argument, as in R.
    return as_policy(policy)


def check_strata_are_groups(encoded: EncodedStrata, name: str = "strata") -> None:
    """Refuse strata with (on average) under two rows each, among many strata.

    A feature table, a row id or a continuous target passed as strata gives
    about one row per stratum; every batch would then need every stratum, so
    the whole data set would be one batch. That is never what was meant.
    """
    n_strata, n_rows = encoded.n_strata, encoded.n_rows
    if n_strata >= _GROUP_CHECK_MIN_STRATA and n_rows < 2 * n_strata:
        raise ValueError(
            f"{name} has {n_strata} distinct strata for {n_rows} rows (on average "
            f"{n_rows / n_strata:.2f} rows per stratum): this looks like a feature column, a "
            f"row id or a continuous target, not group labels, and every batch would have to "
            f"hold every stratum (one batch with the whole data set). Pass the class or group "
            f"column(s) as {name}; bin a continuous target first (e.g. numpy.digitize or "
            f"pandas.qcut)."
        )
