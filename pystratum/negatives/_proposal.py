"""The distribution generated pairs are drawn from: item weights, ``log_q`` and ``weight``.

``q`` is the probability of the generated pair under the distribution its
draw actually follows (after rejection), with ``w_i`` the item weights (all
1 for uniform items), ``W = sum(w)``, ``O(u)`` the items user u observed and
``U = num_users``:

=====================  ========================================  ==================================
pair_with, rejection   population the negatives stand for        q of a generated (u, i)
=====================  ========================================  ==================================
"user", on             the items u has not observed              ``w_i / (W - sum_{j in O(u)} w_j)``
"user", off            all items                                  ``w_i / W``
"random", on           all unobserved (user, item) pairs          ``w_i / (U*W - sum_{observed (v,j)} w_j)``
"random", off          all (user, item) pairs                     ``w_i / (U*W)``
=====================  ========================================  ==================================

For uniform items the first row is ``1 / (num_items - n_observed(u))``.
``weight = 1 / (k q)``. The k negatives of one observed pair are independent
draws from q, so for any loss ``l``

    E[ sum_{t=1..k} weight_t * l(x_t) ] = k * sum_x q(x) * l(x) / (k q(x)) = sum_x l(x),

the loss summed over the whole population of the table (the user's
unobserved items for ``"user"``, all unobserved pairs for ``"random"``):
the weighted sum over a pair's k negatives is an unbiased estimate of it,
and ``log_q`` is what the log-Q correction of sampled-softmax training
subtracts from the logits. Observed rows have ``log_q = 0`` and
``weight = 1``. A generated pair that can have ``q = 0`` is never drawn.

The tables behind these (per-user ``log`` of the free weight and the
weight of its negatives, the cumulative item weights the weighted draws
invert) are built once, at construction, where a configuration whose
rejection could run out of rounds is refused before anything is drawn.
"""

from __future__ import annotations

import math

import numpy as np

from ._libm import libm_exp, libm_log

from ..base._validation import _show

# Expected number of negatives per epoch that may fail every rejection round:
# above this the configuration is refused up front, naming the worst user.
_FAILURE_BUDGET = 1e-6


def _item_weights(item_weights, num_items):
    if item_weights is None:
        return None
    module = type(item_weights).__module__
    if module.startswith("torch"):
        item_weights = item_weights.detach().cpu().numpy()
    elif module.startswith("pandas"):
        item_weights = item_weights.to_numpy()
    array = np.asarray(item_weights)
    if array.dtype == bool or array.dtype.kind not in "iuf":
        raise TypeError(
            f"item_weights must be numbers (one non-negative weight per item), got dtype "
            f"{array.dtype} (item_weights={_show(item_weights)}).")
    array = array.astype(np.float64)
    if array.ndim != 1 or array.shape[0] != num_items:
        raise ValueError(
            f"item_weights must hold one weight per item (length num_items={num_items}), got "
            f"shape {array.shape}. Pass a 1-D array indexed by item id.")
    bad = np.flatnonzero(~np.isfinite(array) | (array < 0))
    if bad.size:
        raise ValueError(
            f"item_weights must be finite and >= 0, got item_weights[{int(bad[0])}]="
            f"{float(array[bad[0]])!r}. Clip or fix the weights (e.g. popularity ** 0.75).")
    if not array.sum() > 0:
        raise ValueError(
            "item_weights are all zero: no item could be drawn. Give at least one item a "
            "positive weight, or pass item_weights=None for uniform items.")
    return array


def _log_weights(weights):
    return libm_log(weights)


class _Proposal:
    """The sampler's proposal tables (a base of :class:`NegativePairSampler`).

    Reads the sampler's ``users``, ``items``, ``num_users``, ``num_items``,
    ``num_pairs``, ``negatives``, ``pair_with``, ``reject_observed``,
    ``max_rounds``, ``_weights`` and ``_log_weights``; sets ``_cumulative``,
    ``_total_weight``, ``_log_free`` and (``pair_with="user"``) ``_user_terms``.
    """

    def _set_up_probabilities(self):
        k = self.negatives
        weights = self._weights
        # Per-user tables span the users that have pairs (max(users) + 1), not
        # num_users: what the input can use, however large num_users is. Users
        # beyond have observed nothing (log_q reads them as such).
        n_observed = np.bincount(self.users)
        if weights is None:
            total = float(self.num_items)
            observed_weight = n_observed.astype(np.float64)
            pair_weight_total = float(self.num_pairs)
            self._cumulative = None
        else:
            # R's cumsum() accumulates in long double; so does this, so the
            # inverse-CDF boundaries (and hence weighted draws) agree bit for bit.
            self._cumulative = np.cumsum(weights.astype(np.longdouble)).astype(np.float64)
            total = float(self._cumulative[-1])
            observed_weight = np.bincount(self.users, weights=weights[self.items])
            pair_weight_total = float(observed_weight.sum())
        self._total_weight = total
        if self.pair_with == "user":
            free = total - observed_weight if self.reject_observed else np.full_like(
                observed_weight, total)
            if self.reject_observed:
                self._check_user_acceptance(n_observed, observed_weight, free / total)
            # Per user: log(free) and the weight exp(log free) / k of its negatives,
            # side by side (real, imag) so a batch reads both in one gather; the
            # same arithmetic per element as computing them per row.
            terms = np.empty(free.shape[0], dtype=np.complex128)
            terms.real = libm_log(free)
            terms.imag = libm_exp(terms.real) / k
            self._user_terms = terms
            self._log_free = terms.real  # a view
        else:
            free = self.num_users * total - (pair_weight_total if self.reject_observed else 0.0)
            if self.reject_observed:
                acceptance = free / (self.num_users * total)
                if not acceptance > 0:
                    raise ValueError(
                        f"every (user, item) pair of positive weight is observed (num_users="
                        f"{self.num_users}, num_items={self.num_items}), so pair_with='random' "
                        f"has no unobserved pair to draw. Set reject_observed=False, or add "
                        f"users/items.")
                self._check_rounds(k * self.num_pairs * (1 - acceptance) ** self.max_rounds,
                                   "the observed pairs cover "
                                   f"{1 - acceptance:.4%} of the proposal's mass",
                                   acceptance, k * self.num_pairs)
            self._log_free = math.log(free)

    def _check_user_acceptance(self, n_observed, observed_weight, acceptance):
        users = np.flatnonzero(n_observed)
        acc = acceptance[users]
        dead = users[~(acc > 0)]
        if dead.size:
            user = int(dead[0])
            what = ("every item" if self._weights is None
                    else "every item of positive item_weights")
            raise ValueError(
                f"user {user} has observed {what} ({int(n_observed[user])} of num_items="
                f"{self.num_items}), so it has no unobserved item to draw as a negative "
                f"({dead.size} such user(s)). Drop its pairs from users/items, set "
                f"reject_observed=False, or use pair_with='random'.")
        failing = self.negatives * n_observed[users] * (1 - acc) ** self.max_rounds
        if failing.sum() > _FAILURE_BUDGET:
            worst = int(np.argmax(failing))
            user = int(users[worst])
            self._check_rounds(
                float(failing.sum()),
                f"user {user} has observed {int(n_observed[user])} of num_items="
                f"{self.num_items} items (acceptance {acc[worst]:.4%})",
                float(acc[worst]), self.negatives * int(n_observed[user]))

    def _check_rounds(self, expected_failures, who, acceptance, slots):
        if expected_failures <= _FAILURE_BUDGET:
            return
        needed = math.ceil(math.log(_FAILURE_BUDGET / max(slots, 1)) / math.log1p(-acceptance))
        raise ValueError(
            f"{who}: drawing its negatives by rejection would exceed max_rounds="
            f"{self.max_rounds} rounds for about {expected_failures:.3g} negatives per epoch. "
            f"Raise max_rounds to at least {needed}, set reject_observed=False, or drop the "
            f"users who observed (nearly) every item.")

    def _log_q(self, users, items):
        log_w = 0.0 if self._weights is None else self._log_weights[items]
        if self.pair_with == "user":
            return log_w - self._log_free[users]
        return np.broadcast_to(log_w - self._log_free, items.shape).astype(np.float64)

    def _weighted_items(self, uniforms):
        # Inverse CDF on the cumulative weights: item i when
        # cum[i-1] <= u * total < cum[i]; zero-weight items are never hit.
        return np.searchsorted(self._cumulative, uniforms * self._total_weight, side="right")
