"""Lazy plans (rng="index") against materialised plans, permutations and torch.

Run:  .venv/bin/python benchmarks/bench_lazy.py [--big | --only-big] [--n N]
      .venv/bin/python benchmarks/bench_lazy.py --classes-per-batch

Every case runs in a fresh process, so its peak resident memory
(``ru_maxrss``) is its own; times are CPU seconds of that process
(``time.process_time``; the machines here are shared, wall-clock seconds
mostly measure other jobs) with wall seconds beside them.

Default (N = 10^7, 2 strata with 3% positives, FixedSize(1000)):
lazy vs materialised whole epoch, time to the first batch, one rank of 8,
torch's DistributedSampler (one rank of 8) and the plain keyed shuffle.
``--big`` adds N = 10^9: one rank of 8, rows grouped by stratum (ranges)
and not grouped (int8 codes, member array), against
``default_rng().permutation(N / 8)``. Inputs are built compactly in memory
(int8 codes, or the two run lengths); nothing is written to disk.

``--classes-per-batch``: ``ClassesPerBatch(16, 4)`` lazy plans, both
``classes`` modes, at N = 10^6 (10^4 classes) and 10^7 (10^5 classes),
sizes long-tailed as in ``bench_classes_per_batch.py``, strata given as
member lists of runs (``grouped_strata``, O(S)): set-up, the mean CPU time
of one batch asked for alone (``plan[b]``, 2,000 batches in a random order),
one rank of 8's epoch, and the materialised ``plan_batches(rng="index")``
epoch of the same labels beside them (its peak includes the labels).

With numba installed (the ``fast`` extra) the materialised plan and the
lazy plan's epochs go through compiled kernels; their one-off import and
load is measured apart ("warm-up"). ``PYSTRATUM_NUMBA=0`` measures the
numpy paths.
"""

import argparse
import json
import resource
import subprocess
import sys
import time

import numpy as np

RANKS = 8
BATCH = 1000
POSITIVES = 0.03


def _codes(n, seed=0):
    """int8 labels, 3% ones, built in chunks (1 byte per row)."""
    codes = np.empty(n, dtype=np.int8)
    rng = np.random.default_rng(seed)
    step = 1 << 24
    for start in range(0, n, step):
        stop = min(n, start + step)
        codes[start:stop] = rng.random(stop - start) < POSITIVES
    return codes


def _rss_mb():
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


class Clock:
    def __init__(self):
        self.cpu = time.process_time()
        self.wall = time.perf_counter()

    def lap(self):
        cpu, wall = time.process_time(), time.perf_counter()
        result = (cpu - self.cpu, wall - self.wall)
        self.cpu, self.wall = cpu, wall
        return result


def case(name, n):
    """Run one case in this process; returns a dict of figures."""
    import pystratum
    from pystratum.policies import FixedSize

    policy = FixedSize(BATCH)
    out = {"case": name, "n": n}
    if name == "permutation_rank":
        clock = Clock()
        np.random.default_rng().permutation(n // RANKS)
        out["epoch"] = clock.lap()
    elif name == "permutation":
        clock = Clock()
        np.random.default_rng().permutation(n)
        out["epoch"] = clock.lap()
    elif name in ("lazy_grouped_rank", "lazy_codes_rank", "lazy_codes", "lazy_grouped"):
        grouped = "grouped" in name

        def strata_of(size):
            if grouped:
                positives = int(round(size * POSITIVES))
                return pystratum.grouped_strata([size - positives, positives])
            return _codes(size)

        # Once per process, as for "materialised": numba's import and the
        # compiled kernels' load (the fast extra), measured apart.
        clock = Clock()
        small = pystratum.lazy_plan(strata_of(1 << 17), policy, seed=2)
        small.batches_of(np.arange(small.num_batches))
        out["warm_up"] = clock.lap()
        strata = strata_of(n)
        out["input_mb"] = _rss_mb()
        clock = Clock()
        plan = pystratum.lazy_plan(strata, policy, seed=1)
        out["build"] = clock.lap()
        ids = np.arange(plan.num_batches)
        if name.endswith("_rank"):
            from pystratum.serving._sharding import rank_batch_indices

            ids = rank_batch_indices(plan.num_batches, RANKS, 0, False)
        first = plan[int(ids[0])]
        out["first"] = clock.lap()
        rows = first.shape[0]
        for batch in plan.iter_batches(ids):
            rows += batch.shape[0]
        out["epoch"] = clock.lap()
        out["rows"] = rows - first.shape[0]
        out["batches"] = int(ids.shape[0])
    elif name == "materialised":
        codes = _codes(n)
        # Once per process, not per epoch: numba's import and the compiled
        # kernels' load (about 0.5 s), measured apart.
        clock = Clock()
        pystratum.plan_batches(_codes(1 << 17), policy, seed=1)
        out["warm_up"] = clock.lap()
        out["input_mb"] = _rss_mb()
        clock = Clock()
        plan = pystratum.plan_batches(codes, policy, seed=1)
        out["epoch"] = clock.lap()
        out["first"] = out["epoch"]
        out["batches"] = plan.num_batches
    elif name == "keyed_shuffle_rank":
        from pystratum.streams._index import permute_ranks, round_keys

        clock = Clock()
        permute_ranks(np.arange(1 << 17), 1 << 20, round_keys(2, 0, [0])[:, 0])
        out["warm_up"] = clock.lap()
        keys = round_keys(1, 0, [0])[:, 0]
        step = 1 << 20
        # rank 0's share of a plain keyed shuffle of N rows, no strata
        for start in range(0, n // RANKS, step):
            ranks = np.arange(start, min(n // RANKS, start + step), dtype=np.int64) * RANKS
            permute_ranks(ranks, n, keys)
        out["epoch"] = clock.lap()
    elif name == "distributed_sampler_rank":
        import torch
        from torch.utils.data import DistributedSampler

        torch.set_num_threads(1)
        sampler = DistributedSampler(range(n), num_replicas=RANKS, rank=0, seed=1)
        clock = Clock()
        iterator = iter(sampler)
        next(iterator)
        out["first"] = clock.lap()
        for _ in iterator:
            pass
        out["epoch"] = clock.lap()
    elif name.startswith("cpb_"):
        out.update(_classes_per_batch_case(name, n))
    else:
        raise ValueError(name)
    out["peak_mb"] = _rss_mb()
    return out


def _long_tail_sizes(rows, classes, seed=0):
    """bench_classes_per_batch.py's class sizes (4-400, Pareto tail, scaled to ~rows)."""
    rng = np.random.default_rng(seed)
    sizes = np.clip(4 + rng.pareto(1.2, classes) * 30, 4, 400)
    return np.maximum(4, (sizes * rows / sizes.sum()).astype(np.int64))


def _classes_per_batch_case(name, n):
    """``cpb_lazy_<mode>`` or ``cpb_materialised_<mode>``: ClassesPerBatch(16, 4) epochs."""
    import pystratum
    from pystratum.policies import ClassesPerBatch
    from pystratum.serving._sharding import rank_batch_indices

    mode = name.rsplit("_", 1)[1]
    policy = ClassesPerBatch(16, 4, classes=mode)
    sizes = _long_tail_sizes(n, max(1, n // 100))
    out = {"n": int(sizes.sum()), "classes": int(sizes.shape[0])}
    if name.startswith("cpb_materialised"):
        labels = np.repeat(np.arange(sizes.shape[0], dtype=np.int32), sizes)
        out["input_mb"] = _rss_mb()
        clock = Clock()
        plan = pystratum.plan_batches(labels, policy, seed=1, rng="index", epoch=3)
        out["epoch"] = clock.lap()
        out["batches"] = plan.num_batches
        return out
    members = pystratum.grouped_strata(sizes)
    out["input_mb"] = _rss_mb()
    clock = Clock()
    plan = pystratum.lazy_plan(members, policy, seed=1, epoch=3)
    out["build"] = clock.lap()
    ids = np.random.default_rng(0).integers(0, plan.num_batches, 2000)
    for b in ids.tolist():
        plan[b]
    cpu, wall = clock.lap()
    out["per_batch"] = (cpu / ids.shape[0], wall / ids.shape[0])
    mine = rank_batch_indices(plan.num_batches, RANKS, 0, False)
    for _ in plan.iter_batches(mine):
        pass
    out["epoch"] = clock.lap()
    out["batches"] = int(mine.shape[0])
    return out


def run(name, n):
    command = [sys.executable, __file__, "--case", name, "--n", str(n)]
    done = subprocess.run(command, capture_output=True, text=True)
    if done.returncode != 0:
        return {"case": name, "n": n, "error": done.stderr.strip().splitlines()[-1:]}
    return json.loads(done.stdout)


def show(result):
    def fmt(key):
        value = result.get(key)
        return "" if value is None else f"{value[0]:.3f} ({value[1]:.2f})"
    warm_up = f"  warm-up {fmt('warm_up')}" if "warm_up" in result else ""
    print(f"{result['case']:26s} N={result['n']:>13,}  build {fmt('build'):>16s}  "
          f"first {fmt('first'):>16s}  epoch {fmt('epoch'):>16s}  peak "
          f"{result.get('peak_mb', float('nan')):8.0f} MB  input "
          f"{result.get('input_mb', float('nan')):7.0f} MB{warm_up} {result.get('error', '')}",
          flush=True)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--case")
    parser.add_argument("--n", type=int, default=10**7)
    parser.add_argument("--big", action="store_true")
    parser.add_argument("--only-big", action="store_true")
    parser.add_argument("--classes-per-batch", action="store_true")
    args = parser.parse_args()
    if args.case:
        print(json.dumps(case(args.case, args.n)))
        return
    print("CPU seconds (wall seconds); peak = ru_maxrss of the case's process")
    if args.classes_per_batch:
        for n in (10**6, 10**7):
            for mode in ("proportional", "uniform"):
                for name in (f"cpb_lazy_{mode}", f"cpb_materialised_{mode}"):
                    result = run(name, n)
                    show(result)
                    if "per_batch" in result:
                        cpu, wall = result["per_batch"]
                        print(f"{'':26s} one batch alone: {cpu * 1e3:.3f} ms CPU "
                              f"({wall * 1e3:.3f} ms wall); epoch = one rank of {RANKS} "
                              f"({result['batches']:,} batches); {result['classes']:,} classes")
        return
    n = args.n
    for name in [] if args.only_big else ["permutation", "materialised", "lazy_codes", "lazy_grouped",
                 "permutation_rank", "lazy_codes_rank", "lazy_grouped_rank",
                 "keyed_shuffle_rank", "distributed_sampler_rank"]:
        show(run(name, n))
    if args.big or args.only_big:
        big = 10**9
        for name in ["lazy_grouped_rank", "permutation_rank", "keyed_shuffle_rank",
                     "lazy_codes_rank"]:
            show(run(name, big))


if __name__ == "__main__":
    main()
