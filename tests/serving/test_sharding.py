"""Sharding whole batches across ranks: the pure rule, without torch."""

from collections import Counter

import numpy as np
from hypothesis import example, given, strategies as st

from pystratum.serving._sharding import rank_batch_count, rank_batch_indices


@given(num_batches=st.integers(1, 200), num_replicas=st.integers(1, 12), drop_last=st.booleans())
# Fewer batches than ranks: the padding wraps round the epoch more than once
# (a random run found this; the derandomised profile had never drawn it).
@example(num_batches=1, num_replicas=3, drop_last=False)
@example(num_batches=2, num_replicas=7, drop_last=False)
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
        # Padding repeats whole batches from the start of the epoch, wrapping
        # round it as often as needed: the count*n positions served hold
        # batches 0, 1, ..., B-1, 0, 1, ... (position p holds batch p % B), so
        # every batch is served once plus once per completed wrap it falls in.
        positions = count * num_replicas
        assert positions - num_batches < num_replicas
        assert Counter(served.tolist()) == Counter(p % num_batches for p in range(positions))


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
