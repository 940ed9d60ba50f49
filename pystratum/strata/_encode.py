"""Turn whatever the user calls "strata" into one integer code per row.

Every distinct combination of column values is one stratum, and values are
the same exactly when they are equal (``==``): nothing is merged by a lossy
conversion (floats beyond 2**53, strings differing in trailing NULs, mixed
types numpy would coerce to strings). Only the partition of rows matters
to the allocation, so the codes' numbering is an implementation detail:
renaming or reordering labels never changes batches.
Labels are kept (sorted where the values sort) for reports such as the
per-batch count table.

No pandas import here: pandas objects are recognised by duck typing, and
``pandas.isna`` is used only when pandas is already loaded by the caller.
Text labels at scale (numpy strings, Python strings, pyarrow and
pyarrow-backed pandas columns) are hashed by pyarrow's ``dictionary_encode``
where pyarrow is installed (the ``arrow`` extra): the same codes and labels as
the general paths (sorting or a Python dict), at integer speed; object arrays of
Python ``str`` by the compiled reader of their text (``kernels._pyobjects``, from
``kernels.MIN_ROWS`` rows where numba serves: one pass over the objects' memory, with
``str.__eq__``'s equality), else by ``pandas.factorize`` when the caller has loaded pandas
(faster on Python objects, and hashing by Python's own ``==``); rows that repeat a few
``str`` objects are then numbered by object identity first (``objects_by_identity``), so
only the distinct objects are compared by value.
"""

from __future__ import annotations

import numbers
import sys
from collections.abc import Iterable, Mapping
from collections.abc import Set as AbstractSet
from dataclasses import dataclass
from functools import cached_property

import numpy as np

from .. import kernels as kernel_gate
from ._members import StratumMembers
from ._object_identity import object_pointers, objects_repeat
from ..base._validation import show

# Besides the encoder, the input predicates and the missing-value check are
# shared with pystratum.r, which must accept and refuse exactly the same input.
__all__ = ["EncodedStrata", "encode_strata", "check_object_missing", "first_rows_of_codes",
           "arrow_integers",
           "is_column_like", "strata_columns",
           "is_dataframe", "raise_missing", "smallest_code_dtype"]

# An integer column whose value range is at most this many times the row
# count is compacted with bincount (linear time) instead of sorted.
_DENSE_RANGE_FACTOR = 4


@dataclass(frozen=True)
class EncodedStrata:
    """Strata as integer codes.

    codes:  integer array (smallest fitting dtype), one code in ``0..n_strata-1`` per row.
    labels: one label per code; a tuple of column values for multi-column strata.
    sizes:  int64 array, rows per stratum (every stratum has at least one row).
    """

    codes: np.ndarray
    labels: tuple
    sizes: np.ndarray

    @property
    def n_rows(self) -> int:
        return int(self.codes.shape[0])

    @property
    def n_strata(self) -> int:
        return int(self.sizes.shape[0])

    @cached_property
    def first_rows(self) -> np.ndarray:
        """int64, the first row position of each stratum.

        Policies that treat strata in turn (e.g. FixedSize's cyclic extras)
        take them in order of first appearance: a property of the data, so
        it is the same in both languages and under any relabelling.
        """
        return first_rows_of_codes(self.codes, self.n_strata)

    @cached_property
    def grouped_rows(self) -> np.ndarray:
        """Row positions grouped by stratum, each stratum's rows increasing.

        Stratum ``s`` is ``grouped_rows[offsets[s]:offsets[s + 1]]``; int32
        when the rows fit (kept for the object's life: a sampler groups its
        rows once, not every epoch).
        """
        dtype = np.int32 if self.n_rows <= np.iinfo(np.int32).max else np.int64
        kernels = kernel_gate.compiled_for("index", self.n_rows)  # the counting sort
        if kernels is None:
            return np.argsort(self.codes, kind="stable").astype(dtype, copy=False)
        rows = np.empty(self.n_rows, dtype=dtype)
        kernels.write_members(self.codes, 0, self.offsets[:-1].copy(), rows)
        return rows

    @cached_property
    def offsets(self) -> np.ndarray:
        """int64 ``(n_strata + 1,)``: where each stratum starts in :attr:`grouped_rows`."""
        offsets = np.zeros(self.n_strata + 1, dtype=np.int64)
        np.cumsum(self.sizes, out=offsets[1:])
        return offsets


def encode_strata(strata, *, name: str = "strata") -> EncodedStrata:
    """Encode one or several stratum columns into per-row integer codes.

    Accepted forms (see :func:`strata_columns`): a 1-D array-like of labels
    (ints, floats, strings, bools, pandas categoricals or Series), a pandas
    DataFrame, a dict ``{name: column}``, a 2-D array (rows x variables) or a
    list/tuple of equal-length row sequences. Two rows are in the same
    stratum exactly when their values are equal (``==``) in every column.
    Missing values raise a ValueError naming the first offending row.
    """
    if isinstance(strata, EncodedStrata):
        return strata
    columns = _columns_keeping_arrow(strata, name)
    n_rows = len(columns[0][1])
    for column_name, column in columns:
        if len(column) != n_rows:
            raise ValueError(
                f"{name} columns must all have the same length, but {column_name} has "
                f"{len(column)} rows and {columns[0][0]} has {n_rows}."
            )
    if n_rows == 0:
        raise ValueError(
            f"{name} is empty (0 rows); pass one stratum label per row of the data set."
        )
    encoded = [_encode_column(column, column_name) for column_name, column in columns]
    if len(encoded) == 1:
        codes, labels = encoded[0]
        return _finish(codes, tuple(labels))
    return _combine(encoded)


def _columns_keeping_arrow(strata, name):
    """:func:`strata_columns`, with pyarrow columns (alone or as dict values) kept as they
    are: their dictionary or hash encoding gives the codes without a Python object per row."""
    if is_arrow_1d(strata):
        if len(strata) == 0:
            raise ValueError(
                f"{name} is empty (0 rows); pass one stratum label per row of the data set.")
        return [(name, strata)]
    columns = strata_columns(strata, name=name)
    if isinstance(strata, Mapping):
        columns = [(column_name, value if is_arrow_1d(value) else column)
                   for (column_name, column), value in zip(columns, strata.values())]
    return columns


def is_arrow_1d(obj) -> bool:
    """A pyarrow Array or ChunkedArray (recognised without importing pyarrow)."""
    return type(obj).__module__.startswith("pyarrow") and hasattr(obj, "null_count") and \
        hasattr(obj, "type") and not hasattr(obj, "schema")


_FORMS = ("a list or 1-D array with one label per row, a pandas Series/DataFrame, a dict "
          "{name: column}, a 2-D array (rows x variables) or a list of row tuples")


def strata_columns(strata, name: str = "strata") -> list:
    """Split strata into ``[(column_name, 1-D column), ...]`` (no copy where possible).

    The one place that decides which input forms mean what:

    * pandas DataFrame, dict ``{name: column}``: explicit columns.
    * 2-D array (numpy, ``np.matrix``, anything with ``__array__``): rows x variables.
    * list/tuple of scalars: one column of labels.
    * list/tuple of equal-length lists/tuples: rows, one column per position
      (as numpy reads it), each column kept as the Python values.
    * list/tuple holding arrays/Series/tensors: ambiguous (columns or rows?),
      a TypeError says which explicit form to use.

    Each column is a pandas 1-D object or a 1-D numpy array (masked arrays
    keep their mask, which :func:`encode_strata` reports as missing values).
    pystratum.r uses it too, so both accept and refuse the same input.
    """
    if isinstance(strata, StratumMembers):
        raise TypeError(
            f"{name} is a StratumMembers (member lists, as parquet_strata() and "
            f"grouped_strata() return), which only the on-demand plan reads: use "
            f"pystratum.lazy_plan({name}, policy, seed=...) or "
            f"pystratum.torch.StratifiedBatchSampler({name}, policy, rng='index'); "
            f"for this function pass the labels themselves."
        )
    if is_dataframe(strata):
        if strata.shape[1] == 0:
            raise ValueError(
                f"{name} is a DataFrame with zero columns; pass at least one stratum column."
            )
        return [(f"{name}[{col!r}]", strata[col]) for col in strata.columns]
    if isinstance(strata, Mapping):
        return _mapping_columns(strata, name)
    if is_pandas_1d(strata):
        return [(name, strata)]
    if isinstance(strata, (list, tuple)):
        return _sequence_columns(strata, name)
    array = _as_array(strata, name)
    if array.ndim == 1:
        return [(name, array)]
    if array.ndim == 2:
        if array.shape[1] == 0:
            raise ValueError(
                f"{name} is a 2-D array with zero columns (shape {array.shape}); "
                f"pass at least one stratum column."
            )
        return [(f"{name}[:, {k}]", array[:, k]) for k in range(array.shape[1])]
    raise ValueError(
        f"{name} must be 1-D (one label per row) or 2-D (rows x stratum variables), got an "
        f"array with shape {array.shape}. Reshape it, e.g. {name}.reshape(n_rows, -1), or "
        f"pass one column per variable in a dict or DataFrame."
    )


# The name pystratum.r imported before this function was public.
_split_columns = strata_columns


def _not_array_like(strata, name):
    return TypeError(
        f"{name} must be array-like with one label per row ({_FORMS}), got "
        f"{name}={show(strata)} of type {type(strata).__name__}."
    )


def _as_array(strata, name):
    """A numpy view of an array-like that is not a list/tuple/pandas object."""
    if strata is None or isinstance(strata, (str, bytes, bytearray, numbers.Number)) or \
            np.isscalar(strata):
        raise _not_array_like(strata, name)
    if isinstance(strata, AbstractSet):
        raise TypeError(
            f"{name} is a {type(strata).__name__}, which has no row order; pass a list or "
            f"array with one label per row, in row order, got {name}={show(strata)}."
        )
    if isinstance(strata, np.ndarray):
        # Masked arrays keep their mask (checked per column); np.matrix and
        # other subclasses become plain arrays, whose columns are 1-D.
        array = strata if isinstance(strata, np.ma.MaskedArray) else np.asarray(strata)
    elif hasattr(strata, "__array__") or hasattr(strata, "__array_interface__") or (
        hasattr(strata, "__len__") and hasattr(strata, "__getitem__")
    ):
        try:
            array = np.asarray(strata)
        except (TypeError, ValueError) as error:
            raise TypeError(
                f"{name} of type {type(strata).__name__} cannot be read as an array ({error}); "
                f"convert it to a type numpy reads (e.g. x.float() for a bfloat16 tensor), or "
                f"pass {_FORMS}."
            ) from None
    elif isinstance(strata, Iterable):
        raise TypeError(
            f"{name} is a {type(strata).__name__} object: an iterator, which can be read only "
            f"once and has no length; pass a list instead: {name}=list(...)."
        )
    else:
        raise _not_array_like(strata, name)
    if array.ndim == 0:
        raise TypeError(
            f"{name} must hold one label per row, got a 0-d array (a single value): "
            f"{name}={show(strata)}. Pass a 1-D array or list of labels."
        )
    return array


def _mapping_columns(strata, name):
    """``{name: column}``: the keys name the columns, every value is one column."""
    if len(strata) == 0:
        raise ValueError(
            f"{name} is a dict with zero columns; pass at least one stratum column, "
            f"e.g. {{'y': labels}}."
        )
    return [(f"{name}[{key!r}]", _as_column(value, f"{name}[{key!r}]"))
            for key, value in strata.items()]


def _as_column(value, column_name):
    """One explicit column (a dict value): a 1-D array-like of labels."""
    if is_dataframe(value) or isinstance(value, Mapping):
        raise TypeError(
            f"{column_name} must be one column of labels (a list, 1-D array or Series), got a "
            f"{type(value).__name__}; a dict maps each column name to one column."
        )
    if is_pandas_1d(value):
        return value
    if value is None or isinstance(value, (str, bytes, bytearray, numbers.Number)) or \
            np.isscalar(value):
        raise TypeError(
            f"{column_name} must be one column of labels (a list, 1-D array or Series with one "
            f"label per row), got {column_name}={show(value)} of type {type(value).__name__}. "
            f"A dict maps each column name to a whole column: {{'y': labels, 'group': groups}}."
        )
    if isinstance(value, (list, tuple)):
        columns = _sequence_columns(value, column_name)
        if len(columns) > 1:
            raise ValueError(
                f"{column_name} must be 1-D (one label per row), got a sequence of rows with "
                f"{len(columns)} values each; give each variable its own dict entry."
            )
        return columns[0][1]
    try:
        array = _as_array(value, column_name)
    except TypeError as error:
        raise TypeError(f"{error} In a dict each value is one column.") from None
    if array.ndim != 1:
        raise ValueError(
            f"{column_name} must be 1-D (one label per row), got an array with shape "
            f"{array.shape}; give each variable its own dict entry."
        )
    return array


def _is_array_object(item) -> bool:
    """A numpy array, Series, tensor...: something with dimensions that is not a list/tuple."""
    if isinstance(item, (list, tuple, str, bytes)):
        return False
    try:
        return int(getattr(item, "ndim", 0) or 0) >= 1
    except (TypeError, ValueError):
        return False


def _sequence_columns(items, name):
    """Columns of a list/tuple: labels (scalars), rows (sequences), or an error."""
    types = set(map(type, items))
    array_types = {t for t in types if _maybe_array_type(t)}
    if array_types:
        arrays = (k for k, item in enumerate(items)
                  if type(item) in array_types and _is_array_object(item))
        k = next(arrays, None)
        if k is not None:
            raise TypeError(
                f"{name} is a {type(items).__name__} of arrays ({name}[{k}] is a "
                f"{type(items[k]).__name__} with shape {tuple(getattr(items[k], 'shape', ()))}), "
                f"which is ambiguous: columns or rows? For columns pass a dict "
                f"{{'name': column, ...}} or a pandas DataFrame; for rows, or labels gathered "
                f"one by one, pass one array: np.column_stack(...) (rows x variables), "
                f"np.concatenate(...) or np.asarray(...)."
            )
    if any(issubclass(t, (list, tuple)) for t in types):
        return _row_columns(items, name)
    return [(name, _scalars_to_array(items, types))]


_MASKED_TYPE = type(np.ma.masked)


def _maybe_array_type(t) -> bool:
    return not issubclass(t, (list, tuple, str, bytes, numbers.Number, np.generic)) and \
        t is not type(None)


def _row_columns(rows, name):
    """A list of row sequences -> one column per position (numpy's reading)."""
    for k, row in enumerate(rows):
        if not isinstance(row, (list, tuple)):
            first = next(j for j, r in enumerate(rows) if isinstance(r, (list, tuple)))
            raise ValueError(
                f"{name} mixes rows and single labels: {name}[{first}]={show(rows[first])} is "
                f"a row but {name}[{k}]={show(row)} is not. Pass one label per row, or one "
                f"equal-length tuple of values per row."
            )
    width = len(rows[0])
    for k, row in enumerate(rows):
        if len(row) != width:
            raise ValueError(
                f"{name} is a list of rows of unequal length (ragged): {name}[0] has {width} "
                f"values but {name}[{k}] has {len(row)}. Every row needs one value per stratum "
                f"variable; for labels that are themselves tuples use one string or a "
                f"DataFrame column per variable."
            )
    if width == 0:
        raise ValueError(
            f"{name} is a list of empty rows (zero stratum variables); pass at least one "
            f"value per row."
        )
    columns = []
    for j in range(width):
        values = [row[j] for row in rows]
        types = set(map(type, values))
        for k, value in enumerate(values):
            if isinstance(value, (list, tuple)) or _is_array_object(value):
                raise ValueError(
                    f"{name} must be 1-D or 2-D, but {name}[{k}][{j}]={show(value)} is itself a "
                    f"sequence (3 or more dimensions). Pass one scalar label per row and "
                    f"variable."
                )
        columns.append((f"{name}[:, {j}]", _scalars_to_array(values, types)))
    return columns


def _scalars_to_array(values, types):
    """A 1-D array of Python scalars that keeps their equality.

    numpy's guess is kept when it is exact (ints, bools, floats, datetimes);
    strings (numpy's 'U' dtype drops trailing NULs) and mixes numpy would
    coerce (0 and 'a' both to strings, 2**63 and -1 to floats) stay Python
    objects and are encoded by hash and ``==``.
    """
    # np.ma.masked would become 0.0 in numpy's guess: keep it, it is a missing value.
    if not any(issubclass(t, (str, bytes, _MASKED_TYPE)) for t in types):
        try:
            array = np.asarray(values)
        except (TypeError, ValueError, OverflowError):
            array = None
        if array is not None and array.ndim == 1:
            kind = array.dtype.kind
            if kind in "biumM":
                return array
            if kind in "fc" and _exact_as_float(values, types):
                return array
    array = np.empty(len(values), dtype=object)
    array[:] = values
    return array


def _exact_as_float(values, types) -> bool:
    """Whether numpy's float array keeps every value (ints beyond 2**53 would round)."""
    int_types = [t for t in types if issubclass(t, (numbers.Integral, np.integer))
                 and not issubclass(t, (bool, np.bool_))]
    if not int_types:
        return True
    return all(abs(int(v)) <= _FLOAT_EXACT_INT for v in values if type(v) in int_types)


# Whole floats take the integer path only when every integer in their range
# is a float, so casting to int64 cannot merge distinct values.
_FLOAT_EXACT_INT = 2**53


def is_dataframe(obj) -> bool:
    return hasattr(obj, "columns") and hasattr(obj, "iloc") and getattr(obj, "ndim", 0) == 2


def is_pandas_1d(obj) -> bool:
    return type(obj).__module__.startswith("pandas") and getattr(obj, "ndim", 0) == 1


def is_column_like(obj) -> bool:
    if isinstance(obj, (str, bytes)) or np.isscalar(obj) or obj is None:
        return False
    return getattr(obj, "ndim", 1) == 1 and hasattr(obj, "__len__")


def _encode_column(column, column_name):
    """Return ``(codes, labels)`` for one column; codes index into labels.

    Labels no row uses may be listed (a dictionary's unused entries); the
    caller's :func:`_finish` or :func:`_combine` leaves them out.
    """
    arrow = _arrow_of(column)
    if arrow is not None:
        encoded = _encode_arrow(arrow, column_name)
        if encoded is not None:
            return encoded
        column = np.asarray(column) if is_arrow_1d(column) else column
    categorical = _categorical_parts(column)
    if categorical is not None:
        codes, categories = categorical
        missing = codes < 0
        if missing.any():
            raise_missing(column_name, int(np.argmax(missing)), "missing category (NaN)")
        return codes, list(categories)

    if isinstance(column, np.ma.MaskedArray):
        mask = np.ma.getmaskarray(column)
        if mask.any():
            raise_missing(column_name, int(np.argmax(mask)), "masked")
        column = np.ma.getdata(column)
    values = column.to_numpy() if hasattr(column, "to_numpy") else np.asarray(column)
    if values.ndim != 1:
        raise ValueError(
            f"{column_name} must be 1-D, got an array with shape {values.shape}."
        )
    kind = values.dtype.kind
    if kind == "b":
        codes = values.view(np.int8)
        present = [bool(np.any(codes == 0)), bool(np.any(codes == 1))]
        if all(present):
            return codes, [False, True]
        return np.zeros(codes.shape[0], dtype=np.int8), [present[1]]
    if kind in "iu":
        return _encode_integers(values)
    if kind == "f" or kind == "c":
        missing = np.isnan(values)
        if missing.any():
            row = int(np.argmax(missing))
            raise_missing(column_name, row, _show_value(values[row]))
        # Whole floats (e.g. 0.0/1.0 labels) take the linear-time integer path
        # when int64 holds them exactly; NaN and inf fail the bound.
        if kind == "f" and np.all(np.abs(values) <= np.float64(_FLOAT_EXACT_INT)) and \
                np.array_equal(values, np.round(values)):
            codes, labels = _encode_integers(values.astype(np.int64))
            return codes, [float(v) for v in labels]
        return _encode_sorted(values)
    if kind in "US":
        return _encode_fixed_width_text(values) or _encode_sorted(values)
    if kind == "O":
        return _encode_text_objects(values) or _encode_objects(values, column_name)
    if kind in "mM":
        missing = np.isnat(values)
        if missing.any():
            raise_missing(column_name, int(np.argmax(missing)), "NaT")
        return _encode_sorted(values)
    raise TypeError(
        f"{column_name} has dtype {values.dtype}, which cannot be used as stratum labels; "
        f"use ints, floats, strings, bools or categoricals."
    )


# Below this many rows the general paths cost less than loading pyarrow.
_HASH_MIN_ROWS = 1 << 15


def _pyarrow():
    """pyarrow, or None without it (then the general paths serve). Its arrays'
    ``dictionary_encode`` methods load ``pyarrow.compute`` (0.07 s) only when called: a
    dictionary column (the command line's CSV and Parquet reads) never needs it."""
    try:
        import pyarrow
    except ImportError:
        return None
    return pyarrow


def _arrow_of(column):
    """The pyarrow data of a pyarrow column or a pyarrow-backed pandas column, else None."""
    if is_arrow_1d(column):
        return column
    if not is_pandas_1d(column):
        return None
    array = getattr(column, "array", column)
    to_arrow = getattr(array, "__arrow_array__", None)
    # Only pandas' pyarrow-backed arrays: its masked (Int64, boolean) arrays convert too,
    # but their missing values and labels are the general path's to read.
    if to_arrow is None or "Arrow" not in type(array).__name__:
        return None
    try:
        return to_arrow()
    except Exception:  # a pandas version without the conversion: the general path reads it
        return None


def _encode_arrow(data, column_name):
    """``(codes, labels)`` of a text or integer pyarrow column (dictionary-encoded or not),
    from its dictionary: one hash per row in pyarrow, the labels read off the dictionary by
    the general path (so they are the same, sorted as there). None for other types or nulls
    (the general path gives those their labels or their missing-value error)."""
    pa = _pyarrow()
    if pa is None:
        return None
    chunked = data if isinstance(data, pa.ChunkedArray) else pa.chunked_array([data])
    value_type = chunked.type.value_type if pa.types.is_dictionary(chunked.type) else chunked.type
    if chunked.null_count or chunked.num_chunks == 0 or not (
            pa.types.is_string(value_type) or pa.types.is_large_string(value_type) or
            pa.types.is_integer(value_type)):
        return None
    if not pa.types.is_dictionary(chunked.type):
        if pa.types.is_integer(value_type):
            return None  # numpy's integer path (a view, then a count) is faster than hashing
        chunked = chunked.dictionary_encode()
    chunked = chunked.unify_dictionaries()
    dictionary = chunked.chunk(0).dictionary
    if dictionary.null_count or len(dictionary) == 0:
        return None
    indices = np.concatenate([arrow_integers(chunk.indices) for chunk in chunked.chunks])
    if pa.types.is_integer(value_type):
        entries = arrow_integers(dictionary)
    else:  # to_pylist: pyarrow's text-to-numpy conversion would import pandas
        entries = np.empty(len(dictionary), dtype=object)
        entries[:] = dictionary.to_pylist()
    entry_codes, labels = _encode_column(entries, column_name)
    return np.asarray(entry_codes)[indices], labels


def arrow_integers(array) -> np.ndarray:
    """A pyarrow integer array without nulls as a numpy view of its buffer (pyarrow's own
    ``to_numpy`` imports pandas, half a second for a small file)."""
    dtype = np.dtype(str(array.type))
    return np.frombuffer(array.buffers()[1], dtype=dtype,
                         count=array.offset + len(array))[array.offset:]


def _encode_fixed_width_text(values):
    """numpy strings ('U', 'S'): the codes and labels of :func:`_encode_sorted`, hashing each
    row's bytes in pyarrow instead of sorting N strings. Equal bytes are equal numpy strings
    (both pad with NULs), so nothing merges that the sort would keep apart. None when small
    or without pyarrow."""
    if values.shape[0] < _HASH_MIN_ROWS or values.dtype.itemsize == 0:
        return None
    pa = _pyarrow()
    if pa is None:
        return None
    values = np.ascontiguousarray(values)
    cells = pa.FixedSizeBinaryArray.from_buffers(
        pa.binary(values.dtype.itemsize), values.shape[0], [None, pa.py_buffer(values)])
    encoded = cells.dictionary_encode()
    dictionary = encoded.dictionary
    distinct = np.frombuffer(dictionary.buffers()[1], dtype=values.dtype)[
        dictionary.offset:dictionary.offset + len(dictionary)]
    labels, rank = np.unique(distinct, return_inverse=True)  # distinct: rank is a permutation
    codes = rank.reshape(-1).astype(smallest_code_dtype(labels.shape[0]))
    return codes[arrow_integers(encoded.indices)], labels.tolist()


def _encode_text_objects(values):
    """Python strings (an object array of ``str`` only): the codes and labels of
    :func:`_encode_objects`, hashed in C. None (the general path decides) when small, without
    pandas or pyarrow, or when any distinct value is not exactly a ``str`` (bytes, numbers,
    None, NaN, str subclasses, unencodable surrogates).

    pandas' ``factorize`` serves when the caller has loaded pandas (it hashes the objects with
    Python's own hash and ``==``, so b"a" and "a" stay apart); pyarrow otherwise. Either way
    each label is the first row holding it, the object the general path's dict keeps."""
    if values.shape[0] < _HASH_MIN_ROWS:
        return None
    compiled = _encode_str_objects_compiled(values)
    if compiled is not None:
        return compiled
    repeated = _encode_repeated_text_objects(values)
    if repeated is not None:
        return repeated
    factorized = _factorize_objects(values)
    if factorized is None:
        return None
    indices, distinct = factorized
    if not all(type(label) is str for label in distinct):
        return None
    rank, labels = _sorted_text_ranks(distinct)
    return rank[indices], labels


def _encode_str_objects_compiled(values):
    """:func:`_encode_text_objects` in one compiled pass reading the objects' text
    (``kernels._pyobjects``), when numba serves this many rows: the same codes and labels
    (its equality is ``str.__eq__``, each label the first row's object). None when any row is
    not exactly a ``str`` (then the other paths decide) or without the kernel."""
    kernels = kernel_gate.compiled_for("pyobjects", values.shape[0])
    if kernels is None:
        return None
    numbered = kernels.str_codes(object_pointers(values))
    if numbered is None:
        return None
    codes, first_rows = numbered
    rank, labels = _sorted_text_ranks(values[first_rows].tolist())
    return rank[codes], labels


def _sorted_text_ranks(distinct):
    """``(rank, labels)``: each distinct ``str``'s position among them sorted, and them sorted."""
    order = sorted(range(len(distinct)), key=distinct.__getitem__)
    rank = np.empty(len(distinct), dtype=smallest_code_dtype(len(distinct)))
    rank[np.asarray(order, dtype=np.int64)] = np.arange(len(distinct))
    return rank, [distinct[k] for k in order]


def _encode_repeated_text_objects(values):
    """:func:`_encode_text_objects` for rows that repeat a few ``str`` objects: the rows are
    numbered by object identity (their pointers hashed as integers), then the distinct objects
    by value. The same codes and labels: equal strings held by different objects share a
    code, and each label is the object of the first row holding its value. None (the caller's
    path decides) when the objects do not repeat or any distinct object is not exactly a
    ``str``."""
    identified = objects_by_identity(values)
    if identified is None:
        return None
    object_codes, objects = identified
    if set(map(type, objects)) != {str}:
        return None
    # Objects come in order of first row, so each value's first object is its first row's.
    value_codes: dict = {}
    value_of_object = [value_codes.setdefault(text, len(value_codes)) for text in objects]
    rank, labels = _sorted_text_ranks(list(value_codes))
    return rank[np.asarray(value_of_object, dtype=np.int64)][object_codes], labels


def objects_by_identity(values, *, sampled: bool = False):
    """``(codes, objects)`` for a 1-D object array whose rows repeat the same objects, or None.

    ``codes`` (int64) number the distinct objects by identity (their pointers hashed as
    integers, see ``_object_identity``) in order of first row; ``objects`` are they, in that
    order. None when a sample of rows shows mostly distinct objects (``sampled=True``: the
    caller has looked already) or without pandas and pyarrow.
    """
    pointers = object_pointers(values)
    if not sampled and not objects_repeat(pointers):
        return None
    hashed = _factorize_integers(pointers)
    if hashed is None:
        return None
    codes, n_objects = hashed
    return codes, values[first_rows_of_codes(codes, n_objects)].tolist()


def _factorize_integers(integers):
    """``(codes, n_distinct)``: first-appearance codes (int64) of integers, hashed in C by
    pandas (when loaded) or pyarrow; None without both."""
    pandas = _loaded_pandas()
    if pandas is not None:
        codes, uniques = pandas.factorize(integers)
        return codes.astype(np.int64, copy=False), len(uniques)
    pa = _pyarrow()
    if pa is None:
        return None
    encoded = pa.array(integers).dictionary_encode()
    return arrow_integers(encoded.indices).astype(np.int64), len(encoded.dictionary)


def _factorize_objects(values):
    """``(indices, distinct)``: a code per row and the first row's object of each code, or
    None (missing values, no hashing library, values pyarrow cannot read as text)."""
    pandas = _loaded_pandas()
    if pandas is not None:
        try:
            indices, distinct = pandas.factorize(values)
        except (TypeError, ValueError):  # unhashable values: the general path names the row
            return None
        if indices.shape[0] and int(indices.min()) < 0:  # pandas' missing values
            return None
        return indices, list(distinct)
    pa = _pyarrow()
    if pa is None:
        return None
    try:
        cells = pa.array(values)
    except (pa.ArrowException, TypeError, ValueError, UnicodeError, OverflowError):
        return None
    # Inferred, not typed: a typed conversion would read bytes as text, merging b"a" and "a".
    if cells.null_count or not (pa.types.is_string(cells.type) or
                                pa.types.is_large_string(cells.type)):
        return None
    encoded = cells.dictionary_encode()
    indices = arrow_integers(encoded.indices)
    first_rows = first_rows_of_codes(indices, len(encoded.dictionary))
    return indices, values[first_rows].tolist()


def _loaded_pandas():
    """pandas if the caller has imported it (importing it here would cost more than it saves)."""
    return sys.modules.get("pandas")


def _categorical_parts(column):
    """(codes, categories) for pandas categoricals, else None."""
    dtype = getattr(column, "dtype", None)
    if dtype is None or getattr(dtype, "name", "") != "category":
        return None
    cat = column.cat if hasattr(column, "cat") else column
    return np.asarray(cat.codes), list(cat.categories)


def _encode_integers(values):
    lo = int(values.min())
    hi = int(values.max())
    span = hi - lo + 1
    if span > _DENSE_RANGE_FACTOR * values.shape[0] + 1024:
        return _encode_sorted(values)
    offsets = _offsets_from(values, lo)
    present = np.bincount(offsets, minlength=span) > 0
    offsets_present = np.flatnonzero(present)
    if lo <= np.iinfo(np.int64).max - span:
        labels = (offsets_present + lo).tolist()
    else:  # uint64 labels above int64's range: add in Python ints
        labels = [lo + k for k in offsets_present.tolist()]
    if present.all():
        return offsets, labels  # already 0..k-1 (e.g. 0/1 labels): no table look-up
    code_of_offset = (np.cumsum(present) - 1).astype(smallest_code_dtype(len(labels)))
    return code_of_offset[offsets], labels


def _offsets_from(values, lo: int):
    """``values - lo`` (all in ``0..span-1``) without overflowing the input's dtype."""
    if values.dtype.itemsize < 8:
        # int8 labels -100 and 100 are 200 apart, more than int8 holds; in the
        # unsigned type of the same width the difference wraps to exactly 200.
        unsigned = np.dtype(f"u{values.dtype.itemsize}")
        shift = unsigned.type(lo % (1 << (8 * unsigned.itemsize)))
        return values.view(unsigned) - shift if lo else values.view(unsigned)
    if values.dtype.kind == "u":
        # bincount refuses uint64; the offsets are small, so int64 holds them.
        return (values - np.uint64(lo)).astype(np.int64)
    return values if lo == 0 else values - lo


def smallest_code_dtype(n_codes: int):
    """The smallest signed dtype for codes 0..n_codes-1 (keeps N-sized arrays small)."""
    for dtype in (np.int8, np.int16, np.int32):
        if n_codes <= np.iinfo(dtype).max:
            return dtype
    return np.int64


def _encode_sorted(values):
    """numpy arrays of numbers, strings, datetimes: np.unique (equality, sorted labels)."""
    labels, codes = np.unique(values, return_inverse=True)
    return codes.reshape(-1), labels.tolist()


def _encode_objects(values, column_name):
    """Python objects: equal (``==``, same hash) values share a code.

    Codes follow first appearance; labels are then sorted when ``<`` orders
    them totally (numbers, strings), and kept in appearance order otherwise
    (mixed types, frozensets, complex numbers), which changes no batch.
    """
    check_object_missing(values, column_name)
    code_of_label: dict = {}
    items = values.tolist()
    try:
        codes = np.fromiter((code_of_label.setdefault(v, len(code_of_label)) for v in items),
                            dtype=np.int64, count=len(items))
    except (TypeError, ValueError):
        row, value = _first_unhashable(items)
        raise TypeError(
            f"{column_name} holds an unhashable value at row {row} (0-based): {show(value)} of "
            f"type {type(value).__name__}. Stratum labels must be hashable scalars (numbers, "
            f"strings, bools, tuples of them); for several stratum variables pass one column "
            f"per variable (a DataFrame, a dict of columns or a 2-D array)."
        ) from None
    labels = list(code_of_label)
    order = _total_order(labels)
    if order is None:
        return codes, labels
    rank = np.empty(len(labels), dtype=np.int64)
    rank[np.asarray(order, dtype=np.int64)] = np.arange(len(labels))
    return rank[codes], [labels[k] for k in order]


def _first_unhashable(items):
    seen: dict = {}
    for row, value in enumerate(items):
        try:
            seen.setdefault(value, row)
        except (TypeError, ValueError):
            return row, value
    return 0, items[0]


def _total_order(labels):
    """Indices sorting ``labels`` if ``<`` is a strict total order on them, else None."""
    if len(labels) < 2:
        return None
    try:
        order = sorted(range(len(labels)), key=labels.__getitem__)
        if all(labels[a] < labels[b] for a, b in zip(order, order[1:])):
            return order
    except Exception:  # comparing arbitrary user objects may raise anything: no order then
        return None
    return None


def check_object_missing(values, column_name):
    pandas = sys.modules.get("pandas")
    if pandas is not None:
        missing = np.asarray(pandas.isna(values), dtype=bool)
        # pandas does not count numpy's masked constant (from a list) as missing.
        missing |= np.fromiter((v is np.ma.masked for v in values.tolist()), dtype=bool,
                               count=values.shape[0])
    else:
        missing = np.fromiter((_is_missing_scalar(v) for v in values.tolist()), dtype=bool,
                              count=values.shape[0])
    if missing.any():
        row = int(np.argmax(missing))
        raise_missing(column_name, row, _show_value(values[row]))


def _is_missing_scalar(value) -> bool:
    if value is None or value is np.ma.masked:
        return True
    if type(value).__name__ in ("NAType", "NaTType"):
        return True
    try:
        return bool(value != value)  # NaN is the only value unequal to itself
    except (TypeError, ValueError):
        return False


def _show_value(value) -> str:
    return repr(value.item() if isinstance(value, np.generic) else value)


def raise_missing(column_name, row, shown):
    raise ValueError(
        f"{column_name} has a missing value at row {row} (0-based): {shown}. Every row "
        f"needs a stratum: fill the missing labels (e.g. with their own 'missing' level) "
        f"or drop those rows before batching."
    )


def _combine(encoded):
    """Combine per-column codes into one code per distinct combination."""
    combined = encoded[0][0].astype(np.int64)
    n_levels = len(encoded[0][1])
    dense_levels = _DENSE_RANGE_FACTOR * combined.shape[0] + 1024
    compacted = False
    for codes, labels in encoded[1:]:
        combined *= len(labels)  # int64: no overflow of small code dtypes
        combined += codes
        n_levels *= len(labels)
        if n_levels > dense_levels:  # renumber only where the products would grow large
            combined, n_levels = _compact(combined, n_levels)
            compacted = True
    if not compacted:
        return _combine_dense(combined, encoded)
    # Label each combined stratum by its column values, read off one member row,
    # and order strata by their columns' label orders (no comparison of the
    # values themselves, which need not be orderable: complex, mixed types).
    first_rows = first_rows_of_codes(combined, n_levels)
    keys = [np.asarray(col_codes)[first_rows] for col_codes, _ in encoded]
    order = np.lexsort(keys[::-1])
    labels = tuple(
        tuple(col_labels[int(col_codes[row])] for col_codes, col_labels in encoded)
        for row in first_rows[order]
    )
    relabel = np.empty(n_levels, dtype=np.int64)
    relabel[order] = np.arange(n_levels)
    return _finish(relabel[combined], labels)


def _combine_dense(combined, encoded) -> EncodedStrata:
    """Strata of mixed-radix codes (column 0's code the most significant digit): a level's
    number orders it as the columns' codes do, and its digits are its columns' codes, so
    one count gives the strata, their order and their labels (what :func:`_combine`'s
    general path gives, with no renumbering pass)."""
    radices = [len(labels) for _, labels in encoded]
    sizes = np.bincount(combined, minlength=int(np.prod(radices, dtype=np.int64)))
    present = np.flatnonzero(sizes)
    relabel = np.zeros(sizes.shape[0], dtype=smallest_code_dtype(present.shape[0]))
    relabel[present] = np.arange(present.shape[0])
    digits = []
    rest = present
    for radix in reversed(radices):
        rest, digit = np.divmod(rest, radix)
        digits.append(digit)
    digits.reverse()
    labels = tuple(zip(*[[col_labels[k] for k in digit.tolist()]
                         for digit, (_, col_labels) in zip(digits, encoded)]))
    return EncodedStrata(codes=relabel[combined], labels=labels,
                         sizes=sizes[present].astype(np.int64))


def _compact(codes, n_levels):
    """Renumber codes to 0..k-1 (k = number present) to keep products small."""
    if n_levels <= _DENSE_RANGE_FACTOR * codes.shape[0] + 1024:
        present = np.bincount(codes, minlength=n_levels) > 0
        code_of_level = np.cumsum(present) - 1
        return code_of_level[codes], int(present.sum())
    uniques, inverse = np.unique(codes, return_inverse=True)
    return inverse.reshape(-1), int(uniques.shape[0])


def first_rows_of_codes(codes, n_levels):
    """First row of each level, for compact codes (0..n_levels-1, all present)."""
    first_rows = np.full(n_levels, codes.shape[0], dtype=np.int64)
    kernels = kernel_gate.compiled_for("index", codes.shape[0])
    if kernels is not None and codes.dtype.kind in "iu":
        kernels.first_rows(codes, first_rows)
        return first_rows
    np.minimum.at(first_rows, codes, np.arange(codes.shape[0], dtype=np.int64))
    return first_rows


def _finish(codes, labels) -> EncodedStrata:
    sizes = np.bincount(codes, minlength=len(labels)).astype(np.int64)
    if np.any(sizes == 0):
        # Unused categories of a categorical are not strata: nothing to batch.
        keep = sizes > 0
        code_of_old = np.cumsum(keep) - 1
        codes = code_of_old[codes]
        labels = tuple(label for label, k in zip(labels, keep) if k)
        sizes = sizes[keep]
    codes = codes.astype(smallest_code_dtype(len(labels)), copy=False)
    return EncodedStrata(codes=codes, labels=tuple(labels), sizes=sizes)
