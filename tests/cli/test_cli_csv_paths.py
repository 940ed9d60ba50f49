"""CSV read by pyarrow.csv and by the csv module: the same strata, the same errors.

``pystratum.cli._data`` parses a UTF-8 CSV with pyarrow.csv when pyarrow is
installed and hands anything irregular to the csv module; every test here
runs both paths, the fallback forced by replacing ``_data._arrow_csv``.
"""

from __future__ import annotations

import csv
import io

import pyarrow.csv
import pytest
from hypothesis import given
from hypothesis import strategies as st

from pystratum.cli import _data, main
from pystratum.cli._errors import UserError


def read_both(path, columns, monkeypatch, **options):
    """(arrow path, csv-module path): each ("ok", lists of cells) or ("error", message)."""
    results = []
    for forced_fallback in (False, True):
        with monkeypatch.context() as patch:
            if forced_fallback:
                patch.setattr(_data, "_arrow_csv", lambda: None)
            try:
                values = _data.read_strata(path, columns, **options)
                results.append(("ok", [[str(v) for v in column] for column in values]))
            except UserError as error:
                results.append(("error", str(error)))
    return results


def test_a_clean_file_is_read_by_pyarrow(tmp_path):
    path = tmp_path / "d.csv"
    path.write_bytes(b'\xef\xbb\xbfs,t\r\n"x,1",2\r\n"a""b","\xc3\xa9\nz"\r\n')
    values = _data._read_csv_arrow(pyarrow.csv, path, ["t", "s"], "utf-8-sig", None)
    assert [list(v) for v in values] == [["2", "é\nz"], ["x,1", 'a"b']]


@pytest.mark.parametrize("content, expected", [
    (b"label,x\na,1\n,2\n", "column 'label' has an empty value on line 3"),
    (b"label,x\na,\xff\n", "is not valid utf-8 (byte 0xff"),  # outside the stratum column
    (b"label,x\n", "has a header but no data rows"),
    (b"other,x\na,1\n", "--stratum 'label': no such column"),
    (b"label,x\na,1,9\n,2\n", "line 2 of "),  # ragged: 3 fields under 2 columns
    (b"", "is empty: expected a header line"),
])
def test_both_paths_give_the_same_error(tmp_path, monkeypatch, content, expected):
    path = tmp_path / "d.csv"
    path.write_bytes(content)
    arrow, fallback = read_both(path, ["label"], monkeypatch)
    assert arrow == fallback
    assert arrow[0] == "error" and expected in arrow[1], arrow


@pytest.mark.parametrize("content, line, fields", [
    (b"label,x\na,1\nb,2,extra\n", 3, 3),    # one field too many
    (b"label,x\na,1\n\nb\n", 4, 1),           # one too few, after a blank line
    (b'label,x\n"a\nb",1\nc,2,3\n', 4, 3),   # a quoted cell spanning lines 2-3
])
def test_a_ragged_row_is_refused_naming_its_line_on_both_paths(tmp_path, monkeypatch, content,
                                                               line, fields):
    path = tmp_path / "d.csv"
    path.write_bytes(content)
    arrow, fallback = read_both(path, ["label"], monkeypatch)
    assert arrow == fallback
    assert arrow[0] == "error" and arrow[1].startswith(
        f"line {line} of {str(path)!r} has {fields} fields but the header has 2: a ragged row")


def test_a_cell_over_the_csv_modules_field_limit_is_read_on_both_paths(tmp_path, monkeypatch):
    # 131,072 characters is csv.field_size_limit()'s default; pyarrow.csv has no such limit.
    long_label = "x" * (csv.field_size_limit() + 10)
    path = tmp_path / "d.csv"
    path.write_text(f"label,x\n{long_label},1\nb,2\n")
    limit = csv.field_size_limit()
    assert read_both(path, ["label"], monkeypatch) == [("ok", [[long_label, "b"]])] * 2
    assert csv.field_size_limit() == limit  # the process's own limit is left as it was


def test_other_encodings_and_delimiters_agree(tmp_path, monkeypatch):
    path = tmp_path / "d.csv"
    path.write_bytes("g;h\n\xe9;1\nb;2\n".encode("latin-1"))
    arrow, fallback = read_both(path, ["g"], monkeypatch, encoding="latin-1")
    assert arrow == fallback == ("ok", [["é", "b"]])


def test_plan_prints_the_same_on_both_paths(tmp_path, monkeypatch, capsys):
    path = tmp_path / "d.csv"
    path.write_text("label,x\n" + "".join(f"{'abc'[i % 3]},{i}\n" for i in range(60)))
    outputs = []
    for forced_fallback in (False, True):
        with monkeypatch.context() as patch:
            if forced_fallback:
                patch.setattr(_data, "_arrow_csv", lambda: None)
            assert main(["plan", str(path), "--stratum", "label", "--min", "2", "--seed",
                         "3"]) in (0, None)
            outputs.append(capsys.readouterr().out)
    assert outputs[0] == outputs[1] and outputs[0].split()[:5] == ["batch", "a", "b", "c",
                                                                    "total"]


# Cells made of the characters that trip CSV readers: separators, quotes,
# line ends, a byte-order mark, non-ASCII, and empty cells.
CELL = st.text(alphabet=st.sampled_from(list('ab,;"\n\r é\t|\ufeff1')), max_size=4)


@given(rows=st.lists(st.lists(CELL, min_size=1, max_size=3), max_size=6),
       bom=st.booleans(), crlf=st.booleans(), encoding=st.sampled_from(["utf-8-sig", "utf-8"]),
       raw=st.none() | st.text(alphabet=st.sampled_from(list('a,"\n\r\x00 b')), max_size=12))
def test_both_paths_agree_on_generated_csv(tmp_path_factory, rows, bom, crlf, encoding, raw):
    if raw is None:
        buffer = io.StringIO()
        writer = csv.writer(buffer, lineterminator="\r\n" if crlf else "\n")
        writer.writerow(["s", "t", "u"])
        writer.writerows(rows)
        body = buffer.getvalue()
    else:  # not written by a CSV writer: stray quotes, NULs, ragged rows
        body = "s,t\n" + raw
    path = tmp_path_factory.mktemp("csv") / "d.csv"
    path.write_bytes((b"\xef\xbb\xbf" if bom else b"") + body.encode())
    with pytest.MonkeyPatch.context() as monkeypatch:
        for columns in (["s"], ["t", "s"]):
            arrow, fallback = read_both(path, columns, monkeypatch, encoding=encoding)
            assert arrow == fallback, (body, columns)
