"""The public functions of :mod:`pystratum.r`: the R package's entry points, called from Python."""

from __future__ import annotations

import numpy as np

from ._conditions import raise_r_conditions
from ._from_r import batches_from_r, field, task_frame_from_r, weights_from_r
from ._session import session as _session
from ..engine._plan import resolve_policy
from ..base._validation import check_bool
from ._rvalues import R_INT_MAX, from_r_index, to_r_index
from ._to_r import argument_to_r, check_python_types, policy_arguments, shards_to_r

__all__ = ["StreamDefaultWarning", "batch_count_table", "batch_sampler_stratified",
           "negative_pair_batches", "sampler_from_r_task", "strata_from_r_task",
           "stratified_batches"]


def _one_policy(policy, min_samples_per_stratum):
    """``policy`` or the older ``min_samples_per_stratum`` (not both), unvalidated: R checks it."""
    if policy is not None and min_samples_per_stratum is not None:
        resolve_policy(policy, min_samples_per_stratum)  # raises the core's "not both" error
    return min_samples_per_stratum if min_samples_per_stratum is not None else policy


def _named_bool(value, name):
    try:
        return check_bool(value, name)
    except TypeError as error:
        error.argument = name
        raise


def _arguments_to_r(active, given):
    check_python_types(given)
    return {name: argument_to_r(active, value, name) for name, value in given.items()}


def _stratified_batches_bridge(rng):
    # R's torch never loads into this process (see bridge_stratified_batches_in_subprocess
    # in r/R/python_bridge.R): rng="torch" runs in a fresh Rscript.
    if isinstance(rng, str) and rng == "torch":
        return "bridge_stratified_batches_in_subprocess"
    return "bridge_stratified_batches"


class StreamDefaultWarning(UserWarning):
    """A seed was given without ``rng``: R's default stream, not the Python core's, was used."""


def stratified_batches(strata, policy=None, *, seed=None, rng=None, epoch=0,
                       shuffle=True, min_samples_per_stratum=None, return_weights=False,
                       allow_single_batch=False, shards=None, window=1):
    """R's ``pystratum::stratified_batches``, with batches as 0-based int64 arrays.

    Same arguments and guarantees as :func:`pystratum.stratified_batches`
    (``policy``: a :mod:`pystratum.policies` object, rebuilt in R by name and
    parameters, or a number, R's shorthand for ``policy_min_per_stratum``),
    computed by the R package in embedded R. ``rng``: ``"R"`` (R's default,
    used when omitted), ``"torch"`` or ``"index"``; R has no ``"numpy"``.
    The batches equal the Python core's for the same ``rng``, seed and epoch:
    ``pr.stratified_batches(y, m, seed=s, rng="R")`` is
    ``pystratum.stratified_batches(y, m, seed=s, rng="R")``. The core's
    default stream is ``"numpy"``, so the same call without ``rng`` gives
    different batches in the two faces: a seed without ``rng`` therefore
    warns (:class:`StreamDefaultWarning`, once per call site); pass ``rng``
    to state the stream. R's own ``.Random.seed`` is left untouched.

    ``allow_single_batch``: as the core's; a plan of one batch is R's
    ``pystratum_value_error``, raised as ValueError (``.argument`` "policy",
    or "strata" for 0/1 indicator columns), unless True.

    ``shards``, ``window``: the shard-blocked order (docs/SHARDS.md), as the
    core's: ids per row (labels, passed to R as they are, not shifted) or
    :func:`pystratum.shard_sizes`; the batches equal the core's for
    ``rng="R"``.

    ``return_weights=True`` returns ``(batches, weights)`` instead: ``weights``
    is R's ``attr(batches, "weights")`` as a list of float64 arrays parallel
    to the batches (each row's importance weight, e.g. under
    ``policies.Downsample``), or None when the policy has no weights; it
    equals the core's ``plan_batches(...).weights`` cut at the batch bounds.

    ``rng="torch"`` runs the call in a fresh ``Rscript`` (a second R process)
    and only there loads R's torch: R torch bundles its own libtorch, which
    cannot share a process with PyTorch's. The batches are those R computes;
    the arguments and the result travel as files (a few hundred milliseconds
    per call for starting R and torch). R's torch is never loaded into this
    process, whether or not PyTorch is.

    ``strata`` takes the core's forms and no others (the core's splitter
    decides, with its messages): a scalar or a string is a TypeError, as in
    the core.

    Raises TypeError/ValueError for R's argument errors (R's message;
    ``.argument`` names the argument), for Python types the core refuses
    (e.g. ``epoch=1.0``) and for values R cannot hold (raised before R runs,
    ``.argument`` set the same way), :class:`RError` for other R errors, and
    ImportError/RuntimeError naming the install command when rpy2, R or the
    R package is missing.
    """
    policy = _one_policy(policy, min_samples_per_stratum)
    stream_omitted = rng is None
    rng = "R" if stream_omitted else rng
    active = _session()
    with active.calling():
        check_python_types({"min_samples_per_stratum": policy, "rng": rng, "epoch": epoch,
                            "shuffle": shuffle, "seed": seed,
                            "allow_single_batch": allow_single_batch, "window": window})
        return_weights = _named_bool(return_weights, "return_weights")
        given = {"strata": strata, "seed": seed, "rng": rng, "epoch": epoch, "shuffle": shuffle,
                 "allow_single_batch": allow_single_batch, "window": window}
        arguments = _arguments_to_r(active, given)
        arguments["shards"] = shards_to_r(active, shards)
        arguments.update(policy_arguments(active, policy))
        outcome = active.bridge(_stratified_batches_bridge(rng))(**arguments)
        raise_r_conditions(outcome, stacklevel=2)
        batches = batches_from_r(outcome, "pystratum::stratified_batches")
        if stream_omitted and seed is not None and shuffle is not False:
            _warn_stream_default(seed)
        if return_weights:
            return batches, weights_from_r(outcome, batches)
        return batches


def batch_count_table(strata, batches):
    """R's ``pystratum::batch_count_table``: rows of every stratum in every batch.

    ``batches``: a list of 1-D integer arrays of 0-based row positions (e.g.
    what :func:`stratified_batches` or the Python core returns, or plain
    shuffled batches to compare with). Returns a pandas DataFrame of int64
    counts, one row per batch numbered from 0 (index ``batch``, as in Python
    everywhere) and one column per stratum labelled as R labels it (several
    columns joined by ``/``); for a plan it equals ``plan.counts``.

    Raises TypeError naming ``batches`` when it is not a list of integer
    arrays, ValueError when a position is outside ``0..len(strata)-1``, and
    R's errors for the strata as :func:`stratified_batches` does.
    """
    pandas = _import_pandas("batch_count_table")
    flat, sizes = _flat_batches(batches)
    active = _session()
    with active.calling():
        arguments = _arguments_to_r(active, {"strata": strata})
        outcome = active.bridge("bridge_batch_count_table")(
            arguments["strata"], active.ri.IntSexpVector(to_r_index(flat).tolist()),
            active.ri.IntSexpVector(sizes.tolist()))
        raise_r_conditions(outcome, stacklevel=2)
        value = field(outcome, "value")
        labels = [str(label) for label in field(value, "labels")]
        n_batches = int(field(value, "n_batches")[0])
        counts = np.asarray(field(value, "counts"), dtype=np.int64).reshape(
            n_batches, len(labels))
    index = pandas.RangeIndex(n_batches, name="batch")
    return pandas.DataFrame(counts, index=index, columns=pandas.Index(labels, name="stratum"))


def _flat_batches(batches):
    """``batches`` as one int64 array of positions and the batch sizes; TypeError if not batches."""
    def refuse(detail):
        error = TypeError(
            f"batches must be a list of 1-D integer arrays of 0-based row positions (e.g. "
            f"the value of stratified_batches), got batches={batches!r:.80}: {detail}.")
        error.argument = "batches"
        return error

    if isinstance(batches, (str, bytes)) or not isinstance(batches, (list, tuple)):
        raise refuse(f"a {type(batches).__name__}, not a list")
    arrays = []
    for b, batch in enumerate(batches):
        array = np.asarray(batch)
        if array.ndim != 1 or not (array.size == 0 or np.issubdtype(array.dtype, np.integer)) \
                or array.dtype == np.bool_:
            raise refuse(f"batch {b} has dtype {array.dtype} and shape {array.shape}")
        arrays.append(array.astype(np.int64))
    flat = np.concatenate(arrays) if arrays else np.empty(0, np.int64)
    if flat.size and (flat.min() < -R_INT_MAX or flat.max() >= R_INT_MAX):
        # Beyond R's integers; smaller mistakes are worded by the bridge, which
        # knows the number of rows.
        error = ValueError(
            f"batches must hold 0-based row positions (0 to the number of rows minus one), "
            f"got values from {flat.min()} to {flat.max()}.")
        error.argument = "batches"
        raise error
    sizes = np.array([a.shape[0] for a in arrays], dtype=np.int64)
    return flat, sizes


_R_NA_INTEGER = -(2**31)


def negative_pair_batches(users, items, *, num_items, negatives, batch_size, seed, rng="R",
                          num_users=None, epoch=0, reject_observed=True, pair_with="user",
                          item_weights=None, duplicates="error", max_rounds=100):
    """R's ``pystratum::negative_pair_batches``: one epoch of observed pairs with negatives.

    Returns a list of :class:`pystratum.negatives.NegativeBatch`, equal to
    ``NegativePairSampler(users, items, ..., seed=seed, rng="R").epoch_batches(epoch)``
    (the same fields and dtypes: ``positive`` 0-based, -1 on generated rows).
    R implements only ``rng="R"``. Arguments are R's (ids 0-based in both
    languages); R validates them and its errors come back as
    TypeError/ValueError naming the argument.
    """
    from ..negatives import NegativeBatch

    active = _session()
    with active.calling():
        check_python_types({"rng": rng, "epoch": epoch, "seed": seed})
        given = {"users": users, "items": items, "num_items": num_items,
                 "negatives": negatives, "batch_size": batch_size, "seed": seed, "rng": rng,
                 "num_users": num_users, "epoch": epoch, "reject_observed": reject_observed,
                 "pair_with": pair_with, "item_weights": item_weights,
                 "duplicates": duplicates, "max_rounds": max_rounds}
        arguments = {name: argument_to_r(active, value, name) for name, value in given.items()}
        outcome = active.bridge("bridge_negative_pair_batches")(**arguments)
        raise_r_conditions(outcome, stacklevel=2)
        sizes = field(outcome, "sizes")
        sizes = np.asarray(sizes if sizes is not None else [], dtype=np.int64)
        columns = {}
        for name, dtype in (("positive", np.int64), ("user", np.int64), ("item", np.int64),
                            ("label", np.int8), ("log_q", np.float64), ("weight", np.float64)):
            values = field(outcome, name)
            columns[name] = np.asarray(values if values is not None else [], dtype=np.float64)
            if name == "positive":
                # R's NA_integer_ marks a generated row: -1 in Python, as the sampler's.
                missing = np.isnan(columns[name]) | (columns[name] == _R_NA_INTEGER)
                columns[name] = np.where(missing, -1, from_r_index(
                    np.where(missing, 1, columns[name])))
            columns[name] = columns[name].astype(dtype)
    cuts = np.cumsum(sizes)[:-1]
    split = {name: np.split(values, cuts) for name, values in columns.items()}
    return [NegativeBatch(epoch=int(epoch), index=b, negatives=int(negatives),
                          **{name: split[name][b] for name in columns})
            for b in range(sizes.shape[0])]


def _warn_stream_default(seed):
    import warnings

    warnings.warn(
        f"pystratum.r.stratified_batches(seed={seed!r}) without rng used R's stream "
        f"(rng='R', R's default); the Python core's default is rng='numpy', so "
        f"pystratum.stratified_batches(..., seed={seed!r}) gives different batches. These "
        f"equal pystratum.stratified_batches(..., seed={seed!r}, rng='R'). Pass rng='R' "
        f"(or 'torch', 'index') to state the stream; R cannot run numpy's.",
        StreamDefaultWarning, stacklevel=3)


def batch_sampler_stratified(policy=None, *, shuffle=True, seed=None, rng="torch",
                             min_samples_per_stratum=None, allow_single_batch=False,
                             shards=None, window=1):
    """R's ``pystratum::batch_sampler_stratified()``: a torch sampler *class*, as an R object.

    ``policy``: a :mod:`pystratum.policies` object (rebuilt in R by name and
    parameters) or a number (``policy_min_per_stratum``).
    ``allow_single_batch``: R's (a training loader whose plan is one batch is
    refused when mlr3torch builds it, unless True).
    ``shards``, ``window``: R's (docs/SHARDS.md): a task column's name (a
    str), or shard ids / :func:`pystratum.shard_sizes` in ``task$row_ids``
    order (ids passed unshifted, as in :func:`stratified_batches`).
    The result is an rpy2 object ready to be assigned in embedded R to an
    mlr3torch learner's ``batch_sampler`` parameter. It needs R's torch
    package; without it R's error (naming ``install.packages("torch")``) is
    raised here as :class:`RError` (or the mapped TypeError/ValueError for bad
    arguments).

    This loads R's torch into this process, whose libtorch cannot live next
    to PyTorch's: when PyTorch is already imported here and R's torch is
    installed, it raises RuntimeError before R runs (arguments unchecked),
    and after this call ``import torch`` in this process may fail. Use it in
    a process that only drives R (or in R itself).
    """
    import sys

    active = _session()
    if "torch" in sys.modules and active.has_package("torch"):
        raise RuntimeError(
            "batch_sampler_stratified() loads R's torch into this process, but PyTorch is "
            "already imported here, and the two libtorch builds cannot share one process "
            "(import torch then fails on an undefined libstdc++ symbol). Build the R sampler "
            "in a Python process that never imports torch, or in an R session (Rscript); "
            "pystratum.r.stratified_batches(..., rng='torch') needs no such care: it runs R "
            "torch in its own Rscript."
        )
    with active.calling():
        given = {"shuffle": shuffle, "seed": seed, "rng": rng,
                 "allow_single_batch": allow_single_batch, "window": window}
        arguments = _arguments_to_r(active, given)
        # A column name is R's to check against the task; ids the core's reader checks.
        arguments["shards"] = argument_to_r(active, shards, "shards") \
            if isinstance(shards, str) else shards_to_r(active, shards)
        arguments.update(policy_arguments(active, _one_policy(policy, min_samples_per_stratum)))
        outcome = active.bridge("bridge_batch_sampler_stratified")(**arguments)
        raise_r_conditions(outcome, stacklevel=2)
        return field(outcome, "value")


def strata_from_r_task(task):
    """The stratum columns of an mlr3 ``Task`` held in embedded R, as a pandas DataFrame.

    Row k of the result (0-based) is the task row with id ``task$row_ids[k + 1]``:
    positions follow ``task$row_ids`` order, which is the order mlr3torch's
    dataset indexes rows in, so batches computed on the result index that
    dataset directly. The columns are ``task$col_roles$stratum`` (several
    allowed, the target may be one); factors become pandas categoricals with
    the same levels, logicals bools, integers int64, doubles float64,
    characters str, complex complex128, Dates datetime64[D] (whole days) and
    POSIXct datetime64[ns] (UTC), each keeping every distinct R value apart.

    ``task`` is an rpy2 object for the R task (e.g. ``robjects.r("task")``).
    Only the fields an mlr3 Task has are used: ``col_roles$stratum``,
    ``row_ids`` and ``data(rows, cols)``. (The tests run it on a minimal R6
    stand-in with those fields, since mlr3 is not installable there.)

    Raises ValueError when the stratum role is empty or a label is missing
    (NA), TypeError when ``task`` is not an R object or a column has another
    R class, :class:`RError` when R fails (e.g. the object has no ``data()``
    method).
    """
    active = _session()
    pandas = _import_pandas("strata_from_r_task")
    if not isinstance(task, active.ri.Sexp):
        raise TypeError(
            f"task must be an rpy2 object holding an R mlr3 Task (e.g. "
            f"rpy2.robjects.r['task']), got task={task!r} of type {type(task).__name__}."
        )
    with active.calling():
        outcome = active.bridge("bridge_task_strata_captured")(task)
        raise_r_conditions(outcome, stacklevel=2)
        return task_frame_from_r(field(outcome, "value"), pandas)


def sampler_from_r_task(task, policy, **kwargs):
    """A :class:`pystratum.torch.StratifiedBatchSampler` over an R mlr3 task's strata.

    ``StratifiedBatchSampler(strata_from_r_task(task), policy, **kwargs)``
    (``policy``: a number or a :mod:`pystratum.policies` object): batches are 0-based positions in ``task$row_ids`` order (add
    one for R positions). Imports PyTorch only when called.
    """
    try:
        from ..torch import StratifiedBatchSampler
    except ImportError as error:
        raise ImportError(
            f"sampler_from_r_task needs pystratum.torch and PyTorch ({error}). Install it "
            f"with: pip install 'stratabatch[torch]'"
        ) from error
    return StratifiedBatchSampler(strata_from_r_task(task), policy, **kwargs)


def _import_pandas(what):
    try:
        import pandas
    except ImportError as error:
        raise ImportError(
            f"{what} returns a pandas DataFrame and needs pandas: pip install "
            f"'stratabatch[pandas]'"
        ) from error
    return pandas
