"""The ``pystratum`` command, run as a user runs it: ``python -m pystratum`` in a subprocess.

(The installed console script itself is run by tests/project/test_packaging.py from a
freshly built wheel.) Bad input must give one ``pystratum: error:`` line that
names the problem, exit code 2 (or 3 for a missing optional package), and
never a traceback.
"""

from __future__ import annotations

import csv
import json
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.feather
import pyarrow.parquet
import pytest

import pystratum
from tests._env import subprocess_environ

ROOT = Path(__file__).resolve().parents[2]


def run(*args, cwd=None, check_code=None):
    env = subprocess_environ(PYTHONPATH=str(ROOT))
    done = subprocess.run([sys.executable, "-m", "pystratum", *map(str, args)],
                          capture_output=True, text=True, env=env, cwd=cwd, timeout=120)
    assert "Traceback" not in done.stderr, done.stderr
    if check_code is not None:
        assert done.returncode == check_code, (done.returncode, done.stdout, done.stderr)
    return done


@pytest.mark.parametrize("args, code", [
    (["--stratum", "label", "--min", "1", "--format", "json"], 0),
    (["--stratum", "no_such_column", "--min", "1"], 2),
])
def test_the_command_exits_with_its_code_once_flushed_skipping_native_teardown(data, args,
                                                                                code):
    # pyarrow's thread pools can abort the interpreter's teardown (SIGABRT after all
    # output): the command's exit code must not depend on it, so teardown is skipped,
    # after the atexit hooks (coverage, logging) have run.
    script = ("import atexit, sys\n"
              "atexit.register(lambda: sys.stderr.write('atexit hook ran'))\n"
              "class Finalized:\n"
              "    def __del__(self): sys.stderr.write('teardown ran')\n"
              "kept = Finalized()  # a module global: released by the teardown\n"
              "from pystratum.cli import run\n"
              "sys.argv = ['pystratum'] + sys.argv[1:]\n"
              "run()\n")
    folder, _, _ = data
    done = subprocess.run([sys.executable, "-c", script, "plan", str(folder / "d.csv"), *args],
                          capture_output=True, text=True, timeout=120,
                          env=subprocess_environ(PYTHONPATH=str(ROOT)))
    assert done.returncode == code, (done.returncode, done.stderr)
    assert "teardown ran" not in done.stderr and done.stderr.count("atexit hook ran") == 1
    if code == 0:
        assert json.loads(done.stdout)["n_rows"] == 600  # all of it, flushed
    else:
        assert done.stderr.startswith("pystratum: error:") and "no_such_column" in done.stderr
    # without run(), the same script's teardown does run: the test can tell
    ended = subprocess.run([sys.executable, "-c", script.replace("run()", "exit(0)")],
                           capture_output=True, text=True, timeout=120,
                           env=subprocess_environ(PYTHONPATH=str(ROOT)))
    assert ended.returncode == 0 and "teardown ran" in ended.stderr


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    """600 rows: label 3% positives-ish, a site column, written as CSV, Parquet and Arrow."""
    folder = tmp_path_factory.mktemp("cli")
    rng = np.random.default_rng(5)
    label = np.where(rng.random(600) < 0.05, "pos", "neg")
    label[:4] = "pos"
    site = rng.choice(["north", "south"], 600)
    with open(folder / "d.csv", "w", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(["x", "label", "site"])
        writer.writerows(zip(rng.normal(size=600).round(3), label, site))
    table = pa.table({"x": rng.normal(size=600), "label": label, "site": site})
    pyarrow.parquet.write_table(table, folder / "d.parquet")
    pyarrow.feather.write_feather(table, folder / "d.arrow")
    return folder, label, site


def test_help_lists_commands_and_examples():
    done = run("--help", check_code=0)
    for command in ("plan", "check", "crosscheck", "plot", "Exit codes", "examples:"):
        assert command in done.stdout
    done = run("plan", "--help", check_code=0)
    assert "pystratum plan train.csv --stratum label --min 10 --seed 1" in done.stdout
    assert "--policy NAME" in done.stdout and "fixed_size" in done.stdout


def test_plan_json_counts_equal_the_core(data):
    folder, label, _ = data
    done = run("plan", folder / "d.csv", "--stratum", "label", "--min", "5", "--seed", "3",
               "--format", "json", check_code=0)
    record = json.loads(done.stdout)
    plan = pystratum.plan_batches(label.astype(object), 5, seed=3)
    assert record["counts"] == plan.counts.tolist()
    assert record["strata"] == ["neg", "pos"]
    assert record["policy"] == {"name": "min_per_stratum", "params": {"m": 5}}
    assert record["batch_numbering"] == "0-based"


def test_plan_batches_csv_are_the_cores_batches(data, tmp_path):
    folder, label, site = data
    output = tmp_path / "rows.csv"
    run("plan", folder / "d.csv", "--stratum", "label", "--stratum", "site", "--batch-size", "50",
        "--seed", "8", "--rng", "R", "--epoch", "2", "--batches", "--format", "csv", "-o", output,
        check_code=0)
    rows = np.loadtxt(output, delimiter=",", skiprows=1, dtype=np.int64)
    expected = pystratum.stratified_batches({"label": label, "site": site},
                                            pystratum.FixedSize(50), seed=8, rng="R", epoch=2)
    np.testing.assert_array_equal(rows[:, 0], np.concatenate(expected))
    np.testing.assert_array_equal(rows[:, 1], np.repeat(np.arange(len(expected)),
                                                        [len(b) for b in expected]))


def test_generic_policy_option_equals_the_shortcut(data):
    folder, _, _ = data
    common = [folder / "d.csv", "--stratum", "label", "--seed", "1", "--format", "csv"]
    by_name = run("plan", *common, "--policy", "fixed_size", "--param", "batch_size=40",
                  check_code=0)
    shortcut = run("plan", *common, "--batch-size", "40", check_code=0)
    assert by_name.stdout == shortcut.stdout
    assert by_name.stdout.splitlines()[0] == "batch,neg,pos,total"


@pytest.mark.parametrize("policy_flags, policy", [
    (["--batch-size", "50"], pystratum.FixedSize(50, batch_order="split_safe")),
    (["--min", "4"], pystratum.MinPerStratum(4, batch_order="split_safe")),
    (["--policy", "targets", "--param", "shares=balanced", "--param", "batch_size=20"],
     pystratum.Targets("balanced", 20, batch_order="split_safe")),
])
def test_batch_order_flag_reaches_the_policy(data, policy_flags, policy):
    folder, label, site = data
    done = run("plan", folder / "d.csv", "--stratum", "label", "--stratum", "site",
               *policy_flags, "--batch-order", "split_safe", "--seed", "8", "--batches",
               "--format", "json", check_code=0)
    record = json.loads(done.stdout)
    assert record["policy"] == policy.to_dict()
    expected = pystratum.stratified_batches({"label": label, "site": site}, policy, seed=8)
    assert record["batches"] == [batch.tolist() for batch in expected]
    twice = run("plan", folder / "d.csv", "--stratum", "label", "--policy", "targets", "--param",
                "shares=balanced", "--param", "batch_size=20", "--param",
                "batch_order=assembled", "--batch-order", "split_safe", check_code=2)
    assert "batch_order is given twice" in twice.stderr


def test_crosscheck_with_the_r_package_in_the_split_safe_order(data):
    folder, _, _ = data
    done = run("crosscheck", folder / "d.csv", "--stratum", "label", "--stratum", "site",
               "--batch-size", "60", "--batch-order", "split_safe", "--seed", "11", "--epochs",
               "2", check_code=0)
    assert done.stdout.startswith("IDENTICAL: 20 batches in 2 epoch(s)")


@pytest.mark.parametrize("name", ["d.parquet", "d.arrow"])
def test_parquet_and_arrow_give_what_csv_gives(data, name):
    folder, _, _ = data
    common = ["--stratum", "label", "--stratum", "site", "--min", "2", "--seed", "4", "--batches",
              "--format", "json"]
    from_csv = json.loads(run("plan", folder / "d.csv", *common, check_code=0).stdout)
    other = json.loads(run("plan", folder / name, *common, check_code=0).stdout)
    assert other["batches"] == from_csv["batches"]


def test_table_output_and_progress_on_stderr(data):
    folder, _, _ = data
    done = run("plan", folder / "d.csv", "--stratum", "label", "--min", "3", "--seed", "2", "-v",
               check_code=0)
    assert done.stdout.splitlines()[0].split() == ["batch", "neg", "pos", "total"]
    assert "numbered from 0" in done.stdout and "seed=2" in done.stdout
    assert "reading" in done.stderr and "planned" in done.stderr


def test_check_feasible_and_not(data):
    folder, label, _ = data
    n_pos = int((label == "pos").sum())
    ok = run("check", folder / "d.csv", "--stratum", "label", "--min", "2", check_code=0)
    assert "MinPerStratum(m=2): feasible" in ok.stdout
    no = run("check", folder / "d.csv", "--stratum", "label", "--batch-size", "2", check_code=1)
    assert "NOT feasible" in no.stdout and "smallest batch size" in no.stdout
    assert f"m=1 gives {n_pos} batches" in no.stdout


SMALLEST = re.compile(r"smallest batch size for FixedSize\(batch_size, min_per_stratum=(\d+), "
                      r"sizes='(\w+)'\): (\d+) \(")


@pytest.mark.parametrize("flags", [
    ["--batch-size", "2"], ["--batch-size", "40"],
    ["--policy", "fixed_size", "--param", "batch_size=5", "--param", "min_per_stratum=3"],
    ["--policy", "fixed_size", "--param", "batch_size=5", "--param", "sizes=balanced"],
    ["--policy", "fixed_size", "--param", "batch_size=5", "--param", "sizes=balanced",
     "--param", "min_per_stratum=2"]], ids=["exact_2", "exact_40", "exact_min_3", "balanced",
                                            "balanced_min_2"])
def test_check_names_the_smallest_batch_size_of_the_sizes_in_use(tmp_path, flags):
    # 13 + 200 + 40 rows: exact sizes work from 19 rows (13 full batches and one of 6)
    # with min 1 and from 54 with min 3; balanced ones from 19 and 39. The hint is
    # the smallest that works by the rule in use: it works, and one less does not.
    path = tmp_path / "d.csv"
    path.write_text("label\n" + "pos\n" * 13 + "neg\n" * 200 + "mid\n" * 40)
    done = run("check", path, "--stratum", "label", *flags)
    found = SMALLEST.search(done.stdout)
    assert found, done.stdout
    min_per, rule, size = int(found.group(1)), found.group(2), int(found.group(3))
    assert rule == ("balanced" if "sizes=balanced" in flags else "exact")
    assert size == {("exact", 1): 19, ("exact", 3): 54, ("balanced", 1): 19,
                    ("balanced", 2): 39}[(rule, min_per)]

    def check(batch_size):
        return run("check", path, "--stratum", "label", "--policy", "fixed_size", "--param",
                   f"batch_size={batch_size}", "--param", f"min_per_stratum={min_per}",
                   "--param", f"sizes={rule}").returncode

    assert check(size) == 0 and check(size - 1) == 1


def test_batch_size_means_exactly_that_many_rows(tmp_path):
    assert "batches of exactly B rows but a shorter last one" in \
        " ".join(run("plan", "--help", check_code=0).stdout.split())
    path = tmp_path / "d.csv"
    path.write_text("label\n" + "pos\n" * 13 + "neg\n" * 200 + "mid\n" * 40)
    done = run("plan", path, "--stratum", "label", "--batch-size", "19", "--seed", "1",
               "--batches", "--format", "json", check_code=0)
    assert [len(b) for b in json.loads(done.stdout)["batches"]] == [19] * 13 + [6]


def test_a_single_batch_plan_is_refused_unless_allowed(data):
    """--min above the positives' count: one batch, refused by plan and check (exit 2 and 1)
    with the core's message; --allow-single-batch gives the one batch."""
    folder, label, _ = data
    n_pos = int((label == "pos").sum())
    args = ("--stratum", "label", "--min", str(n_pos), "--seed", "1")
    refused = run("plan", folder / "d.csv", *args, check_code=2)
    assert refused.stdout == ""
    assert (f"pystratum: error: policy=MinPerStratum(m={n_pos}) gives a single batch holding "
            f"all 600 rows") in refused.stderr
    assert "--allow-single-batch" in run("plan", "--help", check_code=0).stdout
    allowed = run("plan", folder / "d.csv", *args, "--allow-single-batch", "--format", "json",
                  check_code=0)
    assert json.loads(allowed.stdout)["num_batches"] == 1
    no = run("check", folder / "d.csv", *args[:4], check_code=1)
    assert "NOT feasible: policy=MinPerStratum" in no.stdout and "gives a single batch" in no.stdout
    ok = run("check", folder / "d.csv", *args[:4], "--allow-single-batch", check_code=0)
    assert f"MinPerStratum(m={n_pos}): feasible: 1 batches" in ok.stdout


def test_check_advice_fits_the_policy(data):
    # ClassesPerBatch has no batch size or minimum: the advice names its own parameters.
    folder, label, _ = data
    n_pos = int((label == "pos").sum())
    no = run("check", folder / "d.csv", "--stratum", "label", "--policy", "classes_per_batch",
             "--param", "classes_per_batch=2", "--param", f"per_class={n_pos + 1}",
             check_code=1)
    assert "NOT feasible" in no.stdout
    assert "raise the batch size" not in no.stdout and "lower the minimum" not in no.stdout
    assert "lower per_class" in no.stdout and "small=repeat" in no.stdout
    # MinPerStratum and FixedSize keep theirs.
    no = run("check", folder / "d.csv", "--stratum", "label", "--batch-size", "2", check_code=1)
    assert "raise the batch size or lower the minimum" in no.stdout


def test_crosscheck_with_the_r_package(data):
    folder, _, _ = data
    done = run("crosscheck", folder / "d.csv", "--stratum", "label", "--stratum", "site",
               "--batch-size", "60", "--seed", "11", "--epochs", "2", check_code=0)
    assert done.stdout.startswith("IDENTICAL: 20 batches in 2 epoch(s)")
    refused = run("crosscheck", folder / "d.csv", "--stratum", "label", "--min", "2",
                  "--rng", "numpy", check_code=2)
    assert "--rng numpy exists in Python only" in refused.stderr


def test_plot_writes_a_png(data, tmp_path):
    folder, _, _ = data
    output = tmp_path / "c.png"
    run("plot", folder / "d.csv", "--stratum", "label", "--min", "4", "--seed", "1",
        "--compare-plain", "-o", output, check_code=0)
    assert output.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def _bad_files(folder):
    (folder / "empty.csv").write_text("")
    (folder / "header.csv").write_text("x,label\n")
    (folder / "latin1.csv").write_bytes("x,label\n1,caf\xe9\n".encode("latin-1"))
    (folder / "hole.csv").write_text("x,label\n1,a\n2,\n3,b\n")
    (folder / "broken.parquet").write_bytes(b"PAR1 this is not parquet")
    (folder / "folder.csv").mkdir(exist_ok=True)


BAD_INPUT = [
    (["plan", "{d}/d.csv", "--stratum", "lable", "--min", "1"], 2,
     "--stratum 'lable': no such column in"),
    (["plan", "{d}/empty.csv", "--stratum", "label", "--min", "1"], 2, "is empty"),
    (["plan", "{d}/header.csv", "--stratum", "label", "--min", "1"], 2, "has a header but no data"),
    (["plan", "{d}/latin1.csv", "--stratum", "label", "--min", "1"], 2,
     "is not valid utf-8 (byte 0xe9"),
    (["plan", "{d}/hole.csv", "--stratum", "label", "--min", "1"], 2,
     "column 'label' has an empty value on line 3"),
    (["plan", "{d}/broken.parquet", "--stratum", "label", "--min", "1"], 2,
     "is not a readable parquet file"),
    (["plan", "{d}/missing.csv", "--stratum", "label", "--min", "1"], 2, "does not exist"),
    (["plan", "{d}/folder.csv", "--stratum", "label", "--min", "1"], 2, "is a directory"),
    (["plan", "{d}/d.csv", "--stratum", "label"], 2,
     "give one of --min M, --batch-size B or --policy NAME"),
    (["plan", "{d}/d.csv", "--stratum", "label", "--min", "1", "--batch-size", "5"], 2,
     "give only one of --min, --batch-size and --policy"),
    (["plan", "{d}/d.csv", "--stratum", "label", "--min", "0"], 2,
     "expected a positive whole number, got '0'"),
    (["plan", "{d}/d.csv", "--stratum", "label", "--policy", "nope"], 2,
     "policy name must be one of"),
    (["plan", "{d}/d.csv", "--stratum", "label", "--policy", "fixed_size", "--param",
      "batch_size=big"], 2, "batch_size must be an integer, got batch_size='big'"),
    (["plan", "{d}/d.csv", "--stratum", "label", "--min", "1", "--seed", "1", "--no-shuffle"], 2,
     "--seed has no effect with --no-shuffle"),
    (["plan", "{d}/d.csv", "--stratum", "x", "--min", "1"], 2, "looks like a feature column"),
    (["plot", "{d}/d.csv", "--stratum", "label", "--min", "1"], 2, "plot needs --output"),
]


@pytest.mark.parametrize("args, code, message", BAD_INPUT,
                         ids=[f"{a[1].split('/')[-1]}:{m[:24]}" for a, _, m in BAD_INPUT])
def test_bad_input_is_one_line_and_an_exit_code(data, args, code, message):
    folder, _, _ = data
    _bad_files(folder)
    done = run(*[a.format(d=folder) for a in args], check_code=code)
    assert message in done.stderr
    assert done.stdout == ""


def test_a_sampling_policy_by_name_reports_its_weights(data, tmp_path):
    folder, label, _ = data
    output = tmp_path / "rows.csv"
    run("plan", folder / "d.csv", "--stratum", "label", "--policy", "downsample", "--param",
        'keep={"neg": 0.5}', "--param", "base=2", "--seed", "3", "--batches", "--format", "csv",
        "-o", output, check_code=0)
    rows = np.genfromtxt(output, delimiter=",", names=True)
    plan = pystratum.plan_batches(label.astype(object), pystratum.policies.policy_from_params(
        "downsample", {"keep": {"neg": 0.5}, "base": 2}), seed=3)
    np.testing.assert_array_equal(rows["row"].astype(np.int64), plan.order)
    np.testing.assert_allclose(rows["weight"], plan.weights)
    kept_labels = label[plan.order]
    assert np.all(rows["weight"][kept_labels == "pos"] == 1.0)
    assert np.all(rows["weight"][kept_labels == "neg"] > 1.9)  # about 1 / keep
    record = json.loads(run("plan", folder / "d.csv", "--stratum", "label", "--policy",
                            "downsample", "--param", 'keep={"neg": 0.5}', "--param", "base=2",
                            "--seed", "3", "--batches", "--format", "json",
                            check_code=0).stdout)
    assert record["batches"] == [b.tolist() for b in plan.batches]
    assert record["weights"] == [plan.batch_weights(b).tolist() for b in range(plan.num_batches)]
