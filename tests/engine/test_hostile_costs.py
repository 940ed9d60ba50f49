"""Per-call costs (issue 30, item 1): an epoch's work is O(rows served + strata + batches).

The guards price rows; the code must not pay per stream call, per pass or
per refill beyond a bounded constant, or the request is refused before any
drawing. Nothing here is timed: the tests count calls with wrappers, or
assert the refusal.
"""

import sys
import warnings
from collections import Counter

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import pystratum.policies._draw_cost as draw_cost
import pystratum.streams._index as index_stream
import pystratum.streams._r as r_stream
from pystratum import plan_batches
from pystratum.engine._assemble_slots import partial_shuffles
from pystratum.policies import ClassesPerBatch, Downsample, SmallStrataWarning, Targets
from pystratum.policies._draw_cost import check_recycled_passes, repeat_draw_cost
from pystratum.strata._members import members_of_runs


class CallCounter:
    """Wraps ``module.name`` for one test and counts its calls."""

    def __init__(self, monkeypatch, module, name):
        self.calls = 0
        original = getattr(module, name)

        def counted(*args, **kwargs):
            self.calls += 1
            return original(*args, **kwargs)

        monkeypatch.setattr(module, name, counted)


class OverBudget(Exception):
    """More Python and C calls than the budget: the work grows with something it must not."""


class CallBudget:
    """Counts every Python and C function call inside the block; raises past ``limit``.

    A cost that grows per row, per pass or per refill in Python is stopped
    at once (instead of hanging), and the count shows the work done.
    """

    def __init__(self, limit):
        self.limit = limit
        self.calls = 0

    def _count(self, frame, event, arg):
        if event in ("call", "c_call"):
            self.calls += 1
            if self.calls > self.limit:
                raise OverBudget(f"over {self.limit:,} calls")

    def __enter__(self):
        self._previous = sys.getprofile()
        sys.setprofile(self._count)
        return self

    def __exit__(self, *exc):
        sys.setprofile(self._previous)
        return False


def test_partial_shuffles_cost_no_step_loop_per_value_taken():
    # One refill of 10,000 values (an extra slot of per_class=10**4) replayed the
    # sample.int loop as ~take^2 / 2 numpy calls: minutes for ClassesPerBatch(2, 10**4).
    sizes = np.asarray([30000, 10000, 7], dtype=np.int64)
    takes = np.asarray([10000, 10000, 3], dtype=np.int64)
    with CallBudget(20000) as budget:
        values = partial_shuffles(np.random.default_rng(1), sizes, takes)
    assert budget.calls < 20000
    assert [np.unique(part).shape[0] for part in np.split(values, [10000, 20000])] == \
        [10000, 10000, 3]
    y = np.repeat([0, 1], [3 * 10**4, 10**4])
    with CallBudget(20000):
        plan = plan_batches(y, ClassesPerBatch(2, 10**4), seed=1)
    assert (plan.counts == 10**4).sum() == 2 * plan.num_batches


def test_index_recycled_passes_derive_their_keys_in_one_call(monkeypatch):
    # 1 + 8,000 rows: the one-row stratum is recycled 8,000 times (8,000 passes).
    # Each pass's round keys came from its own cipher call (about 3 ms each).
    keys = CallCounter(monkeypatch, index_stream, "round_keys")
    y = np.array([0] + [1] * 8000)
    plan = plan_batches(y, Targets({0: .5, 1: .5}, 2), seed=1, rng="index")
    assert plan.num_batches == 8000
    assert (plan.counts == 1).all()
    assert keys.calls <= 4


def test_small_class_refills_share_one_word_tap_with_rng_r(monkeypatch):
    # ClassesPerBatch(2, 10**4, small="repeat") on 3 rows: 39,994 refills of one row,
    # each a stream call that set up and rewound its own word tap (11-20 s).
    taps = CallCounter(monkeypatch, r_stream, "_WordTap")
    plan = plan_batches(np.array([0, 1, 2]), ClassesPerBatch(2, 10**4, small="repeat"), seed=1,
                        rng="R")
    assert plan.num_batches == 2 and plan.order.shape[0] == 4 * 10**4
    assert taps.calls <= 2


def test_small_class_refills_priced_before_drawing(monkeypatch):
    # 4 million one-row refills, one call each with rng="R": refused before any draw.
    taps = CallCounter(monkeypatch, r_stream, "_WordTap")
    with CallBudget(200000), pytest.raises(ValueError) as refused:
        plan_batches(np.array([0, 1, 2]), ClassesPerBatch(2, 10**6, small="repeat"), seed=1,
                     rng="R")
    message = str(refused.value)
    assert message.startswith("policy=ClassesPerBatch(classes_per_batch=2, per_class=1000000")
    assert "3,999,994 draw(s) beyond the first of each stratum" in message
    assert "a cost of 8,003,987,994 row draws" in message and "Lower per_class" in message
    assert "rng='index'" in message
    assert taps.calls == 0


@pytest.mark.parametrize("rng", ["numpy", "index"])
def test_small_class_refills_drawn_at_once_are_not_priced(rng):
    # numpy draws every refill in one call, rng="index" keys them: 39,994 refills served.
    with CallBudget(20000):
        plan = plan_batches(np.array([0, 1, 2]), ClassesPerBatch(2, 10**4, small="repeat"),
                            seed=1, rng=rng)
    assert plan.order.shape[0] == 4 * 10**4


@pytest.mark.parametrize("rng", ["numpy", "R", "index"])
def test_recycled_passes_priced_before_drawing(monkeypatch, rng):
    # Targets("balanced", 2, epoch=2**22) on 2 rows: 8.4 million rows served within the
    # rows cap, but one draw per one-row pass (minutes). Refused as the jump guard prices.
    taps = CallCounter(monkeypatch, r_stream, "_WordTap")
    with CallBudget(200000), pytest.raises(ValueError) as refused:
        plan_batches(np.array([0, 1]), Targets("balanced", 2, epoch=2**22), seed=1, rng=rng)
    message = str(refused.value)
    assert message.startswith("policy=Targets(shares='balanced', batch_size=2, epoch=4194304) "
                              "makes an epoch of 4,194,304 batches: 8,388,606 draw(s)")
    assert "a cost of 16,785,600,606 row draws" in message
    assert "over the limit of 100,000,000" in message and "Serve fewer rows" in message
    assert taps.calls == 0


def test_recycled_passes_within_the_price_are_served():
    # 1 + 8,000 rows, balanced batches of 2: 7,999 extra passes cost 16 million row draws.
    y = np.array([0] + [1] * 8000)
    for rng in ["numpy", "R", "index"]:
        plan = plan_batches(y, Targets({0: .5, 1: .5}, 2), seed=3, rng=rng)
        assert plan.num_batches == 8000 and (plan.counts == 1).all()


def test_recycled_passes_of_a_large_epoch_are_priced_by_what_it_serves():
    # Targets({0: .5, 1: .5}, 256) on 10**8 rows with a 3% stratum: 757,813 batches, a
    # second pass of the 97% stratum and 32 more of the 3%: 193,066,000 row draws for
    # 194,000,128 rows served. Linear in the epoch: within 10**8 plus the rows served
    # (refused by a fixed 10**8). The allocation only (O(strata) members): no plan built.
    members = members_of_runs([97_000_000, 3_000_000])
    policy = Targets({0: .5, 1: .5}, 256)
    allocation = policy.allocate(members, 0)
    cuts = allocation.cuts
    assert cuts.shape[1] - 1 == 757_813 and cuts[:, -1].tolist() == [97_000_064] * 2
    passes = -(-cuts[:, -1] // members.sizes)
    assert passes.tolist() == [2, 33]
    assert repeat_draw_cost(passes, members.sizes).cost == 193_066_000
    check_recycled_passes(policy, cuts, members.sizes, allocation.pool_sizes,
                          "an epoch of 757,813 batches")


@pytest.mark.parametrize("rng", ["numpy", "R", "index"])
def test_repeat_draws_limit_is_the_fixed_limit_plus_the_rows_served(monkeypatch, rng):
    # 970 + 30 rows, balanced batches of 256: 8 batches serve 2,048 rows; a second pass of
    # the large stratum and 34 more of the small cost 1,990 rows + 35 calls = 71,990 row
    # draws. With the fixed part at 71,990 - 2,048 the epoch is served, one less refused.
    y = np.array([0] * 970 + [1] * 30)
    policy = Targets({0: .5, 1: .5}, 256)
    monkeypatch.setattr(draw_cost, "MAX_SKIPPED_DRAWS", 71_990 - 2_048)
    plan = plan_batches(y, policy, seed=3, rng=rng)
    assert plan.num_batches == 8 and plan.order.shape[0] == 2_048
    monkeypatch.setattr(draw_cost, "MAX_SKIPPED_DRAWS", 71_990 - 2_048 - 1)
    with pytest.raises(ValueError) as refused:
        plan_batches(y, policy, seed=3, rng=rng)
    message = str(refused.value)
    assert message.startswith("policy=Targets(shares={'0': 0.5, '1': 0.5}, batch_size=256, "
                              "epoch='largest') makes an epoch of 8 batches: 35 draw(s)")
    assert ("a cost of 71,990 row draws (each draw counts its rows plus 2,000 for the call), "
            "over the limit of 69,941 plus the 2,048 rows the epoch serves (71,989). Serve "
            "fewer rows") in message

# The hostile suite: random policies of this family, sizes and epochs at the issue's
# sizes (3 rows and per_class up to 10**6; 2 rows and epoch up to 2**22; 1 + 8,000 rows).
# Every input is served or refused with a ValueError within a budget of calls (never a
# hang, never another exception). OUTCOMES counts them (printed with -s).
OUTCOMES = Counter()
BUDGET = 3_000_000
ESCAPES = (OverflowError, IndexError, MemoryError, KeyError, RecursionError, AttributeError)

sizes_of_strata = st.lists(st.sampled_from([1, 1, 2, 3, 5, 17, 64, 65, 300, 8000]),
                           min_size=1, max_size=4)
epochs_of_targets = st.one_of(st.sampled_from(["largest", "smallest"]),
                              st.sampled_from([1, 2, 7, 100, 4096, 2**16, 2**20, 2**22]))


@st.composite
def cost_policies(draw, n_strata):
    """A policy of this family, or the ValueError its parameters get (a refusal too)."""
    try:
        return _cost_policy(draw, n_strata)
    except ValueError as refusal:
        return refusal


def _cost_policy(draw, n_strata):
    kind = draw(st.sampled_from(["targets", "shares", "downsample", "classes"]))
    if kind in ("targets", "downsample"):
        policy = Targets("balanced", draw(st.integers(max(n_strata, 1), 2 * n_strata + 6)),
                         epoch=draw(epochs_of_targets))
        if kind == "downsample":
            policy = Downsample({0: draw(st.sampled_from([0.01, 0.3, 1.0]))}, policy)
        return policy
    if kind == "shares":
        # Eighths adding up to one (shares are exact to 1e-6), some of them 0.
        cuts = sorted(draw(st.lists(st.integers(0, 8), min_size=n_strata - 1,
                                    max_size=n_strata - 1)))
        parts = np.diff([0, *cuts, 8]).tolist()
        shares = {s: part / 8 for s, part in enumerate(parts)}
        return Targets(shares, draw(st.integers(1, 12)), epoch=draw(epochs_of_targets))
    return ClassesPerBatch(draw(st.integers(1, 3)),
                           draw(st.sampled_from([1, 2, 5, 64, 10**4, 10**5])),
                           small=draw(st.sampled_from(["repeat", "drop", "error"])),
                           classes=draw(st.sampled_from(["proportional", "uniform"])))


@settings(max_examples=200, deadline=None)
@given(st.data())
def test_hostile_costs_are_served_or_refused_within_a_call_budget(data):
    sizes = data.draw(sizes_of_strata)
    policy = data.draw(cost_policies(len(sizes)))
    rng = data.draw(st.sampled_from(["numpy", "R", "index"]))
    epoch = data.draw(st.integers(0, 3))
    if isinstance(policy, ValueError):
        OUTCOMES["refused: policy parameters"] += 1
        return
    y = np.repeat(np.arange(len(sizes)), sizes)
    try:
        with warnings.catch_warnings(), CallBudget(BUDGET):
            warnings.simplefilter("ignore", SmallStrataWarning)
            plan = plan_batches(y, policy, seed=7, rng=rng, epoch=epoch, allow_single_batch=True)
    except ValueError as refusal:
        priced = "draw(s) beyond the first of each stratum" in str(refusal)
        # Other refusals by the argument they name (rows served, per_class, ...).
        OUTCOMES["refused: repeat draws priced" if priced else
                 f"refused: {str(refusal).split('=')[0][:30]}"] += 1
        return
    except ESCAPES as escaped:  # pragma: no cover - the failure this suite looks for
        pytest.fail(f"{type(escaped).__name__} escaped for {policy!r} on sizes {sizes}, "
                    f"rng={rng!r}, epoch={epoch}: {escaped}")
    OUTCOMES["served"] += 1
    assert plan.bounds[-1] == plan.order.shape[0] and (np.diff(plan.bounds) > 0).all()


def test_hostile_cost_outcomes_are_counted():
    # Runs after the suite above (file order): every input tried has an outcome.
    print(f"\nhostile cost inputs: {sum(OUTCOMES.values())}, outcomes: {dict(OUTCOMES)}")
    assert sum(OUTCOMES.values()) >= 200
    assert OUTCOMES["served"] and OUTCOMES["refused: repeat draws priced"]
