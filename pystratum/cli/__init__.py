"""The ``pystratum`` command: plan, check, crosscheck and plot stratified batches of a file.

Installed as the console script ``pystratum`` (and ``python -m pystratum``).
Reads the stratum column(s) of a CSV file (standard library ``csv``) or a
Parquet / Arrow IPC file (pyarrow, the ``arrow`` extra), builds the plan with
the core and prints or writes it.

Exit codes: 0 success; 1 the answer is "no" (``check``: the policy is not
feasible; ``crosscheck``: Python and R differ); 2 a usage or input error
(bad option, unreadable file, missing column, bad value); 3 a needed
optional component is missing (pyarrow, matplotlib, R or rpy2).
User errors print one ``pystratum: error: ...`` line, never a traceback.
"""

from __future__ import annotations

import argparse
import codecs
import csv
import io
import json
import os
import sys
import time
import warnings
from pathlib import Path

import numpy as np

from .. import __version__
from ..engine._plan import BatchPlan, plan_batches
from ..streams._base import RNG_CHOICES
from ..strata._labels import label_text
from ..policies import (FixedSize, MinPerStratum, Policy, StratumTooSmallWarning,
                       policy_from_params, registered_policies, strata_of_sizes)

__all__ = ["main", "read_strata"]

EXIT_OK, EXIT_NO, EXIT_USAGE, EXIT_MISSING = 0, 1, 2, 3
INSTALL_ARROW = "pip install 'stratabatch[arrow]'"
# Stage messages on stderr once a run gets this large (or with --verbose).
_PROGRESS_BYTES = 20_000_000

EXAMPLES = {
    "plan": """examples:
  pystratum plan train.csv --stratum label --min 10 --seed 1
  pystratum plan train.csv --stratum label --stratum site --batch-size 64 --format csv -o counts.csv
  pystratum plan train.parquet --stratum label --min 5 --seed 1 --batches --format json -o batches.json
  pystratum plan train.csv --stratum label --policy fixed_size --param batch_size=64 --param min_per_stratum=2
  # --param values are JSON where they parse (numbers, true/false, lists, objects; quote
  # them for the shell), else plain text:
  pystratum plan train.csv --stratum label --policy targets --param 'shares={"pos": 0.5, "neg": 0.5}' --param batch_size=32 --seed 1
  # downsample's base is the policy that batches the kept rows: an int m, or {"name", "params"}:
  pystratum plan train.csv --stratum label --policy downsample --param 'keep={"neg": 0.2}' --param base=5 --seed 1
  pystratum plan train.csv --stratum label --policy downsample --param 'keep={"neg": 0.2}' --param 'base={"name": "fixed_size", "params": {"batch_size": 64}}' --seed 1
""",
    "check": """examples:
  pystratum check train.csv --stratum label --min 10
  pystratum check train.csv --stratum label --stratum site --batch-size 32
""",
    "crosscheck": """examples:
  pystratum crosscheck train.csv --stratum label --min 10 --seed 42
  pystratum crosscheck train.csv --stratum label --batch-size 64 --seed 7 --epochs 3
""",
    "plot": """examples:
  pystratum plot train.csv --stratum label --min 10 --seed 1 -o composition.png
  pystratum plot train.csv --stratum label --batch-size 64 --compare-plain -o composition.png
""",
}


class UserError(Exception):
    """A problem with the user's input: reported in one line, exit code ``code``."""

    def __init__(self, message: str, code: int = EXIT_USAGE):
        super().__init__(message)
        self.code = code


class _Progress:
    def __init__(self, enabled: bool):
        self.enabled = enabled
        self.started = time.perf_counter()

    def __call__(self, message: str) -> None:
        if self.enabled:
            elapsed = time.perf_counter() - self.started
            print(f"pystratum: [{elapsed:6.1f} s] {message}", file=sys.stderr, flush=True)


# --- reading DATA ------------------------------------------------------------------------


def _format_of(path: Path, given: str | None) -> str:
    if given:
        return given
    suffixes = [s.lower() for s in path.suffixes]
    if suffixes and suffixes[-1] in (".parquet", ".pq"):
        return "parquet"
    if suffixes and suffixes[-1] in (".arrow", ".feather", ".ipc"):
        return "arrow"
    return "csv"


def read_strata(path, columns, *, input_format=None, encoding="utf-8-sig", delimiter=None):
    """The stratum column(s) of a data file: a list of numpy arrays, one per column.

    CSV cells are read as text (so ``1`` and ``1.0`` are different strata, as
    written); an empty cell is refused, naming the column and line. A UTF-8
    byte-order mark (Excel's "CSV UTF-8") is not part of the first column's
    name. Parquet and Arrow keep their column types; nulls are refused the
    same way.
    """
    _check_encoding(encoding)
    repeated = sorted({name for name in columns if list(columns).count(name) > 1}, key=str)
    if repeated:
        raise UserError(f"--stratum {repeated[0]!r} is given twice; give each column once.")
    path = Path(path)
    fmt = _format_of(path, input_format)
    if not path.exists():
        raise UserError(f"DATA {str(path)!r} does not exist.")
    if path.is_dir():
        raise UserError(f"DATA {str(path)!r} is a directory; pass a CSV, Parquet or Arrow file.")
    if not os.access(path, os.R_OK):
        raise UserError(f"DATA {str(path)!r} is not readable (permission denied).")
    if fmt == "csv":
        return _read_csv(path, columns, encoding, delimiter)
    return _read_arrow(path, columns, fmt)


def _check_encoding(encoding) -> None:
    try:
        codecs.lookup(encoding)
    except (LookupError, TypeError, ValueError):
        raise UserError(f"--encoding {encoding!r} is not a text encoding Python knows; use e.g. "
                        f"utf-8 (the default, with or without a byte-order mark), latin-1 or "
                        f"cp1252.") from None


def _read_csv(path: Path, columns, encoding, delimiter):
    try:
        with open(path, newline="", encoding=encoding) as handle:
            sample = handle.read(64 * 1024)
            if not sample.strip():
                raise UserError(f"DATA {str(path)!r} is empty: expected a header line naming "
                                f"the columns, then one line per row.")
            if delimiter is None:
                first_line = sample.splitlines()[0]
                delimiter = max([",", ";", "\t", "|"], key=first_line.count)
            handle.seek(0)
            reader = csv.reader(handle, delimiter=delimiter)
            header = next(reader)
            if header and header[0].startswith("\ufeff"):
                # A byte-order mark read with an encoding that keeps it (e.g. utf-8).
                header[0] = header[0][1:]
            positions = [_column_position(header, name, path) for name in columns]
            values = [[] for _ in columns]
            for line, record in enumerate(reader, start=2):
                if not record:
                    continue  # a blank line (e.g. trailing newline twice) is no row
                for k, position in enumerate(positions):
                    if position >= len(record) or record[position] == "":
                        raise UserError(
                            f"column {columns[k]!r} has an empty value on line {line} of "
                            f"{str(path)!r} (data row {line - 2}, 0-based): every row needs a "
                            f"stratum. Fill it in or drop the row first.")
                    values[k].append(record[position])
    except UnicodeDecodeError as error:
        raise UserError(
            f"DATA {str(path)!r} is not valid "
            f"{'utf-8' if encoding == 'utf-8-sig' else encoding} (byte "
            f"{error.object[error.start]:#04x} "
            f"at offset {error.start} of a read block): pass --encoding with the file's "
            f"encoding, e.g. --encoding latin-1.") from None
    except UnicodeError as error:  # other codecs' decode errors
        raise UserError(f"DATA {str(path)!r} cannot be decoded as {encoding}: {error}. Pass "
                        f"--encoding with the file's encoding.") from None
    except csv.Error as error:
        raise UserError(f"DATA {str(path)!r} is not a readable CSV file: {error}.") from None
    except OSError as error:
        raise UserError(f"DATA {str(path)!r} cannot be read: {error.strerror or error}.") from None
    if not values[0]:
        raise UserError(f"DATA {str(path)!r} has a header but no data rows.")
    return [np.array(v, dtype=object) for v in values]


def _column_position(header, name, path):
    if name not in header:
        shown = ", ".join(repr(h) for h in header[:20]) + (", ..." if len(header) > 20 else "")
        raise UserError(f"--stratum {name!r}: no such column in {str(path)!r}; its columns are "
                        f"{shown}.")
    return header.index(name)


def _read_arrow(path: Path, columns, fmt):
    try:
        import pyarrow as pa
        import pyarrow.feather
        import pyarrow.parquet
    except ImportError:
        raise UserError(f"reading {fmt.capitalize()} files needs pyarrow: {INSTALL_ARROW} (or "
                        f"pyarrow itself); or convert DATA to CSV.", EXIT_MISSING) from None
    if path.stat().st_size == 0:
        raise UserError(f"DATA {str(path)!r} is empty (0 bytes).")
    try:
        if fmt == "parquet":
            names = pyarrow.parquet.read_schema(path).names
        else:
            names = pyarrow.feather.read_table(path, memory_map=True).schema.names
    except (pa.ArrowException, OSError) as error:
        raise UserError(f"DATA {str(path)!r} is not a readable {fmt} file: {error}") from None
    for name in columns:
        _column_position(names, name, path)
    try:
        if fmt == "parquet":
            table = pyarrow.parquet.read_table(path, columns=list(columns))
        else:
            table = pyarrow.feather.read_table(path, columns=list(columns))
    except (pa.ArrowException, OSError) as error:
        raise UserError(f"DATA {str(path)!r} is not a readable {fmt} file: {error}") from None
    if table.num_rows == 0:
        raise UserError(f"DATA {str(path)!r} has no rows.")
    result = []
    for name in columns:
        column = table.column(name)
        if column.null_count:
            row = int(np.flatnonzero(column.is_null().to_numpy(zero_copy_only=False))[0])
            raise UserError(f"column {name!r} has a missing value at row {row} (0-based) of "
                            f"{str(path)!r}: every row needs a stratum.")
        if pa.types.is_dictionary(column.type):
            column = column.cast(column.type.value_type)
        result.append(column.to_numpy(zero_copy_only=False))
    return result


# --- the policy ---------------------------------------------------------------------------


def _param_value(text: str):
    """``k=v`` values: JSON where it parses (numbers, true/false, lists), else the text."""
    try:
        return json.loads(text)
    except ValueError:
        return text


def policy_from_args(args) -> Policy:
    chosen = [flag for flag, value in (("--min", args.min), ("--batch-size", args.batch_size),
                                       ("--policy", args.policy)) if value is not None]
    if len(chosen) != 1:
        raise UserError(
            ("give one of --min M, --batch-size B or --policy NAME" if not chosen else
             f"give only one of --min, --batch-size and --policy, got {' and '.join(chosen)}")
            + f"; policies: {', '.join(sorted(registered_policies()))}.")
    if args.param and args.policy is None:
        raise UserError("--param k=v goes with --policy NAME (e.g. --policy fixed_size "
                        "--param batch_size=64).")
    if args.min is not None:
        return MinPerStratum(args.min)
    if args.batch_size is not None:
        return FixedSize(args.batch_size)
    params = {}
    for item in args.param:
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise UserError(f"--param must look like key=value, got --param {item!r}.")
        if key in params:
            raise UserError(f"--param {key} is given twice ({key}={params[key]!r} and "
                            f"{key}={_param_value(value)!r}); give each parameter once.")
        params[key] = _param_value(value)
    return policy_from_params(args.policy, params)


# --- commands ------------------------------------------------------------------------------


def _load(args, progress):
    size = Path(args.data).stat().st_size if Path(args.data).is_file() else 0
    progress.enabled = progress.enabled or (size > _PROGRESS_BYTES and not args.quiet)
    progress(f"reading {args.data} ({size / 1e6:.1f} MB), column(s) {', '.join(args.stratum)}")
    columns = read_strata(args.data, args.stratum, input_format=args.input_format,
                          encoding=args.encoding, delimiter=args.delimiter)
    progress(f"read {len(columns[0]):,} rows")
    # Several columns go to the core by name (a list of arrays would be ambiguous).
    return columns[0] if len(columns) == 1 else dict(zip(args.stratum, columns))


def _plan(args, columns, policy, progress, epoch=None) -> BatchPlan:
    progress(f"planning {policy!r}, rng={args.rng}, epoch {args.epoch if epoch is None else epoch}")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", StratumTooSmallWarning)
        plan = plan_batches(columns, policy, seed=args.seed, rng=args.rng,
                            epoch=args.epoch if epoch is None else epoch,
                            shuffle=not args.no_shuffle)
    for warning in caught:
        print(f"pystratum: warning: {warning.message}", file=sys.stderr)
    progress(f"planned {plan.num_batches:,} batches")
    return plan


def _label_json(label):
    if isinstance(label, tuple):
        return [_label_json(v) for v in label]
    if isinstance(label, np.generic):
        return label.item()
    return label if isinstance(label, (str, int, float, bool)) else str(label)


def _plan_header(plan: BatchPlan) -> dict:
    return {"n_rows": int(plan.order.shape[0]), "num_batches": plan.num_batches,
            "policy": plan.policy.to_dict(), "rng": plan.rng, "seed": _label_json(plan.seed),
            "epoch": plan.epoch, "shuffle": plan.shuffle, "batch_numbering": "0-based",
            "row_numbering": "0-based positions in DATA's data rows",
            "strata": [_label_json(s) for s in plan.strata]}


def render_plan(plan: BatchPlan, fmt: str, batches: bool, max_rows: int) -> str:
    if fmt == "json":
        record = _plan_header(plan)
        if batches:
            record["batches"] = [b.tolist() for b in plan.batches]
            if plan.weights is not None:
                # Importance weights of sampling policies, row for row.
                record["weights"] = [plan.batch_weights(b).tolist()
                                     for b in range(plan.num_batches)]
        elif plan.batch_strata is not None:
            # Slot plans (ClassesPerBatch): the strata of every batch, K rows each; a
            # dense count table would hold batches x strata entries.
            record["batch_strata"] = [[_label_json(plan.strata[s]) for s in row]
                                      for row in plan.batch_strata.tolist()]
            record["rows_per_stratum"] = plan.policy.per_class
        else:
            record["counts"] = plan.counts.tolist()
        return json.dumps(record) + "\n"
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    if fmt == "csv":
        if batches:
            sizes = np.diff(plan.bounds)
            batch_ids = np.repeat(np.arange(plan.num_batches), sizes)
            if plan.weights is None:
                writer.writerow(["row", "batch"])
                writer.writerows(zip(plan.order.tolist(), batch_ids.tolist()))
            else:
                writer.writerow(["row", "batch", "weight"])
                writer.writerows(zip(plan.order.tolist(), batch_ids.tolist(),
                                     plan.weights.tolist()))
        elif plan.batch_strata is not None:
            # Slot plans: one line per (batch, stratum) of the batch, in slot order.
            writer.writerow(["batch", "stratum", "rows"])
            for b, row in enumerate(plan.batch_strata.tolist()):
                writer.writerows([b, label_text(plan.strata[s]), plan.policy.per_class]
                                 for s in row)
        else:
            writer.writerow(["batch"] + [label_text(s) for s in plan.strata] + ["total"])
            for b, counts in enumerate(plan.counts.tolist()):
                writer.writerow([b] + counts + [sum(counts)])
        return out.getvalue()
    sizes = np.diff(plan.bounds)
    if plan.batch_strata is not None:
        return _slot_table(plan, max_rows)
    lines = [plan.counts_table(max_rows=max_rows if max_rows > 0 else plan.num_batches + 1),
             "",
             f"{plan.num_batches} batches (numbered from 0) of {sizes.min()}-{sizes.max()} rows; "
             f"{len(plan.strata)} strata; smallest count of a stratum in a batch: "
             f"{int(plan.counts.min())}",
             f"policy {plan.policy!r}, rng={plan.rng!r}, seed={plan.seed!r}, epoch={plan.epoch}"
             + ("" if plan.shuffle else ", no shuffle")]
    return "\n".join(lines) + "\n"


def _slot_table(plan: BatchPlan, max_rows: int) -> str:
    """A slot plan (ClassesPerBatch) as text: each batch's strata, K rows each."""
    shown = list(range(plan.num_batches))
    if 0 < max_rows < len(shown):
        shown = shown[:max_rows // 2] + [None] + shown[-(max_rows - max_rows // 2):]
    lines = ["batch  strata (%d rows each)" % plan.policy.per_class]
    for b in shown:
        lines.append("  ..." if b is None else f"{b:5d}  " + ", ".join(
            label_text(plan.strata[s]) for s in plan.batch_strata[b].tolist()))
    served = int(np.count_nonzero(np.bincount(plan.batch_strata.ravel(),
                                              minlength=len(plan.strata))))
    lines += ["", f"{plan.num_batches} batches (numbered from 0) of "
                  f"{plan.batch_strata.shape[1]} strata x {plan.policy.per_class} rows; "
                  f"{served} of {len(plan.strata)} strata served",
              f"policy {plan.policy!r}, rng={plan.rng!r}, seed={plan.seed!r}, epoch={plan.epoch}"
              + ("" if plan.shuffle else ", no shuffle")]
    return "\n".join(lines) + "\n"


def _write(text: str, output) -> None:
    if output is None or output == "-":
        sys.stdout.write(text)
        return
    try:
        Path(output).write_text(text, encoding="utf-8")
    except OSError as error:
        raise UserError(f"--output {output!r} cannot be written: {error.strerror or error}.") \
            from None


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


def _feasibility(policy: Policy, strata) -> tuple:
    """``(ok, message)``: does the policy give its guarantee on these strata?"""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", StratumTooSmallWarning)
        try:
            allocation = policy.allocate(strata, 0)
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
    ok, message = _feasibility(policy, strata)
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
    min_per = getattr(policy, "min_per_stratum", 1) if isinstance(policy, FixedSize) else 1
    most_batches = n_min // min_per
    if most_batches >= 1:
        smallest_size = 2 * n // (2 * most_batches + 1) + 1
        lines.append(f"smallest batch size for FixedSize(batch_size, min_per_stratum={min_per}): "
                     f"{smallest_size} (at most {most_batches} batches)")
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
    total = 0
    seed = None
    for epoch in range(args.epoch, args.epoch + args.epochs):
        plan = _plan(args, columns, policy, progress, epoch=epoch)
        progress(f"epoch {epoch}: running the R package")
        seed = None if args.no_shuffle else plan.seed
        try:
            r_batches = pr.stratified_batches(columns, policy, seed=seed, rng=rng, epoch=epoch,
                                              shuffle=not args.no_shuffle)
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


# --- the parser ------------------------------------------------------------------------------


def _int(text: str) -> int:
    try:
        return int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number, got {text!r}") from None


def _positive_int(text: str) -> int:
    value = _int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected a positive whole number, got {text!r}")
    return value


def _nonnegative_int(text: str) -> int:
    value = _int(text)
    if value < 0:
        raise argparse.ArgumentTypeError(f"expected a whole number >= 0, got {text!r}")
    return value


def build_parser() -> argparse.ArgumentParser:
    data = argparse.ArgumentParser(add_help=False)
    group = data.add_argument_group("data")
    group.add_argument("data", metavar="DATA",
                       help="CSV file (header line first), or Parquet (.parquet) / Arrow IPC "
                            "(.arrow, .feather) with pyarrow installed")
    group.add_argument("--stratum", action="append", required=True, metavar="COL",
                       help="stratum column; repeat for several (every combination of values "
                            "is one stratum)")
    group.add_argument("--input-format", choices=["csv", "parquet", "arrow"],
                       help="override the format guessed from DATA's extension")
    group.add_argument("--encoding", default="utf-8-sig",
                       help="CSV text encoding (default utf-8, with or without a byte-order "
                            "mark as Excel writes)")
    group.add_argument("--delimiter", help="CSV delimiter (default: guessed from the header "
                                           "among , ; tab |)")
    policy = data.add_argument_group("policy (give exactly one)")
    policy.add_argument("--min", type=_positive_int, metavar="M",
                        help="MinPerStratum(M): at least M rows of every stratum in every batch")
    policy.add_argument("--batch-size", type=_positive_int, metavar="B",
                        help="FixedSize(B): batches of about B rows, every stratum spread evenly")
    policy.add_argument("--policy", metavar="NAME",
                        help=f"any registered policy by name "
                             f"({', '.join(sorted(registered_policies()))}), with --param")
    policy.add_argument("--param", action="append", default=[], metavar="K=V",
                        help="a parameter of --policy (value parsed as JSON where it can be, "
                             "e.g. batch_size=64)")
    stream = data.add_argument_group("random stream")
    stream.add_argument("--seed", type=_int, metavar="S",
                        help="seed (default: fresh entropy; the plan reports the seed used)")
    stream.add_argument("--rng", choices=list(RNG_CHOICES),
                        help="random stream (default numpy; crosscheck: R); R and torch give "
                             "the R package's batches")
    stream.add_argument("--epoch", type=_nonnegative_int, default=0, metavar="K",
                        help="which epoch's shuffle, 0 first (default 0)")
    stream.add_argument("--no-shuffle", action="store_true",
                        help="keep row order (no seed then)")
    output = data.add_argument_group("output")
    output.add_argument("-o", "--output", metavar="FILE", help="write here instead of stdout")
    output.add_argument("-q", "--quiet", action="store_true",
                        help="no progress messages on stderr")
    output.add_argument("-v", "--verbose", action="store_true",
                        help="progress messages on stderr even for small inputs")

    parser = argparse.ArgumentParser(
        prog="pystratum",
        description="Mini-batches that contain every stratum: plan them, check a policy is "
                    "feasible, compare Python with the R package, draw the composition.",
        epilog="Batches and rows are numbered from 0. Exit codes: 0 ok; 1 the answer is no "
               "(check: not feasible; crosscheck: different); 2 usage or input error; "
               "3 a needed optional package is missing.\n\n"
               + EXAMPLES["plan"] + "\n" + EXAMPLES["check"] + "\n" + EXAMPLES["crosscheck"]
               + "\n" + EXAMPLES["plot"],
        formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--version", action="version", version=f"pystratum {__version__}")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)

    def add(name, help_text, function):
        sub = commands.add_parser(name, parents=[data], help=help_text, description=help_text,
                                  epilog=EXAMPLES[name],
                                  formatter_class=argparse.RawDescriptionHelpFormatter)
        sub.set_defaults(function=function)
        return sub

    plan = add("plan", "per-batch x per-stratum counts (or the batches themselves)", cmd_plan)
    plan.add_argument("--format", choices=["table", "json", "csv"], default="table",
                      help="output format (default table)")
    plan.add_argument("--batches", action="store_true",
                      help="output every row's batch (csv: row,batch[,weight]; json: list of "
                           "batches [and weights]) instead of counts; weights appear for "
                           "policies with importance weights")
    plan.add_argument("--max-rows", type=_nonnegative_int, default=20, metavar="N",
                      help="table format: show at most N batches, 0 for all (default 20)")
    add("check", "is the policy feasible on DATA; the largest m, the smallest batch size",
        cmd_check)
    cross = add("crosscheck", "run the Python core and the R package on DATA; exit 0 if "
                              "identical", cmd_crosscheck)
    cross.add_argument("--epochs", type=_positive_int, default=1, metavar="N",
                       help="compare N consecutive epochs from --epoch (default 1)")
    plot = add("plot", "stacked bars of per-batch composition, written to a PNG", cmd_plot)
    plot.add_argument("--max-strata", type=_positive_int, default=8, metavar="K",
                      help="draw the K-1 largest strata and sum the rest as 'other' (default 8)")
    plot.add_argument("--compare-plain", action="store_true",
                      help="add a panel of plain shuffled batches of the same mean size")
    return parser


def main(argv=None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.rng is None:
        # crosscheck compares with R, whose streams are "R" and "torch".
        args.rng = "R" if args.command == "crosscheck" else "numpy"
    if args.command == "plot" and not args.output:
        parser.error("plot needs --output FILE.png")
    if args.no_shuffle and args.seed is not None:
        parser.error("--seed has no effect with --no-shuffle (batches follow row order): "
                     "drop one of them")
    progress = _Progress(args.verbose and not args.quiet)
    try:
        return args.function(args, progress)
    except UserError as error:
        print(f"pystratum: error: {error}", file=sys.stderr)
        return error.code
    except (ValueError, TypeError) as error:
        # The core's argument and data checks: their messages name the value and the fix.
        print(f"pystratum: error: {error}", file=sys.stderr)
        return EXIT_USAGE
    except KeyboardInterrupt:
        print("pystratum: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        # `pystratum plan ... | head` closes the pipe early: not an error.
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return EXIT_OK


if __name__ == "__main__":
    sys.exit(main())
