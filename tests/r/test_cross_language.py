"""The R package and the Python core give the same batches, errors and warnings.

Each configuration runs through R's ``pystratum::stratified_batches`` (in
embedded R, via ``pystratum.r``) and through the Python core
(``pystratum.stratified_batches``), both with ``rng="R"``, and must give
identical batches after the base shift, or errors of the same class blaming
the same argument, and the same stratum-too-small warning.

Configurations are generated deterministically (numpy Generator, fixed seed):
1-50 strata, 1 to 10^5 rows (mostly small), imbalance up to 1:1000, m from 1
to above the smallest stratum, shuffle on/off, seeds negative, at the int32
limits and beyond them, epochs 0-3, single- and multi-column strata of ints,
doubles, strings, factors (pandas categoricals) and logicals, plus a list of
bad inputs. ``FixedSize``, ``Targets`` and ``Downsample`` have generated
configurations of their own; for the sampling policies the importance
weights (R's ``attr(batches, "weights")``, through ``return_weights=True``)
must be identical too, and bad parameters fail alike in both constructors.

These tests need R, rpy2 and the R package: without them they FAIL with the
install command (CI installs all three). Only the R-torch comparison skips,
with a named reason, when R's torch package is absent.
"""

from __future__ import annotations

import math
import re
import warnings
from dataclasses import dataclass

import numpy as np
import pandas as pd
import pytest

import pystratum
import pystratum.r as pr
from _r_helpers import r_session  # noqa: F401 (fixture)

CONFIG_SEED = 20250906
N_RANDOM_CONFIGS = 400
INT32_MAX = 2**31 - 1


# ---------------------------------------------------------------------------
# Configurations.


@dataclass
class Config:
    id: str
    strata: object
    m: object
    seed: object = None
    epoch: object = 0
    shuffle: object = True
    rng: object = "R"
    describe: str = ""

    def keywords(self):
        return dict(seed=self.seed, rng=self.rng, epoch=self.epoch, shuffle=self.shuffle)


def _stratum_sizes(gen, n_target, n_strata, max_ratio):
    """Sizes with smallest:largest about 1:max_ratio, summing to about n_target."""
    n_strata = max(1, min(n_strata, n_target))
    if n_strata == 1:
        return np.array([n_target])
    exponents = gen.random(n_strata)
    exponents[0], exponents[1] = 0.0, 1.0
    weights = max_ratio ** exponents
    sizes = np.floor(n_target * weights / weights.sum()).astype(np.int64)
    return np.maximum(sizes, 1)


def _row_codes(gen, sizes):
    codes = np.repeat(np.arange(sizes.shape[0]), sizes)
    layout = gen.choice(["shuffled", "blocks", "interleaved"], p=[0.6, 0.25, 0.15])
    if layout == "shuffled":
        gen.shuffle(codes)
    elif layout == "interleaved":
        # Stratum members spread evenly: order rows by rank / size.
        rank = np.concatenate([np.arange(s) / s for s in sizes])
        codes = codes[np.argsort(rank, kind="stable")]
    return codes, str(layout)


def _column_values(gen, kind, cardinality):
    """``cardinality`` distinct labels of one R/pandas kind."""
    if kind == "logical":
        return np.array([False, True])[gen.permutation(2)][:cardinality]
    if kind == "int":
        style = gen.choice(["small", "wide"])
        if style == "small":
            start = int(gen.integers(-20, 20))
            step = int(gen.integers(1, 4))
            values = start + step * np.arange(cardinality)
        else:
            values = gen.choice(np.arange(-INT32_MAX, INT32_MAX, 7919), cardinality,
                                replace=False)
            values[0] = INT32_MAX if gen.random() < 0.5 else -INT32_MAX
            values = np.unique(values)
            while values.shape[0] < cardinality:
                values = np.unique(np.append(values, gen.integers(-INT32_MAX, INT32_MAX)))
        return gen.permutation(values.astype(np.int64))
    if kind == "double":
        return gen.permutation(np.arange(cardinality) * 0.5 - 3.25)
    # "str" and "factor": strings, sometimes empty or non-ASCII.
    alphabet = list("abcdefghijklmnopqrstuvwxyzABC") + ["é", "ß", "日", "_", " ", "-"]
    labels = set()
    if gen.random() < 0.2:
        labels.add("")
    while len(labels) < cardinality:
        length = int(gen.integers(1, 6))
        labels.add("".join(gen.choice(alphabet, length)))
    return np.array(sorted(labels), dtype=object)[gen.permutation(cardinality)]


def _strata_columns(gen, codes, n_strata, n_columns):
    """Columns whose distinct row tuples are exactly the strata in ``codes``."""
    if n_columns == 1:
        cardinalities = [n_strata]
    else:
        side = max(1, math.ceil(n_strata ** (1 / n_columns)))
        cardinalities = [side + int(gen.integers(0, 2)) for _ in range(n_columns)]
        while math.prod(cardinalities) < n_strata:
            cardinalities[int(gen.integers(0, n_columns))] += 1
    cells = gen.choice(math.prod(cardinalities), n_strata, replace=False)
    tuples = np.unravel_index(cells, cardinalities)
    columns, kinds = [], []
    for j, cardinality in enumerate(cardinalities):
        options = ["int", "str", "factor", "double"] + (["logical"] if cardinality <= 2 else [])
        kind = str(gen.choice(options))
        values = _column_values(gen, kind, cardinality)
        row_values = values[tuples[j][codes]]
        if kind == "factor":
            categories = list(values)
            if gen.random() < 0.3:
                categories.append("unused_level")
            categories = [categories[k] for k in gen.permutation(len(categories))]
            row_values = pd.Categorical(row_values, categories=categories,
                                        ordered=bool(gen.random() < 0.2))
        columns.append(row_values)
        kinds.append(kind)
    return columns, kinds


def _wrap(gen, columns, kinds):
    """The container the user would pass: array, list, Series, DataFrame, ..."""
    if len(columns) == 1:
        column = columns[0]
        choice = gen.choice(["as_is", "list", "series", "frame"], p=[0.4, 0.2, 0.2, 0.2])
        if choice == "list" and kinds[0] != "factor":
            return list(column.tolist()), "list"
        if choice == "series":
            return pd.Series(column), "Series"
        if choice == "frame":
            return pd.DataFrame({"y": column}), "DataFrame"
        return column, type(column).__name__
    choice = gen.choice(["frame", "list", "array"], p=[0.7, 0.2, 0.1])
    if choice == "array" and len(set(kinds)) == 1 and kinds[0] in ("int", "str"):
        return np.column_stack(columns), "2-D array"
    if choice == "list":
        # A list of row tuples, read as rows (a list of columns is ambiguous, refused).
        return list(zip(*[np.asarray(c).tolist() for c in columns])), "list of rows"
    names = [f"col{j}" for j in range(len(columns))]
    return pd.DataFrame(dict(zip(names, columns))), "DataFrame"


def _seed(gen):
    kind = gen.choice(["small", "negative", "int32", "limits", "beyond"],
                      p=[0.35, 0.2, 0.3, 0.08, 0.07])
    if kind == "small":
        return int(gen.integers(0, 1000))
    if kind == "negative":
        return -int(gen.integers(1, INT32_MAX))
    if kind == "int32":
        return int(gen.integers(-INT32_MAX, INT32_MAX))
    if kind == "limits":
        return int(gen.choice([INT32_MAX, -INT32_MAX, 0, 1, -1]))
    # R's set.seed() takes signed 32-bit ints only: both sides must refuse these.
    return int(gen.choice([2**31, -(2**31), 3_000_000_000, 2**32 + 5, -(2**33)]))


def random_configs(count=N_RANDOM_CONFIGS, seed=CONFIG_SEED):
    gen = np.random.default_rng(seed)
    configs = []
    for k in range(count):
        bucket = gen.choice(["tiny", "small", "medium", "large"], p=[0.2, 0.6, 0.15, 0.05])
        low, high = {"tiny": (1, 20), "small": (20, 500), "medium": (500, 5000),
                     "large": (10_000, 100_000)}[bucket]
        n_target = int(gen.integers(low, high + 1))
        n_strata = int(gen.integers(1, 6)) if gen.random() < 0.6 else int(gen.integers(1, 51))
        # Up to 1:1000 imbalance; most configurations keep the smallest stratum
        # large enough for several batches, some push it down to one row.
        ceiling = 1000.0 if gen.random() < 0.3 else max(1.0, min(1000.0, n_target / (4 * n_strata)))
        max_ratio = float(np.exp(gen.uniform(0, np.log(ceiling))))
        sizes = _stratum_sizes(gen, n_target, n_strata, max_ratio)
        codes, layout = _row_codes(gen, sizes)
        n_min = int(sizes.min())
        m = int(gen.choice([1, 2, n_min, n_min + 1, int(gen.integers(1, n_min + 1)),
                            int(gen.integers(n_min, 2 * n_min + 3))],
                           p=[0.3, 0.15, 0.1, 0.07, 0.3, 0.08]))
        m = max(m, 1)
        n_columns = int(gen.choice([1, 2, 3], p=[0.6, 0.3, 0.1]))
        columns, kinds = _strata_columns(gen, codes, sizes.shape[0], n_columns)
        strata, container = _wrap(gen, columns, kinds)
        shuffle = bool(gen.random() < 0.85)
        seed = _seed(gen) if shuffle else None
        epoch = int(gen.integers(0, 4))
        if not shuffle:
            epoch = 0  # an epoch has no meaning in row order (an error in both languages)
        describe = (f"N={codes.shape[0]} S={sizes.shape[0]} N_min={n_min} m={m} "
                    f"{layout} {'+'.join(kinds)} as {container} seed={seed} epoch={epoch} "
                    f"shuffle={shuffle}")
        configs.append(Config(
            id=f"c{k:03d}-N{codes.shape[0]}-S{sizes.shape[0]}-{'+'.join(kinds)}",
            strata=strata, m=m, seed=seed, epoch=epoch, shuffle=shuffle, describe=describe,
        ))
    return configs


def edge_configs():
    """Hand-picked corners the random set may only brush."""
    blog = np.repeat(["M", "R"], [111, 12])
    one_to_thousand = np.repeat([1, 0], [1, 1000])
    fifty = np.repeat(np.arange(50), 2000)
    cases = [
        ("one-row", np.array([5]), 1, dict(seed=1)),
        ("one-row-m2", ["x"], 2, dict(seed=1)),
        ("all-singletons", np.arange(30), 1, dict(seed=-5, epoch=3)),
        ("blog-no-shuffle", blog, 1, dict(shuffle=False)),
        ("blog-seed", blog, 1, dict(seed=2024, epoch=1)),
        ("ratio-1-1000", one_to_thousand, 1, dict(seed=INT32_MAX)),
        ("ratio-1-1000-m2", one_to_thousand, 2, dict(seed=-INT32_MAX)),
        ("fifty-strata-100k", fifty, 7, dict(seed=123, epoch=2)),
        ("fifty-strata-100k-m1", pd.Categorical(fifty.astype(str)), 1, dict(seed=9)),
        ("float-rounding-3-187", np.repeat([0, 1], [3, 187]), 1, dict(shuffle=False)),
        ("bool-column", np.tile([True, False, False], 40), 4, dict(seed=0)),
        ("m-equals-n-min", np.repeat(["a", "b"], [10, 25]), 10, dict(seed=11)),
        ("m-above-n-min", np.repeat(["a", "b"], [10, 25]), 11, dict(seed=11)),
    ]
    return [Config(id=f"edge-{name}", strata=strata, m=m, describe=f"{name} {kw!r}",
                   **{"seed": None, "epoch": 0, "shuffle": True, **kw})
            for name, strata, m, kw in cases]


def bad_input_configs():
    """Inputs that are wrong in both languages: same error class, same argument."""
    small = np.array([0, 1, 0, 1, 1, 0, 2, 2, 2])
    labels = ["a", "b", "a", "b", "b", "a", "c", "c", "c"]
    cases = {
        "m-zero": dict(m=0),
        "m-negative": dict(m=-3),
        "m-fraction": dict(m=2.5),
        "m-infinite": dict(m=math.inf),
        "m-nan": dict(m=math.nan),
        "m-string": dict(m="2"),
        "m-bool": dict(m=True),
        "m-none": dict(m=None),
        "m-vector": dict(m=[1, 2]),
        "epoch-negative": dict(epoch=-1),
        "epoch-fraction": dict(epoch=1.5),
        "epoch-string": dict(epoch="0"),
        "epoch-bool": dict(epoch=True),
        "epoch-none": dict(epoch=None),
        "shuffle-string": dict(shuffle="yes"),
        "shuffle-int": dict(shuffle=1),
        "shuffle-none": dict(shuffle=None),
        "shuffle-vector": dict(shuffle=[True, False]),
        "seed-fraction": dict(seed=2.5),
        "seed-string": dict(seed="1"),
        "seed-nan": dict(seed=math.nan),
        "epoch-nan": dict(epoch=math.nan),
        "seed-bool": dict(seed=True),
        "seed-vector": dict(seed=[1, 2]),
        "seed-2^31": dict(seed=2**31),
        "seed--2^31": dict(seed=-(2**31)),
        "seed-3e9": dict(seed=3_000_000_000),
        "seed-2^32+5": dict(seed=2**32 + 5),
        "seed-with-shuffle-false": dict(seed=1, shuffle=False),
        "rng-unknown": dict(rng="python"),
        "rng-lowercase": dict(rng="r"),
        "rng-int": dict(rng=1),
        "strata-none": dict(strata=None),
        "strata-empty-list": dict(strata=[]),
        "strata-empty-array": dict(strata=np.array([], dtype=np.int64)),
        "strata-zero-columns": dict(strata=pd.DataFrame(index=range(4))),
        "strata-empty-strings": dict(strata=np.array([], dtype=str)),
        "m-zero-and-seed-fraction": dict(m=0, seed=2.5),
        "strata-empty-and-seed-fraction": dict(strata=[], seed=2.5),
        "strata-empty-and-epoch-negative": dict(strata=[], epoch=-1),
    }
    configs = []
    for k, (name, changes) in enumerate(cases.items()):
        base = dict(strata=small if k % 2 else labels, m=1, seed=7, epoch=0, shuffle=True,
                    rng="R")
        base.update(changes)
        configs.append(Config(id=f"bad-{name}", describe=f"{changes!r}", **base))
    return configs


def fixed_size_configs(count=60, seed=CONFIG_SEED + 1):
    """FixedSize on generated strata: batch sizes from tiny (infeasible: same error) to huge."""
    gen = np.random.default_rng(seed)
    configs = []
    for k in range(count):
        n_strata = int(gen.integers(1, 8))
        sizes = _stratum_sizes(gen, int(gen.integers(2, 3000)), n_strata,
                               float(np.exp(gen.uniform(0, np.log(200)))))
        codes, layout = _row_codes(gen, sizes)
        n_rows, n_min = int(codes.shape[0]), int(sizes.min())
        minimum = int(gen.choice([1, 1, 2, 3]))
        # The smallest feasible batch size (FixedSize's error message states the same rule).
        most_batches = max(1, n_min // minimum)
        smallest_size = 2 * n_rows // (2 * most_batches + 1) + 1
        batch_size = int(gen.choice([1, smallest_size - 1, smallest_size,
                                     smallest_size + int(gen.integers(0, 50)),
                                     int(gen.integers(1, 2 * n_rows + 2))],
                                    p=[0.1, 0.1, 0.3, 0.3, 0.2]))
        batch_size = max(1, batch_size)
        columns, kinds = _strata_columns(gen, codes, sizes.shape[0], int(gen.choice([1, 2])))
        strata, container = _wrap(gen, columns, kinds)
        shuffle = bool(gen.random() < 0.85)
        seed_value = _seed(gen) if shuffle else None
        epoch = int(gen.integers(0, 6)) if shuffle else 0
        policy = pystratum.FixedSize(batch_size, minimum)
        configs.append(Config(
            id=f"fixed{k:02d}-N{n_rows}-S{sizes.shape[0]}-b{batch_size}-min{minimum}",
            strata=strata, m=policy, seed=seed_value, epoch=epoch, shuffle=shuffle,
            describe=f"N={n_rows} S={sizes.shape[0]} {layout} {policy!r} {container} "
                     f"seed={seed_value} epoch={epoch}"))
    return configs


def _stratum_labels(strata):
    """The core's labels of ``strata`` (tuples for several columns), in code order."""
    from pystratum.strata._encode import encode_strata

    return list(encode_strata(strata).labels)


def _random_shares(gen, labels):
    """A shares dict over ``labels`` (some 0, adding up to 1), or ``"balanced"``."""
    from pystratum.strata._labels import label_key

    # An empty label cannot name an element of an R list: the bindings refuse
    # it (tests/r/test_r_bindings.py), so generated dicts avoid it.
    if gen.random() < 0.35 or "" in [label_key(label) for label in labels]:
        return "balanced"
    weights = gen.integers(1, 20, len(labels)).astype(np.float64)
    if len(labels) > 1 and gen.random() < 0.3:
        weights[int(gen.integers(0, len(labels)))] = 0.0
    shares = weights / weights.sum()
    # Keys as the labels themselves (int, str, bool, float, tuple): both sides
    # match them by their text.
    return {label: float(share) for label, share in zip(labels, shares)}


def _random_sampling_policy(gen, labels, sizes, kind):
    positive_max = len(labels)
    batch_size = int(gen.choice([max(1, positive_max - 1), positive_max,
                                 positive_max + int(gen.integers(0, 30)),
                                 int(gen.integers(1, 120))], p=[0.1, 0.2, 0.4, 0.3]))
    epoch = gen.choice(["largest", "smallest", "int"], p=[0.45, 0.35, 0.2])
    epoch = int(gen.integers(1, 12)) if epoch == "int" else str(epoch)
    def targets(shares):
        # A dict's too-small batch_size fails in the constructor (compared in
        # test_same_errors_as_r_for_bad_sampling_parameters); "balanced" fails
        # at allocation, which both sides must do alike.
        if shares != "balanced":
            batch_size_ok = max(batch_size, sum(share > 0 for share in shares.values()))
            return pystratum.policies.Targets(shares, batch_size_ok, epoch)
        return pystratum.policies.Targets(shares, batch_size, epoch)

    if kind == "targets":
        return targets(_random_shares(gen, labels))
    from pystratum.strata._labels import label_key

    nameable = [k for k, label in enumerate(labels) if label_key(label) != ""]
    if not nameable:
        return pystratum.policies.Targets("balanced", batch_size, epoch)
    chosen = gen.choice(nameable, int(gen.integers(1, len(nameable) + 1)), replace=False)
    keep = {labels[int(k)]: float(gen.choice([1.0, 0.5, 0.05, 0.3333, float(gen.uniform(0.01, 1))]))
            for k in chosen}
    base = gen.choice(["int", "fixed", "targets"])
    if base == "int":
        base = int(gen.integers(1, 4))
    elif base == "fixed":
        base = pystratum.FixedSize(int(gen.integers(1, 4 * positive_max + 40)))
    else:
        base = targets("balanced" if gen.random() < 0.5 else _random_shares(gen, labels))
    return pystratum.policies.Downsample(keep, base)


def sampling_configs(count=70, seed=CONFIG_SEED + 2):
    """Targets and Downsample on generated strata: shares, batch sizes, epoch modes, keeps."""
    gen = np.random.default_rng(seed)
    configs = []
    for k in range(count):
        kind = "targets" if k % 2 == 0 else "downsample"
        n_strata = int(gen.integers(1, 6))
        sizes = _stratum_sizes(gen, int(gen.integers(2, 1500)), n_strata,
                               float(np.exp(gen.uniform(0, np.log(100)))))
        codes, layout = _row_codes(gen, sizes)
        columns, kinds = _strata_columns(gen, codes, sizes.shape[0], int(gen.choice([1, 1, 2])))
        strata, container = _wrap(gen, columns, kinds)
        labels = _stratum_labels(strata)
        policy = _random_sampling_policy(gen, labels, sizes, kind)
        shuffle = bool(gen.random() < 0.9)
        seed_value = (_seed(gen) if gen.random() < 0.9 else int(gen.integers(0, 100))) \
            if shuffle else None
        epoch = int(gen.integers(0, 4)) if shuffle else 0
        configs.append(Config(
            id=f"{kind}{k:02d}-N{codes.shape[0]}-S{sizes.shape[0]}-{'+'.join(kinds)}",
            strata=strata, m=policy, seed=seed_value, epoch=epoch, shuffle=shuffle,
            describe=f"N={codes.shape[0]} S={sizes.shape[0]} {layout} {'+'.join(kinds)} "
                     f"{policy!r} {container} seed={seed_value} epoch={epoch}"))
    return configs


def sampling_edge_configs():
    """Hand-picked Targets/Downsample cases, good and bad (same batches or same error)."""
    Targets, Downsample = pystratum.policies.Targets, pystratum.policies.Downsample
    binary = np.repeat([1, 0], [30, 970])
    labels = np.repeat(["pos", "neg", "mid"], [12, 300, 40])
    flags = np.tile([True, False, False, False], 50)
    cases = [
        ("dual-sampler", binary, Targets({1: 0.5, 0: 0.5}, 64), dict(seed=1, epoch=2)),
        ("balanced-str", labels, Targets("balanced", 9), dict(seed=-4)),
        ("balanced-bool", flags, Targets("balanced", 4, epoch="smallest"), dict(seed=8)),
        ("bool-keys", flags, Targets({True: 0.25, False: 0.75}, 8), dict(seed=3)),
        ("zero-share", labels, Targets({"pos": 0.5, "neg": 0.5, "mid": 0}, 10), dict(seed=5)),
        ("int-epoch", labels, Targets("balanced", 6, epoch=40), dict(seed=6, epoch=3)),
        ("no-shuffle", labels, Targets("balanced", 6), dict(shuffle=False)),
        ("downsample-neg", binary, Downsample({0: 0.1}, Targets({1: 0.5, 0: 0.5}, 20)),
         dict(seed=2, epoch=1)),
        ("downsample-fixed", labels, Downsample({"neg": 0.2}, pystratum.FixedSize(25)),
         dict(seed=9)),
        ("downsample-int", labels, Downsample({"neg": 0.05, "mid": 0.5}, 2), dict(seed=10)),
        ("two-columns",
         pd.DataFrame({"y": np.tile([0, 1], 60), "g": np.repeat(["a", "b", "c"], 40)}),
         Targets({(0, "a"): 0.1, (1, "a"): 0.2, (0, "b"): 0.2, (1, "b"): 0.2, (0, "c"): 0.15,
                  (1, "c"): 0.15}, 12), dict(seed=11)),
        # Wrong in both languages, found once the strata are known.
        ("bad-unknown-label", labels, Targets({"pos": 0.5, "nope": 0.5}, 10), dict(seed=1)),
        ("bad-missing-label", labels, Targets({"pos": 0.5, "neg": 0.5}, 10), dict(seed=1)),
        ("bad-balanced-too-small", labels, Targets("balanced", 2), dict(seed=1)),
        ("bad-smallest-empty", labels, Targets("balanced", 90, epoch="smallest"), dict(seed=1)),
        ("bad-keep-unknown", labels, Downsample({"zzz": 0.5}, 1), dict(seed=1)),
        ("bad-keep-int-vs-str", binary, Downsample({"one": 0.5}, 1), dict(seed=1)),
        ("bad-seed-beyond", binary, Targets("balanced", 4), dict(seed=2**31)),
        ("bad-epoch-no-shuffle", binary, Targets("balanced", 4), dict(shuffle=False, epoch=1)),
    ]
    return [Config(id=f"sampling-{name}", strata=strata, m=policy, describe=f"{policy!r} {kw!r}",
                   **{"seed": None, "epoch": 0, "shuffle": True, **kw})
            for name, strata, policy, kw in cases]


RANDOM_CONFIGS = random_configs()
FIXED_SIZE_CONFIGS = fixed_size_configs()
SAMPLING_CONFIGS = sampling_configs() + sampling_edge_configs()
EDGE_CONFIGS = edge_configs()
BAD_CONFIGS = bad_input_configs()


# ---------------------------------------------------------------------------
# Running both sides.


@dataclass
class Outcome:
    batches: list | None = None
    weights: list | None = None
    error: type | None = None
    argument: str | None = None
    message: str = ""
    too_small: bool = False
    other_warnings: tuple = ()


def _leading_name(message: str):
    match = re.match(r"\s*([A-Za-z_][A-Za-z0-9_]*)", message)
    return match.group(1) if match else None


def run(function, config, *, from_r):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            batches = function(config.strata, config.m, **config.keywords())
            weights = None
            if isinstance(batches, tuple):
                batches, weights = batches
            outcome = Outcome(batches=batches, weights=weights)
        except (TypeError, ValueError) as error:
            # R's errors carry the argument; the core's messages start with it.
            argument = getattr(error, "argument", None) if from_r else _leading_name(str(error))
            outcome = Outcome(error=type(error), argument=argument, message=str(error))
    outcome.too_small = any(issubclass(w.category, pystratum.StratumTooSmallWarning)
                            for w in caught)
    outcome.other_warnings = tuple(
        f"{w.category.__name__}: {w.message}" for w in caught
        if not issubclass(w.category, pystratum.StratumTooSmallWarning)
    )
    return outcome


def assert_same(config, r_side, py_side):
    where = f"[{config.id}: {config.describe}]"
    if r_side.error or py_side.error:
        assert r_side.error is py_side.error and r_side.argument == py_side.argument, (
            f"{where} different errors:\n  R:      "
            f"{getattr(r_side.error, '__name__', None)} (argument {r_side.argument!r}) "
            f"{r_side.message}\n  Python: {getattr(py_side.error, '__name__', None)} "
            f"(argument {py_side.argument!r}) {py_side.message}"
        )
    else:
        r_sizes = [b.shape[0] for b in r_side.batches]
        py_sizes = [b.shape[0] for b in py_side.batches]
        assert r_sizes == py_sizes, f"{where} batch sizes differ: R {r_sizes[:10]}..., " \
                                    f"Python {py_sizes[:10]}..."
        r_flat = np.concatenate(r_side.batches) if r_sizes else np.empty(0, np.int64)
        py_flat = np.concatenate(py_side.batches) if py_sizes else np.empty(0, np.int64)
        if not np.array_equal(r_flat, py_flat):
            first = int(np.argmax(r_flat != py_flat))
            pytest.fail(f"{where} batches differ first at flat position {first}: "
                        f"R {r_flat[first:first + 5]}, Python {py_flat[first:first + 5]}")
        for batch in r_side.batches:
            assert batch.dtype == np.int64
        assert (r_side.weights is None) == (py_side.weights is None), (
            f"{where} weights: R {r_side.weights is not None}, Python "
            f"{py_side.weights is not None}")
        if r_side.weights is not None:
            r_weights, py_weights = np.concatenate(r_side.weights), np.concatenate(py_side.weights)
            assert [w.shape[0] for w in r_side.weights] == r_sizes
            # Both divide the same two doubles (N_s / k_s): equal to the last bit.
            np.testing.assert_array_equal(r_weights, py_weights, err_msg=where)
    assert r_side.too_small == py_side.too_small, (
        f"{where} stratum-too-small warning: R {r_side.too_small}, Python {py_side.too_small}"
    )
    assert not r_side.other_warnings, f"{where} R warned: {r_side.other_warnings}"


@pytest.mark.parametrize("config", RANDOM_CONFIGS + EDGE_CONFIGS,
                         ids=[c.id for c in RANDOM_CONFIGS + EDGE_CONFIGS])
def test_same_batches_as_r(r_session, config):
    r_side = run(pr.stratified_batches, config, from_r=True)
    py_side = run(pystratum.stratified_batches, config, from_r=False)
    assert_same(config, r_side, py_side)


@pytest.mark.parametrize("config", FIXED_SIZE_CONFIGS, ids=[c.id for c in FIXED_SIZE_CONFIGS])
def test_same_fixed_size_batches_as_r(r_session, config):
    r_side = run(pr.stratified_batches, config, from_r=True)
    py_side = run(pystratum.stratified_batches, config, from_r=False)
    assert_same(config, r_side, py_side)


def test_fixed_size_configurations_reach_both_outcomes():
    outcomes = [run(pystratum.stratified_batches, c, from_r=False) for c in FIXED_SIZE_CONFIGS]
    assert sum(o.error is not None for o in outcomes) >= 5
    assert sum(o.error is None and len(o.batches) > 1 for o in outcomes) >= 30


def _r_with_weights(strata, policy, **keywords):
    return pr.stratified_batches(strata, policy, return_weights=True, **keywords)


def _core_with_weights(strata, policy, **keywords):
    plan = pystratum.plan_batches(strata, policy, **keywords)
    weights = None if plan.weights is None else [plan.batch_weights(b) for b in range(len(plan))]
    return plan.batches, weights


@pytest.mark.parametrize("config", SAMPLING_CONFIGS, ids=[c.id for c in SAMPLING_CONFIGS])
def test_same_sampling_batches_and_weights_as_r(r_session, config):
    r_side = run(_r_with_weights, config, from_r=True)
    py_side = run(_core_with_weights, config, from_r=False)
    assert_same(config, r_side, py_side)


def test_sampling_configurations_reach_every_outcome():
    """The generated Targets/Downsample set is not all errors (guards the generator)."""
    outcomes = {c.id: run(_core_with_weights, c, from_r=False) for c in SAMPLING_CONFIGS}
    good = [i for i, o in outcomes.items() if o.error is None]
    assert sum(i.startswith("targets") for i in good) >= 20
    assert sum(i.startswith("downsample") for i in good) >= 20
    assert sum(outcomes[i].weights is not None for i in good) >= 20
    assert sum(o.error is not None for o in outcomes.values()) >= 8
    assert all(outcomes[i].error is not None for i in outcomes if i.startswith("sampling-bad"))
    text = " ".join(c.describe for c in SAMPLING_CONFIGS)
    for needle in ("'largest'", "'smallest'", "epoch=3", "'balanced'", "'TRUE'", "shuffle",
                   "fixed_size", "min_per_stratum", "'targets'"):
        assert needle in text, needle


@pytest.mark.parametrize("config", BAD_CONFIGS, ids=[c.id for c in BAD_CONFIGS])
def test_same_errors_as_r(r_session, config):
    r_side = run(pr.stratified_batches, config, from_r=True)
    py_side = run(pystratum.stratified_batches, config, from_r=False)
    assert r_side.error is not None or py_side.error is not None, (
        f"[{config.id}] neither side rejected {config.describe}"
    )
    assert_same(config, r_side, py_side)


def assert_same_constructor_error(r_session, r_call, py_error):
    """The R call ``policy_x(arguments)`` fails with ``py_error``'s class, blaming its argument."""
    from pystratum.r._conditions import raise_r_conditions

    function, arguments = r_call.split("(", 1)
    with r_session.calling():
        outcome = r_session.ro.r(
            f"pystratum:::bridge_call_capturing(pystratum::{function}, list({arguments[:-1]}))")
        with pytest.raises((TypeError, ValueError)) as r_error:
            raise_r_conditions(outcome, stacklevel=1)
    assert type(r_error.value) is type(py_error), (r_error.value, py_error)
    assert r_error.value.argument == _leading_name(str(py_error)), (r_error.value, py_error)


# Bad policy parameters: the Python constructor and the R constructor refuse
# them with the same error class blaming the same argument. (A whole float such
# as 2.0 is left out: R has no int/float distinction, so R's 2 is valid.)
POLICY_BAD_VALUES = [
    ("zero", 0, "0"), ("negative", -3, "-3"), ("negative-int64", np.int64(-1), "-1L"),
    ("fraction", 2.5, "2.5"), ("infinite", math.inf, "Inf"), ("minus-infinite", -math.inf, "-Inf"),
    ("nan", math.nan, "NaN"), ("string", "2", "'2'"), ("bool", True, "TRUE"), ("none", None, "NULL"),
    ("vector", [1, 2], "c(1, 2)"), ("minus-2^31", -(2**31), "-2^31"),
]
POLICY_CONSTRUCTORS = [  # (Python class, R constructor, parameter, other arguments)
    (pystratum.FixedSize, "policy_fixed_size", "batch_size", {}),
    (pystratum.FixedSize, "policy_fixed_size", "min_per_stratum", {"batch_size": 4}),
    (pystratum.MinPerStratum, "policy_min_per_stratum", "m", {}),
]


@pytest.mark.parametrize("constructor", POLICY_CONSTRUCTORS,
                         ids=[f"{c[1]}-{c[2]}" for c in POLICY_CONSTRUCTORS])
@pytest.mark.parametrize("case", POLICY_BAD_VALUES, ids=[c[0] for c in POLICY_BAD_VALUES])
def test_same_errors_as_r_for_bad_policy_parameters(r_session, constructor, case):
    py_class, r_name, parameter, others = constructor
    _, value, r_literal = case
    with pytest.raises((TypeError, ValueError)) as py_error:
        py_class(**others, **{parameter: value})
    r_arguments = ", ".join([f"{k} = {v}" for k, v in others.items()]
                            + [f"{parameter} = {r_literal}"])
    assert_same_constructor_error(r_session, f"{r_name}({r_arguments})", py_error.value)


# Bad Targets/Downsample parameters (refused by the constructors): (id, Python
# call, R call), same error class and blamed argument.
SAMPLING_BAD_PARAMETERS = [
    ("shares-negative", lambda T, D: T({"a": -0.5, "b": 1.5}, 4),
     "policy_targets(c(a = -0.5, b = 1.5), 4)"),
    ("shares-sum", lambda T, D: T({"a": 0.3, "b": 0.3}, 4),
     "policy_targets(c(a = 0.3, b = 0.3), 4)"),
    ("shares-number", lambda T, D: T(5, 4), "policy_targets(5, 4)"),
    ("shares-word", lambda T, D: T("uniform", 4), "policy_targets('uniform', 4)"),
    ("shares-empty", lambda T, D: T({}, 4), "policy_targets(list(), 4)"),
    ("shares-text-value", lambda T, D: T({"a": "1"}, 4), "policy_targets(list(a = '1'), 4)"),
    ("shares-nan", lambda T, D: T({"a": math.nan, "b": 1}, 4),
     "policy_targets(c(a = NaN, b = 1), 4)"),
    ("shares-below-resolution", lambda T, D: T({"a": 1e-8, "b": 1 - 1e-8}, 4),
     "policy_targets(c(a = 1e-8, b = 1 - 1e-8), 4)"),
    ("shares-twice", lambda T, D: T({1: 0.5, "1": 0.5}, 4),
     "policy_targets(setNames(c(0.5, 0.5), c('1', '1')), 4)"),
    ("batch-size-below-strata", lambda T, D: T({"a": 0.5, "b": 0.5}, 1),
     "policy_targets(c(a = 0.5, b = 0.5), 1)"),
    ("batch-size-zero", lambda T, D: T("balanced", 0), "policy_targets('balanced', 0)"),
    ("batch-size-fraction", lambda T, D: T("balanced", 2.5), "policy_targets('balanced', 2.5)"),
    ("batch-size-text", lambda T, D: T("balanced", "2"), "policy_targets('balanced', '2')"),
    ("epoch-word", lambda T, D: T("balanced", 4, "biggest"),
     "policy_targets('balanced', 4, 'biggest')"),
    ("epoch-zero", lambda T, D: T("balanced", 4, 0), "policy_targets('balanced', 4, 0)"),
    ("epoch-fraction", lambda T, D: T("balanced", 4, 1.5), "policy_targets('balanced', 4, 1.5)"),
    ("keep-zero", lambda T, D: D({"a": 0}, 1), "policy_downsample(c(a = 0), 1)"),
    ("keep-above-one", lambda T, D: D({"a": 1.5}, 1), "policy_downsample(c(a = 1.5), 1)"),
    ("keep-negative", lambda T, D: D({"a": -0.1}, 1), "policy_downsample(c(a = -0.1), 1)"),
    ("keep-nan", lambda T, D: D({"a": math.nan}, 1), "policy_downsample(c(a = NaN), 1)"),
    ("keep-empty", lambda T, D: D({}, 1), "policy_downsample(list(), 1)"),
    ("keep-unnamed", lambda T, D: D([0.5], 1), "policy_downsample(0.5, 1)"),
    ("keep-text-value", lambda T, D: D({"a": "x"}, 1), "policy_downsample(list(a = 'x'), 1)"),
    ("base-zero", lambda T, D: D({"a": 0.5}, 0), "policy_downsample(c(a = 0.5), 0)"),
]


@pytest.mark.parametrize("case", SAMPLING_BAD_PARAMETERS,
                         ids=[c[0] for c in SAMPLING_BAD_PARAMETERS])
def test_same_errors_as_r_for_bad_sampling_parameters(r_session, case):
    _, python_call, r_call = case
    with pytest.raises((TypeError, ValueError)) as py_error:
        python_call(pystratum.policies.Targets, pystratum.policies.Downsample)
    assert_same_constructor_error(r_session, r_call, py_error.value)


def test_configurations_cover_the_brief():
    """The generated set spans what the comparison promises (guards the generator)."""
    configs = RANDOM_CONFIGS
    assert len(configs) + len(EDGE_CONFIGS) + len(BAD_CONFIGS) >= 300
    text = " ".join(c.describe for c in configs)
    n_strata = [int(re.search(r"S=(\d+)", c.describe).group(1)) for c in configs]
    n_rows = [int(re.search(r"N=(\d+)", c.describe).group(1)) for c in configs]
    assert min(n_strata) == 1 and max(n_strata) >= 40
    assert min(n_rows) <= 3 and max(n_rows) >= 50_000
    assert sum(n <= 500 for n in n_rows) > len(configs) / 2
    for needle in ("int", "str", "factor", "logical", "double", "DataFrame", "list of rows",
                   "shuffle=False", "epoch=3"):
        assert needle in text, needle
    seeds = [c.seed for c in configs if c.seed is not None]
    assert min(seeds) < 0 and max(seeds) > INT32_MAX
    assert any(c.m > int(re.search(r"N_min=(\d+)", c.describe).group(1)) for c in configs)
    assert any(int(re.search(r"N_min=(\d+)", c.describe).group(1)) * 500
               <= int(re.search(r"N=(\d+)", c.describe).group(1)) for c in configs)


def test_r_leaves_the_session_random_seed_alone(r_session):
    ro = r_session.ro
    with r_session.localconverter(r_session.converter):
        ro.r("set.seed(99); invisible(runif(1))")
        before = np.asarray(ro.r(".Random.seed"))
        pr.stratified_batches(["a", "b"] * 50, 3, seed=5, epoch=2, rng="R")
        after = np.asarray(ro.r(".Random.seed"))
    np.testing.assert_array_equal(before, after)


def test_consecutive_epochs_continue_one_stream(r_session):
    """Epoch k is the (k+1)-th sample(N) after set.seed(seed), in R itself too."""
    strata = np.repeat([0, 1, 2], [30, 20, 10])
    ro = r_session.ro
    with r_session.localconverter(r_session.converter):
        draws = ro.r("function(seed, n) { set.seed(seed); lapply(1:4, function(k) sample(n)) }")(
            -123456, len(strata))
        permutations = [np.asarray(d, dtype=np.int64) - 1 for d in draws]
    stream = pystratum.RStream(-123456)
    for epoch, permutation in enumerate(permutations):
        np.testing.assert_array_equal(stream.permutation(len(strata)), permutation)
        r_batches = pr.stratified_batches(strata, 5, seed=-123456, epoch=epoch, rng="R")
        py_batches = pystratum.stratified_batches(strata, 5, seed=-123456, epoch=epoch, rng="R")
        assert len(r_batches) == len(py_batches) == 2
        for r_batch, py_batch in zip(r_batches, py_batches):
            np.testing.assert_array_equal(r_batch, py_batch)


# ---------------------------------------------------------------------------
# rng="torch": R torch against PyTorch.

TORCH_CONFIGS = [
    (np.repeat([0, 1], [111, 12]), 1, 7),
    (np.repeat(["a", "b", "c"], [500, 50, 5]), 2, 2024),
    (np.tile([True, False, False], 700), 10, 0),
]


@pytest.mark.parametrize("strata,m,seed", TORCH_CONFIGS, ids=["two", "three", "logical"])
def test_same_batches_as_r_torch(r_session, strata, m, seed):
    # pystratum.r runs R torch in its own Rscript: this process holds PyTorch,
    # whose libtorch cannot share it (tests/r/test_r_torch_process.py).
    if not pr.r_package_available("torch"):
        pytest.skip("the 'torch' R package is not installed (no registry here provides it)")
    for epoch in range(3):
        r_batches = pr.stratified_batches(strata, m, seed=seed, rng="torch", epoch=epoch)
        py_batches = pystratum.stratified_batches(strata, m, seed=seed, rng="torch", epoch=epoch)
        assert len(r_batches) == len(py_batches)
        for r_batch, py_batch in zip(r_batches, py_batches):
            np.testing.assert_array_equal(r_batch, py_batch)
