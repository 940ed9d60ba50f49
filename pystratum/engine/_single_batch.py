"""The single-batch guard: a plan whose only batch holds every row is refused.

A one-batch epoch is not stratified batching: every stratum is in the batch
because every row is, and on a GPU it is usually an out-of-memory crash at
the first step. It comes from a stratum too small for two batches (one row
of a rare class with ``MinPerStratum(1)``), from a batch size at least the
data set's, and, most often unnoticed, from several 0/1 columns (multi-label
indicators) passed as strata: each combination of the columns becomes a
stratum and the rarest combinations hold one row. Every face (core, lazy
plan, torch samplers, CLI, R) refuses such a plan unless
``allow_single_batch=True``, with this message.

The count is the plan's batches per epoch, before any sharding across ranks:
a plan of two batches served on two ranks (one each) is fine, a plan of one
batch is refused whatever the number of ranks (padding would serve the whole
data set on every rank).
"""

from __future__ import annotations

import contextlib
import warnings
from numbers import Integral

import numpy as np

from ..policies import (ClassesPerBatch, FixedSize, MinPerStratum, SingleBatchError,
                        StratumTooSmallWarning)

__all__ = ["check_several_batches", "check_several_label_batches", "quiet_if_refused", "indicator_columns",
           "single_batch_error", "MULTI_LABEL_FIX"]

# What a multi-label user should do: the one place naming the multi-label
# policy (R's twin: multi_label_fix in r/R/single_batch.R).
MULTI_LABEL_FIX = ("use the multi-label policy, pystratum.policies.MultiLabel(batch_size=...), "
                   "with the 0/1 columns as its labels, or stratify by one label column (e.g. "
                   "the rarest label) or by fewer columns")

# How many of the smallest strata the message names.
_SHOWN = 3


@contextlib.contextmanager
def quiet_if_refused(allow_single_batch: bool):
    """Silence ``StratumTooSmallWarning`` when a single batch will be refused anyway.

    That warning is only given for a one-batch plan, which the error then
    explains; with ``allow_single_batch=True`` it is given as before.
    """
    if allow_single_batch:
        yield
        return
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", StratumTooSmallWarning)
        yield


def check_several_batches(strata, policy, num_batches: int, allow_single_batch: bool) -> None:
    """SingleBatchError (a ValueError) for a one-batch plan unless ``allow_single_batch``.

    ``strata``: encoded strata, member lists or ``strata_of_sizes`` (anything
    with ``sizes`` and ``labels``). The error blames ``strata`` when the strata are several 0/1
    columns (multi-label indicators), else ``policy``.
    """
    if allow_single_batch or int(num_batches) >= 2:
        return
    raise single_batch_error(strata, policy)


def indicator_columns(labels) -> int:
    """Number of columns when every stratum is a tuple of >= 2 values in {0, 1}, else 0."""
    if not labels or not isinstance(labels[0], tuple) or len(labels[0]) < 2:
        return 0
    for label in labels:
        for value in label:
            if isinstance(value, (bool, np.bool_)):
                continue
            if isinstance(value, (Integral, float, np.floating)) and value in (0, 1):
                continue
            return 0
    return len(labels[0])


def _rows_for_two_batches(policy) -> int:
    """Rows a stratum needs to be in two batches under ``policy``."""
    if isinstance(policy, MinPerStratum):
        return 2 * policy.m
    if isinstance(policy, FixedSize):
        return 2 * policy.min_per_stratum
    if isinstance(policy, ClassesPerBatch):
        return 2 * policy.per_class
    return 2


def _policy_fix(policy, n_rows: int, n_min: int) -> str:
    if isinstance(policy, MinPerStratum):
        if n_min >= 2:
            return (f"lower m (MinPerStratum({n_min // 2}) gives at least 2 batches), or use "
                    f"FixedSize(batch_size) for batches of a chosen size")
        return ("merge or drop the one-row strata (a stratum of one row fits one batch only), "
                "or use FixedSize(batch_size) once every stratum has 2 rows or more")
    if isinstance(policy, FixedSize):
        return f"use a smaller batch_size (below {n_rows // 2 + 1} for 2 batches)"
    return "use a policy giving more batches (a smaller batch_size, or FixedSize(batch_size))"


def single_batch_error(strata, policy) -> SingleBatchError:
    """The error for a plan of one batch holding every row (see the module docstring)."""
    sizes = np.asarray(strata.sizes)
    labels = strata.labels
    n_rows = int(sizes.sum())
    smallest = np.argsort(sizes, kind="stable")[:_SHOWN]
    shown = ", ".join(f"{labels[s]!r} with {int(sizes[s])} row{'' if sizes[s] == 1 else 's'}"
                      for s in smallest)
    more = "" if len(sizes) <= _SHOWN else f" of {len(sizes)}"
    allow = "or pass allow_single_batch=True if one batch per epoch is really meant"
    columns = indicator_columns(labels)
    if columns:
        need = _rows_for_two_batches(policy)
        tiny = int(np.count_nonzero(sizes < need))
        return SingleBatchError(
            f"strata has {columns} columns of 0/1 values, which look like multi-label "
            f"indicators: each combination of the columns became a stratum ({len(sizes)} "
            f"strata, {tiny} of them with fewer than {need} rows, too few for two batches of "
            f"{policy!r}), so the plan is a single batch holding all {n_rows} rows. The "
            f"smallest strata{more}: {shown}. Fix: {MULTI_LABEL_FIX}; {allow}."
        )
    return SingleBatchError(
        f"policy={policy!r} gives a single batch holding all {n_rows} rows, which is not "
        f"stratified batching (and a whole-dataset batch usually exhausts GPU memory). The "
        f"smallest strata{more}: {shown}. Fix: {_policy_fix(policy, n_rows, int(sizes.min()))}; "
        f"{allow}."
    )


def check_several_label_batches(rows, policy, num_batches: int,
                                allow_single_batch: bool) -> None:
    """The guard for a label-matrix plan (``MultiLabel``): SingleBatchError for one batch.

    ``rows``: anything with ``n_rows``, ``labels`` (the label names) and
    ``sizes`` (each label's positive rows), e.g.
    :class:`pystratum.serving.LabelRows`.
    """
    if allow_single_batch or int(num_batches) >= 2:
        return
    raise single_label_batch_error(rows, policy)


def single_label_batch_error(rows, policy) -> SingleBatchError:
    """The error for a label-matrix plan of one batch (R's twin: check_several_label_batches)."""
    sizes = np.asarray(rows.sizes)
    names = list(rows.labels)
    n_rows = int(rows.n_rows)
    rarest = np.argsort(sizes, kind="stable")[:_SHOWN]
    shown = ", ".join(f"'{names[j]}' in {int(sizes[j])} row{'' if sizes[j] == 1 else 's'}"
                      for j in rarest)
    more = "" if len(sizes) <= _SHOWN else f" of {len(sizes)}"
    if n_rows >= 2:
        fix = (f"pass batch_size below {n_rows} or num_batches from 2 to {n_rows} (each label's "
               f"positives are then spread over the batches)")
    else:
        fix = "pass a label matrix of 2 rows or more (one row fits one batch only)"
    return SingleBatchError(
        f"policy={policy!r} gives a single batch holding all {n_rows} rows of the label matrix "
        f"({len(sizes)} label{'' if len(sizes) == 1 else 's'}), which is not stratified "
        f"batching (and a whole-dataset batch usually exhausts GPU memory). The rarest "
        f"labels{more}: {shown}. Fix: {fix}; or pass allow_single_batch=True if one batch per "
        f"epoch is really meant."
    )
