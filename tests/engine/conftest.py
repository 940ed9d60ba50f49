"""Fixtures shared by the engine tests."""

import pytest


@pytest.fixture
def compiled_paths(monkeypatch):
    """``compiled_paths(True)``: the split-safe kernels at every size; False: numpy's path."""
    import pystratum.kernels._assemble as kernels  # the dev extra installs numba: tested
    from pystratum import kernels as kernel_gate

    def use(compiled):
        monkeypatch.setitem(kernel_gate._LOADED, "assemble", kernels if compiled else False)
        monkeypatch.setattr(kernel_gate, "MIN_ROWS", 0)
    return use
