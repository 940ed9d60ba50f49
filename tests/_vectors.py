"""Read the shared test vectors (tests/vectors/*.json) the same way in every test.

The files are written by the R package's generator (each file's header names
the command that regenerates it); the R tests read the same files. Positions
in them are R's: the header says ``"index_base": 1``. :func:`zero_based` is
the one place that turns them into the Python core's 0-based positions.

JSON cannot tell R's ``2L`` from ``2`` (both are whole numbers, valid in R
wherever a count is) and writes whole doubles without a fraction, so a whole
JSON number is a Python ``int`` and anything with a fraction a ``float``
(``2.5`` stays invalid in both languages). Stratum columns keep their
declared R type: ``"double"`` columns are floats whatever their values.
"""

from __future__ import annotations

import json
import math
import os
from pathlib import Path

import numpy as np

__all__ = [
    "VECTORS_DIR",
    "VectorFileMissing",
    "arguments_from_case",
    "load_cases",
    "policy_from_case",
    "scalar_from_json",
    "strata_from_json",
    "zero_based",
]

VECTORS_DIR = Path(os.environ.get("PYSTRATUM_VECTORS_DIR") or Path(__file__).with_name("vectors"))

# What R writes for values JSON has no literal for (jsonlite's defaults).
_SPECIAL_NUMBERS = {"NA": None, "NaN": math.nan, "Inf": math.inf, "-Inf": -math.inf}


class VectorFileMissing(FileNotFoundError):
    """A vector file the tests need is absent (the R side has not written it)."""


def load_cases(name: str):
    """``(header, cases)`` of ``tests/vectors/<name>``; cases flattened out of any groups.

    Raises VectorFileMissing (saying who writes the file) when it is absent.
    """
    path = VECTORS_DIR / name
    if not path.is_file():
        raise VectorFileMissing(
            f"{path} does not exist. It is written by the R package's vector generator "
            f"(r/, see the header of the other vector files for the command) and must be "
            f"committed: the Python and R tests both read it."
        )
    with path.open(encoding="utf-8") as handle:
        document = json.load(handle)
    header = {key: value for key, value in document.items() if key not in ("cases", "groups")}
    if header.get("index_base") not in (0, 1):
        raise ValueError(f"{path}: the header must say \"index_base\": 1 (or 0), got {header!r}.")
    cases = list(document.get("cases", []))
    for group in document.get("groups", []):
        cases.extend(group.get("cases", []))
    return header, cases


def zero_based(positions, index_base: int):
    """Positions as written in a vector file -> 0-based int64 arrays (lists of lists allowed)."""
    if positions and isinstance(positions[0], list):
        return [zero_based(batch, index_base) for batch in positions]
    return np.asarray(positions, dtype=np.int64).reshape(-1) - index_base


def scalar_from_json(value):
    """A scalar argument as the Python caller would pass it (see the module docstring)."""
    if isinstance(value, dict) and not value:
        return None  # jsonlite writes R's NULL inside lists as {}
    if isinstance(value, str) and value in _SPECIAL_NUMBERS:
        return _SPECIAL_NUMBERS[value]
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, list):
        return [scalar_from_json(v) for v in value]
    return value


def strata_from_json(spec, index_base: int):
    """The strata of a case: a 1-D column for one column, a pandas DataFrame for several."""
    import pandas as pd

    columns = spec["columns"]
    converted = [_column_from_json(column, index_base) for column in columns]
    if len(columns) == 1:
        return converted[0]
    names = [column.get("name") or f"V{k + 1}" for k, column in enumerate(columns)]
    if not columns:
        return pd.DataFrame()
    return pd.DataFrame(dict(zip(names, converted)))


def _column_from_json(column, index_base):
    import pandas as pd

    kind = column["type"]
    values = [None if v is None else _SPECIAL_NUMBERS.get(v, v) if isinstance(v, str)
              and kind != "character" and kind != "factor" else v for v in column["values"]]
    has_missing = any(v is None for v in values)
    if kind == "integer":
        return np.asarray(values, dtype=object if has_missing else np.int64)
    if kind == "double":
        return np.asarray([math.nan if v is None else float(v) for v in values], dtype=np.float64)
    if kind == "logical":
        return np.asarray(values, dtype=object if has_missing else bool)
    if kind == "character":
        return np.asarray(values, dtype=object)
    if kind == "factor":
        levels = column.get("levels")
        if values and all(isinstance(v, int) or v is None for v in values):
            # Factor codes (1-based in R files): through the one conversion.
            codes = [-1 if v is None else int(zero_based([v], index_base)[0]) for v in values]
            return pd.Categorical.from_codes(codes, categories=levels)
        return pd.Categorical(values, categories=levels)
    raise ValueError(f"unknown column type {kind!r} in a vector file (column {column!r}).")


def policy_from_case(case):
    """The case's policy, rebuilt from its record (raises as the constructor does)."""
    from pystratum.policies import policy_from_params

    record = case["input"]["policy"]
    return policy_from_params(record["name"], {key: scalar_from_json(value)
                                               for key, value in record["params"].items()})


def arguments_from_case(case, index_base: int):
    """``(strata, keyword arguments)`` for a case's input; the policy: :func:`policy_from_case`."""
    given = case["input"]
    strata = strata_from_json(given["strata"], index_base)
    keywords = {}
    for name, default in (("seed", None), ("rng", "R"), ("epoch", 0), ("shuffle", True),
                          ("allow_single_batch", False)):
        if name in given:
            keywords[name] = scalar_from_json(given[name])
        else:
            keywords[name] = default
    return strata, keywords
