"""The engine: strata and a policy in, an epoch's batches out (numpy only).

* ``_assemble``: permutation (or per-stratum draws) + a policy's rank cuts -> batches;
* ``_assemble_slots``: a slot policy's draws (their order) and slots -> batches;
* ``_arguments``: checks the materialised and the lazy plan share;
* ``_batch_plan``: ``BatchPlan``, the plan object (counts, weights, table, figure);
* ``_plan``: ``plan_batches`` / ``stratified_batches``, the public core;
* ``_lazy``: ``LazyPlan`` (``rng="index"``): batch ``b`` of epoch ``k`` on demand.
"""
