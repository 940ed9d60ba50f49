"""``pystratum plan``'s shard options: where each row is stored (docs/SHARDS.md).

``--shard-column COL`` (an integer shard id per row), ``--shard-sizes
N,N,...`` (rows stored shard after shard) or, for a Parquet file when only
``--window`` is given, the file's row groups. Without any of them the plan
has no shards, so plans of existing commands do not change.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from ..strata._shards import shard_sizes
from ._data import _format_of, read_strata
from ._errors import UserError


def shards_from_args(args):
    """``(shards, window)`` for the core, or ``(None, 1)``; user errors as :class:`UserError`."""
    column = getattr(args, "shard_column", None)
    sizes = getattr(args, "shard_sizes", None)
    window = getattr(args, "window", None)
    if column is not None and sizes is not None:
        raise UserError("--shard-column and --shard-sizes both say where rows are stored; "
                        "give one of them.")
    if column is not None:
        return _shard_ids(args, column), 1 if window is None else window
    if sizes is not None:
        return shard_sizes(_sizes(sizes)), 1 if window is None else window
    if window is None:
        return None, 1
    if _format_of(Path(args.data), args.input_format) != "parquet":
        raise UserError("--window needs shards: give --shard-column COL or --shard-sizes "
                        "N,N,...; only a Parquet file has default shards (its row groups).")
    return shard_sizes(row_group_sizes(args.data)), window


def row_group_sizes(path) -> list:
    """The rows of every row group of a Parquet file (its default shards)."""
    import pyarrow as pa
    import pyarrow.parquet

    try:
        metadata = pyarrow.parquet.ParquetFile(path).metadata
    except (pa.ArrowException, OSError) as error:
        raise UserError(f"DATA {str(path)!r} is not a readable parquet file: {error}") from None
    return [metadata.row_group(i).num_rows for i in range(metadata.num_row_groups)]


def _sizes(text: str) -> list:
    try:
        sizes = [int(part) for part in text.split(",")]
    except ValueError:
        raise UserError(f"--shard-sizes must be whole numbers separated by commas, got "
                        f"{text!r}; e.g. --shard-sizes 1000,1000,500.") from None
    return sizes


def _shard_ids(args, column):
    (values,) = read_strata(args.data, [column], input_format=args.input_format,
                            encoding=args.encoding, delimiter=args.delimiter,
                            option="--shard-column")
    if values.dtype.kind in "iu":
        return values
    try:
        ids = np.asarray([int(str(value).strip()) for value in values], dtype=np.int64)
    except (ValueError, OverflowError):
        bad = next(value for value in values if not _is_int(value))
        raise UserError(f"--shard-column {column!r} must hold integer shard ids, got "
                        f"{str(bad)!r}.") from None
    return ids


def _is_int(value) -> bool:
    try:
        int(str(value).strip())
        return True
    except (ValueError, OverflowError):
        return False
