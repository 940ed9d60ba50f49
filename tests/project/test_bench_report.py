"""benchmarks/report.py's measurement code: workloads, guarantee columns, one worker run."""

from pathlib import Path

import numpy as np
import pytest
from _scripts import load_script

ROOT = Path(__file__).resolve().parents[2]
report = load_script("benchmarks/report.py", "bench_report")


@pytest.mark.parametrize("n", [20_000, 1_000_000])
@pytest.mark.parametrize("n_strata", [2, 10, 1000])
def test_stratum_sizes_are_exact_and_imbalanced(n, n_strata):
    sizes = report.stratum_sizes(n, n_strata)
    assert sizes.sum() == n and sizes.shape == (n_strata,) and sizes.min() >= 1
    assert sizes[0] == sizes.max()
    if n_strata == 2:
        assert sizes[1] == round(0.03 * n)


def test_guarantee_columns():
    labels = np.array([0, 0, 1, 1, 0, 0])
    record = report.guarantee(labels, [[0, 2], [1, 4], [3, 5]], 2)
    assert record["missing_share"] == pytest.approx(1 / 3)
    assert record["min_count"] == 0 and record["each_row_once"]
    assert not report.guarantee(labels, [[0, 2], [0, 3]], 2)["each_row_once"]


def test_worker_measures_pystratum_and_the_floor():
    batch_size = 2000 // report.stratum_sizes(2000, 10).min()
    ours = report.worker("pystratum-numpy", 2000, 10, 2, int(batch_size))
    assert ours["missing_share"] == 0 and ours["min_count"] >= 1 and ours["each_row_once"]
    assert len(ours["times"]) == 2 and ours["peak_mb"] >= 0
    floor = report.worker("floor", 2000, 10, 1, 50)  # small batches miss the rare strata
    assert floor["each_row_once"] and floor["missing_share"] > 0


def test_markdown_names_the_command_and_the_peers_not_run():
    record = {"times": [0.1, 0.2, 0.3], "batches": 3, "mean_batch": 2.0, "missing_share": 0.0,
              "min_count": 1, "each_row_once": True, "peak_mb": 1.5}
    summary = report._summary(dict(record), 0.1)
    meta = {"command": "python benchmarks/report.py", "date": "today", "machine": "m",
            "versions": {"python": "3"}, "seconds": 60}
    text = report.render_markdown(meta, [{"n": 6, "strata": 2, "batch_size": 2, "repeats": 3,
                                          "methods": {"floor": summary}}])
    assert "`python benchmarks/report.py`" in text
    assert "| floor: numpy default_rng().permutation(N), cut into batches | 0.2000 |" in text
    assert "LibAUC DualSampler" in text and "catalyst" in text


def test_the_report_carries_the_focused_figures_one_level_down():
    section = report.focused_section()
    assert section.startswith("\n## Focused benchmarks")
    headings = [line for line in section.splitlines() if line.startswith("### ")]
    for part in ("bench_negatives.py", "bench_lazy.py", "bench_core.py", "bench_policies.py"):
        assert any(part in heading for heading in headings), part
    assert not any(line.startswith("# ") for line in section.splitlines())
    assert "is [results.md](results.md)" not in section
