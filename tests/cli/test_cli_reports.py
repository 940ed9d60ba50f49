"""The CLI's tables, summaries and figures come from the plan's report (issue 32, items 4-5):
each states its policy's promise, and drawing many batches shows its progress."""

from __future__ import annotations

import csv

import numpy as np
import pytest

from pystratum import plan_batches
from pystratum.policies import ClassesPerBatch, FixedSize
from tests.cli.test_cli import run


@pytest.fixture(scope="module")
def many_classes(tmp_path_factory):
    """300 classes of 8 rows: a P x K plan with more classes than a table has room for."""
    path = tmp_path_factory.mktemp("reports") / "classes.csv"
    labels = np.repeat([f"c{k}" for k in range(300)], 8)
    with open(path, "w", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(["label"])
        writer.writerows([label] for label in labels)
    return path, labels


def test_plan_table_of_a_pk_plan_lists_p_classes_and_states_the_promise(many_classes):
    path, labels = many_classes
    done = run("plan", path, "--stratum", "label", "--policy", "classes_per_batch", "--param",
               "classes_per_batch=4", "--param", "per_class=2", "--seed", 3, "--max-rows", 4,
               check_code=0)
    plan = plan_batches(labels, ClassesPerBatch(4, 2), seed=3)
    lines = done.stdout.splitlines()
    assert lines[0] == "batch  classes (2 rows each)"
    assert lines[1].split(None, 1)[1] == ", ".join(plan.strata[s] for s in plan.batch_strata[0])
    assert "miss" not in done.stdout
    assert (f"every batch holds 4 distinct classes x 2 rows: all {plan.num_batches} batches do; "
            f"300 of 300 classes served, each in 4-4 batches") in lines


def test_plot_of_thousands_of_batches_is_aggregated_and_shows_progress(tmp_path):
    path = tmp_path / "big.csv"
    labels = np.random.default_rng(1).choice(["a", "b", "c"], 20_000, p=[0.7, 0.2, 0.1])
    with open(path, "w", newline="") as handle:
        handle.write("label\n" + "\n".join(labels) + "\n")
    png = tmp_path / "big.png"
    done = run("plot", path, "--stratum", "label", "--batch-size", 10, "--seed", 1,
               "--verbose", "--output", png, check_code=0)
    batches = plan_batches(labels, FixedSize(10), seed=1).num_batches
    assert f"drawing panel 1 of 1 ({batches:,} batches)" in done.stderr
    assert f"writing {png}" in done.stderr
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_csv_of_a_label_plan_totals_the_batch_rows_not_the_positives(tmp_path):
    import pandas as pd

    from pystratum.policies import MultiLabel

    path = tmp_path / "labels.csv"
    rng = np.random.default_rng(4)
    frame = pd.DataFrame((rng.random((60, 3)) < [0.6, 0.4, 0.2]).astype(int),
                         columns=["a", "b", "c"])
    frame.to_csv(path, index=False)
    done = run("plan", path, "--label", "a", "--label", "b", "--label", "c", "--policy",
               "multi_label", "--batch-size", 10, "--seed", 2, "--format", "csv", check_code=0)
    plan = plan_batches(frame, MultiLabel(batch_size=10), seed=2)
    lines = [line.split(",") for line in done.stdout.splitlines()]
    assert lines[0] == ["batch", "a", "b", "c", "total"]
    assert [[int(v) for v in line] for line in lines[1:]] == [
        [b] + plan.label_counts[b].tolist() + [len(plan[b])] for b in range(plan.num_batches)]


def test_compare_plain_draws_plain_batches_in_the_plans_own_view(tmp_path, many_classes):
    import pandas as pd

    path = tmp_path / "labels.csv"
    rng = np.random.default_rng(4)
    pd.DataFrame((rng.random((200, 3)) < [0.6, 0.3, 0.1]).astype(int),
                 columns=["a", "b", "c"]).to_csv(path, index=False)
    png = tmp_path / "labels.png"
    run("plot", path, "--label", "a", "--label", "b", "--label", "c", "--policy",
        "multi_label", "--batch-size", 20, "--seed", 1, "--compare-plain", "--output", png,
        check_code=0)
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    classes, _ = many_classes
    png = tmp_path / "classes.png"
    run("plot", classes, "--stratum", "label", "--policy", "classes_per_batch", "--param",
        "classes_per_batch=4", "--param", "per_class=2", "--seed", 1, "--compare-plain",
        "--output", png, check_code=0)
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
