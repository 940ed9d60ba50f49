"""Multi-label input on the command line: ``--label COL`` (repeated) and ``--label-list COL``.

What is checked here is the parsing and the label matrix the CLI builds from
CSV and Parquet files (through :func:`pystratum.label_matrix`); the batches
are the MultiLabel policy's business and its tests'.
"""

from __future__ import annotations

import csv
import subprocess
import sys
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet
import pytest

from pystratum import policies
from pystratum.cli._errors import EXIT_MISSING, UserError
from pystratum.cli._labels import multi_label_policy, read_label_matrix
from pystratum.cli._parser import build_parser
from pystratum.cli._policy import policy_from_args

from _env import subprocess_environ

ROOT = Path(__file__).resolve().parents[2]

SETS = [["a", "b"], [], ["c"], ["b"], ["a", "c"], ["b", "c"]]
LABELS = ("a", "b", "c")
EXPECTED = np.array([[label in row for label in LABELS] for row in SETS])


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    folder = tmp_path_factory.mktemp("cli_labels")
    with open(folder / "m.csv", "w", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(["id", "a", "b", "c", "tags"])
        for k, row in enumerate(SETS):
            # 0/1 text in several spellings; tags with spaces and a trailing separator
            cells = [("1", "true", "1.0")[k % 3] if label in row else ("0", "FALSE", "0.0")[k % 3]
                     for label in LABELS]
            writer.writerow([k, *cells, " ; ".join(row) + (";" if k == 2 else "")])
    table = pa.table({"id": np.arange(len(SETS)),
                      "a": EXPECTED[:, 0].astype(np.int8), "b": EXPECTED[:, 1],
                      "c": EXPECTED[:, 2].astype(np.float64),
                      "tags": [";".join(row) for row in SETS],
                      "tag_list": pa.array(SETS, type=pa.list_(pa.string()))})
    pyarrow.parquet.write_table(table, folder / "m.parquet")
    return folder


def run(*args, check_code=None):
    done = subprocess.run([sys.executable, "-m", "pystratum", *map(str, args)],
                          capture_output=True, text=True, timeout=120,
                          env=subprocess_environ(PYTHONPATH=str(ROOT)))
    assert "Traceback" not in done.stderr, done.stderr
    if check_code is not None:
        assert done.returncode == check_code, (done.returncode, done.stdout, done.stderr)
    return done


def _args(*argv):
    return build_parser().parse_args(["plan", *map(str, argv)])


@pytest.mark.parametrize("name", ["m.csv", "m.parquet"])
def test_label_columns_give_the_matrix_in_the_order_given(files, name):
    args = _args(files / name, "--label", "c", "--label", "a", "--label", "b",
                 "--policy", "multi_label", "--batch-size", "2")
    labels = read_label_matrix(args)
    assert labels.labels == ("c", "a", "b")
    assert labels.matrix.dtype == bool
    np.testing.assert_array_equal(labels.matrix, EXPECTED[:, [2, 0, 1]])


@pytest.mark.parametrize("name,column", [("m.csv", "tags"), ("m.parquet", "tags"),
                                         ("m.parquet", "tag_list")])
def test_label_list_gives_the_matrix_sorted_by_label(files, name, column):
    args = _args(files / name, "--label-list", column, "--policy", "multi_label",
                 "--num-batches", "2")
    labels = read_label_matrix(args)
    assert labels.labels == LABELS
    np.testing.assert_array_equal(labels.matrix, EXPECTED)


def test_label_sep_is_used(tmp_path):
    path = tmp_path / "s.csv"
    path.write_text("tags\nx|y\n\ny\n")  # the blank line is no row; an empty cell is below
    args = _args(path, "--label-list", "tags", "--label-sep", "|", "--policy", "multi_label",
                 "--batch-size", "1")
    labels = read_label_matrix(args)
    assert labels.labels == ("x", "y")
    np.testing.assert_array_equal(labels.matrix, [[True, True], [False, True]])
    path.write_text('tags,id\nx|y,0\n,1\n')
    labels = read_label_matrix(_args(path, "--label-list", "tags", "--label-sep", "|",
                                     "--policy", "multi_label", "--batch-size", "1"))
    np.testing.assert_array_equal(labels.matrix, [[True, True], [False, False]])


def test_a_bad_label_cell_names_option_value_row_and_label(tmp_path):
    path = tmp_path / "bad.csv"
    path.write_text("a,b\n0,1\n1,2\n")
    with pytest.raises(ValueError, match=r"^--label must hold only 0 and 1 \(or booleans\), "
                                         r"got 2 at row 1 \(0-based\) in label 'b'"):
        read_label_matrix(_args(path, "--label", "a", "--label", "b", "--policy", "multi_label",
                                "--batch-size", "1"))
    path.write_text("a,b\n0,1\n1,yes\n")
    with pytest.raises(TypeError, match=r"got the text 'yes' at row 1 \(0-based\) in label 'b'"):
        read_label_matrix(_args(path, "--label", "a", "--label", "b", "--policy", "multi_label",
                                "--batch-size", "1"))


def test_policy_flags_go_to_multi_label_by_name():
    args = _args("x.csv", "--label", "a", "--policy", "multi_label", "--num-batches", "8",
                 "--min-per-label", "2", "--strict")
    assert (args.batch_size, args.num_batches, args.min_per_label, args.strict) == (None, 8, 2,
                                                                                    True)
    if hasattr(policies, "MultiLabel"):
        policy = policy_from_args(args)
        assert policy.name == "multi_label" and policy.reads_label_matrix
        assert policy.params()["num_batches"] == 8 and policy.params()["min_per_label"] == 2
    else:
        with pytest.raises(UserError, match="needs pystratum.policies.MultiLabel") as caught:
            multi_label_policy(args)
        assert caught.value.code == EXIT_MISSING


def test_batch_order_flag_reaches_multi_label():
    args = _args("x.csv", "--label", "a", "--policy", "multi_label", "--batch-size", "4",
                 "--batch-order", "split_safe")
    policy = policy_from_args(args)
    assert policy == policies.MultiLabel(4, batch_order="split_safe")
    assert policy.split_safe()


@pytest.mark.parametrize("argv,message", [
    (["--stratum", "a", "--policy", "multi_label", "--batch-size", "2"], "reads labels, not strata"),
    (["--label", "a", "--min", "2"], "--policy multi_label reads"),
    (["--stratum", "a", "--min", "2", "--num-batches", "3"], "--num-batches goes with --policy"),
    (["--stratum", "a", "--min", "2", "--strict"], "--strict goes with --policy multi_label"),
    (["--label", "a", "--policy", "multi_label", "--min", "2"], "takes --min-per-label"),
])
def test_label_and_policy_flags_must_agree(argv, message):
    with pytest.raises(UserError, match=message):
        policy_from_args(_args("x.csv", *argv))


def test_command_line_errors_are_one_line(files):
    done = run("plan", files / "m.csv", "--policy", "multi_label", "--batch-size", "2",
               check_code=2)
    assert "--stratum COL, or for multi-label data the labels with --label" in done.stderr
    done = run("plan", files / "m.csv", "--stratum", "a", "--label", "b", "--min", "1",
               check_code=2)
    assert "not both" in done.stderr
    done = run("plan", files / "m.csv", "--label", "zz", "--policy", "multi_label",
               "--batch-size", "2", check_code=None)
    assert done.returncode in (2, EXIT_MISSING)
    assert "pystratum: error:" in done.stderr
    if hasattr(policies, "MultiLabel"):
        assert "--label 'zz': no such column" in done.stderr
    done = run("plan", files / "m.csv", "--label", "a", "--label-list", "tags", "--policy",
               "multi_label", "--batch-size", "2", check_code=None)
    assert done.returncode in (2, EXIT_MISSING) and "pystratum: error:" in done.stderr


def test_the_summary_of_a_label_plan_speaks_of_labels_and_their_spread(files):
    from pystratum import plan_batches

    done = run("plan", files / "m.csv", "--label", "a", "--label", "b", "--label", "c",
               "--policy", "multi_label", "--batch-size", "2", "--seed", "4", check_code=0)
    plan = plan_batches(EXPECTED, policies.MultiLabel(batch_size=2), seed=4)
    spread = plan.label_spread()
    assert "strata" not in done.stdout
    names = sorted(range(3), key=lambda j: spread[str(j)])
    shown = ", ".join(f"'{LABELS[j]}' {spread[str(j)][0]}-{spread[str(j)][1]}" for j in names)
    least = min(lo for lo, _ in spread.values())
    assert (f"3 batches (numbered from 0) of 2-2 rows; 3 labels; positives of a label in a batch "
            f"(least-most): {shown}; fewest of any label in a batch: {least}") in done.stdout
    # One batch holding every row is refused, naming the rows and the labels.
    done = run("plan", files / "m.csv", "--label", "a", "--label", "b", "--label", "c",
               "--policy", "multi_label", "--batch-size", "6", "--seed", "4")
    assert done.returncode != 0
    assert "single batch holding all 6 rows of the label matrix (3 labels)" in done.stderr
    done = run("plan", files / "m.csv", "--label", "a", "--label", "b", "--label", "c",
               "--policy", "multi_label", "--batch-size", "6", "--seed", "4",
               "--allow-single-batch", check_code=0)
    assert "1 batches (numbered from 0) of 6-6 rows; 3 labels" in done.stdout
