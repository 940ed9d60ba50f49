"""Writing a plan: the counts table, CSV or JSON, to stdout or ``--output``."""

from __future__ import annotations

import csv
import io
import json
import sys
from pathlib import Path

import numpy as np

from ..engine._plan import BatchPlan
from ..engine._report import json_label
from ._errors import UserError


def _plan_header(plan: BatchPlan) -> dict:
    return {"n_rows": int(plan.order.shape[0]), "num_batches": plan.num_batches,
            "policy": plan.policy.to_dict(), "rng": plan.rng, "seed": json_label(plan.seed),
            "epoch": plan.epoch, "shuffle": plan.shuffle, "batch_numbering": "0-based",
            "row_numbering": "0-based positions in DATA's data rows",
            "strata": [json_label(s) for s in plan.strata]}


def render_plan(plan: BatchPlan, fmt: str, batches: bool, max_rows: int) -> str:
    if fmt == "json":
        record = _plan_header(plan)
        if batches:
            record["batches"] = [b.tolist() for b in plan.batches]
            if plan.weights is not None:
                # Importance weights of sampling policies, row for row.
                record["weights"] = [plan.batch_weights(b).tolist()
                                     for b in range(plan.num_batches)]
        else:
            # The plan's report (one per policy family): counts, or the classes of
            # every batch for ClassesPerBatch (never a dense batches x classes table).
            record.update(plan.report().json_fields())
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
        else:
            header, rows = plan.report().records()
            writer.writerow(header)
            writer.writerows(rows)
        return out.getvalue()
    # The table and its summary lines come from the plan's report (one per policy family).
    report = plan.report()
    sizes = np.diff(plan.bounds)
    lines = [report.table(max_rows=max_rows if max_rows > 0 else None),
             "",
             f"{plan.num_batches} batches (numbered from 0) of {sizes.min()}-{sizes.max()} rows; "
             + report.overview(),
             report.headline(),
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
