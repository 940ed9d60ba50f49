"""Label matrices: rows x labels of 0/1, the input of multi-label policies.

A multi-label policy (``MultiLabel``) reads its input as a label matrix: one
row per data row, one column per label, 1 (or True) where the row has the
label. :func:`label_matrix` turns every accepted container into one bool
array and the label names; :func:`label_matrix_from_sets` builds it from a
list of label sets per row. Every cell must be 0 or 1: a missing value or
any other number is an error naming the argument, the value, its row and
label and the fix, as the R package words it (rows 0-based here, 1-based in
R). No torch, pandas or scipy import: those objects are recognised by their
type's module, and torch is asked for only when a tensor is passed.
"""

from __future__ import annotations

import itertools
import numbers
from collections.abc import Iterable, Iterator, Mapping
from collections.abc import Set as AbstractSet
from typing import NamedTuple

import numpy as np

from .. import kernels as kernel_gate
from ..base._optional import require_torch
from ..base._validation import show
from ._encode import _pyarrow, is_dataframe, objects_by_identity
from ._labels import label_key
from ._object_identity import objects_repeat

__all__ = ["LabelMatrix", "label_matrix", "label_matrix_from_sets"]

_FIX_VALUE = "Recode it first: 1 where the row has the label, 0 where it does not."
_FIX_MISSING = ("A label matrix holds 0 or 1 in every cell: fill it (0 where the row does not "
                "have the label) or drop the row.")
_FORMS_TEXT = ("a 2-D array of 0/1 or booleans (numpy, torch), a pandas DataFrame of 0/1 "
               "columns or a scipy.sparse matrix")


# A label matrix built from a compact input (scipy.sparse, label sets) may have at most
# max(LABEL_CELLS_MAX, LABEL_GROWTH_MAX x the entries the input lists) cells: sized
# before the dense matrix is allocated (the R package applies the same rule to its sets).
LABEL_CELLS_MAX = 2**28
LABEL_GROWTH_MAX = 16


def check_label_cells(n_rows: int, n_labels: int, listed: int, name: str, what: str) -> None:
    """Refuse a dense label matrix of ``n_rows x n_labels`` cells grown from ``listed``
    entries when it exceeds ``max(2**28, 16 x listed)`` cells: a ValueError naming
    ``name``, the sizes, the memory (one byte a cell) and the fix."""
    cells = n_rows * n_labels
    limit = max(LABEL_CELLS_MAX, LABEL_GROWTH_MAX * listed)
    if cells <= limit:
        return
    raise ValueError(
        f"{name} makes a label matrix of {n_rows:,} rows x {n_labels:,} labels from {what} "
        f"listing {listed:,} labels: {cells:,} cells, about {cells / 2**30:,.1f} GiB at one "
        f"byte a cell. A label matrix built from label sets or a sparse matrix may have at "
        f"most max(2**28, 16 x the labels listed) = {limit:,} cells. Keep the labels that "
        f"matter (e.g. the frequent ones, labels=[...]) or merge rare ones; a label every "
        f"row has alone is an id, not a label."
    )


class LabelMatrix(NamedTuple):
    """A validated label matrix: ``matrix`` bool ``(N, L)``, ``labels`` the L names (str)."""

    matrix: np.ndarray
    labels: tuple


def label_matrix(labels, *, name: str = "labels") -> LabelMatrix:
    """Read a label matrix: ``(bool array of shape (N, L), the L label names)``.

    Accepted: a 2-D numpy array (or anything with ``__array__``, a list of
    row lists) of bool or of any int/uint/float dtype holding only 0 and 1;
    a torch tensor (any device, sparse too); a pandas DataFrame whose columns
    hold 0/1 or booleans, or a dict ``{name: 1-D column}`` (names from the
    columns or keys, as text); a scipy.sparse matrix or
    array (validated on its stored entries; the result is dense, N x L bytes:
    10^6 rows x 20 labels are 20 MB, whatever the sparse dtype). Names of
    unnamed columns are their 0-based positions as text (``"0"``, ``"1"``,
    ...), in the R package too.

    Guarantee: cell ``[i, l]`` is True exactly when the input holds 1 (or
    True) there; anything else is refused: a missing value (NaN, None,
    ``pd.NA``, a masked entry) or another value (2, -1, 0.5, inf, text) is a
    ValueError (text and other types a TypeError) naming ``name``, the value,
    the first such cell (lowest row, then lowest column; rows 0-based) and
    the fix. 1-D input, 0 rows or 0 columns are a ValueError.
    """
    if isinstance(labels, LabelMatrix):
        return labels
    if type(labels).__module__.startswith("scipy.sparse"):  # before Mapping: dok is a dict
        return _from_sparse(labels, name)
    if isinstance(labels, Mapping):
        return _from_mapping(labels, name)
    if labels is None or isinstance(labels, (str, bytes, bytearray, numbers.Number)) \
            or isinstance(labels, (AbstractSet, Iterator)):
        raise TypeError(
            f"{name} must be a label matrix ({_FORMS_TEXT}), got {name}={show(labels)} of type "
            f"{type(labels).__name__}. For label sets per row use "
            f"pystratum.label_matrix_from_sets({name})."
        )
    if is_dataframe(labels):
        return _from_dataframe(labels, name)
    module = type(labels).__module__
    if module.startswith("scipy.sparse"):
        return _from_sparse(labels, name)
    if module.startswith("torch"):
        labels = _tensor_to_numpy(labels, name)
    return _from_array(labels, name)


def _shape_checks(shape, name, what="an array"):
    if len(shape) != 2:
        if len(shape) == 1:
            raise ValueError(
                f"{name} must be 2-D (rows x labels), got {what} of shape {tuple(shape)} (1-D). "
                f"For one label pass it as one column ({name}.reshape(-1, 1)); for one label "
                f"per row as a class, use a single-label policy; for label sets per row use "
                f"pystratum.label_matrix_from_sets()."
            )
        raise ValueError(
            f"{name} must be 2-D (rows x labels), got {what} of shape {tuple(shape)}. Reshape "
            f"it to one row per data row and one column per label."
        )
    if shape[0] == 0:
        raise ValueError(f"{name} has 0 rows; pass one row per data row, one column per label.")
    if shape[1] == 0:
        raise ValueError(f"{name} has 0 columns; pass at least one label column.")


def _positions(n_columns):
    return tuple(str(k) for k in range(n_columns))


def value_text(value) -> str:
    """A cell's value as both languages print it (R's ``format(x, digits = 15)``)."""
    if value is None:
        return "None"
    if value is np.ma.masked:
        return "masked"
    if isinstance(value, (bool, np.bool_)):
        return "TRUE" if value else "FALSE"
    if isinstance(value, (numbers.Integral, np.integer)):
        return str(int(value))
    if isinstance(value, (float, np.floating)):
        value = float(value)
        if value != value:
            return "NaN"
        if value in (float("inf"), float("-inf")):
            return "Inf" if value > 0 else "-Inf"
        return "%.15g" % value
    if type(value).__name__ == "NAType":
        return "NA"
    return show(value)


def _raise_missing(name, value, row, label):
    raise ValueError(
        f"{name} has a missing value ({value_text(value)}) at row {row} (0-based) in label "
        f"'{label}'. {_FIX_MISSING}"
    )


def _raise_value(name, value, row, label):
    raise ValueError(
        f"{name} must hold only 0 and 1 (or booleans), got {value_text(value)} at row {row} "
        f"(0-based) in label '{label}'. {_FIX_VALUE}"
    )


def _raise_text(name, value, row, label):
    raise TypeError(
        f"{name} must hold 0/1 numbers or booleans, got the text {show(value)} at row {row} "
        f"(0-based) in label '{label}'. Convert the column to numbers first."
    )


def _first_cell(mask):
    """(row, column) of the first True cell in row-major order."""
    flat = int(np.flatnonzero(mask.reshape(-1))[0]) if mask.ndim == 2 else 0
    return divmod(flat, mask.shape[1])


def _check_numeric(values, name, names, missing=None):
    """``values`` (2-D, numeric or bool dtype) as bool, every cell checked to be 0 or 1."""
    if missing is not None and missing.any():
        row, col = _first_cell(missing)
        _raise_missing(name, np.ma.masked, row, names[col])
    kind = values.dtype.kind
    if kind == "b":
        return np.ascontiguousarray(values)
    if kind == "f":
        nan = np.isnan(values)
        if nan.any():
            row, col = _first_cell(nan)
            _raise_missing(name, values[row, col], row, names[col])
    if kind in "iuf":
        bad = (values != 0) & (values != 1)
        if bad.any():
            row, col = _first_cell(bad)
            _raise_value(name, values[row, col], row, names[col])
        return np.ascontiguousarray(values == 1)
    raise TypeError(
        f"{name} must hold 0/1 numbers or booleans, got an array of dtype {values.dtype}. "
        f"Convert it to integers or booleans first (1 where the row has the label)."
    )


def _is_missing(value) -> bool:
    return value is None or type(value).__name__ in ("NAType", "NaTType") or (
        isinstance(value, (float, np.floating)) and value != value)


def _cell_is_one(value, name, row, label) -> bool:
    """One Python value: True for 1/True, False for 0/False, else the error for it."""
    if isinstance(value, (str, bytes)):
        _raise_text(name, value, row, label)
    if _is_missing(value):
        _raise_missing(name, value, row, label)
    if isinstance(value, (bool, np.bool_, numbers.Real, np.number)) and \
            not isinstance(value, (complex, np.complexfloating)):
        if value == 1:
            return True
        if value == 0:
            return False
        _raise_value(name, value, row, label)
    raise TypeError(
        f"{name} must hold 0/1 numbers or booleans, got {show(value)} of type "
        f"{type(value).__name__} at row {row} (0-based) in label '{label}'. {_FIX_VALUE}"
    )


def _check_objects(values, name, names):
    """An object array: each cell one Python value, checked in row-major order."""
    out = np.zeros(values.shape, dtype=bool)
    for (row, col), value in np.ndenumerate(values):
        out[row, col] = _cell_is_one(value, name, row, names[col])
    return out


def _check_columns(columns, missing, name, names):
    """1-D columns (numeric/bool numpy, or object) -> bool (N, L), errors as for one array.

    ``missing``: per column a bool mask or None. The first problem is found
    as in a 2-D array: missing values first, then the lowest row, then the
    lowest column.
    """
    n = len(columns[0])
    given = missing
    missing = [_missing_cells(values, mask) for values, mask in zip(columns, given)]
    firsts = [(int(np.flatnonzero(mask)[0]), col) for col, mask in enumerate(missing)
              if mask.any()]
    if firsts:
        row, col = min(firsts)
        masked = given[col] is not None and module_of(given[col]) == "numpy" and given[col][row]
        _raise_missing(name, np.ma.masked if masked and not _is_missing(columns[col][row])
                       else columns[col][row], row, names[col])
    out = np.empty((n, len(columns)), dtype=bool)
    problems = []
    for col, values in enumerate(columns):
        try:
            if values.dtype == object:
                out[:, col] = _check_objects(values.reshape(-1, 1), name, names[col:col + 1])[:, 0]
            else:
                out[:, col] = _check_numeric(values.reshape(-1, 1), name, names[col:col + 1])[:, 0]
        except (TypeError, ValueError) as error:
            row = _problem_row(values)
            problems.append((row if row is not None else n, col, error))
    if problems:
        row, col, error = min(problems, key=lambda item: item[:2])
        if row < n:
            if columns[col].dtype == object:
                _cell_is_one(columns[col][row], name, row, names[col])
            elif columns[col].dtype.kind == "f" and np.isnan(columns[col][row]):
                _raise_missing(name, columns[col][row], row, names[col])
            else:
                _raise_value(name, columns[col][row], row, names[col])
        raise error
    return out


def _missing_cells(values, mask):
    """Missing cells of a 1-D column: the given mask, NaN, None, pd.NA."""
    found = np.zeros(len(values), dtype=bool) if mask is None else np.asarray(mask, dtype=bool)
    if values.dtype == object:
        found = found | np.frompyfunc(_is_missing, 1, 1)(values).astype(bool)
    elif values.dtype.kind == "f":
        found = found | np.isnan(values)
    return found


def _problem_row(values):
    """The first row of a 1-D column that is not 0/1 (None: a dtype problem, no row)."""
    if values.dtype == object:
        for row, value in enumerate(values):
            try:
                _cell_is_one(value, "", row, "")
            except (TypeError, ValueError):
                return row
        return None
    if values.dtype.kind not in "biuf":
        return None
    bad = (values != 0) & (values != 1)
    if values.dtype.kind == "f":
        bad |= np.isnan(values)
    hits = np.flatnonzero(bad)
    return int(hits[0]) if hits.size else None


def _from_array(labels, name, names=None):
    masked = isinstance(labels, np.ma.MaskedArray)
    try:
        values = np.asarray(labels) if not masked else labels
        if isinstance(labels, (list, tuple)) and values.dtype.kind in "USO":
            # numpy turns [nan, '1'] into text: keep each Python value as it is
            values = np.empty(values.shape[:2], dtype=object) if values.ndim >= 2 else values
            if values.dtype == object and values.ndim == 2:
                for row, cells in enumerate(labels):
                    values[row, :] = list(cells)
    except (ValueError, TypeError) as error:
        raise ValueError(
            f"{name} could not be read as a 2-D array ({error}); pass rows of equal length, "
            f"one column per label."
        ) from None
    _shape_checks(values.shape, name)
    names = names or _positions(values.shape[1])
    missing = None
    if masked:
        missing = np.ma.getmaskarray(values)
        values = np.ma.getdata(values)
    if values.dtype == object:
        # Missing cells first (as in every other form), then the other values.
        absent = np.frompyfunc(_is_missing, 1, 1)(values).astype(bool)
        if missing is not None:
            absent |= missing
        if absent.any():
            row, col = _first_cell(absent)
            _raise_missing(name, np.ma.masked if missing is not None and missing[row, col]
                           else values[row, col], row, names[col])
        return LabelMatrix(_check_objects(values, name, names), names)
    return LabelMatrix(_check_numeric(values, name, names, missing), names)


def _from_dataframe(frame, name):
    _shape_checks(frame.shape, name, "a DataFrame")
    names = tuple(str(column) for column in frame.columns)
    seen = {}
    for position, text in enumerate(names):
        if text in seen:
            raise ValueError(
                f"{name} has two columns named '{text}' (positions {seen[text]} and "
                f"{position}, 0-based); label names must be distinct."
            )
        seen[text] = position
    columns, missing = [], []
    for col in range(frame.shape[1]):
        column = frame.iloc[:, col]
        missing.append(np.asarray(column.isna(), dtype=bool))
        columns.append(_pandas_values(column, missing[-1]))
    return LabelMatrix(_check_columns(columns, missing, name, names), names)


def _pandas_values(column, missing):
    """A Series' values as numpy: numeric/bool dtypes as such, anything else as objects."""
    dtype = column.dtype
    kind = getattr(dtype, "kind", "O")
    if kind in "biuf" and str(dtype) != "category":
        numpy_dtype = getattr(dtype, "numpy_dtype", dtype)
        if missing.any():  # nullable dtypes: the missing cell is reported before any value
            return column.to_numpy(dtype=object)
        return column.to_numpy(dtype=numpy_dtype)
    return column.to_numpy(dtype=object)


def _from_mapping(columns, name):
    names = tuple(str(key) for key in columns)
    if not names:
        raise ValueError(f"{name} has 0 columns; pass at least one label column.")
    if len(set(names)) != len(names):
        raise ValueError(f"{name} names one label twice (keys {show(list(columns))}); label "
                         f"names must be distinct as text.")
    arrays, missing = [], []
    for key, column in columns.items():
        if module_of(column).startswith("torch"):
            column = _tensor_to_numpy(column, name)
        if module_of(column).startswith("pandas"):
            mask = np.asarray(column.isna(), dtype=bool)
            values = _pandas_values(column, mask)
        elif isinstance(column, np.ma.MaskedArray):
            mask, values = np.ma.getmaskarray(column), np.ma.getdata(column)
        else:
            mask, values = None, np.asarray(column)
        if values.ndim != 1:
            raise ValueError(f"{name}[{key!r}] must be one 1-D column (one 0/1 per row), got "
                             f"shape {values.shape}.")
        arrays.append(values)
        missing.append(mask)
    lengths = {len(values) for values in arrays}
    if len(lengths) > 1:
        raise ValueError(f"{name} columns must all have the same length, got lengths "
                         f"{sorted(lengths)}.")
    _shape_checks((arrays[0].shape[0], len(arrays)), name, "a dict")
    return LabelMatrix(_check_columns(arrays, missing, name, names), names)


def module_of(value) -> str:
    return type(value).__module__


def _from_sparse(matrix, name):
    _shape_checks(matrix.shape, name, "a sparse matrix")
    names = _positions(matrix.shape[1])
    coo = matrix.tocoo()
    data = np.asarray(coo.data)
    rows = np.asarray(coo.row, dtype=np.int64)
    cols = np.asarray(coo.col, dtype=np.int64)
    # The first offending stored entry in row-major order (stored order may be any).
    kind = data.dtype.kind
    if kind not in "biuf":
        raise TypeError(
            f"{name} must hold 0/1 numbers or booleans, got a sparse matrix of dtype "
            f"{data.dtype}. Convert it to integers or booleans first."
        )
    for bad, fail in ((np.isnan(data) if kind == "f" else None, _raise_missing),
                      ((data != 0) & (data != 1), _raise_value)):
        if bad is not None and bad.any():
            hits = np.flatnonzero(bad)
            first = hits[np.lexsort((cols[hits], rows[hits]))[0]]
            fail(name, data[first], int(rows[first]), names[int(cols[first])])
    present = data != 0  # explicit zeros are stored but absent
    check_label_cells(int(matrix.shape[0]), int(matrix.shape[1]), int(present.sum()), name,
                      "a sparse matrix")
    out = np.zeros(matrix.shape, dtype=bool)
    out[rows[present], cols[present]] = True
    return LabelMatrix(out, names)


def _tensor_to_numpy(tensor, name):
    torch = require_torch("a label matrix given as a torch tensor")
    if not isinstance(tensor, torch.Tensor):
        return tensor
    if tensor.device.type == "meta":
        raise TypeError(f"{name} is a tensor on the 'meta' device, which has a shape but no "
                        f"values; pass the real label matrix.")
    if tensor.layout != torch.strided:
        coo = tensor if tensor.layout == torch.sparse_coo else tensor.to_sparse_coo()
        listed = int((coo.coalesce().values() != 0).sum()) if coo.dim() == 2 else 0
        if coo.dim() == 2:  # other shapes are refused by the shape checks
            check_label_cells(int(tensor.shape[0]), int(tensor.shape[1]), listed, name,
                              "a sparse tensor")
        tensor = tensor.to_dense()
    tensor = tensor.detach().cpu().resolve_conj().resolve_neg()
    if tensor.dtype.is_floating_point and tensor.dtype not in (torch.float16, torch.float32,
                                                                 torch.float64):
        tensor = tensor.to(torch.float32)  # bfloat16, float8: every value exact in float32
    try:
        return tensor.numpy()
    except (TypeError, RuntimeError) as error:
        raise TypeError(f"{name} is a tensor of dtype {tensor.dtype}, which cannot be read as "
                        f"a label matrix ({error}); convert it to bool or an integer dtype.") \
            from None


def label_matrix_from_sets(label_sets, labels=None, *, name: str = "label_sets") -> LabelMatrix:
    """Build a label matrix from each row's set of labels.

    ``label_sets``: a list (or tuple, pandas Series) with one entry per row,
    each an iterable of hashable labels (a set, list or tuple; an empty one
    is a row without labels; a label listed twice in a row counts once).
    ``labels``: the columns, in order; None means every label that occurs,
    sorted by its text. A label's text is how R writes it too (``1`` and
    ``1.0`` are ``"1"``, booleans ``"TRUE"``/``"FALSE"``), so the R twin
    ``label_matrix_from_sets()`` gives the same names in the same order.

    Guarantee: ``matrix[i, l]`` is True exactly when row ``i``'s set holds
    label ``l``. Refused: a row that is a string (TypeError: one label or
    several letters?) or None (TypeError: use an empty set), an unhashable
    label, a label not in ``labels=`` (ValueError naming the first such row
    and its first unknown label by text), two labels with the same text, 0 rows, no label at all.
    """
    if label_sets is None or isinstance(label_sets, (str, bytes, Mapping, AbstractSet,
                                                     Iterator)) or \
            not isinstance(label_sets, Iterable):
        raise TypeError(
            f"{name} must be a list with one set of labels per row, got {name}="
            f"{show(label_sets)} of type {type(label_sets).__name__}. Pass a list, e.g. "
            f"[{{'a', 'b'}}, set(), {{'b'}}]."
        )
    # A list is read as it is: a copy would touch every row object once more.
    rows = label_sets if type(label_sets) is list else \
        label_sets.tolist() if hasattr(label_sets, "tolist") else list(label_sets)
    if not rows:
        raise ValueError(f"{name} has 0 rows; pass one set of labels per data row.")
    if isinstance(labels, Iterator):  # read once: the row-by-row path may need it after
        labels = list(labels)
    matrix = _matrix_of_plain_sets(rows, labels, name)
    if matrix is not None:
        return matrix
    # Anything else, and every refusal: one row at a time, naming the row.
    sets = []
    for row, entry in enumerate(rows):
        if entry is None or isinstance(entry, (str, bytes)) or not isinstance(entry, Iterable):
            hint = (f"['{entry}'] for one label" if isinstance(entry, str) else
                    "an empty set() for a row without labels" if entry is None else
                    f"[{show(entry)}] for one label")
            raise TypeError(
                f"{name} must hold one iterable of labels per row, got {show(entry)} at row "
                f"{row} (0-based). Pass {hint}."
            )
        try:
            sets.append(frozenset(entry))
        except TypeError:
            raise TypeError(
                f"{name} holds an unhashable label at row {row} (0-based): {show(entry)}; "
                f"labels must be hashable (str, int, ...)."
            ) from None
    for row, entry in enumerate(sets):
        for label in entry:
            if label is None or type(label).__name__ == "NAType" or (
                    isinstance(label, (float, np.floating)) and label != label):
                raise ValueError(
                    f"{name} has a missing label ({value_text(label)}) at row {row} (0-based). "
                    f"Leave it out of the row's set (an empty set is a row without labels)."
                )
    if labels is None:
        found = set().union(*sets)
        if not found:
            raise ValueError(
                f"{name} holds no label in any of its {len(sets)} rows; pass labels to name "
                f"the label columns (each then all 0)."
            )
        columns = sorted(found, key=label_key)
    else:
        if isinstance(labels, (str, bytes)) or not isinstance(labels, Iterable):
            raise TypeError(f"labels must be a list of label names, got labels={show(labels)} "
                            f"of type {type(labels).__name__}.")
        columns = list(labels)
        if not columns:
            raise ValueError("labels is empty; pass at least one label, or labels=None for "
                             "every label that occurs.")
    texts = [label_key(label) for label in columns]
    where = {}
    for position, (label, text) in enumerate(zip(columns, texts)):
        if text in where:
            what = "labels" if labels is not None else name
            raise ValueError(
                f"{what} holds two labels with the text '{text}'; label names must be "
                f"distinct."
            )
        where[text] = position
    # Labels equal in Python but read differently (0 and False, 1 and True) would be
    # merged by the sets and named apart: refuse them, as two labels with one text.
    written = {}
    for row, entry in enumerate(rows):
        for label in entry:
            text = label_key(label)
            other = written.setdefault(label, text)
            if other != text:
                raise ValueError(
                    f"{name} holds labels that are equal in Python but read '{other}' and "
                    f"'{text}' (e.g. 0 and False); use one spelling for each label."
                )
    index = {label: position for position, label in enumerate(columns)}
    check_label_cells(len(sets), len(columns), sum(len(entry) for entry in sets), name,
                      "label sets")
    out = np.zeros((len(sets), len(columns)), dtype=bool)
    for row, entry in enumerate(sets):
        positions = [index.get(label) for label in entry]
        if None in positions:
            # The first unknown by text: a set has no order of its own (R says the same one).
            unknown = min(label_key(label) for label, position in zip(entry, positions)
                          if position is None)
            raise ValueError(
                f"{name} has the label '{unknown}' at row {row} (0-based), which labels does "
                f"not list. Add it to labels, or drop it from the row."
            )
        out[row, positions] = True
    return LabelMatrix(out, tuple(texts))


# Rows of these types are read in one C-speed pass by _matrix_of_plain_sets.
_PLAIN_ROW_TYPES = frozenset({list, tuple, set, frozenset})
# Equal labels of one of these types always have one text (label_key); tuples (0,) and
# (False,), or Decimals 1.0 and 1.00, do not.
_PLAIN_LABEL_TYPES = frozenset({str, int, bool, float})


def _matrix_of_plain_sets(rows, labels, name):
    """The label matrix of rows that are plain lists, tuples or sets of str, int, bool or
    float labels, with no per-row Python step (a frozenset a row costs a microsecond and
    the garbage collector's passes); None when anything would be refused or is not plain,
    so that the row-by-row path gives the matrix or names the row."""
    lengths, distinct = _str_cells_compiled(rows) or (None, None)
    if lengths is None:
        if not set(map(type, rows)) <= _PLAIN_ROW_TYPES:
            return None
        if _cells_repeat_objects(rows):
            lengths = _row_lengths(rows)
            distinct = _cells_by_identity(rows, int(lengths.sum()))
        else:
            lengths, distinct = _str_cells_by_arrow(rows) or (None, None)
    if lengths is None:
        lengths = _row_lengths(rows)
    if distinct is None:
        resolved = _plain_label_positions(list(itertools.chain.from_iterable(rows)), labels)
        if resolved is None:
            return None
        positions, texts = resolved
        object_codes = None
    else:
        # The distinct objects in order of first cell stand for every cell: the same first
        # cell per label, the same (type, label) pairs, so the same columns and refusals.
        objects, object_codes = distinct
        resolved = _plain_label_positions(objects, labels)
        if resolved is None:
            return None
        positions, texts = resolved
    n_columns = len(texts)
    out = np.zeros((len(rows), n_columns), dtype=bool)
    kernels = kernel_gate.compiled_for("assemble", object_codes.shape[0]) \
        if object_codes is not None and len(rows) * n_columns <= LABEL_CELLS_MAX else None
    if kernels is not None:  # one pass over the cells' codes, no per-cell index arrays
        kernels.fill_label_rows(out, lengths, object_codes, positions)
        return LabelMatrix(out, tuple(texts))
    if object_codes is not None:
        positions = positions[object_codes]
    row_of_cell = np.repeat(np.arange(len(rows), dtype=np.int64), lengths)
    if len(rows) * n_columns > LABEL_CELLS_MAX:  # the size check counts distinct cells
        listed = np.unique(row_of_cell * n_columns + positions).shape[0]
        check_label_cells(len(rows), n_columns, int(listed), name, "label sets")
    out.reshape(-1)[row_of_cell * n_columns + positions] = True
    return LabelMatrix(out, tuple(texts))


def _row_lengths(rows):
    return np.fromiter(map(len, rows), dtype=np.int64, count=len(rows))


def _cells_repeat_objects(rows):
    """Whether a sample of rows shows cells repeating a few objects (not fresh ones per cell),
    by ``_object_identity``'s rule, before any pass over every cell."""
    step = max(1, len(rows) // _IDENTITY_SAMPLE_ROWS)
    sampled = np.fromiter(map(id, itertools.chain.from_iterable(rows[::step])), dtype=np.intp)
    return sampled.shape[0] > 0 and objects_repeat(sampled)


def _cells_by_identity(rows, n_cells):
    """``(objects, codes)`` for rows whose cells repeat a few objects: the distinct objects
    in order of first cell, and each cell's object number (pointers hashed as integers, see
    ``_object_identity``); None without a library to hash them."""
    cells = np.fromiter(itertools.chain.from_iterable(rows), dtype=object, count=n_cells)
    identified = objects_by_identity(cells, sampled=True)
    if identified is None:
        return None
    codes, objects = identified
    return objects, codes


def _str_cells_compiled(rows):
    """``(lengths, (objects, codes))`` when every row is a list or tuple of exact ``str``
    cells, read in one compiled pass over the objects (``kernels._pyobjects``) when numba
    serves this many rows: ``objects`` are the distinct texts' first cells, in order, and
    ``codes`` number the cells. None otherwise (sets, other cells: the other paths decide)."""
    kernels = kernel_gate.compiled_for("pyobjects", len(rows))
    if kernels is None:
        return None
    numbered = kernels.list_str_codes(rows)
    if numbered is None:
        return None
    lengths, codes, first_cells = numbered
    row_ends = np.cumsum(lengths)
    first_rows = np.searchsorted(row_ends, first_cells, side="right")
    at = first_cells - (row_ends - lengths)[first_rows]
    return lengths, ([rows[r][k] for r, k in zip(first_rows.tolist(), at.tolist())], codes)


# Below this many rows, reading the cells in Python costs less than loading pyarrow.
_ARROW_MIN_ROWS = 1 << 15


def _str_cells_by_arrow(rows):
    """``(lengths, (texts, codes))`` when every cell is exactly a ``str`` (fresh objects per
    cell, as split text or JSON give them): pyarrow converts the lists in one C pass and
    hashes the cells' text; ``texts`` are the distinct ones in order of first cell and
    ``codes`` number the cells. None for fewer than ``_ARROW_MIN_ROWS`` rows, without
    pyarrow, or for anything else (then the Python paths decide, refusals included)."""
    if len(rows) < _ARROW_MIN_ROWS:
        return None
    pyarrow = _pyarrow()
    if pyarrow is None:
        return None
    # pyarrow reads bytes, bytearray and str subclasses (an Enum member by its value) as
    # text, even when it infers the type: only this pass proves every cell a plain str.
    if set(map(type, itertools.chain.from_iterable(rows))) != {str}:
        return None
    try:
        lists = pyarrow.array(rows, type=pyarrow.list_(pyarrow.string()))
    except (pyarrow.ArrowException, TypeError, ValueError):  # e.g. a lone surrogate
        return None
    if not isinstance(lists, pyarrow.ListArray) or lists.null_count or lists.offset:
        return None  # chunked past 2 GiB of text
    encoded = lists.values.dictionary_encode()
    offsets = lists.offsets.to_numpy(zero_copy_only=True)
    codes = encoded.indices.to_numpy(zero_copy_only=True).astype(np.int64)
    return np.diff(offsets).astype(np.int64), (encoded.dictionary.to_pylist(), codes)


# Rows sampled to decide whether cells repeat objects.
_IDENTITY_SAMPLE_ROWS = 1024


def _plain_label_positions(cells, labels):
    """``(positions, texts)``: each cell's column (int64) and the columns' texts, for cells
    of plain label types; None where the row-by-row path must decide (refusals too)."""
    kinds = set(map(type, cells))
    try:
        # The first cell of each label: the one a row's frozenset and their union keep.
        found = dict.fromkeys(cells)
        # Each distinct (type, label) pair; with one type, the distinct labels are those.
        distinct = dict.fromkeys(zip(map(type, cells), cells)) if len(kinds) > 1 else \
            [(kind, label) for kind in kinds for label in found]
    except TypeError:  # unhashable
        return None
    if not all(kind in _PLAIN_LABEL_TYPES for kind, _ in distinct) or \
            any(kind is float and label != label for kind, label in distinct):  # NaN: missing
        return None
    if labels is None:
        columns = sorted(found, key=label_key)
    elif isinstance(labels, (str, bytes)) or not isinstance(labels, Iterable):
        return None
    else:
        columns = list(labels)
    texts = [label_key(label) for label in columns]
    if not columns or len(set(texts)) < len(texts):
        return None
    # Equal labels written apart (0 and False): a distinct (type, label) pair stands for all
    # its cells, as equal labels of one plain type have one text.
    written = {}
    for _, label in distinct:
        if written.setdefault(label, label_key(label)) != label_key(label):
            return None
    index = {label: position for position, label in enumerate(columns)}
    try:
        positions = np.fromiter(map(index.get, cells), dtype=np.int64, count=len(cells))
    except TypeError:  # None: a label not in labels=
        return None
    return positions, texts
