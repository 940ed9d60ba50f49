"""Benchmark report: pystratum against the floor and the peer samplers, speed and guarantees.

Run (from the repository root, after `bash .ci/dev setup`; `bash .ci/dev bench` does both):

    .venv/bin/python benchmarks/report.py            # full run, ~15-20 min on 2 cores
    .venv/bin/python benchmarks/report.py --quick    # N = 2e4 only, for a smoke test

Writes benchmarks/results.md and benchmarks/results.json (add --output-dir to
write elsewhere) and prints progress on stderr. results.md ends with the
focused benchmarks' figures (negatives, lazy plans, materialised plan,
sampling policies), copied from benchmarks/results_focused.md, which their
own scripts' runs fill; `--render` rewrites results.md from results.json
and that file without measuring anything.

Workloads: N in {2e4, 1e6, 1e7} x strata in {2 (3% positives), 10 (geometric
imbalance, sizes ~ 2^-k), 1000 (long tail, sizes ~ 1/k)}. Every method makes
one epoch of batches whose mean size is that of pystratum's
``MinPerStratum(1)`` plan (as many batches as the smallest stratum has rows).
Each (method, workload) runs in its own fresh process: one warm-up run, then
``repeats`` timed runs (construction + one full epoch, batches materialised
as the method returns them); the median and min-max are reported, and the
ratio to the floor's median measured in the same report run. The guarantee
is read off the warm-up epoch's batches: share of batches missing a
stratum, smallest per-stratum count in any batch, and whether the epoch
serves every row exactly once. Peak memory: Python methods, the growth of
the process's resident memory during the warm-up epoch (polled every 1 ms,
and read again with the batches still alive); R methods, the growth of R's
heap (``gc()`` "max used" after ``gc(reset = TRUE)``).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from datetime import datetime, timezone
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
SIZES = [20_000, 1_000_000, 10_000_000]
STRATA = [2, 10, 1000]
REPEATS = {20_000: 9, 1_000_000: 5, 10_000_000: 3}
SEED = 1
# MPerClassSampler draws each class's rows with numpy's choice() without
# replacement, which permutes the whole class every batch: an epoch costs
# about N x batches. It is timed on this many batches and extrapolated.
PML_BATCHES = 50
WORKER_TIMEOUT = 900

PY_METHODS = [
    ("floor", "numpy default_rng().permutation(N), cut into batches"),
    ("pystratum-numpy", "pystratum.stratified_batches(strata, 1, rng='numpy')"),
    ("pystratum-R", "pystratum.stratified_batches(strata, 1, rng='R')"),
    ("pystratum-torch", "pystratum.stratified_batches(strata, 1, rng='torch')"),
    ("pystratum-sampler", "pystratum.torch.StratifiedBatchSampler(strata, 1), one iter()"),
    ("torch-BatchSampler", "BatchSampler(RandomSampler(range(N)), B)"),
    ("torch-WeightedRandomSampler", "BatchSampler(WeightedRandomSampler(1/N_s, N), B)"),
    ("pml-MPerClassSampler", "pytorch-metric-learning MPerClassSampler(labels, m, B')"),
]
R_METHODS = [
    ("R-sample", "R sample(N), cut into batches"),
    ("R-datatable-blog", "the blog's data.table allocation (m = 1)"),
    ("R-pystratum", "R pystratum::stratified_batches(strata, 1, seed)"),
]
NOT_RUN = [
    ("LibAUC DualSampler", "libauc 2.0.1 (`libauc.sampler`) imports torchvision at module "
     "level and requires torchvision, torch_geometric, ogb, transformers, opencv-python and "
     "medmnist; the only torchvision on PyPI for Linux is built for CUDA torch (the CPU build "
     "is on PyTorch's own index, which this project does not use), so it does not install "
     "against the pinned CPU torch 2.13.0. Its composition (a fixed share of positives, "
     "positives recycled) is `pystratum.policies` Targets/Downsample's territory."),
    ("torchsampler ImbalancedDatasetSampler", "torchsampler 0.1.2 imports torchvision at module "
     "level (and requires it): same reason as LibAUC."),
    ("catalyst BatchBalanceClassSampler / BalanceClassSampler", "catalyst 22.4 (the last "
     "release) installs, but constructing either sampler raises `TypeError: object.__init__() "
     "takes exactly one argument` under torch 2.13: it passes the labels to "
     "`torch.utils.data.Sampler.__init__`, which no longer takes a data source."),
]


# --- data ---------------------------------------------------------------------------------


def stratum_sizes(n: int, n_strata: int) -> np.ndarray:
    """Exact stratum sizes summing to n (every stratum at least one row)."""
    if n_strata == 2:
        positives = round(0.03 * n)
        return np.array([n - positives, positives], dtype=np.int64)
    if n_strata == 10:
        shares = 2.0 ** -np.arange(10)
    else:
        shares = 1.0 / np.arange(1, n_strata + 1)
    sizes = np.maximum(1, np.floor(shares / shares.sum() * n)).astype(np.int64)
    sizes[0] += n - sizes.sum()
    return sizes


def make_labels(n: int, n_strata: int) -> np.ndarray:
    sizes = stratum_sizes(n, n_strata)
    labels = np.repeat(np.arange(n_strata, dtype=np.int64), sizes)
    return np.random.default_rng(0).permutation(labels)


# --- the worker: one method on one workload, in a fresh process ----------------------------


def _rss() -> int:
    import psutil

    return psutil.Process().memory_info().rss


class _PeakWatcher:
    def __init__(self):
        self.peak = _rss()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._poll, daemon=True)

    def _poll(self):
        while not self._stop.is_set():
            self.peak = max(self.peak, _rss())
            time.sleep(0.001)

    def __enter__(self):
        self._thread.start()
        return self

    def __exit__(self, *exc):
        self._stop.set()
        self._thread.join()
        self.peak = max(self.peak, _rss())


def _chunks(order, size):
    return [order[i:i + size] for i in range(0, len(order), size)]


def _runner(method: str, labels: np.ndarray, batch_size: int, n_strata: int):
    """A function making one epoch of batches (a list of index sequences)."""
    n = labels.shape[0]
    if method == "floor":
        return lambda: _chunks(np.random.default_rng(SEED).permutation(n), batch_size)
    if method.startswith("pystratum-") and method != "pystratum-sampler":
        import pystratum

        rng = method.split("-", 1)[1]
        # Small smoke runs (a one-row stratum) plan one batch; timing it is still the point.
        return lambda: pystratum.stratified_batches(labels, 1, seed=SEED, rng=rng,
                                                    allow_single_batch=True)
    if method == "pystratum-sampler":
        from pystratum.torch import StratifiedBatchSampler

        return lambda: list(StratifiedBatchSampler(labels, 1, seed=SEED, allow_single_batch=True))
    import torch
    from torch.utils.data import BatchSampler, RandomSampler, WeightedRandomSampler

    if method == "torch-BatchSampler":
        return lambda: list(BatchSampler(RandomSampler(range(n), generator=torch.Generator()
                                                       .manual_seed(SEED)), batch_size, False))
    if method == "torch-WeightedRandomSampler":
        sizes = np.bincount(labels)
        weights = torch.from_numpy(1.0 / sizes[labels])
        return lambda: list(BatchSampler(WeightedRandomSampler(
            weights, n, replacement=True, generator=torch.Generator().manual_seed(SEED)),
            batch_size, False))
    if method == "pml-MPerClassSampler":
        from pytorch_metric_learning.samplers import MPerClassSampler

        # m rows of each class it puts in a batch; batch = m * (classes per batch).
        m = max(1, batch_size // n_strata)
        size = m * min(n_strata, max(1, batch_size // m))
        served = min(n, PML_BATCHES * size)

        def run():
            start = time.perf_counter()
            sampler = MPerClassSampler(labels, m, batch_size=size, length_before_new_iter=served)
            built = time.perf_counter()
            batches = _chunks(list(iter(sampler)), size)
            # Construction once, the batches scaled up to an epoch of N rows.
            run.extrapolated = (built - start) + (time.perf_counter() - built) * n / served
            run.note = (f"timed on {len(batches)} batches of {size} (m={m}), extrapolated to "
                        f"N rows; guarantee columns from those batches")
            return batches
        return run
    raise ValueError(f"unknown method {method!r}")


def guarantee(labels: np.ndarray, batches, n_strata: int) -> dict:
    sizes = np.fromiter((len(b) for b in batches), dtype=np.int64, count=len(batches))
    rows = np.concatenate([np.asarray(b, dtype=np.int64) for b in batches])
    batch_ids = np.repeat(np.arange(len(batches), dtype=np.int64), sizes)
    counts = np.bincount(batch_ids * n_strata + labels[rows],
                         minlength=len(batches) * n_strata).reshape(len(batches), n_strata)
    per_row = np.bincount(rows, minlength=labels.shape[0])
    return {"batches": int(len(batches)), "mean_batch": float(sizes.mean()),
            "missing_share": float((counts == 0).any(axis=1).mean()),
            "min_count": int(counts.min()),
            "each_row_once": bool(per_row.shape[0] == labels.shape[0] and (per_row == 1).all())}


def worker(method: str, n: int, n_strata: int, repeats: int, batch_size: int) -> dict:
    labels = make_labels(n, n_strata)
    if method not in ("floor", "pystratum-numpy", "pystratum-R"):
        import torch  # noqa: F401  (imported before measuring: its import is no part of an epoch)
    run = _runner(method, labels, batch_size, n_strata)
    before = _rss()
    with _PeakWatcher() as watcher:
        batches = run()  # warm-up, and the epoch whose guarantee and memory are reported
    record = guarantee(labels, batches, n_strata)
    record["peak_mb"] = (watcher.peak - before) / 2**20
    if hasattr(run, "note"):
        record["note"] = run.note
    del batches
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        result = run()
        times.append(getattr(run, "extrapolated", time.perf_counter() - start))
        del result
    record["times"] = times
    return record


# --- the driver -----------------------------------------------------------------------------


def _progress(message: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {message}", file=sys.stderr, flush=True)


def _run_python(method, n, n_strata, repeats, batch_size) -> dict:
    command = [sys.executable, str(Path(__file__).resolve()), "--worker", method, str(n),
               str(n_strata), str(repeats), str(batch_size)]
    env = dict(os.environ, PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""),
               OMP_NUM_THREADS="1")
    try:
        done = subprocess.run(command, capture_output=True, text=True, env=env,
                              timeout=WORKER_TIMEOUT)
    except subprocess.TimeoutExpired:
        return {"error": f"no result within {WORKER_TIMEOUT} s"}
    if done.returncode:
        return {"error": (done.stderr.strip().splitlines() or ["failed"])[-1]}
    return json.loads(done.stdout.strip().splitlines()[-1])


def _run_r(n, n_strata, repeats, batch_size) -> dict:
    with tempfile.NamedTemporaryFile("w", suffix=".txt", delete=False) as handle:
        handle.write("\n".join(str(s) for s in stratum_sizes(n, n_strata)))
        sizes_file = handle.name
    try:
        done = subprocess.run(["Rscript", str(HERE / "report_r.R"), sizes_file, str(repeats),
                               str(batch_size), str(SEED)], capture_output=True, text=True,
                              timeout=3600)
    finally:
        os.unlink(sizes_file)
    if done.returncode:
        error = (done.stderr.strip().splitlines() or ["failed"])[-1]
        return {name: {"error": error} for name, _ in R_METHODS}
    return json.loads(done.stdout.strip().splitlines()[-1])


def _summary(record: dict, floor_median):
    times = record.get("times")
    if not times:
        return record
    record["median_s"] = statistics.median(times)
    record["min_s"], record["max_s"] = min(times), max(times)
    if floor_median:
        record["x_floor"] = record["median_s"] / floor_median
    return record


def _versions() -> dict:
    import numpy
    import torch

    versions = {"python": platform.python_version(), "numpy": numpy.__version__,
                "torch": torch.__version__}
    try:
        import pytorch_metric_learning

        versions["pytorch-metric-learning"] = pytorch_metric_learning.__version__
    except ImportError:
        pass
    r = subprocess.run(["Rscript", "-e", "cat(R.version$major, R.version$minor, "
                        "as.character(packageVersion('data.table')), "
                        "as.character(packageVersion('pystratum')))"],
                       capture_output=True, text=True)
    if r.returncode == 0:
        major, minor, dt, ours = r.stdout.split()
        versions.update({"R": f"{major}.{minor}", "data.table": dt, "pystratum (R)": ours})
    return versions


def run_report(sizes, strata, output_dir: Path, command: str) -> None:
    import pystratum

    results = []
    jobs = len(sizes) * len(strata) * (len(PY_METHODS) + 1)
    done_jobs = 0
    started = time.perf_counter()
    for n in sizes:
        for n_strata in strata:
            labels = make_labels(n, n_strata)
            plan = pystratum.plan_batches(labels, 1, seed=SEED)
            batch_size = int(round(n / plan.num_batches))
            repeats = REPEATS[n] if n in REPEATS else 3
            del labels, plan
            workload = {"n": n, "strata": n_strata, "batch_size": batch_size,
                        "repeats": repeats, "methods": {}}
            floor_median = None
            for method, _ in PY_METHODS:
                done_jobs += 1
                _progress(f"[{done_jobs}/{jobs}] N={n:,} strata={n_strata}: {method} ...")
                record = _summary(_run_python(method, n, n_strata, repeats, batch_size),
                                  floor_median)
                if method == "floor":
                    floor_median = record.get("median_s")
                workload["methods"][method] = record
                _progress(f"    {_short(record)}")
            done_jobs += 1
            _progress(f"[{done_jobs}/{jobs}] N={n:,} strata={n_strata}: R (sample, data.table, "
                      f"pystratum) ...")
            r_records = _run_r(n, n_strata, repeats, batch_size)
            r_floor = _summary(r_records.get("R-sample", {}), None).get("median_s")
            for name, _ in R_METHODS:
                record = _summary(r_records.get(name, {"error": "missing"}), floor_median)
                if r_floor and "median_s" in record:
                    record["x_R_sample"] = record["median_s"] / r_floor
                workload["methods"][name] = record
                _progress(f"    {name}: {_short(record)}")
            results.append(workload)
    elapsed = time.perf_counter() - started
    meta = {"command": command, "date": datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
            "machine": f"{platform.machine()}, {os.cpu_count()} cores, {platform.system()}",
            "versions": _versions(), "seconds": elapsed, "seed": SEED}
    output_dir.mkdir(parents=True, exist_ok=True)
    (output_dir / "results.json").write_text(json.dumps({"meta": meta, "workloads": results},
                                                        indent=1) + "\n")
    (output_dir / "results.md").write_text(render_markdown(meta, results) + focused_section())
    _progress(f"wrote {output_dir / 'results.md'} and results.json ({elapsed / 60:.1f} min)")


def _short(record: dict) -> str:
    if "error" in record:
        return f"error: {record['error']}"
    return (f"median {record['median_s']:.4f} s, missing {record['missing_share']:.1%}, "
            f"min count {record['min_count']}, peak {record['peak_mb']:.0f} MB")


def _fmt_s(x: float) -> str:
    return f"{x:.4f}" if x < 1 else f"{x:.2f}"


def render_markdown(meta: dict, results: list) -> str:
    v = meta["versions"]
    lines = [
        "# Benchmark report",
        "",
        f"Made by `{meta['command']}` on {meta['date']} ({meta['machine']}; the machine was "
        f"shared with other jobs, so single figures can move by tens of percent). The run took "
        f"{meta['seconds'] / 60:.1f} minutes.",
        "",
        "Versions: " + ", ".join(f"{k} {val}" for k, val in v.items()) + ".",
        "",
        "Every method makes one epoch of batches of the same mean size: that of pystratum's "
        "`MinPerStratum(1)` plan (as many batches as the smallest stratum has rows). Times are "
        "construction plus one full epoch with the batches materialised as the method returns "
        "them, each method in a fresh process: the median of the repeats after one warm-up run, "
        "with min-max; `x floor` is the median over the median of "
        "`default_rng().permutation(N)` cut into batches, measured in the same run (R methods "
        "also over R's own `sample(N)`). The guarantee columns are read off one epoch of each "
        "method: the share of batches missing at least one stratum, the smallest count of a "
        "stratum in any batch, and whether the epoch serves every row exactly once. Peak "
        "memory: growth of the process's resident memory during that epoch (Python), or of "
        "R's heap (`gc()` max used; R methods).",
        "",
        "Strata: 2 = 3% positives; 10 = geometric imbalance (sizes proportional to 2^-k, the "
        "smallest 1/1023 of the rows); 1000 = long tail (sizes proportional to 1/k).",
        "",
    ]
    descriptions = dict(PY_METHODS + R_METHODS)
    for workload in results:
        lines += [f"## N = {workload['n']:,}, {workload['strata']} strata (mean batch "
                  f"{workload['batch_size']:,} rows, {workload['repeats']} repeats)", "",
                  "| method | median s | min-max s | x floor | batches | missing a stratum | "
                  "min count | each row once | peak MB |",
                  "|---|---:|---:|---:|---:|---:|---:|:---:|---:|"]
        for name, record in workload["methods"].items():
            label = f"{name}: {descriptions[name]}"
            if "error" in record:
                lines.append(f"| {label} | failed: {record['error']} | | | | | | | |")
                continue
            ratio = f"{record['x_floor']:.2f}" if "x_floor" in record else ""
            if "x_R_sample" in record and name != "R-sample":
                ratio += f" ({record['x_R_sample']:.2f} x R sample)"
            lines.append(
                f"| {label} | {_fmt_s(record['median_s'])} | {_fmt_s(record['min_s'])}-"
                f"{_fmt_s(record['max_s'])} | {ratio} | {record['batches']:,} | "
                f"{record['missing_share']:.1%} | {record['min_count']} | "
                f"{'yes' if record['each_row_once'] else 'no'} | {record['peak_mb']:.1f} |")
        notes = [f"{name}: {record['note']}" for name, record in workload["methods"].items()
                 if "note" in record]
        lines += [""] + ([f"*{note}.*" for note in notes] + [""] if notes else [])
    lines += ["## Peers not benchmarked", ""]
    lines += [f"- **{name}**: {why}" for name, why in NOT_RUN]
    lines += ["", "Regenerate: `bash .ci/dev bench` (or the command above after "
              "`bash .ci/dev setup`)."]
    return "\n".join(lines) + "\n"


FOCUSED = HERE / "results_focused.md"


def focused_section() -> str:
    """``results_focused.md`` as a last section of the report, its headings one level down.

    The issue targets of the focused benchmarks (negatives, lazy plans, the
    materialised plan, sampling policies) are measured by their own scripts,
    whose commands and runs that file states; the report carries their
    figures as they stand so that one file holds every figure.
    """
    lines = FOCUSED.read_text().splitlines()[1:]  # its own title replaced below
    lines = [line for line in lines if "is [results.md](results.md)" not in line]
    lines = ["#" + line if line.startswith("#") else line for line in lines]
    return "\n".join([
        "", "## Focused benchmarks (issue targets, measured by their own scripts)", "",
        "Copied by `report.py` from [results_focused.md](results_focused.md) when this file was "
        "written, not re-measured by it: each part names the script, command and runs behind "
        "its figures.", *lines]) + "\n"


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="N = 2e4 only (smoke test)")
    parser.add_argument("--output-dir", type=Path, default=HERE)
    parser.add_argument("--render", action="store_true",
                        help="only rewrite results.md from the results.json in --output-dir "
                             "(and the focused figures from results_focused.md)")
    parser.add_argument("--worker", nargs=5, metavar=("METHOD", "N", "STRATA", "REPEATS", "B"),
                        help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.worker:
        method, n, n_strata, repeats, batch_size = args.worker
        print(json.dumps(worker(method, int(n), int(n_strata), int(repeats), int(batch_size))))
        return
    if args.render:
        saved = json.loads((args.output_dir / "results.json").read_text())
        (args.output_dir / "results.md").write_text(
            render_markdown(saved["meta"], saved["workloads"]) + focused_section())
        return
    command = "python benchmarks/report.py" + (" --quick" if args.quick else "")
    run_report([SIZES[0]] if args.quick else SIZES, STRATA, args.output_dir, command)


if __name__ == "__main__":
    main()
