"""Random streams: epoch ``k``'s permutation (or group of draws) for a seed and an ``rng`` name.

* ``_base``: the ``EpochStream`` protocol, the registry of ``rng`` names, numpy's stream and
  the bookkeeping of sequential streams (R's and torch's: epoch ``k`` is the ``(k+1)``-th group);
* ``_r``: R's Mersenne-Twister and ``sample()`` rejection sampling, bit for bit (``RStream``);
* ``_torch``: ``torch.Generator`` (imported only when ``rng="torch"`` is used);
* ``_index``: ``rng="index"``, a keyed bijection per (seed, epoch, stream), random access;
* ``_spawned``: numpy generators for ``SeedSequence(seed, spawn_key=(epoch, batch))``, made cheaply.

A new stream is one ``EpochStream`` class plus one registry row in ``_base``.
"""
