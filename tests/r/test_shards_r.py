"""Shard-blocked orders in R (live, through rpy2) against the Python core.

Hypothesis draws configurations of every policy family (MinPerStratum,
FixedSize, Targets, Downsample, ClassesPerBatch, MultiLabel): strata, shards
as ids (non-contiguous labels, up to beyond R's integers) or as
``shard_sizes`` with empty shards, a window from 1 to past the shard count,
seed, epoch, shuffle and the stream (``rng="R"``, or ``"index"``: the keyed
order of docs/SHARDS.md's *Lazy plans*, with its refusals).
``pystratum.r.stratified_batches(..., shards=, window=)`` must give the
core's batches (and weights) exactly, or both must
refuse with the same class and argument. The bindings pass shard ids to R
as they are (labels, not positions): a shift would change which ids are
refused, so refusals are compared too.

These tests need R, rpy2 and the R package: without them they fail with the
install command, as every test in tests/r/.
"""

from __future__ import annotations

import re
import warnings

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import pystratum
import pystratum.r as pr
from _r_helpers import r_function, r_session  # noqa: F401 (fixture)
from pystratum.policies import (ClassesPerBatch, Downsample, FixedSize, MinPerStratum,
                                MultiLabel, SmallStrataWarning, StratumTooSmallWarning, Targets)

FAMILIES = ("min_per_stratum", "fixed_size", "targets", "downsample", "classes_per_batch",
            "multi_label")


def _leading_word(message: str):
    match = re.match(r"\s*([A-Za-z_][A-Za-z0-9_]*)", message)
    return match.group(1) if match else None


@st.composite
def configurations(draw):
    family = draw(st.sampled_from(FAMILIES))
    sizes = draw(st.lists(st.integers(1, 24), min_size=2, max_size=4))
    n = sum(sizes)
    seed = draw(st.integers(-(2**31 - 1), 2**31 - 1))
    order = np.random.default_rng(abs(seed) % 1000).permutation(n)
    codes = np.repeat(np.arange(len(sizes)), sizes)[order]
    if family == "multi_label":
        # Labels from the codes (rows of code 0 carry no label).
        data = np.stack([(codes % 3) == 1, (codes % 2) == 1, codes >= 2], axis=1).astype(int)
        policy = MultiLabel(num_batches=draw(st.integers(2, 4)))
    else:
        data = codes
        labels = list(range(len(sizes)))
        policy = {
            "min_per_stratum": lambda: MinPerStratum(draw(st.integers(1, 3))),
            # At most min(sizes) batches, so that every stratum can fill them.
            "fixed_size": lambda: FixedSize(-(-n // draw(st.integers(1, min(sizes))))),
            "targets": lambda: Targets("balanced", draw(st.integers(2, 8))),
            "downsample": lambda: Downsample({labels[-1]: draw(st.sampled_from([0.5, 0.3, 1.0]))},
                                             MinPerStratum(1)),
            "classes_per_batch": lambda: ClassesPerBatch(
                draw(st.integers(1, 2)), draw(st.integers(1, 4)),
                small=draw(st.sampled_from(["repeat", "drop"]))),
        }[family]()
    form = draw(st.sampled_from(["ids", "wide_ids", "sizes"]))
    if form == "sizes":
        cuts = sorted(draw(st.lists(st.integers(0, n), min_size=0, max_size=6)))
        shards = pystratum.shard_sizes(np.diff([0, *cuts, n]).tolist())
        n_shards = len(cuts) + 1
    else:
        labels_of_shards = draw(st.lists(
            st.integers(0, 2**40 if form == "wide_ids" else 50), min_size=1, max_size=6,
            unique=True))
        shards = np.asarray(labels_of_shards, dtype=np.int64)[
            np.random.default_rng(abs(seed) % 997).integers(0, len(labels_of_shards), n)]
        n_shards = len(np.unique(shards))
    window = draw(st.integers(1, n_shards + 1))
    shuffle = draw(st.booleans())
    rng = draw(st.sampled_from(["R", "R", "index"]))  # "index": the lazy plans' keyed order
    keywords = dict(seed=(abs(seed) if rng == "index" else seed) if shuffle else None, rng=rng,
                    epoch=draw(st.integers(0, 3)) if shuffle else 0, shuffle=shuffle,
                    shards=shards, window=window, allow_single_batch=True)
    return data, policy, keywords


def _run(call, data, policy, keywords):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", (SmallStrataWarning, StratumTooSmallWarning))
        try:
            return call(data, policy, **keywords), None
        except (TypeError, ValueError) as error:
            return None, error


@settings(max_examples=80, deadline=None)
@given(configuration=configurations())
def test_r_gives_the_core_shard_blocked_batches(r_session, configuration):
    data, policy, keywords = configuration
    core, core_error = _run(lambda *a, **k: pystratum.plan_batches(*a, **k), data, policy,
                            keywords)
    theirs, r_error = _run(lambda *a, **k: pr.stratified_batches(*a, return_weights=True, **k),
                           data, policy, keywords)
    if core_error is not None or r_error is not None:
        assert core_error is not None and r_error is not None, (core_error, r_error)
        assert type(r_error) is type(core_error) or isinstance(r_error, type(core_error))
        assert r_error.argument == _leading_word(str(core_error))
        return
    batches, weights = theirs
    assert len(batches) == len(core.batches)
    for got, want in zip(batches, core.batches):
        np.testing.assert_array_equal(got, want)
    if core.weights is None:
        assert weights is None
    else:
        for b, got in enumerate(weights):
            np.testing.assert_allclose(got, core.batch_weights(b), rtol=1e-15)


@pytest.mark.parametrize("shards, argument", [
    ([0, 1, 2], "shards"),                      # wrong length
    ([-1] + [0] * 9, "shards"),                  # a negative id: not shifted into range
    ([0.5] * 10, "shards"),                      # not whole
    (["a"] * 10, "shards"),                      # strings
])
def test_bad_shards_are_refused_alike(r_session, shards, argument):
    y = [0, 1] * 5
    core, core_error = _run(pystratum.stratified_batches, y, 1,
                            dict(seed=1, rng="R", shards=shards))
    theirs, r_error = _run(pr.stratified_batches, y, 1, dict(seed=1, rng="R", shards=shards))
    assert core_error is not None and r_error is not None
    assert type(r_error) is type(core_error)
    assert r_error.argument == argument == _leading_word(str(core_error))


def test_id_zero_is_a_shard_like_any_other(r_session):
    """Ids are labels: 0 and 2**31 (a double in R) are shards, nothing is shifted."""
    y = [0, 1] * 6
    for ids in ([0] * 6 + [2**31] * 6, [5] * 6 + [6] * 6):
        core = pystratum.stratified_batches(y, 2, seed=4, rng="R", shards=ids)
        theirs = pr.stratified_batches(y, 2, seed=4, rng="R", shards=ids)
        assert [b.tolist() for b in theirs] == [b.tolist() for b in core]


def test_the_mlr3torch_sampler_takes_shards_through_the_bindings(r_session):
    """A column name or ids reach R's batch_sampler_stratified; R checks them before torch."""
    for bad, error, argument in ((dict(shards=["a", "b"]), TypeError, "shards"),
                                 (dict(shards=[0.5, 1]), ValueError, "shards"),
                                 (dict(window=3), ValueError, "window"),
                                 (dict(shards="shard", window=0), ValueError, "window")):
        with pytest.raises(error) as raised:
            pr.batch_sampler_stratified(2, seed=1, rng="R", **bad)
        assert raised.value.argument == argument


@pytest.mark.parametrize("window", [1, 3, 10**6])
def test_rng_index_with_many_strata_over_many_shards_matches_the_core(r_session, window):
    """The lazy order with 600 strata spread over 2,400 shards (R built it per stratum over
    every block; now per (stratum, block) pair that holds rows): the same batches. A stratum
    of 300 rows over 3 shards gives blocks of more than 64 rows (the cycle-walking path)."""
    codes = np.r_[np.tile(np.arange(600), 4), np.full(300, 600)]
    generator = np.random.default_rng(7)
    shards = np.r_[generator.integers(0, 2400, 2400), generator.integers(0, 3, 300)]
    for epoch in (0, 2):
        keywords = dict(seed=11, rng="index", epoch=epoch, shards=shards, window=window,
                        allow_single_batch=True)
        core = pystratum.stratified_batches(codes, 1, **keywords)
        theirs = pr.stratified_batches(codes, 1, **keywords)
        assert [b.tolist() for b in theirs] == [b.tolist() for b in core]


R_REFUSAL = """function(code) {
  scope = list2env(list(y = rep(0:1, 5)), parent = asNamespace("pystratum"))
  tryCatch(eval(parse(text = code), envir = scope), pystratum_error = function(e) conditionMessage(e))
}"""


def _core_refusal(call):
    with pytest.raises(ValueError) as raised:
        call()
    return str(raised.value)


def _in_r_words(message: str) -> str:
    """The core's message as R says it: 1-based positions, R's way to flatten an array."""
    message = re.sub(r"\[(\d+)\]=", lambda m: f"[{int(m.group(1)) + 1}]=", message)
    return message.replace("array.reshape(-1)", "as.vector(x)")


@pytest.mark.parametrize("r_code, core_call", [
    ("stratified_batches(y, 1, seed = 1, shards = c(0, -1, rep(0, 8)))",
     lambda: pystratum.stratified_batches([0, 1] * 5, 1, seed=1, shards=[0, -1] + [0] * 8)),
    ("shard_sizes(c(3, -1))", lambda: pystratum.shard_sizes([3, -1])),
    ("stratified_batches(y, 1, seed = 1, shards = matrix(0L, 2, 5))",
     lambda: pystratum.stratified_batches([0, 1] * 5, 1, seed=1,
                                          shards=np.zeros((2, 5), dtype=int))),
    ("shard_sizes(matrix(1:4, 2))", lambda: pystratum.shard_sizes(np.ones((2, 2), dtype=int))),
])
def test_shard_refusals_say_the_core_s_words(r_session, r_code, core_call):
    """Negative ids, negative sizes, a matrix: R's message is the core's, word for word."""
    with r_session.calling():
        said = r_function(r_session, R_REFUSAL)(r_code)[0]
    assert said == _in_r_words(_core_refusal(core_call))


def test_ids_beyond_what_r_holds_say_the_core_s_words(r_session):
    """R's numbers beyond 2**31 - 1 are doubles: its refusal of 2**60 opens as the core's for
    floats and gives the core's fix for ids beyond int64."""
    with r_session.calling():
        said = r_function(r_session, R_REFUSAL)(
            "stratified_batches(y, 1, seed = 1, shards = c(2^60, rep(0, 9)))")[0]
    as_floats = _core_refusal(lambda: pystratum.stratified_batches(
        [0, 1] * 5, 1, seed=1, shards=np.r_[2.0**60, np.zeros(9)]))
    beyond_int64 = _core_refusal(lambda: pystratum.stratified_batches(
        [0, 1] * 5, 1, seed=1, shards=np.r_[np.uint64(2**63), np.zeros(9, dtype=np.uint64)]))
    assert said.startswith(as_floats.split(", got ")[0] + ", got shards[1]=1152921504606846976")
    assert said.endswith(beyond_int64.rsplit(". ", 1)[1])
