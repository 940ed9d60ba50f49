"""Generated negatives for (user, item) data: observed pairs plus k sampled unobserved pairs.

::

    from pystratum.negatives import NegativePairSampler
    sampler = NegativePairSampler(users, items, num_items=10_000, negatives=4,
                                  batch_size=256, seed=1)
    for batch in sampler:            # one epoch; the next iter() is the next epoch
                                     # (several replicas: call set_epoch(e) first)
        batch.user, batch.item, batch.label, batch.log_q, batch.weight

Only the observed pairs are stored. Each epoch serves every observed pair
exactly once (in the order of the epoch's permutation, from the engine's
streams: ``rng="numpy" | "R" | "torch"``), ``batch_size`` pairs per batch
(the last batch may be smaller), and gives every observed pair exactly
``negatives`` (k) generated pairs.

Row order of a batch with n observed pairs: rows ``0..n-1`` are the observed
pairs (in permuted order), then the ``n*k`` generated rows; the k negatives
of observed pair j are rows ``n + j*k .. n + j*k + k - 1``.

Layout (one job a module):

* ``_sampler``: :class:`NegativePairSampler`: arguments, epochs, replicas,
  resume; ``_PairSource``, its batch source for :mod:`pystratum.serving`.
* ``_batch``: :class:`NegativeBatch` and how a batch's rows are written.
* ``_draws``: how negatives are drawn and observed pairs rejected, each
  batch from its own stream (:func:`batch_seed` for ``rng="R"``); what
  makes a batch reproducible.
* ``_proposal``: the item weights, the distribution the negatives follow
  (``log_q``, ``weight``) and the up-front checks that rejection can finish.
* ``_ids``: user and item ids checked and converted to int64.
* ``_pairset``: the observed pairs' keys with exact membership (its
  compiled twin: ``pystratum.kernels._pairset``).
* ``pystratum.negatives.torch``: the DataLoader face (imports torch; this
  package does not).
"""

from ._batch import NegativeBatch
from ._draws import batch_seed
from ._sampler import NegativePairSampler

__all__ = ["NegativeBatch", "NegativePairSampler", "batch_seed"]
