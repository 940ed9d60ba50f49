"""`pystratum plan` on a large CSV: pyarrow.csv against the csv module, in one run.

Writes a CSV of N rows (a stratum column of 3 labels, 1% of them rare, and
two other columns), then times, for each path, reading the stratum column
(`pystratum.cli._data.read_strata`) and the whole `pystratum plan` command
in this process. The csv-module path is forced the way the tests force it
(replacing `_data._arrow_csv`). Wall clock (pyarrow parses in threads);
best of --repeats. Both paths' strata are compared once.

Run: .venv/bin/python benchmarks/bench_csv.py --rows 1e7
"""

from __future__ import annotations

import argparse
import contextlib
import io
import os
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _timing import best  # noqa: E402

from pystratum.cli import _data, main  # noqa: E402


def write_csv(path: Path, rows: int) -> None:
    rng = np.random.default_rng(0)
    labels = np.array(["common", "other", "rare"])[
        np.searchsorted([0.6, 0.99], rng.random(rows), side="right")]
    with open(path, "w") as handle:
        handle.write("id,label,score\n")
        chunk = 1_000_000
        for start in range(0, rows, chunk):
            stop = min(start + chunk, rows)
            ids = np.arange(start, stop).astype(str)
            scores = np.char.mod("%.3f", rng.random(stop - start))
            handle.write("\n".join(",".join(t) for t in zip(ids, labels[start:stop], scores)))
            handle.write("\n")


@contextlib.contextmanager
def path_forced(fallback: bool):
    saved = _data._arrow_csv
    if fallback:
        _data._arrow_csv = lambda: None
    try:
        yield
    finally:
        _data._arrow_csv = saved


def main_bench() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=float, default=1e7)
    parser.add_argument("--repeats", type=int, default=1)
    args = parser.parse_args()
    rows = int(args.rows)
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "data.csv"
        write_csv(path, rows)
        print(f"{rows:,} rows, {path.stat().st_size / 2**20:.0f} MiB, cpus={os.cpu_count()}")
        strata = {}
        for name, fallback in (("pyarrow.csv", False), ("csv module", True)):
            with path_forced(fallback):
                strata[name] = _data.read_strata(path, ["label"])[0]
                read = best(lambda: _data.read_strata(path, ["label"]), args.repeats,
                            clock=time.perf_counter)
                command = ["plan", str(path), "--stratum", "label", "--min", "1", "--seed", "1"]
                with contextlib.redirect_stdout(io.StringIO()):
                    plan = best(lambda: main(command), args.repeats, clock=time.perf_counter)
            print(f"{name:12s} read {read:7.2f} s   pystratum plan {plan:7.2f} s")
        assert np.array_equal(strata["pyarrow.csv"], strata["csv module"])
        print("same strata on both paths")


if __name__ == "__main__":
    main_bench()
