"""RStream against R itself.

* Every case of ``tests/vectors/r_stream.json`` (written by R, see its header).
* A live comparison: hypothesis draws batches of seeds and calls, and one
  ``Rscript`` run per batch computes R's answers. R is required: without
  ``Rscript`` on PATH these tests fail (CI installs R), they do not skip.
* Argument checks, ``random_seed`` round trips and resume, copies.
"""

from __future__ import annotations

import copy
import hashlib
import json
import pickle
import shutil
import subprocess
import tempfile
from pathlib import Path

import numpy as np
import pytest
from hypothesis import Phase, given, settings
from hypothesis import strategies as st

import pystratum.streams._r as rstream
from _vectors import VectorFileMissing, load_cases
from pystratum import RStream

VECTOR_FILE = "r_stream.json"
R_SCRIPT = Path(__file__).resolve().parents[1] / "vectors" / "generate_r_stream.R"
INSTALL_R = (
    "The live comparison with R needs Rscript on PATH and the jsonlite package: "
    "apt-get install r-base-core r-cran-jsonlite (Debian/Ubuntu), or see "
    "https://cran.r-project.org. CI installs both."
)

try:
    HEADER, CASES = load_cases(VECTOR_FILE)
    LOAD_ERROR = None
except VectorFileMissing as error:
    HEADER, CASES, LOAD_ERROR = None, [], str(error)


# --- shared helpers ----------------------------------------------------------------


def md5_float64(values) -> str:
    """The header's checksum: md5 of the values as little-endian float64."""
    return hashlib.md5(np.asarray(values, dtype="<f8").tobytes()).hexdigest()


def start_stream(case) -> RStream:
    if case.get("seed") is not None:
        return RStream(case["seed"])
    return RStream.from_random_seed(np.asarray(case["start_random_seed"], dtype=np.int64))


def perform(stream: RStream, call):
    """The call's values (a list), or the ValueError it raised."""
    fn = call["fn"]
    try:
        if fn == "sample":
            return stream.sample(call["n"], call.get("size"), call.get("replace", False)).tolist()
        if fn == "runif":
            return stream.runif(call["n"]).tolist()
        if fn == "random_seed":
            return stream.random_seed.tolist()
    except ValueError as error:
        return error
    raise AssertionError(f"unknown fn {fn!r} in a case")


def assert_matches(expected, got, where: str) -> None:
    if isinstance(expected, dict) and "error" in expected:
        assert isinstance(got, ValueError), f"{where}: R stops with {expected['error']!r}, Python gave values"
        assert expected["error"] in str(got), f"{where}: message {str(got)!r} lacks R's {expected['error']!r}"
        return
    assert not isinstance(got, Exception), f"{where}: Python raised {got!r}, R gave values"
    if isinstance(expected, dict):
        assert len(got) == expected["length"], f"{where}: length"
        assert got[: len(expected["head"])] == expected["head"], f"{where}: first values differ"
        assert md5_float64(got) == expected["md5"], f"{where}: values differ (md5)"
    else:
        assert got == expected, f"{where}: values differ"


def run_case(case) -> None:
    if "seed_error" in case:
        with pytest.raises(ValueError, match="supplied seed is not a valid integer"):
            RStream(case["seed"])
        return
    stream = start_stream(case)
    for number, call in enumerate(case["calls"]):
        where = f"case {case.get('id', '?')} call {number} {call}"
        assert_matches(call["expected"], perform(stream, call), where)


def run_in_r(cases):
    """R's results for ``cases`` (the vector layout without "expected"), via one Rscript run."""
    rscript = shutil.which("Rscript")
    if rscript is None:
        pytest.fail(f"Rscript is not on PATH. {INSTALL_R}", pytrace=False)
    results = _run_r(rscript, cases)
    assert [len(case["calls"]) for case in results] == [len(case["calls"]) for case in cases], (
        "R returned a different number of cases or calls"
    )
    return results


def _run_r(rscript, cases):
    with tempfile.TemporaryDirectory() as folder:
        given_path = Path(folder) / "cases.json"
        result_path = Path(folder) / "results.json"
        given_path.write_text(json.dumps(cases))
        done = subprocess.run(
            [rscript, "--vanilla", str(R_SCRIPT), "--run", str(given_path), str(result_path)],
            capture_output=True, text=True, timeout=120,
        )
        if done.returncode != 0:
            pytest.fail(f"Rscript failed ({done.returncode}):\n{done.stderr}\n{INSTALL_R}", pytrace=False)
        return json.loads(result_path.read_text())


# --- (a) golden vectors --------------------------------------------------------------


def test_vector_file_is_present_and_covers_the_paths():
    if LOAD_ERROR is not None:
        pytest.fail(LOAD_ERROR, pytrace=False)
    ids = [case["id"] for case in CASES]
    assert len(set(ids)) == len(ids), "case ids must be unique"
    for needed in ("hash_path", "with_replacement", "partial_samples", "runif", "n_1e7_plus_5",
                   "zero_word_runif", "bit_width_boundaries_consecutive"):
        assert needed in ids
    assert HEADER["regenerate"].startswith("Rscript tests/vectors/generate_r_stream.R")


@pytest.mark.parametrize("case", CASES, ids=[case["id"] for case in CASES])
def test_golden_vector(case):
    run_case(case)


# --- (b) live comparison with R ----------------------------------------------------------

seeds = st.integers(-(2**31) + 1, 2**31 - 1)
populations = st.one_of(
    st.integers(1, 40),
    st.integers(1, 300_000),
    st.builds(lambda k, d: 2**k + d, st.integers(1, 20), st.integers(-1, 1)),
)


@st.composite
def calls(draw):
    kind = draw(st.sampled_from(["permutation", "partial", "replace", "hash", "runif"]))
    if kind == "runif":
        return {"fn": "runif", "n": draw(st.integers(0, 30))}
    if kind == "hash":  # n > 1e7, size <= n / 2: R's hash path
        return {"fn": "sample", "n": draw(st.integers(10_000_001, 2**42)),
                "size": draw(st.integers(0, 300)), "replace": False}
    n = draw(populations)
    if kind == "permutation":
        return {"fn": "sample", "n": n, "size": None, "replace": False}
    if kind == "partial":
        return {"fn": "sample", "n": n, "size": draw(st.integers(0, n)), "replace": False}
    return {"fn": "sample", "n": draw(st.one_of(populations, st.integers(1, 2**45))),
            "size": draw(st.integers(0, 2000)), "replace": True}


cases = st.fixed_dictionaries({"seed": seeds, "calls": st.lists(calls(), min_size=1, max_size=3)})


@settings(max_examples=3, derandomize=True, deadline=None, phases=[Phase.explicit, Phase.generate])
@given(batch=st.lists(cases, min_size=6, max_size=6))
def test_matches_live_r(batch):
    # The state after every call is compared too.
    cases = [
        {"id": f"live_{number}", "seed": case["seed"],
         "calls": [c for call in case["calls"] for c in (call, {"fn": "random_seed"})]}
        for number, case in enumerate(batch)
    ]
    for case in run_in_r(cases):
        run_case(case)


def test_matches_live_r_for_fixed_cases():
    """Seeds at the edges and a resumed R state, computed by R now."""
    set_seed_7 = {"seed": 7, "calls": [{"fn": "sample", "n": 1000, "size": None, "replace": False}]}
    batch = [
        {"id": "min_seed", "seed": -(2**31) + 1, "calls": [
            {"fn": "sample", "n": 65537, "size": None, "replace": False}, {"fn": "random_seed"}]},
        {"id": "max_seed", "seed": 2**31 - 1, "calls": [
            {"fn": "sample", "n": 3, "size": None, "replace": False}, {"fn": "runif", "n": 3},
            {"fn": "random_seed", "store": "full"}]},
        {"id": "too_large", "seed": 2**32 - 1, "calls": []},
        set_seed_7,
    ]
    results = run_in_r(batch)
    for case in results:
        run_case(case)
    # Resume in R from a state Python saved mid-block, and the other way round.
    stream = RStream(7)
    stream.sample(1000)
    resumed = {"id": "resume", "seed": None, "start_random_seed": stream.random_seed.tolist(),
               "calls": [{"fn": "sample", "n": 20050, "size": None, "replace": False},
                         {"fn": "random_seed"}]}
    run_case(run_in_r([resumed])[0])


# --- (c) argument checks ---------------------------------------------------------------


@pytest.mark.parametrize("seed", [True, False, np.bool_(True), 1.0, 1.7, "5", None])
def test_seed_type_errors(seed):
    with pytest.raises(TypeError, match="seed must be an integer"):
        RStream(seed)


@pytest.mark.parametrize("seed", [2**31, -(2**31), 3_000_000_000, 2**32 - 1, 2**40, -(2**40)])
def test_seed_range_errors(seed):
    with pytest.raises(ValueError, match=rf"seed must be in \[-2147483647, 2147483647\].*got seed={seed}"):
        RStream(seed)


def test_seed_accepts_numpy_integers():
    assert np.array_equal(RStream(np.int64(-5)).random_seed, RStream(-5).random_seed)
    assert np.array_equal(RStream(np.uint32(7)).random_seed, RStream(7).random_seed)


@pytest.mark.parametrize(
    ("kwargs", "error", "pattern"),
    [
        ({"n": -1}, ValueError, r"n must be an integer >= 0, got n=-1"),
        ({"n": True}, TypeError, r"n must be an integer, got n=True"),
        ({"n": 3.0}, TypeError, r"n must be an integer, got n=3.0"),
        ({"n": 5, "size": -2}, ValueError, r"size must be an integer >= 0, got size=-2"),
        ({"n": 5, "size": 2.0}, TypeError, r"size must be an integer"),
        ({"n": 5, "replace": 1}, TypeError, r"replace must be True or False, got replace=1"),
        ({"n": 3, "size": 5}, ValueError, r"cannot take a sample larger than the population when "
                                          r"'replace = FALSE': got size=5 > n=3"),
        ({"n": 0, "size": 1}, ValueError, r"n must be positive when size > 0"),
        ({"n": 0, "size": 1, "replace": True}, ValueError, r"invalid first argument"),
        ({"n": 4_500_000_000_000_001, "size": 1, "replace": True}, ValueError, r"n must be at most 4.5e15"),
    ],
)
def test_sample_argument_errors(kwargs, error, pattern):
    stream = RStream(1)
    before = stream.random_seed
    with pytest.raises(error, match=pattern):
        stream.sample(**kwargs)
    assert np.array_equal(stream.random_seed, before), "a failed call must not move the stream"


def test_other_argument_errors():
    with pytest.raises(ValueError, match="n must be an integer >= 0, got n=-3"):
        RStream(1).permutation(-3)
    with pytest.raises(TypeError, match="n must be an integer"):
        RStream(1).runif(2.5)


def test_empty_results():
    stream = RStream(3)
    before = stream.random_seed
    for result in (stream.sample(0), stream.sample(5, 0), stream.permutation(0), stream.runif(0),
                   stream.sample(4, 0, replace=True)):
        assert result.size == 0
    assert np.array_equal(stream.random_seed, before)
    assert stream.sample(0).dtype == np.int64 and stream.runif(0).dtype == np.float64


@pytest.mark.parametrize(
    ("mutate", "error", "pattern"),
    [
        (lambda s: s[:-1], ValueError, r"random_seed must hold 626 values"),
        (lambda s: s.astype(float), TypeError, r"random_seed must be a vector of integers"),
        (lambda s: np.r_[10402, s[1:]], ValueError, r"random_seed\[0\] must be 10403"),
        (lambda s: np.r_[s[0], 0, s[2:]], ValueError, r"position\) must be in 1..624, got random_seed\[1\]=0"),
        (lambda s: np.r_[s[0], 625, s[2:]], ValueError, r"got random_seed\[1\]=625"),
        (lambda s: np.r_[s[:2], np.zeros(624, int)], ValueError, r"all-zero key"),
        (lambda s: np.r_[s[:2], 2**31, s[3:]], ValueError, r"32-bit signed integers"),
    ],
)
def test_random_seed_setter_errors(mutate, error, pattern):
    stream = RStream(9)
    saved = stream.random_seed.astype(np.int64)
    with pytest.raises(error, match=pattern):
        stream.random_seed = mutate(saved)
    assert np.array_equal(stream.random_seed, saved)


# --- (d) state round trips -------------------------------------------------------------


def test_random_seed_after_set_seed_layout():
    state = RStream(42).random_seed
    assert state.dtype == np.int32 and state.shape == (626,)
    assert state[0] == 10403 and state[1] == 624
    assert state[2:4].tolist() == [507561766, 1260545903]  # R: set.seed(42); .Random.seed[3:4]


@pytest.mark.parametrize("first_draw", [0, 1, 623, 624, 625, 5000])
def test_save_draw_restore_draw(first_draw):
    stream = RStream(2025)
    stream.runif(first_draw)
    saved = stream.random_seed
    first = [stream.sample(1000), stream.sample(70000, 50), stream.runif(10)]
    after = stream.random_seed
    stream.random_seed = saved
    again = [stream.sample(1000), stream.sample(70000, 50), stream.runif(10)]
    for a, b in zip(first, again):
        np.testing.assert_array_equal(a, b)
    np.testing.assert_array_equal(stream.random_seed, after)
    resumed = RStream.from_random_seed(list(saved))  # plain ints, as JSON would give
    np.testing.assert_array_equal(resumed.sample(1000), first[0])


def test_permutation_is_sample_minus_one_and_uses_the_same_words():
    a, b = RStream(5), RStream(5)
    for n in (1, 2, 17, 3000, 70001):
        np.testing.assert_array_equal(a.permutation(n), b.sample(n) - 1)
        np.testing.assert_array_equal(a.random_seed, b.random_seed)
    assert a.permutation(10).dtype == np.int64


def test_pickle_round_trip():
    stream = RStream(11)
    stream.sample(333)
    clone = pickle.loads(pickle.dumps(stream))
    np.testing.assert_array_equal(clone.random_seed, stream.random_seed)
    np.testing.assert_array_equal(clone.sample(5000), stream.sample(5000))


# --- (e) copies ------------------------------------------------------------------------


@pytest.mark.parametrize("make_copy", [lambda s: s.copy(), copy.copy, copy.deepcopy])
def test_copies_are_independent(make_copy):
    stream = RStream(13)
    stream.sample(100)
    twin = make_copy(stream)
    state = twin.random_seed
    drawn = stream.sample(20050)
    np.testing.assert_array_equal(twin.random_seed, state)  # untouched by the original's draw
    np.testing.assert_array_equal(twin.sample(20050), drawn)
    np.testing.assert_array_equal(twin.random_seed, stream.random_seed)


def test_repr_shows_position():
    text = repr(RStream(1))
    assert text.startswith("RStream(position=624, key_xor=0x")


# --- internals against plain loops -------------------------------------------------------


def naive_swap_remove(draws, n):
    x = list(range(n))
    out = []
    m = n
    for j in draws:
        out.append(x[j])
        m -= 1
        x[j] = x[m]
    return out


@settings(max_examples=40, deadline=None)
@given(data=st.data())
def test_chunked_swap_remove_matches_the_loop(data):
    n = data.draw(st.integers(1, 20_000), label="n")
    size = data.draw(st.integers(0, n), label="size")
    rng = np.random.default_rng(data.draw(st.integers(0, 2**32 - 1), label="rng seed"))
    # Draws skewed to small and top slots too, where chunks have most conflicts.
    tops = np.arange(n, n - size, -1)
    uniform = (rng.random(size) * tops).astype(np.int64)
    kind = data.draw(st.sampled_from(["uniform", "low", "top"]), label="kind")
    if kind == "low":
        uniform = np.minimum(uniform, rng.integers(0, 8, size))
    elif kind == "top":
        uniform = np.maximum(uniform, tops - 1 - rng.integers(0, 8, size))
    draws = uniform.astype(np.int32)
    assert rstream._swap_remove(draws, n).tolist() == naive_swap_remove(draws.tolist(), n)
    if size > 1:
        expected = naive_swap_remove(draws.tolist(), n)
        assert rstream._swap_remove_chunked(draws, n).tolist() == expected
        # int64 draws, as for n > 2**31 - 1
        assert rstream._swap_remove_chunked(draws.astype(np.int64), n).tolist() == expected


@settings(max_examples=40, deadline=None)
@given(m=st.integers(2, 2**20), seed=st.integers(0, 2**32 - 1), want=st.integers(1, 5000))
def test_block_acceptance_matches_the_loop(m, seed, want):
    bits = rstream._index_bits(m)
    rng = np.random.default_rng(seed)
    for dtype in (np.int32, np.int64):  # int64 as for populations above 2**30
        cand = rng.integers(0, 2**bits, 4 * want + 64).astype(dtype)
        got, used = rstream._accept_block(cand, m, want)
        expected, expected_used = rstream._accept_loop(cand, m, want)
        assert got.tolist() == expected.tolist() and used == expected_used


@settings(max_examples=60, deadline=None)
@given(data=st.data())
def test_settle_matches_the_sequential_rule(data):
    """Undecided candidates crowded at the threshold: the rounds (sometimes the fallback) decide."""
    m = data.draw(st.integers(50, 10_000), label="m")
    size = data.draw(st.integers(1, 40), label="size")
    values = np.array(data.draw(st.lists(st.integers(m - 2 * size - 5, m - 1), min_size=size,
                                         max_size=size), label="values"))
    steps = data.draw(st.lists(st.integers(0, 3), min_size=size, max_size=size), label="steps")
    sure_before = np.cumsum(steps)
    assert rstream._settle(values, sure_before, m).tolist() == sequential_rule(values, sure_before, m)


def sequential_rule(values, sure_before, m):
    expected, accepted_so_far = [], 0
    for v, s in zip(np.asarray(values).tolist(), np.asarray(sure_before).tolist()):
        expected.append(v < m - s - accepted_so_far)
        accepted_so_far += expected[-1]
    return expected


def test_settle_fallback():
    """A case the vectorised rounds cannot settle: the one-by-one fallback decides."""
    values = np.array([86, 89, 92, 91, 89, 85, 90, 92])
    sure_before = np.array([0, 3, 6, 6, 8, 11, 14, 15])
    assert rstream._settle(values, sure_before, 100).tolist() == sequential_rule(values, sure_before, 100)
