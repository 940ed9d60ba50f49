"""Writing a plan: the counts table, CSV or JSON, to stdout or ``--output``."""

from __future__ import annotations

import csv
import io
import json
import sys
from pathlib import Path

import numpy as np

from ..engine._plan import BatchPlan
from ..strata._labels import label_text
from ._errors import UserError


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
