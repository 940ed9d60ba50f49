"""The subcommands plan, check, crosscheck and plot; each ``cmd_*`` returns the exit code."""

from __future__ import annotations

import sys
import warnings
from pathlib import Path

import numpy as np

from ..engine._plan import BatchPlan, plan_batches
from ..engine._single_batch import check_several_batches
from ..policies import FixedSize, MinPerStratum, Policy, StratumTooSmallWarning, strata_of_sizes
from ..policies._fixed_size import fixed_size_num_batches, fixed_size_smallest_batch_size
from ..strata._label_matrix import LabelMatrix
from ..strata._labels import label_text
from ._data import read_strata
from ._errors import EXIT_MISSING, EXIT_NO, EXIT_OK, UserError
from ._labels import label_options_given, read_label_matrix
from ._output import _write, render_plan
from ._policy import policy_from_args
from ._progress import _PROGRESS_BYTES
from ._shards import shards_from_args


def _load(args, progress):
    size = Path(args.data).stat().st_size if Path(args.data).is_file() else 0
    progress.enabled = progress.enabled or (size > _PROGRESS_BYTES and not args.quiet)
    if label_options_given(args):
        progress(f"reading {args.data} ({size / 1e6:.1f} MB), labels")
        labels = read_label_matrix(args)
        progress(f"read {labels.matrix.shape[0]:,} rows x {labels.matrix.shape[1]:,} labels")
        return labels
    progress(f"reading {args.data} ({size / 1e6:.1f} MB), column(s) {', '.join(args.stratum)}")
    columns = read_strata(args.data, args.stratum, input_format=args.input_format,
                          encoding=args.encoding, delimiter=args.delimiter)
    progress(f"read {len(columns[0]):,} rows")
    # Several columns go to the core by name (a list of arrays would be ambiguous).
    return columns[0] if len(columns) == 1 else dict(zip(args.stratum, columns))


def _plan(args, columns, policy, progress, epoch=None) -> BatchPlan:
    progress(f"planning {policy!r}, rng={args.rng}, epoch {args.epoch if epoch is None else epoch}")
    shards, window = shards_from_args(args)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", StratumTooSmallWarning)
        plan = plan_batches(columns, policy, seed=args.seed, rng=args.rng,
                            epoch=args.epoch if epoch is None else epoch,
                            shuffle=not args.no_shuffle,
                            allow_single_batch=args.allow_single_batch, shards=shards,
                            window=window)
    for warning in caught:
        print(f"pystratum: warning: {warning.message}", file=sys.stderr)
    progress(f"planned {plan.num_batches:,} batches")
    return plan


def cmd_plan(args, progress) -> int:
    if args.batches and args.format == "table":
        raise UserError("--batches lists every row: use it with --format json or --format csv.")
    policy = policy_from_args(args)
    columns = _load(args, progress)
    plan = _plan(args, columns, policy, progress)
    _write(render_plan(plan, args.format, args.batches, args.max_rows), args.output)
    if args.output not in (None, "-"):
        print(f"wrote {args.output}", file=sys.stderr)
    return EXIT_OK


def _feasibility(policy: Policy, strata, allow_single_batch: bool) -> tuple:
    """``(ok, message)``: does the policy give its guarantee (and 2+ batches) on these strata?"""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", StratumTooSmallWarning)
        try:
            allocation = policy.allocate(strata, 0)
        except ValueError as error:
            return False, str(error)
    try:
        check_several_batches(strata, policy, allocation.num_batches, allow_single_batch)
    except ValueError as error:
        return False, str(error)
    if caught:
        return False, str(caught[0].message)
    if allocation.slots is not None:
        slots = allocation.slots
        return True, (f"{slots.num_batches} batches of {slots.per_batch} strata x "
                      f"{slots.width} rows; {int((slots.n_slots > 0).sum())} strata served, "
                      f"{int(slots.refill_takes.sum())} rows refilled per epoch")
    counts = allocation.counts
    totals = counts.sum(axis=1)
    return True, (f"{allocation.num_batches} batches of {totals.min()}-{totals.max()} rows; "
                  f"every stratum has {counts.min()} to {counts.max()} rows in each batch")


def _advice(policy: Policy) -> str:
    """What to change when ``policy`` is not feasible, in that policy's own parameters."""
    if isinstance(policy, (MinPerStratum, FixedSize)):
        what = "raise the batch size or lower the minimum as above"
    elif policy.allocates_slots:  # ClassesPerBatch: strata per batch x rows per stratum
        what = ("lower per_class, pass small=repeat (or small=drop) for strata with fewer than "
                "per_class rows, lower classes_per_batch")
    else:
        what = "change the policy's parameters as the message above says"
    return f"to change: {what}, merge rare strata, or use fewer stratum columns"


def _smallest_batch_size(policy, sizes) -> list[str]:
    """The smallest FixedSize batch size that works here, by the rule of sizes in use.

    Exact sizes (``--batch-size``'s and FixedSize's default) when the policy is
    not a balanced FixedSize: their feasibility is not monotone, so the line
    also says from which batch size on every one works.
    """
    fixed = isinstance(policy, FixedSize)
    min_per = policy.min_per_stratum if fixed else 1
    rule = policy.sizes if fixed else "exact"
    found = fixed_size_smallest_batch_size(sizes, min_per, rule)
    if found is None:
        return []
    size, smallest = found
    n = int(sizes.sum())
    head = (f"smallest batch size for FixedSize(batch_size, min_per_stratum={min_per}, "
            f"sizes={rule!r})")
    if rule == "balanced":
        count = fixed_size_num_batches(n, size)
        return [f"{head}: {size} ({count} batches of {n // count}-{-(-n // count)} rows); every "
                f"larger one works too"]
    full, last = (n - 1) // size, n - (n - 1) // size * size
    shape = f"{full} of {size} rows" + (f" and one of {last}" if last < size else "")
    every = -(-min_per * n // int(sizes.min()))
    if not smallest:
        return [f"{head}: every batch size >= {every} works (smaller ones not searched)"]
    return [f"{head}: {size} ({shape}); every batch size >= {every} works, some between may "
            f"not (the last batch's rounding)" if size < every else
            f"{head}: {size} ({shape}); every larger one works too"]


def cmd_check(args, progress) -> int:
    policy = policy_from_args(args)
    columns = _load(args, progress)
    from ..strata._encode import encode_strata

    encoded = encode_strata(columns)
    sizes = encoded.sizes
    n, n_min = int(sizes.sum()), int(sizes.min())
    smallest = encoded.labels[int(np.argmin(sizes))]
    largest = encoded.labels[int(np.argmax(sizes))]
    strata = strata_of_sizes(sizes, encoded.labels)
    ok, message = _feasibility(policy, strata, args.allow_single_batch)
    lines = [f"DATA: {n:,} rows, {len(sizes)} strata; smallest {label_text(smallest)!r} with "
             f"{n_min:,} rows, largest {label_text(largest)!r} with {int(sizes.max()):,} rows",
             f"{policy!r}: {'feasible' if ok else 'NOT feasible'}: {message}"]
    # What the two built-in policies can promise on these strata.
    if n_min >= 2:
        lines.append(f"largest m for MinPerStratum(m) with at least 2 batches: {n_min // 2} "
                     f"({n_min // (n_min // 2)} batches); m=1 gives {n_min} batches")
    else:
        lines.append(f"stratum {label_text(smallest)!r} has 1 row: every batch holding every "
                     f"stratum means a single batch; merge or drop that stratum")
    lines.extend(_smallest_batch_size(policy, sizes))
    if not ok:
        lines.append(_advice(policy))
    _write("\n".join(lines) + "\n", args.output)
    return EXIT_OK if ok else EXIT_NO


def cmd_crosscheck(args, progress) -> int:
    rng = args.rng
    if args.no_shuffle and rng == "numpy":
        rng = "R"  # no stream is used; R's stratified_batches knows only "R" and "torch"
    if rng == "numpy":
        raise UserError("--rng numpy exists in Python only; crosscheck compares the R "
                        "package's streams: use --rng R (default here) or --rng torch.")
    policy = policy_from_args(args)
    columns = _load(args, progress)
    try:
        import pystratum.r as pr

        available = pr.r_package_available()
    except (ImportError, RuntimeError) as error:
        raise UserError(f"crosscheck needs R, rpy2 and the R package: {error}",
                        EXIT_MISSING) from None
    if not available:
        from pystratum.r._session import INSTALL_R_PACKAGE, session

        paths = ", ".join(session(require=None).base(".libPaths")())
        raise UserError(f"crosscheck needs the R package pystratum, which is not in any "
                        f"library R searched ({paths}): {INSTALL_R_PACKAGE}.", EXIT_MISSING)
    # The R bindings read a label matrix as one (N, L) array; the CLI's
    # LabelMatrix (a named tuple of matrix and names) would read as columns.
    r_strata = columns.matrix if isinstance(columns, LabelMatrix) else columns
    total = 0
    seed = None
    for epoch in range(args.epoch, args.epoch + args.epochs):
        plan = _plan(args, columns, policy, progress, epoch=epoch)
        progress(f"epoch {epoch}: running the R package")
        seed = None if args.no_shuffle else plan.seed
        try:
            r_batches = pr.stratified_batches(r_strata, policy, seed=seed, rng=rng, epoch=epoch,
                                              shuffle=not args.no_shuffle,
                                              allow_single_batch=args.allow_single_batch)
        except pr.RError as error:
            if "pystratum_missing_package" in error.r_classes:
                # R's torch for --rng torch: a missing optional package, as a
                # missing R package pystratum is (its message names the install).
                raise UserError(f"crosscheck --rng {rng}: {error}", EXIT_MISSING) from None
            raise
        python_batches = plan.batches
        if len(r_batches) != len(python_batches):
            _write(f"DIFFERENT: epoch {epoch}: Python {len(python_batches)} batches, R "
                   f"{len(r_batches)}\n", args.output)
            return EXIT_NO
        for b, (p, r) in enumerate(zip(python_batches, r_batches)):
            if not np.array_equal(p, r):
                _write(f"DIFFERENT: epoch {epoch}, batch {b} (0-based): Python "
                       f"{p[:8].tolist()}..., R {np.asarray(r)[:8].tolist()}... (0-based rows)\n",
                       args.output)
                return EXIT_NO
        total += len(python_batches)
    _write(f"IDENTICAL: {total} batches in {args.epochs} epoch(s) (from epoch {args.epoch}), "
           f"{policy!r}, rng={rng!r}, seed={seed!r}: the Python core and the R package "
           f"give the same rows in the same batches in the same order\n", args.output)
    return EXIT_OK


def cmd_plot(args, progress) -> int:
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        raise UserError("plot needs matplotlib: pip install 'stratabatch[plot]'.",
                        EXIT_MISSING) from None
    policy = policy_from_args(args)
    columns = _load(args, progress)
    plan = _plan(args, columns, policy, progress)
    from ..plot import batch_counts, composition_figure

    panels = []
    if args.compare_plain:
        n = plan.order.shape[0]
        size = int(round(n / plan.num_batches))
        permutation = np.random.default_rng(plan.seed if isinstance(plan.seed, int) else None
                                            ).permutation(n)
        plain = [permutation[i:i + size] for i in range(0, n, size)]
        counts, labels = batch_counts(columns, plain)
        panels.append((f"plain shuffling, batch_size={size}", counts, labels))
    if plan.batch_strata is not None:
        # Slot plans: the strata with most slots and "other" (no batches x strata table).
        counts, labels = plan._lumped_slot_counts(args.max_strata)
        panels.append((f"pystratum {policy!r}", counts, labels))
    else:
        panels.append((f"pystratum {policy!r}", plan.counts, plan.strata))
    progress(f"drawing {args.output}")
    try:
        composition_figure(panels, args.output, max_strata=args.max_strata)
    except (OSError, ValueError) as error:
        raise UserError(f"--output {args.output!r} cannot be written: {error}") from None
    print(f"wrote {args.output}", file=sys.stderr)
    return EXIT_OK
