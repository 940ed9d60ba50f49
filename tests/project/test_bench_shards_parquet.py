"""benchmarks/bench_shards_parquet.py: its results section and a tiny --quick run (its LRU replay is
pystratum.shards.shard_load_profile, tested in tests/shards/test_load_profile.py)."""

import subprocess
import sys
from pathlib import Path
from _scripts import load_script


ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "benchmarks" / "bench_shards_parquet.py"
bench = load_script("benchmarks/bench_shards_parquet.py")


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


def old_section(shift=0):
    h = "#" * shift
    return (f"{bench.START}\n\n{h}## Shards\n\nRun: `python bench.py --rows 1e7` (2026-01-01 07:29 UTC;"
            f" load 1)\n\nloads table\n\n{h}{bench.E2E_HEADING}\n\nRun of this part alone: `x`"
            f"\n\nold e2e\n\n{h}{bench.PEERS_HEADING}\n\npeer table\n\n{bench.END}\n")


def test_a_skipped_part_is_kept_naming_the_run_it_came_from(tmp_path):
    for shift in (0, 1):
        path = tmp_path / f"results{shift}.md"
        path.write_text("# Results\n\n" + old_section(shift) + "\nafter\n")
        h = "#" * shift
        new = f"{bench.START}\n\n{h}## Shards\n\nRun: `new`\n\nnew loads table\n\n{bench.END}\n"
        bench.write_section(path, bench.kept_parts(path, new, shift, ["e2e", "peers"]))
        text = path.read_text()
        assert "new loads table" in text and "\nloads table" not in text
        assert text.index("new loads table") < text.index("old e2e") < text.index("peer table")
        assert text.count(bench.E2E_HEADING) == 1 and text.count(bench.PEERS_HEADING) == 1
        # the peers had no run line of their own: they name the run that made them
        assert (f"{h}{bench.PEERS_HEADING}\n\nKept from `python bench.py --rows 1e7` "
                f"(2026-01-01 07:29 UTC): not re-run") in text
        assert text.endswith(f"{bench.END}\n\nafter\n")
        # kept again by a later partial run: no second "Kept from" line
        bench.write_section(path, bench.kept_parts(path, new, shift, ["e2e", "peers"]))
        assert path.read_text().count("Kept from") == 1


def test_skipping_the_loads_keeps_their_table_and_the_new_part_names_its_run(tmp_path):
    path = tmp_path / "results.md"
    path.write_text(old_section())
    new = (f"{bench.START}\n\n## Shards\n\nRun: `peers run` (today; load 2)\n\n| empty |\n\n"
           f"{bench.PEERS_HEADING}\n\nnew peer table\n\n{bench.END}\n")
    bench.write_section(path, bench.kept_parts(path, new, 0, ["loads", "e2e"]))
    text = path.read_text()
    assert "\nloads table" in text and "| empty |" not in text and "peer table\n" in text
    assert "\npeer table" not in text and "new peer table" in text
    assert text.index("loads table") < text.index("old e2e") < text.index("new peer table")
    assert f"{bench.PEERS_HEADING}\n\nRun of this part alone: `peers run` (today" in text


def test_a_refused_plan_is_a_row_saying_why():
    meta = {"command": "c", "date": "d", "load": "l", "load_end": "l", "cores": 2, "size_note": "",
            "rows": 10, "shards": 1, "shard_rows": 10, "own_shards": 1, "write_s": {},
            "peak_rss": 1.0}
    rows = [{"layout": "spread", "policy": "Targets", "order": "row-random",
             "refused": "too many draws"}]
    text = bench.render(meta, rows, None, None)
    assert "| spread | `Targets` | row-random | refused by the engine: too many draws |" in text


def test_targets_serves_the_majority_once_so_no_stratum_but_the_minority_recycles():
    # epoch="largest" rounds up to a batch more: the 97% stratum would take a second pass
    for n in (10**6, 10**8):
        name, policy = [p for p in bench.policies_for("spread", n) if "Targets" in p[0]][0]
        assert policy.epoch * 128 <= n - bench.minority_rows(n) < (policy.epoch + 1) * 128


def test_the_run_line_shows_the_note_once(tmp_path, monkeypatch):
    # the note follows the run line: the command shows it as "..." (it was printed twice)
    seen = {}
    monkeypatch.setattr(bench, "render", lambda meta, *rest: seen.update(meta) or "")
    monkeypatch.setattr(bench, "write_section", lambda *a, **k: None)
    monkeypatch.setattr(bench, "shard_load_rows", lambda *a: [])
    bench.main(["--rows", "20000", "--skip", "e2e", "peers", "--note", "Why this size.",
                "--cache-dir", str(tmp_path), "--out", str(tmp_path / "out.md")])
    assert seen["command"].endswith('--skip e2e peers --note "..." --cache-dir DIR --out DIR')
    assert seen["size_note"] == "Why this size."


def test_the_peers_heading_kept_parts_looks_for_is_the_one_peer_lines_writes():
    assert bench.peer_lines({"note": "n", "rows": []})[0] == bench.PEERS_HEADING
