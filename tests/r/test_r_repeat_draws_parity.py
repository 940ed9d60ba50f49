"""The repeat-draw guard accepts and refuses the same epochs in Python and R.

Both price an epoch's repeat draws (recycled passes, refills drawn one call
each) as rows plus 2,000 a call, and refuse past 10**8 plus the rows the
epoch serves, with the same words (``policies/_draw_cost.py``,
``check_repeat_draws()`` in ``validation.R``). Only the policy's text and
each language's rng advice differ.
"""

from __future__ import annotations

import numpy as np
import pytest

import pystratum
import pystratum.r as pr
from pystratum.policies import ClassesPerBatch, Targets
from _r_helpers import r_session  # noqa: F401 (fixture)


# Where each language's rng advice starts (R has no rng='numpy' to advise); a recycled
# pass's fix has none, so there the whole message after the policy's text is compared.
RNG_ADVICE = ", or use rng="


def _after_policy(message: str) -> str:
    """The message after the policy's text, up to the rng advice if it has one."""
    rest = message[message.index(" makes an epoch of "):]
    return rest.split(RNG_ADVICE)[0]


@pytest.mark.parametrize("strata, policy, advised", [
    pytest.param([0, 1], Targets("balanced", 2, epoch=60000), False, id="one-row-passes"),
    pytest.param([0, 1, 2], ClassesPerBatch(2, 10**6, small="repeat"), True,
                 id="one-row-refills"),
])
def test_python_and_r_refuse_many_calls_for_few_rows_alike(r_session, strata, policy, advised):
    with pytest.raises(ValueError) as in_python:
        pystratum.stratified_batches(strata, policy, seed=1, rng="R")
    with pytest.raises(ValueError) as in_r:
        pr.stratified_batches(strata, policy, seed=1, rng="R")
    assert "pystratum_value_error" in in_r.value.r_classes
    assert str(in_python.value).startswith("policy=")
    assert _after_policy(str(in_python.value)) == _after_policy(str(in_r.value))
    assert "over the limit of 100,000,000 plus the " in str(in_r.value)
    # The words compared run through the fix, up to the rng advice where there is one.
    for message in (str(in_python.value), str(in_r.value)):
        assert (RNG_ADVICE in message) == advised
        assert _after_policy(message).endswith("draw)." if not advised else "over its rows)")


def test_python_and_r_serve_an_epoch_within_the_fixed_limit_plus_its_rows(r_session):
    # 2 rows, balanced batches of 2, 24,995 batches: 49,988 one-row passes cost
    # 100,025,988 row draws, over 10**8 but within 10**8 plus the 49,990 rows served.
    policy = Targets("balanced", 2, epoch=24995)
    mine = pystratum.stratified_batches(np.array([0, 1]), policy, seed=1, rng="index")
    theirs = pr.stratified_batches(np.array([0, 1]), policy, seed=1, rng="index")
    assert len(mine) == 24995
    assert [b.tolist() for b in mine] == [b.tolist() for b in theirs]
