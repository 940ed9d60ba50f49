"""The epoch pass (pystratum.serving.EpochPass, what the torch sampler's iter() returns) on
plain arrays (no sampler, no torch data), and the set_epoch hook of pystratum.torch._epoch."""

import numpy as np
from hypothesis import given, settings, strategies as st

from pystratum.serving import EpochPass
from pystratum.serving._plans import plan_batches
from pystratum.torch._epoch import EpochSetter


class ArraySource:
    """A batch source over one fixed (order, bounds) plan; ``opened`` records each open."""

    def __init__(self, order, bounds, stream_state=None):
        self.order, self.bounds = order, bounds
        self.num_batches = bounds.shape[0] - 1
        self.stream_state = {} if stream_state is None else stream_state
        self.opened = []

    def open(self, epoch):
        self.opened.append(epoch)
        return self

    rows_per_batch = 1

    def batches(self, ids):
        return plan_batches(self.order, self.bounds, ids)


class StartAt:
    """The progress of a sampler whose next pass serves ``epoch`` from batch ``start``."""

    def __init__(self, epoch, start):
        self.epoch, self.start, self.calls = epoch, start, []

    def begin(self, epoch_pass):
        self.calls.append(epoch_pass)
        return self.epoch, self.start


def EpochIterator(progress, order, bounds, stream_state=None, chunk_rows=1 << 16):
    """The pass the torch sampler builds, over a fixed plan."""
    return EpochPass(progress, ArraySource(order, bounds, stream_state), chunk_rows=chunk_rows)


def batches_of(sizes, seed=0):
    rng = np.random.default_rng(seed)
    bounds = np.zeros(len(sizes) + 1, dtype=np.int64)
    np.cumsum(sizes, out=bounds[1:])
    order = rng.permutation(int(bounds[-1])).astype(np.int64)
    expected = [order[bounds[b]:bounds[b + 1]].tolist() for b in range(len(sizes))]
    return order, bounds, expected


@settings(max_examples=60, deadline=None)
@given(sizes=st.lists(st.integers(1, 40), min_size=1, max_size=30), start=st.integers(0, 35),
       chunk_rows=st.integers(1, 100))
def test_serves_batches_from_start_in_chunks(sizes, start, chunk_rows):
    order, bounds, expected = batches_of(sizes)
    progress = StartAt(7, start)
    calls = progress.calls
    iterator = EpochIterator(progress, order, bounds, {"where": "before epoch 7"},
                             chunk_rows=chunk_rows)
    assert not iterator.started and calls == []  # lazy: nothing until the first batch
    served = list(iterator)
    assert served == expected[start:]
    assert all(type(b) is list and all(type(i) is int for i in b) for b in served)
    assert calls == [iterator]
    assert iterator.exhausted and not iterator.in_progress
    assert iterator.state_dict() == {"epoch": 7, "batches_yielded": max(start, len(sizes))}
    assert iterator.stream_state == {"where": "before epoch 7"}
    assert list(iterator) == []  # stays exhausted


def test_progress_and_state_dict():
    order, bounds, expected = batches_of([3, 4, 5])
    iterator = EpochIterator(StartAt(2, 0), order, bounds)
    assert iterator.state_dict() == {"epoch": None, "batches_yielded": 0}
    assert next(iterator) == expected[0]
    assert iterator.in_progress and iterator.state_dict() == {"epoch": 2, "batches_yielded": 1}
    next(iterator), next(iterator)
    # The last batch is served but StopIteration not seen yet: still in progress (a state
    # saved now resumes into the empty rest of this epoch, as the loop itself would).
    assert iterator.in_progress and iterator.batches_yielded == 3
    assert list(iterator) == []
    assert not iterator.in_progress
    assert "ended" in repr(iterator)


def test_epoch_setter_forwards():
    seen = []

    class Owner:
        def set_epoch(self, epoch):
            seen.append(epoch)

    EpochSetter(Owner()).set_epoch(4)
    assert seen == [4]


@settings(max_examples=40, deadline=None)
@given(size=st.integers(1, 12), count=st.integers(1, 40), start=st.integers(0, 45),
       chunk_rows=st.integers(1, 100))
def test_equal_batches_are_served_alike(size, count, start, chunk_rows):
    # Equal sizes take the reshape path: same lists of ints as the general one.
    order, bounds, expected = batches_of([size] * count, seed=size)
    iterator = EpochIterator(StartAt(0, start), order, bounds, chunk_rows=chunk_rows)
    served = list(iterator)
    assert served == expected[start:]
    assert all(type(b) is list and all(type(i) is int for i in b) for b in served)
