"""benchmarks/bench_shards_parquet.py: its LRU replay, its results section, a tiny --quick run."""

import importlib.util
import subprocess
import sys
from collections import OrderedDict
from pathlib import Path

import numpy as np

import pystratum
from pystratum.policies import MinPerStratum

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "benchmarks" / "bench_shards_parquet.py"
spec = importlib.util.spec_from_file_location("bench_shards_parquet", SCRIPT)
bench = importlib.util.module_from_spec(spec)
spec.loader.exec_module(bench)


def direct_lru_loads(plan, shard_of_row, capacity):
    """Shard loads of an LRU cache of ``capacity`` shards, batch by batch (the slow way)."""
    cache, loads, served = OrderedDict(), 0, set()
    for b in range(plan.num_batches):
        rows = [r for r in plan.order[plan.bounds[b]:plan.bounds[b + 1]].tolist()
                if r not in served]
        served.update(rows)
        for shard in np.unique(shard_of_row[rows]).tolist():
            if shard in cache:
                cache.move_to_end(shard)
                continue
            loads += 1
            cache[shard] = True
            if len(cache) > capacity:
                cache.popitem(last=False)
    return loads


def test_lru_profile_counts_what_an_lru_cache_loads_at_every_size():
    labels = bench.make_labels("spread", 6000)
    shard_of_row = (np.arange(6000) // 100).astype(np.int32)
    plans = [pystratum.plan_batches(labels, MinPerStratum(8), seed=3),
             pystratum.plan_batches(labels, MinPerStratum(8), seed=3,
                                    shards=pystratum.shard_sizes(np.full(60, 100)), window=2)]
    for plan in plans:
        profile = bench.lru_profile(plan, shard_of_row, 60)
        for capacity in (1, 2, 4, 6, 10, 30, 59, 60, 100):
            assert bench.loads(profile, capacity) == direct_lru_loads(plan, shard_of_row, capacity)
        # the cache for one pass is the smallest that loads each shard once
        need = profile["one_pass_cache"]
        assert bench.loads(profile, need) == 60
        assert need == 1 or bench.loads(profile, need - 1) > 60


def test_a_row_served_again_reads_no_shard():
    class Plan:  # rows 0..3 in shard 0, 4..7 in shard 1; rows 0 and 1 served again
        order = np.array([0, 4, 1, 5, 0, 1, 2, 3])
        bounds = np.array([0, 2, 4, 6, 8])
        num_batches = 4

    profile = bench.lru_profile(Plan, np.array([0, 0, 0, 0, 1, 1, 1, 1], dtype=np.int32), 2)
    # with a cache of one shard: 0, 1, 0, 1 for the first two batches, nothing for the third
    assert bench.loads(profile, 1) == 5 and bench.loads(profile, 2) == 2


def test_write_section_replaces_its_own_part_only(tmp_path):
    path = tmp_path / "results.md"
    path.write_text("# Results\n\n## Other\n\ntext\n")
    section = f"{bench.START}\n\n## Shards\n\nfirst\n\n{bench.END}\n"
    bench.write_section(path, section)
    bench.write_section(path, section.replace("first", "second"))
    text = path.read_text()
    assert text.startswith("# Results\n\n## Other\n\ntext\n")
    assert text.count(bench.START) == 1 and "second" in text and "first" not in text
    bench.write_section(path, section, heading_shift=1)
    assert "### Shards" in path.read_text()


def test_write_part_replaces_the_end_to_end_part_only(tmp_path):
    path = tmp_path / "results.md"
    section = (f"{bench.START}\n\n## Shards\n\nloads table\n\n{bench.E2E_HEADING}\n\nold e2e"
               f"\n\n### Peers\n\npeer table\n\n{bench.END}\n")
    path.write_text("# Results\n\n" + section + "\nafter\n")
    bench.write_part(path, f"{bench.E2E_HEADING}\n\nnew e2e\n")
    text = path.read_text()
    assert "old e2e" not in text and "new e2e" in text
    assert text.index("loads table") < text.index("new e2e") < text.index("### Peers")
    assert "peer table" in text and text.endswith(f"{bench.END}\n\nafter\n")
    # shifted headings (results.md) and a section whose end-to-end part is last
    path.write_text(f"{bench.START}\n\n### Shards\n\n#{bench.E2E_HEADING}\n\nold\n\n"
                    f"{bench.END}\n")
    bench.write_part(path, f"{bench.E2E_HEADING}\n\nnew\n", heading_shift=1)
    text = path.read_text()
    assert "old" not in text and f"#{bench.E2E_HEADING}\n\nnew\n\n{bench.END}" in text


def test_quick_run_on_a_tiny_size_writes_the_whole_section(tmp_path):
    out = tmp_path / "focused.md"
    out.write_text("# Focused\n")
    subprocess.run([sys.executable, str(SCRIPT), "--quick", "--rows", "20000", "--peer-rows",
                    "5000", "--workers", "1", "--random-batches", "2", "--cache-dir",
                    str(tmp_path / "cache"), "--out", str(out)],
                   check=True, cwd=ROOT, capture_output=True, timeout=900)
    text = out.read_text()
    assert text.startswith("# Focused\n") and bench.START in text and bench.END in text
    for layout, policy in [("spread", "MinPerStratum(8)"), ("own", "Targets"),
                           ("tail", "ClassesPerBatch(16, 4)")]:
        assert any(line.startswith(f"| {layout} | `{policy}") and "shards=, W=16" in line
                   for line in text.splitlines())
    assert "sequential scan" in text and "row-random (today's plan)" in text
    assert "WebDataset `RandomMix`" in text and "Mosaic Streaming" in text
    # rerun from the cache: the Parquet files are reused, not rewritten
    files = sorted((tmp_path / "cache").glob("*.parquet"))
    stamps = [f.stat().st_mtime_ns for f in files]
    assert len(files) == 3
    bench.write_dataset(files[0], bench.make_labels(files[0].name.split("-")[0], 20000), 100)
    assert files[0].stat().st_mtime_ns == stamps[0]
