"""Every input form at integer speed: plan_batches on N rows given as each form, one run.

Times ``plan_batches(strata, MinPerStratum(1), seed=1)`` for the same 50
strata given as int labels, numpy strings, Python strings (object array:
a fresh object per row, and the 50 objects repeated), a pandas categorical,
a pyarrow dictionary column, a pandas column backed by one, two columns
(ints and strings) and a pandas string[pyarrow] column; each figure is
divided by the int labels' time of the same round. CPU seconds of this
process (``time.process_time``: other jobs' load does not count; pyarrow's
hashing runs in this thread), best of --repeats, after one warm-up call
(numba's start-up is not a per-form cost). The plans' batches are checked
equal across forms (same partition, same seed).

Then the command line on a CSV of --csv-rows rows: ``pystratum plan`` in
a fresh process against ``pyarrow.csv.read_csv`` of the column in a fresh
process, each minus a fresh process that only starts Python
(``python -c pass``); and ``--label-list`` against a plain ``--stratum``
column of the same file (wall clock, best of --repeats). Last, a fresh
process's import and first three calls (CPU s) on int labels.

Label lists: ``label_matrix_from_sets`` on --label-rows Python lists of
label sets (20 labels, each in 15% of rows; the 20 str objects repeated, and
a fresh str object per cell), then a ``MultiLabel(256)`` plan of the matrix,
against the same plan given the 0/1 matrix itself (CPU s, best of --repeats;
the matrices are checked equal). Then the floors of the slowest forms: the
encoder alone per form, ``pandas.factorize`` of fresh ``str`` objects, the
passes over the label lists' Python objects that a reader in Python makes, the
parts of the pyarrow path and the compiled reader's one pass (--label-lists-only:
the label lists and their floors alone).

Run: .venv/bin/python benchmarks/bench_inputs.py --rows 1e7 --csv-rows 2e6
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _timing import best  # noqa: E402

import pystratum  # noqa: E402
from pystratum.policies import MinPerStratum  # noqa: E402


def forms(rows: int) -> dict:
    import pandas as pd
    import pyarrow as pa

    rng = np.random.default_rng(0)
    ints = rng.integers(0, 50, rows)
    names = np.array([f"class{k:02d}" for k in range(50)])
    text = names[ints]
    arrow = pa.chunked_array([pa.array(text).dictionary_encode()])
    return {
        "int labels": ints,
        "numpy strings (<U7)": text,
        "Python strings (object)": text.astype(object),  # a fresh str object per row
        # The 50 objects repeated, as fancy-indexing labels or pandas' CSV reader give them.
        "Python strings, 50 objects repeated": names.astype(object)[ints],
        "pandas categorical": pd.Categorical.from_codes(ints, names),
        "pyarrow dictionary": arrow,
        "pandas column of a pyarrow dictionary": pd.Series(pd.arrays.ArrowExtensionArray(arrow)),
        "pandas string[pyarrow]": pd.Series(text, dtype="string[pyarrow]"),
        "two columns (ints, strings)": {"g": ints % 5, "s": text},
    }


def bench_forms(rows: int, repeats: int) -> None:
    print(f"plan_batches(strata, MinPerStratum(1), seed=1), {rows:,} rows, 50 strata "
          f"(CPU s, best of {repeats})")
    given = forms(rows)
    plan = lambda strata: pystratum.plan_batches(strata, MinPerStratum(1), seed=1)  # noqa: E731
    reference = plan(given["int labels"])  # warm-up: loads numba's kernels once
    base = best(lambda: plan(given["int labels"]), repeats)
    print(f"  {'int labels':40s} {base:6.2f} s   1.00x")
    for name, strata in given.items():
        if name == "int labels":
            continue
        seconds = best(lambda: plan(strata), repeats)
        result = plan(strata)
        same = all(np.array_equal(a, b) for a, b in zip(result.batches, reference.batches)) \
            if name != "two columns (ints, strings)" else True
        print(f"  {name:40s} {seconds:6.2f} s   {seconds / base:.2f}x"
              f"{'' if same else '   DIFFERENT BATCHES'}")


def label_lists(rows: int) -> tuple[np.ndarray, list, dict]:
    """(the 0/1 matrix, the label names, {form: label lists}): the 20 str objects repeated
    in every row, and a fresh str object per cell (as split text or JSON give them)."""
    rng = np.random.default_rng(2)
    names = [f"tag{k:02d}" for k in range(20)]
    matrix = rng.random((rows, len(names))) < 0.15
    return matrix, names, {
        "the 20 str objects repeated": [[names[k] for k in np.flatnonzero(row)]
                                        for row in matrix],
        "a fresh str object per cell": [[f"tag{k:02d}" for k in np.flatnonzero(row)]
                                        for row in matrix],
    }


def bench_label_sets(rows: int, repeats: int) -> None:
    from pystratum.policies import MultiLabel

    matrix, names, given = label_lists(rows)
    policy = MultiLabel(256)
    pystratum.plan_batches(matrix, policy, seed=1)  # warm-up
    base = best(lambda: pystratum.plan_batches(matrix, policy, seed=1), repeats)
    print(f"\nlabel lists, {rows:,} rows x {len(names)} labels, MultiLabel(256) "
          f"(CPU s, best of {repeats})")
    print(f"  plan of the 0/1 matrix                   {base:6.2f} s   1.00x")
    for form, label_sets in given.items():
        built = best(lambda: pystratum.label_matrix_from_sets(label_sets), repeats)
        result = pystratum.label_matrix_from_sets(label_sets)
        same = np.array_equal(result.matrix, matrix) and result.labels == tuple(names)
        whole = best(lambda: pystratum.plan_batches(
            pystratum.label_matrix_from_sets(label_sets), policy, seed=1), repeats)
        print(f"  {form}:")
        print(f"    label_matrix_from_sets alone           {built:6.2f} s"
              f"{'' if same else '   DIFFERENT MATRIX'}")
        print(f"    label_matrix_from_sets, then the plan  {whole:6.2f} s   {whole / base:.2f}x")


def bench_floors(rows: int, label_rows: int, repeats: int) -> None:
    """What the slowest forms cost at least: the encoder alone, and the Python passes no
    reader of Python objects avoids (CPU s, best of --repeats)."""
    import pandas as pd

    from pystratum.strata._encode import encode_strata
    from pystratum.strata._object_identity import object_pointers

    given = forms(rows)
    fresh = given["Python strings (object)"]
    print(f"\nfloors, {rows:,} rows (CPU s, best of {repeats})")
    for name in ("int labels", "Python strings (object)", "Python strings, 50 objects repeated"):
        seconds = best(lambda: encode_strata(given[name]), repeats)
        print(f"  encode_strata alone, {name:35s} {seconds:6.2f} s")
    seconds = best(lambda: pd.factorize(fresh), repeats)
    print(f"  {'pandas.factorize of a fresh str object per row':56s} {seconds:6.2f} s")
    reader = _compiled_reader()
    if reader is not None:
        pointers = object_pointers(fresh)
        seconds = best(lambda: reader.str_codes(pointers), repeats)
        what = "the compiled reader alone, a fresh str object per row"
        print(f"  {what:56s} {seconds:6.2f} s")
    bench_label_list_floors(label_rows, repeats)


def _compiled_reader():
    """``kernels._pyobjects`` (the compiled reader of str objects), or None without it."""
    from pystratum import kernels

    return kernels.compiled("pyobjects")


def bench_label_list_floors(label_rows: int, repeats: int) -> None:
    """The passes over the label lists' Python objects that any reader makes, and the parts
    of the pyarrow path for fresh str cells (CPU s, best of --repeats)."""
    import itertools

    import pyarrow as pa
    import pyarrow.compute as pc

    _, _, given = label_lists(label_rows)
    for form, label_sets in given.items():
        n_cells = sum(map(len, label_sets))
        lists = pa.array(label_sets, type=pa.list_(pa.string()))
        passes = {
            "row types": lambda: set(map(type, label_sets)),
            "row lengths": lambda: np.fromiter(map(len, label_sets), dtype=np.int64,
                                               count=len(label_sets)),
            "cells into an object array": lambda: np.fromiter(
                itertools.chain.from_iterable(label_sets), dtype=object, count=n_cells),
            "cell types (each exactly str?)": lambda: set(
                map(type, itertools.chain.from_iterable(label_sets))),
            "pyarrow.array(lists, list<string>)": lambda: pa.array(
                label_sets, type=pa.list_(pa.string())),
            "pyarrow.array(lists), type inferred": lambda: pa.array(label_sets),
            "dictionary_encode of the cells": lambda: pc.dictionary_encode(lists.values),
        }
        reader = _compiled_reader()
        if reader is not None:
            passes["the compiled reader (one pass)"] = lambda: reader.list_str_codes(label_sets)
        print(f"  label lists, {label_rows:,} rows, {n_cells:,} cells, {form}: passes")
        for name, run in passes.items():
            print(f"    {name:36s} {best(run, repeats):6.2f} s")


def write_csv(path: Path, rows: int) -> None:
    rng = np.random.default_rng(1)
    labels = np.array(["common", "other", "rare"])[
        np.searchsorted([0.6, 0.99], rng.random(rows), side="right")]
    tags = np.array(["a;b", "b", "a;c", "c;b;a", "b;c"])[rng.integers(0, 5, rows)]
    with open(path, "w") as handle:
        handle.write("id,label,tags\n")
        for start in range(0, rows, 1_000_000):
            stop = min(start + 1_000_000, rows)
            ids = np.arange(start, stop).astype(str)
            handle.write("\n".join(",".join(t) for t in zip(ids, labels[start:stop],
                                                             tags[start:stop])))
            handle.write("\n")


def wall(command, repeats: int) -> float:
    def run():
        subprocess.run(command, check=True, stdout=subprocess.DEVNULL, env=os.environ.copy())
    return best(run, repeats, clock=time.perf_counter)


def bench_cli(rows: int, repeats: int) -> None:
    python = sys.executable
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "data.csv"
        write_csv(path, rows)
        print(f"\npystratum command, CSV of {rows:,} rows ({path.stat().st_size / 2**20:.0f} MiB), "
              f"fresh processes (wall s, best of {repeats})")
        start = wall([python, "-c", "pass"], repeats)
        read = wall([python, "-c", "import sys, pyarrow as pa, pyarrow.csv as c; "
                     "c.read_csv(sys.argv[1], convert_options=c.ConvertOptions("
                     "include_columns=['label'], column_types={'label': pa.string()}))",
                     str(path)], repeats)
        command = [python, "-m", "pystratum", "plan", str(path), "--min", "1", "--seed", "1", "-q"]
        plan = wall(command + ["--stratum", "label"], repeats)
        labels, column = read_label_list(path, repeats)
        small = path.with_name("small.csv")
        small.write_text("label\n" + "a\nb\n" * 50)
        fixed = wall([python, "-m", "pystratum", "plan", str(small), "--stratum", "label",
                      "--min", "1", "--seed", "1"], repeats)
        print(f"  python -c pass (process start-up)          {start:6.2f} s")
        print(f"  pystratum plan of a 100-row CSV (fixed cost) {fixed:6.2f} s")
        print(f"  pyarrow.csv read of the column              {read:6.2f} s "
              f"({read - start:.2f} s beyond start-up)")
        print(f"  pystratum plan --stratum label              {plan:6.2f} s "
              f"({plan - start:.2f} s beyond start-up: {(plan - start) / (read - start):.2f}x "
              f"the read)")
        print(f"\nreading DATA in this process (wall s, best of {repeats}): the stratum column "
              f"{column:.2f} s; --label-list tags (the label matrix) {labels:.2f} s, "
              f"{labels / column:.2f}x")


def read_label_list(path: Path, repeats: int) -> tuple[float, float]:
    """(--label-list's label matrix, --stratum's column read and encoded): wall seconds."""
    from types import SimpleNamespace

    from pystratum.cli._data import read_strata
    from pystratum.cli._labels import read_label_matrix
    from pystratum.strata._encode import encode_strata

    args = SimpleNamespace(data=str(path), label=None, label_list="tags", label_sep=";",
                           input_format=None, encoding="utf-8-sig", delimiter=None)
    labels = best(lambda: read_label_matrix(args), repeats, clock=time.perf_counter)
    column = best(lambda: encode_strata(read_strata(path, ["label"], keep_dictionary=True)[0]),
                  repeats, clock=time.perf_counter)
    return labels, column


FIRST_CALLS = """
import sys, time
started = time.process_time()
import numpy as np, pystratum
imported = time.process_time() - started
labels = np.random.default_rng(0).integers(0, 50, {rows})
times = []
for seed in range(3):
    start = time.process_time()
    pystratum.plan_batches(labels, 1, seed=seed)
    times.append(time.process_time() - start)
print(f"{{imported:.2f}} " + " ".join(f"{{t:.2f}}" for t in times) + f" {{'numba' in sys.modules}}")
"""


def bench_first_calls(sizes) -> None:
    print("\nfresh process: import pystratum, then three plan_batches calls (CPU s)")
    for rows in sizes:
        done = subprocess.run([sys.executable, "-c", FIRST_CALLS.format(rows=rows)],
                              capture_output=True, text=True, check=True)
        imported, *calls, numba = done.stdout.split()
        print(f"  {rows:>10,} int labels: import {imported} s; calls {', '.join(calls)} s; "
              f"numba loaded: {numba}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=float, default=1e7)
    parser.add_argument("--csv-rows", type=float, default=2e6)
    parser.add_argument("--label-rows", type=float, default=1e6)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--label-lists-only", action="store_true",
                        help="only the label lists and their floors")
    args = parser.parse_args()
    print(f"cpus={os.cpu_count()}, load average {os.getloadavg()[0]:.1f}")
    if args.label_lists_only:
        bench_label_sets(int(args.label_rows), args.repeats)
        print(f"\nfloors (CPU s, best of {args.repeats})")
        bench_label_list_floors(int(args.label_rows), args.repeats)
        return
    bench_forms(int(args.rows), args.repeats)
    bench_label_sets(int(args.label_rows), args.repeats)
    bench_floors(int(args.rows), int(args.label_rows), args.repeats)
    bench_cli(int(args.csv_rows), args.repeats)
    bench_first_calls([int(args.csv_rows), 5 * 10**6])


if __name__ == "__main__":
    main()
