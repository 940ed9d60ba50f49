"""One batch: :class:`NegativeBatch`, and how its rows are written.

A batch is built at once, in place: the n observed rows are gathered from
the permutation's slice, the n*k generated rows are views the draws fill
(:mod:`pystratum.negatives._draws`), and ``log_q`` / ``weight`` come from
the proposal's tables (:mod:`pystratum.negatives._proposal`), row order as
:mod:`pystratum.negatives` states.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from ._libm import libm_exp


@dataclass(frozen=True, repr=False)
class NegativeBatch:
    """One batch: n observed pairs followed by their n*k generated pairs.

    positive: int64, 0-based position of the row's observed pair in the
              ``users``/``items`` given to the sampler; -1 on generated rows
              (R: NA).
    user, item: int64 ids. label: int8, 1 observed, 0 generated.
    log_q: float64, log of the generated row's sampling probability (0 on
           observed rows). weight: float64, ``1 / (k q)`` (1 on observed rows).
    """

    epoch: int
    index: int
    negatives: int
    positive: np.ndarray
    user: np.ndarray
    item: np.ndarray
    label: np.ndarray
    log_q: np.ndarray
    weight: np.ndarray

    @property
    def num_positives(self) -> int:
        return int(np.count_nonzero(self.label))

    def __len__(self) -> int:
        return int(self.user.shape[0])

    def as_dict(self) -> dict:
        return {name: getattr(self, name)
                for name in ("positive", "user", "item", "label", "log_q", "weight")}

    def __repr__(self) -> str:
        return (f"NegativeBatch(epoch={self.epoch}, index={self.index}, rows={len(self)}, "
                f"positives={self.num_positives}, negatives_per_positive={self.negatives})")


class _BatchRows:
    """Batch ``index`` of an epoch from the epoch's permutation (a base of
    :class:`NegativePairSampler`).

    Reads the sampler's ``negatives``, ``batch_size``, ``users``, ``items``,
    ``pair_with``, ``_kept``, ``_weights``, ``_log_weights``, ``_log_free``
    and ``_user_terms``, and draws through ``_draw_negatives``.
    """

    def _make_batch(self, epoch: int, index: int, permutation: np.ndarray) -> NegativeBatch:
        k = self.negatives
        chosen = permutation[index * self.batch_size:(index + 1) * self.batch_size]
        n = chosen.shape[0]
        m = n * k
        # Rows are written in place (no concatenation): observed rows first,
        # then the n*k generated rows as views the draws and redraws fill.
        user = np.empty(n + m, dtype=np.int64)
        item = np.empty(n + m, dtype=np.int64)
        np.take(self.users, chosen, out=user[:n])
        np.take(self.items, chosen, out=item[:n])
        neg_users, neg_items = user[n:], item[n:]
        if self.pair_with == "user":
            _fill_columns(neg_users, user[:n], k)
        self._draw_negatives(epoch, index, neg_users, neg_items)
        log_q = np.empty(n + m)
        weight = np.empty(n + m)
        log_q[:n] = 0.0
        weight[:n] = 1.0
        # Same arithmetic as R (log w_i - log free, weight exp(-log_q) / k, the C library's exp
        # and log: ._libm), so the values agree bit for bit; per-user terms are computed once
        # per user (at construction) and copied to the k rows of each positive.
        if self.pair_with == "user":
            terms = np.take(self._user_terms, user[:n])
            _fill_columns(log_q[n:], -terms.real, k)
            if self._weights is None:
                _fill_columns(weight[n:], terms.imag, k)
            else:
                log_q[n:] += self._log_weights[neg_items]
                weight[n:] = libm_exp(-log_q[n:]) / k
        elif self._weights is None:
            log_q[n:] = -self._log_free
            weight[n:] = math.exp(self._log_free) / k
        else:
            np.subtract(self._log_weights[neg_items], self._log_free, out=log_q[n:])
            weight[n:] = libm_exp(-log_q[n:]) / k
        positive = np.empty(n + m, dtype=np.int64)
        positive[:n] = chosen if self._kept is None else self._kept[chosen]
        positive[n:] = -1
        label = np.empty(n + m, dtype=np.int8)
        label[:n] = 1
        label[n:] = 0
        return NegativeBatch(epoch=epoch, index=index, negatives=k, positive=positive,
                             user=user, item=item, label=label, log_q=log_q, weight=weight)


def _fill_columns(out, values, k):
    """out[j*k + t] = values[j] for every t < k (column by column: faster than a broadcast
    whose inner loop is only k long)."""
    rows = out.reshape(values.shape[0], k)
    for t in range(k):
        rows[:, t] = values

