"""Python values as R values, or an error saying why R cannot hold them.

Strata go through the Python core's own splitter first (the function
``encode_strata`` uses), so the bindings accept and refuse exactly the forms
the core does, with the core's messages; each column is then converted to an
R vector (or factor) and several columns become a data.frame.

Every function returns an rpy2 rinterface object and must run inside
``Session.calling()``.
"""

from __future__ import annotations

import numbers
from collections.abc import Mapping

import numpy as np

from ..strata._encode import (
    _split_columns,
    check_object_missing,
    is_column_like,
    is_dataframe,
    raise_missing,
)
from ..streams._base import RNG_CHOICES
from ..base._validation import check_bool, check_choice, check_int
from ..strata._shards import ShardSizes, _whole_numbers, check_window
from ..policies import Policy, as_policy
from ._conditions import RError, raise_r_conditions
from ._from_r import field
from ._rvalues import R_DOUBLE_EXACT_MAX, R_INT_MAX, to_r_index

__all__ = ["argument_to_r", "check_python_types", "policy_arguments", "shards_to_r",
           "strata_to_r"]


def check_python_types(given: dict) -> None:
    """The core's checks of the scalar arguments, in the core's order, before R sees them.

    R would take Python values the core refuses (a whole float ``epoch=1.0``
    is an ordinary R number); running the core's own checks first makes the
    bindings accept and refuse what the core does. Seed ranges and ``rng``
    are left to R (R's streams, R's message).
    """
    if "min_samples_per_stratum" in given and not isinstance(
            given["min_samples_per_stratum"], Policy):
        _named(lambda value, name: as_policy(value), given["min_samples_per_stratum"],
               "min_samples_per_stratum")
    if "rng" in given and not isinstance(given["rng"], str):
        # rng=["R"] is "R" to R; the core takes only a str. Which strings
        # are streams is R's to say.
        _named(check_choice, given["rng"], "rng", choices=RNG_CHOICES)
    if "epoch" in given:
        _named(check_int, given["epoch"], "epoch", minimum=0)
    for flag in ("shuffle", "allow_single_batch"):
        if flag in given:
            _named(check_bool, given[flag], flag)
    if given.get("seed") is not None:
        _named(check_int, given["seed"], "seed")
    if "window" in given:
        _named(lambda value, name: check_window(value), given["window"], "window")


def policy_arguments(session, policy):
    """The policy as R arguments: a policy object rebuilt in R, a number as R reads it."""
    if not isinstance(policy, Policy):
        # R validates the number (or refuses the value) as min_samples_per_stratum.
        return {"min_samples_per_stratum": argument_to_r(session, policy,
                                                         "min_samples_per_stratum")}
    record = policy.to_dict()
    try:
        params = _params_to_r(session, record["params"], "policy")
    except (TypeError, ValueError) as error:
        error.argument = "policy"
        raise
    # Captured, not signalled: a policy R does not know (defined in Python
    # only) is an error naming the policy, not an R error printed on the console.
    outcome = session.bridge("bridge_call_capturing")(
        session.bridge("policy_from_params"),
        session.ro.vectors.ListVector({"name": session.ri.StrSexpVector([record["name"]]),
                                       "params": params}))
    try:
        raise_r_conditions(outcome, stacklevel=3)
    except (TypeError, ValueError, RError) as error:
        exception = ValueError(
            f"policy {policy!r} cannot be rebuilt by the R package (name {record['name']!r}, "
            f"params {record['params']!r}): {error} Use a policy both languages define "
            f"(pystratum.policies.MinPerStratum, FixedSize, Targets, Downsample), or the "
            f"Python core."
        )
        exception.argument = "policy"
        raise exception from None
    return {"policy": field(outcome, "value")}


def _params_to_r(session, params, name):
    """A policy's JSON-like parameters as R reads them in ``policy_from_params``.

    A dict becomes a named R list (``shares``, ``keep``: label text -> number;
    a nested ``base`` record: ``list(name =, params =)``), recursively; every
    other value converts as an ordinary argument.
    """
    for key in params:
        if str(key) == "":
            raise ValueError(
                f"policy cannot be passed to R: its parameter {name!r} names a stratum by the "
                f"empty label '' ({params!r}), which R cannot name in a list (R reads an "
                f"empty name as no name). Relabel that stratum, or use the Python core."
            )
    return session.ro.vectors.ListVector({
        str(key): _param_to_r(session, value, str(key)) for key, value in params.items()
    })


def _param_to_r(session, value, name):
    if isinstance(value, Mapping):
        return _params_to_r(session, value, name)
    return argument_to_r(session, value, name)


def shards_to_r(session, shards):
    """``shards=`` for R: None -> NULL, ``pystratum.shard_sizes(...)`` -> R's
    ``shard_sizes(sizes)``, ids -> an R integer (or, beyond 2**31 - 1, double) vector.

    Ids and sizes are labels and counts, not positions: they cross as they
    are, without :func:`~pystratum.r._rvalues.to_r_index` (shard ``h`` is the
    ``h``-th smallest id on both sides, whatever the base). The core's reader
    checks them first, so the bindings refuse what the core refuses, with its
    messages; the length against the rows is R's to check.
    """
    if shards is None:
        return session.ri.NULL
    try:
        if isinstance(shards, ShardSizes):
            values = _int_vector_to_r(session.ri, shards.sizes, "shards")
            outcome = session.bridge("bridge_call_capturing")(
                session.bridge("shard_sizes"), session.ro.vectors.ListVector({"sizes": values}))
            raise_r_conditions(outcome, stacklevel=3)
            return field(outcome, "value")
        return _int_vector_to_r(session.ri, _whole_numbers(shards, "shards", "a shard id per row"),
                                "shards")
    except (TypeError, ValueError) as error:
        error.argument = "shards"
        raise


def _int_vector_to_r(ri, values, name):
    """int64 values as an R integer vector, or a double one beyond R's integers."""
    values = np.asarray(values, dtype=np.int64)
    if values.shape[0] == 0 or int(np.abs(values).max()) <= R_INT_MAX:
        return ri.IntSexpVector(values.astype(np.int32).tolist())
    if int(np.abs(values).max()) < R_DOUBLE_EXACT_MAX:
        return ri.FloatSexpVector(values.astype(np.float64).tolist())
    raise ValueError(
        f"{name} cannot be passed to R exactly: R numbers are signed 32-bit integers or "
        f"doubles, and doubles hold integers exactly only below 2**53, got "
        f"{int(np.abs(values).max())}.")


def _named(check, value, name, **kwargs):
    try:
        check(value, name, **kwargs)
    except (TypeError, ValueError) as error:
        error.argument = name
        raise


def argument_to_r(session, value, name):
    """One argument for R; a value R cannot hold raises with ``.argument = name``."""
    try:
        if name == "strata":
            return strata_to_r(session, value, name)
        return _value_to_r(session, value, name)
    except (TypeError, ValueError) as error:
        if getattr(error, "argument", None) is None:
            error.argument = name
        raise


def _scalar_to_r(ri, value, name):
    """One Python scalar as a length-1 R vector, or None if ``value`` is not a scalar."""
    if value is None:
        return ri.NULL
    if isinstance(value, np.generic) and not isinstance(value, (np.str_, np.bytes_)):
        value = value.item()
    if isinstance(value, bool):
        return ri.BoolSexpVector([value])
    if isinstance(value, numbers.Integral):
        value = int(value)
        if -R_INT_MAX <= value <= R_INT_MAX:
            return ri.IntSexpVector([value])
        if abs(value) <= R_DOUBLE_EXACT_MAX:
            # R's own integers stop at 2**31 - 1; R users write such numbers
            # as doubles (3e9), so that is how they reach R, which decides.
            return ri.FloatSexpVector([float(value)])
        raise ValueError(
            f"{name}={value} cannot be passed to R exactly: R numbers are signed 32-bit "
            f"integers or doubles, and doubles hold integers exactly only up to 2**53."
        )
    if isinstance(value, numbers.Real):
        return ri.FloatSexpVector([float(value)])
    if isinstance(value, str):
        _check_r_string(value, name, None)
        return ri.StrSexpVector([value])
    return None


def _value_to_r(session, value, name):
    """A non-strata argument as R holds it; R validates it."""
    converted = _scalar_to_r(session.ri, value, name)
    if converted is not None:
        return converted
    if is_dataframe(value) or is_column_like(value):
        return strata_to_r(session, value, name)
    raise TypeError(
        f"{name}={value!r} of type {type(value).__name__} cannot be passed to R; "
        f"use None, a bool, an int, a float, a str or a 1-D array of them."
    )


def strata_to_r(session, strata, name="strata"):
    """Strata as R holds them: a vector or factor (one 1-D column) or a data.frame.

    The forms are the core's (its splitter decides and raises its errors): a
    1-D array-like or pandas Series/Categorical is one column; a DataFrame, a
    mapping of names to columns or a 2-D array (rows x variables) are
    several, and become a data.frame with those names (``V1``, ``V2``, ...
    for arrays).
    """
    columns = _split_columns(strata, name)
    if len(columns) == 1 and columns[0][0] == name:
        return _column_to_r(session, columns[0][1], name)
    if is_dataframe(strata):
        names = [str(col) for col in strata.columns]
    elif isinstance(strata, Mapping):
        names = [str(key) for key in strata]
    else:
        names = [f"V{k + 1}" for k in range(len(columns))]
    labels = [label for label, _ in columns]
    converted = [_column_to_r(session, column, label) for label, column in columns]
    lengths = [len(c) for c in converted]
    if len(set(lengths)) > 1:
        shown = ", ".join(f"{label}: {n}" for label, n in zip(labels, lengths))
        raise ValueError(
            f"{name} columns must all have the same length (one label per row), got {shown}."
        )
    make = session.bridge("bridge_data_frame")
    return make(session.ri.ListSexpVector(converted), session.ri.StrSexpVector(names),
                lengths[0])


def _column_to_r(session, column, name):
    """One stratum column as an R vector: integer, double, complex, logical, character or factor."""
    ri = session.ri
    if _is_categorical(column):
        return _categorical_to_r(session, column, name)
    if _is_pandas(column) and not isinstance(getattr(column, "dtype", None), np.dtype):
        # pandas extension dtypes (Int64, boolean, string, ...): check for NA,
        # then take the plain values.
        values = column.to_numpy(dtype=object)
        check_object_missing(values, name)
        values = np.asarray(values.tolist())
        if values.dtype.kind == "O":
            return _object_column_to_r(ri, values, name)
    else:
        values = column.to_numpy() if hasattr(column, "to_numpy") else np.asarray(column)
    if values.ndim != 1:
        raise ValueError(f"{name} must be 1-D, got an array with shape {values.shape}.")
    kind = values.dtype.kind
    if kind == "b":
        return ri.BoolSexpVector.from_memoryview(memoryview(values.astype(np.int32)))
    if kind in "iu":
        return _int_column_to_r(ri, values, name)
    if kind == "f":
        values = values.astype(np.float64)
        missing = np.isnan(values)
        if missing.any():
            raise_missing(name, int(np.argmax(missing)), "NaN")
        return ri.FloatSexpVector.from_memoryview(memoryview(np.ascontiguousarray(values)))
    if kind == "c":
        missing = np.isnan(values)
        if missing.any():
            raise_missing(name, int(np.argmax(missing)), "NaN")
        return ri.ComplexSexpVector([complex(v) for v in values.tolist()])
    if kind == "U":
        return _strings_to_r(ri, values.tolist(), name)
    if kind == "S":
        return _strings_to_r(ri, _decode_bytes(values.tolist(), name), name)
    if kind == "O":
        return _object_column_to_r(ri, values, name)
    if kind in "mM":
        missing = np.isnat(values)
        if missing.any():
            raise_missing(name, int(np.argmax(missing)), "NaT")
        # R date-times are doubles, which cannot keep every numpy date-time
        # apart; the text of a datetime64/timedelta64 in its own unit can.
        text = np.datetime_as_string(values) if kind == "M" else values.astype(str)
        return _strings_to_r(ri, text.tolist(), name)
    raise TypeError(
        f"{name} has dtype {values.dtype}, which cannot be used as stratum labels; "
        f"use ints, floats, strings, bools or categoricals."
    )


def _int_column_to_r(ri, values, name):
    if values.size:
        outside = (values < -R_INT_MAX) | (values > R_INT_MAX)
        if outside.any():
            row = int(np.argmax(outside))
            _raise_int_outside(name, int(values[row]), row)
    return ri.IntSexpVector.from_memoryview(memoryview(values.astype(np.int32)))


def _raise_int_outside(name, value, row):
    raise ValueError(
        f"{name} holds {value} at row {row} (0-based), which R cannot hold: R integers are "
        f"signed 32-bit, from -{R_INT_MAX} to {R_INT_MAX} (-2**31 is R's NA_integer_). "
        f"Renumber the labels, or pass them as strings or a pandas categorical."
    )


def _object_column_to_r(ri, values, name):
    """Object arrays: all bools, ints, reals, strings or bytes (R vectors hold one type)."""
    items = values.tolist()
    check_object_missing(values, name)
    if all(isinstance(v, (bool, np.bool_)) for v in items):
        return ri.BoolSexpVector([bool(v) for v in items])
    if all(isinstance(v, numbers.Integral) and not isinstance(v, (bool, np.bool_)) for v in items):
        for row, value in enumerate(items):
            if not -R_INT_MAX <= int(value) <= R_INT_MAX:
                _raise_int_outside(name, int(value), row)
        return _int_column_to_r(ri, np.asarray([int(v) for v in items], dtype=np.int64), name)
    if all(isinstance(v, numbers.Real) and not isinstance(v, (bool, np.bool_)) for v in items):
        for row, value in enumerate(items):
            # An int beyond 2**53 would become a double equal to its
            # neighbour and merge two strata.
            if isinstance(value, numbers.Integral) and abs(int(value)) > R_DOUBLE_EXACT_MAX:
                raise ValueError(
                    f"{name} holds the integer {int(value)} at row {row} (0-based) among "
                    f"floats; R would hold them all as doubles, which keep integers exact only "
                    f"up to 2**53. Pass the labels as strings, e.g. [str(v) for v in labels]."
                )
        return ri.FloatSexpVector([float(v) for v in items])
    if all(isinstance(v, str) for v in items):
        return _strings_to_r(ri, items, name)
    if all(isinstance(v, bytes) for v in items):
        return _strings_to_r(ri, _decode_bytes(items, name), name)
    kinds = sorted({type(v).__name__ for v in items})
    raise TypeError(
        f"{name} mixes values of types {', '.join(kinds)}, which one R vector cannot hold "
        f"(R vectors have a single type). Convert the labels to one type, e.g. .astype(str)."
    )


def _decode_bytes(items, name):
    """Bytes labels as UTF-8 text (R strings are text), naming the row that is not UTF-8."""
    decoded = []
    for row, value in enumerate(items):
        try:
            decoded.append(value.decode("utf-8"))
        except UnicodeDecodeError as error:
            raise ValueError(
                f"{name} holds bytes that are not UTF-8 at row {row} (0-based): {value!r} "
                f"({error.reason}); R strings are text. Decode the labels first, e.g. "
                f"[v.decode('latin-1') for v in labels], or pass them as a pandas categorical."
            ) from None
    return decoded


def _strings_to_r(ri, items, name):
    for row, value in enumerate(items):
        _check_r_string(value, name, row)
    return ri.StrSexpVector(items)


def _check_r_string(value, name, row):
    where = "" if row is None else f" at row {row} (0-based)"
    if "\x00" in value:
        raise ValueError(
            f"{name} holds a string with a NUL character{where}: {value!r}; R strings "
            f"cannot contain NUL."
        )
    try:
        value.encode("utf-8")
    except UnicodeEncodeError as error:
        raise ValueError(
            f"{name} holds a string that is not valid Unicode{where}: {value!r} "
            f"({error.reason}, e.g. a lone surrogate from decoding with "
            f"errors='surrogateescape'); R strings are UTF-8 text. Decode the original "
            f"bytes properly, or pass the labels as a pandas categorical."
        ) from None


def _categorical_to_r(session, column, name):
    """A pandas categorical as an R factor with the same levels, in the same order."""
    ri = session.ri
    cat = column.cat if hasattr(column, "cat") else column
    codes = np.asarray(cat.codes, dtype=np.int64)
    missing = codes < 0
    if missing.any():
        raise_missing(name, int(np.argmax(missing)), "missing category (NaN)")
    categories = list(cat.categories)
    levels = [str(c) for c in categories]
    if len(set(levels)) != len(levels):
        raise ValueError(
            f"{name} has categories that read the same as text ({categories!r}); R factor "
            f"levels are strings and must be distinct. Rename the categories."
        )
    for level in levels:
        _check_r_string(level, name, None)
    # Attributes are set in R (structure()), which also marks the vector as
    # an S3 object so that R dispatches factor methods on it.
    make = session.bridge("bridge_factor")
    return make(ri.IntSexpVector.from_memoryview(memoryview(to_r_index(codes))),
                ri.StrSexpVector(levels),
                ri.BoolSexpVector([bool(getattr(cat, "ordered", False))]))


def _is_pandas(obj) -> bool:
    return type(obj).__module__.startswith("pandas")


def _is_categorical(obj) -> bool:
    dtype = getattr(obj, "dtype", None)
    return dtype is not None and getattr(dtype, "name", "") == "category"
