"""The epoch rule every sampler shares (pystratum/serving/_progress.py), without a sampler."""

import pickle

import pytest

from pystratum.serving._progress import EpochProgress


class Pass:
    """What a sampler's epoch pass exposes to the rule."""

    def __init__(self, progress, batches):
        self.epoch, self.start = progress.begin(self)
        self.batches_yielded = self.start
        self.batches = batches
        self.stream_state = {"before epoch": self.epoch}

    @property
    def in_progress(self):
        return self.batches_yielded < self.batches

    @property
    def exhausted(self):
        return not self.in_progress

    def run(self, k=None):
        self.batches_yielded = self.batches if k is None else self.start + k
        return self


def test_one_replica_moves_on_each_pass_and_set_epoch_jumps():
    progress = EpochProgress("S", 1, 0)
    assert [Pass(progress, 3).run().epoch for _ in range(3)] == [0, 1, 2]
    progress.set_epoch(10)
    assert progress.epoch == 10 and Pass(progress, 3).epoch == 10
    assert progress.epoch == 10  # in progress: the pass's epoch
    assert Pass(progress, 3).epoch == 11


def test_several_replicas_move_only_by_set_epoch_and_warn_once_on_a_repeat():
    progress = EpochProgress("S", 2, 1)
    Pass(progress, 3).run()
    with pytest.warns(UserWarning, match=r"S \(rank 1 of num_replicas=2\) serves epoch 0 again"):
        Pass(progress, 3).run()
    Pass(progress, 3).run()  # shown once
    progress.set_epoch(1)
    assert Pass(progress, 3).epoch == 1


def test_a_peek_before_the_loop_does_not_warn(recwarn):
    progress = EpochProgress("S", 2, 0)
    progress.set_epoch(0)
    Pass(progress, 3).run(1)  # a peek: one batch, not exhausted
    assert Pass(progress, 3).epoch == 0
    assert not recwarn.list


def test_restore_continues_and_set_epoch_keeps_or_drops_the_position():
    progress = EpochProgress("S", 1, 0)
    progress.restore(4, 2)
    progress.set_epoch(4)  # the restored epoch: position kept
    resumed = Pass(progress, 5)
    assert (resumed.epoch, resumed.start) == (4, 2)
    progress.restore(4, 2)
    progress.set_epoch(5)  # another epoch: starts fresh
    fresh = Pass(progress, 5)
    assert (fresh.epoch, fresh.start) == (5, 0)


def test_position_and_checkpoint_mid_epoch():
    progress = EpochProgress("S", 1, 0)
    live = Pass(progress, 5).run(2)
    assert progress.position(lambda: {"now": True}) == (0, 2, {"before epoch": 0})
    copy, stream_state = progress.checkpoint()
    assert stream_state == {"before epoch": 0}
    copy = pickle.loads(pickle.dumps(copy))  # detached: no live pass inside
    resumed = Pass(copy, 5)
    assert (resumed.epoch, resumed.start) == (0, 2)
    assert live.in_progress and progress.epoch == 0  # the original is untouched
    live.run()
    # Between epochs the next epoch is saved with the stream as it stands.
    assert progress.position(lambda: {"now": True}) == (1, 0, {"now": True})
    assert progress.checkpoint()[1] is None
