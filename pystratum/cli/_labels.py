"""Multi-label input: ``--label COL`` (repeated 0/1 columns) or ``--label-list COL``.

Both give a label matrix (:func:`pystratum.label_matrix`), which only
policies reading label matrices take (``--policy multi_label``); the
matrix's checks and messages are the core's.
"""

from __future__ import annotations

import numpy as np

from .. import policies
from ..strata._label_matrix import LabelMatrix, label_matrix, label_matrix_from_sets
from ._data import read_strata
from ..strata._encode import arrow_integers
from ._errors import EXIT_MISSING, UserError

__all__ = ["MULTI_LABEL", "label_options_given", "multi_label_policy", "read_label_matrix"]

MULTI_LABEL = "multi_label"
# CSV cells are text: these spellings are the two values of a 0/1 column.
_TEXT_VALUES = {"0": 0, "1": 1, "0.0": 0, "1.0": 1, "false": 0, "true": 1}


def label_options_given(args) -> bool:
    return bool(getattr(args, "label", None)) or getattr(args, "label_list", None) is not None


def _cell(value):
    """A CSV cell as the number it writes (so ``2`` is refused as the value 2, not as text)."""
    if not isinstance(value, str):
        return value
    text = value.strip().lower()
    if text in _TEXT_VALUES:
        return _TEXT_VALUES[text]
    try:
        number = float(text)
    except ValueError:
        return value
    return int(number) if number.is_integer() else number


def read_label_matrix(args) -> LabelMatrix:
    """The label matrix DATA's ``--label`` columns or ``--label-list`` column give.

    ``--label COL`` (repeatable): each column holds 0/1 (CSV text ``0``,
    ``1``, ``true``, ``false`` in any case, ``0.0``, ``1.0``; Parquet/Arrow
    integers, floats or booleans); the labels are named by the columns, in
    the order given. ``--label-list COL``: each cell lists the row's labels
    separated by ``--label-sep`` (default ``;``; spaces around a label are
    dropped, an empty cell is a row without labels); Parquet/Arrow list
    columns are read as lists. Labels are then sorted by their text.
    """
    options = dict(input_format=args.input_format, encoding=args.encoding,
                   delimiter=args.delimiter)
    if args.label and args.label_list is not None:
        raise UserError("give either --label COL (one 0/1 column per label, repeated) or "
                        "--label-list COL (one column of separated labels), not both.")
    if args.label:
        columns = read_strata(args.data, args.label, option="--label", **options)
        cells = {name: np.array([_cell(v) for v in column], dtype=object)
                 if column.dtype == object else column
                 for name, column in zip(args.label, columns)}
        return label_matrix(cells, name="--label")
    sep = args.label_sep
    if not sep:
        raise UserError("--label-sep must be at least one character, e.g. --label-sep ';'.")
    (column,) = read_strata(args.data, [args.label_list], option="--label-list",
                            allow_empty=True, keep_dictionary=True, **options)
    if not isinstance(column, np.ndarray):  # a pyarrow text column
        from_cells = _label_matrix_of_distinct_cells(column, sep)
        if from_cells is not None:
            return from_cells
        column = column.to_numpy(zero_copy_only=False)
    rows = []
    for cell in column:
        if isinstance(cell, str):
            rows.append(_split_cell(cell, sep))
        elif isinstance(cell, (list, tuple, np.ndarray)):
            rows.append(list(cell))
        else:
            raise UserError(f"--label-list {args.label_list!r} must hold text (labels separated "
                            f"by {sep!r}) or lists, got {cell!r} of type "
                            f"{type(cell).__name__}.")
    return label_matrix_from_sets(rows, name="--label-list")


def _split_cell(cell: str, sep: str) -> list:
    return [part.strip() for part in cell.split(sep) if part.strip()]


def _label_matrix_of_distinct_cells(column, sep):
    """The label matrix of a pyarrow text column, each distinct cell split once.

    Rows with the same cell have the same labels, so the matrix of the
    distinct cells (those some row holds), indexed by each row's dictionary
    code, is the matrix of the rows: the same as splitting every row, without
    a Python object per row. None when the core refuses the cells (the
    general path then gives its message, with the row).
    """
    import pyarrow as pa
    import pyarrow.compute as pc

    if not pa.types.is_dictionary(column.type):
        column = pc.dictionary_encode(column)
    column = column.unify_dictionaries()
    if column.num_chunks == 0:
        return None
    codes = np.concatenate([arrow_integers(chunk.indices) for chunk in column.chunks])
    cells = column.chunk(0).dictionary.to_pylist()
    used = np.flatnonzero(np.bincount(codes, minlength=len(cells)))
    position = np.zeros(len(cells), dtype=np.int64)
    position[used] = np.arange(used.shape[0])
    try:
        distinct = label_matrix_from_sets([_split_cell(cells[k], sep) for k in used.tolist()],
                                          name="--label-list")
    except (TypeError, ValueError):
        return None
    return LabelMatrix(distinct.matrix[position[codes]], distinct.labels)


def multi_label_policy(args):
    """``pystratum.policies.MultiLabel`` from ``--batch-size``, ``--num-batches``,
    ``--min-per-label`` and ``--strict`` (only the flags given: the policy's
    own defaults hold for the others), looked up by name."""
    policy_class = getattr(policies, "MultiLabel", None)
    if policy_class is None:
        raise UserError(f"--policy {MULTI_LABEL} needs pystratum.policies.MultiLabel, which this "
                        f"installation of pystratum does not have; upgrade pystratum.",
                        EXIT_MISSING)
    if args.param:
        raise UserError(f"--policy {MULTI_LABEL} takes its parameters as --batch-size, "
                        f"--num-batches, --min-per-label and --strict, not --param.")
    keywords = {"num_batches": args.num_batches, "min_per_label": args.min_per_label}
    keywords = {key: value for key, value in keywords.items() if value is not None}
    if args.strict:
        keywords["strict"] = True
    return policy_class(args.batch_size, **keywords)
