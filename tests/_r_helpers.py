"""Shared fixtures for the pystratum.r tests (R, rpy2 and the R package are required).

Without them these tests FAIL with the install command: CI installs them.
"""

from __future__ import annotations

import pytest

import pystratum.r as pr
from pystratum.r import _session, _to_r


@pytest.fixture(scope="module")
def r_session():
    try:
        return _session.session()
    except (ImportError, RuntimeError) as error:
        pytest.fail(f"pystratum.r tests need R, rpy2 and the R package: {error}", pytrace=False)


def r_function(session, code):
    with session.localconverter(session.converter):
        return session.ro.r(code)


def describe_in_r(session, value):
    """What R sees for a Python value passed as strata: class, type, levels, names, values."""
    describe = r_function(session, """function(x) {
      cols = if (is.data.frame(x)) as.list(x) else list(x)
      list(class = class(x), names = if (is.data.frame(x)) names(x) else character(0),
           nrow = if (is.data.frame(x)) nrow(x) else length(x),
           types = vapply(cols, typeof, ""), classes = vapply(cols, function(c) class(c)[1], ""),
           levels = lapply(cols, function(c) if (is.factor(c)) levels(c) else character(0)),
           text = lapply(cols, function(c) as.character(c)),
           codes = lapply(cols, function(c) if (is.factor(c)) as.integer(c) else integer(0)))
    }""")
    with session.calling():
        out = describe(_to_r.strata_to_r(session, value))
        return {name: out.rx2(name) for name in out.names}


__all__ = ["describe_in_r", "pr", "r_function", "r_session"]
