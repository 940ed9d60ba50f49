"""ClassesPerBatch(classes="uniform"): equal appearances, rows without replacement across epochs."""

import itertools
import math
import warnings

import numpy as np
import pytest
from hypothesis import example, given, settings, strategies as st

from pystratum import plan_batches
from pystratum.engine._assemble_slots import pass_sequence
from pystratum.policies import ClassesPerBatch, SmallStrataWarning, policy_from_params
from pystratum.streams._index import permute_ranks, round_keys
from pystratum.strata._encode import encode_strata
from _strategies import plan_allowing_one_batch
from test_classes_per_batch import refused, run_cli


def labels_of(sizes, seed=0):
    """Rows of stratum s labelled s, shuffled (first appearance differs from code order)."""
    return np.random.default_rng(seed).permutation(np.repeat(np.arange(len(sizes)), sizes))


def reference_passes(size, k, key, turn, count):
    """Passes 0 .. count-1 of one stratum, walked one after the other (the docstring's rule).

    Served positions: each pass the keyed bijection, then, if it begins inside a slot
    (t = p * N mod K > 0 rows of the previous pass there, N >= K), its first K positions
    reordered: the first K - t not among the previous pass's last t served, then the others.
    """
    passes = []
    for p in range(count):
        raw = (np.arange(size) if key is None else
               permute_ranks(np.arange(size), size, round_keys(key, p, [turn])[:, 0]))
        raw = [int(v) for v in raw]
        t = p * size % k
        if p >= 1 and size >= k and t:
            tail = set(passes[-1][size - t:])
            head = raw[:k]
            free = [v for v in head if v not in tail][:k - t]
            raw[:k] = free + [v for v in head if v not in free]
        passes.append(raw)
    return passes


def uniform_windows(y, policy, epochs, key):
    """Each epoch's served positions per stratum (code order), from the engine's pass_sequence."""
    encoded = encode_strata(y)
    out = []
    for epoch in range(epochs):
        slots = policy.allocate(encoded, epoch).slots
        counts = slots.n_slots * slots.width
        run_start = (np.cumsum(slots.n_slots) - slots.n_slots)  # strata in code order
        sequence = pass_sequence(np.arange(len(y)), encoded.sizes, encoded.first_rows, slots,
                                 run_start, key)
        starts = np.cumsum(counts) - counts
        out.append([(int(slots.pass_starts[s]),
                     sequence[starts[s]:starts[s] + counts[s]]) for s in range(encoded.n_strata)])
    return encoded, out


@pytest.mark.parametrize("sizes, k", [([4, 5, 6, 7, 9, 13, 3], 4), ([5, 6, 7, 8], 5),
                                      ([3, 4, 5, 11], 3), ([2, 7, 10], 2), ([1, 2, 3, 8], 4),
                                      ([70, 5, 130, 9], 7)])  # domains over SMALL_DOMAIN too
@pytest.mark.parametrize("key", [None, 12345])
def test_pass_sequence_is_the_passes_walked_in_order(sizes, k, key):
    """The closed form (offsets and reordered heads) equals walking every pass from pass 0."""
    y = np.repeat(np.arange(len(sizes)), sizes)  # grouped rows are then 0..N-1
    policy = ClassesPerBatch(2, k, classes="uniform", small="repeat")
    encoded, windows = uniform_windows(y, policy, 7, key)
    turn = np.empty(len(sizes), dtype=np.int64)
    turn[np.argsort(encoded.first_rows, kind="stable")] = np.arange(len(sizes))
    consumed = np.zeros(len(sizes), dtype=np.int64)
    for epoch, window in enumerate(windows):
        for s, (start, rows) in enumerate(window):
            assert start == consumed[s]  # epoch e continues where epoch e-1 stopped
            size = sizes[s]
            end = start + rows.shape[0]
            walked = reference_passes(size, k, key, int(turn[s]), end // size + 1)
            flat = [encoded.offsets[s] + v for v in itertools.chain(*walked)][start:end]
            assert rows.tolist() == flat
            consumed[s] = end


def check_uniform_epoch(y, policy, plan):
    """One epoch's batches: exact P x K, distinct strata, no row twice unless small='repeat'."""
    p, k = policy.classes_per_batch, policy.per_class
    sizes = np.bincount(y)
    for batch, strata in zip(plan.batches, plan.batch_strata):
        assert batch.shape[0] == p * k
        slots = y[batch].reshape(p, k)
        assert (slots == slots[:, :1]).all()
        assert np.array_equal(slots[:, 0], strata)
        assert np.unique(slots[:, 0]).shape[0] == p
        if np.unique(batch).shape[0] < batch.shape[0]:
            assert policy.small == "repeat"
            for row in batch.reshape(p, k):
                if np.unique(row).shape[0] < k:
                    assert sizes[y[row[0]]] < k
    return np.bincount(np.asarray(plan.batch_strata).ravel(), minlength=sizes.shape[0])


@settings(max_examples=120, deadline=None)
@given(sizes=st.lists(st.integers(1, 30), min_size=1, max_size=10), p=st.integers(1, 5),
       k=st.integers(1, 6), small=st.sampled_from(["error", "drop", "repeat"]),
       seed=st.integers(0, 2**31 - 2), rng=st.sampled_from(["numpy", "R", "index"]),
       length=st.sampled_from([None, 1, 7]))
@example(sizes=[4, 5, 6, 7, 4], p=2, k=4, small="error", seed=3, rng="index", length=None)
@example(sizes=[9, 1, 2, 30], p=3, k=3, small="repeat", seed=1, rng="R", length=7)
def test_every_uniform_guarantee_over_epochs(sizes, p, k, small, seed, rng, length):
    y = labels_of(sizes, seed % 5)
    policy = ClassesPerBatch(p, k, classes="uniform", small=small, num_batches=length)
    counts = np.asarray(sizes)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", SmallStrataWarning)
        if refused(y, policy, sizes, seed=seed, rng=rng):
            return
        plans = [plan_allowing_one_batch(y, policy, seed=seed, rng=rng, epoch=e)
                 for e in range(5)]
        again = plan_batches(y, policy, seed=seed, rng=rng, epoch=3, allow_single_batch=True)
    served = counts >= k if small == "drop" else np.ones(len(sizes), dtype=bool)
    rows = int(counts[served].sum())
    appearances = np.zeros(len(sizes), dtype=np.int64)
    uses = np.zeros(len(y), dtype=np.int64)
    for plan in plans:
        assert plan.num_batches == (length or math.ceil(rows / (p * k)))
        epoch = check_uniform_epoch(y, policy, plan)
        assert (epoch[~served] == 0).all()
        assert epoch[served].max() - epoch[served].min() <= 1  # per epoch, +-1
        appearances += epoch
        # Over epochs 0..e too: the +1 appearances rotate.
        assert appearances[served].max() - appearances[served].min() <= 1
        uses += np.bincount(plan.order, minlength=len(y))
        for s in np.flatnonzero(served):
            mine = uses[y == s]
            # Rows without replacement across epochs: counts differ by at most one,
            # and add up to the stratum's slots times K.
            assert mine.max() - mine.min() <= 1
            assert mine.sum() == appearances[s] * k
    assert (uses[~served[y]] == 0).all()
    assert np.array_equal(again.order, plans[3].order)


def test_serve_counts_are_equal_when_the_passes_come_round():
    sizes = [4, 8, 12, 16]  # 40 rows, P*K = 4: 10 batches, 5 slots (10 rows) per stratum
    y = labels_of(sizes, 1)
    policy = ClassesPerBatch(2, 2, classes="uniform")
    uses = np.zeros(len(y), dtype=np.int64)
    for epoch in range(12):  # 120 rows per stratum: whole passes of 4, 8 and 12 rows
        uses += np.bincount(plan_batches(y, policy, seed=2, epoch=epoch).order,
                            minlength=len(y))
    assert uses[y == 0].tolist() == [30] * 4
    assert set(uses[y == 1].tolist()) == {15}
    assert set(uses[y == 2].tolist()) == {10}
    assert sorted(uses[y == 3].tolist()) == [7] * 8 + [8] * 8


def test_any_epoch_is_computed_directly_and_equals_walking_there():
    y = labels_of([5, 9, 14, 4, 7, 21, 6], 3)
    policy = ClassesPerBatch(3, 4, classes="uniform")
    far = plan_batches(y, policy, seed=8, rng="numpy", epoch=10**9)
    check_uniform_epoch(y, policy, far)
    slots = policy.allocate(encode_strata(y), 10**9).slots
    assert (slots.pass_starts >= 10**9 * 4).all()  # far into every pass sequence
    for rng in ("R", "torch"):
        walked = [plan_batches(y, policy, seed=8, rng=rng, epoch=e).order for e in range(4)]
        again = plan_batches(y, policy, seed=8, rng=rng, epoch=3)
        assert np.array_equal(again.order, walked[3])


def test_extras_rotate_and_the_formula_holds():
    sizes = [7] * 10
    y = labels_of(sizes)
    policy = ClassesPerBatch(3, 2, classes="uniform")  # B = ceil(70/6) = 12, T = 36, S' = 10
    encoded = encode_strata(y)
    order = np.argsort(encoded.first_rows, kind="stable")
    total = np.zeros(10, dtype=np.int64)
    for epoch in range(10):
        slots = policy.allocate(encoded, epoch).slots
        assert slots.num_batches == 12
        n = slots.n_slots[order]
        assert sorted(n.tolist()) == [3] * 4 + [4] * 6
        extra = np.flatnonzero(n == 4)
        assert set(extra.tolist()) == {(epoch * 6 + j) % 10 for j in range(6)}
        assert np.array_equal(slots.pass_starts[order] // 2, total)
        total += n
    assert set(total.tolist()) == {36}  # 10 epochs: every stratum equally often


def test_statistics_of_a_fixed_seed():
    """Which strata meet in a batch is uniform; appearances stay within one over 300 epochs.

    Inside an epoch a stratum meets the strata beside its run in the layout (a fresh random
    order each epoch), several times each: so the test counts, per pair, the epochs in which
    it meets, which is a binomial count with the same probability for every pair.
    """
    from scipy import stats

    sizes = [12, 30, 9, 18, 25, 14, 40, 11, 16, 22, 10, 33]
    y = labels_of(sizes, 4)
    policy = ClassesPerBatch(3, 3, classes="uniform")
    meet = np.zeros((12, 12), dtype=np.int64)  # epochs in which two strata meet
    appearances = np.zeros(12, dtype=np.int64)
    spread = []
    for epoch in range(300):
        plan = plan_batches(y, policy, seed=11, epoch=epoch)
        strata = np.asarray(plan.batch_strata)
        met = np.zeros((12, 12), dtype=bool)
        for a, b in itertools.combinations(range(3), 2):
            met[np.minimum(strata[:, a], strata[:, b]), np.maximum(strata[:, a], strata[:, b])] = 1
        meet += met
        appearances += np.bincount(strata.ravel(), minlength=12)
        spread.append(int(appearances.max() - appearances.min()))
    assert max(spread) <= 1
    pairs = meet[np.triu_indices(12, 1)]
    # Every pair of strata meets about equally often (chi-square against uniform).
    assert stats.chisquare(pairs).pvalue > 0.001
    share = pairs.mean() / 300  # binomial(300, share) per pair: none 5 sd off
    assert np.abs(pairs - pairs.mean()).max() < 5 * math.sqrt(300 * share * (1 - share))


def test_no_shuffle_serves_rows_in_row_order():
    y = np.repeat([0, 1, 2], [4, 6, 5])
    plan = plan_batches(y, ClassesPerBatch(2, 2, classes="uniform"), shuffle=False)
    slots = sorted(tuple(row) for b in plan.batches for row in b.reshape(2, 2).tolist())
    # 4 batches, 8 slots: 3, 3 and 2 slots (6, 6, 4 rows), passes in row order.
    assert slots == [(0, 1), (0, 1), (2, 3), (4, 5), (6, 7), (8, 9), (10, 11), (12, 13)]


def test_num_batches_and_params():
    policy = ClassesPerBatch(2, 3, classes="uniform", num_batches=50)
    assert policy.params()["num_batches"] == 50
    assert policy_from_params(**policy.to_dict()) == policy
    assert "num_batches" not in ClassesPerBatch(2, 3).params()
    assert plan_batches(labels_of([5, 6, 7]), policy, seed=1).num_batches == 50
    with pytest.raises(ValueError, match=r"^num_batches=5 sets the epoch's length for "
                                         r"classes='uniform' only.*Pass classes='uniform'"):
        ClassesPerBatch(2, 3, num_batches=5)
    for bad, error in ((0, ValueError), (2.5, TypeError), ("3", TypeError), (True, TypeError)):
        with pytest.raises(error, match=r"^num_batches"):
            ClassesPerBatch(2, 3, classes="uniform", num_batches=bad)
    with pytest.raises(ValueError, match=r"^num_batches=100000000 makes an epoch"):
        ClassesPerBatch(2, 3, classes="uniform", num_batches=10**8).allocate(
            encode_strata(labels_of([5, 6, 7])), 0)


def test_cli_plans_uniform(tmp_path):
    import json

    y = labels_of([9, 4, 13, 7, 22, 5, 16], 2)
    path = tmp_path / "d.csv"
    path.write_text("x,label\n" + "".join(f"{i},c{v}\n" for i, v in enumerate(y)))
    labels = np.asarray([f"c{v}" for v in y])
    args = ["--stratum", "label", "--policy", "classes_per_batch", "--param",
            "classes_per_batch=3", "--param", "per_class=4", "--param", "classes=uniform",
            "--seed", 4]
    done = run_cli("plan", path, *args, "--format", "json", "--batches", "--epoch", 2)
    assert done.returncode == 0, done.stderr
    expected = plan_batches(labels, ClassesPerBatch(3, 4, classes="uniform"), seed=4, epoch=2)
    assert json.loads(done.stdout)["batches"] == [b.tolist() for b in expected.batches]
    done = run_cli("plan", path, *args, "--param", "num_batches=11")
    assert done.returncode == 0, done.stderr
    assert "11 batches (numbered from 0)" in done.stdout
    assert "every batch holds 3 distinct classes x 4 rows: all 11 batches do" in done.stdout
    png = tmp_path / "u.png"
    done = run_cli("plot", path, *args, "--output", png)
    assert done.returncode == 0 and png.stat().st_size > 1000, done.stderr
