"""Sharding whole batches across ranks: the pure rule, without torch."""

import numpy as np
from hypothesis import given, strategies as st

from pystratum._sharding import rank_batch_count, rank_batch_indices


@given(num_batches=st.integers(1, 200), num_replicas=st.integers(1, 12), drop_last=st.booleans())
def test_ranks_yield_equal_counts_and_cover_the_epoch(num_batches, num_replicas, drop_last):
    per_rank = [rank_batch_indices(num_batches, num_replicas, r, drop_last)
                for r in range(num_replicas)]
    count = rank_batch_count(num_batches, num_replicas, drop_last)
    assert all(len(indices) == count for indices in per_rank)
    served = np.concatenate(per_rank)
    assert served.min(initial=0) >= 0 and served.max(initial=0) < num_batches
    if drop_last:
        # Disjoint, and only the epoch's last B % n batches are left out.
        assert len(set(served.tolist())) == served.shape[0]
        assert set(served.tolist()) == set(range(num_replicas * (num_batches // num_replicas)))
    else:
        assert set(served.tolist()) == set(range(num_batches))
        # Padding repeats whole batches from the start of the epoch only.
        repeats = served.shape[0] - num_batches
        assert repeats == count * num_replicas - num_batches
        assert sorted(served.tolist())[: 2 * repeats: 2] == list(range(repeats))


@given(num_batches=st.integers(1, 100), num_replicas=st.integers(1, 8), drop_last=st.booleans(),
       data=st.data())
def test_start_skips_the_first_batches_of_the_rank(num_batches, num_replicas, drop_last, data):
    rank = data.draw(st.integers(0, num_replicas - 1))
    full = rank_batch_indices(num_batches, num_replicas, rank, drop_last)
    start = data.draw(st.integers(0, len(full)))
    np.testing.assert_array_equal(
        rank_batch_indices(num_batches, num_replicas, rank, drop_last, start=start), full[start:])


def test_round_robin_rule_by_hand():
    # 5 batches on 2 ranks: rank 1 pads with batch 0.
    assert rank_batch_indices(5, 2, 0, False).tolist() == [0, 2, 4]
    assert rank_batch_indices(5, 2, 1, False).tolist() == [1, 3, 0]
    assert rank_batch_indices(5, 2, 1, True).tolist() == [1, 3]
