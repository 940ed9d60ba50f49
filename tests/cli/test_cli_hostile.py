"""The ``pystratum`` command under hostile arguments and files a user really has.

Hand-picked: the reported cases (an unknown encoding, Excel's UTF-8 byte-order
mark, repeated --param, a bad downsample base, the help's examples). The
property suite throws odd option values at ``main`` and asserts that every run
ends with exit code 0-3 and, for 2, one ``pystratum ... error:`` line; never a
traceback (an exception escaping ``main``). It counts what it tried (printed at
the end of the module with ``-s``).
"""

from __future__ import annotations

import collections
import contextlib
import csv
import io
import shlex

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pystratum import cli
from pystratum.policies import registered_policies
from tests.cli.test_cli import data, run  # noqa: F401 - the fixture is used by name

TRIED = collections.Counter()


@pytest.fixture(scope="module", autouse=True)
def report_counts():
    yield
    print(f"\ncli hostile inputs tried: {dict(TRIED)}")


def test_unknown_encoding_is_a_usage_error(data):  # noqa: F811
    folder, _, _ = data
    done = run("plan", folder / "d.csv", "--stratum", "label", "--min", "2", "--encoding",
               "klingon", check_code=2)
    assert done.stderr.strip().splitlines() == [
        "pystratum: error: --encoding 'klingon' is not a text encoding Python knows; use e.g. "
        "utf-8 (the default, with or without a byte-order mark), latin-1 or cp1252."]


@pytest.mark.parametrize("encoding", ["rot13", "base64", "zlib", "hex"])
def test_a_codec_that_is_not_a_text_encoding_is_a_usage_error(data, encoding):  # noqa: F811
    # codecs.lookup() finds them (str to str, bytes to bytes); open() refuses them.
    folder, _, _ = data
    done = run("plan", folder / "d.csv", "--stratum", "label", "--min", "2", "--encoding",
               encoding, check_code=2)
    assert done.stderr.strip().splitlines() == [
        f"pystratum: error: --encoding {encoding!r} is not a text encoding Python knows; use "
        f"e.g. utf-8 (the default, with or without a byte-order mark), latin-1 or cp1252."]


def test_a_deeply_nested_json_param_is_a_usage_error(data):  # noqa: F811
    folder, _, _ = data
    done = run("plan", folder / "d.csv", "--stratum", "label", "--policy", "fixed_size",
               "--param", "batch_size=" + "[" * 5000 + "]" * 5000, check_code=2)
    assert done.stderr.strip().splitlines() == [
        "pystratum: error: --param batch_size=...: the value is JSON nested too deeply for "
        "Python to read (10,000 characters); policy parameters are numbers, text or short "
        "lists."]


def test_messages_name_the_command_s_flags_not_python_arguments(data):  # noqa: F811
    folder, label, _ = data
    n_pos = int((label == "pos").sum())
    refused = run("plan", folder / "d.csv", "--stratum", "label", "--min", str(n_pos),
                  check_code=2)
    assert "--allow-single-batch" in refused.stderr
    assert "allow_single_batch" not in refused.stderr
    no = run("check", folder / "d.csv", "--stratum", "label", "--min", str(n_pos), check_code=1)
    assert "--allow-single-batch" in no.stdout and "allow_single_batch" not in no.stdout
    small = run("plan", folder / "d.csv", "--stratum", "label", "--policy", "classes_per_batch",
                "--param", "classes_per_batch=2", "--param", f"per_class={n_pos + 1}",
                check_code=2)
    assert "--param small=repeat" in small.stderr and "small='repeat'" not in small.stderr


@pytest.mark.parametrize("encoding", [None, "utf-8", "utf-8-sig"])
def test_a_csv_with_a_byte_order_mark_finds_its_first_column(tmp_path, encoding):
    path = tmp_path / "excel.csv"
    path.write_bytes("\ufefflabel,x\npos,1\nneg,2\npos,3\nneg,4\n".encode("utf-8"))
    args = ["plan", path, "--stratum", "label", "--min", "1", "--seed", "1", "--format", "csv"]
    done = run(*args, *(["--encoding", encoding] if encoding else []), check_code=0)
    assert done.stdout.splitlines()[0] == "batch,neg,pos,total"


def test_a_repeated_param_is_refused(data):  # noqa: F811
    folder, _, _ = data
    done = run("plan", folder / "d.csv", "--stratum", "label", "--policy", "fixed_size",
               "--param", "batch_size=64", "--param", "batch_size=32", check_code=2)
    assert done.stderr.strip() == ("pystratum: error: --param batch_size is given twice "
                                   "(batch_size=64 and batch_size=32); give each parameter once.")


@pytest.mark.parametrize("base", ["0", "abc", "[1]", "true"])
def test_a_bad_downsample_base_is_blamed_on_base(data, base):  # noqa: F811
    folder, _, _ = data
    done = run("plan", folder / "d.csv", "--stratum", "label", "--policy", "downsample",
               "--param", 'keep={"neg": 0.5}', "--param", f"base={base}", check_code=2)
    assert done.stderr.startswith("pystratum: error: base must be a policy"), done.stderr
    assert len(done.stderr.strip().splitlines()) == 1


def test_top_level_help_shows_every_command_s_examples():
    done = run("--help", check_code=0)
    for example in ("pystratum plan train.csv", "pystratum check train.csv",
                    "pystratum crosscheck train.csv", "pystratum plot train.csv"):
        assert example in done.stdout


def test_the_help_s_param_examples_run(data):  # noqa: F811
    folder, _, _ = data
    help_text = run("plan", "--help", check_code=0).stdout
    lines = [line.strip() for line in cli.EXAMPLES["plan"].splitlines()
             if "--policy targets" in line or "--policy downsample" in line]
    assert len(lines) == 3 and all(line in help_text for line in lines)
    assert any("base=5" in line for line in lines) and any('"name": "fixed_size"' in line
                                                          for line in lines)
    for line in lines:
        args = shlex.split(line)[1:]
        args[args.index("train.csv")] = str(folder / "d.csv")
        run(*args, check_code=0)


# ------------------------------------------------------------------ property suite

ODD = st.one_of(
    st.sampled_from(["", "-1", "0", "1", "2", "64", "1e3", "1.5", "nan", "inf", "true", "null",
                     "99999999999999999999999", str(2**63), "-" + str(2**63), "[1]", "{}",
                     '{"name": "fixed_size", "params": {"batch_size": 8}}', "label", "klingon",
                     "latin-1", "utf-16", "ünï", "名前", "\t", ";", ",,", "--min"]),
    # Line breaks inside a value would be quoted by argparse across lines.
    st.text(max_size=12).filter(lambda t: "\x00" not in t and len((t + "x").splitlines()) == 1))
PARAM_KEYS = st.sampled_from(["batch_size", "min_per_stratum", "m", "shares", "keep", "base",
                              "epoch", "classes_per_batch", "per_class", "classes", "small",
                              "", "x"])


@st.composite
def argument_lists(draw, folder):
    command = draw(st.sampled_from(["plan", "check", "plan", "check", "crosscheck"]))
    data_file = draw(st.sampled_from(["d.csv"] * 6 + ["d.parquet", "d.arrow", "missing.csv",
                                                      "bom.csv", "binary.csv", "."]))
    args = [command, str(folder / data_file) if data_file != "." else str(folder)]
    for column in draw(st.lists(st.sampled_from(["label"] * 6 + ["site", "x", "lable", "ünï",
                                                                 ""]),
                                min_size=0, max_size=2).map(lambda c: c or ["label"])):
        args += ["--stratum", column]
    policy = draw(st.sampled_from(["--min", "--batch-size", "--policy", None]))
    if policy == "--policy":
        args += ["--policy", draw(st.sampled_from(sorted(registered_policies()) + ["nope"]))]
        for _ in range(draw(st.integers(0, 3))):
            args += ["--param", f"{draw(PARAM_KEYS)}={draw(ODD)}"]
    elif policy:
        args += [policy, draw(st.one_of(st.sampled_from(["1", "2", "5", "40"]), ODD))]
    for option in draw(st.lists(st.sampled_from(["--seed", "--rng", "--epoch", "--encoding",
                                                 "--delimiter", "--input-format", "--max-rows",
                                                 "--format", "--no-shuffle", "--batches",
                                                 "--epochs", "-q"]), max_size=4, unique=True)):
        if option in ("--no-shuffle", "--batches", "-q"):
            args.append(option)
        elif option == "--rng":
            args += [option, draw(st.sampled_from(["numpy", "index", "R", "torch", "x"]))]
        else:
            args += [option, draw(st.one_of(GOOD[option], ODD))]
    return args


GOOD = {"--seed": st.sampled_from(["0", "7", "123456789"]),
        "--epoch": st.sampled_from(["0", "3"]),
        "--encoding": st.sampled_from(["utf-8", "utf-8-sig", "latin-1"]),
        "--delimiter": st.just(","),
        "--input-format": st.sampled_from(["csv", "parquet", "arrow"]),
        "--max-rows": st.sampled_from(["0", "5"]),
        "--format": st.sampled_from(["table", "json", "csv"]),
        "--epochs": st.sampled_from(["1", "2"])}


@pytest.fixture(scope="module")
def hostile_folder(data):  # noqa: F811
    folder, _, _ = data
    (folder / "bom.csv").write_bytes("\ufefflabel,site\npos,a\nneg,b\npos,b\nneg,a\n".encode())
    (folder / "binary.csv").write_bytes(bytes(range(256)) * 4)
    return folder


def test_hostile_arguments_end_with_an_exit_code_and_one_line(hostile_folder):
    @settings(max_examples=300)
    @given(args=argument_lists(hostile_folder))
    def check(args):
        if args[0] == "crosscheck":
            # R runs only once Python's checks pass; keep the suite to the checks.
            args = args + ["--rng", "numpy"] if "--rng" not in args else args
            if args[args.index("--rng") + 1] != "numpy":
                args[args.index("--rng") + 1] = "numpy"
        stdout, stderr = io.StringIO(), io.StringIO()
        with contextlib.redirect_stdout(stdout), contextlib.redirect_stderr(stderr):
            try:
                code = cli.main(args)
            except SystemExit as exit_:  # argparse's usage errors
                code = exit_.code
        assert code in (0, 1, 2, 3), (code, args)
        lines = stderr.getvalue().strip().splitlines()
        if code == 2:
            errors = [line for line in lines if ": error: " in line]
            assert len(errors) == 1 and lines[-1] == errors[0], lines
            assert lines[-1].startswith("pystratum"), lines
        TRIED[f"exit {code}"] += 1

    check()


# Cells that trip one reader and not the other: over the csv module's field limit
# (131,072 characters), separators, quotes, line ends, NULs, a byte-order mark.
HOSTILE_CELL = st.one_of(
    st.text(alphabet=st.sampled_from(list('ab,;"\n\r \x00\ufeffé')), max_size=5),
    st.sampled_from([131_072, 131_073, 200_000]).map(lambda n: "x" * n))


@st.composite
def hostile_csv(draw):
    width = draw(st.integers(1, 3))
    header = ["s", "t", "u"][:width]
    # Mostly rows of the header's width; some of another width (ragged).
    row = st.one_of(st.lists(HOSTILE_CELL, min_size=width, max_size=width),
                    st.lists(HOSTILE_CELL, min_size=width, max_size=width),
                    st.lists(HOSTILE_CELL, min_size=1, max_size=4))
    rows = draw(st.lists(row, max_size=5))
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator=draw(st.sampled_from(["\n", "\r\n"])))
    writer.writerow(header)
    writer.writerows(rows)  # rows of another width than the header are ragged
    body = buffer.getvalue()
    if draw(st.integers(0, 3)) == 0:  # damage: cut it anywhere (an open quote, a half row)
        body = body[:draw(st.integers(0, len(body)))]
    bom = draw(st.booleans())
    return (b"\xef\xbb\xbf" if bom else b"") + body.encode(), header


READERS = collections.Counter()


def test_hostile_csv_the_two_readers_agree(tmp_path_factory):
    """pyarrow.csv and the csv module: the same strata or the same one-line error, on files
    with long cells, ragged rows and damage; counts printed with -s."""
    from pystratum.cli import _data
    from pystratum.cli._errors import UserError

    folder = tmp_path_factory.mktemp("hostile_csv")

    @settings(max_examples=200)
    @given(case=hostile_csv())
    def check(case):
        content, header = case
        path = folder / "d.csv"
        path.write_bytes(content)
        outcomes = []
        for fallback in (False, True):
            with pytest.MonkeyPatch.context() as patch:
                if fallback:
                    patch.setattr(_data, "_arrow_csv", lambda: None)
                try:
                    values = _data.read_strata(path, header[:1])
                    outcomes.append(("ok", [[str(v) for v in c] for c in values]))
                except UserError as error:
                    assert "\n" not in str(error)
                    outcomes.append(("error", str(error)))
        assert outcomes[0] == outcomes[1], content[:200]
        kind, message = outcomes[0][0], str(outcomes[0][1])
        if kind == "error":
            kind = next((what for what, phrase in (
                ("ragged row", "a ragged row"), ("empty cell", "has an empty value"),
                ("no data rows", "no data rows"), ("empty file", "is empty"))
                if phrase in message), "other error: " + message[:60])
        # Over csv.field_size_limit()'s default of 131,072 characters:
        long_cell = b"x" * 131_073 in content
        READERS[(kind, "a cell over 131,072 characters" if long_cell else "short cells")] += 1

    check()
    print(f"\nhostile CSV files, both readers: {sum(READERS.values())} tried, "
          f"outcomes {dict(READERS)}")
    assert sum(READERS.values()) == 200
