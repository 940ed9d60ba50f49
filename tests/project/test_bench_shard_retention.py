"""benchmarks/bench_shard_retention.py: a tiny run writes its section, between its own markers,
with the figures shard_retention_profile gives (itself held equal to a real BatchServer in
tests/shards/test_plan_aware_retention.py)."""

import subprocess
import sys
from pathlib import Path
from _scripts import load_script

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "benchmarks" / "bench_shard_retention.py"
bench = load_script("benchmarks/bench_shard_retention.py")


def test_a_tiny_run_writes_every_policy_layout_and_window(tmp_path):
    out = tmp_path / "focused.md"
    other = "<!-- bench_shards_parquet -->\n\nkept\n\n<!-- /bench_shards_parquet -->\n"
    out.write_text("# Focused\n\n" + other)
    for _ in range(2):  # the second run replaces the first section
        done = subprocess.run([sys.executable, str(SCRIPT), "--rows", "20000", "--out", str(out)],
                              cwd=ROOT, capture_output=True, text=True, timeout=900)
        assert done.returncode == 0, done.stderr[-3000:]
    text = out.read_text()
    assert text.startswith("# Focused\n\n" + other) and text.count(bench.START) == 1
    lines = [line for line in text.splitlines() if line.startswith("| ") and "`" in line]
    for layout in ("spread", "own", "tail"):
        for policy, _ in bench.policies_for(layout, 20000):
            for order in ("W=1 (4)", "W=4 (10)", "W=16 (34)", "row-random (64)"):
                row = [line for line in lines
                       if line.startswith(f"| {layout} | `{policy}` | {order} |")]
                assert len(row) == 1, (layout, policy, order)
                # with an unbounded budget no shard is read twice (Theorem 3)
                assert row[0].split(" | ")[6].startswith("1.00x (1)")
