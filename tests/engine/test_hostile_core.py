"""Hostile inputs for every public entry point of the Python core.

Hypothesis generates what a careless or adversarial user passes: every dtype
(int8..uint64, float16..float64, complex, bool, datetime64/timedelta64 with
NaT, objects, strings with NULs and lone surrogates, bytes), every container
(list, tuple, dict, generator, iterator, set, np.matrix, masked arrays,
pandas Series/DataFrame/Categorical with None/NaN/pd.NA/NaT, torch tensors),
shapes 0-d to 3-D and ragged, extreme values (+-2**63, +-inf, 1e19), and bad
seeds, epochs, m, rng and shuffle values. Each input must get either

* a correct result: every row in exactly one batch, at least m rows of every
  stratum per batch when the smallest stratum allows it, the batches of the
  reference algorithm on the stream's permutation, and strata equal to the
  partition a plain-Python encoder computes with ``==`` alone; or
* a TypeError/ValueError (IndexError for an index out of range) whose
  message names the argument and says what to do.

Which of the two is required is decided by an oracle written from the
documented contract (docs/INPUTS.md), independently of the implementation.

CI runs a bounded, derandomised slice (see tests/conftest.py); a longer run:

    PYSTRATUM_HOSTILE_EXAMPLES=20000 python -m pytest tests/engine/test_hostile_core.py -s

(``-s`` prints the outcome counts per entry point at the end).
"""

import math
import os
import re
import warnings
from collections import Counter

import numpy as np
import pandas as pd
import pytest
import torch
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from pystratum import RStream, StratumTooSmallWarning, plan_batches, stratified_batches
from pystratum.strata._encode import encode_strata

EXAMPLES = int(os.environ.get("PYSTRATUM_HOSTILE_EXAMPLES", "0"))


def budget(ci_examples: int):
    """``ci_examples`` by default; PYSTRATUM_HOSTILE_EXAMPLES scales it for a longer run
    (20000 gives the biggest test 20000 examples and the others proportionally)."""
    scaled = EXAMPLES * ci_examples // 400 if EXAMPLES else ci_examples
    return settings(max_examples=max(scaled, 1),
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much,
                                           HealthCheck.data_too_large])


OUTCOMES = Counter()  # (entry point, outcome) -> inputs
INPUT_KINDS = Counter()  # container or argument kind -> inputs


@pytest.fixture(scope="module", autouse=True)
def report_outcomes():
    yield
    total = sum(OUTCOMES.values())
    print(f"\nhostile core inputs tried: {total}")
    for (entry, outcome), count in sorted(OUTCOMES.items()):
        print(f"  {entry:24s} {outcome:12s} {count}")
    print("  input kinds: " + ", ".join(f"{k} {v}" for k, v in sorted(INPUT_KINDS.items())))


# Words of a message that says what to do (every message of the core has one).
FIX_WORDS = ("pass", "use", "leave", "set ", "fill", "drop", "lower", "reshape", "give", "pick",
             "must", "iterate", "reuse")


def assert_actionable(error, names):
    """The error is a TypeError/ValueError/IndexError naming one of ``names``, with a fix."""
    assert isinstance(error, (TypeError, ValueError, IndexError)), repr(error)
    message = str(error)
    assert any(re.search(rf"(?<![A-Za-z_]){re.escape(name)}(?![A-Za-z_])", message)
               for name in names), f"message names none of {names}: {message}"
    assert any(word in message.lower() for word in FIX_WORDS), f"no fix in: {message}"


def call(entry, function, *args, **kwargs):
    """Run ``function``; return ("ok", result) or ("error", exception) and count the outcome.

    Plans are called with ``allow_single_batch=True``: hostile inputs often make one batch,
    and the single-batch guard has its own tests (tests/engine/test_single_batch.py).
    """
    if function in (stratified_batches, plan_batches):
        kwargs.setdefault("allow_single_batch", True)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", StratumTooSmallWarning)
        warnings.simplefilter("ignore", PendingDeprecationWarning)  # np.matrix
        try:
            result = function(*args, **kwargs)
        except (TypeError, ValueError, IndexError) as error:
            OUTCOMES[entry, type(error).__name__] += 1
            return "error", error
    OUTCOMES[entry, "result"] += 1
    return "ok", result


# --- the plain-Python reference -------------------------------------------------------------------


def is_missing(value) -> bool:
    if value is None or value is pd.NA or value is pd.NaT or value is np.ma.masked:
        return True
    if isinstance(value, (np.datetime64, np.timedelta64)):
        return bool(np.isnat(value))
    try:
        return bool(value != value)  # NaN (also inside complex numbers)
    except (TypeError, ValueError):
        return False


def equal(a, b) -> bool:
    try:
        return bool(a == b)
    except (TypeError, ValueError):
        return False


def reference_codes(rows):
    """One code per row, rows equal (``==`` on every value) sharing one; no hashing, no sorting."""
    representatives, codes = [], []
    for row in rows:
        for code, rep in enumerate(representatives):
            if all(equal(a, b) for a, b in zip(row, rep)):
                codes.append(code)
                break
        else:
            codes.append(len(representatives))
            representatives.append(row)
    return codes


def same_partition(codes_a, codes_b) -> bool:
    pairs = set(zip(codes_a, codes_b))
    return len(pairs) == len(set(codes_a)) == len(set(codes_b))


def reference_batches(codes, permutation, m):
    """REFERENCE.md section 1 as a loop (exact integer ceil)."""
    sizes = Counter(codes)
    num_batches = max(1, min(sizes.values()) // m)
    seen = Counter()
    batches = [[] for _ in range(num_batches)]
    for row in permutation:
        s = codes[row]
        seen[s] += 1
        batches[(seen[s] * num_batches + sizes[s] - 1) // sizes[s] - 1].append(int(row))
    return batches


def reference_permutation(n, rng, seed, epoch):
    if rng == "numpy":
        from pystratum.streams._base import NumpyStream

        return NumpyStream(seed).permutation(n, epoch)
    if rng == "R":
        stream = RStream(seed)
        for _ in range(epoch):
            stream.permutation(n)
        return stream.permutation(n)
    generator = torch.Generator()
    generator.manual_seed(seed)
    for _ in range(epoch):
        torch.randperm(n, generator=generator)
    return torch.randperm(n, generator=generator).numpy()


def check_batches(batches, codes, m):
    """Invariants against the reference partition ``codes``."""
    rows = np.concatenate(batches) if batches else np.empty(0, dtype=np.int64)
    assert sorted(rows.tolist()) == list(range(len(codes))), "not every row exactly once"
    sizes = Counter(codes)
    n_min = min(sizes.values())
    if n_min >= m:
        assert len(batches) == n_min // m
        for batch in batches:
            in_batch = Counter(codes[int(r)] for r in batch)
            assert all(in_batch[s] >= m for s in sizes), "a batch lacks a stratum"
    else:
        assert len(batches) == 1


# --- hostile values ------------------------------------------------------------------------------

INT_EXTREMES = [2**63 - 1, -(2**63), 2**63, 2**64 - 1, 2**53, 2**53 + 1, -(2**53) - 1, 2**70,
                127, -128, 255, 32767, -32768, 65535]
FLOAT_EXTREMES = [0.0, -0.0, 1.0, 1.5, 1e19, 2e19, -1e19, math.inf, -math.inf, 2.0**53,
                  2.0**53 + 2, 2.0**63, 2.0**64, 1e308, 5e-324, 65504.0, 70000.0]
STRING_EXTREMES = ["a", "a\x00", "\x00", "", "\ud800", "é", "0", "1", "NA", "nan", "a\x00\x00"]
BYTES_EXTREMES = [b"a", b"a\x00", b"", b"\xff", b"0", b"\x00"]
MISSING = [None, math.nan, pd.NA, pd.NaT, np.datetime64("NaT"), np.ma.masked, complex(math.nan, 0)]

FAMILIES = {
    "int": st.one_of(st.integers(-3, 3), st.sampled_from(INT_EXTREMES)),
    "float": st.one_of(st.sampled_from(FLOAT_EXTREMES), st.floats(allow_nan=False, width=64)),
    "complex": st.one_of(st.sampled_from([0j, 1j, 1 + 0j, complex(math.inf, 0), complex(0, -0.0)]),
                         st.complex_numbers(allow_nan=False, max_magnitude=1e20)),
    "bool": st.booleans(),
    "str": st.one_of(st.sampled_from(STRING_EXTREMES), st.text(max_size=3)),
    "bytes": st.one_of(st.sampled_from(BYTES_EXTREMES), st.binary(max_size=3)),
    "datetime": st.builds(np.datetime64, st.integers(-10**5, 10**5), st.sampled_from(["D", "s"])),
    "timedelta": st.builds(np.timedelta64, st.integers(-10**5, 10**5),
                           st.sampled_from(["D", "s", "ns"])),
    "frozenset": st.frozensets(st.integers(0, 2), max_size=2),
    "numpy scalar": st.sampled_from([np.int8(1), np.int64(1), np.uint64(1), np.float32(1.0),
                                     np.float16(0.5), np.str_("a"), np.bool_(True), np.int16(-2)]),
    "mixed": st.one_of(st.integers(-2, 2), st.sampled_from(["0", "a", "a\x00", b"a", 1.0, 0.5,
                                                            True, False])),
    "unhashable": st.sampled_from([[1], [2], {"a": 1}, [1, 2]]),
}

# Values an encoder could wrongly merge or split (the defects of issue 7 and their
# neighbours); drawn together, so each column holds several of one group.
CONFUSABLE = {
    "int": [[-100, 100, -128, 127], [-30000, 30000, 32767], [0, 255, 128], [2**64 - 1, 2**64 - 2],
            [2**63 - 1, -(2**63)], [2**63, -1], [2**53 + 1, 2**53], [-(2**31), 2**31 - 1]],
    "float": [[1e19, 2e19, 3e19, -1e19], [2.0**53, 2.0**53 + 2, 2.0**54], [0.0, -0.0, 1.0],
              [2.0**63, 2.0**64, 1e300], [65504.0, 70000.0, 1e5]],
    "str": [["a", "a\x00", "a\x00\x00", ""], ["\x00", "", "\ud800"]],
    "bytes": [[b"a", b"a\x00", b""], [b"\x00", b""]],
    "mixed": [[0, "0", 0.0, False], [2**53 + 1, 2.0**53], [1, True, 1.0, "1"]],
    "frozenset": [[frozenset({1}), frozenset({2}), frozenset({1, 2}), frozenset()]],
    "complex": [[1j, 2j, 1 + 0j, -1j]],
}

INT_DTYPES = ["int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64"]
FLOAT_DTYPES = ["float16", "float32", "float64"]


@st.composite
def columns_of_values(draw, n_rows=None, family=None):
    """(family, values): n rows drawn from a small pool (so strata repeat), maybe one missing."""
    family = family or draw(st.sampled_from(sorted(FAMILIES)))
    if family in CONFUSABLE and draw(st.booleans()):
        group = draw(st.sampled_from(CONFUSABLE[family]))
        pool = draw(st.lists(st.sampled_from(group), min_size=2, max_size=4))
    else:
        pool = draw(st.lists(FAMILIES[family], min_size=1, max_size=4))
    n = draw(st.integers(0, 30)) if n_rows is None else n_rows
    values = [pool[k] for k in draw(st.lists(st.integers(0, len(pool) - 1), min_size=n,
                                             max_size=n))]
    if n and draw(st.integers(0, 9)) == 0:
        values[draw(st.integers(0, n - 1))] = draw(st.sampled_from(MISSING))
    return family, values


def _object_array(values):
    array = np.empty(len(values), dtype=object)
    array[:] = values
    return array


def _try(build, fallback):
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return build()
    except Exception:  # any container that cannot hold these values: use the fallback
        return fallback


# Single-column containers: name -> (build(values, family, draw), valid form?)
def single_column(draw, family, values):
    """(container name, object passed as strata, expected form: "valid" or an error class)."""
    n = len(values)
    # What a failed container falls back to (lists of lists would be rows).
    fallback = _object_array(values) if family == "unhashable" else list(values)
    names = ["list", "tuple", "ndarray", "object ndarray", "series", "categorical", "masked",
             "matrix column", "dict", "generator", "iterator", "set", "list of arrays",
             "dict of scalars", "3-D", "torch"]
    if n:
        names += ["0-d", "scalar"]
    if n >= 2:
        names += ["ragged"]
    if family == "unhashable":  # in a list such values would be rows
        names = ["object ndarray", "series"]
    name = draw(st.sampled_from(names))
    if name == "list":
        return name, list(values), "valid"
    if name == "tuple":
        return name, tuple(values), "valid"
    if name == "ndarray":
        ints = INT_DTYPES if family != "int" else [
            d for d in INT_DTYPES if all(isinstance(v, int) and np.iinfo(d).min <= v <=
                                         np.iinfo(d).max for v in values)] or [None]
        dtypes = {"int": ints, "float": FLOAT_DTYPES, "str": ["U", "object"],
                  "bytes": ["S", "object"], "bool": ["bool"]}.get(family, [None])
        dtype = draw(st.sampled_from(dtypes))
        return f"ndarray {dtype}", _try(lambda: np.array(values, dtype=dtype), fallback), "valid"
    if name == "object ndarray":
        return name, _object_array(values), "valid"
    if name == "series":
        dtype = draw(st.sampled_from({"int": [None, "Int64", "category"],
                                      "str": [None, "string", "category"],
                                      "bool": [None, "boolean"],
                                      "float": [None, "Float64"]}.get(family, [None, "category"])))
        return f"series {dtype}", _try(lambda: pd.Series(values, dtype=dtype), fallback), "valid"
    if name == "categorical":
        return name, _try(lambda: pd.Categorical(values), fallback), "valid"
    if name == "masked":
        mask = draw(st.lists(st.booleans(), min_size=n, max_size=n))
        return name, _try(lambda: np.ma.masked_array(np.array(values), mask=mask), fallback), \
            "valid"
    if name == "matrix column":
        return name, _try(lambda: np.matrix(np.array(values, dtype=float)).T, fallback), "valid"
    if name == "dict":
        return name, {"y": list(values)}, "valid"
    if name == "torch":
        dtype = draw(st.sampled_from([None, torch.bfloat16, torch.float16, torch.int8]))
        tensor = _try(lambda: torch.tensor(values, dtype=dtype), None)
        if tensor is None or tensor.ndim != 1:  # torch reads b"" as an empty row
            return "list", list(values), "valid"
        return f"tensor {str(tensor.dtype)[6:]}", tensor, \
            TypeError if tensor.dtype == torch.bfloat16 else "valid"
    if name == "generator":
        return name, (v for v in values), TypeError
    if name == "iterator":
        return name, iter(list(values)), TypeError
    if name == "set":
        return name, _try(lambda: set(values), {1, 2}), TypeError
    if name == "list of arrays":
        return name, [np.array([v], dtype=object) for v in values] or [np.array([1])], TypeError
    if name == "dict of scalars":
        return name, {f"c{k}": v for k, v in enumerate(values)} or {"c": 1}, TypeError
    if name == "3-D":
        return name, np.array(_object_array(values)).reshape(n, 1, 1) if n else np.zeros((1, 1, 1)), \
            ValueError
    if name == "0-d":
        return name, _try(lambda: np.array(values[0]), np.array(1)), \
            TypeError if np.ndim(_try(lambda: np.array(values[0]), np.array(1))) == 0 else "skip"
    if name == "scalar":
        value = values[0]
        if isinstance(value, (tuple, list, dict, frozenset)) or value is np.ma.masked:
            return name, 1, TypeError  # not a scalar: use one that is
        return name, value, TypeError
    if name == "ragged":
        return name, [[v] for v in values[:-1]] + [[values[-1], values[-1]]], ValueError
    raise AssertionError(name)


def truth_rows(strata):
    """The row tuples the container holds, read without pystratum (None if not a valid form)."""
    if isinstance(strata, pd.DataFrame):
        return [tuple(row) for row in strata.astype(object).itertuples(index=False)]
    if isinstance(strata, dict):
        columns = [truth_rows(column) for column in strata.values()]
        return [tuple(v for cell in cells for v in cell) for cells in zip(*columns)]
    if isinstance(strata, np.ma.MaskedArray):
        data = np.asarray(strata.data).tolist()
        mask = np.ma.getmaskarray(strata).tolist()
        if strata.ndim == 1:
            return [(np.ma.masked,) if k else (v,) for v, k in zip(data, mask)]
        return [tuple(np.ma.masked if k else v for v, k in zip(row, ks))
                for row, ks in zip(data, mask)]
    if isinstance(strata, pd.Categorical):
        return [(v,) for v in strata.astype(object)]
    if isinstance(strata, pd.Series):
        return [(v,) for v in strata.astype(object).tolist()]
    if isinstance(strata, torch.Tensor):
        return [(v,) for v in strata.tolist()]
    if isinstance(strata, np.ndarray):
        array = np.asarray(strata)
        if array.ndim == 1:
            return [(v,) for v in array.tolist()]
        return [tuple(row) for row in array.tolist()]
    if isinstance(strata, (list, tuple)):
        if strata and isinstance(strata[0], (list, tuple)):
            return [tuple(row) for row in strata]
        return [(v,) for v in strata]
    raise AssertionError(type(strata))


def expect_strata_outcome(strata, form, outcome, result, m, codes_of):
    """Check one call's outcome against the oracle for a strata input."""
    if form != "valid":
        assert outcome == "error", f"{form.__name__} expected, got a result"
        assert isinstance(result, form), repr(result)
        assert_actionable(result, ["strata"])
        return
    rows = truth_rows(strata)
    missing = [r for r, row in enumerate(rows) if any(is_missing(v) for v in row)]
    if not rows:
        assert outcome == "error" and "empty" in str(result), result
        assert_actionable(result, ["strata"])
        return
    if missing:
        assert outcome == "error", f"missing values at rows {missing} were batched"
        assert isinstance(result, ValueError), repr(result)
        match = re.search(r"missing value at row (\d+) \(0-based\)", str(result))
        assert match and int(match.group(1)) in missing, str(result)
        assert_actionable(result, ["strata"])
        return
    unhashable = any(isinstance(v, (list, dict)) for row in rows for v in row)
    if outcome == "error":
        # Refusing is right only for values the contract refuses: unhashable labels.
        assert unhashable, f"valid strata refused: {result!r}"
        assert isinstance(result, TypeError) and "unhashable" in str(result), repr(result)
        assert_actionable(result, ["strata"])
        return
    codes = reference_codes(rows)
    assert same_partition(codes_of(strata), codes), "strata differ from == equality"
    check_batches(result, codes, m)


# --- strata -----------------------------------------------------------------------------------------


@budget(400)
@given(data=st.data(), m=st.integers(1, 3), seed=st.integers(0, 2**32))
def test_hostile_single_column_strata(data, m, seed):
    family, values = data.draw(columns_of_values())
    name, strata, form = single_column(data.draw, family, values)
    assume(form != "skip")
    INPUT_KINDS[name] += 1
    outcome, result = call("stratified_batches", stratified_batches, strata, m, seed=seed)
    # Rebuild the container for the reference (generators are used up).
    if form == "valid":
        expect_strata_outcome(strata, form, outcome, result, m,
                              lambda s: encode_strata(s).codes.tolist())
    else:
        expect_strata_outcome(strata, form, outcome, result, m, None)


NUMERIC_DTYPES = INT_DTYPES + FLOAT_DTYPES + ["complex64", "complex128", "bool", "datetime64[ns]",
                                              "datetime64[D]", "timedelta64[s]"]


def dtype_extremes(dtype):
    """Values at and near the ends of ``dtype``'s range (where offsets and casts overflow)."""
    dtype = np.dtype(dtype)
    if dtype.kind in "iu":
        info = np.iinfo(dtype)
        return st.sampled_from([int(info.min), int(info.max), int(info.min) + 1, int(info.max) - 1,
                                0, int(info.max) // 2, int(info.max) // 2 + 1]) | \
            st.integers(int(info.min), int(info.max))
    if dtype.kind == "f":
        return st.sampled_from([0.0, -0.0, 1.0, 2.0**53, 2.0**53 + 2, 1e19, -1e19, 2.0**63, math.inf,
                                -math.inf, float(np.finfo(dtype).max), math.nan]) | \
            st.floats(width=8 * dtype.itemsize)
    if dtype.kind == "c":
        return st.sampled_from([0j, 1j, 2j, complex(1e19, 0), complex(math.inf, 1), complex(math.nan, 0)]) \
            | st.complex_numbers(allow_nan=False, max_magnitude=1e30)
    if dtype.kind == "b":
        return st.booleans()
    unit = np.datetime_data(dtype)[0]
    return st.sampled_from(["NaT", -(2**62), 2**62, 0, 1]).map(
        lambda v: dtype.type(v, unit) if v != "NaT" else dtype.type("NaT")) | \
        st.integers(-(2**62), 2**62).map(lambda v: dtype.type(v, unit))


@pytest.mark.parametrize("dtype", NUMERIC_DTYPES)
@budget(20)
@given(data=st.data(), m=st.integers(1, 3), seed=st.integers(0, 2**32))
def test_hostile_numeric_dtypes(dtype, data, m, seed):
    """Every numeric dtype at the ends of its range, sometimes with enough rows for the
    linear-time (bincount) path, as an array, a Series or one column of two."""
    pool = data.draw(st.lists(dtype_extremes(dtype), min_size=1, max_size=5))
    # 16-bit labels spanning their range take the bincount path from ~16k rows on.
    big = np.dtype(dtype).kind in "iu" and np.dtype(dtype).itemsize == 2
    repeat = data.draw(st.sampled_from([1] * 8 + [2] + ([17000 // len(pool)] if big else [])))
    order = data.draw(st.lists(st.integers(0, len(pool) - 1), min_size=1, max_size=20))
    values = _try(lambda: np.array([pool[k] for k in order] * repeat, dtype=dtype), None)
    assume(values is not None)
    container = data.draw(st.sampled_from(["ndarray", "series", "second column"]))
    INPUT_KINDS[f"dtype {dtype}"] += 1
    if container == "series":
        strata = _try(lambda: pd.Series(values), values)  # pandas refuses far-off datetimes
    elif container == "second column":
        strata = {"g": np.arange(values.shape[0]) % 2, "y": values}
    else:
        strata = values
    outcome, result = call("stratified_batches", stratified_batches, strata, m, seed=seed)
    expect_strata_outcome(strata, "valid", outcome, result, m,
                          lambda s: encode_strata(s).codes.tolist())


@st.composite
def multi_column_strata(draw):
    n = draw(st.integers(0, 25))
    k = draw(st.integers(2, 3))
    families = [draw(st.sampled_from(sorted(set(FAMILIES) - {"unhashable"}))) for _ in range(k)]
    columns = [draw(columns_of_values(n_rows=n, family=f))[1] for f in families]
    rows = list(zip(*columns))
    names = ["DataFrame", "dict", "dict of arrays", "2-D ndarray", "row tuples", "row lists",
             "masked 2-D", "list of columns", "3-D"]
    if n >= 2:
        names.append("ragged rows")
    if all(f in ("int", "float", "bool") for f in families):
        names.append("matrix")
    name = draw(st.sampled_from(names))
    if name == "DataFrame":
        return name, _try(lambda: pd.DataFrame({f"c{j}": c for j, c in enumerate(columns)}),
                          rows), "valid"
    if name == "dict":
        return name, {f"c{j}": c for j, c in enumerate(columns)}, "valid"
    if name == "dict of arrays":
        return name, {f"c{j}": _try(lambda c=c: np.array(c), _object_array(c))
                      for j, c in enumerate(columns)}, "valid"
    if name == "2-D ndarray":
        array = _try(lambda: np.array(rows), None)
        if array is None or array.ndim != 2:
            return "row tuples", rows, "valid"
        return name, array, "valid"
    if name == "masked 2-D":
        array = _try(lambda: np.array(rows), None)
        if array is None or array.ndim != 2:
            return "row tuples", rows, "valid"
        mask = np.array(draw(st.lists(st.booleans(), min_size=array.size, max_size=array.size)),
                        dtype=bool).reshape(array.shape) & (draw(st.integers(0, 3)) == 0)
        return name, np.ma.masked_array(array, mask=mask), "valid"
    if name == "matrix":
        array = _try(lambda: np.matrix(np.array(rows, dtype=float)), None)
        if array is None or array.shape != (n, k):
            return "row tuples", rows, "valid"
        return name, array, "valid"
    if name == "row tuples":
        return name, rows, "valid"
    if name == "row lists":
        return name, [list(r) for r in rows], "valid"
    if name == "list of columns":
        return name, [_object_array(c) for c in columns], TypeError
    if name == "3-D":
        return name, np.zeros((max(n, 1), k, 2)), ValueError
    if name == "ragged rows":
        return name, [list(r) for r in rows[:-1]] + [list(rows[-1])[:-1]], ValueError
    raise AssertionError(name)


@budget(300)
@given(case=multi_column_strata(), m=st.integers(1, 3), seed=st.integers(0, 2**32))
def test_hostile_multi_column_strata(case, m, seed):
    name, strata, form = case
    if name == "row tuples" and not strata:
        form = "valid"  # an empty list: "strata is empty"
    INPUT_KINDS[name] += 1
    outcome, result = call("plan_batches", plan_batches, strata, m, seed=seed)
    batches = result.batches if outcome == "ok" else None
    if form == "valid" and isinstance(strata, np.matrix):
        strata = np.asarray(strata)
    expect_strata_outcome(strata, form, outcome, result if batches is None else batches, m,
                          lambda s: encode_strata(s).codes.tolist())
    if outcome == "ok":
        # The report agrees with the batches.
        codes = encode_strata(strata).codes
        counts = np.array([np.bincount(codes[b], minlength=len(result.strata)) for b in batches])
        np.testing.assert_array_equal(counts, result.counts)


# --- scalar arguments ------------------------------------------------------------------------------

# (usually valid, hostile) values of each argument; each call mixes them so that
# single bad arguments among good ones are common.
SEEDS = ([None, 0, 1, 42, 2**31 - 1],
         [-1, -(2**31 - 1), -(2**31), 2**31, 2**32, 2**53, 2**53 + 1, 2**63, 2**64, 2**64 - 1,
          -(2**63), True, False, 1.0, 1.5, "1", np.int32(-5), np.uint64(7), np.int64(2**40),
          [1, 2], math.nan])
MS = ([1, 2, 3, 5, np.int8(2), np.uint64(1)], [0, -1, True, 2.5, "2", None, 2**70, [2], math.inf])
RNGS = (["numpy", "R", "torch", "index"], ["r", "Torch", "", None, 1, b"R", "Index"])
EPOCHS = ([0, 1, 2, 3, np.int64(2), np.uint8(1)],
          [-1, 2**31 - 1, 2**31, 10**12, True, 1.0, "1", None, 10**5 + 1, math.nan])
SHUFFLES = ([True, False, np.bool_(True), np.bool_(False)], [1, 0, None, "True"])


GENERATOR_SEEDS = st.builds(np.random.SeedSequence, st.integers(0, 9)) | \
    st.builds(np.random.default_rng, st.integers(0, 9))


@st.composite
def argument_sets(draw):
    """Valid arguments with none, one or two of them replaced by a hostile value."""
    args = {name: draw(st.sampled_from(choices[0])) for name, choices in
            (("m", MS), ("seed", SEEDS), ("rng", RNGS), ("epoch", EPOCHS))}
    args["shuffle"] = draw(st.sampled_from([True, True, True, np.bool_(True), False]))
    if not args["shuffle"]:
        args["seed"], args["epoch"] = None, 0
    hostile = draw(st.lists(st.sampled_from(["m", "seed", "seed", "rng", "epoch", "epoch",
                                             "shuffle", "generator seed"]),
                            max_size=2, unique=True))
    for name in hostile:
        if name == "generator seed":
            args["seed"] = draw(GENERATOR_SEEDS)
        else:
            choices = {"m": MS, "seed": SEEDS, "rng": RNGS, "epoch": EPOCHS,
                       "shuffle": SHUFFLES}[name]
            args[name] = draw(st.sampled_from(choices[1]))
    return args


def _is_int(value) -> bool:
    return isinstance(value, (int, np.integer)) and not isinstance(value, (bool, np.bool_))


def invalid_arguments(m, seed, rng, epoch, shuffle, n_rows):
    """The arguments the contract refuses (empty: the call must succeed)."""
    bad = set()
    if not (_is_int(m) and m >= 1):
        bad.add("min_samples_per_stratum")
    if not (isinstance(rng, str) and rng in ("numpy", "R", "torch", "index")):
        bad.add("rng")
    if not (_is_int(epoch) and 0 <= epoch <= 2**31 - 1):
        bad.add("epoch")
    if not isinstance(shuffle, (bool, np.bool_)):
        bad.add("shuffle")
        return bad
    if not shuffle:
        if seed is not None:
            bad.add("seed")
        if "epoch" not in bad and epoch != 0:
            bad.add("epoch")
        return bad
    if isinstance(seed, np.random.Generator):
        seed_ok = rng == "numpy"
        if seed_ok and "epoch" not in bad and epoch != 0:
            bad.add("epoch")
    elif isinstance(seed, np.random.SeedSequence):
        seed_ok = rng == "numpy"
    elif seed is None:
        seed_ok = True
    elif not _is_int(seed):
        seed_ok = False
    else:
        low, high = {"numpy": (0, math.inf), "R": (-(2**31 - 1), 2**31 - 1),
                     "torch": (0, 2**53), "index": (0, 2**52 - 1)}.get(rng, (-math.inf, math.inf))
        seed_ok = low <= int(seed) <= high
    if not seed_ok:
        bad.add("seed")
    if rng in ("R", "torch") and "epoch" not in bad and int(epoch) * max(n_rows, 1000) > 10**8:
        bad.add("epoch")
    return bad


@budget(400)
@given(
    labels=st.lists(st.integers(0, 2), min_size=1, max_size=30),
    args=argument_sets(),
    entry=st.sampled_from(["stratified_batches", "plan_batches", "keyword m"]),
)
def test_hostile_arguments(labels, args, entry):
    m, seed, rng, epoch, shuffle = (args[k] for k in ("m", "seed", "rng", "epoch", "shuffle"))
    bad = invalid_arguments(m, seed, rng, epoch, shuffle, len(labels))
    INPUT_KINDS["arguments: " + ("valid" if not bad else "invalid")] += 1
    kwargs = dict(seed=seed, rng=rng, epoch=epoch, shuffle=shuffle)
    if entry == "keyword m":
        outcome, result = call(entry, plan_batches, labels, min_samples_per_stratum=m, **kwargs)
    else:
        function = stratified_batches if entry == "stratified_batches" else plan_batches
        outcome, result = call(entry, function, labels, m, **kwargs)
    if bad:
        assert outcome == "error", f"accepted invalid {sorted(bad)}"
        assert_actionable(result, sorted(bad))
        return
    assert outcome == "ok", f"valid arguments refused: {result!r}"
    batches = result if entry == "stratified_batches" else result.batches
    check_batches(batches, labels, int(m))
    if not shuffle:
        permutation = np.arange(len(labels))
    elif isinstance(seed, (np.random.Generator, np.random.SeedSequence)):
        return  # a Generator advanced; SeedSequence equals its entropy (test_core)
    elif (seed is None and entry == "stratified_batches") or rng == "index":
        return  # fresh entropy not reported; the index stream has no permutation to replay
    else:
        used = seed if seed is not None else result.seed  # plan.seed: the seed to reuse
        permutation = reference_permutation(len(labels), rng, int(used), int(epoch))
    expected = reference_batches(labels, permutation, int(m))
    assert [b.tolist() for b in batches] == expected


# --- BatchPlan methods ------------------------------------------------------------------------------

INDICES = (st.integers(-40, 40) | st.sampled_from([True, False, 1.0, "1", None, (0, 1), [0],
                                                   np.int64(-1), np.uint8(0), 2**70, math.nan])
           | st.builds(slice, st.none() | st.integers(-15, 15), st.none() | st.integers(-15, 15),
                       st.none() | st.integers(-4, 4) | st.just("a")))
MAX_ROWS = st.none() | st.integers(-3, 25) | st.sampled_from([True, 2.5, "3", np.int64(4)])


@budget(300)
@given(labels=st.lists(st.integers(0, 2), min_size=1, max_size=40), m=st.integers(1, 4),
       index=INDICES, max_rows=MAX_ROWS)
def test_hostile_batch_plan_methods(labels, m, index, max_rows):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", StratumTooSmallWarning)
        plan = plan_batches(labels, m, seed=1, allow_single_batch=True)
    batches = plan.batches
    n = len(batches)
    INPUT_KINDS["plan[" + type(index).__name__ + "]"] += 1
    outcome, result = call("BatchPlan[]", plan.__getitem__, index)
    if isinstance(index, slice):
        valid = all(v is None or _is_int(v) for v in (index.start, index.stop, index.step)) \
            and index.step != 0
        if valid:
            assert outcome == "ok", result
            assert [b.tolist() for b in result] == [b.tolist() for b in batches[index]]
        else:
            assert outcome == "error"
            assert_actionable(result, ["batch"])
    elif _is_int(index) and -n <= index < n:
        assert outcome == "ok", result
        assert result.tolist() == batches[int(index)].tolist()
    else:
        assert outcome == "error"
        assert isinstance(result, IndexError if _is_int(index) else TypeError), repr(result)
        assert_actionable(result, ["batch"])
    outcome, result = call("BatchPlan.counts_table", plan.counts_table, max_rows=max_rows)
    if max_rows is None or (_is_int(max_rows) and max_rows >= 1):
        assert outcome == "ok", result
        shown = n if max_rows is None else min(n, int(max_rows))
        lines = result.splitlines()
        assert len([line for line in lines[1:] if "..." not in line]) == shown
        assert len(lines) == 1 + shown + (shown < n)
    else:
        assert outcome == "error"
        assert_actionable(result, ["max_rows"])
    row_batch = plan.batch_of_row()
    assert all((row_batch[b] == k).all() for k, b in enumerate(batches))


# --- RStream ----------------------------------------------------------------------------------------

R_SEEDS = st.sampled_from([0, 1, -1, 2**31 - 1, -(2**31 - 1), -(2**31), 2**31, 2**32 + 5, True,
                           1.0, "1", None, np.int32(7), np.uint32(2**31)]) | st.integers(-10, 10)
SIZES = st.sampled_from([None, 0, 1, 5, 100, -1, 2.5, True, "3", 10**20, np.int64(3)]) | \
    st.integers(0, 60)


def random_seed_vectors():
    good = RStream(1).random_seed
    bad_length = good[:10]
    bad_kind = good.copy()
    bad_kind[0] = 10402
    bad_position = good.copy()
    bad_position[1] = 0
    zero_key = good.copy()
    zero_key[2:] = 0
    return [good, good.tolist(), bad_length, bad_kind, bad_position, zero_key,
            good.astype(float), good.astype(np.int64) + 2**33, [str(v) for v in good[:5]], None]


@budget(300)
@given(seed=R_SEEDS, n=SIZES, size=SIZES, replace=st.sampled_from([True, False, 1, None, "no"]),
       method=st.sampled_from(["permutation", "sample", "runif", "random_seed"]),
       vector=st.sampled_from(range(10)))
def test_hostile_rstream(seed, n, size, replace, method, vector):
    INPUT_KINDS["RStream." + method] += 1
    outcome, stream = call("RStream()", RStream, seed)
    if not (_is_int(seed) and -(2**31 - 1) <= int(seed) <= 2**31 - 1):
        assert outcome == "error"
        assert_actionable(stream, ["seed"])
        return
    assert outcome == "ok", stream
    n_ok = _is_int(n) and 0 <= int(n) <= 4.5e15
    if method == "random_seed":
        value = random_seed_vectors()[vector]
        outcome, result = call("RStream.random_seed", setattr, stream, "random_seed", value)
        if vector <= 1:
            assert outcome == "ok", result
        else:
            assert outcome == "error"
            assert_actionable(result, ["random_seed"])
        return
    if method == "runif":
        outcome, result = call("RStream.runif", stream.runif, n)
        if n_ok and int(n) <= 10**4:
            assert outcome == "ok", result
            assert result.shape == (int(n),) and ((result > 0) & (result < 1)).all()
        elif not n_ok:
            assert outcome == "error"
            assert_actionable(result, ["n"])
        return
    if method == "permutation":
        outcome, result = call("RStream.permutation", stream.permutation, n)
        if n_ok and int(n) <= 10**4:
            assert outcome == "ok", result
            assert sorted(result.tolist()) == list(range(int(n)))
        elif not n_ok:
            assert outcome == "error"
            assert_actionable(result, ["n"])
        return
    size_ok = size is None or (_is_int(size) and int(size) >= 0)
    replace_ok = isinstance(replace, (bool, np.bool_))
    if n_ok and size_ok and replace_ok:
        k = int(n) if size is None else int(size)
        if k > 10**4 or int(n) > 10**4:
            return  # valid, but too large to draw here
    outcome, result = call("RStream.sample", stream.sample, n, size, replace)
    if not (n_ok and size_ok and replace_ok):
        assert outcome == "error"
        names = [name for name, ok in (("n", n_ok), ("size", size_ok), ("replace", replace_ok))
                 if not ok]
        assert_actionable(result, names)
        return
    k = int(n) if size is None else int(size)
    if (not replace and k > int(n)) or (k > 0 and int(n) == 0):
        assert outcome == "error"
        assert_actionable(result, ["size", "n"])
        return
    assert outcome == "ok", result
    assert result.shape == (k,) and ((result >= 1) & (result <= int(n))).all()
    if not replace:
        assert len(set(result.tolist())) == k
