"""Reading DATA: the stratum column(s) of a CSV, Parquet or Arrow IPC file."""

from __future__ import annotations

import codecs
import contextlib
import csv
import os
import sys
from pathlib import Path

import numpy as np

from ..strata._encode import arrow_integers
from ._errors import EXIT_MISSING, UserError

INSTALL_ARROW = "pip install 'stratabatch[arrow]'"


def _format_of(path: Path, given: str | None) -> str:
    if given:
        return given
    suffixes = [s.lower() for s in path.suffixes]
    if suffixes and suffixes[-1] in (".parquet", ".pq"):
        return "parquet"
    if suffixes and suffixes[-1] in (".arrow", ".feather", ".ipc"):
        return "arrow"
    return "csv"


def read_strata(path, columns, *, input_format=None, encoding="utf-8-sig", delimiter=None,
                option="--stratum", allow_empty=False, keep_dictionary=False):
    """The stratum column(s) of a data file: a list of numpy arrays, one per column.

    CSV cells are read as text (so ``1`` and ``1.0`` are different strata, as
    written); an empty cell is refused, naming the column and line. A UTF-8
    byte-order mark (Excel's "CSV UTF-8") is not part of the first column's
    name. With pyarrow installed a UTF-8 CSV is parsed by ``pyarrow.csv``
    (only the stratum columns); the result and every error are the ``csv``
    module's, which reads any file pyarrow's reader does not take cleanly.
    Parquet and Arrow keep their column types; nulls are refused the same way.
    ``option`` is the flag errors name; ``allow_empty`` keeps empty CSV cells
    as ``""`` (an empty label list is a row without labels). A ragged row
    (another number of fields than the header's) is refused naming its line;
    a cell of any length is read (the csv module's field limit is lifted, as
    pyarrow.csv has none). ``keep_dictionary``: text columns read by pyarrow
    stay pyarrow columns (dictionary-encoded: codes and labels, no Python
    object per row), which :func:`pystratum.strata._encode.encode_strata`
    reads directly; the other columns are numpy arrays either way.
    """
    _check_encoding(encoding)
    repeated = sorted({name for name in columns if list(columns).count(name) > 1}, key=str)
    if repeated:
        raise UserError(f"{option} {repeated[0]!r} is given twice; give each column once.")
    path = Path(path)
    fmt = _format_of(path, input_format)
    if not path.exists():
        raise UserError(f"DATA {str(path)!r} does not exist.")
    if path.is_dir():
        raise UserError(f"DATA {str(path)!r} is a directory; pass a CSV, Parquet or Arrow file.")
    if not os.access(path, os.R_OK):
        raise UserError(f"DATA {str(path)!r} is not readable (permission denied).")
    if fmt == "csv":
        return _read_csv(path, columns, encoding, delimiter, option, allow_empty, keep_dictionary)
    return _read_arrow(path, columns, fmt, option, keep_dictionary)


def _check_encoding(encoding) -> None:
    try:
        # codecs.lookup also finds codecs that are not text encodings (rot13: str to str,
        # base64: bytes to bytes); open() refuses those, so they are refused here by trying both
        # directions of a text encoding.
        codecs.lookup(encoding)
        "".encode(encoding)
        b"".decode(encoding)
    except (LookupError, TypeError, ValueError):
        raise UserError(f"--encoding {encoding!r} is not a text encoding Python knows; use e.g. "
                        f"utf-8 (the default, with or without a byte-order mark), latin-1 or "
                        f"cp1252.") from None


def _arrow_csv():
    """pyarrow.csv, or None without pyarrow (the tests replace this to force the fallback)."""
    try:
        import pyarrow.csv
    except ImportError:
        return None
    return pyarrow.csv


def _sniff_delimiter(sample: str) -> str:
    first_line = sample.splitlines()[0]
    return max([",", ";", "\t", "|"], key=first_line.count)


def _read_csv(path: Path, columns, encoding, delimiter, option="--stratum", allow_empty=False,
              keep_dictionary=False):
    arrow_csv = _arrow_csv()
    if arrow_csv is not None:
        # Empty cells make the arrow path step aside, so allow_empty is the csv module's.
        values = _read_csv_arrow(arrow_csv, path, columns, encoding, delimiter, keep_dictionary)
        if values is not None:
            return values
    return _read_csv_module(path, columns, encoding, delimiter, option, allow_empty)


def _read_csv_arrow(arrow_csv, path: Path, columns, encoding, delimiter, keep_dictionary=False):
    """The stratum columns through pyarrow.csv, or None where the csv module must decide.

    None for anything but a clean file: another encoding than UTF-8, bytes
    that are not UTF-8, a ragged row, an empty cell, no rows, a repeated or
    missing column. The csv module then reads the file and gives the result
    or the error it always gave, so both paths agree by construction there.
    """
    import pyarrow as pa

    if codecs.lookup(encoding).name not in ("utf-8", "utf-8-sig"):
        return None
    try:
        data = path.read_bytes()
        # The csv module decodes every column, so bytes that are not UTF-8
        # anywhere (not only in the stratum columns) are its error to report.
        text = data.decode(encoding)
    except (OSError, UnicodeError):
        return None
    if not text or text.isspace():  # strip() would copy the whole text
        return None
    if delimiter is None:
        delimiter = _sniff_delimiter(text[:64 * 1024])
    if len(delimiter) != 1 or delimiter in '"\r\n':
        return None
    # The header from its line alone (a whole-file reader costs a copy of the
    # text); a quote left open there means a cell spanning lines: csv module.
    first_line = text[:min((i for i in (text.find("\n"), text.find("\r")) if i >= 0),
                           default=len(text))]
    del text
    if first_line.count('"') % 2:
        return None
    try:
        header = next(csv.reader([first_line], delimiter=delimiter))
    except (csv.Error, StopIteration):
        return None
    if header and header[0].startswith("\ufeff"):
        header[0] = header[0][1:]
    # skip_rows counts lines, so a header cell spanning lines is the csv module's.
    if any(header.count(name) != 1 for name in columns) or any(
            "\n" in name or "\r" in name for name in header):
        return None
    if data.startswith(codecs.BOM_UTF8):
        data = data[len(codecs.BOM_UTF8):]
    try:
        table = arrow_csv.read_csv(
            pa.py_buffer(data),
            read_options=arrow_csv.ReadOptions(column_names=header, skip_rows=1),
            parse_options=arrow_csv.ParseOptions(delimiter=delimiter, newlines_in_values=True),
            convert_options=arrow_csv.ConvertOptions(
                include_columns=list(columns),
                # dictionary-encoded as read: no pass of pyarrow.compute (nor its import)
                column_types={name: pa.dictionary(pa.int32(), pa.string()) for name in columns},
                strings_can_be_null=False, quoted_strings_can_be_null=False))
    except (pa.ArrowException, ValueError):
        return None
    if table.num_rows == 0:
        return None
    result = []
    for name in columns:
        # Dictionary-encoded: the empty-cell test looks at the distinct values
        # only, and the object array holds one str per stratum, not per row.
        encoded = table.column(name).unify_dictionaries()
        if encoded.null_count or not encoded.num_chunks:
            return None
        # to_pylist, not to_numpy: pyarrow converts text to numpy through pandas, whose
        # import would cost more than reading a small file.
        labels = np.array(encoded.chunk(0).dictionary.to_pylist() + [None], dtype=object)[:-1]
        if (labels == "").any():
            return None
        if keep_dictionary:
            result.append(encoded)
            continue
        codes = np.concatenate([arrow_integers(chunk.indices) for chunk in encoded.chunks])
        result.append(labels[codes])
    return result


@contextlib.contextmanager
def _no_field_limit():
    """The csv module refuses cells over csv.field_size_limit() (131,072 characters by
    default) where pyarrow.csv reads them; both paths read a cell of any length."""
    saved = csv.field_size_limit()
    csv.field_size_limit(_FIELD_LIMIT)
    try:
        yield
    finally:
        csv.field_size_limit(saved)


# The largest limit the csv module takes (a C long on every platform).
_FIELD_LIMIT = min(sys.maxsize, 2**31 - 1)


def _read_csv_module(path: Path, columns, encoding, delimiter, option="--stratum", allow_empty=False):
    try:
        with open(path, newline="", encoding=encoding) as handle, _no_field_limit():
            sample = handle.read(64 * 1024)
            if not sample.strip():
                raise UserError(f"DATA {str(path)!r} is empty: expected a header line naming "
                                f"the columns, then one line per row.")
            if delimiter is None:
                delimiter = _sniff_delimiter(sample)
            handle.seek(0)
            reader = csv.reader(handle, delimiter=delimiter)
            header = next(reader)
            if header and header[0].startswith("\ufeff"):
                # A byte-order mark read with an encoding that keeps it (e.g. utf-8).
                header[0] = header[0][1:]
            positions = [_column_position(header, name, path, option) for name in columns]
            values = [[] for _ in columns]
            width = len(header)
            while True:
                line = reader.line_num + 1  # where the record starts (a cell may span lines)
                record = next(reader, None)
                if record is None:
                    break
                if not record:
                    continue  # a blank line (e.g. trailing newline twice) is no row
                if len(record) != width:
                    raise UserError(
                        f"line {line} of {str(path)!r} has {len(record)} fields but the header "
                        f"has {width}: a ragged row, whose values cannot be matched to the "
                        f"columns. Fix the line (quote a cell holding the delimiter "
                        f"{delimiter!r}), or pass --delimiter if it is not {delimiter!r}.")
                for k, position in enumerate(positions):
                    if position >= len(record) or (record[position] == "" and not allow_empty):
                        raise UserError(
                            f"column {columns[k]!r} has an empty value on line {line} of "
                            f"{str(path)!r} (data row {len(values[0])}, 0-based): every row needs a "
                            f"{_needs(option)}. Fill it in or drop the row first.")
                    values[k].append(record[position])
    except UnicodeDecodeError as error:
        raise UserError(
            f"DATA {str(path)!r} is not valid "
            f"{'utf-8' if encoding == 'utf-8-sig' else encoding} (byte "
            f"{error.object[error.start]:#04x} "
            f"at offset {error.start} of a read block): pass --encoding with the file's "
            f"encoding, e.g. --encoding latin-1.") from None
    except UnicodeError as error:  # other codecs' decode errors
        raise UserError(f"DATA {str(path)!r} cannot be decoded as {encoding}: {error}. Pass "
                        f"--encoding with the file's encoding.") from None
    except csv.Error as error:
        raise UserError(f"DATA {str(path)!r} is not a readable CSV file: {error}.") from None
    except OSError as error:
        raise UserError(f"DATA {str(path)!r} cannot be read: {error.strerror or error}.") from None
    if not values[0]:
        raise UserError(f"DATA {str(path)!r} has a header but no data rows.")
    return [np.array(v, dtype=object) for v in values]


def _needs(option):
    return {"--stratum": "stratum", "--label": "0 or 1"}.get(option, "value")


def _column_position(header, name, path, option="--stratum"):
    if name not in header:
        shown = ", ".join(repr(h) for h in header[:20]) + (", ..." if len(header) > 20 else "")
        raise UserError(f"{option} {name!r}: no such column in {str(path)!r}; its columns are "
                        f"{shown}.")
    return header.index(name)


def _read_arrow(path: Path, columns, fmt, option="--stratum", keep_dictionary=False):
    try:
        import pyarrow as pa
        import pyarrow.feather
        import pyarrow.parquet
    except ImportError:
        raise UserError(f"reading {fmt.capitalize()} files needs pyarrow: {INSTALL_ARROW} (or "
                        f"pyarrow itself); or convert DATA to CSV.", EXIT_MISSING) from None
    if path.stat().st_size == 0:
        raise UserError(f"DATA {str(path)!r} is empty (0 bytes).")
    try:
        if fmt == "parquet":
            names = pyarrow.parquet.read_schema(path).names
        else:
            names = pyarrow.feather.read_table(path, memory_map=True).schema.names
    except (pa.ArrowException, OSError) as error:
        raise UserError(f"DATA {str(path)!r} is not a readable {fmt} file: {error}") from None
    for name in columns:
        _column_position(names, name, path, option)
    try:
        if fmt == "parquet":
            table = pyarrow.parquet.read_table(path, columns=list(columns))
        else:
            table = pyarrow.feather.read_table(path, columns=list(columns))
    except (pa.ArrowException, OSError) as error:
        raise UserError(f"DATA {str(path)!r} is not a readable {fmt} file: {error}") from None
    if table.num_rows == 0:
        raise UserError(f"DATA {str(path)!r} has no rows.")
    result = []
    for name in columns:
        column = table.column(name)
        if column.null_count:
            row = int(np.flatnonzero(column.is_null().to_numpy(zero_copy_only=False))[0])
            raise UserError(f"column {name!r} has a missing value at row {row} (0-based) of "
                            f"{str(path)!r}: every row needs a {_needs(option)}.")
        value_type = column.type.value_type if pa.types.is_dictionary(column.type) else \
            column.type
        if keep_dictionary and (pa.types.is_string(value_type) or
                                pa.types.is_large_string(value_type)):
            result.append(column)  # the encoder reads it as it is
            continue
        if pa.types.is_dictionary(column.type):
            column = column.cast(column.type.value_type)
        result.append(column.to_numpy(zero_copy_only=False))
    return result
