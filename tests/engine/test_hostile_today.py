"""Hostile tests of the rng="index" member lists, the leaner plan assembly and the policies.

Each property compares a fast path with the general one it replaces:
small-integer labels grouped chunk by chunk against the general encoder's
codes grouped into member lists; samplers built from labels and from member
lists against each other.
"""

import warnings

import numpy as np
import pytest
from hypothesis import event, given, settings
from hypothesis import strategies as st

from pystratum.strata._members import members_of_codes, members_of_labels
from pystratum.strata._encode import encode_strata
from pystratum.policies import Downsample, FixedSize, MinPerStratum, Targets
from pystratum.torch import StratifiedBatchSampler

INT_DTYPES = [np.int8, np.int16, np.int32, np.int64, np.uint8, np.uint16, np.uint32, np.uint64]


def _members_rows(members):
    return [members.member(np.full(int(size), s), np.arange(int(size))).tolist()
            for s, size in enumerate(members.sizes)]


def _assert_same_members(fast, general):
    assert fast.labels == general.labels
    np.testing.assert_array_equal(fast.sizes, general.sizes)
    np.testing.assert_array_equal(fast.first_rows, general.first_rows)
    assert _members_rows(fast) == _members_rows(general)


@st.composite
def small_span_labels(draw):
    """Integer labels of any width within a span the chunked grouping takes, at the dtype's ends."""
    dtype = np.dtype(draw(st.sampled_from(INT_DTYPES)))
    info = np.iinfo(dtype)
    span = draw(st.integers(0, min(300, int(info.max) - int(info.min))))
    low = draw(st.sampled_from([int(info.min), int(info.max) - span, 0 if info.min == 0 else -1,
                                int(info.min) + span // 2]))
    low = max(int(info.min), min(low, int(info.max) - span))
    offsets = draw(st.lists(st.integers(0, span), min_size=1, max_size=60))
    return np.array([low + o for o in offsets], dtype=dtype)


@settings(max_examples=150)
@given(small_span_labels())
def test_small_integer_labels_group_as_the_general_encoder(values):
    fast = members_of_labels(values)
    assert fast is not None
    encoded = encode_strata(values)
    _assert_same_members(fast, members_of_codes(encoded.codes, encoded.sizes, encoded.labels))


@pytest.mark.parametrize("values", [
    np.array([-100, 100, -100, 5], dtype=np.int8),
    np.array([-128, 127, 0, 127], dtype=np.int8),
    np.array([-30000, 30000, 0, -30000], dtype=np.int16),
    np.array([2**63 + 5, 2**63 + 1, 2**63 + 5], dtype=np.uint64),
    np.array([2**64 - 1, 2**64 - 2, 2**64 - 1], dtype=np.uint64),
])
def test_index_sampler_takes_labels_at_the_ends_of_their_dtype(values):
    # Grouping subtracted the smallest label in the labels' own dtype (int8
    # wrapped round, uint64 beyond int64 overflowed): the sampler refused
    # valid labels with a bincount or OverflowError.
    labels = np.tile(values, 3)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        sampler = StratifiedBatchSampler(labels, 1, rng="index", seed=4)
        encoded = encode_strata(labels)
        reference = StratifiedBatchSampler(
            members_of_codes(encoded.codes, encoded.sizes, encoded.labels), 1, rng="index",
            seed=4)
    batches = list(sampler)
    assert sorted(r for b in batches for r in b) == list(range(labels.shape[0]))
    assert batches == list(reference)
    # lazy_plan groups such labels the same way.
    from pystratum import lazy_plan

    lazy = [b.tolist() for b in lazy_plan(labels, 1, seed=4)]
    assert lazy == [b.tolist() for b in lazy_plan(reference._members, 1, seed=4)]


def _reference_members(labels):
    encoded = encode_strata(labels)
    return members_of_codes(encoded.codes, encoded.sizes, encoded.labels)


@pytest.mark.parametrize("form", ["pyarrow_dictionary", "pandas_categorical"])
def test_parquet_dictionary_values_no_row_uses_are_no_strata(tmp_path, form):
    # A dictionary (or categorical's categories) may list values no row has;
    # they became strata of 0 rows, and the sampler refused the data.
    import pyarrow as pa
    import pyarrow.parquet as pq
    from pystratum import parquet_strata

    labels = np.array(["b", "a", "b", "c", "a", "c", "b", "a"])
    path = tmp_path / "strata.parquet"
    if form == "pyarrow_dictionary":
        dictionary = pa.array(["unused", "c", "b", "a", "never"])
        indices = pa.array([{"a": 3, "b": 2, "c": 1}[v] for v in labels], pa.int32())
        pq.write_table(pa.table({"y": pa.DictionaryArray.from_arrays(indices, dictionary)}),
                       path)
    else:
        import pandas as pd

        pd.DataFrame({"y": pd.Categorical(list(labels), categories=["c", "unused", "b", "a"])}
                     ).to_parquet(path)
    members = parquet_strata(path, "y")
    _assert_same_members(members, _reference_members(labels))
    batches = list(StratifiedBatchSampler(members, 1, rng="index", seed=3))
    assert batches == list(StratifiedBatchSampler(labels, 1, rng="index", seed=3))


# --- The leaner assembly: lookup and chunked grouping against plain references ---

def _random_cuts(gen, sizes, n_batches, dtype, left_out):
    """Non-decreasing cut rows with ties (batches a stratum skips) and rows left out."""
    cuts = np.zeros((sizes.shape[0], n_batches + 1), dtype=dtype)
    for s, size in enumerate(sizes.tolist()):
        used = size if not left_out or gen.random() < 0.5 else int(gen.integers(0, size + 1))
        if gen.random() < 0.5:
            inner = np.sort(gen.integers(0, used + 1, n_batches - 1))
        else:  # about proportional, as the usual policies cut
            inner = (np.arange(1, n_batches) * used) // n_batches
        cuts[s, 1:-1] = inner
        cuts[s, -1] = used
    return cuts


@settings(max_examples=40)
@given(n_strata=st.integers(9, 400), n_batches=st.integers(1, 300), seed=st.integers(0, 2**32),
       dtype=st.sampled_from([np.int32, np.int64]), left_out=st.booleans())
def test_batch_lookup_with_many_strata_matches_a_search_per_rank(n_strata, n_batches, seed,
                                                                 dtype, left_out):
    # Above 8 strata the lookup guesses a bracket and binary-searches all strata at once.
    import pystratum.engine._assemble as assemble

    gen = np.random.default_rng(seed)
    sizes = gen.integers(1, 3 * n_batches + 2, n_strata).astype(np.int64)
    sizes[gen.random(n_strata) < 0.2] = 1
    cuts = _random_cuts(gen, sizes, n_batches, dtype, left_out)
    lookup = assemble._BatchLookup(cuts, sizes)
    seen = np.zeros(n_strata, dtype=np.int64)
    while (seen < sizes).any():
        left = sizes - seen
        counts = np.where(gen.random(n_strata) < 0.3, 0,
                          gen.integers(0, left + 1)).astype(np.int64)
        if counts.sum() == 0:
            counts = left
        expected = np.concatenate([
            np.searchsorted(cuts[s], np.arange(seen[s], seen[s] + counts[s]), side="right") - 1
            for s in range(n_strata)])
        np.testing.assert_array_equal(lookup.next_batches(counts), expected)
        seen += counts


def _reference_grouping(codes, permutation, cuts):
    """Batches by the reference algorithm: rank in stratum along the permutation, batch by cuts."""
    in_order = codes[permutation]
    by_stratum = np.argsort(in_order, kind="stable")
    sizes = np.bincount(in_order, minlength=cuts.shape[0])
    first = np.concatenate([[0], np.cumsum(sizes)[:-1]])
    rank = np.empty(in_order.shape[0], dtype=np.int64)
    rank[by_stratum] = np.arange(in_order.shape[0]) - np.repeat(first, sizes)
    batch = np.empty(in_order.shape[0], dtype=np.int64)
    for s in range(cuts.shape[0]):
        mine = in_order == s
        batch[mine] = np.searchsorted(cuts[s], rank[mine], side="right") - 1
    n_batches = cuts.shape[1] - 1
    grouped = permutation[np.argsort(batch, kind="stable")]
    counts = np.bincount(batch, minlength=n_batches + 1)[:n_batches]
    return grouped[:counts.sum()], np.concatenate([[0], np.cumsum(counts)])


@settings(max_examples=12)
@given(n_rows=st.sampled_from([131071, 131072, 131073, 262143, 262145]),
       n_strata=st.sampled_from([1, 2, 3, 4, 9, 60, 1500]), n_batches=st.integers(1, 700),
       seed=st.integers(0, 2**32), left_out=st.booleans())
def test_assembly_at_the_real_chunk_size_matches_the_reference(n_rows, n_strata, n_batches,
                                                               seed, left_out):
    from pystratum.engine._assemble import assemble_batches

    gen = np.random.default_rng(seed)
    codes = np.concatenate([np.arange(n_strata),
                            gen.integers(0, n_strata, n_rows - n_strata)]).astype(np.int32)
    if gen.random() < 0.3:  # one huge stratum, the others tiny
        codes[n_strata:] = np.where(gen.random(n_rows - n_strata) < 0.999, 0, codes[n_strata:])
    sizes = np.bincount(codes, minlength=n_strata).astype(np.int64)
    cuts = _random_cuts(gen, sizes, n_batches, np.int64, left_out)
    permutation = gen.permutation(n_rows)
    order, bounds = _reference_grouping(codes, permutation, cuts)
    for method in ("running_count", "chunked_sort"):
        if method == "running_count" and n_strata > 9:
            continue  # one cumsum per stratum: the method is for few strata
        got = assemble_batches(codes, permutation.astype(np.int32), cuts, method=method)
        np.testing.assert_array_equal(got.bounds, bounds)
        np.testing.assert_array_equal(got.order, order)


# --- Sampling policies: composition, recycling and leaving-out, stream by stream ---

@st.composite
def sampling_cases(draw):
    n_strata = draw(st.integers(1, 12))
    sizes = draw(st.lists(st.integers(1, 300), min_size=n_strata, max_size=n_strata))
    if draw(st.booleans()):
        sizes[draw(st.integers(0, n_strata - 1))] = draw(st.sampled_from([1, 2, 3000]))
    kind = draw(st.sampled_from(["targets_even", "targets_uneven", "downsample", "fixed_size"]))
    labels = list(range(n_strata))
    if kind == "targets_even":
        # shares dividing the batch size: evenly spaced blocks (the strided placement)
        policy = Targets("balanced", n_strata * draw(st.integers(1, 9)),
                         epoch=draw(st.sampled_from(["largest", "smallest", 1, 7])))
    elif kind == "targets_uneven":
        weights = draw(st.lists(st.integers(0, 9), min_size=n_strata, max_size=n_strata))
        if sum(weights) == 0:
            weights[0] = 1
        positive = sum(w > 0 for w in weights)
        policy = Targets({s: w / sum(weights) for s, w in zip(labels, weights)},
                         draw(st.integers(positive, 70)),
                         epoch=draw(st.sampled_from(["largest", 3])))
    elif kind == "downsample":
        keep = {s: draw(st.sampled_from([1e-9, 0.001, 0.2, 0.5, 0.999, 1.0]))
                for s in labels if draw(st.booleans())} or {0: 0.001}
        base = draw(st.sampled_from([1, 2, "fixed", "targets"]))
        if base == "fixed":
            base = FixedSize(draw(st.integers(1, 40)))
        elif base == "targets":
            base = Targets("balanced", n_strata * draw(st.integers(1, 4)))
        policy = Downsample(keep, base)
    else:
        policy = FixedSize(draw(st.integers(1, 200)))
    return np.asarray(sizes, dtype=np.int64), policy


@settings(max_examples=50)
@given(case=sampling_cases(), rng=st.sampled_from(["numpy", "torch", "index", "R"]),
       epoch=st.sampled_from([0, 1, 3]), shuffled=st.booleans(), seed=st.integers(0, 2**31 - 1))
def test_sampling_policies_serve_their_counts_table(case, rng, epoch, shuffled, seed):
    from pystratum import plan_batches
    from pystratum.policies import Downsample, StratumTooSmallWarning

    sizes, policy = case
    codes = np.repeat(np.arange(sizes.shape[0]), sizes)
    if shuffled:
        codes = np.random.default_rng(seed).permutation(codes)
    first_rows = np.array([np.flatnonzero(codes == s)[0] for s in range(sizes.shape[0])])
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", StratumTooSmallWarning)
            plan = plan_batches(codes, policy, seed=seed, rng=rng, epoch=epoch)
    except ValueError as error:
        # Infeasible sizes are refused with a message naming the argument.
        assert any(word in str(error) for word in ("batch_size", "epoch", "stratum", "keep"))
        event("refused as infeasible")
        return
    event(f"served: {type(policy).__name__}")
    served = np.bincount(plan.order, minlength=codes.shape[0])
    per_stratum_served = np.bincount(codes[plan.order], minlength=sizes.shape[0])
    np.testing.assert_array_equal(per_stratum_served, plan.counts.sum(axis=0))
    bounds = np.asarray(plan.bounds, dtype=np.int64)
    n_strata = sizes.shape[0]
    batch_of = np.repeat(np.arange(bounds.shape[0] - 1), np.diff(bounds))
    served_codes = codes[plan.order]
    composition = np.bincount(batch_of * n_strata + served_codes,
                              minlength=(bounds.shape[0] - 1) * n_strata)
    np.testing.assert_array_equal(composition.reshape(-1, n_strata), plan.counts)
    turn = np.empty(n_strata, dtype=np.int64)
    turn[np.argsort(first_rows, kind="stable")] = np.arange(n_strata)
    if policy.split_safe(index=rng == "index"):
        # The split-safe order: each batch's strata (in turn order) at the places of the rule.
        from _split_safe import reference_labels

        for b in range(bounds.shape[0] - 1):
            at = turn[served_codes[bounds[b]:bounds[b + 1]]]
            in_turn = np.bincount(at, minlength=n_strata)
            np.testing.assert_array_equal(at, reference_labels(in_turn))
    elif not isinstance(policy, FixedSize):
        # Stratum by stratum inside a batch, strata in order of first appearance.
        steps = np.diff(turn[served_codes])
        new_batch = np.diff(batch_of) != 0
        assert (steps[~new_batch] >= 0).all()
    if isinstance(policy, FixedSize):
        assert (served == 1).all()
    elif isinstance(policy, Downsample):
        weights = np.asarray(plan.weights)
        plain_base = isinstance(policy.base, (MinPerStratum, FixedSize))
        for s in range(sizes.shape[0]):
            mine = codes[plan.order] == s
            fraction = policy.keep.get(str(s))
            kept = sizes[s] if fraction is None else \
                max(1, int(np.floor(fraction * sizes[s] + 0.5)))
            distinct = np.unique(plan.order[mine]).shape[0]
            if plain_base:
                # The kept rows, each once, weighted N_s / k_s.
                assert distinct == per_stratum_served[s] == kept
                np.testing.assert_allclose(weights[mine], sizes[s] / kept)
            else:
                assert distinct <= kept
    else:  # Targets: each stratum's rows used floor or ceil(T_s / N_s) times, or at most once
        for s in range(sizes.shape[0]):
            uses = served[codes == s]
            total = per_stratum_served[s]
            if total >= sizes[s]:
                assert uses.min() == total // sizes[s]
                assert uses.max() == -(-total // sizes[s])
            else:
                assert uses.max() <= 1


# --- The index sampler from member lists against the same sampler from labels ---

@st.composite
def sampler_cases(draw):
    n_strata = draw(st.integers(1, 7))
    sizes = draw(st.lists(st.integers(1, 40), min_size=n_strata, max_size=n_strata))
    policy = draw(st.sampled_from(["m1", "m2", "fixed", "targets", "downsample"]))
    smallest = min(sizes)
    policy = {
        "m1": MinPerStratum(1),
        "m2": MinPerStratum(2) if smallest >= 2 else MinPerStratum(1),
        "fixed": FixedSize(max(1, sum(sizes) // smallest + 1)),
        "targets": Targets("balanced", n_strata * draw(st.integers(1, 3))),
        "downsample": Downsample({0: draw(st.sampled_from([0.01, 0.5, 0.99]))}, 1),
    }[policy]
    return sizes, policy, draw(st.booleans())


@settings(max_examples=40)
@given(case=sampler_cases(), replicas=st.integers(1, 3), drop_last=st.booleans(),
       epoch=st.integers(0, 3), seed=st.integers(0, 2**31 - 1))
def test_index_sampler_from_members_serves_the_labels_batches(case, replicas, drop_last, epoch,
                                                              seed):
    from pystratum import grouped_strata
    from pystratum.torch import WeightedDataset

    sizes, policy, shuffled = case
    labels = np.repeat(np.arange(len(sizes)), sizes).astype(np.int16)
    if shuffled:
        labels = np.random.default_rng(seed).permutation(labels)
        encoded = encode_strata(labels)
        members = members_of_codes(encoded.codes, encoded.sizes, encoded.labels)
    else:
        members = grouped_strata(sizes)

    def epoch_of(strata, rank):
        sampler = StratifiedBatchSampler(strata, policy, rng="index", seed=seed,
                                         num_replicas=replicas, rank=rank, drop_last=drop_last,
                                         allow_single_batch=True)
        sampler.set_epoch(epoch)
        return sampler, list(sampler)

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            by_labels = [epoch_of(labels, rank) for rank in range(replicas)]
        except ValueError as error:
            assert "drop_last" in str(error)
            with pytest.raises(ValueError, match="drop_last"):
                epoch_of(members, 0)
            return
        by_members = [epoch_of(members, rank) for rank in range(replicas)]
    for (sampler_l, batches_l), (sampler_m, batches_m) in zip(by_labels, by_members):
        assert batches_m == batches_l
        assert len(sampler_m) == len(sampler_l) == len(batches_l)
        if isinstance(policy, (Targets, Downsample)):  # others are refused: no weights
            np.testing.assert_array_equal(
                WeightedDataset.for_sampler(range(len(labels)), sampler_m).weights.numpy(),
                WeightedDataset.for_sampler(range(len(labels)), sampler_l).weights.numpy())
        # A state saved by one resumes the other mid-epoch.
        sampler_l.set_epoch(epoch)
        iterator = iter(sampler_l)
        next(iterator, None)
        state = sampler_l.state_dict()
        sampler_m.load_state_dict(state)
        assert list(sampler_m) == batches_l[1:]


def test_member_lists_of_another_length_than_the_dataset_say_so():
    # The message spoke of labels and Subsets, which a StratumMembers user never passed.
    import torch
    from torch.utils.data import DataLoader, TensorDataset

    from pystratum import grouped_strata

    members = grouped_strata([5, 7, 3])
    with pytest.raises(ValueError, match=r"\(member lists\) cover 15 rows but the dataset has 14"):
        StratifiedBatchSampler(members, 1, rng="index", seed=1, dataset=list(range(14)))
    sampler = StratifiedBatchSampler(members, 1, rng="index", seed=1)
    loader = DataLoader(TensorDataset(torch.arange(16)), batch_sampler=sampler)
    with pytest.raises(ValueError, match=r"\(member lists\) cover 15 rows but the DataLoader's "
                                         r"dataset has 16 rows.*same rows"):
        next(iter(loader))
