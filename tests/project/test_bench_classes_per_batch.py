"""benchmarks/bench_classes_per_batch.py's measurement code: the audit of a P x K epoch."""

import sys
from pathlib import Path

import numpy as np
from _scripts import load_script

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "benchmarks"))  # the script imports its sibling _timing
bench = load_script("benchmarks/bench_classes_per_batch.py")
sys.path.remove(str(ROOT / "benchmarks"))


def test_audit_counts_what_batch_hard_mining_needs():
    labels = np.array([0, 0, 1, 1, 2, 2, 3])
    # batch 0: classes 0, 1 (two rows each); batch 1: class 1 again, 2 with one distinct row
    # (row 4 twice); batch 2: classes 2 and 3, row 6 alone. Row 5 is never served.
    report = bench.audit(labels, [[0, 1, 2, 3], [2, 3, 4, 4], [4, 6]], 2)
    assert report["batches"] == 3
    assert report["rows_served"] == 6 / 7 and report["rows_left_out"] == 1
    assert report["classes"] == (2, 2) and report["few_classes"] == 0
    assert report["no_positive"] == 2      # batch 1 (class 2: row 4 only), batch 2
    assert report["repeated"] == 1
    assert report["overlap"] == 1          # class 1 in batches 0 and 1, class 2 in 1 and 2
    assert report["appearances"] == (1, 1.5, 2)  # classes 0-3 in 1, 2, 2, 1 batches
    assert bench.audit(labels, [[0, 1, 2, 3], [2, 3, 4, 4], [4, 6]], 3)["few_classes"] == 3


def test_audit_of_a_classes_per_batch_epoch_and_the_peers_cut():
    from pystratum import plan_batches
    from pystratum.policies import ClassesPerBatch

    labels = bench.long_tail_labels(5000, 300)
    report = bench.audit(labels, list(plan_batches(labels, ClassesPerBatch(16, 4), seed=0)), 16)
    assert report["rows_served"] == 1.0 and report["classes"] == (16, 16)
    assert report["no_positive"] == report["repeated"] == report["few_classes"] == 0
    assert [len(b) for b in bench._cut(range(10), 4)] == [4, 4, 2]
