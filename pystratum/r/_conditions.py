"""R's conditions as Python exceptions and warnings.

The R package signals classed conditions; the bridge
(``bridge_call_capturing`` in ``r/R/python_bridge.R``) returns them as data
and this module raises them again on the Python side:

* ``pystratum_single_batch`` -> :class:`pystratum.SingleBatchError`,
  ``pystratum_type_error`` -> TypeError, ``pystratum_value_error`` ->
  ValueError, both with ``.argument`` (the argument R blames) and
  ``.r_classes``; any other R error -> :class:`RError`;
* ``pystratum_stratum_too_small`` -> :class:`pystratum.StratumTooSmallWarning`,
  any other R warning -> :class:`RWarning`.
"""

from __future__ import annotations

import warnings

from ..policies import SingleBatchError, StratumTooSmallWarning
from ._rvalues import field, first_string

__all__ = ["RError", "RWarning", "raise_r_conditions"]


class RError(RuntimeError):
    """An error raised in R that is not one of pystratum's classed argument errors.

    ``r_classes`` holds the R condition's class vector; ``argument`` the
    argument R blamed, when the condition carried one.
    """

    def __init__(self, message, r_classes=(), argument=None):
        super().__init__(message)
        self.r_classes = tuple(r_classes)
        self.argument = argument


class RWarning(UserWarning):
    """A warning raised in R other than ``pystratum_stratum_too_small``."""


def raise_r_conditions(outcome, stacklevel):
    """Re-emit R's warnings as Python warnings, then raise R's error if there was one."""
    caught = field(outcome, "warnings")
    for warning in caught if caught is not None else []:
        classes = list(field(warning, "class"))
        message = first_string(field(warning, "message"))
        category = StratumTooSmallWarning if "pystratum_stratum_too_small" in classes else RWarning
        warnings.warn(message, category, stacklevel=stacklevel + 1)
    error = field(outcome, "error")
    if error is None:
        return
    classes = list(field(error, "class"))
    message = first_string(field(error, "message"))
    argument = first_string(field(error, "argument"))
    if "pystratum_single_batch" in classes:
        exception = SingleBatchError(message)
    elif "pystratum_type_error" in classes:
        exception = TypeError(message)
    elif "pystratum_value_error" in classes:
        exception = ValueError(message)
    else:
        raise RError(message, classes, argument)
    exception.argument = argument
    exception.r_classes = tuple(classes)
    raise exception
