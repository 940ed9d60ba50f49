"""The shard-blocked order (docs/SHARDS.md): every policy's guarantees unchanged, every
drawn sequence equal to a plain reading of the specification, hostile arguments refused."""

from __future__ import annotations


import numpy as np
import pytest
from hypothesis import event, given, settings, strategies as st

import pystratum
from pystratum import (ClassesPerBatch, Downsample, FixedSize, MinPerStratum, RStream, Targets,
                       plan_batches, shard_sizes)
from pystratum.engine._assemble import stratum_draws
from pystratum.shards import shard_load_profile
from pystratum.engine._assemble_slots import assemble_slots, partial_shuffles, slot_draws
from pystratum.engine._plan import advance_stream, epoch_draw_sizes
from pystratum.engine._shards import stable_argsort_small
from pystratum.policies import MultiLabel
from pystratum.policies._multi_label import assign_batches
from pystratum.strata._encode import encode_strata
from pystratum.streams._base import make_stream


# --- a plain reading of the specification ------------------------------------------------

class RefDraws:
    """The epoch's group of draws, one call at a time (numpy: the epoch's generator;
    R: the (k+1)-th group of R's stream, earlier groups drawn first)."""

    def __init__(self, rng, seed, epoch, groups_before):
        if rng == "numpy":
            self.generator = np.random.default_rng(np.random.SeedSequence(seed, spawn_key=(epoch,)))
            self.r = None
        else:
            self.generator = None
            self.r = RStream(seed)
            for group in groups_before:
                for size, take in group:
                    self.r.partial_permutation(size, take)

    def draw(self, size, take):
        if self.r is not None:
            return [int(v) for v in self.r.partial_permutation(size, take)]
        if take == size:
            return [int(v) for v in self.generator.permutation(size)]
        return [int(v) for v in self.generator.choice(size, take, replace=False)]


def ref_blocks(shard_perm, window):
    block = {}
    for j, shard in enumerate(shard_perm):
        block[shard] = j // window
    return block


def ref_sort(sequence, key):
    return sorted(sequence, key=key)  # Python's sort is stable


def shard_index(shards, n):
    if isinstance(shards, pystratum.strata._shards.ShardSizes):
        return [h for h, size in enumerate(shards.sizes.tolist()) for _ in range(size)]
    distinct = sorted(set(int(v) for v in shards))
    rank = {value: h for h, value in enumerate(distinct)}
    return [rank[int(v)] for v in shards]


def n_shards_of(shards):
    if isinstance(shards, pystratum.strata._shards.ShardSizes):
        return len(shards)
    return len(set(int(v) for v in shards))


def ref_rank_cut(codes, cuts, permutation):
    """Walk the rows in order; rank r of stratum s goes to the batch whose cut range holds r."""
    n_batches = cuts.shape[1] - 1
    batches = [[] for _ in range(n_batches)]
    seen = {}
    for row in permutation:
        s = int(codes[row])
        r = seen.get(s, 0)
        seen[s] = r + 1
        for b in range(n_batches):
            if cuts[s, b] <= r < cuts[s, b + 1]:
                batches[b].append(row)
    return batches


def ref_plan(codes, policy, shards, window, seed, rng, epoch):
    """The batches the specification gives, by plain loops (policies with batch_order='assembled')."""
    encoded = encode_strata(codes)
    n = len(codes)
    H = n_shards_of(shards)
    index = shard_index(shards, n)
    allocation = policy.allocate(encoded, epoch)

    def group_of(k):
        return [(H, H)] + epoch_draw_sizes(encoded, policy, k)
    draws = RefDraws(rng, seed, epoch, [group_of(k) for k in range(epoch)])
    block = ref_blocks(draws.draw(H, H), window)

    def row_key(row):
        return block[index[row]]

    cuts = np.asarray(allocation.cuts)
    if allocation.pool_sizes is None and not policy.may_recycle():
        permutation = ref_sort(draws.draw(n, n), row_key)
        return ref_rank_cut(encoded.codes, cuts, permutation)
    sequences = {}
    pool = None
    for s, size, take in stratum_draws(allocation, encoded.sizes, encoded.first_rows):
        rows = [int(r) for r in np.flatnonzero(encoded.codes == s)]
        if s not in sequences:
            pool = ref_sort([rows[i] for i in draws.draw(size, take)], row_key)
            sequences[s] = list(pool)
        else:
            indices = ref_sort(draws.draw(size, take), lambda i: row_key(pool[i]))
            sequences[s] += [pool[i] for i in indices]
    turn = np.argsort(encoded.first_rows, kind="stable")
    return [[row for s in turn.tolist() if s in sequences
             for row in sequences[s][cuts[s, b]:cuts[s, b + 1]]]
            for b in range(cuts.shape[1] - 1)]


# --- strategies ------------------------------------------------------------------------

@st.composite
def sharded_data(draw, min_rows=12, max_rows=160):
    n_strata = draw(st.integers(1, 4))
    sizes = draw(st.lists(st.integers(3, max_rows // n_strata), min_size=n_strata,
                          max_size=n_strata))
    n = sum(sizes)
    codes = np.random.default_rng(draw(st.integers(0, 2**16))).permutation(
        np.repeat(np.arange(n_strata), sizes))
    form = draw(st.sampled_from(["ids", "sizes", "own"]))
    if form == "ids":
        ids = draw(st.lists(st.integers(0, 40), min_size=n, max_size=n))
        shards = np.asarray(ids, dtype=draw(st.sampled_from([np.int64, np.int32, np.uint16])))
    elif form == "own":
        # Strata living in their own shards: shard = stratum * 3 + something.
        shards = codes * 3 + np.random.default_rng(draw(st.integers(0, 99))).integers(0, 3, n)
    else:
        count = draw(st.integers(1, 10))
        cut = sorted(draw(st.lists(st.integers(0, n), min_size=count - 1, max_size=count - 1)))
        shards = shard_sizes(np.diff([0, *cut, n]))
    H = n_shards_of(shards)
    window = draw(st.integers(1, H + 2))
    return codes, shards, window


def policies_for(codes):
    sizes = np.bincount(codes)
    n_min = int(sizes.min())
    labels = np.unique(codes).tolist()
    share = {label: 1 / len(labels) for label in labels}
    return [
        MinPerStratum(max(1, n_min // 3), batch_order="assembled"),
        FixedSize(max(len(labels) * 2, len(codes) // 3), batch_order="assembled"),
        Targets(share, max(len(labels), 8), batch_order="assembled"),
        Downsample({labels[0]: 0.5}, MinPerStratum(1), batch_order="assembled"),
    ]


def plan(codes, policy, shards=None, window=1, **kw):
    return plan_batches(codes, policy, shards=shards, window=window, allow_single_batch=True,
                        **kw)


# --- properties ------------------------------------------------------------------------

@settings(max_examples=60)
@given(data=sharded_data(), seed=st.integers(0, 2**20), rng=st.sampled_from(["numpy", "R"]),
       epoch=st.integers(0, 2), which=st.integers(0, 3))
def test_rank_cut_and_sampling_plans_follow_the_specification(data, seed, rng, epoch, which):
    codes, shards, window = data
    policy = policies_for(codes)[which]
    sharded = plan(codes, policy, shards, window, seed=seed, rng=rng, epoch=epoch)
    expected = ref_plan(codes, policy, shards, window, seed, rng, epoch)
    assert [b.tolist() for b in sharded.batches] == expected
    plain = plan(codes, policy, seed=seed, rng=rng, epoch=epoch)
    # The policy's guarantees do not see shards: the same counts and weights per batch.
    np.testing.assert_array_equal(sharded.counts, plain.counts)
    if plain.weights is not None:
        for a, b in zip(sharded.bounds, plain.bounds):
            assert a == b
        for lo, hi in zip(plain.bounds[:-1], plain.bounds[1:]):
            np.testing.assert_array_equal(np.sort(sharded.weights[lo:hi]),
                                          np.sort(plain.weights[lo:hi]))
    if isinstance(policy, MinPerStratum):  # every row once
        assert np.array_equal(np.sort(sharded.order), np.arange(len(codes)))


@settings(max_examples=40)
@given(data=sharded_data(), seed=st.integers(0, 2**20), which=st.integers(0, 3))
def test_split_safe_default_order_keeps_batches_and_counts(data, seed, which):
    codes, shards, window = data
    assembled = policies_for(codes)[which]
    default = type(assembled).__new__(type(assembled))
    default.__dict__.update(assembled.__dict__)
    default.batch_order = None
    a = plan(codes, assembled, shards, window, seed=seed)
    b = plan(codes, default, shards, window, seed=seed)
    assert [sorted(x.tolist()) for x in a.batches] == [sorted(x.tolist()) for x in b.batches]


@pytest.mark.filterwarnings("ignore::pystratum.policies._classes_per_batch.SmallStrataWarning")
@settings(max_examples=40)
@given(data=sharded_data(min_rows=24), seed=st.integers(0, 2**20),
       rng=st.sampled_from(["numpy", "R"]), epoch=st.integers(0, 2),
       small=st.sampled_from(["repeat", "drop"]))
def test_classes_per_batch_draws_follow_the_specification(data, seed, rng, epoch, small):
    codes, shards, window = data
    policy = ClassesPerBatch(min(2, len(np.unique(codes))), 4, small=small)
    encoded = encode_strata(codes)
    n = len(codes)
    H = n_shards_of(shards)
    index = shard_index(shards, n)
    try:
        sharded = plan(codes, policy, shards, window, seed=seed, rng=rng, epoch=epoch)
    except ValueError:
        with pytest.raises(ValueError):
            plan(codes, policy, seed=seed, rng=rng, epoch=epoch)
        return
    slots = policy.allocate(encoded, epoch).slots

    def group_of(k):
        return [(H, H)] + slot_draws(policy.allocate(encoded, k).slots, n)
    planned = slot_draws(slots, n)
    if rng == "numpy":
        generator = np.random.default_rng(np.random.SeedSequence(seed, spawn_key=(epoch,)))
        shard_perm = generator.permutation(H).tolist()
        permutation = generator.permutation(n).tolist()
        layout = generator.permutation(planned[1][0])
        sizes = np.asarray([s for s, _ in planned[2:]], dtype=np.int64)
        takes = np.asarray([t for _, t in planned[2:]], dtype=np.int64)
        flat = partial_shuffles(generator, sizes, takes).tolist() if len(sizes) else []
    else:
        draws = RefDraws("R", seed, epoch, [group_of(k) for k in range(epoch)])
        shard_perm = draws.draw(H, H)
        permutation = draws.draw(n, n)
        layout = np.asarray(draws.draw(*planned[1]))
        flat = [v for size, take in planned[2:] for v in draws.draw(size, take)]
    block = ref_blocks(shard_perm, window)
    permutation = ref_sort(permutation, lambda row: block[index[row]])
    pass0 = {s: [row for row in permutation if encoded.codes[row] == s]
             for s in range(len(encoded.sizes))}
    refills, at = [], 0
    for s, take in zip(slots.refill_strata.tolist(), slots.refill_takes.tolist()):
        picks = flat[at:at + take]
        at += take
        refills += ref_sort(picks, lambda i, s=s: block[index[pass0[s][i]]])
    drawn = [np.asarray(permutation), layout] + ([np.asarray(refills, dtype=np.int64)]
                                                 if refills else [])
    unsharded, layout = assemble_slots(drawn, slots, encoded.codes, encoded.sizes,
                                       encoded.first_rows)
    # The re-deal: stratum s's chunks (slot positions ascending) fill its slots in serving order.
    K, B, P = slots.width, slots.num_batches, slots.per_batch
    chunks, places = {}, {}
    for q in range(B * P):
        place, column = divmod(q, B)
        b = int(np.flatnonzero(layout.columns == column)[0])
        s = int(layout.batch_strata[b, place])
        chunks.setdefault(s, []).append((q, unsharded.order[(b * P + place) * K:
                                                           (b * P + place + 1) * K].tolist()))
    for b in range(B):
        for place in range(P):
            places.setdefault(int(layout.batch_strata[b, place]), []).append((b, place))
    expected = [[None] * P for _ in range(B)]
    for s in chunks:
        for (_, chunk), (b, place) in zip(sorted(chunks[s]), places[s]):
            expected[b][place] = chunk
    assert [b.tolist() for b in sharded.batches] == \
        [[row for chunk in batch for row in chunk] for batch in expected]
    np.testing.assert_array_equal(sharded.batch_strata, layout.batch_strata)
    # Every batch: P classes of K rows; each stratum serves as many rows as without shards.
    plain = plan(codes, policy, seed=seed, rng=rng, epoch=epoch)
    np.testing.assert_array_equal(sharded.counts.sum(axis=0), plain.counts.sum(axis=0))
    assert all(sorted(np.bincount(encoded.codes[b])[np.bincount(encoded.codes[b]) > 0].tolist())
               == [4] * policy.classes_per_batch for b in sharded.batches) or small == "drop"


@settings(max_examples=40)
@given(data=sharded_data(), seed=st.integers(0, 2**20), rng=st.sampled_from(["numpy", "R"]),
       epoch=st.integers(0, 2))
def test_multi_label_draws_follow_the_specification(data, seed, rng, epoch):
    codes, shards, window = data
    n = len(codes)
    labels = np.zeros((n, 3), dtype=bool)
    labels[np.arange(n), codes % 3] = True
    labels[::5, 2] = True
    policy = MultiLabel(num_batches=3, batch_order="assembled")
    sharded = plan(labels, policy, shards, window, seed=seed, rng=rng, epoch=epoch)
    H = n_shards_of(shards)
    index = shard_index(shards, n)
    group = [(H, H), (n, n), (3, 3)]
    draws = RefDraws(rng, seed, epoch, [group] * epoch)
    block = ref_blocks(draws.draw(H, H), window)
    permutation = ref_sort(draws.draw(n, n), lambda row: block[index[row]])
    ties = draws.draw(3, 3)
    assigned = assign_batches(labels, np.asarray(permutation), np.asarray(ties), 1)
    # The re-deal: rows of one label set, in the epoch's order, take that set's batches sorted.
    batch = list(assigned.batch)
    for signature in set(map(tuple, labels.tolist())):
        at = [i for i in range(n) if tuple(labels[permutation[i]].tolist()) == signature]
        for i, b in zip(at, sorted(batch[i] for i in at)):
            batch[i] = b
    expected = [[permutation[i] for i in range(n) if batch[i] == b] for b in range(3)]
    assert [b.tolist() for b in sharded.batches] == expected
    np.testing.assert_array_equal(sharded.counts, assigned.counts)
    assert np.array_equal(np.sort(sharded.order), np.arange(n))


@settings(max_examples=30)
@given(data=sharded_data(), seed=st.integers(0, 2**20), which=st.integers(0, 3))
def test_a_window_of_all_shards_is_the_row_random_order(data, seed, which):
    """W >= H: one block, so every sequence is the draw itself (the stable sort moves nothing)."""
    codes, shards, _ = data
    policy = policies_for(codes)[which]
    H = n_shards_of(shards)
    for window in (H, H + 1, 2**70):
        sharded = plan(codes, policy, shards, window, seed=seed, rng="R")
        identity = ref_plan(codes, policy, shard_sizes([len(codes)]), 1, seed, "R", 0) \
            if H == 1 else None
        expected = ref_plan(codes, policy, shards, H, seed, "R", 0)
        assert [b.tolist() for b in sharded.batches] == expected
        if identity is not None:
            assert [b.tolist() for b in sharded.batches] == identity


def test_shuffle_false_uses_row_order_sorted_by_shard():
    codes = np.array([0, 1] * 10)
    shards = np.array([3, 1] * 5 + [0, 2] * 5)
    sharded = plan(codes, MinPerStratum(2, batch_order="assembled"), shards, 1, shuffle=False)
    rows = sorted(range(20), key=lambda r: sorted(set(shards.tolist())).index(shards[r]))
    assert [b.tolist() for b in sharded.batches] == ref_rank_cut(codes, np.asarray(
        MinPerStratum(2).allocate(encode_strata(codes), 0).cuts), rows)


@pytest.mark.parametrize("rng", ["numpy", "R"])
def test_advance_replays_the_shard_draw(rng):
    """A stream moved to epoch k through advance_stream gives the core's epoch k."""
    codes = np.random.default_rng(3).integers(0, 3, 300)
    shards = np.repeat(np.arange(12), 25)
    for policy in (FixedSize(40, batch_order="assembled"),
                   Targets({0: .5, 1: .3, 2: .2}, 30, batch_order="assembled")):
        encoded = encode_strata(codes)
        stream = make_stream(rng, 11)
        advance_stream(stream, encoded, policy, 3, n_shards=12)
        from pystratum.engine._plan import ShardOrder, plan_from_stream
        from pystratum.strata._shards import read_shards
        order = ShardOrder(read_shards(shards, 300), 2)
        got = plan_from_stream(encoded, policy, stream, epoch=3, rng=rng, shards=order)
        direct = plan(codes, policy, shards, 2, seed=11, rng=rng, epoch=3)
        np.testing.assert_array_equal(got.order, direct.order)
        # and the next epoch continues the stream
        got4 = plan_from_stream(encoded, policy, stream, epoch=4, rng=rng, shards=order)
        np.testing.assert_array_equal(got4.order,
                                      plan(codes, policy, shards, 2, seed=11, rng=rng,
                                           epoch=4).order)


def test_large_inputs_sort_the_drawn_permutation():
    """Large inputs: the in-place kernel path is bypassed with shards; the result is the
    reference sort of the drawn permutation, whichever path the plan without shards takes."""
    codes = np.random.default_rng(0).integers(0, 4, 2**17 + 5)
    shards = shard_sizes(np.full(97, (2**17 + 5) // 97).tolist() + [(2**17 + 5) % 97])
    sharded = plan(codes, FixedSize(512, batch_order="assembled"), shards, 3, seed=5, rng="R")
    draws = RefDraws("R", 5, 0, [])
    block = np.empty(98, dtype=np.int64)
    block[np.asarray(draws.draw(98, 98))] = np.arange(98) // 3
    permutation = np.asarray(draws.draw(len(codes), len(codes)))
    index = np.repeat(np.arange(98), shards.sizes)
    permutation = permutation[np.argsort(block[index[permutation]], kind="stable")]
    plain = plan_batches(codes, FixedSize(512, batch_order="assembled"), seed=5, rng="R",
                         allow_single_batch=True)
    np.testing.assert_array_equal(sharded.counts, plain.counts)
    # Each batch is a contiguous run of the sorted permutation per stratum: check by ranks.
    rank = np.empty(len(codes), dtype=np.int64)
    for s in range(4):
        members = permutation[codes[permutation] == s]
        rank[members] = np.arange(members.shape[0])
    cuts = np.asarray(plain.cuts)
    for b, rows in enumerate(sharded.batches):
        s = codes[rows]
        assert np.all((cuts[s, b] <= rank[rows]) & (rank[rows] < cuts[s, b + 1]))


@given(keys=st.lists(st.integers(0, 2**32 - 1), max_size=300),
       dtype=st.sampled_from([np.uint8, np.uint16, np.uint32]))
def test_stable_argsort_small_is_a_stable_sort(keys, dtype):
    keys = np.asarray(keys, dtype=np.uint64) % (np.iinfo(dtype).max + 1)
    keys = keys.astype(dtype)
    expected = sorted(range(keys.shape[0]), key=lambda i: int(keys[i]))
    assert stable_argsort_small(keys).tolist() == expected


# --- hostile arguments -----------------------------------------------------------------

CODES = np.array([0, 1] * 20)


@given(bad=st.one_of(
    st.just(np.array([0.5] * 40)),
    st.just(np.array([np.nan] + [0.0] * 39)),
    st.just(np.array([np.inf] + [0.0] * 39)),
    st.just(np.array([-1] + [0] * 39)),
    st.just(np.array([0, 1] * 19)),
    st.just(np.array([0] * 41)),
    st.just(np.zeros((40, 1), dtype=np.int64)),
    st.lists(st.integers(-5, -1), min_size=40, max_size=40).map(np.asarray),
    st.lists(st.floats(allow_nan=True).filter(lambda v: v != int(v) if np.isfinite(v) else True),
             min_size=40, max_size=40).map(np.asarray),
))
def test_bad_shard_ids_are_value_errors_naming_shards(bad):
    with pytest.raises(ValueError, match=r"^shards "):
        plan_batches(CODES, 2, seed=1, shards=bad)


@pytest.mark.parametrize("bad", [np.array([True, False] * 20), "abc", 3, None.__class__,
                                 np.array(["a"] * 40), [object()] * 40, 1.5])
def test_shard_ids_of_a_wrong_type_are_type_errors(bad):
    with pytest.raises(TypeError, match=r"^shards "):
        plan_batches(CODES, 2, seed=1, shards=bad)


@given(ids=st.lists(st.integers(0, 100), min_size=40, max_size=40),
       dtype=st.sampled_from([np.int8, np.uint8, np.int16, np.uint16, np.int32, np.uint32,
                              np.int64, np.uint64, np.float16, np.float32, np.float64]),
       form=st.sampled_from(["array", "list"]), seed=st.integers(0, 99))
def test_whole_ids_of_any_numeric_dtype_are_the_same_shards(ids, dtype, form, seed):
    values = np.asarray(ids).astype(dtype)
    given_ids = values if form == "array" else values.tolist()
    a = plan_batches(CODES, 2, seed=seed, shards=given_ids, window=2)
    b = plan_batches(CODES, 2, seed=seed, shards=np.asarray(ids, dtype=np.int64), window=2)
    np.testing.assert_array_equal(a.order, b.order)


def test_integral_floats_and_sparse_ids_are_labels():
    ids = np.repeat([7.0, 1000.0, 3.0, 2**40], 10)
    a = plan_batches(CODES, 2, seed=1, shards=ids, window=1)
    b = plan_batches(CODES, 2, seed=1, shards=np.repeat([1, 2, 0, 3], 10), window=1)
    np.testing.assert_array_equal(a.order, b.order)


@given(sizes=st.lists(st.integers(0, 30), min_size=1, max_size=6))
def test_shard_sizes_must_sum_to_the_rows(sizes):
    if sum(sizes) == 40:
        plan_batches(CODES, 2, seed=1, shards=shard_sizes(sizes))
    else:
        with pytest.raises(ValueError, match=r"^shards must cover every row"):
            plan_batches(CODES, 2, seed=1, shards=shard_sizes(sizes))


@pytest.mark.parametrize("bad, error", [([-1, 41], ValueError), ([], ValueError),
                                        ([1.5, 38.5], ValueError), ([True, 39], TypeError),
                                        ([[40]], ValueError), (40, TypeError),
                                        ([float("nan"), 40], ValueError)])
def test_bad_shard_sizes(bad, error):
    with pytest.raises(error, match=r"^shards "):
        shard_sizes(bad)


def test_empty_shards_keep_their_place():
    # Sizes with zeros: the empty shards take positions in the shard order (H = 5, not 3).
    a = plan_batches(CODES, 2, seed=4, rng="R", shards=shard_sizes([10, 0, 20, 0, 10]),
                     allow_single_batch=True)
    draws = RefDraws("R", 4, 0, [])
    assert len(draws.draw(5, 5)) == 5
    permutation = draws.draw(40, 40)
    assert sorted(a.order.tolist()) == list(range(40))
    assert sorted(permutation) == list(range(40))


@pytest.mark.parametrize("window, error", [(0, ValueError), (-3, ValueError), (1.5, TypeError),
                                           (True, TypeError), (2.0, TypeError), ("2", TypeError),
                                           (None, TypeError)])
def test_bad_windows(window, error):
    with pytest.raises(error, match=r"^window "):
        plan_batches(CODES, 2, seed=1, shards=np.zeros(40, dtype=int), window=window)


def test_window_without_shards_is_refused():
    with pytest.raises(ValueError, match=r"^window=3 has no effect without shards"):
        plan_batches(CODES, 2, seed=1, window=3)


def test_uniform_classes_are_refused_naming_shards():
    with pytest.raises(ValueError, match=r"^shards cannot be honoured by ClassesPerBatch"):
        plan_batches(CODES, ClassesPerBatch(2, 2, classes="uniform"), seed=1,
                     shards=np.zeros(40, dtype=int))


# --- the bounds (docs/SHARDS.md, "What W trades") ----------------------------------------

def epoch_blocks(shards, window, seed, rng="numpy"):
    """The block of every row in epoch 0 (the spec's first draw), as an array."""
    H = n_shards_of(shards)
    block = ref_blocks(RefDraws(rng, seed, 0, []).draw(H, H), window)
    index = shard_index(shards, sum(shards.sizes) if hasattr(shards, "sizes") else len(shards))
    return np.asarray([block[h] for h in index]), np.asarray(index)


@st.composite
def layout_case(draw):
    """Strata spread over shards, or living in their own shards (one stratum per shard)."""
    n_strata = draw(st.integers(1, 3))
    rows_per_shard = draw(st.integers(4, 40))
    counts = draw(st.lists(st.integers(1, 8), min_size=n_strata, max_size=n_strata))
    own = draw(st.booleans())
    shard_rows = np.repeat(np.arange(sum(counts)), rows_per_shard)
    if own:
        codes = np.repeat(np.repeat(np.arange(n_strata), counts), rows_per_shard)
    else:
        codes = np.random.default_rng(draw(st.integers(0, 999))).integers(
            0, n_strata, shard_rows.shape[0])
        codes[:n_strata] = np.arange(n_strata)  # every stratum present
    shards = shard_sizes([rows_per_shard] * sum(counts))
    window = draw(st.integers(1, max(1, sum(counts) // 2)))
    return codes, shards, window, own


def single_pass_policies(codes):
    sizes = np.bincount(codes)
    labels = np.unique(codes).tolist()
    shares = {label: int(sizes[label]) / sizes.sum() for label in labels}
    batch = -(-int(sizes.sum()) // max(1, int(sizes.min()) // 2)) + len(labels)
    return [MinPerStratum(max(1, int(sizes.min()) // 4)), FixedSize(batch),
            Downsample({labels[0]: 0.5}, MinPerStratum(1)),
            Targets(shares, batch, epoch="largest")]


def blocks_per_batch(batches, codes, row_block):
    """{stratum: [(batch, min block, max block), ...]} in serving order."""
    out = {}
    for b, rows in enumerate(batches):
        for s in np.unique(codes[rows]).tolist():
            blocks = row_block[rows[codes[rows] == s]]
            out.setdefault(s, []).append((b, int(blocks.min()), int(blocks.max())))
    return out


def sweeps_forward(visits):
    return all(a[2] <= b[1] for a, b in zip(visits, visits[1:]))


@settings(max_examples=40)
@given(case=layout_case(), seed=st.integers(0, 2**16), which=st.integers(0, 3))
def test_lemma_1_every_stratum_sweeps_its_blocks_forward(case, seed, which):
    codes, shards, window, _ = case
    policy = single_pass_policies(codes)[which]
    plan = plan_batches(codes, policy, seed=seed, shards=shards, window=window,
                        allow_single_batch=True)
    row_block, _ = epoch_blocks(shards, window, seed)
    allocation = policy.allocate(encode_strata(codes), 0)
    if policy.may_recycle() and np.any(allocation.cuts[:, -1] >
                                       (allocation.pool_sizes if allocation.pool_sizes is not None
                                        else np.bincount(codes))):
        return  # a recycled stratum: one sweep per pass (tested below)
    event("single pass")
    for visits in blocks_per_batch(plan.batches, codes, row_block).values():
        assert sweeps_forward(visits)


@settings(max_examples=30)
@given(seed=st.integers(0, 2**16), window=st.integers(1, 4), n_classes=st.sampled_from([2, 4, 6]),
       own=st.booleans())
def test_lemma_1_holds_per_class_and_per_label_set_after_the_deal(seed, window, n_classes, own):
    """ClassesPerBatch and MultiLabel: each class (label set) is read in sequence order."""
    K = 4
    codes = np.repeat(np.arange(n_classes), 3 * K)  # multiples of K: no refills, one pass
    if not own:
        codes = np.random.default_rng(seed).permutation(codes)
    shards = shard_sizes([6] * (codes.shape[0] // 6))
    row_block, _ = epoch_blocks(shards, window, seed)
    policy = ClassesPerBatch(2, K)
    assert policy.allocate(encode_strata(codes), 0).slots.refill_takes.shape[0] == 0  # one pass
    plan = plan_batches(codes, policy, seed=seed, shards=shards, window=window)
    for visits in blocks_per_batch(plan.batches, codes, row_block).values():
        assert sweeps_forward(visits)
    labels = np.zeros((codes.shape[0], 3), dtype=bool)
    labels[np.arange(codes.shape[0]), codes % 3] = True
    labels[codes == 0, 1] = True
    signature = labels @ np.array([1, 2, 4])
    plan = plan_batches(labels, MultiLabel(num_batches=3), seed=seed, shards=shards,
                        window=window)
    for visits in blocks_per_batch(plan.batches, signature, row_block).values():
        assert sweeps_forward(visits)


@settings(max_examples=40)
@given(case=layout_case(), seed=st.integers(0, 2**16), which=st.integers(0, 2))
def test_theorem_1_a_stratum_reads_at_most_two_blocks(case, seed, which):
    codes, shards, window, _ = case
    policy = single_pass_policies(codes)[which]
    plan = plan_batches(codes, policy, seed=seed, shards=shards, window=window,
                        allow_single_batch=True)
    row_block, _ = epoch_blocks(shards, window, seed)
    served = np.zeros(codes.shape[0], dtype=bool)
    served[plan.order] = True
    for s in np.unique(codes).tolist():
        taken = [int(np.count_nonzero(codes[rows] == s)) for rows in plan.batches]
        # Rows of s per block in its pass: Downsample's pass is its pool (the rows served).
        per_block = np.bincount(row_block[(codes == s) & served])
        event(f"condition {np.all(per_block[per_block > 0] >= max(taken) - 1)}")
        if np.all(per_block[per_block > 0] >= max(taken) - 1):
            for rows in plan.batches:
                mine = rows[codes[rows] == s]
                assert np.unique(row_block[mine]).shape[0] <= 2


def span_of(batches, row_block):
    return max(int(row_block[rows].max() - row_block[rows].min()) + 1 for rows in batches)


def lru_loads_and_reads(batches, row_shard, capacity):
    """Loads of an LRU cache of ``capacity`` shards serving the batches in order (every row a
    read: no kept rows), and the distinct shards read (tests/shards/test_load_profile.py checks
    the profile against a replayed cache)."""
    profile = shard_load_profile(batches, row_shard, kept_rows=False)
    return profile.loads(capacity), profile.first_reads


@settings(max_examples=40)
@given(case=layout_case(), seed=st.integers(0, 2**16), which=st.integers(0, 3))
def test_theorem_2_an_lru_cache_of_2k_minus_1_windows_loads_each_shard_once(case, seed, which):
    codes, shards, window, _ = case
    policy = single_pass_policies(codes)[which]
    plan = plan_batches(codes, policy, seed=seed, shards=shards, window=window,
                        allow_single_batch=True)
    row_block, row_shard = epoch_blocks(shards, window, seed)
    batches = plan.batches
    present = [set(np.unique(codes[rows]).tolist()) for rows in batches]
    allocation = policy.allocate(encode_strata(codes), 0)
    pool = allocation.pool_sizes if allocation.pool_sizes is not None else np.bincount(codes)
    if any(p != present[0] for p in present) or np.any(allocation.cuts[:, -1] > pool):
        return  # the theorem's condition: every stratum in every batch, one pass
    event(f"condition met, span {min(span_of(batches, row_block), 4)}")
    span = span_of(batches, row_block)
    loads, read = lru_loads_and_reads(batches, row_shard, (2 * span - 1) * window)
    assert loads == read


@settings(max_examples=40)
@given(counts=st.lists(st.integers(1, 8), min_size=1, max_size=3),
       rows_per_shard=st.integers(8, 40), seed=st.integers(0, 2**16), which=st.integers(0, 1))
def test_theorem_2_own_shards_with_window_1_need_a_cache_of_2s(counts, rows_per_shard, seed,
                                                                 which):
    n_strata = len(counts)
    codes = np.repeat(np.repeat(np.arange(n_strata), counts), rows_per_shard)
    shards = shard_sizes([rows_per_shard] * sum(counts))
    policy = single_pass_policies(codes)[which]
    plan = plan_batches(codes, policy, seed=seed, shards=shards, window=1,
                        allow_single_batch=True)
    _, row_shard = epoch_blocks(shards, 1, seed)
    batches = plan.batches
    taken = np.array([[np.count_nonzero(codes[rows] == s) for s in range(n_strata)]
                      for rows in batches])
    if len(batches) > 1 and np.any(taken[:-1] + taken[1:] - 1 > rows_per_shard):
        return  # the condition: a shard holds two batches' share of its stratum
    event("condition met")
    reads = [set(np.unique(row_shard[rows]).tolist()) for rows in batches]
    capacity = max([len(a | b) for a, b in zip(reads, reads[1:])] + [len(reads[0])])
    assert capacity <= 2 * n_strata
    loads, read = lru_loads_and_reads(batches, row_shard, capacity)
    assert loads == read


@settings(max_examples=20)
@given(seed=st.integers(0, 2**16), window=st.integers(1, 3))
def test_a_recycled_stratum_sweeps_once_per_pass(seed, window):
    """Targets with a small stratum: inside each pass its blocks only move forward."""
    codes = np.r_[np.zeros(12, dtype=np.int64), np.ones(228, dtype=np.int64)]
    codes = np.random.default_rng(seed).permutation(codes)
    shards = shard_sizes([20] * 12)
    policy = Targets({0: .5, 1: .5}, 16, batch_order="assembled")
    plan = plan_batches(codes, policy, seed=seed, shards=shards, window=window)
    row_block, _ = epoch_blocks(shards, window, seed)
    sequence = np.concatenate([rows[codes[rows] == 0] for rows in plan.batches])
    for start in range(0, sequence.shape[0], 12):  # one pass = the pool of 12 rows
        blocks = row_block[sequence[start:start + 12]]
        assert np.all(np.diff(blocks) >= 0)


# --- rng="index": the keyed shard-blocked order (docs/SHARDS.md, "Lazy plans") ----------

def ref_index_plan(codes, policy, shards, window, seed, epoch):
    """docs/SHARDS.md's lazy definition by plain loops (batch_order='assembled')."""
    from pystratum.streams._index import index_permutation

    encoded = encode_strata(codes)
    n = len(codes)
    H = n_shards_of(shards)
    index = shard_index(shards, n)
    W = min(window, H)
    m = -(-H // W)
    shard_at = index_permutation(H, seed, epoch, 2**52 - 1).tolist()
    turn_order = np.argsort(encoded.first_rows, kind="stable").tolist()
    cuts = np.asarray(policy.allocate(encoded, epoch).cuts)
    rows_of = {}
    for t, s in enumerate(turn_order):
        members = [r for r in range(n) if encoded.codes[r] == s]        # member order
        in_shard_order = [r for h in shard_at for r in members if index[r] == h]
        blocks = [[r for h in shard_at[j * W:(j + 1) * W] for r in members if index[r] == h]
                  for j in range(m)]
        sequence = []
        for j, block in enumerate(blocks):
            if block:
                perm = index_permutation(len(block), seed, epoch, 2**51 + t * m + j)
                sequence += [block[v] for v in perm.tolist()]
        assert sorted(sequence) == sorted(in_shard_order)
        rows_of[s] = sequence
    return [[row for s in turn_order for row in rows_of[s][cuts[s, b]:cuts[s, b + 1]]]
            for b in range(cuts.shape[1] - 1)]


@settings(max_examples=40)
@given(data=sharded_data(), seed=st.integers(0, 2**40), epoch=st.integers(0, 3),
       which=st.integers(0, 1))
def test_lazy_plans_follow_the_keyed_definition(data, seed, epoch, which):
    codes, shards, window = data
    policy = policies_for(codes)[which]
    sharded = plan(codes, policy, shards, window, seed=seed, rng="index", epoch=epoch)
    assert [b.tolist() for b in sharded.batches] == \
        ref_index_plan(codes, policy, shards, window, seed, epoch)
    plain = plan(codes, policy, seed=seed, rng="index", epoch=epoch)
    np.testing.assert_array_equal(sharded.counts, plain.counts)
    lazy = pystratum.lazy_plan(codes, policy, seed=seed, epoch=epoch, shards=shards,
                               window=window, allow_single_batch=True)
    for b in reversed(range(len(lazy))):  # any batch on its own, in any order
        np.testing.assert_array_equal(lazy[b], sharded.batches[b])


@settings(max_examples=30)
@given(case=layout_case(), seed=st.integers(0, 2**16), which=st.integers(0, 1))
def test_lazy_plans_sweep_blocks_forward(case, seed, which):
    from pystratum.streams._index import index_permutation

    codes, shards, window, _ = case
    policy = single_pass_policies(codes)[which]
    sharded = plan_batches(codes, policy, seed=seed, rng="index", shards=shards, window=window,
                           allow_single_batch=True)
    H = len(shards)
    block = np.empty(H, dtype=np.int64)
    block[index_permutation(H, seed, 0, 2**52 - 1)] = np.arange(H) // window
    row_block = block[np.repeat(np.arange(H), shards.sizes)]
    for visits in blocks_per_batch(sharded.batches, codes, row_block).values():
        assert sweeps_forward(visits)


def test_lazy_plans_refuse_pools_and_slots_naming_shards():
    codes = np.r_[np.zeros(10, dtype=int), np.ones(90, dtype=int)]
    with pytest.raises(ValueError, match=r"^shards cannot be honoured with rng='index'"):
        plan_batches(codes, Targets({0: .5, 1: .5}, 20), seed=1, rng="index",
                     shards=shard_sizes([50, 50]))
    with pytest.raises(ValueError, match=r"^shards cannot be honoured with rng='index'"):
        plan_batches(codes, ClassesPerBatch(2, 5), seed=1, rng="index",
                     shards=shard_sizes([50, 50]))
    with pytest.raises(ValueError, match=r"^shards cannot be honoured with rng='index'"):
        pystratum.lazy_plan(codes, ClassesPerBatch(2, 5), seed=1, shards=shard_sizes([50, 50]))


@given(n_shards=st.integers(1, 300), window=st.integers(1, 20), n_rows=st.integers(0, 400),
       seed=st.integers(0, 2**16), compact=st.booleans())
def test_compiled_and_numpy_sorts_by_block_agree(n_shards, window, n_rows, seed, compact):
    """The counting-sort kernel (numba, the fast extra) orders rows as numpy's path does."""
    import pystratum.kernels._shards as kernels  # the dev extra installs numba: tested
    from pystratum import kernels as kernel_gate
    from pystratum.engine._shards import ShardBlocks

    rng = np.random.default_rng(seed)
    row_shards = rng.integers(0, n_shards, n_rows).astype(
        np.uint8 if n_shards <= 256 else np.uint16)
    blocks = ShardBlocks(row_shards, n_shards, window, rng.permutation(n_shards))
    rows = rng.permutation(n_rows).astype(np.int32 if compact else np.int64)
    expected = rows[stable_argsort_small(blocks.row_blocks(rows))] if blocks.n_blocks > 1 \
        else rows
    saved = dict(kernel_gate._LOADED), kernel_gate.MIN_ROWS
    try:
        kernel_gate._LOADED["shards"], kernel_gate.MIN_ROWS = kernels, 0
        compiled = blocks.order(rows)
        kernel_gate._LOADED["shards"] = False
        plain = blocks.order(rows)
    finally:
        kernel_gate._LOADED.clear()
        kernel_gate._LOADED.update(saved[0])
        kernel_gate.MIN_ROWS = saved[1]
    np.testing.assert_array_equal(compiled, expected)
    np.testing.assert_array_equal(plain, expected)
    assert compiled.dtype == rows.dtype
