"""benchmarks/bench_shards_parquet.py: its results section and a tiny --quick run (its LRU replay is
pystratum.shards.shard_load_profile, tested in tests/shards/test_load_profile.py)."""

import importlib.util
import subprocess
import sys
from pathlib import Path


ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "benchmarks" / "bench_shards_parquet.py"
spec = importlib.util.spec_from_file_location("bench_shards_parquet", SCRIPT)
bench = importlib.util.module_from_spec(spec)
spec.loader.exec_module(bench)


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
    done = subprocess.run([sys.executable, str(SCRIPT), "--quick", "--rows", "20000",
                           "--peer-rows", "5000", "--workers", "1", "--random-batches", "2",
                           "--cache-dir", str(tmp_path / "cache"), "--out", str(out)],
                          cwd=ROOT, capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, done.stderr[-3000:]
    text = out.read_text()
    assert text.startswith("# Focused\n") and bench.START in text and bench.END in text
    for layout, policy in [("spread", "MinPerStratum(8)"), ("own", "Targets"),
                           ("tail", "ClassesPerBatch(16, 4)")]:
        assert any(line.startswith(f"| {layout} | `{policy}") and "shards=, W=16" in line
                   for line in text.splitlines())
    assert "sequential scan" in text and "row-random (today's plan)" in text
    # the end-to-end rows: one batch per message, several (UnpackedBatches), and both ceilings
    assert "G=1 (one batch per message" in text and "G=32 (`batches_per_message=32`" in text
    assert "G=128 (`batches_per_message=128`" in text
    assert "`UnpackedBatches`" in text and text.count("alone: one pre-made") == 3
    assert "WebDataset `RandomMix`" in text and "Mosaic Streaming" in text
    # rerun from the cache: the Parquet files are reused, not rewritten
    files = sorted((tmp_path / "cache").glob("*.parquet"))
    stamps = [f.stat().st_mtime_ns for f in files]
    assert len(files) == 3
    bench.write_dataset(files[0], bench.make_labels(files[0].name.split("-")[0], 20000), 100)
    assert files[0].stat().st_mtime_ns == stamps[0]
